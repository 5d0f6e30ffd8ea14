"""The Apache Fory row format (Standard, and Java's Compact variant).

``RowEncoder(schema, layout)`` turns Python values or Arrow record batches
into row bytes and back; ``RowView`` reads single fields of a row in place.
Standard bytes equal pyfory 1.7.7 / Fory Java (null slots zeroed, as Java
does); Compact bytes equal Fory Java's compact writers writing element by
element (Java's generated codec writes a Java primitive-array field with
n x width extra bytes; both forms decode).
"""
from __future__ import annotations

import struct as _struct

import pyarrow as _pa

from rowformat.arrow_cast import cast_batch
from rowformat.arrow_data import as_batches
from rowformat.errors import MalformedRowError, RowFormatError, SchemaHashMismatchError
from . import schema as _schema
from ._row import ArrayView, MapView, Plan as _Plan, StructView

__all__ = [
    "RowEncoder", "RowView", "StructView", "ArrayView", "MapView",
    "MalformedRowError", "SchemaHashMismatchError", "schema_hash", "schema_bytes",
]


_PLANS: dict = {}


def _plan(schema: _pa.Schema, layout: str):
    """Plans are cached per (schema, layout); the schema object is kept so
    its id cannot be reused while cached."""
    key = (id(schema), layout)
    hit = _PLANS.get(key)
    if hit is not None and hit[0] is schema:
        return hit[1]
    lay = _schema.build_layout(schema, layout)
    plan = _Plan(lay, layout == "compact")
    if len(_PLANS) > 256:
        _PLANS.clear()
    _PLANS[key] = (schema, plan)
    return plan


def schema_hash(schema: _pa.Schema, layout: str = "standard") -> int:
    """Fory's schema hash (Java ``computeSchemaHash`` / pyfory
    ``compute_schema_hash``); Compact hashes the sorted schema."""
    return _schema.schema_hash(_schema.build_layout(schema, layout))


def schema_bytes(schema: _pa.Schema, layout: str = "standard") -> bytes:
    """Fory's ``Schema.to_bytes()`` for ``schema``."""
    return _schema.schema_bytes(_schema.build_layout(schema, layout))


class RowEncoder:
    """Encodes and decodes rows of ``schema`` (a ``pyarrow.Schema``).

    ``layout`` is ``"standard"`` (cross-language; pyfory, C++, Java) or
    ``"compact"`` (Fory Java's compact codec).
    """

    def __init__(self, schema: _pa.Schema, layout: str = "standard"):
        self.schema = schema
        self.layout = layout
        self._plan = _plan(schema, layout)
        lay = self._plan.layout
        self.schema_hash = _schema.schema_hash(lay)
        self._hash_prefix = _struct.pack("<q", self.schema_hash)
        # Bind the hot methods once: one attribute lookup less per call.
        self.encode = self._plan.encode  # type: ignore[method-assign]
        self.decode = self._plan.decode  # type: ignore[method-assign]

    def __repr__(self):
        return f"<fory.RowEncoder {self.layout}: {self.schema.names}>"

    def encode(self, value) -> bytes:  # replaced per instance by the C method
        """Row bytes of ``value``: a dict, an object with attributes, or a
        tuple in schema order; values as pyarrow ``to_pylist()`` gives them."""
        return self._plan.encode(value)

    def decode(self, data, offset: int = 0) -> dict:  # replaced per instance
        """The row in ``data`` (any buffer) as a dict."""
        return self._plan.decode(data, offset)

    def schema_bytes(self) -> bytes:
        return _schema.schema_bytes(self._plan.layout)

    def encode_with_hash(self, value) -> bytes:
        """8-byte little-endian schema hash + row, as pyfory's
        ``Encoder.encode`` and Java's ``BinaryRowEncoder.encode`` write."""
        return self._hash_prefix + self._plan.encode(value)

    def decode_with_hash(self, data) -> dict:
        mv = memoryview(data).cast("B")
        if len(mv) < 8:
            raise MalformedRowError(f"expected an 8-byte schema hash, got {len(mv)} bytes")
        got = _struct.unpack_from("<q", mv, 0)[0]
        if got != self.schema_hash:
            raise SchemaHashMismatchError(
                f"schema hash {got} does not match this schema's {self.schema_hash}")
        return self._plan.decode(mv, 8)

    def view(self, data, offset: int = 0) -> StructView:
        """A zero-copy ``StructView`` of the row in ``data``."""
        return self._plan.view(data, offset)

    def encode_batch(self, data) -> _pa.BinaryArray:
        """One row per row of ``data``, as a BinaryArray: a RecordBatch, Table
        or RecordBatchReader, or any object exporting ``__arrow_c_stream__`` or
        ``__arrow_c_array__`` (a polars DataFrame, a DuckDB result, ...)."""
        parts = [self._plan.encode_batch(cast_batch(b, self.schema))
                 for b in as_batches(data, "encode_batch()")]
        if not parts:
            parts = [self._plan.encode_batch(_pa.RecordBatch.from_pylist([], schema=self.schema))]
        return parts[0] if len(parts) == 1 else _pa.concat_arrays(parts)

    def decode_batch(self, binary_array) -> _pa.RecordBatch:
        """Rows (a binary/large_binary array) back into a RecordBatch."""
        if isinstance(binary_array, _pa.ChunkedArray):
            binary_array = binary_array.combine_chunks()
        return self._plan.decode_batch(binary_array, self.schema)


def RowView(schema: _pa.Schema, buffer, offset: int = 0, layout: str = "standard") -> StructView:
    """A zero-copy view of the row at ``offset`` in ``buffer`` (any
    buffer-protocol object). ``view[i]``, ``view["name"]``, ``view.name`` and
    typed getters (``get_int64(i)``, ``get_str(i)``, ...) read one field by
    slot arithmetic; nested structs, lists and maps come back as views."""
    return _plan(schema, layout).view(buffer, offset)
