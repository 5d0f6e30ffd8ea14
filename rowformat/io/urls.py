"""Names of files: the one place that decides whether a name is a local
path or a URL on a store, the one canonical object key of a URL (the
refusals of :func:`check_url`), and :func:`redact`, what messages show of a
URL."""
from __future__ import annotations

import errno
import os
import re
from typing import Any

from ..errors import StorageError

# A scheme of two or more characters and "://": "C:\\x" and "C:/x" are paths.
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]+://")

S3_SCHEMES = frozenset({"s3", "s3a", "s3n"})
# schemes whose netloc is a bucket (no ":" nor "@" in its name)
_BUCKET_SCHEMES = S3_SCHEMES | {"gs", "gcs"}
# Azure's URLs name a container@account: not credentials (unless user:password@)
_AZURE_SCHEMES = {"abfs", "abfss", "az", "adl", "wasb", "wasbs"}


def is_url(path: Any) -> bool:
    """True for a ``scheme://...`` string (not for local paths)."""
    return isinstance(path, str) and _URL.match(path) is not None


def local_path_of(url: str) -> str | None:
    """The local path of a ``file://`` URL, else None."""
    if url[:7].lower() == "file://":
        return url[7:] or "/"
    return None


def local(path: Any, filesystem: Any = None) -> str | None:
    """``path`` as a local path (a plain path, or a ``file://`` URL), or
    None when it is on a store (a URL, or any name inside ``filesystem``):
    the one test of "is this local?" every operation uses."""
    if filesystem is not None:
        return None
    if isinstance(path, (bytes, os.PathLike)):
        return os.fsdecode(path)
    if not is_url(path):
        return path
    return local_path_of(path)


def scheme_of(path: str) -> str:
    """The lower-cased scheme of a URL, "" for a local path."""
    return path.partition("://")[0].lower() if is_url(path) else ""


def is_s3(path: str) -> bool:
    return scheme_of(path) in S3_SCHEMES


def join(path: str, *names: str) -> str:
    """``names`` under the directory ``path``, a local path or a URL."""
    return "/".join([path.rstrip("/"), *names]) if is_url(path) else os.path.join(path, *names)


# "scheme://userinfo@": RFC 3986's userinfo (no "/"), or on S3 and GCS, whose
# bucket names hold neither ":" nor "@", anything up to an "@" after a ":"
# (an AWS secret with its "/" not %-encoded)
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]+)://"
                       r"(?P<user>[^/?#@\s]*@|[^/?#@\s:]*:[^\s@]*@)")


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
