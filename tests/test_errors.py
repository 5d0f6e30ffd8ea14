"""Bad values and bad files get clear rowformat errors naming the file,
block, row and column; writes are atomic."""
import gc
import os
import signal
import struct
import subprocess
import sys
import textwrap
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, strategies as st

import rowformat
from rowformat import (CorruptFileError, RowFileReader, RowFileWriter, ValueConversionError,
                       schema)
from rowformat.row.block_index import BlockIndex
from rowformat.errors import LimitExceededError
from rowformat.row.footer import Footer


@pytest.mark.parametrize("text, row, match", [
    ("a INT, d DECIMAL(10, 2)", (1, Decimal("123456789.12")), r"column 'd', row 1: .*DECIMAL\(10, 2\)"),
    ("a INT, t TINYINT", (1, 300), r"column 't', row 1: 300 does not fit TINYINT"),
    ("a INT, i INT", (1, "abc"), r"column 'i', row 1: 'abc'"),
    ("a INT, n BIGINT NOT NULL", (1, None), r"column 'n', row 1: null in a NOT NULL column"),
    ("a INT, d DECIMAL(5, 2)", (1, Decimal("1.234")), r"column 'd', row 1"),
])
def test_write_rows_value_errors_name_column_and_row(tmp_path, text, row, match):
    p = tmp_path / "x.row"
    with pytest.raises(ValueConversionError, match=match):
        with RowFileWriter(p, schema(text)) as w:
            w.write_rows([(0, None) if "NOT NULL" not in text else (0, 0), row])
    assert not p.exists()
    assert os.listdir(tmp_path) == []   # the temporary file is gone too


def test_write_rows_shape_errors(tmp_path):
    with RowFileWriter(tmp_path / "x.row", schema("a INT, b INT")) as w:
        with pytest.raises(ValueConversionError, match="row 0: 1 values for 2 columns"):
            w.write_rows([(1,)])
        with pytest.raises(ValueConversionError, match=r"row 0: unknown field\(s\) \['c'\]"):
            w.write_rows([{"a": 1, "c": 2}])


def test_arrow_value_errors_name_column_and_row(tmp_path):
    s = schema("a INT, d DECIMAL(10, 0), n STRING NOT NULL")
    with RowFileWriter(tmp_path / "x.row", s) as w:
        with pytest.raises(ValueConversionError, match=r"column 'a', row 3: 2147483648"):
            w.write(pa.table({"a": pa.array([1, 2, 3, 2**31, 5], pa.int64()),
                              "d": pa.array([1] * 5, pa.decimal128(38, 0)),
                              "n": ["x"] * 5}))
        with pytest.raises(ValueConversionError, match=r"column 'd', row 1"):
            w.write(pa.table({"a": [1, 2], "d": pa.array([Decimal(1), Decimal(10**20)], pa.decimal128(38, 0)),
                              "n": ["x", "y"]}))
        with pytest.raises(ValueConversionError, match=r"column 'n', row 1: null in a NOT NULL"):
            w.write(pa.table({"a": [1, 2], "d": pa.array([1, 2], pa.decimal128(10, 0)), "n": ["x", None]}))
        with pytest.raises(rowformat.SchemaError, match=r"missing \['n'\]"):
            w.write(pa.table({"a": [1], "d": pa.array([1], pa.decimal128(10, 0))}))
        w.write(pa.table({"n": ["ok"], "a": [7], "d": pa.array([1], pa.decimal128(10, 0))}))
    with RowFileReader(tmp_path / "x.row", s) as r:
        assert r.num_rows == 1 and r.get(0) == (7, Decimal(1), "ok")


def test_nested_not_null_and_unrepresentable_values(tmp_path):
    s = schema("a ARRAY<INT NOT NULL>")
    p = tmp_path / "n.row"
    with pytest.raises(ValueConversionError, match=r"column 'a', row 0: null in a NOT NULL field"):
        with RowFileWriter(p, s) as w:
            w.write(pa.table({"a": pa.array([[1, None]], pa.list_(pa.int32()))}))
    assert not p.exists()
    arrow_decimal = pa.Array.from_buffers(pa.decimal128(3, 0), 1, [None, pa.py_buffer(
        (10**5).to_bytes(16, "little", signed=True))])  # Arrow does not enforce precision; we do
    with pytest.raises(ValueConversionError, match="precision"):
        with RowFileWriter(p, schema("d DECIMAL(3, 0)")) as w:
            w.write(pa.table({"d": arrow_decimal}))
    assert not p.exists()


def test_failed_writer_cannot_continue(tmp_path):
    p = tmp_path / "f.row"
    w = RowFileWriter(p, schema("a ARRAY<INT NOT NULL>"))
    with pytest.raises(ValueConversionError):
        w.write(pa.table({"a": pa.array([[None]], pa.list_(pa.int32()))}))
    with pytest.raises(rowformat.RowFormatError, match="failed"):
        w.write_rows([([1],)])
    with pytest.raises(rowformat.RowFormatError, match="no file was written"):
        w.close()
    assert os.listdir(tmp_path) == []


def test_exception_inside_with_leaves_no_file(tmp_path):
    p = tmp_path / "a.row"
    p.write_bytes(b"previous")
    with pytest.raises(RuntimeError):
        with RowFileWriter(p, schema("a INT")) as w:
            w.write_rows([(1,)])
            raise RuntimeError("boom")
    assert p.read_bytes() == b"previous"
    assert sorted(os.listdir(tmp_path)) == ["a.row"]


def test_killed_writer_leaves_no_file(tmp_path):
    target = tmp_path / "k.row"
    script = textwrap.dedent(f"""
        import sys, rowformat
        w = rowformat.RowFileWriter({str(target)!r}, rowformat.schema("a INT, b STRING"))
        for i in range(10**9):
            w.write_rows([(i, "x" * 100)] * 1000)
            if i == 5:
                print("writing", flush=True)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                            cwd=tmp_path)  # not the repository root: import the installed package
    assert proc.stdout.readline().strip() == "writing"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not target.exists()
    leftovers = os.listdir(tmp_path)
    assert leftovers and all(n.startswith(".k.row.") and n.endswith(".tmp") for n in leftovers)


# -- corrupt files ---------------------------------------------------------------

S = schema("a INT NOT NULL, b STRING")


@pytest.fixture
def good(tmp_path):
    p = tmp_path / "good.row"
    with RowFileWriter(p, S, block_size=256) as w:
        w.write_rows([(i, f"v{i}") for i in range(100)])
    return p


def _craft(tmp_path, blocks: bytes, comp, uncomp, starts, total, block_count=None, name="c.row"):
    index = BlockIndex(np.array(comp, np.int64), np.array(uncomp, np.int64),
                       np.array(starts, np.int64)).to_bytes()
    footer = Footer(total, len(starts) if block_count is None else block_count, len(blocks), len(index))
    p = tmp_path / name
    p.write_bytes(blocks + index + footer.to_bytes())
    return p


def _open(p, schema_=S, **kw):
    return RowFileReader(p, schema_, **kw)


def test_footer_block_count_cross_check(good):
    data = bytearray(good.read_bytes())
    struct.pack_into("<i", data, len(data) - 24, 99)
    good.write_bytes(bytes(data))
    with pytest.raises(CorruptFileError, match=r"good.row: .*footer declares 99"):
        _open(good)


@pytest.mark.parametrize("data, match", [
    (b"", "too few"), (b"x" * 31, "too few"), (bytes(128), "magic is 0x00000000"),
])
def test_short_and_zero_files(tmp_path, data, match):
    p = tmp_path / "z.row"
    p.write_bytes(data)
    with pytest.raises(CorruptFileError, match=match):
        _open(p)


def test_bad_version_and_index_location(good):
    data = bytearray(good.read_bytes())
    bad = bytearray(data)
    bad[-8] = 2
    good.write_bytes(bytes(bad))
    with pytest.raises(CorruptFileError, match="unsupported .row version 2"):
        _open(good)
    bad = bytearray(data)
    struct.pack_into("<q", bad, len(bad) - 20, 2**40)
    good.write_bytes(bytes(bad))
    with pytest.raises(CorruptFileError, match="invalid block index location"):
        _open(good)


@pytest.mark.parametrize("comp, uncomp, starts, total, match", [
    ([10, 20], [1, 1], [0, 1], 2, None),                       # sizes consistent: accepted
    ([10, 20], [1, 1], [10, 20], 30, "first block starts at row 10"),
    ([10, 20], [1, 1], [0, 0], 5, "not strictly increasing"),
    ([10, 20], [1, 1], [0, 5], 5, "last block starts at row 5"),
    ([30], [1], [0], 0, "last block starts at row 0"),
    ([-1, 31], [1, 1], [0, 1], 2, "negative compressed size"),
    ([10, 20], [1, -1], [0, 1], 2, "negative uncompressed size"),
    ([], [], [], 3, "no blocks, but the footer declares 3 rows"),
    ([10, 20], [1], [0, 1], 2, "array lengths differ"),
])
def test_index_invariants(tmp_path, comp, uncomp, starts, total, match):
    p = _craft(tmp_path, bytes(30 if comp else 0), comp, uncomp, starts, total,
               block_count=max(len(comp), len(starts)))
    if match is None:
        _open(p).close()
    else:
        with pytest.raises(CorruptFileError, match=match):
            _open(p)


def test_blocks_must_end_at_the_index(tmp_path):
    p = _craft(tmp_path, bytes(30), [10, 10], [1, 1], [0, 1], 2)
    with pytest.raises(CorruptFileError, match="blocks end at 20, but the footer puts the block index at 30"):
        _open(p)


def test_declared_block_size_is_bounded_before_allocation(tmp_path):
    p = _craft(tmp_path, bytes(10), [10], [2**31 - 1], [0], 1)
    with pytest.raises(LimitExceededError, match="block 0 declares 2147483647"):
        _open(p)


def test_declared_block_size_beyond_what_its_frame_can_hold(tmp_path):
    """2,000 blocks of 17 bytes that declare 256 MiB each (each within
    max_block_size): no ZSTD frame of 17 bytes decodes to more than 640 KiB,
    so the index is corrupt, refused at open before anything is allocated."""
    n = 2000
    p = _craft(tmp_path, bytes(17 * n), [17] * n, [256 << 20] * n, list(range(n)), n)
    with pytest.raises(CorruptFileError, match="block 0 declares 268435456 uncompressed bytes, "
                       "more than a ZSTD frame of its 17 bytes can hold"):
        _open(p)


def _block_frame(raw: bytes) -> bytes:
    import zstandard
    c = zstandard.ZstdCompressor(write_content_size=False).compressobj()
    return c.compress(raw) + c.flush()


def test_damaged_frames_and_blocks(tmp_path, good):
    data = bytearray(good.read_bytes())
    data[5] ^= 0xFF                      # inside block 0's frame
    good.write_bytes(bytes(data))
    with _open(good) as r:
        with pytest.raises(CorruptFileError, match="good.row: block 0: ZSTD decompression failed"):
            r.get(0)
        assert r.get(99) == (99, "v99")  # other blocks still read

    raw = struct.pack("<i", 5) + struct.pack("<ii", 0, 1)   # claims 1 row, index says 2
    frame = _block_frame(raw)
    p = _craft(tmp_path, frame, [len(frame)], [len(raw)], [0], 2)
    with _open(p) as r, pytest.raises(CorruptFileError, match="block 0 holds 1 rows, but the index says 2"):
        r.read()
    p = _craft(tmp_path, frame, [len(frame)], [len(raw) + 1], [0], 1, name="d.row")
    with _open(p) as r, pytest.raises(CorruptFileError, match="decompressed to 12 bytes, but the index declares 13"):
        r.get(0)
    raw = struct.pack("<ii", 0, 9)   # the trailing count 9 cannot fit in 8 bytes
    frame = _block_frame(raw)
    p = _craft(tmp_path, frame, [len(frame)], [len(raw)], [0], 9, name="e.row")
    with _open(p) as r, pytest.raises(CorruptFileError, match="cannot hold its declared 9 rows"):
        r.get(0)


@pytest.mark.parametrize("row, match", [
    (b"\x00\x01\x00\x00\x00\x05ab", "column 'b'.*end in the middle"),      # string overruns
    (b"\x00\x01\x00", "column 'a'.*end in the middle"),                     # int truncated
    (b"\x01\x00\x00\x00\x00", "column 'a'.*null in a NOT NULL"),            # null bit on NOT NULL
    (b"\x00\x01\x00\x00\x00\x02\xff\xfe", "column 'b'.*UTF-8"),
    (b"\x00\x01\x00\x00\x00\xff\xff\xff\xff\xff\x01", "column 'b'.*varint"),
    (b"\x02\x01\x00\x00\x00junk", "do not match the schema"),               # leftover bytes
])
def test_malformed_rows_name_block_row_and_column(tmp_path, row, match):
    raw = row + struct.pack("<ii", 0, 1)
    frame = _block_frame(raw)
    p = _craft(tmp_path, frame, [len(frame)], [len(raw)], [0], 1)
    with _open(p) as r:
        with pytest.raises(CorruptFileError, match=r"c.row: block 0, row 0.*" if "schema" in match else
                           r"c.row: block 0, row 0, " + match):
            r.read()
        with pytest.raises(CorruptFileError, match="block 0, row 0"):
            r.get(0)


@pytest.mark.parametrize("length", [1, 3, 4, 7, 8, 15, 16, 31, 32, 33, 63, 64, 65, 100])
@pytest.mark.parametrize("bad_at", [0, -1])
def test_invalid_utf8_is_caught_mid_block_at_every_length(tmp_path, length, bad_at):
    # Short strings away from a block's end take the decoder's padded fast path,
    # which reads past the string: the bad byte must be found, and the bytes
    # after a string (row 0 is followed by row 1's 0xFF) must not count. Nine
    # more rows keep even 1-byte strings 64 bytes away from the block's end.
    bad = bytearray(b"x" * length)
    bad[bad_at] = 0xFF
    raw, offsets = b"", []
    for i, value in enumerate([b"x" * length, bytes(bad)] + [b"x" * length] * 9):
        offsets.append(len(raw))
        raw += b"\x00" + struct.pack("<i", i) + bytes([len(value)]) + value
    raw += b"".join(struct.pack("<i", o) for o in offsets) + struct.pack("<i", len(offsets))
    frame = _block_frame(raw)
    p = _craft(tmp_path, frame, [len(frame)], [len(raw)], [0], len(offsets))
    with _open(p) as r:
        assert r.get(0) == (0, "x" * length)
        assert r.get(2) == (2, "x" * length)
        with pytest.raises(CorruptFileError, match=r"block 0, row 1, column 'b'.*UTF-8"):
            r.get(1)
        with pytest.raises(CorruptFileError, match=r"block 0, row 1, column 'b'.*UTF-8"):
            r.read()


# STRING and BYTES share their wire form, so bytes written as BYTES and read as
# STRING put any byte string where the decoder must check UTF-8. It checks a
# block's stored strings together, one ASCII pass then value by value: these
# tests pin that it flags exactly the invalid values, names their rows, and is
# not fooled by neighbours whose bytes together would be valid.
_AS_BYTES = schema("a INT NOT NULL, b BYTES, c ARRAY<BYTES>, m MAP<BYTES, INT>")
_AS_STRING = schema("a INT NOT NULL, b STRING, c ARRAY<STRING>, m MAP<STRING, INT>")


def _utf8(v: bytes | None) -> bool:
    try:
        v is None or v.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def _first_invalid(rows):
    """(row, column) of the first value that is not UTF-8, in decoding order."""
    for i, (_, b, c, m) in enumerate(rows):
        for col, values in (("b", [b]), ("c", c or []), ("m", [k for k, _ in m or []])):
            if not all(map(_utf8, values)):
                return i, col
    return None


def _write_bytes(path, rows, block_size=1 << 20):
    with RowFileWriter(path, _AS_BYTES, block_size=block_size) as w:
        w.write_rows(rows)


@pytest.mark.parametrize("b_values, bad_row", [
    ([b"x\xc3", b"\xa9y"], 0),                       # each half of an "\xc3\xa9" is invalid
    ([b"\xf0\x9f", b"\x98\x80", b"ok"], 0),           # as is each half of an emoji
    ([b"caf\xc3\xa9", b"ok", b"\xed\xa0\x80"], 2),    # a surrogate after valid non-ASCII
    ([b"plain"] * 40 + [b"\x80"], 40),               # past the first 64-byte ASCII run
])
def test_utf8_is_checked_value_by_value(tmp_path, b_values, bad_row):
    p = tmp_path / "u.row"
    _write_bytes(p, [(i, v, None, None) for i, v in enumerate(b_values)])
    with _open(p, _AS_STRING) as r:
        for read in (r.read, lambda: r.read(columns=["a"]), lambda: r.take([bad_row]),
                     lambda: r.get(bad_row)):
            with pytest.raises(CorruptFileError, match=rf"block 0, row {bad_row}, column 'b'.*UTF-8"):
                read()
        if bad_row:
            assert r.get(bad_row - 1)[0] == bad_row - 1


def test_utf8_errors_come_in_row_order_whatever_columns_are_read(tmp_path):
    # Row 0's bad map key is stored and checked with its block; row 1's bad b,
    # when not read, is checked as it is walked: row 0 must still be named.
    p = tmp_path / "u.row"
    _write_bytes(p, [(0, None, None, [(b"\x80", 1)]), (1, b"\x80", None, None)])
    with _open(p, _AS_STRING) as r:
        for columns in (None, ["m"], ["b"], ["a"], ["b", "m"]):
            with pytest.raises(CorruptFileError, match=r"block 0, row 0, column 'm'.*UTF-8"):
                r.read(columns=columns)


_maybe_utf8 = st.one_of(st.text(max_size=30).map(str.encode), st.binary(max_size=30))


@given(st.lists(st.tuples(st.none() | _maybe_utf8, st.none() | st.lists(_maybe_utf8, max_size=3),
                          st.none() | st.lists(_maybe_utf8, max_size=2, unique=True)),
                max_size=40),
       st.sampled_from([64, 1 << 20]))
def test_property_strings_decode_exactly_when_utf8(tmp_path_factory, values, block_size):
    rows = [(i, b, c, None if m is None else [(k, 1) for k in m]) for i, (b, c, m) in enumerate(values)]
    p = tmp_path_factory.mktemp("u8") / "u.row"
    _write_bytes(p, rows, block_size)
    bad = _first_invalid(rows)
    with _open(p, _AS_STRING) as r:
        if bad is None:
            want = [{"a": i, "b": None if b is None else b.decode(),
                     "c": None if c is None else [v.decode() for v in c],
                     "m": None if m is None else [(k.decode(), v) for k, v in m]}
                    for i, b, c, m in rows]
            assert r.read().to_pylist() == want
            assert r.read(columns=["c"]).to_pylist() == [{"c": w["c"]} for w in want]
        else:
            row, col = bad
            with pytest.raises(CorruptFileError, match=rf"row {row}, column '{col}'.*UTF-8"):
                r.read()
            with pytest.raises(CorruptFileError, match=rf"row {row}, column '{col}'.*UTF-8"):
                r.read(columns=["m"])


def test_strings_of_every_length_round_trip_anywhere_in_a_block(tmp_path):
    # ASCII and multi-byte strings of 0..70 bytes, in the middle of blocks and as
    # their last values (where the decoder must not read past the block).
    values = []
    for n in range(71):
        values += ["a" * n, ("é" * n)[:n // 2] + "z" * (n - 2 * (n // 2)), "€" * (n // 3)]
    p = tmp_path / "s.row"
    for block_size in (64, 300, 1 << 20):
        with RowFileWriter(p, S, block_size=block_size) as w:
            w.write_rows([(i, v) for i, v in enumerate(values)])
        with _open(p) as r:
            assert r.read().column("b").to_pylist() == values
            assert [r.get(i)[1] for i in range(len(values))] == values


@pytest.mark.parametrize("ms, ok", [(0, True), (86_399_999, True), (86_400_000, False), (-1, False)])
def test_time_outside_one_day_is_caught_but_multiset_counts_are_not(tmp_path, ms, ok):
    # TIME(p <= 3) and a MULTISET's counts are both 4-byte ints on the wire;
    # only TIME must lie in [0, 86400000) ms (Arrow's time32 cannot hold more).
    keys = b"\x01\x00" + b"\x01x"                        # 1 element, no nulls, "x"
    counts = b"\x01\x00" + struct.pack("<i", 86_400_000)   # 1 element, no nulls, a count
    row = b"\x00" + struct.pack("<i", ms) + keys + counts
    raw = row + struct.pack("<ii", 0, 1)
    frame = _block_frame(raw)
    p = _craft(tmp_path, frame, [len(frame)], [len(raw)], [0], 1)
    s = schema("t TIME(3), m MULTISET<STRING>")
    with _open(p, s) as r:
        if ok:
            t = r.read()
            assert t.column("t").cast(pa.int32()).to_pylist() == [ms]
            assert t.column("m").to_pylist() == [[("x", 86_400_000)]]
        else:
            with pytest.raises(CorruptFileError, match=r"row 0, column 't'.*outside one day"):
                r.read()


def test_wrong_schema_is_caught(good):
    with _open(good, schema("a BIGINT NOT NULL, b STRING")) as r:
        with pytest.raises(CorruptFileError, match="good.row: block 0, row 0"):
            r.read()


def test_reader_rejects_non_files():
    with pytest.raises(TypeError, match="path or a binary file object"):
        RowFileReader(42, S)


@pytest.mark.parametrize("durable", [False, True])
def test_durable_option_fsyncs_before_the_rename(tmp_path, monkeypatch, durable):
    calls = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: calls.append(fd) or real(fd))
    p = tmp_path / "d.row"
    with RowFileWriter(p, schema("a INT"), durable=durable) as w:
        w.write_rows([(1,)])
    assert bool(calls) == durable
    with RowFileReader(p, schema("a INT")) as r:
        assert r.get(0) == (1,)


def test_a_column_that_is_not_there_is_a_schema_error_naming_the_file(tmp_path):
    p = tmp_path / "c.row"
    with RowFileWriter(p, schema("a INT, b STRING")) as w:
        w.write_rows([(1, "x")])
    with RowFileReader(p, "a INT, b STRING") as r:
        for column, match in [("nope", r"c\.row: no column 'nope'; the schema has \['a', 'b'\]"),
                              (2, r"c\.row: column position 2 outside \[0, 2\)")]:
            with pytest.raises(rowformat.ColumnNotFoundError, match=match) as e:
                r.read(columns=[column])
            # callers that caught KeyError (by name) or IndexError (by position) still do
            assert all(isinstance(e.value, c) for c in (rowformat.SchemaError, KeyError, IndexError))
            assert str(e.value).startswith(str(p))     # not KeyError's quoted message


def test_a_writer_never_closed_warns_and_leaves_no_file(tmp_path):
    p = tmp_path / "lost.row"
    w = RowFileWriter(p, schema("a INT"))
    w.write_rows([(1,)])
    assert repr(w) == f"<RowFileWriter {str(p)!r} (open): 1 rows, schema a INT>"
    with pytest.warns(ResourceWarning, match=r"lost\.row was never closed: nothing was written"):
        del w
        gc.collect()
    assert os.listdir(tmp_path) == []
