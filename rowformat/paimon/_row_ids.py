"""The one ``_ROW_ID`` index of a row-tracking table's snapshot: its data
files by ``_ROW_ID`` range, and the one router from ids to (file, row in
the file). ``tables.RowIdRouter`` (lookups, Spark's ``lookup_row_ids``),
the accelerated ``to_torch()`` and ``RowDataset`` all build it here, with
one set of checks and messages; the codec package below knows row
numbers only.

Imports nothing of pypaimon or ``tables`` (which builds it from a plan:
``tables`` -> here, never back)."""
from __future__ import annotations

import os
from typing import Any, Optional, Sequence

import numpy as np
import pyarrow as pa

from ..errors import RowIndexError, SchemaError


def check_table(where: str, row_tracking: bool, primary_keys) -> None:
    """SchemaError unless the table's rows have one ``_ROW_ID`` each, kept
    in one file: row tracking on, an append table."""
    if not row_tracking:
        raise SchemaError(f"{where} has no _ROW_ID: the table was not created with "
                          f"'row-tracking.enabled' = 'true'")
    if primary_keys:
        raise SchemaError(f"{where} is a primary-key table; _ROW_ID lookups need an "
                          f"append table")


def check_file(where: str, f: Any, schema_id: int, deletion_file: Any = None) -> None:
    """SchemaError unless the data file ``f`` (pypaimon's DataFileMeta) is a
    ``.row`` file of the table's schema, all its columns, with a
    ``_ROW_ID`` range and no deleted rows."""
    if deletion_file is not None or (getattr(f, "delete_row_count", None) or 0):
        raise SchemaError(f"{where}: data file {f.file_name} has deleted rows (deletion "
                          f"vectors), which _ROW_ID lookups do not apply yet; read the "
                          f"table instead")
    if os.path.splitext(f.file_name)[1] != ".row":
        raise SchemaError(f"{where}: data file {f.file_name} is not a .row file; _ROW_ID "
                          f"lookups read .row files")
    if f.first_row_id is None:
        raise SchemaError(f"{where}: data file {f.file_name} has no _ROW_ID range "
                          f"(written before row tracking was enabled?)")
    if f.schema_id != schema_id or f.write_cols is not None:
        raise SchemaError(f"{where}: data file {f.file_name} was written with another schema "
                          f"or a subset of the columns; _ROW_ID lookups need files of the "
                          f"table's current schema")


class RowIdIndex:
    """Data files by ``_ROW_ID`` range: ``first`` ids (sorted), row
    ``counts``, ``paths`` (URLs for a table on an object store), the
    ``storage_options`` to open them with and their pypaimon ``metas`` (if
    given). Ranges that overlap are a SchemaError naming ``where``.
    Picklable: numpy arrays, lists and a dict."""

    def __init__(self, first_ids, counts, paths: Sequence[str],
                 storage_options: Optional[dict] = None, where: str = "_ROW_ID index",
                 metas: Optional[list] = None):
        first = np.asarray(first_ids, np.int64).reshape(-1)
        order = np.argsort(first, kind="stable")
        self.first = first[order]
        self.counts = np.asarray(counts, np.int64).reshape(-1)[order]
        # int(): numpy's stubs type a Sequence index as int, not np.intp
        self.paths = [paths[int(i)] for i in order]
        self.metas = None if metas is None else [metas[int(i)] for i in order]
        self.storage_options = storage_options
        self.where = where
        ends = self.first + self.counts
        if len(ends) > 1 and (self.first[1:] < ends[:-1]).any():
            raise SchemaError(f"{where}: _ROW_ID ranges of data files overlap (a data-evolution "
                              f"table); _ROW_ID lookups need one file per row")

    def __len__(self) -> int:
        return len(self.paths)

    def _locate(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(file, row in it, whether the id is in a file) of each id."""
        k = np.searchsorted(self.first, values, side="right") - 1
        kk = np.maximum(k, 0)
        if not len(self.first):
            return kk, values, np.zeros(len(values), bool)
        local = values - self.first[kk]
        return kk, local, (k >= 0) & (local < self.counts[kk])

    def locate(self, ids) -> tuple[np.ndarray, np.ndarray]:
        """(file, row in the file) of each ``_ROW_ID`` of ``ids`` (int64
        arrays, in that order); RowIndexError naming the index and the first
        id no file holds."""
        values = np.asarray(ids).reshape(-1)
        if values.dtype.kind not in "iu":
            if len(values):
                raise TypeError(f"{self.where}: _ROW_IDs must be integers, got {values.dtype}")
            values = values.astype(np.int64)
        if values.dtype == np.uint64 and len(values) and values.max() > np.iinfo(np.int64).max:
            raise RowIndexError(f"{self.where}: no row has _ROW_ID {int(values.max())}")
        values = values.astype(np.int64, copy=False)
        f, local, inside = self._locate(values)
        if not inside.all():
            raise RowIndexError(f"{self.where}: no row has _ROW_ID "
                                f"{int(values[np.argmin(inside)])}")
        return f, local

    def route(self, ids: pa.Array) -> tuple[pa.Array, pa.Array]:
        """(paths, row numbers) of an Arrow array of ids: nulls for a null
        id or one no file holds (a lookup's miss, not an error)."""
        valid = np.ones(len(ids), bool)
        if ids.null_count:
            valid &= ~np.asarray(ids.is_null().to_numpy(zero_copy_only=False))
        values = np.asarray(ids.cast(pa.int64()).fill_null(-1).to_numpy(zero_copy_only=False),
                            np.int64)
        f, local, inside = self._locate(values)
        inside &= valid
        codes = pa.array(np.where(inside, f, 0).astype(np.int32), mask=~inside)
        paths = pa.DictionaryArray.from_arrays(codes, pa.array(self.paths or [""], pa.string()))
        rows = pa.array(np.where(inside, local, 0), pa.int64(), mask=~inside)
        return paths.cast(pa.string()), rows
