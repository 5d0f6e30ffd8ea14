"""Value statistics of accelerated .row writes (issue 42, item 1): the
manifest holds, for every data file, what Paimon Java's per-record collector
gives for the table's options, byte for byte, computed here independently
from the rows written (Java's Comparable order, TruncateSimpleColStatsCollector's
cuts, BinaryRowWriter's layout), and pypaimon's planner prunes by it."""
import datetime as dt
import io
import json
import math
import os
import re
import struct
from decimal import Context, Decimal

import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

import rowformat.paimon as rp
from rowformat.errors import TableOptionError

from ._tables import Warehouse, write


# -- Java's rules, written out from the rows --------------------------------

def _float_key(v, width):
    bits = struct.unpack("<I" if width == 4 else "<Q", struct.pack("<f" if width == 4 else "<d",
                                                                   v))[0]
    if math.isnan(v):                                   # Float.floatToIntBits: one NaN
        bits = 0x7FC00000 if width == 4 else 0x7FF8000000000000
    sign = 1 << (8 * width - 1)
    return bits ^ (2 * sign - 1) if bits & sign else bits | sign   # unsigned, Java's order


def java_key(kind, v):
    if kind in ("FLOAT", "DOUBLE"):
        return _float_key(v, 4 if kind == "FLOAT" else 8)
    if kind == "STRING":
        return v.encode("utf-8")
    return v


def java_min_max(kind, values):
    """Java's FullSimpleColStatsCollector: first of the least, first of the greatest."""
    lo = hi = None
    for v in values:
        if v is None:
            continue
        if lo is None or java_key(kind, v) < java_key(kind, lo):
            lo = v
        if hi is None or java_key(kind, v) > java_key(kind, hi):
            hi = v
    return lo, hi


def cut_min(v, n):
    return v[:n]                          # code points of a str, bytes of bytes


def cut_max(v, n):
    """TruncateSimpleColStatsCollector.truncateMax (None: no bound)."""
    if len(v) <= n:
        return v
    if isinstance(v, bytes):
        for i in range(n - 1, -1, -1):
            if v[i] != 0xFF:
                return v[:i] + bytes([v[i] + 1])
        return None
    for i in range(n - 1, -1, -1):
        c = ord(v[i]) + 1
        c = 0xE000 if c == 0xD800 else c
        if c <= 0x10FFFF:
            return v[:i] + chr(c)
    return None


def java_row(cols):
    """serializeBinaryRow of BinaryRowWriter over [(kind, params, value)]."""
    n = len(cols)
    head = ((n + 71) // 64) * 8
    fixed, var = bytearray(head + 8 * n), b""
    for i, (kind, p, v) in enumerate(cols):
        at = head + 8 * i
        where = head + 8 * n + len(var)
        var_kind = (kind == "DECIMAL" and p[0] > 18) or (kind == "TIMESTAMP" and p[0] > 3)
        if v is None:
            fixed[(i + 8) // 8] |= 1 << ((i + 8) % 8)
            if var_kind:                                  # the slot keeps its offset
                var += bytes(16 if kind == "DECIMAL" else 8)
                fixed[at:at + 8] = struct.pack("<q", where << 32)
            continue
        if kind == "DECIMAL":
            unscaled = int(v.scaleb(p[1], Context(prec=60)))
            if p[0] <= 18:
                fixed[at:at + 8] = struct.pack("<q", unscaled)
            else:                                        # BigInteger.toByteArray
                size = (unscaled if unscaled >= 0 else ~unscaled).bit_length() // 8 + 1
                b = unscaled.to_bytes(size, "big", signed=True)
                var += b + bytes(16 - len(b))
                fixed[at:at + 8] = struct.pack("<q", where << 32 | len(b))
        elif kind == "TIMESTAMP":                        # v: epoch nanoseconds
            millis, nanos = divmod(v, 1_000_000)
            if p[0] <= 3:
                fixed[at:at + 8] = struct.pack("<q", millis)
            else:
                var += struct.pack("<q", millis)
                fixed[at:at + 8] = struct.pack("<q", where << 32 | nanos)
        elif kind in ("STRING", "BYTES"):
            b = v.encode("utf-8") if kind == "STRING" else v
            if len(b) < 8:
                fixed[at:at + len(b)] = b
                fixed[at + 7] = 0x80 | len(b)
            else:
                var += b + bytes((8 - len(b) % 8) % 8)
                fixed[at:at + 8] = struct.pack("<q", where << 32 | len(b))
        else:
            fmt = {"BOOLEAN": "<?", "TINYINT": "<b", "SMALLINT": "<h", "INT": "<i", "DATE": "<i",
                   "BIGINT": "<q", "FLOAT": "<f", "DOUBLE": "<d"}[kind]
            if kind == "DATE":
                v = (v - dt.date(1970, 1, 1)).days
            b = struct.pack(fmt, v)
            fixed[at:at + len(b)] = b
    return struct.pack(">i", n) + bytes(fixed) + var


# the columns of one table: name, Arrow type, Paimon kind and parameters
COLUMNS = [
    ("b", pa.bool_(), "BOOLEAN", ()),
    ("i8", pa.int8(), "TINYINT", ()),
    ("i16", pa.int16(), "SMALLINT", ()),
    ("i32", pa.int32(), "INT", ()),
    ("i64", pa.int64(), "BIGINT", ()),
    ("f32", pa.float32(), "FLOAT", ()),
    ("f64", pa.float64(), "DOUBLE", ()),
    ("s", pa.string(), "STRING", ()),
    ("bin", pa.binary(), "BYTES", ()),
    ("d10", pa.decimal128(10, 2), "DECIMAL", (10, 2)),
    ("d38", pa.decimal128(38, 4), "DECIMAL", (38, 4)),
    ("day", pa.date32(), "DATE", ()),
    ("ts0", pa.timestamp("s"), "TIMESTAMP", (0,)),
    ("ts3", pa.timestamp("ms"), "TIMESTAMP", (3,)),
    ("ts6", pa.timestamp("us"), "TIMESTAMP", (6,)),
    ("ts9", pa.timestamp("ns"), "TIMESTAMP", (9,)),
    ("arr", pa.list_(pa.int32()), "ARRAY", ()),
]
_NS = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}


def _rows():
    long = "ab\u00e9\u4e2d\U0001F600" * 5                 # multi-byte, 25 code points
    return {
        "b": [True, None, False, True],
        "i8": [-128, 127, None, 0],
        "i16": [5, -32768, 32767, None],
        "i32": [None, -(2**31), 2**31 - 1, 7],
        "i64": [2**63 - 1, None, -(2**63), 1],
        "f32": [1.5, float("nan"), -0.0, 0.0],
        "f64": [0.0, -0.0, None, -1e300],
        "s": [long, "", None, long[:3] + "\U0010FFFF" * 20],
        "bin": [b"\xff" * 20, b"", b"\x00\xff" * 9, None],
        "d10": [Decimal("-12345678.90"), None, Decimal("0.01"), Decimal("99999999.99")],
        "d38": [Decimal("-" + "9" * 34 + ".9999"), Decimal("-128.0000"), None,
                Decimal("1" * 30 + ".5000")],
        "day": [dt.date(1969, 12, 31), dt.date(2024, 2, 29), None, dt.date(1, 1, 1)],
        "ts0": [-1, 0, None, 86400 * 365],                # in the column's unit
        "ts3": [-1, 1700000000123, None, 0],
        "ts6": [-1, 1700000000123456, 5, None],
        "ts9": [-1, 1700000000123456789, -999_999_999_999, None],
        "arr": [[1], None, [], [2, 3]],
    }


def _arrow(rows):
    return pa.table({name: pa.array(rows[name], type=t) for name, t, _, _ in COLUMNS})


def _value(kind, name, v, unit=None):
    if v is None or kind != "TIMESTAMP":
        return v
    return v * _NS[unit]


def expected(rows, mode, names=None):
    """(min row, max row, null counts, value_stats_cols) of one file by Java's rules."""
    names = names or [c[0] for c in COLUMNS]
    lo_cols, hi_cols, counts = [], [], []
    for name, t, kind, params in COLUMNS:
        if name not in names:
            continue
        m = mode(name) if callable(mode) else mode
        if m == "none":
            continue
        unit = getattr(t, "unit", None)
        values = [_value(kind, name, v, unit) for v in rows[name]]
        counts.append(sum(v is None for v in values))
        lo = hi = None
        if m != "counts" and kind != "ARRAY":
            lo, hi = java_min_max(kind, values)
            if kind in ("FLOAT", "DOUBLE") and hi is not None and math.isnan(hi):
                lo = hi = None          # Java's max would be NaN: null count only
            if m.startswith("truncate") and kind in ("STRING", "BYTES") and lo is not None:
                n = int(m[9:-1])
                hi = cut_max(hi, n)
                lo = cut_min(lo, n) if hi is not None else None
        lo_cols.append((kind, params, lo))
        hi_cols.append((kind, params, hi))
    kept = [c[0] for c in COLUMNS if c[0] in names
            and (mode(c[0]) if callable(mode) else mode) != "none"]
    cols = None if len(kept) == len(names) else kept
    return java_row(lo_cols), java_row(hi_cols), counts, cols


def _avro(table, path):
    import fastavro
    with table.file_io.new_input_stream(path) as f:
        return list(fastavro.reader(io.BytesIO(f.read())))


def file_metas(table, snapshot=None):
    """The _FILE records the table's manifests (or those ``snapshot`` added)
    hold, as stored (read through the table's FileIO: a scan drops the stats
    once it has used them)."""
    root = table.table_path.rstrip("/")
    if snapshot is not None:
        with table.file_io.new_input_stream(f"{root}/snapshot/snapshot-{snapshot}") as f:
            delta = json.loads(f.read())["deltaManifestList"]
        names = [m["_FILE_NAME"] for m in _avro(table, f"{root}/manifest/{delta}")]
    else:
        names = sorted(os.path.basename(st.path) for st in table.file_io.list_status(
            f"{root}/manifest"))
        names = [n for n in names if n.startswith("manifest-") and "-list-" not in n]
    return [e["_FILE"] for n in names for e in _avro(table, f"{root}/manifest/{n}")
            if e["_KIND"] == 0]


def stored(meta):
    vs = meta["_VALUE_STATS"]
    return vs["_MIN_VALUES"], vs["_MAX_VALUES"], list(vs["_NULL_COUNTS"]), \
        meta["_VALUE_STATS_COLS"]


def decoded(table, meta):
    """The stored min and max rows through pypaimon's BinaryRow."""
    from pypaimon.table.row.binary_row import BinaryRow
    names = meta["_VALUE_STATS_COLS"]
    fields = [f for f in table.fields if names is None or f.name in names]
    vs = meta["_VALUE_STATS"]
    return BinaryRow(vs["_MIN_VALUES"], fields), BinaryRow(vs["_MAX_VALUES"], fields)


def _create(wh, name, options=None, schema=None):
    schema = schema or pa.schema([pa.field(n, t) for n, t, _, _ in COLUMNS])
    return wh.create(name, schema, options=options)


# -- every type, every mode ---------------------------------------------------

@pytest.mark.parametrize("mode", [None, "full", "counts", "none", "truncate(3)", "TRUNCATE(1)",
                                  "truncate(40)"])
def test_stats_of_every_type_are_javas_byte_for_byte(wh, mode):
    rows = _rows()
    t = _create(wh, "t", None if mode is None else {"metadata.stats-mode": mode})
    with rp.accelerated():
        write(t, _arrow(rows))
    [meta] = file_metas(t)
    java_mode = (mode or "truncate(16)").lower()
    want = expected(rows, java_mode)
    if java_mode == "none":                    # all columns none: Java's dense "no columns"
        want = (b"\0\0\0\0" + bytes(8), b"\0\0\0\0" + bytes(8), [], [])
    assert stored(meta) == want


def test_without_acceleration_pypaimon_writes_no_stats(wh):
    t = _create(wh, "t")
    write(t, _arrow(_rows()))
    [meta] = file_metas(t)
    assert meta["_VALUE_STATS_COLS"] == [] and list(meta["_VALUE_STATS"]["_NULL_COUNTS"]) == []


def test_a_string_of_only_the_greatest_code_point_keeps_its_null_count_only(wh):
    s = pa.schema([("s", pa.string()), ("b", pa.binary())])
    t = wh.create("t", s, options={"metadata.stats-mode": "truncate(2)"})
    with rp.accelerated():
        write(t, pa.table({"s": ["a", "\U0010FFFF" * 3, None], "b": [b"\xff\xff\xff", b"", None]},
                          schema=s))
    [meta] = file_metas(t)
    lo, hi, counts, cols = stored(meta)
    assert counts == [1, 1] and cols is None
    assert lo == hi == java_row([("STRING", (), None), ("BYTES", (), None)])


def test_the_rounded_max_skips_the_surrogates(wh):
    s = pa.schema([("s", pa.string())])
    t = wh.create("t", s, options={"metadata.stats-mode": "truncate(1)"})
    with rp.accelerated():
        write(t, pa.table({"s": ["\ud7ff".encode("utf-8", "surrogatepass").decode("utf-8") + "z"]},
                          schema=s))
    [meta] = file_metas(t)
    lo, hi = decoded(t, meta)
    assert hi.get_field(0) == "\ue000" and lo.get_field(0) == "\ud7ff"


def test_field_modes_keep_first_n_and_sparse_store(wh):
    rows = _rows()
    opts = {"metadata.stats-mode": "counts", "fields.s.stats-mode": "truncate(2)",
            "fields.i64.stats-mode": "none", "metadata.stats-keep-first-n-columns": "4"}
    t = _create(wh, "t", opts)
    with rp.accelerated():
        write(t, _arrow(rows))
    names = [c[0] for c in COLUMNS]

    def mode(name):                             # createStatsFactories, counted in order
        if name == "s":
            return "truncate(2)"
        if name == "i64":
            return "none"
        return "counts" if names.index(name) < 4 else "none"
    [meta] = file_metas(t)
    assert stored(meta) == expected(rows, mode)

    t2 = _create(wh, "t2", {**opts, "metadata.stats-dense-store": "false"})
    with rp.accelerated():
        write(t2, _arrow(rows))
    [meta] = file_metas(t2)
    lo, hi, counts, cols = stored(meta)
    assert cols is None and len(counts) == len(COLUMNS)
    assert [c is None for c in counts] == [mode(n) == "none" for n in names]


@pytest.mark.parametrize("key, value, expect", [
    ("fields.s.stats-mode", "truncate(0)", "expected none, counts, full or truncate"),
    ("metadata.stats-mode", "ful", "expected none, counts, full or truncate"),
    ("metadata.stats-mode", "truncate(2147483648)", "expected none, counts, full or truncate"),
    ("metadata.stats-keep-first-n-columns", "two", "expected an integer"),
    ("metadata.stats-dense-store", "yes", "expected true or false")])
def test_a_misspelt_stats_option_is_an_error_naming_it_and_no_file_is_written(wh, key, value,
                                                                              expect):
    t = _create(wh, "t", {key: value})
    with rp.accelerated(), pytest.raises(TableOptionError,
                                         match=f"'{key}' = '{re.escape(value)}': {expect}"):
        write(t, _arrow(_rows()))
    assert wh.data_files("t") == []


@pytest.mark.parametrize("mode", [None, "full"])
def test_primary_key_tables_get_value_stats_of_their_value_columns(wh, mode):
    s = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])
    options = {"bucket": "1", **({"metadata.stats-mode": mode} if mode else {})}
    t = wh.create("t", s, primary_keys=["k"], options=options)
    with rp.accelerated():
        write(t, pa.table({"k": [3, 1, 2], "v": ["c" * 20, None, "a"]}, schema=s))
    [meta] = file_metas(t)
    want_hi = "c" * 20 if mode == "full" else "c" * 15 + "d"
    assert stored(meta) == (java_row([("BIGINT", (), 1), ("STRING", (), "a")]),
                            java_row([("BIGINT", (), 3), ("STRING", (), want_hi)]), [0, 1], None)


def test_primary_key_stats_are_truncate_128_full_width(wh):
    """Key stats: the _KEY_ columns, system fields (truncate(128)), never dense."""
    s = pa.schema([pa.field("k", pa.string(), nullable=False), pa.field("n", pa.int32(),
                                                                        nullable=False)])
    t = wh.create("t", s, primary_keys=["k", "n"],
                  options={"bucket": "1", "metadata.stats-mode": "none"})
    keys = ["\u00e9" * 200, "b" * 130, "a"]
    with rp.accelerated():
        write(t, pa.table({"k": keys, "n": [1, 2, 3]}, schema=s))
    [meta] = file_metas(t)
    ks = meta["_KEY_STATS"]
    assert (ks["_MIN_VALUES"], ks["_MAX_VALUES"], ks["_NULL_COUNTS"]) == (
        java_row([("STRING", (), "a"), ("INT", (), 1)]),
        java_row([("STRING", (), "\u00e9" * 127 + "\u00ea"), ("INT", (), 3)]), [0, 0])
    assert meta["_VALUE_STATS_COLS"] == []
    # pypaimon's planner reads them: a key equality outside [min, max] plans nothing
    rb = t.new_read_builder()
    pb = rb.new_predicate_builder()
    assert rb.with_filter(pb.equal("n", 4)).new_scan().plan().splits() == []
    assert len(rb.with_filter(pb.equal("n", 2)).new_scan().plan().splits()) == 1


# -- pruning ------------------------------------------------------------------

@pytest.mark.parametrize("accelerated", [False, True])
def test_a_nan_never_makes_the_planner_skip_matching_rows(wh, accelerated):
    """Java's max of [6.0, NaN] is NaN; pypaimon compares it as a Python
    float (6.0 > 5 kept, NaN > 5 false): the column keeps no min/max."""
    s = pa.schema([("f", pa.float64()), ("g", pa.float32()), ("i", pa.int32())])
    t = wh.create("t", s)
    with rp.accelerated():
        write(t, pa.table({"f": [6.0, float("nan"), 1.0], "g": [6.0, float("nan"), 1.0],
                           "i": [1, 2, 3]}, schema=s))
    [meta] = file_metas(t)
    lo, hi, counts, cols = stored(meta)
    assert counts == [0, 0, 0] and hi == java_row([("DOUBLE", (), None), ("FLOAT", (), None),
                                                   ("INT", (), 3)])
    if accelerated:
        rp.accelerate()
    for col in ("f", "g"):
        for make in (lambda pb: pb.greater_than(col, 5.0), lambda pb: pb.equal(col, 6.0),
                     lambda pb: pb.between(col, 5.5, 6.5)):
            rb = t.new_read_builder()
            rb = rb.with_filter(make(rb.new_predicate_builder()))
            splits = rb.new_scan().plan().splits()
            assert 6.0 in rb.new_read().to_arrow(splits).column(col).to_pylist()


def _three_files(wh):
    t = wh.create("t", pa.schema([("id", pa.int64()), ("name", pa.string())]))
    with rp.accelerated():
        for k in range(3):
            ids = list(range(100 * k, 100 * k + 100))
            write(t, pa.table({"id": ids, "name": [f"user{i:04d}-{'x' * 20}" for i in ids]}))
    return t


@pytest.mark.parametrize("accelerated", [False, True])
def test_pypaimons_planner_skips_files_by_the_stats(wh, accelerated):
    t = _three_files(wh)
    if accelerated:
        rp.accelerate()
    rb = t.new_read_builder()
    pb = rb.new_predicate_builder()
    everything = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    for predicate, files, keep in [
            (pb.equal("id", 150), 1, lambda r: r["id"] == 150),
            (pb.between("id", 95, 105), 2, lambda r: 95 <= r["id"] <= 105),
            (pb.equal("name", "user0250-" + "x" * 20), 1, lambda r: r["id"] == 250),
            (pb.greater_than("id", 1000), 0, lambda r: False)]:
        frb = t.new_read_builder().with_filter(predicate)
        splits = frb.new_scan().plan().splits()
        assert sum(len(s.files) for s in splits) == files
        got = frb.new_read().to_arrow(splits).to_pylist() if splits else []
        assert [r for r in got if keep(r)] == [r for r in everything.to_pylist() if keep(r)]


# -- property: the stats bound every value of every file ----------------------

_text = st.text(st.characters(blacklist_categories=["Cs"]), max_size=24)


@settings(max_examples=25, deadline=None)
@given(data=st.lists(st.tuples(st.one_of(st.none(), st.integers(-2**63, 2**63 - 1)),
                               st.one_of(st.none(), _text),
                               st.one_of(st.none(), st.floats(allow_nan=True)),
                               st.one_of(st.none(), st.binary(max_size=20))),
                     min_size=1, max_size=40),
       n=st.integers(1, 20))
def test_the_stats_bound_every_value(tmp_path_factory, data, n):
    wh = Warehouse(tmp_path_factory.mktemp("wh"))
    s = pa.schema([("i", pa.int64()), ("s", pa.string()), ("f", pa.float64()),
                   ("b", pa.binary())])
    t = wh.create("t", s, options={"metadata.stats-mode": f"truncate({n})"})
    cut = len(data) // 2                       # two commits: two files
    parts = [p for p in (data[:cut], data[cut:]) if p]
    with rp.accelerated():
        for part in parts:
            write(t, pa.table({name: list(c) for name, c in zip(s.names, zip(*part))}, schema=s))
    for snapshot, part in enumerate(parts, 1):
        [meta] = file_metas(t, snapshot)
        _check_bounds(t, meta, list(zip(*part)))


def _check_bounds(t, meta, cols):
    lo_row, hi_row = decoded(t, meta)
    counts = meta["_VALUE_STATS"]["_NULL_COUNTS"]
    for k, kind in enumerate(["BIGINT", "STRING", "DOUBLE", "BYTES"]):
        values = cols[k]
        assert counts[k] == sum(v is None for v in values)
        lo, hi = lo_row.get_field(k), hi_row.get_field(k)
        present = [v for v in values if v is not None]
        if not present or hi is None:
            assert lo is None and hi is None
            continue
        for v in present:
            assert java_key(kind, lo) <= java_key(kind, v) <= java_key(kind, hi)


# -- on an object store (FileIOs write .row files through StreamRowWriter) ----

def test_stats_on_an_s3_warehouse_equal_the_local_ones_and_prune(wh, s3):
    from pypaimon import CatalogFactory, Schema
    rows = _rows()
    options = s3.catalog_options()
    cat = CatalogFactory.create({"warehouse": s3.url("wh"), **options})
    cat.create_database("db", True)
    schema = pa.schema([pa.field(n, t) for n, t, _, _ in COLUMNS])
    cat.create_table("db.t", Schema.from_pyarrow_schema(schema, options={"file.format": "row"}),
                     True)
    remote = cat.get_table("db.t")
    local = _create(wh, "t")
    with rp.accelerated():
        for t in (remote, local):
            write(t, _arrow(rows))
            write(t, _arrow({k: v[:1] for k, v in rows.items()}))

    def by_rows(t):
        return [stored(m) for m in sorted(file_metas(t), key=lambda m: m["_ROW_COUNT"])]

    got = by_rows(remote)
    assert got == by_rows(local)
    assert got[1] == expected(rows, "truncate(16)")
    # i16 of the one-row file is 5: only the other file's [-32768, 32767] holds 6
    rb = remote.new_read_builder()
    rb = rb.with_filter(rb.new_predicate_builder().equal("i16", 6))
    assert [f.row_count for s in rb.new_scan().plan().splits() for f in s.files] == [4]


def test_the_ordinary_columns_file_of_a_blob_table_gets_stats(wh):
    """A table with a BLOB column writes its other columns through another
    writer (pypaimon's CompositeDataWriter): its .row file gets the same
    statistics, naming its columns, and reads back the same through stock
    pypaimon."""
    from ._tables import read
    s = pa.schema([("id", pa.int64()), ("s", pa.string()), ("b", pa.large_binary())])
    t = wh.create("t", s, options={"row-tracking.enabled": "true",
                                   "data-evolution.enabled": "true"})
    data = pa.table({"id": [5, None, -3], "s": ["x" * 20, "b", None],
                     "b": [b"1", None, b"\x00" * 9]}, schema=s)
    with rp.accelerated():
        write(t, data)
    [meta] = [m for m in file_metas(t) if m["_FILE_NAME"].endswith(".row")]
    assert stored(meta) == (java_row([("BIGINT", (), -3), ("STRING", (), "b")]),
                            java_row([("BIGINT", (), 5), ("STRING", (), "x" * 15 + "y")]),
                            [1, 1], ["id", "s"])
    assert read(wh.table("t")).sort_by("id").to_pylist() == data.sort_by("id").to_pylist()
