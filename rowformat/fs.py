"""Remote storage: ``s3://``, ``gs://``, ``memory://``, ... URLs through fsspec.

Readers and writers take a URL wherever they take a path, when the optional
``fsspec`` package (and the filesystem's own package, e.g. ``s3fs``) is
installed: ``pip install rowformat[remote]``. Local paths never touch fsspec.

* Reading opens the URL as an fsspec file object (seek + read, buffered by
  fsspec's block cache); the reader reads the footer and index from the tail
  and then one block per range read.
* Writing goes to a local temporary file first (in the system temp
  directory) and is uploaded with ``put_file`` when the writer's ``close()``
  succeeds; an exception or ``abort()`` uploads nothing. The upload is as
  atomic as the store makes one ``put``: object stores (S3, GCS, Azure)
  show the whole object or none, while other filesystems may show a partial
  file during the upload. Local paths keep the writers' own guarantee
  (temporary name in the target directory, fsync, rename).
"""
from __future__ import annotations

import os
import re
import tempfile
from typing import IO, Any

__all__ = ["is_url", "open_input", "staging_dir", "replace"]

# A scheme of two or more characters and "://": "C:\\x" and "C:/x" are paths.
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]+://")


def is_url(path: Any) -> bool:
    """True for a ``scheme://...`` string (not for local paths)."""
    return isinstance(path, str) and _URL.match(path) is not None


def _fsspec():
    try:
        import fsspec
    except ImportError:
        raise ImportError("reading or writing URLs needs fsspec: "
                          "pip install 'rowformat[remote]'") from None
    return fsspec


def url_to_fs(url: str) -> tuple[Any, str]:
    """The fsspec filesystem of ``url`` and the path inside it."""
    return _fsspec().core.url_to_fs(url)


def open_input(url: str) -> IO[bytes]:
    """A seekable binary file object reading ``url``; the caller closes it."""
    fs, path = url_to_fs(url)
    return fs.open(path, "rb")


def staging_dir(path: str) -> str:
    """The directory a writer of ``path`` puts its temporary file in: beside
    a local ``path`` (so the final rename stays on one filesystem), the
    system temp directory for a URL."""
    if is_url(path):
        return tempfile.gettempdir()
    return os.path.dirname(os.path.abspath(path))


def replace(tmp_path: str, path: str) -> None:
    """Moves the finished temporary file ``tmp_path`` to ``path``: a rename
    for a local path, an upload (then removal of the local file) for a URL."""
    if not is_url(path):
        os.replace(tmp_path, path)
        return
    fs, remote = url_to_fs(path)
    fs.put_file(tmp_path, remote)
    os.unlink(tmp_path)
