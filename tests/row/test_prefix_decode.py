"""Lookups decompress only the prefix of a block they need: the ZSTD
decoder that stops early (src/include/rf_zstd.h, through PrefixBlock) gives
exactly libzstd's bytes, resumes where it stopped, and the reader's get()
and take() through it equal a full read."""
import datetime as dt
import io
import pathlib
import random
import struct
import tempfile
from decimal import Context, Decimal

import numpy as np
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from rowformat import CorruptFileError, RowFileReader, RowFileWriter, schema
from rowformat._rowcodec import PrefixBlock
from rowformat.row.block_store import PREFIX_SHARE



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


def _libzstd_rejects(frame: bytes, n: int) -> bool:
    """The reader's rule: the frame must decompress to exactly n bytes."""
    try:
        return len(zstandard.ZstdDecompressor().decompress(frame, max_output_size=n)) != n
    except (zstandard.ZstdError, MemoryError):
        return True


def _first_block(frame: bytes) -> tuple[int, int, list[int]]:
    """Of a frame without content size or dictionary (6 header bytes): its
    first block's header position and size, and the bits (as positions in
    the frame, 8 a byte) of its literals section's compressed size."""
    bh = int.from_bytes(frame[6:9], "little")
    body = frame[9:9 + (bh >> 3)]
    assert (bh >> 1) & 3 == 2 and body[0] & 3 == 2, "a compressed block, Huffman literals"
    hdr = {0: 3, 1: 3, 2: 4, 3: 5}[(body[0] >> 2) & 3]
    width = {3: 10, 4: 14, 5: 18}[hdr]
    return 6, bh >> 3, [9 * 8 + k for k in range(4 + width, 4 + 2 * width)]


@pytest.mark.parametrize("kind, level, n", [("words", 3, 20000), ("words", 1, 65536),
                                            ("words", 1, 300_000)])
def test_damaged_frame_structure_gives_no_prefix(kind, level, n):
    """Issue 28, item 8: a frame's structure is checked before anything of
    it is decoded -- every block header, in order up to the last block,
    inside the frame, the blocks' sizes able to give the block's size; the
    block's literals section and its streams' sizes against the Huffman
    table; its sequence stream against the FSE tables. So a truncated frame,
    a damaged block header or literals size, or a last block that is not
    marked as such makes the prefix decoder give up (the lookup then goes to
    libzstd, which reports the error) instead of returning the frame's
    start. Damage inside the entropy-coded streams can still give a prefix
    (docs/errors.md, "Prefix lookups")."""
    data = sample(random.Random(f"{kind}{n}"), n, kind)
    frame = java_frame(data, level)
    at, size, literals_size = _first_block(frame)
    damaged = [frame[:cut] for cut in range(at + 3 + size, len(frame), 97)]
    for bit in list(range(at * 8, at * 8 + 24)) + literals_size:
        bad = bytearray(frame)
        bad[bit // 8] ^= 1 << bit % 8
        damaged.append(bytes(bad))
    rejected, decoded_in_part = 0, []
    for bad in damaged:
        if not _libzstd_rejects(bad, n):
            continue
        rejected += 1
        p = PrefixBlock(bad, n, 0)
        if not p.failed and p.advance(200) >= 0:
            decoded_in_part.append(bad)
    assert rejected >= 20 and len(decoded_in_part) == 0


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
    block, which replaces the prefix (kept apart from the whole blocks)."""
    path, rows, _ = rows_file
    with RowFileReader(path, SCHEMA, prefix_lookups=True) as r:
        n = r._table.rows(3)
        start = r._table.start(3)
        assert r.get(start) == rows[start]
        prefix = r._store.cached_prefix(3)
        assert not r._store.is_cached(3)
        first = prefix.produced
        assert 0 < first < r._table.usize(3)
        mid = int(n * PREFIX_SHARE) - 1
        assert r.get(start + mid) == rows[start + mid]
        assert r._store.cached_prefix(3) is prefix and prefix.produced > first
        assert r.get(start + n - 1) == rows[start + n - 1]
        assert r._store.cached_prefix(3) is None and r._store.is_cached(3)


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
        offset, size = r._table.frame(2)
        start = r._table.start(2)
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


def test_lookup_in_a_frame_of_damaged_structure_raises(rows_file, tmp_path):
    """Issue 28, item 8, through the reader: a lookup with prefix_lookups in
    a block whose block header or literals size is damaged raises what the
    full read raises, instead of returning the block's first rows."""
    path, _, _ = rows_file
    good = path.read_bytes()
    with RowFileReader(path, SCHEMA) as r:
        (offset, size), usize = r._table.frame(2), r._table.usize(2)
        start = r._table.start(2)
    frame = good[offset:offset + size]
    at, _, literals_size = _first_block(frame)
    checked = 0
    for bit in list(range(at * 8, at * 8 + 24)) + literals_size:
        data = bytearray(good)
        data[offset + bit // 8] ^= 1 << bit % 8
        if not _libzstd_rejects(bytes(data[offset:offset + size]), usize):
            continue
        checked += 1
        bad = tmp_path / "bad.row"
        bad.write_bytes(bytes(data))
        with RowFileReader(bad, SCHEMA, prefix_lookups=True, cache_bytes=0) as r:
            with pytest.raises(CorruptFileError, match=r"bad\.row: block 2"):
                r.get(start)
    assert checked >= 10


def test_off_by_default(rows_file):
    """The default lookup decompresses the whole block and checks the row
    against the block's offset array (tests/row/test_verify_limits.py: a damaged
    string length that still parses is an error, not a longer string)."""
    path, rows, _ = rows_file
    with RowFileReader(path, SCHEMA) as r:
        assert not r.prefix_lookups
        assert r.get(3) == rows[3]
        assert r._store.cached_prefix(0) is None and r._store.is_cached(0)


def test_bytesio_source(rows_file):
    path, rows, _ = rows_file
    with RowFileReader(io.BytesIO(path.read_bytes()), SCHEMA, prefix_lookups=True) as r:
        for i in range(0, len(rows), 97):
            assert r.get(i) == rows[i]


# -- the walk: row starts from the rows' bytes ----------------------------------
#
# PrefixBlock.rows finds the rows' starts with skip_row, which reads only what
# a row's length depends on (null headers and bitmaps, length varints) and
# steps over fixed-width fields, runs of them at once. A wrong step shows as a
# start that differs from the block's offset array, which the writer wrote.

def decoder_for(s):
    from rowformat import to_arrow_schema
    from rowformat._rowcodec import RowDecoder
    return RowDecoder(s, range(len(s)), to_arrow_schema(s))


def offsets_of(raw: bytes) -> list[int]:
    """A decompressed block's row starts, from its offset array, and where
    the rows end."""
    n = struct.unpack_from("<i", raw, len(raw) - 4)[0]
    end = len(raw) - 4 - 4 * n
    return list(struct.unpack_from(f"<{n}i", raw, end)) + [end]


def check_walk(path, s, rows, stops=(0.0, 0.5)):
    """Every block of the file walks to its offset array: whole, and in
    steps from prefixes cut at each share of ``stops`` (the walk then meets
    rows cut off by the end of the output, and resumes); each row looked up
    through the prefix equals the row written."""
    data = path.read_bytes()
    dec = decoder_for(s)
    with RowFileReader(path, s) as r:
        for (off, size), usize, n in ((r._table.frame(b), r._table.usize(b), r._table.rows(b))
                                      for b in range(r.num_blocks)):
            frame = data[off:off + size]
            want = offsets_of(zstandard.ZstdDecompressor().decompress(frame, max_output_size=usize))
            p = PrefixBlock(frame, usize, n)
            assert p.rows(dec, n - 1) is not None
            assert p.row_starts() == want
            for share in stops:
                p = PrefixBlock(frame, usize, n)
                p.advance(int(usize * share))
                for i in sorted({int(n * f) for f in (0, 0.3, 0.7)} | {n - 1}):
                    assert p.rows(dec, i) is not None
                    assert p.row_starts()[:i + 2] == want[:i + 2]
    with RowFileReader(path, s, prefix_lookups=True) as r:
        for i, row in enumerate(rows):
            r.clear_cache()
            assert r.get(i) == tuple(row)


def write(tmp_path, s, rows, block_size=1 << 20, name="w.row"):
    path = tmp_path / name
    with RowFileWriter(path, s, block_size=block_size) as w:
        w.write_rows(rows)
    return path


# every type of rowformat.datatypes, nullable and NOT NULL, top level and nested
ALL_TYPES = schema(
    "bo BOOLEAN, ti TINYINT, sm SMALLINT, i INT, bi BIGINT, f FLOAT, d DOUBLE, "
    "c CHAR(5), s STRING, b BINARY(3), vb BYTES, bl BLOB, "
    "d10 DECIMAL(10, 2), d18 DECIMAL(18, 18), d38 DECIMAL(38, 0), "
    "dt DATE, t0 TIME(0), t3 TIME(3), t6 TIME(6), "
    "ts0 TIMESTAMP(0), ts3 TIMESTAMP(3), ts6 TIMESTAMP(6), ts9 TIMESTAMP(9), "
    "ltz TIMESTAMP(3) WITH LOCAL TIME ZONE, v VARIANT, "
    "a ARRAY<INT>, ann ARRAY<INT NOT NULL>, aa ARRAY<ARRAY<STRING>>, ab ARRAY<BOOLEAN>, "
    "ad ARRAY<DECIMAL(20, 2)>, at ARRAY<TIMESTAMP(9)>, m MAP<STRING, ARRAY<INT>>, "
    "mr MAP<INT NOT NULL, ROW<p DOUBLE, q STRING>>, ms MULTISET<INT>, "
    "r ROW<x INT NOT NULL, y ROW<z STRING, w BIGINT>, u SMALLINT>, vec VECTOR<DOUBLE, 2>, "
    "nn BIGINT NOT NULL, tail STRING")
UTC = dt.timezone.utc


def full_row(k: int):
    return (k % 2 == 0, k % 100 - 50, -k, k * 7, -k * 10**12, k / 4, k / 3, "ab", "s" * k, b"xyz",
            b"\x00\xff" * k, b"B" * (k * 30),
            Decimal(k) / 100, Decimal(k) / 10**18, Decimal(10**37 * (k % 9)),
            dt.date(2000, 1, 1 + k % 28), dt.time(k % 24, 0), dt.time(1, 2, 3, 4000),
            dt.time(1, 2, 3, 1000 * k), dt.datetime(1999, 1, 1, 0, 0, k % 60),
            dt.datetime(2000, 1, 1, 0, 0, 0, 1000 * (k % 1000)), dt.datetime(2000, 1, 1, 0, 0, 0, k),
            np.datetime64(10**18 + k, "ns"), dt.datetime(1969, 7, 20, tzinfo=UTC),
            {"value": b"v" * k, "metadata": b"m"},
            [k, None, 3], list(range(k % 5)), [["a", None], None, []], [True, None, False],
            [Decimal("1.25"), None], [np.datetime64(k, "ns"), None],
            [("k", [1, None]), ("", None)], [(1, {"p": 1.5, "q": None}), (2, None)], [(5, 2), (-7, 1)],
            {"x": k, "y": {"z": None, "w": k}, "u": None}, [1.5, -2.5], k, "end" * k)


def test_walk_every_type_and_nulls_in_every_position(tmp_path):
    """Every type; then, for each field in turn, a row where only it is
    null (NOT NULL ones stay), and rows with each nested value null."""
    s = ALL_TYPES
    names = s.names
    rows = [full_row(k) for k in range(4)]
    for f in range(len(names)):
        if s[f].type.nullable:
            row = list(full_row(f))
            row[f] = None
            rows.append(tuple(row))
    row = [None] * len(names)
    row[names.index("nn")] = 1
    rows.append(tuple(row))
    # nulls inside: array elements, map values, nested row fields, empty ones
    empty = list(full_row(0))
    empty[names.index("s")] = ""
    empty[names.index("a")] = []
    empty[names.index("aa")] = [[], [None], [""]]
    empty[names.index("m")] = [("k", []), ("j", [None, None])]
    empty[names.index("r")] = {"x": 0, "y": None, "u": 3}
    empty[names.index("v")] = {"value": b"", "metadata": b""}
    rows.append(tuple(empty))
    nested = list(full_row(3))
    nested[names.index("r")] = {"x": 1, "y": {"z": "z", "w": None}, "u": None}
    nested[names.index("mr")] = [(1, None), (2, {"p": None, "q": "q"})]
    nested[names.index("a")] = [None] * 9 + [1]
    nested[names.index("ann")] = list(range(17))
    rows.append(tuple(nested))
    check_walk(write(tmp_path, s, rows), s, rows)
    check_walk(write(tmp_path, s, rows, block_size=512, name="small.row"), s, rows, stops=(0.3,))


def test_walk_fixed_runs_with_one_null(tmp_path):
    """Runs of fixed-width fields step over all at once when none is null:
    a null anywhere in a run, at its ends, and more than RUN_MAX (57) fixed
    fields in a row (the header over many bytes, runs cut in two)."""
    fixed = ["BIGINT", "INT", "DOUBLE", "BOOLEAN", "SMALLINT", "TINYINT", "FLOAT", "DATE",
             "TIME(3)", "TIMESTAMP(3)", "DECIMAL(10, 2)"]
    types = [fixed[k % len(fixed)] for k in range(70)] + ["STRING"] + fixed + ["STRING", "INT"]
    s = schema(", ".join(f"c{k} {t}" for k, t in enumerate(types)))
    base = []
    for t in types:
        base.append({"BIGINT": 1, "INT": 2, "DOUBLE": 0.5, "BOOLEAN": True, "SMALLINT": 3, "TINYINT": 4,
                     "FLOAT": 0.25, "DATE": dt.date(2001, 1, 1), "TIME(3)": dt.time(1, 2, 3),
                     "TIMESTAMP(3)": dt.datetime(2001, 1, 1), "DECIMAL(10, 2)": Decimal("1.50"),
                     "STRING": "str"}[t])
    rows = [tuple(base)]
    for k in range(len(types)):
        row = list(base)
        row[k] = None
        rows.append(tuple(row))
    rows.append(tuple([None] * len(types)))
    check_walk(write(tmp_path, s, rows), s, rows)


def test_walk_long_lengths(tmp_path):
    """Length varints of one, two and three bytes (strings of 127, 128,
    16383, 16384 bytes and more), arrays of more than 127 elements, fixed
    elements with nulls up to the bitmap's last bits."""
    s = schema("a STRING, b BYTES, c ARRAY<INT>, d ARRAY<STRING>, e INT, f ARRAY<BIGINT NOT NULL>")
    rows = []
    for n in (0, 1, 127, 128, 129, 16383, 16384, 70000):
        rows.append(("é" * (n // 2) + "x" * (n % 2), b"\x01" * n,
                     [None if k % 7 == 3 or k == n - 1 else k for k in range(min(n, 300))],
                     ["w" * (k % 200) for k in range(min(n, 150))], n, list(range(min(n, 203)))))
    rows.append((None, None, None, None, None, []))
    check_walk(write(tmp_path, s, rows), s, rows)


# a random schema: (type text, strategy of its Python values)
def _leaf(text, values):
    return st.just((text, values))


_LEAVES = st.one_of(
    _leaf("BOOLEAN", st.booleans()), _leaf("TINYINT", st.integers(-128, 127)),
    _leaf("SMALLINT", st.integers(-2**15, 2**15 - 1)), _leaf("INT", st.integers(-2**31, 2**31 - 1)),
    _leaf("BIGINT", st.integers(-2**63, 2**63 - 1)), _leaf("DOUBLE", st.floats(allow_nan=False)),
    _leaf("FLOAT", st.sampled_from([0.0, 1.5, -2.25])),
    _leaf("STRING", st.one_of(st.text(max_size=10), st.integers(100, 20000).map(lambda n: "q" * n))),
    _leaf("BYTES", st.binary(max_size=200)), _leaf("BLOB", st.binary(max_size=20)),
    _leaf("DECIMAL(9, 3)", st.integers(-10**9 + 1, 10**9 - 1).map(lambda v: Decimal(v).scaleb(-3))),
    _leaf("DECIMAL(30, 4)", st.integers(-10**30 + 1, 10**30 - 1).map(
        lambda v: Decimal(v).scaleb(-4, Context(prec=40)))),   # not rounded to 28 digits
    _leaf("DATE", st.dates()), _leaf("TIME(3)", st.just(dt.time(3, 4, 5))),
    _leaf("TIME(6)", st.just(dt.time(3, 4, 5, 6000))),   # millis on the wire
    _leaf("TIMESTAMP(3)", st.just(dt.datetime(2020, 1, 2, 3, 4, 5, 6000))),
    _leaf("TIMESTAMP(6)", st.just(dt.datetime(2020, 1, 2, 3, 4, 5, 6))),
    _leaf("VARIANT", st.builds(lambda v, m: {"value": v, "metadata": m}, st.binary(max_size=5),
                               st.binary(max_size=5))),
    _leaf("VECTOR<INT, 2>", st.lists(st.integers(-5, 5), min_size=2, max_size=2)))


def _nullable(tv):
    text, values = tv
    return st.one_of(st.just((text, st.one_of(st.none(), values))),
                     st.just((text + " NOT NULL", values)))


def _compose(inner):
    return st.one_of(
        inner.map(lambda tv: (f"ARRAY<{tv[0]}>", st.lists(tv[1], max_size=12))),
        inner.map(lambda tv: (f"MAP<STRING, {tv[0]}>",
                              st.lists(st.tuples(st.text(max_size=3), tv[1]), max_size=4))),
        inner.map(lambda tv: (f"MULTISET<{tv[0]}>",
                              st.lists(st.tuples(tv[1].filter(lambda v: v is not None),  # map keys
                                                 st.integers(1, 3)), max_size=3))),
        st.lists(inner, min_size=1, max_size=4).map(lambda ts: (
            "ROW<" + ", ".join(f"f{k} {t}" for k, (t, _) in enumerate(ts)) + ">",
            st.fixed_dictionaries({f"f{k}": v for k, (_, v) in enumerate(ts)})))
    ).flatmap(_nullable)


_TYPES = st.recursive(_LEAVES.flatmap(_nullable), _compose, max_leaves=5)


@st.composite
def _files(draw):
    fields = draw(st.lists(_TYPES, min_size=1, max_size=12))
    s = schema(", ".join(f"c{k} {t}" for k, (t, _) in enumerate(fields)))
    rows = draw(st.lists(st.tuples(*[v for _, v in fields]), min_size=1, max_size=25))
    return s, rows


@settings(max_examples=150, deadline=None)
@given(_files(), st.sampled_from([256, 4096, 1 << 20]))
def test_property_walked_starts_are_the_offset_array(tmp_path_factory, data, block_size):
    s, rows = data
    path = write(tmp_path_factory.mktemp("walk"), s, rows, block_size=block_size)
    check_walk(path, s, rows, stops=(0.4,))


# -- the walk on corrupt rows: None (the whole block then reports), no crash ---

def block_frame(rows: list[bytes]) -> tuple[bytes, int, int]:
    """A block of the given row bytes with a correct offset array: its
    frame, decompressed size and row count."""
    starts, pos = [], 0
    for r in rows:
        starts.append(pos)
        pos += len(r)
    raw = b"".join(rows) + struct.pack(f"<{len(rows)}i", *starts) + struct.pack("<i", len(rows))
    return zstandard.ZstdCompressor(level=1).compress(raw), len(raw), len(rows)


def walk(s, rows: list[bytes], i=None):
    frame, usize, n = block_frame(rows)
    return PrefixBlock(frame, usize, n).rows(decoder_for(s), n - 1 if i is None else i)


STR = schema("s STRING, k INT")


@pytest.mark.parametrize("row", [
    b"\x00\x05ab",                            # a string longer than what is left
    b"\x00\x03abc\x01\x02",                   # an INT cut off
    b"\x00\xff\xff\xff\xff\x07abc\x00\x00\x00\x00",   # length 2^31 - 1
    b"\x00\xff\xff\xff\xff\x0fabc\x00\x00\x00\x00",   # length past 2^31: malformed
    b"\x00\xff\xff\xff\xff\xff\x01abc",       # a six-byte varint
    b"\x00\x80",                              # a varint cut off
    b"",                                      # no null header
    b"\x00",                                  # a header only
    b"\x00\x00\x00\x00\x00\x00\xff\xff",      # a row that ends past its block's rows
])
def test_walk_corrupt_rows_give_none(row):
    assert walk(STR, [row]) is None
    good = b"\x00\x01a\x01\x00\x00\x00"
    assert walk(STR, [good, good, row]) is None
    # in the middle, a damaged row may happen to walk into the next one's
    # bytes and end where the block's rows end (so may dec_row): no crash
    walk(STR, [good, row, good])


@pytest.mark.parametrize("text, row", [
    ("a INT NOT NULL, b INT", b"\x01\x00\x00\x00\x00"),       # a NOT NULL field marked null
    ("a INT NOT NULL, b INT NOT NULL", b"\x01\x00\x00\x00\x00"),   # ... inside a run
    ("a ARRAY<INT NOT NULL>", b"\x00\x02\x02\x01\x00\x00\x00"),    # a NOT NULL element null
    ("a ARRAY<STRING NOT NULL>", b"\x00\x02\x01\x01a"),
    ("a ARRAY<INT>", b"\x00\xff\xff\xff\xff\x07\x00"),             # a huge array
    ("a ARRAY<STRING>", b"\x00\x80\x80\x01" + b"\x00" * 2),        # 16384 elements, bitmap cut off
    ("a ARRAY<INT>", b"\x00\x09\x00\x00" + b"\x01\x00\x00\x00" * 8),   # 9 ints, 8 there
    ("m MAP<STRING, INT>", b"\x00\x01\x00\x01a\x02\x00\x01\x00\x00\x00\x02\x00\x00\x00"),  # 1 key, 2 values
    ("r ROW<x INT NOT NULL, y STRING>", b"\x00\x01\x00\x00"),     # a nested NOT NULL null
    ("r ROW<x BIGINT, y BIGINT>", b"\x00\x00" + b"\x00" * 12),    # a nested run cut off
    ("t TIMESTAMP(6)", b"\x00" + b"\x00" * 8 + b"\x80"),           # nanos varint cut off
    ("v VECTOR<INT, 2>", b"\x00\x03" + b"\x00" * 8),               # wrong VECTOR length
])
def test_walk_corrupt_nested_gives_none(text, row):
    s = schema(text)
    assert walk(s, [row]) is None


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_property_damaged_blocks_walk_or_give_none(data):
    """Bytes of a valid block changed at random: the walk gives rows or None,
    and ends (a read past the output shows under scripts/sanitize.sh)."""
    s = ALL_TYPES
    rows = [full_row(k) for k in range(3)]
    raw = bytearray(_raw_block(s, rows))
    n = len(rows)
    end = len(raw) - 4 - 4 * n
    for _ in range(data.draw(st.integers(1, 4))):
        raw[data.draw(st.integers(0, end - 1))] = data.draw(st.sampled_from([0, 1, 0x7F, 0x80, 0xFF]))
    frame = zstandard.ZstdCompressor(level=1).compress(bytes(raw))
    p = PrefixBlock(frame, len(raw), n)
    p.advance(data.draw(st.integers(0, len(raw))))
    block = p.rows(decoder_for(s), data.draw(st.integers(0, n - 1)))
    assert block is None or p.row_starts()[0] == 0


_RAW = {}


def _raw_block(s, rows) -> bytes:
    """The decompressed block of rows written under s (one block)."""
    key = (str(s), len(rows))
    if key not in _RAW:
        with tempfile.TemporaryDirectory() as d:
            path = write(pathlib.Path(d), s, rows)
            data = path.read_bytes()
            with RowFileReader(path, s) as r:
                ((off, size), usize), = [(r._table.frame(0), r._table.usize(0))]
                assert r.num_blocks == 1
            _RAW[key] = zstandard.ZstdDecompressor().decompress(data[off:off + size], max_output_size=usize)
    return _RAW[key]
