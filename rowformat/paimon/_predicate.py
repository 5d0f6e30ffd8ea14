"""pypaimon ``Predicate`` s evaluated over Arrow columns with the semantics of
``Predicate.test`` (pypaimon 2.1.0, ``pypaimon/common/predicate.py``): the
row-at-a-time filter pypaimon applies to merged primary-key rows.

``test`` is two-valued: a leaf on a null value is False (``isNull`` aside),
and ``and`` / ``or`` combine booleans, so each leaf's mask has its nulls
filled with False before it is combined. Values are compared as the Python
objects pypaimon's rows hold; only the column types and literal types for
which Arrow's comparison provably agrees with Python's are evaluated here
(integers, floats without NaN literals, booleans, strings by code point (UTF-8
bytes), bytes, dates, naive timestamps down to microseconds); anything else
raises :class:`Unsupported` and the caller falls back to pypaimon.
"""
from __future__ import annotations

import datetime as dt
import math
from typing import Any, Callable, List, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


class Unsupported(Exception):
    """A predicate this module does not evaluate exactly as pypaimon does."""


_COMPARE = {
    "equal": pc.equal, "notEqual": pc.not_equal,
    "lessThan": pc.less, "lessOrEqual": pc.less_equal,
    "greaterThan": pc.greater, "greaterOrEqual": pc.greater_equal,
}
_STRING_TESTS = {"startsWith": pc.starts_with, "endsWith": pc.ends_with,
                 "contains": pc.match_substring}
_MAX_EXACT_INT_AS_FLOAT = 2 ** 53


def _literal_type(column_type: pa.DataType, lit: Any) -> pa.DataType:
    """The Arrow type ``lit`` is compared as against a column of
    ``column_type``, when that comparison is exact; else Unsupported."""
    t = column_type
    if pa.types.is_integer(t):
        if type(lit) is int and -2 ** 63 <= lit < 2 ** 63:
            return pa.int64()
    elif pa.types.is_floating(t):
        if type(lit) is float and not math.isnan(lit):
            return pa.float64()
        if type(lit) is int and abs(lit) <= _MAX_EXACT_INT_AS_FLOAT:
            return pa.float64()
    elif pa.types.is_boolean(t):
        if type(lit) is bool:
            return pa.bool_()
    elif pa.types.is_string(t) or pa.types.is_large_string(t):
        if type(lit) is str:
            return pa.string()
    elif pa.types.is_binary(t) or pa.types.is_fixed_size_binary(t):
        if type(lit) is bytes:
            return pa.binary()
    elif pa.types.is_date32(t):
        if type(lit) is dt.date:
            return pa.date32()
    elif pa.types.is_timestamp(t) and t.tz is None and t.unit in ("s", "ms", "us"):
        if type(lit) is dt.datetime and lit.tzinfo is None:
            return pa.timestamp("us")
    raise Unsupported(f"{lit!r} against {column_type}")


def _common_type(column_type: pa.DataType, lits: Sequence[Any]) -> pa.DataType:
    types = {_literal_type(column_type, lit) for lit in lits}
    if len(types) != 1:
        raise Unsupported(f"literals {lits!r} of mixed types")
    return types.pop()


def _false_for_null(mask: Any) -> pa.Array:
    return pc.fill_null(mask, False)


def _leaf(method: str, col: pa.Array, lits: List[Any]) -> pa.Array:
    n = len(col)
    if method == "isNull":
        return col.is_null()
    if method == "isNotNull":
        return col.is_valid()
    if method in _COMPARE or method in ("between", "notBetween"):
        arity = 1 if method in _COMPARE else 2
        if not lits or len(lits) < arity:
            return _all(n, False)
        bounds = lits[:arity]
        if any(lit is None for lit in bounds):
            raise Unsupported("a null literal (pypaimon raises comparing to None)")
        lt = _common_type(col.type, bounds)
        c = col.cast(lt)
        s = [pa.scalar(lit, lt) for lit in bounds]
        if method in _COMPARE:
            return _false_for_null(_COMPARE[method](c, s[0]))
        if method == "between":
            return _false_for_null(pc.and_(pc.greater_equal(c, s[0]), pc.less_equal(c, s[1])))
        return _false_for_null(pc.or_(pc.less(c, s[0]), pc.greater(c, s[1])))
    if method in ("in", "notIn"):
        values = [lit for lit in lits if lit is not None]
        if method == "notIn" and len(values) != len(lits):
            # pypaimon 2.1.0: never true (SQL); 2.0.0 ignores the null literals
            raise Unsupported("NOT IN with a null literal")
        if not values:           # IN () is never true, NOT IN () for every value
            return col.is_valid() if method == "notIn" else _all(n, False)
        lt = _common_type(col.type, values)
        found = pc.is_in(col.cast(lt), value_set=pa.array(values, lt))
        if method == "notIn":
            found = pc.invert(found)
        return pc.and_(found, col.is_valid())
    if method in _STRING_TESTS:
        if not lits:
            return _all(n, False)
        if not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
            raise Unsupported(f"{method} on {col.type}")
        if type(lits[0]) is not str:
            raise Unsupported(f"{method} with {lits[0]!r}")
        return _false_for_null(_STRING_TESTS[method](col, pattern=lits[0]))
    raise Unsupported(f"predicate method {method!r}")


def _all(n: int, value: bool) -> pa.Array:
    return pa.array(np.full(n, value, dtype=bool))


def compile_mask(predicate: Any, fields: Sequence[Any]) -> Callable[[pa.Table], pa.Array]:
    """A function from a table whose columns are ``fields`` (pypaimon
    DataFields, the positions the predicate's indices refer to) to the
    boolean mask of the rows ``predicate.test`` accepts. Raises Unsupported
    (at once, for the predicate's shape; when called, for its literals)."""
    method = predicate.method
    if method in ("and", "or"):
        parts = [compile_mask(p, fields) for p in predicate.literals]
        combine = pc.and_ if method == "and" else pc.or_

        def both(table: pa.Table) -> pa.Array:
            masks = [part(table) for part in parts]
            out = masks[0]
            for m in masks[1:]:
                out = combine(out, m)
            return out
        return both
    index = predicate.index
    if index is None or not 0 <= index < len(fields):
        raise Unsupported(f"predicate index {index}")
    if method not in _COMPARE and method not in _STRING_TESTS and method not in (
            "isNull", "isNotNull", "between", "notBetween", "in", "notIn"):
        raise Unsupported(f"predicate method {method!r}")
    lits = list(predicate.literals or [])

    def leaf(table: pa.Table) -> pa.Array:
        col = table.column(index).combine_chunks()
        return _leaf(method, col, lits)
    return leaf
