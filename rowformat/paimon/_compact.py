"""Compaction of append tables: :func:`rowformat.paimon.tables.compact`.

pypaimon never compacts (its commit refuses a compact increment), so a table
that Python keeps writing gains a file per bucket per commit. This is Paimon
Java's append compaction, run on demand, in three steps:

* **pick**, by bucket, as Java's planners pick (``_compact_pick``);
* **rewrite**: the picked files are read in order (``.row`` files of the
  table's schema by rowformat's reader, any other through pypaimon's read of
  one split of exactly those files) and written by pypaimon's append writer
  under acceleration, so that the new files are what an accelerated
  write makes (``.row`` files with their value statistics, rolled at
  ``target-file-size``). As Java's ``BaseAppendFileStoreWrite.compactRewrite``
  they are ``FileSource.COMPACT`` files at level 0 whose sequence numbers
  count on from the first input's ``minSequenceNumber``;
* **commit** one ``COMPACT`` snapshot, as Java's ``FileStoreCommitImpl``
  commits a compact increment: the inputs as DELETE entries, the outputs as
  ADD entries (partition, bucket and total buckets of the bucket compacted),
  through pypaimon's retrying commit with conflict detection on (the
  atomic snapshot create of ``_commit`` on object stores), its base
  manifests merged as Java's commit merges them (``_manifest_merge``). A commit that
  finds an input gone (a concurrent overwrite or compaction took it) gives
  up as Java's does, unretried: :class:`CompactionConflictError`, the files
  written deleted. New files appended meanwhile do not conflict.

A compaction killed before its snapshot is created leaves only data files
and manifests that no snapshot names (``remove_orphan_files`` takes them);
the table reads as before. Streaming readers skip ``COMPACT`` snapshots
(pypaimon's and Java's delta follow-up scanners read ``APPEND`` ones only).

Primary-key tables (``.row`` files) are picked by ``_compact_lsm`` (Java's
universal and full compaction; first-row's forced level-0 picks), merged by
``_compact_merge`` (every merge engine: deduplicate, partial-update,
aggregation, first-row, and ``sequence.field``) and written at the output
level. Not yet: changelog producers, deletion vectors, row tracking and
data evolution, postponed buckets, and the merge-engine options
``_compact_merge.refuse_unsupported`` names: refused with a
:class:`TableOptionError` naming the option.
"""
from __future__ import annotations

import dataclasses
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import pyarrow as pa

from ..errors import (CompactionConflictError, CompactionOutcomeError, DatasetError,
                      TableMetadataError, TableOptionError)
from . import _compact_pick as pick
from . import _compact_lsm, _compact_merge, _manifest_merge
from ._table_io import (acceleration, arrow_schema, conform_batch, file_schema, local_path,
                        read_batches, reader_options, write_builder)
from ._table_options import int_option, ratio_option

_COMPACT_SOURCE = 1                 # FileSource.COMPACT (APPEND is 0)
_BATCH_IDENTIFIER = 2 ** 63 - 1     # BatchWriteBuilder.COMMIT_IDENTIFIER: Long.MAX_VALUE
_ADD, _DELETE = 0, 1


@dataclass(frozen=True)
class Compacted:
    """What :func:`compact` did (or, with ``dry_run``, would do)."""
    snapshot: int | None    # the COMPACT snapshot's id (None: nothing compacted, or a dry run)
    buckets: int            # buckets compacted
    files_before: int       # the table's data files before
    bytes_before: int
    files_after: int        # and after (with dry_run: as before)
    bytes_after: int
    rewritten: int          # files compacted away
    written: int            # files written


@dataclass
class _Task:
    partition: Any          # pypaimon GenericRow
    bucket: int
    total_buckets: int | None
    files: list             # DataFileMeta, in the order they are rewritten
    level: int = 0          # the output level (primary-key tables: _compact_lsm)
    drop_delete: bool = False
    deeper: list = field(default_factory=list)     # the bucket's files beyond the output level


def _raw_options(table) -> dict:
    return dict(getattr(table.table_schema, "options", None) or {})


def _true(options: dict, key: str) -> bool:
    return str(options.get(key, "false")).strip().lower() == "true"


_KEY_ROOTS = frozenset({"TINYINT", "SMALLINT", "INT", "BIGINT", "BOOLEAN", "CHAR", "VARCHAR",
                        "BINARY", "VARBINARY", "DECIMAL", "DATE"})     # Arrow sorts them as Paimon


def _refuse_unsupported(table, where: str) -> None:
    options = _raw_options(table)
    for key in ("deletion-vectors.enabled", "row-tracking.enabled", "data-evolution.enabled"):
        if _true(options, key):
            raise TableOptionError(f"{where}: compaction of tables with {key} = true "
                                   f"is not supported yet")
    if str(options.get("bucket", "-1")).strip() == "-2":
        raise TableOptionError(f"{where}: compaction of postponed-bucket tables (bucket = -2) "
                               f"is not supported yet")
    if not table.is_primary_key_table:
        return
    _compact_merge.refuse_unsupported(table, options, where)
    for key in ("compaction.optimization-interval",
                "compaction.total-size-threshold", "compaction.incremental-size-threshold"):
        if options.get(key) not in (None, ""):
            raise TableOptionError(f"{where}: compaction of primary-key tables with {key} "
                                   f"is not supported yet")
    for key in ("compaction.force-up-level-0", "force-lookup"):
        if _true(options, key):
            raise TableOptionError(f"{where}: compaction of primary-key tables with {key} = "
                                   f"true is not supported yet")
    producer = str(options.get("changelog-producer", "none")).strip().lower()
    if producer != "none":
        raise TableOptionError(f"{where}: compaction of primary-key tables with "
                               f"changelog-producer = {producer} is not supported yet")
    fmt = str(options.get("file.format", "parquet")).strip().lower()
    if fmt != "row":
        raise TableOptionError(f"{where}: compaction of primary-key tables with file.format = "
                               f"{fmt} is not supported yet (row is)")
    from ._field_types import row_type
    for f in row_type(table.trimmed_primary_keys_fields).fields:
        if f.type.root not in _KEY_ROOTS:
            raise TableOptionError(f"{where}: compaction of primary-key tables keyed by "
                                   f"{f.name} ({f.type}) is not supported yet")


def _size_option(table, key: str, read: Callable[[], int]) -> int:
    try:
        value = int(read())
    except Exception as e:
        raise TableOptionError(f"table option {key} = {_raw_options(table).get(key)!r}: "
                               f"expected a memory size (128mb, 256 MB, 1gb, bytes): {e}") from None
    if value <= 0:
        raise TableOptionError(f"table option {key} = {_raw_options(table).get(key)!r}: "
                               f"expected a positive size")
    return value


def settings(table) -> pick.Settings:
    """The table's compaction options, checked (a bad one is a TableOptionError naming it)."""
    options = _raw_options(table)
    return pick.Settings(
        min_file_num=int_option(options, "compaction.min.file-num", 5, 1),
        target_file_size=_size_option(table, "target-file-size",
                                      lambda: table.options.target_file_size(False)),
        small_file_ratio=ratio_option(options, "compaction.small-file-ratio", 0.7),
        open_file_cost=_size_option(table, "source.split.open-file-cost",
                                    lambda: table.options.source_split_open_file_cost()))


def _live_entries(table, snapshot) -> list:
    """The ADD entries of ``snapshot`` that no later entry deletes (pypaimon's scan)."""
    from pypaimon.manifest.manifest_list_manager import ManifestListManager
    from pypaimon.read.scanner.file_scanner import FileScanner
    manifests = ManifestListManager(table).read_all(snapshot)
    return [e for e in FileScanner(table, lambda: ([], None)).with_all_buckets()
            .read_manifest_entries(manifests) if e.kind == _ADD]


def _wanted(partitions: list[dict] | None, table) -> Callable[[Any], bool]:
    if not partitions:
        return lambda partition: True
    keys = list(table.partition_keys)
    for spec in partitions:
        unknown = [k for k in spec if k not in keys]
        if unknown:
            raise DatasetError(f"{table.table_path}: no partition key {unknown[0]!r} "
                               f"(the table's partition keys: {keys})")
    specs = [{k: str(v) for k, v in spec.items()} for spec in partitions]

    def wanted(partition) -> bool:
        values = {f.name: str(v) for f, v in zip(partition.fields, partition.values)}
        return any(all(values.get(k) == v for k, v in spec.items()) for spec in specs)
    return wanted


def _check_entries(table, snapshot, entries: list) -> None:
    """A file listed live twice, or at a negative level, is a damaged
    table, not something to rewrite (twice, or left out of a full
    compaction's runs): refused naming it."""
    seen = set()
    for e in entries:
        where = f"{table.table_path}: snapshot {snapshot.id}"
        if int(e.file.level) < 0:
            raise TableMetadataError(f"{where}: data file {e.file.file_name} is at level "
                                     f"{e.file.level} (levels are 0 or more); refusing to "
                                     f"compact")
        key = e.identifier()
        if key in seen:
            raise TableMetadataError(f"{where}: data file {e.file.file_name} (bucket "
                                     f"{e.bucket}, level {e.file.level}) is added twice; "
                                     f"refusing to compact")
        seen.add(key)


def plan(table, snapshot, s: pick.Settings, partitions: list[dict] | None,
         full: bool, buckets: set | None = None) -> tuple[list[_Task], list]:
    """(the tasks, every live entry) of ``snapshot``; with ``buckets``
    (``(partition values tuple, bucket)`` keys), only those buckets'."""
    entries = _live_entries(table, snapshot)
    _check_entries(table, snapshot, entries)
    wanted = _wanted(partitions, table)
    groups: dict[tuple, list] = {}
    for e in entries:
        key = (tuple(e.partition.values), e.bucket)
        if wanted(e.partition) and (buckets is None or key in buckets):
            groups.setdefault(key, []).append(e)
    tasks = []
    unaware = int(table.total_buckets) == -1
    lsm_settings = _compact_lsm.settings(_raw_options(table)) if table.is_primary_key_table \
        else None
    for (_, bucket), group in sorted(groups.items(), key=lambda kv: (repr(kv[0][0]), kv[0][1])):
        files = [e.file for e in group]
        if lsm_settings is not None:
            got = _compact_lsm.pick(files, lsm_settings, full)
            if got is not None:
                runs, level = got
                unit = [f for r in runs for f in r.files]
                names = {f.file_name for f in unit}
                tasks.append(_Task(group[0].partition, bucket, group[0].total_buckets, unit,
                                   level, _compact_lsm.drop_delete(files, level),
                                   [f for f in files
                                    if f.level > level and f.file_name not in names]))
            continue
        if unaware:
            picked = pick.unaware_bucket(files, s, full)
        else:
            picked = pick.bucketed(files, s, full)
        for files in picked:
            tasks.append(_Task(group[0].partition, bucket, group[0].total_buckets, files))
    return tasks, entries


def _rewrite(table, task: _Task) -> list:
    """Writes the rows of ``task.files``, in order, as new COMPACT files; returns their metas."""
    from pypaimon.utils.file_store_path_factory import canonical_data_file_path
    from pypaimon.write.writer.append_only_data_writer import AppendOnlyDataWriter
    values = tuple(task.partition.values)
    for f in task.files + task.deeper:
        f.file_path = (f.physical_path() if f.external_path
                       else canonical_data_file_path(table, values, task.bucket, f.file_name))
    if table.is_primary_key_table:
        return _rewrite_merged(table, task)
    writer = AppendOnlyDataWriter(table, values, task.bucket, 0, table.options)
    try:
        # one accelerated() block for the whole rewrite: entering one per
        # input batch cost ~5% of a compaction of small files (its patches
        # checked each time); the block holds no user code, only the input
        # files' reads (rowformat's own, or read_batches' own blocks, nested)
        with acceleration():
            for batch in _input_batches(table, task):
                writer.write(batch)
            written = writer.prepare_commit()
    except BaseException:
        writer.abort()
        raise
    # Java's compactRewrite: the sequence counter starts at the first input's
    # minSequenceNumber and counts every row written
    sequence = task.files[0].min_sequence_number
    out = []
    for meta in written:
        out.append(dataclasses.replace(
            meta, file_source=_COMPACT_SOURCE, level=0,
            min_sequence_number=sequence,
            max_sequence_number=sequence + meta.row_count - 1))
        sequence += meta.row_count
    return out


def _rewrite_merged(table, task: _Task) -> list:
    """A primary-key unit's rows merged (``_compact_lsm``) and written at its output level."""
    from pypaimon.write.writer.key_value_data_writer import KeyValueDataWriter
    from ..row.reader import RowFileReader
    schema_id = table.table_schema.id
    old = [f.file_name for f in task.files if f.schema_id != schema_id]
    if old:
        raise DatasetError(f"{table.table_path}: compacting primary-key files of an older schema "
                           f"({old[0]}) is not supported yet")
    target = arrow_schema(table)
    keys = list(table.trimmed_primary_keys)
    parts = []
    for f in task.files:
        reader = RowFileReader(local_path(str(f.physical_path()), table.file_io),
                               file_schema(table, f), storage_options=reader_options(table))
        try:
            parts.append(reader.read())
        finally:
            reader.close()
    data = pa.concat_tables(parts)
    key_names = [f"_KEY_{k}" for k in keys]

    def deeper_keys() -> pa.Table:
        out = []
        for f in task.deeper:
            reader = RowFileReader(local_path(str(f.physical_path()), table.file_io),
                                   file_schema(table, f), storage_options=reader_options(table))
            try:
                out.append(reader.read(columns=key_names))
            finally:
                reader.close()
        keys_only = data.select(key_names)
        return pa.concat_tables(out).cast(keys_only.schema) if out else keys_only.slice(0, 0)
    merged = _compact_merge.merge(table, data, key_names, [part.num_rows for part in parts],
                                  [int(f.level) for f in task.files], task.drop_delete,
                                  deeper_keys)
    fields, arrays = [], []
    for k in keys:
        field = target.field(k)
        fields.append(pa.field(f"_KEY_{k}", field.type, nullable=field.nullable))
        arrays.append(merged.column(f"_KEY_{k}").cast(field.type))
    fields += [pa.field("_SEQUENCE_NUMBER", pa.int64(), nullable=False),
               pa.field("_VALUE_KIND", pa.int8(), nullable=False)]
    arrays += [merged.column("_SEQUENCE_NUMBER").cast(pa.int64()),
               merged.column("_VALUE_KIND").cast(pa.int8())]
    for field in target:
        fields.append(field)
        arrays.append(merged.column(field.name).cast(field.type))
    out = pa.Table.from_arrays(arrays, schema=pa.schema(fields)).combine_chunks()
    if not out.num_rows:
        return []           # every key deleted: the unit goes, nothing replaces it
    writer = KeyValueDataWriter(table, tuple(task.partition.values), task.bucket, 0,
                                table.options)
    try:
        with acceleration():
            writer._roll_write(out)
    except BaseException:
        writer.abort()
        raise
    # the files hold ``out``'s rows in order; each counts its retractions
    # (Java's _DELETE_ROW_COUNT; pypaimon's writer puts 0)
    kinds = out.column("_VALUE_KIND").to_numpy()
    metas, start = [], 0
    for meta in writer.committed_files:
        end = start + int(meta.row_count)
        deleted = int(((kinds[start:end] == 1) | (kinds[start:end] == 3)).sum())
        metas.append(dataclasses.replace(meta, file_source=_COMPACT_SOURCE, level=task.level,
                                         delete_row_count=deleted))
        start = end
    return metas


def _input_batches(table, task: _Task):
    """The rows of ``task.files`` in order: ``.row`` files of the table's
    schema read by rowformat directly (pypaimon's per-file reader stack costs
    ~13 ms a file, most of a compaction of small files), any other through
    pypaimon's read of one split of exactly those files."""
    from pypaimon.read.split import DataSplit
    from ..row.reader import RowFileReader
    schema_id = table.table_schema.id
    if all(f.file_name.endswith(".row") and f.schema_id == schema_id and not f.extra_files
           for f in task.files):
        target = arrow_schema(table)
        options = reader_options(table)
        for f in task.files:
            reader = RowFileReader(local_path(str(f.physical_path()), table.file_io),
                                   file_schema(table, f), storage_options=options)
            try:
                for batch in reader.read().to_batches():
                    if batch.num_rows:
                        yield conform_batch(batch, target)
            finally:
                reader.close()
        return
    split = DataSplit(list(task.files), task.partition, task.bucket, raw_convertible=True)
    yield from read_batches(table, [split], [f.name for f in table.fields])


def _delete_written(table, metas: Iterable, storage_options: dict | None) -> None:
    from ..io import fileio
    for meta in metas:
        for path in meta.collect_files():
            fileio.delete(local_path(str(path), table.file_io), storage_options)


def _entries(table, task: _Task, after: list) -> list:
    from pypaimon.manifest.schema.manifest_entry import ManifestEntry
    total = task.total_buckets if task.total_buckets is not None else table.total_buckets
    return ([ManifestEntry(kind=_DELETE, partition=task.partition, bucket=task.bucket,
                           total_buckets=total, file=f) for f in task.files]
            + [ManifestEntry(kind=_ADD, partition=task.partition, bucket=task.bucket,
                             total_buckets=total, file=f) for f in after])


def _ours(table, commit_user: str, since: int) -> int | None:
    """The id of the COMPACT snapshot ``commit_user`` committed after snapshot
    ``since``, None if no snapshot since names it (Java's check of the
    latest snapshots for its user before it takes a commit as not done).
    A snapshot in between that is gone (expired meanwhile) makes the answer
    unknowable: :class:`CompactionOutcomeError`."""
    sm = table.snapshot_manager()
    latest = sm.get_latest_snapshot()
    for sid in range(int(latest.id) if latest is not None else since, since, -1):
        snap = latest if sid == latest.id else sm.get_snapshot_by_id(sid)
        if snap is None:
            raise CompactionOutcomeError(
                f"{table.table_path}: cannot tell whether compaction {commit_user} committed: "
                f"snapshot {sid} is gone (expired meanwhile); the files it wrote are kept")
        if snap.commit_user == commit_user and snap.commit_kind == "COMPACT":
            return int(snap.id)
    return None


def _commit(table, entries: list, written: list, since: int,
            storage_options: dict | None) -> int:
    """Commits ``entries`` as one COMPACT snapshot over ``since`` (the
    planned snapshot's id), its base manifests merged as Java's commit
    merges them (``_manifest_merge``); returns its id. Given up on a
    conflict, it deletes the ``written`` data files and its merged manifests
    only once no snapshot since ``since`` is its own (an earlier attempt
    whose create raised may have succeeded)."""
    from ..io import fileio, urls
    commit_user = f"rowformat-compact-{uuid.uuid4()}"     # a dedicated job's own user (Java's)
    table_commit = write_builder(table, False).new_commit()
    table_commit.commit_user = commit_user
    fsc = table_commit.file_store_commit
    fsc.commit_user = commit_user
    lists = _manifest_merge.MergingManifestLists(
        fsc.manifest_list_manager, fsc.manifest_file_manager, fsc.manifest_target_size,
        _manifest_merge.merge_min_count(table))
    fsc.manifest_list_manager = lists
    created: list[int] = []
    snapshot_commit = fsc.snapshot_commit
    create = snapshot_commit.commit

    def noting_create(latest_uuid, snapshot, statistics):
        done = create(latest_uuid, snapshot, statistics)
        if done:
            created.append(int(snapshot.id))
        return done
    snapshot_commit.commit = noting_create
    try:
        with acceleration():
            try:
                fsc._try_commit(commit_kind="COMPACT", commit_identifier=_BATCH_IDENTIFIER,
                                commit_entries_plan=lambda latest: entries,
                                detect_conflicts=True, allow_rollback=False)
            except RuntimeError as e:
                if "Cannot determine whether commit" in str(e):
                    # pypaimon's retry after a create that raised: a snapshot
                    # it had to look at is gone
                    raise CompactionOutcomeError(f"{table.table_path}: {e}; the files the "
                                                 f"compaction wrote are kept") from e
                if "conflicts detected" not in str(e):
                    raise
                mine = None if created else _ours(table, commit_user, since)
                if created or mine is not None:
                    raise CompactionOutcomeError(
                        f"{table.table_path}: compaction {commit_user} committed snapshot "
                        f"{created[0] if created else mine} and then reported a conflict "
                        f"({e}); the files it wrote are kept") from e
                for name in lists.written:
                    fileio.delete(local_path(urls.join(
                        str(fsc.manifest_file_manager.manifest_path), name), table.file_io),
                        storage_options)
                _delete_written(table, written, storage_options)
                raise CompactionConflictError(
                    f"{table.table_path}: compaction gave up: a concurrent commit "
                    f"deleted or replaced files it rewrote ({e})") from None
    finally:
        table_commit.close()
    if created:
        return created[0]
    # committed by an attempt whose create raised (pypaimon found it after)
    mine = _ours(table, commit_user, since)
    if mine is None:
        raise CompactionOutcomeError(f"{table.table_path}: compaction {commit_user} reported "
                                     f"a commit, but no snapshot since {since} is its own; "
                                     f"the files it wrote are kept")
    return mine


def compact(table, partitions: list[dict] | None = None, full: bool = False,
            dry_run: bool = False, progress: Callable[[int, int], None] | None = None,
            storage_options: dict | None = None, buckets: set | None = None,
            rewrite: Callable[[Any, list], list] | None = None) -> Compacted:
    """Compacts ``table`` (a pypaimon FileStoreTable at its latest snapshot;
    ``storage_options`` its store's settings); with ``buckets``, only those
    (``(partition values tuple, bucket)``: the automatic compaction after a
    commit, of the buckets it wrote). ``progress(done, total)`` is called
    after each bucket's rewrite. ``rewrite(table, tasks)``, if given, does
    the rewrites elsewhere (``rowformat.spark.compact``: on the executors,
    each through ``tables.rewrite_shipped``) and returns each task's written
    files' metas, in order; by default each is rewritten here."""
    where = str(table.table_path)
    _refuse_unsupported(table, where)
    s = settings(table)
    _manifest_merge.merge_min_count(table)     # (checked before any work)
    if table.is_primary_key_table:
        _compact_lsm.settings(_raw_options(table))
    snapshot = table.snapshot_manager().get_latest_snapshot()
    if snapshot is None:
        return Compacted(None, 0, 0, 0, 0, 0, 0, 0)
    tasks, live = plan(table, snapshot, s, partitions, full, buckets)
    files_before = len(live)
    bytes_before = sum(int(e.file.file_size) for e in live)
    rewritten = sum(len(t.files) for t in tasks)
    if dry_run or not tasks:
        return Compacted(None, len({(repr(t.partition.values), t.bucket) for t in tasks}),
                         files_before, bytes_before, files_before, bytes_before,
                         rewritten, 0)
    written: list = []
    entries: list = []
    try:
        # (a generator here: each bucket's files are known, for the cleanup
        # below, as soon as it is rewritten)
        outputs = (rewrite(table, tasks) if rewrite is not None
                   else (_rewrite(table, task) for task in tasks))
        for i, (task, after) in enumerate(zip(tasks, outputs, strict=True)):
            written.extend(after)
            entries.extend(_entries(table, task, after))
            if progress is not None:
                progress(i + 1, len(tasks))
    except BaseException:
        _delete_written(table, written, storage_options)
        raise
    # (on a conflict _commit deletes the files once it knows no snapshot
    # names them; any other failure may have left the snapshot created: the
    # files stay, and remove_orphan_files takes them if it was not)
    snapshot_id = _commit(table, entries, written, int(snapshot.id), storage_options)
    removed = sum(int(f.file_size) for t in tasks for f in t.files)
    added = sum(int(f.file_size) for f in written)
    return Compacted(snapshot_id, len({(repr(t.partition.values), t.bucket) for t in tasks}),
                     files_before, bytes_before,
                     files_before - rewritten + len(written), bytes_before - removed + added,
                     rewritten, len(written))
