"""Local files as the readers and writers want them: a regular file's
descriptor for ``pread``/mmap (never a pipe, device or directory), and
files that appear whole or not at all (written under a temporary name
beside the target, moved into place only by commit(): a killed process
leaves a hidden ``.<name>.*.tmp`` file, never a partial file at the target).

Committed files get the mode ``open()`` would give them (0666 less the
umask), not mkstemp's private 0600, so other users and services can read
them as they read any other file the process writes."""
from __future__ import annotations

import os
import shutil
import stat
import tempfile
import threading

from ..errors import CorruptFileError

_OPEN_FLAGS = (os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0)
               | getattr(os, "O_NOCTTY", 0))
_HAS_PREAD = hasattr(os, "pread")
_NOT_REGULAR = [(stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe"),
                (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                (stat.S_ISSOCK, "a socket")]


def open_regular(path) -> int:
    """A read-only descriptor of the regular file ``path``. It is opened
    without blocking (a named pipe without a writer would block the open,
    and its reads, forever) and refused with a :class:`CorruptFileError`
    naming it unless it is a regular file: a named pipe, a device, a
    directory or a socket where a file should be. Missing or unreadable
    files raise the OSError ``os.open`` raises."""
    name = os.fsdecode(path)
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except IsADirectoryError:       # where opening a directory read-only fails
        raise CorruptFileError(f"{name}: is a directory, not a regular file") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = next((k for test, k in _NOT_REGULAR if test(mode)), "not a file")
            raise CorruptFileError(f"{name}: is {kind}, not a regular file")
        if hasattr(os, "O_NONBLOCK"):
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


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




def open_regular_file(path):
    """:func:`open_regular` as a binary file object."""
    return os.fdopen(open_regular(path), "rb")


def link_new(src: str, dst: str) -> None:
    """Makes ``dst`` a second name of the file ``src`` (a hard link), failing
    with FileExistsError when ``dst`` exists, atomically, then removes the
    name ``src``: a rename that never replaces a file."""
    os.link(src, dst)
    try:
        os.unlink(src)
    except FileNotFoundError:
        pass


def copy_into(path: str, out, chunk: int) -> None:
    """Copies the local file ``path`` into the binary stream ``out``, ``chunk``
    bytes at a time."""
    with open(path, "rb") as f:
        shutil.copyfileobj(f, out, chunk)


def remove_tree(path: str) -> None:
    """Removes the local directory ``path`` and what is under it, as far
    as it can (a private staging directory: what is left is its own)."""
    shutil.rmtree(path, ignore_errors=True)


def directories(path: str) -> frozenset[str]:
    """The directories under the local directory ``path``, relative to it
    ("." for itself)."""
    return frozenset(os.path.relpath(d, path) for d, _, _ in os.walk(path))


def remove_empty_directories(path: str, keep: frozenset[str]) -> None:
    """Removes, deepest first, the empty directories under the local
    ``path`` whose relative names are not in ``keep``; one that is not
    empty (or cannot be removed) stays."""
    for directory, _, _ in os.walk(path, topdown=False):
        if os.path.relpath(directory, path) not in keep:
            try:
                os.rmdir(directory)
            except OSError:
                pass
