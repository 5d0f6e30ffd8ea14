"""``PyArrowFileIO.try_to_write_atomic`` while acceleration is on: "create
if absent" that is atomic on object stores, or a loud refusal.

Paimon's commit protocol is optimistic: a writer creates ``snapshot-N`` (and
a new schema creates ``schema-N``) only if no such file exists, and the
loser of a race retries with N + 1. pypaimon 2.0.0's and 2.1.0's
``PyArrowFileIO.try_to_write_atomic`` writes a temporary object, checks that
the target is absent, then moves it there (copy + delete): two writers can
both pass the check, and the second copy silently replaces the first
writer's snapshot (measured on S3: 3 to 11 of 20 to 40 barrier-synced
commits lost, every ``commit()`` returning success).

Here, by the store:

* S3 and S3-compatible stores (``s3://``, ``s3a://``, ``s3n://``): one
  ``PutObject`` with ``If-None-Match: *`` (AWS S3 since 2024): the store
  creates the object only if the key is absent, atomically; HTTP 412 (or
  409, a conditional write in flight) means another writer won: False, and
  pypaimon retries with the next id. Through botocore
  (``pip install 'rowformat[s3]'``), with the endpoint and credentials of the
  table's FileIO. A store that ignores the header (older S3-compatible
  servers) is found by a probe, once per bucket and endpoint: a marker
  created twice, the second create must fail. Such a store is refused.
* HDFS (``hdfs://``, ``viewfs://``): pypaimon's own path, whose rename
  fails when the target exists (HDFS's rename is atomic).
* Any other store (GCS, Azure, OSS through this class, ...): no atomic
  create that rowformat knows: refused.

A refusal is :class:`UnsafeCommitError`, naming the store and the fix: a
catalog with a lock, or :func:`rowformat.paimon.allow_unsafe_commits` for a
job that is the table's only writer (then pypaimon's own path runs, as
without acceleration). ``status().commits`` says what each store got.
"""
from __future__ import annotations

import os
import threading
import uuid
from typing import Any
from urllib.parse import urlparse

from ..errors import StorageError, UnsafeCommitError
from ..io.uploads import s3_client
from ._reader import store_settings

_S3 = ("s3", "s3a", "s3n")
_ATOMIC_RENAME = ("hdfs", "viewfs")
UNSAFE_ENV = "ROWFORMAT_ALLOW_UNSAFE_COMMITS"

_lock = threading.Lock()
_allow_unsafe = os.environ.get(UNSAFE_ENV, "") not in ("", "0", "false", "False")
_probed: dict[tuple, bool] = {}     # (endpoint, bucket) -> conditional creates work
_clients: dict[str, Any] = {}
_seen: dict[str, str] = {}          # store -> how its commits are made (status())


def allow_unsafe_commits(allow: bool = True) -> None:
    """Lets accelerated commits to a store without an atomic create (or
    without botocore for S3) go through pypaimon's own, non-atomic path:
    for a job that is the table's only writer. Worker processes get it
    from ``ROWFORMAT_ALLOW_UNSAFE_COMMITS=1``."""
    global _allow_unsafe
    _allow_unsafe = bool(allow)


def commit_modes() -> dict[str, str]:
    """How this process committed to each store (for ``status()``)."""
    with _lock:
        return dict(_seen)


def _note(store: str, how: str) -> None:
    with _lock:
        _seen[store] = how


def _refuse(store: str, path: str, why: str) -> bool:
    """False (pypaimon's own path) when unsafe commits are allowed, else
    UnsafeCommitError."""
    if _allow_unsafe:
        _note(store, f"unsafe (allowed): {why}")
        return False
    _note(store, f"refused: {why}")
    raise UnsafeCommitError(
        f"{path}: refusing to commit: {why}, so two writers committing at once could "
        f"silently replace each other's snapshot. Use a catalog with a lock, or, when this "
        f"job is the table's only writer, call rowformat.paimon.allow_unsafe_commits() "
        f"(or set {UNSAFE_ENV}=1)")


def _client(options: dict):
    key = repr(sorted(options.items()))
    with _lock:
        client = _clients.get(key)
    if client is None:
        client = s3_client(options)
        with _lock:
            client = _clients.setdefault(key, client)
    return client


def _code(e: Exception) -> tuple[str, int]:
    response = getattr(e, "response", None) or {}
    return (str(response.get("Error", {}).get("Code", "")),
            int(response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0))


def _lost(e: Exception) -> bool:
    """A conditional create another writer won: 412, or 409 (one in flight)."""
    code, status = _code(e)
    return status in (409, 412) or code in ("PreconditionFailed", "ConditionalRequestConflict")


def _create(client, bucket: str, key: str, body: bytes) -> bool:
    """PutObject if absent: True when created, False when the key existed."""
    try:
        client.put_object(Bucket=bucket, Key=key, Body=body, IfNoneMatch="*")
    except Exception as e:
        if _lost(e):
            return False
        raise
    return True


def _conditional_creates_work(client, endpoint: str, bucket: str, prefix: str) -> bool:
    """Whether the store refuses a second create of one key (probed once
    per endpoint and bucket, with a marker object deleted afterwards)."""
    with _lock:
        known = _probed.get((endpoint, bucket))
    if known is not None:
        return known
    marker = f"{prefix}.rowformat-conditional-create-probe-{uuid.uuid4().hex}"
    try:
        _create(client, bucket, marker, b"")
        works = not _create(client, bucket, marker, b"")
    finally:
        try:
            client.delete_object(Bucket=bucket, Key=marker)
        except Exception:
            pass
    with _lock:
        _probed[(endpoint, bucket)] = works
    return works


def _has_botocore() -> bool:
    try:
        import botocore  # noqa: F401
    except ImportError:
        return False
    return True


def _s3_target(file_io, path: str) -> tuple:
    """(client, bucket, key) of an S3 ``path`` of ``file_io``'s store."""
    url = urlparse(path)
    options = store_settings(file_io)
    return _client(options), url.netloc, url.path.lstrip("/")


def check_store(file_io, path: str) -> bool:
    """Whether commits to ``path`` (a table's, or a file's in it) are made
    with a conditional create (True: S3 that honours If-None-Match), go
    through pypaimon's own path (False: a local or HDFS table, or unsafe
    commits allowed), or raise UnsafeCommitError naming the store and the fix."""
    url = urlparse(path)
    scheme = url.scheme.lower()
    if scheme in ("", "file") or (len(scheme) == 1 and not url.netloc):     # local (C:/...)
        return False
    store = f"{scheme}://{url.netloc}"
    if scheme in _ATOMIC_RENAME:
        _note(store, "atomic rename (HDFS)")
        return False
    if scheme not in _S3:
        return _refuse(store, path, f"rowformat knows no atomic create on {scheme}:// stores")
    if not _has_botocore():
        return _refuse(store, path, "conditional creates on S3 need botocore "
                                    "(pip install 'rowformat[s3]')")
    client, bucket, key = _s3_target(file_io, path)
    endpoint = client.meta.endpoint_url
    try:
        works = _conditional_creates_work(client, endpoint, bucket, key.rstrip("/") + "/")
    except Exception as e:
        raise StorageError(f"{path}: checking the store's conditional creates: {e}") from None
    if not works:
        return _refuse(store, path, f"the store at {endpoint} ignores If-None-Match on "
                                    f"PutObject (no atomic create)")
    _note(store, "conditional create (If-None-Match: *)")
    return True


def make_try_commit(stock: Any) -> Any:
    """``FileStoreCommit._try_commit``: the store checked before pypaimon's
    retry loop, so that a refusal is raised at once (inside the loop it would
    be retried ten times, then wrapped in a RuntimeError); after an
    ``APPEND``/``OVERWRITE`` commit, the automatic compaction and expiry
    (:mod:`._after_commit`)."""

    def _try_commit(self, *args, **kwargs):
        check_store(self.table.file_io, str(self.table.table_path))
        kind = kwargs.get("commit_kind", args[0] if args else None)
        if kind not in ("APPEND", "OVERWRITE"):
            return stock(self, *args, **kwargs)
        # a user's commit: what it commits is noted (the plan's last answer,
        # retries included) so that, once it succeeded, the buckets it
        # wrote are compacted and snapshots expired, as Java's writers do
        # after a commit (_after_commit)
        planned: list = []
        plan = kwargs.get("commit_entries_plan", args[2] if len(args) > 2 else None)

        def noting_plan(latest):
            entries = plan(latest)
            planned[:] = [list(entries or [])]
            return entries
        if "commit_entries_plan" in kwargs:
            kwargs["commit_entries_plan"] = noting_plan
        elif len(args) > 2:
            args = args[:2] + (noting_plan,) + args[3:]
        result = stock(self, *args, **kwargs)
        from ._after_commit import after_commit
        after_commit(self.table, planned[0] if planned else [])
        return result

    _try_commit._rowformat_stock = stock  # type: ignore[attr-defined]
    return _try_commit


def make_try_to_write_atomic(stock: Any) -> Any:
    """``PyArrowFileIO.try_to_write_atomic`` (``stock`` is pypaimon's)."""

    def try_to_write_atomic(self, path: str, content: str) -> bool:
        if not check_store(self, path):
            return stock(self, path, content)
        client, bucket, key = _s3_target(self, path)
        try:
            return _create(client, bucket, key, content.encode("utf-8"))
        except Exception as e:
            raise StorageError(f"{path}: committing: {e}") from None

    try_to_write_atomic._rowformat_stock = stock  # type: ignore[attr-defined]
    return try_to_write_atomic
