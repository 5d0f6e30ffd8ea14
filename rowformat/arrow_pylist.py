"""Arrow arrays as Python lists, column-wise: what ``Array.to_pylist()`` gives,
faster.

pyarrow's ``to_pylist()`` makes a Scalar of every value and asks it for its
Python value (``as_py``), about 0.25 microseconds a value; a 256-row batch
of ten columns takes 2 ms that way. Here each column is converted at once:
fixed-width numbers, booleans, strings, binaries, decimals, dates, times and
naive timestamps of up to microseconds through NumPy (``to_numpy`` and
``tolist``, in C), lists, maps and structs from their children's lists (one
slice, zip or dict per value, no Scalar), and the nulls put back by their
positions. The values are ``to_pylist()``'s exactly, of the same Python types
(int, float, bool, str, bytes, Decimal, date, time, datetime, list, tuple
pairs, dict, None); a type without a path here (nanosecond and time-zoned
timestamps, durations, dictionaries, half floats, ...) and a date or
timestamp outside Python's years 1-9999 are left to ``to_pylist()``.

:func:`rows_as_dicts` is ``Table.to_pylist()``: the rows as dicts, keys in
column order, built in C (``_pyrows``).
"""
from __future__ import annotations

import datetime as _dt
from typing import Any, Sequence

import numpy as np
import pyarrow as pa

from . import _pyrows

__all__ = ["to_pylist", "rows_as_dicts"]

# NumPy's datetime64.tolist() gives a datetime (date) only within Python's
# range; beyond it an int, where pyarrow raises: those arrays go to to_pylist()
_EPOCH = _dt.datetime(1970, 1, 1)
_UNITS_PER_S = {"s": 1, "ms": 10**3, "us": 10**6}
_LOW_S = (_dt.datetime.min - _EPOCH) // _dt.timedelta(seconds=1)
_HIGH_S = (_dt.datetime.max - _EPOCH) // _dt.timedelta(seconds=1)     # 9999-12-31T23:59:59
_LOW_DAY = (_dt.date.min - _EPOCH.date()).days
_HIGH_DAY = (_dt.date.max - _EPOCH.date()).days
_NAT = np.iinfo(np.int64).min


def _numpy_kind(t: pa.DataType) -> bool:
    """Whether ``to_numpy(zero_copy_only=False).tolist()`` gives to_pylist()'s
    values for an array of ``t`` without nulls; with nulls, the
    object-typed ones (all but the numbers: see _numeric) give None there
    too."""
    return (pa.types.is_integer(t) or t in (pa.float32(), pa.float64(), pa.bool_())
            or pa.types.is_string(t) or pa.types.is_large_string(t)
            or pa.types.is_binary(t) or pa.types.is_large_binary(t)
            or pa.types.is_fixed_size_binary(t)
            or pa.types.is_decimal128(t) or pa.types.is_decimal256(t)
            or pa.types.is_time32(t) or (pa.types.is_time64(t) and t.unit == "us"))


def _null_positions(arr: pa.Array) -> list:
    return np.flatnonzero(arr.is_null().to_numpy(zero_copy_only=False)).tolist()


def _put_nulls(arr: pa.Array, values: list) -> list:
    if arr.null_count:
        for k in _null_positions(arr):
            values[k] = None
    return values


def _numeric(arr: pa.Array) -> list:
    """Integers and floats: NumPy makes a null a float NaN, so the nulls are
    filled with 0 first and put back as None after."""
    if not arr.null_count:
        return arr.to_numpy(zero_copy_only=False).tolist()
    return _put_nulls(arr, arr.fill_null(0).to_numpy(zero_copy_only=False).tolist())


def _in_range(ints: np.ndarray, low: int, high: int) -> bool:
    """Every value (but NaT, a null) within [low, high]."""
    if not len(ints):
        return True
    present = ints[ints != _NAT]
    return not len(present) or (int(present.min()) >= low and int(present.max()) <= high)


def _datetimes(arr: pa.Array) -> list | None:
    """A naive timestamp of s, ms or us, or a date32 (NumPy's datetime64:
    tolist() gives datetime or date, and None for NaT); None when a value is
    outside Python's range."""
    t = arr.type
    values = arr.to_numpy(zero_copy_only=False)
    ints = values.view(np.int64) if values.dtype.itemsize == 8 else values.astype(np.int64)
    if pa.types.is_date32(t):
        ok = _in_range(ints, _LOW_DAY, _HIGH_DAY)
    else:
        per_s = _UNITS_PER_S[t.unit]
        ok = _in_range(ints, _LOW_S * per_s, _HIGH_S * per_s + per_s - 1)
    return values.tolist() if ok else None       # (a null is NaT: None)


def _lists(arr: Any) -> list:
    """A list (or large list) array: its values' list sliced by its offsets
    (which count from the values' start, the array's own offset included)."""
    offsets = arr.offsets.to_numpy(zero_copy_only=False).tolist()
    values = to_pylist(arr.values)
    out = [values[a:b] for a, b in zip(offsets, offsets[1:])]
    return _put_nulls(arr, out)


def _fixed_lists(arr: Any) -> list:
    size = arr.type.list_size
    start = arr.offset * size
    values = to_pylist(arr.values.slice(start, len(arr) * size))
    out = [values[k:k + size] for k in range(0, len(arr) * size, size)]
    return _put_nulls(arr, out)


def _maps(arr: Any) -> list:
    """A map array: each map a list of (key, item) tuples, as to_pylist()."""
    offsets = arr.offsets.to_numpy(zero_copy_only=False).tolist()
    pairs = list(zip(to_pylist(arr.keys), to_pylist(arr.items)))
    out = [pairs[a:b] for a, b in zip(offsets, offsets[1:])]
    return _put_nulls(arr, out)


def _structs(arr: Any) -> list:
    """A struct array: dicts of its fields' values (flatten(): the children
    sliced as the array is), None where the struct is null."""
    names = [f.name for f in arr.type]
    if len(set(names)) != len(names):       # duplicate names: as pyarrow does
        return arr.to_pylist()
    out = rows_as_dicts(names, [to_pylist(c) for c in arr.flatten()])
    return _put_nulls(arr, out)


def to_pylist(arr: pa.Array | pa.ChunkedArray) -> list:
    """``arr.to_pylist()``: the same values, of the same Python types,
    converted column-wise (see the module's docstring)."""
    if isinstance(arr, pa.ChunkedArray):
        if arr.num_chunks == 1:
            return to_pylist(arr.chunk(0))
        return [v for chunk in arr.chunks for v in to_pylist(chunk)]
    n = len(arr)
    t = arr.type
    if n == 0:
        return []
    if arr.null_count == n:
        return [None] * n
    if pa.types.is_integer(t) or t in (pa.float32(), pa.float64()):
        return _numeric(arr)
    if _numpy_kind(t):      # object-typed in NumPy: None for a null already
        return arr.to_numpy(zero_copy_only=False).tolist()
    if (pa.types.is_timestamp(t) and t.tz is None and t.unit in _UNITS_PER_S) \
            or pa.types.is_date32(t):
        got = _datetimes(arr)
        if got is not None:
            return got
    elif pa.types.is_map(t):
        return _maps(arr)
    elif pa.types.is_list(t) or pa.types.is_large_list(t):
        return _lists(arr)
    elif pa.types.is_fixed_size_list(t):
        return _fixed_lists(arr)
    elif pa.types.is_struct(t):
        return _structs(arr)
    return arr.to_pylist()


def rows_as_dicts(names: Sequence[str], columns: Sequence[list]) -> list:
    """The rows of ``columns`` (lists of equal length, one per name) as
    dicts, keys in the order of ``names`` (as ``Table.to_pylist()``)."""
    return _pyrows.rows_as_dicts(list(names), [c if type(c) is list else list(c)
                                               for c in columns])
