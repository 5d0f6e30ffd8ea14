"""rowformat.paimon.tables.remove_orphan_files: the files no snapshot, tag,
branch or changelog names (what failed writes leave), older than a cutoff,
deleted; every file a table uses kept, stock pypaimon reading it as before."""
import datetime as dt
import json
import os
import shutil
import time

import pyarrow as pa
import pytest

import rowformat.paimon as rp
from rowformat.errors import DatasetError, TableMetadataError
from rowformat.paimon import tables

from ._tables import needs_index_files_in_data_dirs, read, sort, write
from .test_expire import SCHEMA, _data, _data_files, _files, overwritten  # noqa: F401



def _uncommitted(table, data):
    """A write whose files are written and never committed (a failed job)."""
    w = table.new_batch_write_builder().new_write()
    try:
        w.write_arrow(data)
        w.prepare_commit()
    finally:
        w.close()


def _age(path, days):
    """Every file of the table last modified ``days`` ago."""
    then = time.time() - days * 86400
    for f in _files(path):
        os.utime(os.path.join(path, f), (then, then))


@pytest.fixture
def with_orphans(wh):
    """A table of two commits, plus what a failed write and a failed commit
    left: data files, a manifest and an index file that nothing names."""
    t = wh.create("t", SCHEMA, partition_keys=["part"])
    write(t, _data(300))
    write(t, _data(300, start=1000))
    path = os.path.join(wh.root, "db.db", "t")
    used = _files(path)
    _uncommitted(t, _data(300, start=5000))
    manifest = next(f for f in used if f.startswith("manifest/manifest-") and "list" not in f)
    shutil.copy(os.path.join(path, manifest), os.path.join(path, "manifest", "manifest-lost-0"))
    os.makedirs(os.path.join(path, "index"), exist_ok=True)
    with open(os.path.join(path, "index", "index-lost-0"), "wb") as f:
        f.write(b"x" * 10)
    orphans = _files(path) - used
    assert len([f for f in orphans if os.path.basename(f).startswith("data-")]) == 3
    return t, path, used, orphans


def test_the_files_nothing_names_go_and_the_table_reads_the_same(with_orphans):
    t, path, used, orphans = with_orphans
    want = sort(read(t), "id")
    _age(path, 2)
    size = sum(os.path.getsize(os.path.join(path, f)) for f in orphans)
    out = tables.remove_orphan_files(path)
    assert out.files == sorted(os.path.join(path, f) for f in orphans)
    assert out.bytes == size
    assert _files(path) == used
    assert sort(read(t), "id").equals(want) and want.num_rows == 600
    with rp.accelerated():
        assert sort(read(t), "id").equals(want)
    assert tables.remove_orphan_files(path) == tables.Orphans([], 0)


def test_young_files_stay(with_orphans):
    """A file younger than older_than may belong to a write in progress."""
    _, path, used, orphans = with_orphans
    assert tables.remove_orphan_files(path) == tables.Orphans([], 0)   # default: a day
    _age(path, 2)
    young = next(f for f in orphans if os.path.basename(f).startswith("data-"))
    os.utime(os.path.join(path, young))                                  # now
    out = tables.remove_orphan_files(path, older_than=dt.timedelta(hours=1))
    assert _files(path) == used | {young}
    assert len(out.files) == len(orphans) - 1


def test_dry_run_deletes_nothing(with_orphans):
    _, path, used, orphans = with_orphans
    _age(path, 2)
    out = tables.remove_orphan_files(path, dry_run=True)
    assert out.files == sorted(os.path.join(path, f) for f in orphans)
    assert _files(path) == used | orphans


def test_tags_branches_and_expired_tables_lose_nothing(overwritten):  # noqa: F811
    """After an expiry, with a tag and a branch on an expired snapshot:
    every file left is used, so nothing is an orphan even with no age limit."""
    t, path = overwritten
    t.create_tag("first", snapshot_id=1)
    t.branch_manager().create_branch("b2", tag_name="first")
    tables.expire_snapshots(path, retain_last=1)
    before = _files(path)
    _age(path, 2)
    assert tables.remove_orphan_files(path).files == []
    assert _files(path) == before and len(_data_files(path)) == 6
    tagged = tables.open_table(path, tag="first")
    assert sort(read(tagged), "id").select(["id", "part", "name"]).equals(sort(_data(300), "id"))


def test_every_file_an_unexpired_snapshot_names_stays(overwritten):  # noqa: F811
    """Four overwrites, none expired: the replaced files are still named (by
    the older snapshots), so none is an orphan."""
    _, path = overwritten
    before = _files(path)
    _age(path, 2)
    assert tables.remove_orphan_files(path).files == []
    assert _files(path) == before


def test_a_damaged_manifest_list_stops_it_before_anything_is_deleted(with_orphans):
    _, path, _, orphans = with_orphans
    snap = json.load(open(os.path.join(path, "snapshot", "snapshot-2")))
    with open(os.path.join(path, "manifest", snap["deltaManifestList"]), "wb") as f:
        f.write(b"not avro")
    before = _files(path)
    _age(path, 2)
    with pytest.raises(TableMetadataError, match=snap["deltaManifestList"]):
        tables.remove_orphan_files(path)
    assert _files(path) == before


def test_older_than_is_required_and_not_after_now(with_orphans):
    _, path, used, orphans = with_orphans
    with pytest.raises(DatasetError, match="older_than is required"):
        tables.remove_orphan_files(path, older_than=None)
    with pytest.raises(DatasetError, match="is after now"):
        tables.remove_orphan_files(path, older_than=dt.datetime.now() + dt.timedelta(minutes=1))
    with pytest.raises(DatasetError, match="is after now"):
        tables.remove_orphan_files(path, older_than=dt.timedelta(days=-1))
    assert _files(path) == used | orphans
    with pytest.raises(TypeError, match="datetime or a timedelta"):
        tables.remove_orphan_files(path, older_than=3600)


def test_not_a_table(tmp_path):
    with pytest.raises(DatasetError, match="not a Paimon table"):
        tables.remove_orphan_files(str(tmp_path))


@needs_index_files_in_data_dirs
def test_index_files_beside_the_data_files_stay(wh):
    """index-file-in-data-file-dir: a dynamic-bucket table's hash index files
    lie in the bucket directories; they are used, and upserts go on after."""
    schema = pa.schema([("id", pa.int64()), ("part", pa.int32()), ("v", pa.string())])
    t = wh.create("dyn", schema, primary_keys=["id", "part"], partition_keys=["part"],
                  options={"bucket": "-1", "index-file-in-data-file-dir": "true"})

    def upsert(start, n, tag):
        ids = list(range(start, start + n))
        write(t, pa.table({"id": ids, "part": [i % 2 for i in ids],
                           "v": [f"{tag}{i}" for i in ids]}, schema=schema))
    for k in range(3):
        upsert(50 * k, 100, f"v{k}-")
    path = os.path.join(wh.root, "db.db", "dyn")
    in_buckets = {f for f in _files(path) if "/bucket-" in f and "/index-" in f}
    assert in_buckets
    before = _files(path)
    _age(path, 2)
    assert tables.remove_orphan_files(path).files == []
    assert _files(path) == before
    upsert(0, 20, "new-")
    got = sort(read(t), "id")
    assert got.num_rows == 200 and got["v"][0].as_py() == "new-0"


def test_only_bucket_directories_and_metadata_lists_are_searched(with_orphans):
    """A partition's _SUCCESS, Iceberg-compatible metadata/, any file outside
    a bucket directory stay; a stray file in a bucket directory goes."""
    _, path, used, orphans = with_orphans
    kept = ["part=0/_SUCCESS", "metadata/v1.metadata.json", "part=1/notes.txt", "README"]
    for f in kept:
        os.makedirs(os.path.dirname(os.path.join(path, f)), exist_ok=True)
        with open(os.path.join(path, f), "w") as out:
            out.write("x")
    _age(path, 2)
    out = tables.remove_orphan_files(path)
    assert out.files == sorted(os.path.join(path, f) for f in orphans)
    assert _files(path) == used | set(kept)


def test_external_data_files_inside_the_table_stay(wh, tmp_path):
    path = os.path.join(wh.root, "db.db", "ext")
    ext = os.path.join(path, "ext")
    os.makedirs(ext)
    t = wh.create("ext", SCHEMA, options={"data-file.external-paths": "file:" + ext,
                                          "data-file.external-paths.strategy": "round-robin"})
    write(t, _data(40))
    write(t, _data(40, start=100))
    assert [f for f in _files(path) if f.startswith("ext/")]
    before, want = _files(path), sort(read(t), "id")
    _age(path, 2)
    assert tables.remove_orphan_files(path).files == []
    assert _files(path) == before and sort(read(t), "id").equals(want)


def test_a_branch_changelog_keeps_its_files(wh):
    """A branch snapshot expired into a long-lived changelog
    (branch/branch-b/changelog/): the manifests it names stay."""
    t = wh.create("br", SCHEMA, partition_keys=["part"])
    write(t, _data(10))
    t.create_tag("t1", snapshot_id=1)
    t.branch_manager().create_branch("b", tag_name="t1")
    b = wh.catalog.get_table("db.br$branch_b")
    write(b, _data(10, start=100))
    write(b, _data(10, start=200), overwrite=True)
    path = os.path.join(wh.root, "db.db", "br")
    home = os.path.join(path, "branch", "branch-b")
    os.makedirs(os.path.join(home, "changelog"))
    os.rename(os.path.join(home, "snapshot", "snapshot-2"),
              os.path.join(home, "changelog", "changelog-2"))
    snap = json.load(open(os.path.join(home, "changelog", "changelog-2")))
    before = _files(path)
    _age(path, 2)
    tables.remove_orphan_files(path)
    assert {f"manifest/{snap['baseManifestList']}", f"manifest/{snap['deltaManifestList']}"} \
        <= _files(path)
    assert _files(path) == before


def test_a_missing_manifest_list_is_named_and_nothing_is_deleted(with_orphans):
    """What an expiry cut short leaves: a snapshot whose manifest list is gone."""
    _, path, used, orphans = with_orphans
    snap = json.load(open(os.path.join(path, "snapshot", "snapshot-1")))
    os.remove(os.path.join(path, "manifest", snap["deltaManifestList"]))
    before = _files(path)
    _age(path, 2)
    with pytest.raises(TableMetadataError, match="expire_snapshots run was cut short"):
        tables.remove_orphan_files(path)
    assert _files(path) == before
