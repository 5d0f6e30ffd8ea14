"""RowFileReader: point lookups, takes and scans of a .row file.

Opening reads the footer and block index (one read of the file's tail when
the index fits in it) and checks Paimon's index invariants. A row is then one
block away: bisect the row starts, read and decompress that block (or take it
from the LRU cache), decode the row.
"""
from __future__ import annotations

import itertools
import os
from collections import deque
from concurrent.futures import CancelledError, wait
from dataclasses import dataclass
from typing import Any, Generator, Iterator, NamedTuple, Sequence

import numpy as np
import pyarrow as pa

from .. import _rowcodec
from ..arrow_types import as_row_type, to_arrow_schema
from .block_cache import BlockCache
from .block_index import BlockIndex, read_footer_and_index
from .block_store import BlockMeta, StoreGroup, decompress_frame, open_store  # noqa: F401 (verify)
from .decode_pool import shared_pool as _shared_pool
from ..errors import ColumnNotFoundError, RowDecodeError, RowIndexError, RowMemoryError
from .footer import Footer
from ..io.ranges import SCAN_AHEAD
from . import scatter
from ..io.source import Source
from ..row_numbers import as_rows, few_rows, row_number
from ..datatypes import RowType

DEFAULT_CACHE_BYTES = 64 << 20
DEFAULT_MAX_BLOCK_SIZE = 256 << 20
DEFAULT_MAX_ROW_SIZE = 64 << 20
DEFAULT_BATCH_SIZE = 65536
# iter_batches() also ends a batch at about this many row bytes (rows of 16 MiB
# strings: 4 a batch, not 65536), so a scan's memory is bounded by it and
# readahead, not by the file
DEFAULT_BATCH_BYTES = 64 << 20
SMALL_TAKE = 64    # take() of a list of at most this many rows: located with bisect, no numpy
# take() decodes in the calling thread when handing the work to the pool and
# waiting would cost more than it: at most INLINE_ROWS rows and INLINE_COLD
# blocks to decompress (a thread hop costs about one block's decompression)
INLINE_ROWS = 1024
INLINE_COLD = 2
UNIT_BLOCKS = 64   # read()/take(): at most this many blocks per pool task
# take() of at most this many rows (a training batch): each touched block
# decompressed once, on all threads, and the rows decoded in this thread
SCATTERED_ROWS = 16384


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


@dataclass(frozen=True)
class FileMetadata:
    """What a ``.row`` file says of itself, read without its schema."""
    name: str
    size: int                   # bytes
    footer: Footer
    block_index: BlockIndex


def read_metadata(path_or_file, *, max_block_size: int = DEFAULT_MAX_BLOCK_SIZE,
                  filesystem=None, storage_options: dict | None = None) -> FileMetadata:
    """The footer and block index of a ``.row`` file, checked as a reader
    checks them, and its size: one read of the tail (two when the index is
    larger than it), and no schema needed. ``filesystem`` and
    ``storage_options`` as for :class:`RowFileReader`."""
    source = Source(path_or_file, False, filesystem, storage_options)
    try:
        footer, index = read_footer_and_index(source)
        index.validate(footer, source.name, max_block_size)
        return FileMetadata(source.name, source.size, footer, index)
    finally:
        source.close()


class RowFileReader:
    """Reads a Paimon ``.row`` file.

    ``schema`` must be the writer's exact schema (``.row`` files store none):
    a :class:`RowType`, schema text or ``pyarrow.Schema``. A reader may be
    shared by threads: reads use ``pread`` and the block cache is locked.

    Options: ``cache_bytes`` is the LRU block cache budget (0 disables it);
    ``max_block_size`` bounds the uncompressed size any block may declare,
    checked before anything is allocated; ``max_row_size`` bounds a row's
    bytes (from the block's offset array, before decoding), the Arrow
    placeholders nulls expand to beyond what the rows' bytes pay for (per
    row, and together for the rows of one read/take/iter_batches call) and
    the Python objects of get(); all raise LimitExceededError before
    allocating (the rule: docs/errors.md, "Limits"). 0 means no limit.
    ``threads`` pool threads each read, decompress and decode a unit of rows
    for read(), take() and iter_batches() (default: the core count); readers
    with the same ``threads`` share one pool.
    ``memory_map=True`` (a local path only) decompresses blocks straight from
    a read-only mapping of the file instead of copying each block's bytes
    with ``pread`` first: faster scans and lookups, as with pyarrow's option
    of that name, and the same caveat: the file must not be truncated while
    it is open (touching unmapped pages kills the process with SIGBUS).
    ``prefix_lookups=True`` lets get() and take() (of up to SCATTERED_ROWS
    rows) of rows in the first 60% of an uncached block decompress only the
    block's prefix up to the last such row (a lookup resumes it for the next
    lookup in the block), finding the rows by walking the rows before them.
    The cost: such a lookup cannot check the row lengths against the block's
    offset array (it sits at the block's end),
    so a block whose bytes are damaged in a way that still parses returns
    what they say instead of an error; read(), verify() and the default
    check every row against it.

    ``path_or_file`` may be a URL (``s3://bucket/key``, ``gs://``, ``abfs://``,
    ``hdfs://``, ...) or, with ``filesystem`` (a ``pyarrow.fs.FileSystem`` or
    an fsspec filesystem), a path in it; ``storage_options`` are the store's
    settings (for S3 pyarrow's ``S3FileSystem`` arguments or the Paimon
    catalog's ``s3.*`` names), else the environment's. Remote reads are
    shaped for the format: opening reads the tail once, get() one ranged
    request of its block, take() its touched blocks concurrently, scans
    large ranges ahead of the decoder (docs/row-files.md, "Object stores").
    """

    def __init__(self, path_or_file, schema, *, cache_bytes: int = DEFAULT_CACHE_BYTES,
                 max_block_size: int = DEFAULT_MAX_BLOCK_SIZE, threads: int | None = None,
                 max_row_size: int = DEFAULT_MAX_ROW_SIZE, memory_map: bool = False,
                 prefix_lookups: bool = False, filesystem=None,
                 storage_options: dict | None = None):
        self.schema: RowType = as_row_type(schema)
        self.arrow_schema: pa.Schema = to_arrow_schema(self.schema)
        self.max_block_size = max_block_size
        self.max_row_size = max_row_size
        self.prefix_lookups = prefix_lookups
        # the blocks: index arrays, the cache (whole blocks and prefix_lookups'
        # partly decompressed ones, in one budget), fetching and decompression
        self._store = open_store(Source(path_or_file, memory_map, filesystem, storage_options),
                                 self.schema, self.arrow_schema, BlockCache(cache_bytes),
                                 max_block_size=max_block_size, prefix_lookups=prefix_lookups,
                                 max_row_size=max_row_size)
        self._source = self._store.source
        self.name = self._store.name
        self.footer, self.block_index = self._store.footer, self._store.index
        self._table = self._store.table
        self._group = StoreGroup()
        self._group.set(0, self._store)
        self._files = scatter.OneFile(self._table)
        self._all_columns = tuple(range(len(self.schema)))
        self.threads = max(1, threads if threads is not None else (os.cpu_count() or 1))
        self._inflight: set = set()        # this reader's tasks on the shared pool
        self._pid = os.getpid()            # (whose threads run them)

    @property
    def decompressions(self) -> int:
        """Blocks (and block prefixes) decompressed."""
        return self._store.decompressions

    # -- metadata ----------------------------------------------------------
    @property
    def num_rows(self) -> int:
        return self.footer.total_rows

    @property
    def num_blocks(self) -> int:
        return self.footer.block_count

    def __len__(self) -> int:
        """The number of rows."""
        return self.num_rows

    def __repr__(self):
        return (f"<RowFileReader {self.name!r}: {self.num_rows} rows in {self.num_blocks} "
                f"blocks, schema {self.schema}>")

    # -- blocks -------------------------------------------------------------
    def block(self, b: int, *, cache: bool = True) -> "_rowcodec.Block":
        """Block ``b``, decompressed and checked. Taken from the cache, and put
        there when ``cache`` (scans pass False, so they do not evict the
        blocks point lookups keep hot)."""
        return self._store.block(b, cache=cache)

    def clear_cache(self) -> None:
        """Empties the block cache and the lookups' prefixes (the hits and
        misses counts stay)."""
        self._store.clear()

    def _submit(self, unit, positions):
        """_decode_unit on the shared pool, tracked so that close() can wait."""
        future = _shared_pool(self.threads).submit(self._decode_unit, unit, positions)
        self._inflight.add(future)
        future.add_done_callback(self._inflight.discard)
        return future

    def _block_of(self, rows: np.ndarray) -> np.ndarray:
        return self._store.block_of(rows)

    # -- columns ------------------------------------------------------------
    def _column_positions(self, columns: Sequence[str | int] | None) -> tuple[int, ...]:
        if columns is None:
            return self._all_columns
        out = []
        for c in columns:
            if isinstance(c, str):
                try:
                    c = self.schema.index(c)
                except KeyError:
                    raise ColumnNotFoundError(f"{self.name}: no column {c!r}; the schema has "
                                              f"{self.schema.names}") from None
            elif not 0 <= c < len(self.schema):
                raise ColumnNotFoundError(f"{self.name}: column position {c} outside "
                                          f"[0, {len(self.schema)})")
            if c in out:
                raise ValueError(f"column {self.schema.fields[c].name!r} selected twice")
            out.append(c)
        return tuple(out)

    def projected_schema(self, columns: Sequence[str | int] | None = None) -> pa.Schema:
        """The Arrow schema of what read(columns=...) returns, in that order."""
        return pa.schema([self.arrow_schema.field(i) for i in self._column_positions(columns)])

    # -- rows as Python values ---------------------------------------------
    def get(self, i: int) -> tuple[Any, ...]:
        """Row ``i`` as a tuple of Python values; reads at most one block.
        Negative ``i`` counts from the end."""
        i = row_number(i, self.num_rows, self.name)
        store = self._store
        b = store.table.find(i)
        local = i - store.table.start(b)
        block = store.rows_block(b, local)
        try:
            return store.decoder(None).decode_row(block, local)
        except (RowDecodeError, RowMemoryError) as e:
            raise store.decode_error(b, e) from None

    def __getitem__(self, i: int) -> tuple[Any, ...]:
        """Row ``i`` as a tuple: ``get(i)``."""
        return self.get(i)

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        """Every row as a tuple, in order (Python values: for Arrow, iter_batches())."""
        for i in range(self.num_rows):
            yield self.get(i)

    # -- rows as Arrow ------------------------------------------------------
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

    def _batches(self, rows: np.ndarray | range | None, positions, batch_size: int,
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

    def _selected(self, selection) -> np.ndarray | range | None:
        if selection is None:
            return None
        if isinstance(selection, range) and selection.step == 1:
            if selection and not (0 <= selection.start and selection.stop <= self.num_rows):
                raise RowIndexError(f"{self.name}: selection {selection} outside "
                                    f"[0, {self.num_rows})")
            return selection
        rows = as_rows(selection, self.num_rows, "selection", self.name)
        if len(rows) > 1 and not np.all(rows[1:] > rows[:-1]):
            rows = np.unique(rows)
        return rows

    def iter_batches(self, columns=None, selection=None, batch_size: int = DEFAULT_BATCH_SIZE,
                     readahead: int = 1, batch_bytes: int | None = DEFAULT_BATCH_BYTES
                     ) -> Iterator[pa.RecordBatch]:
        """RecordBatches of ``batch_size`` rows of the selected rows and
        columns, fewer where their rows' bytes would pass ``batch_bytes``
        (the blocks' uncompressed bytes per row; one row at least; None: no
        byte budget). Blocks with no selected row are neither read nor decompressed.
        A ``range`` selection (a partition of the file) is decoded block by
        block without listing its rows. ``readahead`` batches are decoded on
        the thread pool while the caller works on the current one, so memory
        holds about readahead + 1 batches; more readahead uses more cores."""
        positions = self._column_positions(columns)
        if batch_bytes is not None and batch_bytes < 1:
            raise ValueError(f"batch_bytes must be positive or None, got {batch_bytes}")
        yield from self._batches(self._selected(selection), positions, batch_size,
                                 ahead=readahead, max_bytes=batch_bytes)

    def to_reader(self, columns=None, selection=None, batch_size: int = DEFAULT_BATCH_SIZE,
                  readahead: int = 1) -> pa.RecordBatchReader:
        """iter_batches() as a ``pyarrow.RecordBatchReader``, which exports
        Arrow's C stream (``__arrow_c_stream__``): polars, DuckDB, pandas and
        pyarrow consume it without copies. The reader must stay open while
        the stream is read."""
        schema = pa.schema([self.arrow_schema.field(i) for i in self._column_positions(columns)])
        return pa.RecordBatchReader.from_batches(
            schema, self.iter_batches(columns, selection, batch_size, readahead))

    def __arrow_c_stream__(self, requested_schema=None):
        """The whole file as an Arrow C stream (the PyCapsule interface), so
        ``pl.from_arrow(reader)`` or ``duckdb.sql("select ... from reader")``
        read it directly. ``requested_schema`` is honoured as pyarrow honours it
        (a cast where possible)."""
        return self.to_reader().__arrow_c_stream__(requested_schema)

    def _unit_blocks(self, rows: np.ndarray | range | None) -> int:
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

    def read(self, columns=None, selection=None) -> pa.Table:
        """The selected rows (``selection``: a pyroaring BitMap or any iterable
        of row numbers; None for all) and columns as a Table."""
        positions = self._column_positions(columns)
        schema = pa.schema([self.arrow_schema.field(i) for i in positions])
        rows = self._selected(selection)
        batches = list(self._batches(rows, positions, DEFAULT_BATCH_SIZE, self._unit_blocks(rows)))
        return pa.Table.from_batches(batches, schema=schema)

    def take(self, row_numbers, columns=None) -> pa.Table:
        """The rows ``row_numbers``, in the order given (duplicates allowed).
        Up to SCATTERED_ROWS rows (a training batch): each block they touch
        is read and decompressed once, on all the threads (touched_blocks),
        and the rows decoded in the order asked in one C loop."""
        positions = self._column_positions(columns)
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
            batches = list(self._batches(rows, positions, DEFAULT_BATCH_SIZE, self._unit_blocks(rows)))
            return pa.Table.from_batches(batches, schema=schema)
        unique, inverse = np.unique(rows, return_inverse=True)
        batches = list(self._batches(unique, positions, DEFAULT_BATCH_SIZE, self._unit_blocks(unique)))
        return pa.Table.from_batches(batches, schema=schema).take(pa.array(inverse.ravel()))

    def _take_scattered(self, rows: np.ndarray, positions) -> pa.Table:
        """take() of up to SCATTERED_ROWS rows: their blocks decompressed
        once each, on all the threads, then their rows decoded in the order
        asked (scatter.take: in rounds within its TAKE_BUDGET)."""
        return scatter.take(self._files, self._group, rows, positions, self.threads,
                            lambda: self.projected_schema(positions).empty_table())

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
        blocks = self._block_of(rows)
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

    # -- lifetime -------------------------------------------------------------
    def close(self):
        """Closes the file and drops the cached blocks; calling it again does nothing."""
        # An unfinished iter_batches' tasks; in a forked child, the parent's
        # threads that ran them are gone, and they would never finish.
        inflight = list(self._inflight) if os.getpid() == self._pid else []
        for future in inflight:
            future.cancel()
        wait(inflight)
        self._source.close()
        self.clear_cache()

    def __enter__(self) -> "RowFileReader":
        return self

    def __exit__(self, *exc):
        self.close()


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
