"""The 32-byte footer at the end of every .row file (all little-endian):

    0  totalRowCount int64     20  indexLength int32
    8  blockCount    int32     24  version     int8 = 1, then 3 reserved zero bytes
   12  indexOffset   int64     28  magic       int32 0x524F5753 (bytes "SWOR")
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from ..errors import CorruptFileError

FOOTER_SIZE = 32
TAIL_READ = 64 * 1024          # Paimon reads this much of the tail at open
MAGIC = 0x524F5753
VERSION = 1
_LAYOUT = struct.Struct("<qiqib3xI")


@dataclass(frozen=True)
class Footer:
    total_rows: int
    block_count: int
    index_offset: int
    index_length: int
    version: int = VERSION

    def to_bytes(self) -> bytes:
        return _LAYOUT.pack(self.total_rows, self.block_count, self.index_offset,
                            self.index_length, self.version, MAGIC)

    @classmethod
    def from_bytes(cls, data: bytes, file_size: int, name: str = "<buffer>") -> "Footer":
        """Parses and checks a footer: magic, version, non-negative counts, and
        an index that lies inside the file just before the footer."""
        if file_size < FOOTER_SIZE or len(data) != FOOTER_SIZE:
            raise CorruptFileError(
                f"{name}: {file_size} bytes is too few for a {FOOTER_SIZE}-byte .row footer")
        total, count, index_offset, index_length, version, magic = _LAYOUT.unpack(data)
        if magic != MAGIC:
            raise CorruptFileError(
                f"{name}: not a .row file: footer magic is 0x{magic:08X}, expected 0x{MAGIC:08X}")
        if version != VERSION:
            raise CorruptFileError(f"{name}: unsupported .row version {version}, expected {VERSION}")
        if total < 0 or count < 0:
            raise CorruptFileError(
                f"{name}: footer declares {total} rows in {count} blocks; both must be >= 0")
        if index_offset < 0 or index_length < 0 \
                or index_offset + index_length != file_size - FOOTER_SIZE:
            raise CorruptFileError(
                f"{name}: invalid block index location: offset {index_offset}, length "
                f"{index_length}, but the footer starts at {file_size - FOOTER_SIZE}")
        return cls(total, count, index_offset, index_length, version)


def read_footer(source) -> tuple[Footer, bytes]:
    """The footer of the .row file ``source`` (a :class:`rowformat.source.Source`)
    and the bytes of its block index, read together with it when they lie
    in the last TAIL_READ bytes (a second read otherwise)."""
    size = source.size
    tail_start = max(0, size - TAIL_READ)
    tail = source.read(tail_start, size - tail_start)
    footer = Footer.from_bytes(tail[-FOOTER_SIZE:], size, source.name)
    if footer.index_offset >= tail_start:
        return footer, tail[footer.index_offset - tail_start:len(tail) - FOOTER_SIZE]
    return footer, source.read(footer.index_offset, footer.index_length)
