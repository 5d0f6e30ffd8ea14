/* Wire primitives shared by the Cython modules: little-endian loads and
 * stores, unsigned LEB128 varints (bounded), 64-bit zigzag, and Paimon's
 * delta-varint arrays (the .row block index and the .blob row index).
 * Everything is static inline; nothing here allocates or touches Python. */
#ifndef RF_WIRE_H
#define RF_WIRE_H

#include <stdint.h>
#include <string.h>
/* SSE2 is part of x86-64; RF_NO_SIMD builds the portable code (tests). */
#if (defined(__SSE2__) || defined(_M_X64)) && !defined(RF_NO_SIMD)
#define RF_SSE2 1
#include <emmintrin.h>
#endif

#if defined(__GNUC__) || defined(__clang__)
#define RF_NOINLINE __attribute__((noinline))
#elif defined(_MSC_VER)
#define RF_NOINLINE __declspec(noinline)
#else
#define RF_NOINLINE
#endif

static inline int16_t rf_ld_i16(const uint8_t *p) { int16_t v; memcpy(&v, p, 2); return v; }
static inline int32_t rf_ld_i32(const uint8_t *p) { int32_t v; memcpy(&v, p, 4); return v; }
static inline int64_t rf_ld_i64(const uint8_t *p) { int64_t v; memcpy(&v, p, 8); return v; }
static inline void rf_st_i16(uint8_t *p, int16_t v) { memcpy(p, &v, 2); }
static inline void rf_st_i32(uint8_t *p, int32_t v) { memcpy(p, &v, 4); }
static inline void rf_st_i64(uint8_t *p, int64_t v) { memcpy(p, &v, 8); }

/* Reads an unsigned LEB128 of at most max_bytes bytes from [*pos, end).
 * Returns 0 on success, -1 when truncated, -2 when longer than max_bytes
 * (the continuation bit set on byte max_bytes), -3 when the value does not
 * fit 64 bits: a last 10th byte holds bit 63 only, so it is 0x00 or 0x01.
 * Paimon bounds int32 varints at 5 bytes and index values at 10. */
static inline int rf_read_uvarint(const uint8_t *buf, int64_t *pos, int64_t end,
                                  int max_bytes, uint64_t *out) {
    uint64_t v = 0;
    int shift = 0;
    int64_t p = *pos;
    for (int i = 0; i < max_bytes; i++) {
        if (p >= end) return -1;
        uint8_t b = buf[p++];
        if (shift == 63 && (b & 0x7E)) return (b & 0x80) ? -2 : -3;
        v |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) { *pos = p; *out = v; return 0; }
        shift += 7;
    }
    return -2;
}

/* Reads an int32 length/size varint (at most 5 bytes) that must lie in
 * [0, 2^31). Returns 0, -1 (truncated) or -2 (malformed). */
static inline int rf_read_len(const uint8_t *buf, int64_t *pos, int64_t end, int64_t *out) {
    uint64_t v;
    int rc;
    if (*pos < end && buf[*pos] < 0x80) {   /* most lengths: one byte */
        *out = buf[(*pos)++];
        return 0;
    }
    rc = rf_read_uvarint(buf, pos, end, 5, &v);
    if (rc) return rc;
    if (v > 0x7FFFFFFFu) return -2;
    *out = (int64_t)v;
    return 0;
}

/* Writes an unsigned LEB128 (minimal); dst needs room for 10 bytes. */
static inline int rf_write_uvarint(uint8_t *dst, uint64_t v) {
    int n = 0;
    while (v >= 0x80) { dst[n++] = (uint8_t)(v | 0x80); v >>= 7; }
    dst[n++] = (uint8_t)v;
    return n;
}

static inline int rf_uvarint_size(uint64_t v) {
    int n = 1;
    while (v >= 0x80) { v >>= 7; n++; }
    return n;
}

static inline uint64_t rf_zigzag64(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }
static inline int64_t rf_unzigzag64(uint64_t v) { return (int64_t)(v >> 1) ^ -(int64_t)(v & 1); }

/* Paimon's delta-varint array (DeltaVarintCompressor), the .row block index
 * and the .blob row index: each int64 is coded as its difference from the
 * previous one (the first from 0) in wrapping 64-bit arithmetic, as Java's
 * long, then zigzag64'd and written as a minimal LEB128 of at most 10 bytes.
 * rf_delta_encode writes n values to dst (room for 10 * n bytes) and returns
 * the bytes written. */
static inline int64_t rf_delta_encode(const int64_t *v, int64_t n, uint8_t *dst) {
    uint64_t prev = 0;
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++) {
        uint64_t cur = (uint64_t)v[i];
        k += rf_write_uvarint(dst + k, rf_zigzag64((int64_t)(cur - prev)));
        prev = cur;
    }
    return k;
}

/* How many values n bytes of an array can hold: its bytes without the
 * continuation bit, one per varint. */
static inline int64_t rf_delta_count(const uint8_t *buf, int64_t n) {
    int64_t count = 0;
    for (int64_t i = 0; i < n; i++) count += !(buf[i] & 0x80);
    return count;
}

/* Decodes the array buf[0:n] into out (room for rf_delta_count values) and
 * sets *count to the values decoded. Returns 0, or rf_read_uvarint's error
 * for the first bad varint: -1 truncated, -2 longer than 10 bytes, -3 above
 * 2^64 - 1. Java's decoder also rejects the first two; it drops the bits of
 * the third, which no writer produces. */
static inline int rf_delta_decode(const uint8_t *buf, int64_t n, int64_t *out, int64_t *count) {
    int64_t pos = 0, k = 0;
    uint64_t u, acc = 0;
    int rc = 0;
    while (pos < n) {
        if (buf[pos] < 0x80) {          /* small deltas: one byte */
            u = buf[pos++];
        } else if ((rc = rf_read_uvarint(buf, &pos, n, 10, &u)) != 0) {
            break;
        }
        acc += (uint64_t)rf_unzigzag64(u);
        out[k++] = (int64_t)acc;
    }
    *count = k;
    return rc;
}

/* Floor division and modulo for negative instants (Paimon floors millis). */
static inline int64_t rf_floordiv(int64_t a, int64_t b) { int64_t q = a / b; if ((a % b) && ((a < 0) != (b < 0))) q--; return q; }
static inline int64_t rf_floormod(int64_t a, int64_t b) { int64_t m = a % b; if (m && ((m < 0) != (b < 0))) m += b; return m; }

/* Overflow-checked int64 multiply-add used for timestamp unit scaling. */
static inline int rf_mul_add_i64(int64_t a, int64_t m, int64_t add, int64_t *out) {
    int64_t t;
    if (__builtin_mul_overflow(a, m, &t)) return -1;
    if (__builtin_add_overflow(t, add, out)) return -1;
    return 0;
}

/* millis * upm + sub (0 <= sub < upm) without overflowing in the middle for
 * the most negative instants: for ms < 0 compute (ms + 1) * upm + (sub - upm). */
static inline int rf_ts_units(int64_t ms, int64_t upm, int64_t sub, int64_t *out) {
    if (ms < 0) return rf_mul_add_i64(ms + 1, upm, sub - upm, out);
    return rf_mul_add_i64(ms, upm, sub, out);
}

#endif

#ifndef RF_WIRE_EXTRA_H
#define RF_WIRE_EXTRA_H
/* 128-bit decimal helpers: Arrow decimal128 is a 16-byte LE two's
 * complement; Paimon stores p > 18 as minimal big-endian bytes. */
typedef __int128 rf_i128;

static const int64_t rf_pow10_i64[19] = {
    1LL, 10LL, 100LL, 1000LL, 10000LL, 100000LL, 1000000LL, 10000000LL, 100000000LL,
    1000000000LL, 10000000000LL, 100000000000LL, 1000000000000LL, 10000000000000LL,
    100000000000000LL, 1000000000000000LL, 10000000000000000LL, 100000000000000000LL,
    1000000000000000000LL};

/* 10^p for p in [0, 38] by table lookups, not p multiplies (this runs once
   per decimal value decoded). */
static inline rf_i128 rf_pow10_i128(int p) {
    rf_i128 v = 1;
    for (; p > 18; p -= 18) v *= rf_pow10_i64[18];
    return v * rf_pow10_i64[p];
}

/* |v| < 10^precision */
static inline int rf_dec_fits(rf_i128 v, int precision) {
    rf_i128 lim = rf_pow10_i128(precision);
    return v < lim && v > -lim;
}

/* The proleptic Gregorian date of a day count from 1970-01-01 (the civil-
   from-days algorithm: 400-year eras of 146097 days, years from March). */
static inline void rf_civil_from_days(int64_t z, int *year, int *month, int *day) {
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;                                   /* [0, 146096] */
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365; /* [0, 399] */
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);            /* [0, 365] */
    int64_t mp = (5 * doy + 2) / 153;                                 /* [0, 11] from March */
    *day = (int)(doy - (153 * mp + 2) / 5 + 1);
    *month = (int)(mp < 10 ? mp + 3 : mp - 9);
    *year = (int)(yoe + era * 400 + (*month <= 2));
}

static inline rf_i128 rf_ld_i128(const uint8_t *p) { rf_i128 v; memcpy(&v, p, 16); return v; }
static inline void rf_st_i128(uint8_t *p, rf_i128 v) { memcpy(p, &v, 16); }
static inline int64_t rf_i128_hi(rf_i128 v) { return (int64_t)(v >> 64); }
static inline uint64_t rf_i128_lo(rf_i128 v) { return (uint64_t)v; }
static inline int rf_i128_fits_i64(rf_i128 v) { return v >= INT64_MIN && v <= INT64_MAX; }

/* Minimal big-endian two's complement of v into out[16]; returns the length
 * (1..16), as Java's BigInteger.toByteArray() does. */
static inline int rf_i128_to_be_minimal(rf_i128 v, uint8_t *out) {
    uint8_t be[16];
    unsigned __int128 u = (unsigned __int128)v;
    for (int i = 15; i >= 0; i--) { be[i] = (uint8_t)u; u >>= 8; }
    int start = 0;
    while (start < 15) {
        if (be[start] == 0x00 && !(be[start + 1] & 0x80)) start++;
        else if (be[start] == 0xFF && (be[start + 1] & 0x80)) start++;
        else break;
    }
    memcpy(out, be + start, 16 - start);
    return 16 - start;
}

/* Big-endian two's complement of any length (>= 1) into an int128.
 * Returns -1 when the value does not fit 128 bits (leading bytes that are
 * more than sign extension). */
static inline int rf_be_to_i128(const uint8_t *p, int64_t n, rf_i128 *out) {
    if (n <= 0) return -1;
    uint8_t sign = (p[0] & 0x80) ? 0xFF : 0x00;
    int64_t skip = 0;
    if (n > 16) {
        skip = n - 16;
        for (int64_t i = 0; i < skip; i++) if (p[i] != sign) return -1;
        if ((p[skip] & 0x80) != (sign & 0x80)) return -1;
    }
    unsigned __int128 u = sign ? ~(unsigned __int128)0 : 0;
    for (int64_t i = skip; i < n; i++) u = (u << 8) | p[i];
    *out = (rf_i128)u;
    return 0;
}

/* memcpy(d, s, n) for the short values most strings are: overlapping
   fixed-size copies the compiler inlines, instead of a call to memcpy. */
static inline void rf_copy(uint8_t *d, const uint8_t *s, int64_t n) {
    uint8_t x[16], y[16];
    if (n > 32) { memcpy(d, s, (size_t)n); return; }
    if (n >= 16) {
        memcpy(x, s, 16); memcpy(y, s + n - 16, 16);
        memcpy(d, x, 16); memcpy(d + n - 16, y, 16);
    } else if (n >= 8) {
        memcpy(x, s, 8); memcpy(y, s + n - 8, 8);
        memcpy(d, x, 8); memcpy(d + n - 8, y, 8);
    } else if (n >= 4) {
        memcpy(x, s, 4); memcpy(y, s + n - 4, 4);
        memcpy(d, x, 4); memcpy(d + n - 4, y, 4);
    } else if (n > 0) {
        d[0] = s[0]; d[n >> 1] = s[n >> 1]; d[n - 1] = s[n - 1];
    }
}

/* 1 when s[0:n] is all ASCII. Branch-free over the bytes: short strings
   (most names and keys) take two overlapping loads, not a loop per byte. */
static inline int rf_ascii(const uint8_t *s, int64_t n) {
    uint64_t acc = 0, w;
    uint32_t a, b;
    if (n >= 8) {
        int64_t i;
        for (i = 0; i + 8 <= n; i += 8) { memcpy(&w, s + i, 8); acc |= w; }
        memcpy(&w, s + n - 8, 8);
        return !((acc | w) & 0x8080808080808080ULL);
    }
    if (n >= 4) {
        memcpy(&a, s, 4);
        memcpy(&b, s + n - 4, 4);
        return !((a | b) & 0x80808080U);
    }
    for (int64_t i = 0; i < n; i++) acc |= s[i];
    return !(acc & 0x80);
}

/* The padded variants below read RF_PAD bytes from s whatever n (<= RF_PAD)
   is: callers check that many bytes are readable (a block's values are
   followed by its offset table). Fixed-size work with no branch on n, which
   is as random as the data's string lengths. */
#define RF_PAD 64

#ifndef RF_SSE2
/* 0x80 in each of the low k bytes of a little-endian word, k = 0..8 */
static const uint64_t rf_high_mask[9] = {
    0, 0x80ULL, 0x8080ULL, 0x808080ULL, 0x80808080ULL, 0x8080808080ULL,
    0x808080808080ULL, 0x80808080808080ULL, 0x8080808080808080ULL};
#endif

/* rf_ascii(s, n) for n <= RF_PAD, reading RF_PAD bytes. */
static inline int rf_ascii_padded(const uint8_t *s, int64_t n) {
#ifdef RF_SSE2
    /* the high bits of the 64 bytes as a 64-bit mask, of which the low n count */
    uint64_t m = (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_loadu_si128((const __m128i *)s))
        | (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_loadu_si128((const __m128i *)(s + 16))) << 16
        | (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_loadu_si128((const __m128i *)(s + 32))) << 32
        | (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_loadu_si128((const __m128i *)(s + 48))) << 48;
    return (m & (n ? ~0ULL >> (64 - n) : 0)) == 0;
#else
    uint64_t acc = 0, w;
    for (int i = 0; i < RF_PAD / 8; i++) {
        int64_t k = n - 8 * i;
        k = k < 0 ? 0 : (k > 8 ? 8 : k);
        memcpy(&w, s + 8 * i, 8);
        acc |= w & rf_high_mask[k];
    }
    return acc == 0;
#endif
}

/* Copies s[0:n] for n <= RF_PAD as RF_PAD bytes: d needs RF_PAD bytes of room. */
static inline void rf_copy_padded(uint8_t *d, const uint8_t *s) {
    memcpy(d, s, RF_PAD);
}

/* The length of the ASCII run that starts s[0:n]: n when it is all ASCII.
   64 bytes a step, as the decoder checks a column's new bytes at once. */
static inline int64_t rf_ascii_run(const uint8_t *s, int64_t n) {
    int64_t i = 0;
    uint64_t w;
#ifdef RF_SSE2
    for (; i + 64 <= n; i += 64) {
        __m128i a = _mm_or_si128(_mm_loadu_si128((const __m128i *)(s + i)),
                                 _mm_loadu_si128((const __m128i *)(s + i + 16)));
        __m128i b = _mm_or_si128(_mm_loadu_si128((const __m128i *)(s + i + 32)),
                                 _mm_loadu_si128((const __m128i *)(s + i + 48)));
        if (_mm_movemask_epi8(_mm_or_si128(a, b))) break;
    }
#endif
    for (; i + 8 <= n; i += 8) {
        memcpy(&w, s + i, 8);
        if (w & 0x8080808080808080ULL) break;
    }
    while (i < n && s[i] < 0x80) i++;
    return i;
}

/* UTF-8 validation (RFC 3629: no overlongs, no surrogates, <= U+10FFFF).
   Out of line: the decoders' hot paths try rf_ascii_padded first. */
static RF_NOINLINE int rf_utf8_valid(const uint8_t *s, int64_t n) {
    int64_t i = 0;
    if (rf_ascii(s, n)) return 1;
    while (i < n) {
        /* ASCII runs, 8 bytes at a time */
        while (i + 8 <= n) {
            uint64_t w; memcpy(&w, s + i, 8);
            if (w & 0x8080808080808080ULL) break;
            i += 8;
        }
        if (i >= n) break;
        uint8_t c = s[i];
        if (c < 0x80) { i++; continue; }
        int len; uint32_t cp;
        if ((c & 0xE0) == 0xC0) { len = 2; cp = c & 0x1F; }
        else if ((c & 0xF0) == 0xE0) { len = 3; cp = c & 0x0F; }
        else if ((c & 0xF8) == 0xF0) { len = 4; cp = c & 0x07; }
        else return 0;
        if (i + len > n) return 0;
        for (int k = 1; k < len; k++) {
            uint8_t cc = s[i + k];
            if ((cc & 0xC0) != 0x80) return 0;
            cp = (cp << 6) | (cc & 0x3F);
        }
        if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000)) return 0;
        if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
        i += len;
    }
    return 1;
}
#endif
