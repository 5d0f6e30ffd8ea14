# cython: language_level=3
"""Fory row format (Standard and Java Compact) in C.

A ``Layout`` tree from ``rowformat.fory.schema`` is copied into a tree of
``Node`` structs (a "plan"). Four paths run over it:

* Python values -> row bytes (``enc_*``), and row bytes -> Python values
  (``dec_*``), used by ``RowEncoder.encode/decode`` and the views;
* Arrow RecordBatch -> rows (``aenc_*``) and rows -> Arrow builders
  (``bdec_*``), nogil, no Python object per value, through the Arrow C data
  interface.

Row bytes are untrusted: every slot offset, size and element count is checked
against the region that contains it before it is followed, so a malformed
row raises MalformedRowError and nothing is read out of bounds.
"""
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t, uintptr_t, INT32_MAX
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memcpy, memset
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING, PyBytes_GET_SIZE, PyBytes_CheckExact
from cpython.unicode cimport PyUnicode_DecodeUTF8, PyUnicode_Check
from cpython.dict cimport PyDict_GetItem, PyDict_SetItem, PyDict_CheckExact
from cpython.list cimport PyList_New, PyList_SET_ITEM, PyList_CheckExact, PyList_GET_SIZE, PyList_GET_ITEM
from cpython.tuple cimport PyTuple_CheckExact, PyTuple_GET_SIZE, PyTuple_GET_ITEM, PyTuple_New, PyTuple_SET_ITEM
from cpython.long cimport PyLong_Check
from cpython.float cimport PyFloat_CheckExact
from cpython.ref cimport PyObject, Py_INCREF
from cpython.pycapsule cimport PyCapsule_GetPointer
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_SIMPLE
cimport cpython.datetime as cdt

from rowformat._wire cimport *

import threading as _threading
import decimal as _decimal
import pyarrow as pa

from rowformat.errors import MalformedRowError, ValueConversionError, SchemaError

cdt.import_datetime()


cdef extern from *:
    """
    #define FORY_U32_MAX ((int64_t)0xFFFFFFFFLL)
    #define FORY_US_PER_DAY ((int64_t)86400000000LL)
    """
    int64_t U32_MAX "FORY_U32_MAX"
    int64_t US_PER_DAY "FORY_US_PER_DAY"


cdef extern from "Python.h":
    int PyFloat_Pack2(double x, char *p, int le) except -1
    double PyFloat_Unpack2(const char *p, int le) except? -1.0
    const char *PyUnicode_AsUTF8AndSize(object s, Py_ssize_t *size) except NULL
    long long PyLong_AsLongLongAndOverflow(object v, int *overflow) except? -1
    double PyFloat_AsDouble(object v) except? -1.0
    double PyFloat_AS_DOUBLE(object v)
    object PyFloat_FromDouble(double v)
    object PyLong_FromLongLong(long long v)
    object PyBool_FromLong(long v)
    PyObject *PyObject_GetAttr(object o, object name)
    void PyErr_Clear()


# Kinds: keep in sync with rowformat/fory/schema.py.
cdef enum Kind:
    K_BOOL = 1
    K_I8 = 2
    K_I16 = 3
    K_I32 = 4
    K_I64 = 5
    K_F16 = 6
    K_F32 = 7
    K_F64 = 8
    K_DATE = 9
    K_TS = 10
    K_DUR = 11
    K_STR = 12
    K_BIN = 13
    K_DEC = 14
    K_LIST = 15
    K_MAP = 16
    K_STRUCT = 17

cdef enum:
    E_OOM = -1
    E_BOUNDS = -2
    E_COUNT = -3
    E_MAP_COUNT = -4
    E_NOT_NULL = -5
    E_UTF8 = -6
    E_DEC_RANGE = -7
    E_TOO_BIG = -8
    E_DEC_SIZE = -9
    E_FIXED = -10
    E_INPUT_NULL = -11
    E_ALIAS = -12

_MESSAGES = {
    E_OOM: "out of memory",
    E_BOUNDS: "an offset+size slot points outside its containing row/array",
    E_COUNT: "an array element count is negative or larger than its array",
    E_MAP_COUNT: "a map's key and value arrays have different lengths",
    E_NOT_NULL: "a null value in a non-nullable field or element",
    E_UTF8: "a utf8 value is not valid UTF-8",
    E_DEC_RANGE: "a decimal does not fit the Arrow decimal type",
    E_TOO_BIG: "the data exceeds the format's 32-bit offsets (or 2 GiB per Arrow binary array)",
    E_DEC_SIZE: "a decimal value is not 32 bytes",
    E_FIXED: "the row/array is smaller than its fixed region",
    E_INPUT_NULL: "the input binary array has a null row",
    E_ALIAS: ("the row holds more values than its size allows: its offset+size slots point "
              "into the same bytes more than once"),
}


cdef inline int64_t _value_budget(int64_t size) noexcept nogil:
    """How many fields and elements a row of `size` bytes may decode to. Every
    value of a well-formed row occupies bytes of its own (at least a bit of a
    bitmap and its slot), so this only stops rows whose slots alias the same
    bytes over and over: nested that way, a few KiB could decode to billions
    of values."""
    return 8 * size + 4096


cdef inline int _charge(int64_t *bud, int64_t n) noexcept nogil:
    if bud != NULL:
        bud[0] -= n
        if bud[0] < 0:
            return E_ALIAS
    return 0


# ---------------------------------------------------------------------------
# Growable byte buffers: src/rowformat/_buf.pxd.
from rowformat._buf cimport *


cdef inline int64_t round8(int64_t n) noexcept nogil:
    return (n + 7) & ~(<int64_t> 7)


# ---------------------------------------------------------------------------
# Plan nodes.

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


# ---------------------------------------------------------------------------
# Python values -> row bytes.

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


# ---------------------------------------------------------------------------
# Row bytes -> Python values.

cdef object _malformed(int rc, str where=""):
    return MalformedRowError(_MESSAGES.get(rc, "malformed row") + (f" ({where})" if where else ""))


cdef inline int var_span(const uint8_t *p, int64_t size, int64_t slot,
                         const uint8_t **out, int64_t *outsize) noexcept nogil:
    """Follows the offset+size slot at p+slot of a region of `size` bytes."""
    cdef uint64_t x = <uint64_t> rf_ld_i64(p + slot)
    cdef uint64_t off = x >> 32
    cdef uint64_t sz = x & U32_MAX
    if off + sz > <uint64_t> size:
        return E_BOUNDS
    out[0] = p + off
    outsize[0] = <int64_t> sz
    return 0


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
    u = int.from_bytes(PyBytes_FromStringAndSize(<const char *> q, 32), "little", signed=True)
    return _decimal.Decimal(u).scaleb(-n.scale, _DEC_CTX)


cdef object dec_val(Node *c, const uint8_t *p, int64_t size, int64_t slot, bint views, object owner,
                    int64_t *bud):
    """The non-null value of node c whose slot is at p+slot; p..p+size is the
    containing row or array, already checked to hold the slot. With `views`,
    nested structs/lists/maps come back as views sharing `owner`."""
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
        rc = var_span(p, size, slot, &q, &sz)
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
            val = None
        else:
            val = dec_val(&n.child[j], p, size, n.slot[j], False, None, bud)
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
    cdef int64_t n, hdr, i
    cdef int rc = arr_check(e, p, size, &n, &hdr)
    cdef bint has_bm = arr_has_bitmap(e)
    cdef const uint8_t *bm = p + arr_bitmap_off(e)
    cdef list out
    cdef object val
    if rc == 0:
        rc = _charge(bud, n)
    if rc:
        raise _malformed(rc, _fname(e))
    out = PyList_New(n)
    for i in range(n):
        if has_bm and bit_get(bm, i):
            if not e.nullable:
                raise _malformed(E_NOT_NULL, _fname(e))
            val = None
        else:
            val = dec_val(e, p, size, hdr + i * e.elem_width, False, None, bud)
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


# ---------------------------------------------------------------------------
# The plan object and the Python-facing encoder.

cdef class Plan:
    """C copy of a schema Layout; owns the Node tree."""
    cdef Node root
    cdef list keep
    cdef readonly object layout
    cdef readonly bint compact
    cdef dict name_index
    cdef object busy   # held while the Node tree's Arrow bindings/builders are in use

    def __cinit__(self):
        memset(&self.root, 0, sizeof(Node))

    def __init__(self, layout, bint compact):
        self.keep = []
        self.layout = layout
        self.compact = compact
        node_init(&self.root, layout, compact, self.keep)
        self.busy = _threading.Lock()
        self.name_index = <dict> self.root.index

    def __dealloc__(self):
        node_free(&self.root)

    def encode(self, value):
        """Row bytes for value (dict, object with attributes, or tuple)."""
        cdef Buf b
        memset(&b, 0, sizeof(Buf))
        try:
            enc_row(&self.root, value, &b)
            return PyBytes_FromStringAndSize(<const char *> b.data, b.len)
        finally:
            buf_free(&b)

    def decode(self, data, Py_ssize_t offset=0):
        cdef Py_buffer view
        cdef int64_t bud
        PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
        try:
            if offset < 0 or offset > view.len:
                raise MalformedRowError(f"offset {offset} outside a buffer of {view.len} bytes")
            bud = _value_budget(view.len - offset)
            return dec_row(&self.root, <const uint8_t *> view.buf + offset, view.len - offset, &bud)
        finally:
            PyBuffer_Release(&view)

    def decode_bytes(self, bytes data):
        cdef int64_t bud = _value_budget(PyBytes_GET_SIZE(data))
        return dec_row(&self.root, <const uint8_t *> PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data), &bud)

    def view(self, data, Py_ssize_t offset=0):
        cdef _Owner owner = _Owner(data)
        owner.plan = self
        if offset < 0 or offset > owner.view.len:
            raise MalformedRowError(f"offset {offset} outside a buffer of {owner.view.len} bytes")
        return _make_struct_view_top(self, &self.root, <const uint8_t *> owner.view.buf + offset,
                                     owner.view.len - offset, owner)

    # -- Arrow batches ------------------------------------------------------

    def encode_batch(self, batch):
        """RecordBatch (already in this plan's Arrow schema) -> BinaryArray.
        Plans are shared (cached per schema); the Node tree holds the batch's
        bindings, so a call that finds it in use by another thread works on
        a private copy of the plan."""
        if not self.busy.acquire(False):
            return Plan(self.layout, self.compact)._encode_batch(batch)
        try:
            return self._encode_batch(batch)
        finally:
            self.busy.release()

    def _encode_batch(self, batch):
        cdef object caps = batch.__arrow_c_array__()
        cdef ArrowArray *arr = <ArrowArray *> PyCapsule_GetPointer(caps[1], "arrow_array")
        cdef int64_t n = arr.length, r
        cdef int rc = 0
        cdef Buf data, offs
        cdef int64_t start
        cdef int32_t o32
        cdef ArrowArray *out
        memset(&data, 0, sizeof(Buf))
        memset(&offs, 0, sizeof(Buf))
        abind_struct_children(&self.root, arr, arr.offset)
        with nogil:
            if buf_reserve(&offs, 4 * (n + 1)):
                rc = E_OOM
            else:
                rf_st_i32(offs.data, 0)
                offs.len = 4
                r = 0
                while r < n:
                    start = buf_zero(&data, self.root.fixed)
                    if start < 0:
                        rc = E_OOM
                        break
                    rc = aenc_fields(&self.root, r, &data, start, start)
                    if rc:
                        break
                    if data.len > INT32_MAX:
                        rc = E_TOO_BIG
                        break
                    o32 = <int32_t> data.len
                    rf_st_i32(offs.data + offs.len, o32)
                    offs.len += 4
                    r += 1
                    if r == 256 and n > 512:
                        # size the output once from the first rows instead
                        # of doubling (and copying) it log2(n) times
                        if buf_reserve(&data, <int64_t> (data.len / 256.0 * (n - 256) * 1.05)):
                            rc = E_OOM
                            break
        if rc:
            buf_free(&data)
            buf_free(&offs)
            if rc == E_NOT_NULL:
                raise ValueConversionError(f"row {r}: {_MESSAGES[rc]}")
            raise ValueConversionError(f"row {r}: {_MESSAGES.get(rc, 'encode failed')}")
        out = rf_arrow_new(3, 0)
        if out == NULL:
            buf_free(&data)
            buf_free(&offs)
            raise MemoryError()
        out.length = n
        out.buffers[0] = NULL
        out.buffers[1] = buf_take(&offs)
        out.buffers[2] = buf_take(&data)
        try:
            return pa.Array._import_from_c(<uintptr_t> out, pa.binary())
        finally:
            free(out)

    def decode_batch(self, binary_array, arrow_schema):
        """BinaryArray of rows -> RecordBatch with `arrow_schema`. The
        builders live in the Node tree: see encode_batch for sharing."""
        if not self.busy.acquire(False):
            return Plan(self.layout, self.compact)._decode_batch(binary_array, arrow_schema)
        try:
            return self._decode_batch(binary_array, arrow_schema)
        finally:
            self.busy.release()

    def _decode_batch(self, binary_array, arrow_schema):
        cdef object caps = binary_array.__arrow_c_array__()
        cdef ArrowSchema *sch = <ArrowSchema *> PyCapsule_GetPointer(caps[0], "arrow_schema")
        cdef ArrowArray *arr = <ArrowArray *> PyCapsule_GetPointer(caps[1], "arrow_array")
        cdef bytes fmt = sch.format
        cdef bint large
        cdef int64_t n = arr.length, r, s, e, i
        cdef const uint8_t *valid
        cdef const uint8_t *data
        cdef const int32_t *o32
        cdef const int64_t *o64
        cdef int rc = 0
        cdef int64_t bud
        cdef ArrowArray *top
        if fmt == b"z":
            large = False
        elif fmt == b"Z":
            large = True
        else:
            raise SchemaError(f"decode_batch expects a binary or large_binary array, got format {fmt!r}")
        valid = <const uint8_t *> arr.buffers[0]
        o32 = <const int32_t *> arr.buffers[1]
        o64 = <const int64_t *> arr.buffers[1]
        data = <const uint8_t *> arr.buffers[2]
        bld_reset_children(&self.root)
        with nogil:
            for r in range(n):
                i = r + arr.offset
                if valid != NULL and not bit_get(valid, i):
                    rc = E_INPUT_NULL
                    break
                if large:
                    s = o64[i]
                    e = o64[i + 1]
                else:
                    s = o32[i]
                    e = o32[i + 1]
                bud = _value_budget(e - s)
                rc = bdec_fields(&self.root, data + s, e - s, &bud)
                if rc:
                    break
                if r == 255 and n > 512:
                    # size the builders once from the first rows
                    if bld_prereserve(&self.root, (n - 256) / 256.0 * 1.05):
                        rc = E_OOM
                        break
        if rc:
            bld_reset_children(&self.root)
            raise MalformedRowError(f"row {r}: {_MESSAGES.get(rc, 'malformed row')}")
        top = rf_arrow_new(1, self.root.nchild)
        if top == NULL:
            raise MemoryError()
        top.length = n
        for i in range(self.root.nchild):
            top.children[i] = bld_finish(&self.root.child[self.root.decl[i]])
            if top.children[i] == NULL:
                top.n_children = i
                rf_arrow_release(top)
                free(top)
                raise MemoryError()
        try:
            return pa.RecordBatch._import_from_c(<uintptr_t> top, arrow_schema)
        finally:
            free(top)


# ---------------------------------------------------------------------------
# Arrow -> rows (encode_batch). Indices passed around are logical indices
# of the parent; each node adds its own a_off to reach its buffers.

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


# ---------------------------------------------------------------------------
# Rows -> Arrow builders (decode_batch).

cdef void bld_reset(Node *n) noexcept nogil:
    cdef int i
    n.b_valid.len = 0
    n.b_data.len = 0
    n.b_offs.len = 0
    n.b_len = 0
    n.b_null = 0
    n.b_nbytes = 0
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


cdef int bdec_value(Node *c, const uint8_t *p, int64_t size, int64_t slot, int64_t *bud) noexcept nogil:
    """Appends the non-null value of c whose slot is at p+slot."""
    cdef int k = c.kind
    cdef int rc, j
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
    rc = var_span(p, size, slot, &q, &sz)
    if rc:
        return rc
    if k == K_STR or k == K_BIN:
        if k == K_STR and not rf_utf8_valid(q, sz):
            return E_UTF8
        if buf_reserve(&c.b_data, sz):
            return E_OOM
        if sz:  # (memcpy to a NULL buffer is undefined even for 0 bytes)
            memcpy(c.b_data.data + c.b_data.len, q, sz)
        c.b_data.len += sz
        c.b_nbytes += sz
        return bld_offset(c, c.b_nbytes)
    elif k == K_DEC:
        if sz != 32:
            return E_DEC_SIZE
        w = 32 if c.dec256 else 16
        if not c.dec256:
            for j in range(16, 32):
                if q[j] != (0xFF if (q[15] & 0x80) else 0):
                    return E_DEC_RANGE
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
            return rc
        rc = bdec_array(&c.child[0], q + 8, ks, bud)
        if rc:
            return rc
        rc = bdec_array(&c.child[1], q + 8 + ks, sz - 8 - ks, bud)
        if rc:
            return rc
        if c.child[0].b_len != c.child[1].b_len:
            return E_MAP_COUNT
        return bld_offset(c, c.child[0].b_len)
    elif k == K_STRUCT:
        return bdec_fields(c, q, sz, bud)
    return 0


cdef int bdec_fields(Node *n, const uint8_t *p, int64_t size, int64_t *bud) noexcept nogil:
    cdef int j, rc
    if size < n.fixed:
        return E_FIXED
    if _charge(bud, n.nchild):
        return E_ALIAS
    for j in range(n.nchild):
        if n.bitmap_bytes and bit_get(p + n.bitmap_off, j):
            rc = bld_null(&n.child[j])
        else:
            rc = bdec_value(&n.child[j], p, size, n.slot[j], bud)
        if rc:
            return rc
    return 0


cdef int bdec_array(Node *e, const uint8_t *p, int64_t size, int64_t *bud) noexcept nogil:
    cdef int64_t n, hdr, i
    cdef int rc = arr_check(e, p, size, &n, &hdr)
    cdef bint has_bm = arr_has_bitmap(e)
    cdef const uint8_t *bm = p + arr_bitmap_off(e)
    if rc == 0:
        rc = _charge(bud, n)
    if rc:
        return rc
    for i in range(n):
        if has_bm and bit_get(bm, i):
            if not e.nullable:
                # Arrow rejects (aborts on) null map keys; treat any null in
                # a non-nullable element type as malformed
                return E_NOT_NULL
            rc = bld_null(e)
        else:
            rc = bdec_value(e, p, size, hdr + i * e.elem_width, bud)
        if rc:
            return rc
    return 0


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


# ---------------------------------------------------------------------------
# Zero-copy views.

cdef class _Owner:
    """Holds the Py_buffer of the viewed object for as long as any view
    lives."""
    cdef Py_buffer view
    cdef object obj
    cdef object plan   # keeps the Node tree the views point into alive

    def __cinit__(self, obj):
        PyObject_GetBuffer(obj, &self.view, PyBUF_SIMPLE)
        self.obj = obj

    def __dealloc__(self):
        if self.obj is not None:
            PyBuffer_Release(&self.view)


cdef class StructView:
    """A Fory row (or nested struct) over a buffer, read field by field.

    ``view[i]`` / ``view["name"]`` return scalars as Python values and nested
    structs, lists and maps as views. Field indices follow the schema's
    declaration order (also for Compact, whose bytes use the sorted order).
    """
    cdef Plan plan
    cdef Node *node
    cdef const uint8_t *p
    cdef int64_t size
    cdef _Owner owner
    cdef dict index

    def __len__(self):
        return self.node.nchild

    @property
    def size_bytes(self):
        return self.size

    cdef inline int _slot(self, Py_ssize_t i, int kind) except -2:
        """Layout index of declared field i, or -1 when it is null."""
        cdef int j
        cdef Node *n = self.node
        if i < 0 or i >= n.nchild:
            raise IndexError(f"field index {i} out of range for {n.nchild} fields")
        j = n.decl[i]
        if kind and n.child[j].kind != kind:
            raise TypeError(f"field {_fname(&n.child[j])!r} is {(<object> n.child[j].layout).arrow_type}, "
                            "not the getter's type")
        if n.bitmap_bytes and bit_get(self.p + n.bitmap_off, j):
            return -1
        return j

    cdef Py_ssize_t _index(self, key) except -1:
        if isinstance(key, int):
            return key
        idx = self.index.get(key)
        if idx is None:
            raise KeyError(key)
        return idx

    def __getitem__(self, key):
        cdef int j = self._slot(self._index(key), 0)
        if j < 0:
            return None
        return dec_val(&self.node.child[j], self.p, self.size, self.node.slot[j], True, self.owner, NULL)

    def get(self, key):
        return self[key]

    def __getattr__(self, str name):
        idx = self.index.get(name)
        if idx is None:
            raise AttributeError(name)
        return self[idx]

    def is_null(self, key):
        return self._slot(self._index(key), 0) < 0

    def keys(self):
        return [(<object> self.node.child[self.node.decl[i]].layout).name for i in range(self.node.nchild)]

    def get_bool(self, Py_ssize_t i):
        cdef int j = self._slot(i, K_BOOL)
        return None if j < 0 else self.p[self.node.slot[j]] != 0

    def get_int8(self, Py_ssize_t i):
        cdef int j = self._slot(i, K_I8)
        return None if j < 0 else <int8_t> self.p[self.node.slot[j]]

    def get_int16(self, Py_ssize_t i):
        cdef int j = self._slot(i, K_I16)
        return None if j < 0 else rf_ld_i16(self.p + self.node.slot[j])

    def get_int32(self, Py_ssize_t i):
        cdef int j = self._slot(i, K_I32)
        return None if j < 0 else rf_ld_i32(self.p + self.node.slot[j])

    def get_int64(self, Py_ssize_t i):
        cdef int j = self._slot(i, K_I64)
        return None if j < 0 else rf_ld_i64(self.p + self.node.slot[j])

    def get_float16(self, Py_ssize_t i):
        return self._typed(i, K_F16)

    def get_float32(self, Py_ssize_t i):
        cdef float f
        cdef int j = self._slot(i, K_F32)
        if j < 0:
            return None
        memcpy(&f, self.p + self.node.slot[j], 4)
        return f

    def get_float64(self, Py_ssize_t i):
        cdef double d
        cdef int j = self._slot(i, K_F64)
        if j < 0:
            return None
        memcpy(&d, self.p + self.node.slot[j], 8)
        return d

    def get_str(self, Py_ssize_t i):
        cdef const uint8_t *q
        cdef int64_t sz
        cdef int j = self._slot(i, K_STR)
        if j < 0:
            return None
        if var_span(self.p, self.size, self.node.slot[j], &q, &sz):
            raise _malformed(E_BOUNDS, _fname(&self.node.child[j]))
        try:
            return PyUnicode_DecodeUTF8(<const char *> q, sz, NULL)
        except UnicodeDecodeError:
            raise _malformed(E_UTF8, _fname(&self.node.child[j])) from None

    def get_binary(self, Py_ssize_t i):
        return self._typed(i, K_BIN)

    def get_date(self, Py_ssize_t i):
        return self._typed(i, K_DATE)

    def get_datetime(self, Py_ssize_t i):
        return self._typed(i, K_TS)

    def get_duration(self, Py_ssize_t i):
        return self._typed(i, K_DUR)

    def get_decimal(self, Py_ssize_t i):
        return self._typed(i, K_DEC)

    def get_struct(self, Py_ssize_t i):
        return self._typed(i, K_STRUCT)

    def get_array(self, Py_ssize_t i):
        return self._typed(i, K_LIST)

    def get_map(self, Py_ssize_t i):
        return self._typed(i, K_MAP)

    cdef object _typed(self, Py_ssize_t i, int kind):
        cdef int j = self._slot(i, kind)
        if j < 0:
            return None
        return dec_val(&self.node.child[j], self.p, self.size, self.node.slot[j], True, self.owner, NULL)

    def to_dict(self):
        """The whole struct decoded to a dict (nested values decoded too)."""
        cdef int64_t bud = _value_budget(self.size)
        return dec_row(self.node, self.p, self.size, &bud)

    def to_bytes(self):
        return PyBytes_FromStringAndSize(<const char *> self.p, self.size)

    def __repr__(self):
        return f"StructView({self.to_dict()!r})"


cdef object _make_struct_view_top(Plan plan, Node *n, const uint8_t *p, int64_t size, _Owner owner):
    cdef StructView v
    if size < n.fixed:
        raise _malformed(E_FIXED, "row")
    v = StructView.__new__(StructView)
    v.plan = plan
    v.node = n
    v.p = p
    v.size = size
    v.owner = owner
    v.index = plan.name_index
    return v


cdef object _make_struct_view(Node *n, const uint8_t *p, int64_t size, _Owner owner):
    cdef StructView v
    if size < n.fixed:
        raise _malformed(E_FIXED, _fname(n))
    v = StructView.__new__(StructView)
    v.node = n
    v.p = p
    v.size = size
    v.owner = owner
    v.index = <dict> n.index
    return v


cdef class ArrayView:
    """A Fory array over a buffer: ``len``, ``[j]``, typed getters."""
    cdef Node *elem
    cdef const uint8_t *p
    cdef int64_t size
    cdef int64_t n
    cdef int64_t hdr
    cdef _Owner owner

    def __len__(self):
        return self.n

    @property
    def num_elements(self):
        return self.n

    cdef inline int64_t _slot(self, Py_ssize_t j, int kind) except -2:
        if j < 0:
            j += self.n
        if j < 0 or j >= self.n:
            raise IndexError(f"element index {j} out of range for {self.n} elements")
        if kind and self.elem.kind != kind:
            raise TypeError(f"elements are {(<object> self.elem.layout).arrow_type}, not the getter's type")
        if arr_has_bitmap(self.elem) and bit_get(self.p + arr_bitmap_off(self.elem), j):
            return -1
        return self.hdr + j * self.elem.elem_width

    def __getitem__(self, Py_ssize_t j):
        cdef int64_t s = self._slot(j, 0)
        if s < 0:
            return None
        return dec_val(self.elem, self.p, self.size, s, True, self.owner, NULL)

    def get(self, Py_ssize_t j):
        return self[j]

    def is_null(self, Py_ssize_t j):
        return self._slot(j, 0) < 0

    cdef object _typed(self, Py_ssize_t j, int kind):
        cdef int64_t s = self._slot(j, kind)
        if s < 0:
            return None
        return dec_val(self.elem, self.p, self.size, s, True, self.owner, NULL)

    def get_bool(self, Py_ssize_t j): return self._typed(j, K_BOOL)
    def get_int8(self, Py_ssize_t j): return self._typed(j, K_I8)
    def get_int16(self, Py_ssize_t j): return self._typed(j, K_I16)
    def get_int32(self, Py_ssize_t j): return self._typed(j, K_I32)
    def get_int64(self, Py_ssize_t j): return self._typed(j, K_I64)
    def get_float16(self, Py_ssize_t j): return self._typed(j, K_F16)
    def get_float32(self, Py_ssize_t j): return self._typed(j, K_F32)
    def get_float64(self, Py_ssize_t j): return self._typed(j, K_F64)
    def get_str(self, Py_ssize_t j): return self._typed(j, K_STR)
    def get_binary(self, Py_ssize_t j): return self._typed(j, K_BIN)
    def get_date(self, Py_ssize_t j): return self._typed(j, K_DATE)
    def get_datetime(self, Py_ssize_t j): return self._typed(j, K_TS)
    def get_duration(self, Py_ssize_t j): return self._typed(j, K_DUR)
    def get_decimal(self, Py_ssize_t j): return self._typed(j, K_DEC)
    def get_struct(self, Py_ssize_t j): return self._typed(j, K_STRUCT)
    def get_array(self, Py_ssize_t j): return self._typed(j, K_LIST)
    def get_map(self, Py_ssize_t j): return self._typed(j, K_MAP)

    def __iter__(self):
        for j in range(self.n):
            yield self[j]

    def to_list(self):
        cdef int64_t bud = _value_budget(self.size)
        return dec_array(self.elem, self.p, self.size, &bud)

    def __repr__(self):
        return f"ArrayView({self.to_list()!r})"


cdef object _make_array_view(Node *e, const uint8_t *p, int64_t size, _Owner owner):
    cdef ArrayView v
    cdef int64_t n, hdr
    cdef int rc = arr_check(e, p, size, &n, &hdr)
    if rc:
        raise _malformed(rc, _fname(e))
    v = ArrayView.__new__(ArrayView)
    v.elem = e
    v.p = p
    v.size = size
    v.n = n
    v.hdr = hdr
    v.owner = owner
    return v


cdef class MapView:
    """A Fory map over a buffer: ``keys()`` and ``values()`` array views."""
    cdef ArrayView _keys
    cdef ArrayView _values

    def keys(self):
        return self._keys

    def values(self):
        return self._values

    def keys_array(self):
        return self._keys

    def values_array(self):
        return self._values

    def __len__(self):
        return self._keys.n

    def items(self):
        return list(zip(self._keys, self._values))

    def to_list(self):
        return list(zip(self._keys.to_list(), self._values.to_list()))

    def __repr__(self):
        return f"MapView({self.to_list()!r})"


cdef object _make_map_view(Node *n, const uint8_t *p, int64_t size, _Owner owner):
    cdef int64_t ks
    cdef MapView v
    cdef int rc = map_split(p, size, &ks)
    if rc:
        raise _malformed(rc, _fname(n))
    v = MapView.__new__(MapView)
    v._keys = _make_array_view(&n.child[0], p + 8, ks, owner)
    v._values = _make_array_view(&n.child[1], p + 8 + ks, size - 8 - ks, owner)
    if v._keys.n != v._values.n:
        raise _malformed(E_MAP_COUNT, _fname(n))
    return v
