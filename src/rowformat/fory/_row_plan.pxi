# Included by _row.pyx. The plan: one Node per schema Layout node (node_init
# copies the Layout tree; node_free frees it; the kinds are in _row.pxd), the
# helpers that compute where a row's or an array's bitmap, header and slots
# lie, and civil date arithmetic (proleptic Gregorian, days since 1970-01-01).

cdef inline int64_t round8(int64_t n) noexcept nogil:
    return (n + 7) & ~(<int64_t> 7)


ctypedef struct Node:
    int kind
    int width          # natural width of fixed kinds
    int elem_width     # bytes as an array element
    int space          # bytes in a parent row slot
    bint nullable
    bint inline_       # Compact fixed-size struct stored in place
    bint hdr_round     # Compact: array of this node has a rounded header
    bint compact
    int nchild
    Node *child        # layout order
    int32_t *slot      # layout index -> slot offset
    int32_t *decl      # declaration index -> layout index
    int32_t *ldecl     # layout index -> declaration index
    int32_t bitmap_off
    int32_t bitmap_bytes
    int32_t fixed
    int precision
    int scale
    bint dec256
    PyObject *names    # tuple of field names in layout order (structs)
    PyObject *layout   # the schema.Layout object
    PyObject *index    # dict: field name -> declaration index (structs)
    # Arrow input binding (encode_batch)
    const uint8_t *a_valid
    const uint8_t *a_data
    const int32_t *a_offs
    int64_t a_off
    # Arrow builders (decode_batch)
    Buf b_valid
    Buf b_data
    Buf b_offs
    int64_t b_len
    int64_t b_null
    int64_t b_nbytes   # bytes appended to b_data, for string offsets
    bint failed        # decode_batch: the error was found at this node (_fail)


cdef void node_free(Node *n) noexcept:
    cdef int i
    if n.child != NULL:
        for i in range(n.nchild):
            node_free(&n.child[i])
        free(n.child)
    free(n.slot)
    free(n.decl)
    free(n.ldecl)
    buf_free(&n.b_valid)
    buf_free(&n.b_data)
    buf_free(&n.b_offs)


cdef int node_init(Node *n, object lay, bint compact, list keep) except -1:
    cdef int i
    memset(n, 0, sizeof(Node))
    keep.append(lay)
    n.layout = <PyObject *> lay
    n.kind = lay.kind
    n.width = lay.width
    n.elem_width = lay.elem_width
    n.space = lay.space
    n.nullable = lay.nullable
    n.inline_ = lay.inline if lay.kind == K_STRUCT else False
    n.hdr_round = lay.hdr_round
    n.compact = compact
    n.precision = lay.precision
    n.scale = lay.scale
    n.dec256 = lay.dec256
    n.bitmap_off = lay.bitmap_off
    n.bitmap_bytes = lay.bitmap_bytes
    n.fixed = lay.fixed
    children = lay.children
    n.nchild = len(children)
    if n.nchild:
        n.child = <Node *> malloc(n.nchild * sizeof(Node))
        n.slot = <int32_t *> malloc(n.nchild * sizeof(int32_t))
        n.decl = <int32_t *> malloc(n.nchild * sizeof(int32_t))
        n.ldecl = <int32_t *> malloc(n.nchild * sizeof(int32_t))
        if n.child == NULL or n.slot == NULL or n.decl == NULL or n.ldecl == NULL:
            raise MemoryError()
        for i in range(n.nchild):
            memset(&n.child[i], 0, sizeof(Node))
        for i in range(n.nchild):
            node_init(&n.child[i], children[i], compact, keep)
    if lay.kind == K_STRUCT:
        names = tuple(c.name for c in children)
        keep.append(names)
        n.names = <PyObject *> names
        index = {}
        for i in range(n.nchild):
            index.setdefault(children[lay.decl[i]].name, i)
        keep.append(index)
        n.index = <PyObject *> index
        for i in range(n.nchild):
            n.slot[i] = lay.slots[i]
            n.decl[i] = lay.decl[i]
            n.ldecl[lay.decl[i]] = i
    return 0


cdef inline bint bit_get(const uint8_t *bits, int64_t i) noexcept nogil:
    return (bits[i >> 3] >> (i & 7)) & 1


cdef inline void bit_set(uint8_t *bits, int64_t i) noexcept nogil:
    bits[i >> 3] |= <uint8_t> (1 << (i & 7))


cdef inline int64_t arr_header(Node *e, int64_t n) noexcept nogil:
    """Header bytes of an array of n elements of node e."""
    cdef int64_t h
    if e.compact:
        h = 4 + ((n + 7) >> 3 if e.nullable else 0)
        if e.hdr_round:
            h = round8(h)
        return h
    return 8 + ((n + 63) >> 6) * 8


cdef inline int64_t arr_fixed_end(Node *e, int64_t hdr, int64_t n) noexcept nogil:
    """End of an array's fixed region (header, bitmap, elements padded to 8):
    its variable data, and so every element slot's offset, starts there."""
    return hdr + round8(n * e.elem_width)


cdef inline bint arr_has_bitmap(Node *e) noexcept nogil:
    return e.nullable or not e.compact


cdef inline int64_t arr_bitmap_off(Node *e) noexcept nogil:
    return 4 if e.compact else 8


cdef inline bint row_has_bitmap(Node *n) noexcept nogil:
    return n.bitmap_bytes > 0


# Civil date arithmetic (proleptic Gregorian, days since 1970-01-01).

cdef inline int64_t days_from_civil(int64_t y, int64_t m, int64_t d) noexcept nogil:
    y -= m <= 2
    cdef int64_t era = (y if y >= 0 else y - 399) // 400
    cdef int64_t yoe = y - era * 400
    cdef int64_t doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    cdef int64_t doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


cdef inline void civil_from_days(int64_t z, int *y, int *m, int *d) noexcept nogil:
    z += 719468
    cdef int64_t era = (z if z >= 0 else z - 146096) // 146097
    cdef int64_t doe = z - era * 146097
    cdef int64_t yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    cdef int64_t yy = yoe + era * 400
    cdef int64_t doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    cdef int64_t mp = (5 * doy + 2) // 153
    d[0] = <int> (doy - (153 * mp + 2) // 5 + 1)
    m[0] = <int> (mp + 3 if mp < 10 else mp - 9)
    y[0] = <int> (yy + (m[0] <= 2))
