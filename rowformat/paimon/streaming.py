"""A Paimon table as a stream of snapshots, through pypaimon: what a
streaming source and an exactly-once streaming sink need and pypaimon lacks.

* sink: :func:`last_identifier` (the ``commitIdentifier`` of a commit
  user's latest snapshot, found as Paimon Java's ``filterCommitted`` finds
  it: walking back from the latest snapshot, stopping at the first missing
  one) and :func:`commit_once` (commits a batch's messages under a user and
  identifier unless that user already committed the identifier or a later
  one; then the messages' files are deleted instead);
* source: :func:`earliest_id`, :func:`first_id_at_or_after` (the first
  snapshot committed at or after a time), :func:`reads_incrementally` (the
  snapshots a stream reads: ``APPEND`` ones for ``changelog-producer=none``,
  those with a changelog otherwise; never ``COMPACT`` ones without a
  changelog), :func:`delta_splits` (the splits of what one snapshot added,
  pypaimon's follow-up plan), :func:`overwrite_splits` (what an OVERWRITE
  snapshot changed, as Paimon's ``streaming-read-overwrite`` reads it, with
  :func:`read_changes`) and :func:`full_splits` (every file of a
  snapshot), each in one deterministic order: a replayed range plans the
  same splits;
* consumers (``consumer/consumer-<id>`` holding ``{"nextSnapshot": N}``,
  the layout of Paimon Java's and pypaimon's ``ConsumerManager``):
  :func:`consumer_next_snapshot` and :func:`record_consumer`, which writes
  it atomically (pypaimon's ``overwrite_file_utf8`` rewrites in place).
  Expiry keeps every snapshot from the lowest ``nextSnapshot`` on.
"""
from __future__ import annotations

import json
import pickle
from typing import Any, Iterable, Iterator

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import DatasetError, PaimonIntegrationError, TableMetadataError
from ..io import fileio
from ..io.output import write_atomically
from . import tables as tb
from ._expire import CONSUMER_PREFIX, consumer_path  # noqa: F401 (the layout: expiry reads it)
from ._metadata import reading


# ---------------------------------------------------------------- the sink's dedupe

def _last_identifier(table, commit_user: str) -> tuple[int | None, bool]:
    """(:func:`last_identifier`, whether every snapshot back to the first was there)."""
    latest = tb.latest_snapshot_id(table)
    if latest is None:
        return None, True
    for sid in range(latest, 0, -1):
        snap = tb.snapshot_by_id(table, sid)
        if snap is None:
            return None, False
        if snap.commit_user == commit_user:
            return int(snap.commit_identifier), True
    return None, True


def last_identifier(table, commit_user: str) -> int | None:
    """The ``commitIdentifier`` of ``commit_user``'s latest snapshot, or None
    when none of the snapshots back to the first missing one (expired) is
    that user's."""
    return _last_identifier(table, commit_user)[0]


def abort_once(table, pickled: Iterable[bytes], commit_user: str, identifier: int) -> bool:
    """Deletes the files of a batch's messages unless a snapshot may name
    them: Spark aborts a batch whose commit raised, and a commit can raise
    after its snapshot was created (a lost reply, a failure after it). So
    the files go only when the user's latest snapshot is known to be of an
    earlier batch (or there is none, every snapshot there); otherwise they
    are kept (``remove_orphan_files`` takes them if no snapshot names them).
    True when they were deleted."""
    done, complete = _last_identifier(table, commit_user)
    if (done is not None and done >= identifier) or (done is None and not complete):
        return False
    tb.abort(table, pickled)
    return True


def commit_once(table, pickled: Iterable[bytes], commit_user: str, identifier: int) -> bool:
    """Commits the messages (pickled, as :func:`tables.write_batches` gives
    them) in one snapshot tagged ``(commit_user, identifier)``, unless the
    user's latest snapshot already has ``identifier`` or a later one: a
    replay of a committed batch, whose new files are then deleted. True
    when this call committed (an empty batch makes no snapshot)."""
    pickled = list(pickled)
    done = last_identifier(table, commit_user)
    if done is not None and done >= identifier:
        tb.abort(table, pickled)
        return False
    messages = [m for p in pickled for m in pickle.loads(p)]
    c = table.new_stream_write_builder()._with_commit_user(commit_user).new_commit()
    try:
        with tb.acceleration():    # snapshots created atomically on every store (_commit)
            c.commit(messages, identifier)
    finally:
        c.close()
    return True


# ---------------------------------------------------------------- the source's snapshots

def earliest_id(table) -> int | None:
    """The id of the table's earliest snapshot (None without snapshots)."""
    latest = tb.latest_snapshot_id(table)
    if latest is None:
        return None
    sm = table.snapshot_manager()
    with tb.acceleration(), reading(sm.get_snapshot_path(latest), "snapshot"):
        snap = sm.try_get_earliest_snapshot(stop_snapshot_id=latest)
    return None if snap is None else int(snap.id)


def first_id_at_or_after(table, millis: int) -> int:
    """The first snapshot committed at ``millis`` or later (as Paimon's
    ``from-timestamp`` starts), or the id the next commit will get."""
    latest = tb.latest_snapshot_id(table)
    if latest is None:
        return 1
    first = earliest_id(table) or latest
    for sid in range(first, latest + 1):
        snap = tb.snapshot_by_id(table, sid)
        if snap is not None and int(snap.time_millis) >= millis:
            return sid
    return latest + 1


def _follow_up(table):
    """pypaimon's streaming scan of ``table``, which plans one snapshot's
    follow-up splits (delta or changelog, by ``changelog-producer``)."""
    scan = table.new_stream_read_builder().new_streaming_scan()
    if not (hasattr(scan, "_create_follow_up_plan") and hasattr(scan, "follow_up_scanner")):
        raise PaimonIntegrationError(
            "this pypaimon's AsyncStreamingTableScan has no _create_follow_up_plan / "
            "follow_up_scanner (pypaimon 2.1.0 has both): paimon-row cannot plan a "
            "snapshot's changes with it")
    return scan


def reads_incrementally(table, snapshot) -> bool:
    """Whether a stream reads ``snapshot``'s changes by Paimon's follow-up
    scanners: APPEND snapshots for ``changelog-producer=none``, those with a
    changelog otherwise, so no COMPACT snapshot without one (an OVERWRITE
    snapshot read for its changes is :func:`overwrite_splits`' instead)."""
    return bool(_follow_up(table).follow_up_scanner.should_scan(snapshot))


def _one_file_splits(table):
    return table.copy({"source.split.target-size": "1 b"})


def _ordered(splits: list) -> list:
    """Splits in one order whatever pypaimon's: by partition, bucket and
    their first file's name (each split is one file of an append table)."""
    def key(s):
        values = tuple(str(v) for v in (getattr(s.partition, "values", None) or []))
        return values, int(s.bucket), min(f.file_name for f in s.files)
    return sorted(splits, key=key)


def delta_splits(table, snapshot) -> list[Any]:
    """The splits of what ``snapshot`` added (or its changelog), one file
    each where the table allows, in :func:`_ordered` order."""
    table = _one_file_splits(table)
    scan = _follow_up(table)
    with tb.acceleration(), reading(table.snapshot_manager().get_snapshot_path(snapshot.id),
                                    "snapshot or manifest list"):
        plan = scan._create_follow_up_plan(snapshot)
    return _ordered(list(plan.splits()))


class Changes:
    """What an OVERWRITE snapshot changed in one bucket of a primary-key
    table, as Paimon's ``streaming-read-overwrite`` reads it (``readChanges``:
    one split per bucket, read by Java's ``IncrementalChangelogReadProvider``):
    every row of the files it replaced (``before``) as a deletion (Java's
    ``ReverseReader``), then every row of the files it wrote (``after``) as
    written, neither merged. Splits are pypaimon's, one file each where the
    table allows; ``files`` all of them (for a stream's admission limits)."""

    def __init__(self, snapshot_id: int, before: list, after: list):
        self.snapshot_id, self.before, self.after = int(snapshot_id), before, after
        first = (before or after)[0]
        self.partition, self.bucket = first.partition, first.bucket

    @property
    def files(self) -> list:
        return [f for s in self.before + self.after for f in s.files]


def _streaming_splits(table, entries: list, snapshot_id: int) -> list:
    """pypaimon's streaming splits of ``entries`` (its follow-up plan's
    split generators; a streaming split is read without merging)."""
    from pypaimon.read.scanner.append_table_split_generator import AppendTableSplitGenerator
    from pypaimon.read.scanner.primary_key_table_split_generator import \
        PrimaryKeyTableSplitGenerator
    if not entries:
        return []
    generator = (PrimaryKeyTableSplitGenerator if table.is_primary_key_table
                 else AppendTableSplitGenerator)
    options = table.options
    splits = generator(table, options.source_split_target_size(),
                       options.source_split_open_file_cost(), deletion_files_map={},
                       snapshot_id=snapshot_id).create_splits(entries)
    for split in splits:
        split.is_streaming = True
    return splits


def overwrite_splits(table, snapshot) -> list[Any]:
    """What the OVERWRITE ``snapshot`` changed, for a stream that reads it
    (Paimon's ``getOverwriteChangesPlan``): an append table's new files
    (``streaming-read-append-overwrite``), a primary-key table's buckets as
    :class:`Changes` (``streaming-read-overwrite``), in :func:`_ordered` order."""
    table = _one_file_splits(table)
    scan = _follow_up(table)
    with tb.acceleration(), reading(table.snapshot_manager().get_snapshot_path(snapshot.id),
                                    "snapshot or manifest list"):
        # pypaimon's follow-up plan takes only ADD entries (it refuses
        # others): the delta manifests are read here, DELETE entries too
        entries = [e for m in scan._manifest_list_manager.read_delta(snapshot)
                   for e in scan._manifest_file_manager.read(m.file_name)]
    added = [e for e in entries if e.kind == 0]
    if not table.is_primary_key_table:
        return _ordered(_streaming_splits(table, added, snapshot.id))
    buckets: dict[tuple, tuple[list, list]] = {}
    for before, kind_entries in ((True, [e for e in entries if e.kind != 0]), (False, added)):
        for split in _streaming_splits(table, kind_entries, snapshot.id):
            where = (tuple(getattr(split.partition, "values", None) or ()), int(split.bucket))
            buckets.setdefault(where, ([], []))[0 if before else 1].append(split)
    return _ordered([Changes(snapshot.id, _ordered(b), sorted(a, key=_written_order))
                     for b, a in buckets.values()])


def _written_order(split) -> tuple:
    """A bucket's new files in the order their rows were written (sequence
    numbers; then names, for one fixed order)."""
    return min(int(f.min_sequence_number) for f in split.files), \
        min(f.file_name for f in split.files)


def read_changes(table, changes: Changes, columns: list[str]) -> Iterator[pa.RecordBatch]:
    """The rows of ``changes``, led by :data:`tables.ROW_KIND`: the replaced
    rows as ``-D``, then the written ones with their kinds. A replaced file
    holding a retraction is Java's error too (``ReverseReader``)."""
    where = (f"{table.table_path}: snapshot {changes.snapshot_id} (OVERWRITE) replaced, in "
             f"partition {list(getattr(changes.partition, 'values', None) or [])} bucket "
             f"{changes.bucket},")
    off = "set streaming-read-overwrite to false to skip OVERWRITE snapshots"
    replaced = tb.read_batches(table, changes.before, columns, row_kinds=True)
    while True:
        try:
            batch = next(replaced, None)
        except FileNotFoundError as e:
            before = changes.snapshot_id - 1
            why = (f"snapshot {before}, the last to hold them, has expired; keep snapshots "
                   f"longer than a stream may lag (snapshot.num-retained.min, "
                   f"snapshot.time-retained), or "
                   if tb.snapshot_by_id(table, before) is None else "")
            raise DatasetError(f"{where} files that are gone ({e}): {why}{off}") from None
        if batch is None:
            break
        kinds = batch.column(0)
        if not pc.all(pc.is_in(kinds, _ADDS)).as_py():
            raise DatasetError(
                f"{where} a file holding retractions "
                f"({sorted(set(kinds.to_pylist()) - set(_ADDS.to_pylist()))}): "
                f"streaming-read-overwrite reads the replaced rows as deletions, and a "
                f"retraction cannot be reversed (Paimon Java fails here too); {off}")
        yield batch.set_column(0, tb.ROW_KIND, pa.repeat("-D", batch.num_rows))
    yield from tb.read_batches(table, changes.after, columns, row_kinds=True)


_ADDS = pa.array(["+I", "+U"])


def full_splits(path: str, snapshot_id: int, storage_options: dict | None) -> list[Any]:
    """The splits of every row of snapshot ``snapshot_id``, one file each
    where the table allows, in :func:`_ordered` order."""
    table = tb.open_table(path, snapshot_id=snapshot_id, storage_options=storage_options)
    return _ordered(tb.plan_splits(table))


# ---------------------------------------------------------------- consumers

def consumer_next_snapshot(root: str, consumer_id: str,
                           storage_options: dict | None = None) -> int | None:
    """The snapshot the consumer reads next, or None when it has no file."""
    path = consumer_path(root, consumer_id)
    if fileio.kind(path, storage_options) is None:
        return None
    raw = fileio.read_bytes(path, storage_options)
    try:
        value = json.loads(raw)["nextSnapshot"]
    except (ValueError, KeyError, TypeError):
        value = None
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise TableMetadataError(f"{path}: a consumer file holds {{\"nextSnapshot\": <snapshot "
                                 f"id>}}, got {raw[:200]!r}")
    return value


def record_consumer(root: str, consumer_id: str, next_id: int,
                    storage_options: dict | None = None) -> None:
    """Sets the consumer's next snapshot to ``next_id``."""
    fileio.make_dirs(f"{root.rstrip('/')}/consumer")
    write_atomically(consumer_path(root, consumer_id),
                     json.dumps({"nextSnapshot": int(next_id)}).encode(), storage_options)
