# Growable byte buffers shared by the row codecs (.row and Fory): malloc-owned
# memory handed to Arrow on finish. Memory is not zeroed: bitmaps clear each
# byte as they start it, headers are cleared when written. Functions return 0,
# or -1 when out of memory.
from libc.stdint cimport int64_t, uint8_t, uint64_t
from libc.stdlib cimport calloc, free, realloc
from libc.string cimport memcpy, memset

from rowformat._wire cimport RF_PAD, rf_buf_free, rf_buf_reuse, rf_copy, rf_write_uvarint


ctypedef struct Buf:
    uint8_t *data
    int64_t len
    int64_t cap
    int64_t hint    # the length this buffer reached last time it was handed over


cdef inline int buf_grow(Buf *b, int64_t need) noexcept nogil:
    cdef int64_t cap = b.cap * 2
    cdef int64_t least
    cdef uint8_t *p
    cdef size_t size
    if b.cap == 0 and b.hint > need:
        # a builder's next batch is usually like its last: allocate that size
        # once instead of doubling (less memory, no copies); a freed buffer
        # of about the last length does too (a string column's length varies
        # a little from batch to batch, and the buffer grows if it must)
        cap = b.hint + (b.hint >> 4)
        least = b.hint - (b.hint >> 4)
    else:
        least = cap
    if cap < need:
        cap = need
    if least < need:
        least = need
    if cap < 64:
        cap = 64
    # a freed batch's buffer, whichever thread freed it (rf_arrow.h): large
    # buffers only, so a lookup's small ones skip the stash's lock
    p = <uint8_t *> rf_buf_reuse(<size_t> least, &size)
    if p != NULL:
        if b.len:
            memcpy(p, b.data, b.len)
        # outgrown: to malloc, not the stash, which no batch's next
        # buffer would take it from
        free(b.data)
        b.data = p
        b.cap = <int64_t> size
        return 0
    p = <uint8_t *> realloc(b.data, cap)
    if p == NULL:
        return -1
    b.data = p
    b.cap = cap
    return 0


cdef inline int buf_reserve(Buf *b, int64_t extra) noexcept nogil:
    if b.len + extra <= b.cap:
        return 0
    return buf_grow(b, b.len + extra)


cdef inline int buf_put(Buf *b, const void *src, int64_t n) noexcept nogil:
    if buf_reserve(b, n):
        return -1
    rf_copy(b.data + b.len, <const uint8_t *> src, n)
    b.len += n
    return 0


cdef inline int buf_put_fixed(Buf *b, const uint8_t *src, int w) noexcept nogil:
    """Appends 1, 2, 4, 8 or 16 bytes with constant-size copies the compiler inlines."""
    if buf_reserve(b, 16):
        return -1
    if w == 1:
        b.data[b.len] = src[0]
    elif w == 2:
        memcpy(b.data + b.len, src, 2)
    elif w == 4:
        memcpy(b.data + b.len, src, 4)
    elif w == 8:
        memcpy(b.data + b.len, src, 8)
    else:
        memcpy(b.data + b.len, src, 16)
    b.len += w
    return 0


cdef inline void zero_small(uint8_t *p, int64_t n) noexcept nogil:
    """memset for the few bytes of a null header or bitmap, without a call."""
    cdef int64_t k
    if n <= 16:
        for k in range(n):
            p[k] = 0
    else:
        memset(p, 0, n)


cdef inline int64_t buf_zero(Buf *b, int64_t n) noexcept nogil:
    """Appends n zero bytes; returns their position, or -1."""
    cdef int64_t pos
    if buf_reserve(b, n):
        return -1
    pos = b.len
    zero_small(b.data + pos, n)
    b.len += n
    return pos


cdef inline int buf_varint(Buf *b, uint64_t v) noexcept nogil:
    if buf_reserve(b, 10):
        return -1
    b.len += rf_write_uvarint(b.data + b.len, v)
    return 0


cdef inline void buf_free(Buf *b) noexcept nogil:
    rf_buf_free(b.data)
    b.data = NULL
    b.len = 0
    b.cap = 0


cdef enum:
    TRIM_SLACK = 4096


cdef inline uint8_t *buf_take(Buf *b) noexcept nogil:
    """Hands the memory over (to an ArrowArray), trimmed so a finished
    batch does not keep the doubling slack (slack under TRIM_SLACK stays: a
    lookup's tiny buffers skip a realloc each); NULL only when out of memory.
    Trimmed to its length plus RF_PAD, the most a builder reserves past what
    it writes, so that the buffer, freed and taken from the stash for the
    next batch (buf_grow), holds as much again without growing."""
    cdef uint8_t *p = b.data
    cdef uint8_t *trimmed
    b.hint = b.len
    if p == NULL:
        p = <uint8_t *> calloc(1, 64)
    elif b.cap - b.len > TRIM_SLACK:
        trimmed = <uint8_t *> realloc(p, b.len + RF_PAD)
        if trimmed != NULL:
            p = trimmed
    b.data = NULL
    b.len = 0
    b.cap = 0
    return p
