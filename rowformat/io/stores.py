"""The one place that picks a filesystem for a URL: pyarrow's (what
pypaimon's FileIO wraps: S3, GCS, Azure, HDFS), fsspec's for schemes pyarrow
has no driver for, or the one a caller passes. :class:`Store` gives both
kinds the same few operations, so no caller branches on which it got."""
from __future__ import annotations

import errno
import threading
from typing import Any, Callable

from ..errors import StorageError
from . import settings as st
from .urls import S3_SCHEMES, check_url

_FILESYSTEMS: dict = {}
_FS_LOCK = threading.Lock()


def _pyarrow_fs(scheme: str, netloc: str, options: dict | None):
    """A pyarrow filesystem for ``scheme``, one per distinct settings (their
    connections are pooled), or None when pyarrow has no driver for it."""
    import pyarrow.fs as pafs
    if scheme in S3_SCHEMES:
        args = st.s3_arguments(options)
    elif scheme in ("gs", "gcs", "abfs", "abfss", "az", "hdfs", "viewfs"):
        args = st.filesystem_arguments(options)
    else:
        return None
    key = (scheme, netloc if scheme in ("hdfs", "viewfs") else "", repr(sorted(args.items())))
    with _FS_LOCK:
        fs = _FILESYSTEMS.get(key)
    if fs is not None:
        return fs
    if scheme in S3_SCHEMES:
        args.setdefault("retry_strategy",
                        pafs.AwsStandardS3RetryStrategy(max_attempts=st.MAX_ATTEMPTS))
        fs = pafs.S3FileSystem(**args)
    elif scheme in ("gs", "gcs"):
        fs = pafs.GcsFileSystem(**args)
    elif scheme in ("abfs", "abfss", "az"):
        if not hasattr(pafs, "AzureFileSystem"):
            return None
        fs = pafs.AzureFileSystem(**args)
    else:
        host, _, port = netloc.partition(":")
        fs = pafs.HadoopFileSystem(host or "default", int(port or 0), **args)
    with _FS_LOCK:
        return _FILESYSTEMS.setdefault(key, fs)


def is_pyarrow_fs(filesystem: Any) -> bool:
    import pyarrow.fs as pafs
    return isinstance(filesystem, pafs.FileSystem)


class Store:
    """A filesystem, pyarrow's or fsspec's, behind the operations rowformat
    uses (paths are the filesystem's own, from :func:`resolve`). Store
    errors are raised as the filesystem raises them; callers map them
    (:func:`rowformat.io.failures.mapped`)."""

    def __init__(self, fs: Any):
        self.fs = fs
        self.arrow = is_pyarrow_fs(fs)

    def kind(self, path: str) -> str | None:
        """"file", "dir" or None (nothing there)."""
        if self.arrow:
            import pyarrow.fs as pafs
            t = self.fs.get_file_info(path).type
            return {pafs.FileType.File: "file", pafs.FileType.Directory: "dir"}.get(t)
        if not self.fs.exists(path):
            return None
        return "dir" if self.fs.isdir(path) else "file"

    def size(self, path: str) -> int | None:
        """The size of the file ``path``, None if no file is there."""
        if self.arrow:
            import pyarrow.fs as pafs
            info = self.fs.get_file_info(path)
            return info.size if info.type == pafs.FileType.File else None
        try:
            return int(self.fs.info(path).get("size") or 0) if self.fs.isfile(path) else None
        except FileNotFoundError:
            return None

    def names(self, path: str) -> list[str]:
        """The names directly under the directory ``path``: none if nothing
        is there; NotADirectoryError for a file."""
        if self.arrow:
            import pyarrow.fs as pafs
            infos = self.fs.get_file_info(pafs.FileSelector(path, allow_not_found=True))
            if not infos and self.fs.get_file_info(path).type == pafs.FileType.File:
                raise NotADirectoryError(errno.ENOTDIR, "a file, not a directory")
            return [info.base_name for info in infos]
        if not self.fs.exists(path):
            return []
        if self.fs.isfile(path):
            raise NotADirectoryError(errno.ENOTDIR, "a file, not a directory")
        return [p.rstrip("/").rsplit("/", 1)[-1] for p in self.fs.ls(path, detail=False)]

    def find(self, path: str) -> list[tuple[str, int, Any]]:
        """(path, size, modification time as the store gives it) of every
        file under ``path``, at any depth."""
        if self.arrow:
            import pyarrow.fs as pafs
            infos = self.fs.get_file_info(pafs.FileSelector(path, recursive=True,
                                                            allow_not_found=True))
            return [(i.path, i.size, i.mtime) for i in infos if i.type == pafs.FileType.File]
        return [(p, d.get("size", 0), d.get("mtime", d.get("LastModified")))
                for p, d in self.fs.find(path, detail=True).items()]

    def open_input(self, path: str):
        """A seekable binary file object."""
        return self.fs.open_input_file(path) if self.arrow else self.fs.open(path, "rb")

    def open_positional(self, path: str) -> tuple[Any, int, Callable[[int, int], bytes]]:
        """(file to keep open, size, read(nbytes, offset)), the read safe
        from any thread: pyarrow's ``read_at``, fsspec's ``cat_file``."""
        if self.arrow:
            f = self.fs.open_input_file(path)       # one HEAD
            return f, f.size(), f.read_at
        fs = self.fs
        return None, int(fs.size(path)), lambda n, off: fs.cat_file(path, off, off + n)

    def open_output(self, path: str):
        return self.fs.open_output_stream(path) if self.arrow else self.fs.open(path, "wb")

    def move(self, src: str, dst: str) -> None:
        self.fs.move(src, dst)

    def delete(self, path: str) -> None:
        if self.arrow:
            self.fs.delete_file(path)
        else:
            self.fs.rm_file(path)


def resolve(url: str, filesystem: Any = None, storage_options: dict | None = None,
            file: bool = False) -> tuple[Store, str]:
    """The :class:`Store` holding ``url`` and the path inside it, once
    :func:`check_url` passed it (``file``: the URL names a file, not a
    directory). With ``filesystem`` given, ``url`` may also be a plain path
    inside it."""
    check_url(url, file)
    scheme, sep, rest = url.partition("://")
    scheme = scheme.lower() if sep else ""
    if filesystem is not None:
        if not sep:
            return Store(filesystem), url
        if is_pyarrow_fs(filesystem):
            return Store(filesystem), rest if scheme not in ("hdfs", "viewfs") \
                else "/" + rest.partition("/")[2]
        return Store(filesystem), filesystem._strip_protocol(url)
    netloc, _, path = rest.partition("/")
    fs = _pyarrow_fs(scheme, netloc, storage_options)
    if fs is not None:
        return Store(fs), ("/" + path) if scheme in ("hdfs", "viewfs") else rest
    try:
        import fsspec
    except ImportError:
        raise StorageError(f"{url}: no filesystem for {scheme}:// URLs in pyarrow, and fsspec "
                           f"is not installed (pip install 'rowformat[remote]')") from None
    try:
        fs, inner = fsspec.core.url_to_fs(url, **st.filesystem_arguments(storage_options))
    except (ImportError, ValueError) as e:
        raise StorageError(f"{url}: no filesystem for {scheme}:// URLs: {e}") from None
    return Store(fs), inner
