"""Option parsing shared by the ``paimon-row`` readers and writer: which
files or table a path names and where they are stored (a local path, or a
URL reached through :mod:`rowformat.storage` and the table's pypaimon
FileIO), the store's settings, option values, and the requested schema
checked against the stored one. Options arrive as Spark gives them: a
case-insensitive dict of strings (keys lower-cased).

Storage settings are Paimon catalog options (``s3.endpoint``,
``s3.access-key``, ...), from the first of: the read/write option
``paimon.<catalog option>``, the session's ``spark.hadoop.fs.s3a.*``
settings (captured by :func:`rowformat.spark.register`), and the ``AWS_*``
environment (of the process that called register(), then of the planning
worker: the driver's). They are resolved once, on the driver, and travel to
the tasks inside the pickled reader or writer: executors need neither the
driver's environment nor the session's settings."""
from __future__ import annotations

import difflib
import json
import os
from dataclasses import dataclass

from pyspark.sql.types import StructField, StructType

from ..io import fileio, stores, urls
from ..io import settings as st
from ..errors import DatasetError, SchemaError, StorageError, StorageOptionError
from .. import datatypes
from ..datatypes import RowType
from ..paimon import tables as tb
from . import FORMAT_NAME
from .spark_types import same_spark_type, to_spark_schema

DATA_SUFFIX = ".row"


def flag(options, key: str) -> bool:
    """The "true"/"false" option ``key`` (any case; absent: false), named as
    users spell it; any other value is a ValueError naming it."""
    value = options.get(key.lower())
    if value is None:
        return False
    text = str(value).strip().lower()
    if text not in ("true", "false"):
        raise ValueError(f"option {key} must be 'true' or 'false', got {value!r}")
    return text == "true"


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


# ---------------------------------------------------------------- option names

# The options of each kind of read and write, as the docs spell them (Spark
# hands the names over lower-cased: they are compared so), besides
# ``paimon.<key>``. The streaming ones carry Paimon's own names, which users
# of Paimon's Java connector know.
READ_OPTIONS = ("path", "paths", "snapshotId", "tag", "maxPartitionBytes", "bytesPerPartition",
                "openCostInBytes", "defaultParallelism", "minPartitions", "rowIds",
                "pushFilters", "paimonSchema", "rowNumbers", "rowsPerPartition", "batchRows",
                "selection", "deletionVector")
WRITE_OPTIONS = ("path", "partitionKeys", "primaryKeys", "bucket", "paimonSchema",
                 "partitionOverwriteMode", "blobReferenceRoots")
STREAM_READ_OPTIONS = ("path", "scan.mode", "scan.snapshot-id", "scan.timestamp-millis",
                       "read.stream.maxFilesPerTrigger", "read.stream.maxBytesPerTrigger",
                       "read.stream.maxRowsPerTrigger", "read.stream.minRowsPerTrigger",
                       "read.stream.maxTriggerDelayMs", "consumer-id", "consumer.ignore-progress",
                       "read.changelog", "streaming-read-overwrite",
                       "streaming-read-append-overwrite",
                       "maxPartitionBytes", "openCostInBytes", "defaultParallelism")
STREAM_WRITE_OPTIONS = ("path", "checkpointLocation", "commitUser", "queryName",
                        "partitionKeys", "primaryKeys", "bucket", "paimonSchema",
                        "blobReferenceRoots")
OPTIONS = {"read": READ_OPTIONS, "write": WRITE_OPTIONS, "stream read": STREAM_READ_OPTIONS,
           "stream write": STREAM_WRITE_OPTIONS}
PAIMON_PREFIX = "paimon."


def check_option_names(options, *kinds: str) -> None:
    """Raises DatasetError for an option that none of ``kinds`` ("read",
    "write", "stream read", "stream write") takes, naming it and the
    closest known name: a misspelt option would otherwise be ignored
    (``partitionKey`` made an unpartitioned table). Several kinds: where
    Spark does not say which it is (``schema()`` serves reads and stream
    reads)."""
    own = tuple(dict.fromkeys(n for k in kinds for n in OPTIONS[k]))
    known = {n.lower(): n for n in own}
    for key in options:
        name = key.lower()
        if name in known or name.startswith(PAIMON_PREFIX):
            continue
        others: dict[str, tuple[str, str]] = {}     # name -> (its spelling, the first kind)
        for k, names in OPTIONS.items():
            if k not in kinds:
                for n in names:
                    others.setdefault(n.lower(), (n, k))
        if name in others:
            hint = f": {others[name][0]!r} is a {others[name][1]} option"
        else:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"; did you mean {known[close[0]]!r}?" if close else ""
        kind = kinds[0]
        raise DatasetError(f"{FORMAT_NAME}: unknown {kind} option {key!r}{hint} (the {kind} "
                           f"options are {', '.join(own)} and paimon.<Paimon option>; names "
                           f"are case-insensitive)")


# ---------------------------------------------------------------- storage settings
# The Spark edge of rowformat's one form of store settings
# (rowformat.io.settings): ``paimon.<catalog option>`` options and the
# session's Hadoop S3A names are translated into it here, once.

# the session's Hadoop S3A settings -> the form's names
SESSION_S3A = {
    "spark.hadoop.fs.s3a.endpoint": st.ENDPOINT,
    "spark.hadoop.fs.s3a.access.key": st.ACCESS_KEY,
    "spark.hadoop.fs.s3a.secret.key": st.SECRET_KEY,
    "spark.hadoop.fs.s3a.session.token": st.SESSION_TOKEN,
    "spark.hadoop.fs.s3a.path.style.access": st.PATH_STYLE,
    "spark.hadoop.fs.s3a.endpoint.region": st.REGION,
}
_S3A_SSL = "spark.hadoop.fs.s3a.connection.ssl.enabled"


def is_storage_option(key: str) -> bool:
    """A catalog option naming a store's setting (``s3.endpoint``, ...): as
    ``paimon.<key>`` options they configure the connection and are never
    stored in a table's schema; every other ``paimon.<key>`` is a table
    option."""
    return st.is_store_key(key)


def _strings(layer: dict) -> dict[str, str]:
    return {k: str(v) for k, v in st.form(layer, "option").items()}


def environment_storage(environ=None) -> dict[str, str]:
    """The S3 settings of the standard ``AWS_*`` variables, in the form
    (:func:`rowformat.io.settings.environment`)."""
    return _strings(st.environment(environ))


def session_storage(spark) -> dict[str, str]:
    """The S3 settings of ``spark``'s session (``spark.hadoop.fs.s3a.*``,
    read through ``spark.conf``, so a Spark Connect session serves too), in
    the form. An endpoint without a scheme gets https://, or http:// with
    ``fs.s3a.connection.ssl.enabled=false``, as S3A reads it."""
    out = {}
    for key, name in SESSION_S3A.items():
        value = spark.conf.get(key, None)
        if value:
            out[name] = value.strip()
    endpoint = out.get(st.ENDPOINT)
    if endpoint and "://" not in endpoint:
        ssl = (spark.conf.get(_S3A_SSL, None) or "true").strip().lower()
        out[st.ENDPOINT] = ("http://" if ssl == "false" else "https://") + endpoint
    return out


def merge_storage(*layers: dict) -> dict[str, str]:
    """Storage settings of ``layers`` (any spelling: ``fs.s3a.access.key``
    is ``s3.access-key``), each over the ones before it
    (:func:`rowformat.io.settings.merge`)."""
    return st.merge(*(_strings(layer) for layer in layers))


def storage_settings(options, captured: dict | None = None) -> dict[str, str]:
    """The store's settings of a read or write: the ``paimon.<storage
    option>`` options over ``captured`` (what register() took from the
    session and the driver) over this process's ``AWS_*`` environment. A
    ``paimon.<name>`` under an S3 prefix that is no S3 setting is a
    StorageOptionError naming it."""
    given = {}
    for key, value in options.items():
        if key.startswith(PAIMON_PREFIX) and is_storage_option(key[len(PAIMON_PREFIX):]):
            given[key[len(PAIMON_PREFIX):]] = value
    return merge_storage(environment_storage(), captured or {}, given)


def scheme_of(path: str) -> str:
    return urls.scheme_of(path)


def for_path(path: str, settings: dict) -> dict[str, str]:
    """``settings`` that concern ``path``'s store: no S3 keys for a path
    that is not on S3 (nothing is sent to tasks that they do not need)."""
    if urls.is_s3(path):
        return dict(settings)
    return {k: v for k, v in settings.items() if not k.lower().startswith(st.S3_PREFIXES)}


def file_options(path: str, settings: dict) -> dict | None:
    """The ``storage_options`` a RowFileReader of the file ``path`` takes:
    the settings for an S3 URL, else None (pyarrow's or fsspec's defaults)."""
    return dict(settings) if urls.is_s3(path) and settings else None


# ---------------------------------------------------------------- paths

def normalize_path(p: str) -> str:
    """A local path made absolute (``file://`` and ``file:`` dropped), or a
    URL as given (no trailing slash): never a local path made of a URL."""
    if urls.is_url(p):
        local = urls.local_path_of(p)
        if local is None:
            return p.rstrip("/") if p.rstrip("/").partition("://")[2] else p
        p = local
    elif p.startswith("file:"):
        p = p[len("file:"):]
    return os.path.abspath(p)


def check_store(path: str, settings: dict) -> None:
    """Raises DatasetError, on the driver, when nothing can reach ``path``'s
    store: a scheme with no pyarrow or fsspec driver (or one that cannot
    start: HDFS without libhdfs), or settings the driver refuses."""
    if urls.local(path) is not None:
        return
    try:
        stores.resolve(path, storage_options=file_options(path, settings))
    except StorageOptionError:
        raise
    except (StorageError, OSError, ValueError, ImportError, TypeError) as e:
        raise DatasetError(f"{FORMAT_NAME}: cannot reach {urls.redact(path)}: no way to "
                           f"read or write {scheme_of(path)}:// paths here ({e})") from None


def path_kind(path: str, settings: dict) -> str | None:
    """"file", "dir" or None (nothing there) for a local path or a URL."""
    return fileio.kind(path, file_options(path, settings))


def list_names(directory: str, settings: dict) -> list[str]:
    """The names in ``directory`` (a local path or a URL; none if missing)."""
    return fileio.list_names(directory, file_options(directory, settings))


@dataclass
class Sources:
    """What a load() path names: a Paimon table, or bare ``.row`` files
    (a file, or a directory of them) whose schema comes from the user; and
    the settings (catalog options) of the store they are on."""
    table: str | None                # a Paimon table directory (a local path or a URL)
    files: list[str]                 # bare .row files (absolute paths or URLs)
    storage_options: dict[str, str]

    @classmethod
    def resolve(cls, options, captured: dict | None = None) -> "Sources":
        if "paths" in options:
            paths = json.loads(options["paths"])
        elif "path" in options:
            paths = [options["path"]]
        else:
            raise ValueError(f"{FORMAT_NAME}: give a path: load(path) or save(path)")
        check_option_names(options, "read", "stream read")
        paths = [normalize_path(p) for p in paths]
        settings = storage_settings(options, captured)
        if len({scheme_of(p) for p in paths}) == 1:
            settings = for_path(paths[0], settings)     # only what the tasks need
        for p in paths:
            check_store(p, settings)
        tables = [p for p in paths if tb.is_table(p, settings)]
        if tables:
            if len(paths) > 1:
                raise ValueError(f"{FORMAT_NAME}: a Paimon table is read alone, not with other "
                                 f"paths: {paths}")
            return cls(tables[0], [], settings)
        files = []
        for p in paths:
            kind = path_kind(p, settings)
            if kind == "dir":
                found = sorted(urls.join(p, n) for n in list_names(p, settings)
                               if n.endswith(DATA_SUFFIX) and not n.startswith("."))
                if not found:
                    raise DatasetError(f"{FORMAT_NAME}: {p} is neither a Paimon table (no "
                                       f"schema/ directory) nor a directory of .row files")
                files += found
            elif kind == "file":  # a file, or what the reader refuses naming it (a pipe)
                files.append(p)
            else:
                raise FileNotFoundError(f"{FORMAT_NAME}: {p} does not exist")
        return cls(None, files, settings)

    def describe(self, options) -> str:
        return self.table or options.get("path") or options.get("paths")


def parse_paimon_schema(text: str) -> RowType:
    try:
        return datatypes.schema(text)
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
