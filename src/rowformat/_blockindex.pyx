# cython: language_level=3
"""The block index arrays: delta from the previous value (the first from 0)
in wrapping 64-bit arithmetic, 64-bit zigzag, unsigned LEB128 of up to 10
bytes; each array prefixed by the minimal LEB128 of its byte length."""
from libc.stdint cimport int64_t, uint8_t, uint64_t
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING

import numpy as np

from rowformat._wire cimport rf_read_uvarint, rf_write_uvarint, rf_zigzag64, rf_unzigzag64, rf_read_len
from rowformat.errors import CorruptFileError


def encode_longs(values) -> bytes:
    """The delta-zigzag-varint bytes of an int64 sequence (no length prefix)."""
    cdef const int64_t[::1] v = np.ascontiguousarray(values, dtype=np.int64)
    cdef Py_ssize_t n = v.shape[0], i, k = 0
    cdef uint64_t prev = 0
    out = PyBytes_FromStringAndSize(NULL, 10 * n)
    cdef uint8_t *p = <uint8_t *> PyBytes_AS_STRING(out)
    for i in range(n):
        # unsigned subtraction wraps modulo 2^64, as Java's long arithmetic does
        k += rf_write_uvarint(p + k, rf_zigzag64(<int64_t> (<uint64_t> v[i] - prev)))
        prev = <uint64_t> v[i]
    return out[:k]


def decode_longs(const uint8_t[::1] data):
    """Inverse of encode_longs: an int64 numpy array. Raises CorruptFileError
    on a truncated or over-long varint."""
    cdef Py_ssize_t n = data.shape[0], i, count = 0
    cdef int64_t pos = 0
    cdef uint64_t u, prev = 0
    cdef int rc
    for i in range(n):
        if not (data[i] & 0x80):
            count += 1
    out = np.empty(count, dtype=np.int64)
    cdef int64_t[::1] o = out
    i = 0
    while pos < n:
        rc = rf_read_uvarint(&data[0], &pos, n, 10, &u)
        if rc:
            raise CorruptFileError("block index value is " +
                                   ("truncated" if rc == -1 else "longer than 10 bytes"))
        prev = prev + <uint64_t> rf_unzigzag64(u)
        o[i] = <int64_t> prev
        i += 1
    return out


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
