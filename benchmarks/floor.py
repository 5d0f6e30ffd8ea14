"""The ZSTD floor, measured on the blocks of a real .row file.

What no .row reader or writer can beat with the same blocks and libzstd:
  one_block        decompress one (median-sized) block, warm, one thread
  one_block_pread  pread that block's frame + decompress it (what an uncached lookup must do)
  decomp_1t        decompress all blocks on one thread
  decomp_2t        decompress all blocks on two threads (the faster of a ThreadPoolExecutor
                   and python-zstandard's multi_decompress_to_buffer(threads=2))
  comp_1t/comp_2t  compress all (uncompressed) blocks at the file's level on one/two threads

    python benchmarks/floor.py path/to/file.row [--level 1] [--repeat 5]
"""
from __future__ import annotations

import argparse
import os
import statistics
import struct
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import zstandard


def _median_time(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def load_blocks(path: str):
    """(frames, uncompressed sizes, offsets) of every block of a .row file, via rowformat's
    block index (the frames are read straight from the file)."""
    import rowformat
    from dataset import SCHEMA_TEXT
    with rowformat.RowFileReader(path, rowformat.schema(SCHEMA_TEXT)) as r:
        comp = r.block_index.compressed_sizes.astype(np.int64)
        usize = r.block_index.uncompressed_sizes.astype(np.int64)
        offsets = r.block_index.offsets.astype(np.int64)
    with open(path, "rb") as f:
        data = f.read(int(comp.sum()))
    frames = [data[o:o + c] for o, c in zip(offsets.tolist(), comp.tolist())]
    return frames, usize, offsets


def _split(items, parts):
    k = (len(items) + parts - 1) // parts
    return [items[i:i + k] for i in range(0, len(items), k)]


def measure(path: str, level: int = 1, repeat: int = 5, block_ids=None) -> dict:
    """Floor timings in seconds. ``block_ids``: also time decompressing just those blocks
    on two threads (the floor of a batched lookup touching them)."""
    frames, usize, offsets = load_blocks(path)
    sizes = usize.tolist()
    d = zstandard.ZstdDecompressor()
    out = {"blocks": len(frames), "compressed_bytes": int(sum(map(len, frames))),
           "uncompressed_bytes": int(usize.sum())}

    # one block: the median-sized one, decompressed many times, warm
    order = np.argsort([len(f) for f in frames])
    mid = int(order[len(order) // 2])
    frame, us = frames[mid], sizes[mid]
    n_one = 300

    def one():
        for _ in range(n_one):
            d.decompress(frame, max_output_size=us)
    out["one_block"] = _median_time(one, repeat) / n_one

    fd = os.open(path, os.O_RDONLY)
    off, clen = int(offsets[mid]), len(frame)

    def one_pread():
        for _ in range(n_one):
            d.decompress(os.pread(fd, clen, off), max_output_size=us)
    out["one_block_pread"] = _median_time(one_pread, repeat) / n_one
    os.close(fd)

    def decomp_list(fs, ss):
        dd = zstandard.ZstdDecompressor()
        return [dd.decompress(f, max_output_size=s) for f, s in zip(fs, ss)]

    out["decomp_1t"] = _median_time(lambda: decomp_list(frames, sizes), repeat)

    pool = ThreadPoolExecutor(2)

    def decomp_threads(fs, ss):
        parts = list(zip(_split(fs, 2), _split(ss, 2)))
        return list(pool.map(lambda p: decomp_list(*p), parts))

    t_pool = _median_time(lambda: decomp_threads(frames, sizes), repeat)
    sizes_buf = struct.pack(f"={len(sizes)}Q", *sizes)
    try:
        t_multi = _median_time(
            lambda: d.multi_decompress_to_buffer(frames, decompressed_sizes=sizes_buf, threads=2), repeat)
    except Exception:        # noqa: BLE001 - optional fast path of python-zstandard
        t_multi = float("inf")
    out["decomp_2t_pool"], out["decomp_2t_multi"] = t_pool, t_multi
    out["decomp_2t"] = min(t_pool, t_multi)

    if block_ids is not None:
        ids = sorted(set(int(b) for b in block_ids))
        fs = [frames[b] for b in ids]
        ss = [sizes[b] for b in ids]
        out["take_blocks"] = len(ids)
        out["decomp_2t_take"] = _median_time(lambda: decomp_threads(fs, ss), repeat)

    raw = decomp_list(frames, sizes)
    c = zstandard.ZstdCompressor(level=level, write_content_size=False, write_checksum=False)

    def comp_list(blocks):
        cc = zstandard.ZstdCompressor(level=level, write_content_size=False, write_checksum=False)
        return [cc.compress(b) for b in blocks]

    out["comp_1t"] = _median_time(lambda: comp_list(raw), repeat)
    t_pool = _median_time(lambda: list(pool.map(comp_list, _split(raw, 2))), repeat)
    try:
        t_multi = _median_time(lambda: c.multi_compress_to_buffer(raw, threads=2), repeat)
    except Exception:        # noqa: BLE001
        t_multi = float("inf")
    out["comp_2t_pool"], out["comp_2t_multi"] = t_pool, t_multi
    out["comp_2t"] = min(t_pool, t_multi)
    pool.shutdown()
    return out


def main(argv=None):
    import sys
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("path")
    p.add_argument("--level", type=int, default=1)
    p.add_argument("--repeat", type=int, default=5)
    a = p.parse_args(argv)
    for k, v in measure(a.path, a.level, a.repeat).items():
        print(f"{k:20} {v * 1e3:12.3f} ms" if isinstance(v, float) else f"{k:20} {v:12}")


if __name__ == "__main__":
    main()
