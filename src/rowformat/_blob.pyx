# cython: language_level=3
"""Hot loops of the .blob format: Paimon's delta-varint codec and the walk
that turns an index of entry lengths into offsets.

The codec works in 64-bit wrapping arithmetic like Java's ``long``, so the
extreme vectors of Paimon's DeltaVarintCompressor tests (``[MAX, MIN]``
encodes to 11 bytes) match; pypaimon's unbounded Python ints do not.
"""
from libc.stdint cimport int64_t, uint64_t, uint8_t

import numpy as np

from rowformat.errors import VarintError


def encode(values) -> bytes:
    """Delta, ZigZag, then LEB128 varint of each int64 in ``values``."""
    cdef const int64_t[::1] v = np.ascontiguousarray(values, dtype=np.int64)
    cdef Py_ssize_t n = v.shape[0], i, p = 0
    out = bytearray(n * 10)
    cdef unsigned char[::1] o = out
    cdef uint64_t prev = 0, cur, delta, z
    for i in range(n):
        cur = <uint64_t>v[i]
        delta = cur - prev                      # wraps like Java
        prev = cur
        z = (delta << 1) ^ <uint64_t>(<int64_t>delta >> 63)
        while z >= 0x80:
            o[p] = <unsigned char>((z & 0x7F) | 0x80)
            p += 1
            z >>= 7
        o[p] = <unsigned char>z
        p += 1
    return bytes(out[:p])


def decode(data) -> np.ndarray:
    """Inverse of :func:`encode`. Raises VarintError on a truncated varint or
    one longer than 10 bytes. Allocates one int64 per varint terminator byte,
    so never more than 8x the input."""
    cdef const uint8_t[::1] d = memoryview(data).cast("B")
    cdef Py_ssize_t n = d.shape[0], i, count = 0, k = 0
    for i in range(n):
        if d[i] < 0x80:
            count += 1
    out = np.empty(count, dtype=np.int64)
    cdef int64_t[::1] o = out
    cdef uint64_t z, acc = 0
    cdef int shift
    cdef uint8_t b
    i = 0
    while i < n:
        z = 0
        shift = 0
        while True:
            if i >= n:
                raise VarintError("Unexpected end of input")
            if shift > 63:
                raise VarintError("Varint overflow")
            b = d[i]
            i += 1
            z |= (<uint64_t>(b & 0x7F)) << shift
            if b < 0x80:
                break
            shift += 7
        acc += (z >> 1) ^ (<uint64_t>0 - (z & 1))   # un-ZigZag, prefix sum (wrapping)
        o[k] = <int64_t>acc
        k += 1
    return out[:k]


def layout(lengths, int64_t limit, int64_t min_length, int64_t min_sentinel):
    """Lays spans of ``lengths`` back to back from offset 0.

    Values in ``[min_sentinel, -1]`` are sentinels (null, placeholder): they
    take no bytes and get offset -1. Any other value must be at least
    ``min_length`` and fit in what is left of ``limit``; checked before the
    addition, so the running sum never overflows.

    Returns ``(offsets, used, bad, reason)``: ``bad`` is the first offending
    position or -1, ``reason`` 0 for a value that is too small, 1 for one
    that overruns ``limit``.
    """
    cdef const int64_t[::1] v = np.ascontiguousarray(lengths, dtype=np.int64)
    cdef Py_ssize_t n = v.shape[0], i
    offsets = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] o = offsets
    cdef int64_t used = 0, x
    for i in range(n):
        x = v[i]
        if x < 0 and x >= min_sentinel:
            o[i] = -1
            continue
        if x < min_length:
            return offsets, used, i, 0
        if x > limit - used:
            return offsets, used, i, 1
        o[i] = used
        used += x
    return offsets, used, -1, 0
