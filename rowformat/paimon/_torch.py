"""pypaimon 2.1.0's map-style ``to_torch()`` dataset, its batches read by rowformat.

Stock, each ``__getitems__`` (one DataLoader batch) plans a new table read
of the rows' ``_ROW_ID`` ranges, opens every data file they touch, expands
the ranges into Python int lists and converts the rows to dicts by
``_ROW_ID``. Under acceleration, ``TableRead.to_torch()`` gives the same
dataset as an instance of a subclass whose batches go straight from
``_ROW_ID`` to (file, row) through the table's one ``_ROW_ID`` index
(``tables.RowIdRouter``): the files are opened once per process and kept
across batches with one block cache (one budget for all of them), and a
batch's blocks, of all its files, are decompressed at once on all cores
(:class:`rowformat.row.files.FileSet`; ``prefix_lookups`` on, reading with
``pread``, not mapping the files; in a DataLoader worker, its share of the
cores). The rows equal stock's,
values and Python types: they are made column by column
(:mod:`rowformat.arrow_pylist`), not through a Scalar per value as
``Table.to_pylist()``. A dataset this cannot read so (not all local
``.row`` files of the table's schema, one per ``_ROW_ID``; a predicate,
row kinds, nested projections, authorization splits, deletion vectors) is
read stock; ``accelerated_reason(ds)`` says why.

A dataset made under acceleration stays accelerated wherever it goes: it
pickles (fork and spawn DataLoader workers) without its open readers, and
each process opens its own.

Importing this module imports no pypaimon; its ``TorchDataset`` class is
built on first use (and by pickle, through the module's ``__getattr__``).
"""
from __future__ import annotations

import importlib
import inspect
import os
from typing import Any, Optional

import numpy as np
import pyarrow as pa

from ..arrow_pylist import rows_as_dicts, to_pylist
from ..errors import SchemaError
from ..row.files import FileSet
from . import _field_types, _reader

_STATE = "_rowformat_rows"          # the instance attribute holding a process's _RowIdFiles
_CACHE_BYTES = 64 << 20             # the block cache all the dataset's files share
# a block whose rows wanted sit early in it decompressed only up to them (RowFileReader's
# option). Blocks are read with pread, not mapped: a mapped file cut short under an open
# reader kills the process with SIGBUS, a crash mode only a user may choose (RowDataset's
# memory_map=True), where pread raises CorruptFileError naming the file
_READER_OPTIONS: dict[str, Any] = {"prefix_lookups": True, "memory_map": False}
_TORCH_MODULE = "pypaimon.read.datasource.torch_dataset"
_classes: dict = {}


class _NotFast(Exception):
    """Why a dataset is read stock."""


class _RowIdFiles:
    """A dataset's ``_ROW_ID`` index (``tables.RowIdRouter``: the one index
    and its checks), its files (a FileSet: opened on first use, in this
    process, one block cache for all) and how a batch's rows become
    pypaimon's."""

    def __init__(self, table_read: Any, splits: list):
        from . import tables
        special = importlib.import_module("pypaimon.table.special_fields").SpecialFields
        split_mod = importlib.import_module("pypaimon.read.split")
        indexed_mod = importlib.import_module("pypaimon.globalindex.indexed_split")
        parser = importlib.import_module("pypaimon.schema.data_types").PyarrowFieldParser
        table = table_read.table
        if table.is_primary_key_table:
            raise _NotFast("a primary-key table")
        if table_read.predicate is not None or table_read.include_row_kind \
                or table_read.nested_name_paths:
            raise _NotFast("a predicate, row kinds or a nested projection")
        data_splits = []
        for split in splits:
            if isinstance(split, indexed_mod.IndexedSplit):
                split = split.data_split()
            if type(split) is not split_mod.DataSplit:
                raise _NotFast(f"a {type(split).__name__}")
            data_splits.append(split)
        try:
            self.index = tables.RowIdRouter.from_table(table, "to_torch() dataset", data_splits)
        except SchemaError as e:
            raise _NotFast(str(e)) from None
        paths = []
        for path in self.index.paths:
            # a local path, or an object store's URL and its storage options
            local, where = _reader.opening(table.file_io, path)
            if local is None:
                raise _NotFast("data files rowformat cannot open outside the FileIO")
            paths.append((local, where))
        metas = self.index.metas or []
        fields = tables.file_fields(table, metas[0]) if metas else []
        by_name = {f.name: f for f in fields}
        self.names = [f.name for f in table_read.read_type]
        self.row_id = special.ROW_ID.name
        self.columns = [n for n in self.names if n != self.row_id]
        if any(n not in by_name for n in self.columns):
            raise _NotFast("a projected field the data files do not hold")
        self.schema = _field_types.row_type(fields)
        self.positions = tuple(self.schema.index(c) for c in self.columns)
        self.targets = parser.from_paimon_schema([by_name[n] for n in self.columns])
        self.files = FileSet([p for p, _ in paths], self.schema, self.index.counts,
                             cache_bytes=_CACHE_BYTES, where="to_torch() dataset",
                             open_args=[where for _, where in paths],
                             on_open=_reader.count_opened, **_READER_OPTIONS)
        self._index: Optional[tuple] = None     # (the dataset's _row_ids, their arrays)
        self.pid = os.getpid()

    def rows(self, row_ids: np.ndarray) -> list:
        """The rows of ``row_ids`` (int64, in that order) as pypaimon's dicts:
        stock's ``Table.to_pylist()`` values, converted column by column
        (:mod:`rowformat.arrow_pylist`)."""
        if not len(row_ids):
            return []
        f, local = self.index.locate(row_ids)
        table = self.files.take(self.files.file_rows[f] + local, self.positions)
        values = {name: to_pylist(_field_types.conform(table.column(name).combine_chunks(),
                                                       t.type))
                  for name, t in zip(self.columns, self.targets)}
        values[self.row_id] = row_ids.tolist()
        return rows_as_dicts(self.names, [values[n] for n in self.names])

    def row_ids(self, index: Any, positions: np.ndarray) -> np.ndarray:
        """The ``_ROW_ID`` s at ``positions`` of the dataset's ``index`` (its
        ``_row_ids``: pypaimon's ``_RowIdRangeIndex`` of row ranges, or an
        Arrow array of them), as int64; the index's arrays made once."""
        if self._index is None or self._index[0] is not index:
            arrays: tuple
            if isinstance(index, (pa.Array, pa.ChunkedArray)):
                arrays = (np.asarray(index.to_numpy(zero_copy_only=False), np.int64),)
            else:                           # ranges[k] holds positions ends[k-1] .. ends[k]-1
                ends = np.asarray(index.ends, np.int64)
                arrays = (np.asarray([r.from_ for r in index.ranges], np.int64),
                          np.concatenate([[0], ends[:-1]]).astype(np.int64), ends)
            self._index = (index, arrays)
        arrays = self._index[1]
        if len(arrays) == 1:
            return arrays[0][positions]
        froms, starts, ends = arrays
        k = np.searchsorted(ends, positions, side="right")
        return froms[k] + (positions - starts[k])

    def close(self) -> None:
        self.files.close()


def _positions(ds: Any, indices) -> np.ndarray:
    """``indices`` as stock's ``_normalize_index`` takes them (an integer each;
    a negative one from the end; IndexError out of range), at once: int64."""
    got = np.asarray(indices) if not isinstance(indices, np.ndarray) else indices
    if got.ndim != 1 or got.dtype.kind != "i":     # bools, floats, huge ints...: one by one
        return np.asarray([ds._normalize_index(i) for i in indices], np.int64)
    got = got.astype(np.int64, copy=True)
    n = len(ds)
    got[got < 0] += n
    if len(got) and (int(got.min()) < 0 or int(got.max()) >= n):
        raise IndexError("TorchDataset index out of range")
    return got


def _files(ds: Any) -> Optional[_RowIdFiles]:
    """This process's _RowIdFiles of ``ds``, or None (read stock)."""
    state = ds.__dict__.get(_STATE)
    if state is not None and not isinstance(state, str) and state.pid != os.getpid():
        state = None                    # a forked worker: its own readers
    if state is None:
        try:
            state = _RowIdFiles(ds.table_read, ds.splits)
        except _NotFast as e:
            state = str(e)
        ds.__dict__[_STATE] = state
    return None if isinstance(state, str) else state


def accelerated_reason(ds: Any) -> Optional[str]:
    """None when ``ds``'s batches are read by rowformat, else why not."""
    if type(ds).__module__ != __name__:
        return "not made under rowformat.paimon acceleration"
    if ds._row_ids is None:
        return "pypaimon holds its rows in memory (not a row-tracking data-evolution read)"
    _files(ds)
    state = ds.__dict__.get(_STATE)
    return state if isinstance(state, str) else None


def _make_class(stock: type) -> type:
    class TorchDataset(stock):  # type: ignore[misc, valid-type]
        """pypaimon's map-style TorchDataset, its batches read by rowformat."""

        def __getitems__(self, indices) -> list:
            if self._row_ids is None:   # pypaimon's rows in memory: an Arrow take
                return super().__getitems__(indices)
            files = _files(self)
            if files is None:
                return super().__getitems__(indices)
            positions = _positions(self, indices)
            if not len(positions):
                return []
            return files.rows(files.row_ids(self._row_ids, positions))

        def __getstate__(self):
            state = dict(self.__dict__)
            state.pop(_STATE, None)     # open readers stay in their process
            return state

    TorchDataset.__module__ = __name__
    TorchDataset.__qualname__ = "TorchDataset"
    return TorchDataset


def accelerated_class() -> type:
    """The subclass of pypaimon's TorchDataset (built once)."""
    cls = _classes.get("TorchDataset")
    if cls is None:
        stock = importlib.import_module(_TORCH_MODULE).TorchDataset
        cls = _classes["TorchDataset"] = _make_class(stock)
    return cls


def _stock_shape_ok(stock: Any) -> bool:
    """pypaimon's TorchDataset is as this module expects (2.1.0's)."""
    try:
        return (tuple(inspect.signature(stock.__getitems__).parameters) == ("self", "indices")
                and tuple(inspect.signature(stock.__init__).parameters)
                == ("self", "table_read", "splits")
                and callable(getattr(stock, "_normalize_index", None)))
    except (TypeError, ValueError):
        return False


def __getattr__(name: str) -> Any:      # pickle finds the class by name
    if name == "TorchDataset":
        return accelerated_class()
    raise AttributeError(name)


def make_to_torch(stock: Any) -> Any:
    """TableRead.to_torch, its map-style dataset made an accelerated one."""
    import functools

    @functools.wraps(stock)
    def to_torch(self, *args, **kwargs):
        ds = stock(self, *args, **kwargs)
        if type(ds).__name__ == "TorchDataset" and type(ds).__module__ == _TORCH_MODULE \
                and _stock_shape_ok(type(ds)):
            ds.__class__ = accelerated_class()
        return ds
    to_torch.__module__ = __name__      # rowformat's, as the other patches' values
    return to_torch
