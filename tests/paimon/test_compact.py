"""rowformat.paimon.tables.compact on append tables: Paimon Java's picks
(BucketedAppendCompactManager, AppendCompactCoordinator), one COMPACT
snapshot whose manifests DELETE the inputs and ADD the outputs, stock
pypaimon reading every snapshot as before, concurrent commits merged or
given up cleanly, and a compaction killed midway leaving only orphans."""
import datetime as dt
import os
import signal
import subprocess
import sys
import textwrap

import pyarrow as pa
import pytest

from rowformat.errors import (CompactionConflictError, DatasetError, TableMetadataError,
                              TableOptionError)
from rowformat.paimon import tables

from ._tables import read, sort, typed_table, write
from ._tables import needs_pypaimon_2_1

SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.string()), ("p", pa.string())])
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _rows(i, n=5, p="a"):
    return pa.table({"id": [i * 100 + j for j in range(n)],
                     "s": [None if j % 3 == 0 else f"v{i}.{j}" for j in range(n)],
                     "p": [p] * n}, schema=SCHEMA)


def _live(table):
    return {d.meta.file_name: d for d in tables.data_files(tables.open_table(str(table.table_path)))}


def _disk(table):
    out = set()
    for d, _, names in os.walk(str(table.table_path)):
        out.update(n for n in names if n.startswith("data-"))
    return out


def _delta(table, snapshot):
    """(kind, bucket, level, file_source, file name) of a snapshot's delta manifests."""
    from pypaimon.manifest.manifest_file_manager import ManifestFileManager
    from pypaimon.manifest.manifest_list_manager import ManifestListManager
    out = []
    for m in ManifestListManager(table).read_delta(snapshot):
        for e in ManifestFileManager(table).read(m.file_name, drop_stats=False):
            out.append((e.kind, e.bucket, e.file.level, e.file.file_source, e.file.file_name))
    return out


def _snapshot(table, sid=None):
    sm = table.snapshot_manager()
    return sm.get_latest_snapshot() if sid is None else sm.get_snapshot_by_id(sid)


def _appended(wh, name, commits, options, data=_rows):
    t = wh.create(name, SCHEMA, options=options)
    for i in range(commits):
        write(t, data(i))
    return t


def test_bucketed_window_of_min_file_num(wh):
    # one bucket, 7 files: the 5 oldest are the task (compaction.min.file-num), 2 stay
    t = _appended(wh, "t", 7, {"bucket": "1", "bucket-key": "id"})
    before = sort(read(t))
    old = [f for f in _live(t)]
    files_by_age = [e.file.file_name for e in tables._compact._live_entries(t, _snapshot(t))]
    got = tables.compact(str(t.table_path))
    assert (got.snapshot, got.buckets, got.rewritten, got.written) == (8, 1, 5, 1)
    assert (got.files_before, got.files_after) == (7, 3)
    snap = _snapshot(t)
    assert (snap.id, snap.commit_kind, snap.delta_record_count, snap.total_record_count) == \
        (8, "COMPACT", 0, 35)
    delta = _delta(t, snap)
    deleted = sorted(n for k, _, _, _, n in delta if k == 1)
    added = [(b, lvl, src) for k, b, lvl, src, _ in delta if k == 0]
    assert deleted == sorted(files_by_age[:5])
    assert added == [(0, 0, 1)]                     # bucket 0, level 0, FileSource.COMPACT
    assert set(_live(t)) == (set(old) - set(deleted)) | {n for k, *_, n in delta if k == 0}
    assert sort(read(wh.table("t"))).equals(before)
    # time travel to the snapshot before: the same rows, from the old files
    prev = tables.open_table(str(t.table_path), snapshot_id=7)
    assert sort(read(prev)).equals(before)
    assert len(tables.data_files(prev)) == 7


def test_every_type_and_null_read_identically(wh):
    data = typed_table(60, seed=3)
    t = wh.create("typed", data.schema, options={"bucket": "2", "bucket-key": "id"})
    for i in range(6):
        write(t, data.slice(i * 10, 10))
    before = sort(read(t))
    got = tables.compact(t)
    assert got.snapshot == 7 and got.buckets == 2
    after = sort(read(wh.table("typed")))
    assert after.equals(before)
    assert after.num_rows == 60


def test_parquet_table_gets_parquet_files(wh):
    t = _appended(wh, "pq", 5, {"file.format": "parquet"})
    before = sort(read(t))
    got = tables.compact(t)
    assert got.written == 1
    assert [n.endswith(".parquet") for n in _live(t)] == [True]
    assert sort(read(wh.table("pq"))).equals(before)


def test_files_of_an_older_schema(wh):
    # three files before a column was added, three after: the five oldest, of both schemas
    from pypaimon.schema.data_types import AtomicType
    from pypaimon.schema.schema_change import SchemaChange
    t = _appended(wh, "ev", 3, {"bucket": "1", "bucket-key": "id"})
    wh.catalog.alter_table("db.ev", [SchemaChange.add_column("w", AtomicType("DOUBLE"))])
    t = wh.table("ev")
    for i in range(3, 6):
        write(t, _rows(i).append_column("w", pa.array([i * 0.5] * 5)))
    before = sort(read(t))
    assert before.column("w").null_count == 15
    got = tables.compact(t)
    assert (got.rewritten, got.written) == (5, 1)
    assert sorted(d.schema_id for d in _live(t).values()) == [1, 1]
    assert sort(read(wh.table("ev"))).equals(before)


def test_unaware_bucket_packs_small_files(wh):
    t = _appended(wh, "u", 6, {})            # bucket = -1
    before = sort(read(t))
    got = tables.compact(t)
    assert (got.rewritten, got.written, got.files_after) == (6, 1, 1)
    delta = _delta(t, _snapshot(t))
    assert sorted(k for k, *_ in delta) == [0] + [1] * 6
    assert {(b, lvl) for _, b, lvl, _, _ in delta} == {(0, 0)}
    assert sort(read(wh.table("u"))).equals(before)


def test_unaware_below_min_file_num_and_not_small_files(wh):
    t = _appended(wh, "few", 4, {})
    assert tables.compact(t) == tables._compact.Compacted(None, 0, 4, _bytes(t), 4, _bytes(t), 0, 0)
    assert _snapshot(t).id == 4
    # a file no smaller than target-file-size x compaction.small-file-ratio is left alone
    big = _appended(wh, "big", 6, {"target-file-size": "1kb", "compaction.small-file-ratio": "0.1"})
    assert tables.compact(big).snapshot is None


def _bytes(t):
    return sum(d.size for d in _live(t).values())


def test_full(wh):
    # three files, fewer than compaction.min.file-num: only a full compaction takes them
    t = _appended(wh, "f", 3, {"bucket": "1", "bucket-key": "id"})
    before = sort(read(t))
    assert tables.compact(t).snapshot is None
    got = tables.compact(t, full=True)
    assert (got.snapshot, got.rewritten, got.written) == (4, 3, 1)
    assert sort(read(wh.table("f"))).equals(before)
    # two files: no full compaction (FULL_COMPACT_MIN_FILE is 3)
    two = _appended(wh, "two", 2, {"bucket": "1", "bucket-key": "id"})
    assert tables.compact(two, full=True).snapshot is None


def test_partitions(wh):
    t = wh.create("parts", SCHEMA, partition_keys=["p"], options={"bucket": "1", "bucket-key": "id"})
    for i in range(5):
        write(t, pa.concat_tables([_rows(i, p="a"), _rows(i + 50, p="b")]))
    before = sort(read(t))
    assert tables.compact(t, dry_run=True).buckets == 2
    got = tables.compact(t, partitions=[{"p": "b"}])
    assert (got.buckets, got.rewritten) == (1, 5)
    by_partition = {}
    for d in _live(t).values():
        by_partition[d.partition] = by_partition.get(d.partition, 0) + 1
    assert by_partition == {"p=a": 5, "p=b": 1}
    assert sort(read(wh.table("parts"))).equals(before)
    with pytest.raises(DatasetError, match="no partition key 'q'"):
        tables.compact(t, partitions=[{"q": "b"}])


def test_dry_run_writes_nothing(wh):
    t = _appended(wh, "dry", 6, {"bucket": "1", "bucket-key": "id"})
    files = _disk(t)
    got = tables.compact(t, dry_run=True)
    assert (got.snapshot, got.rewritten, got.written, got.files_after) == (None, 5, 0, 6)
    assert _disk(t) == files and _snapshot(t).id == 6


@pytest.mark.parametrize("options, name", [
    ({"compaction.min.file-num": "many"}, "compaction.min.file-num"),
    ({"compaction.min.file-num": "0"}, "compaction.min.file-num"),
    ({"target-file-size": "huge"}, "target-file-size"),
    ({"compaction.small-file-ratio": "2"}, "compaction.small-file-ratio"),
    ({"manifest.merge-min-count": "0"}, "manifest.merge-min-count"),
])
def test_bad_options_are_named(wh, options, name):
    t = wh.create("bad", SCHEMA, options=options)       # (pypaimon's writes would fail on some)
    with pytest.raises(TableOptionError, match=name.replace(".", r"\.")):
        tables.compact(t)


def test_unsupported_tables_are_refused_naming_the_option(wh):
    pk = wh.create("pk", SCHEMA, primary_keys=["id"],
                   options={"bucket": "1", "changelog-producer": "lookup"})
    write(pk, _rows(0))
    with pytest.raises(TableOptionError, match="changelog-producer = lookup"):
        tables.compact(pk)
    dv = _appended(wh, "dv", 1, {"deletion-vectors.enabled": "true"})
    with pytest.raises(TableOptionError, match=r"deletion-vectors\.enabled"):
        tables.compact(dv)
    rt = _appended(wh, "rt", 1, {"row-tracking.enabled": "true"})
    with pytest.raises(TableOptionError, match=r"row-tracking\.enabled"):
        tables.compact(rt)


def test_a_table_without_snapshots(wh):
    t = wh.create("empty", SCHEMA)
    assert tables.compact(t).snapshot is None


def test_streaming_reader_sees_no_row_twice(wh):
    t = _appended(wh, "st", 5, {"bucket": "1", "bucket-key": "id"})
    assert tables.compact(t).snapshot == 6
    write(t, _rows(7))                      # snapshot 7, after the COMPACT one
    rb = wh.table("st").new_stream_read_builder().with_poll_interval_ms(10)
    scan = rb.new_streaming_scan()
    scan.next_snapshot_id = 1
    seen = []
    plans = scan.stream_sync()
    for _ in range(20):                     # bounded: one plan per APPEND snapshot
        plan = next(plans)
        seen.extend(rb.new_read().to_arrow(plan.splits()).column("id").to_pylist())
        if scan.next_snapshot_id > 7:
            break
    expected = sorted(i * 100 + j for i in (0, 1, 2, 3, 4, 7) for j in range(5))
    assert sorted(seen) == expected


def test_a_concurrent_append_is_merged(wh):
    t = _appended(wh, "ca", 5, {"bucket": "1", "bucket-key": "id"})
    before = read(t)
    other = wh.table("ca")

    def append_between_plan_and_commit(done, total):
        write(other, _rows(9))              # snapshot 6, by another writer

    got = tables.compact(t, progress=append_between_plan_and_commit)
    assert got.snapshot == 7
    assert _snapshot(t, 6).commit_kind == "APPEND" and _snapshot(t, 7).commit_kind == "COMPACT"
    assert sort(read(wh.table("ca"))).equals(sort(pa.concat_tables([before, _rows(9)])))
    assert len(_live(t)) == 2


def test_a_concurrent_overwrite_makes_it_give_up_leaving_nothing(wh):
    t = _appended(wh, "co", 5, {"bucket": "1", "bucket-key": "id"})
    other = wh.table("co")
    on_disk = _disk(t)

    def overwrite_between_plan_and_commit(done, total):
        write(other, _rows(9), overwrite=True)

    with pytest.raises(CompactionConflictError, match="concurrent commit"):
        tables.compact(t, progress=overwrite_between_plan_and_commit)
    assert _snapshot(t).id == 6 and _snapshot(t).commit_kind == "OVERWRITE"
    assert sort(read(wh.table("co"))).equals(_rows(9))
    # the compaction's file is gone: only the appends' and the overwrite's stay
    assert _disk(t) == on_disk | set(_live(t))


_CHILD = textwrap.dedent("""
    import os, signal, sys
    sys.path.insert(0, {root!r})
    from rowformat.paimon import tables
    point = sys.argv[1]
    kill = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)
    if point == "manifests":
        from pypaimon.write.file_store_commit import FileStoreCommit
        FileStoreCommit._generate_partition_statistics = kill   # manifests written, no snapshot
    tables.compact(sys.argv[2], progress=kill if point == "rewritten" else None)
""")


@pytest.mark.parametrize("point", ["rewritten", "manifests"])
def test_killed_midway_leaves_only_orphans(wh, point):
    t = wh.create("k", SCHEMA, options={"bucket": "2", "bucket-key": "id"})
    for i in range(6):
        write(t, _rows(i))
    before = sort(read(t))
    live = set(_live(t))
    child = subprocess.run([sys.executable, "-c", _CHILD.format(root=ROOT), point,
                            str(t.table_path)], capture_output=True, timeout=120)
    assert child.returncode == -signal.SIGKILL, child.stderr.decode()[-2000:]
    assert _snapshot(wh.table("k")).id == 6
    assert sort(read(wh.table("k"))).equals(before)
    left = _disk(t) - live
    assert left                             # the killed run's files
    then = (dt.datetime.now() - dt.timedelta(days=2)).timestamp()
    for d, _, names in os.walk(str(t.table_path)):
        for n in names:
            os.utime(os.path.join(d, n), (then, then))
    gone = tables.remove_orphan_files(str(t.table_path))
    assert {os.path.basename(p) for p in gone.files} >= left
    assert _disk(t) == live
    assert sort(read(wh.table("k"))).equals(before)
    # and it compacts afterwards
    assert tables.compact(str(t.table_path)).snapshot == 7
    assert sort(read(wh.table("k"))).equals(before)


def _base(table, snapshot):
    """(manifest names, {file name: (kind, row count, value stats, key stats)}) of a snapshot's base."""
    from pypaimon.manifest.manifest_file_manager import ManifestFileManager
    from pypaimon.manifest.manifest_list_manager import ManifestListManager
    names, entries = [], {}
    for m in ManifestListManager(table).read_base(snapshot):
        names.append(m.file_name)
        for e in ManifestFileManager(table).read(m.file_name, drop_stats=False):
            entries[e.file.file_name] = _facts(e)
    return names, entries


def _stats(s):
    return (getattr(s.min_values, "data", s.min_values), getattr(s.max_values, "data", s.max_values),
            list(s.null_counts or []))


def _facts(e):
    """An entry as comparable values: kind, rows, value and key statistics (their bytes)."""
    return (e.kind, e.file.row_count, _stats(e.file.value_stats), _stats(e.file.key_stats),
            e.file.value_stats_cols, e.file.min_sequence_number, e.file.level)


def _all_entries(table, snapshot):
    from pypaimon.manifest.manifest_file_manager import ManifestFileManager
    from pypaimon.manifest.manifest_list_manager import ManifestListManager
    out = {}
    for m in ManifestListManager(table).read_all(snapshot):
        for e in ManifestFileManager(table).read(m.file_name, drop_stats=False):
            out[e.file.file_name] = _facts(e)
    return out


def test_the_base_manifests_are_merged_as_javas_commit_merges_them(wh):
    # 32 commits, 32 manifests (>= manifest.merge-min-count): the COMPACT snapshot's base is
    # them merged into one, every entry with its statistics; the delta holds the compaction
    t = _appended(wh, "m", 32, {"bucket": "1", "bucket-key": "id", "metadata.stats-mode": "full"})
    before = sort(read(t))
    entries = _all_entries(t, _snapshot(t))
    assert len(entries) == 32
    got = tables.compact(t)
    assert got.snapshot == 33
    names, base = _base(t, _snapshot(t))
    assert len(names) == 1
    assert base == entries                             # 32 ADDs, stats as they were
    assert sort(read(wh.table("m"))).equals(before)
    assert sort(read(tables.open_table(str(t.table_path), snapshot_id=32))).equals(before)
    # a later compaction (6 manifests: base + 5 deltas since) leaves the base as it is
    for i in range(32, 37):
        write(t, _rows(i))
    from pypaimon.manifest.manifest_list_manager import ManifestListManager
    names_before = [m.file_name for m in ManifestListManager(t).read_all(_snapshot(t))]
    assert tables.compact(t).snapshot == 39
    assert _base(t, _snapshot(t))[0] == names_before


def test_its_snapshot_expired_by_a_concurrent_writer_keeps_its_files(wh, monkeypatch):
    # committed as snapshot 6; before compact() looks for it, another writer
    # commits 7 and expires 1..6: the files 7 names must stay (they were
    # deleted as a "conflict" before)
    from pypaimon.write.file_store_commit import FileStoreCommit
    t = _appended(wh, "ex", 5, {"bucket": "1", "bucket-key": "id"})
    before = read(t)
    notify = FileStoreCommit._notify_commit_callbacks

    def then_append_and_expire(self, snapshot, *args):
        notify(self, snapshot, *args)
        if snapshot.commit_kind == "COMPACT":
            write(wh.table("ex"), _rows(9))
            tables.expire_snapshots(str(t.table_path), retain_last=1)

    monkeypatch.setattr(FileStoreCommit, "_notify_commit_callbacks", then_append_and_expire)
    got = tables.compact(t)
    assert got.snapshot == 6 and (got.rewritten, got.written) == (5, 1)
    monkeypatch.setattr(FileStoreCommit, "_notify_commit_callbacks", notify)
    assert _snapshot(t).id == 7 and _snapshot(t, 6) is None
    assert sort(read(wh.table("ex"))).equals(sort(pa.concat_tables([before, _rows(9)])))
    assert set(_live(t)) <= _disk(t)



def test_a_commit_whose_create_raised_after_succeeding_keeps_its_files(wh, monkeypatch):
    # a lost reply: snapshot 6 is created but its create raises; pypaimon's
    # retry finds snapshot 6 is its own, so compact() reports it and keeps the files
    from pypaimon.snapshot.renaming_snapshot_commit import RenamingSnapshotCommit
    t = _appended(wh, "lr", 5, {"bucket": "1", "bucket-key": "id"})
    before = sort(read(t))
    create = RenamingSnapshotCommit.commit
    lost = []

    def created_then_raised(self, latest_uuid, snapshot, statistics):
        done = create(self, latest_uuid, snapshot, statistics)
        if snapshot.commit_kind == "COMPACT" and not lost:
            lost.append(snapshot.id)
            raise OSError("connection reset (the reply was lost)")
        return done

    monkeypatch.setattr(RenamingSnapshotCommit, "commit", created_then_raised)
    got = tables.compact(t)
    assert lost == [6] and got.snapshot == 6 and _snapshot(t).id == 6
    assert _snapshot(t, 6).commit_kind == "COMPACT"
    assert sort(read(wh.table("lr"))).equals(before)
    assert set(_live(t)) <= _disk(t)


def test_a_conflict_after_its_snapshot_was_expired_keeps_its_files(wh, monkeypatch):
    # the create raises; before the retry another writer overwrites the
    # bucket (snapshot 6, or the compaction's own 6?), appends (7) and
    # expires every snapshot but 7: whether the compaction committed cannot
    # be told (snapshot 6 is gone), so nothing is deleted
    from pypaimon.snapshot.renaming_snapshot_commit import RenamingSnapshotCommit
    from rowformat.errors import CompactionOutcomeError
    t = _appended(wh, "lx", 5, {"bucket": "1", "bucket-key": "id"})
    create = RenamingSnapshotCommit.commit
    lost = []

    def raised_then_overwritten(self, latest_uuid, snapshot, statistics):
        if snapshot.commit_kind == "COMPACT" and not lost:
            lost.append(snapshot.id)
            write(wh.table("lx"), _rows(9), overwrite=True)                  # 6
            write(wh.table("lx"), _rows(8))                                  # 7
            tables.expire_snapshots(str(t.table_path), retain_last=1)      # 1..6 gone
            raise OSError("connection reset (the reply was lost)")
        return create(self, latest_uuid, snapshot, statistics)

    monkeypatch.setattr(RenamingSnapshotCommit, "commit", raised_then_overwritten)
    with pytest.raises(CompactionOutcomeError, match="snapshot 6 cannot be found"):
        tables.compact(t)
    assert _snapshot(t).id == 7 and _snapshot(t, 6) is None
    assert sort(read(wh.table("lx"))).equals(sort(pa.concat_tables([_rows(9), _rows(8)])))
    assert len(_disk(t) - set(_live(t))) == 1    # the compaction's file, kept (an orphan)


def _rewrite_last_manifest(table, change):
    from pypaimon.manifest.manifest_file_manager import ManifestFileManager
    from pypaimon.manifest.manifest_list_manager import ManifestListManager
    m = ManifestListManager(table).read_delta(_snapshot(table))[0]
    files = ManifestFileManager(table)
    files.write(m.file_name, change(files.read(m.file_name, drop_stats=False)))


def test_a_file_added_twice_is_refused_naming_it(wh):
    # a damaged manifest, not a concurrent commit: refused before anything is written
    t = _appended(wh, "dup", 5, {"bucket": "1", "bucket-key": "id"})
    _rewrite_last_manifest(t, lambda entries: entries + entries)
    on_disk = _disk(t)
    with pytest.raises(TableMetadataError, match=r"snapshot 5: data file data-.* is added twice"):
        tables.compact(wh.table("dup"))
    assert _disk(t) == on_disk and _snapshot(t).id == 5


def test_a_negative_level_is_refused_naming_it(wh):
    # full compaction took every run but the level -1 file's and left it live
    t = wh.create("neg", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    for i in range(5):
        write(t, _rows(i))

    def level_minus_one(entries):
        entries[0].file.level = -1
        return entries
    _rewrite_last_manifest(t, level_minus_one)
    with pytest.raises(TableMetadataError, match=r"data file data-.* is at level -1"):
        tables.compact(wh.table("neg"), full=True)
    assert _snapshot(t).id == 5


pytestmark = needs_pypaimon_2_1
