# Included by _rowcodec.pyx. Python values, for get(i) (RowDecoder.decode_row):
# nested ROW -> dict, MAP/MULTISET -> list of (key, value) pairs (as pyarrow's
# to_pylist gives), TIMESTAMP p <= 6 -> datetime, p > 6 ->
# numpy.datetime64[ns], DECIMAL -> decimal.Decimal.
#
# Memory: every Python object is charged (charge_py) against the row's
# allowance (decode_row) before it is built: a row's fields when its null
# header is read (Node.pycost each), an array's list slots and non-null
# elements when its size and bitmap are (the bitmap's nulls counted first),
# a VECTOR's elements, a MAP's pairs. Strings and bytes are charged their
# object header only: their contents are the row's own bytes.

_EPOCH_ORDINAL = _dt.date(1970, 1, 1).toordinal()
_UTC = _dt.timezone.utc
import_datetime()
_Decimal = _decimal.Decimal
_PAIR_COST = _sys.getsizeof((None, None)) + 8
_TUPLE_COST = _sys.getsizeof(())


class _ValueError(CorruptFileError):
    """Internal to decode_row (which turns it into a RowDecodeError, or a
    RowLimitError for E_PY_LIMIT); a CorruptFileError so that it can never
    escape as anything else."""
    def __init__(self, code, column=None, detail=None):
        super().__init__(error_message(code))
        self.code = code
        self.column = column
        self.detail = detail


cdef inline object _fail(int code):
    raise _ValueError(code)


cdef inline int charge_py(int64_t *left, int64_t count, int64_t each, str what) except -1:
    """Charges count objects of each bytes (count <= 2^31, each <= 2^31:
    no overflow) to the row's allowance, before they are built."""
    left[0] -= count * each
    if left[0] < 0:
        raise _ValueError(E_PY_LIMIT, None, f"{count} {what} need about {count * each} bytes")
    return 0


cdef int64_t _count_nulls(const uint8_t *bitmap, int64_t size) noexcept nogil:
    """The set bits among the first size bits of bitmap."""
    cdef int64_t k, count = 0
    cdef uint64_t w
    for k in range(size >> 6):
        memcpy(&w, bitmap + 8 * k, 8)
        w = w - ((w >> 1) & 0x5555555555555555ULL)
        w = (w & 0x3333333333333333ULL) + ((w >> 2) & 0x3333333333333333ULL)
        w = (w + (w >> 4)) & 0x0F0F0F0F0F0F0F0FULL
        count += <int64_t> ((w * 0x0101010101010101ULL) >> 56)
    for k in range((size >> 6) << 6, size):
        count += (bitmap[k >> 3] >> (k & 7)) & 1
    return count


cdef object py_decimal(rf_i128 v, int scale):
    # from text: exact for all 38 digits, unlike arithmetic in a 28-digit context
    cdef object u
    if rf_i128_fits_i64(v):
        u = <long long> v
    else:
        u = int(rf_i128_hi(v)) * (1 << 64) + int(rf_i128_lo(v))
    return _Decimal(f"{u}E-{scale}")


cdef object py_scalar(Node *n, int64_t k, int64_t sub):
    """The Python value of an integer wire value k (and TIMESTAMP's nano-of-milli sub)."""
    cdef int64_t v
    if n.pyconv == PY_PLAIN:
        return k
    if n.pyconv == PY_DEC:
        return py_decimal(<rf_i128> k, n.scale)
    if n.pyconv == PY_DATE:
        try:
            return _dt.date.fromordinal(_EPOCH_ORDINAL + k)
        except (ValueError, OverflowError):
            raise CorruptFileError(f"DATE {k} days from 1970-01-01 is outside years 1..9999")
    if n.pyconv == PY_TIME:
        if k < 0 or k >= 86400000:
            raise CorruptFileError(f"TIME {k} ms is outside one day")
        return _dt.time(k // 3600000, (k // 60000) % 60, (k // 1000) % 60, (k % 1000) * 1000)
    if n.pyconv == PY_TS_NS:
        if rf_ts_units(k, 1000000, sub, &v):
            _fail(E_TS_RANGE)
        return _np.datetime64(v, "ns")
    return py_datetime(k, sub // 1000, _UTC if n.pyconv == PY_TS_LTZ else None)


cdef object py_datetime(int64_t ms, int64_t us, object tz):
    """datetime(1970-01-01) + ms milliseconds + us microseconds, built from
    its fields through the C API (a timedelta sum costs 5x more)."""
    cdef int64_t days = ms / 86400000     # C division (cdivision): floor it
    cdef int64_t rem = ms - days * 86400000
    cdef int y, m, d
    if rem < 0:
        rem += 86400000
        days -= 1
    if not -719162 <= days <= 2932896:    # 0001-01-01 .. 9999-12-31
        raise CorruptFileError(f"TIMESTAMP {ms} ms from the epoch is outside years 1..9999")
    rf_civil_from_days(days, &y, &m, &d)
    return datetime_new(y, m, d, rem // 3600000, (rem // 60000) % 60, (rem // 1000) % 60,
                        (rem % 1000) * 1000 + us, tz)


cdef object py_value(Node *n, list names, const uint8_t *b, int64_t *pos, int64_t end,
                     int64_t *left):
    cdef int64_t p = pos[0]
    cdef int64_t ln, k, k2
    cdef uint64_t u
    cdef rf_i128 d
    cdef int rc, w
    if n.kind in (K_BIN, K_STR, K_LBIN, K_DEC128):
        rc = rf_read_len(b, &p, end, &ln)
        if rc:
            _fail(E_TRUNC if rc == -1 else E_VARINT)
        if ln > end - p:
            _fail(E_TRUNC)
        pos[0] = p + ln
        if n.kind == K_STR:
            try:
                return (<const char *> b)[p:p + ln].decode("utf-8")
            except UnicodeDecodeError:
                _fail(E_UTF8)
        if n.kind == K_DEC128:
            if ln == 0:
                _fail(E_DEC_EMPTY)
            if rf_be_to_i128(b + p, ln, &d) or not rf_dec_fits(d, n.precision):
                _fail(E_DEC_OVERFLOW)
            return py_decimal(d, n.scale)
        return (<const char *> b)[p:p + ln]
    if n.kind == K_ROW:
        return py_row(n, names, b, pos, end, 0, left)
    if n.kind == K_LIST:
        return py_array(&n.child[0], names, b, pos, end, left)
    if n.kind == K_MAP:
        keys = py_array(&n.child[0], names, b, pos, end, left)
        values = py_array(&n.child[1], names, b, pos, end, left)
        if len(keys) != len(values):
            _fail(E_MAP_SIZE)
        charge_py(left, len(keys), _PAIR_COST, "map entries")   # a tuple and a slot each
        return list(zip(keys, values))
    if n.kind == K_VECTOR:
        rc = rf_read_len(b, &p, end, &ln)
        if rc:
            _fail(E_TRUNC if rc == -1 else E_VARINT)
        if ln != n.fixed:
            _fail(E_VECTOR_SIZE)
        pos[0] = p
        if ln * _width(n.child[0].kind) > end - p:     # truncated: fail before allocating
            _fail(E_TRUNC)
        charge_py(left, ln, 8 + n.child[0].pycost, "VECTOR elements")
        out = [None] * ln
        for k in range(ln):
            out[k] = py_value(&n.child[0], names, b, pos, end, left)
        return out
    if n.kind == K_VARIANT:
        value = py_value(&n.child[0], names, b, pos, end, left)
        metadata = py_value(&n.child[1], names, b, pos, end, left)
        return {"value": value, "metadata": metadata}
    # fixed-width scalars
    w = 1 if n.kind in (K_BOOL, K_I8) else 2 if n.kind == K_I16 else \
        4 if n.kind in (K_I32, K_TIME, K_F32) else 8
    if p + w > end:
        _fail(E_TRUNC)
    pos[0] = p + w
    if n.kind == K_BOOL:
        return b[p] != 0
    if n.kind == K_F32:
        return _ld_f32(b + p)
    if n.kind == K_F64:
        return _ld_f64(b + p)
    if n.kind == K_I8:
        k = <signed char> b[p]
    elif n.kind == K_I16:
        k = rf_ld_i16(b + p)
    elif w == 4:
        k = rf_ld_i32(b + p)
    else:
        k = rf_ld_i64(b + p)
        if n.kind == K_DEC64 and not rf_dec_fits(<rf_i128> k, n.precision):
            _fail(E_DEC_OVERFLOW)
    k2 = 0
    if n.kind == K_TS_NANO:
        p += 8
        rc = rf_read_uvarint(b, &p, end, 5, &u)
        if rc:
            _fail(E_TRUNC if rc == -1 else E_VARINT)
        if u > 999999:
            _fail(E_NANO)
        pos[0] = p
        k2 = <int64_t> u
    return py_scalar(n, k, k2)


cdef inline double _ld_f64(const uint8_t *p) noexcept:
    cdef double v
    memcpy(&v, p, 8)
    return v


cdef inline float _ld_f32(const uint8_t *p) noexcept:
    cdef float v
    memcpy(&v, p, 4)
    return v


cdef object py_array(Node *c, list names, const uint8_t *b, int64_t *pos, int64_t end,
                     int64_t *left):
    cdef int64_t p = pos[0]
    cdef int64_t size, nb, k, nulls
    cdef const uint8_t *bitmap
    cdef int rc = rf_read_len(b, &p, end, &size)
    if rc:
        _fail(E_TRUNC if rc == -1 else E_VARINT)
    nb = (size + 7) >> 3
    if nb > end - p:
        _fail(E_TRUNC)
    bitmap = b + p
    pos[0] = p + nb
    # before the list is made: a slot per element, an object per non-null one
    nulls = _count_nulls(bitmap, size)
    charge_py(left, size, 8, "array elements")
    charge_py(left, size - nulls, c.pycost, "non-null array elements")
    out = [None] * size
    for k in range(size):
        if (bitmap[k >> 3] >> (k & 7)) & 1:
            if not c.nullable:
                _fail(E_NOT_NULL)
        else:
            out[k] = py_value(c, names, b, pos, end, left)
    return out


cdef object py_row(Node *n, list names, const uint8_t *b, int64_t *pos, int64_t end, bint top,
                   int64_t *left):
    cdef int64_t nb = (n.nchild + 7) >> 3
    cdef int64_t cost = 0
    cdef const uint8_t *hdr
    cdef int f
    if nb > end - pos[0]:
        _fail(E_TRUNC)
    hdr = b + pos[0]
    pos[0] += nb
    for f in range(n.nchild):   # the fields' objects, before any is built
        if not (hdr[f >> 3] >> (f & 7)) & 1:
            cost += n.child[f].pycost
    if top:
        cost += _TUPLE_COST + 8 * n.nchild
    charge_py(left, 1, cost, "row fields")
    values = []
    for f in range(n.nchild):
        if (hdr[f >> 3] >> (f & 7)) & 1:
            if not n.child[f].nullable:
                _fail_col(E_NOT_NULL, f, top)
            values.append(None)
        else:
            try:
                values.append(py_value(&n.child[f], names, b, pos, end, left))
            except _ValueError as e:
                if top and e.column is None:
                    e.column = f
                raise
            except CorruptFileError as e:
                if top:
                    raise RowDecodeError(str(e), None, f) from None
                raise
    if top:
        return tuple(values)
    return dict(zip(<tuple> names[n.row_id], values))


cdef object _fail_col(int code, int f, bint top):
    e = _ValueError(code)
    if top:
        e.column = f
    raise e
