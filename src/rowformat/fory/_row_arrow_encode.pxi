# Included by _row.pyx. Arrow -> rows (encode_batch), nogil: abind binds the
# Node tree to the Arrow arrays, aenc_* write one row from them. Indices
# passed around are logical indices of the parent; each node adds its own
# a_off to reach its buffers.

cdef void abind(Node *n, ArrowArray *a, int64_t off) noexcept:
    cdef ArrowArray *ent
    n.a_off = off
    n.a_valid = <const uint8_t *> a.buffers[0] if a.n_buffers > 0 else NULL
    if n.kind == K_STRUCT:
        abind_struct_children(n, a, off)
    elif n.kind == K_LIST:
        n.a_offs = <const int32_t *> a.buffers[1]
        abind(&n.child[0], a.children[0], a.children[0].offset)
    elif n.kind == K_MAP:
        n.a_offs = <const int32_t *> a.buffers[1]
        ent = a.children[0]
        abind(&n.child[0], ent.children[0], ent.offset + ent.children[0].offset)
        abind(&n.child[1], ent.children[1], ent.offset + ent.children[1].offset)
    elif n.kind == K_STR or n.kind == K_BIN:
        n.a_offs = <const int32_t *> a.buffers[1]
        n.a_data = <const uint8_t *> a.buffers[2]
    else:
        n.a_data = <const uint8_t *> a.buffers[1]


cdef void abind_struct_children(Node *n, ArrowArray *a, int64_t off) noexcept:
    cdef int i
    for i in range(n.nchild):
        abind(&n.child[n.decl[i]], a.children[i], off + a.children[i].offset)


cdef int aenc_put_var(Buf *b, int64_t slot, int64_t base, int64_t start, int64_t size) noexcept nogil:
    cdef int64_t rel = start - base
    if rel > U32_MAX or size > U32_MAX:
        return E_TOO_BIG
    rf_st_i64(b.data + slot, <int64_t> ((<uint64_t> rel << 32) | <uint64_t> size))
    return 0


cdef int aenc_value(Node *n, int64_t i, Buf *b, int64_t slot, int64_t base) noexcept nogil:
    """Writes the non-null value at logical index i of node n."""
    cdef int64_t ph = i + n.a_off
    cdef int64_t s, e, start, m
    cdef int k = n.kind
    cdef int rc
    cdef uint8_t tmp[32]
    if k == K_BOOL:
        b.data[slot] = bit_get(n.a_data, ph)
    elif k <= K_DUR:
        memcpy(b.data + slot, n.a_data + ph * n.width, n.width)
    elif k == K_STR or k == K_BIN:
        s = n.a_offs[ph]
        e = n.a_offs[ph + 1]
        start = buf_zero(b, round8(e - s))
        if start < 0:
            return E_OOM
        if e > s:  # (Arrow may give a NULL data buffer when every value is empty)
            memcpy(b.data + start, n.a_data + s, e - s)
        return aenc_put_var(b, slot, base, start, e - s)
    elif k == K_DEC:
        start = buf_zero(b, 32)
        if start < 0:
            return E_OOM
        if n.dec256:
            memcpy(b.data + start, n.a_data + ph * 32, 32)
        else:
            memcpy(b.data + start, n.a_data + ph * 16, 16)
            memset(b.data + start + 16, 0xFF if (n.a_data[ph * 16 + 15] & 0x80) else 0, 16)
        # Arrow holds decimals past their precision (an unsafe cast, raw
        # buffers); such a row would not decode, so it is not written
        if not dec_fits(b.data + start, n.precision):
            return E_DEC_RANGE
        return aenc_put_var(b, slot, base, start, 32)
    elif k == K_LIST:
        start = b.len
        rc = aenc_array(&n.child[0], n.a_offs[ph], n.a_offs[ph + 1], b)
        if rc:
            return rc
        return aenc_put_var(b, slot, base, start, b.len - start)
    elif k == K_MAP:
        start = buf_zero(b, 8)
        if start < 0:
            return E_OOM
        rc = aenc_array(&n.child[0], n.a_offs[ph], n.a_offs[ph + 1], b)
        if rc:
            return rc
        rf_st_i64(b.data + start, b.len - start - 8)
        rc = aenc_array(&n.child[1], n.a_offs[ph], n.a_offs[ph + 1], b)
        if rc:
            return rc
        return aenc_put_var(b, slot, base, start, b.len - start)
    elif k == K_STRUCT:
        if n.inline_:
            return aenc_fields(n, i, b, slot, slot)
        start = buf_zero(b, n.fixed)
        if start < 0:
            return E_OOM
        rc = aenc_fields(n, i, b, start, start)
        if rc:
            return rc
        return aenc_put_var(b, slot, base, start, b.len - start)
    return 0


cdef int aenc_fields(Node *n, int64_t i, Buf *b, int64_t at, int64_t base) noexcept nogil:
    cdef int j, rc
    cdef Node *c
    for j in range(n.nchild):
        c = &n.child[j]
        if c.a_valid != NULL and not bit_get(c.a_valid, i + c.a_off):
            if not c.nullable or n.bitmap_bytes == 0:
                return E_NOT_NULL
            bit_set(b.data + at + n.bitmap_off, j)
        else:
            rc = aenc_value(c, i, b, at + n.slot[j], base)
            if rc:
                return rc
    return 0


cdef int aenc_array(Node *e, int64_t lo, int64_t hi, Buf *b) noexcept nogil:
    cdef int64_t cnt = hi - lo, i
    cdef int64_t hdr = arr_header(e, cnt)
    cdef int64_t ew = e.elem_width
    cdef int64_t start = buf_zero(b, hdr + round8(cnt * ew))
    cdef int rc
    if start < 0:
        return E_OOM
    if e.compact:
        rf_st_i32(b.data + start, <int32_t> cnt)
    else:
        rf_st_i64(b.data + start, cnt)
    for i in range(cnt):
        if e.a_valid != NULL and not bit_get(e.a_valid, lo + i + e.a_off):
            if not e.nullable:
                return E_NOT_NULL
            bit_set(b.data + start + arr_bitmap_off(e), i)
        else:
            rc = aenc_value(e, lo + i, b, start + hdr + i * ew, start)
            if rc:
                return rc
    return 0
