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

/* An ArrowArray made by rowformat owns: its buffers (malloc'd), the buffers
 * pointer array, its children (malloc'd ArrowArray structs) and the children
 * pointer array. private_data is unused. */
static void rf_arrow_release(struct ArrowArray *a) {
    if (a == NULL || a->release == NULL) return;
    for (int64_t i = 0; i < a->n_children; i++) {
        struct ArrowArray *c = a->children[i];
        if (c->release) c->release(c);
        free(c);
    }
    free(a->children);
    for (int64_t i = 0; i < a->n_buffers; i++) free((void *)a->buffers[i]);
    free(a->buffers);
    a->release = NULL;
}

#endif
