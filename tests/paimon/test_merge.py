"""The vectorized merged read of primary-key splits (rowformat.paimon._merge):
exactly stock pypaimon's rows, order and types -- every type, updates and
deletes over several commits, partitions, buckets, projections, filters,
limits, every read API -- and pypaimon's own merge wherever the result would
not provably be the same."""
import datetime as dt
import random

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rowformat.paimon as rp
from rowformat.paimon import _merge

from ._tables import (WRITES_ROW_KINDS, needs_row_kinds, needs_stock_timestamps, read,
                      supported, typed_table, write)

N = 1500


@pytest.fixture
def merges(monkeypatch):
    """What each merged split read did: "fast", or the reason it fell back."""
    seen = []
    unsupported, merged = _merge.unsupported, _merge.merged_values

    def spy_unsupported(sr):
        reason = unsupported(sr)
        if reason is not None:
            seen.append(reason)
        return reason

    def spy_merged(sr):
        try:
            out = merged(sr)
        except _merge.Fallback as e:
            seen.append(str(e))
            raise
        seen.append("fast")
        return out
    monkeypatch.setattr(_merge, "unsupported", spy_unsupported)
    monkeypatch.setattr(_merge, "merged_values", spy_merged)
    return seen


def _with_ops(t, ops):
    return t.append_column("op", pa.array(ops, pa.string()))


def _history(n, seed=0):
    """Three commits of typed rows: all keys inserted; a third of them
    updated with other values; every 7th deleted (some of them updated in the
    same commit before)."""
    first = typed_table(n, seed=seed, whole_seconds=False)
    rnd = random.Random(seed)
    upd_ids = sorted(rnd.sample(range(n), n // 3))
    upd = typed_table(n, seed=seed + 1, whole_seconds=False).take(upd_ids)
    upd = upd.set_column(0, "id", pa.array(upd_ids, pa.int64()))
    dele = first.take(list(range(0, n, 7)))
    return [_with_ops(first, ["+I"] * n),
            _with_ops(upd, ["+I"] * len(upd_ids)),
            _with_ops(dele, ["-D"] * dele.num_rows)]


def _pk_table(wh, name, commits, *, options=None, partition=True, primary_keys=("id",)):
    data = commits[0]
    if partition:
        commits = [c.append_column("p", pa.array([i % 3 for i in c.column("id").to_pylist()],
                                                 pa.int32())) for c in commits]
    create = {"primary_keys": list(primary_keys) + (["p"] if partition else []),
              "partition_keys": ["p"] if partition else None,
              "options": {"bucket": 2, "rowkind.field": "op", **(options or {})}}
    t = wh.create(name, commits[0].schema, **create)
    with rp.accelerated():          # exact timestamps (pypaimon's own writer rounds them)
        for c in commits:
            write(t, c)
    del data
    return wh.table(name)


def _both(t, fn):
    rp.restore()
    stock = fn(t)
    with rp.accelerated():
        fast = fn(t)
    return stock, fast


def _assert_same(stock, fast):
    assert fast.schema.equals(stock.schema, check_metadata=True)
    assert fast.num_rows == stock.num_rows
    assert fast.equals(stock)            # rows in the same order


def test_history_every_type_equals_stock_in_order(wh, merges):
    t = _pk_table(wh, "hist", _history(N))
    stock, fast = _both(t, read)
    _assert_same(stock, fast)
    assert set(merges) == {"fast"} and len(merges) == 6       # 3 partitions x 2 buckets
    ids = fast.column("id").to_pylist()
    deleted = set(range(0, N, 7)) if WRITES_ROW_KINDS else set()
    assert len(ids) == N - len(deleted)
    assert not deleted & set(ids)


@needs_row_kinds
def test_values_are_the_latest_version(wh, merges):
    n = 200
    first = pa.table({"id": pa.array(range(n), pa.int64()), "v": [f"a{i}" for i in range(n)],
                      "op": ["+I"] * n})
    second = pa.table({"id": pa.array([5, 6, 7], pa.int64()), "v": ["b5", None, "b7"],
                       "op": ["+I", "+I", "-D"]})
    third = pa.table({"id": pa.array([7, 6, 300], pa.int64()), "v": ["c7", "c6", "c300"],
                      "op": ["+I", "-D", "+I"]})
    t = _pk_table(wh, "latest", [first, second, third], partition=False,
                  options={"bucket": 1})
    stock, fast = _both(t, read)
    _assert_same(stock, fast)
    assert merges == ["fast"]
    got = dict(zip(fast.column("id").to_pylist(), fast.column("v").to_pylist()))
    assert got[5] == "b5" and got[7] == "c7" and got[300] == "c300" and 6 not in got
    assert fast.column("id").to_pylist() == sorted(got)
    assert len(got) == n + 1 - 1


NOW = dt.datetime(2001, 2, 3, 4, 5, 6)

FILTERS = [
    (None, lambda pb: pb.greater_than("id", 300)),
    (["s", "id", "i32"], lambda pb: pb.is_null("i32")),
    (["id", "i16", "s"], lambda pb: pb.and_predicates([pb.greater_or_equal("i16", 0),
                                                   pb.is_not_null("s")])),
    (["id", "flag", "f64"], lambda pb: pb.or_predicates([pb.less_than("f64", 0.0),
                                                  pb.equal("flag", True)])),
    (["id", "s"], lambda pb: pb.startswith("s", "é")),
    (["id", "s"], lambda pb: pb.endswith("s", "7")),
    (["id", "s"], lambda pb: pb.contains("s", "éé1")),
    (["i8", "id"], lambda pb: pb.is_in("i8", [1, 5, -3, None])),
    (["id", "i8"], lambda pb: pb.is_not_in("i8", [1, 5, -3])),
    (["id", "day"], lambda pb: pb.between("day", dt.date(1970, 1, 1), dt.date(2000, 1, 1))),
    (["id", "ts3"], lambda pb: pb.not_between("ts3", NOW - dt.timedelta(days=3000), NOW)),
    (["id", "ts6"], lambda pb: pb.less_or_equal("ts6", NOW)),
    (["bin", "id"], lambda pb: pb.not_equal("bin", b"")),
    (["id"], lambda pb: pb.equal("id", 10 ** 9)),                       # nothing
    pytest.param(["id", "ls"], lambda pb: pb.greater_than("ls", "xxxxx"),
                 marks=pytest.mark.skipif(not supported(pa.large_string()),
                                          reason="this pypaimon has no large_string columns")),
    (["f32", "id"], lambda pb: pb.less_than("f32", 3)),
]


@pytest.mark.parametrize("projection,predicate", FILTERS)
def test_projection_and_filters_equal_stock(wh, merges, projection, predicate):
    t = _pk_table(wh, "pf", _history(600, seed=2))
    stock, fast = _both(t, lambda t: read(t, projection, predicate))
    _assert_same(stock, fast)
    assert set(merges) == {"fast"} or (not merges and stock.num_rows == 0)


@pytest.mark.parametrize("predicate", [
    lambda pb: pb.like("s", "é%"),                                  # not evaluated here
    lambda pb: pb.greater_than("d_small", 0),                        # decimals: not here
    lambda pb: pb.equal("f64", float("nan")),
    # a null literal: never true in pypaimon 2.1.0, ignored by 2.0.0
    lambda pb: pb.is_not_in("i8", [1, None]),
])
def test_unsupported_filters_fall_back_and_equal_stock(wh, merges, predicate):
    t = _pk_table(wh, "uf", _history(400, seed=4))
    stock, fast = _both(t, lambda t: read(t, ["id", "s", "d_small", "f64", "i8"], predicate))
    _assert_same(stock, fast)
    assert merges and "fast" not in merges


def test_every_read_api_equals_stock(wh, merges):
    t = _pk_table(wh, "apis", _history(500, seed=5))

    ts = "ts9" if "ts9" in t.field_names else "ts6"       # (see needs_stock_timestamps)

    def reads(t):
        rb = t.new_read_builder().with_projection(["id", "s", ts])
        splits = rb.new_scan().plan().splits()
        out = {"arrow": rb.new_read().to_arrow(splits),
               "batches": rb.new_read().to_arrow_batch_reader(splits).read_all(),
               "serial": rb.new_read().to_arrow(splits, parallelism=1)}
        rows = [(r.get_row_kind(), r.get_field(0), r.get_field(1), r.get_field(2))
                for r in rb.new_read().to_iterator(splits)]
        kinds = t.new_read_builder().with_projection(["id"]).new_read()
        kinds.include_row_kind = True
        out["row_kind"] = kinds.to_arrow(splits)
        limited = t.new_read_builder().with_limit(37)
        out["limit"] = limited.new_read().to_arrow(limited.new_scan().plan().splits(),
                                                   parallelism=1)
        return out, rows
    (stock, stock_rows), (fast, fast_rows) = _both(t, reads)
    for k in stock:
        _assert_same(stock[k], fast[k])
    assert fast_rows == stock_rows and len(fast_rows) > 0
    assert fast["limit"].num_rows == 37
    assert "fast" in merges and all(m == "fast" for m in merges)


@pytest.mark.parametrize("case", ["first-row", "partial-update", "sequence-field",
                                  pytest.param("update-after", marks=needs_row_kinds),
                                  "float-key",
                                  pytest.param("ns-key", marks=needs_stock_timestamps)])
def test_what_is_not_merged_here_falls_back_and_equals_stock(wh, merges, case):
    n = 300
    commits = _history(n, seed=7)
    options, keys = {}, ("id",)
    if case in ("first-row", "partial-update"):
        options["merge-engine"] = case
        commits = [c.filter(pa.array([op == "+I" for op in c.column("op").to_pylist()]))
                   for c in commits]
    elif case == "sequence-field":
        options["sequence.field"] = "i64"
    elif case == "update-after":
        commits[1] = commits[1].set_column(commits[1].num_columns - 1, "op",
                                           pa.array(["+U"] * commits[1].num_rows))
    elif case == "float-key":
        keys = ("id", "f64")
        commits = [c.set_column(c.schema.get_field_index("f64"), "f64",
                                pa.array([float(i % 5) for i in c.column("id").to_pylist()]))
                   for c in commits]
    elif case == "ns-key":
        keys = ("id", "ts9")
        commits = [c.set_column(c.schema.get_field_index("ts9"), "ts9",
                                pa.array([i for i in c.column("id").to_pylist()],
                                         pa.timestamp("ns")))
                   for c in commits]
    t = _pk_table(wh, "fb", commits, options=options, primary_keys=keys)
    stock, fast = _both(t, read)
    _assert_same(stock, fast)
    assert "fast" not in merges
    assert merges or case == "first-row"     # (first-row reads need no merge)


@needs_stock_timestamps
def test_nanoseconds_floored_to_microseconds_as_pypaimon_does(wh):
    ts = [-1, 1, 1_999, -1_001, 123_456_789_123]
    first = pa.table({"id": pa.array(range(5), pa.int64()), "t": pa.array(ts, pa.timestamp("ns")),
                      "op": ["+I"] * 5})
    t = _pk_table(wh, "ns", [first, first], partition=False, options={"bucket": 1})
    stock, fast = _both(t, read)
    _assert_same(stock, fast)
    assert fast.column("t").cast(pa.int64()).to_pylist() == [-1000, 0, 1000, -2000, 123_456_789_000]


# -- the merge itself, on hand-made key-value tables ------------------------------------------

def _kv(keys, seqs):
    return pa.table({"_KEY_k": pa.array(keys, pa.int64()),
                     "_SEQUENCE_NUMBER": pa.array(seqs, pa.int64())})


def test_latest_per_key_picks_highest_sequence_in_key_order():
    # file 0: keys 1, 3, 5; file 1: keys 3, 4, 5 (later)
    table = _kv([1, 3, 5, 3, 4, 5], [0, 1, 2, 3, 4, 5])
    got = _merge.latest_per_key(table, 1, np.array([0, 3]))
    assert got.tolist() == [0, 3, 4, 5]


@pytest.mark.parametrize("keys,seqs,starts,why", [
    ([1, 1, 2], [0, 1, 2], [0], "strictly increase"),          # a key twice in a file
    ([2, 1], [0, 1], [0], "strictly increase"),                # an unsorted file
    ([1, 1], [4, 4], [0, 1], "same sequence number"),
])
def test_latest_per_key_refuses_what_pypaimon_would_merge_otherwise(keys, seqs, starts, why):
    with pytest.raises(_merge.Fallback, match=why):
        _merge.latest_per_key(_kv(keys, seqs), 1, np.array(starts))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(files=st.lists(st.lists(st.integers(-20, 20), unique=True, max_size=12), min_size=1,
                      max_size=5))
def test_latest_per_key_is_the_last_version_of_each_key(files):
    keys, seqs, starts, seq = [], [], [], 0
    for f in files:
        starts.append(len(keys))
        for k in sorted(f):
            keys.append(k)
            seqs.append(seq)
            seq += 1
    if not keys:
        return
    got = _merge.latest_per_key(_kv(keys, seqs), 1, np.array(starts))
    last = {}
    for i, k in enumerate(keys):
        last[k] = i
    assert got.tolist() == [last[k] for k in sorted(last)]


# -- random histories against stock ------------------------------------------------------------

@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(commits=st.lists(st.lists(st.tuples(st.integers(0, 40), st.sampled_from(["+I", "-D", "-U"]),
                                           st.one_of(st.none(), st.text(max_size=4))),
                                 min_size=1, max_size=30),
                        min_size=1, max_size=4),
       buckets=st.integers(1, 3))
def test_random_histories_equal_stock(tmp_path_factory, commits, buckets):
    from ._tables import Warehouse
    wh = Warehouse(tmp_path_factory.mktemp("wh"))
    tables = []
    for c in commits:
        last = {}
        for k, op, v in c:          # one row per key per commit (pypaimon merges within one)
            last[k] = (op, v)
        ks = sorted(last)
        tables.append(pa.table({"id": pa.array(ks, pa.int64()),
                                "v": pa.array([last[k][1] for k in ks], pa.string()),
                                "op": [last[k][0] for k in ks]}))
    t = _pk_table(wh, "rnd", tables, partition=False, options={"bucket": buckets})
    stock, fast = _both(t, read)
    _assert_same(stock, fast)


@needs_row_kinds
@pytest.mark.parametrize("fmt", ["row", "parquet"])
def test_a_written_file_counts_its_retractions_as_java(wh, fmt):
    """A key-value file holding a DELETE and an UPDATE_BEFORE records 2 in
    its delete_row_count, as Java's writer does, where stock pypaimon 2.1.0
    records 0: then its readers (and Java's) take the one-file split as
    raw-convertible and return the deleted row as live."""
    from rowformat.paimon import tables
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.int64()),
                        ("op", pa.string())])
    rows = pa.Table.from_pylist([{"id": 0, "v": None, "op": "-D"},
                                 {"id": 1, "v": 1, "op": "+I"},
                                 {"id": 2, "v": 2, "op": "-U"}], schema=schema)
    options = {"bucket": "1", "rowkind.field": "op", "write-only": "true", "file.format": fmt}
    kept = wh.create(f"accelerated_{fmt}", schema, primary_keys=["id"], options=options)
    with rp.accelerated():
        write(kept, rows)
    [split] = kept.new_read_builder().new_scan().plan().splits()
    assert [(f.row_count, f.delete_row_count) for f in split.files] == [(3, 2)]
    assert not split.raw_convertible
    # stock pypaimon reads it merged: the retractions are not rows
    assert read(tables.open_table(str(kept.table_path))).to_pylist() == [
        {"id": 1, "v": 1, "op": "+I"}]
    stock = wh.create(f"stock_{fmt}", schema, primary_keys=["id"], options=options)
    write(stock, rows)
    [split] = stock.new_read_builder().new_scan().plan().splits()
    assert [f.delete_row_count for f in split.files] == [0]         # (pypaimon's defect)
    assert split.raw_convertible and read(stock).num_rows == 3
