"""Where a file's bytes live: a local path (the readers' own ``pread``), or a
URL (``s3://``, ``gs://``, ``abfs://``, ``hdfs://``, ...) read and written
through ``pyarrow.fs`` (what pypaimon's FileIO wraps), fsspec for schemes
pyarrow has no driver for, or a filesystem the caller passes.

The format decides the I/O, not a generic file cache:

* :class:`RemoteFile` gives positional, thread-safe reads (``read_at``) with
  no cache under the readers' block cache: a lookup is one ranged GET of its
  block.
* :meth:`RemoteFile.read_ranges` fetches many ranges at once (a take's
  touched blocks), neighbours closer than a small hole merged into one
  request, at most ``IO_THREADS`` requests in flight per process.
* :class:`Fetch` requests a scan unit's blocks as large sequential ranges
  (up to ``SCAN_CHUNK``) when the unit is planned, ``SCAN_AHEAD`` units
  ahead of the decoder, so reads overlap decompression.
* :func:`open_output` streams a write: on S3 (with botocore installed) a
  multipart upload that is completed only by a successful close and aborted
  otherwise, so no object ever appears for a failed or killed write; on
  other stores a hidden temporary object moved into place by close.

Settings: ``storage_options`` (a dict: pyarrow's ``S3FileSystem`` arguments,
or the Paimon catalog's ``s3.endpoint``, ``s3.access-key``, ...; for other
schemes the filesystem's own arguments) or ``filesystem`` (a
``pyarrow.fs.FileSystem`` or an fsspec filesystem); otherwise the standard
environment (``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``, ``AWS_REGION``, ...).
Waits are bounded: connect and request timeouts and a few retries, so an
unreachable store fails in seconds with a :class:`StorageError` naming the URL.
"""
from __future__ import annotations

import errno
import hashlib
import io
import os
import re
import stat
import threading
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable, Sequence

from .errors import StorageError, StorageNotFoundError

__all__ = ["is_url", "RemoteFile", "Fetch", "open_file", "open_output", "resolve",
           "IO_THREADS", "SCAN_CHUNK"]

# A scheme of two or more characters and "://": "C:\\x" and "C:/x" are paths.
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]+://")

# ranged requests in flight per process: a take of 100 scattered blocks is
# two round trips, not seven (threads waiting on the network cost little)
IO_THREADS = 64
# take(): two ranges are read as one when the hole between them is at most
# this and at most a tenth of the next range (bytes read stay within 1.1x
# of the blocks wanted)
HOLE = 64 << 10
SCAN_CHUNK = 8 << 20        # a scan's requests are at most this large,
SCAN_AHEAD = 4              # and its units' reads start this many units ahead
PART_SIZE = 8 << 20         # a multipart upload's part (S3's minimum is 5 MiB)
PARTS_IN_FLIGHT = 4

# bounded waits: a dead endpoint fails in seconds (pypaimon's own FileIO asks
# for 10 attempts of 60 s each)
CONNECT_TIMEOUT = 5.0
REQUEST_TIMEOUT = 30.0
MAX_ATTEMPTS = 3

_S3_SCHEMES = {"s3", "s3a", "s3n"}


def is_url(path: Any) -> bool:
    """True for a ``scheme://...`` string (not for local paths)."""
    return isinstance(path, str) and _URL.match(path) is not None


def local_path_of(url: str) -> str | None:
    """The local path of a ``file://`` URL, else None."""
    if url[:7].lower() == "file://":
        return url[7:] or "/"
    return None


# -- settings -----------------------------------------------------------------------
# Paimon catalog option names (and their s3a./fs.s3a. forms) -> S3FileSystem's
_S3_ALIASES = {
    "endpoint": "endpoint_override", "endpoint-url": "endpoint_override",
    "endpoint_url": "endpoint_override",
    "access-key": "access_key", "access.key": "access_key", "accessKeyId": "access_key",
    "secret-key": "secret_key", "secret.key": "secret_key", "accessKeySecret": "secret_key",
    "session-token": "session_token", "session.token": "session_token",
    "security-token": "session_token",
    "region": "region",
    "path-style-access": "path_style", "path.style.access": "path_style",
}
_S3_PREFIXES = ("fs.s3a.", "fs.s3.", "s3a.", "s3.")


def _truthy(v: Any) -> bool:
    return v if isinstance(v, bool) else str(v).strip().lower() in ("1", "true", "yes", "on")


_S3_ARGUMENTS = {
    "access_key", "secret_key", "session_token", "anonymous", "region", "request_timeout",
    "connect_timeout", "scheme", "endpoint_override", "background_writes", "default_metadata",
    "role_arn", "session_name", "external_id", "load_frequency", "proxy_options",
    "allow_bucket_creation", "allow_bucket_deletion", "check_directory_existence_before_creation",
    "retry_strategy", "force_virtual_addressing", "path_style"}


def s3_name(key: str) -> tuple[str, bool]:
    """The S3FileSystem argument a setting's ``key`` names (a pyarrow name,
    or a catalog name with its ``s3.``/``fs.s3a.``/... prefix), and whether
    it had such a prefix."""
    for prefix in _S3_PREFIXES:
        if key.startswith(prefix):
            name = key[len(prefix):]
            return _S3_ALIASES.get(name, name), True
    return _S3_ALIASES.get(key, key), False


def s3_settings(options: dict | None) -> dict:
    """``options`` (pyarrow names, or Paimon catalog names) as S3FileSystem
    arguments, with bounded timeouts and retries unless given. An endpoint
    with a scheme (``http://host:port``) sets ``scheme`` too. A catalog name
    that is not a setting of the connection (``s3.impl``) is ignored; any
    other unknown name is a ValueError (a misspelt argument)."""
    out: dict[str, Any] = {}
    for key, value in (options or {}).items():
        name, prefixed = s3_name(key)
        if name not in _S3_ARGUMENTS:
            if prefixed:
                continue
            raise ValueError(f"storage option {key!r} is not an S3 setting (pyarrow.fs.S3FileSystem's "
                             f"arguments, or s3.endpoint, s3.access-key, s3.secret-key, s3.region, "
                             f"s3.path-style-access, ...)")
        if value is None:
            continue
        if name == "path_style":
            out["force_virtual_addressing"] = not _truthy(value)
        elif name in ("anonymous", "background_writes", "allow_bucket_creation",
                      "allow_bucket_deletion", "force_virtual_addressing"):
            out[name] = _truthy(value)
        elif name in ("connect_timeout", "request_timeout"):
            out[name] = float(value)
        else:
            out[name] = value
    if not out.get("endpoint_override"):
        # the standard variables (botocore reads them itself; some pyarrow releases do not)
        env = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
        if env:
            out["endpoint_override"] = env
    endpoint = out.get("endpoint_override")
    if isinstance(endpoint, str) and "://" in endpoint:
        scheme, _, rest = endpoint.partition("://")
        out.setdefault("scheme", scheme)
        out["endpoint_override"] = rest.rstrip("/")
    out.setdefault("connect_timeout", CONNECT_TIMEOUT)
    out.setdefault("request_timeout", REQUEST_TIMEOUT)
    if "retry_strategy" not in out:
        import pyarrow.fs as pafs
        out["retry_strategy"] = pafs.AwsStandardS3RetryStrategy(max_attempts=MAX_ATTEMPTS)
    return out


def catalog_storage_options(options: dict) -> dict:
    """The storage settings among a Paimon catalog's options (``s3.*``,
    ``s3a.*``, ``fs.s3a.*``, ...): what storage_options takes."""
    return {k: v for k, v in options.items() if k.startswith(_S3_PREFIXES)}


_FILESYSTEMS: dict = {}
_FS_LOCK = threading.Lock()


def _pyarrow_fs(scheme: str, netloc: str, options: dict | None):
    """A pyarrow filesystem for ``scheme``, one per distinct settings (their
    connections are pooled), or None when pyarrow has no driver for it."""
    import pyarrow.fs as pafs
    key = (scheme, netloc if scheme in ("hdfs", "viewfs") else "", repr(sorted((options or {}).items())))
    with _FS_LOCK:
        fs = _FILESYSTEMS.get(key)
    if fs is not None:
        return fs
    if scheme in _S3_SCHEMES:
        fs = pafs.S3FileSystem(**s3_settings(options))
    elif scheme in ("gs", "gcs"):
        fs = pafs.GcsFileSystem(**(options or {}))
    elif scheme in ("abfs", "abfss", "az") and hasattr(pafs, "AzureFileSystem"):
        fs = pafs.AzureFileSystem(**(options or {}))
    elif scheme in ("hdfs", "viewfs"):
        host, _, port = netloc.partition(":")
        fs = pafs.HadoopFileSystem(host or "default", int(port or 0), **(options or {}))
    else:
        return None
    with _FS_LOCK:
        return _FILESYSTEMS.setdefault(key, fs)


def is_pyarrow_fs(filesystem: Any) -> bool:
    import pyarrow.fs as pafs
    return isinstance(filesystem, pafs.FileSystem)


# -- URLs ----------------------------------------------------------------------------
# "scheme://userinfo@": RFC 3986's userinfo (no "/"), or on S3 and GCS, whose
# bucket names hold neither ":" nor "@", anything up to an "@" after a ":"
# (an AWS secret with its "/" not %-encoded)
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]+)://"
                       r"(?P<user>[^/?#@\s]*@|[^/?#@\s:]*:[^\s@]*@)")
# Azure's URLs name a container@account: not credentials (unless user:password@)
_AZURE_SCHEMES = {"abfs", "abfss", "az", "adl", "wasb", "wasbs"}
_BUCKET_SCHEMES = _S3_SCHEMES | {"gs", "gcs"}


def _userinfo(m: re.Match) -> bool:
    scheme, user = m["scheme"].lower(), m["user"]
    if "/" in user and scheme not in _BUCKET_SCHEMES:
        return False
    return scheme not in _AZURE_SCHEMES or ":" in user


def redact(text: str) -> str:
    """``text`` (a URL, or a message holding URLs) with the credentials of
    every ``scheme://user:password@`` replaced by ``***``: what messages
    show of a URL."""
    return _USERINFO.sub(lambda m: f"{m['scheme']}://***@" if _userinfo(m) else m.group(0), text)


def check_url(url: str, file: bool) -> None:
    """Refuses, with a :class:`StorageError` naming ``url`` (redacted), an
    object-store URL that does not name one key: credentials in it
    (``user:password@``: they would be echoed by every message naming the
    URL), an empty, ``.`` or ``..`` segment (a store keeps the key as given,
    while HTTP clients collapse the segments: one URL would write one object
    and read another), or, for a file (``file``), no key or a trailing
    ``/``. Local paths and ``file://`` URLs are not checked: ``..`` is
    theirs to resolve."""
    scheme, sep, rest = url.partition("://")
    scheme = scheme.lower()
    if not sep or scheme == "file":
        return
    m = _USERINFO.match(url)
    if m is not None and _userinfo(m):
        raise StorageError(errno.EINVAL, f"{redact(url)}: credentials in the URL are refused (they "
                           f"would be shown wherever it is): give them as storage_options "
                           f"(s3.access-key, s3.secret-key) or in the environment")
    netloc, _, key = rest.partition("/")
    if scheme in _BUCKET_SCHEMES and not netloc:
        raise StorageError(errno.EINVAL, f"{url}: no bucket after {scheme}://")
    if file and (not key or key.endswith("/")):
        raise StorageError(errno.EINVAL, f"{url}: " + ("ends with '/', a directory's name, not a "
                                                       "file's" if key else
                                                       "no object key after the bucket"))
    segments = key[:-1].split("/") if key.endswith("/") else key.split("/")
    bad = next((s for s in segments if s in ("", ".", "..")), None) if key else None
    if bad is not None:
        what = f"a '{bad}' segment" if bad else "an empty segment ('//')"
        raise StorageError(errno.EINVAL, f"{url}: {what} in the key: a store keeps such a key as "
                           f"written while reads collapse it, so the URL would name two objects; "
                           f"give the key without it")


def resolve(url: str, filesystem: Any = None, storage_options: dict | None = None,
            file: bool = False) -> tuple[Any, str]:
    """The filesystem (pyarrow's, else fsspec's) holding ``url`` and the path
    inside it, once :func:`check_url` passed it (``file``: the URL names a
    file, not a directory). With ``filesystem`` given, ``url`` may also be
    a plain path inside it."""
    check_url(url, file)
    scheme, sep, rest = url.partition("://")
    scheme = scheme.lower() if sep else ""
    if filesystem is not None:
        if not sep:
            return filesystem, url
        if is_pyarrow_fs(filesystem):
            return filesystem, rest if scheme not in ("hdfs", "viewfs") else "/" + rest.partition("/")[2]
        return filesystem, filesystem._strip_protocol(url)
    netloc, _, path = rest.partition("/")
    fs = _pyarrow_fs(scheme, netloc, storage_options)
    if fs is not None:
        return fs, ("/" + path) if scheme in ("hdfs", "viewfs") else rest
    try:
        import fsspec
    except ImportError:
        raise StorageError(f"{url}: no filesystem for {scheme}:// URLs in pyarrow, and fsspec "
                           f"is not installed (pip install 'rowformat[remote]')") from None
    try:
        return fsspec.core.url_to_fs(url, **(storage_options or {}))
    except (ImportError, ValueError) as e:
        raise StorageError(f"{url}: no filesystem for {scheme}:// URLs: {e}") from None


def join(path: str, *names: str) -> str:
    """``names`` under the directory ``path``, a local path or a URL."""
    return "/".join([path.rstrip("/"), *names]) if is_url(path) else os.path.join(path, *names)


def list_names(url: str, storage_options: dict | None = None,
               filesystem: Any = None) -> list[str]:
    """The names directly under the directory ``url``, a URL or a local path:
    none if it is missing; a :class:`StorageError` naming it if it exists but
    cannot be listed (a dangling symlink, a symlink loop, a file, no
    permission), which code that deletes must never read as empty."""
    local = _local(url, filesystem)
    if local is not None:
        try:
            return os.listdir(local)
        except OSError as e:
            if _missing(local):
                return []
            raise unlistable(url, e) from None
    fs, path = resolve(url, filesystem, storage_options)
    try:
        if is_pyarrow_fs(fs):
            import pyarrow.fs as pafs
            infos = fs.get_file_info(pafs.FileSelector(path, allow_not_found=True))
            if not infos and fs.get_file_info(path).type == pafs.FileType.File:
                raise NotADirectoryError(errno.ENOTDIR, "a file, not a directory")
            return [info.base_name for info in infos]
        if not fs.exists(path):
            return []
        if fs.isfile(path):
            raise NotADirectoryError(errno.ENOTDIR, "a file, not a directory")
        return [p.rstrip("/").rsplit("/", 1)[-1] for p in fs.ls(path, detail=False)]
    except NotADirectoryError as e:
        raise unlistable(url, e) from None
    except OSError as e:
        raise storage_error(url, "listing", e) from None


def _missing(local: str) -> bool:
    """Whether nothing is at ``local`` because nothing is there (or a file
    is on its way: ``x.row/schema``), not because a symlink on its way
    dangles (``branch/b`` linked to a volume not mounted: its ``snapshot/``
    is no more missing than the link)."""
    p = local
    while not os.path.lexists(p):
        parent = os.path.dirname(p)
        if parent == p:
            return True
        p = parent
    return p != local and os.path.exists(p)


def unlistable(url: str, e: OSError) -> StorageError:
    """The error for a directory that exists but cannot be listed."""
    return StorageError(e.errno or errno.EIO,
                        f"{url}: exists but cannot be listed as a directory "
                        f"({e.strerror or e}): nothing is read as empty")


def _local(url: str, filesystem: Any) -> str | None:
    """``url`` as a local path, if it is one (and no filesystem was given)."""
    if filesystem is None and (not is_url(url) or local_path_of(url) is not None):
        return local_path_of(url) or url
    return None


def read_bytes(url: str, storage_options: dict | None = None) -> bytes:
    """The whole of a small object (a metadata file): one GET."""
    with open_file(url, storage_options=storage_options) as f:
        try:
            return f.read()
        except OSError as e:
            raise storage_error(url, "reading", e) from None


def walk(url: str, storage_options: dict | None = None) -> list[tuple[str, int, float | None]]:
    """(path, size, modification time in seconds since the epoch or None
    where the store gives none) of every file under the directory ``url``,
    at any depth (none if it is missing or a file; a directory in it that
    cannot be listed, or ``url`` itself a symlink to a directory, is a
    :class:`StorageError`; symlinks to directories below it are not
    followed): local paths for a local directory,
    else URLs under ``url`` (one paginated listing of the prefix on an
    object store)."""
    local = _local(url, None)
    if local is not None:
        out: list[tuple[str, int, float | None]] = []
        if os.path.islink(local) and os.path.isdir(local):
            # another directory's files (another table's, say) would be
            # listed as this one's, to code that deletes what it lists
            raise unlistable(url, OSError(errno.ELOOP, "a symlink to a directory, not followed"))
        if os.path.isfile(local) or (not os.path.lexists(local) and _missing(local)):
            return out                  # as on a store: no files under it

        def fail(e: OSError) -> None:   # os.walk skips what it cannot list, unless told
            if os.path.lexists(e.filename or local):
                raise unlistable(e.filename or local, e) from None

        for d, _, names in os.walk(local, onerror=fail):
            for n in names:
                try:
                    st = os.lstat(os.path.join(d, n))
                except FileNotFoundError:       # gone since it was listed (a rename)
                    continue
                out.append((os.path.join(d, n), st.st_size, st.st_mtime))
        return out
    fs, path = resolve(url, None, storage_options)
    root = url.rstrip("/")
    base = path.rstrip("/")
    try:
        if is_pyarrow_fs(fs):
            import pyarrow.fs as pafs
            infos = fs.get_file_info(pafs.FileSelector(base, recursive=True, allow_not_found=True))
            found = [(i.path, i.size, i.mtime) for i in infos if i.type == pafs.FileType.File]
        else:
            found = [(p, d.get("size", 0), d.get("mtime", d.get("LastModified")))
                     for p, d in fs.find(base, detail=True).items()]
    except OSError as e:
        raise storage_error(url, "listing", e) from None
    return [(root + p[len(base):], int(n or 0), _seconds(t)) for p, n, t in found
            if p.startswith(base)]


def file_size(url: str, storage_options: dict | None = None) -> int | None:
    """The size of the regular file ``url`` (a URL or a local path), None if
    there is none: one lookup of that name, never a listing of its parent."""
    local = _local(url, None)
    if local is not None:
        try:
            st = os.lstat(local)
        except FileNotFoundError:
            return None
        return st.st_size if stat.S_ISREG(st.st_mode) else None
    fs, path = resolve(url, None, storage_options, file=True)
    try:
        if is_pyarrow_fs(fs):
            import pyarrow.fs as pafs
            info = fs.get_file_info(path)
            return info.size if info.type == pafs.FileType.File else None
        return int(fs.info(path).get("size") or 0) if fs.isfile(path) else None
    except FileNotFoundError:
        return None
    except OSError as e:
        raise storage_error(url, "looking up", e) from None


def _seconds(t: Any) -> float | None:
    """A listing's modification time (a datetime or seconds) in seconds."""
    if hasattr(t, "timestamp"):
        return t.timestamp()
    return float(t) if isinstance(t, (int, float)) else None


def delete(url: str, storage_options: dict | None = None) -> bool:
    """Deletes the file ``url``; False if there was none."""
    local = _local(url, None)
    try:
        if local is not None:
            os.unlink(local)
            return True
        fs, path = resolve(url, None, storage_options, file=True)
        if is_pyarrow_fs(fs):
            fs.delete_file(path)
        else:
            fs.rm_file(path)
        return True
    except FileNotFoundError:
        return False
    except OSError as e:
        if local is not None:
            raise
        err = storage_error(url, "deleting", e)
        if isinstance(err, StorageNotFoundError):
            return False
        raise err from None


# -- errors ---------------------------------------------------------------------------
def storage_error(url: str, what: str, e: BaseException) -> StorageError:
    """``e`` (a store's OSError) as a StorageError naming ``url``, what was
    being done, and the cause; a missing object or bucket as
    StorageNotFoundError (also a FileNotFoundError)."""
    if isinstance(e, StorageError):
        return e
    text = str(e).strip() or type(e).__name__
    missing = isinstance(e, FileNotFoundError) or "NoSuchKey" in text or "NoSuchBucket" in text \
        or "Path does not exist" in text
    cls = StorageNotFoundError if missing else StorageError
    return cls(errno.ENOENT if missing else getattr(e, "errno", None) or errno.EIO,
               redact(f"{url}: {what}: {text}"))


# -- reads ----------------------------------------------------------------------------
_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def io_pool() -> ThreadPoolExecutor:
    """The process's pool for ranged reads and upload parts (IO_THREADS)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(IO_THREADS, thread_name_prefix="rowformat-io")
        return _POOL


def _forget_pool_in_child() -> None:
    global _POOL, _POOL_LOCK
    _POOL, _POOL_LOCK = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_in_child)


def coalesce(ranges: Sequence[tuple[int, int]], hole: int = HOLE,
             limit: int = SCAN_CHUNK) -> list[tuple[int, int, list[int]]]:
    """Sorted, non-overlapping ``(offset, length)`` ranges merged into
    requests ``(offset, length, [indexes of the ranges inside])``: a hole of
    at most ``hole`` bytes and a tenth of the next range is read through,
    and a request stops growing at ``limit`` bytes."""
    out: list[tuple[int, int, list[int]]] = []
    for i, (off, n) in enumerate(ranges):
        if out:
            start, length, members = out[-1]
            gap = off - (start + length)
            if 0 <= gap <= min(hole, n // 10) and length + gap + n <= limit:
                out[-1] = (start, length + gap + n, members + [i])
                continue
        out.append((off, n, [i]))
    return out


class RemoteFile:
    """Positional reads of one object: each ``read_at`` is one ranged
    request, safe from any thread, nothing cached."""

    def __init__(self, url: str, filesystem: Any = None, storage_options: dict | None = None):
        self.name = url
        fs, path = resolve(url, filesystem, storage_options)
        self._fs, self._path = fs, path
        try:
            if is_pyarrow_fs(fs):
                self._file = fs.open_input_file(path)       # one HEAD
                self.size = self._file.size()
                self._read = self._file.read_at             # (nbytes, offset), thread-safe
            else:
                self._file = None
                self.size = int(fs.size(path))
                self._read = lambda n, off: fs.cat_file(path, off, off + n)
        except OSError as e:
            raise storage_error(url, "opening for reading", e) from None
        except Exception as e:      # a store's own error types (fsspec drivers)
            if type(e).__module__.split(".")[0] in ("botocore", "aiobotocore", "google", "azure"):
                raise storage_error(url, "opening for reading", e) from None
            raise

    def read_at(self, offset: int, length: int) -> bytes:
        """``length`` bytes at ``offset`` (fewer at the object's end)."""
        if length <= 0:
            return b""
        try:
            return self._read(length, offset)
        except OSError as e:
            raise storage_error(self.name, f"reading {length} bytes at offset {offset}", e) from None

    def read_ranges(self, ranges: Sequence[tuple[int, int]]) -> list:
        """The bytes of each ``(offset, length)`` range (distinct, any order),
        fetched concurrently, ranges a small hole apart in one request
        (:class:`Fetch`): views of the requests' bytes."""
        fetch = Fetch(self, ranges, HOLE, eager=False)
        try:
            return [fetch.get(i) for i in range(len(ranges))]
        finally:
            fetch.cancel()

    def close(self) -> None:
        """Later reads raise ValueError. The object's file is closed when the
        reads still in flight (a cancelled scan's) let go of it."""
        self._file = None
        self._read = self._closed

    def _closed(self, n: int, off: int) -> bytes:
        raise ValueError(f"{self.name}: the reader is closed")


def open_file(url: str, filesystem: Any = None, storage_options: dict | None = None):
    """``url`` as a seekable binary file object (Parquet, Arrow IPC, CSV,
    schema files: the formats other libraries read); the caller closes it."""
    fs, path = resolve(url, filesystem, storage_options, file=True)
    try:
        return fs.open_input_file(path) if is_pyarrow_fs(fs) else fs.open(path, "rb")
    except OSError as e:
        raise storage_error(url, "opening for reading", e) from None


class Fetch:
    """Ranges of one object requested at once (a unit of a scan, a take's
    blocks): sequential neighbours merged into requests of at most ``limit``
    bytes (with ``hole``, small gaps read through), all submitted to the I/O
    pool at creation (a single request with ``eager=False``: made by the
    first thread that wants it, as a lookup's is). ``get(i)`` waits for
    range ``i`` and gives a view of it."""

    def __init__(self, file: RemoteFile, ranges: Sequence[tuple[int, int]], hole: int = 0,
                 limit: int = SCAN_CHUNK, eager: bool = True):
        self.file, self.ranges = file, ranges
        order = sorted(range(len(ranges)), key=lambda i: ranges[i][0])
        requests = coalesce([ranges[i] for i in order], hole, limit)
        self._where: list = [None] * len(ranges)     # range -> (request, its start)
        pool = io_pool() if eager or len(requests) > 1 else None
        self._futures: list[Any] = []      # Futures, or a _Lazy
        for r, (off, n, members) in enumerate(requests):
            for m in members:
                self._where[order[m]] = (r, off)
            self._futures.append(pool.submit(file.read_at, off, n) if pool is not None
                                 else _Lazy(file.read_at, off, n))

    def get(self, i: int) -> memoryview:
        r, start = self._where[i]
        off, n = self.ranges[i]
        return memoryview(self._futures[r].result())[off - start:off - start + n]

    def cancel(self) -> None:
        """Cancels the requests not started (the others finish unread)."""
        for future in self._futures:
            future.cancel()


class _Lazy:
    """A single request of a Fetch, made by the thread that first wants it
    (no pool hop for a lookup)."""

    def __init__(self, read: Callable, off: int, n: int):
        self._call, self._value = (read, off, n), None
        self._lock = threading.Lock()

    def result(self):
        with self._lock:
            if self._value is None:
                read, off, n = self._call
                self._value = read(off, n)
            return self._value

    def cancel(self) -> None:
        pass


# -- writes ---------------------------------------------------------------------------
# An upload has AtomicOutput's interface: ``file`` takes the bytes, ``commit()``
# makes the object appear, ``discard()`` leaves nothing.

class _S3Multipart(io.RawIOBase):
    """A streamed S3 upload through botocore, also its own binary file
    (``file``): parts of PART_SIZE uploaded as they fill (PARTS_IN_FLIGHT at
    once); commit() completes the multipart upload (or PUTs a small object
    whole); discard(), or a killed process, leaves no object (an aborted
    upload, or one never completed)."""

    def __init__(self, url: str, bucket: str, key: str, options: dict | None):
        super().__init__()
        self.url, self.bucket, self.key = url, bucket, key
        self._client = s3_client(options)
        self._buf = bytearray()
        self._written = 0
        self._upload_id: str | None = None
        self._parts: list[Future] = []
        self.file = self

    def writable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._written

    def write(self, data) -> int:
        n = len(memoryview(data).cast("B"))
        self._buf += data
        self._written += n
        if len(self._buf) >= PART_SIZE:
            self._flush_parts()
        return n

    def _flush_parts(self) -> None:
        try:
            if self._upload_id is None:
                self._upload_id = self._client.create_multipart_upload(
                    Bucket=self.bucket, Key=self.key)["UploadId"]
            while len(self._buf) >= PART_SIZE:
                part, self._buf = bytes(self._buf[:PART_SIZE]), self._buf[PART_SIZE:]
                # bounded: wait for the oldest part when PARTS_IN_FLIGHT are out
                pending = [f for f in self._parts if not f.done()]
                if len(pending) >= PARTS_IN_FLIGHT:
                    pending[0].result()
                number = len(self._parts) + 1
                self._parts.append(io_pool().submit(self._upload_part, number, part))
        except Exception as e:
            raise storage_error(self.url, "uploading", e) from None

    def _upload_part(self, number: int, data: bytes) -> dict:
        r = self._client.upload_part(Bucket=self.bucket, Key=self.key, UploadId=self._upload_id,
                                     PartNumber=number, Body=data)
        return {"PartNumber": number, "ETag": r["ETag"]}

    def commit(self, durable: bool = True) -> None:
        try:
            if self._upload_id is None:         # small: one PUT
                body = bytes(self._buf)
                self._settle(lambda: self._client.put_object(Bucket=self.bucket, Key=self.key,
                                                             Body=body),
                             lambda: [hashlib.md5(body).digest()])
                return
            if self._buf or not self._parts:
                self._parts.append(io_pool().submit(self._upload_part, len(self._parts) + 1,
                                                    bytes(self._buf)))
                self._buf = bytearray()
            parts = [f.result() for f in self._parts]
            self._settle(lambda: self._client.complete_multipart_upload(
                Bucket=self.bucket, Key=self.key, UploadId=self._upload_id,
                MultipartUpload={"Parts": parts}),
                lambda: [bytes.fromhex(p["ETag"].strip('"')) for p in parts])
            self._upload_id = None
        except Exception as e:
            raise storage_error(self.url, "uploading", e) from None

    def _settle(self, complete: Callable, digests: Callable) -> None:
        """complete() makes the object appear. When it raises, the store may
        have done it and the reply been lost (a timeout; botocore's retry of
        a completion then finds no upload): one HEAD tells. The object there
        is this write's when its ETag is the one S3 gives these bytes (the
        MD5 of a PUT's body, or ``"<MD5 of the parts' MD5s>-<parts>"``, from
        ``digests()``): the write succeeded. Otherwise the error stands, and
        an object there (another writer's) is left as it is."""
        try:
            complete()
        except Exception as e:
            try:
                etag = self._client.head_object(Bucket=self.bucket, Key=self.key).get("ETag")
            except Exception:
                raise e from None   # no object (or no answer): the write failed
            try:
                md5s = digests()
                ours = f'"{md5s[0].hex()}"' if self._upload_id is None else \
                    f'"{hashlib.md5(b"".join(md5s)).hexdigest()}-{len(md5s)}"'
            except ValueError:      # parts' ETags that are no MD5s (SSE-KMS): cannot tell
                ours = None
            if etag != ours:
                raise StorageError(f"{self.url}: uploading: {redact(str(e).strip() or type(e).__name__)}; "
                                   f"the object now there is not this write's (ETag {etag}): left "
                                   f"as it is") from None

    def discard(self) -> None:
        self._buf = bytearray()
        for f in self._parts:
            f.cancel()
        if self._upload_id is not None:
            upload, self._upload_id = self._upload_id, None
            for f in self._parts:
                try:
                    f.result()
                except BaseException:
                    pass
            try:
                self._client.abort_multipart_upload(Bucket=self.bucket, Key=self.key,
                                                    UploadId=upload)
            except Exception:
                pass    # the store's lifecycle rules remove what an abort could not


class _TemporaryObject:
    """A write to a store without an abortable upload: streamed to a hidden
    ``.<name>.<random>.tmp`` beside the target, moved there by commit(),
    deleted by discard()."""

    def __init__(self, url: str, fs: Any, path: str):
        self.url, self._fs, self.path = url, fs, path
        head, _, name = path.rpartition("/")
        self.tmp = f"{head}/.{name}.{uuid.uuid4().hex[:12]}.tmp" if head else \
            f".{name}.{uuid.uuid4().hex[:12]}.tmp"
        try:
            self.file = fs.open_output_stream(self.tmp) if is_pyarrow_fs(fs) \
                else fs.open(self.tmp, "wb")
        except OSError as e:
            raise storage_error(url, "opening for writing", e) from None

    def commit(self, durable: bool = True) -> None:
        try:
            self.file.close()
            self._fs.move(self.tmp, self.path)
        except OSError as e:
            raise storage_error(self.url, "writing", e) from None

    def discard(self) -> None:
        try:
            self.file.close()
        except Exception:
            pass
        try:
            if is_pyarrow_fs(self._fs):
                self._fs.delete_file(self.tmp)
            else:
                self._fs.rm(self.tmp)
        except Exception:
            pass


def s3_client(options: dict | None):
    """A botocore S3 client with the same endpoint, credentials and region as
    the pyarrow filesystem of ``options`` (else the environment's), bounded
    timeouts and retries."""
    import botocore.config
    import botocore.session
    s = s3_settings(options)
    endpoint = s.get("endpoint_override")
    if endpoint:
        endpoint = f"{s.get('scheme', 'https')}://{endpoint}"
    session = botocore.session.get_session()
    config = botocore.config.Config(
        connect_timeout=s["connect_timeout"], read_timeout=s["request_timeout"],
        retries={"max_attempts": MAX_ATTEMPTS, "mode": "standard"},
        s3={"addressing_style": "virtual" if s.get("force_virtual_addressing") else "path"}
        if endpoint else None)
    return session.create_client(
        "s3", endpoint_url=endpoint or None, region_name=s.get("region") or None,
        aws_access_key_id=s.get("access_key"), aws_secret_access_key=s.get("secret_key"),
        aws_session_token=s.get("session_token"), config=config)


def _has_botocore() -> bool:
    try:
        import botocore  # noqa: F401
    except ImportError:
        return False
    return True


def open_output(url: str, filesystem: Any = None, storage_options: dict | None = None
                ) -> "_S3Multipart | _TemporaryObject":
    """A streamed write of ``url`` that appears only when commit() succeeds."""
    located = _s3_object(url, filesystem)
    if located is not None:
        return _S3Multipart(url, *located, storage_options)
    fs, path = resolve(url, filesystem, storage_options, file=True)
    return _TemporaryObject(url, fs, path)


def _s3_object(url: str, filesystem: Any) -> tuple[str, str] | None:
    """(bucket, key) of an S3 URL (checked) that botocore reads and writes,
    else None: pyarrow's S3 reads cannot be conditional, nor its uploads
    aborted."""
    if filesystem is not None or url.partition("://")[0].lower() not in _S3_SCHEMES \
            or not _has_botocore():
        return None
    check_url(url, True)
    bucket, _, key = url.partition("://")[2].partition("/")
    return bucket, key
