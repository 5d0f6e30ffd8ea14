# Included by _row.pyx. Error codes and their messages: the nogil paths return
# a negative code (E_*) that becomes a MalformedRowError (_malformed) or
# another exception at the Python edge. The value budget (_value_budget,
# _charge) bounds how many values one row may decode to, so that slots aliasing
# the same bytes fail with E_ALIAS instead of decoding to billions of values.

cdef enum:
    E_OOM = -1
    E_BOUNDS = -2
    E_COUNT = -3
    E_MAP_COUNT = -4
    E_NOT_NULL = -5
    E_UTF8 = -6
    E_DEC_RANGE = -7
    E_TOO_BIG = -8
    E_DEC_SIZE = -9
    E_FIXED = -10
    E_INPUT_NULL = -11
    E_ALIAS = -12
    E_OVERLAP = -13
    E_OFFSETS = -14

_MESSAGES = {
    E_OOM: "out of memory",
    E_BOUNDS: "an offset+size slot points outside its containing row/array",
    E_COUNT: "an array element count is negative or larger than its array",
    E_MAP_COUNT: "a map's key and value arrays have different lengths",
    E_NOT_NULL: "a null value in a non-nullable field or element",
    E_UTF8: "a utf8 value is not valid UTF-8",
    E_DEC_RANGE: "a decimal value does not fit its declared precision",
    E_TOO_BIG: "the data exceeds the format's 32-bit offsets (or 2 GiB per Arrow binary array)",
    E_DEC_SIZE: "a decimal value is not 32 bytes",
    E_FIXED: "the row/array is smaller than its fixed region",
    E_INPUT_NULL: "the input binary array has a null row",
    E_ALIAS: ("the row holds more values than its size allows: its offset+size slots point "
              "into the same bytes more than once"),
    E_OVERLAP: "an offset+size slot points into its row's/array's fixed region (null bitmap and slots)",
    E_OFFSETS: "the input binary array's offsets are out of order or outside its data buffer",
}


cdef inline int64_t _value_budget(int64_t size) noexcept nogil:
    """How many fields and elements a row of `size` bytes may decode to. Every
    value of a well-formed row occupies bytes of its own (at least a bit of a
    bitmap and its slot), so this only stops rows whose slots alias the same
    bytes over and over: nested that way, a few KiB could decode to billions
    of values."""
    return 8 * size + 4096


cdef inline int _charge(int64_t *bud, int64_t n) noexcept nogil:
    if bud != NULL:
        bud[0] -= n
        if bud[0] < 0:
            return E_ALIAS
    return 0


cdef object _malformed(int rc, str where=""):
    return MalformedRowError(_MESSAGES.get(rc, "malformed row") + (f" ({where})" if where else ""))


cdef str _errtext(int rc, Node *n):
    """The message of error rc found at node n (NULL: unknown), naming the
    field; a decimal error names the declared type."""
    cdef str msg
    if rc == E_DEC_RANGE and n != NULL:
        msg = f"a decimal value does not fit {(<object> n.layout).arrow_type}"
    else:
        msg = _MESSAGES.get(rc, "malformed row")
    name = (<object> n.layout).name if n != NULL else ""
    return msg + (f" ({name})" if name else "")


cdef object _malformed_at(int rc, Node *n):
    return MalformedRowError(_errtext(rc, n))


cdef inline int _fail(Node *n, int rc) noexcept nogil:
    """Marks n as where the nogil batch decoder found error rc (see
    _failed_node), and returns rc."""
    n.failed = 1
    return rc
