"""Row lookups inside Spark: by (file, row number) (mapInArrow and
arrow_udf) and by _ROW_ID of a row-tracking Paimon table."""
import os

import numpy as np
import pyarrow as pa
import pytest

import rowformat
from rowformat.spark import lookups as lk
from rowformat.paimon import tables as tb

FORMAT = "paimon-row"
SCHEMA = "id BIGINT NOT NULL, name STRING, tags ARRAY<STRING>"


def expected(i):
    return (i, None if i % 5 == 0 else f"n{i}", [f"t{i}", None] if i % 2 else [])


@pytest.fixture(scope="module")
def table(spark, tmp_path_factory):
    """An append table written by Spark (2 data files), and (file, row) -> id."""
    path = str(tmp_path_factory.mktemp("lk") / "table")
    rows = [expected(i) for i in range(2000)]
    spark.createDataFrame(rows, "id long not null, name string, tags array<string>") \
        .repartition(2).write.format(FORMAT).mode("append").save(path)
    # (file, row) -> id, straight from the files
    bucket = os.path.join(path, "bucket-0")
    where = {}
    for name in os.listdir(bucket):
        with rowformat.RowFileReader(os.path.join(bucket, name), SCHEMA) as r:
            for k, i in enumerate(r.read(["id"]).column(0).to_pylist()):
                where[(os.path.join(bucket, name), k)] = i
    assert len({f for f, _ in where}) == 2
    return path, where


def requests(where, n=300):
    keys = sorted(where)[::7][:n]
    keys = keys[::-1] + keys[:5]                   # reversed order and duplicates
    return keys + [(None, 3), (keys[0][0], None)]  # null path, null row


def test_lookup_map_in_arrow(spark, table):
    path, where = table
    keys = requests(where)
    df = spark.createDataFrame(keys, "f string, r long")
    out = lk.lookup(df, "f", "r", ["name", "tags", "id"], schema=path)
    assert out.columns == ["f", "r", "name", "tags", "id"]
    got = [tuple(r) for r in out.collect()]
    want = [(f, r) + ((None, None, None) if f is None or r is None else
                      (lambda e: (e[1], e[2], e[0]))(expected(where[(f, r)])))
            for f, r in keys]
    assert got == want


def test_lookup_schema_from_the_data_and_prefix(spark, table):
    path, where = table
    keys = requests(where, 20)[:20]
    df = spark.createDataFrame(keys, "_file string, id long")
    with pytest.raises(Exception, match=r"columns \['id'\] exist in the input; pass prefix="):
        lk.lookup(df, "_file", "id")
    out = lk.lookup(df, "_file", "id", prefix="hit_")     # schema: the file's table
    assert out.columns == ["_file", "id", "hit_id", "hit_name", "hit_tags"]
    assert [tuple(r)[2:] for r in out.collect()] == [expected(where[k]) for k in keys]


def test_lookup_after_read_with_row_numbers(spark, table):
    path, _ = table
    # The table's data files read as bare .row files, with their row numbers.
    hits = spark.read.format(FORMAT).option("paimonSchema", SCHEMA).option("rowNumbers", "true") \
        .load(os.path.join(path, "bucket-0")).where("id % 97 = 3").select("_file", "_row", "id")
    out = lk.lookup(hits, "_file", "_row", ["id", "name"], prefix="x_")
    rows = out.collect()
    assert len(rows) == len([i for i in range(2000) if i % 97 == 3])
    assert all(r.x_id == r.id and r.x_name == expected(r.id)[1] for r in rows)


def test_lookup_udf_column_wise(spark, table):
    path, where = table
    keys = requests(where, 50)
    df = spark.createDataFrame(keys, "f string, r long")
    fetch = lk.lookup_udf(["name", "id"], schema=path)
    got = [r.hit for r in df.select(fetch("f", "r").alias("hit")).collect()]
    assert [None if h is None else (h.name, h.id) for h in got] == [
        None if f is None or r is None else (expected(where[(f, r)])[1], where[(f, r)])
        for f, r in keys]


def test_lookup_errors(spark, table):
    path, where = table
    f = next(iter(where))[0]
    df = spark.createDataFrame([(f, 10**6)], "f string, r long")
    # the error names the file looked into (issue 28, item 11)
    with pytest.raises(Exception, match=rf"{os.path.basename(f)}: row_numbers contains row "
                                        rf"1000000, outside \[0, \d+\)"):
        lk.lookup(df, "f", "r", schema=path).collect()
    bad = spark.createDataFrame([(f, -1)], "f string, r long")
    with pytest.raises(Exception, match=rf"{os.path.basename(f)}: row_numbers contains row -1"):
        bad.select(lk.lookup_udf(["id"], schema=path)("f", "r")).collect()
    with pytest.raises(rowformat.SchemaError, match="no column 'nope'"):
        lk.lookup(df, "f", "r", ["nope"], schema=path)


def test_reader_cache_is_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(lk, "MAX_OPEN_READERS", 2)
    lk.clear_readers()
    paths = []
    for k in range(3):
        p = str(tmp_path / f"f{k}.row")
        with rowformat.RowFileWriter(p, "v INT") as w:
            w.write_rows([(k,), (k + 10,)])
        paths.append(p)
    before = dict(lk.stats)
    fetcher = lk.Fetcher(rowformat.schema("v INT"), ["v"], _spark_json("v int"))
    got = fetcher.fetch(pa.array([paths[0], paths[1], paths[0], paths[2], None]),
                        pa.array([1, 0, 0, 1, 0]))
    assert got[0].to_pylist() == [10, 1, 0, 12, None]
    assert lk.stats["opened"] - before["opened"] == 3
    assert lk.stats["evicted"] - before["evicted"] == 1
    assert len(lk._readers) == 2
    fetcher.fetch(pa.array([paths[2]]), pa.array([0]))         # still open: cached
    assert lk.stats["opened"] - before["opened"] == 3
    lk.clear_readers()


def test_each_touched_block_is_decompressed_once_per_task(spark, tmp_path, monkeypatch):
    """A task's batches are looked up together, grouped by file and block:
    rows spread over batches in any order decompress each block they touch
    once, even when the reader's block cache cannot hold them, for both
    the mapInArrow and the arrow_udf (iterator) functions."""
    path = str(tmp_path / "blocks.row")
    with rowformat.RowFileWriter(path, "v INT", block_size=1 << 10) as w:
        w.write_rows([(i,) for i in range(20000)])
    monkeypatch.setattr(lk, "READER_CACHE_BYTES", 0)          # no help from the cache
    fetcher = lk.Fetcher(rowformat.schema("v INT"), ["v"], _spark_json("v int"))
    wanted = [19999, 5, 10003, 6, 19998, 10004, 7, 0]          # 3 blocks, back and forth
    batches = [pa.record_batch({"f": pa.array([path] * 2), "r": pa.array(wanted[i:i + 2])})
               for i in range(0, len(wanted), 2)]
    for run in (lk.LookupBatches(fetcher, lk.PathAndRow("f", "r"), ["v"]),
                lambda bs: lk.LookupColumn(fetcher)((b.column(0), b.column(1)) for b in bs)):
        lk.clear_readers()
        out = list(run(iter(batches)))
        values = [v for b in out for v in (b.column("v") if isinstance(b, pa.RecordBatch)
                                           else b.field("v")).to_pylist()]
        assert values == wanted and [len(b) for b in out] == [2, 2, 2, 2]
        reader = lk.open_reader(path, fetcher.schema)
        blocks = {b for b in np.searchsorted(reader.block_index.row_starts, wanted, "right")}
        assert reader.num_blocks > 20 and len(blocks) == 3
        assert reader.decompressions == 3
    monkeypatch.setattr(lk, "WINDOW_ROWS", 2)                 # batch by batch: more
    lk.clear_readers()
    list(lk.LookupBatches(fetcher, lk.PathAndRow("f", "r"), ["v"])(iter(batches)))
    assert lk.open_reader(path, fetcher.schema).decompressions > 3
    lk.clear_readers()


@pytest.fixture(scope="module")
def tracked(spark, tmp_path_factory):
    """A row-tracking append table: two appends by Spark, 4 data files."""
    path = str(tmp_path_factory.mktemp("rid") / "tracked")
    for lo, hi in ((0, 1200), (1200, 2000)):
        spark.createDataFrame([expected(i) for i in range(lo, hi)],
                              "id long not null, name string, tags array<string>") \
            .repartition(2).write.format(FORMAT).option("paimon.row-tracking.enabled", "true") \
            .mode("append").save(path)
    return path


def test_read_with_row_ids(spark, tracked):
    df = spark.read.format(FORMAT).option("rowIds", "true").load(tracked)
    assert df.columns == ["id", "name", "tags", "_ROW_ID"]
    got = df.select("_ROW_ID").collect()
    assert sorted(r[0] for r in got) == list(range(2000))     # dense: 0 .. n-1
    with pytest.raises(Exception, match="row-tracking"):
        spark.read.format(FORMAT).option("rowIds", "true").load(_untracked(spark, tracked))


def _untracked(spark, tracked):
    path = tracked + "-plain"
    if not tb.is_table(path):
        spark.range(3).write.format(FORMAT).mode("append").save(path)
    return path


def test_lookup_by_row_id_equals_a_filtered_read(spark, tracked):
    full = spark.read.format(FORMAT).option("rowIds", "true").load(tracked)
    by_id = {r["_ROW_ID"]: (r.id, r.name, r.tags) for r in full.collect()}
    ids = list(range(0, 2000, 37))[::-1] + [5, 5, 1999, 2000, 10**9, -1, None]
    df = spark.createDataFrame([(i,) for i in ids], "_ROW_ID long").repartition(3)
    out = lk.lookup_row_ids(df, tracked, ["id", "name", "tags"], prefix="hit_")
    assert out.columns == ["_ROW_ID", "hit_id", "hit_name", "hit_tags"]
    got = {}
    for r in out.collect():
        got.setdefault(r[0], set()).add((r.hit_id, r.hit_name, tuple(r.hit_tags or ()) if
                                         r.hit_tags is not None else None))
    for i in ids:
        want = by_id.get(i)
        want = (None, None, None) if want is None else \
            (want[0], want[1], tuple(want[2]) if want[2] is not None else None)
        assert got[i] == {want}, i
    # The same through a filtered full read.
    wanted = [i for i in ids if i is not None and 0 <= i < 2000]
    filtered = full.where(full["_ROW_ID"].isin(wanted)).select("_ROW_ID", "id", "name").collect()
    assert {(r[0], r.id, r.name) for r in filtered} == \
        {(i, by_id[i][0], by_id[i][1]) for i in wanted}
    # Errors: no such column, a table without row tracking.
    with pytest.raises(rowformat.SchemaError, match="no column 'rid'"):
        lk.lookup_row_ids(df.withColumnRenamed("_ROW_ID", "x"), tracked, row_id_col="rid")
    with pytest.raises(rowformat.SchemaError, match="row-tracking"):
        lk.lookup_row_ids(df, _untracked(spark, tracked))


def test_row_id_router_routes_ranges():
    router = tb.RowIdRouter([10, 0, 25], [15, 10, 5], ["b", "a", "c"])
    paths, rows = router.route(pa.array([0, 9, 10, 24, 25, 29, 30, -1, None], pa.int64()))
    assert paths.to_pylist() == ["a", "a", "b", "b", "c", "c", None, None, None]
    assert rows.to_pylist() == [0, 9, 0, 14, 0, 4, None, None, None]
    empty = tb.RowIdRouter([], [], [])
    assert empty.route(pa.array([0, None], pa.int64()))[0].to_pylist() == [None, None]


def _spark_json(ddl):
    from pyspark.sql.types import _parse_datatype_string
    return _parse_datatype_string(ddl).json()


def test_lookup_is_a_function_whose_help_shows_its_parameters():
    import inspect
    import rowformat.spark
    from rowformat.spark import lookup
    assert inspect.isfunction(lookup) and lookup is rowformat.spark.lookup
    assert list(inspect.signature(lookup).parameters)[:4] == ["df", "path_col", "row_col",
                                                              "columns"]
    import rowformat.spark.lookups    # importing the module leaves the function in place
    assert inspect.isfunction(rowformat.spark.lookup)


# ---------------------------------------------------------------- the driver path

def _plan(df) -> str:
    return df._jdf.queryExecution().optimizedPlan().toString()


def _is_local(df) -> bool:
    plan = _plan(df)
    assert ("MapInArrow" in plan) != ("LocalRelation" in plan), plan
    return "LocalRelation" in plan


MIXED = ("f string, r long, ts timestamp, d date, dec decimal(20, 4), "
         "m map<string, int>, s struct<a: int, b: array<string>>, k int not null")


def _mixed_input(spark, keys):
    import datetime
    import decimal
    rows = [(f, r, datetime.datetime(2024, 1, 1 + k % 27, 3, 4, 5, 6 * k),
             datetime.date(2020, 2, 1 + k % 28), decimal.Decimal(k) / 7,
             {"x": k} if k % 3 else None, (k, [str(k), None]) if k % 4 else None, k)
            for k, (f, r) in enumerate(keys)]
    return spark.createDataFrame(rows, MIXED)     # 2 partitions, a stable order


def test_driver_and_distributed_lookups_agree(spark, table):
    """Few rows are looked up on the driver (a DataFrame of local data);
    the result equals the distributed one's: values, nulls, every input
    column and type, the schema, the order of the input rows."""
    path, where = table
    df = _mixed_input(spark, requests(where, 200))
    dist = lk.lookup(df, "f", "r", ["tags", "id", "name"], schema=path, prefix="h_",
                     local_max_rows=0)
    # a DataFrame of a Python list: Spark's statistics do not know its size,
    # so only an explicit local_max_rows collects it
    assert not _is_local(lk.lookup(df, "f", "r", ["id"], schema=path))
    local = lk.lookup(df, "f", "r", ["tags", "id", "name"], schema=path, prefix="h_",
                      local_max_rows=1000)
    assert not _is_local(dist) and _is_local(local)
    assert local.schema == dist.schema
    assert local.collect() == dist.collect()
    got = local.collect()
    assert [r.h_id for r in got] == [None if f is None or r is None else where[(f, r)]
                                     for f, r in ((x.f, x.r) for x in got)]
    # the schema taken from the data works on both paths
    for lm in (0, None):
        out = lk.lookup(df.select("f", "r"), "f", "r", ["id"], local_max_rows=lm and 1000)
        assert [x.id for x in out.collect()] == [x.h_id for x in got]


def test_driver_and_distributed_row_id_lookups_agree(spark, tracked):
    ids = list(range(0, 2000, 37))[::-1] + [5, 5, 1999, 2000, 10**9, -1, None]
    df = spark.createDataFrame([(i, f"q{i}") for i in ids], "_ROW_ID long, q string") \
        .repartition(3).cache()     # cached and counted: Spark's statistics know its size
    df.count()
    dist = lk.lookup_row_ids(df, tracked, ["name", "id", "tags"], prefix="hit_",
                             local_max_rows=0)
    local = lk.lookup_row_ids(df, tracked, ["name", "id", "tags"], prefix="hit_")
    assert not _is_local(dist) and _is_local(local)
    assert local.schema == dist.schema
    assert local.collect() == dist.collect()
    assert [r.hit_id for r in local.collect() if r[0] in (2000, 10**9, -1, None)] == [None] * 4
    empty = df.where("_ROW_ID > 10000000000")
    for lm in (0, None):
        out = lk.lookup_row_ids(empty, tracked, ["id"], local_max_rows=lm)
        assert out.collect() == [] and out.columns == ["_ROW_ID", "q", "id"]


def test_driver_path_threshold(spark, tracked, monkeypatch):
    df = spark.range(50).withColumnRenamed("id", "_ROW_ID").repartition(2)
    assert _is_local(lk.lookup_row_ids(df, tracked, ["id"], local_max_rows=50))
    assert not _is_local(lk.lookup_row_ids(df, tracked, ["id"], local_max_rows=49))
    monkeypatch.setattr(lk, "LOCAL_MAX_ROWS", 49)                # the default
    assert not _is_local(lk.lookup_row_ids(df, tracked, ["id"]))
    monkeypatch.setattr(lk, "LOCAL_MAX_ROWS", 50)
    local = lk.lookup_row_ids(df, tracked, ["id"])
    assert _is_local(local)
    # an input the plan's statistics call big is not collected at all (no job)
    monkeypatch.setattr(lk, "LOCAL_MAX_BYTES", 8)
    with monkeypatch.context() as m:
        m.setattr(type(df), "toArrow", lambda self: pytest.fail("collected"))
        m.setattr(type(df), "limit", lambda self, n: pytest.fail("collected"))
        out = lk.lookup_row_ids(df, tracked, ["id"])
    assert not _is_local(out)
    assert sorted(out.collect()) == sorted(local.collect())
    # a size the statistics do not know: collected (at most n + 1 rows) only when asked
    listed = spark.createDataFrame([(i,) for i in range(50)], "_ROW_ID long")
    assert not _is_local(lk.lookup_row_ids(listed, tracked, ["id"]))
    assert _is_local(lk.lookup_row_ids(listed, tracked, ["id"], local_max_rows=50))
    assert not _is_local(lk.lookup_row_ids(listed, tracked, ["id"], local_max_rows=49))


@pytest.mark.parametrize("local_max_rows", [0, 10])
def test_lookup_errors_on_both_paths(spark, table, local_max_rows):
    path, where = table
    f = next(iter(where))[0]
    df = spark.createDataFrame([(f, 10**6)], "f string, r long")
    with pytest.raises(Exception, match=rf"{os.path.basename(f)}: row_numbers contains row "
                                        rf"1000000, outside \[0, \d+\)"):
        out = lk.lookup(df, "f", "r", schema=path, local_max_rows=local_max_rows)
        assert _is_local(out) == bool(local_max_rows)
        out.collect()
    with pytest.raises(rowformat.SchemaError, match="no column 'nope'"):
        lk.lookup(df, "f", "r", ["nope"], schema=path, local_max_rows=local_max_rows)
