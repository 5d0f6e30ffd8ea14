"""Opening, reading and writing a pypaimon table: the primitives
:mod:`rowformat.paimon.tables` offers (and re-exports) and the maintenance
modules under it use (``_compact``), which may not import ``tables`` itself.
Importing it does not import pypaimon."""
from __future__ import annotations

import contextlib
from typing import Any, Iterator

import pyarrow as pa

from ..io import settings, urls
from ..arrow_cast import cast_batch
from ..errors import PaimonIntegrationError, TableMetadataError
from ..datatypes import RowType
from . import _field_types
from ._metadata import reading


SCHEMA_DIR = "schema"


def acceleration():
    """A context manager under which pypaimon reads and writes ``.row`` and
    ``.blob`` files with rowformat (``rowformat.paimon.accelerated()``); when
    this pypaimon cannot be accelerated, a no-op after one
    ``AccelerationWarning`` per process. Keep pypaimon's work inside the
    block: its lazy readers build their file readers when iterated."""
    from . import _patches, accelerated, warn_once
    try:
        _patches.plan()         # made once per process; checked by identity after that
    except PaimonIntegrationError as e:
        warn_once(e)
        return contextlib.nullcontext()
    return accelerated()


def catalog_options(path: str, storage_options: dict | None = None) -> dict:
    """The catalog options pypaimon's FileIO opens the table at ``path`` with:
    ``storage_options`` in rowformat's one form of store settings
    (``s3.endpoint``, ``s3.access-key``, ...: :mod:`rowformat.io.settings`;
    an unknown S3 name, or one without a catalog name, is a
    StorageOptionError), for an S3 URL over the standard ``AWS_*``
    environment's (which pypaimon does not read itself)."""
    opts = settings.for_catalog(storage_options)
    if urls.is_s3(path):
        opts = settings.with_environment(opts)
    return {k: str(v) for k, v in opts.items()}


def file_io(path: str, storage_options: dict | None = None) -> Any:
    """pypaimon's FileIO for the table at ``path``, opened with
    :func:`catalog_options`; ValueError or ImportError when pypaimon has no
    file system for its scheme."""
    from pypaimon.common.file_io import FileIO
    from pypaimon.common.options.options import Options
    return FileIO.get(path, Options(catalog_options(path, storage_options)))


def _schema_path(table_path: str, schema_id: int) -> str:
    return urls.join(table_path, SCHEMA_DIR, f"schema-{schema_id}")


def storage_options_of(table) -> dict:
    """The store's settings the table's FileIO was opened with (in the one form)."""
    from ._reader import store_settings
    return store_settings(table.file_io)


def arrow_schema(table) -> pa.Schema:
    """The Arrow schema pypaimon reads and writes the table's rows with."""
    from pypaimon.schema.data_types import PyarrowFieldParser
    return PyarrowFieldParser.from_paimon_schema(table.fields)


ROW_KIND = "_row_kind"      # pypaimon's column of each row's kind: +I, -U, +U, -D


def read_batches(table, splits: list[Any], columns: list[str], row_kinds: bool = False
                 ) -> Iterator[pa.RecordBatch]:
    """The rows of ``splits`` (merged, deletion vectors applied, as pypaimon
    reads them), ``columns`` only; ``row_kinds``: led by pypaimon's
    :data:`ROW_KIND` column (a stream's splits keep every change, retractions
    too)."""
    if not splits:
        return
    if row_kinds:
        rb = table.new_stream_read_builder().with_projection(list(columns)) \
            .with_include_row_kind(True)
    else:
        rb = table.new_read_builder().with_projection(list(columns))
    # pypaimon builds a split's readers when the iteration reaches it: each
    # step runs inside its own accelerated() block, never across a yield
    with acceleration():
        reader = rb.new_read().to_arrow_batch_reader(splits)
    batches = iter(reader)
    try:
        while True:
            with acceleration():
                batch = next(batches, None)
            if batch is None:
                return
            if batch.num_rows:
                yield batch
    finally:
        close = getattr(reader, "close", None)
        if close is not None:
            close()


def write_builder(table, overwrite: bool):
    wb = table.new_batch_write_builder()
    return wb.overwrite() if overwrite else wb


def conform_batch(batch: pa.RecordBatch, target: pa.Schema) -> pa.RecordBatch:
    """``batch`` as the table's Arrow schema ``target`` (columns by name, safe casts)."""
    return cast_batch(batch, target)


def local_path(path: str, file_io=None) -> str:
    """A data file's path as a local path: as ``file_io`` (the table's)
    maps it when it is a ``LocalFileIO`` (``file://localhost/t/x.row``,
    ``file:///t/x.row``, percent-escapes: ``/t/x.row``, as pypaimon reads
    it), else without a ``file:`` scheme."""
    if file_io is not None:
        from ._reader import local_path as io_local_path
        mapped = io_local_path(file_io, path)
        if mapped is not None:
            return mapped
    return path[len("file:"):] if path.startswith("file:") else path


def reader_options(table) -> dict | None:
    """The ``storage_options`` a RowFileReader opens the table's data files
    with: None for a local table."""
    if urls.local(str(table.table_path)) is not None:
        return None
    return storage_options_of(table)


def file_fields(table, meta) -> list[Any]:
    """The pypaimon DataFields a ``.row`` data file holds, as pypaimon's
    split reads read it: its ``write_cols`` of its schema; for a
    primary-key table ``_KEY_<k>``, ``_SEQUENCE_NUMBER``, ``_VALUE_KIND``
    then the columns; else the columns of its schema."""
    from pypaimon.read.split_read import KEY_FIELD_ID_START, KEY_PREFIX
    from pypaimon.schema.data_types import DataField
    from pypaimon.table.special_fields import SpecialFields
    with acceleration(), reading(_schema_path(str(table.table_path), meta.schema_id), "schema"):
        file_schema = table.schema_manager.get_schema(meta.schema_id)
    if file_schema is None:
        raise TableMetadataError(f"{meta.file_name}: written with schema {meta.schema_id}, but "
                                 f"the table has no {_schema_path(str(table.table_path), meta.schema_id)}")
    if meta.write_cols:
        by_name = {f.name: f for f in file_schema.fields}
        return [by_name[n] for n in meta.write_cols if n in by_name]
    if table.is_primary_key_table:
        keys = [DataField(f.id + KEY_FIELD_ID_START, f"{KEY_PREFIX}{f.name}", f.type)
                for f in table.trimmed_primary_keys_fields]
        return keys + [SpecialFields.SEQUENCE_NUMBER, SpecialFields.VALUE_KIND] \
            + list(file_schema.fields)
    data_file_fields = getattr(file_schema, "data_file_fields", None)   # pypaimon 2.1.0
    return list(file_schema.fields) if data_file_fields is None \
        else list(data_file_fields(None))


def file_schema(table, meta) -> RowType:
    """The rowformat schema of a ``.row`` data file: its :func:`file_fields`."""
    return _field_types.row_type(file_fields(table, meta))
