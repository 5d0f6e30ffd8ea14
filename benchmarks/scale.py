"""Scale: the reader's structures at 1M, 10M and 100M rows (issue 41's targets).

For each row count N (the seeded benchmark table, dataset.py, written in chunks of 1M rows
so that 100M rows never sit in memory):

- opening a file of N rows: wall time (median of --opens opens, the file in the page cache)
  and the bytes the open reader holds (tracemalloc: numpy's arrays and every Python object),
  per block; targets at 100M rows: at most 40 bytes a block and 10 ms;
- a RowDataset epoch (BlockShuffleSampler, window 16, batches of 256) over the same N rows in
  1, 6 and 60 files: CPU seconds per row (process time: every thread), and the 60-file
  dataset's block cache after each batch against its budget (cache_bytes, 64 MiB, one for
  all files); target: 60 files cost at most 1.3x one file (epochs only up to --epoch-rows);
- a 10k-row take of random rows of the one-file copy: peak RSS above the open reader
  (VmHWM, peakmem.py) against the result's bytes, with the default block cache and without
  one; target: at most the result plus the documented budget (scatter.TAKE_BUDGET, plus the
  reader's cache_bytes when it has a cache).

    python benchmarks/scale.py [--rows 1000000,10000000,100000000] [--dir /tmp/scale]
        [--epoch-rows 10000000] [--out benchmarks/results-scale.md] [--keep]

Files go under --dir and are deleted afterwards (unless --keep): 100M rows take about 7 GB
in one file, and the epoch's 6- and 60-file copies as much again each (so epochs stop at
--epoch-rows). Check ``df -h`` first.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
import tracemalloc

import numpy as np
import pyarrow as pa

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import dataset  # noqa: E402
import peakmem  # noqa: E402

import rowformat  # noqa: E402
from rowformat.row import scatter  # noqa: E402
from rowformat.row.writer import RowFileWriter  # noqa: E402

CHUNK = 1_000_000
BATCH = 256
TAKE_ROWS = 10_000
CACHE_BYTES = 64 << 20          # RowDataset's and RowFileReader's default


def write_files(directory: str, rows: int, files: int) -> list[str]:
    """``rows`` rows of the seeded table in ``files`` files of (about) equal size."""
    os.makedirs(directory, exist_ok=True)
    per = -(-rows // files)
    paths = []
    for f in range(files):
        path = os.path.join(directory, f"part-{f:03d}.row")
        lo, hi = f * per, min(rows, (f + 1) * per)
        with RowFileWriter(path, dataset.SCHEMA_TEXT) as w:
            for start in range(lo, hi, CHUNK):
                n = min(CHUNK, hi - start)
                w.write(dataset.generate(n, seed=start // CHUNK))
        paths.append(path)
    return paths


def measure_open(path: str, opens: int) -> dict:
    times, cpu = [], []
    for _ in range(opens):
        t0, c0 = time.perf_counter(), time.thread_time()
        r = rowformat.RowFileReader(path, dataset.SCHEMA_TEXT)
        cpu.append(time.thread_time() - c0)
        times.append(time.perf_counter() - t0)
        r.close()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    r = rowformat.RowFileReader(path, dataset.SCHEMA_TEXT)
    held = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    out = {"blocks": r.num_blocks, "index_bytes": r.footer.index_length,
           "open_ms": statistics.median(times) * 1e3, "open_cpu_ms": statistics.median(cpu) * 1e3,
           "held": held,
           "per_block": held / max(r.num_blocks, 1)}
    r.close()
    return out


def measure_epoch(paths: list[str]) -> dict:
    ds = rowformat.RowDataset(paths, schema=dataset.SCHEMA_TEXT, cache_bytes=CACHE_BYTES)
    order = np.fromiter(iter(rowformat.BlockShuffleSampler(ds, window=16, seed=0)), np.int64)
    ds.take(order[:BATCH])
    most = 0
    c0, w0 = time.process_time(), time.perf_counter()
    for lo in range(0, len(order), BATCH):
        ds.take(order[lo:lo + BATCH])
        most = max(most, ds._files.cache.nbytes)
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    ds.close()
    return {"cpu_us_row": cpu / len(order) * 1e6, "wall_us_row": wall / len(order) * 1e6,
            "cache_max": most, "budget": CACHE_BYTES}


def measure_take(path: str, cache_bytes: int) -> dict:
    """In a fresh process (this one's allocator holds what the writes freed,
    which a take would reuse unseen)."""
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--take", path,
                          str(cache_bytes)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _take(path: str, cache_bytes: int) -> None:
    rows = np.random.default_rng(7).integers(0, rowformat.read_metadata(path).footer.total_rows,
                                             TAKE_ROWS)
    with rowformat.RowFileReader(path, dataset.SCHEMA_TEXT, cache_bytes=cache_bytes) as r:
        # the decoders, pools and the module a take of rounds imports (pyarrow.compute,
        # 25 MB) exist before the measure; the allocator holds nothing a take freed
        pa.concat_tables([r.take(rows[:10])] * 2).take(pa.array([0]))
        r.clear_cache()
        with peakmem.Peak() as p:
            t = r.take(rows)
        result = t.nbytes
        del t
    budget = scatter.TAKE_BUDGET + cache_bytes
    print(json.dumps({"cache_bytes": cache_bytes, "extra": p.extra, "result": result,
                      "budget": budget, "method": p.method}))


def mb(n: float) -> str:
    return f"{n / 1e6:,.1f} MB"


def report(results: list[dict], args) -> str:
    lines = ["# Scale: the reader at 1M, 10M and 100M rows", "",
             f"`python benchmarks/scale.py --rows {args.rows} --epoch-rows {args.epoch_rows}`, "
             f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
             f"load average {os.getloadavg()[0]:.1f} at the end. The seeded benchmark table "
             f"(`dataset.py`), 64 KiB blocks. Targets: issue 41.", "",
             "## Opening a file", "",
             "Open: median of the opens, CPU time of the opening thread (a shared machine's load "
             "lengthens wall time, not CPU time) and wall time.", "",
             "| rows | blocks | on-disk index | open: CPU (wall) | held by the open reader | per block | target |",
             "|---:|---:|---:|---:|---:|---:|---|"]
    for r in results:
        o = r["open"]
        lines.append(f"| {r['rows']:,} | {o['blocks']:,} | {o['index_bytes'] / 1e3:,.0f} KB | "
                     f"{o['open_cpu_ms']:.2f} ms ({o['open_ms']:.2f} ms) | {mb(o['held'])} "
                     f"| {o['per_block']:.0f} B | <= 40 B and <= 10 ms at 100M rows |")
    lines += ["", "## RowDataset epoch: the same rows in 1, 6 and 60 files", "",
              "BlockShuffleSampler (window 16, seed 0), batches of 256 rows, one epoch; CPU is "
              "process time (all threads) per row; the block cache is the dataset's one cache "
              "(its largest size after a batch, against its budget).", "",
              "| rows | files | CPU / row | wall / row | vs 1 file (CPU) | block cache (max) | budget |",
              "|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        for files, e in r.get("epochs", {}).items():
            base = r["epochs"][1]["cpu_us_row"]
            lines.append(f"| {r['rows']:,} | {files} | {e['cpu_us_row']:.2f} us | "
                         f"{e['wall_us_row']:.2f} us | {e['cpu_us_row'] / base:.2f}x | "
                         f"{mb(e['cache_max'])} | {mb(e['budget'])} |")
    lines += ["", "## A 10k-row take", "",
              "10,000 random rows of the one-file copy, all columns; peak RSS above the open "
              "reader (VmHWM reset before the take) against the result's bytes; the budget is "
              "scatter.TAKE_BUDGET (32 MiB) plus the reader's block cache.", "",
              "| rows | cache_bytes | peak above the reader | result | result + budget | within |",
              "|---:|---:|---:|---:|---:|---|"]
    for r in results:
        for t in r["takes"]:
            ok = t["extra"] <= t["result"] + t["budget"]
            lines.append(f"| {r['rows']:,} | {mb(t['cache_bytes'])} | {mb(t['extra'])} | "
                         f"{mb(t['result'])} | {mb(t['result'] + t['budget'])} | "
                         f"{'yes' if ok else '**no**'} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--take"]:
        _take(argv[1], int(argv[2]))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", default="1000000,10000000,100000000")
    ap.add_argument("--epoch-rows", type=int, default=10_000_000,
                    help="epochs (1, 6 and 60 files) only for row counts up to this")
    ap.add_argument("--opens", type=int, default=7)
    ap.add_argument("--dir", default="/tmp/rowformat-scale")
    ap.add_argument("--out", default=os.path.join(HERE, "results-scale.md"))
    ap.add_argument("--keep", action="store_true", help="keep the files written")
    args = ap.parse_args(argv)
    results = []
    try:
        for n in [int(x) for x in args.rows.split(",")]:
            base = os.path.join(args.dir, str(n))
            t0 = time.perf_counter()
            one = write_files(os.path.join(base, "1"), n, 1)
            print(f"{n:,} rows written in {time.perf_counter() - t0:.0f} s", flush=True)
            r: dict = {"rows": n, "open": measure_open(one[0], args.opens)}
            print(f"  open: {r['open']}", flush=True)
            r["takes"] = [measure_take(one[0], c) for c in (CACHE_BYTES, 0)]
            print(f"  take: {r['takes']}", flush=True)
            if n <= args.epoch_rows:
                r["epochs"] = {1: measure_epoch(one)}
                for files in (6, 60):
                    paths = write_files(os.path.join(base, str(files)), n, files)
                    r["epochs"][files] = measure_epoch(paths)
                    if not args.keep:
                        shutil.rmtree(os.path.join(base, str(files)))
                print(f"  epochs: {r['epochs']}", flush=True)
            if not args.keep:
                shutil.rmtree(base)
            results.append(r)
    finally:
        if not args.keep:
            shutil.rmtree(args.dir, ignore_errors=True)
    text = report(results, args)
    with open(args.out, "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
