"""Outputs of writers, local paths and URLs alike: an output appears only
when commit() succeeds (a local path through a temporary file and a
rename, a URL through the store's upload), and the lifetime of a writer
that owns one."""
from __future__ import annotations

import warnings
from typing import Any, Self

from ..errors import RowFormatError
from .local import AtomicOutput
from .uploads import open_upload
from .urls import local


def open_output(path: str, buffering: int = -1, filesystem=None, storage_options=None) -> Any:
    """The output of a writer of ``path``: an AtomicOutput for a local path;
    for a URL (or a path in ``filesystem``), the store's streamed upload,
    which appears only when commit() succeeds."""
    path_here = local(path, filesystem)
    if path_here is None:
        return open_upload(path, filesystem, storage_options)
    return AtomicOutput(path_here, buffering)


class StreamOutput:
    """AtomicOutput's interface over a binary stream the caller opened and
    will close, for writers that must hand their bytes to someone else's
    stream (a FileIO's output stream): writes go straight to it, commit()
    flushes it, discard() leaves it as it is. Nothing is atomic: a stream
    cannot take back bytes, so its owner deletes what a failed writer left."""

    def __init__(self, stream):
        self.file = stream

    def commit(self, durable: bool = True) -> None:
        self.file.flush()

    def discard(self) -> None:
        pass


class AtomicWriter:
    """The lifetime of a writer whose file appears only when close()
    succeeds. A subclass sets ``path``, ``durable`` and ``_out`` (an
    AtomicOutput), sets ``_state`` to "failed" when it cannot go on, writes
    its file's tail in ``_finish()`` and frees its resources in ``_release()``.
    Writers are not to be shared between threads."""

    path: str
    durable: bool
    _out: Any      # AtomicOutput, StreamOutput or a storage upload: file, commit(), discard()
    _state = "open"

    def _finish(self) -> None:
        """Writes what follows the rows (index, footer)."""

    def _release(self) -> None:
        """Frees what the writer holds besides its file."""

    def _check_open(self):
        if self._state != "open":
            raise RowFormatError(f"writer for {self.path} is {self._state}")

    def close(self) -> None:
        """Writes the tail and moves the file to ``path``. Calling it again
        does nothing."""
        if self._state == "closed":
            return
        if self._state != "open":
            self.abort()
            raise RowFormatError(f"writer for {self.path} failed earlier; no file was written")
        try:
            self._finish()
            self._release()
            self._out.commit(self.durable)
        except BaseException:
            self.abort()
            raise
        self._state = "closed"

    def abort(self) -> None:
        """Discards the file: nothing appears at ``path``."""
        if self._state == "closed":
            return
        self._state = "aborted"
        self._release()
        self._out.discard()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            self.abort()
        else:
            self.close()

    def __del__(self):
        state = getattr(self, "_state", "closed")
        if state in ("open", "failed") and hasattr(self, "_out"):
            if state == "open":
                # as an unclosed file warns: here what was written is lost
                warnings.warn(f"{type(self).__name__} for {self.path} was never closed: "
                              f"nothing was written there (use `with` or call close())",
                              ResourceWarning, source=self)
            self.abort()


def write_atomically(path: str, data: bytes, storage_options: dict | None = None) -> None:
    """Replaces the file at ``path`` (a path or a URL) with ``data``: readers
    see the old or the new bytes."""
    out = open_output(path, storage_options=storage_options)
    try:
        out.file.write(data)
        out.commit()
    except BaseException:
        out.discard()
        raise
