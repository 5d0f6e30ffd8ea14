"""Arrow data cast to a target schema: the one place rowformat does it.

Columns are matched by name. A column whose type differs is cast safely (no
value may change), except with ``truncate``, where finer times and timestamps
are floored to the target's unit (nanoseconds to Spark's microseconds,
milliseconds to pypaimon's seconds) and other casts are unchecked. A list
becomes a fixed-size list (a VECTOR column) by rebuilding its child array,
because pyarrow's own cast crashes on null lists of fixed size. A failure is a
:class:`SchemaError` when no cast exists between the types, and otherwise a
:class:`ValueConversionError` naming the column and the first row that does
not fit.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np
import pyarrow as pa

from .errors import SchemaError, ValueConversionError

_UNIT_NANOS = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}


def floor_divide(values, divisor: int):
    """``values // divisor`` (int64 Arrow values, Python's flooring); Arrow's
    integer division and unsafe casts truncate toward zero."""
    import pyarrow.compute as pc    # here: importing it costs ~30 ms
    q = pc.divide(values, divisor)
    r = pc.subtract(values, pc.multiply(q, divisor))
    return pc.if_else(pc.less(r, 0), pc.subtract(q, 1), q)


def cast_batch(batch: pa.RecordBatch, schema: pa.Schema, *, extra_columns: bool = True,
               first_row: int = 0, type_names: Mapping[str, object] | None = None,
               truncate: bool = False) -> pa.RecordBatch:
    """``batch`` as ``schema``: its columns picked by name and cast. Columns
    the schema lacks are dropped, or refused without ``extra_columns``.
    ``first_row`` is the batch's first row number and ``type_names`` the
    column types to print (the Paimon types), for the error messages."""
    if batch.schema.equals(schema, check_metadata=False):
        return batch
    names = batch.schema.names
    missing = [f.name for f in schema if f.name not in names]
    extra = [] if extra_columns else [n for n in names if n not in schema.names]
    if missing or extra:
        raise SchemaError(f"batch columns {names} do not match the schema {schema.names} "
                          f"(missing {missing}, unexpected {extra})")
    arrays = [cast_array(batch.column(names.index(f.name)), f, first_row=first_row,
                         type_name=type_names.get(f.name) if type_names else None,
                         truncate=truncate)
              for f in schema]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def cast_array(col, field: pa.Field, *, first_row: int = 0, type_name: object = None,
               truncate: bool = False) -> pa.Array:
    """One column as ``field``'s type (see the module's docstring)."""
    target = field.type
    if col.type.equals(target, check_metadata=True):     # (nested fields' metadata: VARIANT)
        return col
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    shown = type_name if type_name is not None else target
    if pa.types.is_fixed_size_list(target) and (pa.types.is_list(col.type)
                                                or pa.types.is_large_list(col.type)):
        return _list_to_fixed(col, field, first_row, shown, truncate)
    if truncate:
        return _truncated(col, target)
    try:
        return col.cast(target, safe=True)
    except pa.ArrowNotImplementedError as e:
        raise SchemaError(f"column {field.name!r}: cannot store {col.type} values as {shown}: "
                          f"{e}") from None
    except (pa.ArrowException, TypeError, ValueError) as e:
        error = e
    # Bisect to the first row that does not cast, to name it.
    lo, hi = 0, len(col)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        try:
            col.slice(lo, mid - lo).cast(target, safe=True)
            lo = mid
        except (pa.ArrowException, TypeError, ValueError):
            hi = mid
    raise ValueConversionError(f"column {field.name!r}, row {first_row + lo}: "
                               f"{_value_text(col, lo)} ({col.type}) does not fit {shown}: "
                               f"{error}") from None


def _value_text(col: pa.Array, i: int) -> str:
    """Row ``i``'s value for a message: its Python repr, or pyarrow's text
    where it has no Python value (a nanosecond timestamp without pandas)."""
    if not len(col):
        return "None"
    try:
        return repr(col[i].as_py())
    except (ValueError, OverflowError, pa.ArrowException):
        pass
    try:        # (a scalar's own str() goes through as_py too)
        return str(col.slice(i, 1).cast(pa.string())[0].as_py())
    except (ValueError, TypeError, pa.ArrowException):
        return f"a {col.type} value"


def _truncated(col: pa.Array, target: pa.DataType) -> pa.Array:
    """An unchecked cast that floors a time or timestamp to a coarser unit
    (Arrow's own unsafe cast would round toward zero: wrong before 1970)."""
    source = col.type
    if ((pa.types.is_timestamp(source) and pa.types.is_timestamp(target))
            or (pa.types.is_time(source) and pa.types.is_time(target))):
        ratio = _UNIT_NANOS[target.unit] // _UNIT_NANOS[source.unit]   # 0 to a finer unit
        if ratio > 1:
            ints = col.cast(pa.int64())
            floored = floor_divide(ints, ratio)
            return floored.cast(pa.int32() if pa.types.is_time32(target) else pa.int64()) \
                .cast(target)
    return col.cast(target, safe=False)


def _list_to_fixed(col: pa.Array, field: pa.Field, first_row: int, shown: object,
                   truncate: bool) -> pa.Array:
    """list -> fixed_size_list, its child array rebuilt here: a null list
    takes ``n`` null slots, as pyarrow's cast would if it did not crash."""
    import pyarrow.compute as pc
    target = field.type
    n = target.list_size
    valid = np.asarray(col.is_valid().to_numpy(zero_copy_only=False), bool)
    lengths = np.asarray(pc.list_value_length(col).fill_null(n).to_numpy(zero_copy_only=False))
    if (lengths != n).any():
        r = int(np.flatnonzero(lengths != n)[0])
        raise ValueConversionError(f"column {field.name!r}, row {first_row + r}: "
                                   f"{lengths[r]} elements do not fit {shown}")
    values = col.flatten()                  # the elements of the valid lists, in order
    if values.null_count and not target.value_field.nullable:
        raise ValueConversionError(
            f"column {field.name!r}: a null element, but {shown}'s elements are NOT NULL")
    values = cast_array(values, target.value_field, truncate=truncate)
    if not valid.all():
        rank = np.cumsum(valid) - 1
        index = np.where(valid[:, None], rank[:, None] * n + np.arange(n)[None, :], len(values))
        values = pa.concat_arrays([values, pa.nulls(1, values.type)]).take(pa.array(index.ravel()))
    return pa.FixedSizeListArray.from_arrays(values, type=target,
                                             mask=None if valid.all() else pa.array(~valid))
