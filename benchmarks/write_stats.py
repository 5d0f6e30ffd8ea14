"""The cost of the value statistics on writes (issue 42, item 1): the same
rows written with and without them, interleaved round by round in one run,
medians of ``--repeats`` rounds.

* ``.row`` writer: ``RowFileWriter`` of the benchmark table (``dataset.py``)
  without ``stats`` (the writer as it was) against ``stats`` min-max on every
  column (what ``truncate(16)`` collects);
* accelerated pypaimon: a write+commit of the same rows to a fresh append
  table with ``metadata.stats-mode=none`` (no collection: the write as it
  was) against the default (Java's ``truncate(16)``) and ``full``.

    .venv/bin/python benchmarks/write_stats.py [--rows 1000000] [--repeats 7]
        [--out benchmarks/results-write-stats.md]
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

import rowformat  # noqa: E402


def _row_writer(table, path, stats):
    schema = rowformat.schema(dataset.SCHEMA_TEXT)
    modes = ["min-max"] * len(schema.fields) if stats else None
    t0, c0 = time.perf_counter(), time.process_time()
    with rowformat.RowFileWriter(path, schema, stats=modes) as w:
        w.write(table)
    return time.perf_counter() - t0, time.process_time() - c0


def _encode_only(batches, schema, stats):
    """CPU seconds of BlockEncoder alone over the batches (no compression, no
    I/O): the part of a write the statistics add to."""
    from rowformat import _rowcodec
    enc = _rowcodec.BlockEncoder(schema, 65536, [2] * len(schema.fields) if stats else None)
    c0 = time.process_time()
    for batch in batches:
        enc.encode(batch, [])
    return time.process_time() - c0


def _pypaimon_write(table, root, options):
    from pypaimon import CatalogFactory, Schema

    import rowformat.paimon as rp
    shutil.rmtree(root, ignore_errors=True)
    cat = CatalogFactory.create({"warehouse": root})
    cat.create_database("db", True)
    cat.create_table("db.t", Schema.from_pyarrow_schema(
        table.schema, options={"file.format": "row", **options}), True)
    t = cat.get_table("db.t")
    with rp.accelerated():
        t0, c0 = time.perf_counter(), time.process_time()
        wb = t.new_batch_write_builder()
        w, c = wb.new_write(), wb.new_commit()
        w.write_arrow(table)
        c.commit(w.prepare_commit())
        w.close()
        c.close()
        return time.perf_counter() - t0, time.process_time() - c0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__),
                                                  "results-write-stats.md"))
    args = ap.parse_args(argv)
    table = dataset.generate(args.rows)
    tmp = tempfile.mkdtemp(prefix="rowformat-write-stats-")
    cases = {
        ".row writer, no stats": lambda: _row_writer(table, os.path.join(tmp, "a.row"), False),
        ".row writer, min-max of every column":
            lambda: _row_writer(table, os.path.join(tmp, "b.row"), True),
        "accelerated pypaimon, stats-mode none":
            lambda: _pypaimon_write(table, os.path.join(tmp, "w1"),
                                    {"metadata.stats-mode": "none"}),
        "accelerated pypaimon, default (truncate(16))":
            lambda: _pypaimon_write(table, os.path.join(tmp, "w2"), {}),
        "accelerated pypaimon, full":
            lambda: _pypaimon_write(table, os.path.join(tmp, "w3"),
                                    {"metadata.stats-mode": "full"}),
    }
    times = {k: [] for k in cases}
    from rowformat.arrow_cast import cast_batch
    from rowformat.arrow_types import to_arrow_schema
    schema = rowformat.schema(dataset.SCHEMA_TEXT)
    batches = [cast_batch(b, to_arrow_schema(schema))
               for b in table.combine_chunks().to_batches(max_chunksize=8192)]
    encode = {False: [], True: []}
    try:
        for fn in cases.values():                 # warm-up
            fn()
        for _ in range(args.repeats):             # interleaved rounds
            for name, fn in cases.items():
                times[name].append(fn())
            for _ in range(3):
                for stats in (False, True):
                    encode[stats].append(_encode_only(batches, schema, stats))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    wall = {k: statistics.median(t for t, _ in v) for k, v in times.items()}
    cpu = {k: statistics.median(c for _, c in v) for k, v in times.items()}
    bases = {".row writer": ".row writer, no stats",
             "accelerated pypaimon": "accelerated pypaimon, stats-mode none"}
    load = os.getloadavg()[0]
    lines = [f"# Write cost of the value statistics ({args.rows:,} rows of benchmarks/dataset.py, "
             f"{os.cpu_count()} cores, load average {load:.1f}, medians of {args.repeats} "
             f"interleaved rounds)", "",
             "Wall time, and CPU time of the process (all its threads: what the write costs a "
             "busy machine).", "",
             "| write | wall s | vs without stats | CPU s | vs without stats |",
             "|---|---:|---:|---:|---:|"]
    for name in cases:
        base = bases[name.split(",")[0]]
        lines.append(f"| {name} | {wall[name]:.3f} | {wall[name] / wall[base]:.3f}x | "
                     f"{cpu[name]:.3f} | {cpu[name] / cpu[base]:.3f}x |")
    lo, hi = min(encode[False]), min(encode[True])
    per_row = (hi - lo) / args.rows * 1e9
    lines += ["", f"The encoder alone (BlockEncoder over 8,192-row batches, no compression; CPU "
                  f"time, the least of {len(encode[False])} runs, the measure least moved by "
                  f"other load):", "",
              "| encode | CPU s | |", "|---|---:|---:|",
              f"| without stats | {lo:.4f} | 1.000x |",
              f"| min-max of every column | {hi:.4f} | {hi / lo:.3f}x |", "",
              f"The statistics cost {per_row:.1f} ns per row of this 10-column schema: "
              f"{(hi - lo) / cpu[bases['.row writer']] * 100:.1f}% of the `.row` writer's CPU "
              f"time and {(hi - lo) / cpu[bases['accelerated pypaimon']] * 100:.1f}% of the "
              f"accelerated pypaimon write's."]
    text = "\n".join(lines) + "\n"
    print(text)
    with open(args.out, "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
