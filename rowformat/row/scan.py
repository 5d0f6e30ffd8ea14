"""The scan pipeline of a ``.row`` file: selected rows walked block by block
as runs (:class:`Run`), cut into units of a batch each, decoded on the shared
pool a few units ahead of the caller (a URL's blocks fetched ahead of the
decoder), so that a scan's memory holds about ``ahead + 1`` batches
whatever the file's size. It reaches the file's blocks through its block
store only (block_store.py); read(), iter_batches() and take()'s sorted
path run here.
"""
from __future__ import annotations

import itertools
import os
from collections import deque
from concurrent.futures import CancelledError, wait
from typing import Generator, Iterator, NamedTuple

import numpy as np
import pyarrow as pa

from .. import _rowcodec
from ..errors import RowDecodeError, RowMemoryError
from ..io.ranges import SCAN_AHEAD
from .block_store import BlockStore
from .decode_pool import shared_pool as _shared_pool

DEFAULT_BATCH_SIZE = 65536
UNIT_BLOCKS = 64   # read()/take(): at most this many blocks per pool task


class Run(NamedTuple):
    """Rows of one block, in the order to decode them: the local rows
    ``start`` to ``stop`` of the block (``rows`` None), or the local row
    numbers ``rows[start:stop]``. Read, take, iter_batches and the prefix
    path all walk a file's rows as runs."""
    block: int
    rows: np.ndarray | None
    start: int
    stop: int

    @property
    def last(self) -> int:
        """The highest local row the run needs."""
        return self.stop - 1 if self.rows is None else int(self.rows[self.start:self.stop].max())

    def decode(self, dec, block, reserve=None) -> None:
        if self.rows is None:
            dec.decode(block, None, self.start, self.stop, reserve)
        else:
            dec.decode(block, self.rows[self.start:self.stop], reserve=reserve)


class Scan:
    """The scans of one file's ``store`` on ``threads`` pool threads; its
    tasks on the shared pool are tracked so that close() can wait for them."""

    def __init__(self, store: BlockStore, threads: int):
        self._store = store
        self._table = store.table
        self._source = store.source
        self.name = store.name
        self.num_rows = store.table.num_rows
        self.num_blocks = store.num_blocks
        self.threads = threads
        self.max_row_size = store.max_row_size
        self._inflight: set = set()        # this reader's tasks on the shared pool
        self._pid = os.getpid()            # (whose threads run them)

    def close(self) -> None:
        """Cancels unfinished tasks and waits for those running (in a forked
        child, the parent's threads that ran them are gone, and they would
        never finish)."""
        inflight = list(self._inflight) if os.getpid() == self._pid else []
        for future in inflight:
            future.cancel()
        wait(inflight)

    def _block_of(self, rows: np.ndarray) -> np.ndarray:
        return self._store.block_of(rows)

    def _runs(self, rows: np.ndarray | range) -> Iterator[Run]:
        """The runs of ``rows`` (sorted row numbers, or a step-1 range), in
        order: a range gives spans, an array its local row numbers."""
        if isinstance(rows, range):
            lo, hi = rows.start, rows.stop
            if lo >= hi:
                return
            first, last = (int(x) for x in self._block_of(np.array([lo, hi - 1])))
            table = self._table
            for b in range(first, last + 1):
                base = table.start(b)
                yield Run(b, None, max(lo - base, 0), min(hi, base + table.rows(b)) - base)
            return
        if not len(rows):
            return
        ids = self._block_of(rows)
        cuts = np.flatnonzero(np.diff(ids)) + 1
        for group in np.split(rows, cuts):
            b = int(self._block_of(group[:1])[0])
            yield Run(b, np.ascontiguousarray(group - self._table.start(b)), 0, len(group))

    def row_bytes(self, b: int) -> int:
        """Block ``b``'s uncompressed bytes per row (rounded up): what a
        batch is charged per row of the block against its byte budget."""
        return self._store.row_bytes(b)

    def _units(self, rows, batch_size: int, max_blocks: int | None = None,
               max_bytes: int | None = None) -> Iterator[list]:
        """The runs cut into units of exactly batch_size rows (the last may
        be shorter); one unit becomes one batch. With ``max_blocks``, a unit
        also ends after that many blocks, so sparse selections spread over
        the pool (batch sizes then vary: only read() and take() ask for it).
        With ``max_bytes``, a unit also ends before its rows' bytes
        (:meth:`row_bytes`) pass it, holding one row at least."""
        unit, size, nbytes = [], 0, 0
        budget = max_bytes or 0
        for run in self._runs(rows):
            per_row = self.row_bytes(run.block) if budget else 0
            start, stop = run.start, run.stop
            while start < stop:
                take = min(stop - start, batch_size - size)
                if per_row:
                    take = max(1, min(take, (budget - nbytes) // per_row))
                unit.append(run._replace(start=start, stop=start + take))
                size += take
                nbytes += take * per_row
                start += take
                if size == batch_size or (max_blocks and len(unit) >= max_blocks) \
                        or (per_row and nbytes + per_row > budget):
                    yield unit
                    unit, size, nbytes = [], 0, 0
        if unit:
            yield unit

    def _decode_unit(self, unit, positions) -> pa.RecordBatch:
        """Reads, decompresses and decodes one unit (its runs, the call's
        placeholder reserve, and for a URL the Fetch of its blocks); runs on
        a pool thread with its own decoder (the GIL is released in ZSTD and
        the decoder)."""
        runs, reserve, fetch = unit
        store = self._store
        dec = store.decoder(positions)
        for run in runs:
            try:
                block = store.cached(run.block)
                if block is None:
                    block = store.decompressed(run.block, fetch)
                run.decode(dec, block, reserve)
            except (RowDecodeError, RowMemoryError) as e:
                raise store.decode_error(run.block, e) from None
        return dec.finish()

    def _fetching(self, units: Iterator[list]) -> Generator[tuple, None, None]:
        """``units`` as (runs, None) for a local file; for a URL as (runs,
        Fetch), each unit's uncached blocks requested SCAN_AHEAD units before
        the unit is handed on (so reads run ahead of decoding), a block
        shared with the previous unit read once, for both."""
        if self._source.remote is None:
            for runs in units:
                yield runs, None
            return
        started: deque = deque()
        prev: Fetch | None = None
        try:
            for runs in units:
                prev = self._unit_fetch(runs, prev)
                started.append((runs, prev))
                if len(started) > SCAN_AHEAD:
                    yield started.popleft()
            while started:
                yield started.popleft()
        finally:
            for _, fetch in started:
                if fetch is not None:
                    fetch.cancel()

    def _unit_fetch(self, runs: list, prev: "Fetch | None") -> "Fetch":
        store = self._store
        blocks = sorted({run.block for run in runs if not store.is_cached(run.block)})
        shared = {b: prev.where(b) for b in blocks if prev is not None and b in prev}
        new = [b for b in blocks if b not in shared]
        return Fetch(self._source.fetch([store.table.frame(b) for b in new]),
                     {b: i for i, b in enumerate(new)}, shared)

    def _result(self, future) -> pa.RecordBatch:
        try:
            return future.result()
        except CancelledError:      # by close()
            raise ValueError(f"{self.name}: the reader is closed") from None

    def _submit(self, unit, positions):
        """_decode_unit on the shared pool, tracked so that close() can wait."""
        future = _shared_pool(self.threads).submit(self._decode_unit, unit, positions)
        self._inflight.add(future)
        future.add_done_callback(self._inflight.discard)
        return future

    def batches(self, rows: np.ndarray | range | None, positions, batch_size: int,
                 max_blocks: int | None = None, ahead: int | None = None,
                 max_bytes: int | None = None) -> Iterator[pa.RecordBatch]:
        """Batches of exactly ``batch_size`` rows (the last may be shorter) of
        ``rows`` (sorted row numbers, a step-1 range, or None for all). With
        threads > 1, units are decoded on the pool, ``ahead`` (default: threads)
        at a time, so memory holds ahead + 1 batches whatever the file size.
        One call, one placeholder reserve: the Arrow placeholders that rows'
        nulls add beyond what their bytes pay for are bounded for the whole
        call (max_row_size), however many batches and threads decode it."""
        if batch_size < 1:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        reserve = _rowcodec.Reserve(self.max_row_size)
        fetching = self._fetching(self._units(range(0, self.num_rows) if rows is None else rows,
                                              batch_size, max_blocks, max_bytes))
        units = ((runs, reserve, fetch) for runs, fetch in fetching)
        try:
            yield from self._decode_units(units, positions, ahead)
        finally:
            fetching.close()            # a URL's reads not started are cancelled

    def _decode_units(self, units: Iterator[tuple], positions, ahead: int | None = None):
        """_batches' units decoded in order, on the pool when it helps."""
        ahead = self.threads if ahead is None else ahead
        first = list(itertools.islice(units, 2))
        if self.threads == 1 or ahead < 1 or len(first) < 2:
            # one unit (a lookup, a small take): the caller would only wait for
            # a pool thread to wake up and do it, so it decodes it itself
            for unit in itertools.chain(first, units):
                yield self._decode_unit(unit, positions)
            return
        pending = itertools.chain(first, units)
        # pool threads decode the batches the caller frees: their memory must
        # go to the next batches, whichever thread decodes them (or the
        # scan's footprint depends on the scheduler)
        window: deque = deque()
        _rowcodec.scan_buffers(1)
        try:
            window.extend(self._submit(u, positions) for u in itertools.islice(pending, ahead))
            while window:
                future = window.popleft()
                nxt = next(pending, None)
                if nxt is not None:
                    window.append(self._submit(nxt, positions))
                yield self._result(future)  # (a local holding the batch would keep it
                                            # alive while the next ones decode)
        finally:
            for future in window:
                future.cancel()
            _rowcodec.scan_buffers(-1)

    def unit_blocks(self, rows: np.ndarray | range | None) -> int:
        """Blocks per pool task for read() and take(): at most UNIT_BLOCKS, and
        the blocks the rows span cut into a multiple of ``threads`` tasks of
        equal size, so that the threads finish together."""
        if rows is None:
            span = self.num_blocks
        elif len(rows) == 0:
            return UNIT_BLOCKS
        else:
            first, last = self._block_of(np.array([rows[0], rows[-1]]))
            span = int(last - first) + 1
        tasks = -(-max(span, 1) // UNIT_BLOCKS)
        tasks = -(-tasks // self.threads) * self.threads
        return max(1, -(-span // tasks))


class Fetch:
    """A scan unit's blocks being read ahead from a URL, by block number: a
    storage.Fetch of the unit's own blocks, and the (storage.Fetch, range)
    of a block it shares with the previous unit (read once for both)."""
    __slots__ = ("_fetch", "_where")

    def __init__(self, fetch, index: dict, shared: dict):
        self._fetch = fetch
        self._where = {b: (fetch, i) for b, i in index.items()}
        self._where.update(shared)

    def __contains__(self, b: int) -> bool:
        return b in self._where

    def where(self, b: int) -> tuple:
        return self._where[b]

    def frame(self, b: int):
        fetch, i = self._where[b]
        return fetch.get(i)

    def cancel(self) -> None:
        if self._fetch is not None:
            self._fetch.cancel()
