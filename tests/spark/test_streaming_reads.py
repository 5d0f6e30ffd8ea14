"""``spark.readStream.format("paimon-row")`` (issue 44, item 1): offsets
name a snapshot and a split in it; startup by Paimon's ``scan.mode``;
admission control by ``read.stream.*``; ``trigger(availableNow=True)``;
restarts from the checkpoint read each row once; expired snapshots are an
error. The output is Spark's Parquet file sink (exactly once by itself)."""
import os

import pytest

from rowformat.paimon import tables as tb

FORMAT = "paimon-row"


def append(spark, table, start, n, parts=1):
    """One snapshot of ids ``start .. start + n - 1`` in ``parts`` files."""
    spark.range(start, start + n, numPartitions=parts).selectExpr("id", "concat('v', id) AS v") \
        .write.format(FORMAT).mode("append").save(table)


def stream(spark, table, out, ck, **options):
    """One availableNow run of a query streaming ``table`` into Parquet at
    ``out``; returns its progress (one entry per micro-batch with rows)."""
    r = spark.readStream.format(FORMAT)
    for k, v in options.items():
        r = r.option(k, v)
    q = r.load(table).writeStream.format("parquet").option("checkpointLocation", ck) \
        .trigger(availableNow=True).start(out)
    q.awaitTermination(120)
    return [p for p in q.recentProgress if p["numInputRows"]]


def ids(spark, out):
    return sorted(r.id for r in spark.read.parquet(out).collect())


def test_latest_full_then_each_new_snapshot_once_across_restarts(spark, tmp_path):
    table, out, ck = str(tmp_path / "t"), str(tmp_path / "out"), str(tmp_path / "ck")
    append(spark, table, 0, 5)
    append(spark, table, 5, 5)
    stream(spark, table, out, ck)
    assert ids(spark, out) == list(range(10))           # the latest snapshot in full
    append(spark, table, 10, 3)
    append(spark, table, 13, 3)
    # an overwrite is not read (Paimon's streaming-read-overwrite is off)
    stream(spark, table, out, ck)
    assert ids(spark, out) == list(range(16))           # restarted: only what came after
    stream(spark, table, out, ck)
    assert ids(spark, out) == list(range(16))           # nothing new: nothing read


def test_scan_modes(spark, tmp_path):
    table = str(tmp_path / "t")
    for i in range(3):
        append(spark, table, 10 * i, 2)                 # snapshots 1, 2, 3
    t = tb.open_table(table)
    second = tb.snapshot_by_id(t, 2).time_millis
    cases = {"latest": ({"scan.mode": "latest"}, []),
             "from2": ({"scan.mode": "from-snapshot", "scan.snapshot-id": "2"},
                       [10, 11, 20, 21]),
             "from2full": ({"scan.mode": "from-snapshot-full", "scan.snapshot-id": "2"},
                           [0, 1, 10, 11, 20, 21]),
             "id3": ({"scan.snapshot-id": "3"}, [20, 21]),
             "ts": ({"scan.timestamp-millis": str(second)}, [10, 11, 20, 21])}
    for name, (options, want) in cases.items():
        out = str(tmp_path / name)
        stream(spark, table, out, str(tmp_path / f"ck-{name}"), **options)
        got = ids(spark, out) if os.path.exists(os.path.join(out, "_spark_metadata")) and \
            os.listdir(os.path.join(out, "_spark_metadata")) else []
        assert got == want, name
    with pytest.raises(Exception, match="option scan.mode 'nope' is not one"):
        stream(spark, table, str(tmp_path / "x"), str(tmp_path / "ck-x"), **{"scan.mode": "nope"})
    with pytest.raises(Exception, match="unknown read option 'read.stream.maxfiles'; did you "
                       "mean 'read.stream.maxFilesPerTrigger'"):
        stream(spark, table, str(tmp_path / "y"), str(tmp_path / "ck-y"),
               **{"read.stream.maxFiles": "1"})


def test_admission_limits_bound_every_micro_batch(spark, tmp_path):
    table = str(tmp_path / "t")
    for i in range(3):
        append(spark, table, 10 * i, 6, parts=3)        # 3 snapshots of 3 files of 2 rows
    progress = stream(spark, table, str(tmp_path / "o1"), str(tmp_path / "c1"),
                      **{"scan.mode": "from-snapshot", "scan.snapshot-id": "1",
                         "read.stream.maxFilesPerTrigger": "2"})
    # (a batch ends inside a snapshot and the next goes on from there)
    assert [p["numInputRows"] for p in progress] == [4, 4, 4, 4, 2]
    assert ids(spark, str(tmp_path / "o1")) == sorted(10 * i + j for i in range(3)
                                                      for j in range(6))
    progress = stream(spark, table, str(tmp_path / "o2"), str(tmp_path / "c2"),
                      **{"scan.mode": "from-snapshot", "scan.snapshot-id": "1",
                         "read.stream.maxRowsPerTrigger": "7"})
    assert [p["numInputRows"] for p in progress] == [6, 6, 6]


def test_an_expired_start_is_an_error_naming_the_option(spark, tmp_path):
    table, out, ck = str(tmp_path / "t"), str(tmp_path / "out"), str(tmp_path / "ck")
    append(spark, table, 0, 2)
    stream(spark, table, out, ck, **{"scan.mode": "latest"})
    for i in range(1, 4):
        append(spark, table, 10 * i, 2)
    tb.expire_snapshots(table, retain_last=1)
    with pytest.raises(Exception, match="scan.snapshot-id is 1 but the earliest snapshot is 4"):
        stream(spark, table, str(tmp_path / "o2"), str(tmp_path / "c2"),
               **{"scan.snapshot-id": "1"})
    # the checkpoint's next snapshot (2) has expired: an error, not a silent jump
    with pytest.raises(Exception, match="has to read snapshot 2 next, but the earliest "
                       "snapshot is 4"):
        stream(spark, table, out, ck)


def test_a_reader_restarted_while_a_writer_appends_reads_each_row_once(spark, tmp_path):
    """Three runs of one query, each from the checkpoint of the one before,
    while another thread commits an append every 0.2 s: every row the
    table ends with is in the output once."""
    import threading

    import pyarrow as pa
    table, out, ck = str(tmp_path / "t"), str(tmp_path / "out"), str(tmp_path / "ck")
    append(spark, table, 0, 3)
    stop, done = threading.Event(), []

    def writer():
        i = 1
        while not stop.is_set() and i < 200:
            t = tb.open_table(table)
            batch = pa.record_batch({"id": pa.array([10 * i, 10 * i + 1], pa.int64()),
                                     "v": ["a", "b"]})
            tb.commit(t, [tb.write_batches(t, [batch], False)], False)
            done.append(i)
            i += 1
            stop.wait(0.2)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        for _ in range(3):
            stream(spark, table, out, ck, **{"read.stream.maxFilesPerTrigger": "3"})
    finally:
        stop.set()
        thread.join(60)
    stream(spark, table, out, ck)
    want = sorted(r.id for r in spark.read.format(FORMAT).load(table).collect())
    assert done and len(want) == 3 + 2 * len(done)
    assert ids(spark, out) == want


def test_compact_snapshots_are_skipped(spark, tmp_path):
    """A COMPACT snapshot rewrites rows the stream has read (or will read
    from their APPEND snapshots): it is not read again."""
    table, out, ck = str(tmp_path / "t"), str(tmp_path / "out"), str(tmp_path / "ck")
    append(spark, table, 0, 3)
    stream(spark, table, out, ck)
    for i in range(1, 6):
        append(spark, table, 10 * i, 3)
    assert tb.compact(table).snapshot == 7
    append(spark, table, 60, 3)
    stream(spark, table, out, ck)
    assert tb.latest_snapshot(tb.open_table(table)).id == 8
    assert ids(spark, out) == sorted(10 * i + j for i in range(7) for j in range(3))


def test_min_rows_hold_a_batch_back_until_the_delay(tmp_path):
    """The driver's reader alone (no query): below minRowsPerTrigger a batch
    waits, until maxTriggerDelayMs has passed since the last one."""
    import time

    import pyarrow as pa
    from pyspark.sql.streaming.datasource import ReadMinRows
    from rowformat.datatypes import schema
    from rowformat.spark.sizing import PartitionSizing
    from rowformat.spark.spark_types import to_spark_schema
    from rowformat.spark.stream_reader import TableStreamReader
    table = str(tmp_path / "t")
    t, _ = tb.create_or_open(table, schema("id BIGINT"))
    for i in range(3):
        t = tb.open_table(table)
        tb.commit(t, [tb.write_batches(t, [pa.record_batch({"id": pa.array([i], pa.int64())})],
                                       False)], False)
    options = {"path": table, "scan.mode": "latest", "read.stream.minrowspertrigger": "2",
               "read.stream.maxtriggerdelayms": "300"}
    reader = TableStreamReader(options, to_spark_schema(tb.row_type(t)), table,
                               PartitionSizing.from_options(options, {}), {})
    start = reader.initialOffset()
    assert start == {"snapshotId": 4, "index": -1, "scanSnapshot": False}
    assert reader.getDefaultReadLimit() == ReadMinRows(2)
    t = tb.open_table(table)
    tb.commit(t, [tb.write_batches(t, [pa.record_batch({"id": pa.array([9], pa.int64())})],
                                   False)], False)
    first = reader.latestOffset(start, ReadMinRows(2))   # the first batch is never held
    assert first == {"snapshotId": 5, "index": -1, "scanSnapshot": False}
    tb.commit(t, [tb.write_batches(t, [pa.record_batch({"id": pa.array([8], pa.int64())})],
                                   False)], False)
    assert reader.latestOffset(first, ReadMinRows(2)) == first    # 1 row < 2: held
    time.sleep(0.35)
    assert reader.latestOffset(first, ReadMinRows(2)) == \
        {"snapshotId": 6, "index": -1, "scanSnapshot": False}     # the delay has passed
    assert len(reader.partitions(start, first)) == 1
