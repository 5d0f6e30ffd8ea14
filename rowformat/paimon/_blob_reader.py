"""The reader pypaimon's split reads use for ``.blob`` files (the BLOB,
ARRAY<BLOB> and MAP<K, BLOB> columns of data-evolution tables) while
acceleration is on: pypaimon's ``FormatBlobReader`` contract, rowformat's
:class:`~rowformat.blob.BlobFileReader` underneath.

Contract (pypaimon 2.1.0, ``pypaimon/read/reader/format_blob_reader.py``):

* one field in ``read_fields``, looked up by name in ``full_fields``; the
  batches have ``PyarrowFieldParser.from_paimon_schema`` 's schema of it;
* ``row_indices`` (file row numbers, in the order given) select and order
  the rows; ``record_count`` is how many there are;
* ``read_arrow_batch(start_idx, end_idx)`` reads up to ``batch_size`` of
  those rows from the current position, first moving it up to
  ``start_idx`` and never past ``end_idx`` (ShardBatchReader and
  DataFileBatchReader pass them); None at the end;
* ``push_down_predicate`` (an Arrow expression) filters each batch;
* ``blob_as_descriptor``: serialized blob descriptors (v2, uri = the file
  path pypaimon gave) of each payload or element instead of its bytes;
* a placeholder row (the value lives in an older file) raises pypaimon's
  RuntimeError in a batch; ``read_values_at(positions)`` -- what
  BlobFallbackBatchReader uses to resolve placeholders -- returns
  pypaimon ``Blob`` values, placeholders included.

Differences, each on purpose: payloads are CRC-checked and read in
coalesced runs straight into the Arrow column (a large one streamed in
pieces), so memory follows the blobs asked for, not the file; a batch the
predicate empties is skipped instead of ending the read;
``blob_parallelism > 1`` reads the bytes here, sequentially, instead of
handing pypaimon references to fetch (rowformat's reads are positional and
coalesced; pypaimon's concurrency serves remote stores); ``file_size`` and
``index_cache`` are not used (opening reads the footer and index once).
``.video`` files are not ``.blob`` files: they get pypaimon's own reader.
"""
from __future__ import annotations

from typing import Any, List, Optional

import numpy as np
import pyarrow as pa

from ..blob import PLACEHOLDER, BlobDescriptor, BlobFileReader
from ..blob.meta import PLACEHOLDER_LENGTH
from ..errors import CorruptFileError, RowIndexError
from ..row_numbers import as_rows
from . import _field_types
from ._reader import _pypaimon, _with_path, close_reader_and_stream, count_opened, opening

PLACEHOLDER_ERROR = "Blob placeholder is not supported by FormatBlobReader yet."


_PLACEHOLDERS = {"BLOB": "PLACE_HOLDER", "ARRAY": "ARRAY_PLACE_HOLDER", "MAP": "MAP_PLACE_HOLDER"}


def _blob() -> Any:
    return _pypaimon("pypaimon.table.row.blob").Blob


class BlobReader:
    """rowformat's blob reader under pypaimon's FormatBlobReader contract:
    the body of the subclass of pypaimon's class that
    :func:`make_blob_reader_class` makes (pypaimon is imported only when
    acceleration is turned on, so the subclass cannot be written here)."""

    _rowformat_stock: Any = None

    def __new__(cls, file_io, file_path, *args, **kwargs):
        if str(file_path).endswith(".video"):
            return cls._rowformat_stock(file_io, file_path, *args, **kwargs)
        return super().__new__(cls)

    def __init__(self, file_io, file_path: str, read_fields: List[str],
                 full_fields: List[Any], push_down_predicate: Any, blob_as_descriptor: bool,
                 batch_size: int = 1024, row_indices: Optional[Any] = None,
                 blob_parallelism: int = 1, file_size: Optional[int] = None,
                 index_cache=None):
        self._file_io = file_io
        self.file_path = self._file_path = file_path
        self._predicate = push_down_predicate
        self._as_descriptor = bool(blob_as_descriptor)
        self._batch_size = max(1, int(batch_size))
        self._stream = None
        self._reader: Optional[BlobFileReader] = None
        if len(read_fields) != 1:
            raise RuntimeError("Blob reader only supports one field.")
        self._fields = list(read_fields)
        field = {f.name: f for f in full_fields}[read_fields[0]]
        self._schema = _pypaimon("pypaimon.schema.data_types").PyarrowFieldParser \
            .from_paimon_schema([field])
        blob_type = _field_types.row_type([field]).fields[0].type
        try:
            path, where = opening(file_io, file_path)
            if path is None:
                self._stream = file_io.new_input_stream(file_path)
            self._reader = BlobFileReader(path if path is not None else self._stream,
                                          blob_type, column=field.name, **where)
            n = self._reader.num_rows
            self._rows = np.arange(n) if row_indices is None else as_rows(
                row_indices, n, "row_indices")
        except CorruptFileError as e:
            self.close()
            raise _with_path(e, file_path) from e
        except RowIndexError as e:
            self.close()
            raise RowIndexError(f"{file_path}: {e}") from None
        except BaseException:
            self.close()
            raise
        self._kind = self._reader.kind.kind
        count_opened()
        self._pos = 0

    # -- pypaimon's FormatBlobReader --------------------------------------------
    @property
    def record_count(self) -> int:
        return len(self._rows)

    def read_arrow_batch(self, start_idx=None, end_idx=None) -> Optional[pa.RecordBatch]:
        stop = len(self._rows)
        if start_idx is not None and end_idx is not None:
            self._pos = max(self._pos, start_idx)
            stop = min(stop, end_idx)
        while self._pos < stop:
            rows = self._rows[self._pos:min(stop, self._pos + self._batch_size)]
            self._pos += len(rows)
            batch = self._guarded(self._batch, rows)
            if self._predicate is not None:
                # (RecordBatch.filter of an expression fails on an empty result in pyarrow 19)
                batch = pa.Table.from_batches([batch]).filter(self._predicate).combine_chunks()
                batch = batch.to_batches()[0] if batch.num_rows else None
            if batch is not None:
                return batch
        return None

    def read_values_at(self, positions: List[int]) -> List[object]:
        """pypaimon ``Blob`` values (lists of them for ARRAY, dicts for
        MAP) of the selected rows at ``positions``: references into this
        file with ``blob_as_descriptor``, else bytes read here."""
        rows = self._rows[np.asarray(positions, dtype=np.int64)].tolist()
        return self._guarded(lambda: [self._value(r) for r in rows])

    def close(self):
        close_reader_and_stream(self)

    # -- batches --------------------------------------------------------------------
    def _guarded(self, fn, *args):
        try:
            return fn(*args)
        except CorruptFileError as e:
            raise _with_path(e, self._file_path) from e

    def _batch(self, rows: np.ndarray) -> pa.RecordBatch:
        reader = self._reader
        assert reader is not None, "closed"
        if np.any(reader.index.lengths[rows] == PLACEHOLDER_LENGTH):
            raise RuntimeError(PLACEHOLDER_ERROR)
        target = self._schema.field(0).type
        if not self._as_descriptor:
            # take() builds one array (combine_chunks() would copy even that one)
            column = reader.take(rows).column(0).chunk(0)
            return pa.RecordBatch.from_arrays([_field_types.conform(column, target)],
                                              schema=self._schema)
        values: list = []
        for r in rows.tolist():
            if self._kind == "BLOB":
                values.append(self._serialized(reader.descriptor(r)))
                continue
            elements = reader.element_descriptors(r)
            if elements is None:
                values.append(None)
            elif self._kind == "ARRAY":
                values.append([self._serialized(d) for d in elements])
            else:
                if None in elements:
                    raise ValueError("MAP<X, BLOB> with null keys cannot be converted "
                                     "to a PyArrow Map.")
                values.append([(k, self._serialized(d)) for k, d in elements.items()])
        return pa.RecordBatch.from_arrays([pa.array(values, type=target)], schema=self._schema)

    def _serialized(self, d: Any) -> Optional[bytes]:
        # pypaimon's descriptors name the file as pypaimon was given it
        # (a table path or URI), not as rowformat opened it
        return None if d is None else BlobDescriptor(self._file_path, d.offset,
                                                     d.length).serialize()

    def _value(self, r: int):
        reader = self._reader
        assert reader is not None, "closed"
        blob: Any
        if self._as_descriptor:
            blob = reader.descriptor(r) if self._kind == "BLOB" else reader.element_descriptors(r)
            wrap = self._ref
        else:
            blob = reader.get(r)
            wrap = _blob().from_data
        if blob is None:
            return None
        if blob is PLACEHOLDER:
            return getattr(_blob(), _PLACEHOLDERS[self._kind])
        if self._kind == "BLOB":
            return wrap(blob)
        if self._kind == "ARRAY":
            return [None if b is None else wrap(b) for b in blob]
        return {k: None if b is None else wrap(b) for k, b in blob.items()}

    def _ref(self, d: BlobDescriptor):
        return _blob().from_file(self._file_io, self._file_path, d.offset, d.length)


def make_blob_reader_class(stock: Any) -> type:
    """A subclass of pypaimon's FormatBlobReader (pypaimon's readers test
    ``isinstance(reader, FormatBlobReader)`` to pass the shard range)."""
    return type("FormatBlobReader", (BlobReader, stock),
                {"_rowformat_stock": stock, "__module__": __name__, "__qualname__": "FormatBlobReader"})
