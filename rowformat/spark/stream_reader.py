"""``spark.readStream.format("paimon-row")``: a Paimon table read snapshot
by snapshot (PySpark 4.2+'s ``DataSourceStreamReader``).

An offset is Paimon's Spark connector's: ``{"snapshotId": S, "index": I,
"scanSnapshot": B}``: every split up to split ``I`` of snapshot ``S`` has
been read (``I = -1``: none of it), ``B`` saying whether ``S`` is read in
full (the starting scan) or for its changes. An offset that ends a snapshot
is written as the next one's ``(S + 1, -1, false)``. A micro-batch holds the
splits in ``(start, end]``, re-planned from the snapshot files alone (one
file per split, in one fixed order: :mod:`rowformat.paimon.streaming`), so
a batch Spark replays from its checkpoint reads exactly the same rows.

Which snapshots are read: Paimon's follow-up scanners (``APPEND``
snapshots for ``changelog-producer=none``, those with a changelog
otherwise, never a ``COMPACT`` one without); an ``OVERWRITE`` snapshot for
its changes with ``streaming-read-overwrite`` (primary-key tables: each
bucket's replaced rows as deletions, then its new rows) or
``streaming-read-append-overwrite`` (append tables: the new files).
``read.changelog``: a leading ``rowkind`` column, each row's kind.

Options (Paimon's names; read options over the table's): ``scan.mode``
(``latest-full``, the default: the latest snapshot in full, then what
follows; ``latest``; ``from-snapshot`` / ``from-snapshot-full`` with
``scan.snapshot-id``; ``from-timestamp`` with ``scan.timestamp-millis``),
``read.stream.maxFilesPerTrigger``, ``read.stream.maxRowsPerTrigger``,
``read.stream.maxBytesPerTrigger`` (a micro-batch stays within every limit
given, except that its first split is always admitted),
``read.stream.minRowsPerTrigger`` with ``read.stream.maxTriggerDelayMs``
(hold a batch back until it has that many rows or that long has passed),
and ``trigger(availableNow=True)`` (stops at the latest snapshot at start;
holds nothing back for ``minRowsPerTrigger``).

A snapshot a stream still has to read that has expired is an error naming
what to change, never a silent jump (Paimon's Java source falls back to its
starting snapshot; pypaimon's streaming scan waits forever).

``consumer-id`` (Paimon's connector's): each offset Spark commits is
recorded as the consumer's next snapshot (``consumer/consumer-<id>``, as
Paimon's master writes it: the snapshot after a finished one, the snapshot
itself when part-read, nothing during the starting full scan), so expiry
keeps what the stream has not read; a query without a checkpoint starts
from it, incrementally, unless ``consumer.ignore-progress`` is true.
"""
from __future__ import annotations

import json
import pickle
import time
from collections import OrderedDict
from typing import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable, ReadMaxBytes, ReadMaxFiles, ReadMaxRows, ReadMinRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from ..arrow_cast import cast_batch
from ..errors import DatasetError, SchemaError
from ..paimon import streaming
from ..paimon import tables as tb
from . import FORMAT_NAME
from .options import check_option_names, flag, requested_fields
from .preflight import Shipped
from .sizing import PartitionSizing
from .spark_types import spark_arrow_schema
from .table_source import ROW_KIND, SplitGroup, check_file_io, over_table_options
from .worker import settle_worker

SCAN_MODES = ("latest-full", "full", "latest", "from-snapshot", "from-snapshot-full",
              "from-timestamp")
LIMITS = ("read.stream.maxfilespertrigger", "read.stream.maxrowspertrigger",
          "read.stream.maxbytespertrigger")
MIN_ROWS, MAX_DELAY = "read.stream.minrowspertrigger", "read.stream.maxtriggerdelayms"
RETENTION = ("snapshot.num-retained.min", "snapshot.time-retained")


def offset(snapshot_id: int, index: int, scan_snapshot: bool) -> dict:
    """An offset, its keys in one order (Spark compares offsets as JSON text)."""
    return {"snapshotId": int(snapshot_id), "index": int(index),
            "scanSnapshot": bool(scan_snapshot)}


def _position(o: dict) -> tuple[int, int, bool]:
    try:
        return int(o["snapshotId"]), int(o["index"]), bool(o["scanSnapshot"])
    except (KeyError, TypeError, ValueError):
        raise DatasetError(f"{FORMAT_NAME}: {json.dumps(o)} is not a paimon-row stream offset "
                           f"(snapshotId, index, scanSnapshot): was this checkpoint written "
                           f"by another source?") from None


def _positive(options: dict, key: str) -> int | None:
    value = options.get(key)
    if value is None:
        return None
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError(f"{FORMAT_NAME}: option {key!r} must be a positive integer, "
                         f"got {value!r}")
    return n


class TableStreamReader(Shipped, DataSourceStreamReader, SupportsTriggerAvailableNow):
    """A Paimon table's snapshots as a stream. The driver's reader (one per
    query run) plans; tasks read on another instance made from the same
    options, so a partition carries all a task needs (pickled splits)."""

    def __init__(self, options, schema: StructType, path: str, sizing: PartitionSizing,
                 storage_options: dict):
        check_option_names(options, "stream read")
        check_file_io(path, storage_options)
        self.path = path
        self.storage_options = storage_options
        table = self._table()
        merged = over_table_options(table, options)
        self.row_kinds = flag(options, "read.changelog")   # not a table option (schema())
        extra = (ROW_KIND,) if self.row_kinds else ()
        if self.row_kinds and (ROW_KIND in tb.row_type(table).names
                               or schema.names[:1] != [ROW_KIND]):
            raise SchemaError(f"{FORMAT_NAME}: with read.changelog the first column is "
                              f"{ROW_KIND!r}, each row's kind, and no column of {path} may "
                              f"have that name (requested: {schema.simpleString()})")
        self.columns = [f.name for f in requested_fields(schema, tb.row_type(table), options,
                                                         path, extra)]
        self.spark_schema_json = schema.json()
        self.sizing = sizing
        self.read_overwrite = self._overwrite_option(table, merged)
        self.limits = {k: _positive(merged, k) for k in LIMITS + (MIN_ROWS, MAX_DELAY)}
        if (self.limits[MIN_ROWS] is None) != (self.limits[MAX_DELAY] is None):
            raise ValueError(f"{FORMAT_NAME}: options read.stream.minRowsPerTrigger and "
                             f"read.stream.maxTriggerDelayMs go together: give both or neither")
        self.mode = self._scan_mode(merged)
        self.start_snapshot = self._start(merged, "scan.snapshot-id", "from-snapshot",
                                          "from-snapshot-full")
        self.start_millis = self._start(merged, "scan.timestamp-millis", "from-timestamp")
        self.consumer = merged.get("consumer-id")
        if self.consumer is not None:
            streaming.consumer_path(path, self.consumer)      # (checks the name)
        self.ignore_progress = flag(merged, "consumer.ignore-progress")
        self._recorded: int | None = None     # the consumer's next snapshot, as last written
        self._initial: dict | None = None
        self._bound: int | None = None       # availableNow: the last snapshot read
        self._last_trigger = 0.0             # the last non-empty latestOffset (min rows)
        self._deltas: OrderedDict = OrderedDict()   # snapshot id -> its splits (driver)

    # ---- options

    @staticmethod
    def _overwrite_option(table, options: dict) -> bool:
        """Whether OVERWRITE snapshots are read for their changes: Paimon's
        ``streaming-read-overwrite`` (primary-key tables) and
        ``streaming-read-append-overwrite`` (append tables), with Java's checks."""
        pk = flag(options, "streaming-read-overwrite")
        if pk and not table.is_primary_key_table:
            raise ValueError(f"{FORMAT_NAME}: option streaming-read-overwrite is for "
                             f"primary-key tables (Paimon: \"Doesn't support streaming read "
                             f"the changes from overwrite when the primary keys are not "
                             f"defined\"): use streaming-read-append-overwrite")
        producer = str(options.get("changelog-producer", "none")).strip().lower()
        if pk and producer in ("full-compaction", "lookup"):
            raise ValueError(f"{FORMAT_NAME}: option streaming-read-overwrite cannot be true "
                             f"with changelog-producer {producer!r}: the changes would be "
                             f"read twice (Paimon's rule)")
        if pk and flag(options, "deletion-vectors.enabled"):
            raise ValueError(f"{FORMAT_NAME}: option streaming-read-overwrite is not "
                             f"supported yet on a table with deletion-vectors.enabled (the "
                             f"replaced files' deletion vectors are not applied)")
        return pk or (not table.is_primary_key_table
                      and flag(options, "streaming-read-append-overwrite"))

    @staticmethod
    def _scan_mode(options: dict) -> str:
        mode = options.get("scan.mode", "default").strip().lower()
        if mode == "default":
            if "scan.timestamp-millis" in options:
                return "from-timestamp"
            if "scan.snapshot-id" in options:
                return "from-snapshot"
            return "latest-full"
        if mode not in SCAN_MODES:
            raise ValueError(f"{FORMAT_NAME}: option scan.mode {mode!r} is not one a stream "
                             f"read supports: {', '.join(SCAN_MODES)}")
        return "latest-full" if mode == "full" else mode

    def _start(self, options: dict, key: str, *modes: str) -> int | None:
        """The integer option ``key`` that the scan modes ``modes`` need."""
        if self.mode not in modes:
            return None
        value = options.get(key)
        if value is None:
            raise ValueError(f"{FORMAT_NAME}: scan.mode {self.mode!r} needs option {key}")
        try:
            return int(value)
        except ValueError:
            raise ValueError(f"{FORMAT_NAME}: option {key} must be an integer, got "
                             f"{value!r}") from None

    def _table(self, snapshot_id: int | None = None):
        return tb.open_table(self.path, snapshot_id=snapshot_id,
                             storage_options=self.storage_options)

    # ---- offsets (driver)

    def initialOffset(self) -> dict:
        # (Spark asks twice on a fresh query: the same answer both times)
        if self._initial is None:
            self._initial = self._starting_offset()
        return self._initial

    def _starting_offset(self) -> dict:
        settle_worker()
        table = self._table()
        latest = tb.latest_snapshot_id(table)
        resumed = self._consumer_start(table)
        if resumed is not None:
            return resumed
        if self.mode == "latest-full":
            return offset(1, -1, False) if latest is None else offset(latest, -1, True)
        if self.mode == "latest":
            return offset((latest or 0) + 1, -1, False)
        if self.start_millis is not None:
            return offset(streaming.first_id_at_or_after(table, self.start_millis), -1, False)
        sid = self.start_snapshot
        assert sid is not None          # (from-snapshot and from-snapshot-full: _start)
        earliest = streaming.earliest_id(table)
        if earliest is not None and sid < earliest:
            raise DatasetError(
                f"{FORMAT_NAME}: {self.path}: option scan.snapshot-id is {sid} but the "
                f"earliest snapshot is {earliest} (the older ones have expired): start from "
                f"a snapshot that exists, or with scan.mode 'latest-full'")
        full = self.mode == "from-snapshot-full"
        if full and (latest is None or sid > latest):
            raise DatasetError(f"{FORMAT_NAME}: {self.path}: scan.mode 'from-snapshot-full' "
                               f"needs snapshot {sid}, which does not exist (latest: {latest})")
        return offset(sid, -1, full)

    def _consumer_start(self, table) -> dict | None:
        """Where the consumer stopped (Paimon's rule: it overrides scan.mode
        unless consumer.ignore-progress), or None."""
        if self.consumer is None or self.ignore_progress:
            return None
        sid = streaming.consumer_next_snapshot(self.path, self.consumer, self.storage_options)
        if sid is None:
            return None
        self._refuse_expired(table, sid, f"consumer {self.consumer!r} reads",
                             "use another consumer-id, or set consumer.ignore-progress to "
                             "start by scan.mode")
        return offset(sid, -1, False)

    def prepareForTriggerAvailableNow(self) -> None:
        settle_worker()
        self._bound = tb.latest_snapshot_id(self._table()) or 0

    def getDefaultReadLimit(self):
        # Spark takes one built-in limit; every option given applies (latestOffset)
        files, rows, size = (self.limits[k] for k in LIMITS)
        if files is not None:
            return ReadMaxFiles(files)
        if rows is not None:
            return ReadMaxRows(rows)
        if size is not None:
            return ReadMaxBytes(size)
        if self.limits[MIN_ROWS] is not None:
            return ReadMinRows(self.limits[MIN_ROWS])
        return ReadAllAvailable()

    def latestOffset(self, start: dict, limit) -> dict:
        settle_worker()
        # Spark plans batch N from the end of batch N - 1 once that batch is
        # in its commit log (or from the initial offset): read through. Its
        # own commit(end) comes later, and never for an availableNow run's
        # last batch, which would leave the consumer a batch behind.
        self._record_consumer(start)
        table = self._table()
        limited = not isinstance(limit, ReadAllAvailable)
        files, rows, size = (self.limits[k] for k in LIMITS) if limited else (None,) * 3
        n_files = n_rows = n_bytes = 0
        end = start
        for unit in self._units(table, start, self._last_to_read(table)):
            sid, index, scan, split, count = unit
            if split is None:                   # snapshot sid done (or had nothing to read)
                end = offset(sid + 1, -1, False)
                continue
            f_rows = sum(int(f.row_count) for f in split.files)
            f_bytes = tb.split_bytes(split)
            if n_files and ((files is not None and n_files + 1 > files)
                            or (rows is not None and n_rows + f_rows > rows)
                            or (size is not None and n_bytes + f_bytes > size)):
                break
            n_files, n_rows, n_bytes = n_files + 1, n_rows + f_rows, n_bytes + f_bytes
            end = offset(sid + 1, -1, False) if index == count - 1 else offset(sid, index, scan)
        min_rows, delay = self.limits[MIN_ROWS], self.limits[MAX_DELAY]
        # (availableNow reads all it has to and stops: nothing is held back)
        if limited and min_rows is not None and delay is not None and end != start \
                and self._bound is None:
            now = time.monotonic()
            if n_rows < min_rows and (now - self._last_trigger) * 1000 < delay:
                return start
            self._last_trigger = now
        return end

    def _last_to_read(self, table) -> int:
        latest = tb.latest_snapshot_id(table) or 0
        return latest if self._bound is None else min(latest, self._bound)

    def _units(self, table, start: dict, last: int, end: tuple | None = None
               ) -> Iterator[tuple]:
        """(snapshot id, split index, full scan, split, splits in the
        snapshot) for each split after ``start``, through snapshot ``last``
        (or through the position ``end``), and (snapshot id, ..., None, 0)
        when a snapshot is done."""
        sid, index, scan = _position(start)
        self._check_not_expired(table, sid, last)
        while sid <= last:
            if scan:
                splits = streaming.full_splits(self.path, sid, self.storage_options)
            else:
                snap = tb.snapshot_by_id(table, sid)
                if snap is None:
                    self._check_not_expired(table, sid, last)
                    return                     # (not there yet)
                splits = self._delta(table, snap)
            for j, split in enumerate(splits):
                if j <= index:
                    continue
                if end is not None and (sid, j) > end:
                    return
                yield sid, j, scan, split, len(splits)
            if end is not None and (sid + 1, -1) > end:
                return
            yield sid, len(splits), scan, None, 0
            sid, index, scan = sid + 1, -1, False

    def _delta(self, table, snap) -> list:
        splits = self._deltas.get(snap.id)
        if splits is None:
            if snap.commit_kind == "OVERWRITE" and self.read_overwrite:
                splits = streaming.overwrite_splits(table, snap)
            elif streaming.reads_incrementally(table, snap):
                splits = streaming.delta_splits(table, snap)
            else:
                splits = []
            self._deltas[snap.id] = splits
            while len(self._deltas) > 64:
                self._deltas.popitem(last=False)
        return splits

    def _check_not_expired(self, table, sid: int, last: int) -> None:
        if sid > last:
            return
        self._refuse_expired(table, sid, "this stream has to read",
                             f"keep snapshots longer (the table options "
                             f"{' / '.join(RETENTION)}, above the longest time a query is "
                             f"stopped), or start a new query (a new checkpointLocation) with "
                             f"scan.mode 'latest-full'")

    def _refuse_expired(self, table, sid: int, who: str, fix: str) -> None:
        """A DatasetError when snapshot ``sid``, which ``who`` reads next, has expired."""
        earliest = streaming.earliest_id(table)
        if earliest is not None and sid < earliest:
            raise DatasetError(
                f"{FORMAT_NAME}: {self.path}: {who} snapshot {sid} next, but the earliest "
                f"snapshot is {earliest}: the snapshots it had not read have expired, and "
                f"their rows cannot be read; {fix}")

    # ---- planning (driver) and reading (tasks)

    def partitions(self, start: dict, end: dict):
        settle_worker()
        table = self._table()
        e_sid, e_index, _ = _position(end)
        splits = [u[3] for u in self._units(table, start, e_sid, (e_sid, e_index))
                  if u[3] is not None]
        if not splits:
            return []
        s = self.sizing
        return [SplitGroup(pickle.dumps(g), len(g)) for g in
                tb.group_splits(splits, s.max_partition_bytes, s.parallelism, s.open_cost)]

    def read(self, partition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, SplitGroup):
            return
        settle_worker()
        target = spark_arrow_schema(StructType.fromJson(json.loads(self.spark_schema_json)))
        table = self._table()
        for batch in self._batches(table, pickle.loads(partition.splits)):
            if self.row_kinds:
                batch = batch.rename_columns([ROW_KIND] + batch.schema.names[1:])
            yield cast_batch(batch, target, truncate=True)

    def _batches(self, table, units: list) -> Iterator[pa.RecordBatch]:
        """The rows of a partition's splits and :class:`~streaming.Changes`,
        in order, led by pypaimon's row kind column where the stream has one."""
        run: list = []
        for unit in units + [None]:
            if unit is not None and not isinstance(unit, streaming.Changes):
                run.append(unit)
                continue
            yield from tb.read_batches(table, run, self.columns, self.row_kinds)
            run = []
            if unit is not None:
                for batch in streaming.read_changes(table, unit, self.columns):
                    yield batch if self.row_kinds else batch.drop_columns([tb.ROW_KIND])

    def commit(self, end: dict) -> None:
        # Spark's checkpoint holds the progress; a consumer records it for
        # expiry and for queries without a checkpoint
        self._record_consumer(end)

    def _record_consumer(self, done: dict) -> None:
        """The consumer's next snapshot after the offset ``done``, read
        through: offset(S + 1, -1) follows a finished snapshot S, offset(S,
        i) is S part-read (kept), and nothing is recorded during the
        starting full scan. Written when it changes."""
        if self.consumer is None:
            return
        sid, _, scan = _position(done)
        if scan or sid == self._recorded:
            return
        streaming.record_consumer(self.path, self.consumer, sid, self.storage_options)
        self._recorded = sid

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_deltas"] = OrderedDict()    # (the driver's cache stays on the driver)
        return state
