"""rowformat.paimon.streaming's exactly-once sink on real pypaimon tables:
an aborted micro-batch's files are deleted only when no snapshot of that
batch may name them (Spark aborts a batch whose commit raised, and a commit
can raise after its snapshot was created)."""
import os

import pyarrow as pa

from rowformat.paimon import streaming, tables

from ._tables import read, sort, write
from ._tables import needs_pypaimon_2_1

SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.string())])


def _batch(i):
    return pa.table({"id": [i * 10 + j for j in range(3)], "s": [f"b{i}"] * 3}, schema=SCHEMA)


def _files(table):
    return {n for _, _, names in os.walk(str(table.table_path)) for n in names
            if n.startswith("data-")}


def test_an_abort_after_its_commit_keeps_the_files(wh):
    # commit_once created snapshot 1 of batch 0 and then raised (say): Spark aborts batch 0
    t = wh.create("s", SCHEMA, options={"bucket": "1", "bucket-key": "id"})
    pickled = tables.write_batches(t, _batch(0).to_batches(), False)
    assert streaming.commit_once(t, [pickled], "q", 0)
    assert not streaming.abort_once(wh.table("s"), [pickled], "q", 0)
    assert sort(read(wh.table("s"))).equals(_batch(0))
    assert _files(t) == {d.meta.file_name for d in tables.data_files(
        tables.open_table(str(t.table_path)))}


def test_an_abort_of_an_uncommitted_batch_deletes_its_files(wh):
    t = wh.create("u", SCHEMA, options={"bucket": "1", "bucket-key": "id"})
    streaming.commit_once(t, [tables.write_batches(t, _batch(0).to_batches(), False)], "q", 0)
    before = _files(t)
    pickled = tables.write_batches(t, _batch(1).to_batches(), False)
    assert len(_files(t)) == len(before) + 1
    assert streaming.abort_once(wh.table("u"), [pickled], "q", 1)
    assert _files(t) == before and sort(read(wh.table("u"))).equals(_batch(0))


def test_an_abort_when_its_snapshots_were_expired_keeps_the_files(wh):
    # batch 1 may be snapshot 2, expired by another writer's expiry: unknown, so kept
    t = wh.create("x", SCHEMA, options={"bucket": "1", "bucket-key": "id"})
    streaming.commit_once(t, [tables.write_batches(t, _batch(0).to_batches(), False)], "q", 0)
    pickled = tables.write_batches(t, _batch(1).to_batches(), False)
    assert streaming.commit_once(t, [pickled], "q", 1)                  # snapshot 2
    write(wh.table("x"), _batch(7))                                      # 3, another writer
    tables.expire_snapshots(str(t.table_path), retain_last=1)
    assert not streaming.abort_once(wh.table("x"), [pickled], "q", 1)
    assert sort(read(wh.table("x"))).equals(sort(pa.concat_tables([_batch(0), _batch(1),
                                                                   _batch(7)])))


pytestmark = needs_pypaimon_2_1
