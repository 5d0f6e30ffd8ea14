# A lookup needs one row of a block, but every row starts where the previous
# one ends and the offset array sits at the block's end, so today's path
# decompresses the whole block (libzstd decodes a compressed ZSTD block whole:
# all its Huffman literals, then all its sequences). PrefixBlock decodes the
# frame only as far as the rows asked for (src/include/rf_zstd.h), finds
# their starts by walking the rows under the schema (a row's length follows
# from its bytes), and keeps both, so a later lookup in the same block
# resumes where the last one stopped.
#
# Decoding and walking hold the GIL: a PrefixBlock is shared by the threads
# that look up rows of its block, and its state moves forward only.

cdef extern from "rf_zstd.h" nogil:
    ctypedef struct rfz_dec:
        uint8_t *lit
        size_t op
        size_t cap
        int frame_done
    int RFZ_OK
    int RFZ_UNSUPPORTED
    int RFZ_NOMEM
    int RFZ_BLOCK_MAX
    int rfz_init(rfz_dec *d, const uint8_t *src, size_t n, uint8_t *dst, size_t cap)
    int rfz_advance(rfz_dec *d, size_t target)
    void rfz_free(rfz_dec *d)


# A freed PrefixBlock's decoder (with its literals buffer) for the next one:
# the decoder's ~200 KiB, freed and allocated again, can come back as fresh
# pages (glibc returns a large free top of the heap to the system), whose
# page faults cost 1-3% of decoding a block's first half and 7% of three
# quarters (PrefixBlock.advance, one lookup after another). Taken and given
# back under the GIL.
cdef rfz_dec *_spare_dec = NULL


@cython.final
cdef class PrefixBlock:
    """Block ``frame`` (its ZSTD frame, ``usize`` bytes and ``num_rows`` rows
    decompressed), decompressed and walked only as far as asked. With
    ``num_rows`` 0 it only decompresses (advance, output).

    ``rows(decoder, i)`` returns a :class:`Block` of the rows ``0..i``, or
    None when that cannot be done here: the frame is of a kind this decoder
    leaves to libzstd, it is corrupt, or the rows do not walk. The caller
    then decompresses the whole block as usual, which reports any error."""
    cdef rfz_dec *dec
    cdef object frame
    cdef Py_buffer fview         # the frame's bytes (a view of a mapped file stays valid)
    cdef object out              # bytearray(usize): the output so far is its prefix
    cdef uint8_t *outp
    cdef int32_t *starts         # starts[0..walked]: row starts found so far
    cdef readonly int64_t walked # rows whose end is known
    cdef readonly int64_t num_rows, usize, row_bytes
    cdef readonly bint failed

    def __cinit__(self, frame, int64_t usize, int64_t num_rows):
        PyObject_GetBuffer(frame, &self.fview, PyBUF_SIMPLE)
        self.frame = frame
        self.usize = usize
        self.num_rows = num_rows
        self.row_bytes = usize - 4 - 4 * num_rows if num_rows else usize   # 0 rows: a bare frame
        if num_rows < 0 or self.row_bytes < 0:
            self.failed = True
            return
        self.out = PyByteArray_FromStringAndSize(NULL, usize)
        self.outp = <uint8_t *> PyByteArray_AS_STRING(self.out)
        self.starts = <int32_t *> malloc(sizeof(int32_t) * (num_rows + 1))
        global _spare_dec
        if _spare_dec != NULL:
            self.dec, _spare_dec = _spare_dec, NULL
        else:
            self.dec = <rfz_dec *> malloc(sizeof(rfz_dec))
            if self.dec != NULL:
                self.dec.lit = NULL
        if self.starts == NULL or self.dec == NULL:
            raise MemoryError()
        self.starts[0] = 0
        rc = rfz_init(self.dec, <const uint8_t *> self.fview.buf, self.fview.len, self.outp, usize)
        if rc == RFZ_NOMEM:
            raise MemoryError()
        self.failed = rc != RFZ_OK

    def __dealloc__(self):
        global _spare_dec
        if self.dec != NULL:
            if _spare_dec == NULL:
                _spare_dec = self.dec
            else:
                rfz_free(self.dec)
                free(self.dec)
        free(self.starts)
        if self.frame is not None:
            PyBuffer_Release(&self.fview)

    @property
    def produced(self):
        """Bytes decompressed so far."""
        return 0 if self.failed else self.dec.op

    @property
    def nbytes(self):
        """What it holds: the output buffer, the frame, the decoder's tables
        and literals."""
        return self.usize + self.fview.len + sizeof(rfz_dec) + RFZ_BLOCK_MAX + 4 * self.num_rows

    def advance(self, int64_t target):
        """Decompresses to at least ``target`` bytes (the frame's end at
        most); returns the bytes produced so far, or -1 if it failed."""
        if self.failed:
            return -1
        if rfz_advance(self.dec, <size_t> max(target, 0)) != RFZ_OK:
            self.failed = True
            return -1
        return self.dec.op

    def output(self):
        """The bytes decompressed so far (a copy)."""
        return bytes(self.out[:self.produced])

    def rows(self, RowDecoder decoder, int64_t i):
        cdef int64_t pos, avail, target
        if self.failed or not 0 <= i < self.num_rows:
            return None
        while self.walked <= i:
            avail = self.dec.op if self.dec.op < self.row_bytes else self.row_bytes
            pos = self.starts[self.walked]
            while self.walked <= i:
                if dec_row(&decoder.root, self.outp, &pos, avail, avail, 0, NULL):
                    break           # the row is cut off by the end of the output, or corrupt
                self.walked += 1
                self.starts[self.walked] = <int32_t> pos
            if self.walked == self.num_rows and pos != self.row_bytes:
                self.failed = True       # the last row must end where the offset array begins
                return None
            if self.walked > i:
                break
            if avail >= self.row_bytes or self.dec.frame_done:
                self.failed = True       # the rows do not fit the schema: the whole block says why
                return None
            # more output: the rows still wanted at the average row size (the
            # block's, then the walked rows'), and a margin
            if self.walked == 0:
                target = self.row_bytes * (i + 1) // self.num_rows
            else:
                target = pos + (pos // self.walked) * (i + 1 - self.walked)
            if self.advance(max(target + 1024, self.dec.op + 1024)) < 0:
                return None
        return Block(self.out, PyBytes_FromStringAndSize(<char *> self.starts, 4 * (i + 1)),
                     self.starts[i + 1])
