/* rf_zstd.h: a ZSTD frame decoder that can stop early and resume.
 *
 * Why: a .row block is one ZSTD frame, and Paimon Java's 64 KiB blocks are
 * each one *compressed ZSTD block*. libzstd decodes a compressed block
 * whole (all of its Huffman literals, then all of its sequences) before it
 * returns a byte, so a lookup of a block's first row costs as much as one of
 * its last. Decoded in order, a block's output up to position P needs only
 * the literals and sequences before P: this decoder produces the frame's
 * output up to a position the caller asks for (rfz_advance) and keeps its
 * state, so a later call continues where the last one stopped.
 *
 * Scope: frames without a dictionary or content checksum, every block type
 * (raw, RLE, compressed: raw/RLE/Huffman/treeless literals in 1 or 4
 * streams, predefined/RLE/FSE/repeat sequence tables, repeat offsets).
 * Anything else returns RFZ_UNSUPPORTED and the caller decompresses with
 * libzstd, which also gives the error message for a corrupt frame
 * (RFZ_CORRUPT): this decoder only ever checks what it reads, so a frame it
 * rejects is decoded by libzstd as well. Before decoding, it checks what the
 * frame's structure allows (rfz_frame_bounds, rfz_block_bounds and the
 * streams' sizes against the Huffman table), so that a lookup that stops
 * early does not return the start of a frame whose headers or sizes
 * libzstd would reject at its end; damage inside the entropy-coded streams
 * past the point decoded is not seen (docs/errors.md, "Prefix lookups").
 * The format is RFC 8878; the table constructions follow its section 4.
 *
 * Nothing here reads or writes outside the buffers it is given: every input
 * length is checked before it is used, and the output never exceeds the
 * capacity the caller gives (the block's uncompressed size from the index).
 * Little-endian hosts only, like the rest of rowformat's C. */
#ifndef RF_ZSTD_H
#define RF_ZSTD_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { RFZ_OK = 0, RFZ_CORRUPT = -1, RFZ_UNSUPPORTED = -2, RFZ_NOMEM = -3 };

#define RFZ_BLOCK_MAX (128 * 1024)
#define RFZ_WINDOW_MAX ((uint64_t)1 << 27)  /* libzstd's default limit for decompression */
#define RFZ_HUF_LOG_MAX 12
#define RFZ_LL_LOG_MAX 9
#define RFZ_ML_LOG_MAX 9
#define RFZ_OF_LOG_MAX 8
#define RFZ_LL_MAX 35
#define RFZ_ML_MAX 52
#define RFZ_OF_MAX 31

static inline unsigned rfz_highbit(uint32_t v) { return 31u - (unsigned)__builtin_clz(v); }
static inline uint64_t rfz_le64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

/* ---- backward bit streams (Huffman literals, FSE weights, sequences) ---- */

typedef struct {
    const uint8_t *start, *ptr;
    uint64_t bits;
    unsigned used;               /* bits of `bits` consumed, from the top */
} rfz_bits;

static int rfz_bits_init(rfz_bits *b, const uint8_t *src, size_t n) {
    uint8_t last;
    size_t i;
    if (n == 0) return RFZ_CORRUPT;
    last = src[n - 1];
    if (last == 0) return RFZ_CORRUPT;        /* the last byte carries the end mark */
    b->start = src;
    if (n >= 8) {
        b->ptr = src + n - 8;
        b->bits = rfz_le64(b->ptr);
        b->used = 8 - rfz_highbit(last);
    } else {
        b->ptr = src;
        b->bits = 0;
        for (i = 0; i < n; i++) b->bits |= (uint64_t)src[i] << (8 * i);
        b->used = 8 - rfz_highbit(last) + (unsigned)(8 - n) * 8;
    }
    return RFZ_OK;
}

/* nb >= 1 */
static inline uint64_t rfz_peek(const rfz_bits *b, unsigned nb) {
    return (b->bits << (b->used & 63)) >> ((64 - nb) & 63);
}

/* nb >= 0 */
static inline uint64_t rfz_read(rfz_bits *b, unsigned nb) {
    uint64_t v = ((b->bits << (b->used & 63)) >> 1) >> ((63 - nb) & 63);
    b->used += nb;
    return v;
}

/* Refills the container with the bytes before it; nonzero when more bits
 * were read than the stream holds (it ran out: corrupt, or the end of an
 * FSE weight stream). */
static inline int rfz_reload(rfz_bits *b) {
    size_t nbytes;
    if (b->used > 64) return 1;
    if (b->ptr >= b->start + 8) {
        b->ptr -= b->used >> 3;
        b->used &= 7;
    } else if (b->ptr == b->start) {
        return 0;                        /* all of it is in the container already */
    } else {
        nbytes = b->used >> 3;
        if (nbytes > (size_t)(b->ptr - b->start)) nbytes = (size_t)(b->ptr - b->start);
        b->ptr -= nbytes;
        b->used -= (unsigned)nbytes * 8;
    }
    b->bits = rfz_le64(b->ptr);          /* in bounds: ptr only moves back from end - 8 */
    return 0;
}

/* A stream decoded to its last symbol must have used exactly its bits. */
static inline int rfz_bits_end(rfz_bits *b) {
    return !rfz_reload(b) && b->ptr == b->start && b->used == 64 ? RFZ_OK : RFZ_CORRUPT;
}

/* ---- forward bit reading for table descriptions (zero past the end) ---- */

static inline uint32_t rfz_fwd_bits(const uint8_t *src, size_t n, size_t bitpos, unsigned nb) {
    uint64_t v = 0;
    size_t byte = bitpos >> 3, i;
    for (i = 0; i < 5 && byte + i < n; i++) v |= (uint64_t)src[byte + i] << (8 * i);
    return (uint32_t)((v >> (bitpos & 7)) & ((1ull << nb) - 1));
}

/* ---- FSE ---- */

typedef struct { uint16_t base; uint8_t sym; uint8_t nbits; } rfz_fse;

/* The least and greatest symbol and state bits of an FSE table's entries:
 * what a sequence read with it can cost and give (rfz_block_bounds). */
typedef struct { uint8_t sym_min, sym_max, nb_min, nb_max; } rfz_span;

/* An FSE table description (RFC 8878 4.1.1): normalized counts of symbols
 * 0..*max_sym; *used = its bytes. */
static int rfz_fse_counts(const uint8_t *src, size_t n, unsigned log_max, unsigned sym_max,
                          int16_t *norm, unsigned *max_sym, unsigned *log, size_t *used) {
    size_t bp = 0;
    unsigned s = 0, nb;
    int remaining, threshold, prev0 = 0;
    if (n == 0) return RFZ_CORRUPT;
    *log = (src[0] & 15) + 5;
    if (*log > log_max) return RFZ_CORRUPT;
    bp = 4;
    remaining = (1 << *log) + 1;
    threshold = 1 << *log;
    nb = *log + 1;
    while (remaining > 1 && s <= sym_max) {
        if (prev0) {          /* 2-bit repeat flags: that many more zero counts */
            unsigned rep, k;
            do {
                rep = rfz_fwd_bits(src, n, bp, 2);
                bp += 2;
                if (s + rep > sym_max) return RFZ_CORRUPT;   /* a count follows them */
                for (k = 0; k < rep; k++) norm[s++] = 0;
            } while (rep == 3);
        }
        {
            int max = (2 * threshold - 1) - remaining;
            int count;
            uint32_t v = rfz_fwd_bits(src, n, bp, nb);
            if ((int)(v & (uint32_t)(threshold - 1)) < max) {
                count = (int)(v & (uint32_t)(threshold - 1));
                bp += nb - 1;
            } else {
                count = (int)(v & (uint32_t)(2 * threshold - 1));
                if (count >= threshold) count -= max;
                bp += nb;
            }
            count--;
            remaining -= count < 0 ? -count : count;
            norm[s++] = (int16_t)count;
            prev0 = count == 0;
            while (remaining < threshold) { nb--; threshold >>= 1; }
        }
    }
    if (remaining != 1) return RFZ_CORRUPT;
    *max_sym = s - 1;
    *used = (bp + 7) >> 3;
    if (*used > n) return RFZ_CORRUPT;
    return RFZ_OK;
}

/* span: NULL, or where the table's rfz_span goes. */
static int rfz_fse_build(rfz_fse *t, const int16_t *norm, unsigned max_sym, unsigned log,
                         rfz_span *span) {
    uint16_t next[256];
    unsigned size = 1u << log, mask = size - 1, step = (size >> 1) + (size >> 3) + 3;
    int high = (int)size - 1;
    unsigned s, u, pos = 0, total = 0;
    int i;
    for (s = 0; s <= max_sym; s++) total += norm[s] == -1 ? 1u : (unsigned)norm[s];
    if (total != size) return RFZ_CORRUPT;
    for (s = 0; s <= max_sym; s++) {
        if (norm[s] == -1) {
            if (high < 0) return RFZ_CORRUPT;
            t[high--].sym = (uint8_t)s;
            next[s] = 1;
        } else {
            if (norm[s] < 0) return RFZ_CORRUPT;
            next[s] = (uint16_t)norm[s];
        }
    }
    for (s = 0; s <= max_sym; s++)
        for (i = 0; i < norm[s]; i++) {
            t[pos].sym = (uint8_t)s;
            do pos = (pos + step) & mask; while ((int)pos > high);
        }
    if (pos != 0) return RFZ_CORRUPT;
    for (u = 0; u < size; u++) {
        unsigned ns = next[t[u].sym]++;
        unsigned nb = log - rfz_highbit(ns);
        t[u].nbits = (uint8_t)nb;
        t[u].base = (uint16_t)((ns << nb) - size);
    }
    if (span) {
        rfz_span sp = {255, 0, 255, 0};
        for (u = 0; u < size; u++) {
            if (t[u].sym < sp.sym_min) sp.sym_min = t[u].sym;
            if (t[u].sym > sp.sym_max) sp.sym_max = t[u].sym;
            if (t[u].nbits < sp.nb_min) sp.nb_min = t[u].nbits;
            if (t[u].nbits > sp.nb_max) sp.nb_max = t[u].nbits;
        }
        *span = sp;
    }
    return RFZ_OK;
}

/* ---- Huffman ---- */

/* A decode table entry: the code's length in bits 0-7, its symbol in bits
 * 8-15 (one load gives both; the length is a shift count as it stands). */
typedef uint16_t rfz_huf_entry;

/* The table has 2^RFZ_HUF_LOG_MAX entries whatever the longest code, so
 * that a lookup's index is a shift by a constant (x86-64 without BMI2 has
 * one register for variable shift counts, which the code lengths take). */
typedef struct {
    unsigned log;                /* the longest code */
    unsigned shortest;           /* the shortest code */
    unsigned grid;               /* the greatest common divisor of the code lengths */
    int valid;
    rfz_huf_entry t[1 << RFZ_HUF_LOG_MAX];
} rfz_huf;

/* The weights of an FSE-compressed Huffman description: two interleaved
 * states over one backward stream, until it runs out (RFC 8878 4.2.1.2). */
static int rfz_huf_fse_weights(const uint8_t *src, size_t n, uint8_t *w, unsigned *nw) {
    int16_t norm[256];
    rfz_fse t[1 << 6];
    unsigned max_sym, log, s1, s2, out = 0;
    size_t used;
    rfz_bits b;
    int rc = rfz_fse_counts(src, n, 6, 255, norm, &max_sym, &log, &used);
    if (rc) return rc;
    if ((rc = rfz_fse_build(t, norm, max_sym, log, NULL))) return rc;
    if ((rc = rfz_bits_init(&b, src + used, n - used))) return rc;
    s1 = (unsigned)rfz_read(&b, log);
    s2 = (unsigned)rfz_read(&b, log);
    if (rfz_reload(&b)) return RFZ_CORRUPT;
    for (;;) {
        if (out > 253) return RFZ_CORRUPT;
        w[out++] = t[s1].sym;
        s1 = t[s1].base + (unsigned)rfz_read(&b, t[s1].nbits);
        if (rfz_reload(&b)) { w[out++] = t[s2].sym; break; }
        if (out > 253) return RFZ_CORRUPT;
        w[out++] = t[s2].sym;
        s2 = t[s2].base + (unsigned)rfz_read(&b, t[s2].nbits);
        if (rfz_reload(&b)) { w[out++] = t[s1].sym; break; }
    }
    *nw = out;
    return RFZ_OK;
}

/* A Huffman tree description (RFC 8878 4.2.1): the decode table; *used =
 * its bytes. */
static int rfz_huf_read(rfz_huf *h, const uint8_t *src, size_t n, size_t *used) {
    uint8_t w[256];
    unsigned nw = 0, i, max_bits;
    uint32_t sum = 0, rest, start[RFZ_HUF_LOG_MAX + 2];
    unsigned count[RFZ_HUF_LOG_MAX + 2];
    int rc;
    h->valid = 0;
    if (n == 0) return RFZ_CORRUPT;
    if (src[0] >= 128) {
        nw = src[0] - 127u;
        *used = 1 + (nw + 1) / 2;
        if (*used > n) return RFZ_CORRUPT;
        for (i = 0; i < nw; i++) w[i] = (i & 1) ? (src[1 + i / 2] & 15) : (src[1 + i / 2] >> 4);
    } else {
        *used = 1 + (size_t)src[0];
        if (*used > n || src[0] == 0) return RFZ_CORRUPT;
        if ((rc = rfz_huf_fse_weights(src + 1, src[0], w, &nw))) return rc;
    }
    memset(count, 0, sizeof count);
    for (i = 0; i < nw; i++) {
        if (w[i] > RFZ_HUF_LOG_MAX) return RFZ_CORRUPT;
        count[w[i]]++;
        if (w[i]) sum += 1u << (w[i] - 1);
    }
    if (sum == 0) return RFZ_CORRUPT;
    max_bits = rfz_highbit(sum) + 1;
    if (max_bits > RFZ_HUF_LOG_MAX) return RFZ_CORRUPT;
    rest = (1u << max_bits) - sum;
    if (rest & (rest - 1)) return RFZ_CORRUPT;          /* the last weight completes a power of 2 */
    w[nw] = (uint8_t)(rfz_highbit(rest) + 1);
    count[w[nw]]++;
    nw++;
    if (count[1] < 2 || (count[1] & 1)) return RFZ_CORRUPT;   /* a complete tree */
    /* canonical codes: the lowest weights (longest codes) take the lowest
     * table positions, in symbol order within a weight */
    start[1] = 0;
    for (i = 1; i <= max_bits; i++)
        start[i + 1] = start[i] + (count[i] << (i - 1 + RFZ_HUF_LOG_MAX - max_bits));
    h->grid = 0;
    for (i = 1; i <= max_bits; i++) {
        unsigned a = max_bits + 1 - i, b = h->grid;
        if (!count[i]) continue;
        while (b) { unsigned r = a % b; a = b; b = r; }
        h->grid = a;
    }
    for (i = 0; i < nw; i++) {
        unsigned wt = w[i], len, k;
        rfz_huf_entry e, *dst;
        if (!wt) continue;
        len = 1u << (wt - 1 + RFZ_HUF_LOG_MAX - max_bits);
        e = (rfz_huf_entry)((i << 8) | (max_bits + 1 - wt));
        dst = h->t + start[wt];
        if (len >= 4) {                  /* 4 entries a store: the table is 8 KiB */
            uint64_t e4 = e * 0x0001000100010001ull;
            for (k = 0; k < len; k += 4) memcpy(dst + k, &e4, 8);
        } else {
            for (k = 0; k < len; k++) dst[k] = e;
        }
        start[wt] += len;
    }
    h->log = max_bits;
    for (i = max_bits; i >= 1 && !count[i]; i--) {}
    h->shortest = max_bits + 1 - i;     /* the greatest weight present (count[w[nw]] > 0) */
    h->valid = 1;
    return RFZ_OK;
}

/* ---- the decoder ---- */

/* Huffman lanes decoded side by side (rfz_huf_split): at most this many; a
 * speculative lane records the bit positions of its first RFZ_SYNC_SYMS
 * symbols, decodes at most RFZ_SPEC_MAX, and is started only for at least
 * RFZ_LANE_MIN symbols (shorter ones do not repay their start and sync). */
#define RFZ_LANES 8
#define RFZ_SYNC_SYMS 64
#define RFZ_SYNC_BITS (RFZ_SYNC_SYMS * RFZ_HUF_LOG_MAX + 128)
#define RFZ_SPEC_MAX 8192
#define RFZ_LANE_MIN 512

typedef struct {
    /* the frame */
    const uint8_t *src;
    size_t src_size, ip;          /* ip: the next block header */
    uint64_t window;
    size_t block_max;
    int frame_done, last_block;
    /* output */
    uint8_t *dst;
    size_t cap, op;
    size_t block_out;             /* op where the current block began */
    /* the current compressed block */
    int in_block;
    uint8_t *lit;                 /* RFZ_BLOCK_MAX bytes */
    const uint8_t *lit_src;       /* the literals (lit, or the frame's own bytes when raw) */
    size_t lit_size, lit_pos, lit_avail;
    int streams;                  /* Huffman streams: 0 (raw or RLE literals), 1 or 4 */
    rfz_bits hs[4];
    const uint8_t *hs_end[4];     /* each stream's end */
    int split_off;                /* a lane of this block could not be joined: no more */
    size_t seg_at[4], seg_end[4];
    rfz_huf huf;
    uint8_t spec[RFZ_LANES - 1][RFZ_SPEC_MAX];   /* speculative lanes' symbols (rfz_huf_split) */
    /* sequences */
    rfz_fse ll_t[1 << RFZ_LL_LOG_MAX], of_t[1 << RFZ_OF_LOG_MAX], ml_t[1 << RFZ_ML_LOG_MAX];
    int ll_ok, of_ok, ml_ok;
    unsigned ll_log, of_log, ml_log;
    rfz_span ll_span, of_span, ml_span;
    rfz_bits sb;
    unsigned ll_s, of_s, ml_s;
    size_t nseq, seq_done;
    size_t rep[3];
} rfz_dec;

static const int16_t RFZ_LL_DEFAULT[36] = {4, 3, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 2, 2, 2, 2,
                                           2, 2, 2, 2, 2, 3, 2, 1, 1, 1, 1, 1, -1, -1, -1, -1};
static const int16_t RFZ_ML_DEFAULT[53] = {1, 4, 3, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                           1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                           1, 1, 1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1, -1, -1};
static const int16_t RFZ_OF_DEFAULT[29] = {1, 1, 1, 1, 1, 1, 2, 2, 2, 1, 1, 1, 1, 1, 1,
                                           1, 1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1};
static const uint32_t RFZ_LL_BASE[36] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
                                         16, 18, 20, 22, 24, 28, 32, 40, 48, 64, 128, 256, 512,
                                         1024, 2048, 4096, 8192, 16384, 32768, 65536};
static const uint8_t RFZ_LL_BITS[36] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1,
                                        1, 1, 2, 2, 3, 3, 4, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
static const uint32_t RFZ_ML_BASE[53] = {3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18,
                                         19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32,
                                         33, 34, 35, 37, 39, 41, 43, 47, 51, 59, 67, 83, 99, 131,
                                         259, 515, 1027, 2051, 4099, 8195, 16387, 32771, 65539};
static const uint8_t RFZ_ML_BITS[53] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1,
                                        2, 2, 3, 3, 4, 4, 5, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

static int rfz_frame_bounds(const uint8_t *src, size_t n, size_t p, size_t block_max,
                            size_t cap);

/* Starts decoding `src` (one frame) into `dst` (cap bytes: the size the
 * frame decodes to, exactly; a frame whose blocks cannot give that many is
 * corrupt, see rfz_frame_bounds). RFZ_UNSUPPORTED
 * for a dictionary, a checksum, a window beyond libzstd's default limit or
 * a skippable frame. d->lit is NULL, or the literals buffer of a decoder d
 * held before, which is kept (rfz_free releases it). */
static int rfz_init(rfz_dec *d, const uint8_t *src, size_t n, uint8_t *dst, size_t cap) {
    size_t p = 5;
    uint8_t fhd;
    unsigned fcs_flag, single, did_flag;
    uint64_t fcs = 0;
    uint8_t *lit = d->lit;
    memset(d, 0, offsetof(rfz_dec, huf));
    d->lit = lit;
    d->huf.valid = 0;
    d->ll_ok = d->of_ok = d->ml_ok = 0;
    d->src = src;
    d->src_size = n;
    d->dst = dst;
    d->cap = cap;
    d->rep[0] = 1; d->rep[1] = 4; d->rep[2] = 8;
    if (n < 6) return RFZ_CORRUPT;
    if (!(src[0] == 0x28 && src[1] == 0xb5 && src[2] == 0x2f && src[3] == 0xfd)) return RFZ_UNSUPPORTED;
    fhd = src[4];
    fcs_flag = fhd >> 6;
    single = (fhd >> 5) & 1;
    did_flag = fhd & 3;
    if (fhd & 0x08) return RFZ_CORRUPT;                  /* reserved bit */
    if ((fhd & 0x04) || did_flag) return RFZ_UNSUPPORTED; /* checksum, dictionary */
    if (!single) {
        unsigned e = src[5] >> 3, m = src[5] & 7;
        uint64_t base = (uint64_t)1 << (10 + e);
        d->window = base + (base / 8) * m;
        p = 6;
    }
    {
        static const unsigned fcs_size[4] = {0, 2, 4, 8};
        unsigned fs = fcs_flag == 0 ? (single ? 1 : 0) : fcs_size[fcs_flag], i;
        if (p + fs > n) return RFZ_CORRUPT;
        for (i = 0; i < fs; i++) fcs |= (uint64_t)src[p + i] << (8 * i);
        if (fs == 2) fcs += 256;
        p += fs;
        if (single) d->window = fcs;
        if (fs && fcs != cap) return RFZ_UNSUPPORTED;   /* the caller's size check reports it */
    }
    if (d->window > RFZ_WINDOW_MAX) return RFZ_UNSUPPORTED;
    d->block_max = d->window < RFZ_BLOCK_MAX ? (size_t)d->window : RFZ_BLOCK_MAX;
    if (rfz_frame_bounds(src, n, p, d->block_max, cap)) return RFZ_CORRUPT;
    d->ip = p;
    if (!d->lit) d->lit = (uint8_t *)malloc(RFZ_BLOCK_MAX);
    if (!d->lit) return RFZ_NOMEM;
    return RFZ_OK;
}

static void rfz_free(rfz_dec *d) {
    free(d->lit);
    d->lit = NULL;
}

/* The literals decoded so far without a gap: whole streams, then the first
 * unfinished one's part. */
static inline size_t rfz_lit_prefix(const rfz_dec *d) {
    size_t avail = 0;
    int s;
    for (s = 0; s < d->streams; s++) {
        avail = d->seg_at[s];
        if (d->seg_at[s] < d->seg_end[s]) break;
    }
    return avail;
}

/* ---- Huffman lanes ----
 *
 * A lane is one bit reader over a Huffman stream writing its symbols to
 * `out`. Lanes are decoded side by side: one lane's symbols depend one on
 * the next (a lookup needs the previous code's length), so alone it runs at
 * the table's latency, while independent lanes overlap in the CPU. */

typedef struct {
    rfz_bits b;
    const uint8_t *end;       /* the stream's end: bit positions count from it */
    uint8_t *out;
    size_t n, limit;          /* symbols in out, and at most */
    uint64_t stop;            /* fast rounds end before this bit position (the next lane's start) */
    uint32_t pos[RFZ_SYNC_SYMS];   /* a speculative lane: the bit position of its first symbols */
    unsigned npos;
} rfz_lane;

/* The bits of the stream consumed so far: unchanged by reloads. */
static inline uint64_t rfz_bitpos(const rfz_bits *b, const uint8_t *end) {
    return (uint64_t)(end - 8 - b->ptr) * 8 + b->used;
}

/* Whether a lane can decode a fast round: 5 codes of at most 11 bits or 4
 * of 12 from one 8-byte load (<= 55 bits, of the 57 a reload leaves), all
 * before the stream's last 8 bytes, within its symbols and its stop. */
static inline int rfz_lane_can(const rfz_lane *l) {
    return l->b.ptr >= l->b.start + 8 && l->limit - l->n >= 5
        && rfz_bitpos(&l->b, l->end) + 55 <= l->stop;
}

/* The lowest ptr at which a lane may start another fast round once inside
 * rfz_lanes_fast: before the stream's last 8 bytes, and, as a round leaves
 * at most 62 bits in `used` and reads at most 55 more, 117 bits before its
 * stop (a few bits early at worst, which the join makes up). NULL: none. */
static inline const uint8_t *rfz_lane_lo(const rfz_lane *l) {
    size_t n = (size_t)(l->end - l->b.start), lo = 8;
    if (l->stop != UINT64_MAX) {
        uint64_t back;
        if (l->stop < 117) return NULL;
        back = (l->stop - 117) / 8;
        if (back + 8 < n && n - 8 - back > lo) lo = n - 8 - back;
    }
    return lo <= n ? l->b.start + lo : NULL;
}

/* Fast rounds of S symbols (5 for codes of at most 11 bits, else 4) of the
 * M lanes l[0..M) (constants once inlined, so the loops unroll) until one
 * of them cannot go on; each can when called (rfz_lane_can).
 * The state lives in locals (the symbol stores could alias the lanes), and
 * the container is kept shifted so that each lookup depends only on the
 * previous one's shift, not on a running bit count. */
static inline void rfz_lanes_fast(rfz_lane **l, const rfz_huf_entry *t, const int M,
                                  const int S) {
    const uint8_t *ptr[RFZ_LANES], *lo[RFZ_LANES];
    uint8_t *o[RFZ_LANES];
    uint64_t cur[RFZ_LANES], bits[RFZ_LANES];
    unsigned used[RFZ_LANES];
    size_t rounds = (size_t)-1;
    int j, go = 1;
    for (j = 0; j < M; j++) {
        const uint8_t *low = rfz_lane_lo(l[j]);
        ptr[j] = l[j]->b.ptr;
        used[j] = l[j]->b.used;
        bits[j] = l[j]->b.bits;
        lo[j] = low ? low : ptr[j] + 1;          /* the first round only */
        o[j] = l[j]->out + l[j]->n;
        if ((l[j]->limit - l[j]->n) / S < rounds) rounds = (l[j]->limit - l[j]->n) / S;
    }
    while (go) {
        /* bit 0 of the load is read by none of the round's lookups (they
         * read at most 7 + 55 bits from the top): a 1 there marks how far
         * the container was shifted, which gives the bits consumed without
         * a count kept per symbol */
        for (j = 0; j < M; j++) {
            ptr[j] -= used[j] >> 3;
            bits[j] = rfz_le64(ptr[j]);
            cur[j] = (bits[j] | 1) << (used[j] & 7);
        }
#define RFZ_HUF_STEP(k)                                                     \
        for (j = 0; j < M; j++) {                                           \
            const unsigned e = t[cur[j] >> (64 - RFZ_HUF_LOG_MAX)];         \
            o[j][k] = (uint8_t)(e >> 8);                                    \
            cur[j] <<= e & 63;                                              \
        }
        RFZ_HUF_STEP(0) RFZ_HUF_STEP(1) RFZ_HUF_STEP(2) RFZ_HUF_STEP(3)
        if (S == 5) { RFZ_HUF_STEP(4) }
#undef RFZ_HUF_STEP
        go = --rounds > 0;
        for (j = 0; j < M; j++) {
            used[j] = (unsigned)__builtin_ctzll(cur[j]);
            o[j] += S;
            go &= ptr[j] >= lo[j];
        }
    }
    for (j = 0; j < M; j++) {
        l[j]->b.ptr = ptr[j];
        l[j]->b.used = used[j];
        l[j]->b.bits = bits[j];
        l[j]->n = (size_t)(o[j] - l[j]->out);
    }
}

/* Fast rounds of lanes ln[0..m) while any can go on; log: the longest code. */
static void rfz_lanes_run(rfz_lane *ln, int m, const rfz_huf_entry *t, unsigned log) {
    for (;;) {
        rfz_lane *act[RFZ_LANES];
        int k = 0, i;
        for (i = 0; i < m; i++)
            if (rfz_lane_can(&ln[i])) act[k++] = &ln[i];
        if (k == 0) return;
        if (log <= 11) {
            switch (k) {
            case 1: rfz_lanes_fast(act, t, 1, 5); break;
            case 2: rfz_lanes_fast(act, t, 2, 5); break;
            case 3: rfz_lanes_fast(act, t, 3, 5); break;
            case 4: rfz_lanes_fast(act, t, 4, 5); break;
            case 5: rfz_lanes_fast(act, t, 5, 5); break;
            case 6: rfz_lanes_fast(act, t, 6, 5); break;
            case 7: rfz_lanes_fast(act, t, 7, 5); break;
            default: rfz_lanes_fast(act, t, 8, 5); break;
            }
        } else {
            /* 12-bit codes (rare: libzstd tables are mostly 11 bits) fit 4 to a
             * round; their lanes go at most 4 at a time (less code) */
            switch (k) {
            case 1: rfz_lanes_fast(act, t, 1, 4); break;
            case 2: rfz_lanes_fast(act, t, 2, 4); break;
            case 3: rfz_lanes_fast(act, t, 3, 4); break;
            default: rfz_lanes_fast(act, t, 4, 4); break;
            }
        }
    }
}

/* One symbol with the careful reload. */
static inline int rfz_huf_one(rfz_bits *b, const rfz_huf_entry *t, uint8_t *o) {
    unsigned e;
    if (rfz_reload(b)) return RFZ_CORRUPT;
    e = t[rfz_peek(b, RFZ_HUF_LOG_MAX)];
    *o = (uint8_t)(e >> 8);
    b->used += e & 255;
    return RFZ_OK;
}

/* Decodes `count` more symbols of each of the m Huffman streams idx[0..m),
 * side by side. */
static int rfz_huf_lockstep(rfz_dec *d, const int *idx, int m, size_t count) {
    const rfz_huf_entry *t = d->huf.t;
    unsigned log = d->huf.log;
    rfz_lane ln[4];
    int j;
    for (j = 0; j < m; j++) {
        ln[j].b = d->hs[idx[j]];
        ln[j].end = d->hs_end[idx[j]];
        ln[j].out = d->lit + d->seg_at[idx[j]];
        ln[j].n = 0;
        ln[j].limit = count;
        ln[j].stop = UINT64_MAX;
    }
    rfz_lanes_run(ln, m, t, log);
    for (j = 0; j < m; j++) {
        size_t at;
        for (; ln[j].n < count; ln[j].n++)          /* the rest one symbol at a time */
            if (rfz_huf_one(&ln[j].b, t, ln[j].out + ln[j].n)) return RFZ_CORRUPT;
        d->hs[idx[j]] = ln[j].b;
        at = d->seg_at[idx[j]] += count;
        /* a finished stream must have used exactly its bits */
        if (at == d->seg_end[idx[j]] && rfz_bits_end(&d->hs[idx[j]])) return RFZ_CORRUPT;
    }
    return RFZ_OK;
}

/* Splits the literals [seg_at, min(want, seg_end)) of each stream into
 * lanes, RFZ_LANES in all, and decodes them side by side: the literals of a
 * block's first quarter all come from stream 1, which alone would run at
 * the table's latency.
 *
 * A Huffman stream's only decoding state is its bit position, and a reader
 * started at a bit position inside a code falls into step with the true
 * code boundaries, usually within a few symbols. So a stream's later lanes
 * start at guessed bit positions (its average code length times the
 * symbols before them) and record where their first RFZ_SYNC_SYMS symbols
 * begin. Then each lane's predecessor, whose state is the stream's own,
 * goes on one symbol at a time until it stands where the lane began a
 * symbol: from there the lane's symbols are the stream's. A lane it does
 * not meet there is dropped with the lanes after it (their literals are
 * decoded later, as without lanes), so the output never depends on a
 * guess. Decodes nothing when the literals wanted are too few. */
static int rfz_huf_split(rfz_dec *d, size_t want) {
    const rfz_huf_entry *t = d->huf.t;
    unsigned log = d->huf.log;
    rfz_lane ln[RFZ_LANES];
    size_t left[4], total = 0;
    int first[4], nl[4], spec_lane[RFZ_LANES], s, k, i, m = 0, spare, spec = 0;
    for (s = 0; s < d->streams; s++) {
        size_t target = d->seg_end[s] < want ? d->seg_end[s] : want;
        left[s] = d->seg_at[s] < target ? target - d->seg_at[s] : 0;
        total += left[s];
        nl[s] = left[s] > 0;
        m += nl[s];
    }
    if (total < 2 * RFZ_LANE_MIN) return RFZ_OK;
    /* the spare lanes, one at a time, to the stream with the most symbols
     * per lane, until no lane has much more than a quarter of the symbols:
     * the longest lane sets the time, and about four lanes fill the CPU */
    for (spare = RFZ_LANES - m; spare > 0; spare--) {
        int best = -1;
        for (s = 0; s < d->streams; s++)
            if (nl[s] && left[s] / (size_t)(nl[s] + 1) >= RFZ_LANE_MIN
                && (best < 0 || left[s] / (size_t)nl[s] > left[best] / (size_t)nl[best]))
                best = s;
        if (best < 0 || left[best] / (size_t)nl[best] <= total / 4 + RFZ_LANE_MIN / 4) break;
        nl[best]++;
    }
    m = 0;
    for (s = 0; s < d->streams; s++) {
        const uint8_t *end = d->hs_end[s];
        uint64_t p0, nbits;
        size_t share, syms;
        if (!nl[s]) continue;
        first[s] = m;
        p0 = rfz_bitpos(&d->hs[s], end);
        nbits = (uint64_t)(end - d->hs[s].start) * 8;
        syms = d->seg_end[s] - d->seg_at[s];
        share = left[s] / (size_t)nl[s];
        ln[m].b = d->hs[s];
        ln[m].end = end;
        ln[m].out = d->lit + d->seg_at[s];
        ln[m].n = 0;
        ln[m].limit = left[s];
        ln[m].stop = UINT64_MAX;
        m++;
        for (k = 1; k < nl[s]; k++) {
            rfz_lane *l = &ln[m];
            /* the guess: the stream's remaining bits shared by its remaining
             * symbols, on the grid of the code lengths (with lengths all
             * multiples of one number, a lane off that grid never falls in) */
            uint64_t at = p0 + (nbits - p0) * (uint64_t)(share * (size_t)k) / syms;
            at -= (at - p0) % d->huf.grid;
            /* the lane's first symbols, and its 8-byte loads, inside the
             * stream before its last 8 bytes: they need no careful reload */
            if (nbits < RFZ_SYNC_BITS || at > nbits - RFZ_SYNC_BITS) break;
            l->b.start = d->hs[s].start;
            l->b.ptr = end - 8 - (at >> 3);
            l->b.used = (unsigned)(at & 7);
            l->b.bits = rfz_le64(l->b.ptr);
            l->end = end;
            l->out = d->spec[spec];
            l->n = 0;
            l->limit = k == nl[s] - 1 && left[s] - share * (size_t)k < RFZ_SPEC_MAX
                       ? left[s] - share * (size_t)k : RFZ_SPEC_MAX;
            l->stop = UINT64_MAX;
            l->npos = RFZ_SYNC_SYMS;
            ln[m - 1].stop = at;
            spec_lane[spec++] = m++;
        }
        nl[s] = m - first[s];
    }
    /* the speculative lanes' first symbols and where they begin, the lanes
     * interleaved so that their lookups overlap */
    for (i = 0; i < RFZ_SYNC_SYMS; i++)
        for (k = 0; k < spec; k++) {
            rfz_lane *l = &ln[spec_lane[k]];
            unsigned e;
            l->pos[i] = (uint32_t)rfz_bitpos(&l->b, l->end);
            rfz_reload(&l->b);                   /* cannot run out: RFZ_SYNC_BITS */
            e = t[rfz_peek(&l->b, RFZ_HUF_LOG_MAX)];
            l->out[i] = (uint8_t)(e >> 8);
            l->b.used += e & 255;
        }
    for (k = 0; k < spec; k++) ln[spec_lane[k]].n = RFZ_SYNC_SYMS;
    rfz_lanes_run(ln, m, t, log);
    /* join each stream's lanes in order */
    for (s = 0; s < d->streams; s++) {
        rfz_bits b;
        size_t at, target;
        if (!nl[s]) continue;
        b = ln[first[s]].b;
        at = d->seg_at[s] + ln[first[s]].n;
        target = d->seg_at[s] + left[s];
        for (k = 1; k < nl[s]; k++) {
            const rfz_lane *l = &ln[first[s] + k];
            unsigned r = 0;
            int met = 0;
            while (at < target) {
                uint64_t q = rfz_bitpos(&b, l->end);
                while (r < l->npos && l->pos[r] < q) r++;
                if (r == l->npos) break;
                if (l->pos[r] == q) { met = 1; break; }
                if (rfz_huf_one(&b, t, d->lit + at)) return RFZ_CORRUPT;
                at++;
            }
            if (!met) {
                /* codes that fall into step slowly (lengths mostly of a
                 * common multiple): the block's lanes would mostly be wasted */
                d->split_off = 1;
                break;
            }
            /* the lane's symbols are the stream's: more than it holds is corrupt */
            if (l->n - r > d->seg_end[s] - at) return RFZ_CORRUPT;
            memcpy(d->lit + at, l->out + r, l->n - r);
            at += l->n - r;
            b = l->b;
        }
        d->hs[s] = b;
        d->seg_at[s] = at;
        if (at == d->seg_end[s] && rfz_bits_end(&d->hs[s])) return RFZ_CORRUPT;
    }
    d->lit_avail = rfz_lit_prefix(d);
    return RFZ_OK;
}

/* Makes literals [0, want) of the current block available (lit_avail >= want). */
static int rfz_literals_upto(rfz_dec *d, size_t want) {
    int idx[4], m, s, rc;
    if (want > d->lit_size) want = d->lit_size;
    if (d->lit_avail < want && !d->split_off && (rc = rfz_huf_split(d, want))) return rc;
    while (d->lit_avail < want) {
        size_t least = (size_t)-1;
        m = 0;
        for (s = 0; s < d->streams; s++) {
            size_t target = d->seg_end[s] < want ? d->seg_end[s] : want;
            if (d->seg_at[s] < target) {
                size_t left = target - d->seg_at[s];
                idx[m++] = s;
                if (left < least) least = left;
            }
        }
        if (m == 0) return RFZ_CORRUPT;
        if ((rc = rfz_huf_lockstep(d, idx, m, least))) return rc;
        d->lit_avail = rfz_lit_prefix(d);
    }
    return RFZ_OK;
}

static int rfz_seq_table(const uint8_t *src, size_t n, size_t *p, unsigned mode, rfz_fse *t,
                         int *ok, unsigned *logp, rfz_span *span, const int16_t *def,
                         unsigned def_max, unsigned def_log, unsigned log_max, unsigned sym_max) {
    int16_t norm[256];
    unsigned max_sym, log;
    size_t used;
    int rc;
    switch (mode) {
    case 0:
        rc = rfz_fse_build(t, def, def_max, def_log, span);
        *logp = def_log;
        break;
    case 1:
        if (*p >= n || src[*p] > sym_max) return RFZ_CORRUPT;
        t[0].sym = src[(*p)++];
        t[0].nbits = 0;
        t[0].base = 0;
        span->sym_min = span->sym_max = t[0].sym;
        span->nb_min = span->nb_max = 0;
        *logp = 0;
        rc = RFZ_OK;
        break;
    case 2:
        if ((rc = rfz_fse_counts(src + *p, n - *p, log_max, sym_max, norm, &max_sym, &log, &used)))
            return rc;
        *p += used;
        rc = rfz_fse_build(t, norm, max_sym, log, span);
        *logp = log;
        break;
    default:
        return *ok ? RFZ_OK : RFZ_CORRUPT;   /* repeat: the previous block's table */
    }
    *ok = rc == RFZ_OK;
    return rc;
}

/* A compressed block's literals section header at src[0..n) (RFC 8878
 * 3.1.1.3.1): its type, size format, regenerated size, compressed size
 * (Huffman types) and header length; *end: where the section ends. */
static int rfz_lit_header(const uint8_t *src, size_t n, size_t block_max, unsigned *type,
                          unsigned *sf, size_t *regen, size_t *comp, size_t *hdr, size_t *end) {
    if (n < 1) return RFZ_CORRUPT;
    *type = src[0] & 3;
    *sf = (src[0] >> 2) & 3;
    *comp = 0;
    if (*type < 2) {
        if ((*sf & 1) == 0) { *regen = src[0] >> 3; *hdr = 1; }
        else if (*sf == 1) { if (n < 2) return RFZ_CORRUPT; *regen = (src[0] >> 4) + ((size_t)src[1] << 4); *hdr = 2; }
        else { if (n < 3) return RFZ_CORRUPT; *regen = (src[0] >> 4) + ((size_t)src[1] << 4) + ((size_t)src[2] << 12); *hdr = 3; }
        *end = *hdr + (*type == 0 ? *regen : 1);
    } else {
        if (*sf <= 1) {
            uint32_t v;
            if (n < 3) return RFZ_CORRUPT;
            v = src[0] | ((uint32_t)src[1] << 8) | ((uint32_t)src[2] << 16);
            *regen = (v >> 4) & 0x3ff; *comp = (v >> 14) & 0x3ff; *hdr = 3;
        } else if (*sf == 2) {
            uint32_t v;
            if (n < 4) return RFZ_CORRUPT;
            v = src[0] | ((uint32_t)src[1] << 8) | ((uint32_t)src[2] << 16) | ((uint32_t)src[3] << 24);
            *regen = (v >> 4) & 0x3fff; *comp = v >> 18; *hdr = 4;
        } else {
            uint64_t v;
            if (n < 5) return RFZ_CORRUPT;
            v = src[0] | ((uint64_t)src[1] << 8) | ((uint64_t)src[2] << 16) | ((uint64_t)src[3] << 24)
                | ((uint64_t)src[4] << 32);
            *regen = (size_t)((v >> 4) & 0x3ffff); *comp = (size_t)((v >> 22) & 0x3ffff); *hdr = 5;
        }
        *end = *hdr + *comp;
    }
    if (*regen > block_max || *end > n) return RFZ_CORRUPT;
    return RFZ_OK;
}

/* The sequences section's count at src[*p..n); *p moves past it. */
static int rfz_nseq(const uint8_t *src, size_t n, size_t *p, size_t *nseq) {
    unsigned b0;
    if (*p >= n) return RFZ_CORRUPT;
    b0 = src[*p];
    if (b0 < 128) { *nseq = b0; *p += 1; }
    else if (b0 < 255) { if (*p + 2 > n) return RFZ_CORRUPT; *nseq = ((b0 - 128) << 8) + src[*p + 1]; *p += 2; }
    else { if (*p + 3 > n) return RFZ_CORRUPT; *nseq = src[*p + 1] + ((size_t)src[*p + 2] << 8) + 0x7F00; *p += 3; }
    return RFZ_OK;
}

/* The bits of a backward stream of n >= 1 bytes before its end mark (its
 * last byte is nonzero: rfz_bits_init checked). */
static inline uint64_t rfz_stream_bits(const uint8_t *src, size_t n) {
    return (uint64_t)n * 8 - 8 + rfz_highbit(src[n - 1]);
}

/* What the current block's headers and tables allow, checked before any of
 * it is decoded. Its sequence stream (src[0..n), when nseq) holds no fewer
 * and no more bits than nseq sequences read with these tables, their
 * literal lengths fit the literals section, and the block's output (its
 * literals and at least the least match length per sequence) fits the
 * block and the frame; the frame's last block, whose matches can be at
 * most so long, must reach the frame's size (cap: the size it decodes to,
 * exactly). A block failing these is corrupt for libzstd too, where it
 * fails at the block's end; checked here, a lookup that stops early does
 * not decode the start of such a block. */
static int rfz_block_bounds(const rfz_dec *d, const uint8_t *src, size_t n) {
    const rfz_span *ll = &d->ll_span, *of = &d->of_span, *ml = &d->ml_span;
    uint64_t k = d->nseq, out_lo = d->lit_size, out_hi = d->lit_size;
    uint64_t room = d->cap - d->op < d->block_max ? d->cap - d->op : d->block_max;
    if (k) {
        uint64_t bits = rfz_stream_bits(src, n), init = d->ll_log + d->of_log + d->ml_log;
        uint64_t lo = init + k * (RFZ_LL_BITS[ll->sym_min] + RFZ_ML_BITS[ml->sym_min] + of->sym_min)
                      + (k - 1) * (ll->nb_min + of->nb_min + ml->nb_min);
        uint64_t hi = init + k * (RFZ_LL_BITS[ll->sym_max] + RFZ_ML_BITS[ml->sym_max] + of->sym_max)
                      + (k - 1) * (ll->nb_max + of->nb_max + ml->nb_max);
        if (bits < lo || bits > hi) return RFZ_CORRUPT;
        if (k * RFZ_LL_BASE[ll->sym_min] > d->lit_size) return RFZ_CORRUPT;
        out_lo += k * RFZ_ML_BASE[ml->sym_min];
        out_hi += k * (RFZ_ML_BASE[ml->sym_max] + ((uint64_t)1 << RFZ_ML_BITS[ml->sym_max]) - 1);
    }
    if (out_lo > room) return RFZ_CORRUPT;
    if (d->last_block && (out_hi < d->cap - d->op || room < d->cap - d->op)) return RFZ_CORRUPT;
    return RFZ_OK;
}

/* The frame's blocks, walked by their headers from src[p] before any is
 * decoded: each inside the frame, up to a last block, and their output --
 * exact for raw and RLE blocks, for compressed ones at least their
 * literals and 3 bytes a sequence and at most block_max -- can be cap
 * bytes. A few header bytes a block; a lookup that stops early then does
 * not decode the start of a truncated frame, or of one whose later block
 * headers are damaged. */
static int rfz_frame_bounds(const uint8_t *src, size_t n, size_t p, size_t block_max,
                            size_t cap) {
    uint64_t lo = 0, hi = 0;
    uint32_t bh;
    do {
        size_t bsize;
        unsigned type;
        if (p + 3 > n) return RFZ_CORRUPT;
        bh = src[p] | ((uint32_t)src[p + 1] << 8) | ((uint32_t)src[p + 2] << 16);
        p += 3;
        type = (bh >> 1) & 3;
        bsize = bh >> 3;
        if (bsize > block_max || type == 3) return RFZ_CORRUPT;
        if (type == 1) {                              /* RLE: bsize copies of one byte */
            if (p + 1 > n) return RFZ_CORRUPT;
            p += 1;
            lo += bsize;
            hi += bsize;
            continue;
        }
        if (bsize > n - p) return RFZ_CORRUPT;
        if (type == 0) {                              /* raw */
            lo += bsize;
            hi += bsize;
        } else {
            size_t regen, comp, hdr, q, nseq;
            unsigned lt, sf;
            if (rfz_lit_header(src + p, bsize, block_max, &lt, &sf, &regen, &comp, &hdr, &q)
                || rfz_nseq(src + p, bsize, &q, &nseq)) return RFZ_CORRUPT;
            lo += regen + 3 * (uint64_t)nseq;
            hi += block_max;
        }
        p += bsize;
    } while (!(bh & 1) && lo <= cap);
    return lo <= cap && cap <= hi ? RFZ_OK : RFZ_CORRUPT;
}

/* Starts the compressed block at src[0..n): literals header and table,
 * sequence header, tables and stream. */
static int rfz_block_start(rfz_dec *d, const uint8_t *src, size_t n) {
    size_t p, regen, comp, hdr;
    unsigned type, sf;
    int rc;
    d->streams = 0;
    d->split_off = 0;
    if ((rc = rfz_lit_header(src, n, d->block_max, &type, &sf, &regen, &comp, &hdr, &p))) return rc;
    if (type < 2) {
        if (type == 0) {
            d->lit_src = src + hdr;
        } else {
            memset(d->lit, src[hdr], regen);
            d->lit_src = d->lit;
        }
        d->lit_size = d->lit_avail = regen;
    } else {
        const uint8_t *h = src + hdr;
        size_t used = 0, seg, total, sizes[4];
        int s;
        if (type == 2) {
            if ((rc = rfz_huf_read(&d->huf, h, comp, &used))) return rc;
        } else if (!d->huf.valid) {
            return RFZ_CORRUPT;                            /* treeless without a tree */
        }
        h += used;
        total = comp - used;
        if (sf == 0) {
            d->streams = 1;
            sizes[0] = total;
            d->seg_at[0] = 0;
            d->seg_end[0] = regen;
        } else {
            if (regen < 6 || total < 10) return RFZ_CORRUPT;
            sizes[0] = h[0] | ((size_t)h[1] << 8);
            sizes[1] = h[2] | ((size_t)h[3] << 8);
            sizes[2] = h[4] | ((size_t)h[5] << 8);
            if (sizes[0] + sizes[1] + sizes[2] + 6 > total) return RFZ_CORRUPT;
            sizes[3] = total - 6 - sizes[0] - sizes[1] - sizes[2];
            h += 6;
            seg = (regen + 3) / 4;
            d->streams = 4;
            for (s = 0; s < 4; s++) {
                d->seg_at[s] = seg * (size_t)s;
                d->seg_end[s] = s < 3 ? seg * (size_t)(s + 1) : regen;
            }
        }
        for (s = 0; s < d->streams; s++) {
            uint64_t bits, syms = d->seg_end[s] - d->seg_at[s];
            if ((rc = rfz_bits_init(&d->hs[s], h, sizes[s]))) return rc;
            /* each symbol takes between the shortest and the longest code */
            bits = rfz_stream_bits(h, sizes[s]);
            if (bits < syms * d->huf.shortest || bits > syms * d->huf.log) return RFZ_CORRUPT;
            h += sizes[s];
            d->hs_end[s] = h;
        }
        d->lit_src = d->lit;
        d->lit_size = regen;
        for (s = 0; s < d->streams; s++)       /* empty streams are finished at once */
            if (d->seg_at[s] == d->seg_end[s] && rfz_bits_end(&d->hs[s])) return RFZ_CORRUPT;
        d->lit_avail = rfz_lit_prefix(d);
    }
    d->lit_pos = 0;
    /* sequences */
    if ((rc = rfz_nseq(src, n, &p, &d->nseq))) return rc;
    d->seq_done = 0;
    if (d->nseq == 0) {
        if (p != n) return RFZ_CORRUPT;
        return rfz_block_bounds(d, NULL, 0);
    }
    {
        unsigned modes;
        if (p >= n) return RFZ_CORRUPT;
        modes = src[p++];
        if (modes & 3) return RFZ_CORRUPT;
        if ((rc = rfz_seq_table(src, n, &p, modes >> 6, d->ll_t, &d->ll_ok, &d->ll_log,
                                &d->ll_span, RFZ_LL_DEFAULT, 35, 6, RFZ_LL_LOG_MAX, RFZ_LL_MAX)))
            return rc;
        if ((rc = rfz_seq_table(src, n, &p, (modes >> 4) & 3, d->of_t, &d->of_ok, &d->of_log,
                                &d->of_span, RFZ_OF_DEFAULT, 28, 5, RFZ_OF_LOG_MAX, RFZ_OF_MAX)))
            return rc;
        if ((rc = rfz_seq_table(src, n, &p, (modes >> 2) & 3, d->ml_t, &d->ml_ok, &d->ml_log,
                                &d->ml_span, RFZ_ML_DEFAULT, 52, 6, RFZ_ML_LOG_MAX, RFZ_ML_MAX)))
            return rc;
    }
    if ((rc = rfz_bits_init(&d->sb, src + p, n - p))) return rc;
    return rfz_block_bounds(d, src + p, n - p);
}


/* One sequence: its literals, then its match (RFC 8878 3.1.1.4-5). */
static inline int rfz_execute(rfz_dec *d, size_t ll, size_t off, size_t ml) {
    uint8_t *o;
    const uint8_t *m;
    if (ll > d->lit_size - d->lit_pos || ll + ml > d->cap - d->op
        || ll + ml > d->block_max - (d->op - d->block_out)) return RFZ_CORRUPT;
    if (d->lit_avail < d->lit_pos + ll) {
        int rc = rfz_literals_upto(d, d->lit_pos + ll + 4096);
        if (rc) return rc;
    }
    o = d->dst + d->op;
    memcpy(o, d->lit_src + d->lit_pos, ll);
    d->lit_pos += ll;
    o += ll;
    if (off == 0 || off > (size_t)(o - d->dst)) return RFZ_CORRUPT;
    m = o - off;
    if (off >= ml) {
        memcpy(o, m, ml);
    } else {
        size_t k;                         /* overlapping: a repeated pattern */
        for (k = 0; k < ml; k++) o[k] = m[k];
    }
    d->op += ll + ml;
    return RFZ_OK;
}

static int rfz_sequence(rfz_dec *d) {
    rfz_bits *b = &d->sb;
    const rfz_fse ll_e = d->ll_t[d->ll_s], of_e = d->of_t[d->of_s], ml_e = d->ml_t[d->ml_s];
    unsigned of_code = of_e.sym, ml_code = ml_e.sym, ll_code = ll_e.sym;
    size_t off, ml, ll, ov;
    if (of_code > RFZ_OF_MAX || ml_code > RFZ_ML_MAX || ll_code > RFZ_LL_MAX) return RFZ_CORRUPT;
    if (rfz_reload(b)) return RFZ_CORRUPT;
    ov = ((size_t)1 << of_code) + (size_t)rfz_read(b, of_code);
    if (rfz_reload(b)) return RFZ_CORRUPT;
    ml = RFZ_ML_BASE[ml_code] + (size_t)rfz_read(b, RFZ_ML_BITS[ml_code]);
    ll = RFZ_LL_BASE[ll_code] + (size_t)rfz_read(b, RFZ_LL_BITS[ll_code]);
    if (ov > 3) {
        off = ov - 3;
        d->rep[2] = d->rep[1]; d->rep[1] = d->rep[0]; d->rep[0] = off;
    } else {
        size_t i = ov - 1 + (ll == 0);    /* with no literals, the repeat codes shift by one */
        if (i == 0) {
            off = d->rep[0];
        } else {
            off = i == 3 ? d->rep[0] - 1 : d->rep[i];
            if (i != 1) d->rep[2] = d->rep[1];
            d->rep[1] = d->rep[0];
            d->rep[0] = off;
        }
    }
    if (++d->seq_done < d->nseq) {        /* next states: literals, match, offset */
        if (rfz_reload(b)) return RFZ_CORRUPT;
        d->ll_s = ll_e.base + (unsigned)rfz_read(b, ll_e.nbits);
        d->ml_s = ml_e.base + (unsigned)rfz_read(b, ml_e.nbits);
        d->of_s = of_e.base + (unsigned)rfz_read(b, of_e.nbits);
    }
    return rfz_execute(d, ll, off, ml);
}

/* Ends the current compressed block: the literals after its last sequence,
 * and every stream used up exactly. */
static int rfz_block_end(rfz_dec *d) {
    size_t rest = d->lit_size - d->lit_pos;
    int rc;
    if (d->nseq && rfz_bits_end(&d->sb)) return RFZ_CORRUPT;
    if ((rc = rfz_literals_upto(d, d->lit_size))) return rc;
    if (rest > d->cap - d->op || rest > d->block_max - (d->op - d->block_out)) return RFZ_CORRUPT;
    memcpy(d->dst + d->op, d->lit_src + d->lit_pos, rest);
    d->op += rest;
    d->lit_pos = d->lit_size;
    d->in_block = 0;
    return RFZ_OK;
}

/* Decodes until at least `target` bytes of output exist (or the frame
 * ends: then d->frame_done). */
static int rfz_advance(rfz_dec *d, size_t target) {
    int rc;
    if (target > d->cap) target = d->cap;
    while (d->op < target && !d->frame_done) {
        if (!d->in_block) {
            uint32_t bh;
            size_t bsize, type;
            if (d->last_block) {
                d->frame_done = 1;
                break;
            }
            if (d->ip + 3 > d->src_size) return RFZ_CORRUPT;
            bh = d->src[d->ip] | ((uint32_t)d->src[d->ip + 1] << 8) | ((uint32_t)d->src[d->ip + 2] << 16);
            d->ip += 3;
            d->last_block = bh & 1;
            type = (bh >> 1) & 3;
            bsize = bh >> 3;
            d->block_out = d->op;
            if (bsize > d->block_max) return RFZ_CORRUPT;
            if (type == 0) {                      /* raw */
                if (bsize > d->src_size - d->ip || bsize > d->cap - d->op) return RFZ_CORRUPT;
                memcpy(d->dst + d->op, d->src + d->ip, bsize);
                d->op += bsize;
                d->ip += bsize;
            } else if (type == 1) {               /* RLE: bsize copies of one byte */
                if (d->ip + 1 > d->src_size || bsize > d->cap - d->op) return RFZ_CORRUPT;
                memset(d->dst + d->op, d->src[d->ip], bsize);
                d->op += bsize;
                d->ip += 1;
            } else if (type == 2) {
                if (bsize > d->src_size - d->ip) return RFZ_CORRUPT;
                if ((rc = rfz_block_start(d, d->src + d->ip, bsize))) return rc;
                d->ip += bsize;
                d->in_block = 1;
                if (d->nseq) {
                    rfz_bits *b = &d->sb;
                    d->ll_s = (unsigned)rfz_read(b, d->ll_log);
                    if (rfz_reload(b)) return RFZ_CORRUPT;
                    d->of_s = (unsigned)rfz_read(b, d->of_log);
                    if (rfz_reload(b)) return RFZ_CORRUPT;
                    d->ml_s = (unsigned)rfz_read(b, d->ml_log);
                    /* the literals this output needs, as a share of the block's, in one go */
                    {
                        size_t want = target - d->op, room = d->cap - d->op;
                        if (room > d->block_max) room = d->block_max;
                        if (room && want < room)
                            want = (size_t)((double)d->lit_size * want / room) + 1024;
                        else
                            want = d->lit_size;
                        if ((rc = rfz_literals_upto(d, want))) return rc;
                    }
                }
            } else {
                return RFZ_CORRUPT;
            }
            continue;
        }
        while (d->seq_done < d->nseq && d->op < target)
            if ((rc = rfz_sequence(d))) return rc;
        if (d->seq_done == d->nseq && (rc = rfz_block_end(d))) return rc;
    }
    if (!d->in_block && d->last_block) d->frame_done = 1;
    return RFZ_OK;
}

/* After rfz_advance produced all cap bytes: RFZ_OK if the frame ends there,
 * its last block done or only empty raw/RLE blocks left (as a streaming
 * compressor's end may write), else RFZ_CORRUPT (output left over: libzstd
 * says why). A whole block's decompression asks this before using it. */
static int rfz_finish(rfz_dec *d) {
    if (d->op != d->cap || d->in_block) return RFZ_CORRUPT;
    while (!d->frame_done) {
        uint32_t bh;
        size_t type;
        if (d->last_block) {
            d->frame_done = 1;
            break;
        }
        if (d->ip + 3 > d->src_size) return RFZ_CORRUPT;
        bh = d->src[d->ip] | ((uint32_t)d->src[d->ip + 1] << 8) | ((uint32_t)d->src[d->ip + 2] << 16);
        type = (bh >> 1) & 3;
        if ((bh >> 3) != 0 || type > 1) return RFZ_CORRUPT;
        d->ip += 3 + type;                        /* an RLE block has its byte */
        if (d->ip > d->src_size) return RFZ_CORRUPT;
        d->last_block = bh & 1;
    }
    return RFZ_OK;
}

#endif
