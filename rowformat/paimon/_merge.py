"""The merged read of a primary-key split, vectorized, while acceleration is on.

pypaimon 2.1.0 reads a primary-key split that is not raw-convertible with
``MergeFileSplitRead.create_reader``: every data file becomes key-value rows
(``_KEY_*``, ``_SEQUENCE_NUMBER``, ``_VALUE_KIND``, the values) turned into
Python tuples, sections of overlapping files are sort-merged row by row
through a heap (``SortMergeReaderWithMinHeap``), each key's rows are folded by
the merge function, retractions are dropped (``DropDeleteRecordReader``), the
value predicate is tested row by row, and ``TableRead`` turns the rows back
into Arrow. For the ``deduplicate`` engine the result is, per key, the row
with the highest sequence number, when its kind is INSERT or UPDATE_AFTER, in
key order.

:func:`create_reader` computes the same with Arrow over whole columns: the
files' batches come from pypaimon's own per-file reader
(``file_reader_supplier``: schema evolution, partition columns, key push-down,
and the ``.row`` decoding through rowformat), are sorted by key then sequence
number (``sort_indices``, stable), the last row of each key is taken, and the
value predicate (:mod:`._predicate`), limit and single-name outer projection
follow. The result is returned as a ``RecordBatchReader``, which pypaimon's
``TableRead`` consumes batch-wise. The sort uses that each file is a sorted
run (checked): files whose key ranges do not overlap are taken in key order
with no sort, as Java reads such runs one after another (any key type whose
Python order is Arrow's); for one integer or date key, overlapping files are
merged by numpy's stable sort by key, whose timsort finds the runs.

Anything whose result is not provably pypaimon's falls back to pypaimon's own
``create_reader`` (see :func:`unsupported` and :class:`Fallback`): other merge
engines, ``sequence.field``, deletion vectors, row ranges, streaming splits,
BLOB handling, nested projection, key types whose Python ordering Arrow does
not share (floating point, nanosecond timestamps, nested types), and, found
while merging, data that breaks the assumptions of pypaimon's heap merge
(keys not strictly increasing within a file, two versions of a key with one
sequence number) or survivors of kind UPDATE_AFTER: pypaimon reports those
rows' kind (``include_row_kind``, ``to_iterator``), which a batch reader
cannot carry through ``TableRead``.
"""
from __future__ import annotations

import importlib
from typing import Any, Callable, List, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..arrow_cast import floor_divide
from ..datatypes import DataType, TimestampType
from . import _field_types, _predicate

OUTPUT_BATCH_ROWS = 65536
INSERT, UPDATE_AFTER = 0, 2
ROW_SUFFIX = ".row"

# Key types (rowformat's type roots) whose Python values, as pypaimon's rows
# hold them through polars, order and compare as Arrow's sort and equality do.
_ORDERED_KEY_ROOTS = frozenset({"TINYINT", "SMALLINT", "INT", "BIGINT", "BOOLEAN", "CHAR",
                                "VARCHAR", "BINARY", "VARBINARY", "DECIMAL", "DATE"})
_MAX_KEY_TIMESTAMP_PRECISION = 6     # Python datetimes hold microseconds


class Fallback(Exception):
    """This split's merged read is left to pypaimon (the reason is the message)."""


def _field_type(field: Any) -> DataType:
    """A pypaimon ``DataField``'s type, as rowformat reads its schema JSON."""
    return _field_types.row_type([field]).fields[0].type


def _key_type_supported(field: Any) -> bool:
    t = _field_type(field)
    if isinstance(t, TimestampType):
        return t.precision <= _MAX_KEY_TIMESTAMP_PRECISION
    return t.root in _ORDERED_KEY_ROOTS


def unsupported(sr: Any) -> Optional[str]:
    """Why the split read ``sr`` (a ``MergeFileSplitRead``) is left to
    pypaimon before any file is read, or None when it is merged here."""
    table = sr.table
    options = table.options
    split = sr.split
    engine = importlib.import_module("pypaimon.common.options.core_options").MergeEngine
    if getattr(split, "is_streaming", False):
        return "a streaming split (changes are not merged)"
    if sr.row_ranges is not None:
        return "row ranges (an indexed split)"
    # (pypaimon 2.0.0 converts no BLOB views or descriptors in merged reads)
    needs_convert = getattr(sr, "_needs_blob_inline_convert", None)
    if getattr(sr, "_blob_view_prescan", False) or (needs_convert is not None and needs_convert()):
        return "BLOB views or descriptors"
    if options.merge_engine() != engine.DEDUPLICATE:
        return f"merge-engine {options.merge_engine().value}"
    if options.sequence_field():
        return "sequence.field"
    if any(f is not None for f in (split.data_deletion_files or [])):
        return "deletion vectors"
    if not split.files or not all(f.file_name.endswith(ROW_SUFFIX) for f in split.files):
        return "data files that are not .row"
    if sr.value_arity == 0:
        return "an empty projection"
    if not all(_key_type_supported(f) for f in table.trimmed_primary_keys_fields):
        return "a primary-key type whose order pypaimon computes in Python"
    for f in sr.read_fields[-sr.value_arity:]:
        if _field_type(f).root in ("BLOB", "VARIANT"):
            return f"a {_field_type(f).root} column"
    names = [f.name for f in sr.read_fields[-sr.value_arity:]]
    if sr.outer_extract_name_paths:
        if any(len(p) != 1 or p[0] not in names for p in sr.outer_extract_name_paths):
            return "a nested projection"
        # (2.1.0's _outer_reapplies_predicate_after_projection(); 2.0.0 tests it inline)
        if (sr.predicate is not None and sr.predicate_for_reader is None
                and sr.outer_flat_read_type is not None):
            return "a predicate on a nested projection"
    return None


# -- reading and merging --------------------------------------------------------------

def _read_files(sr: Any) -> tuple[Optional[pa.Table], np.ndarray]:
    """All key-value rows of the split's files as pypaimon's per-file readers
    (``file_reader_supplier`` for a merge read) produce them, one file after
    another (oldest first), and the row number at which each file's rows start."""
    names = sr._get_final_read_data_fields()
    batches: List[pa.RecordBatch] = []
    starts = []
    rows = 0
    # oldest first (the merge's result does not depend on the order: its
    # stable sort by key then finds each key's versions in sequence order)
    for meta in sorted(sr.split.files, key=lambda m: m.max_sequence_number):
        starts.append(rows)
        reader = sr.file_reader_supplier(meta, True, names, False)
        try:
            for batch in iter(reader.read_arrow_batch, None):
                if batch.num_rows:
                    batches.append(batch)
                    rows += batch.num_rows
        finally:
            reader.close()
    if not batches:
        return None, np.zeros(0, np.int64)
    try:
        table = pa.Table.from_batches(batches)
    except pa.ArrowInvalid as e:
        raise Fallback(f"the files' batches have different schemas: {e}") from e
    return table, np.asarray(starts, np.int64)


def _as_numpy(arr: Any) -> np.ndarray:
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    return arr.to_numpy(zero_copy_only=False)


def _integer_keys(col: Any) -> Optional[np.ndarray]:
    """A single key column as int64 numpy values ordered as Arrow orders the
    column (integers, dates), or None for any other type."""
    t = col.type
    if pa.types.is_integer(t):
        if t == pa.uint64():
            return None             # (values past 2**63 would wrap in int64)
        return _as_numpy(col).astype(np.int64, copy=False)
    if pa.types.is_date32(t) or pa.types.is_date64(t):
        arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
        return _as_numpy(arr.view(pa.int32() if pa.types.is_date32(t) else pa.int64())
                         ).astype(np.int64, copy=False)
    return None


def _file_bounds(file_starts: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The first and past-the-last row numbers of each non-empty file."""
    starts = np.unique(file_starts[(file_starts >= 0) & (file_starts < n)])
    if not len(starts) or starts[0] != 0:
        starts = np.concatenate([[0], starts])
    return starts, np.append(starts[1:], n)


def sequence_order(keys: np.ndarray, seq: np.ndarray, starts: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
    """The rows' stable sort by (one integer key, sequence number) as row
    numbers, ties in the given row order, and whether each sorted row's key
    equals the previous one's. Every file (rows from ``starts``) is a sorted
    run, so a stable sort by key alone of the files taken oldest first (by
    their highest sequence number) merges them in near-linear time (timsort
    finds the runs) and puts each key's versions in sequence order; where it
    does not, or two versions share a sequence number, the sort by key then
    sequence number of the rows as given."""
    ends = np.append(starts[1:], len(keys))
    oldest_first = np.argsort(np.maximum.reduceat(seq, starts), kind="stable")
    if np.all(oldest_first[1:] > oldest_first[:-1]):
        perm = np.argsort(keys, kind="stable")      # (given oldest first already)
    else:
        order = np.concatenate([np.arange(starts[i], ends[i]) for i in oldest_first])
        perm = order[np.argsort(keys[order], kind="stable")]
    sorted_keys = keys[perm]
    same = sorted_keys[1:] == sorted_keys[:-1]
    sorted_seq = seq[perm]
    if np.any(same & (sorted_seq[1:] <= sorted_seq[:-1])):
        perm = np.lexsort((seq, keys))
        sorted_keys = keys[perm]
        same = sorted_keys[1:] == sorted_keys[:-1]
    return perm, same


def _latest_per_integer_key(keys: np.ndarray, seq: np.ndarray,
                            file_starts: np.ndarray) -> np.ndarray:
    """:func:`latest_per_key` for one integer key, using that every file is a
    sorted run (checked): where the files' key ranges do not overlap, the
    files in key order are the answer, with no sort at all (as Java reads
    runs that do not overlap one after another); otherwise
    :func:`sequence_order`."""
    n = len(keys)
    if n == 0:
        return np.zeros(0, np.int64)
    starts, ends = _file_bounds(file_starts, n)
    increasing = keys[1:] > keys[:-1]
    inner = starts[1:]
    boundary = increasing[inner - 1].copy()
    increasing[inner - 1] = True             # a new file may start anywhere
    if not increasing.all():
        raise Fallback("a data file whose keys do not strictly increase")
    # (a) runs that do not overlap: each file's keys wholly below the next one's
    if boundary.all():
        return np.arange(n)
    by_first = np.argsort(keys[starts], kind="stable")
    if bool(np.all(keys[ends[by_first[:-1]] - 1] < keys[starts[by_first[1:]]])):
        return np.concatenate([np.arange(starts[i], ends[i]) for i in by_first])
    # (b) overlapping runs
    perm, same = sequence_order(keys, seq, starts)
    # (each key's versions adjacent and in sequence order now)
    sorted_seq = seq[perm]
    if np.any(same & (sorted_seq[1:] == sorted_seq[:-1])):
        raise Fallback("two versions of a key with the same sequence number")
    last = np.ones(n, dtype=bool)
    last[:-1] = ~same
    return perm[last]


def _python_orders_as_arrow(t: pa.DataType) -> bool:
    """Whether Python's comparison of ``t`` 's values (``as_py``) is Arrow's
    sort order: integers, booleans, strings (UTF-8 byte order is code point
    order), binaries, decimals, dates, timestamps to the microsecond."""
    return (pa.types.is_integer(t) or pa.types.is_boolean(t) or pa.types.is_string(t)
            or pa.types.is_large_string(t) or pa.types.is_binary(t)
            or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t)
            or pa.types.is_decimal(t) or pa.types.is_date(t)
            or (pa.types.is_timestamp(t) and t.unit != "ns"))


def _disjoint_runs(key_cols: list, file_starts: np.ndarray, n: int) -> Optional[np.ndarray]:
    """For keys of any (ordered) type: where the files' key ranges do not
    overlap (each file's first and last key compared, as Java compares a
    run's min and max keys), the row numbers of the files in key order, each
    file's keys checked to strictly increase (else Fallback): every key once,
    so that is the merge, with no sort. None where they overlap."""
    if n == 0 or not all(_python_orders_as_arrow(c.type) for c in key_cols):
        return None
    starts, ends = _file_bounds(file_starts, n)

    def key(i: int) -> tuple:
        return tuple(c[int(i)].as_py() for c in key_cols)
    firsts = [key(i) for i in starts]
    lasts = [key(i - 1) for i in ends]
    order = sorted(range(len(starts)), key=lambda f: firsts[f])
    if any(not lasts[a] < firsts[b] for a, b in zip(order, order[1:])):
        return None
    if n > 1:
        less = np.zeros(n - 1, dtype=bool)
        equal = np.ones(n - 1, dtype=bool)
        for col in key_cols:
            a, b = col.slice(0, n - 1), col.slice(1)
            try:
                lt, eq = pc.less(a, b), pc.equal(a, b)
            except pa.ArrowNotImplementedError:
                return None                  # (left to the sort)
            less |= equal & _as_numpy(lt).astype(bool)
            equal &= _as_numpy(eq).astype(bool)
        less[starts[1:] - 1] = True          # a new file may start anywhere
        if not less.all():
            raise Fallback("a data file whose keys do not strictly increase")
    return np.concatenate([np.arange(starts[f], ends[f]) for f in order])


def latest_per_key(table: pa.Table, key_arity: int, file_starts: np.ndarray) -> np.ndarray:
    """Row numbers of ``table`` (key columns, then ``_SEQUENCE_NUMBER``) of
    each key's row with the highest sequence number, in key order: what
    pypaimon's heap merge with the deduplicate function yields, provided
    each file's keys strictly increase (sorted runs, as written) and no key
    has two rows with one sequence number; otherwise Fallback."""
    n = table.num_rows
    cols = table.columns[:key_arity + 1]
    if any(c.null_count for c in cols):
        raise Fallback("a null primary key or sequence number")
    if key_arity == 1:
        keys = _integer_keys(cols[0])
        if keys is not None:
            return _latest_per_integer_key(keys, _as_numpy(cols[1]), file_starts)
    disjoint = _disjoint_runs(cols[:key_arity], file_starts, n)
    if disjoint is not None:
        return disjoint
    names = [f"k{i}" for i in range(key_arity + 1)]
    perm = pc.sort_indices(pa.table(cols, names=names),
                           sort_keys=[(name, "ascending") for name in names])
    perm_np = _as_numpy(perm)
    # new_key[i]: sorted row i starts a key (differs from row i-1 in some key column)
    new_key = np.ones(n, dtype=bool)
    if n > 1:
        differs = np.zeros(n - 1, dtype=bool)
        for col in cols[:key_arity]:
            s = col.take(perm)
            if isinstance(s, pa.ChunkedArray):
                s = s.combine_chunks()
            differs |= _as_numpy(pc.not_equal(s.slice(1), s.slice(0, n - 1)))
        new_key[1:] = differs
        seq = _as_numpy(cols[key_arity])[perm_np]
        if np.any(~differs & (seq[1:] == seq[:-1])):
            raise Fallback("two versions of a key with the same sequence number")
    # each file's keys must strictly increase, as the heap merge of sorted runs assumes:
    # the key's rank, back in file order, increases within every file
    rank = np.cumsum(new_key)
    in_file_order = np.empty(n, dtype=rank.dtype)
    in_file_order[perm_np] = rank
    increasing = np.diff(in_file_order) > 0
    inner = file_starts[(file_starts > 0) & (file_starts < n)]
    increasing[inner - 1] = True             # a new file may start anywhere
    if not increasing.all():
        raise Fallback("a data file whose keys do not strictly increase")
    last = np.empty(n, dtype=bool)
    last[:-1] = new_key[1:]
    last[-1] = True
    return perm_np[last]


def _contains_nanoseconds(t: pa.DataType) -> bool:
    if pa.types.is_timestamp(t):
        return t.unit == "ns"
    return any(_contains_nanoseconds(t.field(i).type) for i in range(t.num_fields))


def _floor_to_microseconds(arr: Any) -> Any:
    return pc.multiply(floor_divide(arr.cast(pa.int64()), 1000), 1000).cast(arr.type)


def as_pypaimon_rows(values: pa.Table) -> pa.Table:
    """``values`` as pypaimon's merged read returns them: its rows pass
    through Python ``datetime`` s, which hold microseconds, so a nanosecond
    timestamp comes back floored to the microsecond. (Nested nanosecond
    timestamps: Fallback.)"""
    for i, field in enumerate(values.schema):
        if pa.types.is_timestamp(field.type) and field.type.unit == "ns":
            values = values.set_column(i, field, _floor_to_microseconds(values.column(i)))
        elif _contains_nanoseconds(field.type):
            raise Fallback(f"nanosecond timestamps inside {field.name}")
    return values


def merged_values(sr: Any) -> Optional[pa.Table]:
    """The split's merged rows: value columns (``sr.read_fields``' values),
    filtered, limited and projected as pypaimon's ``create_reader`` does;
    None when there are none. Raises Fallback."""
    key_arity = len(sr.trimmed_primary_key)
    value_fields = sr.read_fields[-sr.value_arity:]
    try:
        mask_of = (_predicate.compile_mask(sr.predicate_for_reader, value_fields)
                   if sr.predicate_for_reader is not None else None)
    except _predicate.Unsupported as e:
        raise Fallback(f"the predicate: {e}") from e
    table, starts = _read_files(sr)
    if table is None:
        return None
    if table.num_columns != key_arity + 2 + sr.value_arity:
        raise Fallback(f"{table.num_columns} columns read, {key_arity} + 2 + "
                       f"{sr.value_arity} expected")
    winners = latest_per_key(table, key_arity, starts)
    kinds = _as_numpy(table.column(key_arity + 1))[winners]
    if np.any(kinds == UPDATE_AFTER):
        raise Fallback("a merged row of kind UPDATE_AFTER (pypaimon reports row kinds)")
    winners = winners[kinds == INSERT]
    values = table.select(range(key_arity + 2, table.num_columns))
    if len(winners) != table.num_rows or np.any(winners != np.arange(len(winners))):
        values = values.take(winners)           # (not when runs in order are all the rows)
    values = as_pypaimon_rows(values.rename_columns([f.name for f in value_fields]))
    if mask_of is not None:
        try:
            values = values.filter(mask_of(values))
        except _predicate.Unsupported as e:
            raise Fallback(f"the predicate: {e}") from e
    if sr.limit is not None:
        values = values.slice(0, max(0, sr.limit))
    if sr.outer_extract_name_paths:
        values = values.select([p[0] for p in sr.outer_extract_name_paths])
    return values if values.num_rows else None


# -- the reader ------------------------------------------------------------------------------

_reader_class: Any = None


def _merged_reader_class() -> type:
    """A pypaimon ``RecordBatchReader`` over the merged table (built on first
    use, so that importing rowformat.paimon imports no pypaimon)."""
    global _reader_class
    if _reader_class is not None:
        return _reader_class
    iface = importlib.import_module("pypaimon.read.reader.iface.record_batch_reader")
    record_iterator = importlib.import_module(
        "pypaimon.read.reader.iface.record_iterator").RecordIterator

    class InsertKindIterator(record_iterator):  # type: ignore[misc, valid-type]
        """Rows of kind INSERT, as pypaimon's merged rows are (every survivor
        here is one); a batch reader's rows would otherwise say UPDATE_BEFORE."""

        def __init__(self, rows):
            self._rows = rows

        def next(self):
            row = self._rows.next()
            if row is not None:
                row.set_row_kind_byte(INSERT)
            return row

    class MergedBatchReader(iface.RecordBatchReader):  # type: ignore[misc, valid-type, name-defined]
        """The merged rows of a primary-key split, in batches of at most
        ``OUTPUT_BATCH_ROWS`` rows."""

        def __init__(self, table: Optional[pa.Table]):
            self._batches = iter(table.to_batches(max_chunksize=OUTPUT_BATCH_ROWS)
                                 if table is not None else ())

        def read_arrow_batch(self) -> Optional[pa.RecordBatch]:
            for batch in self._batches:
                if batch.num_rows:
                    return batch
            return None

        def read_batch(self):
            rows = super().read_batch()
            return None if rows is None else InsertKindIterator(rows)

        def close(self) -> None:
            self._batches = iter(())

    MergedBatchReader.__module__ = __name__
    _reader_class = MergedBatchReader
    return _reader_class


def make_create_reader(stock: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``MergeFileSplitRead.create_reader``: the vectorized merge where it is
    pypaimon's result, else ``stock`` (pypaimon's own)."""

    def create_reader(self):
        if unsupported(self) is None:
            try:
                return _merged_reader_class()(merged_values(self))
            except Fallback:
                pass
        return stock(self)

    create_reader._rowformat_stock = stock  # type: ignore[attr-defined]
    create_reader.__qualname__ = "MergeFileSplitRead.create_reader"
    return create_reader
