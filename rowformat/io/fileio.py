"""Operations on files and directories by name, local paths and URLs
alike, with one set of semantics (docs/row-files.md#object-stores):

* nothing there: :func:`list_names` and :func:`walk` give nothing,
  :func:`file_size` and :func:`kind` None, :func:`delete` False, and
  :func:`read_bytes` and :func:`open_file` raise
  :class:`~rowformat.errors.StorageNotFoundError` (a FileNotFoundError);
* a directory that exists but cannot be listed (a file in its place, a
  dangling symlink, a symlink loop, no permission): a
  :class:`~rowformat.errors.StorageError` naming it, never read as empty;
  a local file that is not a regular file (a pipe, a device, a directory)
  where a file is read: a CorruptFileError naming it;
* a URL names one object key (:func:`rowformat.io.urls.check_url`), the
  same for every operation; messages never hold credentials.
"""
from __future__ import annotations

import errno
import os
import stat
from typing import Any

from .failures import mapped, missing, storage_error, unlistable
from .local import open_regular_file
from .stores import resolve
from .urls import is_url, local


def kind(path: str, storage_options: dict | None = None) -> str | None:
    """"file", "dir" or None (nothing there) for a local path or a URL."""
    here = local(path)
    if here is not None:
        return "dir" if os.path.isdir(here) else "file" if os.path.exists(here) else None
    store, inner = resolve(path, storage_options=storage_options)
    with mapped(path, "looking up"):
        return store.kind(inner)


def is_symlink(url: str) -> bool:
    """Whether ``url`` is a local symlink (object stores have none): code that
    deletes what it lists refuses them, as another file's name."""
    here = local(url)
    return here is not None and os.path.islink(here)


def list_names(url: str, storage_options: dict | None = None,
               filesystem: Any = None) -> list[str]:
    """The names directly under the directory ``url``, a URL or a local path:
    none if it is missing; a :class:`StorageError` naming it if it exists but
    cannot be listed (a dangling symlink, a symlink loop, a file, no
    permission), which code that deletes must never read as empty."""
    here = local(url, filesystem)
    if here is not None:
        try:
            return os.listdir(here)
        except OSError as e:
            if _missing(here):
                return []
            raise unlistable(url, e) from None
    store, path = resolve(url, filesystem, storage_options)
    try:
        return store.names(path)
    except NotADirectoryError as e:
        raise unlistable(url, e) from None
    except OSError as e:
        raise storage_error(url, "listing", e) from None


def _missing(path: str) -> bool:
    """Whether nothing is at ``path`` because nothing is there (or a file
    is on its way: ``x.row/schema``), not because a symlink on its way
    dangles (``branch/b`` linked to a volume not mounted: its ``snapshot/``
    is no more missing than the link)."""
    p = path
    while not os.path.lexists(p):
        parent = os.path.dirname(p)
        if parent == p:
            return True
        p = parent
    return p != path and os.path.exists(p)


def walk(url: str, storage_options: dict | None = None) -> list[tuple[str, int, float | None]]:
    """(path, size, modification time in seconds since the epoch or None
    where the store gives none) of every file under the directory ``url``,
    at any depth (none if it is missing or a file; a directory in it that
    cannot be listed, or ``url`` itself a symlink to a directory, is a
    :class:`StorageError`; symlinks to directories below it are not
    followed): local paths for a local directory, else URLs under ``url``
    (one paginated listing of the prefix on an object store)."""
    here = local(url)
    if here is not None:
        out: list[tuple[str, int, float | None]] = []
        if os.path.islink(here) and os.path.isdir(here):
            # another directory's files (another table's, say) would be
            # listed as this one's, to code that deletes what it lists
            raise unlistable(url, OSError(errno.ELOOP, "a symlink to a directory, not followed"))
        if os.path.isfile(here) or (not os.path.lexists(here) and _missing(here)):
            return out                  # as on a store: no files under it

        def fail(e: OSError) -> None:   # os.walk skips what it cannot list, unless told
            if os.path.lexists(e.filename or here):
                raise unlistable(e.filename or here, e) from None

        for d, _, names in os.walk(here, onerror=fail):
            for n in names:
                try:
                    st = os.lstat(os.path.join(d, n))
                except FileNotFoundError:       # gone since it was listed (a rename)
                    continue
                out.append((os.path.join(d, n), st.st_size, st.st_mtime))
        return out
    store, path = resolve(url, None, storage_options)
    root = url.rstrip("/")
    base = path.rstrip("/")
    with mapped(url, "listing"):
        found = store.find(base)
    return [(root + p[len(base):], int(n or 0), _seconds(t)) for p, n, t in found
            if p.startswith(base)]


def _seconds(t: Any) -> float | None:
    """A listing's modification time (a datetime or seconds) in seconds."""
    if hasattr(t, "timestamp"):
        return t.timestamp()
    return float(t) if isinstance(t, (int, float)) else None


def file_size(url: str, storage_options: dict | None = None) -> int | None:
    """The size of the regular file ``url`` (a URL or a local path), None if
    there is none: one lookup of that name, never a listing of its parent."""
    here = local(url)
    if here is not None:
        try:
            st = os.lstat(here)
        except FileNotFoundError:
            return None
        return st.st_size if stat.S_ISREG(st.st_mode) else None
    store, path = resolve(url, None, storage_options, file=True)
    try:
        return store.size(path)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise storage_error(url, "looking up", e) from None


def open_file(url: str, filesystem: Any = None, storage_options: dict | None = None,
              stream: bool = False):
    """``url`` (a URL, or a local path) as a seekable binary file object
    (Parquet, Arrow IPC, CSV, schema and metadata files: what other
    libraries read); the caller closes it. A local one must be a regular
    file (a named pipe would block: CorruptFileError), unless ``stream``:
    an input read from start to end (a CLI's), which a pipe may be."""
    here = local(url, filesystem)
    if here is not None:
        try:
            return open(here, "rb") if stream else open_regular_file(here)
        except FileNotFoundError:
            raise missing(url, "opening for reading") from None
    store, path = resolve(url, filesystem, storage_options, file=True)
    with mapped(url, "opening for reading"):
        return store.open_input(path)


def read_bytes(url: str, storage_options: dict | None = None) -> bytes:
    """The whole of a small file (a metadata file), a local path or a URL
    (one GET)."""
    with open_file(url, storage_options=storage_options) as f:
        with mapped(url, "reading"):
            return f.read()


def delete(url: str, storage_options: dict | None = None) -> bool:
    """Deletes the file ``url`` (a URL or a local path); False if there was none."""
    here = local(url)
    if here is not None:
        try:
            os.unlink(here)
        except FileNotFoundError:
            return False
        return True
    store, path = resolve(url, None, storage_options, file=True)
    try:
        store.delete(path)
        return True
    except FileNotFoundError:
        return False
    except OSError as e:
        err = storage_error(url, "deleting", e)
        if err.errno == errno.ENOENT:
            return False
        raise err from None


def make_dirs(path: str) -> None:
    """Creates the local directory ``path`` and its parents if missing. A
    URL needs none: object stores have keys, not directories, and the
    stores that have directories create a written file's parents."""
    here = local(path)
    if here is not None:
        with mapped(path, "creating the directory"):
            os.makedirs(here, exist_ok=True)


def is_local(path: Any) -> bool:
    """``path`` is a local path (or a ``file://`` URL)."""
    return local(path) is not None


__all__ = ["kind", "list_names", "walk", "file_size", "open_file", "read_bytes", "delete",
           "make_dirs", "is_local", "is_url"]
