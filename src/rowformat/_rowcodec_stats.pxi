# Included by _rowcodec.pyx. Value statistics of a file's top-level columns,
# collected by BlockEncoder over each batch it has encoded, in C with the GIL
# released, from the Arrow buffers the plan is bound to (no Python object per
# value): the null count and, for the kinds Paimon orders, the least and
# greatest value in the order of Java's Comparable on Paimon's internal values
# (signed integers, FLOAT/DOUBLE by Float.compare/Double.compare, unsigned
# bytes for strings and binaries, decimals by unscaled value, timestamps by
# instant). Ties keep the first value, as Java's collectors do (it shows in a
# NaN's payload). Truncation and the table's stats modes are rowformat.paimon's.

cdef enum:
    ST_NONE = 0     # nothing
    ST_COUNTS = 1   # the null count
    ST_MINMAX = 2   # the null count, least and greatest


cdef extern from "rf_stats.h" nogil:
    ctypedef struct rf_minmax:
        int has
        int64_t nulls
        int64_t lo
        int64_t hi
    void rf_minmax_i8(rf_minmax *s, const void *data, const uint8_t *valid, int64_t off,
                      int64_t start, int64_t stop)
    void rf_minmax_i16(rf_minmax *s, const void *data, const uint8_t *valid, int64_t off,
                       int64_t start, int64_t stop)
    void rf_minmax_i32(rf_minmax *s, const void *data, const uint8_t *valid, int64_t off,
                       int64_t start, int64_t stop)
    void rf_minmax_i64(rf_minmax *s, const void *data, const uint8_t *valid, int64_t off,
                       int64_t start, int64_t stop)
    void rf_minmax_dec64(rf_minmax *s, const void *data, const uint8_t *valid, int64_t off,
                         int64_t start, int64_t stop)
    void rf_minmax_f32(rf_minmax *s, const void *data, const uint8_t *valid, int64_t off,
                       int64_t start, int64_t stop)
    void rf_minmax_f64(rf_minmax *s, const void *data, const uint8_t *valid, int64_t off,
                       int64_t start, int64_t stop)
    void rf_minmax_bool(rf_minmax *s, const uint8_t *bits, const uint8_t *valid, int64_t off,
                        int64_t start, int64_t stop)
    int64_t rf_first_nan(const void *data, int wide, const uint8_t *valid, int64_t off,
                         int64_t start, int64_t stop, int *found)
    void rf_minmax_bytes(int *has, int64_t *nulls, const uint8_t *data, const int32_t *offs,
                         const uint8_t *valid, int64_t off, int64_t start, int64_t stop,
                         const uint8_t **pmin, int64_t *lmin, const uint8_t **pmax,
                         int64_t *lmax, int *min_moved, int *max_moved)
    int64_t rf_count_nulls(const uint8_t *valid, int64_t off, int64_t start, int64_t stop)
    int64_t RF_F64_NAN_KEY
    int64_t RF_F32_NAN_KEY


ctypedef struct ColStats:
    int mode
    rf_minmax mm        # null count; integers (TIME and TIMESTAMP(p > 3) in their
                        # Arrow unit), FLOAT/DOUBLE as Java's order keys
    int nan_found       # FLOAT/DOUBLE: the first NaN's raw bits (Java keeps its payload)
    int64_t nan_bits
    rf_i128 dmin        # DECIMAL(p > 18)
    rf_i128 dmax
    const uint8_t *pmin # STRING/BINARY: the least and greatest so far (in bmin/bmax:
    const uint8_t *pmax # each batch's are copied there before the batch goes)
    int64_t lmin
    int64_t lmax
    Buf bmin
    Buf bmax


cdef void stats_decimals(const Node *c, ColStats *s, int64_t start, int64_t stop) noexcept nogil:
    cdef int64_t j
    cdef rf_i128 v
    for j in range(start, stop):
        if not is_valid(c, j):
            s.mm.nulls += 1
            continue
        v = rf_ld_i128(c.data + 16 * (c.off + j))
        if not s.mm.has:
            s.dmin = s.dmax = v
            s.mm.has = 1
        elif v < s.dmin:
            s.dmin = v
        elif v > s.dmax:
            s.dmax = v


cdef int keep_bytes(Buf *b, const uint8_t *src, int64_t n) noexcept nogil:
    b.len = 0
    if buf_reserve(b, n if n > 0 else 1):
        return E_OOM
    if n:
        memcpy(b.data, src, n)
    b.len = n
    return 0


cdef int stats_collect(const Node *c, ColStats *s, int64_t start, int64_t stop) noexcept nogil:
    """Adds the logical rows [start, stop) of column c to s, then copies a
    least or greatest string that is in the batch's buffers (the batch goes;
    the stats stay)."""
    cdef int min_moved = 0, max_moved = 0, found = 0
    cdef int64_t bits
    cdef int kind = c.kind
    if s.mode == ST_NONE:
        return 0
    if s.mode == ST_COUNTS:
        s.mm.nulls += rf_count_nulls(c.valid, c.off, start, stop)
        return 0
    if kind == K_STR or kind == K_BIN:
        rf_minmax_bytes(&s.mm.has, &s.mm.nulls, c.data, c.off32, c.valid, c.off, start, stop,
                        &s.pmin, &s.lmin, &s.pmax, &s.lmax, &min_moved, &max_moved)
        if min_moved:
            if keep_bytes(&s.bmin, s.pmin, s.lmin):
                return E_OOM
            s.pmin = s.bmin.data
        if max_moved:
            if keep_bytes(&s.bmax, s.pmax, s.lmax):
                return E_OOM
            s.pmax = s.bmax.data
    elif kind == K_F64 or kind == K_F32:
        if kind == K_F64:
            rf_minmax_f64(&s.mm, c.data, c.valid, c.off, start, stop)
        else:
            rf_minmax_f32(&s.mm, c.data, c.valid, c.off, start, stop)
        if s.mm.has and not s.nan_found and s.mm.hi == (RF_F64_NAN_KEY if kind == K_F64
                                                         else RF_F32_NAN_KEY):
            # the first batch with a NaN: Java keeps the first NaN's bits
            bits = rf_first_nan(c.data, kind == K_F64, c.valid, c.off, start, stop, &found)
            s.nan_found, s.nan_bits = found, bits
    elif kind == K_DEC128:
        stats_decimals(c, s, start, stop)
    elif kind == K_BOOL:
        rf_minmax_bool(&s.mm, c.data, c.valid, c.off, start, stop)
    elif kind == K_I8:
        rf_minmax_i8(&s.mm, c.data, c.valid, c.off, start, stop)
    elif kind == K_I16:
        rf_minmax_i16(&s.mm, c.data, c.valid, c.off, start, stop)
    elif kind == K_I32:
        rf_minmax_i32(&s.mm, c.data, c.valid, c.off, start, stop)
    elif kind == K_DEC64:
        rf_minmax_dec64(&s.mm, c.data, c.valid, c.off, start, stop)
    else:                               # BIGINT, TIME(p > 3), TIMESTAMP: int64 in Arrow
        rf_minmax_i64(&s.mm, c.data, c.valid, c.off, start, stop)
    return 0


cdef inline uint64_t float_bits(const ColStats *s, int64_t key, int wide) noexcept nogil:
    """The raw bits of the FLOAT/DOUBLE whose order key is key."""
    if key == (RF_F64_NAN_KEY if wide else RF_F32_NAN_KEY):
        return <uint64_t> s.nan_bits
    if wide:
        return <uint64_t> (key ^ ((key >> 63) & 0x7fffffffffffffffLL))
    return (<uint64_t> (key ^ ((key >> 31) & 0x7fffffff))) & 0xffffffffu


cdef object stats_result(const Node *c, const ColStats *s):
    """None for ST_NONE, else (null count, min, max); min and max are None
    without a non-null value (or under ST_COUNTS), else Paimon's internal
    value: an int (integers, BOOLEAN 0/1, DATE days, TIME millis, compact
    DECIMAL unscaled, TIMESTAMP(p <= 3) millis), the raw bits of a FLOAT or
    DOUBLE (an unsigned int), bytes (strings as UTF-8, binaries, and a
    DECIMAL(p > 18) as Java's minimal big-endian unscaled bytes), or for
    TIMESTAMP(p > 3) a tuple (epoch millis, nano of milli)."""
    cdef uint8_t tmp[16]
    cdef int nb
    if s.mode == ST_NONE:
        return None
    cdef int64_t lo = s.mm.lo, hi = s.mm.hi
    if s.mode == ST_COUNTS or not s.mm.has:
        return (s.mm.nulls, None, None)
    if c.kind == K_STR or c.kind == K_BIN:
        return (s.mm.nulls, PyBytes_FromStringAndSize(<const char *> s.pmin, s.lmin),
                PyBytes_FromStringAndSize(<const char *> s.pmax, s.lmax))
    if c.kind == K_DEC128:
        nb = rf_i128_to_be_minimal(s.dmin, tmp)
        least = PyBytes_FromStringAndSize(<const char *> tmp, nb)
        nb = rf_i128_to_be_minimal(s.dmax, tmp)
        return (s.mm.nulls, least, PyBytes_FromStringAndSize(<const char *> tmp, nb))
    if c.kind == K_F64 or c.kind == K_F32:
        return (s.mm.nulls, float_bits(s, lo, c.kind == K_F64),
                float_bits(s, hi, c.kind == K_F64))
    if c.kind == K_TIME:
        return (s.mm.nulls, rf_floordiv(lo, c.upm), rf_floordiv(hi, c.upm))
    if c.kind == K_TS_NANO:
        return (s.mm.nulls, (rf_floordiv(lo, c.upm), rf_floormod(lo, c.upm) * c.npu),
                (rf_floordiv(hi, c.upm), rf_floormod(hi, c.upm) * c.npu))
    return (s.mm.nulls, lo, hi)


cdef int stats_kind_orders(const Node *c) noexcept nogil:
    """Whether Paimon orders values of c's kind (Java's collectors keep a
    min/max only for byte[] and Comparable values; BLOB, VARIANT, ARRAY,
    MAP, MULTISET, ROW and VECTOR values are neither)."""
    return c.kind in (K_BOOL, K_I8, K_I16, K_I32, K_I64, K_F32, K_F64, K_STR, K_BIN,
                      K_DEC64, K_DEC128, K_TIME, K_TS_NANO)
