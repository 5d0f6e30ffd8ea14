"""Compaction of a primary-key bucket (the LSM tree), by Paimon Java's rules.

**Pick** (``UniversalCompaction.pick``): the bucket's sorted runs, newest
first: each level-0 file its own run (by ``maxSequenceNumber``, newest
first), then each non-empty level 1..max one run. With at least
``num-sorted-run.compaction-trigger`` runs: size amplification (all runs but
the oldest, × 100, above ``compaction.max-size-amplification-percent`` × the
oldest: everything to the max level), then size ratio (from the newest run,
each older run taken while it is no larger than the runs taken so far ×
(100 + ``compaction.size-ratio``)/100, a level-0 or 1 run taken anyway once
two are in; more than one run needed); with more runs than the trigger, the
newest runs - trigger + 1 runs, extended the same way. The output level
(``createUnit``): the max level when every run is taken, else the level of
the first run left out minus one, never 0 (runs are taken until one above
level 0 is in, whose level is used). A unit of one file already at its
output level is no task. Full (``CompactStrategy.pickFullCompaction``):
every run to the max level, nothing when the only run is already there.
``first-row`` tables (Java's ``needLookup``) pick by
``ForceUpLevel0Compaction`` (``lookup-compact`` radical): when universal
compaction picks nothing, every level-0 run, extended by size ratio, so
that each compaction leaves no level-0 file (their batch reads skip level 0).

**Rewrite** (``MergeTreeCompactRewriter``; the other merge engines and
``sequence.field``: ``_compact_merge``): the unit's rows (key
columns, ``_SEQUENCE_NUMBER``, ``_VALUE_KIND``, values) read by rowformat, per
key the row of the highest sequence number kept, with its sequence number
and kind; retractions (DELETE, UPDATE_BEFORE) dropped when the output level
is at least the highest non-empty level (``dropDelete``: nothing older
beneath could hold the key); written sorted by key at the output level by
pypaimon's key-value writer under acceleration, rolled at ``target-file-size``.
Java re-levels large files without rewriting them; here every file of the
unit is rewritten (the same rows).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ._table_options import int_option

RETRACTIONS = (1, 3)        # RowKind UPDATE_BEFORE, DELETE


@dataclass(frozen=True)
class LsmSettings:
    trigger: int            # num-sorted-run.compaction-trigger (5)
    max_size_amp: int       # compaction.max-size-amplification-percent (200)
    size_ratio: int         # compaction.size-ratio (1)
    num_levels: int         # num-levels (trigger + 1)
    force_level0: bool = False      # merge-engine = first-row: ForceUpLevel0Compaction


@dataclass
class Run:
    level: int
    files: list

    @property
    def size(self) -> int:
        return sum(int(f.file_size) for f in self.files)


def settings(options: dict) -> LsmSettings:
    trigger = int_option(options, "num-sorted-run.compaction-trigger", 5, 1)
    return LsmSettings(trigger=trigger,
                       max_size_amp=int_option(options, "compaction.max-size-amplification-percent",
                                         200, 0),
                       size_ratio=int_option(options, "compaction.size-ratio", 1, 0),
                       num_levels=int_option(options, "num-levels", trigger + 1, 2),
                       force_level0=str(options.get("merge-engine", "")).strip().lower()
                       == "first-row")


def sorted_runs(files: list) -> list[Run]:
    """``Levels.levelSortedRuns``: level-0 files newest first, then levels 1..max."""
    level0 = sorted((f for f in files if f.level == 0),
                    key=lambda f: (-f.max_sequence_number, -f.min_sequence_number, f.file_name))
    runs = [Run(0, [f]) for f in level0]
    for level in sorted({f.level for f in files if f.level > 0}):
        runs.append(Run(level, [f for f in files if f.level == level]))
    return runs


def _unit(runs: list[Run], max_level: int, count: int) -> tuple[list[Run], int]:
    if count == len(runs):
        level = max_level
    else:
        level = max(0, runs[count].level - 1)
    if level == 0:
        for i in range(count, len(runs)):
            count += 1
            if runs[i].level != 0:
                level = runs[i].level
                break
    if count == len(runs):
        level = max_level
    return runs[:count], level


def _by_size_ratio(runs: list[Run], s: LsmSettings, max_level: int, count: int,
                   force: bool):
    size = sum(r.size for r in runs[:count])
    # (Java's compactionTriggered: a forced pick, or two runs in, takes a
    # too-large run of level 0 or 1 anyway)
    triggered = force or count > 1
    for i in range(count, len(runs)):
        nxt = runs[i]
        if size * (100 + s.size_ratio) / 100 < nxt.size and (not triggered or nxt.level > 1):
            break
        size += nxt.size
        count += 1
        triggered = True
    if triggered:
        return _unit(runs, max_level, count)
    return None


def pick(files: list, s: LsmSettings, full: bool):
    """(the runs to merge, the output level), or None."""
    runs = sorted_runs(files)
    max_level = max([s.num_levels - 1] + [f.level for f in files])
    if not runs:
        return None
    if full:
        if len(runs) == 1 and runs[0].level == max_level:
            return None
        return runs, max_level
    got = None
    if len(runs) >= s.trigger:
        candidate = sum(r.size for r in runs[:-1])
        if candidate * 100 > s.max_size_amp * runs[-1].size:
            got = (runs, max_level)
        else:
            got = _by_size_ratio(runs, s, max_level, 1, False)
    if got is None and len(runs) > s.trigger:
        got = _by_size_ratio(runs, s, max_level, len(runs) - s.trigger + 1, True)
    if got is None and s.force_level0:
        level0 = sum(1 for r in runs if r.level == 0)       # (they come first)
        if level0:
            got = _by_size_ratio(runs, s, s.num_levels - 1, level0, True)
    if got is None:
        return None
    taken, level = got
    unit_files = [f for r in taken for f in r.files]
    if len(unit_files) == 1 and unit_files[0].level == level:
        return None
    return taken, level


def drop_delete(files: list, level: int) -> bool:
    """``MergeTreeCompactManager``: retractions go when nothing lies beneath the output."""
    return level != 0 and level >= max(f.level for f in files)


def latest_per_key(data: pa.Table, keys: list[str], drop: bool,
                   part_rows: list[int] | None = None) -> pa.Table:
    """Per key (the ``keys`` columns), the row with the highest
    ``_SEQUENCE_NUMBER``, in key order (of two with one sequence number, the
    later row); retractions dropped with ``drop``. ``part_rows``: the row
    counts of the input files ``data`` concatenates, each sorted by key."""
    n = data.num_rows
    if n == 0:
        return data
    from . import _merge
    from ._merge import _as_numpy
    key_col = data.column(keys[0]) if len(keys) == 1 else None
    # (nulls, which no valid file holds, stay with the sort, which orders them last)
    int_key = (_merge._integer_keys(key_col) if key_col is not None and not key_col.null_count
               and not data.column("_SEQUENCE_NUMBER").null_count else None)
    if int_key is not None:
        counts = [c for c in (part_rows or [n]) if c]
        if sum(counts) != n:
            counts = [n]
        starts = np.cumsum([0] + counts[:-1]).astype(np.int64)
        seq = _as_numpy(data.column("_SEQUENCE_NUMBER")).astype(np.int64, copy=False)
        order, same = _merge.sequence_order(int_key, seq, starts)
        last = np.ones(n, dtype=bool)
        last[:-1] = ~same
    else:
        order = _as_numpy(pc.sort_indices(data, [(k, "ascending") for k in keys]
                                          + [("_SEQUENCE_NUMBER", "ascending")]))
        last = np.ones(n, dtype=bool)
        if n > 1:
            differs = np.zeros(n - 1, dtype=bool)
            for k in keys:
                col = data.column(k).take(order)
                ne = pc.not_equal(col.slice(0, n - 1), col.slice(1))
                differs |= np.asarray(ne.to_numpy(zero_copy_only=False), dtype=bool)
            last[:-1] = differs
    winners = order[last]
    if drop:
        kinds = _as_numpy(data.column("_VALUE_KIND"))[winners]
        winners = winners[~np.isin(kinds, RETRACTIONS)]
    return data.take(winners)
