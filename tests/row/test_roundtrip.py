"""Every type, nulls everywhere they can occur, and edge values, through
Arrow (write/read/take/iter_batches) and through Python rows (write_rows/get)."""
import datetime as dt
import math
import re
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, strategies as st
from pyroaring import BitMap

import rowformat
from rowformat import RowFileReader, RowFileWriter, schema, to_arrow_schema

ALL_TYPES = (
    "bo BOOLEAN, ti TINYINT, sm SMALLINT, i INT, bi BIGINT, f FLOAT, d DOUBLE, "
    "c CHAR(5), s STRING, b BINARY(3), vb BYTES, bl BLOB, "
    "d10 DECIMAL(10, 2), d18 DECIMAL(18, 18), d38 DECIMAL(38, 0), d3810 DECIMAL(38, 10), "
    "dt DATE, t0 TIME(0), t6 TIME(6), t9 TIME(9), "
    "ts0 TIMESTAMP(0), ts3 TIMESTAMP(3), ts6 TIMESTAMP(6), ts9 TIMESTAMP(9), "
    "ltz TIMESTAMP(6) WITH LOCAL TIME ZONE, v VARIANT, "
    "a ARRAY<INT>, aa ARRAY<ARRAY<STRING>>, m MAP<STRING, ARRAY<INT>>, ms MULTISET<INT>, "
    "r ROW<x INT NOT NULL, y ROW<z STRING>>, vec VECTOR<DOUBLE, 2>, nn BIGINT NOT NULL"
)

UTC = dt.timezone.utc
D38 = Decimal(10**38 - 1)
MINUS_D38 = Decimal(-(10**38 - 1))  # not -D38: unary minus rounds to the 28-digit context

ROWS = [
    # minima / negative edges, pre-1970 instants
    (False, -128, -32768, -2**31, -2**63, -math.inf, -0.0, "", "", b"", b"", b"",
     Decimal("-99999999.99"), Decimal("-0.999999999999999999"), MINUS_D38, Decimal("-9999999999999999999999999999.9999999999"),
     dt.date(1, 1, 1), dt.time(0, 0), dt.time(0, 0, 0, 1000), dt.time(23, 59, 59, 999000),
     dt.datetime(1, 1, 1), dt.datetime(1969, 12, 31, 23, 59, 59, 999000), dt.datetime(1969, 12, 31, 23, 59, 59, 999999),
     np.datetime64(-2**63 + 1, "ns"),
     dt.datetime(1969, 7, 20, 20, 17, 40, 1, tzinfo=UTC), {"value": b"", "metadata": b""},
     [], [], [], [], {"x": -1, "y": None}, [-0.0, math.inf], -2**63),
    # maxima, unicode, big payloads
    (True, 127, 32767, 2**31 - 1, 2**63 - 1, math.inf, 1.7976931348623157e308, "héllo", "😀 ünïcødé " * 20,
     b"\x00\xff\x00", bytes(range(256)) * 4, b"\x00" * 100_000,
     Decimal("99999999.99"), Decimal("0.999999999999999999"), D38, Decimal("9999999999999999999999999999.9999999999"),
     dt.date(9999, 12, 31), dt.time(23, 59, 59), dt.time(23, 59, 59, 999000), dt.time(12, 0, 0, 1000),
     dt.datetime(9999, 12, 31, 23, 59, 59), dt.datetime(9999, 12, 31, 23, 59, 59, 999000),
     dt.datetime(9999, 12, 31, 23, 59, 59, 999999),
     np.datetime64(2**63 - 1, "ns"),
     dt.datetime(2038, 1, 19, 3, 14, 8, 123456, tzinfo=UTC), {"value": b"\x01\x02", "metadata": b"\x03"},
     [1, None, 2**31 - 1], [["a", None], None, []], [("k", [1, None]), ("", None)], [(5, 2), (-7, 1)],
     {"x": 2**31 - 1, "y": {"z": "deep"}}, [1.5, -2.5], 2**63 - 1),
    # all nulls (except NOT NULL)
    tuple([None] * 32) + (0,),
]


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    path = tmp_path_factory.mktemp("rt") / "all.row"
    s = schema(ALL_TYPES)
    with RowFileWriter(path, s, block_size=128) as w:   # tiny blocks: rows span many blocks
        w.write_rows(ROWS)
        w.write_rows(ROWS)
    return path, s


def _same(a, b):
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, np.datetime64) or isinstance(b, np.datetime64):
        return type(a) is type(b) and a == b and a.dtype == b.dtype
    return type(a) is type(b) and a == b


def test_python_rows_round_trip_exactly(written):
    path, s = written
    with RowFileReader(path, s) as r:
        assert r.num_rows == 6
        for i in range(6):
            got, want = r.get(i), ROWS[i % 3]
            for name, g, w in zip(s.names, got, want):
                assert _same(g, w), (i, name, g, w)
        assert r[-1] == r[5]


def test_arrow_round_trip_and_rewrite_is_byte_identical(written, tmp_path):
    path, s = written
    with RowFileReader(path, s) as r:
        table = r.read()
        assert table.schema == to_arrow_schema(s)
        assert table.num_rows == 6
        table.validate(full=True)
        out = tmp_path / "again.row"
        with RowFileWriter(out, s, block_size=128) as w:
            w.write(table)
        assert out.read_bytes() == path.read_bytes()
        assert r.read(selection=BitMap([1, 4])).equals(table.take([1, 4]))
        assert r.take([5, 0, 5, 2]).equals(table.take([5, 0, 5, 2]))
        batches = list(r.iter_batches(batch_size=4))
        assert [b.num_rows for b in batches] == [4, 2]
        assert pa.Table.from_batches(batches).equals(table)


def test_memory_mapped_reader_reads_the_same(written, tmp_path):
    path, s = written
    with RowFileReader(path, s) as r, RowFileReader(path, s, memory_map=True, cache_bytes=0) as m:
        table = r.read()
        assert m.read().equals(table)
        for i in range(6):
            assert all(_same(a, b) for a, b in zip(m.get(i), r.get(i)))
        assert m.take([5, 0, 5, 2]).equals(table.take([5, 0, 5, 2]))
        assert pa.Table.from_batches(list(m.iter_batches(batch_size=4))).equals(table)
    with pytest.raises(ValueError, match="the reader is closed"):
        m.get(0)
    with open(path, "rb") as f, pytest.raises(ValueError, match="memory_map=True needs a local file path"):
        RowFileReader(f, s, memory_map=True)
    with pytest.raises(ValueError, match="memory_map=True needs a local file path"):
        RowFileReader("memory://x.row", s, memory_map=True)


def test_memory_mapped_reader_reports_damaged_blocks(written, tmp_path):
    path, s = written
    data = bytearray(path.read_bytes())
    data[4] ^= 0xFF                      # inside block 0's frame
    bad = tmp_path / "bad.row"
    bad.write_bytes(bytes(data))
    with RowFileReader(bad, s, memory_map=True) as m:
        with pytest.raises(rowformat.CorruptFileError, match=r"bad.row: block 0"):
            m.get(0)
        assert _same(m.get(5), ROWS[2])   # other blocks still read


def test_arrow_values_are_exact(written):
    path, s = written
    with RowFileReader(path, s) as r:
        t = r.read(columns=["ts9", "d38", "ts6", "t6", "ltz"])
    assert t.column_names == ["ts9", "d38", "ts6", "t6", "ltz"]
    assert t.column("ts9").cast(pa.int64()).to_pylist()[:3] == [-9223372036854775808 + 1, 2**63 - 1, None]
    assert t.column("d38").to_pylist()[:2] == [MINUS_D38, D38]
    assert t.column("ts6").to_pylist()[0] == dt.datetime(1969, 12, 31, 23, 59, 59, 999999)
    assert t.column("ltz").type == pa.timestamp("us", tz="UTC")


def test_projection_orders_and_checks_columns(written):
    path, s = written
    with RowFileReader(path, s) as r:
        assert r.read(columns=["nn", "bo"]).column_names == ["nn", "bo"]
        assert r.read(columns=[2]).column_names == ["sm"]
        with pytest.raises(KeyError, match="no column 'nope'"):
            r.read(columns=["nope"])
        with pytest.raises(ValueError, match="twice"):
            r.read(columns=["bo", "bo"])


def test_take_and_selection_edge_cases(tmp_path):
    s = schema("a INT NOT NULL, b STRING")
    n = 5000
    table = pa.table({"a": pa.array(np.arange(n, dtype=np.int32)),
                      "b": pa.array([None if i % 7 == 0 else str(i) for i in range(n)])},
                     schema=to_arrow_schema(s))
    p = tmp_path / "t.row"
    with RowFileWriter(p, s, block_size=1000) as w:
        w.write(table.slice(0, 1234))
        w.write(table.slice(1234))
    with RowFileReader(p, s, cache_bytes=0) as r:
        assert r.num_blocks > 10
        assert r.read().equals(table)
        rng = np.random.default_rng(3)
        rows = rng.integers(0, n, 300)
        assert r.take(rows).equals(table.take(rows))
        # the lookup path (at most SMALL_TAKE rows): any order, duplicates, runs
        # within a block and across blocks, projected, cached or not
        for size in (1, 2, 5, 63, 64, 65):
            rows = rng.integers(0, n, size).tolist()
            assert r.take(rows).equals(table.take(rows)), rows
            assert r.take(rows, columns=["b"]).equals(table.select(["b"]).take(rows)), rows
        assert r.take([7, 7, 8, 7, 4999, 0]).equals(table.take([7, 7, 8, 7, 4999, 0]))
        with RowFileReader(p, s) as cached:
            for _ in range(2):      # the second time from the block cache
                assert cached.take([7, 7, 8, 7, 4999, 0]).equals(table.take([7, 7, 8, 7, 4999, 0]))
        assert r.take([]).num_rows == 0
        assert r.take([]).schema == table.schema
        assert r.read(selection=[]).num_rows == 0
        assert r.read(selection=range(n - 3, n)).column("a").to_pylist() == [n - 3, n - 2, n - 1]
        assert r.read(selection=np.array([9, 3, 3])).column("a").to_pylist() == [3, 9]
        for bad in ([n], [-1], [3, n + 7]):     # a lookup's list, checked without numpy
            with pytest.raises(rowformat.RowIndexError, match="outside"):
                r.take(bad)
        # every path names the file (issue 28, item 11)
        for call, bad in ((r.take, [-1]), (r.take, np.array([0, n])), (r.take, list(range(n + 1))),
                          (lambda s: r.read(selection=s), [n]),
                          (lambda s: r.read(selection=s), range(0, n + 1))):
            with pytest.raises(rowformat.RowIndexError, match=rf"^{re.escape(str(p))}: .*outside \[0, {n}\)"):
                call(bad)
        # row numbers of other integer types take the numpy path, to the same rows
        assert r.take([np.int64(5), np.int32(1)]).equals(table.take([5, 1]))
        assert r.take((5, 1)).equals(table.take([5, 1]))
        for bad in ([5.0], [5, 1.5], ["5"]):
            with pytest.raises(TypeError):
                r.take(bad)
        with pytest.raises(IndexError):
            r.get(n)
        assert r.get(np.int64(5)) == r.get(5) == r[5 - n]
        with pytest.raises(TypeError):
            r.get(5.0)    # not silently truncated
        with pytest.raises(IndexError):
            r.read(selection=BitMap([0, n + 5]))
        for b in range(0, n, 997):
            assert r.get(b) == (b, None if b % 7 == 0 else str(b))


def test_rows_larger_than_a_block_and_file_objects(tmp_path):
    import io
    s = schema("k INT, payload BYTES")
    big = [(i, bytes([i]) * (70_000 * (i % 3))) for i in range(7)]
    p = tmp_path / "big.row"
    with RowFileWriter(p, s) as w:
        w.write_rows(big)
    with open(p, "rb") as f, RowFileReader(f, s) as r:
        assert [r.get(i) for i in range(7)] == big
    with RowFileReader(io.BytesIO(p.read_bytes()), s) as r:
        assert r.read().to_pylist() == [{"k": k, "payload": v} for k, v in big]


def test_write_rows_accepts_dicts_and_writer_reports_count(tmp_path):
    s = schema("a INT, b ROW<x STRING, y INT>")
    p = tmp_path / "d.row"
    with RowFileWriter(p, s) as w:
        w.write_rows([{"a": 1, "b": {"x": "u", "y": 2}}, {"b": ("v", 3)}, {"a": None}])
        assert w.num_rows == 3
    with RowFileReader(p, s) as r:
        assert list(r) == [(1, {"x": "u", "y": 2}), (None, {"x": "v", "y": 3}), (None, None)]


def test_input_arrow_types_are_cast_to_the_schema(tmp_path):
    s = schema("a BIGINT, b STRING, c TIMESTAMP(3)")
    p = tmp_path / "c.row"
    t = pa.table({"c": pa.array([0, 1500], pa.timestamp("s")),
                  "b": pa.array(["x", "y"]).dictionary_encode(),
                  "a": pa.array([1, 2], pa.int8())})
    with RowFileWriter(p, s) as w:
        w.write(t)
    with RowFileReader(p, s) as r:
        assert r.read().column("c").cast(pa.int64()).to_pylist() == [0, 1500000]
        assert r.get(1) == (2, "y", dt.datetime(1970, 1, 1, 0, 25))


# -- property tests -----------------------------------------------------------

_leaf = st.sampled_from(["BOOLEAN", "TINYINT", "INT", "BIGINT", "DOUBLE", "STRING", "BYTES",
                         "DECIMAL(20, 4)", "DECIMAL(9, 3)", "DATE", "TIMESTAMP(3)", "TIMESTAMP(9)",
                         "TIME(3)"])
_types = st.recursive(_leaf, lambda inner: st.one_of(
    inner.map(lambda t: f"ARRAY<{t}>"),
    st.tuples(inner, inner).map(lambda kv: f"MAP<STRING, {kv[1]}>"),
    st.lists(inner, min_size=1, max_size=3).map(
        lambda ts: "ROW<" + ", ".join(f"f{i} {t}" for i, t in enumerate(ts)) + ">"),
), max_leaves=4)


def _values(t: pa.DataType, nullable=True):
    """A hypothesis strategy of Python values pyarrow accepts for t."""
    base = {
        pa.bool_(): st.booleans(), pa.int8(): st.integers(-128, 127),
        pa.int32(): st.integers(-2**31, 2**31 - 1), pa.int64(): st.integers(-2**63, 2**63 - 1),
        pa.float64(): st.floats(allow_nan=False), pa.string(): st.text(max_size=20),
        pa.binary(): st.binary(max_size=20), pa.date32(): st.dates(),
        pa.time32("ms"): st.times().map(lambda x: x.replace(microsecond=x.microsecond // 1000 * 1000)),
        pa.timestamp("ms"): st.datetimes(min_value=dt.datetime(1900, 1, 1)).map(
            lambda x: x.replace(microsecond=x.microsecond // 1000 * 1000)),
        pa.timestamp("ns"): st.integers(-2**62, 2**62).map(lambda v: np.datetime64(v, "ns")),
    }
    if t in base:
        s = base[t]
    elif pa.types.is_decimal(t):
        s = st.integers(-(10**t.precision - 1), 10**t.precision - 1).map(
            lambda v, sc=t.scale: Decimal(v).scaleb(-sc))
    elif pa.types.is_map(t):
        s = st.lists(st.tuples(st.text(max_size=5), _values(t.item_type)), max_size=4)
    elif pa.types.is_list(t):
        s = st.lists(_values(t.value_type), max_size=4)
    elif pa.types.is_struct(t):
        s = st.fixed_dictionaries({f.name: _values(f.type) for f in t})
    else:
        raise AssertionError(t)
    return st.one_of(st.none(), s) if nullable else s


@st.composite
def _tables(draw):
    texts = draw(st.lists(_types, min_size=1, max_size=4))
    s = schema(", ".join(f"c{i} {t}" for i, t in enumerate(texts)))
    arrow = to_arrow_schema(s)
    rows = draw(st.lists(st.tuples(*[_values(f.type) for f in arrow]), max_size=30))
    return s, rows


@given(_tables(), st.sampled_from([64, 300, 65536]))
def test_property_python_and_arrow_round_trip(tmp_path_factory, data, block_size):
    s, rows = data
    p = tmp_path_factory.mktemp("prop") / "p.row"
    with RowFileWriter(p, s, block_size=block_size) as w:
        w.write_rows(rows)
    arrow = to_arrow_schema(s)
    expected = pa.Table.from_pylist([dict(zip(s.names, r)) for r in rows], schema=arrow)
    with RowFileReader(p, s) as r:
        table = r.read()
        assert table.equals(expected)
        assert [r.get(i) for i in range(len(rows))] == [tuple(row) for row in rows]
    p2 = p.with_name("p2.row")
    with RowFileWriter(p2, s, block_size=block_size) as w:
        w.write(table)
    assert p2.read_bytes() == p.read_bytes()



def test_vector_columns_from_variable_lists(tmp_path):
    s = schema("v VECTOR<FLOAT, 3>")
    p = tmp_path / "v.row"
    lists = pa.array([[1, 2, 3], None, [4, 5, 6]], pa.list_(pa.float64()))
    with RowFileWriter(p, s) as w:
        w.write(pa.table({"v": lists}))
        with pytest.raises(rowformat.ValueConversionError, match=r"column 'v', row 4: 2 elements"):
            w.write(pa.table({"v": pa.array([[1, 2, 3], [1, 2]], pa.list_(pa.float64()))}))
    with RowFileReader(p, s) as r:
        assert r.read().column("v").to_pylist() == [[1, 2, 3], None, [4, 5, 6]]


def test_range_selection_is_a_span(tmp_path):
    s = schema("a INT")
    p = tmp_path / "r.row"
    with RowFileWriter(p, s, block_size=100) as w:
        w.write(pa.table({"a": pa.array(np.arange(1000, dtype=np.int32))}))
    with RowFileReader(p, s) as r:
        for lo, hi in [(0, 1000), (5, 6), (17, 513), (990, 1000), (400, 400)]:
            got = pa.Table.from_batches(list(r.iter_batches(selection=range(lo, hi), batch_size=64)),
                                        schema=r.arrow_schema)
            assert got.column("a").to_pylist() == list(range(lo, hi))
        with pytest.raises(rowformat.RowIndexError):
            r.read(selection=range(10, 1001))


def test_take_in_this_thread_or_on_the_pool(tmp_path):
    """take() decodes small work in the calling thread, and up to
    SCATTERED_ROWS rows by decompressing their blocks on the pool; both
    through the block cache (the blocks read are cached afterwards). A
    larger take goes to the pool's batches, which do not cache. All give
    table.take's rows, in the order asked."""
    from rowformat.row.reader import INLINE_COLD, INLINE_ROWS, SCATTERED_ROWS
    s = schema("a INT NOT NULL, b STRING")
    n = 40000
    table = pa.table({"a": pa.array(np.arange(n, dtype=np.int32)),
                      "b": pa.array([None if i % 5 == 0 else "x" * (i % 13) for i in range(n)])},
                     schema=to_arrow_schema(s))
    p = tmp_path / "t.row"
    with RowFileWriter(p, s, block_size=2000) as w:
        w.write(table)
    rng = np.random.default_rng(11)
    with RowFileReader(p, s, threads=2) as r:
        starts = r.block_index.row_starts
        assert r.num_blocks > 20

        def cases():
            block = rng.integers(0, r.num_blocks - INLINE_COLD - 1)
            lo, hi = int(starts[block]), int(starts[block + INLINE_COLD])
            # inline: many rows, unsorted, duplicated, within INLINE_COLD blocks
            yield rng.integers(lo, hi, 700), True
            yield np.sort(rng.integers(lo, hi, INLINE_ROWS)), True
            # the pool: too many rows, or too many blocks to decompress
            yield rng.integers(lo, hi, INLINE_ROWS + 1), True
            yield rng.integers(0, n, 200), True
            yield rng.integers(0, n, SCATTERED_ROWS + 1), False
        for rows, cached in cases():
            r.clear_cache()
            for columns in (None, ["b"]):
                want = table.take(rows) if columns is None else table.select(columns).take(rows)
                assert r.take(rows, columns=columns).equals(want)
            assert (r._store.cache.nbytes > 0) == cached, (len(rows), cached)
        # once its blocks are cached, a take over many blocks is small work too
        rows = rng.integers(0, n, 300)
        for b in range(r.num_blocks):
            r.block(b)
        assert r.take(rows).equals(table.take(rows))


LOW_MS = (dt.datetime(1, 1, 1) - dt.datetime(1970, 1, 1)) // dt.timedelta(milliseconds=1)
HIGH_MS = (dt.datetime(9999, 12, 31, 23, 59, 59, 999000) - dt.datetime(1970, 1, 1)) // dt.timedelta(milliseconds=1)


@given(st.lists(st.integers(LOW_MS, HIGH_MS), min_size=1, max_size=50))
def test_property_timestamps_become_the_same_datetimes_as_python_computes(tmp_path_factory, ms):
    # get() builds datetimes from calendar fields in C: compare with Python's own arithmetic
    path = tmp_path_factory.mktemp("ts") / "t.row"
    s = schema("t TIMESTAMP(3), l TIMESTAMP(3) WITH LOCAL TIME ZONE")
    arr = pa.array(ms, pa.int64())
    with RowFileWriter(path, s) as w:
        w.write(pa.table({"t": arr.cast(pa.timestamp("ms")), "l": arr.cast(pa.timestamp("ms", tz="UTC"))}))
    with RowFileReader(path, s) as r:
        for i, k in enumerate(ms):
            want = dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=k)
            assert r.get(i) == (want, want.replace(tzinfo=UTC))


@pytest.mark.parametrize("ms", [LOW_MS - 1, HIGH_MS + 1, -2**63, 2**63 - 1])
def test_timestamps_outside_python_datetimes_name_the_value(tmp_path, ms):
    path = tmp_path / "t.row"
    s = schema("t TIMESTAMP(3)")
    with RowFileWriter(path, s) as w:
        w.write(pa.table({"t": pa.array([ms], pa.int64()).cast(pa.timestamp("ms"))}))
    with RowFileReader(path, s) as r:
        assert r.read().column("t").cast(pa.int64()).to_pylist() == [ms]   # Arrow holds it
        with pytest.raises(rowformat.CorruptFileError, match=f"TIMESTAMP {ms} ms .*outside years 1..9999"):
            r.get(0)


def test_metadata_without_a_schema_and_the_schema_of_a_projection(tmp_path):
    path = tmp_path / "m.row"
    with rowformat.RowFileWriter(path, "a INT, b STRING, c ARRAY<BIGINT>", block_size=64) as w:
        w.write_rows([(i, str(i), [i]) for i in range(50)])
    meta = rowformat.read_metadata(path)
    with rowformat.RowFileReader(path, "a INT, b STRING, c ARRAY<BIGINT>") as r:
        assert (meta.name, meta.size) == (str(path), path.stat().st_size)
        assert meta.footer == r.footer and meta.footer.total_rows == 50
        assert meta.block_index.row_starts.tolist() == r.block_index.row_starts.tolist()
        for columns in (None, ["c", "a"], [1]):
            assert r.projected_schema(columns) == r.read(columns=columns).schema
    with pytest.raises(rowformat.CorruptFileError, match="m.row"):
        path.write_bytes(path.read_bytes()[:-3])
        rowformat.read_metadata(path)
