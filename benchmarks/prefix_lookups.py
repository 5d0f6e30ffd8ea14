"""Uncached single-row lookups with and without ``prefix_lookups``, side by
side in one run, against the one-block ZSTD floor and Arrow IPC
(uncompressed, memory-mapped), by where the row sits in its block.

    .venv/bin/python benchmarks/prefix_lookups.py [--rows 200000] [--lookups 1000]
                                                  [--decoder-alone 300] [--walk-alone 50]

The file is ``dataset.py``'s rows written by RowFileWriter (64 KiB blocks,
level 1); the same random rows are looked up by every contender, one after
the other for each row (interleaved), each with its block's cache emptied.
With --decoder-alone N, it times instead the decoder by itself
(PrefixBlock.advance to 1-100% of a block, from a new PrefixBlock) against
libzstd decompressing the whole block, N times on each of 4 blocks spread
over the file, interleaved. With --walk-alone N, it times the walk alone:
PrefixBlock.rows(decoder, i) finding the starts of rows 0..i (i: a quarter,
half and three quarters of the block's rows) on a PrefixBlock already
decompressed whole, for every block of the file, N times.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import zstandard

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from dataset import SCHEMA_TEXT, generate  # noqa: E402

import rowformat  # noqa: E402


def _block(r, b: int) -> tuple[int, int, int, int]:
    """Block ``b``'s (offset, compressed size, uncompressed size, rows)."""
    t = r._table
    return (*t.frame(b), t.usize(b), t.rows(b))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--lookups", type=int, default=1000)
    ap.add_argument("--decoder-alone", type=int, default=0, metavar="N")
    ap.add_argument("--walk-alone", type=int, default=0, metavar="N")
    a = ap.parse_args()
    table = generate(a.rows)
    tmp = pathlib.Path(tempfile.mkdtemp())
    path, arrow_path = tmp / "d.row", tmp / "d.arrow"
    with rowformat.RowFileWriter(path, SCHEMA_TEXT) as w:
        w.write(table)
    with ipc.new_file(arrow_path, table.schema) as w:
        w.write_table(table, max_chunksize=10_000)
    data = path.read_bytes()
    if a.decoder_alone:
        return decoder_alone(path, data, a.decoder_alone)
    if a.walk_alone:
        return walk_alone(path, data, a.walk_alone)
    plain = rowformat.RowFileReader(path, SCHEMA_TEXT, memory_map=True)
    prefix = rowformat.RowFileReader(path, SCHEMA_TEXT, memory_map=True, prefix_lookups=True)
    arrow = ipc.open_file(pa.memory_map(str(arrow_path)))
    arrow_starts = np.cumsum([0] + [arrow.get_batch(k).num_rows for k in range(arrow.num_record_batches)])
    d = zstandard.ZstdDecompressor()
    rng = np.random.default_rng(7)
    rows = rng.integers(0, a.rows, a.lookups).tolist()
    t = {k: [] for k in ("floor", "get", "get_prefix", "take", "take_prefix", "arrow")}
    where = []
    for i in rows:
        off, size, usize, n = _block(plain, b := plain._table.find(i))
        where.append((i - plain._table.start(b)) / max(n - 1, 1))
        frame = data[off:off + size]
        t0 = time.perf_counter_ns(); d.decompress(frame, usize); t["floor"].append(time.perf_counter_ns() - t0)
        for key, r, fn in (("get", plain, "get"), ("get_prefix", prefix, "get"),
                           ("take", plain, "take"), ("take_prefix", prefix, "take")):
            r.clear_cache()
            arg = i if fn == "get" else [i]
            t0 = time.perf_counter_ns(); getattr(r, fn)(arg); t[key].append(time.perf_counter_ns() - t0)
        k = int(np.searchsorted(arrow_starts, i, side="right") - 1)
        t0 = time.perf_counter_ns()
        arrow.get_batch(k).slice(i - int(arrow_starts[k]), 1).to_pylist()
        t["arrow"].append(time.perf_counter_ns() - t0)
    where = np.asarray(where)
    load = os.getloadavg()
    print(f"{a.lookups} uncached lookups of {a.rows:,} rows ({plain.num_blocks} blocks), "
          f"load average {load[0]:.2f}; medians (p90) in us\n")
    print("| contender | all rows | rows in a block's first half | second half |")
    print("|---|---:|---:|---:|")
    names = {"floor": "decompress the row's whole block (libzstd, from memory)",
             "get": "get(i)", "get_prefix": "get(i), prefix_lookups=True",
             "take": "take([i])", "take_prefix": "take([i]), prefix_lookups=True",
             "arrow": "Arrow IPC uncompressed, mmap: batch slice to_pylist"}
    for key, label in names.items():
        x = np.asarray(t[key]) / 1e3
        print(f"| {label} | {np.median(x):.1f} ({np.percentile(x, 90):.1f}) | "
              f"{np.median(x[where < 0.5]):.1f} | {np.median(x[where >= 0.5]):.1f} |")
    fl = np.median(t["floor"])
    print(f"\nget(i) with prefix_lookups / one-block floor: {np.median(t['get_prefix']) / fl:.2f}x "
          f"(without: {np.median(t['get']) / fl:.2f}x)")


def decoder_alone(path, data, n):
    from rowformat._rowcodec import PrefixBlock
    r = rowformat.RowFileReader(path, SCHEMA_TEXT)
    blocks = [_block(r, b) for b in np.linspace(0, r.num_blocks - 2, 4).astype(int)]
    shares = (0.01, 0.10, 0.25, 0.50, 0.75, 1.0)
    t = {k: [] for k in (*shares, "libzstd")}
    d = zstandard.ZstdDecompressor()
    for _ in range(n):
        for off, size, usize, _rows in blocks:
            frame = data[off:off + size]
            for share in shares:
                p = PrefixBlock(frame, usize, 0)
                t0 = time.perf_counter_ns(); p.advance(int(usize * share)); t[share].append(time.perf_counter_ns() - t0)
            t0 = time.perf_counter_ns(); d.decompress(frame, usize); t["libzstd"].append(time.perf_counter_ns() - t0)
    print(f"decoder alone, {n} x {len(blocks)} blocks of {r.num_blocks}, load average {os.getloadavg()[0]:.2f}; "
          f"medians in us\n")
    print("| " + " | ".join(f"{s:.0%}" for s in shares) + " | libzstd, whole block |")
    print("|" + "---:|" * (len(shares) + 1))
    print("| " + " | ".join(f"{np.median(t[k]) / 1e3:.1f}" for k in t) + " |")


def walk_alone(path, data, n):
    from rowformat._rowcodec import PrefixBlock
    r = rowformat.RowFileReader(path, SCHEMA_TEXT)
    dec = r._store.decoder(None)
    shares = (0.25, 0.5, 0.75)
    t = {s: [] for s in shares}
    rows = {s: [] for s in shares}
    for _ in range(n):
        for off, size, usize, nrows in (_block(r, b) for b in range(r.num_blocks)):
            frame = data[off:off + size]
            for share in shares:
                i = int(nrows * share)
                p = PrefixBlock(frame, usize, nrows)
                p.advance(usize)
                t0 = time.perf_counter_ns(); p.rows(dec, i); t[share].append(time.perf_counter_ns() - t0)
                rows[share].append(i + 1)
    print(f"the walk alone (PrefixBlock.rows on a decompressed block), {n} x {r.num_blocks} blocks, "
          f"load average {os.getloadavg()[0]:.2f}; medians in us (ns per row walked)\n")
    print("| " + " | ".join(f"rows 0..{s:.0%}" for s in shares) + " |")
    print("|" + "---:|" * len(shares))
    print("| " + " | ".join(f"{np.median(t[s]) / 1e3:.2f} ({np.median(np.divide(t[s], rows[s])):.1f})"
                            for s in shares) + " |")


if __name__ == "__main__":
    main()
