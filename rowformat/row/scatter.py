"""Random batches: scattered rows of one or more ``.row`` files, each block
they touch read and decompressed once, on all the threads at once, and the
rows decoded in the order asked (a training step's floor: docs/training.md).

:func:`touched_blocks` fetches the blocks of any readers; :class:`Scatter`
plans one file's rows and decodes them from their blocks;
:func:`take_files` does both for rows across files; :func:`route_row_ids`
finds a ``_ROW_ID``'s file and row.
"""
from __future__ import annotations

from concurrent.futures import wait
from typing import Any, Callable, Optional

import numpy as np
import pyarrow as pa

from .decode_pool import shared_pool
from ..errors import RowDecodeError, RowIndexError, RowMemoryError

# (readers are RowFileReaders: not imported, as reader.py imports this module)

# A take holds at most this many declared block bytes at once, in rounds (a
# training batch's 240 blocks of 64 KiB are 15 MiB: one round)
TAKE_BUDGET = 256 << 20


class Wanted:
    """Blocks of one reader to fetch, and the last row wanted in each."""
    def __init__(self, reader: Any, blocks: np.ndarray, lasts: np.ndarray):
        self.reader, self.blocks, self.lasts = reader, blocks, lasts


class Scatter(Wanted):
    """A take of scattered rows of one file, planned: the distinct blocks
    its rows are in (and the last row wanted in each) to fetch, and for each
    row, in the order asked, its block among them and its row there."""
    def __init__(self, reader: Any, rows: np.ndarray):
        blocks = reader._block_of(rows)
        heads, self.which = np.unique(blocks, return_inverse=True)
        self.which = self.which.astype(np.int64).ravel()
        self.local = np.ascontiguousarray(rows - reader._starts[blocks], np.int64)
        lasts = np.zeros(len(heads), np.int64)
        np.maximum.at(lasts, self.which, self.local)
        super().__init__(reader, heads, lasts)

    def decode(self, blocks: list, positions) -> pa.Table:
        """The rows, from their ``blocks`` (touched_blocks'), in the order
        asked, decoded in one C loop (the GIL released)."""
        r = self.reader
        dec = r._decoder(positions)
        try:
            dec.decode_gather(blocks, self.which, self.local)
        except (RowDecodeError, RowMemoryError) as e:
            raise r._decode_error(int(self.blocks[e.block]), e) from None
        return pa.Table.from_batches([dec.finish()])


def touched_blocks(wanted: list) -> list:
    """For each Wanted (of any readers), its blocks, each holding at least
    its rows up to its last wanted: from the reader's cache, else read and
    decompressed once each, all of them on the threads at once (the GIL
    released in pread, ZSTD and the prefix walk): whole (and cached), or,
    with the reader's prefix_lookups, a block whose last row wanted is in
    its first PREFIX_SHARE of rows only up to that row (see PrefixBlock).
    Each reader's blocks are one job (reader.py's _Job) that every thread
    works on, taking the next block as it finishes one: a random batch's
    floor, each touched block decompressed once, on every core, only as
    far as needed."""
    outs = [[None] * len(w.blocks) for w in wanted]
    jobs = [job for n, w in enumerate(wanted)
            if (job := w.reader._job(w.blocks, w.lasts, outs[n])) is not None]
    if not jobs:
        return outs
    threads = max(w.reader.threads for w in wanted)
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


def take_files(reader: Callable[[int], Any], file_of: np.ndarray, local: np.ndarray,
               positions) -> Optional[pa.Table]:
    """Row ``local[k]`` of file ``file_of[k]`` for each k, in that order
    (None for no rows): the touched blocks of the files (``reader(f)``) read
    and decompressed at once, on all threads (touched_blocks), in groups of
    files whose blocks declare at most TAKE_BUDGET bytes together; a file
    whose blocks alone declare more is taken in rounds within it, as
    RowFileReader.take does. What a take holds at once is bounded by the
    budget, not by what the files' indexes declare."""
    order = np.argsort(file_of, kind="stable")
    by_file = file_of[order]
    parts: list = []
    group: list = []
    declared = 0
    for f in np.unique(file_of).tolist():
        rows = local[order[by_file == f]]
        w = Scatter(reader(f), rows)
        size = int(w.reader.block_index.uncompressed_sizes[w.blocks].sum())
        if group and declared + size > TAKE_BUDGET:
            parts += _decode_group(group, positions)
            group, declared = [], 0
        if size > TAKE_BUDGET:
            parts.append(w.reader._take_scattered(rows, positions))
        else:
            group.append(w)
            declared += size
    parts += _decode_group(group, positions)
    if len(parts) < 2:
        return parts[0] if parts else None
    # the rows are grouped by file: put them back in the order asked
    return pa.concat_tables(parts).take(pa.array(np.argsort(order, kind="stable"))).combine_chunks()


def _decode_group(group: list, positions) -> list:
    """The rows of each Scatter of ``group``, their blocks fetched together."""
    return [w.decode(blocks, positions) for w, blocks in zip(group, touched_blocks(group))] \
        if group else []


def route_row_ids(first: np.ndarray, counts: np.ndarray, ids, where: str) -> tuple:
    """(file, row in the file) of each ``_ROW_ID`` in ``ids``, the files'
    ranges given by their sorted ``first`` ids and row ``counts``;
    RowIndexError naming ``where`` for an id in no file."""
    ids = np.asarray(ids, np.int64).reshape(-1)
    f = np.searchsorted(first, ids, side="right") - 1
    fc = np.maximum(f, 0)
    local = ids - first[fc] if len(first) else ids
    bad = (f < 0) | (local >= counts[fc]) if len(first) else np.ones(len(ids), bool)
    if np.any(bad):
        raise RowIndexError(f"{where}: no row has _ROW_ID {int(ids[np.argmax(bad)])}")
    return fc, local
