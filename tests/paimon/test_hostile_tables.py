"""Expiry and orphan removal on tables whose metadata directories hold what
no Paimon writer makes (stray names, unlistable directories, external paths
anywhere): the latest snapshot and every file a kept snapshot, tag or
consumer needs stay, stock pypaimon reads the table as before, and what
cannot be decided is an error naming the path, with nothing deleted."""
import datetime as dt
import json
import os
import shutil
import warnings

import pytest

from rowformat.errors import DatasetError, StorageError
from rowformat.paimon import tables

from ._tables import read, sort
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


def _external_entry(path, target):
    """Every manifest entry (ADD and DELETE) of snapshot 1's data files made
    to name ``target`` as their external path, as a hostile or damaged
    manifest may."""
    import fastavro
    manifest_dir = os.path.join(path, "manifest")

    def records(name):
        with open(os.path.join(manifest_dir, name), "rb") as f:
            r = fastavro.reader(f)
            return r.writer_schema, list(r)

    snap = json.load(open(os.path.join(path, "snapshot", "snapshot-1")))
    first = {e["_FILE"]["_FILE_NAME"] for m in records(snap["deltaManifestList"])[1]
             for e in records(m["_FILE_NAME"])[1]}
    for name in os.listdir(manifest_dir):
        if name.startswith("manifest-") and not name.startswith("manifest-list-"):
            schema, entries = records(name)
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
    from rowformat import storage
    walked = []
    real = storage.walk
    monkeypatch.setattr(storage, "walk", lambda url, *a, **k: walked.append(url) or real(url, *a, **k))
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
