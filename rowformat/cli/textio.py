"""Exact text forms of Arrow values, for the CLI's JSON lines and CSV.

Every value keeps its exact value as text, and reads back to the same Arrow
value given the schema:

* BINARY, VARBINARY, BYTES, BLOB: base64 strings;
* DECIMAL: the decimal string (``"12.30"``), never a float;
* DATE, TIME, TIMESTAMP: ISO text at the type's precision
  (``"2024-05-01"``, ``"12:30:00.250"``, ``"2024-05-01 12:30:00.250000"``,
  with ``Z`` for WITH LOCAL TIME ZONE);
* MAP and MULTISET: a list of ``{"key": k, "value": v}`` objects (keys of any
  type, order kept);
* ROW: an object; ARRAY and VECTOR: a list; numbers and strings as they are
  (floats, FLOAT too, print the shortest text that reads back exactly; NaN
  and infinities as JSON's common extensions ``NaN``, ``Infinity``).
"""
from __future__ import annotations

import base64
import json
from typing import Any, Iterable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.types as pat


def _is_binary(t: pa.DataType) -> bool:
    return pat.is_binary(t) or pat.is_large_binary(t) or pat.is_fixed_size_binary(t)


def _as_string(t: pa.DataType) -> bool:
    """Types whose text form is a string made by Arrow's cast."""
    return pat.is_decimal(t) or pat.is_timestamp(t) or pat.is_date(t) or pat.is_time(t)


def is_nested(t: pa.DataType) -> bool:
    return pat.is_nested(t)


def text_type(t: pa.DataType) -> pa.DataType:
    """The Arrow type of ``t``'s text form (every field nullable)."""
    if _is_binary(t) or _as_string(t):
        return pa.string()
    if pat.is_float32(t):
        return pa.float64()
    if pat.is_map(t):
        return pa.list_(pa.struct([pa.field("key", text_type(t.key_type)),
                                   pa.field("value", text_type(t.item_type))]))
    if pat.is_list(t) or pat.is_large_list(t) or pat.is_fixed_size_list(t):
        return pa.list_(text_type(t.value_type))
    if pat.is_struct(t):
        return pa.struct([pa.field(t.field(i).name, text_type(t.field(i).type))
                          for i in range(t.num_fields)])
    return t


def text_schema(schema: pa.Schema) -> pa.Schema:
    return pa.schema([pa.field(f.name, text_type(f.type)) for f in schema])


def _mask(arr: pa.Array):
    return arr.is_null() if arr.null_count else None


def _no_fields(arr: pa.Array, t: pa.DataType) -> pa.Array:
    """A ROW<> (struct without fields) array as type ``t`` (also without
    fields). Not rebuilt with ``StructArray.from_arrays``: with no child to
    take the length from, that makes an empty array whenever no mask is
    given, and the list around it then fails to validate."""
    return arr if arr.type.equals(t) else arr.cast(t)


def to_text(arr: pa.Array) -> pa.Array:
    """``arr`` in its text form (see the module docstring)."""
    t = arr.type
    if _is_binary(t):
        return pa.array([None if v is None else base64.b64encode(v).decode("ascii")
                         for v in arr.to_pylist()], pa.string())
    if _as_string(t):
        return arr.cast(pa.string())
    if pat.is_float32(t):   # the shortest text that reads back to the same float32
        return pa.array([None if v is None else float(str(np.float32(v)))
                         for v in arr.to_pylist()], pa.float64())
    if pat.is_map(t):
        entries = pa.StructArray.from_arrays([to_text(arr.keys), to_text(arr.items)],
                                             names=["key", "value"])
        return pa.ListArray.from_arrays(arr.offsets, entries, type=text_type(t), mask=_mask(arr))
    if pat.is_list(t) or pat.is_large_list(t):
        return pa.ListArray.from_arrays(pa.array(arr.offsets, pa.int32()), to_text(arr.values),
                                        type=text_type(t), mask=_mask(arr))
    if pat.is_fixed_size_list(t):
        n = t.list_size
        values = to_text(arr.values.slice(arr.offset * n, len(arr) * n))
        offsets = pa.array(range(0, len(arr) * n + 1, n), pa.int32())
        return pa.ListArray.from_arrays(offsets, values, type=text_type(t), mask=_mask(arr))
    if pat.is_struct(t):
        if t.num_fields == 0:   # ROW<>: already its text form ({}), see _no_fields
            return _no_fields(arr, text_type(t))
        # flatten(): a child is null wherever its struct is
        return pa.StructArray.from_arrays([to_text(c) for c in arr.flatten()],
                                          fields=list(text_type(t)), mask=_mask(arr))
    return arr


def _time_units(text: str, unit: str) -> int:
    hms, _, frac = text.partition(".")
    h, m, s = (int(x) for x in hms.split(":"))
    digits = {"s": 0, "ms": 3, "us": 6, "ns": 9}[unit]
    frac = (frac + "0" * digits)[:digits]
    return ((h * 60 + m) * 60 + s) * 10 ** digits + (int(frac) if frac else 0)


def from_text(arr: pa.Array, t: pa.DataType) -> pa.Array:
    """The inverse of :func:`to_text`: text form ``arr`` as type ``t``."""
    if _is_binary(t):
        return pa.array([None if v is None else base64.b64decode(v, validate=True)
                         for v in arr.to_pylist()], t)
    if pat.is_time(t):
        storage = pa.int32() if t.bit_width == 32 else pa.int64()
        return pa.array([None if v is None else _time_units(v, t.unit) for v in arr.to_pylist()],
                        storage).cast(t)
    if pat.is_map(t):
        entries = arr.values
        keys = from_text(entries.field(0), t.key_type)
        items = from_text(entries.field(1), t.item_type)
        return pa.MapArray.from_arrays(arr.offsets, keys, items, type=t, mask=_mask(arr))
    if pat.is_list(t) or pat.is_large_list(t):
        offsets = arr.offsets if pat.is_list(t) else pa.array(arr.offsets, pa.int64())
        cls = pa.ListArray if pat.is_list(t) else pa.LargeListArray
        return cls.from_arrays(offsets, from_text(arr.values, t.value_type), type=t, mask=_mask(arr))
    if pat.is_fixed_size_list(t):
        flat = from_text(arr.flatten(), t.value_type) if not arr.null_count else None
        if flat is None:   # null lists hold no values in the text form: fill their slots
            lists = [([None] * t.list_size if v is None else v) for v in arr.to_pylist()]
            flat = from_text(pa.array([x for v in lists for x in v], text_type(t.value_type)),
                             t.value_type)
        return pa.FixedSizeListArray.from_arrays(flat, type=t, mask=_mask(arr))
    if pat.is_struct(t):
        if t.num_fields == 0:
            return _no_fields(arr, t)
        return pa.StructArray.from_arrays(
            [from_text(c, t.field(i).type) for i, c in enumerate(arr.flatten())],
            fields=list(t), mask=_mask(arr))
    if arr.type.equals(t):
        return arr
    return arr.cast(t)


def text_batch(batch: pa.RecordBatch) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays([to_text(c) for c in batch.columns],
                                      schema=text_schema(batch.schema))


def batch_from_text(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """A batch in text form (columns by name) converted to ``schema``."""
    return pa.RecordBatch.from_arrays(
        [from_text(batch.column(batch.schema.get_field_index(f.name)), f.type) for f in schema],
        schema=schema)


def json_lines(batch: pa.RecordBatch) -> Iterator[str]:
    """One JSON object per row, keys in column order."""
    for row in text_batch(batch).to_pylist():
        yield json.dumps(row, ensure_ascii=False)


def batch_from_json(lines: Iterable[str], schema: pa.Schema, first_line: int = 1) -> pa.RecordBatch:
    """JSON objects (one a line) as a batch of ``schema``; unknown keys are an error."""
    rows: list[Any] = []
    names = set(schema.names)
    for k, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise ValueError(f"line {first_line + k}: not JSON: {e}") from None
        if not isinstance(row, dict):
            raise ValueError(f"line {first_line + k}: expected a JSON object, got {type(row).__name__}")
        extra = set(row) - names
        if extra:
            raise ValueError(f"line {first_line + k}: unknown field(s) {sorted(extra)}; "
                             f"the schema has {schema.names}")
        rows.append(row)
    text = pa.array(rows, pa.struct(list(text_schema(schema))))
    return batch_from_text(pa.RecordBatch.from_struct_array(text), schema)
