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
elements, placeholders, its ``write_value`` conversions of Arrow values)
run as they do in pypaimon; the consumer is called with pypaimon
``BlobDescriptor`` s once each row is written, and the stream is flushed
when it asks, as pypaimon does.

Blob values that are descriptor bytes (pypaimon takes any BLOB value
starting with the v2 magic as a reference and copies the file it names)
are references only when the table says so (:class:`ReferencePolicy`):
its ``blob-as-descriptor`` option is true, or its
``rowformat.blob-reference-roots`` option names the directories references
may point into. Otherwise they are stored as the bytes they are, as Paimon
Java stores them without ``blob-as-descriptor``. The policy reaches the
conversion through two more patches: ``BlobWriter.open_current_writer``
(pypaimon's table writer of one blob column, which has the table's
options) hands it to the ``BlobFileWriter`` it opens, whose ``_to_blob``
applies it. ``FileIO.write_blob`` (no table) never follows a reference.
A local reference is copied by rowformat's own
:meth:`~rowformat.blob.BlobDescriptor.open`: a regular file, opened
without blocking, exactly the range it names, which must lie inside the
file's size.
"""
from __future__ import annotations

import os
from typing import Any, Optional
from urllib.parse import urlparse

from ..blob import PLACEHOLDER, BlobDescriptor, BlobFileWriter
from ..blob.writer import DEFAULT_CHUNK
from ..errors import BlobDescriptorError
from . import _field_types
from ._reader import _pypaimon

ROOTS_OPTION = "rowformat.blob-reference-roots"
DESCRIPTOR_OPTION = "blob-as-descriptor"


class ReferencePolicy:
    """Which BLOB values given as descriptor bytes a table write follows:
    none (the bytes are the value), all (``blob-as-descriptor``), or those
    whose local file lies under one of ``roots`` (after resolving links)."""

    def __init__(self, follow: bool, roots: tuple[str, ...] = ()):
        self.follow = follow or bool(roots)
        self.roots = roots

    @classmethod
    def of_options(cls, options: dict) -> "ReferencePolicy":
        """From a table's options (strings, as pypaimon keeps them)."""
        descriptor = str(options.get(DESCRIPTOR_OPTION) or "").strip().lower() == "true"
        text = options.get(ROOTS_OPTION) or ""
        roots = tuple(os.path.realpath(r.strip()) for r in str(text).split(",") if r.strip())
        return cls(descriptor, roots)

    def check(self, uri: str) -> None:
        """Raises BlobDescriptorError unless ``uri`` is under the roots (if any)."""
        if not self.roots:
            return
        parsed = urlparse(uri)
        if parsed.scheme in ("", "file"):
            path = os.path.realpath(BlobDescriptor(uri, 0, -1).local_path())
            if any(os.path.commonpath([path, root]) == root for root in self.roots):
                return
        raise BlobDescriptorError(
            f"BLOB value is a descriptor of {uri!r}, which is not under the directories "
            f"the table's {ROOTS_OPTION!r} option lets references point into "
            f"({', '.join(self.roots)})")


NO_REFERENCES = ReferencePolicy(False)


def descriptor_bytes(value, serde: Any) -> Optional[bytes]:
    """``value`` as bytes, when it is a BLOB value pypaimon's conversions
    would take for a descriptor (bytes, bytearray, str or an Arrow scalar of
    them, starting with a descriptor's magic: ``serde.is_descriptor``, given
    pypaimon's BlobDescriptorSerde); else None."""
    if hasattr(value, "as_py"):
        value = value.as_py()
    if isinstance(value, str):
        value = value.encode("utf-8")
    if isinstance(value, (bytes, bytearray)) and serde.is_descriptor(bytes(value)):
        return bytes(value)
    return None


def make_to_blob(stock: Any):
    """``BlobFileWriter._to_blob`` of pypaimon's table writes, following a
    descriptor only as its writer's policy allows (NO_REFERENCES unless
    :func:`make_open_current_writer` set one)."""
    blob_mod = _blob_module()

    def _to_blob(self, col_data):
        data = descriptor_bytes(col_data, blob_mod.BlobDescriptorSerde)
        if data is None:
            return stock(self, col_data)
        policy = getattr(self, "_rowformat_references", NO_REFERENCES)
        if not policy.follow:
            return blob_mod.BlobData(data)
        policy.check(blob_mod.BlobDescriptorSerde.deserialize(data).uri)
        return stock(self, col_data)

    _to_blob.__qualname__ = "BlobFileWriter._to_blob"
    return _to_blob


def make_open_current_writer(stock: Any):
    """``BlobWriter.open_current_writer``: pypaimon's, then the table's
    ReferencePolicy handed to the BlobFileWriter it opened."""

    def open_current_writer(self):
        stock(self)
        options = getattr(getattr(self.options, "options", None), "data", None) or {}
        self.current_writer._rowformat_references = ReferencePolicy.of_options(options)

    open_current_writer.__qualname__ = "BlobWriter.open_current_writer"
    return open_current_writer


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


def _local_reference(blob, local_file_io: type) -> Optional[BlobDescriptor]:
    """A pypaimon Blob that references a local file (a ``file:`` uri, or a
    plain path read through ``local_file_io``, pypaimon's LocalFileIO), as
    rowformat's BlobDescriptor: the writer copies exactly its range, from a
    regular file. None for other Blobs, which are read through pypaimon."""
    to_descriptor = getattr(blob, "to_descriptor", None)
    if to_descriptor is None:
        return None
    try:
        d = to_descriptor()
    except Exception:           # a Blob that has no descriptor
        return None
    scheme = urlparse(d.uri).scheme
    file_io = getattr(getattr(blob, "uri_reader", None), "file_io", None)
    if scheme == "file" or (scheme == "" and (file_io is None
                                              or isinstance(file_io, local_file_io))):
        return BlobDescriptor(d.uri, d.offset, d.length)
    return None


_LOCAL_FILE_IO = "pypaimon.filesystem.local_file_io"


def _blob_module() -> Any:
    return _pypaimon("pypaimon.table.row.blob")


def _types() -> Any:
    return _pypaimon("pypaimon.schema.data_types")


def _placeholder_kind(v) -> Optional[str]:
    # by identity: Blob values and rows need not be hashable
    Blob = _blob_module().Blob
    return next((kind for p, kind in ((Blob.PLACE_HOLDER, "BLOB"), (Blob.ARRAY_PLACE_HOLDER, "ARRAY"),
                                      (Blob.MAP_PLACE_HOLDER, "MAP")) if v is p), None)


def _kind(t) -> str:
    if _types().is_map_blob_type(t):
        return "MAP"
    return "ARRAY" if _types().is_array_blob_type(t) else "BLOB"


class BlobWriter:
    """pypaimon's BlobFormatWriter interface over rowformat's BlobFileWriter:
    the body of the subclass of pypaimon's class that
    :func:`make_blob_writer_class` makes (pypaimon is imported only when
    acceleration is turned on, so the subclass cannot be written here)."""

    _rowformat_stock: Any = None

    def __init__(self, output_stream, blob_consumer=None, file_path: Optional[str] = None,
                 copy_buffer_size: Optional[int] = None):
        if copy_buffer_size is None:
            copy_buffer_size = self._rowformat_stock.BUFFER_SIZE
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
                self.output_stream, _field_types.row_type([field]).fields[0].type,
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
        if isinstance(field.type, _types().MapType) and not _types().is_map_blob_type(field.type):
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
                    field.name, _blob_module().BlobDescriptor(self._file_path, d.offset, d.length))) or flush
            if flush:
                self.output_stream.flush()

    def _row_value(self, kind: str, field, value, streams: list):
        """``value`` (pypaimon Blobs) as rowformat's writer takes it, after
        pypaimon's checks: bytes, or a stream of a referenced blob."""
        def source(blob):
            if isinstance(blob, _blob_module().BlobData):
                return blob.to_data()
            local = _local_reference(blob, _pypaimon(_LOCAL_FILE_IO).LocalFileIO)
            if local is not None:       # copied by rowformat: bounded, regular files only
                return local
            streams.append(_LazyStream(blob))
            return streams[-1]

        def element(blob, nullable: bool, what: str, noun: str):
            if blob is None:
                if not nullable:
                    raise ValueError(f"{what} field '{field.name}' does not allow null {noun}")
                return None
            if _placeholder_kind(blob) is not None:
                raise ValueError(f"{what} {noun} do not support placeholders")
            if not isinstance(blob, _blob_module().Blob):
                raise ValueError(f"{what} {noun} must be Blob/BlobData instances or None")
            return source(blob)

        if kind == "BLOB":
            if not isinstance(value, _blob_module().Blob):
                raise ValueError("Field must be Blob/BlobData instance")
            return source(value)
        if kind == "ARRAY":
            if isinstance(value, (bytes, bytearray, str)) or not hasattr(value, "__iter__"):
                raise ValueError("ARRAY<BLOB> field value must be a list or tuple of Blob values")
            nullable = field.type.element.nullable
            return [element(b, nullable, "ARRAY<BLOB>", "elements") for b in value]
        nullable = field.type.value.nullable
        return [(k, element(b, nullable, "MAP<X, BLOB>", "values"))
                for k, b in self._rowformat_stock._map_entries(value)]

    @classmethod
    def _to_blob(cls, col_data, uri_reader_factory=None):
        # FileIO.write_blob knows no table, so no ReferencePolicy: never a reference
        data = descriptor_bytes(col_data, _blob_module().BlobDescriptorSerde)
        if data is not None:
            return _blob_module().BlobData(data)
        return cls._rowformat_stock._to_blob(col_data, uri_reader_factory)

    def write_value(self, col_data, fields, uri_reader_factory=None) -> None:
        if col_data is None and _types().is_blob_file_type(fields[0].type):
            # pypaimon records this null in its index directly, not through add_element
            self._open(fields[0]).write(None)
            return
        # pypaimon's BlobFormatWriter, after this class in the subclass's MRO
        super().write_value(col_data, fields, uri_reader_factory)  # type: ignore[misc]

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


def make_blob_writer_class(stock: Any) -> type:
    """A subclass of pypaimon's BlobFormatWriter (so that its static
    conversions, constants and ``isinstance`` checks stay as they are)."""
    return type("BlobFormatWriter", (BlobWriter, stock),
                {"_rowformat_stock": stock, "__module__": __name__, "__qualname__": "BlobFormatWriter"})


