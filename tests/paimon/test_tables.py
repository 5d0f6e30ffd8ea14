"""Tables written with acceleration read by stock pypaimon, and the other way
round, to equal rows: every type, partitions, fixed buckets, primary keys with
updates and deletes, schema evolution, projection, filters and row ranges."""
import pyarrow as pa
import pytest

import rowformat.paimon as rp

from ._tables import (STOCK_TIMESTAMPS, needs_row_kinds, needs_stock_timestamps, read, sort,
                      typed_table, write)

N = 3000   # several 64 KiB blocks per file for the typed table


def _write_then_read_both_ways(wh, name, data, *, reads=None, **create):
    """Writes ``data`` in two commits to a stock table and an accelerated one;
    returns {(writer, reader): table} for all four combinations."""
    half = data.num_rows // 2
    parts = [data.slice(0, half), data.slice(half)]
    for mode in ("stock", "fast"):
        t = wh.create(f"{name}_{mode}", data.schema, **create)
        for part in parts:
            if mode == "fast":
                with rp.accelerated():
                    write(t, part)
            else:
                write(t, part)
    out = {}
    reads = reads or (lambda t: read(t))
    for wmode in ("stock", "fast"):
        out[(wmode, "stock")] = reads(wh.table(f"{name}_{wmode}"))
        with rp.accelerated():
            out[(wmode, "fast")] = reads(wh.table(f"{name}_{wmode}"))
    return out


def _assert_all_equal(results, expected=None, keys=("id",)):
    ref = sort(results[("stock", "stock")], *keys)
    if expected is not None:
        # (a primary-key table's key columns come back NOT NULL)
        assert ref.to_pydict() == sort(expected, *keys).to_pydict()
    for combo, t in results.items():
        assert t.schema.equals(ref.schema), combo
        assert sort(t, *keys).equals(ref), combo


def test_every_type_both_ways(wh):
    data = typed_table(N)
    results = _write_then_read_both_ways(wh, "types", data)
    _assert_all_equal(results)
    assert results[("fast", "fast")].num_rows == N
    # the values, not only the agreement: what was written comes back
    got = sort(results[("fast", "stock")])
    for name in data.column_names:
        assert got.column(name).to_pylist() == data.column(name).to_pylist(), name


@needs_stock_timestamps
def test_full_precision_timestamps_written_fast_read_exactly_by_both(wh):
    # pypaimon's own writer rounds these (see typed_table); both readers are exact
    data = typed_table(N, seed=1, whole_seconds=False).select(["id", "ts3", "ts6", "ts9", "ltz"])
    t = wh.create("tsfull", data.schema)
    with rp.accelerated():
        write(t, data)
        fast = sort(read(t))
    assert sort(read(t)).equals(sort(data))
    assert fast.equals(sort(data))


def test_partitions_and_fixed_buckets(wh):
    n = 5000
    data = pa.table({"id": pa.array(range(n), pa.int64()),
                     "region": [["eu", "us", "ap"][i % 3] for i in range(n)],
                     "day": pa.array([i % 4 for i in range(n)], pa.int32()),
                     "v": [f"value {i}" for i in range(n)]})
    results = _write_then_read_both_ways(wh, "parts", data, partition_keys=["region", "day"],
                                         primary_keys=["id", "region", "day"],
                                         options={"bucket": 3})
    _assert_all_equal(results, data)
    assert len(wh.data_files("parts_fast")) >= 12 * 2


def test_append_table_fixed_buckets(wh):
    n = 4000
    data = pa.table({"id": pa.array(range(n), pa.int64()), "k": [i % 11 for i in range(n)]})
    results = _write_then_read_both_ways(wh, "abucket", data, options={"bucket": 4, "bucket-key": "k"})
    _assert_all_equal(results, data)


@needs_row_kinds
def test_primary_keys_updates_and_deletes_merge_as_stock(wh):
    n = 3000
    first = pa.table({"id": pa.array(range(n), pa.int64()),
                      "v": [f"v{i}" for i in range(n)],
                      "x": pa.array([float(i) for i in range(n)]),
                      "op": ["+I"] * n})
    upd = [i for i in range(0, n, 3)]
    dele = [i for i in range(1, n, 7)]
    second = pa.table({"id": pa.array(upd + dele, pa.int64()),
                       "v": [f"u{i}" for i in upd] + [None] * len(dele),
                       "x": pa.array([-float(i) for i in upd] + [None] * len(dele)),
                       "op": ["+U"] * len(upd) + ["-D"] * len(dele)})
    tables = {}
    for mode in ("stock", "fast"):
        t = wh.create(f"pk_{mode}", first.schema, primary_keys=["id"],
                      options={"bucket": 2, "rowkind.field": "op"})
        with rp.accelerated() if mode == "fast" else _nothing():
            write(t, first)
            write(t, second)
        tables[mode] = t
    results = {}
    for wmode, t in tables.items():
        results[(wmode, "stock")] = read(t)
        with rp.accelerated():
            results[(wmode, "fast")] = read(t)
    _assert_all_equal(results)
    got = sort(results[("fast", "fast")])
    deleted = set(dele)   # a key updated and then deleted in one commit: the delete is later
    assert got.num_rows == n - len(deleted)
    rows = dict(zip(got.column("id").to_pylist(), got.column("v").to_pylist()))
    assert rows[0] == "u0" and rows[2] == "v2"
    assert not deleted & set(rows)


def test_schema_evolution_added_column(wh):
    from pypaimon.schema.data_types import AtomicType
    from pypaimon.schema.schema_change import SchemaChange

    before = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "v": ["a", "b", "c"]})
    after = pa.table({"id": pa.array([4, 5], pa.int64()), "v": ["d", "e"], "w": [1.5, None]})
    results = {}
    for mode in ("stock", "fast"):
        name = f"evo_{mode}"
        t = wh.create(name, before.schema)
        with rp.accelerated() if mode == "fast" else _nothing():
            write(t, before)
            wh.catalog.alter_table(f"db.{name}", [SchemaChange.add_column("w", AtomicType("DOUBLE"))])
            write(wh.table(name), after)
        t = wh.table(name)
        results[(mode, "stock")] = read(t)
        with rp.accelerated():
            results[(mode, "fast")] = read(t)
            # a projection naming the new column only, and one with it first
            assert sort(read(t, ["w", "id"])).equals(
                sort(results[(mode, "fast")].select(["w", "id"])))
    _assert_all_equal(results)
    assert sort(results[("fast", "fast")]).column("w").to_pylist() == [None, None, None, 1.5, None]


@pytest.mark.parametrize("pk", [False, True])
def test_projection_and_filters_equal_stock(wh, pk):
    data = typed_table(2000, seed=3)
    create = {"primary_keys": ["id"], "options": {"bucket": 2}} if pk else {}
    t = wh.create("pf", data.schema, **create)
    with rp.accelerated():
        write(t, data.slice(0, 1000))
    write(t, data.slice(1000))

    cases = [
        (["s", "id"], None),
        # (TIMESTAMP(0) where stock pypaimon reads it right: see needs_stock_timestamps)
        (["d_big", "ts0" if STOCK_TIMESTAMPS else "ts3", "id"],
         lambda pb: pb.greater_than("id", 1500)),
        (None, lambda pb: pb.is_null("i32")),
        (["id", "s", "i16"], lambda pb: pb.and_predicates([pb.greater_or_equal("i16", 0),
                                                    pb.is_not_null("s")])),
        (["id"], lambda pb: pb.equal("id", 10**9)),           # nothing matches
        (["flag", "id"], lambda pb: pb.is_in("id", [1, 5, 1999])),
    ]
    for projection, predicate in cases:
        stock = read(t, projection, predicate)
        with rp.accelerated():
            fast = read(t, projection, predicate)
        assert fast.schema.equals(stock.schema), projection
        assert sort(fast).equals(sort(stock)), (projection, predicate)


def test_row_ranges_use_row_indices_and_equal_stock(wh, monkeypatch):
    from pypaimon.read.table_scan import TableScan
    if not hasattr(TableScan, "with_row_ranges"):
        pytest.skip("this pypaimon's TableScan has no with_row_ranges (2.1.0 added it)")
    from pypaimon.globalindex import Range

    n = 10000
    data = pa.table({"id": pa.array(range(n), pa.int64()), "v": [str(i) for i in range(n)]})
    t = wh.create("rr", data.schema, options={"row-tracking.enabled": "true",
                                                "data-evolution.enabled": "true"})
    write(t, data)
    with rp.accelerated():
        write(t, data)
    ranges = [Range(3, 7), Range(4000, 4100), Range(9999, 10002), Range(19990, 19999)]

    def scan(s):
        return s.with_row_ranges(ranges)
    stock = read(t, scan=scan)
    seen = []
    with rp.accelerated():
        import pypaimon.read.split_read as split_read
        cls = split_read.FormatRowReader
        orig_init = cls.__init__

        def spy(self, *a, **kw):
            seen.append(kw.get("row_indices"))
            orig_init(self, *a, **kw)
        monkeypatch.setattr(cls, "__init__", spy)
        fast = read(t, scan=scan)
    assert seen and all(s is not None for s in seen)
    assert fast.equals(stock)
    assert fast.num_rows == 5 + 101 + 4 + 10


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
