# A random batch (a training step's few hundred scattered rows) touches about
# one block per row. Its floor is decompressing each touched block once, on
# every core, only as far as its last wanted row. BlockPrefixes does that
# for a batch's uncached blocks: the threads that call run() (the caller and
# pool threads) take blocks off one shared counter and, with the GIL
# released, read each block's frame (``fd``: pread, into a buffer of the
# thread's; or from the ``frames`` given), then decompress it only up to its
# last wanted row and walk its rows up to there (as PrefixBlock does), or,
# for a block wanted whole (last -1), decompress all of it (rf_zstd.h). No
# Python work per block: a Python read and python-zstandard call per block
# cost a batch of 240 blocks about as much as a sixth of its decompression.
#
# A frame rf_zstd.h leaves to libzstd, or a corrupt one, is not an error
# here: blocks() returns None for it, and the reader decompresses it as
# usual, which reports any error with the file and block. A read that
# fails or ends early (a truncated file) is left to the caller too:
# read_error() says which.

cdef extern from "rf_pread.h" nogil:
    int64_t rf_pread(int fd, void *buf, size_t n, int64_t off)

from libc.errno cimport errno

cdef struct PrefixJob:
    const uint8_t *frame    # the frame given, or NULL: read it at offset
    int64_t frame_len
    int64_t offset
    int fd                  # the descriptor to read it from (blocks of several files)
    uint8_t *out
    int64_t usize
    int64_t num_rows
    int64_t last            # the last row wanted, or -1: the whole block
    int32_t *starts         # the walked row starts, rows 0..last + 1
    int64_t got             # bytes read (fd: fewer than frame_len when the file ends)
    int err                 # errno of a failed read
    int status              # 0: not done, 1: done, -1: left to the caller, -2: read failed


@cython.final
@cython.no_gc_clear    # tp_clear would free outs, which the jobs' out point into
cdef class BlockPrefixes:
    """Blocks to decompress, each whole or up to a row: ``frames`` (their
    ZSTD frames, any buffers), or None and ``fd`` with each frame's
    ``offsets`` and ``sizes`` (read with pread in run()), or with ``fds``
    each block's own descriptor (blocks of several files of one schema: a
    multi-file take is one job); ``usizes`` and
    ``num_rows`` (from the index), and ``lasts``, the last row each must
    hold (-1: all of the block).
    Call ``run(decoder)`` from as many threads as should work on them (each
    with a decoder of the file's whole schema, whose plan the walk reads),
    then ``blocks()``. With ``fd`` (``fds``), the caller keeps them open until
    every run() has returned."""
    cdef PrefixJob *items
    cdef Py_buffer *views       # the frames': a malloc'd array, which Cython does not
                                # traverse, so out of the collector's sight (_held.pxd)
    cdef int64_t n, nviews, max_frame
    cdef int64_t next_item
    cdef int fd
    cdef list frames, outs

    def __cinit__(self, frames, const int64_t[::1] usizes, const int64_t[::1] num_rows,
                  const int64_t[::1] lasts, int fd=-1, const int64_t[::1] offsets=None,
                  const int64_t[::1] sizes=None, const int32_t[::1] fds=None):
        cdef int64_t j
        cdef PrefixJob *c
        self.n = usizes.shape[0]
        self.fd = fd
        if not (num_rows.shape[0] == lasts.shape[0] == self.n):
            raise ValueError("BlockPrefixes: usizes, num_rows and lasts differ in length")
        if frames is None:
            if (fd < 0 and fds is None) or offsets is None or sizes is None \
                    or not (offsets.shape[0] == sizes.shape[0] == self.n) \
                    or (fds is not None and fds.shape[0] != self.n):
                raise ValueError("BlockPrefixes: without frames, give fd (or fds), offsets and "
                                 "sizes (one per block)")
        elif len(frames) != self.n:
            raise ValueError("BlockPrefixes: frames, usizes, num_rows and lasts differ in length")
        self.items = <PrefixJob *> calloc(max(self.n, 1), sizeof(PrefixJob))
        self.views = <Py_buffer *> calloc(max(self.n, 1), sizeof(Py_buffer))
        if self.items == NULL or self.views == NULL:
            raise MemoryError()
        self.frames = frames
        self.outs = []
        for j in range(self.n):
            c = &self.items[j]
            if frames is not None:
                PyObject_GetBuffer(frames[j], &self.views[j], PyBUF_SIMPLE)
                self.nviews += 1
                c.frame = <const uint8_t *> self.views[j].buf
                c.frame_len = self.views[j].len
            else:
                c.offset = offsets[j]
                c.frame_len = sizes[j]
                c.fd = fd if fds is None else fds[j]
                if c.offset < 0 or c.frame_len < 0:
                    raise ValueError(f"BlockPrefixes: frame at {c.offset} of {c.frame_len} bytes")
                self.max_frame = max(self.max_frame, c.frame_len)
            c.usize = usizes[j]
            c.num_rows = num_rows[j]
            c.last = lasts[j]
            if not -1 <= c.last < c.num_rows:
                raise ValueError(f"BlockPrefixes: row {c.last} outside the block's {c.num_rows} rows")
            out = PyByteArray_FromStringAndSize(NULL, max(c.usize, 0))
            self.outs.append(out)
            c.out = <uint8_t *> PyByteArray_AS_STRING(out)
            if c.last >= 0:
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
        """Reads and decompresses blocks until none is left (the GIL released)."""
        cdef int64_t j, r
        cdef rfz_dec dec
        cdef PrefixJob *c
        cdef uint8_t *buf = NULL
        dec.lit = NULL
        if self.frames is None and self.n:
            buf = <uint8_t *> malloc(max(self.max_frame, 1))
            if buf == NULL:
                raise MemoryError()
        with nogil:
            while True:
                j = rf_atomic_add(&self.next_item, 1) - 1
                if j >= self.n:
                    break
                c = &self.items[j]
                if buf != NULL:
                    c.got = 0
                    r = 0
                    while c.got < c.frame_len:      # pread may return short
                        r = rf_pread(c.fd, buf + c.got, <size_t> (c.frame_len - c.got),
                                     c.offset + c.got)
                        if r <= 0:
                            break
                        c.got += r
                    if r < 0 or c.got < c.frame_len:
                        c.err = errno if r < 0 else 0
                        c.status = -2
                        continue
                    c.frame = buf
                c.status = _cold_block(c, &dec, &decoder.root)
                if buf != NULL:
                    c.frame = NULL
            if dec.lit != NULL:
                rfz_free(&dec)
        free(buf)

    def blocks(self):
        """Per block, in the order given: a Block of its rows 0..last (all
        of them, checked as any Block and to hold num_rows rows, for last
        -1), or None for one to read or decompress as usual."""
        cdef int64_t j
        cdef PrefixJob *c
        cdef Block block
        out = []
        for j in range(self.n):
            c = &self.items[j]
            if c.status == 1 and c.last < 0:
                try:
                    block = Block(self.outs[j])
                except CorruptFileError:
                    block = None            # the usual path says why
                if block is not None and block.v.num_rows != c.num_rows:
                    block = None            # (as the index says: the usual path says why)
                out.append(block)
            elif c.status == 1:
                out.append(Block(self.outs[j],
                                 PyBytes_FromStringAndSize(<char *> c.starts, 4 * (c.last + 1)),
                                 c.starts[c.last + 1]))
            else:
                out.append(None)
        return out

    def read_error(self, int64_t j):
        """None, or for a block whose read failed (errno, bytes read): errno
        0 when the file ended before the frame did."""
        if not 0 <= j < self.n:
            raise IndexError(j)
        c = &self.items[j]
        return (c.err, c.got) if c.status == -2 else None


cdef int _cold_block(PrefixJob *c, rfz_dec *dec, Node *root) noexcept nogil:
    """One block's prefix, or the whole block (last -1): 1, or -1 (left to
    the caller)."""
    cdef int64_t walked = 0
    cdef int64_t row_bytes = c.usize - 4 - 4 * c.num_rows
    if row_bytes < 0:
        return -1
    if rfz_init(dec, c.frame, <size_t> c.frame_len, c.out, <size_t> c.usize) != RFZ_OK:
        return -1
    if c.last < 0:
        # all of it: exactly usize bytes, and the frame ends there
        if rfz_advance(dec, <size_t> c.usize) != RFZ_OK or rfz_finish(dec) != RFZ_OK:
            return -1
        return 1
    if walk_prefix(dec, c.out, c.starts, &walked, c.num_rows, row_bytes, root, c.last):
        return -1
    return 1
