"""Two processes appending to one table with acceleration at the same time
lose no rows: pypaimon's commit (snapshot files written atomically, retried
on conflict) is untouched, only the data files are rowformat's."""
import multiprocessing
import pyarrow as pa

import rowformat.paimon as rp

from ._tables import Warehouse, read, write

COMMITS = 6
ROWS = 500


def _appender(root, worker, start_event, errors):
    try:
        import rowformat.paimon as rp
        rp.accelerate()
        wh = Warehouse(root)
        start_event.wait(30)
        for c in range(COMMITS):
            base = (worker * COMMITS + c) * ROWS
            write(wh.table("shared"), pa.table({
                "id": pa.array(range(base, base + ROWS), pa.int64()),
                "worker": pa.array([worker] * ROWS, pa.int32()),
                "v": [f"w{worker}c{c}r{i}" for i in range(ROWS)]}))
    except BaseException as e:     # reported to the parent
        errors.put(f"{worker}: {type(e).__name__}: {e}")
        raise


def test_two_processes_append_concurrently(tmp_path):
    root = str(tmp_path / "wh")
    wh = Warehouse(root)
    wh.create("shared", pa.schema([("id", pa.int64()), ("worker", pa.int32()), ("v", pa.string())]))
    ctx = multiprocessing.get_context("spawn")
    start, errors = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_appender, args=(root, w, start, errors)) for w in range(2)]
    for p in procs:
        p.start()
    start.set()
    for p in procs:
        p.join(240)
    problems = []
    while not errors.empty():
        problems.append(errors.get())
    assert all(p.exitcode == 0 for p in procs), problems
    total = 2 * COMMITS * ROWS
    stock = read(wh.table("shared"))
    assert sorted(stock.column("id").to_pylist()) == list(range(total))
    with rp.accelerated():
        fast = read(wh.table("shared"))
    assert fast.sort_by("id").equals(stock.sort_by("id"))
    assert len(wh.data_files("shared")) == 2 * COMMITS
