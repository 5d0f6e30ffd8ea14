"""The file-level structure of a ``.blob`` file: footer and row index.

::

    [entry 0][entry 1]...   data region from offset 0, no header or padding
    [index]                 delta-varint of one int64 per row: the entry
                            length, -1 for a null row, -2 for a placeholder
    [index length: int32 LE][version: 1 byte = 1]

An entry is ``magic cf114e58 | payload | int64 entry length (payload + 16) |
CRC32 of everything before it``. Parsing follows Paimon Java's
BlobFileMeta: version first, then the index length, the index, and a walk
that requires every non-sentinel length to be at least 16 and the entries
to fill the data region exactly. The index is read once; nothing else is.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from .. import _blob
from ..errors import CorruptFileError, VarintError

VERSION = 1
FOOTER_SIZE = 5
ENTRY_MAGIC = 0x584E11CF
MAGIC_BYTES = struct.pack("<I", ENTRY_MAGIC)
ENTRY_OVERHEAD = 16          # magic 4 + length 8 + CRC 4
NULL_LENGTH = -1
PLACEHOLDER_LENGTH = -2
INT32_MAX = 0x7FFFFFFF


def encode_footer(index: bytes) -> bytes:
    if len(index) > INT32_MAX:
        raise OverflowError(f"the row index is {len(index)} bytes; the footer allows {INT32_MAX}")
    return index + struct.pack("<iB", len(index), VERSION)


@dataclass(frozen=True)
class BlobIndex:
    """Per row: ``lengths`` (entry length or sentinel) and ``offsets`` (entry
    start, -1 for a null or placeholder row)."""

    lengths: np.ndarray
    offsets: np.ndarray
    data_length: int          # bytes of the data region (= where the index starts)

    @classmethod
    def read(cls, source) -> "BlobIndex":
        name, size = source.name, source.size
        if size < FOOTER_SIZE:
            raise CorruptFileError(f"Corrupt blob file {name}: file size {size} is smaller than "
                                   f"the footer size {FOOTER_SIZE}")
        index_length, version = struct.unpack("<iB", source.read(size - FOOTER_SIZE, FOOTER_SIZE))
        if version != VERSION:
            raise CorruptFileError(f"Corrupt blob file {name}: unsupported version {version}, "
                                   f"expected {VERSION}")
        if not 0 <= index_length <= size - FOOTER_SIZE:
            raise CorruptFileError(f"Corrupt blob file {name}: invalid index length {index_length}, "
                                   f"expected a value in [0, {size - FOOTER_SIZE}]")
        data_length = size - FOOTER_SIZE - index_length
        try:
            lengths = _blob.decode(source.read(data_length, index_length))
        except VarintError as e:
            raise CorruptFileError(f"Corrupt blob file {name}: invalid index ({e})") from None
        offsets, used, bad, reason = _blob.layout(lengths, data_length, ENTRY_OVERHEAD,
                                                  PLACEHOLDER_LENGTH)
        if bad >= 0:
            value = int(lengths[bad])
            if reason == 0:
                raise CorruptFileError(
                    f"Corrupt blob file {name}: invalid record length {value} at row {bad}: "
                    f"expected -1 (null), -2 (placeholder) or at least {ENTRY_OVERHEAD}")
            raise CorruptFileError(
                f"Corrupt blob file {name}: record length {value} at row {bad} (offset {used}) "
                f"exceeds the data region of {data_length} bytes")
        if used != data_length:
            raise CorruptFileError(
                f"Corrupt blob file {name}: indexed records use {used} bytes, but the data region "
                f"contains {data_length} bytes")
        return cls(lengths, offsets, data_length)

    def __len__(self) -> int:
        return len(self.lengths)
