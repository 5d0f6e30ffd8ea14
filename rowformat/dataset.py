"""Random access to the rows of many ``.row`` files as one sequence, for
training loops: :class:`RowDataset` (PyTorch's map-style dataset protocol,
without importing torch) and :class:`BlockShuffleSampler`.

::

    ds = rowformat.RowDataset("/w/db.db/t", columns=["x", "y"])    # a Paimon append table
    ds = rowformat.RowDataset(["a.row", "b.row"], schema="x INT, y STRING")
    batch = ds.take([17, 3, 17, 90_000])      # a RecordBatch, rows in the order asked
    loader = torch.utils.data.DataLoader(
        ds, batch_size=256, num_workers=2, collate_fn=lambda batch: batch,
        sampler=rowformat.BlockShuffleSampler(ds, window=8, seed=0))

Row ``i`` of the dataset is row ``i - start`` of the file whose rows start
at ``start``, the files in the order given (for a table: its snapshot's data
files by partition, bucket and path; for a row-tracking table, by their
first ``_ROW_ID``: ``row_ids(indices)`` and ``take_row_ids(ids)`` go
between the two, through the table's one ``_ROW_ID`` index). Each process
opens a file the first time a batch needs it, and keeps it and the block
cache all the files share (one budget, ``cache_bytes``) across batches; a
batch's touched blocks, of however many files, are read and decompressed
as one job and its rows decoded in one C loop, so a batch costs per touched
block, not per file. A dataset pickled to DataLoader workers (fork or
spawn) carries only paths and schemas. Decompression releases the GIL.
"""
from __future__ import annotations

import os
from typing import Any, Iterator, Optional, Sequence

import numpy as np
import pyarrow as pa

from .arrow_types import as_row_type, to_arrow_schema
from .errors import DatasetError
from .row.files import FileSet
from .row.reader import read_metadata
from .row_numbers import as_rows
from .datatypes import RowType


class RowDataset:
    """The rows of ``source`` as one sequence: a Paimon append table's
    directory (its latest snapshot's ``.row`` data files, which must hold its
    current schema), or a list of ``.row`` paths with their ``schema``.

    ``ds[i]`` is one row as a dict; ``ds.take(indices)`` and
    ``ds.__getitems__(indices)`` (what a PyTorch ``DataLoader`` calls for a
    batch) one ``RecordBatch`` of those rows in the order asked
    (``format="numpy"``: a dict of NumPy arrays).

    Making it keeps no file open: the row counts come from each file's
    footer (read, then closed; a table's manifests must agree, else
    DatasetError naming the file), and each process opens a file's
    file when a batch first needs a row of it (DatasetError if the file
    no longer holds the rows and blocks counted), then keeps it.
    ``cache_bytes`` is the budget of the one block cache all the files
    share (a process's decompressed blocks of the dataset, whatever its
    number of files; 0: none); ``prefix_lookups=True``
    lets a batch decompress a block only up to the last row it needs there
    (RowFileReader's option of that name, and its caveat); ``threads``, the
    readers' decoding threads (default: the core count, and in a DataLoader
    worker the cores divided by the number of workers); ``memory_map=True``
    decompresses blocks straight from mappings of the files (RowFileReader's
    option, and its caveat: a file must not be truncated while it is open).

    Tables and files may live on an object store: a table URL
    (``s3://bucket/wh/db.db/t``) with ``storage_options`` as
    :func:`rowformat.paimon.tables.open_table` takes them (the catalog's
    ``s3.endpoint``, ``s3.access-key``, ...; else the environment's), or file
    URLs with ``storage_options``/``filesystem`` as RowFileReader takes them.
    A batch then fetches its touched blocks concurrently, nothing more."""

    def __init__(self, source, schema=None, columns: Optional[Sequence[str]] = None, *,
                 cache_bytes: int = 64 << 20, prefix_lookups: bool = False,
                 threads: Optional[int] = None, memory_map: bool = False,
                 filesystem=None, storage_options: Optional[dict] = None):
        first_ids = None
        open_args: dict = {"filesystem": filesystem, "storage_options": storage_options}
        if isinstance(source, (str, os.PathLike)):
            files, file_schema, first_ids, counts, open_args = _table_files(
                os.fspath(source), schema, storage_options)
        else:
            files = [os.fspath(p) for p in source]
            if schema is None:
                raise DatasetError("RowDataset: give the schema of the .row files")
            file_schema = as_row_type(schema)
            counts = None
        self.source = os.fspath(source) if isinstance(source, (str, os.PathLike)) else "RowDataset"
        self.files: list[str] = files
        self.schema: RowType = file_schema
        self.columns = list(columns) if columns is not None else list(file_schema.names)
        unknown = [c for c in self.columns if c not in file_schema.names]
        if unknown:
            raise DatasetError(f"RowDataset: no column(s) {unknown}; the columns are "
                               f"{list(file_schema.names)}")
        self._positions = tuple(file_schema.index(c) for c in self.columns)
        full = to_arrow_schema(file_schema)
        self.arrow_schema = pa.schema([full.field(c) for c in self.columns])
        self.cache_bytes = cache_bytes
        self.prefix_lookups = prefix_lookups
        self.threads = threads
        self.memory_map = memory_map
        # Files open on first use: their row counts and block indexes from
        # each file's footer (read, not kept open), which a table's manifest
        # must agree with (else its rows would be lost or routed to another
        # file); a file opened later must hold those rows and blocks.
        metas = [read_metadata(p, **open_args) for p in files]
        held = [m.footer.total_rows for m in metas]
        for p, want, rows in zip(files, held if counts is None else counts, held):
            if want != rows:
                raise DatasetError(f"{self.source}: data file {p} holds {rows} rows, but its "
                                   f"manifest entry's _ROW_COUNT is {want}")
        self._files = FileSet(files, file_schema, held, cache_bytes=cache_bytes,
                              where=self.source, metadata=metas,
                              prefix_lookups=prefix_lookups, memory_map=memory_map,
                              threads=threads, open_args=open_args)
        self._starts = self._files.file_rows
        # a row-tracking table: its _ROW_ID index (the files in its order)
        self._row_ids = first_ids
        self.first_row_ids: Optional[np.ndarray] = \
            None if first_ids is None else first_ids.first

    @property
    def block_starts(self) -> np.ndarray:
        """The first row of every block of every file, as dataset rows (each
        file's block index read the first time it is asked for)."""
        return self._files.file_blocks.row_starts

    # -- the sequence ------------------------------------------------------
    def __len__(self) -> int:
        return int(self._starts[-1])

    def __getitem__(self, i: int) -> dict:
        """Row ``i`` as a dict of Python values."""
        return self.take([i]).to_pylist()[0]

    def __getitems__(self, indices) -> pa.RecordBatch:
        """The rows ``indices`` as one RecordBatch (a DataLoader's batch fetch)."""
        return self.take(indices)

    def take(self, indices, format: str = "arrow") -> Any:
        """The rows ``indices``, in the order given (duplicates allowed), as a
        RecordBatch (``format="arrow"``) or a dict of NumPy arrays
        (``format="numpy"``). Each file is read once, for all its rows asked."""
        if format not in ("arrow", "numpy"):
            raise ValueError(f"format must be 'arrow' or 'numpy', got {format!r}")
        rows = as_rows(indices, len(self), "indices")
        batch = _one_batch(self._files.take(rows, self._positions), self.arrow_schema)
        if format == "numpy":
            return {name: col.to_numpy(zero_copy_only=False)
                    for name, col in zip(batch.schema.names, batch.columns)}
        return batch

    # -- _ROW_ID (row-tracking tables) -----------------------------------------
    def row_ids(self, indices) -> np.ndarray:
        """The ``_ROW_ID`` of the dataset rows ``indices``."""
        rows = as_rows(indices, len(self), "indices")
        f = np.searchsorted(self._starts, rows, side="right") - 1
        return self._tracked().first[f] + rows - self._starts[f]

    def take_row_ids(self, ids, format: str = "arrow") -> Any:
        """take() of the rows whose ``_ROW_ID`` are ``ids``, in the order given."""
        f, local = self._tracked().locate(ids)
        return self.take(self._starts[f] + local, format)

    def _tracked(self):
        if self._row_ids is None:
            raise DatasetError(f"{self.source}: not a row-tracking table "
                               f"('row-tracking.enabled'): its rows have no _ROW_ID")
        return self._row_ids

    # -- files, opened once per process ----------------------------------------
    def close(self) -> None:
        """Closes this process's files and empties the block cache (they
        reopen when read again)."""
        self._files.close()

    def __repr__(self) -> str:
        return (f"<RowDataset: {len(self)} rows in {len(self.files)} files, "
                f"columns {self.columns}>")


def _one_batch(table: pa.Table, schema: pa.Schema) -> pa.RecordBatch:
    batches = table.to_batches()
    if not batches:
        return pa.RecordBatch.from_pylist([], schema=schema)
    return batches[0]


def _table_files(path: str, schema, storage_options: Optional[dict]
                 ) -> tuple[list[str], RowType, Any, list[int], dict]:
    """The table's .row data files (by first _ROW_ID for a row-tracking
    table), its schema, its _ROW_ID index (a RowIdRouter, or None), their row
    counts (as the manifests give them), and what readers open them with."""
    from .paimon import tables
    if schema is not None:
        raise DatasetError("RowDataset: a Paimon table's schema is its own; give no schema")
    table, _ = tables.pin(path, storage_options=storage_options)
    if table.primary_keys:
        raise DatasetError(f"{path} is a primary-key table: its rows are merged from several "
                           f"files on read; RowDataset reads append tables")
    schema_id = table.table_schema.id
    files = []
    for d in tables.data_files(table):
        if d.format != "row":
            raise DatasetError(f"{path}: data file {d.path} is not a .row file")
        if d.schema_id != schema_id or d.meta.write_cols is not None:
            raise DatasetError(f"{path}: data file {d.path} was written with another schema "
                               f"or a subset of the columns")
        if getattr(d.meta, "delete_row_count", 0):
            raise DatasetError(f"{path}: data file {d.path} has deleted rows")
        files.append(d)
    index = None
    if table.options.row_tracking_enabled() and files:
        # the table's one _ROW_ID index (its checks and messages), the files in its order
        index = tables.RowIdRouter.from_table(table, path)
        by_path = {d.path: d for d in files}
        files = [by_path[p] for p in index.paths]
    return ([d.path for d in files], tables.row_type(table), index, [d.rows for d in files],
            {"storage_options": tables.reader_options(table)})


class BlockShuffleSampler:
    """Indices of a :class:`RowDataset` in an order that reads each block
    about once per epoch: the blocks in a random order, and the rows of each
    window of ``window`` consecutive blocks (in that order) shuffled together.

    Seeded and per epoch (``set_epoch``, as PyTorch's DistributedSampler),
    and shardable: with ``world_size`` ranks, rank ``r`` gets every
    ``world_size``-th block of the epoch's order, so the shards are disjoint
    and cover every row once. The trade-off against a full shuffle: a batch
    holds rows of at most ``window`` blocks (of about a block's row count
    each), so rows stored together stay near each other in an epoch; a
    larger window mixes more and holds more decoded blocks in the reader's
    cache at once."""

    def __init__(self, dataset: RowDataset, window: int = 16, seed: int = 0,
                 rank: int = 0, world_size: int = 1):
        if window < 1:
            raise ValueError(f"window must be at least 1, got {window}")
        if world_size < 1 or not 0 <= rank < world_size:
            raise ValueError(f"rank {rank} is not in [0, world_size={world_size})")
        starts = dataset.block_starts
        self._bounds = np.append(starts, len(dataset)).astype(np.int64)
        self.window, self.seed, self.rank, self.world_size = window, seed, rank, world_size
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def _blocks(self) -> np.ndarray:
        rng = np.random.default_rng([self.seed, self.epoch])
        order = rng.permutation(len(self._bounds) - 1)
        return order[self.rank::self.world_size]

    def __len__(self) -> int:
        blocks = self._blocks()
        return int((self._bounds[blocks + 1] - self._bounds[blocks]).sum())

    def __iter__(self) -> Iterator[int]:
        rng = np.random.default_rng([self.seed, self.epoch, self.rank + 1])
        blocks = self._blocks()
        for lo in range(0, len(blocks), self.window):
            rows = np.concatenate([np.arange(self._bounds[b], self._bounds[b + 1])
                                   for b in blocks[lo:lo + self.window]])
            rng.shuffle(rows)
            yield from rows.tolist()
