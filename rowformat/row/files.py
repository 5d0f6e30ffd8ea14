"""Many ``.row`` files of one schema as one sequence of rows (file f's rows
after file f-1's), for takes across them: RowDataset's files and the
accelerated ``to_torch()``'s. One block cache (one budget, however many
files), each file's block store opened on first use in each process, and a
batch's rows taken at once from all its files (scatter.take: its touched
blocks one job, its rows decoded in one C loop in the order asked).
"""
from __future__ import annotations

import os
import threading
from typing import Callable, Optional, Sequence

import numpy as np
import pyarrow as pa

from .._blockindex import BlockTable
from ..arrow_types import to_arrow_schema
from ..datatypes import RowType
from ..errors import DatasetError
from ..io.source import Source
from .block_cache import BlockCache
from .block_store import BlockStore, StoreGroup, open_store
from .decode_pool import worker_threads
from .scatter import FileBlocks, take

DEFAULT_MAX_BLOCK_SIZE = 256 << 20      # RowFileReader's


class FileSet:
    """The files ``paths`` (``counts`` rows each) of ``schema``: rows by
    their number in the sequence. ``cache_bytes`` is the budget of the one
    block cache all the files' stores share; ``prefix_lookups``,
    ``memory_map``, ``max_row_size`` and ``open_args`` (``filesystem``,
    ``storage_options``) as RowFileReader takes them, per file when
    ``open_args`` is a list. ``metadata`` (each file's FileMetadata, if
    known: a dataset read every footer) lets a take plan its blocks without
    opening the files first; else a file is opened when a batch first needs
    it. A store opened must hold the rows (and blocks)
    counted, else DatasetError naming ``where`` and the file. Picklable:
    paths travel, open files do not."""

    def __init__(self, paths: Sequence[str], schema: RowType, counts, *,
                 cache_bytes: int, where: str, metadata: Optional[list] = None,
                 prefix_lookups: bool = False, memory_map: bool = False,
                 threads: Optional[int] = None, max_row_size: int = 64 << 20,
                 open_args=None, on_open: Optional[Callable[[], None]] = None):
        self.paths = list(paths)
        self.schema = schema
        self.arrow_schema = to_arrow_schema(schema)
        self.counts = np.asarray(counts, np.int64)
        self.file_rows = np.concatenate([[0], np.cumsum(self.counts)]).astype(np.int64)
        self.cache_bytes = cache_bytes
        self.where = where
        self.prefix_lookups, self.memory_map = prefix_lookups, memory_map
        self.threads, self.max_row_size = threads, max_row_size
        self.open_args = open_args if open_args is not None else {}
        self.on_open = on_open          # called for each file opened (a count)
        self._tables = None if metadata is None else [
            BlockTable(m.block_index.offsets, m.block_index.compressed_sizes,
                       m.block_index.uncompressed_sizes, m.block_index.row_starts,
                       m.footer.total_rows) for m in metadata]
        self._fresh()

    def _fresh(self) -> None:
        """This process's state: no store open (a forked child starts here:
        its parent's lock may have been held at the fork)."""
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self.cache = BlockCache(self.cache_bytes)
        self._group = StoreGroup(guarded=True)      # close() waits for takes
        self._stores: dict[int, BlockStore] = {}
        self._blocks: Optional[FileBlocks] = None
        self._active = 0
        self._idle = threading.Condition(self._lock)

    def _own(self) -> None:
        if self._pid != os.getpid():
            self._fresh()

    def __len__(self) -> int:
        return int(self.file_rows[-1])

    # -- stores --------------------------------------------------------------
    def store(self, f: int) -> BlockStore:
        """File ``f``'s store, opened on first use (in this process)."""
        self._own()
        s = self._stores.get(f)
        if s is not None:
            return s
        with self._lock:            # one store per file, however many threads ask
            s = self._stores.get(f)
            if s is None:
                s = self._open(f)
                self._group.set(f, s)
                self._stores[f] = s
        return s

    def _open(self, f: int) -> BlockStore:
        args = self.open_args[f] if isinstance(self.open_args, list) else self.open_args
        s = open_store(Source(self.paths[f], self.memory_map, args.get("filesystem"),
                              args.get("storage_options")),
                       self.schema, self.arrow_schema, self.cache,
                       max_block_size=DEFAULT_MAX_BLOCK_SIZE, prefix_lookups=self.prefix_lookups,
                       max_row_size=self.max_row_size)
        want = int(self.counts[f])
        known = None if self._tables is None else self._tables[f].row_starts
        if s.footer.total_rows != want or (known is not None
                                           and not np.array_equal(known, s.row_starts)):
            s.source.close()
            got = s.footer.total_rows
            raise DatasetError(f"{self.where}: data file {self.paths[f]} holds {got} rows"
                               + (f" in other blocks than" if got == want else
                                  f", but {want} were") + " counted when the dataset was made")
        if self.on_open is not None:
            self.on_open()
        return s

    def _file_blocks(self, files: np.ndarray) -> FileBlocks:
        """The files' blocks as one sequence; without ``tables``, the files
        ``files`` (touched by a take) are opened first, and the others stand
        as one block each until a take needs them."""
        blocks = self._blocks
        if blocks is not None and (self._tables is not None or all(
                f in self._stores for f in files.tolist())):
            return blocks
        if self._tables is not None:
            tables: list = self._tables
        else:
            for f in files.tolist():
                self.store(f)
            tables = [self._stores[f].table if f in self._stores else _Unopened(int(n))
                      for f, n in enumerate(self.counts.tolist())]
        self._blocks = blocks = FileBlocks(tables)
        return blocks

    @property
    def file_blocks(self) -> FileBlocks:
        """The blocks of all the files, as one sequence (every file opened
        first when their indexes were not given)."""
        self._own()
        return self._file_blocks(np.arange(len(self.paths)))

    def decoding_threads(self) -> int:
        """The threads a take decompresses on: ``threads``, else in a
        PyTorch DataLoader worker the worker's share of the cores, else the
        core count."""
        return max(1, self.threads or worker_threads() or os.cpu_count() or 1)

    # -- takes ---------------------------------------------------------------
    def take(self, rows: np.ndarray, positions: tuple[int, ...]) -> pa.Table:
        """The rows ``rows`` (checked sequence row numbers, any order,
        duplicates allowed) of the columns ``positions``, in that order."""
        self._own()
        schema = pa.schema([self.arrow_schema.field(i) for i in positions])
        threads = self.decoding_threads()
        with self._lock:
            self._active += 1           # close() waits: the job reads the files' descriptors
        try:
            files = np.unique(np.searchsorted(self.file_rows, rows, side="right") - 1)
            blocks = self._file_blocks(files)
            for f in files.tolist():
                if f not in self._stores:
                    self.store(f)
            return take(blocks, self._group, rows, positions, threads,
                        schema.empty_table).combine_chunks()
        finally:
            with self._lock:
                self._active -= 1
                if not self._active:
                    self._idle.notify_all()

    def close(self) -> None:
        """Closes this process's files once no take is running (they reopen
        when read again) and empties the cache."""
        self._own()
        with self._lock:
            while self._active:
                self._idle.wait()
            stores = list(self._stores.values())
            self._stores = {}
            self._group = StoreGroup(guarded=True)
            if self._tables is None:
                self._blocks = None
        for s in stores:
            s.source.close()
        self.cache.clear()

    def __getstate__(self) -> dict:
        state = {k: v for k, v in self.__dict__.items()
                 if k not in ("_lock", "_idle", "cache", "_group", "_stores", "_blocks",
                              "_active", "_pid")}
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._fresh()


class _Unopened:
    """A file not opened yet, as one block of its ``num_rows`` rows in a
    FileBlocks (a take touching it opens it first)."""

    def __init__(self, num_rows: int):
        self.num_rows = num_rows
        self.row_starts = np.zeros(1 if num_rows else 0, np.int64)
        self.uncompressed_sizes = self.offsets = self.compressed_sizes = \
            np.zeros(len(self.row_starts), np.int64)

    def block_rows(self, blocks: np.ndarray) -> np.ndarray:
        return np.full(len(blocks), self.num_rows, np.int64)
