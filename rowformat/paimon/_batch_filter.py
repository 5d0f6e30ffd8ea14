"""The row filter pypaimon applies after a split's readers, in Arrow compute.

pypaimon 2.1.0 wraps a split's batches in ``FilterRecordBatchReader`` where
the predicate cannot go into the file readers (``startsWith``,
``endsWith``, ``contains``, more than 256 leaves, a ``_ROW_ID`` predicate,
deletion vectors, files of an older schema, primary-key raw reads). For the
predicates it does not trust to Arrow it tests every row in Python:
``polars`` rows wrapped as ``InternalRow`` s, one ``Predicate.test`` each.
Under acceleration that test runs as :func:`._predicate.compile_mask` 's
Arrow masks, which give ``Predicate.test`` 's answer (two-valued: a leaf on
a null is False) for the columns and literals it accepts; any other
predicate, and any that touches a BLOB, vector or descriptor column (whose
row values pypaimon builds specially), keeps pypaimon's own row test.
"""
from __future__ import annotations

from typing import AbstractSet, Any, Callable, Optional

import pyarrow as pa

from . import _predicate


def _leaf_indices(predicate: Any) -> set:
    if predicate.method in ("and", "or"):
        return set().union(*(_leaf_indices(p) for p in predicate.literals))
    return {predicate.index}


def _special_indices(reader: Any) -> set:
    out: set = set()
    for name in ("blob_field_indices", "vector_field_indices", "descriptor_field_indices"):
        out.update(getattr(reader, name, None) or ())
    return out


def filter_batch(predicate: Any, batch: pa.RecordBatch, special: AbstractSet[Any] = frozenset()
                 ) -> Optional[pa.RecordBatch]:
    """The rows of ``batch`` (whose columns are the positions the
    predicate's indices name) that ``predicate.test`` accepts, None when
    none does; raises :class:`._predicate.Unsupported` for a predicate not
    evaluated here."""
    if _leaf_indices(predicate) & special:
        raise _predicate.Unsupported("a BLOB, vector or descriptor column")
    mask = _predicate.compile_mask(predicate, batch.schema.names)(
        pa.Table.from_batches([batch]))
    out = batch.filter(mask)
    return out if out.num_rows else None


def make_filter_batch_by_row(stock: Callable) -> Callable:
    """``FilterRecordBatchReader._filter_batch_by_row`` in Arrow compute,
    pypaimon's own where :func:`filter_batch` does not apply."""
    def _filter_batch_by_row(self, batch: pa.RecordBatch) -> Optional[pa.RecordBatch]:
        try:
            return filter_batch(self.predicate, batch, _special_indices(self))
        except _predicate.Unsupported:
            return stock(self, batch)
    _filter_batch_by_row._rowformat_stock = stock  # type: ignore[attr-defined]
    return _filter_batch_by_row
