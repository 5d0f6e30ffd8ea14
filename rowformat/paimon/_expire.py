"""Snapshot expiry: :func:`rowformat.paimon.tables.expire_snapshots`.

Every commit (an overwrite most of all) leaves the files of the snapshots
before it in place, so that they stay readable by time travel; Paimon's Java
writers expire old snapshots after committing, pypaimon has no expiry. This
is Paimon's expiry, run on demand:

* which snapshots go: the oldest ones, a contiguous run from the earliest,
  never the latest ``retain_last`` nor (with ``older_than``) one committed at
  or after that time, nor one a consumer (``consumer/consumer-*``) still reads;
* which files go: those the expired snapshots' manifests name (data files
  and their extra files, changelog files) that no *anchor* still holds, and
  their manifests, manifest lists, index manifests, index files and
  statistics files that no anchor names. Anchors are the snapshots kept, every
  tag, every branch's snapshots and tags (a branch shares the table's data
  files and manifests) and the long-lived changelogs, the table's and each
  branch's. Index files are in ``index/`` or, with
  ``index-file-in-data-file-dir``, beside the data files. A data file is
  live in an anchor when its manifests, read in order, ADD it and do not
  DELETE it again (Paimon's identity of an entry: partition, bucket, level,
  name and external path, so a compaction's level upgrade of the same file
  keeps it);
* order: everything is read before anything is deleted (a metadata file that
  cannot be read stops the expiry with nothing deleted); then, each phase
  done before the next, the files manifests name (data, index, statistics),
  the manifests, the manifest lists and index manifests, the snapshot files
  oldest first, and the ``EARLIEST`` hint. A run cut short leaves the oldest snapshots unreadable
  (as Paimon's does) and is finished by running it again, which skips what
  is already gone.

Files a writer has written but not yet committed are in no manifest, so a
commit running alongside loses nothing; a reader still reading an expired
snapshot does (as with Paimon's own expiry).
"""
from __future__ import annotations

import datetime as dt
import io
import json
import math
import numbers
import time
import warnings
from dataclasses import dataclass
from typing import Any, Iterable

from ..io import fileio, ranges, urls
from ..io.output import write_atomically
from ..errors import DatasetError, StorageNotFoundError, TableMetadataError
from ._metadata import check_name, reading

# the table's metadata directories; every other top-level directory holds data files
METADATA_DIRS = {"snapshot", "schema", "manifest", "tag", "branch", "consumer",
                 "changelog", "index", "statistics"}
_ADD, _DELETE = 0, 1
DEFAULT_RETAIN_LAST = 10      # Paimon's snapshot.num-retained.min


@dataclass(frozen=True)
class Expired:
    """What :func:`expire_snapshots` removed (or, with ``dry_run``, would remove)."""
    snapshots: list[int]    # the ids expired, oldest first
    earliest: int | None    # the earliest snapshot left (None: the table has none)
    files: int              # data, manifest, index and statistics files deleted
    bytes: int              # their size


class Table:
    """The metadata files of one table, read through the storage layer."""

    def __init__(self, root: str, storage_options: dict | None):
        self.root = root.rstrip("/") if urls.is_url(root) else root
        self.options = storage_options
        self._avro: dict[str, list[Any]] = {}
        self._branches: list[str] | None = None

    def path(self, *names: str) -> str:
        return urls.join(self.root, *names)

    def numbered(self, directory: str, prefix: str) -> list[int]:
        """The ids of the ``<prefix><id>`` files in ``directory``, ascending,
        each once. Only canonical names count (``snapshot-5``, never
        ``snapshot-05``, ``snapshot-٥`` or ``snapshot-５``, which no Paimon
        writer makes): a stray file that parsed as a second snapshot 5 would
        shift what expiry keeps."""
        n = len(prefix)
        return sorted({int(name[n:]) for name in fileio.list_names(directory, self.options)
                       if name.startswith(prefix) and canonical_id(name[n:])})

    def option_values(self, key: str) -> set[str]:
        """The values of the table option ``key`` in every schema the table
        and its branches have had (a file written under an older schema's
        options is still the table's)."""
        values: set[str] = set()
        for home in [self.root] + [self.path("branch", b) for b in self.branches()]:
            schema_dir = urls.join(home, "schema")
            for sid in self.numbered(schema_dir, "schema-"):
                options = self.json(urls.join(schema_dir, f"schema-{sid}")).get("options")
                if isinstance(options, dict) and options.get(key) is not None:
                    values.add(str(options[key]))
        return values

    def external_roots(self) -> list[str]:
        """The table's ``data-file.external-paths``, each as :func:`_as_path` gives it."""
        roots = {(_as_path(root.strip()) or "").rstrip("/")
                 for value in self.option_values("data-file.external-paths")
                 for root in value.split(",")}
        return sorted(r for r in roots if r and _plain(r))

    def branches(self) -> list[str]:
        """The branch directories, each checked listable (one linked to a
        volume not mounted must not read as an empty branch)."""
        if self._branches is None:
            names = [b for b in fileio.list_names(self.path("branch"), self.options)
                     if b.startswith("branch-")]
            for b in names:
                fileio.list_names(self.path("branch", b), self.options)
            self._branches = names
        return self._branches

    def listing(self) -> dict[str, frozenset[str]]:
        """What names the snapshots a run keeps: the tag, branch and consumer
        directories' names, to compare before deleting."""
        dirs = ["tag", "branch", "consumer"] + [f"branch/{b}/tag" for b in self.branches()]
        return {d: frozenset(fileio.list_names(self.path(*d.split("/")), self.options))
                for d in dirs}

    def read(self, path: str) -> bytes:
        """A metadata file's bytes; a local one must be a regular file (a
        named pipe would block: CorruptFileError)."""
        return fileio.read_bytes(path, self.options)

    def json(self, path: str) -> dict:
        with reading(path, "metadata file"):
            doc = json.loads(self.read(path))
            if not isinstance(doc, dict):
                raise ValueError("not a JSON object")
            return doc

    def snapshot(self, directory: str, snapshot_id: int) -> dict:
        return self.json(urls.join(directory, f"snapshot-{snapshot_id}"))

    def avro(self, name: str, what: str, missing_ok: bool) -> list[Any]:
        """The records of ``manifest/<name>`` (none if it is missing and ``missing_ok``)."""
        if name not in self._avro:
            check_name(name, f"{self.root}: a snapshot", what)
            path = self.path("manifest", name)
            try:
                raw = self.read(path)
            except (FileNotFoundError, StorageNotFoundError):
                if not missing_ok:
                    raise
                return []
            import fastavro
            with reading(path, what):
                self._avro[name] = list(fastavro.reader(io.BytesIO(raw)))
        return self._avro[name]


class Refs:
    """The files a set of snapshots (or tags) holds or names."""

    def __init__(self) -> None:
        self.data: set[str] = set()         # data, extra and changelog file names (or paths)
        self.manifests: set[str] = set()    # manifest names
        self.lists: set[str] = set()        # manifest list and index manifest names
        self.index: set[str] = set()        # index file names
        self.statistics: set[str] = set()
        self.snapshots = 0                  # how many snapshots, tags and changelogs were read

    def add(self, table: Table, snap: dict, live_only: bool, missing_ok: bool) -> None:
        """The files of ``snap``: with ``live_only``, the data files it holds,
        else every data file its manifests name."""
        self.snapshots += 1
        manifests: list[str] = []
        for field in ("baseManifestList", "deltaManifestList", "changelogManifestList"):
            name = snap.get(field)
            if name:
                self.lists.add(name)
                for m in table.avro(name, "manifest list", missing_ok):
                    manifests.append(m["_FILE_NAME"])
                    self.manifests.update(m.get("_EXTRA_FILES") or ())     # a manifest's sidecars
        self.manifests.update(manifests)
        live: dict[tuple, list[Any]] = {}
        for m in manifests:
            for e in table.avro(m, "manifest", missing_ok):
                key, names = _entry(e, table.root)
                if not live_only:
                    self.data.update(names)
                elif e.get("_KIND") == _DELETE:
                    live.pop(key, None)
                else:
                    live[key] = names
        for names in live.values():
            self.data.update(names)
        index_manifest = snap.get("indexManifest")
        if index_manifest:
            self.lists.add(index_manifest)
            for e in table.avro(index_manifest, "index manifest", missing_ok):
                check_name(e.get("_FILE_NAME"), f"{table.root}: an index manifest", "index file")
                self.index.add(e["_FILE_NAME"])
        if snap.get("statistics"):
            self.statistics.add(snap["statistics"])


def _entry(e: dict, where: str) -> tuple[tuple, list[Any]]:
    """A manifest entry's identity and the files it names."""
    f = e.get("_FILE") or {}
    name = f.get("_FILE_NAME")
    check_name(name, f"{where}: a manifest", "data file")
    external = _as_path(f.get("_EXTERNAL_PATH"))
    names = [external or name]
    for extra in f.get("_EXTRA_FILES") or ():
        check_name(extra, f"{where}: a manifest", "extra file")
        # an external data file's extra files are beside it
        names.append(external.rpartition("/")[0] + "/" + extra if external else extra)
    # Paimon's identity of an entry (pypaimon's _entry_identifier): an ADD
    # is undone only by a DELETE of all of these
    extras = tuple(f.get("_EXTRA_FILES") or ())
    return (e.get("_PARTITION"), e.get("_BUCKET"), f.get("_LEVEL"), name, extras,
            f.get("_EMBEDDED_FILE_INDEX"), external), names


def _as_path(p: Any) -> str | None:
    """An external path as a URL, or a local path for a ``file:`` URI of
    this host (``file:/x`` as pypaimon and Java write it, ``file:///x``,
    ``file://localhost/x``); another host's ``file://h/x`` stays a URI, which
    is under no local root."""
    if not p:
        return None
    p = str(p)
    scheme, colon, rest = p.partition(":")
    scheme = scheme.lower()
    if colon and scheme == "file":
        if not rest.startswith("//"):
            return rest
        host, _, path = rest[2:].partition("/")
        return "/" + path if host in ("", "localhost") else "file:" + rest
    if colon and rest.startswith("//") and scheme.isalnum():
        # one spelling per store: S3A:// and s3n:// name s3:// objects
        return ("s3" if scheme in ("s3a", "s3n") else scheme) + ":" + rest
    return p


def _is_external(name: str) -> bool:
    """Whether a name from :func:`_entry` is an external path (not a bare file name)."""
    return urls.is_url(name) or name.startswith(("/", "file:"))


def canonical_id(text: str) -> bool:
    """Whether ``text`` is an id as Paimon writes it: ASCII digits, no leading zero."""
    return text.isascii() and text.isdigit() and (text == "0" or text[0] != "0")


def _plain(path: str) -> bool:
    """Whether ``path`` (a URL or an absolute local path) has no ``.``, ``..``
    or empty segments after its scheme and authority, so that comparing it
    with a root by prefix means what it says."""
    if path.startswith("file:"):        # another host's file (_as_path): never ours
        return False
    rest = path.split("://", 1)[1].partition("/")[2] if urls.is_url(path) else path[1:]
    return path.startswith("/") != urls.is_url(path) and \
        all(seg not in ("", ".", "..") for seg in (rest.split("/") if rest else ()))


def _external_files(table: Table, paths: set[str]) -> dict[str, int]:
    """path -> size of each external data file in ``paths`` that lies under
    one of the table's ``data-file.external-paths`` and exists; each is
    looked up by its own name (never a listing of its parent, which for
    ``//x`` would be the whole file system). Others are skipped with a
    warning naming them: a manifest may name any path, and expiry deletes
    only what the table declares its own."""
    if not paths:
        return {}
    roots = table.external_roots()
    found: dict[str, int] = {}
    for path in sorted(paths):
        if not (_plain(path) and any(path.startswith(r + "/") for r in roots)):
            warnings.warn(f"{table.root}: an expired manifest entry names the external file "
                          f"{path!r}, which is not under the table's data-file.external-paths "
                          f"({', '.join(roots) or 'none'}): not deleted", ExternalFileWarning,
                          stacklevel=3)
            continue
        size = fileio.file_size(path, table.options)
        if size is not None:
            found[path] = size
    return found


class ExternalFileWarning(UserWarning):
    """Expiry skipped an external data file outside the table's declared roots."""


def cutoff_millis(older_than: Any) -> int | None:
    if older_than is None:
        return None
    try:
        if isinstance(older_than, dt.timedelta):
            return int((time.time() - older_than.total_seconds()) * 1000)
        if isinstance(older_than, dt.datetime):
            if older_than.tzinfo is None:
                older_than = older_than.astimezone()      # a naive time is local time
            return int(older_than.timestamp() * 1000)
    except (OverflowError, ValueError, OSError) as e:      # datetime(1, 1, 1) in local time
        raise DatasetError(f"older_than {older_than!r} is out of the range of times this "
                           f"machine can convert ({e})") from None
    raise TypeError(f"older_than must be a datetime or a timedelta, not {type(older_than).__name__}")


CONSUMER_PREFIX = "consumer-"


def consumer_path(root: str, consumer_id: str) -> str:
    """The consumer file of ``consumer_id`` in the table at ``root``
    (Paimon's ``ConsumerManager`` layout)."""
    if not isinstance(consumer_id, str) or not consumer_id.strip() \
            or consumer_id in (".", "..") or "/" in consumer_id or "\\" in consumer_id:
        raise ValueError(f"option consumer-id must be a name without path separators, "
                         f"got {consumer_id!r}")
    return f"{root.rstrip('/')}/consumer/{CONSUMER_PREFIX}{consumer_id}"


def _protected(table: Table) -> int | None:
    """The lowest ``nextSnapshot`` of the table's consumers (None: no consumer)."""
    consumers = [table.json(table.path("consumer", n)).get("nextSnapshot")
                 for n in fileio.list_names(table.path("consumer"), table.options)
                 if n.startswith(CONSUMER_PREFIX)]
    if any(not isinstance(c, int) or isinstance(c, bool) for c in consumers):
        raise TableMetadataError(f"{table.path('consumer')}: a consumer's nextSnapshot is not "
                                 f"a snapshot id: {consumers!r}")
    return min((c for c in consumers if c is not None), default=None)   # (None: refused above)


def expire_consumers(root: str, storage_options: dict | None, before_ms: int) -> list[str]:
    """Deletes the consumer files (``consumer/consumer-<id>``) last modified
    before ``before_ms`` (milliseconds since the epoch) and returns their
    paths: Paimon's ``ConsumerManager.expire``, which its writers run after
    each commit under ``consumer.expiration-time``. A consumer rewrites its
    file with each progress it records, so the modification time is when it
    last read (on an object store the listing's LastModified, whole seconds).
    The whole directory is looked at first, and anything unclear stops it
    with nothing deleted (a TableMetadataError naming it): a ``consumer-*``
    entry that is not a file directly in ``consumer/`` (a directory, a
    symlink), one without a modification time, or a name whose id is none a
    consumer-id can be (``consumer-``). Other names are not consumers and
    are left alone. A consumer whose file changes after it was judged (a
    query recording its progress meanwhile) is kept: the times are read
    again just before deleting (Paimon's deletes by its one listing)."""
    directory = urls.join(root, "consumer")
    names = [n for n in fileio.list_names(directory, storage_options)
             if n.startswith(CONSUMER_PREFIX)]
    if not names:
        return []
    here = urls.local(directory)
    base = (here or directory).rstrip("/") + "/"

    def modified() -> dict[str, float | None]:
        return {p[len(base):]: m for p, _, m in fileio.walk(directory, storage_options)
                if p.startswith(base)}
    mtimes = modified()
    doomed, unclear = [], []
    for name in sorted(names):
        try:
            consumer_path(root, name[len(CONSUMER_PREFIX):])
        except ValueError:
            unclear.append(f"{name!r} (not consumer-<consumer id>)")
            continue
        modified_at = mtimes.get(name)
        if name not in mtimes or fileio.is_symlink(urls.join(directory, name)):
            unclear.append(f"{name!r} (not a file)")
        elif modified_at is None:
            unclear.append(f"{name!r} (the store gives no modification time)")
        elif math.floor(modified_at * 1000) < before_ms:  # whole ms, as Java's FileStatus
            doomed.append(name)
    if unclear:
        raise TableMetadataError(f"{directory}: which consumers expire cannot be told for "
                                 f"{', '.join(unclear)}: no consumer deleted (move what is "
                                 f"not a consumer's file out of consumer/ to let them expire)")
    if doomed:
        now = modified()
        doomed = [urls.join(directory, n) for n in doomed if now.get(n) == mtimes[n]]
    for path in doomed:
        fileio.delete(path, storage_options)
    return doomed


def _to_expire(table: Table, ids: list[int], retain_last: int, cutoff: int | None) -> list[int]:
    """The oldest snapshots that may go: contiguous from the earliest."""
    protected = _protected(table)
    # as Paimon's: ids below latest - retain_last + 1 may go; and by count
    # too, so a gap in the ids never lets one of the last retain_last go
    boundary = ids[-1] - retain_last + 1 if ids else 0
    out = []
    for sid in ids[:max(0, len(ids) - retain_last)]:
        if sid >= boundary:
            break
        if protected is not None and sid >= protected:
            break
        if cutoff is not None and _time_millis(table, sid) >= cutoff:
            break
        out.append(sid)
    return out


def _time_millis(table: Table, sid: int) -> int:
    path = table.path("snapshot", f"snapshot-{sid}")
    with reading(path, "snapshot"):
        return int(table.json(path)["timeMillis"])


def anchors(table: Table, kept: Iterable[int], live_only: bool = True) -> Refs:
    """The files the snapshots kept, the tags, the branches and the
    long-lived changelogs (the table's and each branch's) hold (with
    ``live_only``; else every file their manifests name)."""
    refs = Refs()
    for sid in kept:
        refs.add(table, table.snapshot(table.path("snapshot"), sid), live_only, False)
    homes = [table.root] + [table.path("branch", b) for b in table.branches()]
    for home in homes:
        tag_dir = urls.join(home, "tag")
        for name in fileio.list_names(tag_dir, table.options):
            if name.startswith("tag-"):
                refs.add(table, table.json(urls.join(tag_dir, name)), live_only, False)
        if home != table.root:
            snap_dir = urls.join(home, "snapshot")
            for sid in table.numbered(snap_dir, "snapshot-"):
                refs.add(table, table.snapshot(snap_dir, sid), live_only, False)
        changelog_dir = urls.join(home, "changelog")     # long-lived changelogs
        for cid in table.numbered(changelog_dir, "changelog-"):
            refs.add(table, table.json(urls.join(changelog_dir, f"changelog-{cid}")),
                     False, False)
    return refs


@dataclass(frozen=True)
class Retention:
    """A table's retention options, as Paimon Java's writers expire by them
    after each commit (``ExpireSnapshotsImpl.expire``)."""
    num_retained_min: int       # snapshot.num-retained.min (10)
    num_retained_max: int       # snapshot.num-retained.max (Integer.MAX_VALUE)
    time_retained_ms: int       # snapshot.time-retained (1 h)
    expire_limit: int           # snapshot.expire.limit (50)


def _by_retention(table: Table, ids: list[int], r: Retention) -> list[int]:
    """Java's choice, L the latest id and E the earliest: the ids from
    max(L - max + 1, E) up always go; none of the last ``min`` goes, nor one
    a consumer still reads, nor more than ``limit`` at once; between, a
    snapshot goes while its successor is older than ``time-retained`` (it
    was replaced before the retention window)."""
    if not ids:
        return []
    latest, earliest = ids[-1], ids[0]
    lowest = max(latest - r.num_retained_max + 1, earliest)
    max_exclusive = latest - r.num_retained_min + 1
    protected = _protected(table)
    if protected is not None:
        max_exclusive = min(max_exclusive, protected)
    max_exclusive = min(max_exclusive, earliest + r.expire_limit)
    older_than = int(time.time() * 1000) - r.time_retained_ms
    end = max_exclusive
    for sid in range(lowest, max_exclusive):
        if _time_millis(table, sid + 1) >= older_than:
            end = sid
            break
    return [sid for sid in ids if sid < end]


def expire(root: str, retain_last: int | None, older_than: Any, storage_options: dict | None,
           dry_run: bool, retention: Retention | None = None) -> Expired:
    """Expires by ``retain_last`` and ``older_than`` (the API's and the
    command line's rules), or, given ``retention``, by Java's rules
    (:func:`_by_retention`; the automatic expiry after a commit)."""
    table = Table(root, storage_options)
    if retention is not None:
        retain_last = max(1, retention.num_retained_min)
    what, given = "retain_last", retain_last
    if retain_last is None:         # the table's option, a string
        schema_dir = table.path("schema")
        schema = table.json(urls.join(schema_dir, f"schema-{table.numbered(schema_dir, 'schema-')[-1]}"))
        what = "the table's snapshot.num-retained.min"
        given = (schema.get("options") or {}).get("snapshot.num-retained.min", str(DEFAULT_RETAIN_LAST))
        retain_last = int(given) if str(given).isdigit() else 0
    elif isinstance(retain_last, bool) or not isinstance(retain_last, numbers.Integral):
        retain_last = 0
    if retain_last < 1:
        raise DatasetError(f"{root}: {what} must be an integer of at least 1 (the latest "
                           f"snapshot always stays), not {given!r}")
    retain_last = int(retain_last)
    snap_dir = table.path("snapshot")
    listed = table.listing()
    ids = table.numbered(snap_dir, "snapshot-")
    missing = sorted(set(range(ids[0], ids[-1] + 1)) - set(ids)) if ids else []
    if missing:
        # Paimon's snapshots are contiguous (expiry takes the oldest first);
        # with a gap, readers that trust LATEST may see another latest
        raise TableMetadataError(f"{snap_dir}: snapshots {ids[0]}-{ids[-1]} lack "
                                 f"{missing[:10]}: not expiring a table whose snapshot ids "
                                 f"have a gap, nothing deleted")
    doomed_ids = (_by_retention(table, ids, retention) if retention is not None
                  else _to_expire(table, ids, retain_last, cutoff_millis(older_than)))
    if not doomed_ids:
        return Expired([], ids[0] if ids else None, 0, 0)
    keep = anchors(table, ids[len(doomed_ids):])
    unclear = sorted(f for f in keep.data if _is_external(f) and not _plain(f))
    if unclear:
        raise TableMetadataError(f"{root}: a snapshot, tag or branch kept names the external "
                                 f"file {unclear[0]!r}, a path that is not canonical: which "
                                 f"file it is cannot be told, so nothing is deleted")
    gone = Refs()
    for sid in doomed_ids:
        try:
            snap = table.snapshot(snap_dir, sid)
        except (FileNotFoundError, StorageNotFoundError):
            continue            # expired by a run cut short, or by another writer
        gone.add(table, snap, False, True)
    manifests, lists = gone.manifests - keep.manifests, gone.lists - keep.lists
    doomed = {"manifest": manifests | lists, "index": gone.index - keep.index,
              "statistics": gone.statistics - keep.statistics}
    data = gone.data - keep.data
    external = {f for f in data if _is_external(f)}
    data -= external
    found: dict[str, int] = {}      # path -> size of each file that goes
    in_data_dirs = data | doomed["index"]        # index-file-in-data-file-dir puts them there
    for top in fileio.list_names(table.root, table.options):
        names = doomed.get(top, in_data_dirs if top not in METADATA_DIRS else ())
        if names and not top.startswith("."):
            found.update((p, n) for p, n, _ in fileio.walk(table.path(top), table.options)
                         if p.rsplit("/", 1)[-1] in names and p not in keep.data)
    found.update(_external_files(table, external))
    earliest = ids[len(doomed_ids)]
    if ids[-1] in doomed_ids:       # cannot happen: a last guard before deleting
        raise TableMetadataError(f"{snap_dir}: expiry chose the latest snapshot, "
                                 f"{ids[-1]}: nothing deleted")
    if table.listing() != listed:
        # a tag, branch or consumer made meanwhile may hold what would go
        # (Paimon's expiry does not look again)
        raise TableMetadataError(f"{root}: a tag, branch or consumer was added or removed "
                                 f"while expiry read the table: nothing deleted; run it again")
    if not dry_run:
        # Paimon's order, each phase done before the next: what a manifest
        # names, then manifests, then what names them, then the snapshots
        # oldest first, so a run cut short leaves only files a re-run finds
        manifest_dir = table.path("manifest") + "/"
        in_manifest_dir = {p for p in found if p.startswith(manifest_dir)}
        name_of = {p: p.rsplit("/", 1)[-1] for p in in_manifest_dir}
        delete_all(table, [p for p in found if p not in in_manifest_dir])
        delete_all(table, [p for p in in_manifest_dir if name_of[p] in manifests])
        delete_all(table, [p for p in in_manifest_dir if name_of[p] not in manifests])
        for sid in doomed_ids:
            fileio.delete(urls.join(snap_dir, f"snapshot-{sid}"), table.options)
        write_atomically(urls.join(snap_dir, "EARLIEST"), str(earliest).encode(), table.options)
    return Expired(doomed_ids, earliest, len(found), sum(found.values()))


def delete_all(table: Table, files: list[str]) -> None:
    """Deletes ``files`` concurrently (one already gone is skipped)."""
    pool = ranges.io_pool()
    for future in [pool.submit(fileio.delete, f, table.options) for f in files]:
        future.result()
