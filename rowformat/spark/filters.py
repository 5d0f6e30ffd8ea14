"""Spark's pushed filters (``pyspark.sql.datasource``, PySpark 4.1+) for the
``paimon-row`` source: what Paimon's planner prunes by, what rowformat
evaluates on the decoded batches itself, and the ``_ROW_ID`` ranges a
query touches.

Three uses, each held to a different standard:

* :func:`planner_predicate`: a pypaimon ``Predicate`` for the scan (
  partitions, fixed buckets, and files by their manifest statistics). It
  only ever drops files that hold no matching row, so only filters whose
  literal compares with the statistics in Python as Spark compares values
  go in: integers, booleans, strings (Python compares code points, which is
  UTF-8 byte order, Spark's), binaries (unsigned bytes), dates, decimals and
  timestamps of at most microseconds (Spark hands a ``TIMESTAMP_NTZ``
  literal as a naive datetime, a ``TIMESTAMP`` one as an aware datetime in
  UTC: exact microseconds either way). Floating point (Spark orders NaN above
  every value; min/max statistics leave NaN out) and nanosecond timestamps
  (Spark sees their values cut to microseconds, the statistics do not) are
  left to the reading.
* :func:`batch_mask`: the rows of a decoded Arrow batch Spark's filter keeps,
  exactly as Spark decides (SQL's three-valued logic: a filter that is null
  on a row drops it; ``NOT`` of null is null; ``x IN (1, NULL)`` is null
  unless ``x = 1``; ``<=>`` is never null; NaN equals NaN and is above every
  other double), for the filters :func:`evaluates` accepts. Those are not
  handed back to Spark (:func:`split_evaluated`; :func:`filtered` applies
  them to a reader's batches): the rows they drop never cross to the JVM.
* :func:`row_id_ranges`: the ``_ROW_ID`` intervals a conjunction of filters
  allows (``=``, ``<=>``, ``IN``, ranges), for planning files and blocks.
"""
from __future__ import annotations

import datetime as dt
import decimal
import math
from typing import Any, Iterable, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import (
    EqualNullSafe, EqualTo, Filter, GreaterThan, GreaterThanOrEqual, In, IsNotNull, IsNull,
    LessThan, LessThanOrEqual, Not, StringContains, StringEndsWith, StringStartsWith,
)

ROW_ID = "_ROW_ID"

_COMPARISONS = (EqualTo, EqualNullSafe, GreaterThan, GreaterThanOrEqual, LessThan,
                LessThanOrEqual)
_STRING_TESTS = (StringStartsWith, StringEndsWith, StringContains)

# Paimon root types whose statistics pypaimon compares as Spark compares
# values, and the Python type of a literal of each (type(), not isinstance():
# True is an int, never an INT's value)
_PRUNABLE = {"TINYINT": int, "SMALLINT": int, "INT": int, "BIGINT": int, "BOOLEAN": bool,
             "VARCHAR": str, "VARBINARY": bytes, "BINARY": bytes, "DATE": dt.date,
             "DECIMAL": decimal.Decimal, "TIMESTAMP": dt.datetime,
             "TIMESTAMP_LTZ": dt.datetime}


def planner_kind(t) -> str:
    """A Paimon type's key in the ``root_types`` :func:`planner_predicate`
    takes: its root name, but for timestamps finer than microseconds."""
    if t.root in ("TIMESTAMP", "TIMESTAMP_LTZ") and t.precision > 6:
        return f"{t.root}({t.precision})"          # not prunable
    return t.root


def _leaf(f: Filter) -> Any:
    # every filter but Not names its column (``attribute``) and most a
    # ``value``; pyspark's Filter base class declares neither
    return f


def column_of(f: Filter) -> str | None:
    """The top-level column a filter is on (None for a nested field: Paimon
    predicates and statistics are per top-level column)."""
    while isinstance(f, Not):
        f = f.child
    attribute = _leaf(f).attribute
    return attribute[0] if len(attribute) == 1 else None


# ---------------------------------------------------------------- Paimon's planner

def planner_predicate(filters: Iterable[Filter], root_types: dict[str, str], builder):
    """The AND of the filters pypaimon's planner can prune by, as a pypaimon
    ``Predicate`` built with ``builder`` (a ``PredicateBuilder`` of the
    table's fields), or None. ``root_types``: column name -> Paimon root type
    name (``BIGINT``, ``VARCHAR``, ...)."""
    leaves = [p for p in (_planner_leaf(f, root_types, builder) for f in filters)
              if p is not None]
    if not leaves:
        return None
    return leaves[0] if len(leaves) == 1 else builder.and_predicates(leaves)


def _literals_fit(values: Sequence[Any], want: type, aware: bool = False) -> bool:
    """Whether every literal is of type ``want`` (datetimes: aware or naive
    as the column's statistics compare)."""
    return bool(values) and all(type(v) is want and (
        not isinstance(v, dt.datetime) or (v.tzinfo is not None) == aware) for v in values)


def _planner_leaf(f: Filter, root_types: dict[str, str], builder):
    column = column_of(f)
    if column is None or column == ROW_ID or column not in root_types:
        return None
    if isinstance(f, IsNull):
        return builder.is_null(column)
    if isinstance(f, IsNotNull):
        return builder.is_not_null(column)
    want = _PRUNABLE.get(root_types[column])
    if want is None:
        return None
    aware = root_types[column] == "TIMESTAMP_LTZ"
    if isinstance(f, Not):
        inner = f.child
        if isinstance(inner, IsNull):
            return builder.is_not_null(column)
        if isinstance(inner, IsNotNull):
            return builder.is_null(column)
        if isinstance(inner, EqualTo) and _literals_fit([inner.value], want, aware):
            return builder.not_equal(column, inner.value)
        if isinstance(inner, In) and _literals_fit([v for v in inner.value if v is not None],
                                                   want, aware):
            # (a NULL among the values: NOT IN is never true, and pypaimon
            # prunes every file for it, as it should)
            return builder.is_not_in(column, list(inner.value))
        return None
    if isinstance(f, EqualNullSafe) and f.value is None:
        return builder.is_null(column)
    if isinstance(f, _COMPARISONS):
        if not _literals_fit([f.value], want, aware):
            return None
        method = {EqualTo: "equal", EqualNullSafe: "equal", GreaterThan: "greater_than",
                  GreaterThanOrEqual: "greater_or_equal", LessThan: "less_than",
                  LessThanOrEqual: "less_or_equal"}[type(f)]
        return getattr(builder, method)(column, f.value)
    if isinstance(f, In):
        values = [v for v in f.value if v is not None]
        if not _literals_fit(values, want, aware):
            return None
        return builder.is_in(column, values)
    if isinstance(f, StringStartsWith) and want is str and type(f.value) is str:
        return builder.startswith(column, f.value)
    return None


# ---------------------------------------------------------------- on decoded batches

def _literal_fits(t: pa.DataType, v: Any) -> bool:
    """Whether a literal ``v`` against an Arrow column of type ``t`` is
    compared by Arrow exactly as Spark compares it."""
    if pa.types.is_integer(t):
        return type(v) is int and -2 ** 63 <= v < 2 ** 63
    if pa.types.is_floating(t):
        return type(v) is float
    if pa.types.is_boolean(t):
        return type(v) is bool
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return type(v) is str
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return type(v) is bytes
    if pa.types.is_date32(t):
        return type(v) is dt.date
    if pa.types.is_decimal(t):
        return type(v) is decimal.Decimal and v.is_finite()
    if pa.types.is_timestamp(t):
        # Spark sees a nanosecond value cut to microseconds: left to it
        return (t.unit != "ns" and type(v) is dt.datetime
                and (v.tzinfo is not None) == (t.tz is not None))
    return False


def evaluates(f: Filter, schema: pa.Schema) -> bool:
    """Whether :func:`batch_mask` evaluates ``f`` exactly as Spark does on
    batches of ``schema`` (so Spark need not apply it again)."""
    column = column_of(f)
    if column is None or column not in schema.names:
        return False
    t = schema.field(column).type
    if isinstance(f, Not):
        return evaluates(f.child, schema)
    if isinstance(f, (IsNull, IsNotNull)):
        return True
    if isinstance(f, EqualNullSafe) and f.value is None:
        return True
    if isinstance(f, _COMPARISONS):
        return _literal_fits(t, f.value)
    if isinstance(f, In):
        values = [v for v in f.value if v is not None]
        return bool(values) and all(_literal_fits(t, v) for v in values)
    if isinstance(f, _STRING_TESTS):
        return (pa.types.is_string(t) or pa.types.is_large_string(t)) and type(f.value) is str
    return False


def split_evaluated(filters: Iterable[Filter], schema: pa.Schema
                    ) -> tuple[list[Filter], list[Filter]]:
    """(the filters :func:`evaluates` on batches of ``schema``, the others:
    the same objects, which Spark wants back by reference to apply itself)."""
    filters = list(filters)
    evaluated = [f for f in filters if evaluates(f, schema)]
    done = {id(f) for f in evaluated}
    return evaluated, [f for f in filters if id(f) not in done]


def filtered(batches: Iterable[pa.RecordBatch], evaluated: Sequence[Filter]
             ) -> Iterator[pa.RecordBatch]:
    """``batches`` with only the rows every filter of ``evaluated`` keeps
    (:func:`batch_mask`), empty ones left out."""
    for batch in batches:
        mask = batch_mask(evaluated, batch)
        if mask is not None:
            batch = batch.filter(mask)
        if batch.num_rows:
            yield batch


def batch_mask(filters: Sequence[Filter], batch: pa.RecordBatch) -> pa.Array | None:
    """The rows of ``batch`` that every filter keeps (boolean, no nulls), or
    None when there are no filters. Each filter must be one that
    :func:`evaluates` accepts for the batch's schema."""
    out = None
    for f in filters:
        m = _value(f, batch)
        out = m if out is None else pc.and_kleene(out, m)
    return None if out is None else pc.fill_null(out, False)


def _value(f: Filter, batch: pa.RecordBatch) -> pa.Array:
    """Spark's three-valued result of ``f`` per row (null: unknown)."""
    if isinstance(f, Not):
        return pc.invert(_value(f.child, batch))
    col = batch.column(_leaf(f).attribute[0])
    if isinstance(f, IsNull):
        return col.is_null()
    if isinstance(f, IsNotNull):
        return col.is_valid()
    if isinstance(f, EqualNullSafe):
        if f.value is None:
            return col.is_null()
        return pc.fill_null(_compare(EqualTo, col, f.value), False)
    if isinstance(f, _COMPARISONS):
        return _compare(type(f), col, f.value)
    if isinstance(f, In):
        return _is_in(col, f.value)
    if isinstance(f, StringStartsWith):
        return pc.starts_with(col, pattern=f.value)
    if isinstance(f, StringEndsWith):
        return pc.ends_with(col, pattern=f.value)
    if isinstance(f, StringContains):
        return pc.match_substring(col, pattern=f.value)
    raise TypeError(f"not an evaluated filter: {f!r}")


_ARROW_COMPARE = {EqualTo: pc.equal, GreaterThan: pc.greater, GreaterThanOrEqual: pc.greater_equal,
                  LessThan: pc.less, LessThanOrEqual: pc.less_equal}


def _scalar(col: pa.Array, v: Any) -> pa.Scalar:
    t = col.type
    if pa.types.is_timestamp(t):
        # the literal's microseconds kept (Arrow compares across units)
        return pa.scalar(v, pa.timestamp("us", t.tz))
    if pa.types.is_decimal(t):
        return pa.scalar(v)               # Arrow compares decimals of any scale exactly
    if pa.types.is_integer(t):
        # a literal out of the column's range compares as a 64-bit integer
        return pa.scalar(v, pa.int64())
    return pa.scalar(v, t)


def _compare(kind: type[Filter], col: pa.Array, v: Any) -> pa.Array:
    if pa.types.is_floating(col.type):
        return _compare_double(kind, col, float(v))
    if pa.types.is_integer(col.type) and col.type != pa.int64():
        col = col.cast(pa.int64())
    return _ARROW_COMPARE[kind](col, _scalar(col, v))


def _compare_double(kind: type[Filter], col: pa.Array, v: float) -> pa.Array:
    """Spark's order of doubles: NaN equals NaN and is above every other
    value (-0.0 equals 0.0, as in Arrow)."""
    nan = pc.is_nan(col)
    if math.isnan(v):
        if kind is EqualTo or kind is GreaterThanOrEqual:
            return nan
        if kind is LessThan:
            return pc.invert(nan)
        # > NaN: no value; <= NaN: every value (null stays null)
        return pc.if_else(col.is_valid(), kind is LessThanOrEqual, pa.scalar(None, pa.bool_()))
    below = _ARROW_COMPARE[kind](col, pa.scalar(v, col.type))  # Arrow: NaN compares false
    if kind is GreaterThan or kind is GreaterThanOrEqual:
        return pc.or_kleene(below, nan)
    return below


def _is_in(col: pa.Array, values: Sequence[Any]) -> pa.Array:
    present = [v for v in values if v is not None]
    t = col.type
    if pa.types.is_integer(t) and t != pa.int64():
        col, t = col.cast(pa.int64()), pa.int64()
    if pa.types.is_timestamp(t) and t.unit != "us":      # (s, ms: exact in us)
        col, t = col.cast(pa.timestamp("us", t.tz)), pa.timestamp("us", t.tz)
    if pa.types.is_decimal(t):
        value_set = pa.array(present)
        col = col.cast(pa.decimal128(38, max(t.scale, value_set.type.scale))) \
            if value_set.type.scale != t.scale else col
        value_set = value_set.cast(col.type)
    else:
        value_set = pa.array(present, t)   # (Arrow's is_in matches NaN with NaN, as Spark)
    found = pc.is_in(col, value_set=value_set)
    # is_in is false for a null row; SQL says null. With a NULL in the list,
    # a row matching no value is null too.
    found = pc.if_else(col.is_valid(), found, pa.scalar(None, pa.bool_()))
    if len(present) != len(values):
        found = pc.if_else(found, True, pa.scalar(None, pa.bool_()))
    return found


# ---------------------------------------------------------------- _ROW_ID

def row_id_filters(filters: Iterable[Filter], column: str = ROW_ID) -> list[Filter]:
    """The filters on ``column`` (``_ROW_ID``, or a bare file's ``_row``)
    that narrow it to ranges (no ``NOT``)."""
    return [f for f in filters if not isinstance(f, Not) and column_of(f) == column
            and isinstance(f, (*_COMPARISONS, In))]


def row_id_ranges(filters: Iterable[Filter], column: str = ROW_ID) -> np.ndarray | None:
    """The values of ``column`` (``_ROW_ID``, or a bare file's row number
    ``_row``: both start at 0) the conjunction of ``filters`` allows, as
    sorted, disjoint half-open intervals (an (n, 2) int64 array), or None
    when no filter bounds it. Only filters of :func:`row_id_filters` count;
    a non-integer literal bounds nothing."""
    lo, hi = 0, 2 ** 63 - 1             # _ROW_ID >= 0
    points: np.ndarray | None = None
    bounded = False
    for f in map(_leaf, row_id_filters(filters, column)):
        if isinstance(f, In):
            values = [v for v in f.value if type(v) is int]
            if len(values) != len([v for v in f.value if v is not None]):
                continue
            got = np.unique(np.asarray(values, np.int64))
        elif type(f.value) is not int:
            continue
        elif isinstance(f, (EqualTo, EqualNullSafe)):
            got = np.asarray([f.value], np.int64)
        else:
            v = f.value
            if isinstance(f, GreaterThan):
                lo = max(lo, v + 1)
            elif isinstance(f, GreaterThanOrEqual):
                lo = max(lo, v)
            elif isinstance(f, LessThan):
                hi = min(hi, v)
            else:
                hi = min(hi, v + 1)
            bounded = True
            continue
        points = got if points is None else np.intersect1d(points, got)
        bounded = True
    if not bounded:
        return None
    if points is not None:
        points = points[(points >= lo) & (points < hi)]
        if not len(points):
            return np.empty((0, 2), np.int64)
        # runs of consecutive ids as intervals
        breaks = np.flatnonzero(np.diff(points) != 1) + 1
        starts = points[np.r_[0, breaks]]
        stops = points[np.r_[breaks - 1, len(points) - 1]] + 1
        return np.stack([starts, stops], axis=1)
    if lo >= hi:
        return np.empty((0, 2), np.int64)
    return np.asarray([[lo, hi]], np.int64)
