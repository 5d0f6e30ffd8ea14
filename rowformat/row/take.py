"""The take strategies of one ``.row`` file: a few rows located with bisect
and decoded in the calling thread (through the block cache), a training
batch's scattered rows with each touched block read and decompressed once
on all the threads (scatter.take), and larger takes as a scan of the sorted
distinct rows (scan.py). Each reaches the file's blocks through its block
store only.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from ..errors import RowDecodeError, RowMemoryError
from ..row_numbers import as_rows, few_rows
from . import scatter
from .block_store import BlockMeta, BlockStore, StoreGroup
from .scan import DEFAULT_BATCH_SIZE, Run, Scan

SMALL_TAKE = 64    # take() of a list of at most this many rows: located with bisect, no numpy
# take() decodes in the calling thread when handing the work to the pool and
# waiting would cost more than it: at most INLINE_ROWS rows and INLINE_COLD
# blocks to decompress (a thread hop costs about one block's decompression)
INLINE_ROWS = 1024
INLINE_COLD = 2
# take() of at most this many rows (a training batch): each touched block
# decompressed once, on all threads, and the rows decoded in this thread
SCATTERED_ROWS = 16384


class Takes:
    """take() of one file's ``store`` (``scan`` for the large ones)."""

    def __init__(self, store: BlockStore, scan: Scan, arrow_schema: pa.Schema):
        self._store = store
        self._table = store.table
        self._scan = scan
        self.name = store.name
        self.num_rows = store.table.num_rows
        self.threads = scan.threads
        self.prefix_lookups = store.prefix_lookups
        self.arrow_schema = arrow_schema
        self._group = StoreGroup()
        self._group.set(0, store)
        self._files = scatter.OneFile(self._table)

    def take(self, row_numbers, positions: tuple[int, ...]) -> pa.Table:
        """The rows ``row_numbers``, in the order given (duplicates allowed).
        Up to SCATTERED_ROWS rows (a training batch): each block they touch
        is read and decompressed once, on all the threads (touched_blocks),
        and the rows decoded in the order asked in one C loop."""
        few = few_rows(row_numbers, SMALL_TAKE, self.num_rows, "row_numbers", self.name)
        if few is not None:
            return self._take_inline(self._list_runs(few), positions)
        rows = as_rows(row_numbers, self.num_rows, "row_numbers", self.name)
        if len(rows) <= SMALL_TAKE:
            return self._take_inline(self._list_runs(rows.tolist()), positions)
        runs = self._inline_runs(rows)
        if runs is not None:
            return self._take_inline(runs, positions)
        if len(rows) <= SCATTERED_ROWS:
            return self._take_scattered(rows, positions)
        schema = pa.schema([self.arrow_schema.field(i) for i in positions])
        if np.all(rows[1:] > rows[:-1]):
            batches = list(self._scan.batches(rows, positions, DEFAULT_BATCH_SIZE,
                                              self._scan.unit_blocks(rows)))
            return pa.Table.from_batches(batches, schema=schema)
        unique, inverse = np.unique(rows, return_inverse=True)
        batches = list(self._scan.batches(unique, positions, DEFAULT_BATCH_SIZE,
                                          self._scan.unit_blocks(unique)))
        return pa.Table.from_batches(batches, schema=schema).take(pa.array(inverse.ravel()))

    def _take_scattered(self, rows: np.ndarray, positions) -> pa.Table:
        """take() of up to SCATTERED_ROWS rows: their blocks decompressed
        once each, on all the threads, then their rows decoded in the order
        asked (scatter.take: in rounds within its TAKE_BUDGET)."""
        return scatter.take(self._files, self._group, rows, positions, self.threads,
                            pa.schema([self.arrow_schema.field(i) for i in positions]).empty_table)

    def touched_blocks(self, blocks: np.ndarray, lasts: np.ndarray) -> list:
        """The blocks ``blocks`` (distinct) holding at least their rows up to
        ``lasts``: see scatter.touched_blocks()."""
        blocks = np.asarray(blocks, np.int64)
        return scatter.touched_blocks(
            [(self._group, np.zeros(len(blocks), np.int64), blocks, np.asarray(lasts, np.int64),
              BlockMeta.of(self._table, blocks))], self.threads)[0]

    def _list_runs(self, rows: list) -> list[Run]:
        """The runs of ``rows`` (a short list, any order), located with bisect."""
        table = self._table
        if len(rows) == 1:              # a lookup
            b = table.find(rows[0])
            local = rows[0] - table.start(b)
            return [Run(b, None, local, local + 1)]
        runs: list[Run] = []
        run: list = []
        b = -1
        for i in rows:
            nb = table.find(i)
            if nb != b and run:
                runs.append(Run(b, np.array(run, np.int64), 0, len(run)))
                run = []
            b = nb
            run.append(i - table.start(b))
        if run:
            runs.append(Run(b, np.array(run, np.int64), 0, len(run)))
        return runs

    def _inline_runs(self, rows: np.ndarray) -> list[Run] | None:
        """The runs of ``rows`` (as _list_runs) when take() should decode them
        in this thread (INLINE_ROWS, INLINE_COLD), else None."""
        if len(rows) > INLINE_ROWS:
            return None
        if not len(rows):
            return []
        blocks = self._store.block_of(rows)
        bounds = [0, *(np.flatnonzero(blocks[1:] != blocks[:-1]) + 1).tolist(), len(rows)]
        heads = blocks[bounds[:-1]].tolist()
        if self.threads > 1 and len(heads) > INLINE_COLD:
            store, cold = self._store, 0
            for b in set(heads):
                if not store.is_cached(b):
                    cold += 1
                    if cold > INLINE_COLD:
                        return None
        local = rows - self._table.row_starts[blocks]
        return [Run(b, local, lo, hi) for b, lo, hi in zip(heads, bounds, bounds[1:])]

    def _take_inline(self, runs: list[Run], positions) -> pa.Table:
        """take() in this thread, run by run, through the block cache. With
        no cache (cache_bytes=0), a block that later runs need again (rows 5,
        900, 6) is kept for them until its last run, and with prefix_lookups
        its prefix reaches the last row any run needs."""
        dec = self._store.decoder(positions)
        final = {run.block: i for i, run in enumerate(runs)} \
            if len(runs) > 1 and not self._store.cache.budget else None
        if final is None or len(final) == len(runs):        # no block comes back
            for run in runs:
                self._decode_run(dec, run)
        else:
            need: dict[int, int] = {}
            for run in runs:
                need[run.block] = max(need.get(run.block, -1), run.last)
            kept: dict[int, Any] = {}
            for i, run in enumerate(runs):
                block = self._decode_run(dec, run, need[run.block], kept.pop(run.block, None))
                if final[run.block] > i:
                    kept[run.block] = block
        return pa.Table.from_batches([dec.finish()])

    def _decode_run(self, dec, run: Run, last: int | None = None, block=None):
        """Decodes ``run``'s rows into ``dec`` from ``block``, or from its
        block read up to (at least) the local row ``last`` (the run's own
        last row when None); returns the block."""
        store = self._store
        try:
            if block is None:
                block = store.block(run.block) if not self.prefix_lookups else \
                    store.rows_block(run.block, run.last if last is None else last)
            run.decode(dec, block)
        except (RowDecodeError, RowMemoryError) as e:
            raise store.decode_error(run.block, e) from None
        return block
