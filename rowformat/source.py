"""Byte sources and row numbers, shared by the .row and .blob readers and
``verify``: positional reads of a local path, a URL (storage.RemoteFile) or
a file object, and the checks that turn user row numbers into indexes."""
from __future__ import annotations

import mmap
import operator
import os
import stat
import threading
import weakref

import numpy as np
import pyarrow as pa

from . import storage
from .errors import CorruptFileError, RowIndexError


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


# Sources open in this process. A forked child has none of its parent's
# threads: a read they had in flight would never leave (close() would wait
# for it forever), and a lock one of them held would never be released.
_SOURCES: "weakref.WeakSet[Source]" = weakref.WeakSet()


def _forget_parent_reads_in_child() -> None:
    for source in list(_SOURCES):
        source._reset_locks()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_parent_reads_in_child)


class Source:
    """Positional reads from a path (pread, thread-safe), a URL or a path in
    ``filesystem`` (ranged requests, thread-safe: storage.RemoteFile) or a
    seekable file object (seek + read under a lock). With ``memory_map``, a
    local file is also mapped, and frames are read as zero-copy views of the
    mapping."""

    def __init__(self, path_or_file, memory_map: bool = False, filesystem=None,
                 storage_options: dict | None = None):
        self._fd = None
        self._file = None
        self._map = None
        self._view = None
        self.remote: storage.RemoteFile | None = None
        self._reset_locks()
        self._closed = False
        if isinstance(path_or_file, str) and filesystem is None and storage.is_url(path_or_file):
            local = storage.local_path_of(path_or_file)     # file://
            if local is not None:
                path_or_file = local
            elif memory_map:
                raise ValueError(f"memory_map=True needs a local file path, "
                                 f"not {storage.redact(path_or_file)!r}")
        is_path = isinstance(path_or_file, (str, bytes, os.PathLike))
        if (filesystem is not None or storage_options is not None) and not isinstance(path_or_file, str):
            raise TypeError(f"filesystem and storage_options need a URL or path string, "
                            f"not {type(path_or_file).__name__}")
        if memory_map and (not is_path or filesystem is not None):
            raise ValueError(f"memory_map=True needs a local file path, not {path_or_file!r}")
        if filesystem is not None or (is_path and storage.is_url(path_or_file)):
            self.name = path_or_file
            self.remote = storage.RemoteFile(path_or_file, filesystem, storage_options)
            self.size = self.remote.size
        elif isinstance(path_or_file, (str, bytes, os.PathLike)):
            self.name = os.fsdecode(path_or_file)
            self._fd = open_regular(path_or_file)
            self.size = os.fstat(self._fd).st_size
            if memory_map and self.size:
                try:
                    self._map = mmap.mmap(self._fd, 0, access=mmap.ACCESS_READ)
                except BaseException:
                    os.close(self._fd)
                    raise
                self._view = memoryview(self._map)
        else:
            f = path_or_file
            if not (hasattr(f, "read") and hasattr(f, "seek")):
                raise TypeError(f"expected a path or a binary file object with seek/read, "
                                f"got {type(f).__name__}")
            self.name = str(getattr(f, "name", "<file object>"))
            self._file = f
            self.size = f.seek(0, os.SEEK_END)

    def _reset_locks(self):
        self._lock = threading.Lock()       # seek + read of a file object
        self._fence = threading.Condition(threading.Lock())
        self._active = 0
        _SOURCES.add(self)

    # Reads in flight are counted, and close() waits for them: closing the
    # descriptor under a pread could make it read another file opened
    # meanwhile under the same number.
    def _enter(self):
        with self._fence:
            if self._closed:
                raise ValueError(f"{self.name}: the reader is closed")
            self._active += 1

    def _leave(self):
        with self._fence:
            self._active -= 1
            if not self._active and self._closed:
                self._fence.notify_all()

    def read(self, offset: int, length: int) -> bytes:
        self._enter()
        try:
            if self.remote is not None:
                data = self.remote.read_at(offset, length)
            elif self._fd is not None:
                data = os.pread(self._fd, length, offset)
                while len(data) < length:  # pread may return short on some filesystems
                    more = os.pread(self._fd, length - len(data), offset + len(data))
                    if not more:
                        break
                    data += more
            else:
                f = self._file
                assert f is not None    # one of the two is open until close(), which waits for us
                with self._lock:
                    f.seek(offset)
                    data = f.read(length)
        finally:
            self._leave()
        if len(data) != length:
            self._truncated(offset, length, len(data))
        return data

    def frame(self, offset: int, length: int):
        """read(), or with a mapping a view of it. The view stays valid after
        close(): the mapping is unmapped when its last view is gone."""
        if self._view is None:
            return self.read(offset, length)
        self._enter()
        try:
            view = self._view
            if offset + length > len(view):
                self._truncated(offset, length, max(0, len(view) - offset))
            return view[offset:offset + length]
        finally:
            self._leave()

    def frames(self, ranges: list[tuple[int, int]]) -> list:
        """The bytes of each ``(offset, length)`` range (distinct): for a URL
        fetched concurrently (storage.RemoteFile.read_ranges), else frame()
        of each. A range past the end raises as read() does, with the
        range's position in ``ranges`` as the error's ``index``."""
        if self.remote is None:
            return [self._checked(i, self.frame, o, n) for i, (o, n) in enumerate(ranges)]
        self._enter()
        try:
            out = self.remote.read_ranges(ranges)
        finally:
            self._leave()
        for i, ((offset, length), data) in enumerate(zip(ranges, out)):
            if len(data) != length:
                self._checked(i, self._truncated, offset, length, len(data))
        return out

    @staticmethod
    def _checked(i: int, call, *args):
        try:
            return call(*args)
        except CorruptFileError as e:
            setattr(e, "index", i)
            raise

    def fetch(self, ranges: list[tuple[int, int]]) -> "storage.Fetch | None":
        """For a URL, the ranges requested now, in the background
        (storage.Fetch: a scan's next units); None for local files, which
        need no read-ahead."""
        if self.remote is None or not ranges:
            return None
        return storage.Fetch(self.remote, ranges)

    def c_reads(self) -> int | None:
        """The descriptor C code may pread (between _enter() and _leave(),
        so that close() waits for the reads), or None: read frames with
        frame() (a file object, a mapping, or no os.pread here)."""
        return self._fd if self._view is None and _HAS_PREAD else None

    def _truncated(self, offset: int, length: int, got: int):
        e = CorruptFileError(f"{self.name}: read {got} of {length} bytes at "
                             f"offset {offset}: the file is truncated")
        setattr(e, "got", got)      # a reader names the block with it
        raise e

    def close(self):
        """Waits for reads in flight, then frees the file. Later reads raise
        ValueError; closing again does nothing."""
        with self._fence:
            if self._closed:
                return
            self._closed = True
            while self._active:
                self._fence.wait()
        if self._map is not None:
            self._view.release()
            self._view = None
            try:
                self._map.close()
            except BufferError:
                pass    # views handed out by frame() are still in use: unmapped with the last one
            self._map = None
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self.remote is not None:
            self.remote.close()
        self._file = None


    def __del__(self):
        # a reader dropped without close(): its descriptor is not leaked (no
        # read can be in flight: a read holds a reference to its source)
        fd = getattr(self, "_fd", None)
        if fd is not None and getattr(self, "_view", None) is None:
            self._fd = None
            try:
                os.close(fd)
            except OSError:
                pass


def row_number(i, n: int, name: str) -> int:
    """``i`` as a row number in [0, n); negative ``i`` counts from the end."""
    i = operator.index(i)    # ints and numpy integers, not floats
    if i < 0:
        i += n
    if not 0 <= i < n:
        raise RowIndexError(f"row {i} outside [0, {n}) in {name}")
    return i


def _outside(what: str, row: int, n: int, name: str | None) -> RowIndexError:
    where = "" if name is None else f"{name}: "
    return RowIndexError(f"{where}{what} contains row {row}, outside [0, {n})")


def _unsigned_checked(arr: np.ndarray, what: str, n: int, name: str | None) -> np.ndarray:
    """``arr`` as int64; a uint64 value past int64's range is reported as
    given (2**64 - 1 wrapped to -1 would be reported as row -1)."""
    if arr.dtype == np.uint64 and len(arr) and arr.max() > np.iinfo(np.int64).max:
        raise _outside(what, int(arr.max()), n, name)
    return arr.astype(np.int64, copy=False)


def few_rows(rows, most: int, n: int, what: str, name: str | None = None) -> list[int] | None:
    """``rows`` itself when it is a list of at most ``most`` Python ints, each
    checked to lie in [0, n); else None (as_rows then converts it). A
    lookup's row numbers skip numpy, whose per-call costs are microseconds.
    ``name`` (the file's) leads the message of a row outside."""
    if type(rows) is not list or len(rows) > most:
        return None
    for i in rows:
        if type(i) is not int:
            return None
        if i < 0 or i >= n:
            raise _outside(what, i, n, name)
    return rows


def as_rows(rows, n: int, what: str, name: str | None = None) -> np.ndarray:
    """Row numbers as an int64 array, checked to lie in [0, n) (``name`` as
    in :func:`few_rows`)."""
    arr: np.ndarray   # numpy 2.5's stubs infer each branch's own dtype: one type for all
    if hasattr(rows, "to_array") and not isinstance(rows, np.ndarray):   # pyroaring BitMap
        arr = np.frombuffer(rows.to_array(), dtype=np.uint32).astype(np.int64)
    elif isinstance(rows, np.ndarray):
        if rows.dtype.kind not in "iu":
            raise TypeError(f"{what} must be integers, got dtype {rows.dtype}")
        arr = _unsigned_checked(rows.ravel(), what, n, name)
    elif isinstance(rows, (pa.Array, pa.ChunkedArray)):
        # integers only, as given: 0.5 is not row 0, '1' not row 1, a null not row -2**63
        if not pa.types.is_integer(rows.type):
            raise TypeError(f"{what} must be integers, got Arrow type {rows.type}")
        if rows.null_count:
            raise TypeError(f"{what} holds a null at position "
                            f"{rows.is_null().index(True).as_py()}; row numbers cannot be null")
        arr = _unsigned_checked(np.asarray(rows.to_numpy(zero_copy_only=False)), what, n, name)
    else:
        arr = np.asarray(rows if isinstance(rows, (list, tuple)) else list(rows))
        if arr.size == 0:
            arr = arr.astype(np.int64)
        elif arr.dtype.kind not in "iu":    # 5.0 is not silently row 5
            raise TypeError(f"{what} must be integers, got {arr.dtype} values")
        arr = arr.astype(np.int64, copy=False).ravel()
    if len(arr):
        # numpy's reductions cost microseconds per call: a lookup's few rows are
        # checked faster as Python ints
        if len(arr) > 32:
            # numpy 2.5's stubs reject min()/max() on this union; np.min would cost ~2x
            lo, hi = arr.min(), arr.max()  # type: ignore[call-overload]
        else:
            small = arr.tolist()
            lo, hi = min(small), max(small)
        if lo < 0 or hi >= n:
            raise _outside(what, lo if lo < 0 else hi, n, name)
    return arr
