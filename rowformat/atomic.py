"""Files that appear whole or not at all: written under a temporary name
beside the target and moved into place only by commit(). A killed process
leaves a hidden ``.<name>.*.tmp`` file, never a partial file at the target.
URLs are streamed to their store (storage.open_output: an upload completed
only by commit()).

Committed files get the mode ``open()`` would give them (0666 less the
umask), not mkstemp's private 0600, so other users and services can read
them as they read any other file the process writes."""
from __future__ import annotations

import os
import tempfile
import threading
import warnings
from typing import Any, Self

from . import storage
from .errors import RowFormatError

_UMASK_LOCK = threading.Lock()


def _umask() -> int:
    """The process umask, without changing it where the OS can tell it
    (Linux 4.7+); elsewhere set-and-restore under a lock."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    with _UMASK_LOCK:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def fsync_dir(path: str) -> None:
    """fsyncs a directory, making the renames in it durable; a no-op where
    directories cannot be opened (Windows)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class AtomicOutput:
    def __init__(self, path: str, buffering: int = -1):
        self.path = path
        fd, self.tmp_path = tempfile.mkstemp(
            prefix="." + os.path.basename(path) + ".", suffix=".tmp",
            dir=os.path.dirname(os.path.abspath(path)))
        if hasattr(os, "fchmod"):
            os.fchmod(fd, 0o666 & ~_umask())
        self.file = os.fdopen(fd, "wb", buffering=buffering)

    def commit(self, durable: bool = True) -> None:
        """Moves the bytes to the target with a rename.
        ``durable`` fsyncs the file before the rename and its directory
        after it, so that the target survives a power loss too. Without it
        nothing is fsynced: a killed process still leaves the old file or the
        whole new one (the rename alone is atomic), but after a power loss
        the target may be missing or empty."""
        self.file.flush()
        if durable:
            os.fsync(self.file.fileno())
        self.file.close()
        os.replace(self.tmp_path, self.path)
        if durable:
            fsync_dir(os.path.dirname(os.path.abspath(self.path)))

    def discard(self) -> None:
        try:
            self.file.close()
        finally:
            try:
                os.unlink(self.tmp_path)
            except FileNotFoundError:
                pass


def open_output(path: str, buffering: int = -1, filesystem=None, storage_options=None) -> Any:
    """The output of a writer of ``path``: an AtomicOutput for a local path;
    for a URL (or a path in ``filesystem``), the store's streamed upload,
    which appears only when commit() succeeds."""
    if filesystem is not None or storage.is_url(path):
        local = storage.local_path_of(path) if filesystem is None else None
        if local is None:
            return storage.open_output(path, filesystem, storage_options)
        path = local
    return AtomicOutput(path, buffering)


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
