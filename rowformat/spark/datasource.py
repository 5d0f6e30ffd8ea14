"""The ``paimon-row`` Python Data Source (PySpark 4.1+).

    df = spark.read.format("paimon-row").load("/w/db.db/t")         # a Paimon table
    df.write.format("paimon-row").mode("append").save("/w/db.db/t")   # or "overwrite"

Where the methods run: ``schema()``, ``reader()``,
``partitions()``, ``writer()``, ``commit()`` and ``abort()`` in short-lived
Python workers of the driver; ``read()`` and ``write()`` in executor tasks.
The reader and writer objects are pickled between them, so they hold only
plain values (paths, schema text, option values, pickled splits).

A path holding ``schema/schema-N`` is a Paimon table, read and written
through pypaimon (:mod:`.table_source`); other paths are bare ``.row`` files
(:mod:`.file_source`). This module holds the source class: which of the two
a path is, and the schema.

Table read options: ``snapshotId`` or ``tag`` (time travel),
``maxPartitionBytes``, ``openCostInBytes``, ``defaultParallelism``
(partition sizing as Spark's file sources do it: :mod:`.sizing`),
``rowIds`` ("true" adds ``_ROW_ID``; row-tracking tables), ``pushFilters``
(Spark's filters pruned by and evaluated in the source, :mod:`.filters`: on
by default while the session's ``spark.sql.python.filterPushdown.enabled``
is, which register() turns on after Spark 4.3; "false" turns it off, "true" on whatever
the conf; load a new DataFrame per filtered query, see docs/spark.md).
Bare ``.row`` files (a file or a directory of them): ``paimonSchema`` or a
user ``.schema(...)``; the sizing options above or ``rowsPerPartition`` (a partition is
a run of whole blocks of one file), ``batchRows`` (default 65536),
``selection`` / ``deletionVector`` (a file holding a serialized
RoaringBitmap, or a JSON object {file name or path: bitmap file}),
``rowNumbers`` ("true" adds ``_file`` and ``_row``, the keys for
:func:`lookup`).

Write options (creating a table): ``partitionKeys``, ``primaryKeys``
(comma-separated), ``bucket``, ``paimon.<key>`` (any Paimon table option),
``paimonSchema`` (Paimon types to store, e.g. TIMESTAMP(3) or VECTOR). An
existing table keeps its schema: the DataFrame's columns must match it.
``partitionOverwriteMode`` ("static", the default, replaces the whole
table; "dynamic" only the partitions the DataFrame writes to, as Spark's
option of that name). ``blobReferenceRoots`` (comma-separated local
directories): BLOB values that are blob descriptor bytes pointing into them
are references, whose bytes the write copies into the table; without it (or
the table's own ``blob-as-descriptor`` or ``rowformat.blob-reference-roots``
option) such values are stored as the bytes they are, so a job storing
user-supplied bytes cannot make the executors copy their files
(docs/errors.md, "BLOB values that are descriptors"). Only modes ``append`` and ``overwrite`` exist (Spark 4.3 rejects the others
for Python sources). ``partitionBy(...)`` cannot work: PySpark 4.3 gives a
Python source no partitioning, and the JVM refuses the write before any code
here runs ("The provided partitioning or clustering columns do not match the
existing table's"); ``option("partitionKeys", ...)`` partitions the table.

A user schema (``.schema(...)``) that names a subset of the columns is the
projection: Spark 4.3 offers Python sources no column pruning.

Paths are local paths or URLs (``s3://``, ``s3a://``, ``gs://``,
``hdfs://``, ``oss://``, ``file://``, ...). The store's settings are the
options ``paimon.<catalog option>`` (``paimon.s3.endpoint``,
``paimon.s3.access-key``, ...), else the session's ``spark.hadoop.fs.s3a.*``
settings (as register() captured them), else the ``AWS_*`` environment;
they are never stored in a table's schema (:mod:`.options`).
"""
from __future__ import annotations

import os
import re
import sys
from types import FrameType
from typing import Optional

from pyspark.sql.datasource import DataSource
from pyspark.sql.types import StructType

from ..errors import DatasetError, SchemaError
from ..paimon import tables as tb
from . import FORMAT_NAME
from .file_source import FilteringRowReader, RowReader, row_number_fields
from .options import Sources, check_option_names, environment_storage, flag, merge_storage, \
    parse_paimon_schema, session_storage
from .sizing import PartitionSizing
from .table_source import (
    FilteringReader, TableReader, TableWriter, check_row_tracking, open_for_read,
    row_id_field, row_kind_field,
)
from .spark_types import to_spark_schema
from .worker import settle_worker


class RowDataSource(DataSource):
    """``spark.read.format("paimon-row")`` / ``df.write.format("paimon-row")``."""

    # Spark's partition sizing settings, as rowformat.spark.register(spark)
    # captured them (a Python source sees only its options): see .sizing
    session_conf: dict[str, str] = {}
    # the session's S3A settings over the registering driver's AWS_*
    # environment, as catalog options (see .options.storage_settings)
    storage_conf: dict[str, str] = {}
    # whether the registering session had spark.sql.python.filterPushdown.enabled
    pushdown: bool = False

    @classmethod
    def name(cls):
        return FORMAT_NAME

    def schema(self):                     # only when the user gave no .schema(...)
        settle_worker()
        sources = Sources.resolve(self.options, self.storage_conf)
        if sources.table is not None:
            table, _ = open_for_read(sources.table, self.options, sources.storage_options)
            spark_schema = to_spark_schema(tb.row_type(table))
            if flag(self.options, "rowIds"):
                check_row_tracking(table, sources.table)
                spark_schema = StructType(spark_schema.fields + [row_id_field()])
            # a stream read option only, as in Paimon's Spark connector: a table
            # option would give batch reads the column too
            if flag(self.options, "read.changelog"):
                spark_schema = StructType([row_kind_field()] + spark_schema.fields)
            return spark_schema
        explicit = self.options.get("paimonschema")
        if explicit is None:
            raise SchemaError(
                f"{FORMAT_NAME}: {sources.describe(self.options)} is a bare .row file (or a "
                f"directory of them), which stores no schema: pass .schema(...) or "
                f".option('paimonSchema', '<Paimon schema text>')")
        spark_schema = to_spark_schema(parse_paimon_schema(explicit))
        if flag(self.options, "rowNumbers"):
            spark_schema = StructType(spark_schema.fields + row_number_fields())
        return spark_schema

    def reader(self, schema: StructType):
        settle_worker()
        sources = Sources.resolve(self.options, self.storage_conf)
        check_option_names(self.options, "read")      # (no stream read option)
        sizing = PartitionSizing.from_options(self.options, self.session_conf)
        # Only a reader that has pushFilters gets filters, and Spark refuses
        # one while spark.sql.python.filterPushdown.enabled is off: by
        # default, one where Spark will push (the conf as it is now, not as
        # register() saw it); "true" always (Spark then says the conf is off).
        on = spark_pushes_filters(self.pushdown) if self.options.get("pushfilters") is None \
            else flag(self.options, "pushFilters")
        if sources.table is not None:
            cls = FilteringReader if on else TableReader
            return cls(self.options, schema, sources.table, sizing, sources.storage_options)
        return (FilteringRowReader if on else RowReader)(self.options, schema, sources, sizing)

    def writer(self, schema: StructType, overwrite: bool):
        settle_worker()
        return TableWriter(self.options, schema, overwrite, self.storage_conf)

    def streamReader(self, schema: StructType):   # spark.readStream: .stream_reader
        settle_worker()
        from .stream_reader import TableStreamReader
        sources = Sources.resolve(self.options, self.storage_conf)
        if sources.table is None:
            raise DatasetError(f"{FORMAT_NAME}: {sources.describe(self.options)} is not a "
                               f"Paimon table: only tables can be read as a stream")
        sizing = PartitionSizing.from_options(self.options, self.session_conf)
        return TableStreamReader(self.options, schema, sources.table, sizing,
                                 sources.storage_options)

    def streamWriter(self, schema: StructType, overwrite: bool):  # df.writeStream: .stream_writer
        settle_worker()
        from .stream_writer import TableStreamWriter
        return TableStreamWriter(self.options, schema, overwrite, self.storage_conf)


PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


def reuses_pushed_reads(version: str) -> bool:
    """Whether Spark ``version`` keeps a pushed-down Python read on the
    DataFrame's source (4.3 and older: a later query of the same DataFrame
    that pushes no filter reuses it, and returns too few rows; upstream
    moved it onto the scan after 4.3)."""
    numbers = [int(n) for n in re.findall(r"\d+", version)[:2]]
    return tuple(numbers + [0] * (2 - len(numbers))) <= (4, 3)


def spark_pushes_filters(default: bool) -> bool:
    """Whether the PySpark worker planning this read pushes filters: its
    pushdown planner (``data_source_pushdown_filters``), or its plain
    planner (``plan_data_source_read``) told that the session's
    ``spark.sql.python.filterPushdown.enabled`` is on. A Python source is not
    given the session's conf, and the planner's caller is the one place that
    knows it; ``default`` (the conf as register() saw it) when neither
    planner is the caller (a reader made outside Spark's planning)."""
    frame: Optional[FrameType] = sys._getframe(1)
    while frame is not None:
        name = os.path.basename(frame.f_code.co_filename)
        if name == "data_source_pushdown_filters.py":
            return True
        if name == "plan_data_source_read.py" and "enable_pushdown" in frame.f_locals:
            return bool(frame.f_locals["enable_pushdown"])
        frame = frame.f_back
    return default


def configured(spark) -> type[RowDataSource]:
    """RowDataSource carrying ``spark``'s partition sizing settings and its
    storage settings (the session's ``spark.hadoop.fs.s3a.*`` over this
    process's ``AWS_*`` variables): a class made here, which cloudpickle
    sends to the workers by value."""
    from .sizing import session_conf
    return type("RowDataSource", (RowDataSource,), {
        "session_conf": session_conf(spark),
        "storage_conf": merge_storage(environment_storage(), session_storage(spark)),
        "pushdown": str(spark.conf.get(PUSHDOWN_CONF, "false")).strip().lower() == "true",
        "__module__": __name__, "__doc__": RowDataSource.__doc__})
