"""The nested payloads of ARRAY<BLOB> and MAP<K, BLOB> entries.

ARRAY payload: magic ``BCBA`` (0x41424342 LE), version 1, int32 count, the
non-null elements back to back, a delta-varint index of element *data*
lengths (-1 for a null element), the int32 index length.

MAP payload: magic ``BCBM`` (0x4D424342 LE), version 1, int32 count, all
non-null key bytes, all non-null value bytes, the key-length index, the
value-length index, then the two int32 index lengths (key first).

Readers get the payload through ``read(offset, n)`` relative to its start,
so the same checks serve an entry already in memory (``get``) and one read
piecewise from the file (``open(row, element)``, which never reads element
bytes it does not return). Every declared size is checked against the
payload length before anything is read or allocated. Failures raise
:class:`PayloadError` with Paimon's wording; the reader adds file and row.
"""
from __future__ import annotations

import struct
from typing import Any, Callable

import numpy as np

from .. import _blob
from ..errors import KeyDecodeError, PayloadError, ValueConversionError, VarintError
from .keys import KeyCodec

ARRAY_MAGIC = 0x41424342
MAP_MAGIC = 0x4D424342
PAYLOAD_VERSION = 1
ARRAY_HEADER = 9            # magic, version, count
ARRAY_MIN = ARRAY_HEADER + 4
MAP_MIN = ARRAY_HEADER + 8
INT32_MAX = 0x7FFFFFFF
NULL_ELEMENT = -1

Read = Callable[[int, int], bytes | memoryview]


# -- writing -----------------------------------------------------------------------
def _header(magic: int, count: int, what: str) -> bytes:
    if count > INT32_MAX:
        raise ValueConversionError(f"{what} has {count} entries; the format allows {INT32_MAX}")
    return struct.pack("<IBi", magic, PAYLOAD_VERSION, count)


def _index(lengths: list[int], what: str) -> bytes:
    index = _blob.encode(lengths)
    if len(index) > INT32_MAX:
        raise ValueConversionError(f"{what} index is {len(index)} bytes; the format allows {INT32_MAX}")
    return index


def write_array(sink, elements: list) -> None:
    """Streams an ARRAY payload: ``sink.write(bytes)`` for framing,
    ``sink.value(v)`` to copy one element and return its length."""
    sink.write(_header(ARRAY_MAGIC, len(elements), "ARRAY<BLOB>"))
    lengths = [NULL_ELEMENT if e is None else sink.value(e) for e in elements]
    index = _index(lengths, "ARRAY<BLOB> element")
    sink.write(index + struct.pack("<i", len(index)))


def map_entries(value, codec: KeyCodec | None) -> list[tuple[bytes | None, Any]]:
    """(key bytes or None, value) pairs of a Mapping or iterable of pairs,
    keys serialized and checked for duplicates (by bytes, as Paimon does)
    before anything is written."""
    assert codec is not None, "a MAP kind has a key codec"
    items = value.items() if hasattr(value, "items") else value
    entries, seen = [], set()
    for item in items:
        try:
            key, v = item
        except (TypeError, ValueError):
            raise ValueConversionError(f"MAP<X, BLOB> entries must be (key, value) pairs, "
                                       f"got {item!r}") from None
        kb = None if key is None else codec.encode(key)
        if kb in seen:
            raise ValueConversionError(f"MAP<X, BLOB> keys must be unique; {key!r} repeats")
        seen.add(kb)
        entries.append((kb, v))
    return entries


def write_map(sink, entries: list[tuple[bytes | None, Any]]) -> None:
    """Streams a MAP payload of pairs from :func:`map_entries`."""
    sink.write(_header(MAP_MAGIC, len(entries), "MAP<X, BLOB>"))
    key_lengths = []
    for kb, _ in entries:
        key_lengths.append(NULL_ELEMENT if kb is None else len(kb))
        if kb:
            sink.write(kb)
    value_lengths = [NULL_ELEMENT if v is None else sink.value(v) for _, v in entries]
    key_index = _index(key_lengths, "MAP<X, BLOB> key")
    value_index = _index(value_lengths, "MAP<X, BLOB> value")
    sink.write(key_index + value_index + struct.pack("<ii", len(key_index), len(value_index)))


# -- reading -----------------------------------------------------------------------
def _decode_index(data: bytes | memoryview, what: str) -> np.ndarray:
    try:
        return _blob.decode(data)
    except VarintError as e:
        raise PayloadError(f"Invalid {what} index: {e}") from None


def _spans(lengths: np.ndarray, limit: int, what: str, fixed: int | None = None):
    """Offsets (from 0, -1 for null) of back-to-back spans inside ``limit``."""
    if fixed is not None:
        wrong = np.flatnonzero((lengths != NULL_ELEMENT) & (lengths != fixed))
        if len(wrong):
            raise PayloadError(f"Invalid {what} fixed-width key length {int(lengths[wrong[0]])} "
                               f"at entry {int(wrong[0])}: expected {fixed}")
    offsets, used, bad, reason = _blob.layout(lengths, limit, 0, NULL_ELEMENT)
    if bad >= 0:
        if reason == 0:
            raise PayloadError(f"Invalid {what} length {int(lengths[bad])} at entry {bad}")
        raise PayloadError(f"{what} lengths exceed the payload data length {limit} at entry {bad}")
    return offsets, used


def _check_header(read: Read, length: int, magic: int, minimum: int, what: str) -> int:
    if length < minimum:
        raise PayloadError(f"Invalid {what} payload length {length}: expected at least {minimum}")
    found, version, count = struct.unpack("<IBi", read(0, ARRAY_HEADER))
    if found != magic:
        raise PayloadError(f"Invalid {what} payload magic number: expected {magic:#010x}, "
                           f"found {found:#010x}")
    if version != PAYLOAD_VERSION:
        raise PayloadError(f"Unsupported {what} payload version {version}: expected "
                           f"{PAYLOAD_VERSION}")
    if count < 0:
        raise PayloadError(f"Invalid {what} entry count {count}")
    return count


def array_layout(read: Read, length: int) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, lengths) of the elements, relative to the payload start;
    offset -1 and length -1 for a null element."""
    what = "ARRAY<BLOB>"
    count = _check_header(read, length, ARRAY_MAGIC, ARRAY_MIN, what)
    (index_length,) = struct.unpack("<i", read(length - 4, 4))
    if not 0 <= index_length <= length - ARRAY_MIN:
        raise PayloadError(f"Invalid {what} element index length {index_length}: expected a "
                           f"value in [0, {length - ARRAY_MIN}]")
    if count > index_length:   # every varint takes at least one byte
        raise PayloadError(f"Invalid {what} element count {count}: the element index has only "
                           f"{index_length} bytes")
    lengths = _decode_index(read(length - 4 - index_length, index_length), f"{what} element")
    if len(lengths) != count:
        raise PayloadError(f"{what} element count {count} does not match the element index, "
                           f"which holds {len(lengths)} lengths")
    data_length = length - ARRAY_MIN - index_length
    offsets, used = _spans(lengths, data_length, f"{what} element")
    if used != data_length:
        raise PayloadError(f"{what} element lengths use {used} bytes, but the data area holds "
                           f"{data_length}")
    return np.where(offsets >= 0, offsets + ARRAY_HEADER, -1), lengths


def map_layout(read: Read, length: int, codec: KeyCodec | None) -> tuple[list, np.ndarray, np.ndarray]:
    """(keys, value offsets, value lengths); offsets relative to the payload
    start, -1 for a null value. Keys are decoded and checked for duplicates."""
    what = "MAP<X, BLOB>"
    assert codec is not None, "a MAP kind has a key codec"
    count = _check_header(read, length, MAP_MAGIC, MAP_MIN, what)
    key_index_length, value_index_length = struct.unpack("<ii", read(length - 8, 8))
    room = length - MAP_MIN
    for name, n in (("key", key_index_length), ("value", value_index_length)):
        if not 0 <= n <= room:
            raise PayloadError(f"Invalid {what} {name} index length {n}: expected a value in "
                               f"[0, {room}]")
    if key_index_length + value_index_length > room:
        raise PayloadError(f"Invalid {what} payload: indexes exceed the payload length "
                           f"({key_index_length} + {value_index_length} > {room})")
    for name, n in (("key", key_index_length), ("value", value_index_length)):
        if count > n:
            raise PayloadError(f"Invalid {what} entry count {count}: the {name} index has only "
                               f"{n} bytes")
    indexes_at = length - 8 - key_index_length - value_index_length
    key_lengths = _decode_index(read(indexes_at, key_index_length), f"{what} key")
    value_lengths = _decode_index(read(indexes_at + key_index_length, value_index_length),
                                  f"{what} value")
    for name, decoded in (("key", key_lengths), ("value", value_lengths)):
        if len(decoded) != count:
            raise PayloadError(f"Invalid {what} payload: entry count {count} does not match "
                               f"{name} index length ({len(decoded)} lengths)")
    data_length = indexes_at - ARRAY_HEADER
    key_offsets, keys_used = _spans(key_lengths, data_length, f"{what} key", codec.fixed_length)
    value_offsets, values_used = _spans(value_lengths, data_length - keys_used, f"{what} value")
    if keys_used + values_used != data_length:
        raise PayloadError(f"Invalid {what} payload: keys and values use {keys_used + values_used} "
                           f"bytes, but the data area holds {data_length} (trailing data)")
    key_bytes = read(ARRAY_HEADER, keys_used)
    keys, seen = [], set()
    for i in range(count):
        if key_lengths[i] < 0:
            key = None
        else:
            o = int(key_offsets[i])
            try:
                key = codec.decode(bytes(key_bytes[o:o + int(key_lengths[i])]))
            except (KeyDecodeError, struct.error, ValueError) as e:
                raise PayloadError(f"Invalid {what} key at entry {i}: {e}") from None
        if key in seen:
            raise PayloadError(f"Invalid {what} payload: duplicate key {key!r} at entry {i}")
        seen.add(key)
        keys.append(key)
    base = ARRAY_HEADER + keys_used
    return keys, np.where(value_offsets >= 0, value_offsets + base, -1), value_lengths


def slices(buf, offsets: np.ndarray, lengths: np.ndarray) -> list[bytes | None]:
    """The elements of an in-memory payload as bytes (None for null)."""
    return [None if n < 0 else bytes(buf[o:o + n]) for o, n in zip(offsets.tolist(), lengths.tolist())]
