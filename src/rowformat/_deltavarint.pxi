# Included by _blob.pyx and _blockindex.pyx: the Python edge of the one
# delta-varint codec (rf_delta_encode/rf_delta_decode in src/include/rf_wire.h)
# that the .blob row index and the .row block index share. Each module passes
# its own exception class and messages for the codec's error codes: -1
# truncated, -2 longer than 10 bytes, -3 above 2^64 - 1 (a 10th byte > 1).
# Needs numpy imported as np, and rf_delta_* cimported from rowformat._wire.

cdef bytes delta_encode(values):
    """The delta-zigzag-varint bytes of the int64s in ``values``."""
    cdef const int64_t[::1] v = np.ascontiguousarray(values, dtype=np.int64)
    cdef Py_ssize_t n = v.shape[0]
    if n == 0:
        return b""
    out = PyBytes_FromStringAndSize(NULL, 10 * n)
    return out[:rf_delta_encode(&v[0], n, <uint8_t *> PyBytes_AS_STRING(out))]


cdef object delta_decode(const uint8_t[::1] data, error, dict messages):
    """The int64 numpy array of ``data``; raises ``error(messages[rc])`` for
    the first bad varint. Allocates one int64 per varint terminator byte, so
    never more than 8x the input."""
    cdef Py_ssize_t n = data.shape[0]
    cdef int64_t count
    if n == 0:
        return np.empty(0, dtype=np.int64)
    out = np.empty(rf_delta_count(&data[0], n), dtype=np.int64)
    cdef int64_t[::1] o = out
    cdef int rc = rf_delta_decode(&data[0], n, &o[0] if o.shape[0] else NULL, &count)
    if rc:
        raise error(messages[rc])
    return out
