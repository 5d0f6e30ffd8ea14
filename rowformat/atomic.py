"""Files that appear whole or not at all: written under a temporary name
beside the target (for a URL, in a local staging directory) and moved into
place only by commit(). A killed process leaves a hidden ``.<name>.*.tmp``
file, never a partial file at the target."""
from __future__ import annotations

import os
import tempfile

from . import fs
from .errors import RowFormatError


class AtomicOutput:
    def __init__(self, path: str, buffering: int = -1):
        self.path = path
        fd, self.tmp_path = tempfile.mkstemp(
            prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=fs.staging_dir(path))
        self.file = os.fdopen(fd, "wb", buffering=buffering)

    def commit(self, durable: bool = True) -> None:
        """Moves the bytes to the target: a rename, or an upload for a URL.
        ``durable`` fsyncs them first, so the target survives a power loss
        too (a killed process needs no fsync: the rename alone is atomic)."""
        self.file.flush()
        if durable:
            os.fsync(self.file.fileno())
        self.file.close()
        fs.replace(self.tmp_path, self.path)

    def discard(self) -> None:
        try:
            self.file.close()
        finally:
            try:
                os.unlink(self.tmp_path)
            except FileNotFoundError:
                pass


class AtomicWriter:
    """The lifetime of a writer whose file appears only when close()
    succeeds. A subclass sets ``path``, ``durable`` and ``_out`` (an
    AtomicOutput), sets ``_state`` to "failed" when it cannot go on, writes
    its file's tail in ``_finish()`` and frees its resources in ``_release()``.
    Writers are not to be shared between threads."""

    path: str
    durable: bool
    _out: AtomicOutput
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

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            self.abort()
        else:
            self.close()

    def __del__(self):
        if getattr(self, "_state", "closed") in ("open", "failed") and hasattr(self, "_out"):
            self.abort()


def write_atomically(path: str, data: bytes) -> None:
    """Replaces the file at ``path`` with ``data``: readers see the old or the new bytes."""
    out = AtomicOutput(path)
    try:
        out.file.write(data)
        out.commit()
    except BaseException:
        out.discard()
        raise
