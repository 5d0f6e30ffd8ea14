"""rowformat.paimon.tables.remove_orphan_files: the files no snapshot, tag,
branch or changelog names (what failed writes leave), older than a cutoff,
deleted; every file a table uses kept, stock pypaimon reading it as before."""
import datetime as dt
import json
import os
import shutil
import time

import pytest

import rowformat.paimon as rp
from rowformat.errors import DatasetError, TableMetadataError
from rowformat.paimon import tables

from ._tables import read, sort, write
from .test_expire import SCHEMA, _data, _data_files, _files, overwritten  # noqa: F401

SOON = dt.datetime.now() + dt.timedelta(days=1)   # as cutoff: every file is old enough


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
    out = tables.remove_orphan_files(path, older_than=SOON, dry_run=True)
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
    assert tables.remove_orphan_files(path, older_than=SOON).files == []
    assert _files(path) == before and len(_data_files(path)) == 6
    tagged = tables.open_table(path, tag="first")
    assert sort(read(tagged), "id").select(["id", "part", "name"]).equals(sort(_data(300), "id"))


def test_every_file_an_unexpired_snapshot_names_stays(overwritten):  # noqa: F811
    """Four overwrites, none expired: the replaced files are still named (by
    the older snapshots), so none is an orphan."""
    _, path = overwritten
    before = _files(path)
    assert tables.remove_orphan_files(path, older_than=SOON).files == []
    assert _files(path) == before


def test_a_damaged_manifest_list_stops_it_before_anything_is_deleted(with_orphans):
    _, path, _, orphans = with_orphans
    snap = json.load(open(os.path.join(path, "snapshot", "snapshot-2")))
    with open(os.path.join(path, "manifest", snap["deltaManifestList"]), "wb") as f:
        f.write(b"not avro")
    before = _files(path)
    with pytest.raises(TableMetadataError, match=snap["deltaManifestList"]):
        tables.remove_orphan_files(path, older_than=SOON)
    assert _files(path) == before


def test_older_than_is_required(with_orphans):
    _, path, _, _ = with_orphans
    with pytest.raises(DatasetError, match="older_than is required"):
        tables.remove_orphan_files(path, older_than=None)
    with pytest.raises(TypeError, match="datetime or a timedelta"):
        tables.remove_orphan_files(path, older_than=3600)


def test_not_a_table(tmp_path):
    with pytest.raises(DatasetError, match="not a Paimon table"):
        tables.remove_orphan_files(str(tmp_path))
