"""pytest-benchmark: the ZSTD floor on the rowformat file's own blocks."""
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import zstandard

import floor


@pytest.fixture(scope="module")
def blocks(written):
    _, path, _ = written("rowformat")
    frames, usize, _ = floor.load_blocks(path)
    return frames, usize.tolist()


def _decomp(fs, ss):
    d = zstandard.ZstdDecompressor()
    return [d.decompress(f, max_output_size=s) for f, s in zip(fs, ss)]


def test_decompress_one_block(benchmark, blocks):
    frames, sizes = blocks
    mid = int(np.argsort([len(f) for f in frames])[len(frames) // 2])
    d = zstandard.ZstdDecompressor()
    benchmark(d.decompress, frames[mid], max_output_size=sizes[mid])


def test_decompress_all_1_thread(benchmark, blocks):
    benchmark(_decomp, *blocks)


def test_decompress_all_2_threads(benchmark, blocks):
    frames, sizes = blocks
    parts = [(frames[k::2], sizes[k::2]) for k in range(2)]
    with ThreadPoolExecutor(2) as pool:
        benchmark(lambda: list(pool.map(lambda p: _decomp(*p), parts)))


@pytest.mark.parametrize("threads", [1, 2])
def test_compress_all(benchmark, blocks, threads):
    raw = _decomp(*blocks)

    def comp(bs):
        c = zstandard.ZstdCompressor(level=1, write_content_size=False)
        return [c.compress(b) for b in bs]
    parts = [raw[k::threads] for k in range(threads)]
    with ThreadPoolExecutor(threads) as pool:
        benchmark(lambda: list(pool.map(comp, parts)))
