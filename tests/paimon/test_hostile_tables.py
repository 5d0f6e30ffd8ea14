"""Expiry and orphan removal on tables whose metadata directories hold what
no Paimon writer makes (stray names, unlistable directories, external paths
anywhere): the latest snapshot and every file a kept snapshot, tag or
consumer needs stay, stock pypaimon reads the table as before, and what
cannot be decided is an error naming the path, with nothing deleted."""
import copy
import datetime as dt
import json
import os
import shutil
import uuid
import warnings

import pytest

from rowformat.errors import DatasetError, StorageError, TableMetadataError
from rowformat.paimon import tables

from ._tables import read, sort, write
from .test_expire import _data, _data_files, _files, overwrite, overwritten  # noqa: F401

DAY = dt.timedelta(days=1)


def _snapshot_dir(path):
    return os.path.join(path, "snapshot")


@pytest.mark.parametrize("stray", ["snapshot-04", "snapshot-004", "snapshot-٤", "snapshot-４",
                                   "snapshot-+4", "snapshot- 4"])
@pytest.mark.parametrize("retain_last", [1, 2])
def test_a_stray_name_is_no_snapshot_and_the_latest_stays(overwritten, stray, retain_last):
    """A copy of snapshot-4 under a name that parses as 4 (leading zeros,
    other scripts' digits) is not a second snapshot 4: the last retain_last
    stay and read as before."""
    t, path = overwritten
    want = sort(read(t))
    shutil.copy(os.path.join(_snapshot_dir(path), "snapshot-4"),
                os.path.join(_snapshot_dir(path), stray))
    out = tables.expire_snapshots(path, retain_last=retain_last)
    assert out.snapshots == list(range(1, 5 - retain_last)) and out.earliest == 5 - retain_last
    kept = {n for n in os.listdir(_snapshot_dir(path)) if n.startswith("snapshot-")}
    assert kept == {stray} | {f"snapshot-{i}" for i in range(5 - retain_last, 5)}
    assert sort(read(t)) == want


def _unlistable(path, how):
    """``path`` (a directory) made something that exists and cannot be
    listed: a dangling symlink (an unmounted volume), a symlink loop, a file."""
    shutil.move(path, path + ".away")
    if how == "dangling":
        os.symlink(path + ".gone", path)
    elif how == "loop":
        os.symlink(path, path)
    else:
        open(path, "wb").close()


def _back(path):
    os.unlink(path)
    shutil.move(path + ".away", path)


@pytest.mark.parametrize("how", ["dangling", "loop", "file"])
@pytest.mark.parametrize("directory", ["snapshot", "tag", "consumer", "branch"])
def test_an_unlistable_metadata_directory_stops_both_with_nothing_deleted(overwritten, how,
                                                                          directory):
    t, path = overwritten
    t.create_tag("keep", 1)
    os.makedirs(os.path.join(path, "consumer"))
    with open(os.path.join(path, "consumer", "consumer-reader"), "w") as f:
        json.dump({"nextSnapshot": 2}, f)
    if directory == "branch":
        t.create_branch("b") if hasattr(t, "create_branch") else \
            os.makedirs(os.path.join(path, "branch", "branch-b"))
    stray = os.path.join(path, "part=0", "bucket-0", "data-never-committed.row")
    open(stray, "wb").close()
    then = (dt.datetime.now() - 2 * DAY).timestamp()
    for f in _files(path):
        os.utime(os.path.join(path, f), (then, then))
    before = _files(path)
    target = os.path.join(path, directory)
    _unlistable(target, how)
    runs = [lambda: tables.expire_snapshots(path, retain_last=1)]
    if directory != "consumer":     # consumers keep snapshots, not files
        runs.append(lambda: tables.remove_orphan_files(path, older_than=DAY))
    for run in runs:
        with pytest.raises(StorageError, match=f"{target}: exists but cannot be listed"):
            run()
    _back(target)
    assert _files(path) == before
    assert len(read(t)) == 300


def test_orphan_removal_refuses_a_table_with_data_files_and_no_snapshot(overwritten):
    """An empty snapshot/ (a volume mounted empty, a table whose first commit
    failed) would make every data file an orphan."""
    t, path = overwritten
    moved = path + ".snapshots"
    shutil.move(_snapshot_dir(path), moved)
    os.makedirs(_snapshot_dir(path))
    before = _files(path)
    with pytest.raises(DatasetError, match="no snapshot, tag or branch at all.*nothing deleted"):
        tables.remove_orphan_files(path, older_than=dt.timedelta(0))
    assert _files(path) == before


def _avro(path, name):
    """(writer schema, records) of the table's ``manifest/<name>``."""
    import fastavro
    with open(os.path.join(path, "manifest", name), "rb") as f:
        r = fastavro.reader(f)
        return r.writer_schema, list(r)


def _external_entry(path, target):
    """Every manifest entry (ADD and DELETE) of snapshot 1's data files made
    to name ``target`` as their external path, as a hostile or damaged
    manifest may."""
    import fastavro
    manifest_dir = os.path.join(path, "manifest")

    snap = json.load(open(os.path.join(path, "snapshot", "snapshot-1")))
    first = {e["_FILE"]["_FILE_NAME"] for m in _avro(path, snap["deltaManifestList"])[1]
             for e in _avro(path, m["_FILE_NAME"])[1]}
    for name in os.listdir(manifest_dir):
        if name.startswith("manifest-") and not name.startswith("manifest-list-"):
            schema, entries = _avro(path, name)
            for e in entries:
                if e["_FILE"]["_FILE_NAME"] in first:
                    e["_FILE"]["_EXTERNAL_PATH"] = target
            with open(os.path.join(manifest_dir, name), "wb") as f:
                fastavro.writer(f, schema, entries)


@pytest.mark.parametrize("form", ["file:{}", "file://{}", "{}"])
def test_expiry_never_deletes_an_external_file_outside_the_tables_roots(overwritten, tmp_path,
                                                                         form):
    t, path = overwritten
    victim = tmp_path / "precious.txt"
    victim.write_bytes(b"not the table's")
    _external_entry(path, form.format(victim))
    with pytest.warns(UserWarning, match=f"names the external file '{victim}', which is not "
                                         f"under the table's data-file.external-paths \\(none\\)"):
        tables.expire_snapshots(path, retain_last=1)
    assert victim.read_bytes() == b"not the table's"


@pytest.mark.parametrize("target", ["//", "//usr/x", "/usr/../usr/x"])
def test_an_external_path_is_looked_up_never_its_directory_walked(overwritten, target,
                                                                  monkeypatch):
    t, path = overwritten
    _external_entry(path, target)
    from rowformat.io import fileio
    walked = []
    real = fileio.walk
    monkeypatch.setattr(fileio, "walk", lambda url, *a, **k: walked.append(url) or real(url, *a, **k))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        out = tables.expire_snapshots(path, retain_last=1, dry_run=True)
    assert out.snapshots == [1, 2, 3]
    assert all(w.startswith(path + os.sep) for w in walked), walked
    assert any("not under the table's data-file.external-paths" in str(w.message) for w in seen)


@pytest.mark.parametrize("scheme", ["file://", "file://localhost", "file:"])
def test_expiry_deletes_an_external_file_under_the_declared_roots(wh, tmp_path, scheme):
    """Data files pypaimon writes under data-file.external-paths go with
    their snapshots (each URI form pypaimon writes); the external
    directory's other files stay."""
    ext = tmp_path / "ext"
    ext.mkdir()
    (ext / "other.txt").write_bytes(b"x")
    t = wh.create("ext", _data(1).schema, options={"data-file.external-paths": f"{scheme}{ext}",
                                                   "data-file.external-paths.strategy":
                                                       "round-robin"})
    for k in range(3):
        overwrite(t, _data(100, start=1000 * k))
    external = lambda: {os.path.relpath(os.path.join(d, n), ext)  # noqa: E731
                        for d, _, ns in os.walk(ext) for n in ns}
    before = external()
    assert len(before) == 4
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = tables.expire_snapshots(os.path.join(wh.root, "db.db", "ext"), retain_last=1)
    assert out.snapshots == [1, 2]
    after = external()
    assert len(after) == 2 and "other.txt" in after and after < before
    assert sort(read(t)) == sort(_data(100, start=2000))


def _two_appends(wh):
    """Snapshots 1 and 2 of an unpartitioned table, 10 rows each."""
    t = wh.create("two", _data(1).schema)
    for k in range(2):
        write(t, _data(10, start=100 * k))
    return t, os.path.join(wh.root, "db.db", "two")


def _rewrite_kept_manifest(path, change):
    """Snapshot 2's base manifest rewritten as ``change(entries)`` gives it
    (a new manifest file, named by the manifest list in place)."""
    import fastavro
    md = os.path.join(path, "manifest")
    snap = json.load(open(os.path.join(path, "snapshot", "snapshot-2")))
    list_schema, lists = _avro(path, snap["baseManifestList"])
    schema, entries = _avro(path, lists[0]["_FILE_NAME"])
    entries = change(entries)
    name = f"manifest-{uuid.uuid4()}-0"
    with open(os.path.join(md, name), "wb") as f:
        fastavro.writer(f, schema, entries)
    lists[0].update(_FILE_NAME=name, _FILE_SIZE=os.path.getsize(os.path.join(md, name)),
                    _NUM_DELETED_FILES=sum(e["_KIND"] for e in entries))
    with open(os.path.join(md, snap["baseManifestList"]), "wb") as f:
        fastavro.writer(f, list_schema, lists)


def test_a_kept_file_named_by_an_external_path_inside_the_table_stays(wh):
    """Kept snapshot 2 names snapshot 1's file by its path in the table,
    snapshot 1 by its bare name: it is the same file, and it stays."""
    t, path = _two_appends(wh)

    def by_path(entries):
        for e in entries:
            e["_FILE"]["_EXTERNAL_PATH"] = "file:" + os.path.join(path, "bucket-0",
                                                                 e["_FILE"]["_FILE_NAME"])
        return entries

    _rewrite_kept_manifest(path, by_path)
    want = sort(read(t))
    assert tables.expire_snapshots(path, retain_last=1).snapshots == [1]
    assert sort(read(t)) == want


def test_an_add_is_undone_only_by_a_delete_of_the_same_entry(wh):
    """Paimon's identity of an entry includes its extra files: ADD(A, extra
    [x]) then DELETE(A, no extras) leaves A live, for pypaimon and expiry."""
    t, path = _two_appends(wh)

    def add_then_delete(entries):
        e = entries[0]
        add = copy.deepcopy(e)
        add["_FILE"]["_EXTRA_FILES"] = [e["_FILE"]["_FILE_NAME"] + ".idx"]
        open(os.path.join(path, "bucket-0", e["_FILE"]["_FILE_NAME"] + ".idx"), "wb").close()
        delete = copy.deepcopy(e)
        delete["_KIND"], delete["_FILE"]["_EXTRA_FILES"] = 1, []
        return [add, delete]

    _rewrite_kept_manifest(path, add_then_delete)
    want = sort(read(t))
    assert tables.expire_snapshots(path, retain_last=1).snapshots == [1]
    assert sort(read(t)) == want


@pytest.mark.parametrize("spelling", ["{d}//bucket-0/{n}", "{d}/./bucket-0/{n}"])
def test_a_kept_external_path_that_is_not_canonical_stops_expiry(wh, tmp_path, spelling):
    ext = tmp_path / "ext"
    ext.mkdir()
    t = wh.create("ext", _data(1).schema, options={"data-file.external-paths": f"file://{ext}",
                                                   "data-file.external-paths.strategy":
                                                       "round-robin"})
    for k in range(2):
        write(t, _data(10, start=100 * k))
    path = os.path.join(wh.root, "db.db", "ext")

    def respell(entries):
        for e in entries:
            e["_FILE"]["_EXTERNAL_PATH"] = "file:" + spelling.format(d=ext,
                                                                    n=e["_FILE"]["_FILE_NAME"])
        return entries

    _rewrite_kept_manifest(path, respell)
    before = _files(path) | {str(p) for p in ext.rglob("*")}
    with pytest.raises(TableMetadataError, match="a path that is not canonical.*nothing is "
                                                 "deleted"):
        tables.expire_snapshots(path, retain_last=1)
    assert _files(path) | {str(p) for p in ext.rglob("*")} == before


def test_a_tag_made_while_expiry_reads_stops_it(overwritten, monkeypatch):
    """Another process tags snapshot 3 after expiry read the tags and before
    it deletes: it stops, and the tag reads."""
    from rowformat.paimon import _expire
    t, path = overwritten
    want = sort(read(t))
    stock = _expire._external_files

    def meanwhile(table, paths):
        t.create_tag("made-meanwhile", 3)
        return stock(table, paths)

    monkeypatch.setattr(_expire, "_external_files", meanwhile)
    before = _files(path)
    with pytest.raises(TableMetadataError, match="added or removed while expiry read the "
                                                 "table: nothing deleted"):
        tables.expire_snapshots(path, retain_last=1)
    assert _files(path) - before == {"tag/tag-made-meanwhile"}
    assert sort(read(t)) == want


def test_a_gap_in_the_snapshot_ids_stops_expiry(overwritten):
    t, path = overwritten
    os.unlink(os.path.join(_snapshot_dir(path), "snapshot-2"))
    before = _files(path)
    with pytest.raises(TableMetadataError, match=r"snapshots 1-4 lack \[2\].*nothing deleted"):
        tables.expire_snapshots(path, retain_last=1)
    assert _files(path) == before


def test_a_branch_linked_to_a_volume_not_mounted_stops_both(overwritten):
    t, path = overwritten
    os.makedirs(os.path.join(path, "branch"))
    os.symlink(path + ".unmounted", os.path.join(path, "branch", "branch-b"))
    before = _files(path)
    for run in (lambda: tables.expire_snapshots(path, retain_last=1),
                lambda: tables.remove_orphan_files(path, older_than=dt.timedelta(0))):
        with pytest.raises(StorageError, match="branch-b: exists but cannot be listed"):
            run()
    assert _files(path) == before


def test_orphan_removal_never_follows_a_symlinked_directory(wh, overwritten):
    """Table b's bucket-0 linked to table a's: a's files are not b's orphans."""
    t, path = overwritten
    other = wh.create("other", _data(1).schema)
    write(other, _data(10))
    other_path = os.path.join(wh.root, "db.db", "other")
    shutil.move(os.path.join(path, "part=0"), os.path.join(path, "part=0.real"))
    os.symlink(os.path.join(other_path, "bucket-0"), os.path.join(path, "part=0"))
    before = _files(other_path)
    with pytest.raises(StorageError, match="a symlink to a directory, not followed"):
        tables.remove_orphan_files(path, older_than=dt.timedelta(0))
    assert _files(other_path) == before and len(read(other)) == 10


@pytest.mark.parametrize("where", ["child", "backup/old"])
def test_orphan_removal_leaves_bucket_directories_outside_the_tables_layout(overwritten, where):
    """A table nested in this one, a backup copy: their bucket-0 is not the
    table's; nor is a partition directory's _SUCCESS under a key named bucket-k."""
    t, path = overwritten
    stray = os.path.join(path, where, "bucket-0", "data-x.row")
    os.makedirs(os.path.dirname(stray))
    open(stray, "wb").close()
    success = os.path.join(path, "bucket-k=1", "_SUCCESS")
    os.makedirs(os.path.dirname(success))
    open(success, "wb").close()
    then = (dt.datetime.now() - 2 * DAY).timestamp()
    for f in (stray, success):
        os.utime(f, (then, then))
    tables.remove_orphan_files(path, older_than=DAY)
    assert os.path.exists(stray) and os.path.exists(success)
