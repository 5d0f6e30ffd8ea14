"""The ``rowformat`` command: inspect, verify, head, cat, take and convert
Paimon ``.row`` files, and expire a Paimon table's snapshots, remove its orphan
files or compact it. See ``docs/cli.md``.

This module builds the argument parser and runs a command, turning what it
raises into an exit code: 0 success; 1 a bad file (any :class:`RowFormatError`,
an unreadable file, a malformed input) or problems found by ``verify``; 2 a
usage error (bad arguments, a bad ``--schema``, an unknown column, a row
outside the file, pypaimon missing for a table); 3 an internal failure (a bug: run again with ``--debug``
for the traceback). The commands live in :mod:`.inspect` (inspect, verify),
:mod:`.rows` (head, cat, take), :mod:`.convert` and :mod:`.table_dirs` (the
table commands, expire, remove-orphans, compact); ``--schema`` in
:mod:`.schema_arg`, what they print in :mod:`.output`.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
import traceback
from typing import Sequence

from .convert import cmd_convert
from .exit_codes import (EXIT_BAD_FILE, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE,
                         UsageError, is_input_error)
from .formats import FORMATS
from .inspection import cmd_inspect, cmd_verify
from .output import printable
from .rows import add_row_output_arguments, cmd_cat, cmd_head, cmd_take
from .schema_arg import add_schema_argument
from .table_dirs import cmd_compact, cmd_expire, cmd_remove_orphans

__all__ = ["main", "build_parser"]

# verify, head and cat: a table directory has its schema and refuses --schema
_FOR_ROW_FILES = " (required for a .row file; not for a table directory)"


def build_parser() -> argparse.ArgumentParser:
    from .. import __version__
    parser = argparse.ArgumentParser(
        prog="rowformat",
        description="Inspect, verify, print and convert Apache Paimon .row files.",
        epilog="Exit codes: 0 ok, 1 bad file or verify found problems, 2 usage error, "
               "3 internal failure (see --debug). Docs: docs/cli.md")
    parser.add_argument("--version", action="version", version=f"rowformat {__version__}")
    debug_help = "print the full traceback of an internal failure"
    parser.add_argument("--debug", action="store_true", help=debug_help)
    # --debug after the command too (the exit-3 message says "run again with
    # --debug"): SUPPRESS keeps a subcommand from resetting it when absent
    after = argparse.ArgumentParser(add_help=False)
    after.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=debug_help)
    after.add_argument("-o", "--option", metavar="KEY=VALUE", action="append", default=[],
                       help="a storage setting for URLs (s3://...): a Paimon catalog option "
                            "(s3.endpoint, s3.access-key, s3.secret-key, s3.region, "
                            "s3.path.style.access; fs.s3a.* spellings too) or a pyarrow "
                            "S3FileSystem argument; repeatable; over the AWS_* environment")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def add_snapshot_argument(p: argparse.ArgumentParser) -> None:
        p.add_argument("--snapshot", type=int, metavar="N",
                       help="for a Paimon table directory: its snapshot N (default the latest)")

    p = sub.add_parser("inspect", parents=[after], help="footer, blocks, sizes and compression of a .row file; "
                                      "the data files of a Paimon table directory")
    p.add_argument("file", help="a .row file or (not for take) a Paimon table directory")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--blocks", action="store_true", help="also list every block")
    add_schema_argument(p, " (optional: shown when given)")
    add_snapshot_argument(p)
    p.set_defaults(func=cmd_inspect)

    p = sub.add_parser("verify", parents=[after], help="check every block and row; exit 1 on any problem")
    p.add_argument("file", help="a .row file or (not for take) a Paimon table directory")
    add_schema_argument(p, _FOR_ROW_FILES)
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    add_snapshot_argument(p)
    p.set_defaults(func=cmd_verify)

    p = sub.add_parser("head", parents=[after], help="the first rows")
    p.add_argument("file", help="a .row file or (not for take) a Paimon table directory")
    p.add_argument("-n", type=int, default=10, help="how many rows (default 10)")
    add_schema_argument(p, _FOR_ROW_FILES)
    add_row_output_arguments(p, "table")
    p.set_defaults(func=cmd_head)
    add_snapshot_argument(p)

    p = sub.add_parser("cat", parents=[after], help="rows, as JSON lines (default), CSV or a table")
    p.add_argument("file", help="a .row file or (not for take) a Paimon table directory")
    p.add_argument("-r", "--rows", metavar="A:B",
                   help="a row range: A:B, A:, :B (negatives count from the end) or one row N")
    add_schema_argument(p, _FOR_ROW_FILES)
    add_row_output_arguments(p, "jsonl")
    add_snapshot_argument(p)
    p.set_defaults(func=cmd_cat)

    p = sub.add_parser("take", parents=[after], help="the rows numbered N..., in the order given")
    p.add_argument("file")
    p.add_argument("rows", metavar="N", type=int, nargs="+",
                   help="row numbers (negatives count from the end)")
    add_schema_argument(p, " (required)")
    add_row_output_arguments(p, "table")
    p.set_defaults(func=cmd_take)

    p = sub.add_parser("expire", parents=[after],
                       help="expire a Paimon table's old snapshots and delete the files only they hold",
                       description="Paimon's snapshot expiry (rowformat.paimon.tables."
                                   "expire_snapshots): the oldest snapshots go, with the data and "
                                   "metadata files no kept snapshot, tag or branch holds.")
    p.add_argument("table", help="a Paimon table directory or URL")
    p.add_argument("--retain-last", type=int, metavar="N",
                   help="keep the latest N snapshots (default: the table's "
                        "snapshot.num-retained.min, else 10)")
    p.add_argument("--older-than", metavar="WHEN",
                   help="expire only snapshots committed before WHEN: a duration before now "
                        "(30m, 12h, 7d) or an ISO 8601 time (default: any time)")
    p.add_argument("--dry-run", action="store_true", help="say what would go; delete nothing")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_expire)

    p = sub.add_parser("remove-orphans", parents=[after],
                       help="delete the files in a Paimon table that no snapshot names "
                            "(left by failed writes)",
                       description="Paimon's orphan-file clean (rowformat.paimon.tables."
                                   "remove_orphan_files): data and metadata files that no "
                                   "snapshot, tag, branch or changelog names, last modified "
                                   "before --older-than.")
    p.add_argument("table", help="a Paimon table directory or URL")
    p.add_argument("--older-than", metavar="WHEN", default="1d",
                   help="delete only files last modified before WHEN: a duration before now "
                        "(30m, 12h, 7d) or an ISO 8601 time (default: 1d; a younger file may "
                        "belong to a write that has not committed yet)")
    p.add_argument("--dry-run", action="store_true", help="list what would go; delete nothing")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_remove_orphans)

    p = sub.add_parser("compact", parents=[after],
                       help="compact a Paimon table's small files or sorted runs in one "
                            "COMPACT snapshot",
                       description="Paimon Java's compaction (rowformat.paimon.tables.compact): "
                                   "by bucket, an append table's small files or a primary-key "
                                   "table's sorted runs, picked by the table's options, "
                                   "rewritten and committed as one COMPACT snapshot.")
    p.add_argument("table", help="a Paimon table directory or URL")
    p.add_argument("--full", action="store_true",
                   help="a full compaction (as Java's)")
    p.add_argument("--partition", action="append", metavar="K=V[,K2=V2]",
                   help="only this partition (repeatable; K=V pairs joined by commas)")
    p.add_argument("--dry-run", action="store_true", help="say what would be rewritten; write nothing")
    p.add_argument("--json", action="store_true", help="print JSON")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--progress", dest="progress", action="store_true", default=None,
                   help="show a progress bar over buckets (default: when stderr is a terminal)")
    g.add_argument("--no-progress", dest="progress", action="store_false")
    p.set_defaults(func=cmd_compact)

    p = sub.add_parser("convert", parents=[after], help="convert between .row, Parquet, Arrow IPC, CSV and JSON lines",
                       description="Formats come from the extensions (.row, .parquet, .arrow/"
                                   ".feather/.ipc, .arrows, .csv, .jsonl/.ndjson/.json) or "
                                   "--from/--to.")
    p.add_argument("input")
    p.add_argument("output")
    p.add_argument("--from", dest="from_format", choices=FORMATS, help="input format")
    p.add_argument("--to", dest="to_format", choices=FORMATS, help="output format")
    add_schema_argument(p, ". Required to read a .row file; for other inputs it overrides the "
                   "schema taken from the source")
    p.add_argument("--block-size", type=int, default=65536,
                   help="uncompressed bytes per .row block (Paimon file.block-size; default 65536)")
    p.add_argument("--zstd-level", type=int, default=1,
                   help="ZSTD level of .row blocks (default 1)")
    p.add_argument("--batch-size", type=int, default=65536, help="rows per batch (default 65536)")
    p.add_argument("--threads", type=int, default=None,
                   help="threads for .row compression and reads (default: the core count)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--progress", dest="progress", action="store_true", default=None,
                   help="show a progress bar (default: when stderr is a terminal)")
    g.add_argument("--no-progress", dest="progress", action="store_false")
    p.add_argument("-q", "--quiet", action="store_true", help="no summary line")
    p.set_defaults(func=cmd_convert)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line ``argv`` (default ``sys.argv[1:]``); returns the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:     # --help, --version, usage errors
        return int(e.code) if isinstance(e.code, int) else EXIT_USAGE
    from ..errors import RowFormatError, RowIndexError, StorageOptionError
    from ..io.urls import redact
    out = sys.stdout

    def say(message) -> None:
        # messages name files and carry text from them: escaped, one line; and
        # a URL's credentials (user:password@) never shown, whoever wrote the message
        sys.stderr.write(f"rowformat {args.command}: {printable(redact(str(message)))}\n")
    try:
        return args.func(args, out)
    except UsageError as e:
        say(f"error: {e}")
        return EXIT_USAGE
    except (RowIndexError, KeyError) as e:
        say(f"error: {e.args[0] if e.args else e}")
        return EXIT_USAGE
    except StorageOptionError as e:     # an --option name
        say(f"error: {e}")
        return EXIT_USAGE
    except RowFormatError as e:
        say(e)
        return EXIT_BAD_FILE
    except BrokenPipeError:
        # The reader of stdout went away (| head): stop quietly.
        with contextlib.suppress(OSError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    except OSError as e:     # a missing or unreadable file
        where = f": {e.filename}" if getattr(e, "filename", None) else ""
        say(f"{e.strerror or e}{where}")
        return EXIT_BAD_FILE
    except MemoryError as e:    # an allocation failed: not a bug, nor a damaged file
        say(f"out of memory: {e}" if str(e) else "out of memory")
        return EXIT_BAD_FILE
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        return EXIT_INTERRUPTED
    except Exception as e:
        if is_input_error(e):   # a malformed Parquet, Arrow, CSV or JSON input
            say(e)
            return EXIT_BAD_FILE
        if args.debug:
            traceback.print_exc()
        else:
            say(f"internal error: {type(e).__name__}: {e}")
            sys.stderr.write("(a bug in rowformat; run with --debug for the traceback)\n")
        return EXIT_INTERNAL

