"""A rowformat dataset on a local (or mounted) file system: a directory of
``.row`` files, Paimon schema files and a manifest. Pure Python, no pyspark.

Layout::

    <path>/schema/schema-<id>         Paimon table schema JSON (see below)
    <path>/_manifest.json             the committed state: schema id and live files
    <path>/part-<task>-<job>.row      data files, immutable once committed
    <path>/dv-<job>-<n>.bin           deletion vectors (serialized RoaringBitmaps)
    <path>/_temporary/<job>/...       files of a write job that is not committed

Schema file: Paimon's table schema format (``schema/schema-N``)::

    {"version": 3, "id": 0, "highestFieldId": 1, "partitionKeys": [], "primaryKeys": [],
     "options": {"file.format": "row"}, "timeMillis": ...,
     "fields": [{"id": 0, "name": "id", "type": "BIGINT NOT NULL"},
                {"id": 1, "name": "tags", "type": {"type": "ARRAY", "element": "STRING"}}]}

Atomic types are their SQL text. As in Paimon, ARRAY, MULTISET, MAP, ROW and
VECTOR are JSON objects (``{"type": "ARRAY NOT NULL", "element": ...}``,
``{"type": "MAP", "key": ..., "value": ...}``, ``{"type": "ROW", "fields":
[...]}`` with field ids, ``{"type": "VECTOR", "length": n, "element": ...}``).
When reading, a plain type string is accepted for any type.

Manifest (``_manifest.json``)::

    {"version": 1, "schemaId": 0, "snapshot": 3, "job": "<job id>",
     "files": [{"name": "part-00000-<job>.row", "rows": 1000, "deletionVector": null}]}

Commit protocol: tasks write under ``_temporary/<job>/``; the commit renames
the files into place, writes the new manifest to a temporary name and renames
it over ``_manifest.json``. That last rename is the commit point: readers list
files from the manifest only, so they see the whole old or the whole new set.
It is atomic for one writer at a time; concurrent writers to one dataset are
not coordinated (the last commit wins and may drop the other's files).
An aborted job leaves a tombstone ``_temporary/_aborted-<job>`` so that tasks
finishing after the abort delete their own output, and :func:`vacuum`
(called at every commit and abort) removes what is left of aborted jobs.
"""
from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from .. import schema_json
from ..atomic import fsync_dir, write_atomically
from ..errors import DatasetError, SchemaError
from ..types import RowType

MANIFEST = "_manifest.json"
SCHEMA_DIR = "schema"
TEMPORARY = "_temporary"
ABORTED_PREFIX = "_aborted-"
DATA_SUFFIX = ".row"


# ---------------------------------------------------------------- schema JSON

def schema_to_json(row_type: RowType, schema_id: int = 0) -> dict:
    """The Paimon table schema document for ``row_type``."""
    fields = schema_json.to_json_fields(row_type)
    return {"version": 3, "id": schema_id, "fields": fields,
            "highestFieldId": schema_json.highest_field_id(fields),
            "partitionKeys": [], "primaryKeys": [], "options": {"file.format": "row"},
            "timeMillis": int(time.time() * 1000)}


def schema_from_json(doc: dict) -> RowType:
    return schema_json.loads(doc)


# ---------------------------------------------------------------- files

@dataclass
class FileEntry:
    """A committed data file; ``name`` and ``deletion_vector`` are relative
    to the dataset directory."""
    name: str
    rows: int
    deletion_vector: str | None = None

    def to_json(self):
        return {"name": self.name, "rows": self.rows, "deletionVector": self.deletion_vector}

    @classmethod
    def from_json(cls, j):
        return cls(j["name"], int(j["rows"]), j.get("deletionVector"))


@dataclass
class Dataset:
    """The committed state of a dataset directory (a snapshot of it: later
    commits are not seen by this object)."""
    path: str
    schema: RowType
    schema_id: int
    snapshot: int
    files: list[FileEntry] = field(default_factory=list)

    @staticmethod
    def exists(path: str) -> bool:
        return os.path.isfile(os.path.join(path, MANIFEST))

    @classmethod
    def open(cls, path: str) -> "Dataset":
        path = os.path.abspath(path)
        manifest_path = os.path.join(path, MANIFEST)
        try:
            with open(manifest_path, "rb") as f:
                manifest = json.load(f)
        except FileNotFoundError:
            raise DatasetError(f"{path} is not a rowformat dataset: no {MANIFEST}") from None
        except (ValueError, OSError) as e:
            raise DatasetError(f"{manifest_path}: unreadable manifest: {e}") from None
        schema_id = int(manifest["schemaId"])
        return cls(path, load_schema(path, schema_id), schema_id, int(manifest["snapshot"]),
                   [FileEntry.from_json(e) for e in manifest["files"]])

    def file_path(self, name: str) -> str:
        return os.path.join(self.path, name)

    @property
    def num_rows(self) -> int:
        return sum(e.rows for e in self.files)


def load_schema(path: str, schema_id: int) -> RowType:
    schema_path = os.path.join(path, SCHEMA_DIR, f"schema-{schema_id}")
    try:
        with open(schema_path, "rb") as f:
            doc = json.load(f)
        return schema_from_json(doc)
    except FileNotFoundError:
        raise DatasetError(f"{path}: the manifest names schema {schema_id}, but "
                           f"{schema_path} does not exist") from None
    except (ValueError, KeyError, TypeError, SchemaError) as e:
        raise DatasetError(f"{schema_path}: invalid Paimon schema JSON: {e}") from None


def _store_schema(path: str, row_type: RowType, current: Dataset | None) -> int:
    """The id of ``row_type``'s schema file, writing a new one if it differs
    from the current schema."""
    if current is not None and current.schema == row_type:
        return current.schema_id
    schema_dir = os.path.join(path, SCHEMA_DIR)
    os.makedirs(schema_dir, exist_ok=True)
    ids = [int(n.split("-", 1)[1]) for n in os.listdir(schema_dir)
           if n.startswith("schema-") and n.split("-", 1)[1].isdigit()]
    new_id = max(ids) + 1 if ids else 0
    data = json.dumps(schema_to_json(row_type, new_id), indent=2).encode()
    write_atomically(os.path.join(schema_dir, f"schema-{new_id}"), data)
    return new_id


def _write_manifest(path: str, schema_id: int, snapshot: int, job: str,
                    files: list[FileEntry]) -> None:
    doc = {"version": 1, "schemaId": schema_id, "snapshot": snapshot, "job": job,
           "files": [e.to_json() for e in files]}
    write_atomically(os.path.join(path, MANIFEST), json.dumps(doc, indent=1).encode())
    fsync_dir(path)


# ---------------------------------------------------------------- write jobs

def new_job_id() -> str:
    return uuid.uuid4().hex[:16]


def temporary_dir(path: str, job: str) -> str:
    return os.path.join(os.path.abspath(path), TEMPORARY, job)


def job_aborted(path: str, job: str) -> bool:
    return os.path.exists(os.path.join(os.path.abspath(path), TEMPORARY, ABORTED_PREFIX + job))


@dataclass
class StagedFile:
    """A file a task wrote under ``_temporary/<job>/``."""
    tmp_path: str
    name: str       # its final name in the dataset directory
    rows: int


def commit(path: str, row_type: RowType, staged: list[StagedFile], job: str,
           overwrite: bool) -> Dataset:
    """Makes the staged files part of the dataset in one atomic step (see
    the module doc). Appending requires the dataset's schema; overwriting
    may replace it. Returns the new state."""
    path = os.path.abspath(path)
    os.makedirs(path, exist_ok=True)
    current = Dataset.open(path) if Dataset.exists(path) else None
    if current is not None and not overwrite and current.schema != row_type:
        raise DatasetError(f"{path}: cannot append rows of schema [{row_type}] to a dataset "
                           f"of schema [{current.schema}]")
    schema_id = _store_schema(path, row_type, current)
    new = []
    for s in staged:
        if s.rows == 0:              # Paimon writes no empty data files either
            os.remove(s.tmp_path)
            continue
        os.replace(s.tmp_path, os.path.join(path, s.name))
        new.append(FileEntry(s.name, s.rows))
    fsync_dir(path)
    kept = [] if overwrite or current is None else current.files
    snapshot = 1 if current is None else current.snapshot + 1
    _write_manifest(path, schema_id, snapshot, job, kept + new)      # the commit point
    shutil.rmtree(temporary_dir(path, job), ignore_errors=True)
    after = Dataset.open(path)
    # An overwrite's old files are unreferenced now. Paimon would keep them
    # until the snapshot expires; we have one snapshot, so they go at once
    # (a query planned on the old manifest and still running may then fail).
    for p in unreferenced_files(current, after):
        os.remove(p)
    vacuum(path)
    return after


def abort(path: str, job: str) -> None:
    """Discards a job's temporary files. Tasks still running see the
    tombstone and delete their own files when they finish."""
    tmp_root = os.path.join(os.path.abspath(path), TEMPORARY)
    if not os.path.isdir(tmp_root):
        return
    open(os.path.join(tmp_root, ABORTED_PREFIX + job), "wb").close()
    shutil.rmtree(os.path.join(tmp_root, job), ignore_errors=True)
    vacuum(path)


def vacuum(path: str, older_than: float = 24 * 3600.0) -> list[str]:
    """Removes what no committed state refers to:

    * ``_temporary/<job>`` of aborted jobs (left by tasks that finished
      after the abort), and tombstones older than ``older_than`` seconds;
    * ``_temporary/<job>`` of any job untouched for ``older_than`` seconds
      (a crashed driver);
    * data and deletion-vector files that the manifest does not list and
      that are older than ``older_than`` seconds (a crash between the renames
      and the manifest, or files of an overwritten state).

    Returns the removed paths."""
    path = os.path.abspath(path)
    now = time.time()
    removed = []

    def old(p):
        try:
            return now - os.path.getmtime(p) > older_than
        except OSError:
            return False

    tmp_root = os.path.join(path, TEMPORARY)
    if os.path.isdir(tmp_root):
        names = os.listdir(tmp_root)
        aborted = {n[len(ABORTED_PREFIX):] for n in names if n.startswith(ABORTED_PREFIX)}
        for n in names:
            p = os.path.join(tmp_root, n)
            if n.startswith(ABORTED_PREFIX):
                job_dir = os.path.join(tmp_root, n[len(ABORTED_PREFIX):])
                if old(p) and not os.path.exists(job_dir):
                    os.remove(p)
                    removed.append(p)
            elif n in aborted or old(p):
                shutil.rmtree(p, ignore_errors=True)
                removed.append(p)
        try:
            os.rmdir(tmp_root)      # only when no job uses it any more
        except OSError:
            pass
    if Dataset.exists(path):
        current = Dataset.open(path)
        live = {e.name for e in current.files} | \
            {e.deletion_vector for e in current.files if e.deletion_vector}
        for n in os.listdir(path):
            is_data = n.endswith(DATA_SUFFIX) or (n.startswith("dv-") and n.endswith(".bin"))
            p = os.path.join(path, n)
            if is_data and n not in live and not n.startswith(".") and old(p):
                os.remove(p)
                removed.append(p)
    return removed


def unreferenced_files(before: Dataset | None, after: Dataset) -> list[str]:
    """Paths of the files ``before`` lists and ``after`` no longer does."""
    if before is None:
        return []
    live = {e.name for e in after.files} | {e.deletion_vector for e in after.files}
    old = [e.name for e in before.files] + [e.deletion_vector for e in before.files
                                            if e.deletion_vector]
    return [os.path.join(after.path, n) for n in old if n not in live]


# ---------------------------------------------------------------- deletion vectors

def set_deletion_vectors(path: str, vectors: dict[str, Any]) -> Dataset:
    """Commits deletion vectors for committed files, atomically (a new
    manifest). ``vectors`` maps a file name (as listed by the manifest, or
    its absolute path) to a pyroaring ``BitMap`` of deleted row numbers, or
    to None to drop the file's vector. A new vector replaces the old one; to
    add deletions, pass the union."""
    path = os.path.abspath(path)
    current = Dataset.open(path)
    by_name = {e.name: e for e in current.files}
    job = new_job_id()
    updated = {}
    for key, bitmap in vectors.items():
        name = os.path.relpath(key, path) if os.path.isabs(key) else key
        if name not in by_name:
            raise DatasetError(f"{path}: no committed file {name!r} to attach a deletion vector to")
        entry = by_name[name]
        if bitmap is None:
            updated[name] = FileEntry(name, entry.rows, None)
            continue
        if len(bitmap) and bitmap.max() >= entry.rows:
            raise DatasetError(f"{path}/{name}: the deletion vector deletes row {bitmap.max()}, "
                               f"but the file has {entry.rows} rows")
        dv_name = f"dv-{job}-{len(updated)}.bin"
        write_atomically(os.path.join(path, dv_name), bitmap.serialize())
        updated[name] = FileEntry(name, entry.rows, dv_name)
    files = [updated.get(e.name, e) for e in current.files]
    _write_manifest(path, current.schema_id, current.snapshot + 1, job, files)
    after = Dataset.open(path)
    for p in unreferenced_files(current, after):
        os.remove(p)                # replaced vectors: nothing refers to them any more
    return after
