# Included by _rowcodec.pyx. The plan: the kinds (K_*) and one Node per type
# in the schema tree. plan_init fills the tree from a rowformat.types DataType
# (kind, precision, Arrow units, the Python type decode_row builds); a Node
# also carries the encoder's bound Arrow buffers and the decoder's builders.
# plan_costs (the bits a null adds to the builders), plan_free and
# plan_reset_builders walk the tree. Budget and charge_empty bound the null
# placeholders a decode may add (the rule: _rowcodec_decode.pxi, "Expansion").

cdef enum Kind:
    K_BOOL = 1
    K_I8
    K_I16
    K_I32
    K_I64
    K_F32
    K_F64
    K_BIN       # binary, int32 offsets
    K_STR       # string, int32 offsets, UTF-8 checked on decode
    K_LBIN      # large_binary (BLOB), int64 offsets
    K_DEC64     # DECIMAL p <= 18: int64 unscaled on the wire
    K_DEC128    # DECIMAL p > 18: minimal big-endian bytes on the wire
    K_TIME      # TIME p > 3: int32 millis on the wire, time64 in Arrow
    K_TS_NANO   # TIMESTAMP p > 3: int64 millis + varint nano-of-milli
    K_VARIANT   # varint+value bytes, varint+metadata bytes
    K_LIST
    K_MAP       # MAP and MULTISET: keys array then values array
    K_ROW
    K_VECTOR    # size varint, elements without a null bitmap


# The placeholder budget of the row being decoded (one per RowDecoder; every
# Node of its plan points to it), in bits, as placeholders are counted. A row
# first spends its own credit (left), then draws from the reserve that all
# rows of the call share, at most room in all: a row never adds more than
# max_row_size bytes. The drawing is C, kept out of line (and off the
# decode loops' registers): only a row past its credit calls it.
cdef extern from *:
    """
    typedef struct {
        int64_t left;       /* credit left to the current row (may go negative: then draw) */
        int64_t room;       /* what the row may still draw from the reserve */
        int64_t drawn;      /* what it drew so far (given back if the row fails) */
        int64_t *reserve;   /* the call's reserve (bits), shared by threads; NULL: no limit */
    } rf_budget;

    #if defined(_MSC_VER) && !defined(__clang__)
    #include <intrin.h>
    #define RF_COLD __declspec(noinline)
    /* Adds v to *p atomically; returns the new value. */
    static inline int64_t rf_atomic_add(int64_t *p, int64_t v) {
        return _InterlockedExchangeAdd64((volatile __int64 *) p, v) + v;
    }
    #else
    #define RF_COLD __attribute__((noinline, cold))
    static inline int64_t rf_atomic_add(int64_t *p, int64_t v) {
        return __atomic_add_fetch(p, v, __ATOMIC_RELAXED);
    }
    #endif

    /* The row's credit is spent: draws the shortfall from the call's reserve.
       Returns 0, e_row when the row would pass max_row_size, or e_call when
       the reserve cannot cover it. */
    RF_COLD static int rf_budget_draw(rf_budget *b, int e_row, int e_call) {
        int64_t need = -b->left;
        if (need > b->room)
            return e_row;
        if (b->reserve != NULL && rf_atomic_add(b->reserve, -need) < 0) {
            rf_atomic_add(b->reserve, need);
            return e_call;
        }
        b->room -= need;
        b->drawn += need;
        b->left = 0;
        return 0;
    }
    """
    ctypedef struct rf_budget:
        int64_t left
        int64_t room
        int64_t drawn
        int64_t *reserve
    int64_t rf_atomic_add(int64_t *p, int64_t v) noexcept nogil
    int rf_budget_draw(rf_budget *b, int e_row, int e_call) noexcept nogil

ctypedef rf_budget Budget


# The plan: one Node per type in the schema tree.

ctypedef struct Node:
    int kind
    int nullable
    int precision       # DECIMAL
    int scale           # DECIMAL
    int pyconv          # decode_row: which Python type to build (PY_*)
    int row_id          # ROW: index of its field names in RowDecoder.names
    int store           # decode: build Arrow output for this node
    int plain           # decode: width of a value stored as its wire bytes (plain
                        # fixed-width kinds), else 0: dec_field copies these inline
    int skip_w          # skip_row: wire width of a value of a fixed-width kind, else 0
    int run_n           # skip_row, a ROW's field: it and the run_n - 1 fields after it
    int run_w           # are fixed-width, run_w bytes in all (0: it is not; run_n <= RUN_MAX)
    int64_t upm         # TIME/TS_NANO: Arrow units per millisecond
    int64_t npu         # TS_NANO: nanoseconds per Arrow unit
    int64_t fixed       # VECTOR length
    int nchild
    Node *child
    # encoder: bound Arrow arrays
    const uint8_t *valid
    const uint8_t *data
    const int32_t *off32
    const int64_t *off64
    int64_t off
    int64_t eoff        # MAP: offset of the entries struct
    # decoder: builders
    Buf bits
    Buf vals
    Buf offs
    int64_t blen
    int64_t bnull
    int64_t empty_cost  # decode: bits dec_empty appends for one null of this node
    int64_t vchecked    # decode, STRING: bytes of vals checked as UTF-8 so far
    int64_t kchecked    # decode, STRING: values checked as UTF-8 so far
    Budget *budget      # decode: the decoder's placeholder budget (the current row's)
    int64_t pycost      # decode_row: bytes of the Python object one non-null value
                        # of this node is (its own object: a ROW's dict, a list
                        # without its elements, an int), for the Python-value bound


# How decode_row turns a wire value into a Python value.
cdef enum PyConv:
    PY_PLAIN = 0
    PY_DATE
    PY_TIME
    PY_TS
    PY_TS_LTZ
    PY_TS_NS
    PY_DEC


# Bytes of the Python object of one value, by what decode_row builds (this
# interpreter's sizes: sys.getsizeof); a ROW's dict is measured per field count.
_PYSIZE = {
    "bool": 0,                                    # True and False are shared
    "int": _sys.getsizeof(1 << 29), "int64": _sys.getsizeof(1 << 62),
    "float": _sys.getsizeof(1.5), "decimal": _sys.getsizeof(_decimal.Decimal("1.5")),
    "date": _sys.getsizeof(_dt.date(2000, 1, 1)), "time": _sys.getsizeof(_dt.time(1)),
    "datetime": _sys.getsizeof(_dt.datetime(2000, 1, 1)),
    "datetime64": _sys.getsizeof(_np.datetime64(1, "ns")),
    "str": _sys.getsizeof(""), "bytes": _sys.getsizeof(b""), "list": _sys.getsizeof([]),
}


cdef int64_t _pycost(Node *n, t):
    """The bytes of the Python object one non-null value of n is, without the
    elements of a list (py_array and the VECTOR branch charge those) or the
    fields of a dict (py_row charges those)."""
    if n.kind == K_ROW:
        names = [f.name for f in t.fields]
        return _sys.getsizeof(dict(zip(names, names)))
    if n.kind == K_VARIANT:
        return _sys.getsizeof({"value": 0, "metadata": 0}) + 2 * _PYSIZE["bytes"]
    if n.kind in (K_LIST, K_MAP, K_VECTOR):
        return _PYSIZE["list"]
    if n.kind == K_STR:
        return _PYSIZE["str"]
    if n.kind in (K_BIN, K_LBIN):
        return _PYSIZE["bytes"]
    if n.kind == K_BOOL:
        return _PYSIZE["bool"]
    if n.pyconv == PY_DEC:
        return _PYSIZE["decimal"]
    if n.pyconv == PY_DATE:
        return _PYSIZE["date"]
    if n.pyconv == PY_TIME:
        return _PYSIZE["time"]
    if n.pyconv == PY_TS_NS:
        return _PYSIZE["datetime64"]
    if n.pyconv in (PY_TS, PY_TS_LTZ):
        return _PYSIZE["datetime"]
    if n.kind in (K_F32, K_F64):
        return _PYSIZE["float"]
    return _PYSIZE["int64"] if n.kind == K_I64 else _PYSIZE["int"]


cdef int _units_per_milli(int precision):
    return 1 if precision <= 3 else 1000 if precision <= 6 else 1000000


cdef int plan_init(Node *n, t, list names=None) except -1:
    """Fills n from a rowformat.types DataType. ``names`` collects the field
    names of every ROW (n.row_id indexes it), for decode_row."""
    cdef str root = t.root
    n.nullable = 1 if t.nullable else 0
    n.store = 1
    n.plain = 0
    n.nchild = 0
    n.child = NULL
    n.pyconv = PY_PLAIN
    if root == "DATE":
        n.pyconv = PY_DATE
    elif root == "TIME":
        n.pyconv = PY_TIME
    elif root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        n.pyconv = PY_TS_NS if t.precision > 6 else PY_TS_LTZ if t.ltz else PY_TS
    elif root == "DECIMAL":
        n.pyconv = PY_DEC
        n.scale = t.scale
    if root == "BOOLEAN":
        n.kind = K_BOOL
    elif root == "TINYINT":
        n.kind = K_I8
    elif root == "SMALLINT":
        n.kind = K_I16
    elif root in ("INT", "DATE"):
        n.kind = K_I32
    elif root == "BIGINT":
        n.kind = K_I64
    elif root == "FLOAT":
        n.kind = K_F32
    elif root == "DOUBLE":
        n.kind = K_F64
    elif root in ("CHAR", "VARCHAR"):
        n.kind = K_STR
    elif root in ("BINARY", "VARBINARY"):
        n.kind = K_BIN
    elif root == "BLOB":
        n.kind = K_LBIN
    elif root == "DECIMAL":
        n.kind = K_DEC64 if t.precision <= 18 else K_DEC128
        n.precision = t.precision
    elif root == "TIME":
        if t.precision <= 3:
            n.kind = K_I32
        else:
            n.kind = K_TIME
            n.upm = _units_per_milli(t.precision)
    elif root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        if t.precision <= 3:
            n.kind = K_I64
        else:
            n.kind = K_TS_NANO
            n.upm = _units_per_milli(t.precision)
            n.npu = 1000000 // n.upm
    elif root == "VARIANT":
        n.kind = K_VARIANT
        _plan_children(n, 2)
        n.child[0].kind = K_BIN
        n.child[1].kind = K_BIN
        n.child[0].store = n.child[1].store = 1
    elif root == "ARRAY":
        n.kind = K_LIST
        _plan_children(n, 1)
        plan_init(&n.child[0], t.element, names)
    elif root == "MULTISET":
        n.kind = K_MAP
        _plan_children(n, 2)
        plan_init(&n.child[0], t.element, names)
        n.child[1].kind = K_I32   # the multiplicity
        n.child[1].store = 1
        n.child[1].plain = n.child[1].skip_w = 4
        n.child[1].pycost = _PYSIZE["int"]
    elif root == "MAP":
        n.kind = K_MAP
        _plan_children(n, 2)
        plan_init(&n.child[0], t.key, names)
        plan_init(&n.child[1], t.value, names)
    elif root == "VECTOR":
        n.kind = K_VECTOR
        n.fixed = t.length
        _plan_children(n, 1)
        plan_init(&n.child[0], t.element, names)
        n.child[0].nullable = 0
    elif root == "ROW":
        n.kind = K_ROW
        _plan_children(n, len(t.fields))
        if names is not None:
            n.row_id = len(names)
            names.append(tuple(f.name for f in t.fields))
        for i, f in enumerate(t.fields):
            plan_init(&n.child[i], f.type, names)
        _plan_runs(n)
    else:
        raise ValueError(f"unsupported type {t}")
    if n.kind in (K_I8, K_I16, K_I32, K_I64, K_F32, K_F64) and n.pyconv != PY_TIME:
        n.plain = _width(n.kind)
    # skip_row steps over these without reading them: their wire width is fixed
    # (TIME(p <= 3) and TIME(p > 3) are an int32 of millis, a compact DECIMAL an int64)
    n.skip_w = n.plain if n.plain else 1 if n.kind == K_BOOL else 8 if n.kind == K_DEC64 \
        else 4 if n.kind in (K_I32, K_TIME) else 0
    n.pycost = _pycost(n, t)
    plan_reset_builders(n)
    return 0


cdef int64_t plan_costs(Node *n, Budget *budget) noexcept nogil:
    """Sets empty_cost (in bits, saturating at 2^50) and the budget pointer
    of n and its descendants; returns n's empty_cost. One slot costs its
    value width and a validity bit, 32 or 64 bits more for an offset; a
    VECTOR's n slots of its element, a ROW's (or VARIANT's) one of each
    field, are appended with it."""
    cdef int64_t cost = 8 * _width(n.kind) + 1
    cdef int64_t cap = (<int64_t> 1) << 50
    cdef int64_t sub
    cdef int i
    if n.kind in (K_BIN, K_STR, K_LIST, K_MAP):
        cost += 32
    elif n.kind == K_LBIN:
        cost += 64
    elif n.kind == K_BOOL:
        cost += 1
    for i in range(n.nchild):
        if n.kind == K_VECTOR:
            sub = plan_costs(&n.child[i], budget)
            cost += 0 if n.fixed <= 0 else n.fixed * sub if sub <= cap // n.fixed else cap
        elif n.kind in (K_ROW, K_VARIANT):
            cost += plan_costs(&n.child[i], budget)
        else:
            plan_costs(&n.child[i], budget)
        if cost > cap:
            cost = cap
    n.empty_cost = cost
    n.budget = budget
    return cost


cdef inline int charge_empty(Node *c) noexcept nogil:
    """Charges one null placeholder of c to the row's budget, before it is
    appended: one subtraction while the row's own credit lasts; then
    rf_budget_draw (E_EXPAND_LIMIT past max_row_size, E_EXPAND_CALL when the
    call's reserve is used up)."""
    cdef Budget *b = c.budget
    if b != NULL:
        b.left -= c.empty_cost
        if b.left < 0:
            return rf_budget_draw(b, E_EXPAND_LIMIT, E_EXPAND_CALL)
    return 0


cdef enum:
    RUN_MAX = 57    # fields of a run: its null bits, shifted by up to 7, fit one uint64


cdef void _plan_runs(Node *n) noexcept nogil:
    """Sets run_n and run_w of a ROW's fields (their skip_w already set),
    from the last field back: a fixed-width field starts a run that goes on
    through the run of the next field, up to RUN_MAX fields."""
    cdef int i
    cdef Node *c
    cdef Node *nxt
    for i in range(n.nchild - 1, -1, -1):
        c = &n.child[i]
        c.run_n = c.run_w = 0
        if c.skip_w == 0:
            continue
        c.run_n, c.run_w = 1, c.skip_w
        if i + 1 < n.nchild:
            nxt = &n.child[i + 1]
            if 0 < nxt.run_n < RUN_MAX:
                c.run_n += nxt.run_n
                c.run_w += nxt.run_w


cdef int _plan_children(Node *n, int count) except -1:
    n.nchild = count
    n.child = <Node *> calloc(count if count > 0 else 1, sizeof(Node))
    if n.child == NULL:
        raise MemoryError()
    return 0


cdef void plan_free(Node *n) noexcept nogil:
    cdef int i
    for i in range(n.nchild):
        plan_free(&n.child[i])
    free(n.child)
    n.child = NULL
    n.nchild = 0
    buf_free(&n.bits)
    buf_free(&n.vals)
    buf_free(&n.offs)


cdef int plan_reset_builders(Node *n) noexcept nogil:
    """Empties the builders; offsets buffers start with their leading 0."""
    cdef int i
    cdef int64_t zero = 0
    n.bits.len = 0
    n.vals.len = 0
    n.offs.len = 0
    n.blen = 0
    n.bnull = 0
    n.vchecked = 0
    n.kchecked = 0
    if n.kind == K_LBIN:
        if buf_put(&n.offs, &zero, 8):
            return E_OOM
    elif n.kind in (K_BIN, K_STR, K_LIST, K_MAP):
        if buf_put(&n.offs, &zero, 4):
            return E_OOM
    for i in range(n.nchild):
        if plan_reset_builders(&n.child[i]):
            return E_OOM
    return 0
