# Included by _row.pyx. Rows -> Arrow builders (decode_batch), nogil: the
# per-node builders (bld_*), the bounds-checked bdec_* functions that parse
# one row into them, and bld_finish that hands the buffers to Arrow. An error
# marks the node where it was found (_fail), so that the message can name
# the field (_failed_node).

cdef void bld_reset(Node *n) noexcept nogil:
    cdef int i
    n.b_valid.len = 0
    n.b_data.len = 0
    n.b_offs.len = 0
    n.b_len = 0
    n.b_null = 0
    n.b_nbytes = 0
    n.failed = 0
    if n.kind == K_STR or n.kind == K_BIN or n.kind == K_LIST or n.kind == K_MAP:
        buf_zero(&n.b_offs, 4)
    for i in range(n.nchild):
        bld_reset(&n.child[i])


cdef int bld_prereserve(Node *n, double factor) noexcept nogil:
    cdef int i
    if buf_reserve(&n.b_valid, <int64_t> (n.b_valid.len * factor) + 8):
        return E_OOM
    if buf_reserve(&n.b_data, <int64_t> (n.b_data.len * factor) + 8):
        return E_OOM
    if buf_reserve(&n.b_offs, <int64_t> (n.b_offs.len * factor) + 8):
        return E_OOM
    for i in range(n.nchild):
        if bld_prereserve(&n.child[i], factor):
            return E_OOM
    return 0


cdef void bld_reset_children(Node *n) noexcept nogil:
    cdef int i
    for i in range(n.nchild):
        bld_reset(&n.child[i])


cdef inline int bld_valid(Node *n, bint valid) noexcept nogil:
    """Appends one validity bit."""
    if (n.b_len >> 3) >= n.b_valid.len:
        if buf_zero(&n.b_valid, 8) < 0:
            return E_OOM
    if valid:
        bit_set(n.b_valid.data, n.b_len)
    else:
        n.b_null += 1
    n.b_len += 1
    return 0


cdef inline int bld_offset(Node *n, int64_t v) noexcept nogil:
    if v > INT32_MAX:
        return E_TOO_BIG
    if buf_reserve(&n.b_offs, 4):
        return E_OOM
    rf_st_i32(n.b_offs.data + n.b_offs.len, <int32_t> v)
    n.b_offs.len += 4
    return 0


cdef int bld_null(Node *n) noexcept nogil:
    """Appends a null slot to n (and empty slots to its struct children)."""
    cdef int i, rc
    rc = bld_valid(n, False)
    if rc:
        return rc
    if n.kind == K_BOOL:
        if ((n.b_len - 1) >> 3) >= n.b_data.len:
            if buf_zero(&n.b_data, 8) < 0:
                return E_OOM
    elif n.kind <= K_DUR:
        if buf_zero(&n.b_data, n.width) < 0:
            return E_OOM
    elif n.kind == K_DEC:
        if buf_zero(&n.b_data, 32 if n.dec256 else 16) < 0:
            return E_OOM
    elif n.kind == K_STR or n.kind == K_BIN:
        return bld_offset(n, n.b_nbytes)
    elif n.kind == K_LIST or n.kind == K_MAP:
        return bld_offset(n, n.child[0].b_len)
    elif n.kind == K_STRUCT:
        for i in range(n.nchild):
            rc = bld_null(&n.child[i])
            if rc:
                return rc
    return 0


cdef int bdec_value(Node *c, const uint8_t *p, int64_t size, int64_t fixed, int64_t slot,
                    int64_t *bud) noexcept nogil:
    """Appends the non-null value of c whose slot is at p+slot of a row or
    array of `size` bytes whose fixed region ends at `fixed`."""
    cdef int k = c.kind
    cdef int rc
    cdef const uint8_t *q
    cdef int64_t sz, cnt, hdr, ks, w
    cdef int64_t pos
    rc = bld_valid(c, True)
    if rc:
        return rc
    if k == K_BOOL:
        if ((c.b_len - 1) >> 3) >= c.b_data.len:
            if buf_zero(&c.b_data, 8) < 0:
                return E_OOM
        if p[slot]:
            bit_set(c.b_data.data, c.b_len - 1)
        return 0
    if k <= K_DUR:
        if buf_reserve(&c.b_data, c.width):
            return E_OOM
        memcpy(c.b_data.data + c.b_data.len, p + slot, c.width)
        c.b_data.len += c.width
        return 0
    if k == K_STRUCT and c.inline_:
        return bdec_fields(c, p + slot, c.fixed, bud)
    rc = var_span(p, size, fixed, slot, &q, &sz)
    if rc:
        return _fail(c, rc)
    if k == K_STR or k == K_BIN:
        if k == K_STR and not rf_utf8_valid(q, sz):
            return _fail(c, E_UTF8)
        if buf_reserve(&c.b_data, sz):
            return E_OOM
        if sz:  # (memcpy to a NULL buffer is undefined even for 0 bytes)
            memcpy(c.b_data.data + c.b_data.len, q, sz)
        c.b_data.len += sz
        c.b_nbytes += sz
        return bld_offset(c, c.b_nbytes)
    elif k == K_DEC:
        if sz != 32:
            return _fail(c, E_DEC_SIZE)
        # within the precision (<= 38 for decimal128), the value fits the
        # low 16 bytes, the rest being sign extension
        if not dec_fits(q, c.precision):
            return _fail(c, E_DEC_RANGE)
        w = 32 if c.dec256 else 16
        if buf_reserve(&c.b_data, w):
            return E_OOM
        memcpy(c.b_data.data + c.b_data.len, q, w)
        c.b_data.len += w
        return 0
    elif k == K_LIST:
        rc = bdec_array(&c.child[0], q, sz, bud)
        if rc:
            return rc
        return bld_offset(c, c.child[0].b_len)
    elif k == K_MAP:
        rc = map_split(q, sz, &ks)
        if rc:
            return _fail(c, rc)
        rc = bdec_array(&c.child[0], q + 8, ks, bud)
        if rc:
            return rc
        rc = bdec_array(&c.child[1], q + 8 + ks, sz - 8 - ks, bud)
        if rc:
            return rc
        if c.child[0].b_len != c.child[1].b_len:
            return _fail(c, E_MAP_COUNT)
        return bld_offset(c, c.child[0].b_len)
    elif k == K_STRUCT:
        return bdec_fields(c, q, sz, bud)
    return 0


cdef int bdec_fields(Node *n, const uint8_t *p, int64_t size, int64_t *bud) noexcept nogil:
    cdef int j, rc
    if size < n.fixed:
        return _fail(n, E_FIXED)
    if _charge(bud, n.nchild):
        return _fail(n, E_ALIAS)
    for j in range(n.nchild):
        if n.bitmap_bytes and bit_get(p + n.bitmap_off, j):
            if not n.child[j].nullable:
                return _fail(&n.child[j], E_NOT_NULL)
            rc = bld_null(&n.child[j])
        else:
            rc = bdec_value(&n.child[j], p, size, n.fixed, n.slot[j], bud)
        if rc:
            return rc
    return 0


cdef int bdec_array(Node *e, const uint8_t *p, int64_t size, int64_t *bud) noexcept nogil:
    cdef int64_t n, hdr, i, fixed
    cdef int rc = arr_check(e, p, size, &n, &hdr)
    cdef bint has_bm = arr_has_bitmap(e)
    cdef const uint8_t *bm = p + arr_bitmap_off(e)
    if rc == 0:
        rc = _charge(bud, n)
    if rc:
        return _fail(e, rc)
    fixed = arr_fixed_end(e, hdr, n)
    for i in range(n):
        if has_bm and bit_get(bm, i):
            if not e.nullable:
                # Arrow rejects (aborts on) null map keys; treat any null in
                # a non-nullable element type as malformed
                return _fail(e, E_NOT_NULL)
            rc = bld_null(e)
        else:
            rc = bdec_value(e, p, size, fixed, hdr + i * e.elem_width, bud)
        if rc:
            return rc
    return 0


cdef Node *_failed_node(Node *n) noexcept nogil:
    """The node an error of the last decode_batch was found at (_fail), or
    NULL."""
    cdef int i
    cdef Node *f
    if n.failed:
        return n
    for i in range(n.nchild):
        f = _failed_node(&n.child[i])
        if f != NULL:
            return f
    return NULL


cdef ArrowArray *bld_finish(Node *n) noexcept nogil:
    """Moves n's builders into a new ArrowArray (NULL on OOM)."""
    cdef ArrowArray *a
    cdef ArrowArray *ent
    cdef int i
    cdef int k = n.kind
    if k == K_STR or k == K_BIN:
        a = rf_arrow_new(3, 0)
    elif k == K_LIST:
        a = rf_arrow_new(2, 1)
    elif k == K_MAP:
        a = rf_arrow_new(2, 1)
    elif k == K_STRUCT:
        a = rf_arrow_new(1, n.nchild)
    else:
        a = rf_arrow_new(2, 0)
    if a == NULL:
        return NULL
    a.length = n.b_len
    a.null_count = n.b_null
    a.buffers[0] = buf_take(&n.b_valid)
    if k == K_STR or k == K_BIN:
        a.buffers[1] = buf_take(&n.b_offs)
        a.buffers[2] = buf_take(&n.b_data)
    elif k == K_LIST:
        a.buffers[1] = buf_take(&n.b_offs)
        a.children[0] = bld_finish(&n.child[0])
        if a.children[0] == NULL:
            a.n_children = 0
            rf_arrow_release(a)
            free(a)
            return NULL
    elif k == K_MAP:
        a.buffers[1] = buf_take(&n.b_offs)
        ent = rf_arrow_new(1, 2)
        if ent == NULL:
            a.n_children = 0
            rf_arrow_release(a)
            free(a)
            return NULL
        a.children[0] = ent
        ent.length = n.child[0].b_len
        ent.null_count = 0
        ent.buffers[0] = NULL
        for i in range(2):
            ent.children[i] = bld_finish(&n.child[i])
            if ent.children[i] == NULL:
                ent.n_children = i
                rf_arrow_release(a)
                free(a)
                return NULL
    elif k == K_STRUCT:
        for i in range(n.nchild):
            a.children[i] = bld_finish(&n.child[n.decl[i]])
            if a.children[i] == NULL:
                a.n_children = i
                rf_arrow_release(a)
                free(a)
                return NULL
    else:
        a.buffers[1] = buf_take(&n.b_data)
    bld_reset(n)
    return a
