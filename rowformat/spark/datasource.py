"""The ``paimon-row`` Python Data Source (PySpark 4.1+).

    df = spark.read.format("paimon-row").load("/w/db.db/t")         # a Paimon table
    df.write.format("paimon-row").mode("append").save("/w/db.db/t")   # or "overwrite"

Where the methods run: ``schema()``, ``reader()``,
``partitions()``, ``writer()``, ``commit()`` and ``abort()`` in short-lived
Python workers of the driver; ``read()`` and ``write()`` in executor tasks.
The reader and writer objects are pickled between them, so they hold only
plain values (paths, schema text, option values, pickled splits).

A path holding ``schema/schema-N`` is a Paimon table, read and written
through pypaimon (:mod:`.tables`): the driver plans splits, a Spark
partition is a group of splits, tasks read them; write tasks send pickled
commit messages that the driver commits in one snapshot (or aborts).

Table read options: ``snapshotId`` or ``tag`` (time travel),
``bytesPerPartition`` (default 128 MiB of data files per Spark partition),
``minPartitions`` (default: the driver's CPU count; smaller partitions, down
to 32 MiB, until there are that many),
``rowIds`` ("true" adds ``_ROW_ID``; row-tracking tables), ``pushFilters``
("true": partition pruning, with ``spark.sql.python.filterPushdown.enabled``;
load a new DataFrame per filtered query, see the README's Spark section).
Bare ``.row`` files (a file or a directory of them): ``paimonSchema`` or a
user ``.schema(...)``; ``rowsPerPartition`` (default 1000000: a partition is
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
"""
from __future__ import annotations

import gc
import json
import os
import pickle
from dataclasses import dataclass
from typing import Iterator

import numpy as np
import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource, DataSourceArrowWriter, DataSourceReader, InputPartition, WriterCommitMessage,
)
from pyspark.sql.types import LongType, StringType, StructField, StructType

from .. import RowFileReader
from ..errors import DatasetError, SchemaError
from ..paimon._blob_writer import ROOTS_OPTION
from ..types import DataField, RowType, schema as parse_schema
from ..paimon import tables as tb
from .types import (
    ArrowConverter, from_spark_schema, same_spark_type, spark_arrow_schema, to_spark_schema,
)

FORMAT_NAME = "paimon-row"
FILE_COLUMN, ROW_COLUMN = "_file", "_row"
DEFAULT_ROWS_PER_PARTITION = 1_000_000
DEFAULT_BATCH_ROWS = 65536
DEFAULT_BYTES_PER_PARTITION = 128 << 20
DATA_SUFFIX = ".row"


def _flag(options, key: str) -> bool:
    return options.get(key, "false").strip().lower() == "true"


def _int_option(options, key: str, default: int) -> int:
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


def load_bitmap(path: str):
    """A pyroaring BitMap from a file holding a serialized RoaringBitmap
    (the portable format Java's RoaringBitmap and pyroaring share)."""
    from pyroaring import BitMap
    try:
        with open(path, "rb") as f:
            return BitMap.deserialize(f.read())
    except OSError as e:
        raise DatasetError(f"cannot read the bitmap file {path}: {e}") from None
    except Exception as e:  # pyroaring raises ValueError/RuntimeError on bad bytes
        raise DatasetError(f"{path} is not a serialized RoaringBitmap: {e}") from None


# ---------------------------------------------------------------- the worker

_settled = False


def _settle_worker() -> None:
    """Once per reused PySpark worker: imports the modules a table read or
    write needs, then moves every object alive (the modules' functions,
    classes and constants: ~125,000 with pypaimon loaded) out of the cyclic
    garbage collector's reach. PySpark's daemon runs ``gc.collect()`` after
    each request a reused worker serves (every task, every planning call),
    and a full collection walks every tracked object: ~50 ms a request here,
    0.2-0.25 s of CPU per scan, against ~2 ms once frozen. Module contents
    live as long as the process, so freezing them frees nothing less; it is
    done first thing in a request, before the request's own objects exist."""
    global _settled
    if _settled or not os.environ.get("SPARK_REUSE_WORKER"):
        return      # (without reuse each request has a fresh process, and no collect)
    _settled = True
    try:
        import pypaimon  # noqa: F401
    except ImportError:
        pass        # bare .row files need no pypaimon
    else:
        with tb.acceleration():     # imports the pypaimon modules it patches
            pass
    gc.collect()
    gc.freeze()


# ---------------------------------------------------------------- sources

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
        paths = [os.path.abspath(_strip_file_scheme(p)) for p in paths]
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


def _strip_file_scheme(p: str) -> str:
    return p[len("file:"):] if p.startswith("file:") else p


def _parse_paimon_schema(text: str) -> RowType:
    try:
        return parse_schema(text)
    except SchemaError as e:
        raise SchemaError(f"option paimonSchema: {e}") from None


def _row_number_fields() -> list[StructField]:
    return [StructField(FILE_COLUMN, StringType(), False), StructField(ROW_COLUMN, LongType(), False)]


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


# ---------------------------------------------------------------- data source

class RowDataSource(DataSource):
    """``spark.read.format("paimon-row")`` / ``df.write.format("paimon-row")``."""

    @classmethod
    def name(cls):
        return FORMAT_NAME

    def schema(self):                     # only when the user gave no .schema(...)
        _settle_worker()
        sources = Sources.resolve(self.options)
        if sources.table is not None:
            table, _ = _open_for_read(sources.table, self.options)
            spark_schema = to_spark_schema(tb.row_type(table))
            if _flag(self.options, "rowids"):
                _check_row_tracking(table, sources.table)
                spark_schema = StructType(spark_schema.fields + [_row_id_field()])
            return spark_schema
        explicit = self.options.get("paimonschema")
        if explicit is None:
            raise SchemaError(
                f"{FORMAT_NAME}: {sources.describe(self.options)} is a bare .row file (or a "
                f"directory of them), which stores no schema: pass .schema(...) or "
                f".option('paimonSchema', '<Paimon schema text>')")
        spark_schema = to_spark_schema(_parse_paimon_schema(explicit))
        if _flag(self.options, "rownumbers"):
            spark_schema = StructType(spark_schema.fields + _row_number_fields())
        return spark_schema

    def reader(self, schema: StructType):
        _settle_worker()
        sources = Sources.resolve(self.options)
        if sources.table is not None:
            # Only a reader that has pushFilters gets filters, and Spark refuses
            # one while spark.sql.python.filterPushdown.enabled is off: opt-in.
            cls = PartitionPruningReader if _flag(self.options, "pushfilters") else TableReader
            return cls(self.options, schema, sources.table)
        return RowReader(self.options, schema, sources)

    def writer(self, schema: StructType, overwrite: bool):
        _settle_worker()
        return TableWriter(self.options, schema, overwrite)


def _row_id_field() -> StructField:
    return StructField(tb.ROW_ID, LongType(), False)


def _check_row_tracking(table, path: str) -> None:
    if not table.options.row_tracking_enabled():
        raise SchemaError(f"{FORMAT_NAME}: {path} has no {tb.ROW_ID} column: the table was "
                          f"not created with 'row-tracking.enabled' = 'true'")


def _open_for_read(path: str, options):
    snapshot = options.get("snapshotid")
    if snapshot is not None:
        try:
            snapshot = int(snapshot)
        except ValueError:
            raise ValueError(f"option snapshotId must be an integer, got {snapshot!r}") from None
    return tb.pin(path, snapshot_id=snapshot, tag=options.get("tag"))


def _requested_fields(schema: StructType, have: RowType, options, what: str,
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


# ---------------------------------------------------------------- read a Paimon table

@dataclass
class SplitGroup(InputPartition):
    """pypaimon splits read by one Spark task (pickled: plain bytes)."""
    splits: bytes
    count: int


class TableReader(DataSourceReader):
    """A Paimon table: pypaimon plans on the driver, tasks read splits."""

    def __init__(self, options, schema: StructType, path: str):
        table, pinned = _open_for_read(path, options)
        self.path = path
        with_row_ids = tb.ROW_ID in schema.names
        if with_row_ids:
            _check_row_tracking(table, path)
        _requested_fields(schema, tb.row_type(table), options, path,
                          (tb.ROW_ID,) if with_row_ids else ())
        self.columns = list(schema.names)
        # The snapshot planned now, so every task reads the same one.
        self.snapshot_id = pinned
        self.tag = options.get("tag")
        self.spark_schema_json = schema.json()
        self.partition_types = {k: tb.row_type(table)[k].type.root for k in table.partition_keys}
        self.partition_leaves: list[tuple[str, str, object]] = []
        self.bytes_per_partition = _int_option(options, "bytesperpartition",
                                               DEFAULT_BYTES_PER_PARTITION)
        # Spark's file sources spread a scan over its default parallelism,
        # which a Python source cannot see: local[*] has the driver's cores.
        self.min_partitions = _int_option(options, "minpartitions", os.cpu_count() or 1)

    def _table(self):
        return tb.open_table(self.path, snapshot_id=self.snapshot_id, tag=self.tag)

    def partitions(self):                 # driver side, once per query
        _settle_worker()
        if self.snapshot_id is None and self.tag is None:
            return []                     # a table with no snapshot yet: no rows
        splits = tb.plan_splits(self._table(), self.columns, self.partition_leaves)
        return [SplitGroup(pickle.dumps(g), len(g)) for g in
                tb.group_splits(splits, self.bytes_per_partition, self.min_partitions)]

    def read(self, partition) -> Iterator[pa.RecordBatch]:   # executor side
        if not isinstance(partition, SplitGroup):
            return
        _settle_worker()
        spark_schema = StructType.fromJson(json.loads(self.spark_schema_json))
        target = spark_arrow_schema(spark_schema)
        splits = pickle.loads(partition.splits)
        for batch in tb.read_batches(self._table(), splits, self.columns):
            yield _to_spark_batch(batch, target)


# Python types of the partition values pypaimon compares (its partition rows
# hold plain Python values) for which Python's order is Spark's: integers,
# booleans and strings (code point order is UTF-8 byte order).
_PRUNABLE = {"TINYINT": int, "SMALLINT": int, "INT": int, "BIGINT": int, "BOOLEAN": bool,
             "VARCHAR": str}


class PartitionPruningReader(TableReader):
    """``option("pushFilters", "true")``: comparisons of a partition key with
    a literal prune the planned partitions. Spark still applies every filter
    (all are returned), so pruning only has to keep every partition that
    may match, never to be exact."""

    def pushFilters(self, filters):      # driver side, before partitions()
        from pyspark.sql.datasource import (
            EqualNullSafe, EqualTo, GreaterThan, GreaterThanOrEqual, In, LessThan,
            LessThanOrEqual,
        )
        ops = {EqualTo: "=", EqualNullSafe: "=", GreaterThan: ">", GreaterThanOrEqual: ">=",
               LessThan: "<", LessThanOrEqual: "<=", In: "in"}
        self.partition_leaves = []
        for f in filters:
            op = ops.get(type(f))
            column = f.attribute[0] if op and len(f.attribute) == 1 else None
            want = _PRUNABLE.get(self.partition_types.get(column))
            values = f.value if op == "in" else (f.value,)
            # type() and not isinstance(): True is an int, and never an INT's value
            if want is not None and values and all(type(v) is want for v in values):
                self.partition_leaves.append((op, column, list(values) if op == "in" else f.value))
        return filters


def _to_spark_batch(batch: pa.RecordBatch, target: pa.Schema) -> pa.RecordBatch:
    arrays = []
    for field in target:
        arr = batch.column(field.name)
        if not arr.type.equals(field.type):
            arr = arr.cast(field.type, safe=False)   # nanoseconds truncate to Spark's micros
        arrays.append(arr)
    return pa.RecordBatch.from_arrays(arrays, schema=target)


# ---------------------------------------------------------------- read bare .row files

@dataclass
class BlockRange(InputPartition):
    """Rows [start, stop) of one file: whole blocks, picklable plain fields."""
    path: str
    start: int
    stop: int
    selection: str | None
    deletion_vector: str | None


class RowReader(DataSourceReader):
    """Bare ``.row`` files: the schema comes from the user."""

    def __init__(self, options, schema: StructType, sources: Sources):
        self.with_row_numbers = _flag(options, "rownumbers")
        explicit = options.get("paimonschema")
        extra = (FILE_COLUMN, ROW_COLUMN) if self.with_row_numbers else ()
        if explicit is not None:
            file_schema = _parse_paimon_schema(explicit)
        else:
            file_schema = from_spark_schema(StructType([f for f in schema.fields
                                                         if f.name not in extra]))
        data_fields = _requested_fields(schema, file_schema, options,
                                        sources.describe(options), extra)
        self.spark_schema_json = schema.json()
        self.file_schema = str(file_schema)
        self.columns = [f.name for f in data_fields]
        self.files = sources.files
        self.rows_per_partition = _int_option(options, "rowsperpartition",
                                              DEFAULT_ROWS_PER_PARTITION)
        self.batch_rows = _int_option(options, "batchrows", DEFAULT_BATCH_ROWS)
        self.selections = self._bitmap_option(options, "selection")
        self.deletion_vectors = self._bitmap_option(options, "deletionvector")

    def _bitmap_option(self, options, key: str) -> dict[str, str]:
        """{data file path: bitmap file path} from a path (one file) or a
        JSON object keyed by file name or path."""
        value = options.get(key)
        if value is None:
            return {}
        if value.lstrip().startswith("{"):
            out = {}
            for name, bitmap in json.loads(value).items():
                matches = [f for f in self.files if f == os.path.abspath(name)
                           or os.path.basename(f) == name]
                if not matches:
                    raise DatasetError(f"option {key}: {name!r} is not one of the files read")
                out[matches[0]] = os.path.abspath(bitmap)
            return out
        if len(self.files) != 1:
            raise ValueError(f"option {key}: a single bitmap path needs a single file, but "
                             f"{len(self.files)} are read; use a JSON object per file")
        return {self.files[0]: os.path.abspath(value)}

    def partitions(self):                 # driver side, once per query
        _settle_worker()
        schema = parse_schema(self.file_schema)
        parts = []
        for path in self.files:
            selection = self.selections.get(path)
            vector = self.deletion_vectors.get(path)
            sel_bm = load_bitmap(selection) if selection else None
            dv_bm = load_bitmap(vector) if vector else None
            with RowFileReader(path, schema, cache_bytes=0) as r:
                starts = r.block_index.row_starts.tolist() + [r.num_rows]
            first = 0
            for b in range(1, len(starts)):
                if starts[b] - starts[first] < self.rows_per_partition and b < len(starts) - 1:
                    continue
                lo, hi = starts[first], starts[b]
                first = b
                if sel_bm is not None and not sel_bm.range_cardinality(lo, hi):
                    continue              # nothing selected: the blocks are never read
                if dv_bm is not None and dv_bm.range_cardinality(lo, hi) == hi - lo:
                    continue
                parts.append(BlockRange(path, lo, hi, selection, vector))
        return parts                      # [] -> Spark runs one InputPartition(None)

    def read(self, partition) -> Iterator[pa.RecordBatch]:   # executor side
        if not isinstance(partition, BlockRange):
            return
        _settle_worker()
        from pyroaring import BitMap
        spark_schema = StructType.fromJson(json.loads(self.spark_schema_json))
        target = spark_arrow_schema(spark_schema)
        file_schema = parse_schema(self.file_schema)
        converter = ArrowConverter([(file_schema[c].type, target.field(c)) for c in self.columns])
        rows: range | BitMap = range(partition.start, partition.stop)   # whole blocks: no row list
        if partition.selection or partition.deletion_vector:
            rows = BitMap(rows)
            if partition.selection:
                rows &= load_bitmap(partition.selection)
            if partition.deletion_vector:
                rows -= load_bitmap(partition.deletion_vector)
        numbers = None
        if self.with_row_numbers:
            numbers = np.arange(rows.start, rows.stop, dtype=np.int64) if isinstance(rows, range) \
                else np.frombuffer(rows.to_array(), dtype=np.uint32)
        done = 0
        # The reader streams blocks once: no block cache needed.
        with RowFileReader(partition.path, file_schema, cache_bytes=0) as reader:
            for batch in reader.iter_batches(self.columns, rows, self.batch_rows):
                data = dict(zip(self.columns, converter.convert(batch.columns)))
                if numbers is not None:
                    n = batch.num_rows
                    data[FILE_COLUMN] = pa.array([partition.path] * n, pa.string())
                    data[ROW_COLUMN] = pa.array(numbers[done:done + n].astype(np.int64))
                    done += n
                yield pa.RecordBatch.from_arrays([data[f.name] for f in target], schema=target)


# ---------------------------------------------------------------- write a Paimon table

@dataclass
class TableMessage(WriterCommitMessage):  # pickled from a task to the driver
    messages: bytes                       # pickled pypaimon CommitMessages


def _key_list(options, key: str) -> list[str]:
    value = options.get(key)
    return [k.strip() for k in value.split(",") if k.strip()] if value else []


class TableWriter(DataSourceArrowWriter):
    """Writes a Paimon table: tasks write data files with pypaimon's table
    writer and send their commit messages; the driver commits them all in
    one snapshot, or aborts them (deleting the files)."""

    def __init__(self, options, schema: StructType, overwrite: bool):
        # Runs once on the driver. The object is then pickled to every task
        # and used again for commit()/abort().
        if "path" not in options:
            raise ValueError(f"{FORMAT_NAME}: save(path) needs a path")
        self.path = os.path.abspath(_strip_file_scheme(options["path"]))
        if os.path.isfile(self.path):
            raise DatasetError(f"{self.path} is a file; a {FORMAT_NAME} write needs a "
                               f"Paimon table directory")
        self.overwrite = overwrite
        mode = options.get("partitionoverwritemode", "static").strip().lower()
        if mode not in ("static", "dynamic"):
            raise ValueError(f"option partitionOverwriteMode must be 'static' or 'dynamic', "
                             f"got {options['partitionoverwritemode']!r}")
        self.dynamic_overwrite = mode == "dynamic"
        self.reference_roots = options.get("blobreferenceroots")
        what = f"{FORMAT_NAME}: cannot write to {self.path}"
        if tb.is_table(self.path):
            table = tb.open_table(self.path)
            # Appends and overwrites keep the table's schema (Paimon changes
            # schemas with ALTER TABLE, not with a write).
            check_columns(schema, tb.row_type(table), what, subset=False)
        else:
            if os.path.isdir(self.path) and any(n.endswith(DATA_SUFFIX)
                                                for n in os.listdir(self.path)):
                raise DatasetError(f"{what}: it holds .row files but is not a Paimon table")
            table = tb.create_table(self.path, self._new_schema(options, schema),
                                    partition_keys=_key_list(options, "partitionkeys"),
                                    primary_keys=_key_list(options, "primarykeys"),
                                    options=self._table_options(options))

    def _new_schema(self, options, schema: StructType) -> RowType:
        explicit = options.get("paimonschema")
        if explicit is None:
            row_type = from_spark_schema(schema)
        else:
            row_type = _parse_paimon_schema(explicit)
            check_columns(schema, row_type, f"{FORMAT_NAME}: the DataFrame does not fit "
                          f"paimonSchema", subset=False)
        primary = set(_key_list(options, "primarykeys")) | set(_key_list(options,
                                                                         "partitionkeys"))
        # Paimon's keys are NOT NULL; Spark marks most columns nullable.
        return RowType(fields=tuple(
            f if f.name not in primary else DataField(f.name, f.type.copy(nullable=False))
            for f in row_type.fields), top_level=True)

    def _table_options(self, options) -> dict[str, str]:
        out = {k[len("paimon."):]: v for k, v in options.items() if k.startswith("paimon.")}
        if "bucket" in options:
            out["bucket"] = options["bucket"]
        if _key_list(options, "primarykeys"):
            bucket = out.get("bucket")
            try:
                ok = bucket is not None and int(bucket) > 0
            except ValueError:
                ok = False
            if not ok:
                raise ValueError(
                    f"{FORMAT_NAME}: a primary-key table written by Spark needs a fixed number "
                    f"of buckets: .option('bucket', N) with N > 0 (got {bucket!r}); dynamic "
                    f"buckets would let two tasks put one key into two buckets")
        return out

    def write(self, iterator: Iterator[pa.RecordBatch]):   # one call per task
        _settle_worker()
        table = tb.open_table(self.path)
        if self.reference_roots:
            table = table.copy({ROOTS_OPTION: self.reference_roots})
        return TableMessage(tb.write_batches(table, iterator, self.overwrite))

    def commit(self, messages):
        _settle_worker()
        table = tb.open_table(self.path)
        tb.commit(table, [m.messages for m in messages if m is not None], self.overwrite,
                  self.dynamic_overwrite)

    def abort(self, messages):            # messages of failed tasks are None
        _settle_worker()
        table = tb.open_table(self.path)
        tb.abort(table, [m.messages for m in messages if m is not None])
