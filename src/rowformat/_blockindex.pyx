# cython: language_level=3
"""The block index arrays: Paimon's delta-varint arrays (DeltaVarintCompressor),
each prefixed by the minimal LEB128 of its byte length.

The codec is rf_delta_encode/rf_delta_decode in src/include/rf_wire.h, shared
with the .blob row index (_blob.pyx): delta from the previous value (the first
from 0) in wrapping 64-bit arithmetic, 64-bit zigzag, unsigned LEB128 of at
most 10 bytes. The 10th byte carries bit 63 only, so it is 0x00 or 0x01:
``ff`` x 9 + ``01`` is 2^64 - 1 (zigzag of Long.MIN_VALUE), ``ff`` x 9 +
``02`` does not fit 64 bits (Java's decoder drops such bits; no writer
makes them), and an 11th byte is one too many (Java: "Varint overflow"). Both
are errors, as is a truncated varint."""
from libc.stdint cimport int64_t, uint8_t
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING

import numpy as np

from rowformat._wire cimport rf_write_uvarint, rf_read_len, rf_delta_encode, rf_delta_count, rf_delta_decode
from rowformat.errors import CorruptFileError

include "_deltavarint.pxi"

_VARINT_ERRORS = {-1: "block index value is truncated",
                  -2: "block index value is longer than 10 bytes",
                  -3: "block index value is above 2^64 - 1 (10th byte > 1)"}


def encode_longs(values) -> bytes:
    """The delta-zigzag-varint bytes of an int64 sequence (no length prefix)."""
    return delta_encode(values)


def decode_longs(const uint8_t[::1] data):
    """Inverse of encode_longs: an int64 numpy array. Raises CorruptFileError
    on a truncated varint, one longer than 10 bytes or one above 2^64 - 1."""
    return delta_decode(data, CorruptFileError, _VARINT_ERRORS)


def read_prefixed(const uint8_t[::1] data, int64_t pos):
    """(array, next position) of one length-prefixed array at data[pos:]."""
    cdef int64_t n = data.shape[0], length
    if pos >= n:
        raise CorruptFileError("block index ends before all three arrays")
    cdef int rc = rf_read_len(&data[0], &pos, n, &length)
    if rc:
        raise CorruptFileError("block index array length is " +
                               ("truncated" if rc == -1 else "malformed"))
    if length > n - pos:
        raise CorruptFileError(f"block index array of {length} bytes overruns the index "
                               f"({n - pos} bytes left)")
    return decode_longs(data[pos:pos + length]), pos + length


def write_prefixed(values) -> bytes:
    body = encode_longs(values)
    cdef uint8_t tmp[10]
    cdef int k = rf_write_uvarint(tmp, len(body))
    return (<char *> tmp)[:k] + body
