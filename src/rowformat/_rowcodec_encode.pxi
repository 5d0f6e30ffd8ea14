# Included by _rowcodec.pyx. The encoder, Arrow -> row bytes: plan_bind points
# the plan at an Arrow RecordBatch exported through the C data interface, the
# enc_* functions serialize one row with the GIL released, and BlockEncoder
# packs rows into Paimon blocks by Java's flush rule.

cdef int plan_bind(Node *n, ArrowArray *a) noexcept nogil:
    """Points n at the buffers of the Arrow array a (canonical layout)."""
    cdef int i
    cdef ArrowArray *entries
    n.off = a.offset
    n.valid = <const uint8_t *> a.buffers[0] if a.null_count != 0 else NULL
    if n.kind in (K_BIN, K_STR):
        n.off32 = <const int32_t *> a.buffers[1]
        n.data = <const uint8_t *> a.buffers[2]
    elif n.kind == K_LBIN:
        n.off64 = <const int64_t *> a.buffers[1]
        n.data = <const uint8_t *> a.buffers[2]
    elif n.kind in (K_ROW, K_VARIANT):
        for i in range(n.nchild):
            plan_bind(&n.child[i], a.children[i])
    elif n.kind == K_LIST:
        n.off32 = <const int32_t *> a.buffers[1]
        plan_bind(&n.child[0], a.children[0])
    elif n.kind == K_MAP:
        n.off32 = <const int32_t *> a.buffers[1]
        entries = a.children[0]
        n.eoff = entries.offset
        plan_bind(&n.child[0], entries.children[0])
        plan_bind(&n.child[1], entries.children[1])
    elif n.kind == K_VECTOR:
        plan_bind(&n.child[0], a.children[0])
    else:
        n.data = <const uint8_t *> a.buffers[1]
    return 0


cdef inline bint is_valid(const Node *n, int64_t j) noexcept nogil:
    cdef int64_t p
    if n.valid == NULL:
        return 1
    p = n.off + j
    return (n.valid[p >> 3] >> (p & 7)) & 1


cdef inline int enc_bytes(Buf *out, const uint8_t *src, int64_t n) noexcept nogil:
    if n > INT32_MAX:
        return E_ROW_TOO_BIG
    if buf_reserve(out, 5 + n):
        return E_OOM
    out.len += rf_write_uvarint(out.data + out.len, <uint64_t> n)
    # rf_copy: most values are short, where a libc memcpy call costs more
    # than the copy (src may be NULL for empty values: rf_copy reads nothing)
    rf_copy(out.data + out.len, src, n)
    out.len += n
    return 0


cdef inline int enc_value(Node *n, int64_t j, Buf *out) noexcept nogil:
    """Serializes the non-null value at logical index j of n. The common
    kinds inline into the row and array loops; the rest, which need a larger
    stack frame, take a call to enc_value_other."""
    cdef int64_t p = n.off + j
    cdef int64_t v
    cdef rf_i128 d
    if n.kind == K_I64 or n.kind == K_F64:
        return buf_put_fixed(out, n.data + 8 * p, 8)
    if n.kind == K_I32 or n.kind == K_F32:
        return buf_put_fixed(out, n.data + 4 * p, 4)
    if n.kind == K_STR or n.kind == K_BIN:
        return enc_bytes(out, n.data + n.off32[p], n.off32[p + 1] - n.off32[p])
    if n.kind == K_DEC64:
        d = rf_ld_i128(n.data + 16 * p)
        if not rf_dec_fits(d, n.precision):
            return E_DEC_OVERFLOW
        v = <int64_t> d
        return buf_put_fixed(out, <uint8_t *> &v, 8)
    return enc_value_other(n, j, out)


cdef int enc_value_other(Node *n, int64_t j, Buf *out) noexcept nogil:
    """enc_value for the kinds it does not inline."""
    cdef int64_t p = n.off + j
    cdef int64_t s, e, v, k
    cdef rf_i128 d
    cdef uint8_t tmp[16]
    cdef int rc, nb
    cdef uint8_t b
    cdef int32_t v32
    if n.kind == K_BOOL:
        b = (n.data[p >> 3] >> (p & 7)) & 1
        return buf_put_fixed(out, &b, 1)
    if n.kind == K_I8:
        return buf_put_fixed(out, n.data + p, 1)
    if n.kind == K_I16:
        return buf_put_fixed(out, n.data + 2 * p, 2)
    if n.kind == K_LBIN:
        s = n.off64[p]
        e = n.off64[p + 1]
        return enc_bytes(out, n.data + s, e - s)
    if n.kind == K_DEC128:
        d = rf_ld_i128(n.data + 16 * p)
        if not rf_dec_fits(d, n.precision):
            return E_DEC_OVERFLOW
        nb = rf_i128_to_be_minimal(d, tmp)
        return enc_bytes(out, tmp, nb)
    if n.kind == K_TIME:
        v = rf_floordiv(rf_ld_i64(n.data + 8 * p), n.upm)
        v32 = <int32_t> v
        return buf_put_fixed(out, <uint8_t *> &v32, 4)
    if n.kind == K_TS_NANO:
        v = rf_ld_i64(n.data + 8 * p)
        e = rf_floordiv(v, n.upm)
        s = rf_floormod(v, n.upm) * n.npu
        if buf_put_fixed(out, <uint8_t *> &e, 8):
            return E_OOM
        return buf_varint(out, <uint64_t> s)
    if n.kind == K_VARIANT:
        for k in range(2):
            if not is_valid(&n.child[k], p):
                return E_VARIANT_NULL
            rc = enc_value(&n.child[k], p, out)
            if rc:
                return rc
        return 0
    if n.kind == K_ROW:
        return enc_row(n, j, out, NULL)
    if n.kind == K_LIST:
        s = n.off32[p]
        e = n.off32[p + 1]
        return enc_array(&n.child[0], s, e - s, out)
    if n.kind == K_MAP:
        s = n.off32[p]
        e = n.off32[p + 1]
        rc = enc_array(&n.child[0], n.eoff + s, e - s, out)
        if rc:
            return rc
        return enc_array(&n.child[1], n.eoff + s, e - s, out)
    if n.kind == K_VECTOR:
        if buf_varint(out, <uint64_t> n.fixed):
            return E_OOM
        for k in range(p * n.fixed, (p + 1) * n.fixed):
            if not is_valid(&n.child[0], k):
                return E_VECTOR_NULL
            rc = enc_value(&n.child[0], k, out)
            if rc:
                return rc
        return 0
    return E_OOM


cdef int enc_array(Node *c, int64_t base, int64_t size, Buf *out) noexcept nogil:
    """size varint, null bitmap (always present), then the non-null elements."""
    cdef int64_t nb = (size + 7) >> 3
    cdef int64_t hdr, k
    cdef int rc
    if buf_varint(out, <uint64_t> size) or buf_reserve(out, nb):
        return E_OOM
    hdr = out.len
    zero_small(out.data + hdr, nb)
    out.len += nb
    for k in range(size):
        if not is_valid(c, base + k):
            if not c.nullable:
                return E_NOT_NULL
            out.data[hdr + (k >> 3)] |= <uint8_t> (1 << (k & 7))
        else:
            rc = enc_value(c, base + k, out)
            if rc:
                return rc
    return 0


cdef int enc_row(Node *n, int64_t j, Buf *out, int *errcol) noexcept nogil:
    """Null header of ceil(arity/8) bytes, then the non-null fields."""
    cdef int64_t idx = n.off + j
    cdef int64_t nb = (n.nchild + 7) >> 3
    cdef int64_t hdr
    cdef int f, rc
    if buf_reserve(out, nb):
        return E_OOM
    hdr = out.len
    zero_small(out.data + hdr, nb)
    out.len += nb
    for f in range(n.nchild):
        if not is_valid(&n.child[f], idx):
            if not n.child[f].nullable:
                if errcol != NULL:
                    errcol[0] = f
                return E_NOT_NULL
            out.data[hdr + (f >> 3)] |= <uint8_t> (1 << (f & 7))
        else:
            rc = enc_value(&n.child[f], idx, out)
            if rc:
                if errcol != NULL:
                    errcol[0] = f
                return rc
    return 0


cdef class BlockEncoder:
    """Serializes Arrow rows into uncompressed Paimon blocks.

    The flush rule is Java's: after each row, a block is finished when
    ``row bytes + 4 * rows + 4 >= block_size``.
    """
    cdef Node root
    cdef Buf rows
    cdef Buf offs
    cdef int64_t nrows
    cdef int64_t block_size
    cdef object schema
    cdef ColStats *stats    # one per top-level field, or NULL: no statistics
    cdef int nstats

    def __cinit__(self, row_type, int64_t block_size, stats=None):
        """``stats``: None, or per top-level field 0 (nothing), 1 (its null
        count) or 2 (null count, min and max; a kind Paimon does not order
        gets its null count only): see statistics()."""
        cdef int i
        memset(&self.root, 0, sizeof(Node))
        plan_init(&self.root, row_type)
        if block_size < 1 or block_size > INT32_MAX:
            raise ValueError(f"block_size must be in [1, {INT32_MAX}], got {block_size}")
        self.block_size = block_size
        self.nrows = 0
        if stats is not None:
            modes = list(stats)
            if len(modes) != self.root.nchild:
                raise ValueError(f"{len(modes)} stats modes for {self.root.nchild} fields")
            self.stats = <ColStats *> calloc(max(1, self.root.nchild), sizeof(ColStats))
            if self.stats == NULL:
                raise MemoryError()
            self.nstats = self.root.nchild
            for i in range(self.nstats):
                if modes[i] not in (ST_NONE, ST_COUNTS, ST_MINMAX):
                    raise ValueError(f"stats mode {modes[i]!r} of field {i} is not 0, 1 or 2")
                self.stats[i].mode = modes[i]
                if modes[i] == ST_MINMAX and not stats_kind_orders(&self.root.child[i]):
                    self.stats[i].mode = ST_COUNTS

    def __dealloc__(self):
        cdef int i
        plan_free(&self.root)
        buf_free(&self.rows)
        buf_free(&self.offs)
        for i in range(self.nstats):
            buf_free(&self.stats[i].bmin)
            buf_free(&self.stats[i].bmax)
        free(self.stats)

    def statistics(self):
        """The statistics of every row encoded so far, per top-level field
        (None when none were asked): see stats_result in _rowcodec_stats.pxi."""
        if self.stats == NULL:
            return None
        return [stats_result(&self.root.child[i], &self.stats[i]) for i in range(self.nstats)]

    @property
    def pending_rows(self):
        return self.nrows

    cdef object _finish_block(self):
        cdef int64_t size = self.rows.len + 4 * self.nrows + 4
        cdef object out = PyBytes_FromStringAndSize(NULL, size)
        cdef uint8_t *p = <uint8_t *> PyBytes_AS_STRING(out)
        if self.rows.len:
            memcpy(p, self.rows.data, self.rows.len)
        if self.nrows:
            memcpy(p + self.rows.len, self.offs.data, 4 * self.nrows)
        rf_st_i32(p + size - 4, <int32_t> self.nrows)
        self.rows.len = 0
        self.offs.len = 0
        self.nrows = 0
        return out

    def encode(self, batch, list blocks):
        """Encodes every row of ``batch`` (already in the canonical Arrow
        layout), appending finished blocks (bytes) to ``blocks``.

        Returns None, or ``(row, column, message)`` for the first row that
        failed; rows before it are encoded, the failed one is not.
        """
        cdef object caps = batch.__arrow_c_array__()
        cdef ArrowArray *arr = <ArrowArray *> PyCapsule_GetPointer(caps[1], "arrow_array")
        cdef int64_t r, start, n = arr.length
        cdef int rc = 0
        cdef int errcol = -1
        cdef int f
        cdef int32_t start32
        plan_bind(&self.root, arr)
        r = 0
        while r < n:
            with nogil:
                while r < n:
                    start = self.rows.len
                    if start > INT32_MAX:
                        rc = E_ROW_TOO_BIG
                        break
                    start32 = <int32_t> start
                    if buf_put(&self.offs, &start32, 4):
                        rc = E_OOM
                        break
                    rc = enc_row(&self.root, r, &self.rows, &errcol)
                    if rc:
                        self.rows.len = start
                        self.offs.len -= 4
                        break
                    self.nrows += 1
                    r += 1
                    if self.rows.len + 4 * self.nrows + 4 >= self.block_size:
                        break
            if rc:
                return (r, errcol, error_message(rc))
            if self.nrows and self.rows.len + 4 * self.nrows + 4 >= self.block_size:
                blocks.append(self._finish_block())
        if self.stats != NULL:
            # column by column over the batch just encoded: tight loops over
            # one Arrow buffer each (cheaper than a branch per value in enc_row)
            with nogil:
                for f in range(self.nstats):
                    rc = stats_collect(&self.root.child[f], &self.stats[f], self.root.off,
                                       self.root.off + n)
                    if rc:
                        break
            if rc:
                raise MemoryError()
        return None

    def flush(self):
        """The partial block as bytes, or None when no row is pending."""
        if self.nrows == 0:
            return None
        return self._finish_block()
