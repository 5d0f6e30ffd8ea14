"""Option parsing shared by the ``paimon-row`` readers and writer: which
files or table a path names, option values, and the requested schema
checked against the stored one. Options arrive as Spark gives them: a
case-insensitive dict of strings (keys lower-cased)."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass

from pyspark.sql.types import StructField, StructType

from ..errors import DatasetError, SchemaError
from ..types import RowType, schema as parse_schema
from ..paimon import tables as tb
from . import FORMAT_NAME
from .spark_types import same_spark_type, to_spark_schema

DATA_SUFFIX = ".row"


def flag(options, key: str) -> bool:
    return options.get(key, "false").strip().lower() == "true"


def int_option(options, key: str, default: int) -> int:
    value = options.get(key)
    if value is None:
        return default
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError(f"option {key!r} must be a positive integer, got {value!r}")
    return n


def key_list(options, key: str) -> list[str]:
    value = options.get(key)
    return [k.strip() for k in value.split(",") if k.strip()] if value else []


@dataclass
class Sources:
    """What a load() path names: a Paimon table, or bare ``.row`` files
    (a file, or a directory of them) whose schema comes from the user."""
    table: str | None                # a Paimon table directory
    files: list[str]                 # bare .row files (absolute paths)

    @classmethod
    def resolve(cls, options) -> "Sources":
        if "paths" in options:
            paths = json.loads(options["paths"])
        elif "path" in options:
            paths = [options["path"]]
        else:
            raise ValueError(f"{FORMAT_NAME}: give a path: load(path) or save(path)")
        paths = [os.path.abspath(strip_file_scheme(p)) for p in paths]
        tables = [p for p in paths if tb.is_table(p)]
        if tables:
            if len(paths) > 1:
                raise ValueError(f"{FORMAT_NAME}: a Paimon table is read alone, not with other "
                                 f"paths: {paths}")
            return cls(tables[0], [])
        files = []
        for p in paths:
            if os.path.isdir(p):
                found = sorted(os.path.join(p, n) for n in os.listdir(p)
                               if n.endswith(DATA_SUFFIX) and not n.startswith("."))
                if not found:
                    raise DatasetError(f"{FORMAT_NAME}: {p} is neither a Paimon table (no "
                                       f"schema/ directory) nor a directory of .row files")
                files += found
            elif os.path.exists(p):     # a file, or what the reader refuses naming it (a pipe)
                files.append(p)
            else:
                raise FileNotFoundError(f"{FORMAT_NAME}: {p} does not exist")
        return cls(None, files)

    def describe(self, options) -> str:
        return self.table or options.get("path") or options.get("paths")


def strip_file_scheme(p: str) -> str:
    return p[len("file:"):] if p.startswith("file:") else p


def parse_paimon_schema(text: str) -> RowType:
    try:
        return parse_schema(text)
    except SchemaError as e:
        raise SchemaError(f"option paimonSchema: {e}") from None


def check_columns(wanted: StructType, have: RowType, what: str, subset: bool) -> None:
    """Raises SchemaError unless every column of ``wanted`` exists in
    ``have`` with the same Spark type (and, unless ``subset``, every column
    of ``have`` is wanted)."""
    have_spark = to_spark_schema(have)
    problems = []
    for f in wanted.fields:
        if f.name not in have_spark.names:
            problems.append(f"no column {f.name!r}")
        elif not same_spark_type(f.dataType, have_spark[f.name].dataType):
            problems.append(f"column {f.name!r} is {have_spark[f.name].dataType.simpleString()} "
                            f"({have[f.name].type}), not {f.dataType.simpleString()}")
    if not subset:
        problems += [f"column {n!r} is missing" for n in have_spark.names if n not in wanted.names]
    if problems:
        raise SchemaError(f"{what}: {'; '.join(problems)}. The stored schema is [{have}]")


def requested_fields(schema: StructType, have: RowType, options, what: str,
                      extra: tuple[str, ...]) -> list[StructField]:
    """The data columns of the requested schema (``extra`` columns aside),
    checked against the stored schema ``have``."""
    data_fields = [f for f in schema.fields if f.name not in extra]
    check_columns(StructType(data_fields), have,
                  f"{FORMAT_NAME}: the requested schema does not fit {what}", subset=True)
    for f in data_fields:
        if not f.nullable and have[f.name].type.nullable:
            raise SchemaError(f"{FORMAT_NAME}: column {f.name!r} is nullable in the stored "
                              f"schema [{have}] but the requested schema says NOT NULL")
    return data_fields
