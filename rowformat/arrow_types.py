"""Paimon types to and from Arrow types.

Paimon -> Arrow (what the reader produces and the writer casts input to):

=================================  ==========================================
BOOLEAN .. DOUBLE                  bool, int8, int16, int32, int64, float32, float64
CHAR(n), VARCHAR(n), STRING        string
BINARY(n), VARBINARY(n), BYTES     binary
BLOB                               large_binary
DECIMAL(p, s)                      decimal128(p, s)
DATE                               date32
TIME(p)                            time32[ms] for p <= 3, time64[us] for p <= 6, time64[ns]
TIMESTAMP(p)                       timestamp[ms] for p <= 3, [us] for p <= 6, [ns] for p > 6
TIMESTAMP(p) WITH LOCAL TIME ZONE  the same unit with tz="UTC"
VARIANT                            struct<value: binary not null, metadata: binary not null>
ARRAY<T>                           list<T>
MAP<K, V>                          map<K, V> (Arrow keys are never null)
MULTISET<T>                        map<T, int32 not null>
ROW<...>                           struct<...>
VECTOR(n, T)                       fixed_size_list<T not null>[n]
=================================  ==========================================

NOT NULL maps to a non-nullable field. TIME is stored as milliseconds of the
day for every precision, so sub-millisecond times are floored on write.

Arrow -> Paimon (``from_arrow``) gives the canonical type of each Arrow type:
string/large_string -> STRING, binary/large_binary -> BYTES,
fixed_size_binary(n) -> BINARY(n), timestamp[s] -> TIMESTAMP(0), ...
Types with no Paimon equivalent (unsigned integers, float16, duration,
dictionary, union, ...) raise :class:`SchemaError`.
"""
from __future__ import annotations

import pyarrow as pa

from .errors import SchemaError
from .datatypes import (
    MAX_NESTING, ArrayType, AtomicType, CharType, DataField, DataType, DecimalType, MapType,
    MultisetType, RowType, TimestampType, TimeType, VectorType, nesting_error,
)
from . import datatypes

_ATOMIC_TO_ARROW = {
    "BOOLEAN": pa.bool_(), "TINYINT": pa.int8(), "SMALLINT": pa.int16(), "INT": pa.int32(),
    "BIGINT": pa.int64(), "FLOAT": pa.float32(), "DOUBLE": pa.float64(), "DATE": pa.date32(),
    "BLOB": pa.large_binary(),
}

VARIANT_ARROW = pa.struct([pa.field("value", pa.binary(), nullable=False),
                           pa.field("metadata", pa.binary(), nullable=False)])


def precision_unit(precision: int) -> str:
    """The Arrow time unit a TIME/TIMESTAMP precision needs."""
    return "ms" if precision <= 3 else "us" if precision <= 6 else "ns"


def to_arrow_type(t: DataType) -> pa.DataType:
    root = t.root
    if root in _ATOMIC_TO_ARROW:
        return _ATOMIC_TO_ARROW[root]
    if root == "VARIANT":
        return VARIANT_ARROW
    if isinstance(t, CharType):
        return pa.string() if t.is_string else pa.binary()
    if isinstance(t, DecimalType):
        return pa.decimal128(t.precision, t.scale)
    if isinstance(t, TimeType):
        unit = precision_unit(t.precision)
        return pa.time32("ms") if unit == "ms" else pa.time64(unit)
    if isinstance(t, TimestampType):
        return pa.timestamp(precision_unit(t.precision), tz="UTC" if t.ltz else None)
    if isinstance(t, ArrayType):
        return pa.list_(to_arrow_field("element", t.element))
    if isinstance(t, MultisetType):
        return pa.map_(to_arrow_field("key", t.element.copy(False)),
                       pa.field("value", pa.int32(), nullable=False))
    if isinstance(t, MapType):
        return pa.map_(to_arrow_field("key", t.key.copy(False)), to_arrow_field("value", t.value))
    if isinstance(t, VectorType):
        return pa.list_(to_arrow_field("element", t.element.copy(False)), t.length)
    if isinstance(t, RowType):
        return pa.struct([to_arrow_field(f.name, f.type) for f in t.fields])
    raise SchemaError(f"type {t} has no Arrow mapping")


def to_arrow_field(name: str, t: DataType) -> pa.Field:
    return pa.field(name, to_arrow_type(t), nullable=t.nullable)


def to_arrow_schema(row: RowType) -> pa.Schema:
    """The Arrow schema of a file schema (what readers return)."""
    return pa.schema([to_arrow_field(f.name, f.type) for f in row.fields])


def arrow_depth(t: pa.DataType) -> int:
    """How deep ``t`` nests, as MAX_NESTING counts: one level per type, so a
    map is two (a list of key-value structs); a dictionary counts as its
    value type. The depth of an Arrow type is that of its Paimon type, both
    ways. A schema's depth is that of ``pa.struct(list(schema))``. Walks the
    type without recursion, and stops once past MAX_NESTING (returning some
    depth > MAX_NESTING)."""
    deepest = 0
    stack = [(t, 1)]
    while stack:
        t, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > MAX_NESTING:
            break
        if pa.types.is_dictionary(t):
            stack.append((t.value_type, depth))
        else:      # list, map (its entries struct), struct, fixed-size list, union, ...
            stack += [(t.field(i).type, depth + 1) for i in range(t.num_fields)]
    return deepest


def from_arrow_type(t: pa.DataType, nullable: bool = True) -> DataType:
    """The canonical Paimon type of an Arrow type."""
    if arrow_depth(t) > MAX_NESTING:
        raise nesting_error("Arrow type")
    return _from_arrow_type(t, nullable)


def _from_arrow_type(t: pa.DataType, nullable: bool = True) -> DataType:
    kw = {"nullable": nullable}
    for name, at in _ATOMIC_TO_ARROW.items():
        if t == at and name != "BLOB":
            return AtomicType(name=name, **kw)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return CharType(kind="VARCHAR", **kw)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return CharType(kind="VARBINARY", **kw)
    if pa.types.is_fixed_size_binary(t):
        return CharType(kind="BINARY", length=t.byte_width, **kw)
    if pa.types.is_decimal(t) and t.precision <= 38:
        return DecimalType(precision=t.precision, scale=t.scale, **kw)
    if pa.types.is_time(t):
        return TimeType(precision={"s": 0, "ms": 3, "us": 6, "ns": 9}[t.unit], **kw)
    if pa.types.is_timestamp(t):
        return TimestampType(precision={"s": 0, "ms": 3, "us": 6, "ns": 9}[t.unit],
                             ltz=t.tz is not None, **kw)
    if pa.types.is_fixed_size_list(t):
        return VectorType(length=t.list_size,
                          element=_from_arrow_type(t.value_type, nullable=False), **kw)
    if pa.types.is_map(t):
        return MapType(key=_from_arrow_type(t.key_type, nullable=False),
                       value=_from_arrow_type(t.item_type, t.item_field.nullable), **kw)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_list_view(t):
        return ArrayType(element=_from_arrow_type(t.value_type, t.value_field.nullable), **kw)
    if pa.types.is_struct(t):
        return RowType(fields=tuple(
            DataField(t.field(i).name, _from_arrow_type(t.field(i).type, t.field(i).nullable))
            for i in range(t.num_fields)), **kw)
    if pa.types.is_dictionary(t):
        return _from_arrow_type(t.value_type, nullable)
    raise SchemaError(f"Arrow type {t} has no Paimon equivalent")


def from_arrow_schema(schema: pa.Schema) -> RowType:
    """The canonical Paimon schema of an Arrow schema."""
    if arrow_depth(pa.struct(list(schema))) > MAX_NESTING:
        raise nesting_error("Arrow schema")
    fields = []
    for f in schema:
        try:
            fields.append(DataField(f.name, _from_arrow_type(f.type, f.nullable)))
        except SchemaError as e:
            raise SchemaError(f"column {f.name!r}: {e}") from None
    return RowType(fields=tuple(fields), top_level=True)


def as_row_type(value) -> RowType:
    """Accepts a RowType, schema text or a pyarrow.Schema."""
    if isinstance(value, RowType):
        return value
    if isinstance(value, str):
        t = datatypes.schema(value)
        if not isinstance(t, RowType):
            raise SchemaError(f"a file schema must be a ROW, got {t}")
        return t
    if isinstance(value, pa.Schema):
        return from_arrow_schema(value)
    raise SchemaError(f"expected a RowType, schema text or pyarrow.Schema, got {type(value).__name__}")
