"""The reader pypaimon's split reads use for ``.row`` data files while
acceleration is on: pypaimon's ``FormatRowReader`` contract, rowformat's
decoder.

Contract (pypaimon 2.1.0, ``pypaimon/read/reader/format_row_reader.py``):

* ``read_fields`` are names; the output columns are exactly these, in this
  order. A name in ``full_fields`` (the file's fields, for primary-key
  tables ``_KEY_*``, ``_SEQUENCE_NUMBER`` and ``_VALUE_KIND`` first) is read
  from the file; any other name is all nulls: typed as the system field for
  ``_ROW_ID``, ``_SEQUENCE_NUMBER`` and ``_VALUE_KIND``, else ``pa.null()``.
* The Arrow types are ``PyarrowFieldParser.from_paimon_schema`` 's (with
  field descriptions as metadata when no field is missing, as pypaimon builds
  them).
* ``row_indices`` (file row numbers, in the order given) select rows.
* ``push_down_predicate`` (an Arrow expression) filters each batch, and
  batches it empties are skipped; ``read_arrow_batch()`` returns None at the
  end.
* ``batch_size``: pypaimon's own ``.row`` reader ignores it (a batch per
  ZSTD block, whatever its rows); this one returns batches of
  ``max(batch_size, MIN_BATCH_ROWS)`` rows (the last one shorter, and fewer
  where the predicate drops rows): pypaimon's default of 1024 rows per
  batch would cost more in per-batch work than decoding the rows. A batch
  also ends at the reader's byte budget (``DEFAULT_BATCH_BYTES`` of row
  bytes, one row at least), so big rows make small batches and memory is
  bounded by the budget and the readahead, not by the file.
* An empty ``read_fields`` yields no batch at all (pypaimon builds a
  zero-column, zero-row table per block and skips it).

The file is read where pypaimon's FileIO keeps it (:func:`opening`): a local
path for ``LocalFileIO`` (and its subclasses, through their own path
mapping); a URL of a store rowformat's I/O layer reaches, with the store's
settings among the catalog's options (:func:`store_settings`: ranged
requests, concurrent and read ahead, bounded waits); a path in the FileIO's
pyarrow filesystem for other stores; else the FileIO's input stream as a
file object.
"""
from __future__ import annotations

import importlib
import os
from typing import Any, Iterator, List, Optional

import numpy as np
import pyarrow as pa

from ..io import settings, stores, urls
from ..errors import CorruptFileError, RowFormatError, RowIndexError
from ..row.reader import DEFAULT_BATCH_BYTES, RowFileReader
from . import _field_types

MIN_BATCH_ROWS = 65536

_pp: dict[str, Any] = {}
_opened = [0]           # .row and .blob files opened for pypaimon in this process


def count_opened() -> None:
    _opened[0] += 1


def files_opened() -> int:
    """How many ``.row`` and ``.blob`` files rowformat opened for pypaimon in
    this process (``rowformat.paimon.status().files_opened``)."""
    return _opened[0]


def _pypaimon(name: str) -> Any:
    mod = _pp.get(name)
    if mod is None:
        mod = _pp[name] = importlib.import_module(name)
    return mod


def local_path(file_io: Any, path: str) -> Optional[str]:
    """The local path of ``path`` if ``file_io`` reads the local file system."""
    local = _pypaimon("pypaimon.filesystem.local_file_io")
    if isinstance(file_io, local.LocalFileIO):
        return os.fspath(file_io._to_file(path))
    return None


def store_settings(file_io: Any) -> dict:
    """The store's settings among the catalog options a pypaimon FileIO was
    made with, in rowformat's one form ({} when it keeps none)."""
    to_map = getattr(getattr(file_io, "properties", None), "to_map", None)
    return settings.of_catalog(to_map()) if to_map is not None else {}


def opening(file_io: Any, path: str) -> tuple[Any, dict]:
    """What a rowformat reader of ``path`` (a data file of a table of
    ``file_io``) opens, and its keyword arguments: a local path; an S3 URL
    and the catalog's store settings (rowformat's own filesystem: bounded
    timeouts and retries, where pypaimon's allows minutes); a path in the
    FileIO's pyarrow filesystem; or (None, {}): the FileIO's own stream."""
    local = local_path(file_io, path)
    if local is not None:
        return local, {}
    if urls.is_s3(path):
        return path, {"storage_options": store_settings(file_io)}
    fs = getattr(file_io, "filesystem", None)
    to_fs = getattr(file_io, "to_filesystem_path", None)
    if fs is not None and to_fs is not None and stores.is_pyarrow_fs(fs):
        return to_fs(path), {"filesystem": fs}
    return None, {}


def _with_path(e: RowFormatError, file_path: str) -> RowFormatError:
    if file_path in str(e):
        return e
    err = type(e).__new__(type(e))
    Exception.__init__(err, f"{file_path}: {e}")
    return err


def close_reader_and_stream(r: Any) -> None:
    """Closes a reader's rowformat reader, then the FileIO stream under it
    (either may be missing, or already closed: each is closed once)."""
    reader, r._reader = getattr(r, "_reader", None), None
    stream, r._stream = getattr(r, "_stream", None), None
    try:
        if reader is not None:
            reader.close()
    finally:
        if stream is not None:
            stream.close()


def take_chunks(reader: RowFileReader, rows, size: int,
                budget: int = DEFAULT_BATCH_BYTES) -> Iterator[tuple[int, int]]:
    """(start, stop) slices of ``rows`` (row numbers) of at most ``size``
    rows whose bytes (:meth:`RowFileReader.row_bytes`) stay within
    ``budget``, one row at least: the byte budget of ``iter_batches`` for ``take``."""
    n = len(rows)
    if not n:
        return
    per_block = np.array([reader.row_bytes(b) for b in range(reader.num_blocks)] or [0],
                         np.int64)
    blocks = np.searchsorted(reader.block_index.row_starts, np.asarray(rows, np.int64),
                             "right") - 1
    cost = per_block[np.clip(blocks, 0, len(per_block) - 1)]
    start = 0
    while start < n:
        fits = int(np.searchsorted(np.cumsum(cost[start:start + size]), budget, "right"))
        stop = start + max(1, fits)
        yield start, stop
        start = stop


def _special_field(special: Any, name: str) -> Any:
    """pypaimon's system field ``name`` that a missing column is typed as
    (``_ROW_ID``, ``_SEQUENCE_NUMBER``, ``_VALUE_KIND``), else None."""
    for f in (special.ROW_ID, special.SEQUENCE_NUMBER, special.VALUE_KIND):
        if f.name == name:
            return f
    return None


class RowReader:
    """rowformat's reader under pypaimon's FormatRowReader contract: the body
    of the subclass of pypaimon's RecordBatchReader that
    :func:`make_reader_class` makes (pypaimon is imported only when
    acceleration is turned on, so the subclass cannot be written here)."""

    _rowformat_stock: Any = None

    def __init__(self, file_io, file_path: str, read_fields: List[str],
                 full_fields: List[Any], push_down_predicate: Any,
                 batch_size: int = 1024, row_indices: Optional[List[int]] = None):
        self._file_io = file_io
        self._file_path = file_path
        self._predicate = push_down_predicate
        self._batch_size = max(1, int(batch_size), MIN_BATCH_ROWS)
        self._row_indices = row_indices
        by_name = {f.name: f for f in full_fields}
        self._read_field_names = list(read_fields)
        self._projected = [by_name[n] for n in read_fields if n in by_name]
        self._missing = [n for n in read_fields if n not in by_name]
        self._stream = None
        self._reader: Optional[RowFileReader] = None
        PyarrowFieldParser = _pypaimon("pypaimon.schema.data_types").PyarrowFieldParser
        special = _pypaimon("pypaimon.table.special_fields").SpecialFields
        key = _field_types.fields_key(full_fields)
        file_schema = _field_types.row_type(full_fields, key)
        target = PyarrowFieldParser.from_paimon_schema(self._projected)
        if self._missing:
            fields = []
            for name in self._read_field_names:
                if name in by_name:
                    f = by_name[name]
                    fields.append(pa.field(name, PyarrowFieldParser.from_paimon_type(f.type),
                                           nullable=f.type.nullable))
                else:
                    sf = _special_field(special, name)
                    t = PyarrowFieldParser.from_paimon_type(sf.type) if sf is not None else pa.null()
                    fields.append(pa.field(name, t, nullable=not special.is_system_field(name)))
            self._schema = pa.schema(fields)
        else:
            self._schema = target
        self._targets = {f.name: target.field(f.name).type for f in self._projected}
        self._columns = [f.name for f in self._projected]
        try:
            path, where = opening(file_io, file_path)
            if path is not None:
                self._reader = RowFileReader(path, file_schema, cache_bytes=0, **where)
            else:
                self._stream = file_io.new_input_stream(file_path)
                self._reader = RowFileReader(self._stream, file_schema, cache_bytes=0)
        except CorruptFileError as e:
            self.close()
            raise _with_path(e, file_path) from e
        except BaseException:
            self.close()
            raise
        count_opened()
        self._batches = self._generate()

    # -- pypaimon's RecordBatchReader -------------------------------------------
    def read_arrow_batch(self) -> Optional[pa.RecordBatch]:
        try:
            return next(self._batches, None)
        except (CorruptFileError, RowIndexError) as e:
            raise _with_path(e, self._file_path) from e

    def close(self):
        close_reader_and_stream(self)

    # -- batches --------------------------------------------------------------------
    def _raw(self) -> Iterator[pa.RecordBatch]:
        reader = self._reader
        assert reader is not None
        size = self._batch_size
        if self._row_indices is None:
            # as many batches decoding ahead as the pool has threads, as read()
            # does (readahead=1 keeps two in flight: all of 2 cores, not of more);
            # a table is often one split, which pypaimon reads in one thread
            yield from reader.iter_batches(columns=self._columns, batch_size=size,
                                           readahead=reader.threads)
            return
        rows = self._row_indices
        for start, stop in take_chunks(reader, rows, size):
            table = reader.take(rows[start:stop], columns=self._columns)
            yield from table.combine_chunks().to_batches()

    def _generate(self) -> Iterator[pa.RecordBatch]:
        if not self._read_field_names:
            return
        targets = self._targets
        for batch in self._raw():
            n = batch.num_rows
            if n == 0:
                continue
            arrays = []
            cols = iter(batch.columns)
            for field in self._schema:
                t = targets.get(field.name)
                if t is None:
                    arrays.append(pa.nulls(n, type=field.type))
                else:
                    arrays.append(_field_types.conform(next(cols), t))
            out = pa.RecordBatch.from_arrays(arrays, schema=self._schema)
            if self._predicate is None:
                yield out
                continue
            # (RecordBatch.filter of an expression fails on an empty result in pyarrow 19)
            for b in pa.Table.from_batches([out]).filter(self._predicate).to_batches():
                if b.num_rows:
                    yield b


def make_reader_class(stock: type) -> type:
    """A subclass of pypaimon's RecordBatchReader with :class:`RowReader`'s
    body (made when acceleration is first turned on, so that importing
    rowformat.paimon imports no pypaimon)."""
    base = _pypaimon("pypaimon.read.reader.iface.record_batch_reader").RecordBatchReader
    return type("FormatRowReader", (RowReader, base),
                {"_rowformat_stock": stock, "__module__": __name__, "__qualname__": "FormatRowReader"})


__all__ = ["make_reader_class", "local_path", "opening", "store_settings"]
