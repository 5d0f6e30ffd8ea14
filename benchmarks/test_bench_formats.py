"""pytest-benchmark: write, scan, single-row lookups and a batched lookup per format."""
import itertools

import numpy as np
import pyarrow as pa
import pytest

from conftest import PEER_KEYS, make_peer, rows_for

TAKE_FRACTION = 0.01    # 10k of 1M rows in compare.py: same density here


@pytest.mark.parametrize("key", PEER_KEYS)
def test_write(benchmark, key, table, bench_dir):
    peer = make_peer(key)
    t = rows_for(peer, table)
    path = str(bench_dir / ("w-" + key + peer.ext))
    benchmark.extra_info.update(rows=t.num_rows)
    benchmark.pedantic(peer.write, args=(t, path), setup=lambda: peer.remove(path), rounds=3)
    benchmark.extra_info["size_bytes"] = peer.size(path)


@pytest.mark.parametrize("key", PEER_KEYS)
def test_scan(benchmark, key, written):
    peer, path, t = written(key)
    benchmark.extra_info.update(rows=t.num_rows)
    out = benchmark.pedantic(peer.scan, args=(path,), rounds=3)
    assert out.num_rows == t.num_rows


@pytest.mark.parametrize("key", PEER_KEYS)
def test_get(benchmark, key, written, rng):
    """One random row per call, the file opened once; rowformat's block cache is dropped
    before each call (the uncached case)."""
    peer, path, t = written(key)
    lk = peer.open(path)
    rows = itertools.cycle(rng.integers(0, t.num_rows, 1000).tolist())
    drop = getattr(lk, "drop_cache", None)

    def setup():
        if drop:
            drop()
        return (next(rows),), {}
    benchmark.pedantic(lk.get, setup=setup, rounds=200 if key != "pypaimon" else 50, warmup_rounds=3)
    lk.close()


def test_get_cached(benchmark, written, rng):
    peer, path, t = written("rowformat")
    lk = peer.open(path)
    i = int(rng.integers(0, t.num_rows))
    lk.get(i)
    benchmark(lk.get, i)
    lk.close()


@pytest.mark.parametrize("key", PEER_KEYS)
def test_take(benchmark, key, written, rng):
    """One batched lookup of sorted random rows (1% of the file)."""
    peer, path, t = written(key)
    lk = peer.open(path)
    rows = np.sort(rng.choice(t.num_rows, max(1, int(t.num_rows * TAKE_FRACTION)), replace=False))
    drop = getattr(lk, "drop_cache", None)
    out = benchmark.pedantic(lk.take, args=(rows,), setup=drop, rounds=5)
    got = out.cast(t.schema) if out.schema != t.schema else out
    assert got.equals(t.take(pa.array(rows)))
    lk.close()
