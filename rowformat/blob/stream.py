"""RangeStream: a read-only, seekable binary file object over one byte range
of a file, reading on demand (nothing is held beyond the caller's request).

Used by ``BlobFileReader.open`` and ``BlobDescriptor.open``. When given a
running CRC, the stream checksums the range front to back and calls
``finish`` once its last byte is in the checksum, so a blob streamed front to
back is verified without a second pass. Seeking is free, and every byte
handed out is covered whatever the order of reads and seeks: a read that
reaches past the checksummed frontier first checksums the bytes between the
frontier and the read (which a forward seek skipped), then the new bytes,
so reading the range's last byte by any route checks the whole range.
"""
from __future__ import annotations

import io
import os
import zlib
from typing import Callable

from ..errors import CorruptFileError

DEFAULT_READ = 1 << 20   # read(-1) on a huge range still reads in bounded steps internally


class RangeStream(io.RawIOBase):
    def __init__(self, read_at: Callable[[int, int], bytes], start: int, length: int, *,
                 name: str, crc: int | None = None, finish: Callable[[int], None] | None = None,
                 close: Callable[[], None] | None = None):
        self._read_at = read_at
        self._start = start
        self._length = length
        self._pos = 0
        self._crc = crc
        self._crc_pos = 0
        self._finish = finish
        self._close = close
        self.name = name

    @classmethod
    def over_file(cls, f, offset: int, length: int, *, name: str) -> "RangeStream":
        """Owns ``f`` (a real file) and closes it with the stream."""
        fd = f.fileno()

        def read_at(off, n):
            data = os.pread(fd, n, off)
            if len(data) != n:
                raise CorruptFileError(f"{name}: read {len(data)} of {n} bytes at offset {off}: "
                                       f"the file is truncated")
            return data
        return cls(read_at, offset, length, name=name, close=f.close)

    # -- io.RawIOBase -------------------------------------------------------------
    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def writable(self) -> bool:
        return False

    def write(self, b):
        raise io.UnsupportedOperation(f"{self.name} is read-only")

    def __len__(self) -> int:
        return self._length

    @property
    def size(self) -> int:
        return self._length

    def tell(self) -> int:
        self._check()
        return self._pos

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        self._check()
        if whence == os.SEEK_SET:
            pos = offset
        elif whence == os.SEEK_CUR:
            pos = self._pos + offset
        elif whence == os.SEEK_END:
            pos = self._length + offset
        else:
            raise ValueError(f"invalid whence {whence}")
        if pos < 0:
            raise ValueError(f"negative seek position {pos}")
        self._pos = pos
        return pos

    def read(self, size: int = -1) -> bytes:
        self._check()
        left = max(0, self._length - self._pos)
        n = left if size is None or size < 0 else min(size, left)
        if n == 0:
            return b""
        if n <= DEFAULT_READ:
            return self._take(n)
        return b"".join(self._take(min(DEFAULT_READ, self._length - self._pos))
                        for _ in range(-(-n // DEFAULT_READ)))

    def readall(self) -> bytes:
        return self.read(-1)

    def readinto(self, b) -> int:
        data = self.read(len(memoryview(b).cast("B")))
        n = len(data)
        memoryview(b).cast("B")[:n] = data
        return n

    def _take(self, n: int) -> bytes:
        pos = self._pos
        behind = self._crc is not None and pos + n > self._crc_pos
        while behind and self._crc_pos < pos:     # a forward seek skipped these bytes
            self._checksum(self._read_at(self._start + self._crc_pos,
                                         min(DEFAULT_READ, pos - self._crc_pos)))
        data = self._read_at(self._start + pos, n)
        if behind:
            self._checksum(memoryview(data)[self._crc_pos - pos:])
        self._pos = pos + n
        return data

    def _checksum(self, data) -> None:
        """Adds ``data``, the bytes at the checksummed frontier, to the CRC;
        calls ``finish`` once the whole range is in it."""
        assert self._crc is not None        # called only for a checksummed stream
        self._crc = zlib.crc32(data, self._crc)
        self._crc_pos += len(data)
        if self._crc_pos == self._length and self._finish is not None:
            finish, self._finish = self._finish, None
            finish(self._crc)

    def _check(self):
        if self.closed:
            raise ValueError("I/O operation on a closed blob stream")

    def close(self):
        if not self.closed and self._close is not None:
            self._close()
        super().close()

    def __repr__(self):
        return f"<RangeStream {self.name!r} [{self._start}, {self._start + self._length})>"
