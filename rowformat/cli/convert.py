"""``rowformat convert IN OUT``: streams an input table (:mod:`.input_tables`)
batch by batch into an output sink (:mod:`.sinks`), in any pair of the
formats of :mod:`.formats`, with a progress bar over rows. Batches are made
to fit the output's Arrow schema by column name (safe casts only). Every
sink writes through rowformat.atomic: the output file appears only when the
whole conversion succeeds.
"""
from __future__ import annotations

import os
import sys
from typing import IO

from ..arrow_cast import cast_batch
from .exit_codes import EXIT_OK
from .formats import format_of
from .inputs import open_input_table
from .output import Progress, printable
from .schema_arg import load_schema
from .sinks import open_sink
from .table_dirs import storage_options


def cmd_convert(args, out: IO[str]) -> int:
    src_fmt = format_of(args.input, args.from_format)
    dst_fmt = format_of(args.output, args.to_format)
    schema = load_schema(args.schema) if args.schema else None
    options = storage_options(args)
    src = open_input_table(args.input, src_fmt, schema, args.batch_size, args.threads, options)
    try:
        sink = open_sink(args.output, dst_fmt, src.schema, block_size=args.block_size,
                         zstd_level=args.zstd_level, threads=args.threads,
                         storage_options=options)
        show = args.progress if args.progress is not None else sys.stderr.isatty()
        progress = Progress(show, src.total, f"{os.path.basename(args.input)} -> "
                            f"{os.path.basename(args.output)}")
        rows = 0
        try:
            with sink:       # close() (the output appears) on success, abort() on any exception
                for batch in src.batches:
                    if dst_fmt != "row":     # the .row writer casts by name itself
                        batch = cast_batch(batch, sink.arrow_schema, first_row=rows)
                    sink.write(batch)
                    rows += batch.num_rows
                    progress.advance(batch.num_rows)
        finally:
            progress.close()
    finally:
        src.close()
    if not args.quiet:
        sys.stderr.write(f"wrote {rows} rows to {printable(args.output)}\n")
    return EXIT_OK
