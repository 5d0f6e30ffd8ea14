/* The Arrow C data interface (an ABI, see arrow.apache.org/docs/format/CDataInterface)
 * plus the release callback for arrays whose buffers rowformat allocated. */
#ifndef RF_ARROW_H
#define RF_ARROW_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifndef ARROW_C_DATA_INTERFACE
#define ARROW_C_DATA_INTERFACE
struct ArrowSchema {
    const char *format;
    const char *name;
    const char *metadata;
    int64_t flags;
    int64_t n_children;
    struct ArrowSchema **children;
    struct ArrowSchema *dictionary;
    void (*release)(struct ArrowSchema *);
    void *private_data;
};

struct ArrowArray {
    int64_t length;
    int64_t null_count;
    int64_t offset;
    int64_t n_buffers;
    int64_t n_children;
    const void **buffers;
    struct ArrowArray **children;
    struct ArrowArray *dictionary;
    void (*release)(struct ArrowArray *);
    void *private_data;
};
#endif

/* Freed batch buffers, shared by all threads while a scan runs (glibc only).
 *
 * Pool threads decode a scan's batches and its caller frees them. glibc
 * gives each thread its own arena and returns a freed chunk to the arena it
 * came from, where only the thread that allocated it reuses it (large
 * buffers come from arenas, not mmap, once the first batch's have raised
 * glibc's dynamic mmap threshold). So a scan's footprint followed the
 * scheduler: with two pool threads and the same two batches alive at a
 * time, 26 MB when the threads took turns and 44 MB when each decoded two
 * batches in a row, the other thread's arena keeping a freed batch it had
 * no use for. While a scan runs (rf_stash_scans), rf_buf_free stashes large
 * buffers instead, and a builder starting or growing a buffer (buf_grow)
 * takes one whatever thread it runs on: the memory the caller freed is the
 * next batch's. Bounded (RF_STASH_SLOTS buffers, RF_STASH_BYTES: past that
 * the oldest go back to malloc), and emptied when the last scan ends, so an
 * idle process keeps what malloc keeps. Elsewhere (no malloc_usable_size to
 * know a freed buffer's size), plain malloc. */
#if defined(__GLIBC__)
#include <malloc.h>
#include <pthread.h>

#define RF_STASH_MIN ((size_t)64 << 10)    /* smaller buffers: malloc's own caches serve them */
#define RF_STASH_SLOTS 64                  /* a batch of a wide schema holds a few dozen */
#define RF_STASH_BYTES ((size_t)64 << 20)  /* a few batches of 65536 rows of a wide schema */

static struct { void *p; size_t size; } rf_stash[RF_STASH_SLOTS];
static int rf_stash_n;
static size_t rf_stash_bytes;
static int rf_stash_scans;
static pthread_mutex_t rf_stash_lock = PTHREAD_MUTEX_INITIALIZER;
static int rf_stash_atfork;   /* the fork handlers are registered (under the lock) */

/* a fork while a pool thread holds the lock would leave it locked in the child */
static void rf_stash_prepare(void) { pthread_mutex_lock(&rf_stash_lock); }
static void rf_stash_release(void) { pthread_mutex_unlock(&rf_stash_lock); }

static void rf_stash_lock_(void) {
    pthread_mutex_lock(&rf_stash_lock);
    /* first use registers the fork handlers; not with pthread_once, which
     * glibc 2.34+ versions GLIBC_2.34 and so would raise the wheels' glibc
     * floor (manylinux_2_28: scripts/build_wheel.sh) */
    if (!rf_stash_atfork) {
        rf_stash_atfork = 1;
        pthread_atfork(rf_stash_prepare, rf_stash_release, rf_stash_release);
    }
}

/* Removes stash entry i, returning its buffer (the lock is held). */
static void *rf_stash_take(int i) {
    void *p = rf_stash[i].p;
    rf_stash_bytes -= rf_stash[i].size;
    rf_stash_n--;
    memmove(rf_stash + i, rf_stash + i + 1, (size_t)(rf_stash_n - i) * sizeof(rf_stash[0]));
    return p;
}

/* A scan starts (+1) or ends (-1); the last to end empties the stash. */
static void rf_stash_scan(int delta) {
    void *out[RF_STASH_SLOTS];
    int n_out = 0;
    rf_stash_lock_();
    __atomic_add_fetch(&rf_stash_scans, delta, __ATOMIC_RELAXED);
    while (rf_stash_scans == 0 && rf_stash_n) out[n_out++] = rf_stash_take(rf_stash_n - 1);
    pthread_mutex_unlock(&rf_stash_lock);
    while (n_out) free(out[--n_out]);   /* outside the lock: munmap can take a while */
}

/* free(), or into the stash during a scan, where the oldest buffers make
 * room (freed): the newest are the likeliest to fit the next batch's. */
static void rf_buf_free(void *p) {
    void *out[RF_STASH_SLOTS];
    int n_out = 0;
    size_t size;
    /* no scan (a lookup's batch, a read()'s table): no lock, no size */
    if (__atomic_load_n(&rf_stash_scans, __ATOMIC_RELAXED) == 0) {
        free(p);
        return;
    }
    size = malloc_usable_size(p);
    if (size < RF_STASH_MIN || size > RF_STASH_BYTES) {
        free(p);
        return;
    }
    rf_stash_lock_();
    if (rf_stash_scans > 0) {
        while (rf_stash_n == RF_STASH_SLOTS || rf_stash_bytes + size > RF_STASH_BYTES)
            out[n_out++] = rf_stash_take(0);
        rf_stash[rf_stash_n].p = p;
        rf_stash[rf_stash_n].size = size;
        rf_stash_n++;
        rf_stash_bytes += size;
        p = NULL;
    }
    pthread_mutex_unlock(&rf_stash_lock);
    free(p);
    while (n_out) free(out[--n_out]);
}

/* The smallest stashed buffer of want to 2 * want bytes (its size in *size),
 * or NULL: a bigger one would hold memory the buffer does not need. */
static void *rf_buf_reuse(size_t want, size_t *size) {
    void *p = NULL;
    int best = -1;
    if (want < RF_STASH_MIN || __atomic_load_n(&rf_stash_scans, __ATOMIC_RELAXED) == 0)
        return NULL;    /* (no scan: the stash is empty) */
    rf_stash_lock_();
    for (int i = 0; i < rf_stash_n; i++) {
        size_t s = rf_stash[i].size;
        if (s >= want && s <= 2 * want && (best < 0 || s < rf_stash[best].size)) best = i;
    }
    if (best >= 0) {
        *size = rf_stash[best].size;
        p = rf_stash_take(best);
    }
    pthread_mutex_unlock(&rf_stash_lock);
    return p;
}
#else
#define rf_buf_free free
static inline void rf_stash_scan(int delta) { (void)delta; }
static inline void *rf_buf_reuse(size_t want, size_t *size) {
    (void)want; (void)size;
    return NULL;
}
#endif

/* An ArrowArray made by rowformat owns: its buffers (malloc'd), its children
 * (malloc'd ArrowArray structs), and one allocation holding the buffers
 * pointers followed by the children pointers (a NULL child, left by running
 * out of memory while building, is skipped). private_data is unused.
 * Buffers go through rf_buf_free. */
static void rf_arrow_release(struct ArrowArray *a) {
    if (a == NULL || a->release == NULL) return;
    for (int64_t i = 0; i < a->n_children; i++) {
        struct ArrowArray *c = a->children[i];
        if (c == NULL) continue;          /* a child that ran out of memory */
        if (c->release) c->release(c);
        free(c);
    }
    for (int64_t i = 0; i < a->n_buffers; i++) rf_buf_free((void *)a->buffers[i]);
    free(a->buffers);                     /* and the children pointers after them */
    a->release = NULL;
}

/* A new ArrowArray of n_buffers (NULL) buffers and n_children (NULL)
 * children, released by rf_arrow_release; NULL when out of memory. */
static inline struct ArrowArray *rf_arrow_new(int64_t n_buffers, int64_t n_children) {
    struct ArrowArray *a = (struct ArrowArray *)calloc(1, sizeof(struct ArrowArray));
    if (a == NULL) return NULL;
    a->n_buffers = n_buffers;
    a->n_children = n_children;
    /* one allocation for both pointer arrays: a lookup's batch makes an
     * array per column, and each allocation shows in its latency */
    a->buffers = (const void **)calloc((size_t)(n_buffers + n_children) + 1, sizeof(void *));
    if (a->buffers == NULL) {
        free(a);
        return NULL;
    }
    a->children = (struct ArrowArray **)(a->buffers + n_buffers);
    a->release = rf_arrow_release;
    return a;
}

#endif
