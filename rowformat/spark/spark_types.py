"""Paimon types to and from Spark SQL types, and Arrow batches between the
two. Imports pyspark: only the Spark integration loads this module.

Paimon -> Spark (reading):

================================  =============================================
BOOLEAN, TINYINT .. BIGINT        BooleanType, ByteType, ShortType, IntegerType, LongType
FLOAT, DOUBLE                     FloatType, DoubleType
CHAR(n), VARCHAR(n), STRING       StringType (Spark's Arrow conversion has no CHAR/VARCHAR)
BINARY(n), VARBINARY(n), BYTES    BinaryType
BLOB                              BinaryType (the inlined payload)
DECIMAL(p, s)                     DecimalType(p, s)
DATE                              DateType
TIME(p)                           TimeType(min(p, 6)) (Spark 4.1+; Paimon stores milliseconds)
TIMESTAMP(p)                      TimestampNTZType; p > 6 is truncated to microseconds
TIMESTAMP(p) WITH LOCAL TIME ZONE TimestampType; p > 6 is truncated to microseconds
VARIANT                           VariantType
ARRAY<T>                          ArrayType(T, containsNull=T nullable)
VECTOR(n, T)                      ArrayType(T, containsNull=False)
MAP<K, V>                         MapType(K, V, valueContainsNull=V nullable)
MULTISET<T>                       MapType(T, IntegerType, valueContainsNull=False)
ROW<...>                          StructType (NOT NULL -> nullable=False)
================================  =============================================

Spark -> Paimon (creating a table) is the inverse with the canonical
choice: StringType -> STRING, CharType(n) -> CHAR(n), VarcharType(n) ->
VARCHAR(n), BinaryType -> BYTES, TimestampType -> TIMESTAMP(6) WITH LOCAL TIME
ZONE, TimestampNTZType -> TIMESTAMP(6), TimeType(p) -> TIME(p), MapType -> MAP,
ArrayType -> ARRAY. BLOB, VECTOR, MULTISET, TIMESTAMP(p != 6) and the like are
reached through the ``paimonSchema`` option. Spark types with no Paimon
counterpart (intervals, NullType, GEOMETRY/GEOGRAPHY, user-defined types
without one) raise :class:`SchemaError` naming the column.
"""
from __future__ import annotations

import pyarrow as pa
from pyspark.sql import types as st

from ..arrow_cast import cast_array
from ..arrow_types import to_arrow_type as paimon_arrow_type
from ..errors import SchemaError
from ..datatypes import (
    MAX_NESTING, ArrayType, AtomicType, CharType, DataField, DataType, DecimalType, MapType,
    MultisetType, RowType, TimestampType, TimeType, VectorType, nesting_error,
)

_ATOMIC_TO_SPARK = {
    "BOOLEAN": st.BooleanType(), "TINYINT": st.ByteType(), "SMALLINT": st.ShortType(),
    "INT": st.IntegerType(), "BIGINT": st.LongType(), "FLOAT": st.FloatType(),
    "DOUBLE": st.DoubleType(), "DATE": st.DateType(), "BLOB": st.BinaryType(),
    "VARIANT": st.VariantType(),
}
_SPARK_TO_ATOMIC: dict[type, str] = {type(v): k for k, v in _ATOMIC_TO_SPARK.items() if k != "BLOB"}


def to_spark_type(t: DataType) -> st.DataType:
    """The Spark type of a Paimon type (nullability goes on the field)."""
    root = t.root
    if root in _ATOMIC_TO_SPARK:
        return _ATOMIC_TO_SPARK[root]
    if isinstance(t, CharType):
        return st.StringType() if t.is_string else st.BinaryType()
    if isinstance(t, DecimalType):
        return st.DecimalType(t.precision, t.scale)
    if isinstance(t, TimeType):
        return st.TimeType(min(t.precision, 6))
    if isinstance(t, TimestampType):
        return st.TimestampType() if t.ltz else st.TimestampNTZType()
    if isinstance(t, (ArrayType, VectorType)):
        element = t.element
        return st.ArrayType(to_spark_type(element),
                            containsNull=element.nullable and isinstance(t, ArrayType))
    if isinstance(t, MultisetType):
        return st.MapType(to_spark_type(t.element), st.IntegerType(), valueContainsNull=False)
    if isinstance(t, MapType):
        return st.MapType(to_spark_type(t.key), to_spark_type(t.value),
                          valueContainsNull=t.value.nullable)
    if isinstance(t, RowType):
        return to_spark_schema(t)
    raise SchemaError(f"Paimon type {t} has no Spark equivalent")


def to_spark_schema(row: RowType) -> st.StructType:
    fields = []
    for f in row.fields:
        try:
            fields.append(st.StructField(f.name, to_spark_type(f.type), nullable=f.type.nullable))
        except SchemaError as e:
            raise SchemaError(f"column {f.name!r}: {e}") from None
    return st.StructType(fields)


def spark_depth(t: st.DataType) -> int:
    """How deep a Spark type nests, as its Paimon type counts (MAX_NESTING):
    a MapType and a VariantType are two levels, a user-defined type its SQL
    type. Walks the type without recursion and stops once past MAX_NESTING."""
    deepest = 0
    stack = [(t, 1)]
    while stack:
        t, depth = stack.pop()
        deepest = max(deepest, depth + 1 if isinstance(t, st.VariantType) else depth)
        if deepest > MAX_NESTING:
            break
        if isinstance(t, st.ArrayType):
            stack.append((t.elementType, depth + 1))
        elif isinstance(t, st.MapType):
            stack += [(t.keyType, depth + 2), (t.valueType, depth + 2)]
        elif isinstance(t, st.StructType):
            stack += [(f.dataType, depth + 1) for f in t.fields]
        elif isinstance(t, st.UserDefinedType):
            stack.append((t.sqlType(), depth))
    return deepest


def _check_depth(t: st.DataType, what: str) -> None:
    # from_spark_type and _strip recurse once per level
    if spark_depth(t) > MAX_NESTING:
        raise nesting_error(what)


def from_spark_type(t: st.DataType, nullable: bool = True) -> DataType:
    """The canonical Paimon type of a Spark type."""
    _check_depth(t, "Spark type")
    return _from_spark_type(t, nullable)


def _from_spark_type(t: st.DataType, nullable: bool = True) -> DataType:
    kw = {"nullable": nullable}
    name = _SPARK_TO_ATOMIC.get(type(t))
    if name is not None:
        return AtomicType(name=name, **kw)
    if isinstance(t, st.CharType):
        return CharType(kind="CHAR", length=t.length, **kw)
    if isinstance(t, st.VarcharType):
        return CharType(kind="VARCHAR", length=t.length, **kw)
    if isinstance(t, st.StringType):
        return CharType(kind="VARCHAR", **kw)
    if isinstance(t, st.BinaryType):
        return CharType(kind="VARBINARY", **kw)
    if isinstance(t, st.DecimalType):
        return DecimalType(precision=t.precision, scale=t.scale, **kw)
    if isinstance(t, st.TimeType):
        return TimeType(precision=t.precision, **kw)
    if isinstance(t, st.TimestampType):
        return TimestampType(precision=6, ltz=True, **kw)
    if isinstance(t, st.TimestampNTZType):
        return TimestampType(precision=6, **kw)
    if isinstance(t, st.ArrayType):
        return ArrayType(element=_from_spark_type(t.elementType, t.containsNull), **kw)
    if isinstance(t, st.MapType):
        return MapType(key=_from_spark_type(t.keyType, False),
                       value=_from_spark_type(t.valueType, t.valueContainsNull), **kw)
    if isinstance(t, st.StructType):
        return RowType(fields=tuple(_fields_from_spark(t)), **kw)
    if isinstance(t, st.UserDefinedType):
        return _from_spark_type(t.sqlType(), nullable)
    raise SchemaError(f"Spark type {t.simpleString()} has no Paimon equivalent "
                      f"(Paimon has no intervals, NULL, GEOMETRY or GEOGRAPHY type)")


def _fields_from_spark(schema: st.StructType):
    for f in schema.fields:
        try:
            yield DataField(f.name, _from_spark_type(f.dataType, f.nullable))
        except SchemaError as e:
            raise SchemaError(f"column {f.name!r}: {e}") from None


def from_spark_schema(schema: st.StructType) -> RowType:
    _check_depth(schema, "Spark schema")
    return RowType(fields=tuple(_fields_from_spark(schema)), top_level=True)


def same_spark_type(a: st.DataType, b: st.DataType) -> bool:
    """Equal up to nullability (Spark types compare nullability too)."""
    _check_depth(a, "Spark type")
    _check_depth(b, "Spark type")
    return _strip(a) == _strip(b)


def _strip(t: st.DataType) -> st.DataType:
    if isinstance(t, st.ArrayType):
        return st.ArrayType(_strip(t.elementType), True)
    if isinstance(t, st.MapType):
        return st.MapType(_strip(t.keyType), _strip(t.valueType), True)
    if isinstance(t, st.StructType):
        return st.StructType([st.StructField(f.name, _strip(f.dataType), True) for f in t.fields])
    if isinstance(t, (st.CharType, st.VarcharType)):
        return st.StringType()
    return t


# ---------------------------------------------------------------- Arrow

def spark_arrow_schema(schema: st.StructType) -> pa.Schema:
    """The Arrow schema Spark requires of batches for ``schema``."""
    from pyspark.sql.pandas.types import to_arrow_schema
    return to_arrow_schema(schema, timezone="UTC")


def _has_nanos(t: DataType) -> bool:
    if isinstance(t, (TimestampType, TimeType)):
        return t.precision > 6
    if isinstance(t, RowType):
        return any(_has_nanos(f.type) for f in t.fields)
    return any(_has_nanos(getattr(t, a)) for a in ("element", "key", "value") if hasattr(t, a))


class ArrowConverter:
    """Turns arrays of Paimon columns (as the core reader decodes them) into
    arrays of the Spark Arrow types: a no-op for most types, a cast for
    BLOB (large_binary), TIME, VECTOR, MULTISET and VARIANT (field metadata)."""

    def __init__(self, columns: list[tuple[DataType, pa.Field]]):
        self._plan = []
        for paimon, target in columns:
            source = paimon_arrow_type(paimon)
            self._plan.append(None if source.equals(target.type, check_metadata=True)
                              else (target.type, not _has_nanos(paimon)))

    def convert(self, arrays: list[pa.Array]) -> list[pa.Array]:
        # nanosecond times and timestamps floor to Spark's microseconds
        return [arr if step is None else cast_array(arr, pa.field("", step[0]), truncate=not step[1])
                for arr, step in zip(arrays, self._plan)]


