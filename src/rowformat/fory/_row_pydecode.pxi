# Included by _row.pyx. Row bytes -> Python values (dec_*): the checks shared
# with the batch decoder (slots against their containing region, array
# headers, decimal precision), the conversions of wire values to Python
# objects, and the decoders of rows, arrays and maps behind Plan.decode and
# the views' to_dict/to_list.

cdef inline int var_span(const uint8_t *p, int64_t size, int64_t fixed, int64_t slot,
                         const uint8_t **out, int64_t *outsize) noexcept nogil:
    """Follows the offset+size slot at p+slot of a row or array of `size`
    bytes whose fixed region (bitmap and slots) ends at `fixed`: the value
    must lie in the variable region, as Fory's Rust reader requires (a slot
    pointing into the fixed region would read the row's own slots)."""
    cdef uint64_t x = <uint64_t> rf_ld_i64(p + slot)
    cdef uint64_t off = x >> 32
    cdef uint64_t sz = x & U32_MAX
    if off < <uint64_t> fixed:
        return E_OVERLAP
    if off + sz > <uint64_t> size:
        return E_BOUNDS
    out[0] = p + off
    outsize[0] = <int64_t> sz
    return 0


# 10**p for p in 0..76 as four little-endian 64-bit limbs (filled at import).
cdef uint64_t _POW10[77][4]


def _fill_pow10():
    cdef int p, i
    cdef object v
    for p in range(77):
        v = 10 ** <object> p
        for i in range(4):
            _POW10[p][i] = (v >> (64 * i)) & 0xFFFFFFFFFFFFFFFF


_fill_pow10()


cdef inline bint dec_fits(const uint8_t *q, int precision) noexcept nogil:
    """Whether the 32-byte two's complement value at q has |v| < 10**precision
    (precision 1..76). Only values within 128 bits can pass for precision
    <= 38, so this also rejects a decimal128 whose high half is not sign
    extension."""
    cdef uint64_t m[4]
    cdef uint64_t carry = 1
    cdef int i
    for i in range(4):
        m[i] = <uint64_t> rf_ld_i64(q + 8 * i)
    if m[3] >> 63:           # negative: the magnitude is ~v + 1
        for i in range(4):
            m[i] = ~m[i] + carry
            carry = 1 if (carry and m[i] == 0) else 0
    for i in range(3, -1, -1):
        if m[i] != _POW10[precision][i]:
            return m[i] < _POW10[precision][i]
    return False


cdef object _date(int64_t days):
    cdef int y, m, d
    if days < -719162 or days > 2932896:
        raise MalformedRowError(f"date32 {days} is outside Python's date range")
    civil_from_days(days, &y, &m, &d)
    return cdt.date_new(y, m, d)


_UTC = __import__("datetime").timezone.utc


cdef object _datetime(Node *n, int64_t us):
    cdef int y, m, d
    cdef int64_t days = rf_floordiv(us, US_PER_DAY)
    cdef int64_t rem = us - days * US_PER_DAY
    if days < -719162 or days > 2932896:
        raise MalformedRowError(f"timestamp {us} is outside Python's datetime range")
    civil_from_days(days, &y, &m, &d)
    tz = None if (<object> n.layout).arrow_type.tz is None else _UTC
    return cdt.datetime_new(y, m, d, <int> (rem // 3600000000), <int> ((rem // 60000000) % 60),
                            <int> ((rem // 1000000) % 60), <int> (rem % 1000000), tz)


cdef object _timedelta(int64_t us):
    cdef int64_t days = rf_floordiv(us, US_PER_DAY)
    cdef int64_t rem = us - days * US_PER_DAY
    if days > 999999999 or days < -999999999:
        raise MalformedRowError(f"duration {us} is outside Python's timedelta range")
    return cdt.timedelta_new(<int> days, <int> (rem // 1000000), <int> (rem % 1000000))


cdef object _decimal_from(Node *n, const uint8_t *q, int64_t sz):
    if sz != 32:
        raise _malformed(E_DEC_SIZE, _fname(n))
    if not dec_fits(q, n.precision):
        raise _malformed_at(E_DEC_RANGE, n)
    u = int.from_bytes(PyBytes_FromStringAndSize(<const char *> q, 32), "little", signed=True)
    return _decimal.Decimal(u).scaleb(-n.scale, _DEC_CTX)


cdef object dec_val(Node *c, const uint8_t *p, int64_t size, int64_t fixed, int64_t slot, bint views,
                    object owner, int64_t *bud):
    """The non-null value of node c whose slot is at p+slot; p..p+size is the
    containing row or array, already checked to hold the slot, and `fixed`
    the end of its fixed region. With `views`, nested structs/lists/maps come
    back as views sharing `owner`."""
    cdef int k = c.kind
    cdef const uint8_t *q
    cdef int64_t sz
    cdef int rc
    cdef float f
    cdef double d
    if k == K_I64:
        return PyLong_FromLongLong(rf_ld_i64(p + slot))
    elif k == K_I32:
        return PyLong_FromLongLong(rf_ld_i32(p + slot))
    elif k == K_F64:
        memcpy(&d, p + slot, 8)
        return PyFloat_FromDouble(d)
    elif k == K_BOOL:
        return PyBool_FromLong(p[slot] != 0)
    elif k == K_I8:
        return PyLong_FromLongLong(<int8_t> p[slot])
    elif k == K_I16:
        return PyLong_FromLongLong(rf_ld_i16(p + slot))
    elif k == K_F32:
        memcpy(&f, p + slot, 4)
        return PyFloat_FromDouble(f)
    elif k == K_F16:
        return PyFloat_FromDouble(PyFloat_Unpack2(<const char *> (p + slot), 1))
    elif k == K_DATE:
        return _date(rf_ld_i32(p + slot))
    elif k == K_TS:
        return _datetime(c, rf_ld_i64(p + slot))
    elif k == K_DUR:
        return _timedelta(rf_ld_i64(p + slot))
    if k == K_STRUCT and c.inline_:
        q = p + slot
        sz = c.fixed
    else:
        rc = var_span(p, size, fixed, slot, &q, &sz)
        if rc:
            raise _malformed(rc, _fname(c))
    if k == K_STR:
        try:
            return PyUnicode_DecodeUTF8(<const char *> q, sz, NULL)
        except UnicodeDecodeError:
            raise _malformed(E_UTF8, _fname(c)) from None
    elif k == K_BIN:
        return PyBytes_FromStringAndSize(<const char *> q, sz)
    elif k == K_DEC:
        return _decimal_from(c, q, sz)
    elif k == K_STRUCT:
        if views:
            return _make_struct_view(c, q, sz, owner)
        return dec_row(c, q, sz, bud)
    elif k == K_LIST:
        if views:
            return _make_array_view(&c.child[0], q, sz, owner)
        return dec_array(&c.child[0], q, sz, bud)
    elif k == K_MAP:
        if views:
            return _make_map_view(c, q, sz, owner)
        return dec_map(c, q, sz, bud)
    raise SchemaError(f"unknown kind {k}")


cdef dict dec_row(Node *n, const uint8_t *p, int64_t size, int64_t *bud):
    cdef dict out = {}
    cdef int i, j
    cdef tuple names = <tuple> n.names
    cdef const uint8_t *bm = p + n.bitmap_off
    if size < n.fixed:
        raise _malformed(E_FIXED, _fname(n) or "row")
    if _charge(bud, n.nchild):
        raise _malformed(E_ALIAS, _fname(n) or "row")
    for i in range(n.nchild):
        j = n.decl[i]
        if n.bitmap_bytes and bit_get(bm, j):
            if not n.child[j].nullable:
                raise _malformed_at(E_NOT_NULL, &n.child[j])
            val = None
        else:
            val = dec_val(&n.child[j], p, size, n.fixed, n.slot[j], False, None, bud)
        PyDict_SetItem(out, <object> PyTuple_GET_ITEM(names, j), val)
    return out


cdef int arr_check(Node *e, const uint8_t *p, int64_t size, int64_t *cnt, int64_t *hdr) noexcept nogil:
    cdef int64_t n
    if e.compact:
        if size < 4:
            return E_FIXED
        n = rf_ld_i32(p)
    else:
        if size < 8:
            return E_FIXED
        n = rf_ld_i64(p)
    if n < 0 or n > size:
        return E_COUNT
    hdr[0] = arr_header(e, n)
    if hdr[0] + n * e.elem_width > size:
        return E_COUNT
    cnt[0] = n
    return 0


cdef list dec_array(Node *e, const uint8_t *p, int64_t size, int64_t *bud):
    cdef int64_t n, hdr, i, fixed
    cdef int rc = arr_check(e, p, size, &n, &hdr)
    cdef bint has_bm = arr_has_bitmap(e)
    cdef const uint8_t *bm = p + arr_bitmap_off(e)
    cdef list out
    cdef object val
    if rc == 0:
        rc = _charge(bud, n)
    if rc:
        raise _malformed(rc, _fname(e))
    fixed = arr_fixed_end(e, hdr, n)
    out = PyList_New(n)
    for i in range(n):
        if has_bm and bit_get(bm, i):
            if not e.nullable:
                raise _malformed(E_NOT_NULL, _fname(e))
            val = None
        else:
            val = dec_val(e, p, size, fixed, hdr + i * e.elem_width, False, None, bud)
        Py_INCREF(val)
        PyList_SET_ITEM(out, i, val)
    return out


cdef int map_split(const uint8_t *p, int64_t size, int64_t *ks) noexcept nogil:
    cdef int64_t k
    if size < 8:
        return E_FIXED
    k = rf_ld_i64(p)
    if k < 0 or k > size - 8:
        return E_BOUNDS
    ks[0] = k
    return 0


cdef list dec_map(Node *n, const uint8_t *p, int64_t size, int64_t *bud):
    cdef int64_t ks
    cdef int rc = map_split(p, size, &ks)
    if rc:
        raise _malformed(rc, _fname(n))
    keys = dec_array(&n.child[0], p + 8, ks, bud)
    vals = dec_array(&n.child[1], p + 8 + ks, size - 8 - ks, bud)
    if len(keys) != len(vals):
        raise _malformed(E_MAP_COUNT, _fname(n))
    return list(zip(keys, vals))
