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


ctypedef struct ColStats:
    int mode
    int has             # a non-null value was seen
    int64_t nulls
    int64_t imin        # integers, raw FLOAT/DOUBLE bits, DECIMAL(p <= 18),
    int64_t imax        # TIME millis, timestamps in their Arrow unit
    int64_t kmin        # FLOAT/DOUBLE: Java's total-order keys of imin/imax
    int64_t kmax
    rf_i128 dmin        # DECIMAL(p > 18)
    rf_i128 dmax
    const uint8_t *pmin # STRING/BINARY: the least and greatest so far, in the
    const uint8_t *pmax # batch's buffers until stats_keep copies them to bmin/bmax
    int64_t lmin
    int64_t lmax
    int bmin_own        # pmin points into bmin (else into the batch)
    int bmax_own
    Buf bmin
    Buf bmax


cdef inline int64_t f64_key(int64_t bits) noexcept nogil:
    """A key whose signed order is Double.compare's: NaNs made Java's one
    canonical NaN (the greatest), -0.0 below 0.0."""
    if (bits & 0x7ff0000000000000LL) == 0x7ff0000000000000LL and (bits & 0x000fffffffffffffLL):
        bits = 0x7ff8000000000000LL
    return bits ^ ((bits >> 63) & 0x7fffffffffffffffLL)


cdef inline int64_t f32_key(int32_t bits) noexcept nogil:
    """f64_key for Float.compare."""
    if (bits & 0x7f800000) == 0x7f800000 and (bits & 0x007fffff):
        bits = 0x7fc00000
    return <int64_t> (bits ^ ((bits >> 31) & 0x7fffffff))


cdef inline int bytes_cmp(const uint8_t *a, int64_t la, const uint8_t *b, int64_t lb) noexcept nogil:
    """Unsigned lexicographic order (BinaryString.compareTo, SortUtil.compareBinary)."""
    cdef int64_t n = la if la < lb else lb
    cdef int r = 0
    if n > 0:
        r = memcmp(a, b, <size_t> n)
    if r:
        return r
    return (la > lb) - (la < lb)


cdef inline int64_t int_at(const Node *c, int64_t p) noexcept nogil:
    """The integer a fixed-width value at physical index p stands for."""
    if c.kind == K_I64:
        return rf_ld_i64(c.data + 8 * p)
    if c.kind == K_I32:
        return rf_ld_i32(c.data + 4 * p)
    if c.kind == K_I16:
        return rf_ld_i16(c.data + 2 * p)
    if c.kind == K_I8:
        return <int8_t> c.data[p]
    if c.kind == K_BOOL:
        return (c.data[p >> 3] >> (p & 7)) & 1
    if c.kind == K_DEC64:
        return <int64_t> rf_ld_i128(c.data + 16 * p)
    if c.kind == K_TIME:
        return rf_floordiv(rf_ld_i64(c.data + 8 * p), c.upm)
    return rf_ld_i64(c.data + 8 * p)        # K_TS_NANO: Arrow units


cdef void stats_ints(const Node *c, ColStats *s, int64_t start, int64_t stop) noexcept nogil:
    cdef int64_t j, v
    for j in range(start, stop):
        if not is_valid(c, j):
            s.nulls += 1
            continue
        v = int_at(c, c.off + j)
        if not s.has:
            s.imin = s.imax = v
            s.has = 1
        elif v < s.imin:
            s.imin = v
        elif v > s.imax:
            s.imax = v


cdef void stats_floats(const Node *c, ColStats *s, int64_t start, int64_t stop) noexcept nogil:
    cdef int64_t j, p, bits, k
    for j in range(start, stop):
        if not is_valid(c, j):
            s.nulls += 1
            continue
        p = c.off + j
        if c.kind == K_F64:
            bits = rf_ld_i64(c.data + 8 * p)
            k = f64_key(bits)
        else:
            bits = <int64_t> <uint32_t> rf_ld_i32(c.data + 4 * p)
            k = f32_key(<int32_t> bits)
        if not s.has:
            s.imin = s.imax = bits
            s.kmin = s.kmax = k
            s.has = 1
        elif k < s.kmin:
            s.imin, s.kmin = bits, k
        elif k > s.kmax:
            s.imax, s.kmax = bits, k


cdef void stats_decimals(const Node *c, ColStats *s, int64_t start, int64_t stop) noexcept nogil:
    cdef int64_t j
    cdef rf_i128 v
    for j in range(start, stop):
        if not is_valid(c, j):
            s.nulls += 1
            continue
        v = rf_ld_i128(c.data + 16 * (c.off + j))
        if not s.has:
            s.dmin = s.dmax = v
            s.has = 1
        elif v < s.dmin:
            s.dmin = v
        elif v > s.dmax:
            s.dmax = v


cdef void stats_bytes(const Node *c, ColStats *s, int64_t start, int64_t stop) noexcept nogil:
    cdef int64_t j, p, n
    cdef const uint8_t *v
    for j in range(start, stop):
        if not is_valid(c, j):
            s.nulls += 1
            continue
        p = c.off + j
        v = c.data + c.off32[p]
        n = c.off32[p + 1] - c.off32[p]
        if not s.has:
            s.pmin = s.pmax = v
            s.lmin = s.lmax = n
            s.bmin_own = s.bmax_own = 0
            s.has = 1
        elif bytes_cmp(v, n, s.pmin, s.lmin) < 0:
            s.pmin, s.lmin, s.bmin_own = v, n, 0
        elif bytes_cmp(v, n, s.pmax, s.lmax) > 0:
            s.pmax, s.lmax, s.bmax_own = v, n, 0


cdef int64_t count_nulls(const Node *c, int64_t start, int64_t stop) noexcept nogil:
    cdef int64_t j, n = 0
    if c.valid == NULL:
        return 0
    for j in range(start, stop):
        n += not is_valid(c, j)
    return n


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
    least or greatest string that is still in the batch's buffers (the batch
    goes; the stats stay)."""
    if s.mode == ST_NONE:
        return 0
    if s.mode == ST_COUNTS:
        s.nulls += count_nulls(c, start, stop)
        return 0
    if c.kind == K_STR or c.kind == K_BIN:
        stats_bytes(c, s, start, stop)
        if s.has and not s.bmin_own:
            if keep_bytes(&s.bmin, s.pmin, s.lmin):
                return E_OOM
            s.pmin, s.bmin_own = s.bmin.data, 1
        if s.has and not s.bmax_own:
            if keep_bytes(&s.bmax, s.pmax, s.lmax):
                return E_OOM
            s.pmax, s.bmax_own = s.bmax.data, 1
    elif c.kind == K_F32 or c.kind == K_F64:
        stats_floats(c, s, start, stop)
    elif c.kind == K_DEC128:
        stats_decimals(c, s, start, stop)
    else:
        stats_ints(c, s, start, stop)
    return 0


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
    if s.mode == ST_COUNTS or not s.has:
        return (s.nulls, None, None)
    if c.kind == K_STR or c.kind == K_BIN:
        return (s.nulls, PyBytes_FromStringAndSize(<const char *> s.pmin, s.lmin),
                PyBytes_FromStringAndSize(<const char *> s.pmax, s.lmax))
    if c.kind == K_DEC128:
        nb = rf_i128_to_be_minimal(s.dmin, tmp)
        lo = PyBytes_FromStringAndSize(<const char *> tmp, nb)
        nb = rf_i128_to_be_minimal(s.dmax, tmp)
        return (s.nulls, lo, PyBytes_FromStringAndSize(<const char *> tmp, nb))
    if c.kind == K_F64:
        return (s.nulls, <uint64_t> s.imin, <uint64_t> s.imax)
    if c.kind == K_F32:
        return (s.nulls, s.imin & 0xffffffff, s.imax & 0xffffffff)
    if c.kind == K_TS_NANO:
        return (s.nulls,
                (rf_floordiv(s.imin, c.upm), rf_floormod(s.imin, c.upm) * c.npu),
                (rf_floordiv(s.imax, c.upm), rf_floormod(s.imax, c.upm) * c.npu))
    return (s.nulls, s.imin, s.imax)


cdef int stats_kind_orders(const Node *c) noexcept nogil:
    """Whether Paimon orders values of c's kind (Java's collectors keep a
    min/max only for byte[] and Comparable values; BLOB, VARIANT, ARRAY,
    MAP, MULTISET, ROW and VECTOR values are neither)."""
    return c.kind in (K_BOOL, K_I8, K_I16, K_I32, K_I64, K_F32, K_F64, K_STR, K_BIN,
                      K_DEC64, K_DEC128, K_TIME, K_TS_NANO)
