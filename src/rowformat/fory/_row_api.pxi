# Included by _row.pyx. Plan, the module's Python entry point: the C copy of a
# schema Layout and the methods RowEncoder calls (encode, decode, view,
# encode_batch, decode_batch). The batch paths lock the plan, whose Node tree
# holds the Arrow bindings and builders, or work on a private copy.

cdef uint8_t _NO_DATA[8]


cdef class Plan:
    """C copy of a schema Layout; owns the Node tree."""
    cdef Node root
    cdef list keep
    cdef readonly object layout
    cdef readonly bint compact
    cdef dict name_index
    cdef object busy   # held while the Node tree's Arrow bindings/builders are in use

    def __cinit__(self):
        memset(&self.root, 0, sizeof(Node))

    def __init__(self, layout, bint compact):
        self.keep = []
        self.layout = layout
        self.compact = compact
        node_init(&self.root, layout, compact, self.keep)
        self.busy = _threading.Lock()
        self.name_index = <dict> self.root.index

    def __dealloc__(self):
        node_free(&self.root)

    def encode(self, value):
        """Row bytes for value (dict, object with attributes, or tuple)."""
        cdef Buf b
        memset(&b, 0, sizeof(Buf))
        try:
            enc_row(&self.root, value, &b)
            return PyBytes_FromStringAndSize(<const char *> b.data, b.len)
        finally:
            buf_free(&b)

    def decode(self, data, Py_ssize_t offset=0):
        cdef Py_buffer view
        cdef int64_t bud
        PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
        try:
            if offset < 0 or offset > view.len:
                raise MalformedRowError(f"offset {offset} outside a buffer of {view.len} bytes")
            bud = _value_budget(view.len - offset)
            return dec_row(&self.root, <const uint8_t *> view.buf + offset, view.len - offset, &bud)
        finally:
            PyBuffer_Release(&view)

    def decode_bytes(self, bytes data):
        cdef int64_t bud = _value_budget(PyBytes_GET_SIZE(data))
        return dec_row(&self.root, <const uint8_t *> PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data), &bud)

    def view(self, data, Py_ssize_t offset=0):
        cdef _Owner owner = _Owner(data)
        owner.plan = self
        cdef Py_buffer *view = &owner.held.view
        if offset < 0 or offset > view.len:
            raise MalformedRowError(f"offset {offset} outside a buffer of {view.len} bytes")
        return _make_struct_view_top(self, &self.root, <const uint8_t *> view.buf + offset,
                                     view.len - offset, owner)

    # -- Arrow batches ------------------------------------------------------

    def encode_batch(self, batch):
        """RecordBatch (already in this plan's Arrow schema) -> BinaryArray.
        Plans are shared (cached per schema); the Node tree holds the batch's
        bindings, so a call that finds it in use by another thread works on
        a private copy of the plan."""
        if not self.busy.acquire(False):
            return Plan(self.layout, self.compact)._encode_batch(batch)
        try:
            return self._encode_batch(batch)
        finally:
            self.busy.release()

    def _encode_batch(self, batch):
        cdef object caps = batch.__arrow_c_array__()
        cdef ArrowArray *arr = <ArrowArray *> PyCapsule_GetPointer(caps[1], "arrow_array")
        cdef int64_t n = arr.length, r
        cdef int rc = 0
        cdef Buf data, offs
        cdef int64_t start
        cdef int32_t o32
        cdef ArrowArray *out
        memset(&data, 0, sizeof(Buf))
        memset(&offs, 0, sizeof(Buf))
        abind_struct_children(&self.root, arr, arr.offset)
        with nogil:
            if buf_reserve(&offs, 4 * (n + 1)):
                rc = E_OOM
            else:
                rf_st_i32(offs.data, 0)
                offs.len = 4
                r = 0
                while r < n:
                    start = buf_zero(&data, self.root.fixed)
                    if start < 0:
                        rc = E_OOM
                        break
                    rc = aenc_fields(&self.root, r, &data, start, start)
                    if rc:
                        break
                    if data.len > INT32_MAX:
                        rc = E_TOO_BIG
                        break
                    o32 = <int32_t> data.len
                    rf_st_i32(offs.data + offs.len, o32)
                    offs.len += 4
                    r += 1
                    if r == 256 and n > 512:
                        # size the output once from the first rows instead
                        # of doubling (and copying) it log2(n) times
                        if buf_reserve(&data, <int64_t> (data.len / 256.0 * (n - 256) * 1.05)):
                            rc = E_OOM
                            break
        if rc:
            buf_free(&data)
            buf_free(&offs)
            if rc == E_NOT_NULL:
                raise ValueConversionError(f"row {r}: {_MESSAGES[rc]}")
            raise ValueConversionError(f"row {r}: {_MESSAGES.get(rc, 'encode failed')}")
        out = rf_arrow_new(3, 0)
        if out == NULL:
            buf_free(&data)
            buf_free(&offs)
            raise MemoryError()
        out.length = n
        out.buffers[0] = NULL
        out.buffers[1] = buf_take(&offs)
        out.buffers[2] = buf_take(&data)
        try:
            return pa.Array._import_from_c(<uintptr_t> out, pa.binary())
        finally:
            free(out)

    def decode_batch(self, binary_array, arrow_schema):
        """BinaryArray of rows -> RecordBatch with `arrow_schema`. The
        builders live in the Node tree: see encode_batch for sharing."""
        if not self.busy.acquire(False):
            return Plan(self.layout, self.compact)._decode_batch(binary_array, arrow_schema)
        try:
            return self._decode_batch(binary_array, arrow_schema)
        finally:
            self.busy.release()

    def _decode_batch(self, binary_array, arrow_schema):
        cdef object caps
        cdef ArrowSchema *sch
        cdef ArrowArray *arr
        cdef bytes fmt
        cdef bint large
        cdef int64_t n, r, s = 0, e = 0, i, data_len, width
        cdef const uint8_t *valid
        cdef const uint8_t *data
        cdef const int32_t *o32
        cdef const int64_t *o64
        cdef int rc = 0
        cdef int64_t bud
        cdef ArrowArray *top
        cdef Node *at
        if not isinstance(binary_array, pa.Array):
            binary_array = pa.array(binary_array)     # any Arrow C data interface array
        caps = binary_array.__arrow_c_array__()
        sch = <ArrowSchema *> PyCapsule_GetPointer(caps[0], "arrow_schema")
        arr = <ArrowArray *> PyCapsule_GetPointer(caps[1], "arrow_array")
        fmt = sch.format
        n = arr.length
        if fmt == b"z":
            large = False
        elif fmt == b"Z":
            large = True
        else:
            raise SchemaError(f"decode_batch expects a binary or large_binary array, got format {fmt!r}")
        # The C interface carries no buffer sizes: take them from pyarrow.
        # Its default validation checks only the first and the last offset
        # (an IPC file can hold any others), so every row's are checked below.
        width = 8 if large else 4
        bufs = binary_array.buffers()
        data_len = bufs[2].size if bufs[2] is not None else 0
        if n and (bufs[1] is None or bufs[1].size < (arr.offset + n + 1) * width):
            raise MalformedRowError(f"the input binary array's offsets buffer is shorter than its "
                                    f"{n} rows at offset {arr.offset} need")
        if arr.buffers[0] != NULL and (bufs[0] is None or bufs[0].size * 8 < arr.offset + n):
            raise MalformedRowError("the input binary array's validity bitmap is shorter than its rows")
        valid = <const uint8_t *> arr.buffers[0]
        o32 = <const int32_t *> arr.buffers[1]
        o64 = <const int64_t *> arr.buffers[1]
        data = <const uint8_t *> arr.buffers[2]
        if data == NULL:
            data = _NO_DATA                         # (no data buffer: every row is empty)
            data_len = 0
        bld_reset_children(&self.root)
        self.root.failed = 0
        with nogil:
            for r in range(n):
                i = r + arr.offset
                if valid != NULL and not bit_get(valid, i):
                    rc = E_INPUT_NULL
                    break
                if large:
                    s = o64[i]
                    e = o64[i + 1]
                else:
                    s = o32[i]
                    e = o32[i + 1]
                if s < 0 or e < s or e > data_len:
                    rc = E_OFFSETS
                    break
                bud = _value_budget(e - s)
                rc = bdec_fields(&self.root, data + s, e - s, &bud)
                if rc:
                    break
                if r == 255 and n > 512:
                    # size the builders once from the first rows
                    if bld_prereserve(&self.root, (n - 256) / 256.0 * 1.05):
                        rc = E_OOM
                        break
        if rc:
            at = _failed_node(&self.root)
            bld_reset_children(&self.root)
            self.root.failed = 0
            if rc == E_OFFSETS:
                err = MalformedRowError(f"row {r}: {_MESSAGES[rc]} (offsets {s}..{e}, "
                                        f"{data_len} data bytes)")
            else:
                err = MalformedRowError(f"row {r}: {_errtext(rc, at)}")
            err.row = r         # the batch's first bad row: callers may skip it and go on
            raise err
        top = rf_arrow_new(1, self.root.nchild)
        if top == NULL:
            raise MemoryError()
        top.length = n
        for i in range(self.root.nchild):
            top.children[i] = bld_finish(&self.root.child[self.root.decl[i]])
            if top.children[i] == NULL:
                top.n_children = i
                rf_arrow_release(top)
                free(top)
                raise MemoryError()
        try:
            return pa.RecordBatch._import_from_c(<uintptr_t> top, arrow_schema)
        finally:
            free(top)
