"""RowFileReader: point lookups, takes and scans of a .row file.

Opening reads the footer and block index (one read of the file's tail when
the index fits in it) and checks Paimon's index invariants. A row is then one
block away: bisect the row starts, read and decompress that block (or take it
from the LRU cache), decode the row.
"""
from __future__ import annotations

import bisect
import itertools
import os
import threading
from collections import deque
from concurrent.futures import CancelledError, wait
from dataclasses import dataclass
from typing import Any, Generator, Iterator, NamedTuple, NoReturn, Sequence

import numpy as np
import pyarrow as pa
import zstandard

from .. import _rowcodec
from ..arrow_types import as_row_type, to_arrow_schema
from .block_cache import BlockCache
from .block_index import BlockIndex, read_footer_and_index
from .decode_pool import shared_pool as _shared_pool
from ..errors import (ColumnNotFoundError, CorruptFileError, LimitExceededError, RowDecodeError,
                     RowIndexError, RowMemoryError)
from .footer import Footer
from ..io.ranges import SCAN_AHEAD
from . import scatter as _scatter
from .scatter import Scatter, Wanted, touched_blocks
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
# With prefix_lookups, a lookup of a row in the first PREFIX_SHARE of its block's rows decompresses
# only the block's prefix up to that row (PrefixBlock); past it, the whole
# block through libzstd is as fast (measured on 64 KiB level-1 blocks,
# benchmarks/prefix_lookups.py: the decoder is about as fast as libzstd for
# a whole block, and walking the rows before the row costs what it saves)
PREFIX_SHARE = 0.6
UNIT_BLOCKS = 64   # read()/take(): at most this many blocks per pool task
# take() of at most this many rows (a training batch): each touched block
# decompressed once, on all threads, and the rows decoded in this thread
SCATTERED_ROWS = 16384


def decompress_frame(dctx, frame, usize: int, allow_extra_data: bool = True) -> bytes:
    """A block's ZSTD frame decompressed to exactly ``usize`` bytes, as its
    index entry declares, or CorruptFileError (for after "block B: ").
    python-zstandard allocates a frame's own content size whatever
    max_output_size says, so that must match first; Java's frames have none
    (no content-size flags in the header's descriptor byte: read without a
    call). Frames without one get the index's size as their bound.

    Bytes after the frame (inside the block's compressed size) are ignored,
    as Paimon Java's reader ignores them: the decoded block is the same, and
    its size and row count are checked. ``verify`` reports them (it asks
    for ``allow_extra_data=False``). Passed explicitly: python-zstandard
    means to make strictness its default."""
    try:
        if len(frame) < 5 or frame[4] & 0xE0:
            declared = zstandard.frame_content_size(frame)
            if declared != -1 and declared != usize:
                raise CorruptFileError(f"the ZSTD frame declares {declared} bytes, but the index "
                                       f"declares {usize}")
        # max_output_size, read_across_frames, allow_extra_data, by position: faster
        data = dctx.decompress(frame, usize or 1, False, allow_extra_data)
    except zstandard.ZstdError as e:
        raise CorruptFileError(f"ZSTD decompression failed: {e}") from None
    if len(data) != usize:
        raise CorruptFileError(f"decompressed to {len(data)} bytes, but the index declares {usize}")
    return data


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
        self._source = Source(path_or_file, memory_map, filesystem, storage_options)
        self.name = self._source.name
        try:
            self._open()
        except BaseException:
            self._source.close()
            raise
        self._cache = BlockCache(cache_bytes)
        # prefix_lookups' partly decompressed blocks (resumed by the next
        # lookup in the block), apart from the whole blocks, in the same budget
        self._prefixes = BlockCache(cache_bytes)
        self._local = threading.local()     # per thread: a decompressor, decoders
        self.threads = max(1, threads if threads is not None else (os.cpu_count() or 1))
        self._inflight: set = set()        # this reader's tasks on the shared pool
        self._pid = os.getpid()            # (whose threads run them)
        self.decompressions = 0            # blocks (and block prefixes) decompressed

    def _open(self):
        self.footer, self.block_index = read_footer_and_index(self._source)
        self.block_index.validate(self.footer, self.name, self.max_block_size)
        self._offsets = self.block_index.offsets
        self._starts = self.block_index.row_starts
        self._ends = np.append(self._starts[1:], self.footer.total_rows).astype(np.int64)
        self._starts_list = self._starts.tolist()   # bisect on a list beats numpy for one row
        self._all_columns = tuple(range(len(self.schema)))
        # per block (offset, compressed size, uncompressed size, rows) as Python ints: a
        # lookup reads these without numpy scalars
        self._blocks = list(zip(self._offsets.tolist(), self.block_index.compressed_sizes.tolist(),
                                self.block_index.uncompressed_sizes.tolist(),
                                (self._ends - self._starts).tolist()))

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
        blocks point lookups keep hot). One method, as a lookup's every call
        shows in its latency."""
        block = self._cache.get(b)
        if block is not None:
            return block
        block = self._decompressed(b)
        if cache:
            self._keep(b, block)
        return block

    def _keep(self, b: int, block) -> None:
        self._cache.put(b, block, block.nbytes)
        if b in self._prefixes:     # a lookup's prefix of it is no longer needed
            self._prefixes.pop(b)

    def _decompressed(self, b: int, fetch: "Fetch | None" = None) -> "_rowcodec.Block":
        """Block ``b`` read (from ``fetch`` when it holds it: a scan's
        read-ahead), decompressed and checked (not through the cache)."""
        _, _, usize, rows = self._blocks[b]
        try:
            d = self._local.decompressor
        except AttributeError:
            d = self._local.decompressor = zstandard.ZstdDecompressor()
        frame = self._frame(b, fetch)
        self.decompressions += 1
        try:
            block = _rowcodec.Block(decompress_frame(d, frame, usize))
        except CorruptFileError as e:
            raise CorruptFileError(f"{self.name}: block {b}: {e}") from None
        finally:
            if type(frame) is memoryview:
                frame.release()
        if block.num_rows != rows:
            raise CorruptFileError(f"{self.name}: block {b} holds {block.num_rows} rows, but the "
                                   f"index says {rows}")
        return block

    def _frame(self, b: int, fetch: "Fetch | None" = None):
        """Block ``b``'s compressed bytes, from ``fetch`` when it holds them;
        a file that ends inside the block raises naming the block."""
        offset, size, _, _ = self._blocks[b]
        try:
            if fetch is None or b not in fetch:
                return self._source.frame(offset, size)
            frame = fetch.frame(b)
            if len(frame) != size:
                self._source._truncated(offset, size, len(frame))
            return frame
        except CorruptFileError as e:
            got = getattr(e, "got", None)
            if got is None:
                raise
            self._read_failed(b, 0, got)

    def _rows_block(self, b: int, last: int) -> "_rowcodec.Block":
        """block(b), or, with prefix_lookups, when the rows needed (up to the
        local row ``last``) sit early in an uncached block, the block's
        prefix decompressed up to them (kept among the prefixes, so that the
        next lookup in the block resumes it)."""
        if not self.prefix_lookups:
            return self.block(b)
        _, _, usize, rows = self._blocks[b]
        if last >= rows * PREFIX_SHARE:
            return self.block(b)
        block = self._cache.get(b)
        if block is not None:
            return block
        prefix = self._prefixes.get(b)
        if prefix is None:
            prefix = _rowcodec.PrefixBlock(self._frame(b), usize, rows)
            self.decompressions += 1
            self._prefixes.put(b, prefix, prefix.nbytes)
        block = prefix.rows(self._decoder(None), last)
        if block is None:       # a frame left to libzstd, or a corrupt one: it says why
            self._prefixes.pop(b)
            return self.block(b)
        return block

    def clear_cache(self) -> None:
        """Empties the block cache and the lookups' prefixes (the hits and
        misses counts stay)."""
        self._cache.clear()
        self._prefixes.clear()

    def _submit(self, unit, positions):
        """_decode_unit on the shared pool, tracked so that close() can wait."""
        future = _shared_pool(self.threads).submit(self._decode_unit, unit, positions)
        self._inflight.add(future)
        future.add_done_callback(self._inflight.discard)
        return future

    def _block_of(self, rows: np.ndarray) -> np.ndarray:
        return np.searchsorted(self._starts, rows, side="right") - 1

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

    def _decoder(self, positions: tuple[int, ...] | None) -> "_rowcodec.RowDecoder":
        """This thread's decoder for the columns ``positions`` (None: all)."""
        try:
            cache = self._local.decoders
        except AttributeError:
            cache = self._local.decoders = {}
        dec = cache.get(positions)
        if dec is None:
            if positions is None:
                dec = cache[None] = self._decoder(tuple(range(len(self.schema))))
                return dec
            schema = pa.schema([self.arrow_schema.field(i) for i in positions])
            dec = cache[positions] = _rowcodec.RowDecoder(self.schema, positions, schema)
            dec.max_row_size = self.max_row_size
        return dec

    def _decode_error(self, b: int, e) -> Exception:
        where = f"{self.name}: block {b}"
        if e.row is not None:
            where += f", row {int(self._starts[b]) + e.row}"
        if e.column is not None:
            where += f", column {self.schema.fields[e.column].name!r}"
        if isinstance(e, RowMemoryError):   # not the file's fault: say so
            return MemoryError(f"{where}: out of memory while decoding (the file is not known "
                               f"to be damaged; read smaller batches or give it more memory)")
        return (LimitExceededError if isinstance(e, LimitExceededError) else CorruptFileError)(f"{where}: {e}")

    # -- rows as Python values ---------------------------------------------
    def get(self, i: int) -> tuple[Any, ...]:
        """Row ``i`` as a tuple of Python values; reads at most one block.
        Negative ``i`` counts from the end."""
        i = row_number(i, self.num_rows, self.name)
        b = bisect.bisect_right(self._starts_list, i) - 1
        local = i - self._starts_list[b]
        block = self._rows_block(b, local)
        dec = self._decoder(None)
        try:
            return dec.decode_row(block, local)
        except (RowDecodeError, RowMemoryError) as e:
            raise self._decode_error(b, e) from None

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
            for b in range(first, last + 1):
                base = int(self._starts[b])
                yield Run(b, None, max(lo - base, 0), min(hi, int(self._ends[b])) - base)
            return
        if not len(rows):
            return
        ids = self._block_of(rows)
        cuts = np.flatnonzero(np.diff(ids)) + 1
        for group in np.split(rows, cuts):
            b = int(self._block_of(group[:1])[0])
            yield Run(b, np.ascontiguousarray(group - self._starts[b]), 0, len(group))

    def row_bytes(self, b: int) -> int:
        """Block ``b``'s uncompressed bytes per row (rounded up): what a
        batch is charged per row of the block against its byte budget."""
        _, _, uncompressed, rows = self._blocks[b]
        return -(-uncompressed // max(rows, 1))

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
        dec = self._decoder(positions)
        for run in runs:
            try:
                block = self._cache.get(run.block)
                if block is None:
                    block = self._decompressed(run.block, fetch)
                run.decode(dec, block, reserve)
            except (RowDecodeError, RowMemoryError) as e:
                raise self._decode_error(run.block, e) from None
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
        blocks = sorted({run.block for run in runs if run.block not in self._cache})
        shared = {b: prev.where(b) for b in blocks if prev is not None and b in prev}
        new = [b for b in blocks if b not in shared]
        return Fetch(self._source.fetch([self._blocks[b][:2] for b in new]),
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
        once each, on all the threads (touched_blocks), then their rows
        decoded and put in the order asked. Blocks whose declared sizes add
        up to more than TAKE_BUDGET are taken in rounds within it (each
        round's blocks freed before the next is allocated), so that what a
        take holds at once is bounded by the budget, not by what a file's
        index declares."""
        want = Scatter(self, rows)
        rounds = self._rounds(want.blocks)
        if rounds is None:
            return want.decode(touched_blocks([want])[0], positions)
        parts, order = [], []
        for blocks in rounds:
            picked = np.flatnonzero(np.isin(want.which, blocks))
            part = Scatter(self, rows[picked])
            parts.append(part.decode(touched_blocks([part])[0], positions))
            order.append(picked)
        return pa.concat_tables(parts).take(pa.array(np.argsort(np.concatenate(order))))

    def _rounds(self, blocks: np.ndarray) -> list[np.ndarray] | None:
        """None when ``blocks`` (distinct) declare at most TAKE_BUDGET bytes
        together, else the indexes into them of consecutive rounds that
        each do (one block at least)."""
        sizes = self.block_index.uncompressed_sizes[blocks]
        budget = _scatter.TAKE_BUDGET
        if int(sizes.sum()) <= budget:
            return None
        rounds, start, total = [], 0, 0
        for k, size in enumerate(sizes.tolist()):
            if k > start and total + size > budget:
                rounds.append(np.arange(start, k))
                start, total = k, 0
            total += size
        rounds.append(np.arange(start, len(sizes)))
        return rounds

    def touched_blocks(self, blocks: np.ndarray, lasts: np.ndarray) -> list:
        """The blocks ``blocks`` (distinct) holding at least their rows up to
        ``lasts``: see the module's touched_blocks()."""
        return touched_blocks([Wanted(self, blocks, lasts)])[0]

    def _job(self, blocks: np.ndarray, lasts: np.ndarray, out: list) -> "_Job | None":
        """Fills ``out`` with the cached blocks of ``blocks`` (distinct); the
        others, as one job for touched_blocks()' threads (None if none)."""
        cache = self._cache
        if cache.budget:
            ks = []
            for k, b in enumerate(blocks.tolist()):
                out[k] = cache.get(b)
                if out[k] is None:
                    ks.append(k)
            if not ks:
                return None
            miss = np.array(ks, np.int64)
        else:
            if not len(blocks):
                return None
            miss = np.arange(len(blocks))
        return _Job(self, out, miss, np.asarray(blocks, np.int64)[miss],
                    np.asarray(lasts, np.int64)[miss])

    def _read_failed(self, b: int, err: int, got: int) -> NoReturn:
        """Raises the error of block ``b``'s read: errno ``err``, or (0) the
        file ended ``got`` bytes into the frame."""
        offset, size, _, _ = self._blocks[b]
        if err:
            raise OSError(err, f"{self.name}: block {b}: reading {size} bytes at offset "
                               f"{offset}: {os.strerror(err)}")
        raise CorruptFileError(f"{self.name}: block {b}: read {got} of {size} bytes at offset "
                               f"{offset}: the file is truncated")

    def _list_runs(self, rows: list) -> list[Run]:
        """The runs of ``rows`` (a short list, any order), located with bisect."""
        starts = self._starts_list
        if len(rows) == 1:              # a lookup
            b = bisect.bisect_right(starts, rows[0]) - 1
            local = rows[0] - starts[b]
            return [Run(b, None, local, local + 1)]
        runs: list[Run] = []
        run: list = []
        b = -1
        for i in rows:
            nb = bisect.bisect_right(starts, i) - 1
            if nb != b and run:
                runs.append(Run(b, np.array(run, np.int64), 0, len(run)))
                run = []
            b = nb
            run.append(i - starts[b])
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
            cache, cold = self._cache, 0
            for b in set(heads):
                if b not in cache:
                    cold += 1
                    if cold > INLINE_COLD:
                        return None
        local = rows - self._starts[blocks]
        return [Run(b, local, lo, hi) for b, lo, hi in zip(heads, bounds, bounds[1:])]

    def _take_inline(self, runs: list[Run], positions) -> pa.Table:
        """take() in this thread, run by run, through the block cache. With
        no cache (cache_bytes=0), a block that later runs need again (rows 5,
        900, 6) is kept for them until its last run, and with prefix_lookups
        its prefix reaches the last row any run needs."""
        dec = self._decoder(positions)
        final = {run.block: i for i, run in enumerate(runs)} \
            if len(runs) > 1 and not self._cache.budget else None
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
        try:
            if block is None:
                block = self.block(run.block) if not self.prefix_lookups else \
                    self._rows_block(run.block, run.last if last is None else last)
            run.decode(dec, block)
        except (RowDecodeError, RowMemoryError) as e:
            raise self._decode_error(run.block, e) from None
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
    io.ranges.Fetch of the unit's own blocks, and the (io.ranges.Fetch, range)
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


class _Job:
    """One reader's uncached blocks of a touched_blocks() call: each whole
    (cached afterwards), or with prefix_lookups, a block whose last wanted
    row is in its first PREFIX_SHARE of rows only up to that row. One
    BlockPrefixes job (with a local path, each frame read with pread in C;
    mapped, views of the mapping; else read here first), which every
    thread of the call runs (run()), taking blocks off one counter, the
    costliest first, so the threads finish together; then collect() in the
    caller. No Python work per block: a block the job leaves (a frame
    rf_zstd.h does not decode, a corrupt one, a failed read) is read and
    decompressed as usual, which names any error."""
    __slots__ = ("reader", "out", "ks", "blocks", "lasts", "fd", "frames", "job")
    job: "_rowcodec.BlockPrefixes | None"

    def __init__(self, reader: RowFileReader, out: list, ks: np.ndarray, blocks: np.ndarray,
                 lasts: np.ndarray):
        index = reader.block_index
        rows = reader._ends[blocks] - reader._starts[blocks]
        if reader.prefix_lookups:
            early = lasts < rows * PREFIX_SHARE
            # a prefix costs about its share of a whole block, the walk included
            order: Any = np.argsort(np.where(early, lasts / rows, 1.0), kind="stable")[::-1]
            lasts = np.where(early, lasts, -1)
        else:
            order = slice(None)
            lasts = np.full(len(blocks), -1, np.int64)
        self.reader, self.out = reader, out
        self.ks, self.blocks, self.lasts = ks[order], blocks[order], lasts[order]
        rows = np.ascontiguousarray(rows[order], np.int64)
        blocks = self.blocks
        usizes = np.ascontiguousarray(index.uncompressed_sizes[blocks], np.int64)
        offsets = np.ascontiguousarray(reader._offsets[blocks], np.int64)
        sizes = np.ascontiguousarray(index.compressed_sizes[blocks], np.int64)
        source = reader._source
        self.fd = source.c_reads()
        self.frames = None
        if self.fd is None:
            # a URL's frames are fetched at once, a few requests in flight
            try:
                self.frames = source.frames(list(zip(offsets.tolist(), sizes.tolist())))
            except CorruptFileError as e:       # the file ends inside a block: name it
                got, k = getattr(e, "got", None), getattr(e, "index", None)
                if got is None or k is None:
                    raise
                reader._read_failed(int(blocks[k]), 0, got)
        try:
            self.job = _rowcodec.BlockPrefixes(self.frames, usizes, rows, self.lasts) \
                if self.fd is None else \
                _rowcodec.BlockPrefixes(None, usizes, rows, self.lasts, self.fd, offsets, sizes)
        except MemoryError:     # not the file's fault, but say whose blocks and how many bytes
            raise MemoryError(f"{reader.name}: out of memory allocating {len(blocks)} blocks "
                              f"({int(usizes.sum())} bytes as the index declares them, block "
                              f"{int(blocks[np.argmax(usizes)])} the largest) for a take; "
                              f"take fewer rows at once or give it more memory") from None

    def __len__(self) -> int:
        return len(self.blocks)

    def run(self) -> None:
        """Works on the job's blocks until none is left (any thread)."""
        r, job = self.reader, self.job
        assert job is not None, "run after collect()"
        if self.fd is None:
            job.run(r._decoder(None))
            return
        r._source._enter()              # close() waits for the reads in C
        try:
            job.run(r._decoder(None))
        finally:
            r._source._leave()

    def collect(self) -> None:
        """Puts the blocks in ``out`` (after every run() has returned)."""
        r, out, job = self.reader, self.out, self.job
        assert job is not None, "collected twice"
        blocks = job.blocks()
        # counted here: a block left to libzstd below counts once, in _decompressed
        r.decompressions += sum(block is not None for block in blocks)
        if r._cache.budget:
            for b, last, block in zip(self.blocks.tolist(), self.lasts.tolist(), blocks):
                if block is not None and last < 0:
                    r._keep(b, block)
        for j, (k, block) in enumerate(zip(self.ks.tolist(), blocks)):
            if block is None:
                b = int(self.blocks[j])
                failed = job.read_error(j) if self.fd is not None else None
                if failed is not None:
                    r._read_failed(b, *failed)
                block = r._decompressed(b)
                if r._cache.budget:
                    r._keep(b, block)
            out[k] = block
        self.job = job = None           # (it holds views of the frames)
        for frame in self.frames or ():
            if type(frame) is memoryview:
                frame.release()
