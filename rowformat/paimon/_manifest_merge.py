"""The manifest merge of Paimon Java's commit, for the snapshots rowformat
commits itself (the ``COMPACT`` snapshot of ``_compact``).

Java's ``FileStoreCommitImpl`` writes a snapshot's base manifest list as
``ManifestFileMerger.merge`` of the previous snapshot's base + delta
manifests; pypaimon's commit writes them unmerged ("manifest compaction is
handled by external maintenance"), so a table of 200 commits has 200
manifests, and every plan reads them all (0.2 s of a 0.4 s scan of 200,000
rows). This is the merger's minor compaction (``tryMinorCompaction``): the
manifests, in order, gathered until they reach ``manifest.target-file-size``
(8 MB), each such group merged into new manifests (``FileEntry.mergeEntries``:
an ADD and a DELETE of one file cancel; a group of one is kept as it is); the
last group merged only when it holds at least ``manifest.merge-min-count``
(30) manifests. Merged manifests are written with pypaimon's rolling
manifest writer, their entries with their statistics.

Not done: the merger's full compaction (``manifest.full-compaction-threshold-size``,
16 MB of manifests with deletes or below the target size), which Java tries first.
"""
from __future__ import annotations

import uuid

from ..errors import TableOptionError

DEFAULT_MERGE_MIN_COUNT = 30      # CoreOptions.MANIFEST_MERGE_MIN_COUNT


def merge_min_count(table) -> int:
    text = (getattr(table.table_schema, "options", None) or {}).get("manifest.merge-min-count")
    if text is None:
        return DEFAULT_MERGE_MIN_COUNT
    try:
        value = int(str(text).strip())
    except ValueError:
        value = 0
    if value < 1:
        raise TableOptionError(f"table option manifest.merge-min-count = {text!r}: expected "
                               f"a positive integer")
    return value


def merged(manifest_file_manager, manifests: list, target_size: int, min_count: int,
           written: list) -> list:
    """``manifests`` (pypaimon ManifestFileMeta, in order) after the minor
    compaction; the names of the manifests it wrote are appended to ``written``."""
    out: list = []
    group: list = []
    size = 0
    for m in manifests:
        group.append(m)
        size += int(m.file_size)
        if size >= target_size:
            out.extend(_merge(manifest_file_manager, group, target_size, written))
            group, size = [], 0
    if len(group) >= min_count:
        out.extend(_merge(manifest_file_manager, group, target_size, written))
    else:
        out.extend(group)
    return out


def _merge(manifest_file_manager, group: list, target_size: int, written: list) -> list:
    if len(group) == 1:
        return list(group)
    from pypaimon.manifest.schema.file_entry import FileEntry
    entries = []
    for m in group:
        entries.extend(manifest_file_manager.read(m.file_name, drop_stats=False,
                                                  file_size=m.file_size))
    entries = FileEntry.merge_entries(entries)
    if not entries:
        return []
    metas = manifest_file_manager.rolling_write(entries, target_size, f"manifest-{uuid.uuid4()}")
    written.extend(m.file_name for m in metas)
    return metas


class MergingManifestLists:
    """A pypaimon ``ManifestListManager`` whose ``read_all`` (what
    ``FileStoreCommit`` takes as the new snapshot's base) returns the
    previous snapshot's manifests merged; everything else is the wrapped one's."""

    def __init__(self, inner, manifest_file_manager, target_size: int, min_count: int):
        self._inner = inner
        self._files = manifest_file_manager
        self._target = target_size
        self._min_count = min_count
        self.written: list[str] = []

    def read_all(self, snapshot):
        return merged(self._files, self._inner.read_all(snapshot), self._target,
                      self._min_count, self.written)

    def __getattr__(self, name):
        return getattr(self._inner, name)
