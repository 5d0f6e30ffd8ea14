# A lookup needs one row of a block, but every row starts where the previous
# one ends and the offset array sits at the block's end, so today's path
# decompresses the whole block (libzstd decodes a compressed ZSTD block whole:
# all its Huffman literals, then all its sequences). PrefixBlock decodes the
# frame only as far as the rows asked for (src/include/rf_zstd.h), finds
# their starts by walking the rows under the schema (a row's length follows
# from its bytes: skip_row below), and keeps both, so a later lookup in the
# same block resumes where the last one stopped.
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
    int rfz_finish(rfz_dec *d)
    void rfz_free(rfz_dec *d)


# The walk. The rows before the one asked for need only their lengths: their
# values are not returned (decode_row checks the row asked for in full), and
# the whole-block path does not check them either. So skip_row steps over a
# row reading only what its length depends on: null headers and bitmaps,
# length and size varints; it does not check values (UTF-8, decimal
# precision, time ranges). A null in a NOT NULL field is still an error:
# such bytes are not a row of this schema.
#
# Safety: every read stays below end (the output past it is not
# decompressed yet: uninitialized); a length (< 2^31) or width is compared
# with what is left before it is added, so a position never passes end and
# cannot overflow; every loop runs over fields of the schema or over bits of
# a bitmap that lies before end.
#
# Speed: a walk is one chain of dependent loads (each length says where the
# next one is), so the functions take and return the position by value (an
# error is a negative E_* code): kept in a register, not stored and
# reloaded around each call as dec_row's int64_t *pos is. Fixed-width
# fields and strings, the common cases, are stepped over inline; runs of
# fixed-width fields none of which is null take one step. Kinds rarer in
# rows (TIMESTAMP with nanoseconds, VECTOR) go to dec_value without storing.

cdef inline int64_t _skip_len(const uint8_t *b, int64_t p, int64_t end) noexcept nogil:
    """The position past a length varint and the bytes it counts, or E_*."""
    cdef int64_t ln
    cdef int rc = dec_len(b, &p, end, &ln)
    return rc if rc else p + ln


cdef inline uint64_t _null_bits(const uint8_t *hdr, int f, int k) noexcept nogil:
    """Bits f..f+k-1 of a null header, k <= RUN_MAX (with f's offset in its
    byte, up to 64 bits); reads only the header bytes that hold them."""
    cdef uint64_t v = 0
    cdef int i
    cdef int first = f >> 3
    for i in range(first, ((f + k - 1) >> 3) + 1):
        v |= (<uint64_t> hdr[i]) << (8 * (i - first))
    return (v >> (f & 7)) & (((<uint64_t> 1) << k) - 1)


cdef int64_t skip_row(Node *n, const uint8_t *b, int64_t p, int64_t end, int64_t lim) noexcept nogil:
    """The position past one ROW value of n (a row: n is the schema's root)
    starting at p, or E_*."""
    cdef int64_t nb = (n.nchild + 7) >> 3
    cdef const uint8_t *hdr
    cdef int f = 0
    cdef int nchild = n.nchild
    cdef Node *c
    if nb > end - p:
        return E_TRUNC
    hdr = b + p
    p += nb
    while f < nchild:
        c = &n.child[f]
        if c.run_n > 1 and _null_bits(hdr, f, c.run_n) == 0:
            # fixed-width fields, none null: one bounds check and one step for all
            if c.run_w > end - p:
                return E_TRUNC
            p += c.run_w
            f += c.run_n
            continue
        if (hdr[f >> 3] >> (f & 7)) & 1:
            if not c.nullable:
                return E_NOT_NULL
        elif c.skip_w:
            if c.skip_w > end - p:
                return E_TRUNC
            p += c.skip_w
        elif c.kind == K_STR or c.kind == K_BIN:
            p = _skip_len(b, p, end)
        else:
            p = skip_value(c, b, p, end, lim)
        if p < 0:
            return p
        f += 1
    return p


cdef int64_t skip_array(Node *c, const uint8_t *b, int64_t p, int64_t end, int64_t lim,
                        int64_t *size_out) noexcept nogil:
    """The position past an array of c values (size, null bitmap, elements)
    starting at p, or E_*; its size in size_out."""
    cdef int64_t size, nb, k, present
    cdef const uint8_t *bitmap
    cdef uint8_t m
    cdef int rc = rf_read_len(b, &p, end, &size)
    if rc:
        return E_TRUNC if rc == -1 else E_VARINT
    nb = (size + 7) >> 3
    if nb > end - p:
        return E_TRUNC
    bitmap = b + p
    p += nb
    size_out[0] = size
    if c.skip_w:
        # fixed-width elements: count the nulls, then one step over the others
        present = size
        for k in range(nb):
            m = bitmap[k]
            if k == nb - 1 and (size & 7):
                m &= (1 << (size & 7)) - 1     # the last byte's bits past size are no elements
            while m:
                m &= m - 1
                present -= 1
        if present != size and not c.nullable:
            return E_NOT_NULL
        if present * c.skip_w > end - p:       # < 2^31 x 16: no overflow
            return E_TRUNC
        return p + present * c.skip_w
    for k in range(size):
        if (bitmap[k >> 3] >> (k & 7)) & 1:
            if not c.nullable:
                return E_NOT_NULL
        elif c.kind == K_STR or c.kind == K_BIN:
            p = _skip_len(b, p, end)
        else:
            p = skip_value(c, b, p, end, lim)
        if p < 0:
            return p
    return p


cdef int64_t skip_value(Node *c, const uint8_t *b, int64_t p, int64_t end, int64_t lim) noexcept nogil:
    """The position past one non-null value of c starting at p, or E_*."""
    cdef int64_t ln, k
    cdef int rc
    cdef int kind = c.kind
    if c.skip_w:
        return E_TRUNC if c.skip_w > end - p else p + c.skip_w
    if kind == K_STR or kind == K_BIN or kind == K_LBIN or kind == K_DEC128:
        return _skip_len(b, p, end)
    if kind == K_LIST:
        return skip_array(&c.child[0], b, p, end, lim, &ln)
    if kind == K_ROW:
        return skip_row(c, b, p, end, lim)
    if kind == K_MAP:
        p = skip_array(&c.child[0], b, p, end, lim, &ln)
        if p >= 0:
            p = skip_array(&c.child[1], b, p, end, lim, &k)
        return p if p < 0 or ln == k else E_MAP_SIZE
    if kind == K_VARIANT:   # its value's bytes, then its metadata's
        p = _skip_len(b, p, end)
        return p if p < 0 else _skip_len(b, p, end)
    rc = dec_value(c, b, &p, end, lim, 0)
    return rc if rc else p


# A freed PrefixBlock's decoder (with its literals buffer) for the next one:
# the decoder's ~200 KiB, freed and allocated again, can come back as fresh
# pages (glibc returns a large free top of the heap to the system), whose
# page faults cost 1-3% of decoding a block's first half and 7% of three
# quarters (PrefixBlock.advance, one lookup after another). Taken and given
# back under the GIL.
cdef rfz_dec *_spare_dec = NULL


@cython.final
@cython.no_gc_clear    # tp_clear would free out, which dec and outp point into
cdef class PrefixBlock:
    """Block ``frame`` (its ZSTD frame, ``usize`` bytes and ``num_rows`` rows
    decompressed), decompressed and walked only as far as asked. With
    ``num_rows`` 0 it only decompresses (advance, output).

    ``rows(decoder, i)`` returns a :class:`Block` of the rows ``0..i``, or
    None when that cannot be done here: the frame is of a kind this decoder
    leaves to libzstd, it is corrupt, or the rows do not walk. The caller
    then decompresses the whole block as usual, which reports any error."""
    cdef rfz_dec *dec
    cdef Held frame              # the frame's bytes (a view of a mapped file stays valid),
                                 # hidden from the collector (_held.pxd)
    cdef object out              # bytearray(usize): the output so far is its prefix
    cdef uint8_t *outp
    cdef int32_t *starts         # starts[0..walked]: row starts found so far
    cdef readonly int64_t walked # rows whose end is known
    cdef readonly int64_t num_rows, usize, row_bytes
    cdef readonly bint failed

    def __cinit__(self, frame, int64_t usize, int64_t num_rows):
        held_get(&self.frame, frame)
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
        rc = rfz_init(self.dec, <const uint8_t *> self.frame.view.buf, self.frame.view.len,
                     self.outp, usize)
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
        held_release(&self.frame)

    @property
    def produced(self):
        """Bytes decompressed so far."""
        return 0 if self.failed else self.dec.op

    @property
    def nbytes(self):
        """What it holds: the output buffer, the frame, the decoder's tables
        and literals."""
        return self.usize + self.frame.view.len + sizeof(rfz_dec) + RFZ_BLOCK_MAX + 4 * self.num_rows

    def advance(self, int64_t target):
        """Decompresses to at least ``target`` bytes (the frame's end at
        most); returns the bytes produced so far, or -1 if it failed."""
        if self.failed:
            return -1
        if rfz_advance(self.dec, <size_t> max(target, 0)) != RFZ_OK:
            self.failed = True
            return -1
        return self.dec.op

    def row_starts(self):
        """The row starts found so far (walked + 1 of them: the last is where
        the last row walked ends)."""
        return [self.starts[k] for k in range(self.walked + 1)] if self.starts != NULL else []

    def output(self):
        """The bytes decompressed so far (a copy)."""
        return bytes(self.out[:self.produced])

    def rows(self, RowDecoder decoder, int64_t i):
        if self.failed or not 0 <= i < self.num_rows:
            return None
        if walk_prefix(self.dec, self.outp, self.starts, &self.walked, self.num_rows,
                       self.row_bytes, &decoder.root, i):
            self.failed = True
            return None
        return Block(self.out, PyBytes_FromStringAndSize(<char *> self.starts, 4 * (i + 1)),
                     self.starts[i + 1])


cdef int walk_prefix(rfz_dec *dec, uint8_t *outp, int32_t *starts, int64_t *walked,
                     int64_t num_rows, int64_t row_bytes, Node *root, int64_t i) noexcept nogil:
    """Decompresses a block's frame (``dec``, into ``outp``) and walks its
    rows (their starts into ``starts``, ``walked`` of them so far) until
    rows 0..i are whole; 0, or -1 when that cannot be done here (a frame
    left to libzstd, a corrupt one, rows that do not walk). Reads only the
    plan ``root``: threads with their own blocks may share it."""
    cdef int64_t pos, next_pos, avail, target
    while walked[0] <= i:
        avail = dec.op if <int64_t> dec.op < row_bytes else row_bytes
        pos = starts[walked[0]]
        while walked[0] <= i:
            next_pos = skip_row(root, outp, pos, avail, avail)
            if next_pos < 0:
                break           # the row is cut off by the end of the output, or corrupt
            pos = next_pos
            walked[0] += 1
            starts[walked[0]] = <int32_t> pos
        if walked[0] == num_rows and pos != row_bytes:
            return -1           # the last row must end where the offset array begins
        if walked[0] > i:
            break
        if avail >= row_bytes or dec.frame_done:
            return -1           # the rows do not fit the schema: the whole block says why
        # more output: the rows still wanted at the average row size (the
        # block's, then the walked rows'), and a margin
        if walked[0] == 0:
            target = row_bytes * (i + 1) // num_rows
        else:
            target = pos + (pos // walked[0]) * (i + 1 - walked[0])
        target = max(target + 1024, <int64_t> dec.op + 1024)
        if rfz_advance(dec, <size_t> target) != RFZ_OK:
            return -1
    return 0
