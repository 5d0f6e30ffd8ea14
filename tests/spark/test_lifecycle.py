"""What a failed write leaves behind (issue 36, item 6; issue 40, item 3): a
failed first write leaves the empty table it created (another writer may
have opened it: tests/spark/test_write_safety.py), which a retry with the
same columns appends to and one with other columns is told to delete; a
failed write to an existing table leaves it as it was."""
import datetime as dt
import os
import time

import pytest
from pyspark.sql.functions import udf

from rowformat.paimon import tables as tb

FORMAT = "paimon-row"


def _failing(spark):
    boom = udf(lambda x: 1 // 0 if x == 7 else x, "long")      # one task fails
    return spark.range(0, 10, 1, 2).select(boom("id").alias("id"))


def test_a_failed_first_write_leaves_an_empty_table(spark, tmp_path):
    path = str(tmp_path / "t")
    df = _failing(spark).selectExpr("id", "cast(id % 2 as int) as day")
    with pytest.raises(Exception, match="ZeroDivisionError"):
        df.write.format(FORMAT).option("partitionKeys", "day").mode("append").save(path)
    assert tb.is_table(path) and tb.latest_snapshot_id(tb.open_table(path)) is None
    assert [f for _, _, files in os.walk(path) for f in files] == ["schema-0"]   # no data file
    # a retry with other columns is refused, saying what to do
    with pytest.raises(Exception, match="The table has no snapshot .* delete"):
        spark.range(5).selectExpr("id", "cast(id as string) as s").write.format(FORMAT) \
            .mode("append").save(path)
    # the retry with the same columns writes to it
    spark.range(5).selectExpr("id", "cast(id % 2 as int) as day").write.format(FORMAT) \
        .mode("append").save(path)
    assert spark.read.format(FORMAT).load(path).count() == 5
    # a failed write to the existing table keeps it, rows and all
    with pytest.raises(Exception, match="ZeroDivisionError"):
        _failing(spark).selectExpr("id", "cast(id % 2 as int) as day").write \
            .format(FORMAT).mode("append").save(path)
    assert tb.is_table(path) and spark.read.format(FORMAT).load(path).count() == 5


def test_overwrites_do_not_grow_storage_once_snapshots_expire(spark, tmp_path):
    """Four overwrites keep four snapshots' files; expire_snapshots leaves the
    last one's, and the table reads the same; remove_orphan_files deletes a
    file nothing names."""
    import rowformat.spark as rs
    path = str(tmp_path / "ow")

    def size():
        return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs
                   if f.startswith("data-"))

    for k in range(4):
        spark.range(k * 1000, (k + 1) * 1000, 1, 2).selectExpr("id", "cast(id % 3 as int) as p") \
            .write.format(FORMAT).option("partitionKeys", "p").mode("overwrite").save(path)
    before = size()
    out = rs.expire_snapshots(spark, path, retain_last=1)
    assert out.snapshots == [1, 2, 3] and out.earliest == 4
    assert 0 < size() < before / 3.5
    assert before - size() <= out.bytes         # the data files, then manifests and lists
    got = sorted(r.id for r in spark.read.format(FORMAT).load(path).collect())
    assert got == list(range(3000, 4000))
    # what a killed job left (a data file nothing names) goes; the table stays
    stray = os.path.join(path, "p=0", "bucket-0", "data-killed-task.row")
    with open(stray, "wb") as f:
        f.write(b"x" * 50)
    assert rs.remove_orphan_files(spark, path).files == []           # young: kept
    os.utime(stray, (time.time() - 7200,) * 2)                         # two hours old
    assert rs.remove_orphan_files(spark, path, older_than=dt.timedelta(hours=1)) \
        == tb.Orphans([stray], 50)
    assert sorted(r.id for r in spark.read.format(FORMAT).load(path).collect()) == got


def test_compact_rewrites_small_appends(spark, tmp_path):
    """Six small appends, one file each: rowformat.spark.compact rewrites them
    as one, in a COMPACT snapshot; Spark reads the same rows, and the snapshot
    before still reads from the old files."""
    import rowformat.spark as rs
    path = str(tmp_path / "ap")
    for k in range(6):
        spark.range(k * 10, (k + 1) * 10, 1, 1).write.format(FORMAT).mode("append").save(path)
    assert len(tb.data_files(tb.open_table(path))) == 6
    out = rs.compact(spark, path)
    assert (out.snapshot, out.rewritten, out.written, out.files_after) == (7, 6, 1, 1)
    assert tb.latest_snapshot(tb.open_table(path)).commit_kind == "COMPACT"
    assert sorted(r.id for r in spark.read.format(FORMAT).load(path).collect()) == list(range(60))
    assert len(tb.data_files(tb.open_table(path, snapshot_id=6))) == 6


def test_compact_runs_each_bucket_as_a_task_on_the_executors(spark, tmp_path):
    """A primary-key table of 3 buckets, written in 6 upserts (6 sorted runs
    a bucket): rowformat.spark.compact rewrites the buckets in one Spark job
    of 3 tasks, commits one COMPACT snapshot, and every version of each key
    reads as before."""
    import rowformat.spark as rs
    path = str(tmp_path / "pk")
    for k in range(6):
        spark.range(0, 300, 1, 2).selectExpr("id", f"id * 10 + {k} as v") \
            .write.format(FORMAT).option("primaryKeys", "id").option("bucket", "3") \
            .option("paimon.write-only", "true").mode("append").save(path)
    files_before = len(tb.data_files(tb.open_table(path)))
    sc = spark.sparkContext
    sc.setJobGroup("compact-executors", "the test's compaction")
    try:
        out = rs.compact(spark, path, full=True)
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    tracker = sc.statusTracker()
    stages = [s for j in tracker.getJobIdsForGroup("compact-executors")
              for s in tracker.getJobInfo(j).stageIds]
    assert sum(tracker.getStageInfo(s).numTasks for s in stages) == 3   # a task a bucket
    assert (out.rewritten, out.written, out.files_after) == (files_before, 3, 3)
    assert tb.latest_snapshot(tb.open_table(path)).commit_kind == "COMPACT"
    got = {r.id: r.v for r in spark.read.format(FORMAT).load(path).collect()}
    assert got == {i: i * 10 + 5 for i in range(300)}
