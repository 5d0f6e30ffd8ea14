"""Random batches: scattered rows of one or more ``.row`` files of one
schema, each block they touch read and decompressed once, on all the
threads at once, and the rows decoded in the order asked in one C loop (a
training step's floor: docs/training.md).

The files' blocks are one sequence (:class:`FileBlocks`: their index
arrays end to end), so planning a batch costs the same numpy calls for 60
files as for one, and its uncached blocks are one job (block_store's
BlockJob): a batch costs per touched block, not per touched file. This
module knows row numbers only; ``_ROW_ID``s are routed in the Paimon layer.
"""
from __future__ import annotations

from concurrent.futures import wait
from typing import Callable

import numpy as np
import pyarrow as pa

from .block_store import BlockJob, BlockMeta, StoreGroup
from .decode_pool import shared_pool
from ..errors import RowDecodeError, RowMemoryError

# A take holds at most this many bytes besides its result and the block
# cache (its own budget): its blocks as their index declares them, in rounds
# (a training batch's 240 blocks of 64 KiB are 15 MiB: one round), and when
# it takes rounds, its rows decoded by round (with their builders' slack) and
# the copy that puts them back in the order asked: three times the rows'
# bytes, estimated from the blocks' bytes per row, taken off the rounds' share. A 10k-row take of 64 KiB
# blocks holds its 1.5 MB result and 32 MiB, not its 600 MB of blocks.
TAKE_BUDGET = 32 << 20
# what rounds hold besides their blocks and rows, kept out of their share:
# the threads' read buffers, the decoders' scratch, the Block objects (a
# 10k-row take measured 1.3-2.9 MB over result + TAKE_BUDGET without it)
ROUND_SLACK = 4 << 20


class FileBlocks:
    """The blocks of files ``0..n-1`` as one sequence of rows (file f's rows
    after file f-1's): per block its first row there, row count,
    uncompressed size, offset and compressed size (40 bytes a block), and
    the first block of each file."""

    def __init__(self, tables: list):
        """``tables``: per file, a BlockTable (or anything with its arrays,
        ``num_rows`` and ``block_rows``)."""
        counts = np.array([t.num_rows for t in tables], np.int64)
        self.file_rows = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        self.first_block = np.concatenate(
            [[0], np.cumsum([len(t.row_starts) for t in tables])]).astype(np.int64)
        cat = (lambda arrays: np.concatenate(arrays).astype(np.int64, copy=False)
               if arrays else np.zeros(0, np.int64))
        self.row_starts = cat([t.row_starts + self.file_rows[f] for f, t in enumerate(tables)])
        self.meta = BlockMeta(cat([t.block_rows(np.arange(len(t.row_starts))) for t in tables]),
                              cat([t.uncompressed_sizes for t in tables]),
                              cat([t.offsets for t in tables]),
                              cat([t.compressed_sizes for t in tables]))

    @property
    def nbytes(self) -> int:
        return self.row_starts.nbytes + sum(a.nbytes for a in self.meta) \
            + self.first_block.nbytes + self.file_rows.nbytes

    def meta_of(self, heads: np.ndarray) -> BlockMeta:
        """The index entries of the blocks ``heads``."""
        return self.meta.pick(heads)

    def where(self, heads: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(file, block in the file) of each of the blocks ``heads``."""
        of = np.searchsorted(self.first_block, heads, side="right") - 1
        return of, heads - self.first_block[of]


class OneFile:
    """A file's blocks as FileBlocks are many files' (its BlockTable's arrays)."""

    def __init__(self, table):
        self.table = table
        self.row_starts = table.row_starts

    def where(self, heads: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return np.zeros(len(heads), np.int64), heads

    def meta_of(self, heads: np.ndarray) -> BlockMeta:
        return BlockMeta.of(self.table, heads)


class Scatter:
    """A take of scattered rows (row numbers of ``files``), planned: the
    distinct blocks they are in (their file and block there, and the last
    row wanted in each), and for each row, in the order asked, its block
    among them and its row there."""

    def __init__(self, files, rows: np.ndarray):
        starts = files.row_starts
        g = np.searchsorted(starts, rows, side="right") - 1
        self.heads, which = np.unique(g, return_inverse=True)
        self.which = which.astype(np.int64).ravel()
        self.local = np.ascontiguousarray(rows - starts[g], np.int64)
        self.lasts = np.zeros(len(self.heads), np.int64)
        np.maximum.at(self.lasts, self.which, self.local)
        self.of, self.blocks = files.where(self.heads)
        self.meta = files.meta_of(self.heads)

    def fetch(self, group: StoreGroup, threads: int) -> list:
        """The blocks, each holding at least its rows up to its last wanted:
        see touched_blocks()."""
        return touched_blocks([(group, self.of, self.blocks, self.lasts, self.meta)], threads)[0]

    def decode(self, group: StoreGroup, blocks: list, positions) -> pa.Table:
        """The rows, from their ``blocks`` (fetch()'s), in the order asked,
        decoded in one C loop (the GIL released)."""
        dec = group.stores[int(self.of[0])].decoder(positions)
        try:
            dec.decode_gather(blocks, self.which, self.local)
        except (RowDecodeError, RowMemoryError) as e:
            store = group.stores[int(self.of[e.block])]
            raise store.decode_error(int(self.blocks[e.block]), e) from None
        return pa.Table.from_batches([dec.finish()])


def touched_blocks(wanted: list, threads: int) -> list:
    """For each (StoreGroup, stores, blocks, lasts, BlockMeta) of ``wanted``
    (block k is ``blocks[k]`` of ``group.stores[stores[k]]``), its blocks, each
    holding at least its rows up to its last wanted: from the cache, else
    read and decompressed once each, all of them on ``threads`` threads at
    once (the GIL released in pread, ZSTD and the prefix walk): whole (and
    cached), or, with a store's prefix_lookups, a block whose last row
    wanted is in its first PREFIX_SHARE of rows only up to that row (see
    PrefixBlock). The blocks are jobs (BlockJob) that every thread works on,
    taking the next block as it finishes one: a random batch's floor, each
    touched block decompressed once, on every core, only as far as needed."""
    outs: list = [[None] * len(w[2]) for w in wanted]
    jobs = [job for (group, of, blocks, lasts, meta), out in zip(wanted, outs)
            if len(job := BlockJob(group, of, blocks, lasts, meta, out))]
    if not jobs:
        return outs
    helpers = min(threads, sum(len(job) for job in jobs)) - 1
    futures = [shared_pool(threads).submit(_run_all, jobs) for _ in range(helpers)]
    try:
        _run_all(jobs)
    finally:
        for f in futures:
            f.cancel()              # not started: the work is done
        wait(futures)
    for f in futures:
        if not f.cancelled():
            f.result()              # (its error, if any)
    for job in jobs:
        job.collect()
    return outs


def _run_all(jobs: list) -> None:
    for job in jobs:
        job.run()


def take(files, group: StoreGroup, rows: np.ndarray, positions, threads: int,
         empty: Callable[[], pa.Table]) -> pa.Table:
    """The rows ``rows`` (row numbers of ``files``, any order, duplicates
    allowed), in that order: their touched blocks fetched at once on all
    threads, in rounds whose blocks declare at most TAKE_BUDGET bytes
    (each round's blocks freed before the next is allocated), so that what
    a take holds at once is bounded by the budget, not by what the files'
    indexes declare. ``group`` holds the store of every file a row is in."""
    plan = Scatter(files, rows)
    if not len(rows):
        return empty()
    rounds = _rounds(plan.meta.usizes, plan.meta.rows, plan.which)
    if rounds is None:
        return plan.decode(group, plan.fetch(group, threads), positions)
    parts, order = [], []
    for heads in rounds:
        picked = np.flatnonzero(np.isin(plan.which, heads))
        part = Scatter(files, rows[picked])
        parts.append(part.decode(group, part.fetch(group, threads), positions))
        order.append(picked)
    return pa.concat_tables(parts).take(pa.array(np.argsort(np.concatenate(order))))


def _rounds(sizes: np.ndarray, rows: np.ndarray, which: np.ndarray) -> list[np.ndarray] | None:
    """None when blocks of declared ``sizes`` (and ``rows``) hold at most
    TAKE_BUDGET bytes together, else the indexes of consecutive rounds that
    each hold at most TAKE_BUDGET less the rows' copies (``which``: the block
    of each row taken; one block a round at least)."""
    if int(sizes.sum()) <= TAKE_BUDGET:
        return None
    copies = 3 * int((sizes // np.maximum(rows, 1))[which].sum())   # the rows' bytes, about
    budget = max(TAKE_BUDGET - copies - ROUND_SLACK, TAKE_BUDGET // 2)
    ends = np.cumsum(sizes)
    rounds, start = [], 0
    while start < len(sizes):
        base = ends[start - 1] if start else 0
        stop = max(start + 1, int(np.searchsorted(ends, base + budget, side="right")))
        rounds.append(np.arange(start, stop))
        start = stop
    return rounds
