"""ZSTD frames byte-identical to Paimon Java's, made faster.

Java compresses each block with zstd-jni's stream, which does not know the
input's size: libzstd then uses its level's parameters for an unknown size,
whose window is large (2^19 at level 1), and writes no content size. A
streaming compressor here does the same and gives the same bytes, but a
2^19 window makes it about 1.5x slower on a 64 KiB block than a window just
larger than the block.

With a window that holds the whole block, and the level's other parameters
unchanged (the size is still unknown to libzstd, so it adjusts none of
them), the frame differs from Java's only in its window descriptor byte:
every match the larger window allows lies inside the block anyway. So the
block is compressed under the small window and that byte set to Java's.
The window stays at least 2^17 because libzstd picks some match finders by
window size (row-based search above 2^14, block splitting from 2^17), and
levels whose window turns on long-distance matching (2^27) are left alone.
``tests/row/test_java_frames.py`` checks frames equal the plain streaming ones
at every level and many sizes; and since that rests on libzstd's choices,
each process checks one sample block per level before taking the shortcut
(a libzstd that chose otherwise gets the plain streaming compressor).
"""
from __future__ import annotations

import functools
import random

import zstandard

MIN_WINDOW_LOG = 17
LDM_WINDOW_LOG = 27
SLACK = 1024        # bytes of window beyond the block (libzstd starts indexes above 0)


def _stream(c: zstandard.ZstdCompressor, data: bytes) -> bytes:
    obj = c.compressobj()
    return obj.compress(data) + obj.flush()


def _java_compressor(level: int) -> zstandard.ZstdCompressor:
    return zstandard.ZstdCompressor(level=level, write_content_size=False, write_checksum=False,
                                    write_dict_id=False)


def _small_compressor(level: int, log: int) -> zstandard.ZstdCompressor:
    return zstandard.ZstdCompressor(compression_params=zstandard.ZstdCompressionParameters(
        compression_level=level, window_log=log, write_content_size=False, write_checksum=False,
        write_dict_id=False))


def _window_log(block: bytes) -> int:
    return max(MIN_WINDOW_LOG, (len(block) + SLACK).bit_length())


@functools.lru_cache(maxsize=None)
def _java_window(level: int) -> bytes:
    """The window byte of Java's frames at ``level`` when the shortcut may
    be taken there, else b"". Checked once per level and process on a block
    like a 64 KiB one of rows, since the shortcut rests on libzstd's choices
    (measured: 5 ms at level 1, 25 ms at level 9, 150 ms at level 19)."""
    java = _java_compressor(level)
    # (Not b"": given no input before the end, libzstd knows the size is 0.)
    header = _stream(java, b"\0")
    # Descriptor 0x00 (no single segment, content size, checksum or
    # dictionary) then a window byte; its mantissa (low 3 bits) is 0 for
    # libzstd's power-of-two windows. Anything else: no shortcut.
    if header[4] != 0 or header[5] & 7 or not 10 + (header[5] >> 3) < LDM_WINDOW_LOG:
        return b""
    rng = random.Random(level)
    words = [rng.randbytes(rng.randint(1, 12)) for _ in range(256)]
    sample = b"".join(rng.randbytes(8) + rng.choice(words) for _ in range(6000))[:66_000]
    log = _window_log(sample)
    if log >= 10 + (header[5] >> 3):
        return b""
    frame = _stream(_small_compressor(level, log), sample)
    same = frame[:5] + header[5:6] + frame[6:] == _stream(java, sample)
    return header[5:6] if same else b""


class JavaFrameCompressor:
    """Compresses blocks as Java's frames. One per thread: not shareable."""

    def __init__(self, level: int):
        self.level = level
        self._java = _java_compressor(level)
        self._java_window_byte = _java_window(level)
        self._java_window_log = 10 + (self._java_window_byte[0] >> 3) \
            if self._java_window_byte else 0
        self._small: dict[int, zstandard.ZstdCompressor] = {}

    def compress(self, block: bytes) -> bytes:
        log = _window_log(block)
        # (An empty block's frame has the smallest window: its size is known.)
        if not block or not log < self._java_window_log:
            return _stream(self._java, block)
        c = self._small.get(log)
        if c is None:
            c = self._small[log] = _small_compressor(self.level, log)
        frame = _stream(c, block)
        return frame[:5] + self._java_window_byte + frame[6:]
