"""Spark writes through paimon-row carry Paimon's value statistics with no
option set (Java's default truncate(16)), and stock pypaimon's planner skips
the table's files by them (issue 42, item 1)."""
from __future__ import annotations

import os

import pyarrow.compute as pc

from rowformat.paimon import tables
from rowformat.spark import FORMAT_NAME


def _manifest_files(path):
    import fastavro
    root = os.path.join(path, "manifest")
    out = []
    for name in sorted(os.listdir(root)):
        if name.startswith("manifest-") and not name.startswith("manifest-list-"):
            with open(os.path.join(root, name), "rb") as f:
                out += [e["_FILE"] for e in fastavro.reader(f) if e["_KIND"] == 0]
    return out


def test_spark_writes_have_javas_default_stats_and_stock_pypaimon_prunes_by_them(
        spark, tmp_path):
    path = str(tmp_path / "t")
    spark.range(0, 4000, numPartitions=4) \
        .selectExpr("id", "concat('a-long-user-name-', id) AS name") \
        .write.format(FORMAT_NAME).mode("overwrite").save(path)
    files = _manifest_files(path)
    assert len(files) == 4
    table = tables.open_table(path)
    fields = table.fields
    from pypaimon.table.row.binary_row import BinaryRow
    ranges = []
    for f in files:
        vs = f["_VALUE_STATS"]
        assert f["_VALUE_STATS_COLS"] is None and vs["_NULL_COUNTS"] == [0, 0]
        lo, hi = BinaryRow(vs["_MIN_VALUES"], fields), BinaryRow(vs["_MAX_VALUES"], fields)
        ranges.append((lo.get_field(0), hi.get_field(0)))
        # names are 17+ characters: cut to 16, the max rounded up (its 16th, 'e', to 'f')
        assert lo.get_field(1) == "a-long-user-name" and hi.get_field(1) == "a-long-user-namf"
    assert sorted(ranges) == [(0, 999), (1000, 1999), (2000, 2999), (3000, 3999)]

    rb = table.new_read_builder()
    rb = rb.with_filter(rb.new_predicate_builder().equal("id", 2500))
    splits = rb.new_scan().plan().splits()
    assert sum(len(s.files) for s in splits) == 1
    assert rb.new_read().to_arrow(splits).filter(pc.field("id") == 2500).num_rows == 1
