# Included by _row.pyx. Zero-copy views: StructView, ArrayView and MapView
# read fields and elements in place, on demand, from a buffer that _Owner
# keeps alive (with the plan whose Node tree the views point into).

@cython.no_gc_clear
cdef class _Owner:
    """Holds the Py_buffer of the viewed object for as long as any view
    lives, out of the garbage collector's sight (``Held``, _held.pxd: an
    exporter the collector saw as garbage with its holder would be cleared
    while exported, and a memoryview so cleared crashes), and released in
    ``__dealloc__``; the same holds for ``Block`` and ``PrefixBlock``. Never
    cleared by the collector (``no_gc_clear``): the plan, which holds no
    views, needs no breaking, and kept until ``__dealloc__`` it outlives
    every read through the owner."""
    cdef Held held
    cdef object plan   # keeps the Node tree the views point into alive

    def __cinit__(self, obj):
        held_get(&self.held, obj)

    def __dealloc__(self):
        held_release(&self.held)


cdef class StructView:
    """A Fory row (or nested struct) over a buffer, read field by field.

    ``view[i]`` / ``view["name"]`` return scalars as Python values and nested
    structs, lists and maps as views. Field indices follow the schema's
    declaration order (also for Compact, whose bytes use the sorted order).
    """
    cdef Plan plan
    cdef Node *node
    cdef const uint8_t *p
    cdef int64_t size
    cdef _Owner owner
    cdef dict index

    def __len__(self):
        return self.node.nchild

    @property
    def size_bytes(self):
        return self.size

    cdef inline int _slot(self, Py_ssize_t i, int kind) except -2:
        """Layout index of declared field i, or -1 when it is null (a null
        bit set for a non-nullable field raises MalformedRowError)."""
        cdef int j
        cdef Node *n = self.node
        if i < 0 or i >= n.nchild:
            raise IndexError(f"field index {i} out of range for {n.nchild} fields")
        j = n.decl[i]
        if kind and n.child[j].kind != kind:
            raise TypeError(f"field {_fname(&n.child[j])!r} is {(<object> n.child[j].layout).arrow_type}, "
                            "not the getter's type")
        if n.bitmap_bytes and bit_get(self.p + n.bitmap_off, j):
            if not n.child[j].nullable:
                raise _malformed_at(E_NOT_NULL, &n.child[j])
            return -1
        return j

    cdef Py_ssize_t _index(self, key) except -1:
        if isinstance(key, int):
            return key
        idx = self.index.get(key)
        if idx is None:
            raise KeyError(key)
        return idx

    def __getitem__(self, key):
        cdef int j = self._slot(self._index(key), 0)
        if j < 0:
            return None
        return dec_val(&self.node.child[j], self.p, self.size, self.node.fixed, self.node.slot[j], True,
                       self.owner, NULL)

    def get(self, key):
        return self[key]

    def __getattr__(self, str name):
        idx = self.index.get(name)
        if idx is None:
            raise AttributeError(name)
        return self[idx]

    def is_null(self, key):
        return self._slot(self._index(key), 0) < 0

    def keys(self):
        return [(<object> self.node.child[self.node.decl[i]].layout).name for i in range(self.node.nchild)]

    def get_bool(self, Py_ssize_t i):
        cdef int j = self._slot(i, K_BOOL)
        return None if j < 0 else self.p[self.node.slot[j]] != 0

    def get_int8(self, Py_ssize_t i):
        cdef int j = self._slot(i, K_I8)
        return None if j < 0 else <int8_t> self.p[self.node.slot[j]]

    def get_int16(self, Py_ssize_t i):
        cdef int j = self._slot(i, K_I16)
        return None if j < 0 else rf_ld_i16(self.p + self.node.slot[j])

    def get_int32(self, Py_ssize_t i):
        cdef int j = self._slot(i, K_I32)
        return None if j < 0 else rf_ld_i32(self.p + self.node.slot[j])

    def get_int64(self, Py_ssize_t i):
        cdef int j = self._slot(i, K_I64)
        return None if j < 0 else rf_ld_i64(self.p + self.node.slot[j])

    def get_float16(self, Py_ssize_t i):
        return self._typed(i, K_F16)

    def get_float32(self, Py_ssize_t i):
        cdef float f
        cdef int j = self._slot(i, K_F32)
        if j < 0:
            return None
        memcpy(&f, self.p + self.node.slot[j], 4)
        return f

    def get_float64(self, Py_ssize_t i):
        cdef double d
        cdef int j = self._slot(i, K_F64)
        if j < 0:
            return None
        memcpy(&d, self.p + self.node.slot[j], 8)
        return d

    def get_str(self, Py_ssize_t i):
        cdef const uint8_t *q
        cdef int64_t sz
        cdef int rc
        cdef int j = self._slot(i, K_STR)
        if j < 0:
            return None
        rc = var_span(self.p, self.size, self.node.fixed, self.node.slot[j], &q, &sz)
        if rc:
            raise _malformed(rc, _fname(&self.node.child[j]))
        try:
            return PyUnicode_DecodeUTF8(<const char *> q, sz, NULL)
        except UnicodeDecodeError:
            raise _malformed(E_UTF8, _fname(&self.node.child[j])) from None

    def get_binary(self, Py_ssize_t i):
        return self._typed(i, K_BIN)

    def get_date(self, Py_ssize_t i):
        return self._typed(i, K_DATE)

    def get_datetime(self, Py_ssize_t i):
        return self._typed(i, K_TS)

    def get_duration(self, Py_ssize_t i):
        return self._typed(i, K_DUR)

    def get_decimal(self, Py_ssize_t i):
        return self._typed(i, K_DEC)

    def get_struct(self, Py_ssize_t i):
        return self._typed(i, K_STRUCT)

    def get_array(self, Py_ssize_t i):
        return self._typed(i, K_LIST)

    def get_map(self, Py_ssize_t i):
        return self._typed(i, K_MAP)

    cdef object _typed(self, Py_ssize_t i, int kind):
        cdef int j = self._slot(i, kind)
        if j < 0:
            return None
        return dec_val(&self.node.child[j], self.p, self.size, self.node.fixed, self.node.slot[j], True,
                       self.owner, NULL)

    def to_dict(self):
        """The whole struct decoded to a dict (nested values decoded too)."""
        cdef int64_t bud = _value_budget(self.size)
        return dec_row(self.node, self.p, self.size, &bud)

    def to_bytes(self):
        return PyBytes_FromStringAndSize(<const char *> self.p, self.size)

    def __repr__(self):
        return f"StructView({self.to_dict()!r})"


cdef object _make_struct_view_top(Plan plan, Node *n, const uint8_t *p, int64_t size, _Owner owner):
    cdef StructView v
    if size < n.fixed:
        raise _malformed(E_FIXED, "row")
    v = StructView.__new__(StructView)
    v.plan = plan
    v.node = n
    v.p = p
    v.size = size
    v.owner = owner
    v.index = plan.name_index
    return v


cdef object _make_struct_view(Node *n, const uint8_t *p, int64_t size, _Owner owner):
    cdef StructView v
    if size < n.fixed:
        raise _malformed(E_FIXED, _fname(n))
    v = StructView.__new__(StructView)
    v.node = n
    v.p = p
    v.size = size
    v.owner = owner
    v.index = <dict> n.index
    return v


cdef class ArrayView:
    """A Fory array over a buffer: ``len``, ``[j]``, typed getters."""
    cdef Node *elem
    cdef const uint8_t *p
    cdef int64_t size
    cdef int64_t n
    cdef int64_t hdr
    cdef int64_t fixed   # end of the fixed region: element slots point past it
    cdef _Owner owner

    def __len__(self):
        return self.n

    @property
    def num_elements(self):
        return self.n

    cdef inline int64_t _slot(self, Py_ssize_t j, int kind) except -2:
        if j < 0:
            j += self.n
        if j < 0 or j >= self.n:
            raise IndexError(f"element index {j} out of range for {self.n} elements")
        if kind and self.elem.kind != kind:
            raise TypeError(f"elements are {(<object> self.elem.layout).arrow_type}, not the getter's type")
        if arr_has_bitmap(self.elem) and bit_get(self.p + arr_bitmap_off(self.elem), j):
            if not self.elem.nullable:
                raise _malformed_at(E_NOT_NULL, self.elem)
            return -1
        return self.hdr + j * self.elem.elem_width

    def __getitem__(self, Py_ssize_t j):
        cdef int64_t s = self._slot(j, 0)
        if s < 0:
            return None
        return dec_val(self.elem, self.p, self.size, self.fixed, s, True, self.owner, NULL)

    def get(self, Py_ssize_t j):
        return self[j]

    def is_null(self, Py_ssize_t j):
        return self._slot(j, 0) < 0

    cdef object _typed(self, Py_ssize_t j, int kind):
        cdef int64_t s = self._slot(j, kind)
        if s < 0:
            return None
        return dec_val(self.elem, self.p, self.size, self.fixed, s, True, self.owner, NULL)

    def get_bool(self, Py_ssize_t j): return self._typed(j, K_BOOL)
    def get_int8(self, Py_ssize_t j): return self._typed(j, K_I8)
    def get_int16(self, Py_ssize_t j): return self._typed(j, K_I16)
    def get_int32(self, Py_ssize_t j): return self._typed(j, K_I32)
    def get_int64(self, Py_ssize_t j): return self._typed(j, K_I64)
    def get_float16(self, Py_ssize_t j): return self._typed(j, K_F16)
    def get_float32(self, Py_ssize_t j): return self._typed(j, K_F32)
    def get_float64(self, Py_ssize_t j): return self._typed(j, K_F64)
    def get_str(self, Py_ssize_t j): return self._typed(j, K_STR)
    def get_binary(self, Py_ssize_t j): return self._typed(j, K_BIN)
    def get_date(self, Py_ssize_t j): return self._typed(j, K_DATE)
    def get_datetime(self, Py_ssize_t j): return self._typed(j, K_TS)
    def get_duration(self, Py_ssize_t j): return self._typed(j, K_DUR)
    def get_decimal(self, Py_ssize_t j): return self._typed(j, K_DEC)
    def get_struct(self, Py_ssize_t j): return self._typed(j, K_STRUCT)
    def get_array(self, Py_ssize_t j): return self._typed(j, K_LIST)
    def get_map(self, Py_ssize_t j): return self._typed(j, K_MAP)

    def __iter__(self):
        for j in range(self.n):
            yield self[j]

    def to_list(self):
        cdef int64_t bud = _value_budget(self.size)
        return dec_array(self.elem, self.p, self.size, &bud)

    def __repr__(self):
        return f"ArrayView({self.to_list()!r})"


cdef object _make_array_view(Node *e, const uint8_t *p, int64_t size, _Owner owner):
    cdef ArrayView v
    cdef int64_t n, hdr
    cdef int rc = arr_check(e, p, size, &n, &hdr)
    if rc:
        raise _malformed(rc, _fname(e))
    v = ArrayView.__new__(ArrayView)
    v.elem = e
    v.p = p
    v.size = size
    v.n = n
    v.hdr = hdr
    v.fixed = arr_fixed_end(e, hdr, n)
    v.owner = owner
    return v


cdef class MapView:
    """A Fory map over a buffer: ``keys()`` and ``values()`` array views."""
    cdef ArrayView _keys
    cdef ArrayView _values

    def keys(self):
        return self._keys

    def values(self):
        return self._values

    def keys_array(self):
        return self._keys

    def values_array(self):
        return self._values

    def __len__(self):
        return self._keys.n

    def items(self):
        return list(zip(self._keys, self._values))

    def to_list(self):
        return list(zip(self._keys.to_list(), self._values.to_list()))

    def __repr__(self):
        return f"MapView({self.to_list()!r})"


cdef object _make_map_view(Node *n, const uint8_t *p, int64_t size, _Owner owner):
    cdef int64_t ks
    cdef MapView v
    cdef int rc = map_split(p, size, &ks)
    if rc:
        raise _malformed(rc, _fname(n))
    v = MapView.__new__(MapView)
    v._keys = _make_array_view(&n.child[0], p + 8, ks, owner)
    v._values = _make_array_view(&n.child[1], p + 8 + ks, size - 8 - ks, owner)
    if v._keys.n != v._values.n:
        raise _malformed(E_MAP_COUNT, _fname(n))
    return v
