"""The ZSTD floor, measured on the blocks of a real .row file.

What no .row reader or writer can beat with the same blocks and libzstd:
  one_block        decompress one (median-sized) block, warm, one thread
  one_block_pread  pread that block's frame + decompress it (what an uncached lookup must do)
  decomp_1t        decompress all blocks on one thread
  decomp_2t        decompress all blocks on two threads (the faster of a ThreadPoolExecutor
                   and python-zstandard's multi_decompress_to_buffer(threads=2))
  comp_1t/comp_2t  compress all (uncompressed) blocks at the file's level on one/two threads
                   (one-shot frames: the fastest way, but not the bytes Paimon Java writes)
  comp_2t_java     the same as the frames Java writes (streaming, no content size) on two
                   threads: the floor of a byte-identical writer

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


def split_in(items, parts):
    k = (len(items) + parts - 1) // parts
    return [items[i:i + k] for i in range(0, len(items), k)]


def decompress_list(fs, ss):
    d = zstandard.ZstdDecompressor()
    return [d.decompress(f, max_output_size=s) for f, s in zip(fs, ss)]


class Floor:
    """The floor operations on one .row file's blocks, as callables, so that a caller can
    interleave them with the library's own operations (same machine load for both)."""

    def __init__(self, path: str, level: int = 1):
        self.path = path
        self.level = level
        self.frames, usize, self.offsets = load_blocks(path)
        self.sizes = usize.tolist()
        self.d = zstandard.ZstdDecompressor()
        self.pool = ThreadPoolExecutor(2)
        self._raw = None
        self.info = {"blocks": len(self.frames), "compressed_bytes": int(sum(map(len, self.frames))),
                     "uncompressed_bytes": int(usize.sum())}

    def close(self):
        self.pool.shutdown()

    # -- decompression
    def decompress_block(self, b: int):
        return self.d.decompress(self.frames[b], max_output_size=self.sizes[b])

    def decompress_blocks(self, ids=None, how: str = "1t"):
        fs = self.frames if ids is None else [self.frames[b] for b in ids]
        ss = self.sizes if ids is None else [self.sizes[b] for b in ids]
        if how == "1t":
            return decompress_list(fs, ss)
        if how == "2t-pool":
            return list(self.pool.map(lambda p: decompress_list(*p), zip(split_in(fs, 2), split_in(ss, 2))))
        if how == "2t-multi":
            buf = struct.pack(f"={len(ss)}Q", *ss)
            return self.d.multi_decompress_to_buffer(fs, decompressed_sizes=buf, threads=2)
        raise ValueError(how)

    # -- compression
    @property
    def raw(self):
        if self._raw is None:
            self._raw = decompress_list(self.frames, self.sizes)
        return self._raw

    def _comp_list(self, blocks):
        c = zstandard.ZstdCompressor(level=self.level, write_content_size=False, write_checksum=False)
        return [c.compress(b) for b in blocks]

    def _comp_java(self, blocks):
        c = zstandard.ZstdCompressor(level=self.level, write_content_size=False, write_checksum=False)
        out = []
        for b in blocks:
            o = c.compressobj()
            out.append(o.compress(b) + o.flush())
        return out

    def compress_blocks(self, how: str = "1t"):
        raw = self.raw
        if how == "1t":
            return self._comp_list(raw)
        if how == "2t-java":
            return list(self.pool.map(self._comp_java, split_in(raw, 2)))
        if how == "2t-pool":
            return list(self.pool.map(self._comp_list, split_in(raw, 2)))
        if how == "2t-multi":
            c = zstandard.ZstdCompressor(level=self.level, write_content_size=False, write_checksum=False)
            return c.multi_compress_to_buffer(raw, threads=2)
        raise ValueError(how)


def _best_2t(fn, repeat):
    """(median pool time, median multi_*_to_buffer time, the better of the two)."""
    t_pool = _median_time(lambda: fn("2t-pool"), repeat)
    try:
        t_multi = _median_time(lambda: fn("2t-multi"), repeat)
    except Exception:        # noqa: BLE001 - optional fast path of python-zstandard
        t_multi = float("inf")
    return t_pool, t_multi, min(t_pool, t_multi)


def measure(path: str, level: int = 1, repeat: int = 5, block_ids=None) -> dict:
    """Floor timings in seconds, measured back to back. ``block_ids``: also time
    decompressing just those blocks (the floor of a batched lookup touching them)."""
    fl = Floor(path, level)
    out = dict(fl.info)
    order = np.argsort([len(f) for f in fl.frames])
    mid = int(order[len(order) // 2])       # the median-sized block, decompressed warm
    n_one = 300

    def one():
        for _ in range(n_one):
            fl.decompress_block(mid)
    out["one_block"] = _median_time(one, repeat) / n_one

    fd = os.open(path, os.O_RDONLY)
    off, clen, us = int(fl.offsets[mid]), len(fl.frames[mid]), fl.sizes[mid]

    def one_pread():
        for _ in range(n_one):
            fl.d.decompress(os.pread(fd, clen, off), max_output_size=us)
    out["one_block_pread"] = _median_time(one_pread, repeat) / n_one
    os.close(fd)

    out["decomp_1t"] = _median_time(lambda: fl.decompress_blocks(None, "1t"), repeat)
    out["decomp_2t_pool"], out["decomp_2t_multi"], out["decomp_2t"] = _best_2t(
        lambda how: fl.decompress_blocks(None, how), repeat)
    if block_ids is not None:
        ids = sorted(set(int(b) for b in block_ids))
        out["take_blocks"] = len(ids)
        out["decomp_1t_take"] = _median_time(lambda: fl.decompress_blocks(ids, "1t"), repeat)
        out["decomp_2t_take"] = _best_2t(lambda how: fl.decompress_blocks(ids, how), repeat)[2]
    out["comp_1t"] = _median_time(lambda: fl.compress_blocks("1t"), repeat)
    out["comp_2t_pool"], out["comp_2t_multi"], out["comp_2t"] = _best_2t(fl.compress_blocks, repeat)
    out["comp_2t_java"] = _median_time(lambda: fl.compress_blocks("2t-java"), repeat)
    fl.close()
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
