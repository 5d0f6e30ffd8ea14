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
from libc.stdint cimport int64_t, uint8_t, uint64_t
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


cdef class BlockTable:
    """The blocks of one file as four int64 arrays (32 bytes a block: offsets,
    compressed and uncompressed sizes, first rows), with the per-block look-ups
    a point lookup makes in C (a Python list of tuples per block cost 320 bytes
    a block and most of the open time of a large file)."""
    cdef const int64_t[::1] _offsets, _sizes, _usizes, _starts
    cdef readonly object offsets, compressed_sizes, uncompressed_sizes, row_starts
    cdef readonly int64_t num_blocks, num_rows

    def __cinit__(self, offsets, compressed_sizes, uncompressed_sizes, row_starts,
                  int64_t num_rows):
        self.offsets = np.ascontiguousarray(offsets, np.int64)
        self.compressed_sizes = np.ascontiguousarray(compressed_sizes, np.int64)
        self.uncompressed_sizes = np.ascontiguousarray(uncompressed_sizes, np.int64)
        self.row_starts = np.ascontiguousarray(row_starts, np.int64)
        self._offsets, self._sizes = self.offsets, self.compressed_sizes
        self._usizes, self._starts = self.uncompressed_sizes, self.row_starts
        self.num_blocks = self._starts.shape[0]
        self.num_rows = num_rows
        if not (self._offsets.shape[0] == self._sizes.shape[0] == self._usizes.shape[0]
                == self.num_blocks):
            raise ValueError("BlockTable: the arrays differ in length")

    def __reduce__(self):
        return BlockTable, (self.offsets, self.compressed_sizes, self.uncompressed_sizes,
                            self.row_starts, self.num_rows)

    @property
    def nbytes(self):
        """The bytes the arrays hold."""
        return 32 * self.num_blocks

    cpdef int64_t find(self, int64_t row):
        """The block holding ``row`` (0 <= row < num_rows: the caller checked)."""
        cdef int64_t lo = 0, hi = self.num_blocks, mid
        while hi - lo > 1:              # the last block starting at or before row
            mid = (lo + hi) >> 1
            if self._starts[mid] <= row:
                lo = mid
            else:
                hi = mid
        return lo

    cpdef int64_t start(self, int64_t b):
        return self._starts[b]

    cpdef int64_t rows(self, int64_t b):
        """Block ``b``'s row count."""
        return (self._starts[b + 1] if b + 1 < self.num_blocks else self.num_rows) - self._starts[b]

    cpdef int64_t usize(self, int64_t b):
        return self._usizes[b]

    def frame(self, int64_t b):
        """(offset, compressed size) of block ``b``."""
        return self._offsets[b], self._sizes[b]

    def block_rows(self, blocks):
        """The row counts of the blocks ``blocks`` (an int64 array)."""
        blocks = np.asarray(blocks, np.int64)
        nxt = np.minimum(blocks + 1, max(self.num_blocks - 1, 0))
        ends = np.where(blocks + 1 < self.num_blocks, self.row_starts[nxt], self.num_rows)
        return ends - self.row_starts[blocks]


cdef enum:
    ZSTD_MAX_BLOCK = 131072     # the largest block a ZSTD frame holds (block_index.py's)


def index_ok(const int64_t[::1] comp, const int64_t[::1] uncomp, const int64_t[::1] starts,
             int64_t block_count, int64_t index_offset, int64_t total_rows,
             int64_t max_block_size):
    """True when the index arrays hold every invariant BlockIndex.problems()
    checks, and no block declares more than ``max_block_size`` (-1: no
    bound) uncompressed bytes: one pass in C, so that opening a file of
    195k blocks does not walk its arrays a dozen times in numpy. False: ask
    problems() which (and say it)."""
    cdef int64_t n = starts.shape[0], b, c, u
    cdef uint64_t end = 0
    if comp.shape[0] != n or uncomp.shape[0] != n or n != block_count:
        return False
    if n == 0:
        return index_offset == 0 and total_rows == 0
    if starts[0] != 0 or starts[n - 1] >= total_rows:
        return False
    cdef bint ok = True
    with nogil:
        for b in range(n):
            c, u = comp[b], uncomp[b]
            # a ZSTD frame of c bytes decodes to at most (c // 4 + 1) blocks of 128 KiB
            if c < 0 or u < 0 or c > index_offset \
                    or (max_block_size >= 0 and u > max_block_size) \
                    or u // ZSTD_MAX_BLOCK + (u % ZSTD_MAX_BLOCK != 0) > c // 4 + 1 \
                    or (b and starts[b] <= starts[b - 1]):
                ok = False
                break
            end += <uint64_t> c
    if not ok:
        return False
    return end == <uint64_t> index_offset

