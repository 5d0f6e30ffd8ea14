"""The compaction and expiry that follow each accelerated commit, as Paimon
Java's writers run them (rowformat.paimon._after_commit): a primary-key
bucket compacted when it reaches num-sorted-run.compaction-trigger runs,
the rows as stock pypaimon read the snapshot before; nothing under
write-only; snapshots kept exactly by the retention options, each kept one
read identically by stock pypaimon; a compaction that a concurrent commit
overtakes gives up with a warning and leaves the user's commit in place."""
import os
import time
import warnings

import pyarrow as pa
import pytest

import rowformat.paimon as rp
from rowformat.paimon import _after_commit, _compact, tables

from ._tables import needs_pypaimon_2_1, read, sort, write

pytestmark = needs_pypaimon_2_1

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("s", pa.string())])


def _rows(ids, tag):
    return pa.table({"id": ids, "s": [f"{tag}.{i}" for i in ids]}, schema=SCHEMA)


def _kinds(t):
    sm = t.snapshot_manager()
    latest = sm.get_latest_snapshot().id
    return [(s.id, s.commit_kind) for s in (sm.get_snapshot_by_id(i) for i in range(1, latest + 1))
            if s is not None]


def _live(t):
    return sorted((d.bucket, d.level) for d in tables.data_files(tables.open_table(str(t.table_path))))


def _stock_read(t, snapshot_id=None):
    """The rows stock pypaimon merges (acceleration off), at ``snapshot_id``."""
    rp.restore()
    try:
        return sort(read(tables.open_table(str(t.table_path), snapshot_id=snapshot_id)))
    finally:
        rp.accelerate()


def _disk(t):
    out = set()
    for _, _, names in os.walk(str(t.table_path)):
        out.update(n for n in names if n.startswith("data-"))
    return out


def _named(t):
    """Every data file any snapshot of the table names."""
    sm = t.snapshot_manager()
    out = set()
    for sid in range(1, sm.get_latest_snapshot().id + 1):
        if sm.get_snapshot_by_id(sid) is not None:
            out |= {os.path.basename(d.path)
                    for d in tables.data_files(tables.open_table(str(t.table_path),
                                                                 snapshot_id=sid))}
    return out


def test_primary_key_bucket_compacts_at_the_trigger(wh):
    t = wh.create("pk", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    rp.accelerate()
    for k in range(4):                  # 4 level-0 runs: below the trigger (5)
        write(t, _rows(list(range(k * 3, k * 3 + 20)), k))
    assert _kinds(t) == [(i, "APPEND") for i in range(1, 5)] and _live(t) == [(0, 0)] * 4
    write(t, _rows(list(range(12, 32)), 4))
    before = _stock_read(t, snapshot_id=5)      # the user's commit, before the compaction
    # the 5th run triggers it: 4 runs of equal size are more than 200% of the
    # oldest (size amplification), so every run goes to the max level (5),
    # in one COMPACT snapshot after the user's APPEND
    assert _kinds(t)[-2:] == [(5, "APPEND"), (6, "COMPACT")]
    assert _live(t) == [(0, 5)]
    assert _stock_read(t).equals(before) and before.num_rows == 32
    for k in range(5, 9):
        write(t, _rows(list(range(12, 32)), k))
    # 4 more level-0 runs over the level-5 one: the trigger again, and again
    # size amplification (the runs above are as large as the bottom one)
    assert [k for _, k in _kinds(t)] == ["APPEND"] * 5 + ["COMPACT"] + ["APPEND"] * 4 \
        + ["COMPACT"]
    assert _live(t) == [(0, 5)]
    assert _stock_read(t).equals(_stock_read(t, snapshot_id=10))
    assert _stock_read(t).column("s").to_pylist()[12:14] == ["8.12", "8.13"]


def test_append_bucket_compacts_at_min_file_num(wh):
    t = wh.create("ap", SCHEMA, options={"bucket": "1", "bucket-key": "id"})
    rp.accelerate()
    for k in range(5):
        write(t, _rows([k], k))
    # BucketedAppendCompactManager: 5 files (compaction.min.file-num) are a task
    assert _kinds(t)[-2:] == [(5, "APPEND"), (6, "COMPACT")]
    assert _live(t) == [(0, 0)]
    assert sort(read(t)).equals(_stock_read(t, snapshot_id=5))


def test_unaware_bucket_append_is_left_to_compact(wh):
    # Java's writers never compact a bucket = -1 table: a dedicated job does
    t = wh.create("un", SCHEMA)
    rp.accelerate()
    for k in range(6):
        write(t, _rows([k], k))
    assert _kinds(t) == [(i, "APPEND") for i in range(1, 7)]
    assert tables.compact(t).written == 1


def test_write_only_leaves_files_and_snapshots(wh):
    t = wh.create("wo", SCHEMA, primary_keys=["id"],
                  options={"bucket": "1", "write-only": "true",
                           "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"})
    rp.accelerate()
    for k in range(7):
        write(t, _rows([k, k + 1], k))
    assert _kinds(t) == [(i, "APPEND") for i in range(1, 8)]
    assert _live(t) == [(0, 0)] * 7


def test_expiry_keeps_exactly_the_retained_snapshots(wh):
    # no compaction (min.file-num above the commits); at most 3 snapshots
    t = wh.create("ex", SCHEMA, options={"bucket": "1", "bucket-key": "id",
                                          "compaction.min.file-num": "100",
                                          "snapshot.num-retained.min": "2",
                                          "snapshot.num-retained.max": "3"})
    rp.accelerate()
    for k in range(6):
        write(t, _rows([k], k))
    assert [i for i, _ in _kinds(t)] == [4, 5, 6]
    sm = t.snapshot_manager()
    assert sm.get_snapshot_by_id(3) is None
    for sid in (4, 5, 6):           # each kept snapshot, as stock pypaimon reads it
        assert _stock_read(t, snapshot_id=sid).column("id").to_pylist() == list(range(sid))
    # snapshot.time-retained: a snapshot goes once its successor is older than
    # it, down to snapshot.num-retained.min (2)
    t = wh.create("ex2", SCHEMA, options={"bucket": "1", "bucket-key": "id",
                                           "compaction.min.file-num": "100",
                                           "snapshot.num-retained.min": "2",
                                           "snapshot.time-retained": "1 ms"})
    for k in range(4):
        write(t, _rows([k], k))
        time.sleep(0.01)
    assert [i for i, _ in _kinds(t)] == [3, 4]
    assert _stock_read(t, snapshot_id=3).column("id").to_pylist() == [0, 1, 2]
    # the defaults (10, unlimited, 1 h) keep every snapshot of a young table
    t = wh.create("ex3", SCHEMA, options={"bucket": "1", "bucket-key": "id",
                                           "compaction.min.file-num": "100"})
    for k in range(12):
        write(t, _rows([k], k))
    assert [i for i, _ in _kinds(t)] == list(range(1, 13))


def test_overwrite_expires_the_replaced_files(wh):
    t = wh.create("ow", SCHEMA, options={"bucket": "1", "bucket-key": "id",
                                          "snapshot.num-retained.min": "1",
                                          "snapshot.num-retained.max": "1"})
    rp.accelerate()
    write(t, _rows([1, 2], "a"))
    first = _disk(t)
    write(t, _rows([3], "b"), overwrite=True)
    assert [i for i, _ in _kinds(t)] == [2]
    assert not first & _disk(t) and len(_disk(t)) == 1
    assert _stock_read(t).column("s").to_pylist() == ["b.3"]


def test_concurrent_overwrite_during_compaction_keeps_the_commit(wh, monkeypatch):
    t = wh.create("cc", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    rp.accelerate()
    for k in range(4):
        write(t, _rows([k, k + 10], k))
    rewrite = _compact._rewrite
    wrote = []

    def overtaken(table, task):
        metas = rewrite(table, task)        # the compaction's files are written ...
        wrote.extend(m.file_name for m in metas)
        if len(wrote) == len(metas):        # ... when another writer replaces the table
            write(wh.table("cc"), _rows([99], "other"), overwrite=True)
        return metas
    monkeypatch.setattr(_compact, "_rewrite", overtaken)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        write(t, _rows([4, 14], 4))         # the 5th run: the trigger
    [w] = [w for w in caught if issubclass(w.category, rp.MaintenanceWarning)]
    assert str(t.table_path) in str(w.message) and "gave up" in str(w.message)
    assert "the commit itself succeeded" in str(w.message)
    # the user's commit stands (snapshot 5), the overwrite after it; no COMPACT
    assert _kinds(t) == [(i, "APPEND") for i in range(1, 6)] + [(6, "OVERWRITE")]
    assert _stock_read(t, snapshot_id=5).column("id").to_pylist() == [0, 1, 2, 3, 4, 10, 11,
                                                                       12, 13, 14]
    assert _stock_read(t).column("s").to_pylist() == ["other.99"]
    # nothing left behind: the compaction's files are gone, every file on disk is named
    assert wrote and not set(wrote) & _disk(t)
    assert _disk(t) == _named(t)


def test_retention_options_are_checked(wh):
    t = wh.create("bad", SCHEMA, options={"snapshot.num-retained.min": "5",
                                           "snapshot.num-retained.max": "2"})
    rp.accelerate()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        write(t, _rows([1], 1))
    [w] = [w for w in caught if issubclass(w.category, rp.MaintenanceWarning)]
    assert "snapshot.num-retained.max" in str(w.message) and "expiry failed" in str(w.message)
    assert _kinds(t) == [(1, "APPEND")]
    with pytest.raises(Exception, match="snapshot.time-retained"):
        _after_commit.retention({"snapshot.time-retained": "soon"})


def test_expiry_after_the_compaction_frees_the_compacted_files(wh):
    t = wh.create("ec", SCHEMA, primary_keys=["id"],
                  options={"bucket": "1", "snapshot.num-retained.min": "2",
                           "snapshot.num-retained.max": "2"})
    rp.accelerate()
    for k in range(5):
        write(t, _rows(list(range(k, k + 4)), k))
    # the 5th commit's compaction, then one expiry: 5 (APPEND) and 6 (COMPACT) stay,
    # and snapshot 5 still holds the 5 level-0 files the compaction replaced
    assert _kinds(t) == [(5, "APPEND"), (6, "COMPACT")] and len(_disk(t)) == 6
    assert _stock_read(t, snapshot_id=5).equals(_stock_read(t, snapshot_id=6))
    write(t, _rows([0], "last"))
    # snapshot 5 expired: its level-0 files go, the level-5 file and the new one stay
    assert _kinds(t) == [(6, "COMPACT"), (7, "APPEND")]
    assert _disk(t) == _named(t) and len(_disk(t)) == 2
    assert _stock_read(t, snapshot_id=6).num_rows == 8
    assert _stock_read(t).column("s").to_pylist()[0] == "last.0"
