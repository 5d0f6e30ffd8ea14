# cython: language_level=3
"""Hot loops of the .blob format: Paimon's delta-varint codec and the walk
that turns an index of entry lengths into offsets.

The codec is rf_delta_encode/rf_delta_decode in src/include/rf_wire.h, shared
with the .row block index (_blockindex.pyx). It works in 64-bit wrapping
arithmetic like Java's ``long``, so the extreme vectors of Paimon's
DeltaVarintCompressor tests (``[MAX, MIN]`` encodes to 11 bytes) match;
pypaimon's unbounded Python ints do not.

A varint is at most 10 bytes, and the 10th carries bit 63 only, so it is 0x00
or 0x01: ``ff`` x 9 + ``01`` is 2^64 - 1 (zigzag of MIN). A 10th byte above 1
(the value does not fit 64 bits; Java drops those bits), an 11th byte and a
truncated varint raise VarintError, as the block index raises
CorruptFileError.
"""
from libc.stdint cimport int64_t, uint8_t
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING

import numpy as np

from rowformat._wire cimport rf_delta_encode, rf_delta_count, rf_delta_decode
from rowformat.errors import VarintError

include "_deltavarint.pxi"

# Java's messages; -3 (a 10th byte above 1) is one Java does not detect
_VARINT_ERRORS = {-1: "Unexpected end of input", -2: "Varint overflow",
                  -3: "Varint overflow (10th byte > 1)"}


def encode(values) -> bytes:
    """Delta, ZigZag, then LEB128 varint of each int64 in ``values``."""
    return delta_encode(values)


def decode(data) -> np.ndarray:
    """Inverse of :func:`encode`. Raises VarintError on a truncated varint,
    one longer than 10 bytes or one above 2^64 - 1. Allocates one int64 per
    varint terminator byte, so never more than 8x the input."""
    return delta_decode(memoryview(data).cast("B"), VarintError, _VARINT_ERRORS)


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
