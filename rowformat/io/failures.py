"""The one mapping of a store's exceptions to rowformat's: a missing file,
object or bucket is :class:`StorageNotFoundError` (also a
FileNotFoundError); a directory that exists but cannot be listed, or a
file that is not a regular file, a :class:`StorageError` naming it; any
other failure a StorageError naming the file, what was being done and the
cause. Messages are redacted: no credentials in them."""
from __future__ import annotations

import contextlib
import errno
from typing import Iterator

from ..errors import StorageError, StorageNotFoundError
from .urls import redact

# the modules of stores' own exception types (fsspec drivers raise them unwrapped)
_STORE_MODULES = ("botocore", "aiobotocore", "google", "azure")


def storage_error(url: str, what: str, e: BaseException) -> StorageError:
    """``e`` (a store's OSError) as a StorageError naming ``url``, what was
    being done, and the cause; a missing object or bucket as
    StorageNotFoundError."""
    if isinstance(e, StorageError):
        return e
    text = str(e).strip() or type(e).__name__
    missing = isinstance(e, FileNotFoundError) or "NoSuchKey" in text or "NoSuchBucket" in text \
        or "Path does not exist" in text
    cls = StorageNotFoundError if missing else StorageError
    return cls(errno.ENOENT if missing else getattr(e, "errno", None) or errno.EIO,
               redact(f"{url}: {what}: {text}"))


def is_store_error(e: BaseException) -> bool:
    """An OSError, or a store's own exception type."""
    return isinstance(e, OSError) or type(e).__module__.split(".")[0] in _STORE_MODULES


@contextlib.contextmanager
def mapped(url: str, what: str) -> Iterator[None]:
    """Raises what the block raises as :func:`storage_error` of ``url``."""
    try:
        yield
    except Exception as e:
        if not is_store_error(e):
            raise
        raise storage_error(url, what, e) from None


def unlistable(url: str, e: OSError) -> StorageError:
    """The error for a directory that exists but cannot be listed."""
    return StorageError(e.errno or errno.EIO,
                        redact(f"{url}: exists but cannot be listed as a directory "
                               f"({e.strerror or e}): nothing is read as empty"))


def missing(url: str, what: str) -> StorageNotFoundError:
    return StorageNotFoundError(errno.ENOENT, redact(f"{url}: {what}: no such file"))
