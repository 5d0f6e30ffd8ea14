"""Row lookups by row number inside Spark (mapInArrow and arrow_udf)."""
import pyarrow as pa
import pytest

import rowformat
from rowformat.spark import dataset as ds
from rowformat.spark import lookup as lk

FORMAT = "paimon-row"
SCHEMA = "id BIGINT NOT NULL, name STRING, tags ARRAY<STRING>"


def expected(i):
    return (i, None if i % 5 == 0 else f"n{i}", [f"t{i}", None] if i % 2 else [])


@pytest.fixture(scope="module")
def table(spark, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("lk") / "table")
    rows = [expected(i) for i in range(2000)]
    spark.createDataFrame(rows, "id long not null, name string, tags array<string>") \
        .repartition(2).write.format(FORMAT).option("blockSize", 1024).mode("append").save(path)
    # (file, row) -> id, straight from the files
    d = ds.Dataset.open(path)
    where = {}
    for e in d.files:
        with rowformat.RowFileReader(d.file_path(e.name), d.schema) as r:
            for k, i in enumerate(r.read(["id"]).column(0).to_pylist()):
                where[(d.file_path(e.name), k)] = i
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
    out = lk.lookup(df, "_file", "id", prefix="hit_")     # schema: the file's dataset
    assert out.columns == ["_file", "id", "hit_id", "hit_name", "hit_tags"]
    assert [tuple(r)[2:] for r in out.collect()] == [expected(where[k]) for k in keys]


def test_lookup_after_read_with_row_numbers(spark, table):
    path, _ = table
    hits = spark.read.format(FORMAT).option("rowNumbers", "true").load(path) \
        .where("id % 97 = 3").select("_file", "_row", "id")
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
    with pytest.raises(Exception, match=r"row 1000000, outside \[0, \d+\)"):
        lk.lookup(df, "f", "r", schema=path).collect()
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


def _spark_json(ddl):
    from pyspark.sql.types import _parse_datatype_string
    return _parse_datatype_string(ddl).json()
