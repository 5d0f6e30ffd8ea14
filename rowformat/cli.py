"""The ``rowformat`` command: inspect, verify, head, cat, take and convert
Paimon ``.row`` files. See ``docs/cli.md``.

Exit codes: 0 success; 1 a bad file (any :class:`RowFormatError`, an
unreadable file) or problems found by ``verify``; 2 a usage error (bad
arguments, a bad ``--schema``, an unknown column, a row outside the file);
3 an internal failure (a bug: run again with ``--debug`` for the traceback).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
import time
import traceback
from dataclasses import dataclass
from typing import IO, Any, Callable, Iterable, Iterator, Sequence

EXIT_OK = 0
EXIT_BAD_FILE = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3

SCHEMA_METADATA_KEY = b"rowformat.schema"   # Paimon DDL kept in Parquet / Arrow metadata

FORMATS = ("row", "parquet", "arrow", "arrows", "csv", "jsonl")
_EXTENSIONS = {
    ".row": "row", ".parquet": "parquet", ".pq": "parquet",
    ".arrow": "arrow", ".feather": "arrow", ".ipc": "arrow", ".arrows": "arrows",
    ".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl",
}


class UsageError(Exception):
    """A command line that cannot be carried out as given (exit code 2)."""


# -- schema sources -------------------------------------------------------------------------

def _read_text(path: str) -> str:
    from . import fs
    if fs.is_url(path):
        with fs.open_input(path) as f:
            return f.read().decode("utf-8")
    with open(path, encoding="utf-8") as f:
        return f.read()


def _latest_schema_file(directory: str) -> str:
    """A Paimon table directory (or its ``schema/`` directory): the schema
    file with the highest id, ``schema/schema-N``."""
    sub = os.path.join(directory, "schema")
    if os.path.isdir(sub):
        directory = sub
    ids = [int(m.group(1)) for name in os.listdir(directory)
           if (m := re.fullmatch(r"schema-(\d+)", name))]
    if not ids:
        raise UsageError(f"--schema {directory}: no Paimon schema file (schema-N) in the directory")
    return os.path.join(directory, f"schema-{max(ids)}")


def load_schema(spec: str):
    """The RowType ``--schema`` names: a Paimon table directory, a file of
    schema JSON (a Paimon table schema file, ``{"fields": [...]}`` or a field
    list) or of schema text, or the schema text itself."""
    from . import fs, schema_json
    from .errors import SchemaError
    from .arrow_types import as_row_type
    source = None
    if fs.is_url(spec) or os.path.isfile(spec):
        source = spec
    elif os.path.isdir(spec):
        source = _latest_schema_file(spec)
    try:
        if source is None:
            return as_row_type(spec)
        try:
            text = _read_text(source)
        except (OSError, UnicodeDecodeError) as e:
            raise UsageError(f"--schema {source}: cannot read it: {e}") from None
        if text.lstrip()[:1] in ("{", "["):
            try:
                return schema_json.loads(text)
            except json.JSONDecodeError as e:
                raise UsageError(f"--schema {source}: invalid JSON: {e}") from None
        return as_row_type(text.strip())
    except SchemaError as e:
        where = f" (from {source})" if source else ""
        raise UsageError(f"invalid --schema{where}: {e}") from None


def _require_schema(args) -> Any:
    if not getattr(args, "schema", None):
        raise UsageError(
            f"{args.file}: a .row file stores no schema: give the writer's schema with "
            f"--schema 'DDL', --schema FILE.json, or --schema PAIMON_TABLE_DIR")
    return load_schema(args.schema)


# -- argument helpers ---------------------------------------------------------------------------

def _columns(values: Sequence[str] | None) -> list[str] | None:
    if not values:
        return None
    out = [c.strip() for v in values for c in v.split(",") if c.strip()]
    return out or None


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


def _format_of(path: str, given: str | None) -> str:
    if given:
        return given
    from . import fs
    name = path.rsplit("/", 1)[-1] if fs.is_url(path) else os.path.basename(path)
    for ext in sorted(_EXTENSIONS, key=len, reverse=True):
        if name.lower().endswith(ext):
            return _EXTENSIONS[ext]
    raise UsageError(f"{path}: cannot tell the format from the name; give --from/--to "
                     f"({', '.join(FORMATS)})")


# -- output -----------------------------------------------------------------------------------

def _cell(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, str):
        return v
    return json.dumps(v, ensure_ascii=False)


def _use_rich(stream: IO[str]) -> bool:
    if os.environ.get("ROWFORMAT_NO_RICH") or not stream.isatty():
        return False
    try:
        import rich  # noqa: F401
    except ImportError:
        return False
    return True


def print_table(header: Sequence[str], rows: Sequence[Sequence[str]], out: IO[str],
                *, right: Sequence[bool] | None = None, title: str | None = None) -> None:
    """A table: rich's on a terminal, plain aligned text otherwise."""
    right = right or [False] * len(header)
    if _use_rich(out):
        from rich.console import Console
        from rich.table import Table
        table = Table(title=title, show_lines=False)
        for h, r in zip(header, right):
            table.add_column(h, justify="right" if r else "left", overflow="fold")
        for row in rows:
            table.add_row(*row)
        Console(file=out).print(table)
        return
    widths = [len(h) for h in header]
    for row in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row)]

    def line(cells):
        return "  ".join((c.rjust(w) if r else c.ljust(w))
                         for c, w, r in zip(cells, widths, right)).rstrip()
    if title:
        out.write(title + "\n")
    out.write(line(header) + "\n")
    out.write(line(["-" * w for w in widths]) + "\n")
    for row in rows:
        out.write(line(row) + "\n")


def _numeric(t) -> bool:
    import pyarrow.types as pat
    return pat.is_integer(t) or pat.is_floating(t) or pat.is_decimal(t)


class _Emitter:
    """Writes batches to ``out`` as a table, JSON lines or CSV."""

    def __init__(self, fmt: str, out: IO[str]):
        self.fmt, self.out = fmt, out
        self._table_rows: list[list[str]] = []
        self._schema = None
        self._csv_header = False

    def write(self, batch) -> None:
        from . import _textio
        if self._schema is None:
            self._schema = batch.schema
        if self.fmt == "jsonl":
            for line in _textio.json_lines(batch):
                self.out.write(line + "\n")
        elif self.fmt == "csv":
            self.out.write(_csv_text(batch, header=not self._csv_header))
            self._csv_header = True
        else:
            for row in _textio.text_batch(batch).to_pylist():
                self._table_rows.append([_cell(v) for v in row.values()])

    def close(self, schema) -> None:
        schema = self._schema or schema
        if self.fmt == "csv" and not self._csv_header:
            import pyarrow as pa
            self.out.write(_csv_text(pa.RecordBatch.from_pylist([], schema=schema), header=True))
        if self.fmt == "table":
            print_table(schema.names, self._table_rows, self.out,
                        right=[_numeric(f.type) for f in schema])


def _csv_check(schema) -> None:
    from . import _textio
    nested = [f"{f.name} ({f.type})" for f in schema if _textio.is_nested(f.type)]
    if nested:
        raise UsageError(f"CSV holds no nested values: {', '.join(nested)}; select other "
                         f"--columns or use jsonl, parquet or arrow")


def _csv_text(batch, header: bool) -> str:
    import io
    import pyarrow.csv as pacsv
    from . import _textio
    _csv_check(batch.schema)
    buf = io.BytesIO()
    pacsv.write_csv(_textio.text_batch(batch), buf,
                    write_options=pacsv.WriteOptions(include_header=header))
    return buf.getvalue().decode("utf-8")


# -- progress ---------------------------------------------------------------------------------

class _Progress:
    """A progress bar over rows on stderr: rich's when installed, else a
    plain line rewritten in place. Off unless stderr is a terminal or
    ``--progress`` asks for it."""

    def __init__(self, enabled: bool, total: int | None, label: str):
        self.enabled, self.total, self.label, self.done = enabled, total, label, 0
        self._rich = None
        self._last = 0.0
        if not enabled:
            return
        try:
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                       TimeElapsedColumn, TimeRemainingColumn)
        except ImportError:
            return
        from rich.console import Console
        self._rich = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                              TextColumn("rows"), TimeElapsedColumn(), TimeRemainingColumn(),
                              console=Console(file=sys.stderr), transient=False)
        self._task = self._rich.add_task(label, total=total)
        self._rich.start()

    def advance(self, rows: int) -> None:
        self.done += rows
        if not self.enabled:
            return
        if self._rich is not None:
            self._rich.update(self._task, advance=rows)
            return
        now = time.monotonic()
        if now - self._last >= 0.5:
            self._last = now
            self._plain(end="\r")

    def _plain(self, end: str) -> None:
        of = f"/{self.total}" if self.total is not None else ""
        pct = f" ({100 * self.done / self.total:.0f}%)" if self.total else ""
        sys.stderr.write(f"{self.label}: {self.done}{of} rows{pct}{end}")
        sys.stderr.flush()

    def close(self) -> None:
        if not self.enabled:
            return
        if self._rich is not None:
            self._rich.stop()
        else:
            self._plain(end="\n")


# -- commands ---------------------------------------------------------------------------------

def _open_reader(args, schema=None):
    from .reader import RowFileReader
    return RowFileReader(args.file, schema if schema is not None else _require_schema(args),
                         threads=getattr(args, "threads", None))


def _metadata_reader(path: str):
    """A reader for the footer and index only: opening reads no row, so any
    schema serves."""
    from .reader import RowFileReader
    from .types import schema
    return RowFileReader(path, schema("_ INT"), cache_bytes=0, threads=1)


def _stats(values) -> dict | None:
    if not len(values):
        return None
    return {"min": int(values.min()), "mean": round(float(values.mean()), 1), "max": int(values.max())}


def inspect_file(path: str, *, blocks: bool = False) -> dict:
    """The facts ``rowformat inspect`` prints, as a dict."""
    import numpy as np
    with _metadata_reader(path) as r:
        f, ix = r.footer, r.block_index
        comp, uncomp = ix.compressed_sizes, ix.uncompressed_sizes
        rows = np.diff(np.append(ix.row_starts, f.total_rows)) if len(ix) else np.zeros(0, np.int64)
        size = r._source.size
        out: dict[str, Any] = {
            "file": path,
            "size": int(size),
            "footer": {"total_rows": f.total_rows, "block_count": f.block_count,
                       "index_offset": f.index_offset, "index_length": f.index_length,
                       "version": f.version},
            "compressed_bytes": int(comp.sum()),
            "uncompressed_bytes": int(uncomp.sum()),
            "compression_ratio": round(float(uncomp.sum()) / float(comp.sum()), 3)
            if comp.sum() else None,
            "rows_per_block": _stats(rows),
            "uncompressed_block_bytes": _stats(uncomp),
        }
        if blocks:
            offsets = ix.offsets
            out["blocks"] = [
                {"block": b, "offset": int(offsets[b]), "compressed_bytes": int(comp[b]),
                 "uncompressed_bytes": int(uncomp[b]), "first_row": int(ix.row_starts[b]),
                 "rows": int(rows[b])}
                for b in range(len(ix))]
    return out


def cmd_inspect(args, out: IO[str]) -> int:
    info = inspect_file(args.file, blocks=args.blocks)
    if args.schema:
        info["schema"] = str(load_schema(args.schema))
    if args.json:
        out.write(json.dumps(info, indent=2) + "\n")
        return EXIT_OK
    f = info["footer"]

    def stats(s, unit=""):
        return "-" if s is None else f"min {s['min']}{unit}, mean {s['mean']}{unit}, max {s['max']}{unit}"
    ratio = info["compression_ratio"]
    summary = [
        ("file", info["file"]),
        ("size", f"{info['size']} bytes"),
        ("rows", str(f["total_rows"])),
        ("blocks", str(f["block_count"])),
        ("rows per block", stats(info["rows_per_block"])),
        ("block size", stats(info["uncompressed_block_bytes"], " bytes") + " (uncompressed)"),
        ("compressed", f"{info['compressed_bytes']} bytes"),
        ("uncompressed", f"{info['uncompressed_bytes']} bytes"),
        ("compression ratio", "-" if ratio is None else f"{ratio:.3f}"),
        ("block index", f"offset {f['index_offset']}, {f['index_length']} bytes"),
        ("format version", str(f["version"])),
    ]
    if "schema" in info:
        summary.append(("schema", info["schema"]))
    print_table(["field", "value"], [list(x) for x in summary], out)
    if args.blocks:
        out.write("\n")
        cols = ["block", "offset", "compressed_bytes", "uncompressed_bytes", "first_row", "rows"]
        print_table(cols, [[str(b[c]) for c in cols] for b in info["blocks"]], out,
                    right=[True] * len(cols))
    return EXIT_OK


def cmd_verify(args, out: IO[str]) -> int:
    from .verify import verify
    report = verify(args.file, _require_schema(args))
    problems = report.problems
    ok = report.ok
    if args.json:
        out.write(json.dumps({
            "file": args.file, "ok": ok,
            "problems": [{"block": p.block, "row": p.row, "column": p.column,
                          "message": p.message} for p in problems],
        }, indent=2) + "\n")
    elif ok:
        extra = f": {report.num_rows} rows in {report.num_blocks} blocks" \
            if report.num_rows is not None else ""
        out.write(f"ok {args.file}{extra}\n")
    else:
        for p in problems:
            where = ", ".join(f"{k} {v}" for k, v in (("block", p.block), ("row", p.row),
                                                        ("column", p.column)) if v is not None)
            out.write(f"{where or 'file'}: {p.message}\n")
        out.write(f"FAILED {args.file}: {len(problems)} problem(s)\n")
    return EXIT_OK if ok else EXIT_BAD_FILE


def _emit_rows(args, out: IO[str], rows_of: Callable[[Any], Iterable[int] | None],
               ordered: bool = True) -> int:
    import numpy as np
    import pyarrow as pa
    fmt = args.format
    with _open_reader(args) as r:
        columns = _columns(args.columns)
        rows = rows_of(r)
        emitter = _Emitter(fmt, out)
        if ordered:
            sel = None if rows is None else np.fromiter(rows, dtype=np.int64)
            if sel is None or len(sel):
                for batch in r.iter_batches(columns=columns, selection=sel,
                                            batch_size=args.batch_size):
                    emitter.write(batch)
        else:
            table = r.take(list(rows or []), columns=columns)
            for batch in table.to_batches():
                emitter.write(batch)
        positions = r._column_positions(columns)
        emitter.close(pa.schema([r.arrow_schema.field(i) for i in positions]))
    return EXIT_OK


def cmd_head(args, out: IO[str]) -> int:
    if args.n < 0:
        raise UsageError(f"-n {args.n}: must be >= 0")
    return _emit_rows(args, out, lambda r: range(min(args.n, r.num_rows)))


def cmd_cat(args, out: IO[str]) -> int:
    return _emit_rows(args, out, lambda r: None if args.rows is None else _row_range(args.rows, r.num_rows))


def cmd_take(args, out: IO[str]) -> int:
    def rows(r):
        out_rows = []
        for i in args.rows:
            j = i + r.num_rows if i < 0 else i
            if not 0 <= j < r.num_rows:
                raise UsageError(f"row {i} outside the file's {r.num_rows} rows")
            out_rows.append(j)
        return out_rows
    return _emit_rows(args, out, rows, ordered=False)


# -- convert ----------------------------------------------------------------------------------

def _arrow_schema_of(source_schema, override):
    """The Paimon schema of a non-.row source: ``--schema``, else the DDL the
    converter stored in the metadata, else the Arrow schema's mapping."""
    from .arrow_types import as_row_type, from_arrow_schema
    if override is not None:
        return override
    meta = source_schema.metadata or {}
    if SCHEMA_METADATA_KEY in meta:
        return as_row_type(meta[SCHEMA_METADATA_KEY].decode("utf-8"))
    return from_arrow_schema(source_schema.remove_metadata())


@dataclass
class _Source:
    schema: Any                      # RowType
    arrow_schema: Any                # pa.Schema the batches have
    total: int | None
    batches: Iterator[Any]
    close: Callable[[], None]


def _open_binary(path: str):
    from . import fs
    if fs.is_url(path):
        return fs.open_input(path)
    return open(path, "rb")


def _open_source(path: str, fmt: str, schema, batch_size: int, threads: int | None) -> _Source:
    if fmt == "row":
        from .reader import RowFileReader
        if schema is None:
            raise UsageError(f"{path}: a .row file stores no schema: give --schema")
        r = RowFileReader(path, schema, threads=threads)
        return _Source(r.schema, r.arrow_schema, r.num_rows,
                       r.iter_batches(batch_size=batch_size), r.close)
    f = _open_binary(path)
    try:
        if fmt == "parquet":
            import pyarrow.parquet as pq
            pf = pq.ParquetFile(f)
            arrow = pf.schema_arrow
            rt = _arrow_schema_of(arrow, schema)
            return _Source(rt, arrow, pf.metadata.num_rows,
                           pf.iter_batches(batch_size=batch_size), f.close)
        if fmt in ("arrow", "arrows"):
            import pyarrow.ipc as ipc
            if fmt == "arrow":
                fr = ipc.open_file(f)
                batches: Iterator[Any] = (fr.get_batch(i) for i in range(fr.num_record_batches))
                arrow = fr.schema
                total = None
            else:
                sr = ipc.open_stream(f)
                batches, arrow, total = iter(sr), sr.schema, None
            return _Source(_arrow_schema_of(arrow, schema), arrow, total, batches, f.close)
        if fmt == "csv":
            return _csv_source(f, schema, batch_size)
        if fmt == "jsonl":
            return _jsonl_source(f, schema, batch_size)
    except BaseException:
        f.close()
        raise
    raise UsageError(f"unknown format {fmt!r}")


def _csv_source(f, schema, batch_size: int) -> _Source:
    import pyarrow.csv as pacsv
    from . import _textio
    from .arrow_types import from_arrow_schema, to_arrow_schema
    read = pacsv.ReadOptions(block_size=1 << 22)
    if schema is None:
        # Empty unquoted fields are null; "" is the empty string.
        conv = pacsv.ConvertOptions(null_values=[""], strings_can_be_null=True,
                                    quoted_strings_can_be_null=False)
        reader = pacsv.open_csv(f, read_options=read, convert_options=conv)
        arrow = reader.schema
        rt = from_arrow_schema(arrow)
        return _Source(rt, arrow, None, (b for b in reader), f.close)
    arrow = to_arrow_schema(schema)
    _csv_check(arrow)
    text = _textio.text_schema(arrow)
    conv = pacsv.ConvertOptions(column_types={fl.name: fl.type for fl in text},
                                include_columns=text.names, null_values=[""],
                                strings_can_be_null=True, quoted_strings_can_be_null=False)
    reader = pacsv.open_csv(f, read_options=read, convert_options=conv)
    return _Source(schema, arrow, None,
                   (_textio.batch_from_text(b, arrow) for b in reader), f.close)


def _jsonl_source(f, schema, batch_size: int) -> _Source:
    import io
    import pyarrow.json as pajson
    from . import _textio
    from .arrow_types import from_arrow_schema, to_arrow_schema
    if schema is None:
        table = pajson.read_json(f)
        return _Source(from_arrow_schema(table.schema), table.schema, table.num_rows,
                       iter(table.to_batches(max_chunksize=batch_size)), f.close)
    arrow = to_arrow_schema(schema)
    text = io.TextIOWrapper(f, encoding="utf-8")

    def convert(chunk, first):
        try:
            return _textio.batch_from_json(chunk, arrow, first)
        except (ValueError, TypeError, OverflowError) as e:
            raise InputError(f"{getattr(f, 'name', 'input')}: {e}") from None

    def batches() -> Iterator[Any]:
        chunk: list[str] = []
        first = 1
        for n, line in enumerate(text, 1):
            chunk.append(line)
            if len(chunk) >= batch_size:
                yield convert(chunk, first)
                chunk, first = [], n + 1
        if chunk:
            yield convert(chunk, first)
    return _Source(schema, arrow, None, batches(), text.close)


def _parquet_field(f):
    """``f`` with every nullable fixed-size list (VECTOR) made a list: pyarrow
    writes a null fixed-size list to Parquet without its slots and then cannot
    read the file back. The Paimon schema in the metadata restores VECTOR."""
    import pyarrow as pa
    import pyarrow.types as pat
    t = f.type
    if pat.is_fixed_size_list(t):
        inner = _parquet_field(t.value_field)
        t = pa.list_(inner) if f.nullable else pa.list_(inner, t.list_size)
    elif pat.is_map(t):
        t = pa.map_(_parquet_field(t.key_field).type, _parquet_field(t.item_field),
                    keys_sorted=t.keys_sorted)
    elif pat.is_list(t) or pat.is_large_list(t):
        t = (pa.list_ if pat.is_list(t) else pa.large_list)(_parquet_field(t.value_field))
    elif pat.is_struct(t):
        t = pa.struct([_parquet_field(t.field(i)) for i in range(t.num_fields)])
    return f.with_type(t)


def _parquet_array(arr, t):
    """``arr`` as the type ``_parquet_field`` made (a cast cannot turn null
    fixed-size lists into lists)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.types as pat
    if arr.type.equals(t):
        return arr
    mask = arr.is_null() if arr.null_count else None
    if pat.is_fixed_size_list(arr.type):
        n = arr.type.list_size
        values = arr.values.slice(arr.offset * n, len(arr) * n)
        if pat.is_fixed_size_list(t):
            return pa.FixedSizeListArray.from_arrays(_parquet_array(values, t.value_type), type=t,
                                                     mask=mask)
        valid = np.ones(len(arr), bool) if mask is None else ~mask.to_numpy(zero_copy_only=False)
        keep = np.repeat(valid, n)
        offsets = np.concatenate(([0], np.cumsum(valid * n))).astype(np.int32)
        values = values.filter(pa.array(keep))
        return pa.ListArray.from_arrays(pa.array(offsets), _parquet_array(values, t.value_type),
                                        type=t, mask=mask)
    if pat.is_map(arr.type):
        return pa.MapArray.from_arrays(arr.offsets, _parquet_array(arr.keys, t.key_type),
                                       _parquet_array(arr.items, t.item_type), type=t, mask=mask)
    if pat.is_list(arr.type) or pat.is_large_list(arr.type):
        cls = pa.ListArray if pat.is_list(arr.type) else pa.LargeListArray
        return cls.from_arrays(arr.offsets, _parquet_array(arr.values, t.value_type), type=t,
                               mask=mask)
    if pat.is_struct(arr.type):
        return pa.StructArray.from_arrays(
            [_parquet_array(arr.field(i), t.field(i).type) for i in range(t.num_fields)],
            fields=list(t), mask=mask)
    return arr.cast(t)


def _parquet_batch(batch, schema):
    import pyarrow as pa
    return pa.RecordBatch.from_arrays(
        [_parquet_array(c, f.type) for c, f in zip(batch.columns, schema)], schema=schema)


def _parquet_schema(schema):
    import pyarrow as pa
    return pa.schema([_parquet_field(f) for f in schema])


class _Sink:
    def __init__(self, path: str, fmt: str, schema, args):
        from . import fs
        from .arrow_types import to_arrow_schema
        self.path, self.fmt = path, fmt
        self.arrow = to_arrow_schema(schema)
        self._tmp = None
        if fmt == "row":
            from .writer import RowFileWriter
            self._row = RowFileWriter(path, schema, block_size=args.block_size,
                                      zstd_level=args.zstd_level, threads=args.threads)
            return
        if fmt == "csv":
            _csv_check(self.arrow)
        import tempfile
        fd, self._tmp = tempfile.mkstemp(prefix=".rowformat-convert.", suffix=".tmp",
                                         dir=fs.staging_dir(path))
        self._file = os.fdopen(fd, "wb")
        meta = {SCHEMA_METADATA_KEY: str(schema).encode("utf-8")}
        arrow_meta = self.arrow.with_metadata(meta)
        if fmt == "parquet":
            import pyarrow.parquet as pq
            self._parquet = _parquet_schema(self.arrow).with_metadata(meta)
            self._w = pq.ParquetWriter(self._file, self._parquet, compression="zstd")
        elif fmt == "arrow":
            import pyarrow.ipc as ipc
            self._w = ipc.new_file(self._file, arrow_meta)
        elif fmt == "arrows":
            import pyarrow.ipc as ipc
            self._w = ipc.new_stream(self._file, arrow_meta)
        elif fmt in ("csv", "jsonl"):
            import io
            self._text = io.TextIOWrapper(self._file, encoding="utf-8", newline="")
            self._header = False
            self._w = None
        else:
            raise UsageError(f"unknown format {fmt!r}")

    def write(self, batch) -> None:
        if self.fmt == "row":
            self._row.write(batch)
        elif self.fmt == "csv":
            self._text.write(_csv_text(batch, header=not self._header))
            self._header = True
        elif self.fmt == "jsonl":
            from . import _textio
            for line in _textio.json_lines(batch):
                self._text.write(line + "\n")
        elif self.fmt == "parquet":
            self._w.write_batch(_parquet_batch(batch, self._parquet))
        else:
            self._w.write_batch(batch)

    def close(self) -> None:
        from . import fs
        if self.fmt == "row":
            self._row.close()
            return
        if self.fmt == "csv" and not self._header:
            import pyarrow as pa
            self._text.write(_csv_text(pa.RecordBatch.from_pylist([], schema=self.arrow), True))
        if self._w is not None:
            self._w.close()
        if self.fmt in ("csv", "jsonl"):
            self._text.flush()
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()
        assert self._tmp is not None
        fs.replace(self._tmp, self.path)
        self._tmp = None

    def abort(self) -> None:
        if self.fmt == "row":
            self._row.abort()
            return
        with contextlib.suppress(Exception):
            self._file.close()
        if self._tmp is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._tmp)


def _conform(batch, arrow):
    """A source batch as the output's Arrow schema (columns by name, safe casts)."""
    import pyarrow as pa
    if batch.schema.equals(arrow, check_metadata=False):
        return batch
    cols = []
    for f in arrow:
        i = batch.schema.get_field_index(f.name)
        if i < 0:
            raise UsageError(f"the source has no column {f.name!r} (it has {batch.schema.names})")
        c = batch.column(i)
        cols.append(c if c.type.equals(f.type) else c.cast(f.type, safe=True))
    return pa.RecordBatch.from_arrays(cols, schema=arrow)


def cmd_convert(args, out: IO[str]) -> int:
    src_fmt = _format_of(args.input, args.from_format)
    dst_fmt = _format_of(args.output, args.to_format)
    schema = load_schema(args.schema) if args.schema else None
    src = _open_source(args.input, src_fmt, schema, args.batch_size, args.threads)
    try:
        sink = _Sink(args.output, dst_fmt, src.schema, args)
        show = args.progress if args.progress is not None else sys.stderr.isatty()
        progress = _Progress(show, src.total, f"{os.path.basename(args.input)} -> "
                             f"{os.path.basename(args.output)}")
        rows = 0
        try:
            for batch in src.batches:
                if dst_fmt != "row":     # the .row writer casts by name itself
                    batch = _conform(batch, sink.arrow)
                sink.write(batch)
                rows += batch.num_rows
                progress.advance(batch.num_rows)
            sink.close()
        except BaseException:
            sink.abort()
            raise
        finally:
            progress.close()
    finally:
        src.close()
    if not args.quiet:
        sys.stderr.write(f"wrote {rows} rows to {args.output}\n")
    return EXIT_OK


# -- main ---------------------------------------------------------------------------------------

def _add_schema(p: argparse.ArgumentParser, required_for: str = "") -> None:
    p.add_argument("-s", "--schema", metavar="SCHEMA",
                   help="the .row file's schema: DDL text ('id BIGINT NOT NULL, name STRING'), "
                        "a schema JSON file, a Paimon table schema file (schema/schema-N) or "
                        "a Paimon table directory (its latest schema)" + required_for)


def _add_output(p: argparse.ArgumentParser, default: str) -> None:
    p.add_argument("-c", "--columns", action="append", metavar="COLS",
                   help="columns to show, comma-separated (repeatable); default all")
    p.add_argument("-f", "--format", choices=("table", "jsonl", "csv"), default=default,
                   help=f"output format (default {default})")
    p.add_argument("--batch-size", type=int, default=4096, help=argparse.SUPPRESS)
    p.add_argument("--threads", type=int, default=None, help=argparse.SUPPRESS)


def build_parser() -> argparse.ArgumentParser:
    from . import __version__
    parser = argparse.ArgumentParser(
        prog="rowformat",
        description="Inspect, verify, print and convert Apache Paimon .row files.",
        epilog="Exit codes: 0 ok, 1 bad file or verify found problems, 2 usage error, "
               "3 internal failure (see --debug). Docs: docs/cli.md")
    parser.add_argument("--version", action="version", version=f"rowformat {__version__}")
    parser.add_argument("--debug", action="store_true",
                        help="print the full traceback of an internal failure")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = sub.add_parser("inspect", help="footer, blocks, sizes and compression of a .row file")
    p.add_argument("file")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--blocks", action="store_true", help="also list every block")
    _add_schema(p, " (optional: shown when given)")
    p.set_defaults(func=cmd_inspect)

    p = sub.add_parser("verify", help="check every block and row; exit 1 on any problem")
    p.add_argument("file")
    _add_schema(p, " (required)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=cmd_verify)

    p = sub.add_parser("head", help="the first rows")
    p.add_argument("file")
    p.add_argument("-n", type=int, default=10, help="how many rows (default 10)")
    _add_schema(p, " (required)")
    _add_output(p, "table")
    p.set_defaults(func=cmd_head)

    p = sub.add_parser("cat", help="rows, as JSON lines (default), CSV or a table")
    p.add_argument("file")
    p.add_argument("-r", "--rows", metavar="A:B",
                   help="a row range: A:B, A:, :B (negatives count from the end) or one row N")
    _add_schema(p, " (required)")
    _add_output(p, "jsonl")
    p.set_defaults(func=cmd_cat)

    p = sub.add_parser("take", help="the rows numbered N..., in the order given")
    p.add_argument("file")
    p.add_argument("rows", metavar="N", type=int, nargs="+",
                   help="row numbers (negatives count from the end)")
    _add_schema(p, " (required)")
    _add_output(p, "table")
    p.set_defaults(func=cmd_take)

    p = sub.add_parser("convert", help="convert between .row, Parquet, Arrow IPC, CSV and JSON lines",
                       description="Formats come from the extensions (.row, .parquet, .arrow/"
                                   ".feather, .arrows, .csv, .jsonl/.ndjson) or --from/--to.")
    p.add_argument("input")
    p.add_argument("output")
    p.add_argument("--from", dest="from_format", choices=FORMATS, help="input format")
    p.add_argument("--to", dest="to_format", choices=FORMATS, help="output format")
    _add_schema(p, ". Required to read a .row file; for other inputs it overrides the "
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


class InputError(Exception):
    """A malformed line of a CSV or JSON lines input (exit code 1)."""


def _is_input_error(e: BaseException) -> bool:
    if isinstance(e, InputError):
        return True
    import pyarrow as pa
    # pyarrow's readers raise ArrowInvalid (a ValueError) on malformed input.
    return isinstance(e, pa.ArrowInvalid) and not isinstance(e, pa.ArrowNotImplementedError)


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line ``argv`` (default ``sys.argv[1:]``); returns the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:     # --help, --version, usage errors
        return int(e.code) if isinstance(e.code, int) else EXIT_USAGE
    from .errors import RowFormatError
    from .errors import RowIndexError
    out = sys.stdout
    try:
        return args.func(args, out)
    except UsageError as e:
        sys.stderr.write(f"rowformat {args.command}: error: {e}\n")
        return EXIT_USAGE
    except (RowIndexError, KeyError) as e:
        msg = e.args[0] if e.args else e
        sys.stderr.write(f"rowformat {args.command}: error: {msg}\n")
        return EXIT_USAGE
    except RowFormatError as e:
        sys.stderr.write(f"rowformat {args.command}: {e}\n")
        return EXIT_BAD_FILE
    except BrokenPipeError:
        # The reader of stdout went away (| head): stop quietly.
        with contextlib.suppress(OSError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    except OSError as e:     # a missing or unreadable file
        where = f": {e.filename}" if getattr(e, "filename", None) else ""
        sys.stderr.write(f"rowformat {args.command}: {e.strerror or e}{where}\n")
        return EXIT_BAD_FILE
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        return 130
    except Exception as e:
        if _is_input_error(e):   # a malformed Parquet, Arrow, CSV or JSON input
            sys.stderr.write(f"rowformat {args.command}: {e}\n")
            return EXIT_BAD_FILE
        if args.debug:
            traceback.print_exc()
        else:
            sys.stderr.write(f"rowformat {args.command}: internal error: {type(e).__name__}: {e}\n"
                             f"(a bug in rowformat; run with --debug for the traceback)\n")
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
