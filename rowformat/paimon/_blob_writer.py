"""The ``.blob`` file writes of pypaimon while acceleration is on.

pypaimon 2.1.0 writes every ``.blob`` file through its pure-Python
``BlobFormatWriter`` over an output stream it opened: a table write's
rolling ``BlobFileWriter`` (``pypaimon.write.writer.blob_file_writer``) row
by row with ``add_element``, and ``FileIO.write_blob`` (``LocalFileIO``,
``PyArrowFileIO``, ``HdfsNativeFileIO``; the other FileIOs delegate to
these) with ``write_value``. Each of those modules imported the name, so
the name is swapped in each for :func:`make_blob_writer_class` 's subclass,
which writes with rowformat's :class:`~rowformat.blob.BlobFileWriter` to the
same stream: the bytes Paimon Java writes, streamed (a referenced blob is
copied a piece at a time, never held whole).

pypaimon's own checks and conversions (one field, Blob values, nullable
elements, placeholders, its ``write_value`` conversions of Arrow values and
descriptor bytes) run as they do in pypaimon; the consumer is called with
pypaimon ``BlobDescriptor`` s once each row is written, and the stream is
flushed when it asks, as pypaimon does.
"""
from __future__ import annotations

import importlib
from typing import Any, Optional

from ..blob import PLACEHOLDER, BlobFileWriter
from ..blob.writer import DEFAULT_CHUNK
from . import _types


class _LazyStream:
    """A referenced blob's bytes, opened at the first read and closed at its
    end, so a row of many references holds one stream open at a time."""

    def __init__(self, blob):
        self._blob = blob
        self._stream = None
        self._done = False

    def read(self, n: int = -1) -> bytes:
        if self._done:
            return b""
        if self._stream is None:
            self._stream = self._blob.new_input_stream()
        chunk = self._stream.read(n)
        if not chunk:
            self.close()
        return chunk

    def close(self) -> None:
        self._done = True
        stream, self._stream = self._stream, None
        if stream is not None:
            stream.close()


def make_blob_writer_class(stock: Any) -> type:
    """A subclass of pypaimon's BlobFormatWriter (so that its static
    conversions, constants and ``isinstance`` checks stay as they are)."""
    blob_mod = importlib.import_module("pypaimon.table.row.blob")
    types_mod = importlib.import_module("pypaimon.schema.data_types")
    Blob, BlobData, PaimonDescriptor = blob_mod.Blob, blob_mod.BlobData, blob_mod.BlobDescriptor
    placeholders = ((Blob.PLACE_HOLDER, "BLOB"), (Blob.ARRAY_PLACE_HOLDER, "ARRAY"),
                    (Blob.MAP_PLACE_HOLDER, "MAP"))

    def _placeholder_kind(v) -> Optional[str]:
        # by identity: Blob values and rows need not be hashable
        return next((kind for p, kind in placeholders if v is p), None)

    def _kind(t) -> str:
        if types_mod.is_map_blob_type(t):
            return "MAP"
        return "ARRAY" if types_mod.is_array_blob_type(t) else "BLOB"

    class BlobFormatWriter(stock):  # type: ignore[misc, valid-type]
        """pypaimon's BlobFormatWriter interface over rowformat's BlobFileWriter."""

        _rowformat_stock = stock

        def __init__(self, output_stream, blob_consumer=None, file_path: Optional[str] = None,
                     copy_buffer_size: int = stock.BUFFER_SIZE):
            if copy_buffer_size <= 0:
                raise ValueError(
                    f"BLOB copy buffer size must be positive, but was {copy_buffer_size}.")
            self.output_stream = output_stream
            self._blob_consumer = blob_consumer
            self._file_path = file_path
            self.copy_buffer_size = copy_buffer_size
            self._writer: Optional[BlobFileWriter] = None
            self._written: list = []        # rowformat descriptors of the current row's blobs
            self._closed = False

        @property
        def position(self) -> int:
            return 0 if self._writer is None else self._writer.position

        def _open(self, field) -> BlobFileWriter:
            # The file's column type comes with its first row (pypaimon's
            # writer takes it per row; a file holds one column).
            if self._writer is None:
                self._writer = BlobFileWriter(
                    self.output_stream, _types.row_type([field]).fields[0].type,
                    # pypaimon's 4 KiB default would cost a Python call per 4 KiB
                    # of a large referenced blob; the bytes written are the same
                    chunk_size=max(self.copy_buffer_size, DEFAULT_CHUNK),
                    consumer=self._written.append)
            return self._writer

        # -- rows -------------------------------------------------------------------
        def add_element(self, row) -> None:
            if not hasattr(row, "values") or len(row.values) != 1:
                raise ValueError("BlobFormatWriter only supports one field")
            field, value = row.fields[0], row.values[0]
            if isinstance(field.type, types_mod.MapType) and not types_mod.is_map_blob_type(field.type):
                raise ValueError(f"Map-Blob value type must be BLOB, but is {field.type.value}.")
            writer = self._open(field)
            kind = _kind(field.type)
            if value is None:
                writer.write(None)
                if self._blob_consumer is not None:
                    self._blob_consumer(field.name, None)
                return
            if _placeholder_kind(value) == kind:
                writer.write(PLACEHOLDER)
                return
            streams: list[_LazyStream] = []
            self._written.clear()
            try:
                writer.write(self._row_value(kind, field, value, streams))
            finally:
                for s in streams:
                    s.close()
            if self._blob_consumer is not None:
                flush = False
                for d in self._written:
                    flush = bool(self._blob_consumer(
                        field.name, PaimonDescriptor(self._file_path, d.offset, d.length))) or flush
                if flush:
                    self.output_stream.flush()

        def _row_value(self, kind: str, field, value, streams: list):
            """``value`` (pypaimon Blobs) as rowformat's writer takes it, after
            pypaimon's checks: bytes, or a stream of a referenced blob."""
            def source(blob):
                if isinstance(blob, BlobData):
                    return blob.to_data()
                streams.append(_LazyStream(blob))
                return streams[-1]

            def element(blob, nullable: bool, what: str, noun: str):
                if blob is None:
                    if not nullable:
                        raise ValueError(f"{what} field '{field.name}' does not allow null {noun}")
                    return None
                if _placeholder_kind(blob) is not None:
                    raise ValueError(f"{what} {noun} do not support placeholders")
                if not isinstance(blob, Blob):
                    raise ValueError(f"{what} {noun} must be Blob/BlobData instances or None")
                return source(blob)

            if kind == "BLOB":
                if not isinstance(value, Blob):
                    raise ValueError("Field must be Blob/BlobData instance")
                return source(value)
            if kind == "ARRAY":
                if isinstance(value, (bytes, bytearray, str)) or not hasattr(value, "__iter__"):
                    raise ValueError("ARRAY<BLOB> field value must be a list or tuple of Blob values")
                nullable = field.type.element.nullable
                return [element(b, nullable, "ARRAY<BLOB>", "elements") for b in value]
            nullable = field.type.value.nullable
            return [(k, element(b, nullable, "MAP<X, BLOB>", "values"))
                    for k, b in stock._map_entries(value)]

        def write_value(self, col_data, fields, uri_reader_factory=None) -> None:
            if col_data is None and types_mod.is_blob_file_type(fields[0].type):
                # pypaimon records this null in its index directly, not through add_element
                self._open(fields[0]).write(None)
                return
            super().write_value(col_data, fields, uri_reader_factory)

        def close(self) -> None:
            if self._closed:
                return
            self._closed = True
            # a file without rows is its footer alone, whatever the column type
            writer = self._writer if self._writer is not None else BlobFileWriter(
                self.output_stream, "BLOB")
            writer.close()
            if hasattr(self.output_stream, "close"):
                self.output_stream.close()

    BlobFormatWriter.__module__ = __name__
    BlobFormatWriter.__qualname__ = "BlobFormatWriter"
    return BlobFormatWriter

