# Included by _row.pyx. Python values -> row bytes (enc_*): the checked
# conversions of Python ints, floats, datetimes and decimals to the wire
# types, and the encoders of rows, arrays and maps behind Plan.encode.

cdef inline object _fname(Node *n):
    return (<object> n.layout).name


cdef object _bad(Node *n, object v, str want):
    return ValueConversionError(
        f"field {_fname(n)!r}: expected {want}, got {type(v).__name__} {v!r:.60}")


cdef int64_t _as_int(Node *n, object v, int64_t lo, int64_t hi) except? -1:
    cdef int overflow = 0
    cdef long long x
    if not PyLong_Check(v):
        if isinstance(v, float) or isinstance(v, (str, bytes)) or not hasattr(v, "__index__"):
            raise _bad(n, v, "an int")
        v = v.__index__()
    x = PyLong_AsLongLongAndOverflow(v, &overflow)
    if overflow or x < lo or x > hi:
        raise ValueConversionError(f"field {_fname(n)!r}: {v} is out of range [{lo}, {hi}]")
    return x


cdef double _as_float(Node *n, object v) except? -1.0:
    if PyFloat_CheckExact(v):
        return PyFloat_AS_DOUBLE(v)
    if isinstance(v, (str, bytes)) or v is True or v is False:
        raise _bad(n, v, "a float")
    try:
        return PyFloat_AsDouble(v)
    except TypeError:
        raise _bad(n, v, "a float") from None


cdef int64_t _micros_of_delta(object v) noexcept:
    return (<int64_t> cdt.timedelta_days(v) * 86400 + cdt.timedelta_seconds(v)) * 1000000 \
        + cdt.timedelta_microseconds(v)


cdef int64_t _as_micros(Node *n, object v) except? -1:
    cdef int64_t days, us
    if cdt.PyDateTime_Check(v):
        days = days_from_civil(cdt.datetime_year(v), cdt.datetime_month(v), cdt.datetime_day(v))
        us = ((days * 24 + cdt.datetime_hour(v)) * 60 + cdt.datetime_minute(v)) * 60 + cdt.datetime_second(v)
        us = us * 1000000 + cdt.datetime_microsecond(v)
        if cdt.datetime_tzinfo(v) is not None:
            off = v.utcoffset()
            if off is not None:
                us -= _micros_of_delta(off)
        return us
    if PyLong_Check(v):
        return _as_int(n, v, -0x7FFFFFFFFFFFFFFF - 1, 0x7FFFFFFFFFFFFFFF)
    raise _bad(n, v, "a datetime.datetime or int microseconds")


cdef int _put_var(Node *n, Buf *b, int64_t slot, int64_t base, int64_t start, int64_t size) except -1:
    cdef int64_t rel = start - base
    if rel > U32_MAX or size > U32_MAX:
        raise ValueConversionError(f"field {_fname(n)!r}: row larger than 4 GiB")
    rf_st_i64(b.data + slot, <int64_t> ((<uint64_t> rel << 32) | <uint64_t> size))
    return 0


cdef int _put_bytes(Node *n, Buf *b, int64_t slot, int64_t base, const char *s, int64_t size) except -1:
    cdef int64_t start = buf_zero(b, round8(size))
    if start < 0:
        raise MemoryError()
    if size:
        memcpy(b.data + start, s, size)
    return _put_var(n, b, slot, base, start, size)


_DEC_CTX = _decimal.Context(prec=200)


def _decimal_unscaled(v, int precision, int scale, name):
    """Decimal -> unscaled int at the schema's scale (exact, range-checked)."""
    if isinstance(v, int) and not isinstance(v, bool):
        v = _decimal.Decimal(v)
    if not isinstance(v, _decimal.Decimal) or not v.is_finite():
        raise ValueConversionError(f"field {name!r}: expected a finite decimal.Decimal, got {v!r:.60}")
    q = v.scaleb(scale, _DEC_CTX)
    u = int(q)
    if q != u:
        raise ValueConversionError(f"field {name!r}: {v} has more than {scale} fractional digits")
    if abs(u) >= 10 ** <object> precision:  # a Python int: C arithmetic would overflow
        raise ValueConversionError(f"field {name!r}: {v} does not fit decimal({precision}, {scale})")
    return u


cdef int enc_py(Node *n, object v, Buf *b, int64_t slot, int64_t base) except -1:
    """Writes non-null v for node n: fixed kinds into the slot at `slot`,
    variable kinds appended with an offset+size slot relative to `base`."""
    cdef int k = n.kind
    cdef int64_t x, start
    cdef double d
    cdef Py_ssize_t sz
    cdef const char *s
    cdef Py_buffer view
    if k == K_I64:
        rf_st_i64(b.data + slot, _as_int(n, v, -0x7FFFFFFFFFFFFFFF - 1, 0x7FFFFFFFFFFFFFFF))
    elif k == K_I32:
        rf_st_i32(b.data + slot, <int32_t> _as_int(n, v, -2147483648, 2147483647))
    elif k == K_STR:
        if not PyUnicode_Check(v):
            raise _bad(n, v, "a str")
        s = PyUnicode_AsUTF8AndSize(v, &sz)
        _put_bytes(n, b, slot, base, s, sz)
    elif k == K_F64:
        d = _as_float(n, v)
        memcpy(b.data + slot, &d, 8)
    elif k == K_BOOL:
        if v is True:
            b.data[slot] = 1
        elif v is False:
            b.data[slot] = 0
        else:
            b.data[slot] = 1 if v else 0
    elif k == K_I8:
        b.data[slot] = <uint8_t> <int8_t> _as_int(n, v, -128, 127)
    elif k == K_I16:
        rf_st_i16(b.data + slot, <int16_t> _as_int(n, v, -32768, 32767))
    elif k == K_F32:
        d = _as_float(n, v)
        _st_f32(b.data + slot, <float> d)
    elif k == K_F16:
        d = _as_float(n, v)
        PyFloat_Pack2(d, <char *> (b.data + slot), 1)
    elif k == K_DATE:
        if cdt.PyDate_Check(v) and not cdt.PyDateTime_Check(v):
            x = days_from_civil(cdt.date_year(v), cdt.date_month(v), cdt.date_day(v))
        elif PyLong_Check(v):
            x = _as_int(n, v, -2147483648, 2147483647)
        else:
            raise _bad(n, v, "a datetime.date or int days")
        rf_st_i32(b.data + slot, <int32_t> x)
    elif k == K_TS:
        rf_st_i64(b.data + slot, _as_micros(n, v))
    elif k == K_DUR:
        if cdt.PyDelta_Check(v):
            x = _micros_of_delta(v)
        elif PyLong_Check(v):
            x = _as_int(n, v, -0x7FFFFFFFFFFFFFFF - 1, 0x7FFFFFFFFFFFFFFF)
        else:
            raise _bad(n, v, "a datetime.timedelta or int microseconds")
        rf_st_i64(b.data + slot, x)
    elif k == K_BIN:
        if PyBytes_CheckExact(v):
            _put_bytes(n, b, slot, base, PyBytes_AS_STRING(v), PyBytes_GET_SIZE(v))
        elif isinstance(v, str):
            raise _bad(n, v, "bytes")
        else:
            try:
                PyObject_GetBuffer(v, &view, PyBUF_SIMPLE)
            except TypeError:
                raise _bad(n, v, "bytes") from None
            try:
                _put_bytes(n, b, slot, base, <const char *> view.buf, view.len)
            finally:
                PyBuffer_Release(&view)
    elif k == K_DEC:
        u = _decimal_unscaled(v, n.precision, n.scale, _fname(n))
        raw = (<object> u).to_bytes(32, "little", signed=True)
        _put_bytes(n, b, slot, base, PyBytes_AS_STRING(raw), 32)
    elif k == K_LIST:
        if isinstance(v, (str, bytes, dict)):
            raise _bad(n, v, "a list")
        if not (PyList_CheckExact(v) or PyTuple_CheckExact(v)):
            try:
                v = list(v)
            except TypeError:
                raise _bad(n, v, "a list") from None
        start = b.len
        enc_array(&n.child[0], v, b)
        _put_var(n, b, slot, base, start, b.len - start)
    elif k == K_MAP:
        start = b.len
        enc_map(n, v, b)
        _put_var(n, b, slot, base, start, b.len - start)
    elif k == K_STRUCT:
        if n.inline_:
            enc_fields(n, v, b, slot, slot)
        else:
            start = b.len
            enc_row(n, v, b)
            _put_var(n, b, slot, base, start, b.len - start)
    return 0


cdef inline void _st_f32(uint8_t *p, float f) noexcept nogil:
    memcpy(p, &f, 4)


cdef int enc_row(Node *n, object v, Buf *b) except -1:
    """Appends a complete row for struct node n."""
    cdef int64_t start = buf_zero(b, n.fixed)
    if start < 0:
        raise MemoryError()
    enc_fields(n, v, b, start, start)
    return 0


cdef int enc_fields(Node *n, object v, Buf *b, int64_t at, int64_t base) except -1:
    """Writes the fields of struct value v into the (zeroed) fixed region at
    `at`; variable data is appended, offsets relative to `base`."""
    cdef int j
    cdef Node *c
    cdef PyObject *item
    cdef object val
    cdef tuple names = <tuple> n.names
    cdef int mode
    if PyDict_CheckExact(v):
        mode = 0
    elif PyTuple_CheckExact(v):
        mode = 1
        if PyTuple_GET_SIZE(v) != n.nchild:
            raise ValueConversionError(
                f"struct {_fname(n) or '<row>'!r}: tuple has {PyTuple_GET_SIZE(v)} values, schema has {n.nchild} fields")
    elif isinstance(v, dict):
        mode = 0
        v = dict(v)
    elif v is None:
        raise ValueConversionError(f"struct {_fname(n) or '<row>'!r}: got None")
    else:
        mode = 2
    for j in range(n.nchild):
        c = &n.child[j]
        if mode == 0:
            item = PyDict_GetItem(v, <object> PyTuple_GET_ITEM(names, j))
            val = <object> item if item != NULL else None
        elif mode == 1:
            val = <object> PyTuple_GET_ITEM(v, n.ldecl[j])
        else:
            val = getattr(v, <object> PyTuple_GET_ITEM(names, j), None)
        if val is None:
            if not c.nullable:
                raise ValueConversionError(f"field {_fname(c)!r} is not nullable but the value is None")
            bit_set(b.data + at + n.bitmap_off, j)
        else:
            enc_py(c, val, b, at + n.slot[j], base)
    return 0


cdef int enc_array(Node *e, object seq, Buf *b) except -1:
    """Appends an array of element node e from a list or tuple."""
    cdef Py_ssize_t cnt = len(seq), i
    cdef int64_t hdr = arr_header(e, cnt)
    cdef int64_t ew = e.elem_width
    cdef int64_t start
    cdef bint is_list = PyList_CheckExact(seq)
    cdef object item
    if cnt > INT32_MAX:
        raise ValueConversionError(f"field {_fname(e)!r}: list longer than 2^31-1")
    start = buf_zero(b, hdr + round8(cnt * ew))
    if start < 0:
        raise MemoryError()
    if e.compact:
        rf_st_i32(b.data + start, <int32_t> cnt)
    else:
        rf_st_i64(b.data + start, cnt)
    for i in range(cnt):
        item = <object> (PyList_GET_ITEM(seq, i) if is_list else PyTuple_GET_ITEM(seq, i))
        if item is None:
            if not e.nullable:
                raise ValueConversionError(f"element of {_fname(e)!r} is not nullable but the value is None")
            bit_set(b.data + start + arr_bitmap_off(e), i)
        else:
            enc_py(e, item, b, start + hdr + i * ew, start)
    return 0


cdef int enc_map(Node *n, object v, Buf *b) except -1:
    cdef int64_t start
    if isinstance(v, dict):
        keys = list(v.keys())
        vals = list(v.values())
    elif isinstance(v, (str, bytes)):
        raise _bad(n, v, "a dict or a list of (key, value) pairs")
    else:
        try:
            keys = []
            vals = []
            for kv in v:
                k_, v_ = kv
                keys.append(k_)
                vals.append(v_)
        except (TypeError, ValueError):
            raise _bad(n, v, "a dict or a list of (key, value) pairs") from None
    start = buf_zero(b, 8)
    if start < 0:
        raise MemoryError()
    enc_array(&n.child[0], keys, b)
    rf_st_i64(b.data + start, b.len - start - 8)
    enc_array(&n.child[1], vals, b)
    return 0
