"""Paimon tables by directory path, through pypaimon: the one module that
knows pypaimon's tables, for the Spark source, the ``rowformat`` command and
users. Importing it does not import pypaimon.

* open: :func:`is_table`, :func:`open_table` (``FileStoreTable.from_path``,
  no catalog; time travel by snapshot id or tag), :func:`pin` (the latest
  snapshot, so that a plan and the files read later agree),
  :func:`create_table` (:func:`create_or_open` also says whether this call
  created it; the table options are checked first: ``_table_options``);
* schema: :func:`row_type`, :func:`arrow_schema`, :func:`file_fields` (the
  fields a data file holds: a primary-key table's ``_KEY_*`` and system
  fields first);
* plan and read: :func:`plan`, :func:`plan_splits`, :func:`group_splits`,
  :func:`read_batches`, :func:`data_files`, :class:`RowIdRouter` (``_ROW_ID``
  to file and row);
* write: :func:`write_batches`, :func:`commit`, :func:`abort`;
* upkeep: :func:`expire_snapshots` (the files of old snapshots deleted),
  :func:`remove_orphan_files` (the files failed writes left) and
  :func:`compact` (small files or sorted runs rewritten, a ``COMPACT`` snapshot).

A table is a directory, local or a URL (``s3://bucket/wh/db.db/t``, ...: its
store's settings as ``storage_options``, the Paimon catalog's ``s3.endpoint``,
``s3.access-key``, ... names, else taken from the environment:
:func:`catalog_options`), with ``schema/schema-N`` files (Paimon's layout:
``snapshot/``, ``manifest/``, ``[partition dirs/]bucket-K/data-*``), written
by any engine; a table created here is what a filesystem catalog would
create at that path (``W/<db>.db/<table>`` is readable through a catalog on ``W``).

Reads and writes go through pypaimon, with ``.row`` and ``.blob`` files
decoded by rowformat and the table's metadata files read as untrusted input
(:func:`acceleration`, ``_metadata``); a pypaimon that cannot be
accelerated is used stock, with one ``AccelerationWarning`` per process.
"""
from __future__ import annotations

import datetime as dt
import os
import pickle
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Optional

import numpy as np
import pyarrow as pa

from .. import schema_json
from ..io import fileio, settings, urls
from ..errors import (
    CompactionConflictError, DatasetError, PaimonIntegrationError, RowFormatError, SchemaError,
    TableMetadataError, TableOptionError,
)
from ..datatypes import RowType
from . import _compact, _field_types, _row_ids, _table_options
from ._compact import Compacted
from ._table_options import TableOptionWarning, canonical as canonical_option_name
from ._table_options import unknown as unknown_table_options
from ._expire import Expired, ExternalFileWarning, expire
from ._metadata import check_name, reading
from ._orphans import Orphans, remove_orphans
from ._writer import table_block_size
from ._table_io import (  # noqa: F401 (tables' own API: the primitives live there)
    ROW_KIND, SCHEMA_DIR, _schema_path, acceleration, arrow_schema, catalog_options, conform_batch,
    file_fields, file_io, file_schema, local_path, read_batches, reader_options, storage_options_of,
    write_builder,
)
from ._blob_writer import ROOTS_OPTION as BLOB_REFERENCE_ROOTS  # noqa: F401 (the Spark writer's)

ROW_ID = "_ROW_ID"


# ---------------------------------------------------------------- acceleration


# ---------------------------------------------------------------- tables


def _names(directory: str, storage_options: dict | None = None) -> list[str]:
    """The names in ``directory`` (none if it is missing): a local path, or a
    URL listed with the table's store settings."""
    return fileio.list_names(directory, catalog_options(directory, storage_options))


def _numbered(directory: str, prefix: str, storage_options: dict | None = None) -> list[int]:
    """The N of the ``<prefix>N`` files in ``directory`` (none if it is missing)."""
    n = len(prefix)
    return [int(name[n:]) for name in _names(directory, storage_options)
            if name.startswith(prefix) and name[n:].isdigit()]


def is_table(path: str, storage_options: dict | None = None) -> bool:
    """A Paimon table directory: it has ``schema/schema-<n>`` files."""
    return bool(_numbered(urls.join(path, SCHEMA_DIR), "schema-", storage_options))


def _snapshot_path(table, pinned: bool = True) -> str:
    """The snapshot file a failed read of the table's snapshot was reading:
    the one it is pinned to (unless not ``pinned``), else the latest."""
    directory = urls.join(str(table.table_path), "snapshot")
    pin_id = (table.table_schema.options or {}).get("scan.snapshot-id") if pinned else None
    ids = [int(pin_id)] if pin_id is not None else \
        _numbered(directory, "snapshot-", storage_options_of(table))
    return urls.join(directory, f"snapshot-{max(ids)}" if ids else "LATEST")


def _pypaimon_table_class():
    try:
        from pypaimon.table.file_store_table import FileStoreTable
    except ImportError as e:
        raise ModuleNotFoundError(
            "reading and writing Paimon tables needs pypaimon: pip install 'rowformat[paimon]'",
            name="pypaimon") from e
    return FileStoreTable


def _from_path(path: str, storage_options: dict | None = None):
    """``FileStoreTable.from_path(path)``, built as 2.1.0's does it (2.0.0's
    calls the abstract ``FileIO()`` and fails), its FileIO opened with
    :func:`catalog_options`."""
    FileStoreTable = _pypaimon_table_class()
    from pypaimon.common.file_io import FileIO
    from pypaimon.common.identifier import Identifier
    from pypaimon.common.options.options import Options
    from pypaimon.schema.schema_manager import SchemaManager
    opts = catalog_options(path, storage_options)
    file_io = FileIO.get(path, Options(opts))
    ids = _numbered(urls.join(path, SCHEMA_DIR), "schema-", opts)
    if not ids:
        raise DatasetError(f"{path} is not a Paimon table: no schema in {SCHEMA_DIR}/")
    where = _schema_path(path, max(ids))
    with acceleration(), reading(where, "schema"):
        schema = SchemaManager(file_io, path).get_schema(max(ids))
        seen: set = set()
        for field in getattr(schema, "fields", None) or []:
            if field.name in seen:  # (pypaimon's reads fail on it: column "not in schema")
                raise TableMetadataError(f"{where}: duplicate field name {field.name!r}")
            seen.add(field.name)
        return FileStoreTable(file_io, Identifier("default", "table"), path, schema)


def open_table(path: str, snapshot_id: int | None = None, tag: str | None = None,
               storage_options: dict | None = None):
    """The pypaimon ``FileStoreTable`` at ``path`` (a directory or a URL, its
    store's settings in ``storage_options``: :func:`catalog_options`); with
    ``snapshot_id`` or ``tag``, the table as of that snapshot (its schema
    and files)."""
    if not is_table(path, storage_options):
        raise DatasetError(f"{path} is not a Paimon table: no {SCHEMA_DIR}/schema-<n> files")
    if snapshot_id is not None and tag is not None:
        raise DatasetError("give either a snapshot id or a tag, not both")
    table = _from_path(path, storage_options)
    if snapshot_id is not None:
        if snapshot_by_id(table, int(snapshot_id)) is None:
            raise DatasetError(f"{path}: there is no snapshot {snapshot_id}")
        table = table.copy({"scan.snapshot-id": str(int(snapshot_id))})
    elif tag is not None:
        if not table.tag_manager().tag_exists(tag):
            raise DatasetError(f"{path}: there is no tag {tag!r}")
        table = table.copy({"scan.tag-name": tag})
    return table


def expire_snapshots(path: str, *, retain_last: int | None = None, older_than=None,
                     storage_options: dict | None = None, dry_run: bool = False):
    """Expires the oldest snapshots of the table at ``path`` and deletes the
    files only they hold (Paimon's expiry; pypaimon has none): every
    snapshot but the latest ``retain_last`` (default: the table's
    ``snapshot.num-retained.min``, else 10) that was committed before
    ``older_than`` (a ``datetime``, or a ``timedelta`` before now; None: any
    time). Tags, branches and consumers keep what they use. Returns what
    went (:class:`Expired`); with
    ``dry_run``, what would go, nothing deleted. After it, time travel to an
    expired snapshot fails. See ``rowformat.paimon._expire``."""
    if not is_table(path, storage_options):
        raise DatasetError(f"{path} is not a Paimon table: no {SCHEMA_DIR}/schema-<n> files")
    return expire(path, retain_last, older_than, catalog_options(path, storage_options), dry_run)


def remove_orphan_files(path: str, *, older_than=dt.timedelta(days=1),
                        storage_options: dict | None = None, dry_run: bool = False) -> Orphans:
    """Deletes the files in the table at ``path`` that no snapshot, tag,
    branch or changelog names and that were last modified before
    ``older_than`` (a ``datetime``, or a ``timedelta`` before now; default a
    day, as Paimon's; never after now): what failed or killed writes leave
    behind, in the bucket directories and ``manifest/``, ``index/``,
    ``statistics/``. A younger file may belong to a write not yet committed:
    use a short ``older_than`` only when no writer is running. Returns what
    went (:class:`Orphans`); with ``dry_run``, what would go, nothing
    deleted. See ``rowformat.paimon._orphans``."""
    if not is_table(path, storage_options):
        raise DatasetError(f"{path} is not a Paimon table: no {SCHEMA_DIR}/schema-<n> files")
    return remove_orphans(path, older_than, catalog_options(path, storage_options), dry_run)


def compact(table_or_path, *, partitions: Iterable[dict] | None = None, full: bool = False,
            storage_options: dict | None = None, dry_run: bool = False,
            progress=None, rewrite=None) -> Compacted:
    """Compacts a table (a path or a pypaimon ``FileStoreTable``) as Paimon
    Java does, in one ``COMPACT`` snapshot: by bucket, an append table's small
    files (``compaction.min.file-num``, ``target-file-size``,
    ``compaction.small-file-ratio``) or a primary-key table's sorted runs
    (universal compaction: ``num-sorted-run.compaction-trigger``, ...;
    merged by the table's merge engine) rewritten (``full``: a full
    compaction), only in ``partitions`` (dicts of partition key to value) if
    given. Returns what it did (:class:`Compacted`); with ``dry_run``, what
    it would rewrite, nothing written. ``progress(done, total)`` is
    called after each bucket. A concurrent commit that deleted an input
    file meanwhile makes it give up: ``CompactionConflictError``, nothing
    left behind. ``rewrite(table, tasks)``, if given, runs the buckets'
    rewrites elsewhere and returns each one's written files
    (``rowformat.spark.compact``: one Spark task a bucket, each through
    :func:`rewrite_shipped`). See ``rowformat.paimon._compact``."""
    if isinstance(table_or_path, (str, os.PathLike)):
        path = os.fspath(table_or_path)
        table = open_table(path, storage_options=storage_options)
        storage_options = catalog_options(path, storage_options)
    else:
        table = table_or_path
    return _compact.compact(table, None if partitions is None else list(partitions), full,
                            dry_run, progress, storage_options, rewrite=rewrite)


def rewrite_shipped(shipped: bytes, i: int) -> list:
    """Task ``i`` of a compaction planned elsewhere, rewritten here (on a
    Spark executor); returns the metas of the files it wrote. ``shipped`` is
    the pickle of (the table's path, its store's settings, the schema id it
    was planned at, the tasks)."""
    import pickle
    path, storage_options, schema_id, tasks = pickle.loads(shipped)
    table = open_table(path, storage_options=storage_options)
    if int(table.table_schema.id) != schema_id:
        raise CompactionConflictError(f"{path}: the table's schema changed from {schema_id} to "
                                      f"{table.table_schema.id} while it was compacted")
    return _compact._rewrite(table, tasks[i])


def snapshot_by_id(table, snapshot_id: int):
    """Snapshot ``snapshot_id`` of the table (pypaimon's), None if there is none."""
    sm = table.snapshot_manager()
    with acceleration(), reading(sm.get_snapshot_path(snapshot_id), "snapshot"):
        return sm.get_snapshot_by_id(snapshot_id)


def latest_snapshot(table):
    """The table's latest snapshot (pypaimon's), None without one."""
    with acceleration(), reading(lambda: _snapshot_path(table, pinned=False), "snapshot"):
        return table.snapshot_manager().get_latest_snapshot()


def latest_snapshot_id(table) -> int | None:
    snap = latest_snapshot(table)
    return None if snap is None else snap.id


def pin(path: str, snapshot_id: int | None = None, tag: str | None = None,
        storage_options: dict | None = None):
    """(table, snapshot id): the table at ``path`` as of ``snapshot_id``,
    ``tag`` or else its latest snapshot, pinned so that what is planned now
    and what is read later agree whatever commits come between; the id is
    None for a table without any snapshot (and for a tag)."""
    table = open_table(path, snapshot_id=snapshot_id, tag=tag, storage_options=storage_options)
    if tag is not None:
        return table, None
    if snapshot_id is None:
        snapshot_id = latest_snapshot_id(table)
        if snapshot_id is not None:
            table = open_table(path, snapshot_id=snapshot_id, storage_options=storage_options)
    return table, snapshot_id


def row_type(table) -> RowType:
    """The table's columns as a rowformat RowType."""
    return _field_types.row_type(table.fields)


def create_table(path: str, schema: RowType, *, partition_keys: Iterable[str] = (),
                 primary_keys: Iterable[str] = (), options: dict[str, str] | None = None,
                 storage_options: dict | None = None):
    """Creates the table at ``path`` (``file.format=row`` unless ``options``
    say otherwise; ``storage_options`` as for :func:`open_table`) and
    returns it; when another writer created it meanwhile, returns that one."""
    return create_or_open(path, schema, partition_keys=partition_keys,
                          primary_keys=primary_keys, options=options,
                          storage_options=storage_options)[0]


def create_or_open(path: str, schema: RowType, *, partition_keys: Iterable[str] = (),
                   primary_keys: Iterable[str] = (), options: dict[str, str] | None = None,
                   storage_options: dict | None = None):
    """(table, created): :func:`create_table`'s table, and whether this call
    created it: its own exclusive create of ``schema/schema-0`` succeeded
    (False when another writer's create won the race, whose table is
    returned). The options are checked first (TableOptionError names a
    bad one): nothing is written for a table that could not be used."""
    _pypaimon_table_class()
    from pypaimon import Schema
    from pypaimon.common.file_io import FileIO
    from pypaimon.common.options import Options
    from pypaimon.schema.data_types import DataField
    from pypaimon.schema.schema_manager import SchemaManager

    partition_keys, primary_keys = list(partition_keys), list(primary_keys)
    for kind, keys in (("partition", partition_keys), ("primary", primary_keys)):
        for k in keys:
            if k not in schema.names:
                raise SchemaError(f"{kind} key {k!r} is not a column; the columns are "
                                  f"{list(schema.names)}")
    opts = {"file.format": "row", **(options or {})}
    _table_options.check_values(opts, primary_keys)
    if opts["file.format"] == "row":       # a block size no write could use: refused now
        from pypaimon.common.options.core_options import CoreOptions
        table_block_size(CoreOptions(Options(dict(opts))))
    fields = [DataField.from_dict(j) for j in schema_json.to_json_fields(schema)]
    file_io = FileIO.get(path, Options(catalog_options(path, storage_options)))
    manager = SchemaManager(file_io, path)
    try:
        # Accelerated: schema-0 is created only if absent, atomically, on every
        # store (_rename, _commit), so exactly one racing creator gets True.
        # pypaimon's create_table returns only after its own commit of
        # schema-0 succeeded, and raises RuntimeError once it sees one there.
        with acceleration():
            manager.create_table(Schema(fields=fields, partition_keys=partition_keys,
                                        primary_keys=primary_keys, options=opts))
        created = True
    except RuntimeError as e:
        if isinstance(e.__cause__, RowFormatError):     # an unsafe store refused, say
            raise e.__cause__ from None
        if not is_table(path, storage_options):   # not the "schema exists" race: a real failure
            raise
        created = False
    except ValueError as e:                 # pypaimon's own option checks
        raise TableOptionError(f"{path}: {e}") from None
    return open_table(path, storage_options=storage_options), created


# ---------------------------------------------------------------- planning and reading

def plan(table, columns: list[str] | None = None, partition_filter=None,
         predicate=None) -> list:
    """The table's splits (pypaimon's scan of the table's snapshot),
    reading ``columns`` (default all), of the partitions that
    ``partition_filter`` (a pypaimon ``Predicate`` on partition keys) keeps,
    and of the partitions, buckets and files ``predicate`` (any pypaimon
    ``Predicate``) may match by their statistics. Only the scan sees
    ``predicate``: :func:`read_batches` still reads every row of a split."""
    rb = table.new_read_builder()
    if columns is not None:
        rb = rb.with_projection(columns)
    if partition_filter is not None:
        rb = rb.with_partition_filter(partition_filter)
    if predicate is not None:
        rb = rb.with_filter(predicate)
    # (accelerated: manifests are read as untrusted input, _metadata)
    with acceleration(), reading(lambda: _snapshot_path(table), "snapshot or manifest list"):
        return list(rb.new_scan().plan().splits())


def split_bytes(split) -> int:
    return sum(int(f.file_size or 0) for f in split.files)


OPEN_COST = 4 << 20                 # pypaimon's and Spark's default cost of opening a file


def split_target(total_bytes: int, max_bytes: int, open_cost: int, parallelism: int) -> int:
    """Spark's size of a file partition (``FilePartition.maxSplitBytes``):
    ``max_bytes``, or less when that spreads ``total_bytes`` (files' sizes
    plus their open costs) over ``parallelism`` cores, but not below one
    file's open cost."""
    return min(max_bytes, max(open_cost, -(-total_bytes // max(1, parallelism))))


def plan_splits(table, columns: list[str] | None = None,
                partition_leaves: Iterable[tuple[str, str, Any]] = (), predicate=None
                ) -> list[Any]:
    """The table's splits as small as pypaimon can make them: one data file
    each, except files that must be read together (a primary-key table's
    overlapping runs, a data-evolution table's files of one row range).
    pypaimon's default packs files into 128 MiB splits, which would make a
    table of two 56 MB files one Spark task on one core; :func:`group_splits`
    packs these pieces instead."""
    table = table.copy({"source.split.target-size": "1 b"})
    return plan(table, columns, partition_predicate(table, partition_leaves), predicate)


# PredicateBuilder's method for each comparison a partition filter may make
PREDICATE_METHODS = {"=": "equal", "<": "less_than", "<=": "less_or_equal", ">": "greater_than",
                     ">=": "greater_or_equal", "in": "is_in"}


def partition_predicate(table, leaves: Iterable[tuple[str, str, Any]]):
    """The AND of ``(op, partition key, literal)`` leaves (``op`` a key of
    PREDICATE_METHODS; "in" takes a list) as a pypaimon Predicate, or None."""
    leaves = list(leaves)
    if not leaves:
        return None
    pb = table.new_read_builder().new_predicate_builder()
    return pb.and_predicates([getattr(pb, PREDICATE_METHODS[op])(column, literal)
                              for op, column, literal in leaves])


def group_splits(splits: list[Any], max_bytes: int, min_groups: int = 1,
                 open_cost: int = OPEN_COST) -> list[list[Any]]:
    """Splits packed, in order, into groups of at most :func:`split_target`
    bytes, each split weighing its files' bytes plus ``open_cost`` per file
    (Spark's rule for its file sources, ``min_groups`` being its default
    parallelism), so that a small table still gives every core work."""
    sizes = [split_bytes(s) for s in splits]
    costs = [open_cost * max(1, len(s.files)) for s in splits]
    target = split_target(sum(sizes) + sum(costs), max_bytes, open_cost, min_groups)
    groups: list[list[Any]] = []
    size = 0
    for s, n, cost in zip(splits, sizes, costs):
        # as Spark packs files: a split joins the group if its bytes fit
        # (the group counts the open costs of the splits it already holds)
        if groups and size + n <= target:
            groups[-1].append(s)
            size += n + cost
        else:
            groups.append([s])
            size = n + cost
    return groups


# ---------------------------------------------------------------- writing


def write_batches(table, batches: Iterable[pa.RecordBatch], overwrite: bool) -> bytes:
    """Writes ``batches`` (columns named as the table's, any order, Arrow
    types castable to the table's) as new data files and returns the
    pickled pypaimon commit messages; nothing is visible until they are
    committed. On failure the files written so far are removed."""
    target = arrow_schema(table)
    w = write_builder(table, overwrite).new_write()
    try:
        for batch in coalesce(batches):     # (the input may be a lazy Spark iterator)
            batch = conform_batch(batch, target)
            with acceleration():
                w.write_arrow_batch(batch)
        with acceleration():                # pypaimon writes the data files here
            messages = w.prepare_commit()
    except BaseException:
        try:
            w.abort()
        finally:
            w.close()
        raise
    w.close()
    return pickle.dumps(messages)


# pypaimon's write_arrow_batch costs ~6 ms a call whatever the rows (an
# Acero group-by of the rows by partition and bucket): on Spark's batches of
# spark.sql.execution.arrow.maxRecordsPerBatch (10,000) rows that was 0.15-0.3 s
# of CPU per 500,000 rows written, against 0.03 s in batches of 64Ki rows.
WRITE_BATCH_ROWS = 65536
WRITE_BATCH_BYTES = 64 << 20        # and no bigger: a string column's offsets stay far from 2 GiB


def coalesce(batches: Iterable[pa.RecordBatch], rows: int = WRITE_BATCH_ROWS,
             max_bytes: int = WRITE_BATCH_BYTES) -> Iterator[pa.RecordBatch]:
    """``batches`` (of one schema) without empty ones, consecutive small ones
    concatenated, in order, into batches of about ``rows`` rows or ``max_bytes``."""
    pending: list[pa.RecordBatch] = []
    n = size = 0
    for batch in batches:
        if not batch.num_rows:
            continue
        pending.append(batch)
        n += batch.num_rows
        size += batch.nbytes
        if n >= rows or size >= max_bytes:
            yield from _concat(pending)
            pending, n, size = [], 0, 0
    if pending:
        yield from _concat(pending)


def _concat(batches: list[pa.RecordBatch]) -> list[pa.RecordBatch]:
    if len(batches) == 1:
        return batches
    return pa.Table.from_batches(batches).combine_chunks().to_batches()


def commit(table, pickled: Iterable[bytes], overwrite: bool, dynamic: bool = False) -> None:
    """Commits the messages of every task in one snapshot. An overwrite
    replaces the whole table, or with ``dynamic`` only the partitions the
    messages write to (pypaimon's default is dynamic; Spark's is not)."""
    messages = [m for p in pickled for m in pickle.loads(p)]
    if overwrite:
        table = table.copy({"dynamic-partition-overwrite": "true" if dynamic else "false"})
    c = write_builder(table, overwrite).new_commit()
    try:
        with acceleration():    # snapshots created atomically on every store (_rename, _commit)
            c.commit(messages)
    finally:
        c.close()


def abort(table, pickled: Iterable[bytes]) -> None:
    """Deletes the files of uncommitted messages."""
    messages = [m for p in pickled for m in pickle.loads(p)]
    if not messages:
        return
    c = table.new_batch_write_builder().new_commit()
    try:
        c.abort(messages)
    finally:
        c.close()


# ---------------------------------------------------------------- data files

@dataclass(frozen=True)
class DataFile:
    """A data file of a snapshot, as the snapshot's manifests list it."""
    path: str
    partition: str          # "k=v,k2=v2", "" for an unpartitioned table
    bucket: int
    level: int
    schema_id: int
    format: Optional[str]   # the file name's extension: "row", "parquet", "blob", ...
    rows: int
    size: int
    meta: Any               # pypaimon's DataFileMeta


def _partition_text(split) -> str:
    p = split.partition
    fields = getattr(p, "fields", None) or []
    values = getattr(p, "values", None) or []
    return ",".join(f"{f.name}={v}" for f, v in zip(fields, values))


def _data_file_path(table, split, f) -> str:
    check_name(f.file_name, f"{table.table_path}: a manifest", "data file")
    p = getattr(f, "external_path", None) or getattr(f, "file_path", None)
    if p:
        return local_path(str(p), table.file_io)
    return urls.join(str(getattr(split, "bucket_path", None) or table.table_path), f.file_name)


def data_files(table) -> list[DataFile]:
    """The data files of the table's snapshot (none without one), once each,
    by partition, bucket and path."""
    if latest_snapshot_id(table) is None:
        return []           # a table without any commit
    seen: dict[str, DataFile] = {}
    for split in plan(table):
        for f in split.files:
            path = _data_file_path(table, split, f)
            if path not in seen:        # a file appears once even if two splits name it
                seen[path] = DataFile(
                    path=path, partition=_partition_text(split), bucket=int(split.bucket),
                    level=int(f.level), schema_id=int(f.schema_id),
                    format=os.path.splitext(f.file_name)[1].lstrip(".") or None,
                    rows=int(f.row_count), size=int(f.file_size), meta=f)
    return sorted(seen.values(), key=lambda d: (d.partition, d.bucket, d.path))


# ---------------------------------------------------------------- by _ROW_ID

def row_id_slices(table, splits: list[Any], ranges: np.ndarray
                  ) -> list[tuple[str, str, int, np.ndarray]] | None:
    """For ``_ROW_ID`` values in ``ranges`` (sorted, disjoint half-open
    intervals, an (n, 2) int64 array): each data file of ``splits`` holding
    some, as (path, file schema text, first row id, the intervals of its row
    numbers), so that only those rows are read. None when the files cannot
    be read by row number (a primary-key table, deletion vectors, a file
    without a row-id range, of another schema or a subset of the columns,
    row-id ranges that overlap: a data-evolution table's files)."""
    if table.primary_keys or not table.options.row_tracking_enabled():
        return None
    schema_id = table.table_schema.id
    out, spans = [], []
    schema_text = None              # every file has the table's schema (checked below)
    for split in splits:
        if any(d is not None for d in (split.data_deletion_files or [])):
            return None
        for f in split.files:
            if f.first_row_id is None or f.schema_id != schema_id or f.write_cols is not None:
                return None
            first, count = int(f.first_row_id), int(f.row_count)
            spans.append((first, first + count))
            lo = np.maximum(ranges[:, 0], first)
            hi = np.minimum(ranges[:, 1], first + count)
            keep = lo < hi
            if keep.any():
                rows = np.stack([lo[keep] - first, hi[keep] - first], axis=1)
                if schema_text is None:
                    schema_text = str(file_schema(table, f))
                out.append((_data_file_path(table, split, f), schema_text, first, rows))
    spans.sort()
    if any(b[0] < a[1] for a, b in zip(spans, spans[1:])):
        return None
    return out


class RowIdRouter(_row_ids.RowIdIndex):
    """The data files of one snapshot of a row-tracking table, by their
    ``_ROW_ID`` ranges (the one index: :class:`rowformat.paimon._row_ids.RowIdIndex`):
    ``route(ids)`` gives (file path, row number in the file), ``locate(ids)``
    (file, row) numbers. Picklable: numpy arrays, a list of paths (URLs for a
    table on an object store) and the ``storage_options`` to open them with."""

    @classmethod
    def from_table(cls, table, path: str, splits: list | None = None) -> "RowIdRouter":
        """The index of ``table``'s snapshot (or of its ``splits``), every
        file checked (_row_ids.check_file); SchemaError naming ``path``."""
        _row_ids.check_table(path, table.options.row_tracking_enabled(), table.primary_keys)
        schema_id = table.table_schema.id
        first, counts, paths, metas = [], [], [], []
        for split in plan(table) if splits is None else splits:
            deletions = list(split.data_deletion_files or [])
            for k, f in enumerate(split.files):
                _row_ids.check_file(path, f, schema_id,
                                    deletions[k] if k < len(deletions) else None)
                first.append(f.first_row_id)
                counts.append(f.row_count)
                paths.append(_data_file_path(table, split, f))
                metas.append(f)
        return cls(first, counts, paths, reader_options(table), path, metas)
