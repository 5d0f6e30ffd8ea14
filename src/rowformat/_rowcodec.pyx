# cython: language_level=3
"""Paimon row bytes <-> Arrow, in C.

A schema becomes a tree of ``Node`` structs (a "plan"). The encoder binds
the plan to an Arrow RecordBatch exported through the Arrow C data interface
and serializes rows into a block buffer with the GIL released. The decoder
parses row bytes into growable per-node builders and hands the finished
buffers to Arrow through the same interface, so no Python object is made per
value. ``decode_row`` is the one path that builds Python values, for
``reader.get(i)``.

Every read of row bytes is bounds-checked; every failure is an error code,
turned into a rowformat exception at the Python edge.
"""
cimport cython
from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t, uintptr_t, INT32_MAX
from libc.stdlib cimport malloc, calloc, realloc, free
from libc.string cimport memcpy, memset
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING
from cpython.pycapsule cimport PyCapsule_GetPointer
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_SIMPLE
from cpython.datetime cimport import_datetime, datetime_new

from rowformat._wire cimport *

import datetime as _dt
import decimal as _decimal

import numpy as _np
import pyarrow as pa

from rowformat.errors import (CorruptFileError, LimitExceededError, RowDecodeError, RowLimitError,
                              ValueConversionError)


cdef enum Kind:
    K_BOOL = 1
    K_I8
    K_I16
    K_I32
    K_I64
    K_F32
    K_F64
    K_BIN       # binary, int32 offsets
    K_STR       # string, int32 offsets, UTF-8 checked on decode
    K_LBIN      # large_binary (BLOB), int64 offsets
    K_DEC64     # DECIMAL p <= 18: int64 unscaled on the wire
    K_DEC128    # DECIMAL p > 18: minimal big-endian bytes on the wire
    K_TIME      # TIME p > 3: int32 millis on the wire, time64 in Arrow
    K_TS_NANO   # TIMESTAMP p > 3: int64 millis + varint nano-of-milli
    K_VARIANT   # varint+value bytes, varint+metadata bytes
    K_LIST
    K_MAP       # MAP and MULTISET: keys array then values array
    K_ROW
    K_VECTOR    # size varint, elements without a null bitmap


# Error codes (negative). Messages live in _ERRORS.
cdef enum:
    E_OOM = -1
    E_TRUNC = -2
    E_VARINT = -3
    E_DEC_OVERFLOW = -4
    E_VARIANT_NULL = -5
    E_VECTOR_NULL = -6
    E_VECTOR_SIZE = -7
    E_ROW_TOO_BIG = -8
    E_UTF8 = -9
    E_TS_RANGE = -10
    E_NANO = -11
    E_MAP_SIZE = -12
    E_NULL_KEY = -13
    E_NOT_NULL = -14
    E_BATCH_TOO_BIG = -15
    E_DEC_EMPTY = -16
    E_ROW_LIMIT = -17
    E_EXPAND_LIMIT = -18
    E_TIME_RANGE = -19

_ERRORS = {
    E_OOM: "out of memory",
    E_TRUNC: "row bytes end in the middle of a value",
    E_VARINT: "malformed varint (longer than 5 bytes or out of range)",
    E_DEC_OVERFLOW: "decimal value does not fit the column's precision",
    E_VARIANT_NULL: "VARIANT value and metadata must not be null",
    E_VECTOR_NULL: "VECTOR elements must not be null",
    E_VECTOR_SIZE: "VECTOR size differs from the declared length",
    E_ROW_TOO_BIG: "row or block larger than 2 GiB",
    E_UTF8: "string is not valid UTF-8",
    E_TS_RANGE: "timestamp out of range for its Arrow unit",
    E_NANO: "nano-of-millisecond out of range [0, 999999]",
    E_MAP_SIZE: "map has different key and value counts",
    E_NULL_KEY: "map key is null, which Arrow maps cannot hold (use reader.get for such rows)",
    E_NOT_NULL: "null in a NOT NULL field",
    E_BATCH_TOO_BIG: "more than 2 GiB of string/binary data in one batch; use a smaller batch_size",
    E_DEC_EMPTY: "decimal with zero bytes",
    E_ROW_LIMIT: "row larger than max_row_size",
    E_TIME_RANGE: "TIME value outside one day [0, 86400000) ms, which Arrow's time types cannot hold",
    E_EXPAND_LIMIT: ("row's nulls expand to more than max_row_size bytes of Arrow placeholders "
                     "(nulls in arrays of VECTOR or ROW values)"),
}


def error_message(int code):
    return _ERRORS.get(code, f"error {code}")


# Growable byte buffers: src/rowformat/_buf.pxd.
from rowformat._buf cimport *


# ---------------------------------------------------------------------------
# The plan: one Node per type in the schema tree.

ctypedef struct Node:
    int kind
    int nullable
    int precision       # DECIMAL
    int scale           # DECIMAL
    int pyconv          # decode_row: which Python type to build (PY_*)
    int row_id          # ROW: index of its field names in RowDecoder.names
    int store           # decode: build Arrow output for this node
    int plain           # decode: width of a value stored as its wire bytes (plain
                        # fixed-width kinds), else 0: dec_field copies these inline
    int64_t upm         # TIME/TS_NANO: Arrow units per millisecond
    int64_t npu         # TS_NANO: nanoseconds per Arrow unit
    int64_t fixed       # VECTOR length
    int nchild
    Node *child
    # encoder: bound Arrow arrays
    const uint8_t *valid
    const uint8_t *data
    const int32_t *off32
    const int64_t *off64
    int64_t off
    int64_t eoff        # MAP: offset of the entries struct
    # decoder: builders
    Buf bits
    Buf vals
    Buf offs
    int64_t blen
    int64_t bnull
    int64_t empty_cost  # decode: bytes dec_empty appends for one null of this node
    int64_t vchecked    # decode, STRING: bytes of vals checked as UTF-8 so far
    int64_t kchecked    # decode, STRING: values checked as UTF-8 so far
    int64_t *budget     # decode: the decoder's placeholder budget for the current row


# How decode_row turns a wire value into a Python value.
cdef enum PyConv:
    PY_PLAIN = 0
    PY_DATE
    PY_TIME
    PY_TS
    PY_TS_LTZ
    PY_TS_NS
    PY_DEC


cdef int _units_per_milli(int precision):
    return 1 if precision <= 3 else 1000 if precision <= 6 else 1000000


cdef int plan_init(Node *n, t, list names=None) except -1:
    """Fills n from a rowformat.types DataType. ``names`` collects the field
    names of every ROW (n.row_id indexes it), for decode_row."""
    cdef str root = t.root
    n.nullable = 1 if t.nullable else 0
    n.store = 1
    n.plain = 0
    n.nchild = 0
    n.child = NULL
    n.pyconv = PY_PLAIN
    if root == "DATE":
        n.pyconv = PY_DATE
    elif root == "TIME":
        n.pyconv = PY_TIME
    elif root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        n.pyconv = PY_TS_NS if t.precision > 6 else PY_TS_LTZ if t.ltz else PY_TS
    elif root == "DECIMAL":
        n.pyconv = PY_DEC
        n.scale = t.scale
    if root == "BOOLEAN":
        n.kind = K_BOOL
    elif root == "TINYINT":
        n.kind = K_I8
    elif root == "SMALLINT":
        n.kind = K_I16
    elif root in ("INT", "DATE"):
        n.kind = K_I32
    elif root == "BIGINT":
        n.kind = K_I64
    elif root == "FLOAT":
        n.kind = K_F32
    elif root == "DOUBLE":
        n.kind = K_F64
    elif root in ("CHAR", "VARCHAR"):
        n.kind = K_STR
    elif root in ("BINARY", "VARBINARY"):
        n.kind = K_BIN
    elif root == "BLOB":
        n.kind = K_LBIN
    elif root == "DECIMAL":
        n.kind = K_DEC64 if t.precision <= 18 else K_DEC128
        n.precision = t.precision
    elif root == "TIME":
        if t.precision <= 3:
            n.kind = K_I32
        else:
            n.kind = K_TIME
            n.upm = _units_per_milli(t.precision)
    elif root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        if t.precision <= 3:
            n.kind = K_I64
        else:
            n.kind = K_TS_NANO
            n.upm = _units_per_milli(t.precision)
            n.npu = 1000000 // n.upm
    elif root == "VARIANT":
        n.kind = K_VARIANT
        _plan_children(n, 2)
        n.child[0].kind = K_BIN
        n.child[1].kind = K_BIN
        n.child[0].store = n.child[1].store = 1
    elif root == "ARRAY":
        n.kind = K_LIST
        _plan_children(n, 1)
        plan_init(&n.child[0], t.element, names)
    elif root == "MULTISET":
        n.kind = K_MAP
        _plan_children(n, 2)
        plan_init(&n.child[0], t.element, names)
        n.child[1].kind = K_I32   # the multiplicity
        n.child[1].store = 1
        n.child[1].plain = 4
    elif root == "MAP":
        n.kind = K_MAP
        _plan_children(n, 2)
        plan_init(&n.child[0], t.key, names)
        plan_init(&n.child[1], t.value, names)
    elif root == "VECTOR":
        n.kind = K_VECTOR
        n.fixed = t.length
        _plan_children(n, 1)
        plan_init(&n.child[0], t.element, names)
        n.child[0].nullable = 0
    elif root == "ROW":
        n.kind = K_ROW
        _plan_children(n, len(t.fields))
        if names is not None:
            n.row_id = len(names)
            names.append(tuple(f.name for f in t.fields))
        for i, f in enumerate(t.fields):
            plan_init(&n.child[i], f.type, names)
    else:
        raise ValueError(f"unsupported type {t}")
    if n.kind in (K_I8, K_I16, K_I32, K_I64, K_F32, K_F64) and n.pyconv != PY_TIME:
        n.plain = _width(n.kind)
    plan_reset_builders(n)
    return 0


cdef int64_t plan_costs(Node *n, int64_t *budget) noexcept nogil:
    """Sets empty_cost (saturating at 2^50) and the budget pointer of n and
    its descendants; returns n's empty_cost."""
    cdef int64_t cost = _width(n.kind) + 1
    cdef int64_t cap = (<int64_t> 1) << 50
    cdef int64_t sub
    cdef int i
    if n.kind in (K_BIN, K_STR, K_LIST, K_MAP):
        cost += 4
    elif n.kind == K_LBIN:
        cost += 8
    for i in range(n.nchild):
        if n.kind == K_VECTOR:
            sub = plan_costs(&n.child[i], budget)
            cost += 0 if n.fixed <= 0 else n.fixed * sub if sub <= cap // n.fixed else cap
        elif n.kind in (K_ROW, K_VARIANT):
            cost += plan_costs(&n.child[i], budget)
        else:
            plan_costs(&n.child[i], budget)
        if cost > cap:
            cost = cap
    n.empty_cost = cost
    n.budget = budget
    return cost


cdef inline int charge_empty(Node *c) noexcept nogil:
    """Charges one null placeholder of c to the row's budget."""
    if c.budget != NULL:
        c.budget[0] -= c.empty_cost
        if c.budget[0] < 0:
            return E_EXPAND_LIMIT
    return 0


cdef int _plan_children(Node *n, int count) except -1:
    n.nchild = count
    n.child = <Node *> calloc(count if count > 0 else 1, sizeof(Node))
    if n.child == NULL:
        raise MemoryError()
    return 0


cdef void plan_free(Node *n) noexcept nogil:
    cdef int i
    for i in range(n.nchild):
        plan_free(&n.child[i])
    free(n.child)
    n.child = NULL
    n.nchild = 0
    buf_free(&n.bits)
    buf_free(&n.vals)
    buf_free(&n.offs)


cdef int plan_reset_builders(Node *n) noexcept nogil:
    """Empties the builders; offsets buffers start with their leading 0."""
    cdef int i
    cdef int64_t zero = 0
    n.bits.len = 0
    n.vals.len = 0
    n.offs.len = 0
    n.blen = 0
    n.bnull = 0
    n.vchecked = 0
    n.kchecked = 0
    if n.kind == K_LBIN:
        if buf_put(&n.offs, &zero, 8):
            return E_OOM
    elif n.kind in (K_BIN, K_STR, K_LIST, K_MAP):
        if buf_put(&n.offs, &zero, 4):
            return E_OOM
    for i in range(n.nchild):
        if plan_reset_builders(&n.child[i]):
            return E_OOM
    return 0


# ---------------------------------------------------------------------------
# Encoder: Arrow -> row bytes.

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

    def __cinit__(self, row_type, int64_t block_size):
        memset(&self.root, 0, sizeof(Node))
        plan_init(&self.root, row_type)
        if block_size < 1 or block_size > INT32_MAX:
            raise ValueError(f"block_size must be in [1, {INT32_MAX}], got {block_size}")
        self.block_size = block_size
        self.nrows = 0

    def __dealloc__(self):
        plan_free(&self.root)
        buf_free(&self.rows)
        buf_free(&self.offs)

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
        return None

    def flush(self):
        """The partial block as bytes, or None when no row is pending."""
        if self.nrows == 0:
            return None
        return self._finish_block()


# ---------------------------------------------------------------------------
# Decoder: row bytes -> Arrow builders.

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


@cython.final   # row_span is called per row: a direct call, not through a vtable
cdef class Block:
    """A decompressed block: its bytes, row count and offset array, checked
    once so that row access is plain arithmetic."""
    cdef readonly object data
    cdef const uint8_t *ptr
    cdef readonly int64_t num_rows
    cdef const uint8_t *offsets
    cdef int64_t data_end
    cdef Py_buffer view

    def __cinit__(self, data):
        PyObject_GetBuffer(data, &self.view, PyBUF_SIMPLE)
        self.data = data
        self.ptr = <const uint8_t *> self.view.buf
        cdef int64_t n = self.view.len
        cdef int64_t rc
        if n < 4:
            raise CorruptFileError(f"block of {n} bytes is shorter than its 4-byte row count")
        rc = rf_ld_i32(self.ptr + n - 4)
        if rc < 0 or 4 * rc > n - 4:
            raise CorruptFileError(f"block of {n} bytes cannot hold its declared {rc} rows")
        self.num_rows = rc
        self.data_end = n - 4 - 4 * rc
        self.offsets = self.ptr + self.data_end

    def __dealloc__(self):
        if self.data is not None:
            PyBuffer_Release(&self.view)

    cdef inline int row_span(self, int64_t i, int64_t *start, int64_t *end) noexcept nogil:
        cdef int64_t s = rf_ld_i32(self.offsets + 4 * i)
        cdef int64_t e = rf_ld_i32(self.offsets + 4 * (i + 1)) if i + 1 < self.num_rows else self.data_end
        if s < 0 or s > e or e > self.data_end:
            return -1
        start[0] = s
        end[0] = e
        return 0

    @property
    def nbytes(self):
        return self.view.len


def _decode_error(int rc, row, column):
    cls = RowLimitError if rc in (E_ROW_LIMIT, E_EXPAND_LIMIT) else RowDecodeError
    return cls(error_message(rc), row, column)


@cython.final   # _decode_one is called per row: a direct call, not through a vtable
cdef class RowDecoder:
    """Decodes rows of blocks under a schema, into Arrow (selected columns,
    in the given order) or into Python tuples."""
    cdef Node root
    cdef list columns
    cdef list names
    cdef object arrow_schema
    cdef int64_t pending
    cdef int64_t budget
    cdef public int64_t max_row_size
    """Rows whose bytes exceed this (0: no limit) are not decoded; the null
    placeholders one row may add to the Arrow builders are bounded by it too."""

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
        plan_costs(&self.root, &self.budget)

    def __dealloc__(self):
        plan_free(&self.root)

    @property
    def pending_rows(self):
        return self.pending

    cdef int _decode_one(self, Block block, int64_t i, int *errcol, bint store) noexcept nogil:
        cdef int64_t s, e, pos
        cdef int rc, f
        if block.row_span(i, &s, &e):
            errcol[0] = -1
            return E_TRUNC
        errcol[0] = -1
        if self.max_row_size > 0 and e - s > self.max_row_size:
            return E_ROW_LIMIT
        self.budget = self.max_row_size if self.max_row_size > 0 else (<int64_t> 1 << 62)
        pos = s
        rc = dec_row(&self.root, block.ptr, &pos, e, block.view.len, store, errcol)
        if rc == 0 and pos != e:
            errcol[0] = -2
            return -100
        return rc

    cdef int64_t _rows(self, Block block, const int64_t *rows, int64_t start, int64_t n,
                       bint store, int64_t *i, int *errcol, int *rc) noexcept nogil:
        """Decodes (or with store=0 walks) rows[:n], or start + 0..n-1 when
        rows is NULL, until one fails (rc, its row i, errcol). Returns the
        index in 0..n-1 of the failing row, or n - 1."""
        cdef int64_t k
        rc[0] = 0
        for k in range(n):
            i[0] = rows[k] if rows != NULL else start + k
            if i[0] < 0 or i[0] >= block.num_rows:
                rc[0] = E_TRUNC
                return k
            rc[0] = self._decode_one(block, i[0], errcol, store)
            if rc[0]:
                return k
            if store:
                self.pending += 1
        return n - 1

    def decode(self, Block block, const int64_t[::1] rows=None, int64_t start=0, int64_t stop=-1):
        """Appends rows of ``block``: the local row numbers ``rows`` if given,
        else ``start:stop``."""
        cdef int64_t k, i, n, s, e, walk_i
        cdef int rc = 0
        cdef int errcol = -1
        cdef int walk_rc, walk_col
        cdef const int64_t *picked = NULL
        if rows is None:
            if stop < 0 or stop > block.num_rows:
                stop = block.num_rows
            n = stop - start if stop > start else 0
        else:
            n = rows.shape[0]
            if n:
                picked = &rows[0]
        with nogil:
            k = self._rows(block, picked, start, n, 1, &i, &errcol, &rc)
            if plan_check_utf8(&self.root):
                # A stored string up to row k is not UTF-8: walk those rows
                # again without storing, which checks each string on its own
                # and stops at the first error of any kind, in row order.
                walk_rc = 0
                self._rows(block, picked, start, min(k + 1, n), 0, &walk_i, &walk_col, &walk_rc)
                if walk_rc:
                    rc, i, errcol = walk_rc, walk_i, walk_col
                elif rc == 0:   # cannot happen: the walk checks what the batch check did
                    rc, errcol = E_UTF8, -1
        if rc:
            self._reset()
            if rc == E_ROW_LIMIT:
                block.row_span(i, &s, &e)
                raise RowLimitError(f"row of {e - s} bytes is larger than max_row_size="
                                    f"{self.max_row_size}", i, None)
            if rc == E_EXPAND_LIMIT:
                raise RowLimitError(f"{error_message(rc)}={self.max_row_size}", i,
                                    errcol if errcol >= 0 else None)
            if errcol == -2:
                raise RowDecodeError("the row's bytes do not match the schema: decoding "
                                     "ended before the row's end", i, None)
            raise _decode_error(rc, i, errcol if errcol >= 0 else None)

    cdef void _reset(self):
        cdef int f
        for f in range(self.root.nchild):
            plan_reset_builders(&self.root.child[f])
        self.pending = 0

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
        """One row as a tuple of Python values (the types: the README's type mappings)."""
        cdef int64_t s, e, pos
        if i < 0 or i >= block.num_rows:
            raise RowDecodeError(f"row {i} outside the block's {block.num_rows} rows", i, None)
        if block.row_span(i, &s, &e):
            raise RowDecodeError(error_message(E_TRUNC), i, None)
        if self.max_row_size > 0 and e - s > self.max_row_size:
            raise RowLimitError(f"row of {e - s} bytes is larger than max_row_size="
                                f"{self.max_row_size}", i, None)
        pos = s
        try:
            values = py_row(&self.root, self.names, block.ptr, &pos, e, 1)
        except _ValueError as exc:
            raise RowDecodeError(error_message(exc.code), i, exc.column) from None
        except RowDecodeError as exc:   # a nested value's error names the column, not the row
            if exc.row is None:
                exc.row = i
            raise
        if pos != e:
            raise RowDecodeError("the row's bytes do not match the schema: decoding "
                                 "ended before the row's end", i, None)
        return values


# ---------------------------------------------------------------------------
# Python values, for get(i). Nested ROW -> dict, MAP/MULTISET -> list of
# (key, value) pairs (as pyarrow's to_pylist gives), TIMESTAMP p <= 6 ->
# datetime, p > 6 -> numpy.datetime64[ns], DECIMAL -> decimal.Decimal.

_EPOCH_ORDINAL = _dt.date(1970, 1, 1).toordinal()
_UTC = _dt.timezone.utc
import_datetime()
_Decimal = _decimal.Decimal


class _ValueError(CorruptFileError):
    """Internal to decode_row (which turns it into a RowDecodeError); a
    CorruptFileError so that it can never escape as anything else."""
    def __init__(self, code, column=None):
        super().__init__(error_message(code))
        self.code = code
        self.column = column


cdef inline object _fail(int code):
    raise _ValueError(code)


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


cdef object py_value(Node *n, list names, const uint8_t *b, int64_t *pos, int64_t end):
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
        return py_row(n, names, b, pos, end, 0)
    if n.kind == K_LIST:
        return py_array(&n.child[0], names, b, pos, end)
    if n.kind == K_MAP:
        keys = py_array(&n.child[0], names, b, pos, end)
        values = py_array(&n.child[1], names, b, pos, end)
        if len(keys) != len(values):
            _fail(E_MAP_SIZE)
        return list(zip(keys, values))
    if n.kind == K_VECTOR:
        rc = rf_read_len(b, &p, end, &ln)
        if rc:
            _fail(E_TRUNC if rc == -1 else E_VARINT)
        if ln != n.fixed:
            _fail(E_VECTOR_SIZE)
        pos[0] = p
        return [py_value(&n.child[0], names, b, pos, end) for k in range(ln)]
    if n.kind == K_VARIANT:
        value = py_value(&n.child[0], names, b, pos, end)
        metadata = py_value(&n.child[1], names, b, pos, end)
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


cdef object py_array(Node *c, list names, const uint8_t *b, int64_t *pos, int64_t end):
    cdef int64_t p = pos[0]
    cdef int64_t size, nb, k
    cdef const uint8_t *bitmap
    cdef int rc = rf_read_len(b, &p, end, &size)
    if rc:
        _fail(E_TRUNC if rc == -1 else E_VARINT)
    nb = (size + 7) >> 3
    if nb > end - p:
        _fail(E_TRUNC)
    bitmap = b + p
    pos[0] = p + nb
    out = []
    for k in range(size):
        if (bitmap[k >> 3] >> (k & 7)) & 1:
            if not c.nullable:
                _fail(E_NOT_NULL)
            out.append(None)
        else:
            out.append(py_value(c, names, b, pos, end))
    return out


cdef object py_row(Node *n, list names, const uint8_t *b, int64_t *pos, int64_t end, bint top):
    cdef int64_t nb = (n.nchild + 7) >> 3
    cdef const uint8_t *hdr
    cdef int f
    if nb > end - pos[0]:
        _fail(E_TRUNC)
    hdr = b + pos[0]
    pos[0] += nb
    values = []
    for f in range(n.nchild):
        if (hdr[f >> 3] >> (f & 7)) & 1:
            if not n.child[f].nullable:
                _fail_col(E_NOT_NULL, f, top)
            values.append(None)
        else:
            try:
                values.append(py_value(&n.child[f], names, b, pos, end))
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

