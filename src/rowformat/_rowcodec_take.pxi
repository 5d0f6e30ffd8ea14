# A random batch (a training step's few hundred scattered rows) touches about
# one block per row. Its floor is decompressing each touched block once, on
# every core, only as far as its last wanted row. The reader decompresses
# the blocks it needs whole with libzstd on its threads (python-zstandard's
# multi_decompress_to_buffer: faster than rf_zstd.h on whole blocks), and
# the blocks whose last wanted row is early with BlockPrefixes: the threads
# that call run() (the caller and pool threads) take blocks off one shared
# counter and decompress and walk each only up to that row (as PrefixBlock
# does), with the GIL released.
#
# A frame rf_zstd.h leaves to libzstd, or a corrupt one, is not an error
# here: blocks() returns None for it, and the reader decompresses it as
# usual, which reports any error with the file and block.

cdef struct PrefixJob:
    const uint8_t *frame
    int64_t frame_len
    uint8_t *out
    int64_t usize
    int64_t num_rows
    int64_t last            # the last row wanted
    int32_t *starts         # the walked row starts, rows 0..last + 1
    int status              # 0: not done, 1: done, -1: left to the caller


@cython.final
cdef class BlockPrefixes:
    """Block prefixes to decompress: ``frames`` (their ZSTD frames, any
    buffers), ``usizes`` and ``num_rows`` (from the index), and ``lasts``,
    the last row each must hold.
    Call ``run(decoder)`` from as many threads as should work on them (each
    with a decoder of the file's whole schema, whose plan the walk reads),
    then ``blocks()``."""
    cdef PrefixJob *items
    cdef Py_buffer *views
    cdef int64_t n, nviews
    cdef int64_t next_item
    cdef list frames, outs

    def __cinit__(self, list frames, const int64_t[::1] usizes, const int64_t[::1] num_rows,
                  const int64_t[::1] lasts):
        cdef int64_t j
        cdef PrefixJob *c
        self.n = len(frames)
        if not (usizes.shape[0] == num_rows.shape[0] == lasts.shape[0] == self.n):
            raise ValueError("BlockPrefixes: frames, usizes, num_rows and lasts differ in length")
        self.items = <PrefixJob *> calloc(max(self.n, 1), sizeof(PrefixJob))
        self.views = <Py_buffer *> calloc(max(self.n, 1), sizeof(Py_buffer))
        if self.items == NULL or self.views == NULL:
            raise MemoryError()
        self.frames = frames
        self.outs = []
        for j in range(self.n):
            c = &self.items[j]
            PyObject_GetBuffer(frames[j], &self.views[j], PyBUF_SIMPLE)
            self.nviews += 1
            c.frame = <const uint8_t *> self.views[j].buf
            c.frame_len = self.views[j].len
            c.usize = usizes[j]
            c.num_rows = num_rows[j]
            c.last = lasts[j]
            if not 0 <= c.last < c.num_rows:
                raise ValueError(f"BlockPrefixes: row {c.last} outside the block's {c.num_rows} rows")
            out = PyByteArray_FromStringAndSize(NULL, max(c.usize, 0))
            self.outs.append(out)
            c.out = <uint8_t *> PyByteArray_AS_STRING(out)
            c.starts = <int32_t *> malloc(sizeof(int32_t) * (c.last + 2))
            if c.starts == NULL:
                raise MemoryError()
            c.starts[0] = 0

    def __dealloc__(self):
        cdef int64_t j
        if self.items != NULL:
            for j in range(self.n):
                free(self.items[j].starts)
            free(self.items)
        if self.views != NULL:
            for j in range(self.nviews):
                PyBuffer_Release(&self.views[j])
            free(self.views)

    def run(self, RowDecoder decoder):
        """Decompresses blocks until none is left (the GIL released)."""
        cdef int64_t j
        cdef rfz_dec dec
        dec.lit = NULL
        with nogil:
            while True:
                j = rf_atomic_add(&self.next_item, 1) - 1
                if j >= self.n:
                    break
                self.items[j].status = _cold_block(&self.items[j], &dec, &decoder.root)
            if dec.lit != NULL:
                rfz_free(&dec)

    def blocks(self):
        """Per block, in the order given: a Block of its rows 0..last, or
        None for one to decompress as usual."""
        cdef int64_t j
        cdef PrefixJob *c
        out = []
        for j in range(self.n):
            c = &self.items[j]
            if c.status == 1:
                out.append(Block(self.outs[j],
                                 PyBytes_FromStringAndSize(<char *> c.starts, 4 * (c.last + 1)),
                                 c.starts[c.last + 1]))
            else:
                out.append(None)
        return out


cdef int _cold_block(PrefixJob *c, rfz_dec *dec, Node *root) noexcept nogil:
    """One block's prefix: 1, or -1 (left to the caller)."""
    cdef int64_t walked = 0
    cdef int64_t row_bytes = c.usize - 4 - 4 * c.num_rows
    if row_bytes < 0:
        return -1
    if rfz_init(dec, c.frame, <size_t> c.frame_len, c.out, <size_t> c.usize) != RFZ_OK:
        return -1
    if walk_prefix(dec, c.out, c.starts, &walked, c.num_rows, row_bytes, root, c.last):
        return -1
    return 1
