/* Checks rf_wire.h's fast paths against plain reference code; built and run
   by tests/row/test_wire_c.py, once with SIMD and once with -DRF_NO_SIMD. Prints
   the first mismatch and exits 1, or exits 0. */
#include <stdio.h>
#include <stdlib.h>
#include "rf_wire.h"

static uint64_t state = 0x9E3779B97F4A7C15ULL;
static uint8_t rnd8(void) {
    state ^= state << 13; state ^= state >> 7; state ^= state << 17;
    return (uint8_t)state;
}

static int ref_ascii(const uint8_t *s, int64_t n) {
    for (int64_t i = 0; i < n; i++) if (s[i] & 0x80) return 0;
    return 1;
}

int main(void) {
    uint8_t buf[RF_PAD + 8], dst[RF_PAD + 8];
    for (int trial = 0; trial < 20000; trial++) {
        for (int i = 0; i < (int)sizeof buf; i++) buf[i] = rnd8() & 0x7F;
        int64_t n = trial % (RF_PAD + 1);
        int hi = (int)(rnd8() % (RF_PAD + 1));     /* a high bit here, in or past s[0:n] */
        if (hi < RF_PAD) buf[hi] |= 0x80;
        if (rf_ascii_padded(buf, n) != ref_ascii(buf, n)) {
            printf("rf_ascii_padded n=%lld high bit at %d\n", (long long)n, hi);
            return 1;
        }
        if (rf_ascii(buf, n) != ref_ascii(buf, n)) {
            printf("rf_ascii n=%lld high bit at %d\n", (long long)n, hi);
            return 1;
        }
        memset(dst, 0xAB, sizeof dst);
        rf_copy(dst, buf, n);
        if (memcmp(dst, buf, (size_t)n) != 0 || dst[n] != 0xAB) {
            printf("rf_copy n=%lld\n", (long long)n);
            return 1;
        }
    }
    /* rf_ascii_run: the first high bit anywhere in runs long enough for its 64-byte steps */
    static uint8_t run[300];
    for (int trial = 0; trial < 20000; trial++) {
        int64_t n = trial % (int64_t)sizeof run;
        int hi = (int)((rnd8() | rnd8() << 8) % (sizeof run + 1));   /* may be past n */
        for (int i = 0; i < (int)sizeof run; i++) run[i] = rnd8() & 0x7F;
        if (hi < (int)sizeof run) run[hi] |= 0x80;
        int64_t want = hi < n ? hi : n;
        if (rf_ascii_run(run, n) != want) {
            printf("rf_ascii_run n=%lld high bit at %d\n", (long long)n, hi);
            return 1;
        }
    }
    rf_i128 v = 1;
    for (int p = 0; p <= 38; p++, v *= 10) {
        if (rf_pow10_i128(p) != v) { printf("rf_pow10_i128(%d)\n", p); return 1; }
    }
    /* lengths: one byte, several bytes, truncated, too long, > INT32_MAX */
    struct { uint8_t b[6]; int64_t len; int rc; int64_t v; } cases[] = {
        {{0x00}, 1, 0, 0}, {{0x7F}, 1, 0, 127}, {{0x80, 0x01}, 2, 0, 128},
        {{0xFF, 0xFF, 0xFF, 0xFF, 0x07}, 5, 0, 0x7FFFFFFF}, {{0x80}, 1, -1, 0},
        {{0x80, 0x80, 0x80, 0x80, 0x08}, 5, -2, 0}, {{0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, 6, -2, 0},
    };
    for (unsigned k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        int64_t pos = 0, out = -1;
        int rc = rf_read_len(cases[k].b, &pos, cases[k].len, &out);
        if (rc != cases[k].rc || (rc == 0 && (out != cases[k].v || pos != cases[k].len))) {
            printf("rf_read_len case %u: rc %d out %lld pos %lld\n", k, rc, (long long)out, (long long)pos);
            return 1;
        }
    }
    /* 64-bit varints: the 10th byte holds bit 63 only */
    struct { uint8_t b[11]; int64_t len; int rc; uint64_t v; } longs[] = {
        {{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01}, 10, 0, UINT64_MAX},
        {{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, 10, 0, 1ULL << 63},
        {{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02}, 10, -3, 0},
        {{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F}, 10, -3, 0},
        {{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x81, 0x00}, 11, -2, 0},
        {{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01}, 11, -2, 0},
        {{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}, 9, -1, 0},
    };
    for (unsigned k = 0; k < sizeof longs / sizeof longs[0]; k++) {
        int64_t pos = 0;
        uint64_t out = 0;
        int rc = rf_read_uvarint(longs[k].b, &pos, longs[k].len, 10, &out);
        if (rc != longs[k].rc || (rc == 0 && (out != longs[k].v || pos != longs[k].len))) {
            printf("rf_read_uvarint case %u: rc %d\n", k, rc);
            return 1;
        }
    }
    /* delta-varint arrays: Paimon's [MAX, MIN] is 11 bytes (the delta wraps to 1) */
    {
        int64_t in[3] = {INT64_MAX, INT64_MIN, INT64_MIN}, back[3], count = -1;
        uint8_t enc[30];
        int64_t n = rf_delta_encode(in, 3, enc);
        if (n != 12 || rf_delta_count(enc, n) != 3 || rf_delta_decode(enc, n, back, &count) != 0
                || count != 3 || memcmp(in, back, sizeof in) != 0) {
            printf("rf_delta round trip: %lld bytes\n", (long long)n);
            return 1;
        }
        if (rf_delta_decode(enc, 9, back, &count) != -1 || count != 0) {
            printf("rf_delta_decode of a truncated array\n");
            return 1;
        }
    }
    /* UTF-8: valid multi-byte forms; overlongs, surrogates, > U+10FFFF, truncation */
    struct { const char *s; int ok; } utf8[] = {
        {"abc", 1}, {"\xC3\xA9", 1}, {"\xE2\x82\xAC", 1}, {"\xF0\x9F\x98\x80", 1},
        {"\xF4\x8F\xBF\xBF", 1}, {"\xC0\x80", 0}, {"\xE0\x80\x80", 0}, {"\xED\xA0\x80", 0},
        {"\xF4\x90\x80\x80", 0}, {"\xC3", 0}, {"\x80", 0}, {"\xFF", 0},
    };
    for (unsigned k = 0; k < sizeof utf8 / sizeof utf8[0]; k++) {
        if (rf_utf8_valid((const uint8_t *)utf8[k].s, (int64_t)strlen(utf8[k].s)) != utf8[k].ok) {
            printf("rf_utf8_valid case %u\n", k);
            return 1;
        }
    }
    return 0;
}
