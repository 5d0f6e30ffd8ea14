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
``tests/test_java_frames.py`` checks frames equal the plain streaming ones
at every level and many sizes.
"""
from __future__ import annotations

import zstandard

MIN_WINDOW_LOG = 17
LDM_WINDOW_LOG = 27
SLACK = 1024        # bytes of window beyond the block (libzstd starts indexes above 0)


def _stream(c: zstandard.ZstdCompressor, data: bytes) -> bytes:
    obj = c.compressobj()
    return obj.compress(data) + obj.flush()


class JavaFrameCompressor:
    """Compresses blocks as Java's frames. One per thread: not shareable."""

    def __init__(self, level: int):
        self.level = level
        self._java = zstandard.ZstdCompressor(level=level, write_content_size=False,
                                              write_checksum=False, write_dict_id=False)
        # (Not b"": given no input before the end, libzstd knows the size is 0.)
        header = _stream(self._java, b"\0")
        # Descriptor 0x00 (no single segment, content size, checksum or
        # dictionary) then a window byte; its mantissa (low 3 bits) is 0 for
        # libzstd's power-of-two windows. Anything else: no shortcut.
        exact_power = header[4] == 0 and header[5] & 7 == 0
        self._java_window_log = 10 + (header[5] >> 3) if exact_power else 0
        self._java_window_byte = header[5:6]
        self._small: dict[int, zstandard.ZstdCompressor] = {}

    def compress(self, block: bytes) -> bytes:
        log = max(MIN_WINDOW_LOG, (len(block) + SLACK).bit_length())
        # (An empty block's frame has the smallest window: its size is known.)
        if not block or not log < self._java_window_log < LDM_WINDOW_LOG:
            return _stream(self._java, block)
        c = self._small.get(log)
        if c is None:
            c = self._small[log] = zstandard.ZstdCompressor(
                compression_params=zstandard.ZstdCompressionParameters(
                    compression_level=self.level, window_log=log, write_content_size=False,
                    write_checksum=False, write_dict_id=False))
        frame = _stream(c, block)
        return frame[:5] + self._java_window_byte + frame[6:]
