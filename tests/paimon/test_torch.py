"""pypaimon 2.1.0's map-style to_torch() dataset under acceleration: its
batches equal stock's, and its files are opened once per process, not per batch."""
import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pytest

import rowformat.paimon as rp

from tests._values import same

from ._tables import typed_table, write

pytest.importorskip("torch")

ROW_TRACKING = {"row-tracking.enabled": "true", "data-evolution.enabled": "true"}


def _to_torch_available():
    from pypaimon.read.table_read import TableRead
    return "pypaimon.read.table_read.TableRead.to_torch" in rp.status().patched \
        and hasattr(TableRead, "to_torch")


pytestmark = pytest.mark.skipif(not _to_torch_available(),
                                reason=f"pypaimon {rp.status().pypaimon}'s to_torch() is "
                                       f"not patched")


def _table(wh, name="tt", files=3, n=700):
    data = typed_table(n * files, seed=5)
    t = wh.create(name, data.schema, options=ROW_TRACKING)
    with rp.accelerated():
        for k in range(files):         # one commit, one data file each
            write(t, data.slice(k * n, n))
    return t, data


def _dataset(t, projection=None):
    rb = t.new_read_builder()
    if projection is not None:
        rb = rb.with_projection(projection)
    return rb.new_read().to_torch(rb.new_scan().plan().splits())


def _batches(n):
    rng = np.random.default_rng(3)
    return [[0], [n - 1], rng.integers(0, n, 64).tolist(), [5, 5, n - 1, 5, 700, 699],
            rng.permutation(n)[:300].tolist(), []]


@pytest.mark.parametrize("projection", [None, ["s", "id", "_ROW_ID"], ["mp", "ts9"]])
def test_batches_equal_stock_and_files_open_once(wh, projection):
    from rowformat.paimon import _torch
    t, data = _table(wh)
    stock = _dataset(t, projection)
    assert type(stock).__module__ != _torch.__name__
    batches = _batches(len(stock))
    wants = [stock.__getitems__(batch) for batch in batches]
    rp.accelerate()
    fast = _dataset(t, projection)
    assert type(fast).__module__ == _torch.__name__
    assert _torch.accelerated_reason(fast) is None
    assert len(fast) == len(stock) == data.num_rows
    opened = [rp.status().files_opened]
    for batch, want in zip(batches, wants):
        got = fast.__getitems__(batch)
        assert same(got, want)       # equal, and of the same Python types
        if batch:
            assert list(got[0]) == list(want[0])        # the same keys, in the same order
        opened.append(rp.status().files_opened)
    # each of the 3 files opened once, by the first batches that touch it
    assert opened[-1] == opened[3] and opened[-1] - opened[0] == 3, opened
    rp.restore()
    assert fast[17] == stock[17]


def test_pickles_without_readers_and_reads_stock_where_it_must(wh):
    from rowformat.paimon import _torch
    t, _ = _table(wh, files=2, n=300)
    rp.accelerate()
    fast = _dataset(t)
    want = fast.__getitems__([3, 599, 3])
    copy = pickle.loads(pickle.dumps(fast))
    assert _torch._STATE not in copy.__dict__
    assert copy.__getitems__([3, 599, 3]) == want
    # a table without row tracking: pypaimon holds its rows in memory, read as they are
    plain = wh.create("plain", typed_table(10).schema)
    write(plain, typed_table(10))
    ds = _dataset(plain)
    assert "in memory" in _torch.accelerated_reason(ds)
    rp.restore()
    assert ds.__getitems__([1, 0]) == _dataset(plain).__getitems__([1, 0])


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_dataloader_workers_return_stock_rows(wh, tmp_path, context):
    """Shuffled batches in 2 workers equal stock's rows; each worker opens
    each file once (its readers and block caches kept across its batches),
    the parent none (its own readers stay in it)."""
    t, data = _table(wh, files=2, n=400)
    script = tmp_path / "loader.py"
    script.write_text(textwrap.dedent(f"""
        import os
        import rowformat.paimon as rp
        from pypaimon import CatalogFactory
        from torch.utils.data import DataLoader

        def collate(rows):          # in the worker, after its batch
            return os.getpid(), rp.status().files_opened, rows

        if __name__ == "__main__":
            t = CatalogFactory.create({{"warehouse": {str(wh.root)!r}}}).get_table("db.tt")
            rb = t.new_read_builder().with_projection(["id", "s", "d_small", "ts3", "arr"])
            splits = rb.new_scan().plan().splits()
            stock = rb.new_read().to_torch(splits)[:]
            rp.accelerate()
            ds = rb.new_read().to_torch(splits)
            ds.__getitems__([0, 799])       # the parent's readers: not the workers'
            opened = rp.status().files_opened
            loader = DataLoader(ds, batch_size=32, shuffle=True, num_workers=2,
                                collate_fn=collate, multiprocessing_context={context!r})
            batches = list(loader)
            rows = [r for _, _, batch in batches for r in batch]
            per_worker = {{}}
            for pid, count, _ in batches:
                per_worker.setdefault(pid, []).append(count)
            key = lambda r: r["id"]
            print(len(rows), sorted(rows, key=key) == sorted(stock, key=key),
                  repr(sorted(rows, key=key)) == repr(sorted(stock, key=key)),
                  len(per_worker), opened)
            # a forked worker starts from the parent's count: 2 files more, at its first batch
            for counts in per_worker.values():
                print(counts[-1] - ({context!r} == "fork") * opened, len(counts) > 3,
                      counts == sorted(counts) and len(set(counts[1:])) == 1)
    """))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=300, env=dict(os.environ), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].split() == [str(data.num_rows), "True", "True", "2", "2"]
    assert lines[1:] == ["2 True True"] * 2, lines


def test_every_column_type_and_the_ways_indices_come(wh):
    """Each value of every column type pypaimon reads equals stock's in type
    too; indices as lists, NumPy arrays, tensors, negative; out of range as stock."""
    import torch
    t, data = _table(wh, files=2, n=500)
    stock = _dataset(t)
    rp.accelerate()
    fast = _dataset(t)
    n = len(stock)
    rng = np.random.default_rng(11)
    every = rng.permutation(n).tolist()
    want = stock.__getitems__(every)
    got = fast.__getitems__(every)
    assert same(got, want)
    # every column has nulls and values among these rows
    for name in data.column_names:
        values = [r[name] for r in got]
        assert name == "id" or None in values, name
        assert any(v is not None for v in values), name
    for indices in ([-1, 0, -n, 3], np.array([-1, 0, -n, 3]), np.array([7, 7], np.int32),
                    torch.tensor([5, -2, 5]), range(495, 505), [np.int64(9), True]):
        assert same(fast.__getitems__(indices), stock.__getitems__(indices)), indices
    for bad in ([n], [-n - 1], np.array([0, n]), [0, 2 ** 70]):
        with pytest.raises((IndexError, OverflowError)) as e:
            stock.__getitems__(bad)
        with pytest.raises(type(e.value)):
            fast.__getitems__(bad)
    with pytest.raises(TypeError):
        fast.__getitems__([1.0])
    assert fast.__getitems__(np.array([], np.int64)) == [] == fast.__getitems__([])


def test_a_limit_and_an_arrow_row_id_index(wh):
    """pypaimon's two kinds of _row_ids index: ranges cut by a limit, and an
    Arrow array of _ROW_IDs (as pypaimon keeps when the ranges do not merge)."""
    t, _ = _table(wh, files=3, n=200)
    rb = t.new_read_builder().with_limit(450)
    splits = rb.new_scan().plan().splits()
    stock = rb.new_read().to_torch(splits)
    rp.accelerate()
    fast = rb.new_read().to_torch(splits)
    assert len(fast) == len(stock)
    batch = np.random.default_rng(2).integers(0, len(stock), 100).tolist()
    assert same(fast.__getitems__(batch), stock.__getitems__(batch))
    ids = pa.array(np.random.default_rng(4).permutation(600)[:250], pa.int64())
    stock._row_ids = fast._row_ids = ids
    batch = [0, 249, 17, 17, -3]
    assert same(fast.__getitems__(batch), stock.__getitems__(batch))


def test_readers_and_block_caches_kept_across_batches(wh):
    from rowformat.paimon import _torch
    t, _ = _table(wh, files=2, n=400)
    rp.accelerate()
    fast = _dataset(t)
    fast.__getitems__([1, 799])
    files = _torch._files(fast)
    stores = dict(files.files._stores)
    assert len(stores) == 2 and all(s.prefix_lookups for s in stores.values())
    for k in range(5):
        fast.__getitems__(np.random.default_rng(k).integers(0, 800, 50).tolist())
    assert _torch._files(fast) is files and files.files._stores == stores
    cache = files.files.cache                   # one cache, one budget, both files'
    assert all(s.cache is cache for s in stores.values()) and cache.budget == _torch._CACHE_BYTES
    cached, hits = len(cache._items), cache.hits
    fast.__getitems__([1, 799, 400])
    assert cached > 0 and cache.hits > hits
