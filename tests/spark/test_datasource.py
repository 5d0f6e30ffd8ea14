"""The paimon-row data source on real Paimon tables (pypaimon on the other
side): reads with time travel, partitioned and primary-key tables, writes
and their commit protocol; and bare .row files read with a given schema."""
import os
import threading

import pyarrow as pa
import pytest
from pyroaring import BitMap

import rowformat
import rowformat.spark
from rowformat.paimon import tables as tb

FORMAT = "paimon-row"
N = 3000


def snapshot_ids(path):
    return sorted(s.id for s in tb.open_table(path).snapshot_manager().list_snapshots())


def stock_read(path, columns=None):
    """Every row of the table, read by stock pypaimon (no rowformat acceleration)."""
    from pypaimon.table.file_store_table import FileStoreTable
    import rowformat.paimon
    assert not rowformat.paimon.is_accelerated()
    table = FileStoreTable.from_path(path)
    rb = table.new_read_builder()
    if columns:
        rb = rb.with_projection(columns)
    return rb.new_read().to_arrow(rb.new_scan().plan().splits())


def stock_write(table, data: pa.Table, overwrite=False):
    wb = table.new_batch_write_builder()
    if overwrite:
        wb = wb.overwrite()
    w, c = wb.new_write(), wb.new_commit()
    w.write_arrow(data)
    c.commit(w.prepare_commit())
    w.close()
    c.close()


def rows(df, order="id"):
    return [tuple(r) for r in df.orderBy(order).collect()]


@pytest.fixture(scope="module")
def table(spark, tmp_path_factory):
    """N rows written by Spark in 2 tasks: an append table, 2 data files."""
    path = str(tmp_path_factory.mktemp("t") / "db.db" / "events")
    df = spark.range(0, N, 1, 2).selectExpr(
        "id", "case when id % 7 = 0 then null else concat('name-', id) end as name",
        "cast(id * 2 as int) as twice")
    df.write.format(FORMAT).mode("append").save(path)
    return path


def expected(i):
    return (i, None if i % 7 == 0 else f"name-{i}", i * 2)


def test_registered_automatically_and_by_register(spark, table):
    # conftest never registers: pyspark_rowformat made the format known.
    assert spark.read.format(FORMAT).load(table).count() == N
    rowformat.spark.register(spark)          # the fallback is harmless
    assert spark.read.format("PAIMON-ROW").load(table).count() == N


def test_a_spark_write_is_a_paimon_table(table):
    t = tb.open_table(table)
    assert t.options.options.to_map()["file.format"] == "row"
    assert str(tb.row_type(t)) == "id BIGINT NOT NULL, name STRING, twice INT NOT NULL"
    assert snapshot_ids(table) == [1]                       # one commit for both tasks
    files = [n for n in os.listdir(os.path.join(table, "bucket-0"))]
    assert len(files) == 2 and all(n.startswith("data-") and n.endswith(".row") for n in files)
    # Stock pypaimon reads what Spark wrote, row for row.
    got = stock_read(table).sort_by("id")
    assert [tuple(r.values()) for r in got.to_pylist()] == [expected(i) for i in range(N)]


def test_values_and_nulls(spark, table):
    assert rows(spark.read.format(FORMAT).load(table)) == [expected(i) for i in range(N)]


def test_spark_partitions_are_groups_of_splits(spark, table):
    one_each = spark.read.format(FORMAT).option("bytesPerPartition", 1).load(table)
    splits = tb.plan_splits(tb.open_table(table))
    assert len(splits) == 2 == len(tb.plan(tb.open_table(table))[0].files)   # a file each
    assert one_each.rdd.getNumPartitions() == len(splits)
    # Spark's rule: 2 files of 4 MiB (their open cost) + a few KB over one
    # core is a partition; over 2 or more cores, a partition each
    together = spark.read.format(FORMAT).option("defaultParallelism", 1).load(table)
    assert together.rdd.getNumPartitions() == 1
    apart = spark.read.format(FORMAT).option("minPartitions", 8).load(table)
    assert apart.rdd.getNumPartitions() == 2
    assert sorted(r.id for r in one_each.collect()) == list(range(N))


def test_a_small_multi_file_table_reads_on_both_cores(spark, tmp_path):
    """41,000 rows in 4 files on local[2]: Spark's sizing (maxPartitionBytes,
    openCostInBytes, default parallelism 2) gives 2 partitions, one a core;
    register(spark) hands the session's settings to the source."""
    path = str(tmp_path / "t")
    spark.range(0, 41000, numPartitions=4).write.format(FORMAT).mode("append").save(path)
    assert len(tb.plan_splits(tb.open_table(path))) == 4
    rowformat.spark.register(spark)     # spark.default.parallelism=2 (conftest)
    df = spark.read.format(FORMAT).load(path)
    sizes = df.rdd.glom().map(len).collect()
    assert len(sizes) == 2 and sum(sizes) == 41000 and min(sizes) > 0
    # a session setting captured by register(): maxPartitionBytes below one file's open cost
    spark.conf.set("spark.sql.files.maxPartitionBytes", "1m")
    try:
        rowformat.spark.register(spark)
        assert spark.read.format(FORMAT).load(path).rdd.getNumPartitions() == 4
    finally:
        spark.conf.unset("spark.sql.files.maxPartitionBytes")
        rowformat.spark.register(spark)


class _File:
    def __init__(self, mb):
        self.file_size = mb << 20


class _Split:
    def __init__(self, *mbs):
        self.files = [_File(mb) for mb in mbs]


def test_groups_spread_over_min_partitions():
    big = [_Split(56), _Split(56)]          # 60 MiB each with the 4 MiB open cost
    assert [len(g) for g in tb.group_splits(big, 128 << 20, min_groups=1)] == [2]
    assert [len(g) for g in tb.group_splits(big, 128 << 20, min_groups=2)] == [1, 1]
    assert [len(g) for g in tb.group_splits(big, 50 << 20, min_groups=1)] == [1, 1]
    # Spark's rule: 45 MiB over 2 cores is 22.5 MiB a group (a split joins
    # when its bytes fit); over 8, a split each (never below one open cost: 4 MiB)
    small = [_Split(5), _Split(5), _Split(5), _Split(5, 5)]     # 9, 9, 9 and 18 MiB
    assert [len(g) for g in tb.group_splits(small, 128 << 20, min_groups=2)] == [2, 2]
    assert [len(g) for g in tb.group_splits(small, 128 << 20, min_groups=8)] == [1, 1, 1, 1]
    assert tb.split_target(45 << 20, 128 << 20, 4 << 20, 100) == 4 << 20
    assert [len(g) for g in tb.group_splits(small, 1, min_groups=1)] == [1, 1, 1, 1]


def test_write_batches_are_coalesced_in_order():
    batches = [pa.record_batch({"a": pa.array(range(i * 10, i * 10 + 10)),
                                "s": pa.array([None if j % 3 else str(j) for j in range(10)])})
               for i in range(7)]
    batches.insert(3, batches[0].slice(0, 0))
    out = list(tb.coalesce(iter(batches), rows=25))
    assert [b.num_rows for b in out] == [30, 30, 10]
    assert pa.Table.from_batches(out).equals(pa.Table.from_batches(batches))
    # a byte cap ends a batch early; a big batch passes through whole
    assert [b.num_rows for b in tb.coalesce(iter(batches), rows=1000, max_bytes=1)] == [10] * 7
    assert list(tb.coalesce(iter([batches[3]]))) == []


def test_projection_by_user_schema(spark, table):
    df = spark.read.format(FORMAT).schema("twice int, name string").load(table)
    assert df.columns == ["twice", "name"]
    got = [tuple(r) for r in df.where("twice < 30").orderBy("twice").collect()]
    assert got == [(i * 2, None if i % 7 == 0 else f"name-{i}") for i in range(15)]


def test_user_schema_errors_name_the_column(spark, table):
    with pytest.raises(Exception, match=r"column 'name' is string .*not bigint"):
        spark.read.format(FORMAT).schema("name bigint").load(table).collect()
    with pytest.raises(Exception, match=r"no column 'nope'"):
        spark.read.format(FORMAT).schema("nope int").load(table).collect()


def test_time_travel_by_snapshot_and_tag(spark, tmp_path):
    path = str(tmp_path / "tt")
    spark.range(5).write.format(FORMAT).mode("append").save(path)
    tb.open_table(path).create_tag("first", snapshot_id=1)
    spark.range(5, 8).write.format(FORMAT).mode("append").save(path)
    assert spark.read.format(FORMAT).load(path).count() == 8
    assert spark.read.format(FORMAT).option("snapshotId", 1).load(path).count() == 5
    assert spark.read.format(FORMAT).option("snapshotId", "2").load(path).count() == 8
    assert spark.read.format(FORMAT).option("tag", "first").load(path).count() == 5
    with pytest.raises(Exception, match="no snapshot 9"):
        spark.read.format(FORMAT).option("snapshotId", 9).load(path).collect()


def test_damaged_metadata_is_an_analysis_exception_naming_the_file(spark, tmp_path):
    """A snapshot that is not JSON, and a manifest naming a data file with a
    '/': an AnalysisException carrying rowformat's message, which names the
    file (issue 28, items 2 and 6)."""
    from pyspark.errors import AnalysisException

    from tests.paimon._tables import rewrite_manifests
    path = str(tmp_path / "damaged")
    spark.range(3).write.format(FORMAT).mode("append").save(path)
    manifests = os.path.join(path, "manifest")
    [manifest] = [n for n in os.listdir(manifests) if not n.startswith("manifest-list-")]

    def escape(record):
        record["_FILE"]["_FILE_NAME"] = "../../x.row"
    rewrite_manifests(path, escape)
    with pytest.raises(AnalysisException) as e:
        spark.read.format(FORMAT).load(path).collect()
    assert (f"TableMetadataError: {manifests}/{manifest}: data file name '../../x.row' is not "
            f"a file name") in str(e.value)
    snapshot = os.path.join(path, "snapshot", "snapshot-1")
    with open(snapshot, "w") as f:
        f.write("{not json")
    with pytest.raises(AnalysisException) as e:
        spark.read.format(FORMAT).load(path).collect()
    assert f"TableMetadataError: {snapshot}: damaged Paimon snapshot: JSONDecodeError" \
        in str(e.value)


def test_partitioned_table_from_stock_pypaimon(spark, tmp_path):
    """Written by stock pypaimon (fixed buckets, partitions), read by Spark."""
    from pypaimon import Schema
    from pypaimon.common.file_io import FileIO
    from pypaimon.common.options import Options
    from pypaimon.schema.schema_manager import SchemaManager
    path = str(tmp_path / "db.db" / "parts")
    schema = pa.schema([("id", pa.int64()), ("day", pa.string()), ("v", pa.float64())])
    SchemaManager(FileIO.get(path, Options({})), path).create_table(Schema.from_pyarrow_schema(
        schema, partition_keys=["day"], options={"file.format": "row", "bucket": "3",
                                                 "bucket-key": "id"}))
    t = tb.open_table(path)
    data = pa.table({"id": list(range(500)), "day": [f"d{i % 4}" for i in range(500)],
                     "v": [i / 4 for i in range(500)]}, schema=schema)
    stock_write(t, data)
    assert sorted(os.listdir(path)) == ["day=d0", "day=d1", "day=d2", "day=d3", "manifest",
                                        "schema", "snapshot"]
    df = spark.read.format(FORMAT).load(path)
    assert rows(df) == [(i, f"d{i % 4}", i / 4) for i in range(500)]
    assert {r.day: r.n for r in df.groupBy("day").agg({"*": "count"})
            .withColumnRenamed("count(1)", "n").collect()} == {f"d{k}": 125 for k in range(4)}


def test_partitioned_table_from_spark(spark, tmp_path):
    path = str(tmp_path / "sp")
    df = spark.range(0, 400, 1, 2).selectExpr("id", "cast(id % 3 as string) as part",
                                             "concat('v', id) as v")
    df.write.format(FORMAT).option("partitionKeys", "part").mode("append").save(path)
    t = tb.open_table(path)
    assert t.partition_keys == ["part"]
    assert {n for n in os.listdir(path) if n.startswith("part=")} == {"part=0", "part=1", "part=2"}
    got = stock_read(path).sort_by("id").to_pylist()
    assert [(r["id"], r["part"], r["v"]) for r in got] == [(i, str(i % 3), f"v{i}")
                                                           for i in range(400)]
    assert rows(spark.read.format(FORMAT).load(path)) == [(i, str(i % 3), f"v{i}")
                                                          for i in range(400)]


@pytest.fixture
def pushdown(spark):
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    yield
    spark.conf.unset("spark.sql.python.filterPushdown.enabled")


def test_partition_filters_prune_partitions(spark, tmp_path, pushdown):
    """With pushFilters, comparisons of partition keys prune the planned
    partitions: proven by deleting another partition's files, which a read
    that planned them fails on. Spark still filters, so results are exact."""
    import shutil
    path = str(tmp_path / "pp")
    df = spark.range(0, 600, 1, 2).selectExpr(
        "id", "cast(id % 3 as int) as day", "case id % 4 when 0 then 'a' when 1 then 'b' "
        "when 2 then 'c' else 'é' end as region", "id % 2 = 0 as even")
    (df.write.format(FORMAT).option("partitionKeys", "day,region,even").mode("append")
     .save(path))
    everything = spark.read.format(FORMAT).load(path)
    every = {tuple(r) for r in everything.collect()}

    def pushed(where):
        got = spark.read.format(FORMAT).option("pushFilters", "true").load(path).where(where)
        return {tuple(r) for r in got.collect()}

    cases = {"day = 1": lambda r: r[1] == 1, "day > 1": lambda r: r[1] > 1,
             "day <= 0": lambda r: r[1] <= 0, "day in (0, 2)": lambda r: r[1] in (0, 2),
             "region = 'é'": lambda r: r[2] == "é", "region < 'b'": lambda r: r[2] < "b",
             "region >= 'c' and day < 2": lambda r: r[2] >= "c" and r[1] < 2,
             "even": lambda r: r[3], "day <=> 2": lambda r: r[1] == 2,
             "day = 1 or region = 'a'": lambda r: r[1] == 1 or r[2] == "a",
             "id < 10 and day = 0": lambda r: r[0] < 10 and r[1] == 0}
    for where, keep in cases.items():
        assert pushed(where) == {r for r in every if keep(r)}, where
    shutil.rmtree(os.path.join(path, "day=0"))
    assert pushed("day = 1") == {r for r in every if r[1] == 1}
    assert pushed("day >= 1 and region = 'b'") == {r for r in every if r[1] >= 1 and r[2] == "b"}
    with pytest.raises(Exception, match="day=0"):       # an unpruned read plans day=0
        pushed("region = 'b'")
    with pytest.raises(Exception, match="day=0"):       # pushFilters=false: no pruning
        spark.read.format(FORMAT).option("pushFilters", "false").load(path) \
            .where("day = 1").collect()


def test_push_filters_needs_spark_conf(spark, table):
    """Spark refuses a Python reader with pushFilters unless its conf is on:
    option pushFilters=true says so; without the option the source follows
    the conf (off here, whatever register() saw), and reads."""
    before = spark.conf.get("spark.sql.python.filterPushdown.enabled", None)
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "false")
    try:
        df = spark.read.format(FORMAT).option("pushFilters", "true").load(table)
        with pytest.raises(Exception, match="DATA_SOURCE_PUSHDOWN_DISABLED"):
            df.where("id = 1").collect()
        assert spark.read.format(FORMAT).load(table).where("id = 1").count() == 1
    finally:
        if before is None:
            spark.conf.unset("spark.sql.python.filterPushdown.enabled")
        else:
            spark.conf.set("spark.sql.python.filterPushdown.enabled", before)


def test_partition_by_is_refused_before_the_source_runs(spark, tmp_path):
    """PySpark 4.3 gives a Python source no partitioning: the JVM compares
    partitionBy's columns with the source's (none) and fails before any of
    the source's code runs, so nothing is written. partitionKeys is the way.
    If this starts to pass, a PySpark now hands partitioning over: support it."""
    df = spark.range(10).selectExpr("id", "cast(id % 2 as string) as part")
    for mode in ("append", "overwrite"):
        path = str(tmp_path / mode)
        with pytest.raises(Exception, match=r"partitioning or clustering columns do not match "
                                            r"the existing table's.*\n - provided: identity\(part\)"):
            df.write.format(FORMAT).partitionBy("part").mode(mode).save(path)
        assert not os.path.exists(path)


def test_primary_key_table_merges(spark, tmp_path):
    path = str(tmp_path / "pk")
    base = spark.range(0, 300, 1, 2).selectExpr("id", "'old' as v", "id * 10 as n")
    writer = base.write.format(FORMAT).option("primaryKeys", "id").option("bucket", "2")
    writer.mode("append").save(path)
    t = tb.open_table(path)
    assert t.primary_keys == ["id"] and str(tb.row_type(t)).startswith("id BIGINT NOT NULL")
    # Upserts: ids 0..49 updated, 300..309 new.
    spark.range(0, 50).union(spark.range(300, 310)).selectExpr("id", "'new' as v", "-id as n") \
        .write.format(FORMAT).mode("append").save(path)
    want = [(i, "new", -i) if i < 50 or i >= 300 else (i, "old", i * 10) for i in range(310)]
    assert rows(spark.read.format(FORMAT).load(path)) == want
    # Stock pypaimon merges the same way.
    got = stock_read(path).sort_by("id").to_pylist()
    assert [(r["id"], r["v"], r["n"]) for r in got] == want
    # A primary-key table needs fixed buckets.
    with pytest.raises(Exception, match="needs a fixed number of buckets"):
        base.write.format(FORMAT).option("primaryKeys", "id").mode("append") \
            .save(str(tmp_path / "pk2"))


def test_deletion_vectors_written_by_pypaimon(spark, tmp_path):
    """pypaimon 2.1.0 writes deletion vectors for data-evolution tables only
    (``delete_by_row_id``; its primary-key tables would need a compaction it
    does not have). Spark's read drops the deleted rows as stock pypaimon does."""
    path = str(tmp_path / "dv")
    spark.range(0, 400, 1, 2).selectExpr("id", "concat('v', id) as v").write.format(FORMAT) \
        .option("paimon.row-tracking.enabled", "true") \
        .option("paimon.data-evolution.enabled", "true") \
        .option("paimon.deletion-vectors.enabled", "true").mode("append").save(path)
    row_ids = {r.id: r._ROW_ID for r in
               spark.read.format(FORMAT).option("rowIds", "true").load(path).collect()}
    deleted = {i for i in range(400) if i % 9 == 0} | {1, 399}
    wb = tb.open_table(path).new_batch_write_builder()
    c = wb.new_commit()
    try:
        c.commit(wb.new_update().delete_by_row_id(sorted(row_ids[i] for i in deleted)))
    finally:
        c.close()
    [index] = os.listdir(os.path.join(path, "index"))                 # a real DV index file
    splits = tb.plan_splits(tb.open_table(path))
    assert len(splits) == 2 and all(len(s.data_deletion_files) == 1 for s in splits)
    want = [(i, f"v{i}") for i in range(400) if i not in deleted]
    for per_file in ("1", str(128 << 20)):     # one task per data file, or one for both
        df = spark.read.format(FORMAT).option("bytesPerPartition", per_file).load(path)
        assert rows(df) == want
    assert [(r["id"], r["v"]) for r in stock_read(path).sort_by("id").to_pylist()] == want
    alive = spark.read.format(FORMAT).option("rowIds", "true").load(path)
    assert {r.id: r._ROW_ID for r in alive.collect()} == {i: row_ids[i] for i, _ in want}


def test_append_overwrite_and_schema_errors(spark, tmp_path):
    path = str(tmp_path / "ao")
    spark.range(10).selectExpr("id", "'a' as s").write.format(FORMAT).mode("append").save(path)
    spark.range(10, 15).selectExpr("id", "'b' as s").write.format(FORMAT).mode("append").save(path)
    assert rows(spark.read.format(FORMAT).load(path)) == \
        [(i, "a") for i in range(10)] + [(i, "b") for i in range(10, 15)]
    assert snapshot_ids(path) == [1, 2]
    # Columns in another order are matched by name.
    spark.range(15, 16).selectExpr("'c' as s", "id").write.format(FORMAT).mode("append").save(path)
    assert spark.read.format(FORMAT).load(path).count() == 16

    # Appending another schema fails, naming the column, and commits nothing.
    with pytest.raises(Exception, match=r"SchemaError.*column 's' is string .*not bigint"):
        spark.range(3).selectExpr("id", "id as s").write.format(FORMAT).mode("append").save(path)
    with pytest.raises(Exception, match=r"column 'extra' .*|no column 'extra'"):
        spark.range(3).selectExpr("id", "'x' as s", "1 as extra").write.format(FORMAT) \
            .mode("append").save(path)
    assert snapshot_ids(path) == [1, 2, 3]

    # Overwrite replaces the rows in one snapshot.
    spark.range(3).selectExpr("id", "'z' as s").write.format(FORMAT).mode("overwrite").save(path)
    assert rows(spark.read.format(FORMAT).load(path)) == [(0, "z"), (1, "z"), (2, "z")]
    assert snapshot_ids(path)[-1] == 4
    # Older snapshots still read their rows.
    assert spark.read.format(FORMAT).option("snapshotId", 3).load(path).count() == 16
    # An empty overwrite leaves an empty table with its schema.
    spark.range(0).selectExpr("id", "'z' as s").write.format(FORMAT).mode("overwrite").save(path)
    back = spark.read.format(FORMAT).load(path)
    assert back.count() == 0 and back.columns == ["id", "s"]


def test_overwrite_of_a_partitioned_table_static_and_dynamic(spark, tmp_path):
    """Spark's default overwrite replaces the whole table, although
    pypaimon's own default is dynamic; partitionOverwriteMode=dynamic
    replaces only the partitions written to."""
    path = str(tmp_path / "po")
    first = spark.range(6).selectExpr("id", "cast(id % 3 as string) as part")
    first.write.format(FORMAT).option("partitionKeys", "part").mode("append").save(path)
    one = spark.range(10, 12).selectExpr("id", "'1' as part")
    one.write.format(FORMAT).option("partitionOverwriteMode", "dynamic").mode("overwrite").save(path)
    assert rows(spark.read.format(FORMAT).load(path)) == \
        [(0, "0"), (2, "2"), (3, "0"), (5, "2"), (10, "1"), (11, "1")]
    # an empty dynamic overwrite writes to no partition: nothing is replaced
    spark.range(0).selectExpr("id", "'1' as part").write.format(FORMAT) \
        .option("partitionOverwriteMode", "DYNAMIC").mode("overwrite").save(path)
    assert spark.read.format(FORMAT).load(path).count() == 6
    one.write.format(FORMAT).mode("overwrite").save(path)
    assert rows(spark.read.format(FORMAT).load(path)) == [(10, "1"), (11, "1")]
    assert [(r["id"], r["part"]) for r in stock_read(path).sort_by("id").to_pylist()] == \
        [(10, "1"), (11, "1")]
    with pytest.raises(Exception, match="partitionOverwriteMode must be 'static' or 'dynamic', "
                                        "got 'partial'"):
        one.write.format(FORMAT).option("partitionOverwriteMode", "partial").mode("overwrite") \
            .save(path)


def test_the_tables_block_size_is_a_paimon_option(spark, tmp_path):
    """``paimon.file.block-size`` on the write that creates a table sets
    Paimon's option: the data files have blocks of it (as Paimon Java cuts
    them); a value no write could use fails at the call, making no table."""
    import rowformat
    from rowformat.paimon import tables as tb
    df = spark.range(0, 20000, 1, 1).selectExpr("id", "repeat('x', cast(id % 50 as int)) as s")
    path = str(tmp_path / "t")
    df.write.format(FORMAT).option("paimon.file.block-size", "8kb").mode("append").save(path)
    (f,) = tb.data_files(tb.open_table(path))
    index = rowformat.read_metadata(f.path).block_index
    assert len(index) > 50 and int(index.uncompressed_sizes.max()) < 8192 + 100
    assert spark.read.format(FORMAT).load(path).count() == 20000
    bad = str(tmp_path / "bad")
    with pytest.raises(Exception, match=r"file\.block-size = '3 gb'"):
        df.write.format(FORMAT).option("paimon.file.block-size", "3 gb").mode("append").save(bad)
    assert not tb.is_table(bad)


def test_a_failing_task_leaves_the_table_unchanged(spark, tmp_path):
    from pyspark.sql.functions import udf

    path = str(tmp_path / "fail")
    spark.range(0, 100, 1, 2).write.format(FORMAT).mode("append").save(path)
    before = snapshot_ids(path)

    def data_files():
        return sorted(n for _, _, names in os.walk(path) for n in names if n.endswith(".row"))
    files = data_files()

    @udf("long")
    def explode_at_150(i):
        if i == 150:
            raise ValueError("boom at 150")
        return i

    bad = spark.range(100, 200, 1, 2).select(explode_at_150("id").alias("id"))
    with pytest.raises(Exception, match="boom at 150"):
        bad.write.format(FORMAT).mode("append").save(path)
    assert snapshot_ids(path) == before
    assert sorted(r.id for r in spark.read.format(FORMAT).load(path).collect()) == list(range(100))
    # The failed task removed its own files, abort() those of the task that
    # succeeded: no new data file is left behind.
    assert data_files() == files


def test_concurrent_appends_keep_every_row(spark, tmp_path):
    path = str(tmp_path / "conc")
    spark.range(0).write.format(FORMAT).mode("append").save(path)     # create the table
    errors = []

    def append(k):
        try:
            # The JVM thread behind a new Python thread has no active session,
            # and Spark looks Python data sources up in the active one.
            spark._jvm.org.apache.spark.sql.SparkSession.setActiveSession(spark._jsparkSession)
            spark.range(k * 1000, k * 1000 + 1000, 1, 2).write.format(FORMAT) \
                .mode("append").save(path)
        except Exception as e:          # pragma: no cover - reported below
            errors.append(str(e)[:3000])

    threads = [threading.Thread(target=append, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert sorted(r.id for r in spark.read.format(FORMAT).load(path).collect()) == \
        list(range(3000))
    assert len(snapshot_ids(path)) >= 3


# ---------------------------------------------------------------- bare .row files

def test_bare_file_and_directory(spark, tmp_path):
    path = str(tmp_path / "bare.row")
    with rowformat.RowFileWriter(path, "k INT NOT NULL, ts TIMESTAMP(3), v STRING") as w:
        w.write_rows([(1, None, "a"), (2, None, None), (3, None, "c")])
    with pytest.raises(Exception, match="stores no schema"):
        spark.read.format(FORMAT).load(path)
    # TIMESTAMP(3) is not Spark's canonical TIMESTAMP(6): name the Paimon types.
    df = spark.read.format(FORMAT).option(
        "paimonSchema", "k INT NOT NULL, ts TIMESTAMP(3), v STRING").load(path)
    assert [tuple(r) for r in df.collect()] == [(1, None, "a"), (2, None, None), (3, None, "c")]
    folder = tmp_path / "folder"
    folder.mkdir()
    for k in range(2):
        with rowformat.RowFileWriter(str(folder / f"f{k}.row"), "k INT, v STRING") as w:
            w.write_rows([(k, "x"), (None, "y")])
    df = spark.read.format(FORMAT).schema("k int, v string").load(str(folder))
    assert [tuple(r) for r in df.collect()] == [(0, "x"), (None, "y"), (1, "x"), (None, "y")]


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


@pytest.mark.parametrize("rows_per_partition", [1, 10**9])
def test_bare_file_partitions_are_block_ranges(spark, tmp_path, rows_per_partition):
    path = str(tmp_path / "blocks.row")
    with rowformat.RowFileWriter(path, "i BIGINT NOT NULL", block_size=512) as w:
        w.write_rows([(i,) for i in range(2000)])
    with rowformat.RowFileReader(path, "i BIGINT NOT NULL") as r:
        blocks = r.num_blocks
    assert blocks > 3
    df = spark.read.format(FORMAT).option("paimonSchema", "i BIGINT NOT NULL") \
        .option("rowsPerPartition", rows_per_partition).load(path)
    assert df.rdd.getNumPartitions() == (blocks if rows_per_partition == 1 else 1)
    assert sorted(r.i for r in df.collect()) == list(range(2000))


def test_reused_worker_freezes_the_loaded_modules_once():
    """PySpark's daemon runs gc.collect() after every request of a reused
    worker: the source freezes what is loaded before its first request, so
    those collections do not walk pypaimon's and pyarrow's objects again."""
    import subprocess
    import sys
    code = (
        "import gc, pypaimon.read.split_read as sr\n"
        "from rowformat.spark import worker as ds\n"
        "ds.settle_worker(); n = gc.get_freeze_count()\n"
        "ds.settle_worker(); print(n, gc.get_freeze_count(), sr.FormatRowReader.__module__)\n")
    env = {k: v for k, v in os.environ.items() if k != "SPARK_REUSE_WORKER"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout.split()
    assert out[:2] == ["0", "0"]                     # not a reused worker: nothing frozen
    out = subprocess.run([sys.executable, "-c", code], env={**env, "SPARK_REUSE_WORKER": "1"},
                         capture_output=True, text=True, check=True).stdout.split()
    assert int(out[0]) > 10000 and out[0] == out[1]  # once
    assert out[2] == "pypaimon.read.reader.format_row_reader"   # acceleration left off


def test_blob_values_that_are_descriptors_stay_bytes(spark, tmp_path):
    """Issue 28, item 1: user bytes that happen to be a blob descriptor no
    longer make the executors copy the file they name into the table;
    blobReferenceRoots makes references an explicit choice, and bounds them."""
    from rowformat.blob import BlobDescriptor
    secret = tmp_path / "secret"
    secret.write_bytes(b"executor secret " * 16)
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    (allowed / "ok.bin").write_bytes(b"0123456789")
    sneaky = BlobDescriptor(str(secret), 0, -1).serialize()
    meant = BlobDescriptor(str(allowed / "ok.bin"), 2, 5).serialize()
    path = str(tmp_path / "blobs")
    df = spark.createDataFrame([(1, sneaky), (2, b"plain")], "id long, b binary")
    df.write.format(FORMAT).option("paimonSchema", "id BIGINT, b BLOB") \
        .option("paimon.row-tracking.enabled", "true") \
        .option("paimon.data-evolution.enabled", "true").mode("append").save(path)
    assert stock_read(path).sort_by("id").column("b").to_pylist() == [sneaky, b"plain"]
    spark.createDataFrame([(3, meant)], "id long, b binary").write.format(FORMAT) \
        .option("blobReferenceRoots", str(allowed)).mode("append").save(path)
    assert stock_read(path).sort_by("id").column("b").to_pylist() == [sneaky, b"plain", b"23456"]
    with pytest.raises(Exception, match="not under the directories"):
        df.write.format(FORMAT).option("blobReferenceRoots", str(allowed)) \
            .mode("append").save(path)
    assert stock_read(path).num_rows == 3


def test_a_named_pipe_for_a_data_file_fails_the_task_at_once(spark, tmp_path):
    """Issue 28, item 3: a task reading a table whose data file is a named
    pipe used to block forever (cancelling the job did not free it); now it
    fails at once, naming the file. Bare .row files the same."""
    from tests._fifo import call_guarded, make_fifo
    path = str(tmp_path / "piped")
    spark.range(0, 100, 1, 1).selectExpr("id").write.format(FORMAT).mode("append").save(path)
    [victim] = [os.path.join(d, f) for d, _, fs in os.walk(path) for f in fs
                if f.startswith("data-") and f.endswith(".row")]
    make_fifo(victim)
    said = f"{victim}: is a named pipe, not a regular file"
    for load in (lambda: spark.read.format(FORMAT).load(path).collect(),
                 lambda: spark.read.format(FORMAT).option("paimonSchema", "id BIGINT")
                 .load(victim).collect()):
        error = call_guarded(load, victim)
        assert error is not None and said in str(error)
