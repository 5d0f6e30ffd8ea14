"""What a stream of a table's changes carries (issue 44, item 1): each row's
kind with ``read.changelog`` (Paimon's Spark connector's leading
``rowkind`` column), and ``OVERWRITE`` snapshots by Paimon's
``streaming-read-overwrite`` (primary-key tables: the replaced rows as
``-D``, then the written ones; Java's ``readChanges``) and
``streaming-read-append-overwrite`` (append tables: the new files).

Most tests drive the driver's reader and then its tasks' ``read`` in this
process (the calls Spark makes, in its order); one runs a real query."""
import pyarrow as pa
import pytest

from rowformat.datatypes import schema
from rowformat.errors import DatasetError, SchemaError
from rowformat.paimon import tables as tb
from rowformat.spark.sizing import PartitionSizing
from rowformat.spark.spark_types import to_spark_schema
from rowformat.spark.stream_reader import TableStreamReader
from rowformat.spark.datasource import RowDataSource

FORMAT = "paimon-row"
ROWS = schema("id BIGINT NOT NULL, v STRING, op STRING")


def _pk(path, **options):
    """A primary-key table whose ``op`` column gives each row's kind (Paimon's ``rowkind.field``)."""
    tb.create_or_open(path, ROWS, primary_keys=["id"],
                      options={"bucket": "2", "rowkind.field": "op", **options})
    return path


def _write(path, rows, overwrite=False):
    t = tb.open_table(path)
    names = ["id", "v", "op"][:len(rows[0])]
    batch = pa.record_batch([pa.array([r[i] for r in rows]) for i in range(len(names))], names)
    tb.commit(t, [tb.write_batches(t, [batch], overwrite)], overwrite)


def _reader(path, **options):
    """The driver's stream reader, of the schema the source gives Spark."""
    options = {"path": path, **{k.lower(): v for k, v in options.items()}}
    return TableStreamReader(options, RowDataSource(options).schema(), path,
                             PartitionSizing.from_options(options, {}), {})


def _micro_batch(reader, start):
    """(end, rows) of the micro-batch Spark would run from ``start``: every
    row of its partitions, as the tasks read them, in order."""
    from pyspark.sql.streaming.datasource import ReadAllAvailable
    end = reader.latestOffset(start, ReadAllAvailable())
    rows = []
    for p in (reader.partitions(start, end) if end != start else []):
        for batch in reader.read(p):
            rows += [tuple(r.values()) for r in batch.to_pylist()]
    return end, rows


def test_read_changelog_gives_each_row_its_kind(tmp_path):
    t = _pk(str(tmp_path / "t"))
    _write(t, [(1, "a", "+I"), (2, "b", "+I"), (3, "c", "+I")])
    reader = _reader(t, **{"read.changelog": "true"})
    start = reader.initialOffset()                  # latest-full: the merged rows, +I
    end, rows = _micro_batch(reader, start)
    assert sorted(rows) == [("+I", 1, "a", "+I"), ("+I", 2, "b", "+I"), ("+I", 3, "c", "+I")]
    _write(t, [(1, "a1", "+U"), (2, "b", "-D"), (4, "d", "+I")])
    end, rows = _micro_batch(reader, end)           # the delta, every change as written
    assert sorted(rows) == [("+I", 4, "d", "+I"), ("+U", 1, "a1", "+U"), ("-D", 2, "b", "-D")]
    assert _micro_batch(reader, end) == (end, [])


def test_overwrite_snapshots_are_skipped_unless_the_option_says(tmp_path):
    t = _pk(str(tmp_path / "t"))
    _write(t, [(1, "a", "+I"), (2, "b", "+I")])
    _write(t, [(1, "a1", "+U")])
    plain = _reader(t, **{"scan.mode": "latest", "read.changelog": "true"})
    changes = _reader(t, **{"scan.mode": "latest", "read.changelog": "true",
                            "streaming-read-overwrite": "true"})
    starts = plain.initialOffset(), changes.initialOffset()
    _write(t, [(1, "z", "+I"), (5, "e", "+I")], overwrite=True)
    assert tb.latest_snapshot(tb.open_table(t)).commit_kind == "OVERWRITE"
    assert _micro_batch(plain, starts[0])[1] == []
    end, rows = _micro_batch(changes, starts[1])
    # each bucket's replaced rows, every version of them, as deletions, then
    # what the overwrite wrote (Java's ReverseReader then the new files)
    assert sorted(rows) == [("+I", 1, "z", "+I"), ("+I", 5, "e", "+I"),
                            ("-D", 1, "a", "+I"), ("-D", 1, "a1", "+U"), ("-D", 2, "b", "+I")]
    # in the order a key's changes apply: its deletions before its new row
    assert [r[0] for r in rows if r[1] == 1] == ["-D", "-D", "+I"]
    assert end == {"snapshotId": 4, "index": -1, "scanSnapshot": False}


def test_a_partition_overwrite_retracts_only_that_partition(tmp_path):
    t = str(tmp_path / "t")
    tb.create_or_open(t, schema("id BIGINT NOT NULL, p STRING NOT NULL, v STRING"),
                      primary_keys=["id", "p"], partition_keys=["p"],
                      options={"bucket": "1",                 # as a table option
                               "streaming-read-overwrite": "true"})
    tbl = tb.open_table(t)
    rows = pa.record_batch({"id": pa.array([1, 2, 3], pa.int64()), "p": ["x", "x", "y"],
                            "v": ["a", "b", "c"]})
    tb.commit(tbl, [tb.write_batches(tbl, [rows], False)], False)
    reader = _reader(t, **{"scan.mode": "latest", "read.changelog": "true"})
    assert reader.row_kinds and reader.read_overwrite
    start = reader.initialOffset()
    tbl = tb.open_table(t)
    new = pa.record_batch({"id": pa.array([4], pa.int64()), "p": ["x"], "v": ["d"]})
    tb.commit(tbl, [tb.write_batches(tbl, [new], True)], True, dynamic=True)
    assert sorted(_micro_batch(reader, start)[1]) == [
        ("+I", 4, "x", "d"), ("-D", 1, "x", "a"), ("-D", 2, "x", "b")]


def test_read_changelog_is_a_read_option_only(tmp_path):
    # as in Paimon's Spark connector: a table option of that name adds no
    # column, so a batch read of the table keeps the table's schema
    t = _pk(str(tmp_path / "t"), **{"read.changelog": "true"})
    _write(t, [(1, "a", "+I")])
    assert RowDataSource({"path": t}).schema().names == ROWS.names
    reader = _reader(t)
    assert not reader.row_kinds
    assert _micro_batch(reader, reader.initialOffset())[1] == [(1, "a", "+I")]


def test_replaced_files_gone_with_their_snapshot_are_a_clear_error(tmp_path):
    t = _pk(str(tmp_path / "t"), **{"snapshot.num-retained.min": "1",
                                    "snapshot.num-retained.max": "1"})
    _write(t, [(1, "a", "+I")])
    reader = _reader(t, **{"scan.mode": "latest", "streaming-read-overwrite": "true"})
    start = reader.initialOffset()
    _write(t, [(2, "b", "+I")], overwrite=True)      # snapshot 2; expiry takes 1 and its file
    with pytest.raises(DatasetError, match=r"snapshot 2 \(OVERWRITE\) replaced.*files that are "
                                           r"gone.*snapshot 1, the last to hold them, has "
                                           r"expired.*snapshot.num-retained.min"):
        _micro_batch(reader, start)


def test_a_replaced_retraction_is_java_s_error(tmp_path):
    t = _pk(str(tmp_path / "t"))
    _write(t, [(1, "a", "+I"), (2, "b", "+I")])
    _write(t, [(2, "b", "-D")])
    reader = _reader(t, **{"scan.mode": "latest", "streaming-read-overwrite": "true"})
    start = reader.initialOffset()
    _write(t, [(1, "z", "+I")], overwrite=True)
    with pytest.raises(DatasetError, match=r"snapshot 3 \(OVERWRITE\) replaced.*\['-D'\].*"
                                           r"set streaming-read-overwrite to false"):
        _micro_batch(reader, start)


def test_without_read_changelog_the_rows_carry_no_kind(tmp_path):
    t = _pk(str(tmp_path / "t"))
    _write(t, [(1, "a", "+I")])
    reader = _reader(t, **{"scan.mode": "latest", "streaming-read-overwrite": "true"})
    start = reader.initialOffset()
    _write(t, [(2, "b", "+I")], overwrite=True)
    # as Paimon's Spark connector: a deletion is a row of the deleted values
    assert sorted(_micro_batch(reader, start)[1]) == [(1, "a", "+I"), (2, "b", "+I")]


def test_append_tables_read_an_overwrite_s_new_files(tmp_path):
    t = str(tmp_path / "t")
    tb.create_or_open(t, schema("id BIGINT, v STRING"))
    _write(t, [(1, "a")])
    plain = _reader(t, **{"scan.mode": "latest"})
    reads = _reader(t, **{"scan.mode": "latest", "streaming-read-append-overwrite": "true"})
    starts = plain.initialOffset(), reads.initialOffset()
    _write(t, [(2, "b"), (3, "c")], overwrite=True)
    _write(t, [(4, "d")])
    assert sorted(_micro_batch(plain, starts[0])[1]) == [(4, "d")]
    assert sorted(_micro_batch(reads, starts[1])[1]) == [(2, "b"), (3, "c"), (4, "d")]


def test_the_options_are_checked_as_java_checks_them(tmp_path):
    a = str(tmp_path / "a")
    tb.create_or_open(a, schema("id BIGINT, v STRING"))
    with pytest.raises(ValueError, match="streaming-read-overwrite is for primary-key tables.*"
                                         "use streaming-read-append-overwrite"):
        _reader(a, **{"streaming-read-overwrite": "true"})
    t = _pk(str(tmp_path / "t"), **{"changelog-producer": "lookup"})
    with pytest.raises(ValueError, match="streaming-read-overwrite cannot be true with "
                                         "changelog-producer 'lookup'"):
        _reader(t, **{"streaming-read-overwrite": "true"})
    f = _pk(str(tmp_path / "f"), **{"changelog-producer": "full-compaction"})
    with pytest.raises(ValueError, match="changelog-producer 'full-compaction'"):
        _reader(f, **{"streaming-read-overwrite": "true"})
    d = _pk(str(tmp_path / "d"), **{"deletion-vectors.enabled": "true"})
    with pytest.raises(ValueError, match="not supported yet on a table with "
                                         "deletion-vectors.enabled"):
        _reader(d, **{"streaming-read-overwrite": "true"})
    with pytest.raises(ValueError, match="option read.changelog must be 'true' or 'false'"):
        _reader(t, **{"read.changelog": "yes"})
    with pytest.raises(SchemaError, match="with read.changelog the first column is 'rowkind'"):
        TableStreamReader({"path": t, "read.changelog": "true"},
                          to_spark_schema(tb.row_type(tb.open_table(t))), t,
                          PartitionSizing.from_options({}, {}), {})


def test_a_query_streams_the_rowkind_column(spark, tmp_path):
    """Through Spark: the source's schema leads with ``rowkind``; a batch
    read refuses the stream-only option by name."""
    t = _pk(str(tmp_path / "t"))
    _write(t, [(1, "a", "+I")])
    out, ck = str(tmp_path / "out"), str(tmp_path / "ck")
    df = spark.readStream.format(FORMAT).option("read.changelog", "true").load(t)
    assert df.schema.names == ["rowkind", "id", "v", "op"]
    q = df.writeStream.format("parquet").option("checkpointLocation", ck) \
        .trigger(availableNow=True).start(out)
    q.awaitTermination(120)
    _write(t, [(1, "a", "-D")])
    q = df.writeStream.format("parquet").option("checkpointLocation", ck) \
        .trigger(availableNow=True).start(out)
    q.awaitTermination(120)
    assert sorted(tuple(r) for r in spark.read.parquet(out).collect()) == \
        [("+I", 1, "a", "+I"), ("-D", 1, "a", "-D")]
    with pytest.raises(Exception, match="'read.changelog' is a stream read option"):
        spark.read.format(FORMAT).option("read.changelog", "true").load(t).collect()
