"""``df.writeStream.format("paimon-row")`` (issue 44, item 2): one Paimon
snapshot per micro-batch, tagged (the checkpoint's query id, the batch id),
so that a batch Spark replays after a crash is not committed twice.

The input is a directory of Parquet files read one per trigger: a source
Spark replays exactly, so each test knows which rows each batch holds."""
import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rowformat.paimon import tables as tb

FORMAT = "paimon-row"


def add_input(directory, n, start):
    """One more input file of ids ``start .. start + n - 1``."""
    os.makedirs(directory, exist_ok=True)
    add_file(directory, f"part-{start:06d}.parquet",
             pa.table({"id": pa.array(range(start, start + n), pa.int64()),
                       "v": pa.array([f"v{i}" for i in range(start, start + n)])}))


def add_file(directory, name, table):
    """``table`` as the input file ``name``, modified a second after every
    file before it: Spark's file source takes files in order of modification
    time, and two written within one tick of the clock come in either order."""
    path = os.path.join(directory, name)
    pq.write_table(table, path)
    before = [os.stat(os.path.join(directory, n)).st_mtime_ns for n in os.listdir(directory)
              if n != name]
    if before:
        t = max(before) + 1_000_000_000
        os.utime(path, ns=(t, t))


def run_once(spark, source, table, checkpoint, **options):
    """Streams every input file not yet read into ``table`` (one file per
    micro-batch) and stops: one run of the query."""
    df = spark.readStream.schema("id long, v string").option("maxFilesPerTrigger", 1) \
        .parquet(source)
    w = df.writeStream.format(FORMAT).option("checkpointLocation", checkpoint)
    for k, v in options.items():
        w = w.option(k, v)
    q = w.trigger(availableNow=True).start(table)
    q.awaitTermination(120)
    if q.exception() is not None:
        raise q.exception()


def stock_ids(path):
    """The table's ids, read by stock pypaimon (no rowformat code)."""
    from pypaimon.table.file_store_table import FileStoreTable
    table = FileStoreTable.from_path(path)
    rb = table.new_read_builder()
    return sorted(rb.new_read().to_arrow(rb.new_scan().plan().splits()).column("id").to_pylist())


def snapshots(path):
    """(id, commit user, commit identifier, kind) of every snapshot, oldest first."""
    table = tb.open_table(path)
    out = []
    for sid in range(1, (tb.latest_snapshot_id(table) or 0) + 1):
        s = tb.snapshot_by_id(table, sid)
        out.append((s.id, s.commit_user, s.commit_identifier, s.commit_kind))
    return out


def query_id(checkpoint):
    with open(os.path.join(checkpoint, "metadata")) as f:
        return json.load(f)["id"]


def data_files(path):
    return sorted(os.path.join(d, n) for d, _, names in os.walk(path) for n in names
                  if n.startswith("data-"))


def test_each_micro_batch_is_one_snapshot_tagged_with_the_query_and_batch(spark, tmp_path):
    source, table, ck = str(tmp_path / "in"), str(tmp_path / "t"), str(tmp_path / "ck")
    for i in range(3):
        add_input(source, 4, 4 * i)
    run_once(spark, source, table, ck, primaryKeys="", bucket="-1")
    user = query_id(ck)
    assert snapshots(table) == [(1, user, 0, "APPEND"), (2, user, 1, "APPEND"),
                                (3, user, 2, "APPEND")]
    assert stock_ids(table) == list(range(12))
    # the query restarted from its checkpoint keeps its commit user and batch ids
    add_input(source, 4, 12)
    run_once(spark, source, table, ck)
    assert snapshots(table)[-1] == (4, user, 3, "APPEND")
    assert stock_ids(table) == list(range(16))


def test_a_batch_replayed_after_its_commit_is_not_committed_twice(spark, tmp_path):
    """The crash window: Paimon has the batch's snapshot, Spark's checkpoint
    has no commits/<batch> (the driver died in between). Spark replays the
    batch on restart; the sink finds (user, batch id) in the table's
    snapshots, commits nothing and deletes the replay's files."""
    source, table, ck = str(tmp_path / "in"), str(tmp_path / "t"), str(tmp_path / "ck")
    for i in range(2):
        add_input(source, 5, 5 * i)
    run_once(spark, source, table, ck)
    files = data_files(table)
    for name in ("1", ".1.crc"):                          # batch 1: committed, not recorded
        os.remove(os.path.join(ck, "commits", name))
    run_once(spark, source, table, ck)
    assert [s[:3] for s in snapshots(table)] == [(1, query_id(ck), 0), (2, query_id(ck), 1)]
    assert stock_ids(table) == list(range(10))
    assert data_files(table) == files                     # the replay's files are gone
    assert os.path.exists(os.path.join(ck, "commits", "1"))   # and Spark moved on
    add_input(source, 5, 10)
    run_once(spark, source, table, ck)
    assert snapshots(table)[-1][2] == 2
    assert stock_ids(table) == list(range(15))


def test_a_new_checkpoint_is_a_new_commit_user(spark, tmp_path):
    """Batch ids restart at 0 with a new checkpoint: its new query id keeps
    them apart from the old query's (which would otherwise look committed)."""
    source, table = str(tmp_path / "in"), str(tmp_path / "t")
    add_input(source, 3, 0)
    run_once(spark, source, table, str(tmp_path / "ck1"))
    run_once(spark, source, table, str(tmp_path / "ck2"))
    assert [s[2] for s in snapshots(table)] == [0, 0]
    assert len({s[1] for s in snapshots(table)}) == 2
    assert stock_ids(table) == sorted(list(range(3)) * 2)


def test_primary_key_tables_take_each_batch_as_upserts(spark, tmp_path):
    source, table, ck = str(tmp_path / "in"), str(tmp_path / "t"), str(tmp_path / "ck")
    add_input(source, 4, 0)
    add_file(source, "part-999999.parquet",
             pa.table({"id": pa.array([1, 2], pa.int64()), "v": ["new1", "new2"]}))
    run_once(spark, source, table, ck, primaryKeys="id", bucket="2")
    rows = spark.read.format(FORMAT).load(table).orderBy("id").collect()
    assert [(r.id, r.v) for r in rows] == [(0, "v0"), (1, "new1"), (2, "new2"), (3, "v3")]
    assert [s[2] for s in snapshots(table)] == [0, 1]


def test_complete_mode_and_a_missing_checkpoint_are_refused(spark, tmp_path):
    source, table = str(tmp_path / "in"), str(tmp_path / "t")
    add_input(source, 3, 0)
    df = spark.readStream.schema("id long, v string").parquet(source)

    def run(frame, mode="append", **options):
        w = frame.writeStream.format(FORMAT).outputMode(mode)
        for k, v in options.items():
            w = w.option(k, v)
        w.trigger(availableNow=True).start(table).awaitTermination(120)

    with pytest.raises(Exception, match="outputMode\\('complete'\\) is not supported"):
        run(df.groupBy("v").count(), "complete", checkpointLocation=str(tmp_path / "c1"))
    spark.conf.set("spark.sql.streaming.checkpointLocation", str(tmp_path / "ckroot"))
    try:
        with pytest.raises(Exception, match="a stream write needs "
                           ".option\\('checkpointLocation'"):
            run(df)
    finally:
        spark.conf.unset("spark.sql.streaming.checkpointLocation")
    with pytest.raises(Exception, match="unknown stream write option 'commituzer'; did you "
                       "mean 'commitUser'"):
        run(df, checkpointLocation=str(tmp_path / "c3"), commitUzer="x")
    assert not os.path.exists(table)
