"""JavaFrameCompressor's frames equal a plain streaming compressor's (what
zstd-jni's stream, hence Paimon Java, writes) byte for byte, at every level
and block size, including where it takes its smaller-window shortcut."""
import random

import pytest
import zstandard
from hypothesis import given, settings, strategies as st

from rowformat.row.java_frames import JavaFrameCompressor, MIN_WINDOW_LOG, SLACK


def stream_frame(level, data):
    c = zstandard.ZstdCompressor(level=level, write_content_size=False, write_checksum=False,
                                 write_dict_id=False)
    obj = c.compressobj()
    return obj.compress(data) + obj.flush()


def sample(kind, n, seed):
    rng = random.Random(seed)
    if kind == "random":
        return rng.randbytes(n)
    if kind == "zeros":
        return bytes(n)
    words = [rng.randbytes(rng.randint(1, 12)) for _ in range(300)]
    out = bytearray()
    while len(out) < n:          # rows: ints, repeated words, some noise
        out += rng.randint(0, 1 << 40).to_bytes(8, "little") + rng.choice(words)
        if kind == "mixed" and rng.random() < 0.1:
            out += rng.randbytes(rng.randint(1, 200))
    return bytes(out[:n])


SIZES = [0, 1, 100, 4096, 65536, 65700, (1 << 17) - SLACK, (1 << 17) - SLACK + 1, 200_000,
         (1 << 18) - SLACK + 1, 300_000, (1 << 19) + 5]


@pytest.mark.parametrize("level", [-5, -1, 1, 2, 3, 4, 5, 7, 9, 12, 16, 19, 22])
def test_frames_equal_streaming_frames(level):
    c = JavaFrameCompressor(level)
    for n in SIZES if level < 16 else SIZES[:7]:      # the slow levels: smaller inputs
        for kind in ("rows", "mixed", "random", "zeros"):
            data = sample(kind, n, n + level)
            assert c.compress(data) == stream_frame(level, data), (level, n, kind)


def test_the_shortcut_is_taken_at_level_1():
    """Level 1's unknown-size window is 2^19: a 64 KiB block gets the small
    window, whose frame differs from Java's only in the window byte."""
    c = JavaFrameCompressor(1)
    assert c._java_window_log == 19
    data = sample("rows", 65700, 1)
    plain = zstandard.ZstdCompressor(compression_params=zstandard.ZstdCompressionParameters(
        compression_level=1, window_log=MIN_WINDOW_LOG, write_content_size=False))
    obj = plain.compressobj()
    small = obj.compress(data) + obj.flush()
    java = c.compress(data)
    assert small != java and small[:5] + small[6:] == java[:5] + java[6:]
    assert java[5] == (19 - 10) << 3


@settings(max_examples=60, deadline=None)
@given(st.integers(-3, 6), st.binary(min_size=1, max_size=3000), st.binary(max_size=500),
       st.integers(0, 140_000))
def test_frames_equal_streaming_frames_property(level, unit, tail, size):
    data = (unit * (size // len(unit) + 1))[:size] + tail
    assert JavaFrameCompressor(level).compress(data) == stream_frame(level, data)


def test_a_libzstd_that_differs_gets_no_shortcut(monkeypatch):
    """If the small window gave another frame on the sample block (a libzstd
    choosing otherwise), blocks go through the plain streaming compressor."""
    from rowformat.row import java_frames
    monkeypatch.setattr(java_frames, "_small_compressor",
                        lambda level, log: zstandard.ZstdCompressor(level=level + 1))
    java_frames._java_window.cache_clear()
    try:
        c = JavaFrameCompressor(1)
        assert c._java_window_log == 0
        data = sample("rows", 65700, 2)
        assert c.compress(data) == stream_frame(1, data)
    finally:
        java_frames._java_window.cache_clear()
