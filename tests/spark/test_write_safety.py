"""Writes that must not lose or mislay data (issue 40, items 3, 14, 15, 17):
a failed first write next to a concurrent writer, what a failed first write
removes, table options checked before anything is written, and misspelt
options refused (or, for Paimon table options, warned of)."""
import os
import threading
import time

import pytest
from pyspark.sql.functions import udf

from rowformat.paimon import tables as tb
import rowformat

FORMAT = "paimon-row"


def stock_ids(path):
    """The ids of the table's rows, read by stock pypaimon (no rowformat code)."""
    from pypaimon.table.file_store_table import FileStoreTable
    table = FileStoreTable.from_path(path)
    rb = table.new_read_builder()
    return sorted(rb.new_read().to_arrow(rb.new_scan().plan().splits()).column("id").to_pylist())


def in_thread(spark, write):
    """Runs ``write()`` in a thread; returns (thread, errors)."""
    errors = []

    def run():
        try:
            # a new thread's JVM side has no active session, where Spark looks
            # Python data sources up
            spark._jvm.org.apache.spark.sql.SparkSession.setActiveSession(spark._jsparkSession)
            write()
        except Exception as e:
            errors.append(str(e))
    t = threading.Thread(target=run)
    t.start()
    return t, errors


def wait_until(check, what, timeout=120):
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def race_a_failed_first_write(spark, path, signals, options=None, storage_options=None):
    """Write A creates the table at ``path``; write B opens it while A's task
    runs; A's task fails and A aborts; then B commits. Returns A's and B's
    errors. (``signals``: a local directory for the tasks' handshakes.)"""
    options = options or {}
    b_running, a_done = os.path.join(signals, "b-running"), os.path.join(signals, "a-done")

    @udf("long")
    def a_rows(i):                      # A's only task fails once B's task is running
        if i == 0:
            import os as os_, time as time_
            for _ in range(2400):
                if os_.path.exists(b_running):
                    break
                time_.sleep(0.05)
            raise ValueError("write A fails")
        return i

    @udf("long")
    def b_rows(i):                      # B's only task waits for A's abort
        if i == 100:
            import os as os_, time as time_
            open(b_running, "w").close()
            for _ in range(2400):
                if os_.path.exists(a_done):
                    break
                time_.sleep(0.05)
        return i

    def save(df):
        df.write.format(FORMAT).options(**options).mode("append").save(path)

    a, a_errors = in_thread(spark, lambda: save(spark.range(0, 5, 1, 1).select(
        a_rows("id").alias("id"))))
    wait_until(lambda: tb.is_table(path, storage_options), "write A to create the table")
    b, b_errors = in_thread(spark, lambda: save(spark.range(100, 105, 1, 1).select(
        b_rows("id").alias("id"))))
    a.join(300)
    open(a_done, "w").close()
    b.join(300)
    return a_errors, b_errors


def test_a_failed_first_write_leaves_a_concurrent_writers_rows_readable(spark, tmp_path):
    """Item 3: B's rows stay in a table that stock pypaimon reads (A used to
    delete schema/ at its abort, having seen no snapshot, and B's commit
    found no table). tests/spark/test_spark_object_store.py races on S3."""
    path = str(tmp_path / "t")
    a_errors, b_errors = race_a_failed_first_write(spark, path, str(tmp_path))
    assert len(a_errors) == 1 and "write A fails" in a_errors[0]
    assert b_errors == []
    assert stock_ids(path) == [100, 101, 102, 103, 104]


def test_a_failed_first_write_removes_only_the_directories_it_made(spark, tmp_path):
    """Item 14 (and 3: the empty table stays). The user's own empty
    directories under the target path stay; the partition and bucket
    directories the aborted tasks left go; the table stays, with no
    snapshot, and reads as no rows."""
    path = tmp_path / "t"
    for d in ("mine", "notes/empty"):
        (path / d).mkdir(parents=True)
    where = str(path)

    @udf("long")
    def boom(i):         # the second task fails once the first one's files are written
        if i == 7:
            import os as os_, time as time_
            for _ in range(2400):
                if any(n.endswith(".row") for _, _, ns in os_.walk(where) for n in ns):
                    break
                time_.sleep(0.05)
            time_.sleep(2)                      # its commit message reaches the driver
            return 1 // 0
        return i

    df = spark.range(0, 10, 1, 2).select(boom("id").alias("id")) \
        .selectExpr("id", "cast(id % 2 as int) as day")
    with pytest.raises(Exception, match="ZeroDivisionError"):
        df.write.format(FORMAT).option("partitionKeys", "day").mode("append").save(str(path))
    dirs = sorted(os.path.relpath(d, path) for d, _, _ in os.walk(path))
    assert dirs == [".", "mine", "notes", "notes/empty", "schema"]
    assert os.listdir(path / "schema") == ["schema-0"]
    assert spark.read.format(FORMAT).load(str(path)).count() == 0


def test_table_options_are_checked_before_anything_is_written(spark, tmp_path):
    """Item 15: a bucket Paimon cannot use (99999999999 failed only at the
    commit, leaving manifest/ behind) or an option value pypaimon cannot
    parse is refused before the table is created."""
    df = spark.range(3)
    cases = [
        ("bucket", "99999999999", "table option 'bucket' = '99999999999': expected -1 (dynamic "
         "buckets) or a number of buckets from 1 to 2147483647"),
        ("bucket", "0", "table option 'bucket' = '0'"),
        ("bucket", "-2", "table option 'bucket' = '-2'"),
        ("bucket", "four", "table option 'bucket' = 'four'"),
        ("paimon.row-tracking.enabled", "maybe",
         "table option 'row-tracking.enabled' = 'maybe': expected true or false"),
        ("paimon.target-file-size", "big",
         "table option 'target-file-size' = 'big': expected a size such as '128 mb'"),
    ]
    for k, (option, value, message) in enumerate(cases):
        path = tmp_path / f"t{k}"
        with pytest.raises(Exception, match="TableOptionError") as e:
            df.write.format(FORMAT).option(option, value).mode("append").save(str(path))
        assert message in str(e.value)
        assert not path.exists()
    df.write.format(FORMAT).option("bucket", "2147483647").mode("append").save(
        str(tmp_path / "max"))
    assert tb.open_table(str(tmp_path / "max")).options.bucket() == 2147483647


def test_unknown_options_are_errors_naming_the_closest(spark, tmp_path):
    """Item 17: ``partitionKey`` made an unpartitioned table without a word;
    now an unknown option of a write or a read is an error naming it and
    the closest known one (names are case-insensitive, as Spark's)."""
    path = str(tmp_path / "t")
    df = spark.range(4).selectExpr("id", "cast(id % 2 as int) as day")
    with pytest.raises(Exception, match="unknown write option 'partitionkey'; did you mean "
                       "'partitionKeys'\\?"):
        df.write.format(FORMAT).option("partitionKey", "day").mode("append").save(path)
    assert not os.path.exists(path)
    df.write.format(FORMAT).option("PARTITIONKEYS", "day").mode("append").save(path)
    assert tb.open_table(path).partition_keys == ["day"]
    with pytest.raises(Exception, match="unknown read option 'snapshot'; did you mean "
                       "'snapshotId'\\?"):
        spark.read.format(FORMAT).option("snapshot", "1").load(path).collect()
    with pytest.raises(Exception, match="unknown read option 'partitionkeys': "
                       "'partitionKeys' is a write option"):
        spark.read.format(FORMAT).option("partitionKeys", "day").load(path).collect()
    assert spark.read.format(FORMAT).option("SnapshotID", "1").load(path).count() == 4


def test_an_existing_tables_layout_is_not_silently_ignored(spark, tmp_path):
    """Item 17: partitionKeys, primaryKeys or bucket given for an existing
    table that says otherwise is an error naming both."""
    path = str(tmp_path / "t")
    df = spark.range(4).selectExpr("id", "cast(id % 2 as int) as day")
    df.write.format(FORMAT).mode("append").save(path)
    for option, value, message in [
            ("partitionKeys", "day", "option partitionKeys is 'day' but the table's partition "
             "keys are []"),
            ("primaryKeys", "id", "option primaryKeys is 'id' but the table's primary keys "
             "are []"),
            ("bucket", "4", "option bucket is '4' but the table's bucket is -1")]:
        with pytest.raises(Exception, match="An existing table keeps its layout") as e:
            df.write.format(FORMAT).option(option, value).mode("append").save(path)
        assert message in str(e.value)
    # the same layout, said again, is fine
    df.write.format(FORMAT).option("partitionKeys", "").option("bucket", "-1") \
        .mode("append").save(path)
    assert spark.read.format(FORMAT).load(path).count() == 8


def test_a_misspelt_table_option_warns_and_is_kept(spark, tmp_path):
    """Item 17: ``paimon.row-traking.enabled`` was stored without a word and
    row tracking stayed off: it is still stored (a table may hold user
    options, as Paimon allows), with a warning naming the closest known one.
    The warning is the writer's, on the stderr of the driver's Python worker
    (read here through Spark's Python worker logs)."""
    path = str(tmp_path / "t")
    spark.conf.set("spark.sql.pyspark.worker.logging.enabled", "true")
    try:
        spark.range(3).write.format(FORMAT).option("paimon.row-traking.enabled", "true") \
            .option("paimon.my-team.owner", "ana").mode("append").save(path)
        logged = "\n".join(r.msg for r in spark.tvf.python_worker_logs().collect())
    finally:
        spark.conf.unset("spark.sql.pyspark.worker.logging.enabled")
    assert ("TableOptionWarning: paimon-row: option 'paimon.row-traking.enabled' is not a "
            "Paimon table option (did you mean 'paimon.row-tracking.enabled'?). It is stored "
            "in the table as a user option, which Paimon ignores") in logged
    assert "option 'paimon.my-team.owner' is not a Paimon table option. It is stored" in logged
    options = tb.open_table(path).options.options.to_map()
    assert options["row-traking.enabled"] == "true" and options["my-team.owner"] == "ana"
    assert not tb.open_table(path).options.row_tracking_enabled()


def test_create_or_open_says_whether_it_created(tmp_path):
    """Item 3: only the call whose own create of schema-0 succeeded is the
    creator; a second one gets the first one's table and False."""
    path = str(tmp_path / "t")
    first, created = tb.create_or_open(path, rowformat.schema("id BIGINT"))
    assert created and tb.row_type(first).names == ["id"]
    second, created = tb.create_or_open(path, rowformat.schema("k STRING"))
    assert not created and tb.row_type(second).names == ["id"]
    assert sorted(os.listdir(os.path.join(path, "schema"))) == ["schema-0"]
