"""pypaimon 2.1.0's map-style to_torch() dataset under acceleration: its
batches equal stock's, and its files are opened once per process, not per batch."""
import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import rowformat.paimon as rp

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
        assert got == want
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
    t, data = _table(wh, files=2, n=400)
    code = textwrap.dedent(f"""
        import sys
        import rowformat.paimon as rp
        from pypaimon import CatalogFactory
        from torch.utils.data import DataLoader
        t = CatalogFactory.create({{"warehouse": {str(wh.root)!r}}}).get_table("db.tt")
        rb = t.new_read_builder().with_projection(["id", "s"])
        splits = rb.new_scan().plan().splits()
        stock = rb.new_read().to_torch(splits)[:]
        rp.accelerate()
        ds = rb.new_read().to_torch(splits)
        loader = DataLoader(ds, batch_size=64, shuffle=True, num_workers=2,
                            collate_fn=list, multiprocessing_context={context!r})
        rows = [r for batch in loader for r in batch]
        key = lambda r: r["id"]
        print(len(rows), sorted(rows, key=key) == sorted(stock, key=key))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, env=dict(os.environ))
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [str(data.num_rows), "True"]
