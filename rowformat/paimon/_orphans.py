"""Orphan files: :func:`rowformat.paimon.tables.remove_orphan_files`.

A write that fails or is killed before its commit (a Spark task retried, an
executor lost, a process killed) leaves data files that no snapshot names;
so does an expiry cut short after its snapshot files went. Expiry cannot
find them, as no manifest names them. This is Paimon's orphan-file clean:

* used: every file any snapshot, tag, branch (snapshots and tags) or
  long-lived changelog names, ADDed or DELETEd (a file a manifest mentions
  at all is never an orphan): data, extra and changelog files, manifests and
  their sidecars, manifest lists, index manifests, index files, statistics
  files. A candidate is used when its name is (file names are unique in a
  table), wherever it lies;
* candidates, as Paimon's: the files directly in a bucket directory
  (``bucket-*``, under partition directories ``k=v``, and under
  ``data-file.path-directory``), and those directly in ``manifest/``,
  ``index/`` and ``statistics/``. Anything else in the table's directory
  (snapshot, schema, tag, branch, consumer and changelog files, a partition's
  ``_SUCCESS``, Iceberg-compatible ``metadata/``, external data files) is
  never touched;
* age: only files last modified before ``older_than`` go. A younger file may
  belong to a write still in progress, which commits it later: that is why
  ``older_than`` defaults to a day (as Paimon's does), is never optional and
  may not be after now;
* order: everything used is read before anything is listed or deleted, so a
  metadata file that cannot be read stops it with nothing deleted; a
  snapshot expired meanwhile makes it read again (a few times, then it
  stops, naming what is missing).
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any

from ..io import fileio
from ..errors import DatasetError, StorageNotFoundError, TableMetadataError
from ._expire import METADATA_DIRS, Refs, Table, anchors, cutoff_millis, delete_all


_FLAT_DIRS = ("manifest", "index", "statistics")   # metadata directories with candidates
_BUCKET_DIR = re.compile(r"bucket-(?:[0-9]+|postpone)")
_ATTEMPTS = 3                   # reads of what is used, when a file vanishes meanwhile


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
    if cutoff > time.time() * 1000:
        raise DatasetError(f"{root}: older_than {older_than!r} is after now: a file written "
                           f"since may belong to a write that has not committed yet")
    table = Table(root, storage_options)
    used = _used(table)
    names = used.manifests | used.lists | used.index | used.statistics \
        | {n.rsplit("/", 1)[-1] for n in used.data}
    data_dirs = table.option_values("data-file.path-directory")
    found = []
    for top in fileio.list_names(table.root, table.options):
        if top.startswith(".") or (top in METADATA_DIRS and top not in _FLAT_DIRS):
            continue
        base = table.path(top)
        for p, n, mtime in fileio.walk(base, table.options):
            parts = [top] + p[len(base):].strip("/").split("/")
            if parts[-1] in names or mtime is None or mtime * 1000 >= cutoff:
                continue
            if (len(parts) == 2 and top in _FLAT_DIRS) or _in_bucket_dir(parts, data_dirs):
                found.append((p, n))
    found.sort()
    if not used.snapshots and found:
        # every data file would go: a snapshot directory on a volume not
        # mounted, or a table whose first commit failed; neither is for an
        # unattended clean to decide
        raise DatasetError(f"{root}: has files no snapshot names, but no snapshot, tag or "
                           f"branch at all ({table.path('snapshot')} is empty or missing): "
                           f"refusing to remove orphans, nothing deleted")
    if not dry_run:
        delete_all(table, [p for p, _ in found])
    return Orphans([p for p, _ in found], sum(n for _, n in found))


def _in_bucket_dir(parts: list[str], data_dirs: set[str]) -> bool:
    """Whether a file (its path's parts under the table) lies directly in a
    bucket directory (``bucket-<n>``, ``bucket-postpone``), under partition
    directories (``k=v``) and perhaps the table's
    ``data-file.path-directory`` (the first part): never in another
    directory's ``bucket-0`` (a table nested in this one, a backup copy)."""
    dirs = parts[:-1]
    if dirs and dirs[0] in data_dirs:
        dirs = dirs[1:]
    return bool(dirs) and _BUCKET_DIR.fullmatch(dirs[-1]) is not None \
        and all("=" in d for d in dirs[:-1])


def _used(table: Table) -> Refs:
    """Every file the table's snapshots, tags, branches and changelogs name,
    read again if a snapshot, or a file it names, vanishes meanwhile (an
    expiry running alongside)."""
    missing: Exception | None = None
    for attempt in range(_ATTEMPTS):
        if attempt:
            time.sleep(1)
        try:
            return anchors(table, table.numbered(table.path("snapshot"), "snapshot-"),
                           live_only=False)
        except (FileNotFoundError, StorageNotFoundError) as e:
            missing = e
    raise TableMetadataError(f"{table.root}: a file the table's metadata names is missing "
                             f"({missing}): if an expire_snapshots run was cut short, run it "
                             f"again first")
