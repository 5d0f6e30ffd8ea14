"""The merged rows of a primary-key compaction unit, per merge engine, as
Paimon Java's compaction rewriters compute them (``_compact`` writes them).

Java sort-merges the unit's rows by key, then by ``sequence.field`` (if
set), then by sequence number, and hands each key's versions, oldest first,
to the table's merge function:

* ``deduplicate`` (``MergeTreeCompactRewriter`` through
  ``ReducerMergeFunctionWrapper``): the last version, with its own sequence
  number and kind. Without ``sequence.field`` that is
  ``_compact_lsm.latest_per_key``, unchanged; with it, the same after a sort
  that puts the sequence fields before the sequence number (nulls first,
  ``sequence.field.sort-order``, floating point as Java's ``Float.compare``).
* ``partial-update`` (the same wrapper): a key with one version keeps it as
  it is (its kind too); with more, each column's last non-null value, the
  last version's sequence number, kind INSERT. A retraction among several
  versions is Java's error ("Partial update can not accept delete records").
* ``aggregation`` (the wrapper always merges it): each column folded by its
  aggregate function (pypaimon's ``FieldAggregator`` classes, which follow
  Java's; the functions that pick a row's value, such as
  ``last_non_null_value``, as row numbers instead), the last version's
  sequence number, kind INSERT. Retractions are not supported yet (they need
  the functions' retract, which pypaimon lacks).
* ``first-row`` (``LookupMergeTreeCompactRewriter`` with
  ``FirstRowMergeFunctionWrapper``, for a unit with a level-0 file, as every
  unit of its forced level-0 picks has): the first version that is not a
  retraction, as it is; retractions skipped under ``ignore-delete`` and
  Java's error without it; and a key whose versions here all come from
  level 0 is left out when a deeper level (beyond the output level) holds
  it already, whose older row wins anyway. A unit without level-0 files
  takes the plain wrapper: a single version as it is, else as above.

Then retractions go when the output
level is the highest non-empty one (``dropDelete``, ``_compact_lsm``). Every
fold is vectorized over the sorted rows except the aggregate functions that
compute a value (sum, max, product, listagg, ...): those run in Python, per
key, over that column's values only.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import DatasetError, TableOptionError
from . import _compact_lsm
from ._table_options import bool_option

RETRACTIONS = _compact_lsm.RETRACTIONS
INSERT = 0
_ENGINES = ("deduplicate", "partial-update", "aggregation", "first-row")
# aggregate functions whose result is one version's value: (pick, skip nulls)
_PICKS = {"primary_key": ("last", False), "last_value": ("last", False),
          "last_non_null_value": ("last", True), "first_value": ("first", False),
          "first_non_null_value": ("first", True)}
_IGNORE_DELETE_KEYS = ("ignore-delete", "first-row.ignore-delete", "deduplicate.ignore-delete",
                       "partial-update.ignore-delete")     # Java's key, then its fallback keys


def engine(options: dict) -> str:
    return str(options.get("merge-engine", "deduplicate")).strip().lower()


def ignore_delete(options: dict) -> bool:
    """``ignore-delete`` (Java's key first, then its fallback keys)."""
    for key in _IGNORE_DELETE_KEYS:
        if key in options:
            return bool_option(options, key, False)
    return False


def refuse_unsupported(table, options: dict, where: str) -> None:
    """A TableOptionError naming the merge-engine option compaction does not
    support yet (or that Java refuses)."""
    name = engine(options)
    if name not in _ENGINES:
        raise TableOptionError(f"{where}: compaction of primary-key tables with merge-engine = "
                               f"{name} is not supported yet (supported: {', '.join(_ENGINES)})")
    ignore_delete(options)
    fields = {f.name: f for f in table.fields}
    sequence = _sequence_fields(table)
    if sequence and name == "first-row":
        raise TableOptionError(f"{where}: sequence.field cannot be used with merge-engine = "
                               f"first-row (Java refuses the table)")
    from pypaimon.read.reader.sort_merge_reader import is_comparable_seq_field
    for f in sequence:
        if f not in fields:
            raise TableOptionError(f"{where}: sequence.field {f!r} is not a column of the table")
        if not is_comparable_seq_field(fields[f]):
            raise TableOptionError(f"{where}: compaction with sequence.field {f!r} of type "
                                   f"{fields[f].type} is not supported yet")
    if name == "first-row":
        mode = str(options.get("lookup-compact", "radical")).strip().lower()
        if mode != "radical":
            raise TableOptionError(f"{where}: compaction of first-row tables with lookup-compact "
                                   f"= {mode} is not supported yet (radical is)")
    if name in ("partial-update", "aggregation"):
        from pypaimon.read import merge_engine_support as support
        flagged = (support.partial_update_unsupported_options(table) if name == "partial-update"
                   else support.aggregation_unsupported_options(table))
        if flagged:
            raise TableOptionError(f"{where}: compaction of primary-key tables with merge-engine "
                                   f"= {name} and {sorted(flagged)[0]} is not supported yet")
    if name == "aggregation":
        _aggregators(table, where)          # (a function that does not fit its column)


def _sequence_fields(table) -> list[str]:
    return list(table.options.sequence_field())


def _aggregators(table, where: str) -> list:
    """(name, aggregate function name, pypaimon FieldAggregator) per column."""
    from pypaimon.read.reader.aggregate import create_field_aggregator
    from pypaimon.read.reader.aggregation_merge_function import resolve_agg_func_name
    options = table.options.options.to_map()
    keys, sequence = set(table.primary_keys), set(_sequence_fields(table))
    out = []
    for f in table.fields:
        func = resolve_agg_func_name(f.name, keys, options, sequence)
        try:
            out.append((f.name, func, create_field_aggregator(f.type, f.name, func, table.options)))
        except (ValueError, NotImplementedError) as e:
            raise TableOptionError(f"{where}: fields.{f.name}.aggregate-function = {func}: "
                                   f"{e}") from None
    return out


# -- sorting into keys ---------------------------------------------------------------

def _float_order(col) -> pa.Array:
    """Floating-point values as int64 in Java's ``Float.compare`` order
    (-0.0 before 0.0, every NaN equal and above +inf)."""
    values = np.asarray(pc.fill_null(col.cast(pa.float64()), 0.0).to_numpy(zero_copy_only=False),
                        dtype=np.float64).copy()
    values[np.isnan(values)] = np.nan               # one NaN
    bits = values.view(np.int64)
    return pa.array(bits ^ ((bits >> 63) & np.int64(0x7FFFFFFFFFFFFFFF)))


def sort_keys(data: pa.Table, keys: list[str], sequence: list[str], ascending: bool
              ) -> tuple[np.ndarray, np.ndarray]:
    """(the row numbers in merge order, the sorted position where each key
    starts): by key, then each sequence field (nulls first in either order,
    as Java's and pypaimon's comparators), then sequence number; ties in row
    order (the sort is stable)."""
    cols, order = [], []
    for k in keys:
        cols.append(data.column(k))
        order.append("ascending")
    for f in sequence:
        col = data.column(f)
        cols.append(pc.is_valid(col).cast(pa.int8()))      # nulls first
        order.append("ascending")
        if pa.types.is_floating(col.type):
            col = _float_order(col)
        cols.append(col)
        order.append("ascending" if ascending else "descending")
    cols.append(data.column("_SEQUENCE_NUMBER"))
    order.append("ascending")
    names = [f"c{i}" for i in range(len(cols))]
    perm = pc.sort_indices(pa.table(cols, names=names),
                           sort_keys=list(zip(names, order))).to_numpy()
    n = data.num_rows
    new_key = np.ones(n, dtype=bool)
    if n > 1:
        differs = np.zeros(n - 1, dtype=bool)
        for k in keys:
            s = data.column(k).take(perm).combine_chunks()
            differs |= np.asarray(pc.fill_null(pc.not_equal(s.slice(1), s.slice(0, n - 1)), True)
                                  .to_numpy(zero_copy_only=False), dtype=bool)
        new_key[1:] = differs
    return perm, np.flatnonzero(new_key)


# -- the engines --------------------------------------------------------------------------

def _kinds(s: pa.Table) -> np.ndarray:
    return s.column("_VALUE_KIND").to_numpy().astype(np.int8, copy=False)


def _pick(valid: np.ndarray | None, starts: np.ndarray, ends: np.ndarray, last: bool
          ) -> np.ndarray:
    """Per key, the sorted position of its last (or first) version, of those
    ``valid`` (all when None); -1 where there is none."""
    if valid is None:
        return (ends - 1) if last else starts.copy()
    n = len(valid)
    pos = np.arange(n)
    if last:
        return np.maximum.reduceat(np.where(valid, pos, -1), starts)
    got = np.minimum.reduceat(np.where(valid, pos, n), starts)
    return np.where(got < n, got, -1)


def _take(col, positions: np.ndarray):
    """``col`` at ``positions``, null where a position is -1."""
    return col.take(pa.array(positions, mask=positions < 0))


def _retraction_error(where: str, what: str) -> DatasetError:
    return DatasetError(f"{where}: {what}; nothing was compacted")


def _rows(s: pa.Table, keys: list[str], starts: np.ndarray, seq: np.ndarray,
          kinds: np.ndarray, values: dict) -> pa.Table:
    """The merged rows: each key's columns, sequence number, kind, values."""
    cols = {k: s.column(k).take(pa.array(starts)) for k in keys}
    cols["_SEQUENCE_NUMBER"] = pa.array(seq, pa.int64())
    cols["_VALUE_KIND"] = pa.array(kinds, pa.int8())
    cols.update(values)
    return pa.table(cols)


def _value_names(data: pa.Table, keys: list[str]) -> list[str]:
    skip = set(keys) | {"_SEQUENCE_NUMBER", "_VALUE_KIND"}
    return [n for n in data.column_names if n not in skip]


def _partial_update(s, keys, starts, ends, where) -> pa.Table:
    kinds, seq = _kinds(s), s.column("_SEQUENCE_NUMBER").to_numpy()
    sizes = ends - starts
    several = np.repeat(sizes > 1, sizes)
    if np.any(several & np.isin(kinds, RETRACTIONS)):
        raise _retraction_error(where, "a key with several versions holds a DELETE or "
                                       "UPDATE_BEFORE, which merge-engine = partial-update "
                                       "without ignore-delete or sequence groups refuses (Java's "
                                       "'Partial update can not accept delete records')")
    values = {}
    for name in _value_names(s, keys):
        col = s.column(name)
        valid = np.asarray(pc.is_valid(col).to_numpy(zero_copy_only=False), dtype=bool)
        values[name] = _take(col, _pick(valid, starts, ends, True))
    # one version: as it is (ReducerMergeFunctionWrapper); more: INSERT
    return _rows(s, keys, starts, seq[ends - 1],
                 np.where(sizes == 1, kinds[starts], INSERT), values)


def _fold(agg, col, starts: np.ndarray, ends: np.ndarray, name: str, where: str):
    """A value-computing aggregate function run per key in Python over the
    column's values (pypaimon's FieldAggregator). FLOAT columns are summed
    and multiplied in single precision, as Java adds floats."""
    values = col.to_pylist()
    if not pa.array(values, col.type).equals(col.combine_chunks()
                                             if isinstance(col, pa.ChunkedArray) else col):
        raise TableOptionError(f"{where}: compaction of aggregation column {name} ({col.type}) "
                               f"is not supported yet (its values do not pass through Python "
                               f"unchanged)")
    single = pa.types.is_float32(col.type)
    out = []
    for a, b in zip(starts.tolist(), ends.tolist()):
        agg.reset()
        acc = None
        for v in values[a:b]:
            acc = agg.agg(acc, np.float32(v) if single and v is not None else v)
        out.append(float(acc) if single and acc is not None else acc)
    return pa.array(out, col.type)


def _aggregation(table, s, keys, starts, ends, where) -> pa.Table:
    kinds, seq = _kinds(s), s.column("_SEQUENCE_NUMBER").to_numpy()
    if np.any(np.isin(kinds, RETRACTIONS)):
        raise _retraction_error(where, "compaction of merge-engine = aggregation tables holding "
                                       "DELETE or UPDATE_BEFORE rows is not supported yet")
    values = {}
    for name, func, agg in _aggregators(table, where):
        col = s.column(name)
        if func in _PICKS:
            which, skip_nulls = _PICKS[func]
            valid = (np.asarray(pc.is_valid(col).to_numpy(zero_copy_only=False), dtype=bool)
                     if skip_nulls else None)
            values[name] = _take(col, _pick(valid, starts, ends, which == "last"))
        else:
            values[name] = _fold(agg, col, starts, ends, name, where)
    return _rows(s, keys, starts, seq[ends - 1], np.full(len(starts), INSERT, np.int8), values)


def _first_row(s, keys, starts, ends, levels: np.ndarray, options: dict, where: str,
               deeper_keys: Callable[[], pa.Table]) -> pa.Table:
    kinds = _kinds(s)
    retract = np.isin(kinds, RETRACTIONS)
    sizes = ends - starts
    lookup = bool(np.any(levels == 0))          # Java's lookup rewrite: a level-0 input
    check = retract if lookup else retract & np.repeat(sizes > 1, sizes)
    if np.any(check) and not ignore_delete(options):
        raise _retraction_error(where, "merge-engine = first-row without ignore-delete cannot "
                                       "accept DELETE or UPDATE_BEFORE rows (Java's error)")
    first = _pick(~retract, starts, ends, False)
    if not lookup:
        first = np.where(sizes == 1, starts, first)      # one version: as it is
    keep = first >= 0
    if lookup:
        # a key only level 0 brings, that a deeper level already holds: left out
        high = np.maximum.reduceat(levels, starts) > 0
        deeper = deeper_keys()
        if deeper.num_rows:
            groups = pa.table({k: s.column(k).take(pa.array(starts)) for k in keys})
            groups = groups.append_column("_group", pa.array(np.arange(len(starts))))
            found = groups.join(deeper.group_by(keys).aggregate([]), keys,
                                join_type="left semi").column("_group").to_numpy()
            held = np.zeros(len(starts), dtype=bool)
            held[found] = True
            keep &= high | ~held
    picked = first[keep]
    out = s.take(pa.array(picked))
    return out.select(keys + ["_SEQUENCE_NUMBER", "_VALUE_KIND"] + _value_names(s, keys))


def merge(table, data: pa.Table, keys: list[str], part_rows: list[int], levels: list[int],
          drop_delete: bool, deeper_keys: Callable[[], pa.Table]) -> pa.Table:
    """Per key (the ``keys`` columns, ``_KEY_*``) of ``data`` (the unit's
    files' rows, one file after another: ``part_rows`` rows each, from
    files at ``levels``), the merged row, in key order, with its
    ``_SEQUENCE_NUMBER`` and ``_VALUE_KIND``; ``deeper_keys()`` are the keys
    the bucket's levels beyond the output level hold (first-row only)."""
    options = dict(getattr(table.table_schema, "options", None) or {})
    name = engine(options)
    sequence = _sequence_fields(table)
    if name == "deduplicate" and not sequence:
        return _compact_lsm.latest_per_key(data, keys, drop_delete, part_rows)
    if data.num_rows == 0:
        return data
    where = str(table.table_path)
    perm, starts = sort_keys(data, keys, sequence,
                             table.options.sequence_field_sort_order_is_ascending())
    s = data.take(pa.array(perm))
    ends = np.append(starts[1:], data.num_rows)
    if name == "first-row":
        row_levels = np.repeat(np.asarray(levels, np.int64), part_rows)[perm]
        out = _first_row(s, keys, starts, ends, row_levels, options, where, deeper_keys)
    elif name == "deduplicate":
        out = s.take(pa.array(ends - 1))
    elif name == "partial-update":
        out = _partial_update(s, keys, starts, ends, where)
    else:
        out = _aggregation(table, s, keys, starts, ends, where)
    if drop_delete:         # (first-row's lookup path has none left to drop)
        out = out.filter(pa.array(~np.isin(_kinds(out), RETRACTIONS)))
    return out
