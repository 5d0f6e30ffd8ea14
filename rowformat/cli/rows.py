"""``rowformat head``, ``cat`` and ``take``: rows of a ``.row`` file on
stdout, as a table, JSON lines or CSV (:class:`.output.RowPrinter`). ``head``
prints the first ``-n`` rows, ``cat`` all rows or a ``--rows A:B`` range,
``take`` the rows numbered on the command line in the order given; all three
take ``--columns`` and ``--format``.
"""
from __future__ import annotations

import argparse
import re
from typing import IO, Any, Callable, Iterable, Sequence

from .exit_codes import EXIT_OK, UsageError
from .output import RowPrinter, columns_arg
from .schema_arg import require_schema


def add_row_output_arguments(p: argparse.ArgumentParser, default: str) -> None:
    """The options head, cat and take share (``default``: their --format)."""
    p.add_argument("-c", "--columns", action="append", metavar="COLS",
                   help="columns to show, comma-separated (repeatable); default all")
    p.add_argument("-f", "--format", choices=("table", "jsonl", "csv"), default=default,
                   help=f"output format (default {default})")
    p.add_argument("--batch-size", type=int, default=4096, help=argparse.SUPPRESS)
    p.add_argument("--threads", type=int, default=None, help=argparse.SUPPRESS)


def _row_range(text: str | None, n: int) -> range:
    """``A:B`` (Python slice rules, negatives from the end), ``A:``, ``:B`` or ``N``."""
    if text is None:
        return range(n)
    m = re.fullmatch(r"\s*(-?\d+)?\s*(:)?\s*(-?\d+)?\s*", text)
    if not m or (m.group(2) is None and m.group(1) is None):
        raise UsageError(f"--rows {text!r}: expected A:B, A:, :B or N")
    a = int(m.group(1)) if m.group(1) is not None else None
    b = int(m.group(3)) if m.group(3) is not None else None
    if m.group(2) is None:       # a single row
        assert a is not None
        i = a + n if a < 0 else a
        if not 0 <= i < n:
            raise UsageError(f"--rows {text}: row {a} outside the file's {n} rows")
        return range(i, i + 1)
    return range(n)[slice(a, b)]


def _open_reader(args):
    from ..row.reader import RowFileReader
    from . import table_dirs as pt
    return RowFileReader(args.file, require_schema(args), threads=getattr(args, "threads", None),
                         storage_options=pt.storage_options(args))


def _print_rows(args, out: IO[str], rows_of: Callable[[Any], Iterable[int] | None],
                ordered: bool = True) -> int:
    """Prints the rows ``rows_of(reader)`` names (None: all), in file order
    when ``ordered``, else in the order given (duplicates too)."""
    import numpy as np
    with _open_reader(args) as r:
        columns = columns_arg(args.columns)
        rows = rows_of(r)
        printer = RowPrinter(args.format, out)
        if ordered:
            sel = None if rows is None else np.fromiter(rows, dtype=np.int64)
            if sel is None or len(sel):
                for batch in r.iter_batches(columns=columns, selection=sel,
                                            batch_size=args.batch_size):
                    printer.write(batch)
        else:
            table = r.take(list(rows or []), columns=columns)
            for batch in table.to_batches():
                printer.write(batch)
        printer.close(r.projected_schema(columns))
    return EXIT_OK


def cmd_head(args, out: IO[str]) -> int:
    if args.n < 0:
        raise UsageError(f"-n {args.n}: must be >= 0")
    from . import table_dirs as pt
    if pt.is_table_dir(args):
        return pt.print_table_rows(args, out, args.n)
    pt.reject_snapshot(args)
    return _print_rows(args, out, lambda r: range(min(args.n, r.num_rows)))


def cmd_cat(args, out: IO[str]) -> int:
    from . import table_dirs as pt
    if pt.is_table_dir(args):
        return pt.print_table_rows(args, out, None)
    pt.reject_snapshot(args)
    return _print_rows(args, out,
                       lambda r: None if args.rows is None else _row_range(args.rows, r.num_rows))


def cmd_take(args, out: IO[str]) -> int:
    def rows(r):
        out_rows = []
        for i in args.rows:
            j = i + r.num_rows if i < 0 else i
            if not 0 <= j < r.num_rows:
                raise UsageError(f"row {i} outside the file's {r.num_rows} rows")
            out_rows.append(j)
        return out_rows
    return _print_rows(args, out, rows, ordered=False)
