"""Append compaction (issue 43): an append table written in ``--commits``
small commits, scanned before and after ``rowformat.paimon.tables.compact``,
against the same rows written in one commit; and the compaction's throughput
against an accelerated write of the same rows. Scans are accelerated pypaimon
reads of the whole table, interleaved round by round (one-commit table,
many-commit table at its last APPEND snapshot by time travel: the same
files as before compacting, the compacted table), medians of ``--repeats``.

    .venv/bin/python benchmarks/compaction.py [--rows 1000000] [--commits 200]
        [--repeats 5] [--out benchmarks/results-compaction.md]
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


def _table(root, name, schema):
    from pypaimon import CatalogFactory, Schema
    cat = CatalogFactory.create({"warehouse": root})
    cat.create_database("db", True)
    cat.create_table(f"db.{name}", Schema.from_pyarrow_schema(
        schema, options={"file.format": "row"}), True)
    return cat.get_table(f"db.{name}")


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
        runs = {"one commit": [], f"{args.commits} commits": [], "compacted": []}
        for _ in range(args.repeats):
            for label, t in zip(runs, (one, before, after)):
                s, n = _scan(t)
                assert n == args.rows, (label, n)
                runs[label].append(s)
        med = {k: statistics.median(v) for k, v in runs.items()}
        load = os.getloadavg()[0]
    finally:
        shutil.rmtree(root, ignore_errors=True)
    lines = [
        "# Append compaction (benchmarks/compaction.py)", "",
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
    ]
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
