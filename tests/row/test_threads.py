"""One reader shared by 8 threads doing mixed lookups and scans returns
exactly what one thread returns, with the block cache under contention
(a budget of about one block, so entries are evicted all the time); Fory
encoders shared by threads too."""
import random
import threading
import time

import pyarrow as pa
import pytest
from pyroaring import BitMap

from rowformat import RowFileReader, RowFileWriter, schema

THREADS = 8
OPS = 25
SCHEMA = schema("id BIGINT NOT NULL, name STRING, tags ARRAY<STRING>, "
                "m MAP<STRING, INT>, r ROW<x DOUBLE, y DECIMAL(20, 3)>, t TIMESTAMP(6)")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    import datetime as dt
    from decimal import Decimal
    path = tmp_path_factory.mktemp("threads") / "t.row"
    rows = [(i, f"name-{i}" * (i % 4), [str(i), None, "t"] if i % 5 else None,
             [("k", i), ("j", None)] if i % 3 else [],
             {"x": i / 7, "y": Decimal(i) / 1000} if i % 11 else None,
             dt.datetime(2020, 1, 1) + dt.timedelta(seconds=i) if i % 13 else None)
            for i in range(3000)]
    with RowFileWriter(path, SCHEMA, block_size=2048) as w:
        w.write_rows(rows)
    with RowFileReader(path, SCHEMA, threads=1) as ref:
        table = ref.read()
        values = [ref.get(i) for i in range(ref.num_rows)]
        assert ref.num_blocks > 50
    return path, table, values


def _ops(seed, n, table, values):
    """A seeded mix of operations, each with the result one thread gets."""
    rng = random.Random(seed)
    names = table.schema.names
    out = []
    for _ in range(OPS):
        kind = rng.choice(["get", "get", "take", "read", "select", "iter"])
        if kind == "get":
            i = rng.randrange(-n, n)
            out.append((kind, (i,), values[i]))
        elif kind == "take":
            idx = [rng.randrange(n) for _ in range(rng.randrange(1, 100))]
            cols = rng.sample(names, rng.randrange(1, len(names) + 1))
            out.append((kind, (idx, cols), table.select(cols).take(idx)))
        elif kind == "read":
            cols = rng.sample(names, rng.randrange(1, len(names) + 1))
            out.append((kind, (cols,), table.select(cols)))
        elif kind == "select":
            sel = BitMap(rng.sample(range(n), rng.randrange(1, 300)))
            out.append((kind, (sel,), table.take(sorted(sel))))
        else:
            size = rng.choice([1, 77, 1000, 4096])
            lo = rng.randrange(n)
            sel = range(lo, min(n, lo + rng.randrange(1, 1500)))
            out.append((kind, (sel, size), table.take(list(sel))))
    return out


def _run(reader, kind, args):
    if kind == "get":
        return reader.get(*args)
    if kind == "take":
        return reader.take(args[0], columns=args[1])
    if kind == "read":
        return reader.read(columns=args[0])
    if kind == "select":
        return reader.read(selection=args[0])
    sel, size = args
    batches = list(reader.iter_batches(selection=sel, batch_size=size))
    assert all(len(b) == size for b in batches[:-1])
    return pa.Table.from_batches(batches, schema=reader.arrow_schema)


def _run_threads(worker):
    """worker(t) for t in range(THREADS), each on its own thread; returns when all end."""
    threads = [threading.Thread(target=worker, args=(t,)) for t in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()


def _same(got, want):
    if isinstance(want, pa.Table):
        return got.combine_chunks().equals(want.combine_chunks())
    return got == want


@pytest.mark.parametrize("cache_bytes,threads", [(5000, 1), (5000, 4), (0, 2), (64 << 20, 3)],
                         ids=["one-block-cache", "one-block-cache-prefetch", "no-cache", "big-cache"])
def test_shared_reader_matches_one_thread(data, cache_bytes, threads):
    path, table, values = data
    n = table.num_rows
    plans = [_ops(1000 * t + cache_bytes + threads, n, table, values) for t in range(THREADS)]
    failures = []
    barrier = threading.Barrier(THREADS)
    with RowFileReader(path, SCHEMA, cache_bytes=cache_bytes, threads=threads) as shared:
        def worker(t):
            try:
                barrier.wait()
                for k, (kind, args, want) in enumerate(plans[t]):
                    got = _run(shared, kind, args)
                    if not _same(got, want):
                        failures.append((t, k, kind))
            except BaseException as e:      # reported below, with the thread
                failures.append((t, "raised", repr(e)))

        _run_threads(worker)
        assert not failures, failures[:5]
        cache = shared._store.cache
        assert cache.nbytes <= max(cache.budget, 0)
        if cache_bytes:
            assert cache.hits + cache.misses > 0


def test_block_cache_under_contention():
    """Puts and gets from 8 threads on a budget of 3 entries: the byte count
    stays exact and within budget, and a hit returns the block put for that key."""
    from rowformat.row.block_cache import BlockCache
    cache = BlockCache(300)
    errors = []
    barrier = threading.Barrier(THREADS)

    def worker(t):
        rng = random.Random(t)
        barrier.wait()
        for _ in range(5000):
            k = rng.randrange(20)
            got = cache.get(k)
            if got is not None and got != ("block", k):
                errors.append((k, got))
            cache.put(k, ("block", k), 100)

    _run_threads(worker)
    assert not errors
    assert cache.nbytes == 100 * len(cache._items) <= 300


def test_fory_encoder_shared_by_threads():
    """decode_batch/encode_batch build in the plan shared by every encoder of
    a schema; concurrent calls must not mix their rows."""
    from rowformat.fory import RowEncoder
    s = pa.schema([pa.field("i", pa.int64()), pa.field("s", pa.string()),
                   pa.field("l", pa.list_(pa.int32()))])
    enc = RowEncoder(s)
    batches = [pa.RecordBatch.from_pylist(
        [{"i": t * 10000 + k, "s": f"{t}-{k}" * (k % 3), "l": list(range(k % 9))} for k in range(3000)],
        schema=s) for t in range(THREADS)]
    failures = []
    barrier = threading.Barrier(THREADS)

    def worker(t):
        try:
            barrier.wait()
            for _ in range(15):
                rows = enc.encode_batch(batches[t])
                back = enc.decode_batch(rows)
                if not back.equals(batches[t]):
                    failures.append(t)
                if enc.decode(rows[7].as_py())["i"] != t * 10000 + 7:
                    failures.append(t)
        except BaseException as e:
            failures.append(repr(e))

    _run_threads(worker)
    assert not failures, failures[:5]


def test_iterators_interleaved_in_one_thread(data):
    """Two scans of the same columns advanced alternately in one thread
    share that thread's decoder; each must still get its own rows."""
    path, table, _ = data
    with RowFileReader(path, SCHEMA, cache_bytes=5000, threads=2) as r:
        a = r.iter_batches(batch_size=500)
        b = r.iter_batches(selection=range(1000, 2500), batch_size=700)
        got_a, got_b = [], []
        live = [(a, got_a), (b, got_b)]
        while live:
            for it, out in list(live):
                batch = next(it, None)
                if batch is None:
                    live.remove((it, out))
                else:
                    out.append(batch)
    assert pa.Table.from_batches(got_a).equals(table)
    assert pa.Table.from_batches(got_b).equals(table.slice(1000, 1500))


def test_readers_share_a_pool_and_close_waits_for_their_tasks(data):
    path, table, _ = data
    import time
    a = RowFileReader(path, SCHEMA, threads=2, cache_bytes=0)
    b = RowFileReader(path, SCHEMA, threads=2, cache_bytes=0)
    decode_unit = a._scan._decode_unit
    a._scan._decode_unit = lambda *args: (time.sleep(0.05), decode_unit(*args))[1]   # slow units
    it = a.iter_batches(batch_size=100, readahead=6)
    first = next(it)                        # six more units, two running and four queued
    assert first.equals(table.slice(0, 100).to_batches()[0])
    assert len(a._scan._inflight) >= 4
    a.close()                               # cancels the queued ones, waits for the rest
    assert not a._scan._inflight
    with pytest.raises(ValueError, match="closed"):
        list(it)
    assert b.read().equals(table)           # the shared pool still runs b's work
    b.close()


def _child_exit_code(pid, what, timeout=60):
    """Waits for a forked child; fails the test if it hangs."""
    import os
    import signal
    import time
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail(f"the forked child's {what} hung")
        time.sleep(0.05)


def test_a_forked_child_reads_with_its_own_pool(data):
    import os
    path, table, _ = data
    with RowFileReader(path, SCHEMA, threads=2) as r:
        assert r.read().equals(table)       # the parent's pool threads exist
    pid = os.fork()
    if pid == 0:                            # the child: the parent's threads are gone
        ok = False
        try:
            with RowFileReader(path, SCHEMA, threads=2) as r:
                ok = r.read().equals(table)
        finally:
            os._exit(0 if ok else 1)
    assert _child_exit_code(pid, "read") == 0


def test_a_scan_drops_each_batch_before_decoding_past_the_next(data):
    """iter_batches(readahead=1) holds the current batch and one being decoded:
    once the caller drops batch 0 and asks for batch 1, batch 0 must be gone
    before batch 2 decodes (memory stays at about readahead + 1 batches)."""
    import itertools
    import time
    import weakref
    path, _, _ = data
    refs, seen_alive = {}, []
    with RowFileReader(path, SCHEMA, threads=2, cache_bytes=0) as r:
        decode_unit = r._scan._decode_unit
        calls = itertools.count()               # units start in the order they are asked for

        def watched(unit, positions):
            k = next(calls)
            if k == 1:
                time.sleep(0.2)                 # batch 1 is slow: the caller waits for it
            if k == 2:                          # decoded while the caller waits for batch 1
                seen_alive.append(refs[0]() is not None)
            return decode_unit(unit, positions)
        r._scan._decode_unit = watched
        it = r.iter_batches(batch_size=100, readahead=1)
        batch = next(it)
        refs[0] = weakref.ref(batch)
        del batch
        next(it)
        next(it)
    assert seen_alive == [False]


def test_a_forked_child_closes_a_reader_its_parent_was_scanning(data):
    import os
    import time
    path, table, _ = data
    r = RowFileReader(path, SCHEMA, threads=2)
    decode_unit = r._scan._decode_unit
    r._scan._decode_unit = lambda *args: (time.sleep(0.05), decode_unit(*args))[1]
    it = r.iter_batches(batch_size=100, readahead=4)
    next(it)                                # tasks in flight on the parent's threads
    pid = os.fork()
    if pid == 0:
        try:
            r.close()                       # must not wait for the parent's tasks
        finally:
            os._exit(0)
    assert _child_exit_code(pid, "close()") == 0
    r.close()


@pytest.mark.parametrize("memory_map", [False, True], ids=["pread", "mmap"])
def test_close_while_other_threads_read(data, memory_map):
    """close() waits for the reads in flight (or, mapped, leaves the mapping
    to the views still in use); every later read and the threads' next reads
    raise the reader's "closed" ValueError, nothing else; closing twice is
    fine."""
    path, table, values = data
    r = RowFileReader(path, SCHEMA, cache_bytes=0, memory_map=memory_map, threads=1)
    started = threading.Barrier(THREADS + 1)
    outcomes = [[] for _ in range(THREADS)]

    def worker(k):
        rng = random.Random(k)
        started.wait()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:     # a failing close() must not hang the suite
            i = rng.randrange(len(values))
            try:
                got = r.get(i)
            except ValueError as e:
                outcomes[k].append(str(e))
                return
            except BaseException as e:  # noqa: BLE001 - any other outcome is the failure
                outcomes[k].append(repr(e))
                return
            if got != values[i]:
                outcomes[k].append(f"row {i}: {got!r}")
                return

    threads = [threading.Thread(target=worker, args=(k,), daemon=True) for k in range(THREADS)]
    for t in threads:
        t.start()
    started.wait()
    for _ in range(200):        # let them all get going
        r.block(0, cache=False)
    try:
        r.close()
    finally:
        for t in threads:
            t.join(30)
    assert all(o == [f"{path}: the reader is closed"] for o in outcomes), outcomes
    r.close()
    with pytest.raises(ValueError, match="the reader is closed"):
        r.get(0)


def test_a_forked_child_closes_a_source_with_a_read_in_flight_in_its_parent(data):
    """A read the parent's thread had in flight at the fork never ends in the
    child: its close() must not wait for it (it used to, forever)."""
    import os
    from rowformat.io.source import Source
    path, _, _ = data
    source = Source(str(path))
    source._enter()                         # as a pool thread inside read() at the fork
    pid = os.fork()
    if pid == 0:
        try:
            source.close()
        finally:
            os._exit(0)
    assert _child_exit_code(pid, "Source.close()") == 0
    source._leave()
    source.close()
