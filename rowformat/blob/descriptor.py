"""Paimon blob descriptors: a reference to a byte range of another file.

Wire format (all integers little-endian):

* v2 (what Paimon writes today): version ``0x02``, magic ``"BLOBDESC"`` as an
  int64, uri length (int32), UTF-8 uri, offset (int64), length (int64).
* v1 (legacy): version ``0x01``, uri length, uri, offset, length; no magic.

A length of -1 means "to the end of the resource". Parsing accepts v1 and v2
and ignores trailing bytes, as Paimon Java does; serializing writes v2 unless
asked for v1. Only v2 carries the magic, so only v2 bytes can be *detected*
(:func:`is_blob_descriptor`) among arbitrary blob bytes.
"""
from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field
from urllib.parse import unquote, urlparse

from ..errors import BlobDescriptorError
from ..io.local import open_regular_file
from .stream import RangeStream

MAGIC = 0x424C4F4244455343          # "BLOBDESC"
CURRENT_VERSION = 2
_MAGIC_BYTES = struct.pack("<q", MAGIC)


@dataclass(frozen=True)
class BlobDescriptor:
    """``length`` bytes of ``uri`` starting at ``offset`` (-1: to the end).
    ``version`` is the version the descriptor was parsed from; it does not
    take part in equality."""

    uri: str
    offset: int
    length: int
    version: int = field(default=CURRENT_VERSION, compare=False)

    def __post_init__(self):
        if not isinstance(self.uri, str):
            raise BlobDescriptorError(f"blob descriptor uri must be a str, got {type(self.uri).__name__}")
        if not 0 <= self.offset < 1 << 63:
            raise BlobDescriptorError(f"blob descriptor offset {self.offset} outside [0, 2^63)")
        if not -1 <= self.length < 1 << 63:
            raise BlobDescriptorError(f"blob descriptor length {self.length} outside [-1, 2^63)")

    def serialize(self, version: int = CURRENT_VERSION) -> bytes:
        """The descriptor's bytes: v2 by default (as Paimon always writes),
        v1 for readers that predate the magic."""
        uri = self.uri.encode("utf-8")
        tail = struct.pack("<i", len(uri)) + uri + struct.pack("<qq", self.offset, self.length)
        if version == 2:
            return b"\x02" + _MAGIC_BYTES + tail
        if version == 1:
            return b"\x01" + tail
        raise BlobDescriptorError(f"can only serialize blob descriptor versions 1 and 2, not {version}")

    @classmethod
    def deserialize(cls, data) -> "BlobDescriptor":
        """Parses v1 or v2 bytes; trailing bytes are ignored."""
        data = bytes(data)
        if len(data) < 1:
            raise BlobDescriptorError("blob descriptor is empty")
        version = data[0]
        if version > CURRENT_VERSION:
            raise BlobDescriptorError(
                f"Expecting BlobDescriptor version to be less than or equal to "
                f"{CURRENT_VERSION}, but found {version}")
        pos = 1
        if version > 1:
            if len(data) < pos + 8:
                raise BlobDescriptorError(f"blob descriptor v{version} is too short: {len(data)} "
                                          f"bytes, its header alone needs {pos + 8 + 4}")
            if data[pos:pos + 8] != _MAGIC_BYTES:
                raise BlobDescriptorError(
                    f"blob descriptor v{version}: expected magic {_MAGIC_BYTES.hex()}, found "
                    f"{data[pos:pos + 8].hex()}")
            pos += 8
        if len(data) < pos + 4:
            raise BlobDescriptorError(f"blob descriptor v{version} is too short: {len(data)} bytes, "
                                      f"its header alone needs {pos + 4}")
        (uri_length,) = struct.unpack_from("<i", data, pos)
        pos += 4
        if uri_length < 0:
            raise BlobDescriptorError(f"blob descriptor v{version}: negative uri length {uri_length}")
        if uri_length > len(data) - pos:
            raise BlobDescriptorError(
                f"blob descriptor v{version}: uri length {uri_length} exceeds the "
                f"{len(data) - pos} bytes left")
        try:
            uri = data[pos:pos + uri_length].decode("utf-8")
        except UnicodeDecodeError as e:
            raise BlobDescriptorError(f"blob descriptor v{version}: uri is not UTF-8: {e}") from None
        pos += uri_length
        if len(data) - pos < 16:
            raise BlobDescriptorError(
                f"blob descriptor v{version}: expected 16 bytes of offset and length after the "
                f"uri, found {len(data) - pos}")
        offset, length = struct.unpack_from("<qq", data, pos)
        try:
            return cls(uri, offset, length, version)
        except BlobDescriptorError as e:
            raise BlobDescriptorError(f"blob descriptor v{version}: {e}") from None

    # -- reading what it points to ------------------------------------------------
    def local_path(self) -> str:
        """The local file the uri names (a plain path or a ``file:`` uri)."""
        parsed = urlparse(self.uri)
        if parsed.scheme in ("", "file") or (len(parsed.scheme) == 1 and os.name == "nt"):
            return unquote(parsed.path) if parsed.scheme == "file" else self.uri
        raise BlobDescriptorError(f"blob descriptor uri {self.uri!r}: only local files can be "
                                  f"opened, not {parsed.scheme!r}")

    def open(self):
        """A read-only binary file object over the referenced bytes. The
        file is opened without blocking and must be a regular file (else
        :class:`~rowformat.CorruptFileError` naming it), and the range must
        lie inside its size."""
        f = open_regular_file(self.local_path())
        try:
            size = os.fstat(f.fileno()).st_size
            if self.offset > size:
                raise BlobDescriptorError(f"{self.uri}: descriptor offset {self.offset} is past "
                                          f"the end of the {size}-byte file")
            length = size - self.offset if self.length == -1 else self.length
            if length > size - self.offset:
                raise BlobDescriptorError(
                    f"{self.uri}: descriptor range [{self.offset}, {self.offset + length}) passes "
                    f"the end of the {size}-byte file")
        except BaseException:
            f.close()
            raise
        return RangeStream.over_file(f, self.offset, length, name=self.uri)


def is_blob_descriptor(data) -> bool:
    """True for bytes that start like a v2 descriptor (version <= 2 and the
    magic): Paimon's test for "this blob value is a reference". v1 bytes have
    no magic and are never detected."""
    data = bytes(data[:9])
    return len(data) >= 9 and data[0] <= CURRENT_VERSION and data[1:9] == _MAGIC_BYTES
