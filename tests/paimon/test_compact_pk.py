"""rowformat.paimon.tables.compact on primary-key tables (deduplicate; the
other merge engines: test_compact_engines):
Java's universal compaction (size amplification, size ratio, run count) and
full compaction, the merged rows written at the level Java writes them,
retractions dropped only where nothing lies beneath, sequence numbers kept so
later upserts win; stock pypaimon reading every snapshot as before."""
import pyarrow as pa
import pytest

from rowformat.errors import TableOptionError
from rowformat.paimon import tables

from ._tables import read, sort, write
from .test_compact import _delta, _live, _snapshot
from ._tables import needs_pypaimon_2_1

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("s", pa.string()),
                    ("v", pa.float64()), ("op", pa.string())])


def _upsert(t, ids, tag, op="+I"):
    n = len(ids)
    write(t, pa.table({"id": ids, "s": [None if i % 4 == 0 else f"{tag}.{i}" for i in ids],
                       "v": [float(i) * 0.5 for i in ids], "op": [op] * n}, schema=SCHEMA))


def _pk(wh, name="pk", **options):
    return wh.create(name, SCHEMA, primary_keys=["id"],
                     options={"bucket": "1", "rowkind.field": "op", **options})


def _levels(t):
    return sorted(d.level for d in _live(t).values())


def test_size_amplification_takes_every_run_to_the_max_level(wh):
    t = _pk(wh)
    for k in range(5):                   # 5 level-0 runs: the trigger
        _upsert(t, list(range(k * 3, k * 3 + 20)), k)
    before = sort(read(t))
    inputs = {d.meta.file_name: d.meta for d in _live(t).values()}
    got = tables.compact(t)
    assert (got.snapshot, got.rewritten, got.written) == (6, 5, 1)
    snap = _snapshot(t)
    assert (snap.commit_kind, snap.total_record_count) == ("COMPACT", before.num_rows)
    delta = _delta(t, snap)
    assert sorted((k, lvl) for k, _, lvl, _, _ in delta) == [(0, 5)] + [(1, 0)] * 5
    assert sorted(n for k, *_, n in delta if k == 1) == sorted(inputs)
    [out] = _live(t).values()
    assert (out.level, out.meta.file_source, out.rows) == (5, 1, before.num_rows)
    # the rows keep their sequence numbers: the newest input's highest is the output's
    assert out.meta.max_sequence_number == max(m.max_sequence_number for m in inputs.values())
    assert sort(read(wh.table("pk"))).equals(before)
    assert sort(read(tables.open_table(str(t.table_path), snapshot_id=5))).equals(before)
    # a later upsert wins over the compacted rows
    _upsert(t, [1, 2], "later")
    got_rows = {r["id"]: r["s"] for r in read(wh.table("pk")).to_pylist()}
    assert got_rows[1] == "later.1" and got_rows[2] == "later.2"


def test_below_the_trigger_nothing_then_full(wh):
    t = _pk(wh)
    for k in range(4):
        _upsert(t, list(range(k, k + 10)), k)
    before = sort(read(t))
    assert tables.compact(t).snapshot is None
    got = tables.compact(t, full=True)
    assert got.snapshot == 5 and _levels(t) == [5]
    assert sort(read(wh.table("pk"))).equals(before)
    # the only run already at the max level: a full compaction has nothing to do
    assert tables.compact(t, full=True).snapshot is None
    # the trigger is the table's
    t2 = _pk(wh, "two", **{"num-sorted-run.compaction-trigger": "2"})
    _upsert(t2, [1, 2], "a")
    _upsert(t2, [2, 3], "b")
    assert tables.compact(t2).snapshot == 3 and _levels(t2) == [2]    # num-levels = trigger + 1


def test_size_ratio_writes_below_the_max_level_and_keeps_retractions(wh):
    t = _pk(wh)
    _upsert(t, list(range(400)), "base")
    assert tables.compact(t, full=True).snapshot == 2        # one big run at level 5
    _upsert(t, [1, 2, 3], "x", op="-D")                      # retractions, over level 5
    for k in range(4):
        _upsert(t, [10 + k, 11 + k], k)
    before = sort(read(t))
    assert 1 not in before.column("id").to_pylist()
    got = tables.compact(t)
    # the five small level-0 runs, not the big one: to level 5 - 1, deletes kept
    assert (got.rewritten, got.written) == (5, 1)
    assert _levels(t) == [4, 5]
    [mid] = [d for d in _live(t).values() if d.level == 4]
    assert mid.meta.delete_row_count == 3
    assert sort(read(wh.table("pk"))).equals(before)
    # full: everything to level 5, the retractions dropped with the rows they deleted
    got = tables.compact(t, full=True)
    [only] = _live(t).values()
    assert (only.level, only.rows, only.meta.delete_row_count) == (5, before.num_rows, 0)
    assert sort(read(wh.table("pk"))).equals(before)


def test_everything_deleted_leaves_no_file(wh):
    t = _pk(wh)
    _upsert(t, [1, 2], "a")
    _upsert(t, [1, 2], "a", op="-D")
    got = tables.compact(t, full=True)
    assert (got.rewritten, got.written, got.files_after) == (2, 0, 0)
    assert read(wh.table("pk")).num_rows == 0


def test_a_concurrent_upsert_wins(wh):
    t = _pk(wh)
    for k in range(5):
        _upsert(t, list(range(k, k + 10)), k)
    other = wh.table("pk")

    def upsert(done, total):
        _upsert(other, [3, 4], "concurrent")

    assert tables.compact(t, progress=upsert).snapshot == 7
    rows = {r["id"]: r["s"] for r in read(wh.table("pk")).to_pylist()}
    assert rows[3] == "concurrent.3" and rows[4] is None      # (4 % 4 == 0: a null)
    assert rows[13] == "4.13"


@pytest.mark.parametrize("options, name", [
    ({"changelog-producer": "input"}, "changelog-producer = input"),
    ({"deletion-vectors.enabled": "true"}, "deletion-vectors.enabled"),
    ({"file.format": "parquet"}, "file.format = parquet"),
    ({"num-sorted-run.compaction-trigger": "x"}, "num-sorted-run.compaction-trigger"),
    ({"compaction.max-size-amplification-percent": "-1"},
     "compaction.max-size-amplification-percent"),
])
def test_not_supported_yet_and_bad_options_are_named(wh, options, name):
    t = _pk(wh, **options)
    with pytest.raises(TableOptionError, match=name.replace(".", r"\.")):
        tables.compact(t)


def test_streaming_reader_skips_the_compact_snapshot(wh):
    t = _pk(wh)
    for k in range(5):
        _upsert(t, [k, k + 100], k)
    assert tables.compact(t).snapshot == 6
    _upsert(t, [7], "after")                 # snapshot 7
    rb = wh.table("pk").new_stream_read_builder().with_poll_interval_ms(10)
    scan = rb.new_streaming_scan()
    scan.next_snapshot_id = 1
    seen, plans = [], scan.stream_sync()
    for _ in range(20):                      # bounded: one plan per APPEND snapshot
        plan = next(plans)
        seen.extend(rb.new_read().to_arrow(plan.splits()).column("id").to_pylist())
        if scan.next_snapshot_id > 7:
            break
    assert sorted(seen) == sorted([k for k in range(5)] + [k + 100 for k in range(5)] + [7])


def test_killed_midway_leaves_the_table_reading_as_before(wh):
    import subprocess
    import sys
    from .test_compact import _CHILD, ROOT, _disk
    t = _pk(wh)
    for k in range(5):
        _upsert(t, list(range(k, k + 10)), k)
    before = sort(read(t))
    live = set(_live(t))
    for point in ("rewritten", "manifests"):
        child = subprocess.run([sys.executable, "-c", _CHILD.format(root=ROOT), point,
                                str(t.table_path)], capture_output=True, timeout=120)
        assert child.returncode == -9, child.stderr.decode()[-2000:]
        assert _snapshot(wh.table("pk")).id == 5
        assert sort(read(wh.table("pk"))).equals(before)
        assert _disk(t) - live                   # only files no snapshot names were left
    assert tables.compact(str(t.table_path)).snapshot == 6
    assert sort(read(wh.table("pk"))).equals(before)


pytestmark = needs_pypaimon_2_1
