"""What ``rowformat convert`` writes: a sink per output format that takes
record batches. Every sink writes through :mod:`rowformat.atomic`, as the
library's writers do: ``.row`` output is a :class:`RowFileWriter`, every other
format a :class:`FileSink`, an :class:`AtomicWriter` over an
:class:`AtomicOutput`. The bytes go to a hidden ``.<name>.<random>.tmp`` beside
the output (for a URL, in a local staging directory) and are renamed (or
uploaded) to the output only by a successful ``close()``; an exception, an
``abort()`` or a sink dropped while open removes the temporary file. A failed
convert leaves no output, a killed one at most the hidden temporary file.
Parquet gets nullable VECTOR columns as lists (:func:`_parquet_field`).
"""
from __future__ import annotations

import contextlib
from typing import Any

from ..io.output import AtomicWriter, open_output
from .exit_codes import UsageError
from .formats import schema_metadata
from .output import TextRows, csv_check


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


def _has_empty_struct(t) -> bool:
    """True when the Arrow type ``t`` is or holds a struct without fields
    (a ROW<>). Walks the type without recursion."""
    import pyarrow.types as pat
    stack = [t]
    while stack:
        t = stack.pop()
        if pat.is_struct(t) and t.num_fields == 0:
            return True
        if pat.is_nested(t):    # list, fixed-size list, map (its entries struct), struct
            stack.extend(t.field(i).type for i in range(t.num_fields))
    return False


def _parquet_schema(schema):
    import pyarrow as pa
    empty = [f"{f.name} ({f.type})" for f in schema if _has_empty_struct(f.type)]
    if empty:
        raise UsageError(f"Parquet holds no ROW<> (a ROW without fields): {', '.join(empty)}; "
                         f"use arrow, arrows or jsonl")
    return pa.schema([_parquet_field(f) for f in schema])


class FileSink(AtomicWriter):
    """An output of convert in a format other than ``.row``, written to an
    :class:`AtomicOutput`. ``arrow_schema`` is the Arrow schema the batches
    have; ``meta`` the metadata that stores the Paimon schema. A subclass
    starts its format in ``_open``, writes a batch in ``_write`` and ends the
    format (footer, last lines) in ``_finish``, leaving the file open for the
    commit."""

    durable = True   # fsync before the rename, as convert has always done

    def __init__(self, path: str, arrow_schema, meta: dict[bytes, bytes],
                 storage_options: dict | None = None):
        self.path, self.arrow_schema = path, arrow_schema
        self._out = open_output(path, storage_options=storage_options)
        try:
            self._open(self._out.file, meta)
        except BaseException:
            self.abort()
            raise

    def _open(self, file, meta: dict[bytes, bytes]) -> None:
        raise NotImplementedError

    def _write(self, batch) -> None:
        raise NotImplementedError

    def write(self, batch) -> None:
        """Writes a record batch of ``arrow_schema``."""
        self._check_open()
        self._write(batch)


class _PyarrowSink(FileSink):
    """A sink whose format a pyarrow writer (``_writer``) makes."""

    _writer: Any = None

    def _adapt(self, batch):
        return batch

    def _write(self, batch) -> None:
        self._writer.write_batch(self._adapt(batch))

    def _finish(self) -> None:
        writer, self._writer = self._writer, None
        writer.close()            # writes the footer; the file stays open

    def _release(self) -> None:
        # After a failure: close the writer while its file is still open, or
        # its finalizer would write to the closed file (an "Exception ignored").
        writer, self._writer = self._writer, None
        if writer is not None:
            with contextlib.suppress(Exception):
                writer.close()


class ParquetSink(_PyarrowSink):
    """Parquet, ZSTD-compressed; nullable VECTOR columns as lists."""

    def _open(self, file, meta):
        import pyarrow.parquet as pq
        self._parquet = _parquet_schema(self.arrow_schema).with_metadata(meta)
        self._writer = pq.ParquetWriter(file, self._parquet, compression="zstd")

    def _adapt(self, batch):
        return _parquet_batch(batch, self._parquet)


class ArrowFileSink(_PyarrowSink):
    """An Arrow IPC file (``.arrow``, ``.feather``, ``.ipc``)."""

    def _open(self, file, meta):
        import pyarrow.ipc as ipc
        self._writer = ipc.new_file(file, self.arrow_schema.with_metadata(meta))


class ArrowStreamSink(_PyarrowSink):
    """An Arrow IPC stream (``.arrows``)."""

    def _open(self, file, meta):
        import pyarrow.ipc as ipc
        self._writer = ipc.new_stream(file, self.arrow_schema.with_metadata(meta))


class TextSink(FileSink):
    """CSV or JSON lines (``fmt``), every value in its exact text form; a CSV
    of nested columns is a :class:`UsageError` before any file is made."""

    _text: Any = None

    def __init__(self, path: str, arrow_schema, meta: dict[bytes, bytes], fmt: str,
                 storage_options: dict | None = None):
        if fmt == "csv":
            csv_check(arrow_schema)
        self.fmt = fmt
        super().__init__(path, arrow_schema, meta, storage_options)

    def _open(self, file, meta):
        import io
        self._text = io.TextIOWrapper(file, encoding="utf-8", newline="")
        self._rows = TextRows(self.fmt, self._text)

    def _write(self, batch) -> None:
        self._rows.write(batch)

    def _finish(self) -> None:
        self._rows.finish(self.arrow_schema)
        self._text.flush()

    def _release(self) -> None:
        # Flush and let go of the file without closing it: AtomicOutput
        # commits or discards it.
        text, self._text = self._text, None
        if text is not None:
            with contextlib.suppress(Exception):
                text.detach()


_FILE_SINKS = {"parquet": ParquetSink, "arrow": ArrowFileSink, "arrows": ArrowStreamSink}


def open_sink(path: str, fmt: str, schema, *, block_size: int, zstd_level: int,
              threads: int | None, storage_options: dict | None = None):
    """The sink that writes the RowType ``schema`` to ``path`` in the format
    ``fmt``: an :class:`AtomicWriter` with ``write(batch)``, ``close()`` and
    ``abort()`` (a context manager that aborts on an exception) and the
    ``arrow_schema`` its batches have."""
    if fmt == "row":
        from ..row.writer import RowFileWriter
        return RowFileWriter(path, schema, block_size=block_size, zstd_level=zstd_level,
                             threads=threads, storage_options=storage_options)
    from ..arrow_types import to_arrow_schema
    arrow, meta = to_arrow_schema(schema), schema_metadata(schema)
    if fmt in ("csv", "jsonl"):
        return TextSink(path, arrow, meta, fmt, storage_options)
    if fmt not in _FILE_SINKS:
        raise UsageError(f"unknown format {fmt!r}")
    return _FILE_SINKS[fmt](path, arrow, meta, storage_options)
