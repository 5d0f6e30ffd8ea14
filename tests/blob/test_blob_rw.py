"""Writing and reading: streaming in chunks, open(), Arrow output, atomic
files, rejected values, and a round-trip property."""
import io
import os
import struct
import zlib

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from rowformat import _blob
from rowformat.blob import PLACEHOLDER, BlobFileReader, BlobFileWriter, RangeStream
from rowformat.blob import reader as blob_reader
from rowformat.errors import CorruptFileError, RowFormatError, ValueConversionError
from rowformat.datatypes import parse_type


class CountingReader(io.RawIOBase):
    """A source stream that records the sizes it was asked for."""

    def __init__(self, size, seed=7):
        self.size, self.pos, self.requests, self.seed = size, 0, [], seed

    def readable(self):
        return True

    def read(self, n=-1):
        self.requests.append(n)
        n = self.size - self.pos if n is None or n < 0 else min(n, self.size - self.pos)
        out = _pattern(self.pos, n, self.seed)
        self.pos += n
        return out


def _pattern(start, n, seed=7):
    return bytes((i * 31 + seed) & 0xFF for i in range(start, start + n))


def test_file_objects_are_streamed_in_chunks(tmp_path):
    src = CountingReader(300_000)
    path = tmp_path / "s.blob"
    with BlobFileWriter(path, "BLOB", chunk_size=4096) as w:
        w.write(src)
    assert src.requests and max(src.requests) == 4096 and -1 not in src.requests
    with BlobFileReader(path, "BLOB") as r:
        assert r.get(0) == _pattern(0, 300_000)


def test_text_file_object_is_rejected_and_file_discarded(tmp_path):
    path = tmp_path / "t.blob"
    w = BlobFileWriter(path, "BLOB")
    with pytest.raises(TypeError, match="binary mode"):
        w.write(io.StringIO("text"))
    with pytest.raises(RowFormatError, match="failed earlier"):
        w.close()
    assert list(tmp_path.iterdir()) == []


def test_writing_to_a_stream_gives_the_same_bytes(tmp_path):
    rows = [b"a", None, b"", PLACEHOLDER, io.BytesIO(b"s" * 5000)]
    path = tmp_path / "f.blob"
    with BlobFileWriter(path, "BLOB") as w:
        w.write_many(rows[:4] + [io.BytesIO(b"s" * 5000)])
    seen = []
    out = io.BytesIO()
    w = BlobFileWriter(out, "BLOB", chunk_size=1000, consumer=seen.append)
    w.write_many(rows)
    w.close()
    assert not out.closed and out.getvalue() == path.read_bytes()
    assert [(d.uri, d.offset, d.length) for d in seen] == [
        ("<stream>", 4, 1), ("<stream>", 21, 0), ("<stream>", 37, 5000)]
    w.close()                                   # closing again writes nothing more
    assert out.getvalue() == path.read_bytes()


def test_file_appears_only_on_successful_close(tmp_path):
    path = tmp_path / "a.blob"
    with pytest.raises(KeyError):
        with BlobFileWriter(path, "BLOB") as w:
            w.write(b"x")
            assert not path.exists()
            raise KeyError("boom")
    assert list(tmp_path.iterdir()) == []
    with BlobFileWriter(path, "BLOB") as w:
        w.write(b"x")
        assert [p.name for p in tmp_path.iterdir()] != ["a.blob"]
    assert [p.name for p in tmp_path.iterdir()] == ["a.blob"]
    w.close()  # idempotent


@pytest.mark.parametrize("blob_type,value,match", [
    ("BLOB", "text", "expected bytes"),
    ("BLOB", 5, "expected bytes"),
    ("ARRAY<BLOB>", b"abc", "must be a list"),
    ("ARRAY<BLOB>", [b"a", PLACEHOLDER], "element 1: placeholders mark whole rows"),
    ("ARRAY<BLOB>", [b"a", "s"], "element 1: expected bytes"),
    ("MAP<INT, BLOB>", [1, 2], r"entries must be \(key, value\) pairs"),
    ("MAP<INT, BLOB>", {1: 3}, "expected bytes"),
])
def test_rejected_values_leave_writer_usable(blob_type, value, match, tmp_path):
    path = tmp_path / "r.blob"
    with BlobFileWriter(path, blob_type) as w:
        with pytest.raises(ValueConversionError, match=match):
            w.write(value)
        w.write(None)
    with BlobFileReader(path, blob_type) as r:
        assert r.num_rows == 1 and r.get(0) is None


def test_types_as_datatype_and_pyarrow_input(write_blob, read_blob):
    t = parse_type("ARRAY<BLOB>")
    arr = pa.array([[b"a", None], None, []], type=pa.list_(pa.large_binary()))
    data = write_blob(t, arr)
    assert read_blob(data, t).read().column(0).to_pylist() == arr.to_pylist()
    m = pa.array([[("k", b"v")], None], type=pa.map_(pa.string(), pa.large_binary()))
    data = write_blob("MAP<STRING, BLOB>", m)
    assert read_blob(data, "MAP<STRING, BLOB>").get(0) == {"k": b"v"}


def test_typed_buffers_are_written_as_their_bytes(write_blob, read_blob):
    import array
    ints = array.array("i", [1, 2, 3])
    data = write_blob("BLOB", [memoryview(ints), bytearray(b"ba")])
    assert read_blob(data, "BLOB").read().column(0).to_pylist() == [ints.tobytes(), b"ba"]


def test_take_and_read_as_arrow(write_blob, read_blob):
    rows = [b"a", None, PLACEHOLDER, b"", b"e" * 1000]
    r = read_blob(write_blob("BLOB", rows), "BLOB", column="img")
    t = r.take([4, 0, 0, 2])
    assert t.schema == pa.schema([pa.field("img", pa.large_binary())])
    assert t.column(0).to_pylist() == [b"e" * 1000, b"a", b"a", None]
    assert r.read().column(0).to_pylist() == [b"a", None, None, b"", b"e" * 1000]
    assert r.read([3, 1]).column(0).to_pylist() == [None, b""]
    assert r.take([]).num_rows == 0


def test_read_coalesces_adjacent_entries(monkeypatch, tmp_path):
    path = tmp_path / "c.blob"
    with BlobFileWriter(path, "BLOB") as w:
        w.write_many([bytes([i]) * 100 for i in range(50)] + [None] + [b"z" * 100])
    reads = []
    with BlobFileReader(path, "BLOB") as r:
        real = r._source.read
        monkeypatch.setattr(r._source, "read", lambda o, n: reads.append(n) or real(o, n))
        assert r.read().num_rows == 52
        assert reads == [51 * 116]     # one read: null rows take no bytes
        reads.clear()
        assert r.read([0, 50, 51]).column(0).to_pylist() == [b"\x00" * 100, None, b"z" * 100]
        assert reads == [116, 116]   # rows 0 and 51 are not adjacent
        reads.clear()
        monkeypatch.setattr(blob_reader, "COALESCE", 300)
        r.read()
        assert reads == [232] * 25 + [116]


def test_get_reads_only_its_entry(monkeypatch, tmp_path):
    path = tmp_path / "g.blob"
    with BlobFileWriter(path, "BLOB") as w:
        w.write_many([b"x" * 1000] * 20)
    with BlobFileReader(path, "BLOB") as r:
        reads = []
        real = r._source.read
        monkeypatch.setattr(r._source, "read", lambda o, n: reads.append((o, n)) or real(o, n))
        assert r.get(7) == b"x" * 1000
        assert reads == [(7 * 1016, 1016)]


@pytest.fixture
def big(tmp_path, monkeypatch):
    """A file whose row 1 is above SMALL_ENTRY, so open() streams it."""
    monkeypatch.setattr(blob_reader, "SMALL_ENTRY", 4096)
    path = tmp_path / "big.blob"
    with BlobFileWriter(path, "BLOB", chunk_size=1000) as w:
        w.write(b"head")
        w.write(CountingReader(100_000))
        w.write(None)
    return path


def test_open_streams_and_seeks(big):
    with BlobFileReader(big, "BLOB") as r:
        assert r.open(2) is None
        with r.open(0) as f:
            assert f.read() == b"head"
        f = r.open(1)
        assert isinstance(f, RangeStream) and f.readable() and not f.writable() and f.size == 100_000
        assert f.read(10) == _pattern(0, 10)
        f.seek(-5, os.SEEK_END)
        assert f.read() == _pattern(99_995, 5) and f.read(1) == b""
        f.seek(10)
        buf = bytearray(50)
        assert f.readinto(buf) == 50 and bytes(buf) == _pattern(10, 50)
        with pytest.raises(io.UnsupportedOperation):
            f.write(b"x")
        f.seek(0)
        assert f.read() == _pattern(0, 100_000)
        f.close()
        with pytest.raises(ValueError):
            f.read()


def test_open_detects_corruption_at_end_of_stream(big):
    data = bytearray(big.read_bytes())
    data[20 + 4 + 99_999] ^= 0xFF           # last payload byte of row 1 (row 0 is 20 bytes)
    big.write_bytes(data)
    with BlobFileReader(big, "BLOB") as r:
        f = r.open(1)
        assert len(f.read(99_999)) == 99_999   # bytes before the end stream fine
        with pytest.raises(CorruptFileError, match=r"big\.blob: row 1 .*CRC32 mismatch"):
            f.read()
    with BlobFileReader(big, "BLOB", verify=False) as r:
        assert r.open(1).read()[-1] == data[20 + 4 + 99_999]


@pytest.mark.parametrize("flip", [2, 12, 50_000, 99_999])
@pytest.mark.parametrize("moves", [
    [("read", 10), ("seek", 5), ("read", 10), ("read", -1)],     # back over the frontier
    [("seek", 60_000), ("read", -1)],                           # forward past it
    [("read", 10), ("seek", -3, os.SEEK_END), ("read", 3)],    # the end first
    [("seek", 99_990), ("read", 10), ("seek", 0), ("read", 20)],
])
def test_open_checks_every_byte_handed_out_in_any_order(big, flip, moves):
    """Issue 28, item 9: a corrupt byte is caught whatever the order of
    reads and seeks, once the range's last byte has been read."""
    def replay(r):
        f = r.open(1)
        for op, *args in moves:
            got = getattr(f, op)(*args)
        return f, got

    with BlobFileReader(big, "BLOB") as r:        # intact: no error, the right bytes
        f, got = replay(r)
        assert got == _pattern(f.tell() - len(got), len(got))
    data = bytearray(big.read_bytes())
    data[20 + 4 + flip] ^= 0x01
    big.write_bytes(data)
    with BlobFileReader(big, "BLOB") as r:
        with pytest.raises(CorruptFileError, match=r"row 1 .*CRC32 mismatch"):
            replay(r)


def test_open_checks_frame_before_streaming(big):
    data = bytearray(big.read_bytes())
    data[20] = 0                             # row 1's magic
    big.write_bytes(data)
    with BlobFileReader(big, "BLOB") as r:
        with pytest.raises(CorruptFileError, match="row 1 .*expected entry magic"):
            r.open(1)


def test_open_elements_of_nested_rows(tmp_path, monkeypatch):
    path = tmp_path / "n.blob"
    with BlobFileWriter(path, "MAP<INT, BLOB>") as w:
        w.write({1: b"one", 2: None, 3: CountingReader(20_000)})
    for small in (1 << 20, 1000):      # served from the verified entry, then read piecewise
        monkeypatch.setattr(blob_reader, "SMALL_ENTRY", small)
        with BlobFileReader(path, "MAP<INT, BLOB>") as r:
            assert r.open(0, 1).read() == b"one"
            assert r.open(0, 2) is None
            assert r.open(0, 3).read() == _pattern(0, 20_000)
            d = r.descriptor(0, 3)
            assert (d.offset, d.length) == (4 + 9 + 12 + 3, 20_000)
            with d.open() as f:
                assert f.read(3) == _pattern(0, 3)
            with pytest.raises(KeyError):
                r.open(0, 4)
            with pytest.raises(TypeError):
                r.open(0)


def test_arrow_reads_stream_entries_above_coalesce(monkeypatch, tmp_path):
    """read()/take() copy a large entry into the column in DEFAULT_READ
    pieces (never the whole entry at once) and check its CRC as it streams."""
    from rowformat.blob import stream
    monkeypatch.setattr(blob_reader, "COALESCE", 3000)
    monkeypatch.setattr(blob_reader, "SMALL_ENTRY", 1000)
    monkeypatch.setattr(stream, "DEFAULT_READ", 4096)
    monkeypatch.setattr(blob_reader, "DEFAULT_READ", 4096)
    path = tmp_path / "l.blob"
    with BlobFileWriter(path, "BLOB") as w:
        w.write_many([b"a", None, CountingReader(50_000), b"", PLACEHOLDER, b"z" * 10])
    with BlobFileReader(path, "BLOB") as r:
        reads = []
        real = r._source.read
        monkeypatch.setattr(r._source, "read", lambda o, n: reads.append(n) or real(o, n))
        want = [b"a", None, _pattern(0, 50_000), b"", None, b"z" * 10]
        assert r.read().column(0).to_pylist() == want
        assert max(reads) == 4096
        assert r.take([2, 0, 2, 4]).column(0).to_pylist() == [want[2], b"a", want[2], None]
    data = bytearray(path.read_bytes())
    data[17 + 4 + 40_000] ^= 1                    # inside row 2's payload (row 0 is 17 bytes)
    path.write_bytes(data)
    with BlobFileReader(path, "BLOB") as r:
        with pytest.raises(CorruptFileError, match=r"l\.blob: row 2 .*CRC32 mismatch"):
            r.read()
        assert r.take([0, 5]).column(0).to_pylist() == [b"a", b"z" * 10]


def test_element_descriptors_of_nested_rows(tmp_path):
    path = tmp_path / "e.blob"
    with BlobFileWriter(path, "ARRAY<BLOB>") as w:
        w.write_many([[b"one", None, b"three"], None, PLACEHOLDER])
    with BlobFileReader(path, "ARRAY<BLOB>") as r:
        ds = r.element_descriptors(0)
        assert ds[1] is None and ds[0] == r.descriptor(0, 0) and ds[2] == r.descriptor(0, 2)
        with ds[2].open() as f:
            assert f.read() == b"three"
        assert r.element_descriptors(1) is None and r.element_descriptors(2) is PLACEHOLDER
    mpath = tmp_path / "m.blob"
    with BlobFileWriter(mpath, "MAP<INT, BLOB>") as w:
        w.write({7: b"seven", 8: None})
    with BlobFileReader(mpath, "MAP<INT, BLOB>") as r:
        assert r.element_descriptors(0) == {7: r.descriptor(0, 7), 8: None}
    with BlobFileReader(path, "BLOB") as r, pytest.raises(TypeError, match="no elements"):
        r.element_descriptors(0)


def test_reader_over_file_object_and_closed_reader(write_blob):
    f = io.BytesIO(write_blob("BLOB", [b"abc"]))
    r = BlobFileReader(f, "BLOB")
    assert r.get(0) == b"abc" and r.name == "<file object>"
    r.close()
    with pytest.raises(ValueError, match="closed"):
        r.get(0)


def test_record_length_field_is_the_entry_length(write_blob):
    data = write_blob("BLOB", [b"12345"])
    assert struct.unpack_from("<q", data, 9)[0] == 21
    assert struct.unpack_from("<I", data, 17)[0] == zlib.crc32(data[:17])


# -- round-trip property -------------------------------------------------------------------
blobs = st.binary(max_size=40)
nullable_blobs = st.none() | blobs
ROWS = {
    "BLOB": st.lists(st.none() | st.just(PLACEHOLDER) | blobs, max_size=8),
    "ARRAY<BLOB>": st.lists(st.none() | st.just(PLACEHOLDER) | st.lists(nullable_blobs, max_size=4),
                            max_size=6),
    "MAP<BIGINT, BLOB>": st.lists(st.none() | st.just(PLACEHOLDER) | st.dictionaries(
        st.none() | st.integers(-(1 << 63), (1 << 63) - 1), nullable_blobs, max_size=4), max_size=6),
    "MAP<STRING, BLOB>": st.lists(st.none() | st.dictionaries(st.text(max_size=5), nullable_blobs,
                                                               max_size=4), max_size=6),
}


@pytest.mark.parametrize("blob_type", sorted(ROWS))
@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_round_trip(blob_type, data, write_blob, read_blob):
    rows = data.draw(ROWS[blob_type])
    raw = write_blob(blob_type, rows)
    r = read_blob(raw, blob_type)
    assert [r.get(i) for i in range(r.num_rows)] == rows
    # The file size is exactly the entries, the index and the footer.
    entries = sum(n for n in r.index.lengths.tolist() if n > 0)
    assert len(raw) == entries + len(_blob.encode(r.index.lengths)) + 5
    if blob_type != "MAP<BIGINT, BLOB>" or not any(isinstance(v, dict) and None in v for v in rows):
        arrow = r.read().column(0).to_pylist()
        want = [None if v is PLACEHOLDER else (list(v.items()) if isinstance(v, dict) else v)
                for v in rows]
        assert arrow == want
