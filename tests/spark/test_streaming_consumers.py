"""``consumer-id`` on ``spark.readStream.format("paimon-row")`` (issue 44,
item 1): the stream records its progress in the table's
``consumer/consumer-<id>`` (Paimon's layout, read back by pypaimon's
ConsumerManager), expiry keeps what it has not read, a query without a
checkpoint starts where the consumer stopped, and a consumer whose next
snapshot has expired is an error naming it."""
import pytest

from rowformat.paimon import streaming, tables as tb
from tests.spark.test_streaming_reads import append, ids, stream


def test_a_consumer_records_progress_that_expiry_and_new_queries_follow(spark, tmp_path):
    table = str(tmp_path / "t")
    append(spark, table, 0, 5)
    append(spark, table, 5, 5)                           # snapshots 1, 2
    stream(spark, table, str(tmp_path / "o1"), str(tmp_path / "ck1"), **{"consumer-id": "c1"})
    assert ids(spark, str(tmp_path / "o1")) == list(range(10))
    assert streaming.consumer_next_snapshot(table, "c1") == 3   # snapshot 2 read in full
    from pypaimon.consumer.consumer import Consumer     # the layout pypaimon reads
    with open(streaming.consumer_path(table, "c1")) as f:
        assert Consumer.from_json(f.read()).next_snapshot == 3

    append(spark, table, 10, 3)                          # snapshot 3
    append(spark, table, 13, 3)                          # snapshot 4
    # all but the latest may go, but the consumer has not read 3 and 4
    expired = tb.expire_snapshots(table, retain_last=1, older_than=None)
    assert expired.snapshots == [1, 2] and expired.earliest == 3
    # a new query (no checkpoint) with the consumer: from its next snapshot,
    # incrementally (not scan.mode's full latest snapshot)
    stream(spark, table, str(tmp_path / "o2"), str(tmp_path / "ck2"), **{"consumer-id": "c1"})
    assert ids(spark, str(tmp_path / "o2")) == list(range(10, 16))
    assert streaming.consumer_next_snapshot(table, "c1") == 5
    # consumer.ignore-progress: scan.mode decides (the latest in full)
    stream(spark, table, str(tmp_path / "o3"), str(tmp_path / "ck3"),
           **{"consumer-id": "c1", "consumer.ignore-progress": "true"})
    assert ids(spark, str(tmp_path / "o3")) == list(range(16))

    # a consumer left behind by expiry (written by hand: expiry keeps what
    # a live one needs) is an error naming it, not a silent jump ahead
    streaming.record_consumer(table, "stale", 1)
    with pytest.raises(Exception, match="consumer 'stale' reads snapshot 1 next, but the "
                       "earliest snapshot is 3"):
        stream(spark, table, str(tmp_path / "o4"), str(tmp_path / "ck4"),
               **{"consumer-id": "stale"})
    with pytest.raises(Exception, match="option consumer-id must be a name without path "
                       "separators, got 'a/b'"):
        stream(spark, table, str(tmp_path / "o5"), str(tmp_path / "ck5"),
               **{"consumer-id": "a/b"})
