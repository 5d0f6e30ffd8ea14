"""RowFileReader: point lookups, takes and scans of a .row file, the facade
over its rooms: the block store (block_store.py: the index arrays, the cache,
fetching and decompression), the scan pipeline (scan.py) and the take
strategies (take.py, and scatter.py for a batch's touched blocks).

Opening reads the footer and block index (one read of the file's tail when
the index fits in it) and checks Paimon's index invariants. A row is then one
block away: find its block in the row starts, read and decompress that block
(or take it from the LRU cache), decode the row.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

import numpy as np
import pyarrow as pa

from .. import _rowcodec
from ..arrow_types import as_row_type, to_arrow_schema
from .block_cache import BlockCache
from .block_index import BlockIndex, read_footer_and_index
from .block_store import decompress_frame, open_store  # noqa: F401 (verify imports it here)
from ..errors import ColumnNotFoundError, RowDecodeError, RowIndexError, RowMemoryError
from .footer import Footer
from ..io.source import Source
from ..row_numbers import as_rows, row_number
from .scan import DEFAULT_BATCH_SIZE, Scan
from .take import INLINE_COLD, INLINE_ROWS, SCATTERED_ROWS, SMALL_TAKE, Takes  # noqa: F401
from ..datatypes import RowType

DEFAULT_CACHE_BYTES = 64 << 20
DEFAULT_MAX_BLOCK_SIZE = 256 << 20
DEFAULT_MAX_ROW_SIZE = 64 << 20
# iter_batches() also ends a batch at about this many row bytes (rows of 16 MiB
# strings: 4 a batch, not 65536), so a scan's memory is bounded by it and
# readahead, not by the file
DEFAULT_BATCH_BYTES = 64 << 20


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
        self._all_columns = tuple(range(len(self.schema)))
        self.threads = max(1, threads if threads is not None else (os.cpu_count() or 1))
        self._scan = Scan(self._store, self.threads)
        self._takes = Takes(self._store, self._scan, self.arrow_schema)

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
        store, table = self._store, self._table
        b = table.find(i)
        local = i - table.start(b)
        block = store.rows_block(b, local) if self.prefix_lookups else store.block(b)
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
        yield from self._scan.batches(self._selected(selection), positions, batch_size,
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

    def read(self, columns=None, selection=None) -> pa.Table:
        """The selected rows (``selection``: a pyroaring BitMap or any iterable
        of row numbers; None for all) and columns as a Table."""
        positions = self._column_positions(columns)
        schema = pa.schema([self.arrow_schema.field(i) for i in positions])
        rows = self._selected(selection)
        batches = list(self._scan.batches(rows, positions, DEFAULT_BATCH_SIZE,
                                          self._scan.unit_blocks(rows)))
        return pa.Table.from_batches(batches, schema=schema)

    def take(self, row_numbers, columns=None) -> pa.Table:
        """The rows ``row_numbers``, in the order given (duplicates allowed).
        Up to SCATTERED_ROWS rows (a training batch): each block they touch
        is read and decompressed once, on all the threads (touched_blocks),
        and the rows decoded in the order asked in one C loop."""
        return self._takes.take(row_numbers, self._column_positions(columns))

    def touched_blocks(self, blocks: np.ndarray, lasts: np.ndarray) -> list:
        """The blocks ``blocks`` (distinct) holding at least their rows up to
        ``lasts``: see scatter.touched_blocks()."""
        return self._takes.touched_blocks(blocks, lasts)

    def row_bytes(self, b: int) -> int:
        """Block ``b``'s uncompressed bytes per row (rounded up): what a
        batch is charged per row of the block against its byte budget."""
        return self._store.row_bytes(b)

    def _block_of(self, rows: np.ndarray) -> np.ndarray:
        return self._store.block_of(rows)

    # -- lifetime -------------------------------------------------------------
    def close(self):
        """Closes the file and drops the cached blocks; calling it again does nothing."""
        self._scan.close()              # an unfinished iter_batches' tasks
        self._source.close()
        self.clear_cache()

    def __enter__(self) -> "RowFileReader":
        return self

    def __exit__(self, *exc):
        self.close()


