"""The ``--schema`` argument. A ``.row`` file stores no schema, so every
command that reads rows takes the writer's: schema text (DDL), a file of
schema text, a schema JSON file (``rowformat.schema_json``, ``{"fields":
[...]}`` or a bare field list), a Paimon table schema file
(``schema/schema-N``) or a Paimon table directory (its latest schema).
:func:`load_schema` turns any of them into a RowType; a bad one is a
:class:`UsageError`.
"""
from __future__ import annotations

import argparse
import json
import os
import re
from typing import Any

from .exit_codes import UsageError


def add_schema_argument(p: argparse.ArgumentParser, required_for: str = "") -> None:
    p.add_argument("-s", "--schema", metavar="SCHEMA",
                   help="the .row file's schema: DDL text ('id BIGINT NOT NULL, name STRING'), "
                        "a schema JSON file, a Paimon table schema file (schema/schema-N) or "
                        "a Paimon table directory (its latest schema)" + required_for)


def _read_text(path: str) -> str:
    from ..io import fileio
    return fileio.read_bytes(path).decode("utf-8")


def _latest_schema_file(directory: str) -> str:
    """A Paimon table directory (or its ``schema/`` directory): the schema
    file with the highest id, ``schema/schema-N``."""
    sub = os.path.join(directory, "schema")
    if os.path.isdir(sub):
        directory = sub
    from ..io import fileio
    ids = [int(m.group(1)) for name in fileio.list_names(directory)
           if (m := re.fullmatch(r"schema-(\d+)", name))]
    if not ids:
        raise UsageError(f"--schema {directory}: no Paimon schema file (schema-N) in the directory")
    return os.path.join(directory, f"schema-{max(ids)}")


def _looks_like_a_path(spec: str) -> bool:
    """Schema text has no slash outside a backtick-quoted name, and does not
    end in .json: such a --schema that names nothing is a missing file."""
    return ("/" in spec and "`" not in spec) or spec.endswith(".json")


def load_schema(spec: str):
    """The RowType ``--schema`` names: a Paimon table directory, a file of
    schema JSON (a Paimon table schema file, ``{"fields": [...]}`` or a field
    list) or of schema text, or the schema text itself."""
    from .. import schema_json
    from ..io import fileio, urls
    from ..errors import SchemaError
    from ..arrow_types import as_row_type
    source = None
    if urls.is_url(spec) or os.path.isfile(spec):
        source = spec
    elif os.path.isdir(spec):
        source = _latest_schema_file(spec)
    elif _looks_like_a_path(spec):
        raise UsageError(f"--schema {spec}: no such file or directory")
    try:
        if source is None:
            return as_row_type(spec)
        try:
            text = _read_text(source)
        except (OSError, UnicodeDecodeError) as e:
            raise UsageError(f"--schema {source}: cannot read it: {e}") from None
        if text.lstrip()[:1] in ("{", "["):
            try:
                return schema_json.loads(text)
            except json.JSONDecodeError as e:
                raise UsageError(f"--schema {source}: invalid JSON: {e}") from None
        return as_row_type(text.strip())
    except SchemaError as e:
        where = f" (from {source})" if source else ""
        raise UsageError(f"invalid --schema{where}: {e}") from None


def require_schema(args) -> Any:
    """The schema of ``args.schema``; a :class:`UsageError` when none was given."""
    if os.path.isdir(args.file):
        from ..paimon.tables import is_table
        what = ("a Paimon table directory (one holding schema/schema-N): `take` reads .row "
                "files by row number; use head or cat for a table"
                if is_table(args.file) else
                "a directory, not a .row file nor a Paimon table directory (no schema/schema-N)")
        raise UsageError(f"{args.file} is {what}")
    if not getattr(args, "schema", None):
        raise UsageError(
            f"{args.file}: a .row file stores no schema: give the writer's schema with "
            f"--schema 'DDL', --schema FILE.json, or --schema PAIMON_TABLE_DIR")
    return load_schema(args.schema)
