"""Fory rows in Spark columns: ``from_fory`` and ``to_fory``.

    from rowformat.spark import from_fory, to_fory
    df.select(from_fory("payload", "id BIGINT, name STRING").alias("row"))
    df.select(to_fory(struct("id", "name"), layout="compact").alias("payload"))

Both are Arrow UDFs (``arrow_udf``, Spark 4.1+) over the batch codec of
:mod:`rowformat.fory`: a batch of rows is decoded into (or encoded from)
Arrow arrays by the compiled codec, with no Python object per row. The
callables are instances of this module's classes, so Spark's workers import
them by reference and keep the encoder (its compiled plan) for every batch
of a task.

``from_fory`` mirrors Spark's ``from_json``: ``mode="PERMISSIVE"`` (the
default) gives a null struct for a malformed row (or, with
``error_column``, a struct whose data fields are null and whose
``error_column`` holds the error message), ``mode="FAILFAST"`` fails the
task with a :class:`~rowformat.errors.MalformedRowError` naming the row. A
null input is a null struct in both modes.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
from pyspark.sql import types as st

from ..arrow_cast import cast_array
from ..errors import MalformedRowError, SchemaError
from ..fory import RowEncoder
from ..fory.schema import LAYOUTS
from .preflight import Shipped, check_active
from .spark_types import spark_arrow_schema

MODES = ("PERMISSIVE", "FAILFAST")


def _check_layout(layout: str) -> str:
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    return layout


def fory_schemas(schema) -> tuple[pa.Schema, st.StructType]:
    """(the Fory row schema as Arrow, the Spark struct type) of ``schema``:
    Spark DDL text, a Spark StructType, a ``pyarrow.Schema`` / struct type,
    or a pyfory ``Schema``. An Arrow or pyfory schema is used as it is
    (its nullability shapes Compact rows); a Spark schema through Spark's
    own Arrow mapping."""
    if type(schema).__module__.startswith("pyfory"):
        from pyfory.format import to_arrow_schema
        schema = to_arrow_schema(schema)
    if isinstance(schema, pa.StructType):
        schema = pa.schema(list(schema))
    if isinstance(schema, pa.Schema):
        from pyspark.sql.pandas.types import from_arrow_schema
        try:
            return schema, from_arrow_schema(schema)
        except TypeError as e:
            raise SchemaError(f"the Fory schema [{schema}] has no Spark equivalent: {e}") from None
    if isinstance(schema, str):
        from pyspark.sql.types import _parse_datatype_string
        schema = _parse_datatype_string(schema)
    if not isinstance(schema, st.StructType):
        raise SchemaError(f"a Fory row schema is Spark DDL, a StructType, a pyarrow.Schema or "
                          f"a pyfory Schema, not {type(schema).__name__}")
    return spark_arrow_schema(schema), schema


def _scatter(values: pa.Array, keep: np.ndarray) -> pa.Array:
    """``values`` (one per true of ``keep``) spread over ``len(keep)``
    positions, null where ``keep`` is false."""
    if keep.all():
        return values
    index = np.cumsum(keep, dtype=np.int64) - 1
    return values.take(pa.array(index, mask=~keep))


class FromFory(Shipped):
    """The arrow_udf of :func:`from_fory`: binary rows -> struct."""

    def __init__(self, schema: pa.Schema, layout: str, mode: str, target: pa.StructType,
                 error_column: str | None):
        self.schema, self.layout, self.mode = schema, layout, mode
        self.target, self.error_column = target, error_column
        self._encoder: RowEncoder | None = None
        self._seen = 0

    def __getstate__(self):
        return {**self.__dict__, "_encoder": None, "_seen": 0}

    def _decode(self, rows: pa.Array, where: np.ndarray) -> tuple[list[pa.Array], dict[int, str]]:
        """The decoded columns of ``rows`` (no nulls), one per row that
        decodes, and {position: message} of those that do not; ``where``:
        each row's position in the batch (for FAILFAST's message)."""
        if self._encoder is None:
            self._encoder = RowEncoder(self.schema, self.layout)
        pieces, errors, start = [], {}, 0
        while True:
            try:
                pieces.append(self._encoder.decode_batch(rows.slice(start)))
                break
            except MalformedRowError as e:
                bad = start + getattr(e, "row", 0)
                if self.mode == "FAILFAST":
                    raise self._failure(rows[bad], int(where[bad]), e) from None
                if bad > start:
                    pieces.append(self._encoder.decode_batch(rows.slice(start, bad - start)))
                errors[bad] = str(e).partition(": ")[2] or str(e)
                start = bad + 1
        table = pa.Table.from_batches(pieces, schema=self.schema).combine_chunks()
        return [c.chunk(0) if c.num_chunks else pa.array([], c.type)
                for c in table.columns], errors

    def _failure(self, row: pa.Scalar, at: int, e: Exception) -> MalformedRowError:
        from pyspark import TaskContext
        ctx = TaskContext.get()
        where = f" of partition {ctx.partitionId()}" if ctx is not None else ""
        head = row.as_py()[:32].hex()
        return MalformedRowError(
            f"from_fory (FAILFAST): row {self._seen + at}{where} is not a Fory {self.layout} "
            f"row of [{self.schema}]: {str(e).partition(': ')[2] or e} (its first bytes: "
            f"{head}); mode='PERMISSIVE' gives null for such rows")

    def __call__(self, rows):               # (no annotations: arrow_udf reads them)
        if isinstance(rows, pa.ChunkedArray):
            rows = rows.combine_chunks()
        present = np.asarray(rows.is_valid().to_numpy(zero_copy_only=False))
        compact = rows.filter(pa.array(present)) if rows.null_count else rows
        columns, errors = self._decode(compact, np.flatnonzero(present))
        self._seen += len(rows)
        good = np.ones(len(compact), bool)
        good[list(errors)] = False
        keep = present.copy()
        keep[np.flatnonzero(present)[~good]] = False
        data_fields = list(self.target)[:len(columns)]
        columns = [_scatter(cast_array(c, f), keep) for c, f in zip(columns, data_fields)]
        if self.error_column is None:
            return pa.StructArray.from_arrays(columns, fields=data_fields,
                                              mask=pa.array(~keep))
        messages = np.full(len(compact), None, object)
        for i, m in errors.items():     # one object per malformed row only
            messages[i] = m
        text = _scatter(pa.array(messages, pa.string()), present) if errors else \
            pa.nulls(len(rows), pa.string())
        return pa.StructArray.from_arrays(columns + [text], fields=list(self.target),
                                          mask=pa.array(~present))


def from_fory(col, schema, layout: str = "standard", mode: str = "PERMISSIVE", *,
              error_column: str | None = None):
    """A struct column decoded from ``col``, a BINARY column of Fory rows.

    ``schema``: Spark DDL (``"id BIGINT, name STRING"``), a StructType, a
    ``pyarrow.Schema`` or a pyfory ``Schema``. ``layout``: ``"standard"``
    (pyfory, C++, Java's default) or ``"compact"`` (Java's compact codec).
    ``mode``: ``"PERMISSIVE"`` (a malformed row is null) or ``"FAILFAST"``
    (a malformed row fails the task, naming it). ``error_column``
    (PERMISSIVE only): the name of a STRING field appended to the struct,
    holding the error message of a malformed row (whose other fields are
    then null), as ``from_json``'s ``columnNameOfCorruptRecord``."""
    from pyspark.sql.functions import arrow_udf
    check_active()
    mode = mode.upper()
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if error_column is not None and mode != "PERMISSIVE":
        raise ValueError("error_column needs mode='PERMISSIVE'")
    fory_schema, spark_schema = fory_schemas(schema)
    RowEncoder(fory_schema, _check_layout(layout))      # an unsupported type fails here
    if error_column is not None:
        if error_column in spark_schema.names:
            raise SchemaError(f"error_column {error_column!r} is a column of the schema")
        spark_schema = st.StructType(
            [st.StructField(f.name, f.dataType, True) for f in spark_schema.fields]
            + [st.StructField(error_column, st.StringType(), True)])
    target = pa.struct(list(spark_arrow_schema(spark_schema)))
    # (pyspark's stubs type the callable form only for plain functions)
    return arrow_udf(FromFory(fory_schema, layout, mode, target, error_column),  # type: ignore[call-overload]
                     spark_schema)(col)


def _plain(t: pa.DataType) -> pa.DataType:
    """``t`` with large strings, binaries and lists made plain (Fory's
    row schema types), recursively."""
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return pa.string()
    if pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return pa.binary()
    if pa.types.is_map(t):
        return pa.map_(t.key_field.with_type(_plain(t.key_type)),
                       t.item_field.with_type(_plain(t.item_type)))
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_list_view(t):
        return pa.list_(t.value_field.with_type(_plain(t.value_type)))
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_plain(f.type)) for f in t])
    return t


class ToFory(Shipped):
    """The arrow_udf of :func:`to_fory`: struct -> binary rows."""

    def __init__(self, schema: pa.Schema | None, layout: str):
        self.schema, self.layout = schema, layout
        self._encoders: dict = {}

    def __getstate__(self):
        return {**self.__dict__, "_encoders": {}}

    def __call__(self, structs):            # (no annotations: arrow_udf reads them)
        if isinstance(structs, pa.ChunkedArray):
            structs = structs.combine_chunks()
        encoder = self._encoders.get(structs.type)
        if encoder is None:
            schema = self.schema or pa.schema(list(_plain(structs.type)))
            encoder = self._encoders[structs.type] = RowEncoder(schema, self.layout)
        present = None
        if structs.null_count:      # a null struct's fields may break NOT NULL: leave it out
            present = np.asarray(structs.is_valid().to_numpy(zero_copy_only=False))
            structs = structs.filter(pa.array(present))
        # flatten(): the children as the struct sees them (a slice's offset applied)
        rows = encoder.encode_batch(pa.RecordBatch.from_arrays(
            structs.flatten(), names=[f.name for f in structs.type]))
        return rows if present is None else _scatter(rows, present)


def to_fory(col, layout: str = "standard", *, schema=None):
    """A BINARY column of Fory rows encoded from ``col``, a struct column
    (``struct("a", "b")``); a null struct gives a null row.

    The row schema is the struct's own (Spark's Arrow types), or
    ``schema`` (as :func:`from_fory` takes it) when the bytes must follow
    another writer's schema, e.g. a Java class with NOT NULL fields, whose
    Compact rows differ."""
    from pyspark.sql.functions import arrow_udf
    check_active()
    fory_schema = None if schema is None else fory_schemas(schema)[0]
    if fory_schema is not None:
        RowEncoder(fory_schema, _check_layout(layout))
    return arrow_udf(ToFory(fory_schema, _check_layout(layout)),  # type: ignore[call-overload]
                     st.BinaryType())(col)
