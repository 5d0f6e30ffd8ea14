"""Positional reads of one object on a store, as the format wants them
(no generic file cache under the readers' block cache):

* :class:`RemoteFile` gives positional, thread-safe reads (``read_at``): a
  lookup is one ranged GET of its block.
* :meth:`RemoteFile.read_ranges` fetches many ranges at once (a take's
  touched blocks), neighbours closer than a small hole merged into one
  request, at most ``IO_THREADS`` requests in flight per process.
* :class:`Fetch` requests a scan unit's blocks as large sequential ranges
  (up to ``SCAN_CHUNK``) when the unit is planned, ``SCAN_AHEAD`` units
  ahead of the decoder, so reads overlap decompression.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Sequence

from .failures import is_store_error, mapped, storage_error
from .stores import resolve

# ranged requests in flight per process: a take of 100 scattered blocks is
# two round trips, not seven (threads waiting on the network cost little)
IO_THREADS = 64
# take(): two ranges are read as one when the hole between them is at most
# this and at most a tenth of the next range (bytes read stay within 1.1x
# of the blocks wanted)
HOLE = 64 << 10
SCAN_CHUNK = 8 << 20        # a scan's requests are at most this large,
SCAN_AHEAD = 4              # and its units' reads start this many units ahead

_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def io_pool() -> ThreadPoolExecutor:
    """The process's pool for ranged reads and upload parts (IO_THREADS)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(IO_THREADS, thread_name_prefix="rowformat-io")
        return _POOL


def _forget_pool_in_child() -> None:
    global _POOL, _POOL_LOCK
    _POOL, _POOL_LOCK = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_in_child)


def coalesce(ranges: Sequence[tuple[int, int]], hole: int = HOLE,
             limit: int = SCAN_CHUNK) -> list[tuple[int, int, list[int]]]:
    """Sorted, non-overlapping ``(offset, length)`` ranges merged into
    requests ``(offset, length, [indexes of the ranges inside])``: a hole of
    at most ``hole`` bytes and a tenth of the next range is read through,
    and a request stops growing at ``limit`` bytes."""
    out: list[tuple[int, int, list[int]]] = []
    for i, (off, n) in enumerate(ranges):
        if out:
            start, length, members = out[-1]
            gap = off - (start + length)
            if 0 <= gap <= min(hole, n // 10) and length + gap + n <= limit:
                out[-1] = (start, length + gap + n, members + [i])
                continue
        out.append((off, n, [i]))
    return out


class RemoteFile:
    """Positional reads of one object: each ``read_at`` is one ranged
    request, safe from any thread, nothing cached."""

    def __init__(self, url: str, filesystem: Any = None, storage_options: dict | None = None):
        self.name = url
        store, path = resolve(url, filesystem, storage_options, file=True)
        with mapped(url, "opening for reading"):
            self._file, self.size, self._read = store.open_positional(path)

    def read_at(self, offset: int, length: int) -> bytes:
        """``length`` bytes at ``offset`` (fewer at the object's end)."""
        if length <= 0:
            return b""
        try:
            return self._read(length, offset)
        except Exception as e:      # mapped as mapped() maps, the message made only on failure
            if not is_store_error(e):
                raise
            raise storage_error(self.name, f"reading {length} bytes at offset {offset}", e) from None

    def read_ranges(self, ranges: Sequence[tuple[int, int]]) -> list:
        """The bytes of each ``(offset, length)`` range (distinct, any order),
        fetched concurrently, ranges a small hole apart in one request
        (:class:`Fetch`): views of the requests' bytes."""
        fetch = Fetch(self, ranges, HOLE, eager=False)
        try:
            return [fetch.get(i) for i in range(len(ranges))]
        finally:
            fetch.cancel()

    def close(self) -> None:
        """Later reads raise ValueError. The object's file is closed when the
        reads still in flight (a cancelled scan's) let go of it."""
        self._file = None
        self._read = self._closed

    def _closed(self, n: int, off: int) -> bytes:
        raise ValueError(f"{self.name}: the reader is closed")


class Fetch:
    """Ranges of one object requested at once (a unit of a scan, a take's
    blocks): sequential neighbours merged into requests of at most ``limit``
    bytes (with ``hole``, small gaps read through), all submitted to the I/O
    pool at creation (a single request with ``eager=False``: made by the
    first thread that wants it, as a lookup's is). ``get(i)`` waits for
    range ``i`` and gives a view of it."""

    def __init__(self, file: RemoteFile, ranges: Sequence[tuple[int, int]], hole: int = 0,
                 limit: int = SCAN_CHUNK, eager: bool = True):
        self.file, self.ranges = file, ranges
        order = sorted(range(len(ranges)), key=lambda i: ranges[i][0])
        requests = coalesce([ranges[i] for i in order], hole, limit)
        self._where: list = [None] * len(ranges)     # range -> (request, its start)
        pool = io_pool() if eager or len(requests) > 1 else None
        self._futures: list[Any] = []      # Futures, or a _Lazy
        for r, (off, n, members) in enumerate(requests):
            for m in members:
                self._where[order[m]] = (r, off)
            self._futures.append(pool.submit(file.read_at, off, n) if pool is not None
                                 else _Lazy(file.read_at, off, n))

    def get(self, i: int) -> memoryview:
        r, start = self._where[i]
        off, n = self.ranges[i]
        return memoryview(self._futures[r].result())[off - start:off - start + n]

    def cancel(self) -> None:
        """Cancels the requests not started (the others finish unread)."""
        for future in self._futures:
            future.cancel()


class _Lazy:
    """A single request of a Fetch, made by the thread that first wants it
    (no pool hop for a lookup)."""

    def __init__(self, read: Callable, off: int, n: int):
        self._call, self._value = (read, off, n), None
        self._lock = threading.Lock()

    def result(self):
        with self._lock:
            if self._value is None:
                read, off, n = self._call
                self._value = read(off, n)
            return self._value

    def cancel(self) -> None:
        pass


