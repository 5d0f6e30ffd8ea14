"""RowFileWriter: writes a Paimon ``.row`` file byte-for-byte as Paimon Java.

Blocks are flushed by Java's rule (``row bytes + 4 * rows + 4 >= block_size``,
checked after each row) and compressed as single ZSTD frames without a content
size or checksum (as zstd-jni's stream makes them: see java_frames), so blocks are
byte-identical to Java's with the same libzstd. The file is written under a
temporary name in the target directory and renamed to ``path`` only when
``close()`` succeeds: an exception or a killed process leaves no file at
``path``. A writer is not to be shared between threads.
"""
from __future__ import annotations

import os
import threading
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pyarrow as pa

from .. import _rowcodec
from ..arrow_cast import cast_batch
from ..arrow_data import as_batches
from ..arrow_types import as_row_type, to_arrow_schema
from ..io.output import AtomicWriter, open_output
from .block_index import BlockIndex
from ..errors import ValueConversionError
from .footer import Footer
from .java_frames import JavaFrameCompressor
from ..datatypes import RowType

DEFAULT_BLOCK_SIZE = 65536
ENCODE_SLICE_ROWS = 8192
# Blocks waiting per pool thread before the calling thread compresses blocks
# itself: enough that the pool does not run dry while the caller encodes the
# next slice or compresses one block (a slice is ~16 blocks of ~0.3 ms each).
QUEUED_PER_WORKER = 8


def _has_struct(t: pa.DataType) -> bool:
    return pa.types.is_struct(t) or any(_has_struct(t.field(i).type) for i in range(t.num_fields))


def _tuples_to_dicts(v, t: pa.DataType):
    """ROW values given as tuples become dicts, at any depth."""
    if v is None:
        return None
    if pa.types.is_struct(t):
        if isinstance(v, (tuple, list)) and len(v) == t.num_fields:
            v = {t.field(i).name: v[i] for i in range(t.num_fields)}
        if isinstance(v, Mapping):
            return {t.field(i).name: _tuples_to_dicts(v.get(t.field(i).name), t.field(i).type)
                    for i in range(t.num_fields)}
        return v
    if pa.types.is_map(t):
        items = v.items() if isinstance(v, Mapping) else v
        return [(k, _tuples_to_dicts(x, t.item_type)) for k, x in items]
    if pa.types.is_list(t) or pa.types.is_fixed_size_list(t):
        return [_tuples_to_dicts(x, t.value_type) for x in v]
    return v


_STATS_MODES = {"none": 0, "counts": 1, "min-max": 2}


def _stats_modes(stats: Sequence[str] | None, schema: RowType) -> list[int] | None:
    if stats is None:
        return None
    stats = list(stats)
    if len(stats) != len(schema.fields) or any(m not in _STATS_MODES for m in stats):
        raise ValueError(f"stats must give one of {sorted(_STATS_MODES)} for each of the "
                         f"{len(schema.fields)} fields {schema.names}, got {stats!r}")
    return [_STATS_MODES[m] for m in stats]


class RowFileWriter(AtomicWriter):
    """Writes rows to a new ``.row`` file at ``path``.

    ``schema`` is a :class:`RowType`, schema text or ``pyarrow.Schema``.
    ``block_size`` is Paimon's ``file.block-size`` (uncompressed bytes) and
    ``zstd_level`` its ``file.compression.zstd-level``. Up to ``threads``
    blocks are compressed at once (default: the core count), one of them by
    the calling thread, which also encodes the rows; the output does not
    depend on it. A writer is not to be shared between threads: use one
    writer per thread (per file).

    ``path`` may be a URL (``s3://bucket/key``, ``gs://...``): the file is
    streamed to the store as it is written and appears only when close()
    succeeds (on S3 a multipart upload, aborted on failure). ``filesystem``
    (a ``pyarrow.fs.FileSystem`` or fsspec filesystem) and
    ``storage_options`` (its settings, e.g. ``{"endpoint_override": ...,
    "access_key": ...}``) choose the store: docs/row-files.md, "Object stores".

    ``stats`` asks for column statistics, collected in C while encoding:
    one entry per top-level field, ``"none"``, ``"counts"`` (its null
    count) or ``"min-max"`` (null count, least and greatest value in
    Paimon's order; a nested, VARIANT or BLOB field gets its null count
    only). :meth:`statistics` returns them (rowformat.paimon stores them in
    the table's manifest as Paimon's value statistics).
    """

    def __init__(self, path, schema, *, block_size: int = DEFAULT_BLOCK_SIZE, zstd_level: int = 1,
                 threads: int | None = None, durable: bool = False, filesystem=None,
                 storage_options: dict | None = None, stats: Sequence[str] | None = None):
        self.schema: RowType = as_row_type(schema)
        self.arrow_schema: pa.Schema = to_arrow_schema(self.schema)
        self.path = os.fspath(path)
        self.block_size = int(block_size)
        self.zstd_level = int(zstd_level)
        self._encoder = _rowcodec.BlockEncoder(self.schema, self.block_size,
                                               _stats_modes(stats, self.schema))
        self.threads = max(1, threads if threads is not None else (os.cpu_count() or 1))
        # The calling thread encodes and is one of the `threads` compressors:
        # a pool of threads - 1 more, so that no more threads are busy than
        # asked for (an extra compressor only takes turns with the encoder).
        self._pool = ThreadPoolExecutor(self.threads - 1, thread_name_prefix="rowformat-zstd") \
            if self.threads > 1 else None
        self._queue_limit = QUEUED_PER_WORKER * (self.threads - 1)
        # blocks in file order: (rows, uncompressed size, frame or the pool's future of it)
        self._in_flight: deque = deque()
        self._queued = 0                    # futures in _in_flight
        self._local = threading.local()     # one compressor per thread: they are not shareable
        self.durable = durable
        self._out = open_output(self.path, -1, filesystem, storage_options)
        self._file = self._out.file
        self._compressed_sizes: list[int] = []
        self._uncompressed_sizes: list[int] = []
        self._row_starts: list[int] = []
        self._rows = 0          # rows handed to the encoder
        self._flushed_rows = 0  # rows in blocks already written
        self._state = "open"

    def __repr__(self):
        return (f"<RowFileWriter {self.path!r} ({self._state}): {self._rows} rows, "
                f"schema {self.schema}>")

    # -- input --------------------------------------------------------------
    @property
    def num_rows(self) -> int:
        return self._rows

    def statistics(self) -> list | None:
        """The statistics asked for by ``stats`` of every row written so far:
        per top-level field None ("none") or ``(null count, min, max)``, min
        and max None without a non-null value or under "counts", else
        Paimon's internal value (BinaryRow's): an int for integers, BOOLEAN
        (0/1), DATE (days), TIME (millis), DECIMAL(p <= 18) (unscaled) and
        TIMESTAMP(p <= 3) (epoch millis); the raw bits of a FLOAT or DOUBLE
        (NaN is the greatest, -0.0 below 0.0, as Java orders them); bytes
        for strings (UTF-8), binaries and DECIMAL(p > 18) (minimal
        big-endian unscaled); ``(epoch millis, nano of milli)`` for
        TIMESTAMP(p > 3). None when no ``stats`` were asked."""
        return self._encoder.statistics()

    def write(self, data) -> None:
        """Writes a pyarrow Table, RecordBatch or RecordBatchReader, or any
        object exporting ``__arrow_c_stream__`` or ``__arrow_c_array__`` (a
        polars DataFrame, a DuckDB result, ...). Columns are matched by name
        and cast safely to the schema's Arrow types. Python rows go through
        write_rows()."""
        self._check_open()
        for batch in as_batches(data, "write()"):
            self._write_batch(self._conform(batch))

    def write_rows(self, rows: Iterable[Sequence[Any] | Mapping[str, Any]]) -> None:
        """Writes Python rows: tuples in schema order, or dicts by field name."""
        self._check_open()
        rows = list(rows)
        if not rows:
            return
        names = self.schema.names
        width = len(names)
        columns: list[list] = [[] for _ in names]
        for r, row in enumerate(rows):
            if isinstance(row, Mapping):
                extra = set(row) - set(names)
                if extra:
                    raise ValueConversionError(
                        f"row {self._rows + r}: unknown field(s) {sorted(extra)}; the schema has {names}")
                for c, name in enumerate(names):
                    columns[c].append(row.get(name))
            else:
                if len(row) != width:
                    raise ValueConversionError(
                        f"row {self._rows + r}: {len(row)} values for {width} columns {names}")
                for c in range(width):
                    columns[c].append(row[c])
        arrays = [self._to_array(c, values) for c, values in enumerate(columns)]
        batch = pa.RecordBatch.from_arrays(arrays, schema=self.arrow_schema)
        self._check_not_null(batch)
        self._write_batch(batch)

    def _to_array(self, c: int, values: list) -> pa.Array:
        field = self.arrow_schema.field(c)
        try:
            return pa.array(values, type=field.type)
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            pass
        if _has_struct(field.type):
            # pyarrow cannot mix tuples and dicts for one struct column
            values = [_tuples_to_dicts(v, field.type) for v in values]
            try:
                return pa.array(values, type=field.type)
            except (pa.ArrowException, TypeError, ValueError, OverflowError):
                pass
        # Find the first value that does not convert, to name its row.
        for r, v in enumerate(values):
            try:
                pa.array([v], type=field.type)
            except (pa.ArrowException, TypeError, ValueError, OverflowError) as e:
                raise ValueConversionError(
                    f"column {field.name!r}, row {self._rows + r}: {v!r} does not fit "
                    f"{self.schema.fields[c].type}: {e}") from None
        raise ValueConversionError(f"column {field.name!r}: values do not convert to {field.type}")

    def _conform(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """Selects the schema's columns by name and casts them safely."""
        out = cast_batch(batch, self.arrow_schema, extra_columns=False, first_row=self._rows,
                         type_names={f.name: f.type for f in self.schema.fields})
        self._check_not_null(out)
        return out

    def _check_not_null(self, batch: pa.RecordBatch):
        for c, field in enumerate(self.arrow_schema):
            col = batch.column(c)
            if not field.nullable and col.null_count:
                import pyarrow.compute as pc

                r = pc.index(col.is_null(), True).as_py()
                raise ValueConversionError(
                    f"column {field.name!r}, row {self._rows + r}: null in a NOT NULL column")

    # -- blocks ---------------------------------------------------------------
    def _write_batch(self, batch: pa.RecordBatch):
        # Encode in slices so finished blocks go to the compressors while the
        # rest is encoded, and memory holds a few blocks, not a batch's worth.
        for start in range(0, max(batch.num_rows, 1), ENCODE_SLICE_ROWS):
            self._write_slice(batch.slice(start, ENCODE_SLICE_ROWS))

    def _write_slice(self, batch: pa.RecordBatch):
        blocks: list[bytes] = []
        error = self._encoder.encode(batch, blocks)
        for block in blocks:
            self._write_block(block)
        if error is not None:
            row, col, message = error
            self._state = "failed"
            where = f"column {self.schema.fields[col].name!r}, " if col >= 0 else ""
            raise ValueConversionError(
                f"{where}row {self._rows + row}: {message} (type "
                f"{self.schema.fields[col].type if col >= 0 else '?'}); the writer cannot "
                f"continue and the file will be discarded")
        self._rows += batch.num_rows

    def _compress(self, block: bytes) -> bytes:
        """One ZSTD frame with no content size and no checksum, exactly as
        zstd-jni's stream makes Java's (see java_frames)."""
        c = getattr(self._local, "c", None)
        if c is None:
            c = self._local.c = JavaFrameCompressor(self.zstd_level)
        return c.compress(block)

    def _write_block(self, block: bytes):
        rows = int.from_bytes(block[-4:], "little", signed=True)
        frame: bytes | Future
        if self._pool is not None and self._queued < self._queue_limit:
            frame = self._pool.submit(self._compress, block)
            self._queued += 1
        else:
            frame = self._compress(block)
        self._in_flight.append((rows, len(block), frame))
        self._write_ready(len(self._in_flight) > 4 * self._queue_limit)

    def _write_ready(self, wait: bool = False):
        """Writes the leading frames that are ready, in file order. ``wait``:
        waits for the first one (bounds the frames held while the pool lags)."""
        q = self._in_flight
        while q:
            rows, size, frame = q[0]
            if not isinstance(frame, bytes):
                if not (wait or frame.done()):
                    return
                frame = frame.result()
                self._queued -= 1
            q.popleft()
            self._append_frame(rows, size, frame)
            wait = False

    def _append_frame(self, rows: int, size: int, frame: bytes):
        self._file.write(frame)
        self._row_starts.append(self._flushed_rows)
        self._compressed_sizes.append(len(frame))
        self._uncompressed_sizes.append(size)
        self._flushed_rows += rows

    # -- lifetime (close, abort, with: AtomicWriter) ---------------------------
    def _finish(self) -> None:
        """Flushes the last block, waits for the compressors, then writes the
        index and footer."""
        last = self._encoder.flush()
        if last is not None:
            self._write_block(last)
        while self._in_flight:
            self._write_ready(wait=True)
        index = BlockIndex(np.array(self._compressed_sizes, np.int64),
                           np.array(self._uncompressed_sizes, np.int64),
                           np.array(self._row_starts, np.int64)).to_bytes()
        index_offset = sum(self._compressed_sizes)
        footer = Footer(self._flushed_rows, len(self._row_starts), index_offset, len(index))
        self._file.write(index)
        self._file.write(footer.to_bytes())

    def _release(self) -> None:
        self._in_flight.clear()
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
