"""BlobFileWriter: writes a Paimon ``.blob`` file byte-for-byte as Paimon Java.

Values are streamed: a file object is copied in ``chunk_size`` pieces and
checksummed on the way, never held whole. The writer never seeks: each entry
is magic, payload, then its length (known only at the end) and the CRC32 of
all of that. The file is written under a temporary name in the target
directory and moved to ``path`` only when ``close()`` succeeds.
"""
from __future__ import annotations

import os
import struct
import zlib
from typing import Iterable

import pyarrow as pa

from .. import _blob
from ..io.output import AtomicWriter, StreamOutput, open_output
from ..errors import RowFormatError, ValueConversionError
from .descriptor import BlobDescriptor
from .kind import PLACEHOLDER, resolve_blob_type
from .meta import (ENTRY_OVERHEAD, MAGIC_BYTES, NULL_LENGTH, PLACEHOLDER_LENGTH,
                   encode_footer)
from .payload import map_entries, write_array, write_map

DEFAULT_CHUNK = 1 << 20
_ARROW_SLICE = 4096


def _is_bytes(v) -> bool:
    return isinstance(v, (bytes, bytearray, memoryview))


def _is_stream(v) -> bool:
    return hasattr(v, "read") and not _is_bytes(v)


def _check_blob(v, where: str):
    """A single blob value: bytes-like, a readable binary file object or a
    BlobDescriptor of a local file (its bytes are copied, as Paimon does)."""
    if _is_bytes(v) or _is_stream(v) or isinstance(v, BlobDescriptor):
        return
    if v is PLACEHOLDER:
        raise ValueConversionError(f"{where}: placeholders mark whole rows, not elements")
    raise ValueConversionError(f"{where}: expected bytes, a binary file object or a "
                               f"BlobDescriptor, got {type(v).__name__}")


class _Sink:
    """The open file, the running position and the current entry's CRC."""

    def __init__(self, f, path: str, chunk_size: int, consumer):
        self.file = f
        self.path = path
        self.chunk_size = chunk_size
        self.consumer = consumer
        self.pos = 0
        self.crc = 0

    def write(self, b) -> None:
        self.crc = zlib.crc32(b, self.crc)
        self.file.write(b)
        self.pos += len(b)

    def value(self, v) -> int:
        """Copies one blob and returns its length."""
        start = self.pos
        if _is_bytes(v):
            # Count bytes, not items, of a typed buffer (memoryview of an int array).
            self.write(memoryview(v).cast("B") if isinstance(v, memoryview) else v)
        elif isinstance(v, BlobDescriptor):
            with v.open() as src:
                self._copy(src, v.length if v.length >= 0 else None, v.uri)
        else:
            self._copy(v, None, getattr(v, "name", "file object"))
        if self.consumer is not None:
            self.consumer(BlobDescriptor(self.path, start, self.pos - start))
        return self.pos - start

    def _copy(self, src, exact: int | None, name) -> None:
        left = exact
        while left is None or left > 0:
            chunk = src.read(self.chunk_size if left is None else min(self.chunk_size, left))
            if not chunk:
                break
            if not _is_bytes(chunk):
                raise TypeError(f"{name}: read() returned {type(chunk).__name__}, not bytes; "
                                f"open the file in binary mode")
            self.write(chunk)
            if left is not None:
                left -= len(chunk)
        if left:
            raise RowFormatError(f"{name}: the source ended {left} bytes before the "
                                 f"declared length {exact}")


class BlobFileWriter(AtomicWriter):
    """Writes rows of one BLOB, ARRAY<BLOB> or MAP<K, BLOB> column.

    A row is None (null), :data:`PLACEHOLDER`, or: for BLOB a bytes-like
    object, a binary file object (read to EOF in ``chunk_size`` pieces) or a
    :class:`BlobDescriptor` (exactly its range is copied); for ARRAY<BLOB> a
    list of such values or None; for MAP<K, BLOB> a mapping (or iterable of
    pairs) from keys to such values or None. ``consumer``, when given, is
    called with a BlobDescriptor(path, offset, length) of each non-null blob
    written, like Paimon's BlobConsumer. Not to be shared between threads.

    ``path`` may also be a writable binary stream (anything with ``write``
    and ``flush``): the file's bytes are written to it as they come, and
    ``close()`` flushes it but leaves it open. Such a file is not atomic:
    after a failure the stream holds a partial file. A URL (with
    ``filesystem`` and ``storage_options`` as for RowFileWriter) is streamed
    to its store and appears only when close() succeeds.
    """

    def __init__(self, path, blob_type, *, chunk_size: int = DEFAULT_CHUNK, consumer=None,
                 durable: bool = False, filesystem=None, storage_options: dict | None = None):
        self.kind = resolve_blob_type(blob_type)
        if chunk_size < 1:
            raise ValueError(f"chunk_size must be positive, got {chunk_size}")
        self.durable = durable   # fsync before the rename (survives a power loss)
        if hasattr(path, "write"):
            self.path = str(getattr(path, "name", "<stream>"))
            self._out = StreamOutput(path)
        else:
            self.path = os.fspath(path)
            self._out = open_output(self.path, 1 << 16, filesystem, storage_options)
        self._file = self._out.file
        self._sink = _Sink(self._file, self.path, chunk_size, consumer)
        self._lengths: list[int] = []
        self._state = "open"

    @property
    def num_rows(self) -> int:
        return len(self._lengths)

    @property
    def position(self) -> int:
        """Bytes of entries written so far (Paimon's rolling check uses it)."""
        return self._sink.pos

    # -- rows -----------------------------------------------------------------------
    def write(self, value) -> None:
        """Writes one row."""
        self._check_open()
        if hasattr(value, "as_py") and not _is_stream(value):   # a pyarrow scalar
            value = value.as_py()
        if value is None:
            self._lengths.append(NULL_LENGTH)
            return
        if value is PLACEHOLDER:
            self._lengths.append(PLACEHOLDER_LENGTH)
            return
        body = self._prepare(value, f"{self.path}: row {self.num_rows}")
        sink = self._sink
        start = sink.pos
        try:
            sink.crc = 0
            sink.write(MAGIC_BYTES)
            body(sink)
            length = sink.pos - start + ENTRY_OVERHEAD - 4
            sink.write(struct.pack("<q", length))
            self._file.write(struct.pack("<I", sink.crc))
            sink.pos += 4
        except BaseException:
            # Bytes of a partial entry are out and the writer never seeks back.
            self._state = "failed"
            raise
        self._lengths.append(length)

    def write_many(self, values: Iterable) -> None:
        """Writes each value as a row; a pyarrow Array or ChunkedArray is
        converted a slice at a time."""
        if isinstance(values, (pa.Array, pa.ChunkedArray)):
            for start in range(0, len(values), _ARROW_SLICE):
                for v in values.slice(start, _ARROW_SLICE).to_pylist():
                    self.write(v)
            return
        for v in values:
            self.write(v)

    def _prepare(self, value, where: str):
        """Checks the whole row before any byte of it is written (so a bad
        value leaves the writer usable) and returns the function writing it."""
        kind = self.kind.kind
        if kind == "BLOB":
            _check_blob(value, where)
            return lambda sink: sink.value(value)
        if kind == "ARRAY":
            if _is_bytes(value) or isinstance(value, (str, dict)) or not hasattr(value, "__iter__"):
                raise ValueConversionError(f"{where}: an ARRAY<BLOB> row must be a list, got "
                                           f"{type(value).__name__}")
            elements = list(value)
            for j, e in enumerate(elements):
                if e is not None:
                    _check_blob(e, f"{where}, element {j}")
            return lambda sink: write_array(sink, elements)
        if _is_bytes(value) or isinstance(value, str) or not hasattr(value, "__iter__"):
            raise ValueConversionError(f"{where}: a MAP<K, BLOB> row must be a mapping or "
                                       f"(key, value) pairs, got {type(value).__name__}")
        try:
            entries = map_entries(value, self.kind.keys)
        except ValueConversionError as e:
            raise ValueConversionError(f"{where}: {e}") from None
        for kb, v in entries:
            if v is not None:
                _check_blob(v, f"{where}, value")
        return lambda sink: write_map(sink, entries)

    # -- lifetime (close, abort, with: AtomicWriter) ---------------------------------
    def _finish(self) -> None:
        self._file.write(encode_footer(_blob.encode(self._lengths)))
