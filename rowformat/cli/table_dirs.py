"""``rowformat inspect``, ``verify``, ``head`` and ``cat`` on a Paimon table
directory (one holding ``schema/schema-N`` and ``snapshot/``), at its latest
snapshot or ``--snapshot N``. The table is opened with pypaimon
(:func:`rowformat.paimon.tables.open_table`, no catalog):

* ``inspect`` lists the snapshot's data files from pypaimon's scan plan
  (path, partition, bucket, level, schema id, rows, bytes) and the table's
  facts (snapshot, schema, keys, ``file.format``);
* ``verify`` runs :func:`rowformat.row.verify.verify` on every ``.row`` data
  file against the fields the file was written with (its schema id; for a
  primary-key table the ``_KEY_*`` fields, ``_SEQUENCE_NUMBER`` and
  ``_VALUE_KIND`` first, as pypaimon's ``split_read`` reads them). Data
  files in another format are skipped with a message; a table without any
  ``.row`` data file is a usage error;
* ``head`` and ``cat`` read the rows through pypaimon (merged, for a
  primary-key table) with :func:`rowformat.paimon.tables.read_batches`, whose
  ``.row`` files rowformat decodes (``inspect`` says when it cannot).
"""
from __future__ import annotations

import dataclasses
import os
from typing import IO, Any

from ..errors import DatasetError, RowFormatError
from .exit_codes import EXIT_BAD_FILE, EXIT_OK, UsageError
from .output import (RowPrinter, columns_arg, counted, json_document, print_table, printable,
                     problem_lines)

PAIMON_HINT = "pip install 'rowformat[paimon]'"


def storage_options(args) -> dict | None:
    """The ``--option KEY=VALUE`` settings, None when none was given."""
    out = {}
    for item in getattr(args, "option", None) or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--option {item}: expected KEY=VALUE")
        out[key.strip()] = value
    return out or None


def is_table_dir(args) -> bool:
    """``args.file`` is a Paimon table: a local directory, or a URL whose
    ``schema/`` holds schema files."""
    from ..io import urls
    from ..paimon.tables import is_table
    path = args.file
    if urls.local(path) is None:
        if path.rstrip("/").endswith((".row", ".blob")):
            return False
        try:
            import pypaimon  # noqa: F401
        except ImportError:
            return False
        return is_table(path, storage_options(args))
    return os.path.isdir(path) and is_table(path)


def reject_snapshot(args) -> None:
    """``--snapshot`` given for a plain file."""
    if getattr(args, "snapshot", None) is not None:
        raise UsageError("--snapshot is for a Paimon table directory")


def _open(args):
    """(table as of the snapshot, snapshot) for ``args.file``."""
    try:
        import pypaimon  # noqa: F401
    except ImportError:
        raise UsageError(f"{args.file} is a Paimon table: reading tables needs pypaimon: "
                         f"{PAIMON_HINT}") from None
    from ..paimon.tables import pin, snapshot_by_id
    try:
        table, snapshot_id = pin(args.file, snapshot_id=getattr(args, "snapshot", None),
                                 storage_options=storage_options(args))
    except DatasetError as e:
        raise UsageError(str(e)) from None
    return table, None if snapshot_id is None else snapshot_by_id(table, snapshot_id)


def table_info(table, snap) -> dict:
    from ..paimon import status
    from ..paimon.tables import data_files
    schema = table.table_schema
    files = data_files(table)
    accel = status()
    return {
        "table": table.table_path if isinstance(table.table_path, str) else str(table.table_path),
        "snapshot": None if snap is None else int(snap.id),
        "schema_id": int(snap.schema_id) if snap is not None else int(schema.id),
        "primary_keys": list(table.primary_keys or []),
        "partition_keys": list(table.partition_keys or []),
        "file_format": (schema.options or {}).get("file.format"),
        "options": dict(schema.options or {}),
        "files": [{f.name: getattr(d, f.name) for f in dataclasses.fields(d) if f.name != "meta"}
                  for d in files],
        "total_rows": sum(d.rows for d in files),
        "total_size": sum(d.size for d in files),
        # whether this process reads the table's .row/.blob files with rowformat, and why not
        "acceleration": {"on": accel.reason is None, "pypaimon": accel.pypaimon,
                         "reason": accel.reason},
    }


def cmd_inspect_table(args, out: IO[str]) -> int:
    if args.blocks:
        raise UsageError("--blocks is for a .row file: inspect one of the table's data files")
    table, snap = _open(args)
    info = table_info(table, snap)
    if args.json:
        out.write(json_document(info))
        return EXIT_OK
    summary = [
        ("table", info["table"]),
        ("snapshot", "-" if info["snapshot"] is None else str(info["snapshot"])),
        ("schema id", str(info["schema_id"])),
        ("primary keys", ", ".join(info["primary_keys"]) or "-"),
        ("partition keys", ", ".join(info["partition_keys"]) or "-"),
        ("file.format", info["file_format"] or "-"),
        ("data files", str(len(info["files"]))),
        ("rows", f"{info['total_rows']} (in data files, before merging)"
         if info["primary_keys"] else str(info["total_rows"])),
        ("size", f"{info['total_size']} bytes"),
        ("read with", "rowformat" if info["acceleration"]["on"] else
         f"stock pypaimon {info['acceleration']['pypaimon']} (not accelerated: "
         f"{info['acceleration']['reason']})"),
    ]
    print_table(["field", "value"], [list(x) for x in summary], out)
    if info["files"]:
        out.write("\n")
        cols = ["path", "partition", "bucket", "level", "schema_id", "rows", "size"]
        rows = [[os.path.relpath(f["path"], info["table"]) if f["path"].startswith(info["table"])
                 else f["path"], f["partition"] or "-", str(f["bucket"]), str(f["level"]),
                 str(f["schema_id"]), str(f["rows"]), str(f["size"])] for f in info["files"]]
        print_table(cols, rows, out, right=[False, False, True, True, True, True, True])
    return EXIT_OK


def verify_data_file(table, d) -> tuple[Any, list]:
    """(the file's ``VerifyReport``, or None when it could not be read at
    all; its problems): ``verify`` of the file against its schema, and the
    manifest's row count and size against the file's."""
    from ..paimon.tables import file_schema, reader_options
    from ..row.verify import Problem, verify
    try:
        report = verify(d.path, file_schema(table, d.meta), storage_options=reader_options(table))
        size = report.size
    except (RowFormatError, OSError) as e:
        message = str(e) if isinstance(e, RowFormatError) else f"{e.strerror or e}"
        return None, [Problem("file", message.removeprefix(f"{d.path}: "))]
    problems = list(report.problems)
    if report.num_rows is not None and report.num_rows != d.rows:
        problems.append(Problem("file", f"the manifest's _ROW_COUNT is {d.rows}, but the file "
                                        f"holds {report.num_rows} rows"))
    if size != d.size:
        problems.append(Problem("file", f"the manifest's _FILE_SIZE is {d.size}, but the file "
                                        f"has {size} bytes"))
    return report, problems


def cmd_verify_table(args, out: IO[str]) -> int:
    if args.schema:
        raise UsageError("--schema is not for a table: each data file is verified against "
                         "the schema the table recorded for it")
    from ..paimon.tables import data_files
    table, snap = _open(args)
    files = data_files(table)
    row_files = [d for d in files if d.format == "row"]
    skipped = [d for d in files if d.format != "row"]
    if files and not row_files:
        raise UsageError(f"{args.file}: no .row data files (file.format "
                         f"{(table.table_schema.options or {}).get('file.format')}): "
                         f"verify checks only .row files")
    results, bad = [], 0
    for d in row_files:
        report, problems = verify_data_file(table, d)
        bad += bool(problems)
        if args.json:
            results.append({"file": d.path, "ok": not problems, "problems": [
                {"block": p.block, "row": p.row, "column": p.column, "message": p.message}
                for p in problems]})
        elif not problems:     # each file as it is checked
            out.write(f"ok {printable(d.path)}: {counted(report.num_rows, 'row')} in "
                      f"{counted(report.num_blocks, 'block')}\n")
        else:
            for line in problem_lines(problems):
                out.write(f"{printable(d.path)}: {line}\n")
            out.write(f"FAILED {printable(d.path)}: {len(problems)} problem(s)\n")
        out.flush()
    ok = not bad
    if args.json:
        out.write(json_document({
            "table": args.file, "snapshot": None if snap is None else int(snap.id), "ok": ok,
            "files": results,
            "skipped": [{"file": d.path, "format": d.format} for d in skipped],
        }))
        return EXIT_OK if ok else EXIT_BAD_FILE
    for d in skipped:
        out.write(f"skipped {printable(d.path)}: not a .row file\n")
    snap_text = "no snapshot" if snap is None else f"snapshot {snap.id}"
    if ok:
        out.write(f"ok {printable(args.file)} ({snap_text}): {len(row_files)} .row data "
                  f"file(s)\n")
    else:
        out.write(f"FAILED {printable(args.file)} ({snap_text}): {bad} of {len(row_files)} .row "
                  f"data file(s) have problems\n")
    return EXIT_OK if ok else EXIT_BAD_FILE


def print_table_rows(args, out: IO[str], limit: int | None) -> int:
    """head (``limit`` rows) and cat (``limit`` None) of a table."""
    from ..paimon.tables import read_batches
    if getattr(args, "rows", None) is not None:
        raise UsageError("--rows is for a .row file; a table's rows have no fixed order "
                         "(use head -n)")
    if args.schema:
        raise UsageError("--schema is not for a table: its rows are read with its own schema")
    table, snap = _open(args)
    columns = columns_arg(args.columns)
    names = list(table.field_names)
    if columns:
        unknown = [c for c in columns if c not in names]
        if unknown:
            raise UsageError(f"unknown column(s) {unknown}; the table's columns are {names}")
    from pypaimon.schema.data_types import PyarrowFieldParser
    fields = table.fields if not columns else [table.field_dict[c] for c in columns]
    schema = PyarrowFieldParser.from_paimon_schema(fields)
    printer = RowPrinter(args.format, out)
    left = limit
    if snap is not None and (left is None or left > 0):
        from ..paimon.tables import plan
        for batch in read_batches(table, plan(table, columns or None), columns or names):
            if left is not None:
                if batch.num_rows > left:
                    batch = batch.slice(0, left)
                left -= batch.num_rows
            schema = batch.schema
            printer.write(batch)
            if left == 0:
                break
    printer.close(schema)
    return EXIT_OK


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def older_than_arg(text: str):
    """``--older-than``: a duration before now (``90s``, ``30m``, ``12h``,
    ``7d``) or an ISO 8601 time (``2026-11-01``, ``2026-11-01T12:00:00+00:00``;
    without an offset, local time)."""
    import datetime as dt
    number, unit = text[:-1], text[-1:].lower()
    too_far = UsageError(f"--older-than {printable(text)}: too far back (before year 1)")
    if unit in _UNITS and number.isascii() and number.isdigit():
        try:
            when = dt.timedelta(seconds=int(number) * _UNITS[unit])
            dt.datetime.now() - when            # OverflowError: before year 1
        except OverflowError:
            raise too_far from None
        return when
    try:
        then = dt.datetime.fromisoformat(text)
    except ValueError:
        raise UsageError(f"--older-than {printable(text)}: expected a duration (90s, 30m, 12h, "
                         f"7d) or an ISO 8601 time (2026-11-01T12:00:00)") from None
    try:
        (then if then.tzinfo else then.astimezone()).timestamp()    # naive: local time
    except (OverflowError, ValueError, OSError):
        raise too_far from None
    return then


def _check_table(args) -> None:
    from ..paimon.tables import is_table
    if not is_table(args.table, storage_options(args)):
        raise UsageError(f"{args.table} is not a Paimon table directory (no schema/schema-<n> files)")


def cmd_expire(args, out: IO[str]) -> int:
    from ..paimon.tables import expire_snapshots
    if args.retain_last is not None and args.retain_last < 1:
        raise UsageError(f"--retain-last {args.retain_last}: at least 1 (the latest snapshot "
                         f"always stays)")
    _check_table(args)
    got = expire_snapshots(args.table, retain_last=args.retain_last,
                           older_than=None if args.older_than is None
                           else older_than_arg(args.older_than),
                           storage_options=storage_options(args), dry_run=args.dry_run)
    if args.json:
        out.write(json_document({**dataclasses.asdict(got), "dry_run": args.dry_run}))
        return EXIT_OK
    verb = "would expire" if args.dry_run else "expired"
    if not got.snapshots:
        out.write(f"nothing to expire (earliest snapshot: {got.earliest})\n")
        return EXIT_OK
    first, last = got.snapshots[0], got.snapshots[-1]
    ids = str(first) if first == last else f"{first}-{last}"
    out.write(f"{verb} {counted(len(got.snapshots), 'snapshot')} ({ids}); earliest now "
              f"{got.earliest}; {'would delete' if args.dry_run else 'deleted'} "
              f"{counted(got.files, 'file')}, {counted(got.bytes, 'byte')}\n")
    return EXIT_OK


def cmd_remove_orphans(args, out: IO[str]) -> int:
    from ..paimon.tables import remove_orphan_files
    older_than = older_than_arg(args.older_than)
    _check_table(args)
    got = remove_orphan_files(args.table, older_than=older_than,
                              storage_options=storage_options(args), dry_run=args.dry_run)
    if args.json:
        out.write(json_document({**dataclasses.asdict(got), "dry_run": args.dry_run}))
        return EXIT_OK
    for path in got.files:
        out.write(printable(path) + "\n")
    out.write(f"{'would delete' if args.dry_run else 'deleted'} "
              f"{counted(len(got.files), 'orphan file')}, {counted(got.bytes, 'byte')}\n")
    return EXIT_OK


def partition_arg(text: str) -> dict:
    """``--partition k=v[,k2=v2]`` as a dict."""
    out = {}
    for item in text.split(","):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--partition {printable(text)}: expected KEY=VALUE[,KEY=VALUE]")
        out[key.strip()] = value
    return out


def cmd_compact(args, out: IO[str]) -> int:
    import sys
    from ..paimon.tables import compact
    from .output import Progress
    partitions = None if not args.partition else [partition_arg(p) for p in args.partition]
    _check_table(args)
    show = args.progress if args.progress is not None else sys.stderr.isatty()
    bar: list = []

    def progress(done: int, total: int) -> None:
        if not bar:
            bar.append(Progress(show, total, os.path.basename(args.table.rstrip("/")) or
                                args.table, unit="buckets"))
        bar[0].advance(1)

    try:
        got = compact(args.table, partitions=partitions, full=args.full,
                      storage_options=storage_options(args), dry_run=args.dry_run,
                      progress=progress)
    finally:
        if bar:
            bar[0].close()
    if args.json:
        out.write(json_document({**dataclasses.asdict(got), "dry_run": args.dry_run}))
        return EXIT_OK
    if not got.rewritten:
        out.write(f"nothing to compact ({counted(got.files_before, 'data file')})\n")
        return EXIT_OK
    if args.dry_run:
        out.write(f"would rewrite {counted(got.rewritten, 'file')} in "
                  f"{counted(got.buckets, 'bucket')}\n")
        return EXIT_OK
    out.write(f"compacted {counted(got.buckets, 'bucket')}: {counted(got.rewritten, 'file')} "
              f"rewritten as {got.written}; the table now has {counted(got.files_after, 'data file')} "
              f"({counted(got.bytes_after, 'byte')}, before {got.files_before}, "
              f"{got.bytes_before}); snapshot {got.snapshot} (COMPACT)\n")
    return EXIT_OK
