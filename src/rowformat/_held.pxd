# The Py_buffer of another object that a compiled object (Block, PrefixBlock,
# Fory's _Owner) holds for its whole life, out of the garbage collector's
# sight.
#
# Why hidden. Cython's tp_traverse reports an object member and a Py_buffer
# member's ``view.obj``; an exporter reachable only through its holder is
# then garbage with it, and the collector calls the exporter's own tp_clear
# while the holder's view is still exported. A memoryview (a frame of a
# memory-mapped file is a slice of one) cannot be released so: its tp_clear
# fails ("BufferError: memoryview has 1 exported buffer", ignored) yet drops
# its managed buffer, and its dealloc, once the holder has released the view,
# dereferences that NULL buffer: a segfault in gc.collect() (issue 40, item
# 4). Behind a struct member (which Cython does not traverse), the holder's
# references count as references from outside the garbage: the collector
# never clears the exporter, nor what it holds (the managed buffer, the mmap),
# while the view is exported; the holder releases it in __dealloc__, and the
# exporter is then freed by its reference count. (BlockPrefixes' views sit in
# a malloc'd array, hidden the same way.) An exporter seldom holds anything
# that leads back to its holder (bytes, bytearray, mmap, a memoryview of
# them hold none); one that did would make a cycle the collector keeps: a
# leak, not a crash.
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_SIMPLE
from cpython.ref cimport PyObject, Py_INCREF, Py_XDECREF


ctypedef struct Held:
    PyObject *obj       # the object given: a strong reference
    Py_buffer view      # its bytes; view.obj, the exporter, a strong reference too


cdef inline int held_get(Held *h, object obj) except -1:
    """Takes obj's buffer into h (zeroed: a fresh object's member)."""
    PyObject_GetBuffer(obj, &h.view, PyBUF_SIMPLE)
    Py_INCREF(obj)
    h.obj = <PyObject *> obj
    return 0


cdef inline object held_obj(Held *h):
    """The object given, or None (none given, or released)."""
    return <object> h.obj if h.obj != NULL else None


cdef inline void held_release(Held *h) noexcept:
    """Releases the view and the object, once: a second call (or one for a
    holder whose __cinit__ failed before held_get) does nothing."""
    cdef PyObject *obj = h.obj
    if <PyObject *> h.view.obj != NULL:
        PyBuffer_Release(&h.view)       # (sets view.obj to NULL)
    h.obj = NULL
    Py_XDECREF(obj)
