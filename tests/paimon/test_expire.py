"""rowformat.paimon.tables.expire_snapshots: old snapshots and the files only
they hold deleted, what the snapshots kept, tags, branches and consumers use
left, stock pypaimon reading the table as before."""
import datetime as dt
import json
import os

import numpy as np
import pyarrow as pa
import pytest

import rowformat.paimon as rp
from rowformat.errors import CorruptFileError, DatasetError, TableMetadataError
from rowformat.paimon import tables

from ._tables import needs_index_files_in_data_dirs, read, sort, write


def _data(n, start=0):
    ids = np.arange(start, start + n)
    return pa.table({"id": pa.array(ids, pa.int64()), "part": pa.array(ids % 3, pa.int32()),
                     "name": pa.array([f"n{i}" if i % 7 else None for i in ids.tolist()], pa.string())})


SCHEMA = _data(1).schema


def overwrite(table, data):
    write(table, data, overwrite=True)


def _files(root, top=None):
    """Every file under the table (or under its ``top`` directory), relative."""
    base = os.path.join(root, top) if top else root
    return {os.path.relpath(os.path.join(d, n), root) for d, _, ns in os.walk(base) for n in ns}


def _data_files(root):
    return {f for f in _files(root) if os.path.basename(f).startswith("data-")}


def _live(path):
    return {os.path.relpath(d.path, path) for d in tables.data_files(tables.open_table(path))}


@pytest.fixture
def overwritten(wh):
    """A partitioned table overwritten four times: snapshots 1-4, the last one live."""
    t = wh.create("t", SCHEMA, partition_keys=["part"])
    for k in range(4):
        overwrite(t, _data(300, start=1000 * k))
    return t, os.path.join(wh.root, "db.db", "t")


def test_overwrites_leave_only_the_live_files(overwritten):
    t, path = overwritten
    before = _data_files(path)
    assert len(before) == 12 and _live(path) < before
    out = tables.expire_snapshots(path, retain_last=1)
    assert out.snapshots == [1, 2, 3] and out.earliest == 4
    assert _data_files(path) == _live(path) and len(_live(path)) == 3
    assert out.files >= 9 and out.bytes > 0
    assert sorted(os.listdir(os.path.join(path, "snapshot"))) == ["EARLIEST", "LATEST", "snapshot-4"]
    with open(os.path.join(path, "snapshot", "EARLIEST")) as f:
        assert f.read() == "4"
    # what the kept snapshot names is all there: its manifest lists, manifests
    snap = json.load(open(os.path.join(path, "snapshot", "snapshot-4")))
    manifests = _files(path, "manifest")
    assert {f"manifest/{snap['baseManifestList']}", f"manifest/{snap['deltaManifestList']}"} <= manifests
    # stock pypaimon and accelerated reads: the last overwrite's rows
    assert sort(read(t), "id").select(["id", "part", "name"]).equals(sort(_data(300, 3000), "id"))
    with rp.accelerated():
        assert sort(read(t), "id").select(["id", "part", "name"]).equals(sort(_data(300, 3000), "id"))
    # nothing left to do: a second run expires nothing
    assert tables.expire_snapshots(path, retain_last=1) == tables.Expired([], 4, 0, 0)


def test_dry_run_deletes_nothing_and_says_what_would_go(overwritten):
    _, path = overwritten
    before = _files(path)
    dry = tables.expire_snapshots(path, retain_last=2, dry_run=True)
    assert _files(path) == before
    real = tables.expire_snapshots(path, retain_last=2)
    assert dry == real and real.snapshots == [1, 2]
    after = _files(path)
    assert len(before - after) == real.files + 2        # + the snapshot files
    assert after - before == {"snapshot/EARLIEST"}


def test_appends_keep_every_data_file(wh):
    t = wh.create("a", SCHEMA)
    for k in range(5):
        write(t, _data(100, start=100 * k))
    path = os.path.join(wh.root, "db.db", "a")
    data_before = _data_files(path)
    out = tables.expire_snapshots(path, retain_last=2)
    assert out.snapshots == [1, 2, 3] and _data_files(path) == data_before
    assert sort(read(t), "id").select(["id", "part", "name"]).equals(_data(500))
    # time travel to a kept snapshot still works, to an expired one it fails cleanly
    assert tables.open_table(path, snapshot_id=4) is not None
    with pytest.raises(DatasetError, match="no snapshot 3"):
        tables.open_table(path, snapshot_id=3)


def test_default_retains_the_tables_minimum(wh):
    """Without retain_last: the table's snapshot.num-retained.min (Paimon's 10 if unset)."""
    t = wh.create("m", SCHEMA, options={"snapshot.num-retained.min": "3"})
    for k in range(5):
        overwrite(t, _data(10, start=10 * k))
    path = os.path.join(wh.root, "db.db", "m")
    assert tables.expire_snapshots(path).snapshots == [1, 2]
    u = wh.create("u", SCHEMA)
    for k in range(11):
        write(u, _data(1, start=k))
    assert tables.expire_snapshots(os.path.join(wh.root, "db.db", "u")).snapshots == [1]


def test_older_than(overwritten):
    _, path = overwritten
    assert tables.expire_snapshots(path, retain_last=1, older_than=dt.timedelta(hours=1)).snapshots == []
    # a naive datetime is local time
    future = dt.datetime.now() + dt.timedelta(minutes=1)
    assert tables.expire_snapshots(path, retain_last=3, older_than=future).snapshots == [1]
    with pytest.raises(TypeError, match="datetime or a timedelta"):
        tables.expire_snapshots(path, retain_last=1, older_than=12345)


def test_tags_and_branches_keep_their_files(overwritten):
    t, path = overwritten
    t.create_tag("first", snapshot_id=1)
    t.branch_manager().create_branch("b2", tag_name="first")
    out = tables.expire_snapshots(path, retain_last=1)
    assert out.snapshots == [1, 2, 3]
    # snapshot 1's data files (the tag's, the branch's) stay; 2's and 3's go
    assert len(_data_files(path)) == 6
    tagged = tables.open_table(path, tag="first")
    assert sort(read(tagged), "id").select(["id", "part", "name"]).equals(sort(_data(300), "id"))


def test_a_consumer_keeps_the_snapshots_it_reads(overwritten):
    _, path = overwritten
    os.makedirs(os.path.join(path, "consumer"))
    with open(os.path.join(path, "consumer", "consumer-job"), "w") as f:
        json.dump({"nextSnapshot": 2}, f)
    assert tables.expire_snapshots(path, retain_last=1).snapshots == [1]
    with open(os.path.join(path, "consumer", "consumer-job"), "w") as f:
        json.dump({"nextSnapshot": "3"}, f)         # not an id: refused, not ignored
    with pytest.raises(TableMetadataError, match="nextSnapshot is not a snapshot id"):
        tables.expire_snapshots(path, retain_last=1)


def test_primary_key_upserts(wh):
    t = wh.create("pk", SCHEMA, primary_keys=["id", "part"], partition_keys=["part"],
                  options={"bucket": "2"})
    for k in range(3):
        write(t, _data(200, start=100 * k))
    path = os.path.join(wh.root, "db.db", "pk")
    want = sort(read(t), "id")
    out = tables.expire_snapshots(path, retain_last=1)
    assert out.snapshots == [1, 2] and _data_files(path) == _live(path)
    assert sort(read(t), "id").equals(want) and want.num_rows == 400


def test_a_damaged_manifest_stops_it_before_anything_is_deleted(overwritten):
    _, path = overwritten
    snap = json.load(open(os.path.join(path, "snapshot", "snapshot-4")))
    with open(os.path.join(path, "manifest", snap["deltaManifestList"]), "wb") as f:
        f.write(b"not avro")
    before = _files(path)
    with pytest.raises(TableMetadataError, match=snap["deltaManifestList"]):
        tables.expire_snapshots(path, retain_last=1)
    assert _files(path) == before


def test_a_named_pipe_for_a_snapshot_is_refused_not_waited_on(overwritten):
    _, path = overwritten
    snap = os.path.join(path, "snapshot", "snapshot-2")
    os.unlink(snap)
    os.mkfifo(snap)
    with pytest.raises(CorruptFileError, match="snapshot-2: is a named pipe"):
        tables.expire_snapshots(path, retain_last=1)
    assert len(_data_files(path)) == 12


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_retain_last_must_be_a_positive_integer(overwritten, bad):
    _, path = overwritten
    with pytest.raises(DatasetError, match="retain_last must be an integer of at least 1"):
        tables.expire_snapshots(path, retain_last=bad)


def test_a_bad_table_minimum_is_named(wh):
    t = wh.create("bad", SCHEMA, options={"snapshot.num-retained.min": "ten"})
    write(t, _data(10))
    with pytest.raises(DatasetError, match="snapshot.num-retained.min must be an integer .* 'ten'"):
        tables.expire_snapshots(os.path.join(wh.root, "db.db", "bad"))
    assert tables.expire_snapshots(os.path.join(wh.root, "db.db", "bad"),
                                   retain_last=np.int64(1)).snapshots == []


def test_not_a_table(tmp_path):
    with pytest.raises(DatasetError, match="not a Paimon table"):
        tables.expire_snapshots(str(tmp_path), retain_last=1)


def test_a_level_upgrade_keeps_the_file(wh):
    """A compaction that moves files to level 5 without rewriting them (one
    DELETE at level 0 and one ADD at level 5 of the same file): the files
    stay, the table reads the same."""
    import dataclasses
    from pypaimon.write.commit_message import CommitMessage
    t = wh.create("up", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    for k in range(3):
        write(t, _data(30, start=100 * k))
    splits = t.new_read_builder().new_scan().plan().splits()
    messages = [CommitMessage(partition=tuple(s.partition.values), bucket=s.bucket,
                              new_files=[dataclasses.replace(f, level=5) for f in s.files],
                              deleted_files=list(s.files)) for s in splits]
    c = t.new_batch_write_builder().new_commit()
    c.commit(messages)
    c.close()
    write(t, _data(10, start=5))
    path = os.path.join(wh.root, "db.db", "up")
    want = sort(read(t), "id")
    levels = {d.level for d in tables.data_files(tables.open_table(path))}
    assert 5 in levels
    before = _data_files(path)
    out = tables.expire_snapshots(path, retain_last=1)
    assert out.snapshots == [1, 2, 3, 4] and _data_files(path) == before == _live(path)
    assert sort(read(t), "id").equals(want)


@needs_index_files_in_data_dirs
def test_index_files_beside_the_data_files(wh):
    """index-file-in-data-file-dir: the hash index files each upsert replaces
    lie in the bucket directories; those only expired snapshots name go."""
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    t = wh.create("dyn", schema, primary_keys=["id"],
                  options={"bucket": "-1", "index-file-in-data-file-dir": "true"})
    for k in range(3):
        ids = list(range(50 * k, 50 * k + 100))
        write(t, pa.table({"id": ids, "v": [f"v{k}-{i}" for i in ids]}, schema=schema))
    path = os.path.join(wh.root, "db.db", "dyn")

    def index_files():
        return {f for f in _files(path) if os.path.basename(f).startswith("index-")
                and not f.startswith("manifest/")}
    before = index_files()
    assert len(before) == 3 and all(f.startswith("bucket-") for f in before)
    out = tables.expire_snapshots(path, retain_last=1)
    assert out.snapshots == [1, 2] and len(index_files()) == 1 and index_files() < before
    want = sort(read(t), "id")
    assert want.num_rows == 200 and want["v"][0].as_py() == "v0-0"
