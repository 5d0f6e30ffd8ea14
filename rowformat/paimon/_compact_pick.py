"""Which files of an append table's bucket are compacted together, by Paimon
Java's rules (no deletion vectors). Pure functions over pypaimon
``DataFileMeta`` (``file_size``, ``min_sequence_number``), each returning the
groups to rewrite, each group in the order its rows are written.

* ``bucket > 0``: ``BucketedAppendCompactManager``, the writer's compaction,
  run over the bucket's files ordered by ``minSequenceNumber`` (oldest first;
  ties in manifest order, as pypaimon's files of one job share a number).
  The normal pick slides a window over them: it is a task once it holds
  ``compaction.min.file-num`` files; whenever it reaches twice
  ``target-file-size`` its oldest file leaves it. Java's writer picks again
  after each task, with the task's last output back at the head when it is
  still small; here, in one run, the windows are found one after another
  over the rest of the queue (each output is younger than nothing left).
  Full (``FullCompactTask``): nothing with fewer than 3 files; leading files
  of at least the target size are kept; the rest is rewritten only if small
  files outnumber large ones and at least 3 remain.
* ``bucket = -1``: ``AppendCompactCoordinator``, the dedicated job's planner,
  over one partition: files smaller than ``target-file-size`` ×
  ``compaction.small-file-ratio``, sorted by size, packed into bins weighing
  size + ``source.split.open-file-cost``; a bin is a task once it holds more
  than one file and twice the target; the last bin only with at least
  ``compaction.min.file-num`` files. Full: every small file of the partition
  in one task when there is more than one (what the coordinator does for a
  partition that got no task for a while). A task's files are rewritten in
  its bin's order (by size), as ``AppendCompactTask`` does.
"""
from __future__ import annotations

from dataclasses import dataclass

_FULL_COMPACT_MIN_FILE = 3      # BucketedAppendCompactManager.FULL_COMPACT_MIN_FILE


@dataclass(frozen=True)
class Settings:
    min_file_num: int           # compaction.min.file-num (5)
    target_file_size: int       # target-file-size (256 MB for append tables)
    small_file_ratio: float     # compaction.small-file-ratio (0.7)
    open_file_cost: int         # source.split.open-file-cost (4 MB)


def _by_sequence(files: list) -> list:
    return sorted(files, key=lambda f: f.min_sequence_number)     # stable: ties keep manifest order


def bucketed(files: list, s: Settings, full: bool) -> list[list]:
    queue = _by_sequence(files)
    if full:
        if len(queue) < _FULL_COMPACT_MIN_FILE:
            return []
        i = 0
        while i < len(queue) and queue[i].file_size >= s.target_file_size:
            i += 1
        rest = queue[i:]
        big = sum(1 for f in rest if f.file_size >= s.target_file_size)
        if len(rest) - big > big and len(rest) >= _FULL_COMPACT_MIN_FILE:
            return [rest]
        return []
    tasks = []
    window: list = []
    size = 0
    for f in queue:
        window.append(f)
        size += f.file_size
        if len(window) >= s.min_file_num:
            tasks.append(window)
            window, size = [], 0
        elif size >= 2 * s.target_file_size:
            size -= window.pop(0).file_size
    return tasks


def unaware_bucket(files: list, s: Settings, full: bool) -> list[list]:
    small_below = s.target_file_size * s.small_file_ratio
    small = [f for f in files if f.file_size < small_below]
    if full:
        return [_by_sequence(small)] if len(small) > 1 else []
    tasks = []
    bin_: list = []
    weight = 0
    for f in sorted(small, key=lambda f: f.file_size):
        bin_.append(f)
        weight += f.file_size + s.open_file_cost
        if len(bin_) > 1 and weight >= 2 * s.target_file_size:
            tasks.append(bin_)
            bin_, weight = [], 0
    if len(bin_) >= s.min_file_num:
        tasks.append(bin_)
    return tasks
