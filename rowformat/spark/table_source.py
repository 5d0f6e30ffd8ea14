"""Paimon tables through ``paimon-row``: pypaimon plans splits on the
driver, a Spark partition is a group of splits sized as Spark sizes file
partitions, tasks read them; write tasks send pickled commit messages that
the driver commits in one snapshot (or aborts). A table is a local
directory or a URL: every open passes the store's settings resolved on the
driver (``storage_options``, Paimon catalog names) to pypaimon's FileIO."""
from __future__ import annotations

import os
import pickle
import warnings
from dataclasses import dataclass
from typing import Iterator

import numpy as np
import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, InputPartition, WriterCommitMessage
from pyspark.sql.types import LongType, StringType, StructField, StructType

from .. import RowFileReader
from ..arrow_cast import cast_batch
from ..errors import DatasetError, SchemaError
from ..paimon import tables as tb
from ..io.local import directories, remove_empty_directories
from ..io.urls import local
from ..datatypes import DataField, RowType
from . import FORMAT_NAME
from .options import (
    DATA_SUFFIX, check_columns, check_option_names, check_store, for_path, is_storage_option,
    key_list, list_names, normalize_path, parse_paimon_schema, path_kind, requested_fields,
    scheme_of, storage_settings,
)
from .preflight import Shipped
from .sizing import PartitionSizing
from .spark_types import from_spark_schema
from .worker import SourceReader, settle_worker


def row_id_field() -> StructField:
    return StructField(tb.ROW_ID, LongType(), False)


ROW_KIND = "rowkind"        # Paimon's Spark connector's name (read.changelog)


def over_table_options(table, options) -> dict:
    """The read's options over the table's (Paimon's rule for the options a
    read takes from both), every key lower-cased as Spark gives options."""
    merged = {k.lower(): v for k, v in (table.table_schema.options or {}).items()}
    merged.update({k.lower(): v for k, v in options.items()})
    return merged


def row_kind_field() -> StructField:
    """The leading column of a ``read.changelog`` stream: each row's kind,
    ``+I``, ``-U``, ``+U`` or ``-D``."""
    return StructField(ROW_KIND, StringType(), False)


def check_row_tracking(table, path: str) -> None:
    if not table.options.row_tracking_enabled():
        raise SchemaError(f"{FORMAT_NAME}: {path} has no {tb.ROW_ID} column: the table was "
                          f"not created with 'row-tracking.enabled' = 'true'")


def open_for_read(path: str, options, storage_options: dict):
    snapshot = options.get("snapshotid")
    if snapshot is not None:
        try:
            snapshot = int(snapshot)
        except ValueError:
            raise ValueError(f"option snapshotId must be an integer, got {snapshot!r}") from None
    check_file_io(path, storage_options)
    return tb.pin(path, snapshot_id=snapshot, tag=options.get("tag"),
                  storage_options=storage_options)


def check_file_io(path: str, storage_options: dict) -> None:
    """Raises DatasetError when pypaimon has no FileIO for ``path``'s
    scheme (a table needs one: pypaimon plans, writes and commits)."""
    if not scheme_of(path):
        return
    try:
        tb.file_io(path, storage_options)
    except (ValueError, ImportError) as e:
        raise DatasetError(f"{FORMAT_NAME}: cannot open a Paimon table at {path}: pypaimon "
                           f"has no file system for {scheme_of(path)}:// paths ({e})"
                           ) from None


@dataclass
class SplitGroup(InputPartition):
    """pypaimon splits read by one Spark task (pickled: plain bytes)."""
    splits: bytes
    count: int


class TableReader(SourceReader):
    """A Paimon table: pypaimon plans on the driver, tasks read splits."""

    def __init__(self, options, schema: StructType, path: str, sizing: PartitionSizing,
                 storage_options: dict):
        table, pinned = open_for_read(path, options, storage_options)
        self.path = path
        self.storage_options = storage_options
        with_row_ids = tb.ROW_ID in schema.names
        if with_row_ids:
            check_row_tracking(table, path)
        requested_fields(schema, tb.row_type(table), options, path,
                          (tb.ROW_ID,) if with_row_ids else ())
        self.columns = list(schema.names)
        # The snapshot planned now, so every task reads the same one.
        self.snapshot_id = pinned
        self.tag = options.get("tag")
        self.spark_schema_json = schema.json()
        self.sizing = sizing
        # what the filters are checked against (see FilteringReader)
        from .filters import planner_kind
        self.root_types = {f.name: planner_kind(f.type) for f in tb.row_type(table).fields}
        arrow = tb.arrow_schema(table)
        fields = [arrow.field(c) for c in self.columns if c in arrow.names]
        if with_row_ids:
            fields.append(pa.field(tb.ROW_ID, pa.int64(), False))
        self.batch_schema = pa.schema(fields)

    def _table(self):
        return tb.open_table(self.path, snapshot_id=self.snapshot_id, tag=self.tag,
                             storage_options=self.storage_options)

    partition_type = SplitGroup

    def plan(self):
        if self.snapshot_id is None and self.tag is None:
            return []                     # a table with no snapshot yet: no rows
        splits = tb.plan_splits(self._table(), self.columns)
        s = self.sizing
        return [SplitGroup(pickle.dumps(g), len(g)) for g in
                tb.group_splits(splits, s.max_partition_bytes, s.parallelism, s.open_cost)]

    def read_partition(self, partition, target):
        for batch in self.read_partition_raw(partition):
            yield cast_batch(batch, target, truncate=True)   # nanoseconds floor to micros

    def read_partition_raw(self, partition) -> Iterator[pa.RecordBatch]:
        """A partition's rows as pypaimon decodes them."""
        return tb.read_batches(self._table(), pickle.loads(partition.splits), self.columns)


@dataclass
class RowIdSlices(InputPartition):
    """Rows of data files picked by ``_ROW_ID`` (picklable plain fields):
    per file (path, file schema text, first row id, row-number intervals
    as int64 bytes)."""
    files: list[tuple[str, str, int, bytes]]
    storage_options: dict | None


# Rows of one file read by take() (one read of each touched block, the
# prefix lookups where they pay); a file with more selected rows streams its
# intervals' blocks instead.
TAKE_ROWS = 1 << 16


class FilteringReader(TableReader):
    """A table read that Spark hands its filters (``pushFilters``, on unless
    ``option("pushFilters", "false")``; see :mod:`.filters`): pypaimon's
    planner prunes partitions, buckets and files by them; ``_ROW_ID``
    ranges pick the files and rows read; the filters rowformat evaluates
    exactly as Spark are applied to the decoded batches and not handed back."""

    def __init__(self, options, schema: StructType, path: str, sizing: PartitionSizing,
                 storage_options: dict):
        super().__init__(options, schema, path, sizing, storage_options)
        self.filters: list = []
        self.evaluated: list = []

    def pushFilters(self, filters):      # driver side, before partitions()
        from .filters import split_evaluated
        self.filters = list(filters)
        self.evaluated, back = split_evaluated(self.filters, self.batch_schema)
        return back                      # the ones Spark must still apply

    def plan(self):
        if self.snapshot_id is None and self.tag is None:
            return []
        from .filters import planner_predicate, row_id_ranges
        table = self._table()
        builder = table.new_read_builder().new_predicate_builder()
        predicate = planner_predicate(self.filters, self.root_types, builder)
        splits = tb.plan_splits(table, self.columns, predicate=predicate)
        ranges = row_id_ranges(self.filters) if tb.ROW_ID in self.columns else None
        if ranges is None:
            return self._groups(splits)
        slices = tb.row_id_slices(table, splits, ranges)
        if slices is None:              # read whole splits, those whose ranges may hold them
            return self._groups([s for s in splits if _may_hold(s, ranges)])
        return self._slice_groups(slices, tb.reader_options(table))

    def _groups(self, splits) -> list:
        s = self.sizing
        return [SplitGroup(pickle.dumps(g), len(g)) for g in
                tb.group_splits(splits, s.max_partition_bytes, s.parallelism, s.open_cost)]

    def _slice_groups(self, slices, storage_options) -> list:
        """The files' slices in at most ``parallelism`` partitions of about
        equal row counts (a point lookup is one block read; partitions cost
        a task each)."""
        if not slices:
            return []
        weights = [int((r[:, 1] - r[:, 0]).sum()) for _, _, _, r in slices]
        groups = max(1, min(self.sizing.parallelism, len(slices)))
        target = -(-sum(weights) // groups)
        out: list[list] = [[]]
        size = 0
        for (path, schema, first, rows), w in zip(slices, weights):
            if out[-1] and size + w > target and len(out) < groups:
                out.append([])
                size = 0
            out[-1].append((path, schema, first, rows.astype(np.int64).tobytes()))
            size += w
        return [RowIdSlices(g, storage_options) for g in out]

    partition_type = (SplitGroup, RowIdSlices)   # type: ignore[assignment]

    def read_partition(self, partition, target):
        batches = self._slices(partition) if isinstance(partition, RowIdSlices) \
            else super().read_partition_raw(partition)
        from .filters import filtered
        for batch in filtered(batches, self.evaluated):
            yield cast_batch(batch, target, truncate=True)

    def _slices(self, partition: RowIdSlices) -> Iterator[pa.RecordBatch]:
        data = [c for c in self.columns if c != tb.ROW_ID]
        for path, schema, first, raw in partition.files:
            intervals = np.frombuffer(raw, np.int64).reshape(-1, 2)
            with RowFileReader(path, schema, cache_bytes=0, prefix_lookups=True,
                               storage_options=partition.storage_options) as reader:
                for rows, table in _read_intervals(reader, intervals, data):
                    columns = {c: table.column(c).combine_chunks() for c in data}
                    columns[tb.ROW_ID] = pa.array(rows + first, pa.int64())
                    yield pa.RecordBatch.from_arrays([columns[c] for c in self.columns],
                                                     names=self.columns)


def _read_intervals(reader, intervals: np.ndarray, columns: list[str]
                    ) -> Iterator[tuple[np.ndarray, pa.Table]]:
    """(row numbers, their rows) of a file's row-number intervals: one take
    of the rows when they are few, else the intervals streamed block by block."""
    total = int((intervals[:, 1] - intervals[:, 0]).sum())
    if total <= TAKE_ROWS:
        rows = np.concatenate([np.arange(a, b, dtype=np.int64) for a, b in intervals])
        yield rows, reader.take(rows, columns=columns)
        return
    for a, b in intervals:
        start = int(a)
        for batch in reader.iter_batches(columns, range(int(a), int(b))):
            n = batch.num_rows
            yield np.arange(start, start + n, dtype=np.int64), pa.Table.from_batches([batch])
            start += n


def _may_hold(split, ranges: np.ndarray) -> bool:
    """Whether a split has a file whose ``_ROW_ID`` range meets ``ranges``
    (a file without one may hold any)."""
    for f in split.files:
        if f.first_row_id is None:
            return True
        lo, hi = int(f.first_row_id), int(f.first_row_id) + int(f.row_count)
        k = int(np.searchsorted(ranges[:, 1], lo, "right"))
        if k < len(ranges) and ranges[k, 0] < hi:
            return True
    return False


@dataclass
class TableMessage(WriterCommitMessage):  # pickled from a task to the driver
    messages: bytes                       # pickled pypaimon CommitMessages


class TableWriter(Shipped, DataSourceArrowWriter):
    """Writes a Paimon table: tasks write data files with pypaimon's table
    writer and send their commit messages; the driver commits them all in
    one snapshot, or aborts them (deleting the files)."""

    def __init__(self, options, schema: StructType, overwrite: bool,
                 captured: dict | None = None):
        # Runs once on the driver. The object is then pickled to every task
        # and used again for commit()/abort().
        check_option_names(options, "write")
        if "path" not in options:
            raise ValueError(f"{FORMAT_NAME}: save(path) needs a path")
        self.path = normalize_path(options["path"])
        # the store's settings, resolved here: tasks see neither the
        # driver's environment nor the session's settings
        self.storage_options = for_path(self.path, storage_settings(options, captured))
        check_store(self.path, self.storage_options)
        check_file_io(self.path, self.storage_options)
        self.overwrite = overwrite
        mode = options.get("partitionoverwritemode", "static").strip().lower()
        if mode not in ("static", "dynamic"):
            raise ValueError(f"option partitionOverwriteMode must be 'static' or 'dynamic', "
                             f"got {options['partitionoverwritemode']!r}")
        self.dynamic_overwrite = mode == "dynamic"
        self.reference_roots = options.get("blobreferenceroots")
        what = f"{FORMAT_NAME}: cannot write to {self.path}"
        # Whether this write created the table: its own exclusive create of
        # schema/schema-0 succeeded (never "no table was there when it looked":
        # two first writes both find none, one create wins). See abort().
        self.created = False
        self.existing_dirs: frozenset[str] | None = None  # what was there before it
        if tb.is_table(self.path, self.storage_options):
            self._check_existing(self._open(), options, schema, what)
        else:
            if path_kind(self.path, self.storage_options) == "file":
                raise DatasetError(f"{self.path} is a file; a {FORMAT_NAME} write needs a "
                                   f"Paimon table directory")
            if any(n.endswith(DATA_SUFFIX) for n in list_names(self.path, self.storage_options)):
                raise DatasetError(f"{what}: it holds .row files but is not a Paimon table")
            table_options = self._table_options(options)
            before = local_dirs(self.path)
            table, self.created = tb.create_or_open(
                self.path, self._new_schema(options, schema),
                partition_keys=key_list(options, "partitionkeys"),
                primary_keys=key_list(options, "primarykeys"), options=table_options,
                storage_options=self.storage_options)
            if self.created:
                self.existing_dirs = before
            else:                     # another writer's create won: its table must fit too
                self._check_existing(table, options, schema, what)

    def _check_existing(self, table, options, schema: StructType, what: str) -> None:
        # Appends and overwrites keep the table's schema and layout (Paimon
        # changes them with ALTER TABLE, not with a write).
        try:
            check_columns(schema, tb.row_type(table), what, subset=False)
        except SchemaError as e:
            if tb.latest_snapshot_id(table) is not None:
                raise
            raise SchemaError(f"{e}. The table has no snapshot (a failed first write leaves "
                              f"its empty table): to create it with other columns, delete "
                              f"{self.path} first") from None
        check_layout(options, table, what)

    def _open(self):
        return tb.open_table(self.path, storage_options=self.storage_options)

    def _new_schema(self, options, schema: StructType) -> RowType:
        explicit = options.get("paimonschema")
        if explicit is None:
            row_type = from_spark_schema(schema)
        else:
            row_type = parse_paimon_schema(explicit)
            check_columns(schema, row_type, f"{FORMAT_NAME}: the DataFrame does not fit "
                          f"paimonSchema", subset=False)
        primary = set(key_list(options, "primarykeys")) | set(key_list(options,
                                                                         "partitionkeys"))
        # Paimon's keys are NOT NULL; Spark marks most columns nullable.
        return RowType(fields=tuple(
            f if f.name not in primary else DataField(f.name, f.type.copy(nullable=False))
            for f in row_type.fields), top_level=True)

    def _table_options(self, options) -> dict[str, str]:
        # (storage settings, paimon.s3.* and the like, configure the
        # connection: never stored in the schema, which anyone reading the
        # table reads)
        out = {tb.canonical_option_name(k[len("paimon."):]): v for k, v in options.items()
               if k.startswith("paimon.") and not is_storage_option(k[len("paimon."):])}
        warn_unknown(out)
        if "bucket" in options:
            out["bucket"] = options["bucket"]
        if key_list(options, "primarykeys"):
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
        settle_worker()
        table = self._open()
        if self.reference_roots:
            table = table.copy({tb.BLOB_REFERENCE_ROOTS: self.reference_roots})
        return TableMessage(tb.write_batches(table, iterator, self.overwrite))

    def commit(self, messages):
        settle_worker()
        table = self._open()
        tb.commit(table, [m.messages for m in messages if m is not None], self.overwrite,
                  self.dynamic_overwrite)

    def abort(self, messages):            # messages of failed tasks are None
        settle_worker()
        table = self._open()
        tb.abort(table, [m.messages for m in messages if m is not None])
        if self.created:
            self._drop_new_directories()

    # A failed first write keeps the table it created (schema/schema-0, no
    # snapshot: a valid, empty table). Removing the schema cannot be made safe:
    # once schema-0 is published, another writer may have opened the table
    # (its first write lost the create race, or came a moment later) and may
    # commit at any time; "no snapshot yet, so delete schema/" is two steps
    # that such a commit can land between, leaving that job's reported rows
    # in a directory no reader can open. An empty table costs nothing and
    # reads as no rows; a retry with the same columns appends to it.
    def _drop_new_directories(self) -> None:
        """Removes the empty directories (locally) that this write created
        and the aborted tasks left, deepest first: never one that was there
        before the write (the user's own), nor the table's schema/."""
        here = local(self.path)
        if not here or self.existing_dirs is None or not os.path.isdir(here):
            return
        # only empty ones: a concurrent writer's files keep theirs (one that
        # made a directory and has not yet opened its file there sees its task
        # fail and retried: no commit is lost)
        remove_empty_directories(here, self.existing_dirs | {".", tb.SCHEMA_DIR})


def local_dirs(path: str) -> frozenset[str] | None:
    """The directories under the local ``path`` (relative, "." itself) that
    exist now, or None for a URL (object stores keep no empty directories)."""
    here = local(path)
    if not here:
        return None
    return directories(here)


def check_layout(options, table, what: str) -> None:
    """Raises SchemaError when ``partitionKeys``, ``primaryKeys`` or
    ``bucket`` are given for an existing table that says otherwise: a write
    cannot change them, and ignoring them would leave the user believing
    the table is laid out as asked."""
    problems = []
    for key, name, have in (("partitionkeys", "partitionKeys", table.partition_keys),
                            ("primarykeys", "primaryKeys", table.primary_keys)):
        if key in options and key_list(options, key) != list(have or []):
            problems.append(f"option {name} is {options[key]!r} but the table's "
                            f"{name[:-4].lower()} keys are {list(have or [])}")
    if "bucket" in options:
        have = table.options.bucket()
        try:
            same = int(options["bucket"].strip()) == have
        except ValueError:
            same = False
        if not same:
            problems.append(f"option bucket is {options['bucket']!r} but the table's bucket "
                            f"is {have}")
    if problems:
        raise SchemaError(f"{what}: {'; '.join(problems)}. An existing table keeps its layout "
                          f"(Paimon changes it with ALTER TABLE, not with a write): drop the "
                          f"option, or write to a new table")


def warn_unknown(table_options: dict[str, str]) -> None:
    """Warns of each table option Paimon does not know (it is stored, as
    Paimon keeps user options, but nothing reads it), naming the closest
    known one: ``paimon.row-traking.enabled`` left row tracking off."""
    for key, close in tb.unknown_table_options(table_options).items():
        hint = f" (did you mean 'paimon.{close}'?)" if close else ""
        warnings.warn(f"{FORMAT_NAME}: option 'paimon.{key}' is not a Paimon table option"
                      f"{hint}. It is stored in the table as a user option, which Paimon "
                      f"ignores", tb.TableOptionWarning, stacklevel=2)
