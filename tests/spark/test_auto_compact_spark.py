"""The paimon-row source's writes compact and expire after each commit, on the
driver, as accelerated pypaimon commits do (rowformat.paimon._after_commit;
(write-only: tests/paimon/test_auto_compact.py)."""
from tests.paimon._tables import needs_pypaimon_2_1

from rowformat.paimon import tables

FORMAT = "paimon-row"
pytestmark = needs_pypaimon_2_1


def _kinds(path):
    t = tables.open_table(path)
    sm = t.snapshot_manager()
    return [sm.get_snapshot_by_id(i).commit_kind
            for i in range(1, sm.get_latest_snapshot().id + 1)
            if sm.get_snapshot_by_id(i) is not None]


def test_primary_key_writes_compact_at_the_trigger(spark, tmp_path):
    path = str(tmp_path / "db.db" / "pk")
    for k in range(5):          # 5 upserts of keys 0..9: one level-0 run each
        w = (spark.range(0, 10, 1, 1).selectExpr("id", f"concat('v{k}-', id) as s")
             .write.format(FORMAT).option("primaryKeys", "id").option("bucket", "1")
             .option("paimon.snapshot.num-retained.min", "3")
             .option("paimon.snapshot.num-retained.max", "3"))
        w.mode("append").save(path)
    got = sorted(tuple(r) for r in spark.read.format(FORMAT).load(path).collect())
    assert got == [(i, f"v4-{i}") for i in range(10)]
    levels = sorted(d.level for d in tables.data_files(tables.open_table(path)))
    # the 5th run: every run to level 5 in a COMPACT snapshot; then expiry
    # keeps 3 snapshots (num-retained.max): 4 and 5 (APPEND), 6 (COMPACT)
    assert _kinds(path) == ["APPEND", "APPEND", "COMPACT"] and levels == [5]
