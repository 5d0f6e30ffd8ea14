"""Untrusted input: truncated, corrupted and fuzzed rows raise
MalformedRowError (a rowformat.RowFormatError) and never read out of
bounds; bad values on encode raise ValueConversionError."""
import random
import struct

import pyarrow as pa
import pytest

import rowformat
from rowformat.errors import ValueConversionError
from rowformat.fory import MalformedRowError, RowEncoder, RowView, SchemaHashMismatchError


def _setup(vector, fv):
    schema = fv.arrow_schema(vector["schema"])
    return RowEncoder(schema, vector["variant"]), schema, fv.py_row(vector["schema"], vector["value"]), \
        bytes.fromhex(vector["hex"])


def _all_paths(enc, schema, layout, data):
    """Decode through every reader; return the dict or raise."""
    d = enc.decode(data)
    v = RowView(schema, data, layout=layout).to_dict()
    b = enc.decode_batch(pa.array([data], pa.binary())).to_pylist()[0]
    assert repr(d) == repr(v) == repr(b)   # repr: NaN-safe
    return d


def test_truncated_prefixes(vector, fv):
    enc, schema, value, data = _setup(vector, fv)
    for n in range(len(data)):
        try:
            got = _all_paths(enc, schema, vector["variant"], data[:n])
        except MalformedRowError:
            continue
        # only trailing padding may be cut without losing data
        assert got == value, n


def test_fuzzed_bytes_never_crash(vector, fv):
    enc, schema, value, data = _setup(vector, fv)
    rng = random.Random(vector["name"])
    for _ in range(300):
        b = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(b))
            b[i] = rng.choice([0, 0xFF, 0x7F, 0x80, rng.randrange(256)])
        try:
            _all_paths(enc, schema, vector["variant"], bytes(b))
        except rowformat.RowFormatError:
            pass


def test_slot_offsets_out_of_bounds():
    schema = pa.schema([("s", pa.string()), ("l", pa.list_(pa.int64())), ("m", pa.map_(pa.string(), pa.int8()))])
    enc = RowEncoder(schema)
    data = bytearray(enc.encode({"s": "hello", "l": [1, 2], "m": [("k", 1)]}))
    for slot in (8, 16, 24):
        for bad in ((1 << 32) - 1, len(data), len(data) + 1):
            b = bytearray(data)
            struct.pack_into("<I", b, slot + 4, bad)       # offset
            with pytest.raises(MalformedRowError, match="outside"):
                enc.decode(bytes(b))
            with pytest.raises(MalformedRowError):
                enc.decode_batch(pa.array([bytes(b)]))
            b = bytearray(data)
            struct.pack_into("<I", b, slot, 0xFFFFFFFF)     # size
            with pytest.raises(MalformedRowError):
                enc.decode(bytes(b))
            with pytest.raises(MalformedRowError):
                RowView(schema, bytes(b))[slot // 8 - 1]


def test_bad_counts_and_map_sizes():
    schema = pa.schema([("l", pa.list_(pa.int64())), ("m", pa.map_(pa.int32(), pa.int32()))])
    enc = RowEncoder(schema)
    data = enc.encode({"l": [1, 2, 3], "m": [(1, 2)]})
    lo = struct.unpack_from("<I", data, 12)[0]
    mo = struct.unpack_from("<I", data, 20)[0]
    for count in (-1, 1 << 40, 4, 1 << 31):
        b = bytearray(data)
        struct.pack_into("<q", b, lo, count)
        with pytest.raises(MalformedRowError, match="count"):
            enc.decode(bytes(b))
        with pytest.raises(MalformedRowError):
            enc.decode_batch(pa.array([bytes(b)]))
    for ks in (-8, 1 << 33, 1000):
        b = bytearray(data)
        struct.pack_into("<q", b, mo, ks)
        with pytest.raises(MalformedRowError):
            enc.decode(bytes(b))
        with pytest.raises(MalformedRowError):
            enc.decode_batch(pa.array([bytes(b)]))


def test_compact_negative_count():
    schema = pa.schema([("l", pa.list_(pa.int32()))])
    enc = RowEncoder(schema, "compact")
    data = bytearray(enc.encode({"l": [1]}))
    off = struct.unpack_from("<I", data, 4)[0]
    struct.pack_into("<i", data, off, -5)
    with pytest.raises(MalformedRowError):
        enc.decode(bytes(data))


def test_short_rows_and_bad_utf8():
    enc = RowEncoder(pa.schema([("a", pa.int64()), ("s", pa.string())]))
    for n in range(24):
        with pytest.raises(MalformedRowError, match="fixed region"):
            enc.decode(bytes(n))
    data = bytearray(enc.encode({"a": 1, "s": "ab"}))
    data[24] = 0xFF
    with pytest.raises(MalformedRowError, match="UTF-8"):
        enc.decode(bytes(data))
    with pytest.raises(MalformedRowError, match="UTF-8"):
        enc.decode_batch(pa.array([bytes(data)]))
    with pytest.raises(MalformedRowError, match="UTF-8"):
        enc.view(bytes(data)).get_str(1)
    with pytest.raises(MalformedRowError, match="null row"):
        enc.decode_batch(pa.array([None], pa.binary()))


def test_out_of_range_dates_and_decimals():
    enc = RowEncoder(pa.schema([("d", pa.date32()), ("x", pa.decimal128(5, 1))]))
    data = bytearray(enc.encode({"d": None, "x": None}))
    data[0] = 0
    struct.pack_into("<i", data, 8, 2**31 - 1)
    with pytest.raises(MalformedRowError, match="date range"):
        enc.decode(bytes(data))
    # a 32-byte decimal whose high half is not sign extension cannot be decimal128
    ok = bytearray(enc.encode({"d": 0, "x": 1}))
    off = struct.unpack_from("<I", ok, 20)[0]
    ok[off + 20] = 1
    with pytest.raises(MalformedRowError, match="decimal"):
        enc.decode_batch(pa.array([bytes(ok)]))


def test_hash_checked():
    enc = RowEncoder(pa.schema([("a", pa.int32())]))
    framed = enc.encode_with_hash({"a": 5})
    assert enc.decode_with_hash(framed) == {"a": 5}
    other = RowEncoder(pa.schema([("a", pa.int64())]))
    with pytest.raises(SchemaHashMismatchError):
        other.decode_with_hash(framed)
    with pytest.raises(MalformedRowError, match="8-byte"):
        enc.decode_with_hash(b"\x01\x02")
    assert issubclass(SchemaHashMismatchError, rowformat.RowFormatError)


def test_view_offset_checked():
    schema = pa.schema([("a", pa.int32())])
    with pytest.raises(MalformedRowError):
        RowView(schema, bytes(16), offset=17)
    with pytest.raises(MalformedRowError):
        RowView(schema, bytes(16), offset=9)


@pytest.mark.parametrize("layout", ["standard", "compact"])
def test_encode_rejects_bad_values(layout):
    schema = pa.schema([pa.field("a", pa.int8(), nullable=False), ("s", pa.string()),
                        ("l", pa.list_(pa.field("item", pa.int16(), nullable=False))),
                        ("t", pa.timestamp("us")), ("x", pa.decimal128(4, 2))])
    enc = RowEncoder(schema, layout)
    good = {"a": 1, "s": "x", "l": [1], "t": None, "x": None}
    enc.encode(good)
    for bad in ({"a": None}, {"a": 128}, {"a": -129}, {"a": 1.5}, {"a": "1"}, {"s": b"x"},
                {"s": 3}, {"l": [None]}, {"l": [40000]}, {"l": "ab"}, {"t": "2020"},
                {"x": __import__("decimal").Decimal("123.45")},
                {"x": __import__("decimal").Decimal("1.234")}):
        with pytest.raises(ValueConversionError):
            enc.encode({**good, **bad})
    with pytest.raises(ValueConversionError, match="tuple"):
        enc.encode((1, 2))
    batch = pa.RecordBatch.from_pylist([{**good, "a": None}],
                                       schema=schema.set(0, pa.field("a", pa.int8())))
    with pytest.raises(rowformat.RowFormatError):
        enc.encode_batch(batch)


# -- Hardening, round 2 -------------------------------------------------------

def _walk_view(v):
    """Reads every field/element of a view recursively (views are lazy)."""
    from rowformat.fory import ArrayView, MapView, StructView
    if isinstance(v, StructView):
        return {k: _walk_view(v[i]) for i, k in enumerate(v.keys())}
    if isinstance(v, ArrayView):
        return [_walk_view(x) for x in v]
    if isinstance(v, MapView):
        return list(zip(_walk_view(v.keys()), _walk_view(v.values())))
    return v


def _batch(rows, typ=pa.binary(), offsets=None, slice_from=0):
    """A binary/large_binary array over the concatenated rows, with the given
    offsets (default: the rows' own), built without Arrow's full validation,
    as an IPC reader would hand it over."""
    data = b"".join(rows)
    if offsets is None:
        offsets = [0]
        for r in rows:
            offsets.append(offsets[-1] + len(r))
    fmt = "<%dq" if typ == pa.large_binary() else "<%di"
    arr = pa.Array.from_buffers(typ, len(offsets) - 1,
                                [None, pa.py_buffer(struct.pack(fmt % len(offsets), *offsets)),
                                 pa.py_buffer(data)])
    return arr.slice(slice_from)


@pytest.mark.parametrize("typ", [pa.binary(), pa.large_binary()])
def test_decode_batch_checks_every_offset(typ):
    """Arrow's default validation checks only the first and the last offset of
    a binary array: the middle ones can be anything in an IPC file."""
    schema = pa.schema([("a", pa.int64()), ("s", pa.string())])
    enc = RowEncoder(schema)
    row = enc.encode({"a": 1, "s": "hello"})
    n = len(row)
    rows = [row, row, row]
    assert enc.decode_batch(_batch(rows, typ)).num_rows == 3
    assert enc.decode_batch(_batch(rows, typ, slice_from=1)).to_pylist() == [{"a": 1, "s": "hello"}] * 2
    for offsets, bad in (([0, n, 3 * n + 4096, 3 * n], 1),       # end past the data
                         ([0, 2 * n, n, 3 * n], 1),              # start after end
                         ([0, n, n - 8, 3 * n], 1),              # end before start
                         ([0, -8, 2 * n, 3 * n], 0)):            # end negative
        with pytest.raises(MalformedRowError, match=rf"row {bad}: .*offsets"):
            enc.decode_batch(_batch(rows, typ, offsets))
    # a sliced array: its first offset is negative (slicing does not validate)
    with pytest.raises(MalformedRowError, match=r"row 0: .*offsets"):
        enc.decode_batch(_batch(rows, typ, [0, -8, 2 * n, 3 * n], slice_from=1))
    # the crash of the issue: a huge middle offset, and a row whose string
    # slot points 1.9 GB into the "row"
    far = bytearray(row)
    struct.pack_into("<II", far, 16, 1000, 1_900_000_000)
    with pytest.raises(MalformedRowError, match=r"row 0: .*offsets"):
        enc.decode_batch(_batch([bytes(far), row, row], typ, [0, 2_000_000_000, 2_000_000_000, 3 * n]))


def _set_null_bit(enc, data, path):
    """Sets the null bit of the field at `path` (field names from the root)
    in data, a bytearray holding a row of enc (either layout)."""
    lay, base = enc._plan.layout, 0
    for name in path:
        j = [c.name for c in lay.children].index(name)
        if name == path[-1]:
            break
        child = lay.children[j]
        if child.inline:
            base += lay.slots[j]
        else:
            base += struct.unpack_from("<I", data, base + lay.slots[j] + 4)[0]
        lay = child
    assert lay.bitmap_bytes, "no bitmap to set a bit in"
    data[base + lay.bitmap_off + j // 8] |= 1 << (j % 8)


NN = dict(nullable=False)
NOT_NULL_SCHEMA = pa.schema([
    pa.field("a", pa.int32(), **NN),
    ("b", pa.string()),
    pa.field("s", pa.string(), **NN),
    ("fixed", pa.struct([pa.field("x", pa.int16(), **NN), ("y", pa.int8())])),   # inline in Compact
    ("var", pa.struct([pa.field("t", pa.string(), **NN), ("u", pa.int64())])),   # out of line in both
])
NOT_NULL_VALUE = {"a": 1, "b": "b", "s": "s", "fixed": {"x": 2, "y": 3}, "var": {"t": "t", "u": 4}}


@pytest.mark.parametrize("layout", ["standard", "compact"])
@pytest.mark.parametrize("path", [("a",), ("s",), ("fixed", "x"), ("var", "t")])
def test_null_bit_in_a_not_null_field(layout, path):
    enc = RowEncoder(NOT_NULL_SCHEMA, layout)
    data = bytearray(enc.encode(NOT_NULL_VALUE))
    assert enc.decode(bytes(data)) == NOT_NULL_VALUE
    _set_null_bit(enc, data, path)
    data = bytes(data)
    match = rf"non-nullable field or element \({path[-1]}\)"
    with pytest.raises(MalformedRowError, match=match):
        enc.decode(data)
    with pytest.raises(MalformedRowError, match=r"row 1: .*" + match):
        enc.decode_batch(pa.array([enc.encode(NOT_NULL_VALUE), data], pa.binary()))
    view = RowView(NOT_NULL_SCHEMA, data, layout=layout)
    if len(path) == 2:
        view = view[path[0]]               # the nested StructView
    for read in (lambda: view[path[-1]], lambda: view.is_null(path[-1]), view.to_dict):
        with pytest.raises(MalformedRowError, match=match):
            read()
    # a nullable field's bit is fine
    ok = bytearray(enc.encode(NOT_NULL_VALUE))
    _set_null_bit(enc, ok, ("b",))
    assert enc.decode(bytes(ok))["b"] is None and RowView(NOT_NULL_SCHEMA, bytes(ok), layout=layout).b is None


def test_null_bit_in_not_null_map_keys_values_and_elements():
    """Standard arrays always have a bitmap, so a null can be written where
    the element type forbids it: map keys, NOT NULL map values, NOT NULL
    list elements."""
    schema = pa.schema([("m", pa.map_(pa.string(), pa.field("value", pa.int32(), **NN))),
                        ("l", pa.list_(pa.field("item", pa.int64(), **NN)))])
    enc = RowEncoder(schema)
    value = {"m": [("k", 1)], "l": [5]}
    data = enc.encode(value)
    mo = struct.unpack_from("<I", data, 12)[0]
    ks = struct.unpack_from("<q", data, mo)[0]
    lo = struct.unpack_from("<I", data, 20)[0]
    for bit_at, name, read in ((mo + 8 + 8, "key", lambda v: v["m"].keys()[0]),
                               (mo + 8 + ks + 8, "value", lambda v: v["m"].values()[0]),
                               (lo + 8, "item", lambda v: v["l"][0])):
        b = bytearray(data)
        b[bit_at] |= 1
        b = bytes(b)
        match = rf"non-nullable field or element \({name}\)"
        with pytest.raises(MalformedRowError, match=match):
            enc.decode(b)
        with pytest.raises(MalformedRowError, match="row 0: .*" + match):
            enc.decode_batch(pa.array([b]))
        with pytest.raises(MalformedRowError, match=match):
            read(RowView(schema, b))


from decimal import Decimal as DEC


def _with_unscaled(enc, value, u):
    data = bytearray(enc.encode(value))
    off = struct.unpack_from("<I", data, enc._plan.layout.slots[0] + 4)[0]
    data[off:off + 32] = u.to_bytes(32, "little", signed=True)
    return bytes(data)


@pytest.mark.parametrize("layout", ["standard", "compact"])
@pytest.mark.parametrize("typ,fits,too_big", [
    (pa.decimal128(5, 2), [0, 99999, -99999, 1], [10**5, -10**5, 10**20, 2**127, 2**200, -(2**255)]),
    (pa.decimal128(38, 0), [10**38 - 1, -(10**38 - 1)], [10**38, 2**127 - 1, -(2**127)]),
    (pa.decimal256(76, 3), [10**76 - 1, -(10**76 - 1), 2**200, -(2**200)], [10**76, 2**255 - 1, -(2**255)]),
])
def test_decimal_fits_its_precision(layout, typ, fits, too_big):
    schema = pa.schema([("x", typ)])
    enc = RowEncoder(schema, layout)
    for u in fits:
        data = _with_unscaled(enc, {"x": DEC(0)}, u)
        want = DEC(u).scaleb(-typ.scale, __import__("decimal").Context(prec=100))
        assert enc.decode(data)["x"] == want
        assert RowView(schema, data, layout=layout).get_decimal(0) == want
        assert enc.decode_batch(pa.array([data])).to_pylist() == [{"x": want}]
    for u in too_big:
        data = _with_unscaled(enc, {"x": DEC(0)}, u)
        match = rf"a decimal value does not fit {typ}".replace("(", r"\(").replace(")", r"\)")
        with pytest.raises(MalformedRowError, match=match + r" \(x\)"):
            enc.decode(data)
        with pytest.raises(MalformedRowError, match=match):
            RowView(schema, data, layout=layout).get_decimal(0)
        with pytest.raises(MalformedRowError, match="row 0: " + match):
            enc.decode_batch(pa.array([data]))


def _slot_at(data, at, off, size):
    b = bytearray(data)
    struct.pack_into("<II", b, at, size, off)
    return bytes(b)


@pytest.mark.parametrize("layout", ["standard", "compact"])
def test_slot_into_the_fixed_region(layout):
    """A variable-width value must lie after its row's or array's fixed
    region (bitmap and slots), as Fory's Rust reader checks; otherwise the
    row's own slots decode as a string."""
    schema = pa.schema([("s", pa.string()), ("n", pa.int64()),
                        ("l", pa.list_(pa.string())), ("m", pa.map_(pa.string(), pa.string())),
                        ("st", pa.struct([("t", pa.string())]))])
    enc = RowEncoder(schema, layout)
    value = {"s": "hello", "n": 7, "l": ["abc"], "m": [("k", "v")], "st": {"t": "x"}}
    data = enc.encode(value)
    lay = enc._plan.layout
    fixed = lay.fixed
    slot = {c.name: lay.slots[j] for j, c in enumerate(lay.children)}

    def field_off(name):
        return struct.unpack_from("<I", data, slot[name] + 4)[0]

    def arr_first_slot(at, nullable=True):
        # the header of one string: count and bitmap (Standard: 8 + 8;
        # Compact: 4, + 1 if nullable, not rounded for strings)
        return at + (16 if layout == "standard" else 4 + nullable)

    def arr_fixed(at, nullable=True):
        return arr_first_slot(at, nullable) + 8

    cases = []
    for off in (0, slot["s"], fixed - 1):                     # into the row's own fixed region
        cases.append(("s", _slot_at(data, slot["s"], off, 1)))
    # a nested row's slot pointing into the nested row's own fixed region
    st = field_off("st")
    st_lay = lay.children[[c.name for c in lay.children].index("st")]
    cases.append(("t", _slot_at(data, st + st_lay.slots[0], st_lay.fixed - 8, 8)))
    # a list element's slot pointing into the array's header/slots
    lo = field_off("l")
    cases.append(("item", _slot_at(data, arr_first_slot(lo), 0, 4)))
    cases.append(("item", _slot_at(data, arr_first_slot(lo), arr_fixed(0) - 1, 1)))
    # map key and value arrays, each relative to its own start
    mo = field_off("m")
    ks = struct.unpack_from("<q", data, mo)[0]
    cases.append(("key", _slot_at(data, arr_first_slot(mo + 8, False), 2, 1)))
    cases.append(("value", _slot_at(data, arr_first_slot(mo + 8 + ks), arr_fixed(0) - 8, 8)))
    for name, bad in cases:
        match = rf"fixed region .*\({name}\)"
        with pytest.raises(MalformedRowError, match=match):
            enc.decode(bad)
        with pytest.raises(MalformedRowError, match=match):
            _walk_view(RowView(schema, bad, layout=layout))
        with pytest.raises(MalformedRowError, match="row 0: .*" + match):
            enc.decode_batch(pa.array([bad]))
    # an empty value may point exactly at the end of the fixed region
    empty = _slot_at(data, slot["s"], fixed, 0)
    assert enc.decode(empty)["s"] == "" == RowView(schema, empty, layout=layout).s
    assert enc.decode_batch(pa.array([empty])).column("s").to_pylist() == [""]


def test_fory_batch_fuzz_seeds():
    """The fory_batch fuzz target's seeds (both kinds) run through it, and its
    explicit-buffer seeds are valid arrays that decode."""
    from tests.fuzz import _targets

    seeds = _targets.fory_batch_seeds()
    cases = _targets._fory_cases()
    explicit = [s for s in seeds if s[0] & 0x80]
    assert len(explicit) == 2 * len(cases)
    for s in seeds:
        _targets.fory_batch(s)
    for s in explicit:
        arr = _targets._raw_batch(s[1:])
        assert cases[s[0] & 0x7F][2].decode_batch(arr).num_rows == len(arr)


@pytest.mark.parametrize("layout", ["standard", "compact"])
def test_encode_batch_refuses_decimals_past_their_precision(layout):
    """Arrow can hold 10**5 in decimal128(5, 2) (raw buffers); the row it
    would encode to does not decode, so encode_batch refuses it."""
    from decimal import Decimal
    t = pa.decimal128(5, 2)
    good = pa.array([Decimal("999.99"), Decimal("-999.99"), None], t)
    unscaled = (10**5).to_bytes(16, "little", signed=True)
    bad = pa.Array.from_buffers(t, 1, [None, pa.py_buffer(unscaled)])
    schema = pa.schema([("d", t)])
    enc = RowEncoder(schema, layout=layout)
    rows = enc.encode_batch(pa.record_batch([good], schema=schema))
    assert enc.decode_batch(rows).column(0).equals(good)
    with pytest.raises(ValueConversionError, match="row 0: a decimal value does not fit"):
        enc.encode_batch(pa.record_batch([bad], schema=schema))
