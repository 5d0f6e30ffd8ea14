"""The file formats ``rowformat convert`` reads and writes: their names,
the file name extensions that imply them, and the Paimon schema that convert
keeps in the metadata of the Parquet and Arrow files it writes (key
``rowformat.schema``), so that converting such a file back needs no
``--schema``.
"""
from __future__ import annotations

import os

from .exit_codes import UsageError

FORMATS = ("row", "parquet", "arrow", "arrows", "csv", "jsonl")
_EXTENSIONS = {
    ".row": "row", ".parquet": "parquet", ".pq": "parquet",
    ".arrow": "arrow", ".feather": "arrow", ".ipc": "arrow", ".arrows": "arrows",
    ".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl",
}

SCHEMA_METADATA_KEY = b"rowformat.schema"   # Paimon DDL kept in Parquet / Arrow metadata


def format_of(path: str, given: str | None) -> str:
    """``given`` (--from/--to), else the format ``path``'s extension names."""
    if given:
        return given
    from ..io import urls
    name = path.rsplit("/", 1)[-1] if urls.is_url(path) else os.path.basename(path)
    for ext in sorted(_EXTENSIONS, key=len, reverse=True):
        if name.lower().endswith(ext):
            return _EXTENSIONS[ext]
    raise UsageError(f"{path}: cannot tell the format from the name; give --from/--to "
                     f"({', '.join(FORMATS)})")


def stored_schema(arrow_schema, override):
    """The Paimon schema of a non-.row input: ``override`` (``--schema``),
    else the schema text convert stored in the metadata, else the mapping of
    the Arrow types."""
    from ..arrow_types import as_row_type, from_arrow_schema
    if override is not None:
        return override
    meta = arrow_schema.metadata or {}
    if SCHEMA_METADATA_KEY in meta:
        return as_row_type(meta[SCHEMA_METADATA_KEY].decode("utf-8"))
    return from_arrow_schema(arrow_schema.remove_metadata())


def schema_metadata(schema) -> dict[bytes, bytes]:
    """The Arrow schema metadata that stores the RowType ``schema``."""
    return {SCHEMA_METADATA_KEY: str(schema).encode("utf-8")}
