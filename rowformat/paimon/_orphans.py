"""Orphan files: :func:`rowformat.paimon.tables.remove_orphan_files`.

A write that fails or is killed before its commit (a Spark task retried, an
executor lost, a process killed) leaves data files that no snapshot names;
so does an expiry cut short after its snapshot files went. Expiry cannot
find them, as no manifest names them. This is Paimon's orphan-file clean:

* used: every file any snapshot, tag, branch (snapshots and tags) or
  long-lived changelog names, ADDed or DELETEd (a file a manifest mentions
  at all is never an orphan): data, extra and changelog files, manifests,
  manifest lists, index manifests, index files, statistics files;
* orphans: the other files in the table's data directories and in
  ``manifest/``, ``index/`` and ``statistics/`` that were last modified
  before ``older_than``. A file younger than that may belong to a write
  still in progress, which commits it later: that is why ``older_than``
  defaults to a day (as Paimon's does) and is never optional. Snapshot,
  schema, tag, branch, consumer and changelog files are never touched, nor
  external data files (outside the table's directory);
* order: everything used is read before anything is listed or deleted, so
  a metadata file that cannot be read stops it with nothing deleted.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .. import storage
from ..errors import DatasetError
from ._expire import METADATA_DIRS, Table, anchors, cutoff_millis, delete_all


@dataclass(frozen=True)
class Orphans:
    """What :func:`remove_orphan_files` deleted (or, with ``dry_run``, would delete)."""
    files: list[str]        # their paths (URLs on an object store), sorted
    bytes: int              # their size


def remove_orphans(root: str, older_than: Any, storage_options: dict | None,
                   dry_run: bool) -> Orphans:
    cutoff = cutoff_millis(older_than)
    if cutoff is None:
        raise DatasetError(f"{root}: older_than is required (a datetime or a timedelta): a "
                           f"younger file may belong to a write that has not committed yet")
    table = Table(root, storage_options)
    used = anchors(table, table.numbered(table.path("snapshot"), "snapshot-"), live_only=False)
    named_in = {"manifest": used.manifests | used.lists, "index": used.index,
                "statistics": used.statistics}
    found = []
    for top in storage.list_names(table.root, table.options):
        if top.startswith(".") or (top in METADATA_DIRS and top not in named_in):
            continue
        names = named_in.get(top, used.data)      # any other directory holds data files
        found += [(p, n) for p, n, mtime in storage.walk(table.path(top), table.options)
                  if p.rsplit("/", 1)[-1] not in names
                  and mtime is not None and mtime * 1000 < cutoff]
    found.sort()
    if not dry_run:
        delete_all(table, [p for p, _ in found])
    return Orphans([p for p, _ in found], sum(n for _, n in found))
