"""What Paimon Java's writers do after each commit, done after each
accelerated pypaimon commit: compaction of the buckets the commit wrote,
then snapshot expiry by the table's retention options.

pypaimon neither compacts nor expires, so a table a Python or Spark job
keeps writing only grows slower and bigger. Under acceleration, every
successful ``APPEND`` or ``OVERWRITE`` commit of pypaimon's
``FileStoreCommit`` (``BatchTableCommit``/``StreamTableCommit.commit``, and
so every write of rowformat's Spark source and stream sink, which commit on
the driver) is followed, in the committing process, by:

1. **compaction** (:func:`rowformat.paimon._compact.compact`) of only the
   buckets the commit added files to, each picked as Java's writer picks
   it: a primary-key bucket by universal compaction once it holds
   ``num-sorted-run.compaction-trigger`` (5) sorted runs (not a full
   compaction), a bucketed append table's by ``BucketedAppendCompactManager``
   (``compaction.min.file-num`` files). Not ``bucket = -1`` append tables,
   which Java's writers never compact either (a dedicated compaction job,
   or Flink's streaming sink, runs ``AppendCompactCoordinator``: here
   :func:`rowformat.paimon.tables.compact`). A bucket under its triggers
   costs a read of the latest snapshot's manifests. One ``COMPACT``
   snapshot for all of them, by its own commit user. A
   compaction that conflicts with a concurrent commit (its inputs deleted
   or replaced meanwhile) gives up with nothing left behind, and the
   user's commit stands: a :class:`MaintenanceWarning` naming the table and
   the conflict, as Java logs it and carries on. So does any other failure
   of the compaction. A table whose options the compaction does not
   support yet (``_compact._refuse_unsupported``) is left uncompacted, with
   one warning per table and process, once a bucket is over its triggers;
2. **expiry** (:func:`rowformat.paimon._expire.expire`) by Java's rules
   (``ExpireSnapshotsImpl``): ``snapshot.num-retained.min`` (10),
   ``snapshot.num-retained.max`` (unlimited), ``snapshot.time-retained``
   (1 h), ``snapshot.expire.limit`` (50 per commit), once after the commit
   and its compaction (Java's ``maintain`` runs once per commit call, after
   both snapshots). Tags, branches, consumers and the kept snapshots keep
   their files (expiry's own guarantees). Before it, as in Java's
   ``maintain``, with ``consumer.expiration-time`` set, the consumers whose
   files are older than that are deleted
   (:func:`rowformat.paimon._expire.expire_consumers`), so that an abandoned
   stream no longer holds every snapshot. A failure of either is a warning
   too.

Nothing of it when the table says ``write-only = true`` (Java's switch for
jobs that leave compaction and expiry to a separate job), for a branch
other than ``main``, and (compaction only) under pypaimon 2.0.0, whose scan
lacks what the compaction plans with. Without acceleration pypaimon
commits as it always did.
"""
from __future__ import annotations

import threading
import time
import warnings
from typing import Any, Iterable

from ..errors import TableOptionError

_ADD = 0
_INT_MAX = 2 ** 31 - 1
_state = threading.local()
_unsupported_seen: set[str] = set()


class MaintenanceWarning(UserWarning):
    """The automatic compaction or expiry after a commit did not run or gave
    up; the commit itself succeeded."""


def _true(options: dict, key: str) -> bool:
    return str(options.get(key, "false")).strip().lower() == "true"


# Paimon's TimeUtils.parseDuration: a number, then a unit (none: milliseconds)
_UNITS_MS = {**dict.fromkeys(("d", "day", "days"), 86_400_000),
             **dict.fromkeys(("h", "hour", "hours"), 3_600_000),
             **dict.fromkeys(("min", "m", "minute", "minutes"), 60_000),
             **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), 1000),
             **dict.fromkeys(("", "ms", "milli", "millis", "millisecond", "milliseconds"), 1),
             **dict.fromkeys(("us", "µs", "micro", "micros", "microsecond", "microseconds"),
                             0.001),
             **dict.fromkeys(("ns", "nano", "nanos", "nanosecond", "nanoseconds"), 1e-6)}


def _duration_ms(options: dict, key: str, default_ms: int) -> int:
    text = options.get(key)
    if text is None:
        return default_ms
    raw = str(text).strip()
    digits = len(raw) - len(raw.lstrip("0123456789"))
    unit = raw[digits:].strip().lower()
    if not digits or unit not in _UNITS_MS:
        raise TableOptionError(f"table option {key!r} = {text!r}: expected a duration such "
                               f"as '1 h', '30 min' or '10 s'")
    return int(int(raw[:digits]) * _UNITS_MS[unit])


def retention(options: dict):
    """The table's retention options (a TableOptionError names a bad one)."""
    from ._expire import Retention
    from ._table_options import int_option
    least = int_option(options, "snapshot.num-retained.min", 10, 1)
    most = int_option(options, "snapshot.num-retained.max", _INT_MAX, 1)
    if most < least:
        # Java's SchemaValidation refuses the table
        raise TableOptionError(f"table option 'snapshot.num-retained.max' = {most} is below "
                               f"'snapshot.num-retained.min' = {least}")
    return Retention(num_retained_min=least, num_retained_max=most,
                     time_retained_ms=_duration_ms(options, "snapshot.time-retained", 3_600_000),
                     expire_limit=int_option(options, "snapshot.expire.limit", 50, 1))


def touched(entries: Iterable[Any]) -> set:
    """The ``(partition values, bucket)`` keys a commit's entries add files to."""
    return {(tuple(e.partition.values), int(e.bucket)) for e in entries if e.kind == _ADD}


def _warn(table_path: str, what: str) -> None:
    warnings.warn(MaintenanceWarning(f"{table_path}: {what}; the commit itself succeeded"),
                  stacklevel=4)


def after_commit(table, entries: list) -> None:
    """Compaction of the buckets ``entries`` added to, then expiry (the
    module's docstring); never raises for what it does (the commit is
    already made), only warns. Not re-entered from its own compaction."""
    if getattr(_state, "running", False):
        return
    options = dict(getattr(table.table_schema, "options", None) or {})
    if _true(options, "write-only"):
        return
    branch = getattr(table, "current_branch", None)
    if ((branch() if branch is not None else None) or "main") != "main":
        return          # expiry and compaction here are of the main branch's snapshots
    _state.running = True
    try:
        _compact_touched(table, options, touched(entries))
        _expire(table, options)
    finally:
        _state.running = False


def _compact_touched(table, options: dict, buckets: set) -> None:
    from ..errors import CompactionConflictError
    from . import _compact
    from ._patches import pypaimon_version
    from ._table_io import storage_options_of
    if not buckets or pypaimon_version() != "2.1.0":
        return
    if not table.is_primary_key_table and int(table.total_buckets) == -1:
        # Java's writers never compact a bucket = -1 append table
        # (AppendFileStoreWrite's compaction is a no-op; a dedicated job,
        # or Flink's streaming sink, runs AppendCompactCoordinator): compact()
        return
    where = str(table.table_path)
    try:
        snapshot = table.snapshot_manager().get_latest_snapshot()
        if snapshot is None:
            return
        tasks, _ = _compact.plan(table, snapshot, _compact.settings(table), None, False,
                                 buckets)
        if not tasks:       # no bucket the commit wrote is over its triggers
            return
        try:
            _compact._refuse_unsupported(table, where)
        except TableOptionError as e:
            if where not in _unsupported_seen:       # once per table and process
                _unsupported_seen.add(where)
                _warn(where, f"not compacted automatically: {e}")
            return
        _compact.compact(table, storage_options=storage_options_of(table), buckets=buckets)
    except CompactionConflictError as e:
        _warn(where, f"automatic compaction gave up ({e})")
    except Exception as e:      # the commit stands whatever the compaction met
        _warn(where, f"automatic compaction failed: {type(e).__name__}: {e}")


def _expire(table, options: dict) -> None:
    """Consumer expiry, then snapshot expiry, each warning on its own: Java
    expires consumers first "to avoid preventing snapshot expiration", and a
    consumer left by a failed consumer expiry still protects its snapshots."""
    from ._expire import expire, expire_consumers
    from ._table_io import storage_options_of
    where = str(table.table_path)
    try:
        if options.get("consumer.expiration-time") is not None:   # (no default: never)
            ttl = _duration_ms(options, "consumer.expiration-time", 0)
            expire_consumers(where, storage_options_of(table) or None,
                             int(time.time() * 1000) - ttl)
    except Exception as e:
        _warn(where, f"automatic consumer expiry failed: {type(e).__name__}: {e}")
    try:
        expire(where, None, None, storage_options_of(table) or None, False, retention(options))
    except Exception as e:
        _warn(where, f"automatic snapshot expiry failed: {type(e).__name__}: {e}")
