"""Compaction (issue 43). Append: a table written in ``--commits`` small
commits, scanned before and after ``rowformat.paimon.tables.compact``,
against the same rows written in one commit; the compaction's throughput
against an accelerated write of the same rows. Primary key (the issue's
case): ``--pk-rows`` rows in 2 buckets, then ``--upserts`` upserts of
``--pk-rows``/20 rows each into a ``write-only`` table and, side by side,
one compacted automatically after each commit (the upserts' times
compared); scanned (merged): the write-only table before and after
``compact``, the automatically compacted one, against the final rows
freshly written. Scans are accelerated pypaimon reads
of the whole table, interleaved round by round (the reference, the table at
its last APPEND snapshot by time travel: the files before compacting, the
compacted table), medians of ``--repeats``.

    .venv/bin/python benchmarks/compaction.py [--rows 1000000] [--commits 200]
        [--pk-rows 200000] [--upserts 40] [--repeats 5]
        [--out benchmarks/results-compaction.md]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import dataset  # noqa: E402


def _table(root, name, schema, primary_keys=None, **options):
    from pypaimon import CatalogFactory, Schema
    cat = CatalogFactory.create({"warehouse": root})
    cat.create_database("db", True)
    cat.create_table(f"db.{name}", Schema.from_pyarrow_schema(
        schema, primary_keys=primary_keys, options={"file.format": "row", **options}), True)
    return cat.get_table(f"db.{name}")


def _interleaved(tables_by_label: dict, rows: int, repeats: int) -> dict:
    runs = {k: [] for k in tables_by_label}
    for _ in range(repeats):
        for label, t in tables_by_label.items():
            s, n = _scan(t)
            assert n == rows, (label, n)
            runs[label].append(s)
    return {k: statistics.median(v) for k, v in runs.items()}


def _primary_key(root, args) -> list[str]:
    import numpy as np
    import pyarrow as pa
    from rowformat.paimon import tables
    n, step = args.pk_rows, args.pk_rows // 20
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.float64()),
                        ("s", pa.string())])
    rng = np.random.default_rng(7)

    def rows(ids, round_):
        return pa.table({"id": ids, "v": rng.random(len(ids)),
                         "s": [f"r{round_}-{i}" for i in ids]}, schema=schema)

    base = rows(np.arange(n), 0)
    upserts = [rows(rng.choice(n, step, replace=False), r) for r in range(1, args.upserts + 1)]
    # the same upserts into two tables, side by side: one write-only (no
    # compaction, no expiry: pypaimon as it commits), one with the automatic
    # compaction and expiry after each accelerated commit (the defaults);
    # each round alternates which goes first
    pk = _table(root, "pk", schema, ["id"], bucket="2", **{"write-only": "true"})
    auto = _table(root, "auto", schema, ["id"], bucket="2")
    _write(pk, base)
    _write(auto, base)
    upsert_s = {"pk": 0.0, "auto": 0.0}
    for r, data in enumerate(upserts):
        for label in (("pk", "auto") if r % 2 == 0 else ("auto", "pk")):
            t0 = time.perf_counter()
            _write(pk if label == "pk" else auto, data)
            upsert_s[label] += time.perf_counter() - t0
    last = pk.snapshot_manager().get_latest_snapshot().id
    files_before = len(tables.data_files(pk))
    auto_files = tables.data_files(auto)
    auto_levels = {}
    for f in auto_files:
        auto_levels.setdefault(f.bucket, []).append(f.level)
    auto_snaps = [auto.snapshot_manager().get_snapshot_by_id(i)
                  for i in range(1, auto.snapshot_manager().get_latest_snapshot().id + 1)]
    compacts = sum(1 for s in auto_snaps if s is not None and s.commit_kind == "COMPACT")
    rows_of = {f.path: f.rows for f in tables.data_files(pk)}
    t0 = time.perf_counter()
    got = tables.compact(str(pk.table_path))
    compact_s = time.perf_counter() - t0
    # the compaction's throughput: the rows of the files it rewrote (its input)
    kept = {f.path for f in tables.data_files(pk)}
    compacted_rows = sum(r for p, r in rows_of.items() if p not in kept)
    before = tables.open_table(str(pk.table_path), snapshot_id=last)
    final = _read_all(before)
    assert _read_all(auto).sort_by("id").equals(final.sort_by("id"))
    fresh = _table(root, "fresh", schema, ["id"], bucket="2")
    t0 = time.perf_counter()
    _write(fresh, final)
    fresh_s = time.perf_counter() - t0
    med = _interleaved({"fresh": fresh, "before": before,
                        "after": tables.open_table(str(pk.table_path)),
                        "auto": tables.open_table(str(auto.table_path))}, n, args.repeats)
    layout = "; ".join(f"bucket {b}: levels {sorted(v)}" for b, v in sorted(auto_levels.items()))
    return [
        f"Primary key: {n:,} rows in 2 buckets, then {args.upserts} accelerated upserts of "
        f"{step:,} rows, the same upserts into two tables side by side (each round alternating "
        f"which goes first): one `write-only = true` (no compaction, no expiry: "
        f"{upsert_s['pk']:.1f} s), one with the automatic compaction and expiry after each "
        f"commit (default options: {upsert_s['auto']:.1f} s, "
        f"**{upsert_s['auto'] / upsert_s['pk']:.2f}x**; {compacts} COMPACT snapshots; its "
        f"files at the end: {layout}). The write-only table then compacted once by `compact` "
        f"(universal compaction, default options: {got.rewritten} files of "
        f"{compacted_rows:,} rows rewritten as {got.written} in {compact_s:.2f} s, "
        f"**{compacted_rows / compact_s:,.0f} rows/s**, one COMPACT snapshot; the accelerated "
        f"write of the final {final.num_rows:,} rows into a fresh table: {fresh_s:.2f} s, "
        f"**{final.num_rows / fresh_s:,.0f} rows/s**, one run each); merged scans:", "",
        "| table | data files | scan (s) | vs freshly written |", "|---|---:|---:|---:|",
        f"| the final rows freshly written | {len(tables.data_files(fresh))} | {med['fresh']:.3f} "
        f"| 1.00x |",
        f"| after {args.upserts} upserts, write-only | {files_before} | {med['before']:.3f} | "
        f"{med['before'] / med['fresh']:.2f}x |",
        f"| that table compacted by `compact` | {got.files_after} | {med['after']:.3f} | "
        f"{med['after'] / med['fresh']:.2f}x |",
        f"| after {args.upserts} upserts with automatic compaction | {len(auto_files)} | "
        f"{med['auto']:.3f} | {med['auto'] / med['fresh']:.2f}x |", ""]


def _read_all(t):
    import rowformat.paimon as rp
    with rp.accelerated():
        rb = t.new_read_builder()
        return rb.new_read().to_arrow(rb.new_scan().plan().splits())


def _write(t, data):
    import rowformat.paimon as rp
    with rp.accelerated():
        wb = t.new_batch_write_builder()
        w, c = wb.new_write(), wb.new_commit()
        w.write_arrow(data)
        c.commit(w.prepare_commit())
        w.close()
        c.close()


def _scan(t) -> float:
    import rowformat.paimon as rp
    with rp.accelerated():
        t0 = time.perf_counter()
        rb = t.new_read_builder()
        n = rb.new_read().to_arrow(rb.new_scan().plan().splits()).num_rows
        return time.perf_counter() - t0, n


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--commits", type=int, default=200)
    ap.add_argument("--pk-rows", type=int, default=200_000)
    ap.add_argument("--upserts", type=int, default=40)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__),
                                                  "results-compaction.md"))
    args = ap.parse_args(argv)
    from rowformat.paimon import tables
    data = dataset.generate(args.rows)
    root = tempfile.mkdtemp(prefix="rowformat-compaction-")
    try:
        one = _table(root, "one", data.schema)
        t0 = time.perf_counter()
        _write(one, data)
        write_s = time.perf_counter() - t0
        many = _table(root, "many", data.schema)
        step = -(-args.rows // args.commits)
        t0 = time.perf_counter()
        for i in range(0, args.rows, step):
            _write(many, data.slice(i, step))
        many_write_s = time.perf_counter() - t0
        last_append = many.snapshot_manager().get_latest_snapshot().id
        files_before = len(tables.data_files(many))
        t0 = time.perf_counter()
        got = tables.compact(str(many.table_path))
        compact_s = time.perf_counter() - t0
        before = tables.open_table(str(many.table_path), snapshot_id=last_append)
        after = tables.open_table(str(many.table_path))
        med = _interleaved({"one commit": one, f"{args.commits} commits": before,
                            "compacted": after}, args.rows, args.repeats)
        pk_lines = _primary_key(root, args) if args.upserts else []
        load = os.getloadavg()[0]
    finally:
        shutil.rmtree(root, ignore_errors=True)
    lines = [
        "# Compaction (benchmarks/compaction.py)", "",
        f"{args.rows:,} rows of `dataset.py` in a `file.format=row` append table (`bucket = -1`), "
        f"written in {args.commits} accelerated commits ({many_write_s:.1f} s) and compacted by "
        f"`rowformat.paimon.tables.compact` with the default options; the same rows in one "
        f"commit as the reference. Full scans by accelerated pypaimon, interleaved, medians of "
        f"{args.repeats} rounds; load average {load:.2f} (2 shared cores).", "",
        "| table | data files | scan (s) | vs one commit |", "|---|---:|---:|---:|",
        f"| one commit | 1 | {med['one commit']:.3f} | 1.00x |",
        f"| {args.commits} commits | {files_before} | {med[f'{args.commits} commits']:.3f} | "
        f"{med[f'{args.commits} commits'] / med['one commit']:.2f}x |",
        f"| compacted | {got.files_after} | {med['compacted']:.3f} | "
        f"{med['compacted'] / med['one commit']:.2f}x |", "",
        f"Compaction: {got.rewritten} files rewritten as {got.written} in {compact_s:.2f} s, "
        f"{args.rows / compact_s:,.0f} rows/s; the one-commit accelerated write of the same "
        f"rows: {write_s:.2f} s, {args.rows / write_s:,.0f} rows/s (one run each).", "",
    ] + pk_lines
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
