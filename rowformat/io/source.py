"""Byte sources, shared by the .row and .blob readers and ``verify``:
positional reads of a local path (``pread``, or a mapping), a URL
(:class:`~rowformat.io.RemoteFile`) or a file object."""
from __future__ import annotations

import mmap
import os
import threading
import weakref

from ..errors import CorruptFileError
from .ranges import Fetch, RemoteFile
from .local import open_regular
from .urls import is_url, local, redact

_HAS_PREAD = hasattr(os, "pread")


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
    ``filesystem`` (ranged requests, thread-safe: RemoteFile) or a
    seekable file object (seek + read under a lock). With ``memory_map``, a
    local file is also mapped, and frames are read as zero-copy views of the
    mapping."""

    def __init__(self, path_or_file, memory_map: bool = False, filesystem=None,
                 storage_options: dict | None = None):
        self._fd = None
        self._file = None
        self._map = None
        self._view = None
        self.remote: RemoteFile | None = None
        self._reset_locks()
        self._closed = False
        if isinstance(path_or_file, str) and filesystem is None and is_url(path_or_file):
            path = local(path_or_file)      # file://
            if path is not None:
                path_or_file = path
            elif memory_map:
                raise ValueError(f"memory_map=True needs a local file path, "
                                 f"not {redact(path_or_file)!r}")
        is_path = isinstance(path_or_file, (str, bytes, os.PathLike))
        if (filesystem is not None or storage_options is not None) and not isinstance(path_or_file, str):
            raise TypeError(f"filesystem and storage_options need a URL or path string, "
                            f"not {type(path_or_file).__name__}")
        if memory_map and (not is_path or filesystem is not None):
            raise ValueError(f"memory_map=True needs a local file path, not {path_or_file!r}")
        if filesystem is not None or (is_path and is_url(path_or_file)):
            self.name = path_or_file
            self.remote = RemoteFile(path_or_file, filesystem, storage_options)
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
        fetched concurrently (RemoteFile.read_ranges), else frame()
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

    def fetch(self, ranges: list[tuple[int, int]]) -> "Fetch | None":
        """For a URL, the ranges requested now, in the background
        (Fetch: a scan's next units); None for local files, which
        need no read-ahead."""
        if self.remote is None or not ranges:
            return None
        return Fetch(self.remote, ranges)

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
