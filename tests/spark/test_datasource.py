"""The paimon-row data source: partitions, projection, bare files,
selections and deletion vectors, append/overwrite, failed jobs."""
import json
import os

import pytest
from pyroaring import BitMap

import rowformat
import rowformat.spark
from rowformat.spark import dataset as ds

FORMAT = "paimon-row"
N = 3000


@pytest.fixture(scope="module")
def table(spark, tmp_path_factory):
    """N rows in 2 files with small blocks (many blocks per file)."""
    path = str(tmp_path_factory.mktemp("t") / "table")
    df = spark.range(0, N, 1, 2).selectExpr(
        "id", "case when id % 7 = 0 then null else concat('name-', id) end as name",
        "cast(id * 2 as int) as twice")
    df.write.format(FORMAT).option("blockSize", 2048).mode("overwrite").save(path)
    return path


def ids(df):
    return [r.id for r in df.collect()]


def test_registered_automatically_and_by_register(spark, table):
    # conftest never registers: pyspark_rowformat made the format known.
    assert spark.read.format(FORMAT).load(table).count() == N
    rowformat.spark.register(spark)          # the fallback is harmless
    assert spark.read.format("PAIMON-ROW").load(table).count() == N


def test_dataset_layout(table):
    d = ds.Dataset.open(table)
    assert d.num_rows == N and len(d.files) == 2
    assert str(d.schema) == "id BIGINT NOT NULL, name STRING, twice INT NOT NULL"
    with open(os.path.join(table, "schema", "schema-0")) as f:
        doc = json.load(f)
    assert doc["fields"][2] == {"id": 2, "name": "twice", "type": "INT NOT NULL"}
    assert sorted(os.listdir(table)) == sorted(["_manifest.json", "schema"] +
                                               [e.name for e in d.files])


def test_values_and_nulls(spark, table):
    rows = spark.read.format(FORMAT).load(table).orderBy("id").collect()
    assert [tuple(r) for r in rows] == [
        (i, None if i % 7 == 0 else f"name-{i}", i * 2) for i in range(N)]


@pytest.mark.parametrize("rows_per_partition", [1, 500, 10**9])
def test_partitions_are_block_ranges(spark, table, rows_per_partition):
    df = spark.read.format(FORMAT).option("rowsPerPartition", rows_per_partition).load(table)
    files = ds.Dataset.open(table).files
    blocks = []
    for e in files:
        with rowformat.RowFileReader(os.path.join(table, e.name), ds.Dataset.open(table).schema) as r:
            blocks.append(r.num_blocks)
            assert r.num_blocks > 3
    parts = df.rdd.glom().map(lambda rows: [r.id for r in rows]).collect()
    if rows_per_partition == 1:
        assert len(parts) == sum(blocks)            # one block each
    elif rows_per_partition == 10**9:
        assert len(parts) == len(files)             # one file each
    else:
        assert len(files) < len(parts) < sum(blocks)
        assert sum(len(p) < 500 for p in parts) <= len(files)     # only each file's last
    # Every row exactly once, in file order inside each partition.
    flat = [i for p in parts for i in p]
    assert sorted(flat) == list(range(N))
    assert all(p == sorted(p) for p in parts)


def test_projection_by_user_schema(spark, table):
    df = spark.read.format(FORMAT).schema("twice int, name string").load(table)
    assert df.columns == ["twice", "name"]
    rows = df.where("twice < 30").orderBy("twice").collect()
    assert [tuple(r) for r in rows] == [
        (i * 2, None if i % 7 == 0 else f"name-{i}") for i in range(15)]


def test_user_schema_errors_name_the_column(spark, table):
    with pytest.raises(Exception, match=r"column 'name' is string .*not bigint"):
        spark.read.format(FORMAT).schema("name bigint").load(table).collect()
    with pytest.raises(Exception, match=r"no column 'nope'"):
        spark.read.format(FORMAT).schema("nope int").load(table).collect()


def test_bare_file(spark, tmp_path):
    path = str(tmp_path / "bare.row")
    with rowformat.RowFileWriter(path, "k INT NOT NULL, ts TIMESTAMP(3), v STRING") as w:
        w.write_rows([(1, None, "a"), (2, None, None), (3, None, "c")])
    with pytest.raises(Exception, match="stores no schema"):
        spark.read.format(FORMAT).load(path)
    # TIMESTAMP(3) is not Spark's canonical TIMESTAMP(6): name the Paimon types.
    df = spark.read.format(FORMAT).option(
        "paimonSchema", "k INT NOT NULL, ts TIMESTAMP(3), v STRING").load(path)
    assert [tuple(r) for r in df.collect()] == [(1, None, "a"), (2, None, None), (3, None, "c")]
    plain = str(tmp_path / "plain.row")
    with rowformat.RowFileWriter(plain, "k INT, v STRING") as w:
        w.write_rows([(1, "x"), (None, "y")])
    df = spark.read.format(FORMAT).schema("k int, v string").load(plain)
    assert [tuple(r) for r in df.collect()] == [(1, "x"), (None, "y")]


def _bitmap_file(path, rows):
    with open(path, "wb") as f:
        f.write(BitMap(rows).serialize())
    return str(path)


def test_selection_and_deletion_vector_on_a_bare_file(spark, tmp_path):
    path = str(tmp_path / "f.row")
    with rowformat.RowFileWriter(path, "i BIGINT NOT NULL", block_size=256) as w:
        w.write_rows([(i,) for i in range(1000)])
    sel = _bitmap_file(tmp_path / "sel.bin", [0, 5, 6, 500, 999])
    dv = _bitmap_file(tmp_path / "dv.bin", [5, 999])

    def read():         # a new DataFrameReader each time: options accumulate on one
        return spark.read.format(FORMAT).option("paimonSchema", "i BIGINT NOT NULL")

    assert sorted(r.i for r in read().option("selection", sel).load(path).collect()) == \
        [0, 5, 6, 500, 999]
    got = read().option("selection", sel).option("deletionVector", dv).load(path)
    assert sorted(r.i for r in got.collect()) == [0, 6, 500]
    # Partitions holding no selected row are not even planned.
    assert got.rdd.getNumPartitions() < 10
    alive = read().option("deletionVector", dv).option("rowNumbers", "true").load(path)
    assert alive.count() == 998
    assert {(r.i, r._row) for r in alive.where("i in (4, 6)").collect()} == {(4, 4), (6, 6)}


def test_committed_deletion_vectors(spark, table, tmp_path):
    path = str(tmp_path / "copy")
    spark.read.format(FORMAT).load(table).write.format(FORMAT).mode("append").save(path)
    d = ds.Dataset.open(path)
    first = d.files[0]
    with rowformat.RowFileReader(d.file_path(first.name), d.schema) as r:
        doomed = [r.get(k)[0] for k in (0, 1, 10)]
    ds.set_deletion_vectors(path, {first.name: BitMap([0, 1, 10])})
    left = ids(spark.read.format(FORMAT).load(path))
    assert sorted(left) == sorted(set(range(N)) - set(doomed))
    # Per-file JSON option on top of the committed vectors: a selection.
    sel = _bitmap_file(tmp_path / "sel.bin", [0, 2, 3])
    got = spark.read.format(FORMAT).option("selection", json.dumps({first.name: sel})) \
        .option("rowNumbers", "true").load(path).where(f"_file like '%{first.name}'")
    assert sorted(r._row for r in got.collect()) == [2, 3]
    ds.set_deletion_vectors(path, {first.name: None})
    assert spark.read.format(FORMAT).load(path).count() == N
    assert not [n for n in os.listdir(path) if n.startswith("dv-")]


def test_append_and_overwrite(spark, tmp_path):
    path = str(tmp_path / "ao")
    spark.range(10).selectExpr("id", "'a' as s").write.format(FORMAT).mode("append").save(path)
    spark.range(10, 15).selectExpr("id", "'b' as s").write.format(FORMAT).mode("append").save(path)
    df = spark.read.format(FORMAT).load(path)
    assert [tuple(r) for r in df.orderBy("id").collect()] == \
        [(i, "a") for i in range(10)] + [(i, "b") for i in range(10, 15)]
    assert ds.Dataset.open(path).snapshot == 2
    old_files = {e.name for e in ds.Dataset.open(path).files}

    # Appending another schema fails and changes nothing.
    with pytest.raises(Exception, match="column 's' is string .*not bigint"):
        spark.range(3).selectExpr("id", "id as s").write.format(FORMAT).mode("append").save(path)
    assert spark.read.format(FORMAT).load(path).count() == 15

    # Overwrite replaces the rows (and here the schema too).
    spark.range(3).selectExpr("id", "id * 1.5 as x").write.format(FORMAT) \
        .mode("overwrite").save(path)
    d = ds.Dataset.open(path)
    assert str(d.schema) == "id BIGINT NOT NULL, x DECIMAL(23, 1) NOT NULL" and d.schema_id == 1
    assert [tuple(r) for r in spark.read.format(FORMAT).load(path).orderBy("id").collect()] == \
        [(0, 0), (1, 1.5), (2, 3)]
    assert not old_files & set(os.listdir(path))          # unreferenced files removed

    # An empty overwrite leaves an empty dataset that still has its schema.
    spark.range(0).selectExpr("id", "id * 1.5 as x").write.format(FORMAT) \
        .mode("overwrite").save(path)
    back = spark.read.format(FORMAT).load(path)
    assert back.count() == 0 and back.columns == ["id", "x"]


def test_a_failing_task_leaves_the_dataset_unchanged(spark, tmp_path):
    from pyspark.sql.functions import udf

    path = str(tmp_path / "fail")
    spark.range(0, 100, 1, 2).write.format(FORMAT).mode("append").save(path)
    with open(os.path.join(path, ds.MANIFEST), "rb") as f:
        manifest = f.read()
    listing = sorted(os.listdir(path))

    @udf("long")
    def explode_at_150(i):
        if i == 150:
            raise ValueError("boom at 150")
        return i

    bad = spark.range(100, 200, 1, 2).select(explode_at_150("id").alias("id"))
    with pytest.raises(Exception, match="boom at 150"):
        bad.write.format(FORMAT).mode("append").save(path)
    with open(os.path.join(path, ds.MANIFEST), "rb") as f:
        assert f.read() == manifest
    assert sorted(r.id for r in spark.read.format(FORMAT).load(path).collect()) == list(range(100))
    # The other task may finish after the abort; its file is discarded, and
    # vacuum() removes whatever such late tasks left in _temporary.
    ds.vacuum(path)
    assert sorted(n for n in os.listdir(path) if n != ds.TEMPORARY) == listing
    tmp = os.path.join(path, ds.TEMPORARY)
    # Only the job's tombstone is left (kept a while for tasks still running).
    assert all(n.startswith(ds.ABORTED_PREFIX) for n in os.listdir(tmp))


def test_abort_tombstone_and_vacuum(tmp_path):
    path = str(tmp_path / "v")
    os.makedirs(ds.temporary_dir(path, "job1"))
    ds.abort(path, "job1")
    assert ds.job_aborted(path, "job1")
    # A late task of job1 recreates its directory and leaves a file: vacuum removes it.
    os.makedirs(ds.temporary_dir(path, "job1"))
    open(os.path.join(ds.temporary_dir(path, "job1"), "part-0.row"), "wb").close()
    os.makedirs(ds.temporary_dir(path, "job2"))       # a running job: kept
    removed = ds.vacuum(path)
    assert removed == [ds.temporary_dir(path, "job1")]
    assert os.path.isdir(ds.temporary_dir(path, "job2"))
