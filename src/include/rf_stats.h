/* Column statistics loops of the .row encoder (_rowcodec_stats.pxi): the
   least and greatest value and the null count of rows [start, stop) of one
   Arrow array. A column without a validity bitmap takes a loop without
   branches, which the compiler vectorizes. */
#ifndef RF_STATS_H
#define RF_STATS_H

#include <stdint.h>
#include <string.h>

typedef struct {
    int has;            /* a non-null value was seen */
    int64_t nulls;
    int64_t lo, hi;     /* integers (FLOAT/DOUBLE: Java's total-order keys) */
} rf_minmax;

static inline int rf_valid_at(const uint8_t *valid, int64_t p) {
    return (valid[p >> 3] >> (p & 7)) & 1;
}

/* integers read as T at index p * STRIDE (a DECIMAL(p <= 18)'s low word) */
#define RF_MINMAX_INTS(NAME, T, STRIDE)                                              \
static inline void NAME(rf_minmax *s, const void *data, const uint8_t *valid,       \
                        int64_t off, int64_t start, int64_t stop) {                  \
    const T *d = (const T *) data;                                                   \
    int64_t j = start, lo = s->lo, hi = s->hi, nulls = 0;                            \
    if (!s->has) {                                                                   \
        for (; j < stop; j++) {                                                      \
            if (valid && !rf_valid_at(valid, off + j)) { nulls++; continue; }        \
            lo = hi = (int64_t) d[(off + j) * STRIDE]; s->has = 1; j++; break;       \
        }                                                                            \
    }                                                                                \
    if (valid) {                                                                     \
        for (; j < stop; j++) {                                                      \
            int64_t v;                                                               \
            if (!rf_valid_at(valid, off + j)) { nulls++; continue; }                 \
            v = (int64_t) d[(off + j) * STRIDE];                                     \
            lo = v < lo ? v : lo;                                                    \
            hi = v > hi ? v : hi;                                                    \
        }                                                                            \
    } else {                                                                         \
        for (; j < stop; j++) {                                                      \
            int64_t v = (int64_t) d[(off + j) * STRIDE];                             \
            lo = v < lo ? v : lo;                                                    \
            hi = v > hi ? v : hi;                                                    \
        }                                                                            \
    }                                                                                \
    s->lo = lo; s->hi = hi; s->nulls += nulls;                                       \
}

RF_MINMAX_INTS(rf_minmax_i8, int8_t, 1)
RF_MINMAX_INTS(rf_minmax_i16, int16_t, 1)
RF_MINMAX_INTS(rf_minmax_i32, int32_t, 1)
RF_MINMAX_INTS(rf_minmax_i64, int64_t, 1)
RF_MINMAX_INTS(rf_minmax_dec64, int64_t, 2)

/* Double.compare's order as a signed key: every NaN is Java's one canonical
   NaN (the greatest), -0.0 is below 0.0. rf_f64_bits inverts it (a NaN's
   key gives the canonical NaN). */
static inline int64_t rf_f64_key(int64_t bits) {
    if ((bits & 0x7ff0000000000000LL) == 0x7ff0000000000000LL && (bits & 0x000fffffffffffffLL))
        bits = 0x7ff8000000000000LL;
    return bits ^ ((bits >> 63) & 0x7fffffffffffffffLL);
}
static inline int64_t rf_f32_key(int32_t bits) {
    if ((bits & 0x7f800000) == 0x7f800000 && (bits & 0x007fffff))
        bits = 0x7fc00000;
    return (int64_t) (bits ^ ((bits >> 31) & 0x7fffffff));
}
#define RF_F64_NAN_KEY ((int64_t) 0x7ff8000000000000LL)
#define RF_F32_NAN_KEY ((int64_t) 0x7fc00000)

#define RF_MINMAX_FLOATS(NAME, T, KEY)                                               \
static inline void NAME(rf_minmax *s, const void *data, const uint8_t *valid,       \
                        int64_t off, int64_t start, int64_t stop) {                  \
    const T *d = (const T *) data;                                                   \
    int64_t j = start, lo = s->lo, hi = s->hi, nulls = 0;                            \
    if (!s->has) {                                                                   \
        for (; j < stop; j++) {                                                      \
            if (valid && !rf_valid_at(valid, off + j)) { nulls++; continue; }        \
            lo = hi = KEY(d[off + j]); s->has = 1; j++; break;                       \
        }                                                                            \
    }                                                                                \
    for (; j < stop; j++) {                                                          \
        int64_t k;                                                                   \
        if (valid && !rf_valid_at(valid, off + j)) { nulls++; continue; }            \
        k = KEY(d[off + j]);                                                         \
        lo = k < lo ? k : lo;                                                        \
        hi = k > hi ? k : hi;                                                        \
    }                                                                                \
    s->lo = lo; s->hi = hi; s->nulls += nulls;                                       \
}

RF_MINMAX_FLOATS(rf_minmax_f64, int64_t, rf_f64_key)
RF_MINMAX_FLOATS(rf_minmax_f32, int32_t, rf_f32_key)

/* The raw bits of the first NaN among rows [start, stop) (its payload is
   what Java keeps), 0 and *found = 0 when there is none. */
static inline int64_t rf_first_nan(const void *data, int wide, const uint8_t *valid,
                                   int64_t off, int64_t start, int64_t stop, int *found) {
    int64_t j;
    for (j = start; j < stop; j++) {
        if (valid && !rf_valid_at(valid, off + j))
            continue;
        if (wide) {
            int64_t b = ((const int64_t *) data)[off + j];
            if (rf_f64_key(b) == RF_F64_NAN_KEY) { *found = 1; return b; }
        } else {
            int32_t b = ((const int32_t *) data)[off + j];
            if (rf_f32_key(b) == RF_F32_NAN_KEY) { *found = 1; return (int64_t) (uint32_t) b; }
        }
    }
    *found = 0;
    return 0;
}

/* The nulls among rows [start, stop): the zero bits of the validity bitmap
   from off + start, a 64-bit word at a time. */
static inline int64_t rf_count_nulls(const uint8_t *valid, int64_t off, int64_t start,
                                     int64_t stop) {
    int64_t p = off + start, end = off + stop, set = 0;
    if (!valid || stop <= start)
        return 0;
    for (; p < end && (p & 63); p++)
        set += rf_valid_at(valid, p);
    for (; p + 64 <= end; p += 64) {
        uint64_t w;
        memcpy(&w, valid + (p >> 3), 8);
        set += __builtin_popcountll(w);
    }
    for (; p < end; p++)
        set += rf_valid_at(valid, p);
    return (stop - start) - set;
}

/* BOOLEAN: lo = 0 once a false is seen, hi = 1 once a true is; once both
   are, only the nulls are left to count */
static inline void rf_minmax_bool(rf_minmax *s, const uint8_t *bits, const uint8_t *valid,
                                  int64_t off, int64_t start, int64_t stop) {
    int64_t j, nulls = 0;
    int any_false = s->has && s->lo == 0, any_true = s->has && s->hi == 1;
    for (j = start; j < stop && !(any_true && any_false); j++) {
        int64_t p = off + j;
        if (valid && !rf_valid_at(valid, p)) { nulls++; continue; }
        if ((bits[p >> 3] >> (p & 7)) & 1) any_true = 1; else any_false = 1;
    }
    nulls += rf_count_nulls(valid, off, j, stop);
    if (any_true || any_false) {
        s->has = 1;
        s->lo = any_false ? 0 : 1;
        s->hi = any_true ? 1 : 0;
    }
    s->nulls += nulls;
}

static inline int rf_bytes_cmp(const uint8_t *a, int64_t la, const uint8_t *b, int64_t lb) {
    int64_t n = la < lb ? la : lb;
    int r = n > 0 ? memcmp(a, b, (size_t) n) : 0;
    if (r)
        return r;
    return (la > lb) - (la < lb);
}

/* STRING/BINARY (int32 offsets): the least and greatest value as pointers
   into data (or where *pmin/*pmax pointed), ties keeping the first. Most
   values differ from the current least and greatest in their first byte,
   which settles the comparison without a memcmp. */
static inline void rf_minmax_bytes(int *has, int64_t *nulls_out, const uint8_t *data,
                                   const int32_t *offs, const uint8_t *valid, int64_t off,
                                   int64_t start, int64_t stop,
                                   const uint8_t **pmin, int64_t *lmin,
                                   const uint8_t **pmax, int64_t *lmax,
                                   int *min_moved, int *max_moved) {
    int64_t j, nulls = 0;
    const uint8_t *mn = *pmin, *mx = *pmax;
    int64_t ln = *lmin, lx = *lmax;
    for (j = start; j < stop; j++) {
        int64_t p = off + j, n;
        const uint8_t *v;
        if (valid && !rf_valid_at(valid, p)) { nulls++; continue; }
        v = data + offs[p];
        n = offs[p + 1] - offs[p];
        if (!*has) {
            mn = mx = v; ln = lx = n; *has = 1; *min_moved = *max_moved = 1;
            continue;
        }
        if (ln > 0 && (n == 0 || v[0] < mn[0] ||
                       (v[0] == mn[0] && rf_bytes_cmp(v, n, mn, ln) < 0))) {
            mn = v; ln = n; *min_moved = 1;
        } else if (n > 0 && (lx == 0 || v[0] > mx[0] ||
                             (v[0] == mx[0] && rf_bytes_cmp(v, n, mx, lx) > 0))) {
            mx = v; lx = n; *max_moved = 1;
        }
    }
    *pmin = mn; *lmin = ln; *pmax = mx; *lmax = lx;
    *nulls_out += nulls;
}

#endif
