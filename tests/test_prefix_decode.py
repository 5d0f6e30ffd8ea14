"""Lookups decompress only the prefix of a block they need: the ZSTD
decoder that stops early (src/include/rf_zstd.h, through PrefixBlock) gives
exactly libzstd's bytes, resumes where it stopped, and the reader's get()
and take() through it equal a full read."""
import io
import random

import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from rowformat import CorruptFileError, RowFileReader, RowFileWriter, schema
from rowformat._rowcodec import PrefixBlock
from rowformat.reader import PREFIX_SHARE



def java_frame(data: bytes, level: int) -> bytes:
    """A frame as Paimon Java writes it: streamed, no content size."""
    c = zstandard.ZstdCompressor(level=level, write_content_size=False).compressobj()
    return c.compress(data) + c.flush()


def sample(rng: random.Random, n: int, kind: str) -> bytes:
    if kind == "random":
        return rng.randbytes(n)
    if kind == "rle":
        return bytes([rng.randrange(256)]) * n
    words = [rng.randbytes(rng.randint(1, 12)) for _ in range(rng.randint(2, 80))]
    out = bytearray()
    while len(out) < n:
        out += rng.choice(words)
        if kind == "mixed" and rng.random() < 0.3:
            out += rng.randbytes(rng.randint(1, 30))
    return bytes(out[:n])


def decoded(frame: bytes, cap: int, stops=()) -> tuple[PrefixBlock, list[bytes]]:
    p = PrefixBlock(frame, cap, 0)
    assert not p.failed
    heads = []
    for stop in stops:
        assert p.advance(stop) >= min(stop, cap)
        heads.append(p.output())
    assert p.advance(cap) == cap
    return p, heads


KINDS = ["random", "rle", "words", "mixed"]
LEVELS = [-5, 1, 3, 7, 12, 19, 22]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("n", [8, 100, 5000, 65536 + 37, 131072, 300_000])
def test_equals_libzstd(kind, level, n):
    """Every block type (raw, RLE, compressed), literals raw/RLE/Huffman in 1
    or 4 streams and treeless, predefined/RLE/FSE/repeat sequence tables,
    frames of several blocks; stopped and resumed at random points."""
    rng = random.Random(f"{kind}{level}{n}")
    data = sample(rng, n, kind)
    frame = java_frame(data, level)
    stops = sorted(rng.randrange(n + 1) for _ in range(4))
    p, heads = decoded(frame, n, stops)
    assert p.output() == data
    for stop, head in zip(stops, heads):
        assert data.startswith(head) and len(head) >= stop


def test_frame_with_content_size():
    """pypaimon's and paimon-rust's frames carry a content size: decoded when
    it equals the block's size, left to libzstd otherwise."""
    data = sample(random.Random(1), 70000, "words")
    frame = zstandard.ZstdCompressor(level=1).compress(data)
    assert decoded(frame, len(data))[0].output() == data
    assert PrefixBlock(frame, len(data) + 1, 0).failed


@pytest.mark.parametrize("frame", [
    zstandard.ZstdCompressor(write_checksum=True).compress(b"abc" * 100),     # a checksum
    b"\x50\x2a\x4d\x18\x00\x00\x00\x00",                                    # a skippable frame
])
def test_frames_left_to_libzstd(frame):
    assert PrefixBlock(frame, 300, 0).failed


@settings(max_examples=150, deadline=None)
@given(st.binary(min_size=1, max_size=20000), st.integers(1, 19), st.integers(0, 20000),
       st.booleans())
def test_property_prefix_of_libzstd(data, level, stop, repeat):
    data = data * 3 if repeat else data
    frame = java_frame(data, level)
    p, (head,) = decoded(frame, len(data), [stop])
    assert data.startswith(head) and len(head) >= min(stop, len(data))
    assert p.output() == data


def test_hostile_frames_stay_in_bounds():
    """Flipped bytes and truncations: a failure, or bytes libzstd agrees
    with; never a read or write outside the buffers (the sanitizer build
    runs this too)."""
    rng = random.Random(5)
    data = sample(rng, 70000, "mixed")
    good = java_frame(data, 3)
    d = zstandard.ZstdDecompressor()
    for trial in range(600):
        frame = bytearray(good)
        if trial % 3 == 0:
            frame = frame[:rng.randrange(len(frame))]
        for _ in range(rng.randint(1, 4)):
            if frame:
                frame[rng.randrange(len(frame))] = rng.randrange(256)
        frame = bytes(frame)
        p = PrefixBlock(frame, len(data), 0)
        got = p.advance(len(data))
        try:
            want = d.decompress(frame, len(data), False, True)
        except zstandard.ZstdError:
            continue
        if got >= 0:
            assert p.output() == want


# -- the reader ---------------------------------------------------------------

SCHEMA = schema("id BIGINT NOT NULL, name STRING, tags ARRAY<STRING>, m MAP<STRING, INT>, "
                "r ROW<x DOUBLE, y DECIMAL(20, 3)>, d DECIMAL(10, 2), t TIMESTAMP(6)")


@pytest.fixture(scope="module")
def rows_file(tmp_path_factory):
    import datetime as dt
    from decimal import Decimal
    rng = random.Random(9)
    rows = [(i, rng.choice([None, "", "x" * rng.randint(1, 40), "ünï"]),
             [str(i), None] if i % 5 else None, [("k", i), ("j", None)] if i % 3 else [],
             {"x": i / 7, "y": Decimal(i) / 1000} if i % 11 else None,
             Decimal(i % 1000) / 100 if i % 4 else None,
             dt.datetime(1960, 1, 1, 0, 0, 0, 7) + dt.timedelta(seconds=i) if i % 13 else None)
            for i in range(6000)]
    path = tmp_path_factory.mktemp("prefix") / "p.row"
    with RowFileWriter(path, SCHEMA, block_size=8192) as w:
        w.write_rows(rows)
    with RowFileReader(path, SCHEMA) as r:
        assert r.num_blocks > 20
        table = r.read()
    return path, rows, table


@pytest.mark.parametrize("memory_map", [False, True])
@pytest.mark.parametrize("cache_bytes", [0, 1 << 20])
def test_get_equals_rows(rows_file, memory_map, cache_bytes):
    path, rows, _ = rows_file
    with RowFileReader(path, SCHEMA, memory_map=memory_map, cache_bytes=cache_bytes,
                       prefix_lookups=True) as r:
        order = list(range(len(rows)))
        random.Random(2).shuffle(order)
        for i in order:
            assert r.get(i) == rows[i]


def test_take_equals_read(rows_file):
    path, _, table = rows_file
    rng = random.Random(4)
    with RowFileReader(path, SCHEMA, prefix_lookups=True) as r:
        for _ in range(200):
            r.clear_cache()
            picked = [rng.randrange(table.num_rows) for _ in range(rng.randint(1, 6))]
            assert r.take(picked).equals(table.take(picked))
            assert r.take(picked, columns=["t", "id"]).equals(table.select(["t", "id"]).take(picked))


def test_lookup_resumes_the_prefix(rows_file):
    """A lookup early in a block decompresses part of it; a later row of the
    same block continues from there; a row past PREFIX_SHARE takes the whole
    block, which replaces the prefix in the cache."""
    path, rows, _ = rows_file
    with RowFileReader(path, SCHEMA, prefix_lookups=True) as r:
        n = r._blocks[3][3]
        start = r._starts_list[3]
        assert r.get(start) == rows[start]
        prefix = r._cache.get(~3)
        first = prefix.produced
        assert 0 < first < r._blocks[3][2]
        mid = int(n * PREFIX_SHARE) - 1
        assert r.get(start + mid) == rows[start + mid]
        assert r._cache.get(~3) is prefix and prefix.produced > first
        assert r.get(start + n - 1) == rows[start + n - 1]
        assert ~3 not in r._cache and 3 in r._cache


def test_java_written_file(fixture_path):
    """Paimon Java's file, each row looked up first (the prefix path), equals
    its full read."""
    s = schema("id INT, name VARCHAR(20), amount DECIMAL(20, 2), ts TIMESTAMP(6), scores ARRAY<INT>, "
               "attrs MAP<VARCHAR(20) NOT NULL, INT>, nested ROW<flag BOOLEAN, note VARCHAR(20)>")
    with RowFileReader(fixture_path, s) as r:
        want = r.read().to_pylist()
    for i in range(2):
        with RowFileReader(fixture_path, s, prefix_lookups=True) as r:
            assert r.take([i]).to_pylist() == [want[i]]
            assert r.get(i) == tuple(want[i].values())


def test_corrupt_frame_names_the_block(rows_file, tmp_path):
    """A block whose first bytes are damaged: the lookup fails as a full
    read does, naming the file and block."""
    path, _, _ = rows_file
    data = bytearray(path.read_bytes())
    with RowFileReader(path, SCHEMA) as r:
        offset, size, _, _ = r._blocks[2]
        start = r._starts_list[2]
    for k in range(8, 40):
        data[offset + k] ^= 0x5A
    bad = tmp_path / "bad.row"
    bad.write_bytes(bytes(data))
    with RowFileReader(bad, SCHEMA, prefix_lookups=True) as r:
        with pytest.raises(CorruptFileError, match=r"bad\.row: block 2"):
            r.get(start)
        with pytest.raises(CorruptFileError, match=r"bad\.row: block 2"):
            r.take([start + 1])
        assert r.get(0) is not None


def test_off_by_default(rows_file):
    """The default lookup decompresses the whole block and checks the row
    against the block's offset array (tests/test_verify_limits.py: a damaged
    string length that still parses is an error, not a longer string)."""
    path, rows, _ = rows_file
    with RowFileReader(path, SCHEMA) as r:
        assert not r.prefix_lookups
        assert r.get(3) == rows[3]
        assert ~0 not in r._cache and 0 in r._cache


def test_bytesio_source(rows_file):
    path, rows, _ = rows_file
    with RowFileReader(io.BytesIO(path.read_bytes()), SCHEMA, prefix_lookups=True) as r:
        for i in range(0, len(rows), 97):
            assert r.get(i) == rows[i]
