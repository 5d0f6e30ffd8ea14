# Included by _rowcodec.pyx. The decoder, row bytes -> Arrow: the per-node
# builders (bld_*), the bounds-checked dec_* functions that parse one row into
# them, the UTF-8 check of new string bytes, bld_finish that hands the buffers
# to Arrow, and the Python classes Block (one decompressed block) and
# RowDecoder (rows of blocks into a RecordBatch, or one row into a tuple).

cdef inline int bld_slot(Node *n, bint valid) noexcept nogil:
    """Records the validity of the slot just appended to n. Until the first
    null the bitmap is not written at all (most columns have no nulls, and
    Arrow takes no bitmap then); the first null fills it in. The common case
    is kept this small so that the compiler inlines it."""
    if valid and n.bnull == 0:
        n.blen += 1
        return 0
    return bld_slot_bitmap(n, valid)


cdef int bld_slot_bitmap(Node *n, bint valid) noexcept nogil:
    if n.bnull == 0 and bld_bits_fill(n):
        return E_OOM
    if (n.blen & 7) == 0:
        if buf_reserve(&n.bits, 1):
            return E_OOM
        n.bits.data[n.bits.len] = 0
        n.bits.len += 1
    if valid:
        n.bits.data[n.blen >> 3] |= <uint8_t> (1 << (n.blen & 7))
    else:
        n.bnull += 1
    n.blen += 1
    return 0


cdef int bld_bits_fill(Node *n) noexcept nogil:
    """Writes the bitmap of the blen valid slots so far: ceil(blen / 8)
    bytes, all ones up to blen."""
    cdef int64_t full = n.blen >> 3
    cdef int64_t nbytes = (n.blen + 7) >> 3
    n.bits.len = 0
    if buf_reserve(&n.bits, nbytes + 1):
        return E_OOM
    memset(n.bits.data, 0xFF, full)
    if nbytes > full:
        n.bits.data[full] = <uint8_t> ((1 << (n.blen & 7)) - 1)
    n.bits.len = nbytes
    return 0


cdef inline int bld_bit(Buf *b, int64_t i, bint v) noexcept nogil:
    """Sets bit i (the next one) of a bit-packed values buffer (BOOLEAN)."""
    if (i & 7) == 0:
        if buf_reserve(b, 1):
            return E_OOM
        b.data[b.len] = 0
        b.len += 1
    if v:
        b.data[i >> 3] |= <uint8_t> (1 << (i & 7))
    return 0


cdef inline int _width(int kind) noexcept nogil:
    if kind == K_I8:
        return 1
    if kind == K_I16:
        return 2
    if kind in (K_I32, K_F32):
        return 4
    if kind in (K_I64, K_F64, K_TIME, K_TS_NANO):
        return 8
    if kind in (K_DEC64, K_DEC128):
        return 16
    return 0


cdef inline int bld_offset(Node *n, int64_t value) noexcept nogil:
    """Appends an end offset: int32, or int64 for LARGE_BINARY."""
    cdef int32_t v32
    if n.kind != K_LBIN and value <= INT32_MAX and n.offs.len + 4 <= n.offs.cap:
        v32 = <int32_t> value
        memcpy(n.offs.data + n.offs.len, &v32, 4)
        n.offs.len += 4
        return 0
    return bld_offset_grow(n, value)


cdef int bld_offset_grow(Node *n, int64_t value) noexcept nogil:
    cdef int32_t v32
    if n.kind == K_LBIN:
        return buf_put_fixed(&n.offs, <uint8_t *> &value, 8)
    if value > INT32_MAX:
        return E_BATCH_TOO_BIG
    v32 = <int32_t> value
    return buf_put_fixed(&n.offs, <uint8_t *> &v32, 4)


cdef int dec_empty(Node *n, bint valid) noexcept nogil:
    """Appends a placeholder slot: a null (valid=0), or for the children of a
    null struct or vector, a zero value marked valid when the field is NOT NULL."""
    cdef int w = _width(n.kind)
    cdef int i, rc
    cdef int64_t k
    if w:
        if buf_reserve(&n.vals, w):
            return E_OOM
        zero_small(n.vals.data + n.vals.len, w)
        n.vals.len += w
    elif n.kind == K_BOOL:
        if bld_bit(&n.vals, n.blen, 0):
            return E_OOM
    elif n.kind in (K_BIN, K_STR, K_LBIN):
        if bld_offset(n, n.vals.len):
            return E_OOM
    elif n.kind in (K_LIST, K_MAP):
        if bld_offset(n, n.child[0].blen):
            return E_OOM
    elif n.kind in (K_ROW, K_VARIANT):
        for i in range(n.nchild):
            rc = dec_empty(&n.child[i], not n.child[i].nullable)
            if rc:
                return rc
    elif n.kind == K_VECTOR:
        for k in range(n.fixed):
            rc = dec_empty(&n.child[0], 1)
            if rc:
                return rc
    return bld_slot(n, valid)


cdef inline int dec_fixed(Node *n, const uint8_t *b, int64_t *pos, int64_t end, bint store,
                          int w) noexcept nogil:
    cdef int64_t p = pos[0]
    if p + w > end:
        return E_TRUNC
    pos[0] = p + w
    if store:
        if buf_put_fixed(&n.vals, b + p, w):
            return E_OOM
        return bld_slot(n, 1)
    return 0


cdef inline int dec_len(const uint8_t *b, int64_t *p, int64_t end, int64_t *ln) noexcept nogil:
    """A length varint whose bytes must follow within end."""
    cdef int rc = rf_read_len(b, p, end, ln)
    if rc:
        return E_TRUNC if rc == -1 else E_VARINT
    if ln[0] > end - p[0]:
        return E_TRUNC
    return 0


cdef inline int dec_bytes(Node *n, const uint8_t *b, int64_t *pos, int64_t end, int64_t lim,
                          bint store) noexcept nogil:
    """A STRING, BINARY or BLOB value."""
    cdef int64_t p = pos[0]
    cdef int64_t ln
    cdef int rc
    cdef int kind = n.kind
    rc = dec_len(b, &p, end, &ln)
    if rc:
        return rc
    pos[0] = p + ln
    if not store:   # a walk still checks strings, short ASCII ones fast
        if kind != K_STR or (ln <= RF_PAD and p + RF_PAD <= lim and rf_ascii_padded(b + p, ln)) \
                or rf_utf8_valid(b + p, ln):
            return 0
        return E_UTF8
    # Stored strings are checked as UTF-8 once per decode() call, all
    # together (plan_check_utf8): most text is ASCII, which one pass over
    # the column's new bytes shows faster than a check per string.
    if ln <= RF_PAD and p + RF_PAD <= lim:   # short, and not at the block's very end
        if buf_reserve(&n.vals, RF_PAD):
            return E_OOM
        rf_copy_padded(n.vals.data + n.vals.len, b + p)
        n.vals.len += ln
    elif buf_put(&n.vals, b + p, ln):
        return E_OOM
    if bld_offset(n, n.vals.len):
        return E_BATCH_TOO_BIG if n.vals.len > INT32_MAX else E_OOM
    return bld_slot(n, 1)


cdef inline int dec_bool(Node *n, const uint8_t *b, int64_t *pos, int64_t end, bint store) noexcept nogil:
    cdef int64_t p = pos[0]
    if p + 1 > end:
        return E_TRUNC
    pos[0] = p + 1
    if store:
        if bld_bit(&n.vals, n.blen, b[p] != 0):
            return E_OOM
        return bld_slot(n, 1)
    return 0


cdef inline int dec_decimal(Node *n, const uint8_t *b, int64_t *pos, int64_t end, bint store) noexcept nogil:
    """A DECIMAL: an int64 (compact, precision <= 18) or big-endian bytes."""
    cdef int64_t p = pos[0]
    cdef int64_t ln
    cdef rf_i128 d
    cdef int rc
    if n.kind == K_DEC64:
        if p + 8 > end:
            return E_TRUNC
        d = <rf_i128> rf_ld_i64(b + p)
        pos[0] = p + 8
    else:
        rc = dec_len(b, &p, end, &ln)
        if rc:
            return rc
        if ln == 0:
            return E_DEC_EMPTY
        pos[0] = p + ln
        if rf_be_to_i128(b + p, ln, &d):
            return E_DEC_OVERFLOW
    if not rf_dec_fits(d, n.precision):
        return E_DEC_OVERFLOW
    if store:
        if buf_reserve(&n.vals, 16):
            return E_OOM
        rf_st_i128(n.vals.data + n.vals.len, d)
        n.vals.len += 16
        return bld_slot(n, 1)
    return 0


cdef inline int bld_list_end(Node *n, bint store) noexcept nogil:
    """Ends a stored LIST or MAP value: its end offset into the (first) child, its slot."""
    if not store:
        return 0
    if bld_offset(n, n.child[0].blen):
        return E_OOM
    return bld_slot(n, 1)


cdef inline int dec_list(Node *n, const uint8_t *b, int64_t *pos, int64_t end, int64_t lim,
                         bint store) noexcept nogil:
    cdef int64_t size
    cdef int rc = dec_array(&n.child[0], b, pos, end, lim, store, &size, 1)
    if rc:
        return rc
    return bld_list_end(n, store)


cdef inline int dec_field(Node *n, const uint8_t *b, int64_t *pos, int64_t end, int64_t lim,
                          bint store) noexcept nogil:
    """dec_value, with the commonest kinds (fixed widths stored as their
    bytes, strings, booleans, compact decimals, arrays) decoded inline in
    the row and array loops, without dec_value's call and switch."""
    if n.plain:
        return dec_fixed(n, b, pos, end, store, n.plain)
    if n.kind == K_STR or n.kind == K_BIN:
        return dec_bytes(n, b, pos, end, lim, store)
    if n.kind == K_BOOL:
        return dec_bool(n, b, pos, end, store)
    if n.kind == K_DEC64:
        return dec_decimal(n, b, pos, end, store)
    if n.kind == K_LIST:
        return dec_list(n, b, pos, end, lim, store)
    return dec_value(n, b, pos, end, lim, store)


cdef int dec_value(Node *n, const uint8_t *b, int64_t *pos, int64_t end, int64_t lim, bint store) noexcept nogil:
    """Parses one non-null value at b[*pos:end]; appends it when store."""
    cdef int64_t p = pos[0]
    cdef int64_t ln, k, ms, v
    cdef uint64_t u
    cdef rf_i128 d
    cdef int rc
    cdef int kind = n.kind
    if n.plain:
        return dec_fixed(n, b, pos, end, store, n.plain)
    # from here on, comparisons of kind only: Cython makes the chain a C switch
    if kind == K_STR or kind == K_BIN or kind == K_LBIN:
        return dec_bytes(n, b, pos, end, lim, store)
    elif kind == K_I32:   # TIME(p <= 3): Arrow rejects values outside one day
        if p + 4 > end:
            return E_TRUNC
        if <uint64_t> <int64_t> rf_ld_i32(b + p) >= 86400000:
            return E_TIME_RANGE
        return dec_fixed(n, b, pos, end, store, 4)
    elif kind == K_BOOL:
        return dec_bool(n, b, pos, end, store)
    elif kind == K_DEC64 or kind == K_DEC128:
        return dec_decimal(n, b, pos, end, store)
    elif kind == K_TS_NANO:
        if p + 8 > end:
            return E_TRUNC
        ms = rf_ld_i64(b + p)
        p += 8
        rc = rf_read_uvarint(b, &p, end, 5, &u)
        if rc:
            return E_TRUNC if rc == -1 else E_VARINT
        if u > 999999:
            return E_NANO
        pos[0] = p
        if store:
            if rf_ts_units(ms, n.upm, <int64_t> u // n.npu, &v):
                return E_TS_RANGE
            if buf_put_fixed(&n.vals, <uint8_t *> &v, 8):
                return E_OOM
            return bld_slot(n, 1)
        return 0
    elif kind == K_TIME:
        if p + 4 > end:
            return E_TRUNC
        if <uint64_t> <int64_t> rf_ld_i32(b + p) >= 86400000:
            return E_TIME_RANGE
        pos[0] = p + 4
        if store:
            v = <int64_t> rf_ld_i32(b + p) * n.upm
            if buf_put_fixed(&n.vals, <uint8_t *> &v, 8):
                return E_OOM
            return bld_slot(n, 1)
        return 0
    elif kind == K_LIST:
        return dec_list(n, b, pos, end, lim, store)
    elif kind == K_ROW or kind == K_VARIANT:
        if kind == K_ROW:
            rc = dec_row(n, b, pos, end, lim, store, NULL)
        else:
            rc = dec_value(&n.child[0], b, pos, end, lim, store)
            if rc == 0:
                rc = dec_value(&n.child[1], b, pos, end, lim, store)
        if rc == 0 and store:
            rc = bld_slot(n, 1)
        return rc
    elif kind == K_MAP:
        rc = dec_array(&n.child[0], b, pos, end, lim, store, &ln, 0)
        if rc:
            return rc
        rc = dec_array(&n.child[1], b, pos, end, lim, store, &k, 1)
        if rc:
            return rc
        if ln != k:
            return E_MAP_SIZE
        return bld_list_end(n, store)
    elif kind == K_VECTOR:
        rc = rf_read_len(b, &p, end, &ln)
        if rc:
            return E_TRUNC if rc == -1 else E_VARINT
        if ln != n.fixed:
            return E_VECTOR_SIZE
        pos[0] = p
        for k in range(ln):
            rc = dec_value(&n.child[0], b, pos, end, lim, store)
            if rc:
                return rc
        if store:
            return bld_slot(n, 1)
        return 0
    return E_OOM


cdef int dec_array(Node *c, const uint8_t *b, int64_t *pos, int64_t end, int64_t lim, bint store,
                   int64_t *size_out, bint nulls_ok) noexcept nogil:
    cdef int64_t p = pos[0]
    cdef int64_t size, nb, k
    cdef const uint8_t *bitmap
    cdef int rc
    rc = rf_read_len(b, &p, end, &size)
    if rc:
        return E_TRUNC if rc == -1 else E_VARINT
    nb = (size + 7) >> 3
    if nb > end - p:
        return E_TRUNC
    bitmap = b + p
    pos[0] = p + nb
    size_out[0] = size
    for k in range(size):
        if (bitmap[k >> 3] >> (k & 7)) & 1:
            if not c.nullable:
                return E_NOT_NULL
            if store:
                if not nulls_ok:
                    return E_NULL_KEY
                rc = charge_empty(c)
                if rc:
                    return rc
                rc = dec_empty(c, 0)
                if rc:
                    return rc
        else:
            rc = dec_field(c, b, pos, end, lim, store)
            if rc:
                return rc
    return 0


cdef int dec_row(Node *n, const uint8_t *b, int64_t *pos, int64_t end, int64_t lim, bint store,
                 int *errcol) noexcept nogil:
    cdef int64_t nb = (n.nchild + 7) >> 3
    cdef const uint8_t *hdr
    cdef int f, rc
    cdef Node *c
    if nb > end - pos[0]:
        return E_TRUNC
    hdr = b + pos[0]
    pos[0] += nb
    for f in range(n.nchild):
        c = &n.child[f]
        if (hdr[f >> 3] >> (f & 7)) & 1:
            if not c.nullable:
                if errcol != NULL:
                    errcol[0] = f
                return E_NOT_NULL
            if store and c.store:
                rc = charge_empty(c)
                if rc == 0:
                    rc = dec_empty(c, 0)
                if rc:
                    if errcol != NULL:
                        errcol[0] = f
                    return rc
        else:
            rc = dec_field(c, b, pos, end, lim, store and c.store)
            if rc:
                if errcol != NULL:
                    errcol[0] = f
                return rc
    return 0


cdef int plan_check_utf8(Node *n) noexcept nogil:
    """Checks the STRING values stored under n since the last check as UTF-8
    (E_UTF8 if one is not): one ASCII pass over each column's new bytes, and
    past the first non-ASCII byte, value by value between their offsets."""
    cdef int i
    cdef int64_t k, q, count
    cdef const int32_t *ends
    for i in range(n.nchild):
        if plan_check_utf8(&n.child[i]):
            return E_UTF8
    if n.kind != K_STR or n.vals.len == n.vchecked:
        return 0
    count = n.offs.len // 4 - 1
    q = n.vchecked + rf_ascii_run(n.vals.data + n.vchecked, n.vals.len - n.vchecked)
    if q < n.vals.len:
        ends = (<const int32_t *> n.offs.data) + 1
        for k in range(n.kchecked, count):
            if ends[k] > q and not rf_utf8_valid(n.vals.data + ends[k - 1], ends[k] - ends[k - 1]):
                return E_UTF8
    n.vchecked = n.vals.len
    n.kchecked = count
    return 0


# Finishing builders into Arrow arrays (ownership moves to the ArrowArray).

cdef ArrowArray *bld_finish(Node *n) noexcept nogil:
    """Moves n's builders into a new ArrowArray (NULL when out of memory)."""
    cdef ArrowArray *a
    cdef ArrowArray *entries
    cdef int i
    cdef int nbuf = 2
    cdef int nch = 0
    if n.kind in (K_BIN, K_STR, K_LBIN):
        nbuf = 3
    elif n.kind in (K_ROW, K_VARIANT, K_VECTOR):
        nbuf = 1
    if n.kind in (K_ROW, K_VARIANT):
        nch = n.nchild
    elif n.kind in (K_LIST, K_MAP, K_VECTOR):
        nch = 1
    a = rf_arrow_new(nbuf, nch)
    if a == NULL:
        return NULL
    a.length = n.blen
    a.null_count = n.bnull
    if n.bnull:
        a.buffers[0] = buf_take(&n.bits)
    else:
        buf_free(&n.bits)
    if n.kind in (K_BIN, K_STR, K_LBIN):
        a.buffers[1] = buf_take(&n.offs)
        a.buffers[2] = buf_take(&n.vals)
    elif n.kind in (K_LIST, K_MAP):
        a.buffers[1] = buf_take(&n.offs)
    elif nbuf == 2:
        a.buffers[1] = buf_take(&n.vals)
    if n.kind in (K_ROW, K_VARIANT):
        for i in range(n.nchild):
            a.children[i] = bld_finish(&n.child[i])
    elif n.kind in (K_LIST, K_VECTOR):
        a.children[0] = bld_finish(&n.child[0])
    elif n.kind == K_MAP:
        entries = rf_arrow_new(1, 2)
        if entries != NULL:
            entries.length = n.child[0].blen
            entries.children[0] = bld_finish(&n.child[0])
            entries.children[1] = bld_finish(&n.child[1])
            if entries.children[0] == NULL or entries.children[1] == NULL:
                rf_arrow_release(entries)
                free(entries)
                entries = NULL
        a.children[0] = entries
    for i in range(nch):
        if a.children[i] == NULL:
            rf_arrow_release(a)
            free(a)
            return NULL
    return a


cdef struct BlockView:
    # what decoding reads of a Block, so that a batch's rows can be decoded
    # from several blocks with the GIL released (decode_gather)
    const uint8_t *ptr
    int64_t size
    int64_t num_rows
    const uint8_t *offsets
    int64_t data_end


cdef inline int row_span(const BlockView *b, int64_t i, int64_t *start, int64_t *end) noexcept nogil:
    cdef int64_t s = rf_ld_i32(b.offsets + 4 * i)
    cdef int64_t e = rf_ld_i32(b.offsets + 4 * (i + 1)) if i + 1 < b.num_rows else b.data_end
    if s < 0 or s > e or e > b.data_end:
        return -1
    start[0] = s
    end[0] = e
    return 0


@cython.final
@cython.no_gc_clear    # tp_clear would leave v pointing into a freed offsets_owner
cdef class Block:
    """A decompressed block: its bytes, row count and offset array, checked
    once so that row access is plain arithmetic.

    ``offsets`` and ``data_end`` describe the rows of a block's decompressed
    prefix instead (PrefixBlock): the row starts found by walking its rows,
    in native int32s, and where the last of them ends."""
    cdef BlockView v
    cdef object offsets_owner
    cdef Held held              # data's buffer, hidden from the collector (_held.pxd)

    def __cinit__(self, data, bytes offsets=None, int64_t data_end=-1):
        held_get(&self.held, data)
        self.v.ptr = <const uint8_t *> self.held.view.buf
        cdef int64_t n = self.held.view.len
        cdef int64_t rc
        self.v.size = n
        if offsets is not None:
            if not 0 <= data_end <= n:
                raise ValueError(f"data_end {data_end} outside the block's {n} bytes")
            self.offsets_owner = offsets
            self.v.offsets = <const uint8_t *> PyBytes_AS_STRING(offsets)
            self.v.num_rows = len(offsets) // 4
            self.v.data_end = data_end
            return
        if n < 4:
            raise CorruptFileError(f"block of {n} bytes is shorter than its 4-byte row count")
        rc = rf_ld_i32(self.v.ptr + n - 4)
        if rc < 0 or 4 * rc > n - 4:
            raise CorruptFileError(f"block of {n} bytes cannot hold its declared {rc} rows")
        self.v.num_rows = rc
        self.v.data_end = n - 4 - 4 * rc
        self.v.offsets = self.v.ptr + self.v.data_end

    def __dealloc__(self):
        held_release(&self.held)

    @property
    def data(self):
        """The block's bytes: the object given."""
        return held_obj(&self.held)

    @property
    def num_rows(self):
        return self.v.num_rows

    @property
    def nbytes(self):
        return self.held.view.len


# Expansion. A null costs one bit in the file, but dec_empty appends its full
# Arrow width: n values for a null VECTOR<T, n>, every field for a null ROW,
# 8 bytes and a validity bit for a null BIGINT in an array. So a few bytes of
# rows could ask for gigabytes (16 one-byte rows of a null VECTOR<BIGINT,
# 7000000>: 896 MB). Every placeholder is charged (charge_empty; in bits,
# Node.empty_cost) before it is appended, against:
#
# 1. the row's own credit: EXPAND_PER_BYTE (16) bytes per byte of the row
#    (its span plus its 4-byte offset slot), plus the schema's null width
#    (the placeholders of a row whose selected top-level fields are all null)
#    up to max_row_size / NULL_WIDTH_DIVISOR (64 KiB by default) per row;
# 2. beyond that, a reserve of max_row_size bytes shared by all the rows one
#    call decodes (read, take, one iter_batches iteration, verify: a Reserve
#    the reader passes to decode; without one, each batch has its own);
# 3. and, as before, no row adds more than max_row_size.
#
# Why these. (1) A call's placeholders are then at most 16 x the row bytes
# it decoded + rows x min(null width, 64 KiB) + max_row_size: bounded by the
# input (whose decompressed size max_block_size bounds per block), and 16 x
# is twice what non-null values can grow by (a 2-byte DECIMAL is 16 bytes in
# Arrow). The null width term is what files that writers produce need: a
# null VECTOR<DOUBLE, 1000> column is 8 KB of placeholders per row for 5
# bytes of row and offset, which no fixed ratio allows, yet N rows of that
# schema cost N x 8 KB in Arrow whatever the file holds; past 64 KiB (the
# 56 MB a row above) a row's width is not taken on trust. 16 per byte pays
# for arrays whose nulls are not nearly all of them (a null BIGINT element
# is 65 bits; 16 x the 8 bytes of each present element covers it up to 95%
# nulls); rarer files, mostly nulls of wide values, live on the reserve.
# (2) A reserve per call, not per batch or per row: read() decodes many
# batches, and a file of many small blocks would otherwise get max_row_size
# again for each. The rows' shortfalls add up the same in any order, so
# whether a call fails does not depend on threads or batch sizes: verify()
# (one call over the whole file) fails exactly when read() does. A row that
# fails gives back what it drew. The cost per value is unchanged: one
# subtraction per null placeholder, as before; a row past its credit pays
# an atomic add per placeholder, and a few instructions per row set its
# credit.

cdef enum:
    EXPAND_PER_BYTE = 16        # placeholder bytes a row's byte pays for
    NULL_WIDTH_DIVISOR = 1024   # a row's null width is credited up to max_row_size / this
    PY_PER_BYTE = 16            # decode_row: Python bytes a row's byte pays for
    MAX_DRAWS = 65536           # rows of one decode() whose draws are recorded one by one


@cython.final
cdef class Reserve:
    """The placeholder bytes, beyond what their own bytes pay for, that the
    rows of one call may add together (see "Expansion" above). Shared by the
    call's decoders, on any threads."""
    cdef int64_t left           # in bits, as the budget counts
    cdef readonly int64_t size

    def __cinit__(self, int64_t size):
        self.size = size
        self.left = 8 * max(0, min(size, <int64_t> 1 << 59))

    @property
    def remaining(self):
        """Bytes left (rounded down)."""
        return rf_atomic_add(&self.left, 0) // 8


def scan_buffers(int delta):
    """A scan on the pool starts (1) or ends (-1). While one runs, the large
    buffers of the batches its caller frees go to the next batches, whichever
    pool thread decodes them, not back to the arena of the thread that
    decoded them (src/include/rf_arrow.h)."""
    rf_stash_scan(delta)


@cython.final   # _decode_one is called per row: a direct call, not through a vtable
cdef class RowDecoder:
    """Decodes rows of blocks under a schema, into Arrow (selected columns,
    in the given order) or into Python tuples."""
    cdef Node root
    cdef list columns
    cdef list names
    cdef object arrow_schema
    cdef int64_t pending
    cdef Budget bud
    cdef int64_t null_width     # placeholder bits of a row whose stored top-level fields are null
    cdef int64_t limit          # max_row_size as decode() found it, at most 2^59
    cdef int64_t credit_base    # a row's credit (bits) but for its bytes (set by decode())
    cdef int64_t own_reserve    # the reserve (bits) of decode() calls given none: one per batch
    cdef int64_t *draws         # (position, bytes) of the rows that drew from the reserve
    cdef int64_t ndraws, cap_draws
    cdef int64_t failed_at      # the position of the row a failing _decode stopped at
    cdef public int64_t max_row_size
    """Rows whose bytes exceed this (0: no limit) are not decoded; it also
    bounds the null placeholders rows may add to the Arrow builders, and the
    Python values of decode_row (see "Expansion")."""

    def __cinit__(self, row_type, columns, arrow_schema):
        """columns: top-level field positions to output, in output order."""
        cdef int i
        memset(&self.root, 0, sizeof(Node))
        self.names = []
        plan_init(&self.root, row_type, self.names)
        self.columns = list(columns)
        for i in range(self.root.nchild):
            self.root.child[i].store = 1 if i in self.columns else 0
        self.arrow_schema = arrow_schema
        self.pending = 0
        self.max_row_size = 0
        self.limit = 0
        plan_costs(&self.root, &self.bud)
        self.null_width = 0
        for i in range(self.root.nchild):
            if self.root.child[i].store:
                self.null_width = min(self.null_width + self.root.child[i].empty_cost, 1 << 50)
        self.own_reserve = -1   # filled on the first decode
        self.draws = NULL
        self.ndraws = self.cap_draws = 0

    def __dealloc__(self):
        plan_free(&self.root)
        free(self.draws)

    @property
    def pending_rows(self):
        return self.pending

    cdef int _decode_one(self, const BlockView *block, int64_t i, int *errcol, bint store) noexcept nogil:
        cdef int64_t s, e, pos, credit
        cdef int64_t limit = self.limit
        cdef int rc, f
        if row_span(block, i, &s, &e):
            errcol[0] = -1
            return E_TRUNC
        errcol[0] = -1
        if limit > 0 and e - s > limit:
            return E_ROW_LIMIT
        if limit > 0:
            # the row's credit (bits): its bytes and offset slot, and the schema's null width
            credit = self.credit_base + 8 * EXPAND_PER_BYTE * (e - s)
            if credit > 8 * limit:
                credit = 8 * limit
            self.bud.left = credit
            self.bud.room = 8 * limit - credit
        else:
            self.bud.left = <int64_t> 1 << 62
            self.bud.room = 0
        self.bud.drawn = 0
        pos = s
        rc = dec_row(&self.root, block.ptr, &pos, e, block.size, store, errcol)
        if rc == 0 and pos != e:
            errcol[0] = -2
            rc = -100
        if rc and self.bud.drawn and self.bud.reserve != NULL:   # a failing row gives back what it drew
            rf_atomic_add(self.bud.reserve, self.bud.drawn)
            self.bud.drawn = 0
        return rc

    cdef int _note_draw(self, int64_t k) noexcept nogil:
        """Records that the row at position k of this decode() drew
        bud.drawn bytes, to give back if a later check (UTF-8, done once per
        decode) fails the batch at or before it. At most MAX_DRAWS records:
        past that, draws join the last one (giving back is then approximate;
        it matters only to verify, which goes on after a failing row)."""
        cdef int64_t *p
        cdef int64_t cap
        if self.ndraws == MAX_DRAWS:
            self.draws[2 * self.ndraws - 1] += self.bud.drawn
            return 0
        if self.ndraws == self.cap_draws:
            cap = 16 if self.cap_draws == 0 else 2 * self.cap_draws
            p = <int64_t *> realloc(self.draws, cap * 2 * sizeof(int64_t))
            if p == NULL:
                return E_OOM
            self.draws = p
            self.cap_draws = cap
        self.draws[2 * self.ndraws] = k
        self.draws[2 * self.ndraws + 1] = self.bud.drawn
        self.ndraws += 1
        return 0

    cdef void _give_back(self, int64_t k) noexcept nogil:
        """Gives back what the rows at positions >= k of this decode() drew."""
        cdef int64_t j
        for j in range(self.ndraws):
            if self.draws[2 * j] >= k and self.bud.reserve != NULL:
                rf_atomic_add(self.bud.reserve, self.draws[2 * j + 1])
        self.ndraws = 0

    cdef int64_t _rows(self, const BlockView *const *blocks, const int64_t *which,
                       const int64_t *rows, int64_t start, int64_t n,
                       bint store, int64_t *i, int *errcol, int *rc) noexcept nogil:
        """Decodes (or with store=0 walks) rows[:n], or start + 0..n-1 when
        rows is NULL, of blocks[which[k]] (blocks[0] when which is NULL),
        until one fails (rc, its row i, errcol). Returns the index in 0..n-1
        of the failing row, or n - 1."""
        cdef int64_t k
        cdef const BlockView *block = blocks[0]
        rc[0] = 0
        for k in range(n):
            i[0] = rows[k] if rows != NULL else start + k
            if which != NULL:
                block = blocks[which[k]]
            if i[0] < 0 or i[0] >= block.num_rows:
                rc[0] = E_TRUNC
                return k
            rc[0] = self._decode_one(block, i[0], errcol, store)
            if rc[0]:
                return k
            if store:
                self.pending += 1
                if self.bud.drawn:
                    rc[0] = self._note_draw(k)
                    if rc[0]:
                        errcol[0] = -1
                        return k
        return n - 1

    def decode(self, Block block, const int64_t[::1] rows=None, int64_t start=0, int64_t stop=-1,
               Reserve reserve=None):
        """Appends rows of ``block``: the local row numbers ``rows`` if given,
        else ``start:stop``. ``reserve``: the call's shared placeholder
        reserve (see "Expansion"); without one, the batch (the rows decoded
        until finish) has its own of max_row_size bytes."""
        cdef const BlockView *one = &block.v
        cdef int64_t n
        cdef const int64_t *picked = NULL
        if rows is None:
            if stop < 0 or stop > block.v.num_rows:
                stop = block.v.num_rows
            n = stop - start if stop > start else 0
        else:
            n = rows.shape[0]
            if n:
                picked = &rows[0]
        self._decode(&one, NULL, picked, start, n, reserve)

    def decode_gather(self, list blocks, const int64_t[::1] which, const int64_t[::1] rows,
                      Reserve reserve=None):
        """Appends, in order, row ``rows[k]`` of block ``blocks[which[k]]``
        for each k (a random batch in the order asked, from the blocks its
        rows are in). A failing row's RowDecodeError carries ``block``, its
        position in ``blocks`` (a RowMemoryError too)."""
        cdef Py_ssize_t nb = len(blocks)
        cdef int64_t k, n = rows.shape[0]
        if which.shape[0] != n:
            raise ValueError("decode_gather: which and rows differ in length")
        if n == 0:
            return
        cdef const BlockView **views = <const BlockView **> malloc(max(nb, 1) * sizeof(BlockView *))
        if views == NULL:
            raise MemoryError()
        try:
            for k in range(nb):
                views[k] = &(<Block?> blocks[k]).v
            for k in range(n):
                if not 0 <= which[k] < nb:
                    raise ValueError(f"decode_gather: block {which[k]} outside [0, {nb})")
            self._decode(views, &which[0], &rows[0], 0, n, reserve)
        except (RowDecodeError, RowMemoryError) as e:
            e.block = which[self.failed_at]
            raise
        finally:
            free(views)

    cdef int _decode(self, const BlockView *const *blocks, const int64_t *which,
                     const int64_t *picked, int64_t start, int64_t n, Reserve reserve) except -1:
        cdef int64_t k, i, s, e, walk_i, walk_k
        cdef int rc = 0
        cdef int errcol = -1
        cdef int walk_rc, walk_col
        # the limit as the budget counts it (bits; a huge one cannot overflow)
        self.limit = min(self.max_row_size, <int64_t> 1 << 59)
        self.credit_base = 8 * EXPAND_PER_BYTE * 4 + min(self.null_width,
                                                         8 * (self.limit // NULL_WIDTH_DIVISOR))
        if self.limit <= 0:
            self.bud.reserve = NULL
        elif reserve is not None:
            self.bud.reserve = &reserve.left
        else:
            if self.own_reserve < 0:
                self.own_reserve = 8 * self.limit
            self.bud.reserve = &self.own_reserve
        self.ndraws = 0
        with nogil:
            k = self._rows(blocks, which, picked, start, n, 1, &i, &errcol, &rc)
            if plan_check_utf8(&self.root):
                # A stored string up to row k is not UTF-8: walk those rows
                # again without storing, which checks each string on its own
                # and stops at the first error of any kind, in row order.
                walk_rc = 0
                walk_k = self._rows(blocks, which, picked, start, min(k + 1, n), 0, &walk_i,
                                    &walk_col, &walk_rc)
                if walk_rc:
                    rc, i, errcol, k = walk_rc, walk_i, walk_col, walk_k
                elif rc == 0:   # cannot happen: the walk checks what the batch check did
                    rc, errcol = E_UTF8, -1
            if rc:
                # the rows from the failing one on are not decoded: their
                # draws go back (the failing row gave back its own)
                self._give_back(k)
            self.ndraws = 0
        if rc:
            self._reset()
            self.failed_at = k
            if rc == E_ROW_LIMIT:
                row_span(blocks[which[k] if which != NULL else 0], i, &s, &e)
                raise RowLimitError(f"row of {e - s} bytes is larger than max_row_size="
                                    f"{self.max_row_size}", i, None)
            if rc in (E_EXPAND_LIMIT, E_EXPAND_CALL):
                raise RowLimitError(expansion_message(rc, self.max_row_size), i,
                                    errcol if errcol >= 0 else None)
            if errcol == -2:
                raise RowDecodeError("the row's bytes do not match the schema: decoding "
                                     "ended before the row's end", i, None)
            raise _decode_error(rc, i, errcol if errcol >= 0 else None)
        return 0

    cdef void _reset(self):
        cdef int f
        for f in range(self.root.nchild):
            plan_reset_builders(&self.root.child[f])
        self.pending = 0
        self.own_reserve = -1   # the next batch gets a full one

    def finish(self):
        """The decoded rows as a RecordBatch; the builders start over."""
        cdef ArrowArray *top = rf_arrow_new(1, len(self.columns))
        cdef int k = 0
        cdef int f
        if top == NULL:
            raise MemoryError()
        top.length = self.pending
        for f in self.columns:
            top.children[k] = bld_finish(&self.root.child[f])
            if top.children[k] == NULL:
                rf_arrow_release(top)
                free(top)
                self._reset()
                raise MemoryError()
            k += 1
        self._reset()
        batch = pa.RecordBatch._import_from_c(<uintptr_t> top, self.arrow_schema)
        free(top)  # the struct's contents moved into the batch
        return batch

    def decode_row(self, Block block, int64_t i):
        """One row as a tuple of Python values (the types: the README's type mappings).

        The values' Python objects are charged before they are built (each
        array's elements when its size and null bitmap are read, a row's
        fields when its null header is) against PY_PER_BYTE (16) bytes per
        byte of the row and its offset slot, plus max_row_size: a list slot
        per bit of a null bitmap, or an empty dict per element of an
        ARRAY<ROW<>>, cannot make a small row take gigabytes."""
        cdef int64_t s, e, pos, left
        if i < 0 or i >= block.v.num_rows:
            raise RowDecodeError(f"row {i} outside the block's {block.v.num_rows} rows", i, None)
        if row_span(&block.v, i, &s, &e):
            raise RowDecodeError(error_message(E_TRUNC), i, None)
        if self.max_row_size > 0 and e - s > self.max_row_size:
            raise RowLimitError(f"row of {e - s} bytes is larger than max_row_size="
                                f"{self.max_row_size}", i, None)
        left = min(self.max_row_size, <int64_t> 1 << 59) + PY_PER_BYTE * (e - s + 4) \
            if self.max_row_size > 0 else (<int64_t> 1 << 62)
        pos = s
        try:
            values = py_row(&self.root, self.names, block.v.ptr, &pos, e, 1, &left)
        except _ValueError as exc:
            if exc.code == E_PY_LIMIT:
                raise RowLimitError(
                    f"the row's Python values would take more than max_row_size="
                    f"{self.max_row_size} bytes plus {PY_PER_BYTE} per byte of the row "
                    f"({e - s} bytes and its 4-byte offset): {exc.detail}", i, exc.column) from None
            raise RowDecodeError(error_message(exc.code), i, exc.column) from None
        except RowDecodeError as exc:   # a nested value's error names the column, not the row
            if exc.row is None:
                exc.row = i
            raise
        if pos != e:
            raise RowDecodeError("the row's bytes do not match the schema: decoding "
                                 "ended before the row's end", i, None)
        return values
