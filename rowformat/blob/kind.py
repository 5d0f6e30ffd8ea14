"""What a ``.blob`` file holds: BLOB, ARRAY<BLOB> or MAP<K, BLOB> (the file
does not say; the table schema does), and the placeholder row marker."""
from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from ..arrow_types import to_arrow_type
from ..errors import SchemaError
from ..datatypes import ArrayType, DataType, MapType, parse_type
from .keys import KeyCodec, key_codec


class BlobPlaceholder:
    """The marker of a placeholder row (index value -2, no bytes): in Paimon's
    data-evolution updates, the row's blob did not change and its value lives
    in an older blob file. Use the singleton :data:`PLACEHOLDER`."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self):
        return "PLACEHOLDER"

    def __reduce__(self):
        return (BlobPlaceholder, ())


PLACEHOLDER = BlobPlaceholder()


@dataclass(frozen=True)
class BlobKind:
    kind: str                      # "BLOB", "ARRAY" or "MAP"
    type: DataType
    keys: KeyCodec | None          # MAP only

    @property
    def arrow_type(self) -> pa.DataType:
        return to_arrow_type(self.type)

    def __str__(self):
        return str(self.type.copy(nullable=True))


def resolve_blob_type(blob_type) -> BlobKind:
    """Accepts type text (``"MAP<STRING, BLOB>"``) or a DataType."""
    t = parse_type(blob_type) if isinstance(blob_type, str) else blob_type
    if not isinstance(t, DataType):
        raise SchemaError(f"blob_type must be type text or a DataType, got {type(blob_type).__name__}")
    if t.root == "BLOB":
        return BlobKind("BLOB", t, None)
    if isinstance(t, ArrayType) and t.element.root == "BLOB":
        return BlobKind("ARRAY", t, None)
    if isinstance(t, MapType):
        if t.value.root != "BLOB":
            raise SchemaError(f"Map-Blob value type must be BLOB, but is {t.value}")
        return BlobKind("MAP", t, key_codec(t.key))
    raise SchemaError(f"Unsupported Element Type for Blob File Format: {t}; expected BLOB, "
                      f"ARRAY<BLOB> or MAP<K, BLOB>")
