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


# -- Huffman lanes: frames built here, with chosen code lengths -------------
#
# The decoder splits a Huffman stream into lanes at guessed bit positions and
# joins them where their code boundaries meet (rfz_huf_split). How soon they
# meet depends on the code lengths, which libzstd picks from the data; these
# frames choose them (RFC 8878 4.2.1: direct weights, canonical codes), with
# sequences of 512-1023 literals each so that a prefix needs only part of the
# literals.


def canonical_codes(lengths: dict[int, int]) -> dict[int, tuple[int, int]]:
    """symbol -> (code, bits): by weight (the longest codes first), then symbol."""
    top = max(lengths.values())
    pos, codes = 0, {}
    for sym in sorted(lengths, key=lambda x: (top + 1 - lengths[x], x)):
        weight = top + 1 - lengths[sym]
        codes[sym] = (pos >> (weight - 1), lengths[sym])
        pos += 1 << (weight - 1)
    assert pos == 1 << top, "lengths must make a complete code"
    return codes


def backward_stream(fields) -> bytes:
    """(value, bits) fields, the first read first: written last, then the end mark."""
    acc = nbits = 0
    for value, bits in reversed(fields):
        acc |= value << nbits
        nbits += bits
    acc |= 1 << nbits
    return acc.to_bytes(nbits // 8 + 1, "little")


def huffman_block(lengths, literals: bytes, streams: int, treeless: bool, rng) -> tuple[bytes, bytes]:
    """A compressed block (its header included) and its content."""
    codes = canonical_codes(lengths)
    section = bytearray()
    if not treeless:
        top, last = max(lengths.values()), max(lengths)
        weights = [top + 1 - lengths[x] if x in lengths else 0 for x in range(last)]
        section.append(127 + len(weights))
        for i in range(0, len(weights), 2):
            section.append(weights[i] << 4 | (weights[i + 1] if i + 1 < len(weights) else 0))
    n = len(literals)
    seg = (n + 3) // 4
    parts = [literals] if streams == 1 else [literals[k * seg:(k + 1) * seg] for k in range(4)]
    encoded = [backward_stream([codes[x] for x in part]) for part in parts]
    if streams == 4:
        section += b"".join(len(e).to_bytes(2, "little") for e in encoded[:3])
    section += b"".join(encoded)
    kind = 3 if treeless else 2
    if streams == 1:
        assert n < 1024 and len(section) < 1024
        header = (kind | n << 4 | len(section) << 14).to_bytes(3, "little")
    else:
        header = (kind | 3 << 2 | n << 4 | len(section) << 22).to_bytes(5, "little")
    # sequences, RLE codes: literal length 512 + 9 bits, offset 1 (code 2, 2 bits 0), match 3
    lls, at, content = [], 0, bytearray()
    while n - at >= 1024:
        lls.append(rng.randrange(512, 1024))
        content += literals[at:at + lls[-1]] + literals[at + lls[-1] - 1:at + lls[-1]] * 3
        at += lls[-1]
    content += literals[at:]
    k = len(lls)
    seqs = bytes([k]) if k < 128 else bytes([(k >> 8) + 128, k & 255])
    if k:
        seqs += bytes([0x54, 28, 2, 0]) + backward_stream(
            [f for ll in lls for f in ((0, 2), (ll - 512, 9))])
    body = header + bytes(section) + seqs
    return (2 << 1 | len(body) << 3).to_bytes(3, "little") + body, bytes(content)


def huffman_frame(lengths, sizes, rng) -> tuple[bytes, bytes]:
    """Blocks of literals drawn with probability 2^-length, the first with
    its table, the rest treeless; 4 streams unless under 1024 literals."""
    pool = list(lengths)
    weights = [2.0 ** -lengths[x] for x in pool]
    blocks, content = bytearray(), bytearray()
    for i, size in enumerate(sizes):
        block, got = huffman_block(lengths, bytes(rng.choices(pool, weights, k=size)),
                                   1 if size < 1024 else 4, i > 0, rng)
        if i == len(sizes) - 1:
            block = bytes([block[0] | 1]) + block[1:]          # the last block
        blocks += block
        content += got
    return b"\x28\xb5\x2f\xfd\xa0" + len(content).to_bytes(4, "little") + bytes(blocks), bytes(content)


def lengths_of(*groups) -> dict[int, int]:
    """(count, bits) groups -> consecutive symbols with those code lengths."""
    out = {}
    for count, bits in groups:
        for _ in range(count):
            out[len(out)] = bits
    return out


TABLES = {
    "two symbols": lengths_of((2, 1)),
    "12 bits": lengths_of(*[(1, b) for b in range(1, 12)], (2, 12)),     # the longest codes allowed
    "all 7 bits": lengths_of((128, 7)),                                  # every lane starts on a code
    "6 and 12 bits": lengths_of((63, 6), (64, 12)),                      # lanes start on the 6-bit grid
    "mixed": lengths_of((2, 2), (4, 4), (8, 6), (16, 8), (16, 9), (32, 10)),
    # a lane started on an odd bit falls in step only at a rare 11-bit code:
    # some lanes are never met, and dropped
    "even but two": lengths_of((2, 2), (4, 4), (8, 6), (16, 8), (63, 10), (2, 11)),
}


@pytest.mark.parametrize("name", TABLES)
def test_huffman_lanes(name):
    """Prefixes ending in each of the four streams, and resumed, equal the
    content (and libzstd's output: the frames are right)."""
    rng = random.Random(name)
    frame, content = huffman_frame(TABLES[name], [100_000, 900, 60_000], rng)
    assert zstandard.ZstdDecompressor().decompress(frame) == content
    n = len(content)
    for share in (0.001, 0.01, 0.1, 0.2, 0.25, 0.26, 0.4, 0.5, 0.6, 0.75, 0.9, 1):
        p = PrefixBlock(frame, n, 0)
        assert p.advance(int(n * share)) >= int(n * share)
        assert content.startswith(p.output())
    stops = sorted(rng.randrange(n) for _ in range(40))
    p, heads = decoded(frame, n, stops)
    assert p.output() == content
    for stop, head in zip(stops, heads):
        assert content.startswith(head) and len(head) >= stop


@pytest.mark.parametrize("name", ["mixed", "12 bits", "even but two"])
def test_huffman_lanes_hostile(name):
    """Bytes flipped in the Huffman streams: a failure, or libzstd's bytes,
    at every prefix; never a read or write outside the buffers."""
    rng = random.Random(name)
    good, content = huffman_frame(TABLES[name], [100_000], rng)
    d = zstandard.ZstdDecompressor()
    for _ in range(150):
        frame = bytearray(good)
        for _ in range(rng.randint(1, 3)):
            frame[rng.randrange(100, len(frame))] ^= 1 << rng.randrange(8)
        frame = bytes(frame)
        p = PrefixBlock(frame, len(content), 0)
        got = p.advance(rng.randrange(len(content)))
        try:
            want = d.decompress(frame)
        except zstandard.ZstdError:
            continue
        if got >= 0:
            assert want.startswith(p.output())


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
