/* The Arrow C data interface (an ABI, see arrow.apache.org/docs/format/CDataInterface)
 * plus the release callback for arrays whose buffers rowformat allocated. */
#ifndef RF_ARROW_H
#define RF_ARROW_H

#include <stdint.h>
#include <stdlib.h>

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

/* An ArrowArray made by rowformat owns: its buffers (malloc'd), its children
 * (malloc'd ArrowArray structs), and one allocation holding the buffers
 * pointers followed by the children pointers (a NULL child, left by running
 * out of memory while building, is skipped). private_data is unused. */
static void rf_arrow_release(struct ArrowArray *a) {
    if (a == NULL || a->release == NULL) return;
    for (int64_t i = 0; i < a->n_children; i++) {
        struct ArrowArray *c = a->children[i];
        if (c == NULL) continue;          /* a child that ran out of memory */
        if (c->release) c->release(c);
        free(c);
    }
    for (int64_t i = 0; i < a->n_buffers; i++) free((void *)a->buffers[i]);
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
