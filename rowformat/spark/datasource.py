"""The ``paimon-row`` Python Data Source (PySpark 4.0+).

    df = spark.read.format("paimon-row").load("/data/t")
    df.write.format("paimon-row").mode("append").save("/data/t")    # or "overwrite"

Where the methods run: ``schema()``, ``reader()``,
``partitions()``, ``writer()``, ``commit()`` and ``abort()`` in short-lived
Python workers of the driver; ``read()`` and ``write()`` in executor tasks.
The reader and writer objects are pickled between them, so they hold only
plain values (paths, schema text, option values) and open files in the task.

Read options:
  rowsPerPartition  rows per Spark partition (default 1000000): a partition
                    is a run of whole blocks of one file
  batchRows         rows per Arrow batch handed to Spark (default 65536)
  paimonSchema      the Paimon schema of a bare ``.row`` file (the format
                    stores none); otherwise the dataset's, or the Spark
                    ``.schema(...)`` mapped to Paimon's canonical types
  selection         rows to read: a file holding a serialized RoaringBitmap
  deletionVector    rows to drop: the same. For a dataset, either option may
                    be a JSON object {data file name or path: bitmap file};
                    deletion vectors committed in the manifest always apply
  rowNumbers        "true" adds columns ``_file`` (path) and ``_row`` (row
                    number in the file), the keys for :func:`lookup`

Write options: ``blockSize`` (bytes, default 65536), ``zstdLevel`` (default 1),
``paimonSchema`` (the Paimon types to store, e.g. TIMESTAMP(3), VECTOR or
BLOB, when Spark's canonical mapping is not wanted). Only modes ``append``
and ``overwrite`` exist (Spark 4.3 rejects the others for Python sources).

A user schema (``.schema(...)``) that names a subset of the columns is the
projection: Spark 4.3 offers Python sources no column pruning. There is no
filter pushdown: ``.row`` files keep no statistics to prune with, and
Spark 4.3.0 reuses a reader pruned for one query in later queries of the
same DataFrame (see the module README section).
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Iterator

import numpy as np
import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource, DataSourceArrowWriter, DataSourceReader, InputPartition, WriterCommitMessage,
)
from pyspark.sql.types import LongType, StringType, StructField, StructType

from .. import RowFileReader, RowFileWriter
from ..errors import SchemaError
from ..types import RowType, schema as parse_schema
from . import dataset as ds
from .types import (
    ArrowConverter, from_spark_schema, same_spark_type, spark_arrow_schema, to_spark_schema,
)

FORMAT_NAME = "paimon-row"
FILE_COLUMN, ROW_COLUMN = "_file", "_row"
DEFAULT_ROWS_PER_PARTITION = 1_000_000
DEFAULT_BATCH_ROWS = 65536


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
        raise ds.DatasetError(f"cannot read the bitmap file {path}: {e}") from None
    except Exception as e:  # pyroaring raises ValueError/RuntimeError on bad bytes
        raise ds.DatasetError(f"{path} is not a serialized RoaringBitmap: {e}") from None


# ---------------------------------------------------------------- sources

@dataclass
class SourceFile:
    path: str                        # absolute path of a .row file
    deletion_vector: str | None      # committed deletion vector, if any


@dataclass
class Sources:
    """What a load() path names: the files to read and their Paimon schema
    (None for a bare file whose schema must come from the user)."""
    files: list[SourceFile]
    schema: RowType | None
    roots: list[str]                 # dataset directories, to resolve relative names

    @classmethod
    def resolve(cls, options) -> "Sources":
        if "paths" in options:
            paths = json.loads(options["paths"])
        elif "path" in options:
            paths = [options["path"]]
        else:
            raise ValueError(f"{FORMAT_NAME}: give a path: load(path) or save(path)")
        files, schemas, roots = [], [], []
        for p in paths:
            p = os.path.abspath(_strip_file_scheme(p))
            if os.path.isdir(p):
                d = ds.Dataset.open(p)
                files += [SourceFile(d.file_path(e.name),
                                     d.file_path(e.deletion_vector) if e.deletion_vector else None)
                          for e in d.files]
                schemas.append((p, d.schema))
                roots.append(p)
            elif os.path.isfile(p):
                parent = os.path.dirname(p)
                owner = ds.Dataset.open(parent) if ds.Dataset.exists(parent) else None
                entry = next((e for e in owner.files if owner.file_path(e.name) == p), None) \
                    if owner else None
                if owner is not None and entry is not None:
                    # a file of a dataset: its schema and deletion vector
                    files.append(SourceFile(p, owner.file_path(entry.deletion_vector)
                                            if entry.deletion_vector else None))
                    schemas.append((p, owner.schema))
                    roots.append(parent)
                else:
                    files.append(SourceFile(p, None))
            else:
                raise FileNotFoundError(f"{FORMAT_NAME}: {p} does not exist")
        explicit = options.get("paimonschema")
        common: RowType | None
        if explicit is not None:
            common = _parse_paimon_schema(explicit)
        else:
            distinct = {str(s) for _, s in schemas}
            if len(distinct) > 1:
                raise SchemaError(f"{FORMAT_NAME}: the paths have different schemas: "
                                  + "; ".join(f"{p}: [{s}]" for p, s in schemas))
            bare = len(schemas) < len(paths)
            common = schemas[0][1] if schemas and not bare else None
        return cls(files, common, roots)


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
        sources = Sources.resolve(self.options)
        if sources.schema is None:
            raise SchemaError(
                f"{FORMAT_NAME}: {self.options.get('path') or self.options.get('paths')} is a bare "
                f".row file, which stores no schema: pass .schema(...) or "
                f".option('paimonSchema', '<Paimon schema text>')")
        spark_schema = to_spark_schema(sources.schema)
        if _flag(self.options, "rownumbers"):
            spark_schema = StructType(spark_schema.fields + _row_number_fields())
        return spark_schema

    def reader(self, schema: StructType):
        return RowReader(self.options, schema)

    def writer(self, schema: StructType, overwrite: bool):
        return RowWriter(self.options, schema, overwrite)


# ---------------------------------------------------------------- read

@dataclass
class BlockRange(InputPartition):
    """Rows [start, stop) of one file: whole blocks, picklable plain fields."""
    path: str
    start: int
    stop: int
    selection: str | None
    deletion_vector: str | None


class RowReader(DataSourceReader):
    def __init__(self, options, schema: StructType):
        sources = Sources.resolve(options)
        self.with_row_numbers = _flag(options, "rownumbers")
        data_fields = [f for f in schema.fields
                       if not (self.with_row_numbers and f.name in (FILE_COLUMN, ROW_COLUMN))]
        file_schema = sources.schema
        if file_schema is None:           # a bare file read with .schema(...)
            file_schema = from_spark_schema(StructType(data_fields))
        check_columns(StructType(data_fields), file_schema,
                      f"{FORMAT_NAME}: the requested schema does not fit", subset=True)
        for f in data_fields:
            if not f.nullable and file_schema[f.name].type.nullable:
                raise SchemaError(f"{FORMAT_NAME}: column {f.name!r} is nullable in the stored "
                                  f"schema [{file_schema}] but the requested schema says NOT NULL")
        self.spark_schema_json = schema.json()
        self.file_schema = str(file_schema)
        self.columns = [f.name for f in data_fields]
        self.files = sources.files
        self.rows_per_partition = _int_option(options, "rowsperpartition",
                                              DEFAULT_ROWS_PER_PARTITION)
        self.batch_rows = _int_option(options, "batchrows", DEFAULT_BATCH_ROWS)
        self.selections = self._bitmap_option(options, "selection", sources)
        self.deletion_vectors = self._bitmap_option(options, "deletionvector", sources)

    def _bitmap_option(self, options, key: str, sources: Sources) -> dict[str, str]:
        """{data file path: bitmap file path} from a path (one file) or a
        JSON object keyed by file name or path."""
        value = options.get(key)
        if value is None:
            return {}
        if value.lstrip().startswith("{"):
            out = {}
            for name, bitmap in json.loads(value).items():
                matches = [f.path for f in self.files if f.path == os.path.abspath(name)
                           or any(f.path == os.path.join(r, name) for r in sources.roots)]
                if not matches:
                    raise ds.DatasetError(f"option {key}: {name!r} is not one of the files read")
                out[matches[0]] = os.path.abspath(bitmap)
            return out
        if len(self.files) != 1:
            raise ValueError(f"option {key}: a single bitmap path needs a single file, but "
                             f"{len(self.files)} are read; use a JSON object per file")
        return {self.files[0].path: os.path.abspath(value)}

    def partitions(self):                 # driver side, once per query
        schema = parse_schema(self.file_schema)
        parts = []
        for f in self.files:
            selection = self.selections.get(f.path)
            vector = self.deletion_vectors.get(f.path) or f.deletion_vector
            if f.path in self.deletion_vectors and f.deletion_vector:
                raise ds.DatasetError(f"{f.path} has a committed deletion vector; the "
                                      f"deletionVector option cannot replace it")
            sel_bm = load_bitmap(selection) if selection else None
            dv_bm = load_bitmap(vector) if vector else None
            with RowFileReader(f.path, schema, cache_bytes=0) as r:
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
                parts.append(BlockRange(f.path, lo, hi, selection, vector))
        return parts                      # [] -> Spark runs one InputPartition(None)

    def read(self, partition) -> Iterator[pa.RecordBatch]:   # executor side
        if not isinstance(partition, BlockRange):
            return
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


# ---------------------------------------------------------------- write

@dataclass
class StagedMessage(WriterCommitMessage):  # pickled from a task to the driver
    staged: ds.StagedFile


class RowWriter(DataSourceArrowWriter):
    def __init__(self, options, schema: StructType, overwrite: bool):
        # Runs once on the driver. The object is then pickled to every task
        # and used again for commit()/abort(): self.job is the job id everywhere.
        if "path" not in options:
            raise ValueError(f"{FORMAT_NAME}: save(path) needs a path")
        self.path = os.path.abspath(_strip_file_scheme(options["path"]))
        if os.path.isfile(self.path):
            raise ds.DatasetError(f"{self.path} is a file; a {FORMAT_NAME} write needs a "
                                  f"dataset directory")
        self.overwrite = overwrite
        self.job = ds.new_job_id()
        self.block_size = _int_option(options, "blocksize", 65536)
        self.zstd_level = int(options.get("zstdlevel", "1"))
        self.schema = str(self._paimon_schema(options, schema))

    def _paimon_schema(self, options, schema: StructType) -> RowType:
        what = f"{FORMAT_NAME}: cannot write to {self.path}"
        explicit = options.get("paimonschema")
        if explicit is not None:
            row_type = _parse_paimon_schema(explicit)
            check_columns(schema, row_type, f"{what}: the DataFrame does not fit paimonSchema",
                          subset=False)
            return row_type
        if ds.Dataset.exists(self.path):
            current = ds.Dataset.open(self.path).schema
            try:
                check_columns(schema, current, what, subset=False)
                return current            # keeps Paimon-only types (TIMESTAMP(3), BLOB, ...)
            except SchemaError:
                if not self.overwrite:
                    raise
        elif os.path.isdir(self.path) and any(n.endswith(ds.DATA_SUFFIX)
                                              for n in os.listdir(self.path)):
            raise ds.DatasetError(f"{what}: it holds .row files but no {ds.MANIFEST}; "
                                  f"it is not a rowformat dataset")
        return from_spark_schema(schema)

    def write(self, iterator: Iterator[pa.RecordBatch]):   # one call per task
        from pyspark import TaskContext
        ctx = TaskContext.get()
        assert ctx is not None, "write() runs inside a Spark task"
        pid, attempt = ctx.partitionId(), ctx.attemptNumber()
        tmpdir = ds.temporary_dir(self.path, self.job)
        os.makedirs(tmpdir, exist_ok=True)
        tmp = os.path.join(tmpdir, f"part-{pid:05d}-{attempt}{ds.DATA_SUFFIX}")
        # RowFileWriter writes under a temporary name and renames on close:
        # a failing task (or a failing upstream stage) leaves no file behind.
        row_type = parse_schema(self.schema)
        with RowFileWriter(tmp, row_type, block_size=self.block_size,
                           zstd_level=self.zstd_level) as w:
            for batch in iterator:
                w.write(batch)
            rows = w.num_rows
        if ds.job_aborted(self.path, self.job):   # finished after the job's abort
            os.remove(tmp)
            ds.vacuum(self.path)
        return StagedMessage(ds.StagedFile(tmp, f"part-{pid:05d}-{self.job}{ds.DATA_SUFFIX}",
                                           rows))

    def commit(self, messages):
        staged = [m.staged for m in messages if m is not None]
        ds.commit(self.path, parse_schema(self.schema), staged, self.job, self.overwrite)

    def abort(self, messages):            # messages of failed tasks are None
        ds.abort(self.path, self.job)
