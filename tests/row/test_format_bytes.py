"""Byte-level compatibility with Paimon Java: the index golden vectors, the
footer, the 35-byte empty file, the flush rule and the row encodings of the
Java tests (docs/format.md section 1 names them)."""
import struct

import numpy as np
import pyarrow as pa
import pytest
import zstandard

import rowformat
from rowformat import RowFileReader, RowFileWriter, schema
from rowformat._blockindex import decode_longs, encode_longs, read_prefixed

LMIN, LMAX = -2**63, 2**63 - 1


@pytest.mark.parametrize("values, hexbytes", [
    ([42], "54"),
    ([80, 50, 90, 80, 70], "a0013b501313"),
    ([64], "8001"), ([-64], "7f"), ([8192], "808001"), ([-8192], "ff7f"),
    ([LMIN], "ff" * 9 + "01"), ([LMAX], "fe" + "ff" * 8 + "01"),
    ([LMAX, LMIN], "fe" + "ff" * 8 + "0102"),
    ([LMIN, LMAX], "ff" * 9 + "0101"),
    ([], ""),
])
def test_delta_varint_golden_vectors(values, hexbytes):
    assert encode_longs(values).hex() == hexbytes
    assert decode_longs(bytes.fromhex(hexbytes)).tolist() == values


@pytest.mark.parametrize("bad, msg", [(b"\x80", "truncated"), (b"\xff" * 10 + b"\x01", "longer")])
def test_index_varint_errors(bad, msg):
    with pytest.raises(rowformat.CorruptFileError, match=msg):
        decode_longs(bad)


@pytest.mark.parametrize("body, want", [
    ("ff" * 9 + "01", [LMIN]),                  # 2^64 - 1: a 10th byte of 1 is bit 63
    ("2a" + "ff" * 9 + "01", [21, 21 + LMIN]),
    ("ff" * 9 + "02", r"above 2\^64 - 1"),     # a 10th byte of 2 would be bit 64
    ("ff" * 10 + "01", "longer than 10 bytes"),
    ("ff" * 9, "truncated"),
])
def test_index_varint_ten_byte_edge(body, want):
    # through a length-prefixed array, as the reader meets it (same rule as .blob:
    # tests/blob/test_blob_varint.py)
    data = bytes([len(bytes.fromhex(body))]) + bytes.fromhex(body)
    if isinstance(want, list):
        assert read_prefixed(data, 0)[0].tolist() == want
    else:
        with pytest.raises(rowformat.CorruptFileError, match=want):
            read_prefixed(data, 0)


def test_index_length_prefix_must_fit():
    with pytest.raises(rowformat.CorruptFileError, match="overruns"):
        read_prefixed(b"\x05\x01", 0)


def _write(path, text, rows=None, table=None, **kw):
    s = schema(text)
    with RowFileWriter(path, s, **kw) as w:
        if table is not None:
            w.write(table)
        if rows is not None:
            w.write_rows(rows)
    return s


EMPTY_FILE = bytes.fromhex("000000" "0000000000000000" "00000000" "0000000000000000"
                           "03000000" "01" "000000" "53574f52")


def test_empty_file_is_exactly_35_bytes(tmp_path):
    p = tmp_path / "empty.row"
    s = _write(p, "a INT, b STRING")
    assert p.read_bytes() == EMPTY_FILE
    with RowFileReader(p, s) as r:
        assert (r.num_rows, r.num_blocks) == (0, 0)
        assert r.read().num_rows == 0
        assert r.read().schema == rowformat.to_arrow_schema(s)


def test_file_ends_with_swor_and_footer_fields(tmp_path):
    p = tmp_path / "f.row"
    _write(p, "a INT", rows=[(i,) for i in range(3)])
    data = p.read_bytes()
    assert data[-4:] == b"SWOR"
    total, count, off, length, version = struct.unpack("<qiqib", data[-32:-7])
    assert (total, count, version) == (3, 1, 1)
    assert data[-7:-4] == b"\0\0\0"
    assert off + length == len(data) - 32


def test_java_fixture_reads_to_its_values(fixture_path):
    from decimal import Decimal
    import datetime as dt
    s = schema("id INT, name VARCHAR(20), amount DECIMAL(20, 2), ts TIMESTAMP(6), scores ARRAY<INT>, "
               "attrs MAP<VARCHAR(20) NOT NULL, INT>, nested ROW<flag BOOLEAN, note VARCHAR(20)>")
    with RowFileReader(fixture_path, s) as r:
        assert r.footer == rowformat.Footer(2, 1, 102, 8, 1)
        assert r.block_index.compressed_sizes.tolist() == [102]
        assert r.block_index.uncompressed_sizes.tolist() == [100]
        assert r.block_index.row_starts.tolist() == [0]
        block = bytes(r.block(0).data)
        assert block[-12:] == bytes.fromhex("00000000" "3d000000" "02000000")
        assert r[0] == (1, "java", Decimal("123456789012345678.90"),
                        dt.datetime(2023, 11, 14, 22, 13, 20, 123456), [1, None, 3],
                        [("a", 10), ("b", None)], {"flag": True, "note": "inner"})
        assert r[1] == (2, None, Decimal("-123456789012345678.90"), dt.datetime(1970, 1, 1),
                        [], None, {"flag": False, "note": None})
        t = r.read()
        assert t.column("ts").to_pylist()[0] == dt.datetime(2023, 11, 14, 22, 13, 20, 123456)
        assert t.column("amount").type == pa.decimal128(20, 2)
        assert t.to_pylist() == [dict(zip(s.names, r[0])), dict(zip(s.names, r[1]))]


def test_java_fixture_writes_back_byte_identical(fixture_path, tmp_path):
    s = schema("id INT, name VARCHAR(20), amount DECIMAL(20, 2), ts TIMESTAMP(6), scores ARRAY<INT>, "
               "attrs MAP<VARCHAR(20) NOT NULL, INT>, nested ROW<flag BOOLEAN, note VARCHAR(20)>")
    with RowFileReader(fixture_path, s) as r:
        table, rows = r.read(), list(r)
    for how in ("arrow", "python"):
        out = tmp_path / f"{how}.row"
        with RowFileWriter(out, s) as w:
            w.write(table) if how == "arrow" else w.write_rows(rows)
        assert out.read_bytes() == fixture_path.read_bytes(), how


def test_frames_have_no_content_size(tmp_path):
    p = tmp_path / "f.row"
    _write(p, "a INT", rows=[(1,)])
    data = p.read_bytes()
    frame = data[:struct.unpack("<q", data[-20:-12])[0]]  # blocks end at indexOffset
    assert frame[:6] == bytes.fromhex("28b52ffd0048")  # FHD 0x00: no FCS, no checksum; 512 KiB window
    with pytest.raises(zstandard.ZstdError, match="content size"):
        zstandard.ZstdDecompressor().decompress(frame)


def test_bytes_do_not_depend_on_threads(tmp_path):
    # Enough blocks that the pool's queue fills, the writing thread compresses
    # blocks itself and frames finish out of order: they must land in order.
    table = pa.table({"a": pa.array(np.arange(20000, dtype=np.int64)),
                      "s": pa.array([f"row-{i}-" + "x" * (i % 50) for i in range(20000)])})
    files = {}
    for threads in (1, 2, 5):
        p = tmp_path / f"t{threads}.row"
        _write(p, "a BIGINT, s STRING", table=table, block_size=1024, threads=threads)
        files[threads] = p.read_bytes()
    with RowFileReader(tmp_path / "t1.row", schema("a BIGINT, s STRING")) as r:
        assert r.num_blocks > 500
    assert files[2] == files[1] and files[5] == files[1]


def _blocks(path, s):
    with RowFileReader(path, s) as r:
        return [bytes(r.block(b).data) for b in range(r.num_blocks)], r.block_index


def test_basic_read_write_block_layout(tmp_path):
    p = tmp_path / "b.row"
    s = _write(p, "a INT, b VARCHAR(100)", rows=[(1, "hello"), (2, "world"), (3, "paimon")])
    (block,), _ = _blocks(p, s)
    assert len(block) == 50
    assert block[:11] == bytes.fromhex("00" "01000000" "05") + b"hello"
    assert block[-16:] == struct.pack("<4i", 0, 11, 22, 3)


@pytest.mark.parametrize("block_size, rows, per_block, nblocks, full_size, last_rows, last_size", [
    (1024, 10000, 114, 88, 1030, 82, 742),     # testMultipleBlocks
    (512, 1000, 57, 18, 517, 31, None),        # testRowPositionTracking
    (256, 500, 28, 18, 256, None, None),       # testSelection: exactly 256 pins '>='
])
def test_flush_rule_matches_java(tmp_path, block_size, rows, per_block, nblocks, full_size,
                                 last_rows, last_size):
    p = tmp_path / "m.row"
    s = _write(p, "a INT", table=pa.table({"a": pa.array(np.arange(rows, dtype=np.int32))}),
               block_size=block_size)
    blocks, index = _blocks(p, s)
    assert len(blocks) == nblocks
    assert index.row_starts.tolist() == [per_block * i for i in range(nblocks)]
    assert all(len(b) == full_size for b in blocks[:-1])
    assert index.uncompressed_sizes.tolist() == [len(b) for b in blocks]
    if last_rows is not None:
        assert rows - index.row_starts[-1] == last_rows
    if last_size is not None:
        assert len(blocks[-1]) == last_size
    with RowFileReader(p, s) as r:
        assert r.read().column("a").to_numpy().tolist() == list(range(rows))


def test_selection_reads_only_the_blocks_it_needs(tmp_path):
    p = tmp_path / "sel.row"
    s = _write(p, "a INT", table=pa.table({"a": pa.array(np.arange(500, dtype=np.int32))}),
               block_size=256)
    with RowFileReader(p, s) as r:
        reads = []
        original = r._source.read
        r._source.read = lambda off, n: reads.append(off) or original(off, n)
        t = r.read(selection=[0, 10, 100, 499])
        assert t.column("a").to_pylist() == [0, 10, 100, 499]
        offsets = r.block_index.offsets
        assert sorted(reads) == [offsets[0], offsets[3], offsets[17]]


def _row_bytes(tmp_path, text, row):
    p = tmp_path / "one.row"
    s = _write(p, text, rows=[row])
    (block,), _ = _blocks(p, s)
    return block[:-8]  # one row: strip its offset and the count


def test_all_primitive_types_encoding(tmp_path):
    from decimal import Decimal
    text = ("bo BOOLEAN, ti TINYINT, sm SMALLINT, i INT, bi BIGINT, f FLOAT, d DOUBLE, s STRING, "
            "vb BYTES, dt DATE, d1 DECIMAL(10, 2), d2 DECIMAL(30, 10), ts3 TIMESTAMP(3), ts9 TIMESTAMP(9)")
    big = Decimal("12345678901234567890.1234567890")
    ts9 = np.datetime64(1700000000000 * 10**6 + 123456, "ns")
    row = (True, -128, -32768, -2**31, -2**63, -0.0, 1.7976931348623157e308, "", b"",
           __import__("datetime").date(2019, 4, 14), Decimal("-0.01"), big,
           __import__("datetime").datetime(1970, 1, 1), ts9)
    b = _row_bytes(tmp_path, text, row)
    unscaled = 123456789012345678901234567890  # big's unscaled value (scaleb would round at 28 digits)
    nbytes = (unscaled.bit_length() + 8) // 8
    expected = (bytes.fromhex("0000") + b"\x01" + b"\x80" + struct.pack("<h", -32768)
                + struct.pack("<i", -2**31) + struct.pack("<q", -2**63) + struct.pack("<f", -0.0)
                + struct.pack("<d", 1.7976931348623157e308) + b"\x00" + b"\x00"
                + struct.pack("<i", 18000) + struct.pack("<q", -1)
                + bytes([nbytes]) + unscaled.to_bytes(nbytes, "big", signed=True)
                + struct.pack("<q", 0) + struct.pack("<q", 1700000000000) + bytes.fromhex("c0c407"))
    assert b == expected


@pytest.mark.parametrize("value, hexbytes", [
    (0, "00"), (127, "7f"), (128, "0080"), (-1, "ff"), (-128, "80"), (-129, "ff7f"),
    (10**38 - 1, "4b3b4ca85a86c47a098a223fffffffff"),
    (-(10**38 - 1), "b4c4b357a5793b85f675ddc000000001"),
])
def test_big_decimal_minimal_bytes(tmp_path, value, hexbytes):
    from decimal import Decimal
    b = _row_bytes(tmp_path, "d DECIMAL(38, 0)", (Decimal(value),))
    assert b == bytes([0, len(hexbytes) // 2]) + bytes.fromhex(hexbytes)


def test_null_row_header_and_nulls(tmp_path):
    assert _row_bytes(tmp_path, "a INT, b STRING, c DOUBLE, d BOOLEAN, e BIGINT, f TIMESTAMP(9)",
                      (None,) * 6) == b"\x3f"


def test_many_columns_header(tmp_path):
    b = _row_bytes(tmp_path, ", ".join(f"c{i} INT" for i in range(100)), tuple([None] * 100))
    assert b == b"\xff" * 12 + b"\x0f"


def test_array_map_vector_blob_encodings(tmp_path):
    assert _row_bytes(tmp_path, "a ARRAY<INT>", ([1, None, 3, None, 5],)) == \
        bytes.fromhex("00" "05" "0a" "01000000" "03000000" "05000000")
    assert _row_bytes(tmp_path, "a ARRAY<INT>", ([],)) == bytes.fromhex("00" "00")
    assert _row_bytes(tmp_path, "a ARRAY<INT NOT NULL>", ([7],)) == bytes.fromhex("00" "01" "00" "07000000")
    assert _row_bytes(tmp_path, "m MAP<STRING, INT>", ([("a", 1), ("b", 2), ("c", None)],)) == \
        bytes.fromhex("00" "03" "00" "0161" "0162" "0163" "03" "04" "01000000" "02000000")
    assert _row_bytes(tmp_path, "m MAP<STRING, INT>", ([],)) == bytes.fromhex("00" "00" "00")
    assert _row_bytes(tmp_path, "b BLOB, v VECTOR<FLOAT, 4>", (b"\x0a\x14\x1e", [1, 2, 3, 4])) == \
        bytes.fromhex("00" "030a141e" "04") + struct.pack("<4f", 1, 2, 3, 4)
    assert _row_bytes(tmp_path, "b BLOB, v VECTOR<FLOAT, 4>", (None, None)) == b"\x03"
    assert _row_bytes(tmp_path, "ms MULTISET<STRING>", ([("x", 2)],)) == \
        bytes.fromhex("00" "01" "00" "0178" "01" "00" "02000000")
    assert _row_bytes(tmp_path, "v VARIANT", ({"value": b"\x01\x02", "metadata": b"\x03"},)) == \
        bytes.fromhex("00" "020102" "0103")
    assert _row_bytes(tmp_path, "r ROW<x INT, y STRING>", ({"x": None, "y": "z"},)) == \
        bytes.fromhex("00" "01" "017a")


def test_timestamp_nano_varint_for_every_precision_above_3(tmp_path):
    import datetime as dt
    t = dt.datetime(1969, 12, 31, 23, 59, 59, 999999)   # pre-1970: millis floor, nanos positive
    for p in (4, 5, 6):
        b = _row_bytes(tmp_path, f"t TIMESTAMP({p})", (t,))
        assert b == b"\x00" + struct.pack("<q", -1) + bytes.fromhex("d8fc3c")  # 999000 ns
    assert _row_bytes(tmp_path, "t TIMESTAMP(3)", (t.replace(microsecond=999000),)) == \
        b"\x00" + struct.pack("<q", -1)
