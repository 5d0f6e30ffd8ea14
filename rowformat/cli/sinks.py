"""What ``rowformat convert`` writes: a sink per output format (``.row``,
Parquet, Arrow IPC file or stream, CSV, JSON lines) that takes record batches
and makes the output file appear only when close() succeeds. Parquet gets
nullable VECTOR columns as lists (:func:`_parquet_field`).
"""
from __future__ import annotations

import contextlib
import os

from .exit_codes import UsageError
from .formats import schema_metadata
from .output import csv_check, csv_text


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


class Sink:
    def __init__(self, path: str, fmt: str, schema, args):
        from .. import fs
        from ..arrow_types import to_arrow_schema
        self.path, self.fmt = path, fmt
        self.arrow = to_arrow_schema(schema)
        self._tmp = None
        if fmt == "row":
            from ..writer import RowFileWriter
            self._row = RowFileWriter(path, schema, block_size=args.block_size,
                                      zstd_level=args.zstd_level, threads=args.threads)
            return
        if fmt == "csv":
            csv_check(self.arrow)
        import tempfile
        fd, self._tmp = tempfile.mkstemp(prefix=".rowformat-convert.", suffix=".tmp",
                                         dir=fs.staging_dir(path))
        self._file = os.fdopen(fd, "wb")
        meta = schema_metadata(schema)
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
            self._text.write(csv_text(batch, header=not self._header))
            self._header = True
        elif self.fmt == "jsonl":
            from . import textio
            for line in textio.json_lines(batch):
                self._text.write(line + "\n")
        elif self.fmt == "parquet":
            self._w.write_batch(_parquet_batch(batch, self._parquet))
        else:
            self._w.write_batch(batch)

    def close(self) -> None:
        from .. import fs
        if self.fmt == "row":
            self._row.close()
            return
        if self.fmt == "csv" and not self._header:
            import pyarrow as pa
            self._text.write(csv_text(pa.RecordBatch.from_pylist([], schema=self.arrow), True))
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
