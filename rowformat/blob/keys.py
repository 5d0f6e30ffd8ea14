"""Key encodings of MAP<K, BLOB> payloads, one codec per supported key type.

=========================  ===============================================
TINYINT/SMALLINT/INT/BIGINT  1/2/4/8 bytes little-endian (fixed width)
BOOLEAN                      1 byte, 0 or 1 (anything else is rejected)
DATE                         int32 days since 1970-01-01 (datetime.date)
TIME(p)                      int32 milliseconds of the day (datetime.time;
                             microseconds are truncated, as Paimon does)
DECIMAL(p<=18, s)            int64 unscaled value (fixed width)
DECIMAL(p>18, s)             minimal big-endian two's complement unscaled
                             bytes (Java ``BigInteger.toByteArray``)
BINARY/VARBINARY/BYTES       the raw bytes, neither padded nor checked
CHAR/VARCHAR/STRING          UTF-8
=========================  ===============================================

Any other key type is rejected when the file type is resolved. Encoding
errors are ValueConversionError; decoding errors are KeyDecodeError, which
the reader turns into a CorruptFileError naming the file and row.
"""
from __future__ import annotations

import datetime
import decimal
import struct
from dataclasses import dataclass
from typing import Any, Callable

from ..errors import KeyDecodeError, SchemaError, ValueConversionError
from ..datatypes import AtomicType, CharType, DataType, DecimalType, TimeType

_EPOCH = datetime.date(1970, 1, 1)
_MS_PER_DAY = 86_400_000


@dataclass(frozen=True)
class KeyCodec:
    type: DataType
    fixed_length: int | None            # None: variable width
    encode: Callable[[Any], bytes]
    decode: Callable[[bytes], Any]


def _int_codec(t: DataType, fmt: str) -> KeyCodec:
    size = struct.calcsize(fmt)

    def enc(v):
        if not isinstance(v, int) or isinstance(v, bool):
            raise ValueConversionError(f"a {t} key must be an int, got {type(v).__name__}")
        try:
            return struct.pack(fmt, v)
        except struct.error:
            raise ValueConversionError(f"{v} is out of range for a {t} key") from None
    return KeyCodec(t, size, enc, lambda b: struct.unpack(fmt, b)[0])


def _bool_codec(t: DataType) -> KeyCodec:
    def enc(v):
        if not isinstance(v, bool):
            raise ValueConversionError(f"a BOOLEAN key must be a bool, got {type(v).__name__}")
        return b"\x01" if v else b"\x00"

    def dec(b):
        if b[0] > 1:
            raise KeyDecodeError(f"BOOLEAN key byte must be 0 or 1, found {b[0]}")
        return b[0] == 1
    return KeyCodec(t, 1, enc, dec)


def _date_codec(t: DataType) -> KeyCodec:
    def enc(v):
        if isinstance(v, datetime.datetime) or not isinstance(v, datetime.date):
            raise ValueConversionError(f"a DATE key must be a datetime.date, got {type(v).__name__}")
        return struct.pack("<i", (v - _EPOCH).days)

    def dec(b):
        days = struct.unpack("<i", b)[0]
        try:
            return _EPOCH + datetime.timedelta(days=days)
        except OverflowError:
            raise KeyDecodeError(f"DATE key {days} days is outside Python's date range") from None
    return KeyCodec(t, 4, enc, dec)


def _time_codec(t: DataType) -> KeyCodec:
    def enc(v):
        if not isinstance(v, datetime.time):
            raise ValueConversionError(f"a {t} key must be a datetime.time, got {type(v).__name__}")
        ms = ((v.hour * 60 + v.minute) * 60 + v.second) * 1000 + v.microsecond // 1000
        return struct.pack("<i", ms)

    def dec(b):
        ms = struct.unpack("<i", b)[0]
        if not 0 <= ms < _MS_PER_DAY:
            raise KeyDecodeError(f"TIME key {ms} ms is outside [0, {_MS_PER_DAY})")
        s, ms = divmod(ms, 1000)
        m, s = divmod(s, 60)
        h, m = divmod(m, 60)
        return datetime.time(h, m, s, ms * 1000)
    return KeyCodec(t, 4, enc, dec)


def _decimal_codec(t: DecimalType) -> KeyCodec:
    p, s = t.precision, t.scale
    ctx = decimal.Context(prec=100)

    def unscaled(v) -> int:
        if isinstance(v, bool) or not isinstance(v, (decimal.Decimal, int)):
            raise ValueConversionError(f"a {t} key must be a decimal.Decimal, got {type(v).__name__}")
        d = ctx.scaleb(decimal.Decimal(v), s)
        if not d.is_finite() or d != d.to_integral_value():
            raise ValueConversionError(f"{v} does not fit {t}: more than {s} fractional digits")
        n = int(d)
        if abs(n) >= 10 ** p:
            raise ValueConversionError(f"{v} does not fit {t}: more than {p} digits")
        return n

    def value(n: int) -> decimal.Decimal:
        if abs(n) >= 10 ** p:
            raise KeyDecodeError(f"{t} key has more than {p} digits")
        return ctx.scaleb(decimal.Decimal(n), -s)

    if t.compact:
        return KeyCodec(t, 8, lambda v: struct.pack("<q", unscaled(v)),
                        lambda b: value(struct.unpack("<q", b)[0]))

    def enc(v):
        n = unscaled(v)
        bits = (~n).bit_length() if n < 0 else n.bit_length()   # Java's BigInteger.bitLength
        return n.to_bytes(bits // 8 + 1, "big", signed=True)

    def dec(b):
        if not b:
            raise KeyDecodeError(f"{t} key has zero bytes")
        return value(int.from_bytes(b, "big", signed=True))
    return KeyCodec(t, None, enc, dec)


def _binary_codec(t: DataType) -> KeyCodec:
    def enc(v):
        if not isinstance(v, (bytes, bytearray, memoryview)):
            raise ValueConversionError(f"a {t} key must be bytes, got {type(v).__name__}")
        return bytes(v)
    return KeyCodec(t, None, enc, bytes)


def _string_codec(t: DataType) -> KeyCodec:
    def enc(v):
        if not isinstance(v, str):
            raise ValueConversionError(f"a {t} key must be a str, got {type(v).__name__}")
        try:
            return v.encode("utf-8")
        except UnicodeEncodeError as e:
            raise ValueConversionError(f"{t} key {v!r} is not encodable as UTF-8: {e}") from None

    def dec(b):
        try:
            return bytes(b).decode("utf-8")
        except UnicodeDecodeError as e:
            raise KeyDecodeError(f"{t} key is not UTF-8: {e}") from None
    return KeyCodec(t, None, enc, dec)


_INT_FORMATS = {"TINYINT": "<b", "SMALLINT": "<h", "INT": "<i", "BIGINT": "<q"}


def key_codec(t: DataType) -> KeyCodec:
    """The codec of key type ``t``; SchemaError for a type Paimon rejects."""
    if isinstance(t, AtomicType):
        if t.name in _INT_FORMATS:
            return _int_codec(t, _INT_FORMATS[t.name])
        if t.name == "BOOLEAN":
            return _bool_codec(t)
        if t.name == "DATE":
            return _date_codec(t)
    elif isinstance(t, TimeType):
        return _time_codec(t)
    elif isinstance(t, DecimalType):
        return _decimal_codec(t)
    elif isinstance(t, CharType):
        return _string_codec(t) if t.is_string else _binary_codec(t)
    raise SchemaError(f"Unsupported key type for MAP<X, BLOB>: {t}")
