"""Malformed files: Paimon's BlobFileMetaTest (footer/index) and
BlobFileFormatTest (nested payloads) cases, plus the entry checks (magic,
stored length, CRC) this reader adds. Every error is a CorruptFileError
naming the file and, for entries, the row."""
import struct
import zlib

import pytest
from pyroaring import BitMap

from rowformat import _blob
from rowformat.blob import PLACEHOLDER
from rowformat.errors import CorruptFileError, RowFormatError
from rowformat.errors import RowIndexError


def blob_file(data: bytes, lengths, version=1, index_length=None) -> bytes:
    index = _blob.encode(lengths)
    n = len(index) if index_length is None else index_length
    return data + index + struct.pack("<iB", n, version)


# -- footer and index (BlobFileMetaTest) ---------------------------------------------------
@pytest.mark.parametrize("size", range(5))
def test_smaller_than_footer(size, read_blob):
    with pytest.raises(CorruptFileError, match=r"mem\.blob.*file size %d is smaller than the footer size 5" % size):
        read_blob(b"\x00" * size, "BLOB")


@pytest.mark.parametrize("data,match", [
    (struct.pack("<iB", -1, 1), r"invalid index length -1, expected a value in \[0, 0\]"),
    (struct.pack("<iB", 1, 1), r"invalid index length 1, expected a value in \[0, 0\]"),
    (struct.pack("<iB", 0, 2), "unsupported version 2, expected 1"),
    (b"\x80" + struct.pack("<iB", 1, 1), r"invalid index \(Unexpected end of input\)"),
])
def test_bad_footer_or_index(data, match, read_blob):
    with pytest.raises(CorruptFileError, match=match):
        read_blob(data, "BLOB")


def test_version_is_checked_before_index_length(read_blob):
    with pytest.raises(CorruptFileError, match="unsupported version 2"):
        read_blob(struct.pack("<iB", -1, 2), "BLOB")


@pytest.mark.parametrize("length", [-3, 0, 15])
def test_invalid_record_length(length, read_blob):
    with pytest.raises(CorruptFileError, match=f"invalid record length {length} at row 0"):
        read_blob(blob_file(b"\x00" * 16, [length]), "BLOB")


def test_record_exceeds_data_region(read_blob):
    with pytest.raises(CorruptFileError, match="record length 16 at row 0 .* exceeds the data region of 15"):
        read_blob(blob_file(b"\x00" * 15, [16]), "BLOB")


def test_trailing_data_region_bytes(read_blob):
    with pytest.raises(CorruptFileError, match="indexed records use 16 bytes, but the data region contains 17"):
        read_blob(blob_file(b"\x00" * 17, [16]), "BLOB")


def test_empty_file_has_no_records(read_blob):
    r = read_blob(blob_file(b"", []), "BLOB")
    assert r.num_rows == 0 and r.read().num_rows == 0


def test_sentinels_take_no_bytes(read_blob):
    r = read_blob(blob_file(b"\x00" * 16, [-1, 16, -2]), "BLOB", verify=False)
    assert r.num_rows == 3
    assert r.index.offsets.tolist() == [-1, 0, -1]
    assert r.get(0) is None and r.get(2) is PLACEHOLDER and r.get(1) == b""
    assert r.null_rows().tolist() == [0] and r.placeholder_rows().tolist() == [2]
    # The same zero bytes fail the entry checks this reader makes by default.
    with pytest.raises(CorruptFileError, match=r"mem\.blob: row 1 .*expected entry magic cf114e58, found 00000000"):
        read_blob(blob_file(b"\x00" * 16, [-1, 16, -2]), "BLOB").get(1)


@pytest.mark.parametrize("selection", [BitMap([0, 1]), BitMap([1]), [5], [-1]])
def test_selection_out_of_range(selection, read_blob, write_blob):
    r = read_blob(write_blob("BLOB", [b"x"]), "BLOB")
    with pytest.raises(RowIndexError):
        r.read(selection)


def test_selection_picks_rows(read_blob, write_blob):
    r = read_blob(write_blob("BLOB", [b"", b"", b""]), "BLOB")
    assert r.index.offsets.tolist() == [0, 16, 32]
    assert r.read(BitMap([0, 2])).column(0).to_pylist() == [b"", b""]
    assert r.read(BitMap()).num_rows == 0
    with pytest.raises(RowIndexError):
        r.get(3)


def test_negative_row_counts_from_end(read_blob, write_blob):
    r = read_blob(write_blob("BLOB", [b"a", b"b"]), "BLOB")
    assert r.get(-1) == b"b"


# -- entry checks -----------------------------------------------------------------------------
RAW = bytes.fromhex("cf114e58696e6c696e6516000000000000002960c8e9cf114e5864657363726970746f721a"
                    "000000000000003f69146b2c0835010400000001")


def test_flipped_payload_byte_fails_crc(read_blob):
    bad = bytearray(RAW)
    bad[22 + 4] ^= 0x01        # row 1's first payload byte
    r = read_blob(bad, "BLOB")
    assert r.get(0) == b"inline"
    with pytest.raises(CorruptFileError, match=r"mem\.blob: row 1 \(entry at offset 22, 26 bytes\): CRC32 mismatch: stored 0x6b14693f"):
        r.get(1)
    with pytest.raises(CorruptFileError, match="row 1"):
        r.read()
    assert read_blob(bad, "BLOB", verify=False).get(1) == b"eescriptor"


def test_wrong_magic_and_stored_length(read_blob, recrc):
    bad = bytearray(RAW)
    bad[0] = 0
    with pytest.raises(CorruptFileError, match="row 0 .*expected entry magic cf114e58, found 00114e58"):
        read_blob(bad, "BLOB").get(0)
    bad = bytearray(RAW)
    bad[10] = 23               # the stored length of row 0 (index says 22)
    with pytest.raises(CorruptFileError, match="row 0 .*stores length 23, the index says 22"):
        read_blob(recrc(bad), "BLOB").get(0)


def _legacy(data: bytes) -> bytes:
    """Row 0's CRC as pypaimon before 2.1.0 wrote it: without the length field."""
    data = bytearray(data)
    (length,) = struct.unpack_from("<q", data, len_at := (int(_blob.decode(data[-5 - data[-5]:-5])[0]) - 12))
    struct.pack_into("<I", data, length - 4, zlib.crc32(bytes(data[:len_at])))
    return bytes(data)


@pytest.mark.parametrize("blob_type,rows", [("BLOB", [b"legacy"]), ("ARRAY<BLOB>", [[b"a", None]])])
def test_legacy_pypaimon_crc(blob_type, rows, read_blob, write_blob):
    old = _legacy(write_blob(blob_type, rows))
    with pytest.raises(CorruptFileError, match="CRC32 mismatch"):
        read_blob(old, blob_type).get(0)
    assert read_blob(old, blob_type, legacy_crc=True).get(0) == rows[0]
    assert read_blob(old, blob_type, verify=False).get(0) == rows[0]


def test_legacy_crc_is_not_accepted_for_map(read_blob, write_blob):
    old = _legacy(write_blob("MAP<STRING, BLOB>", [{"k": b"v"}]))   # MAP CRCs were always right
    with pytest.raises(CorruptFileError, match=r"CRC32 mismatch: stored 0x[0-9a-f]{8}, computed 0x[0-9a-f]{8}$"):
        read_blob(old, "MAP<STRING, BLOB>", legacy_crc=True).get(0)


# -- ARRAY<BLOB> payloads (BlobFileFormatTest) -----------------------------------------------
ARRAY_A = bytes.fromhex("cf114e584243424101010000006102010000001f00000000000000370860203e0100000001")


def _patch(data, at, new):
    data = bytearray(data)
    data[at:at + len(new)] = new
    return bytes(data)


@pytest.mark.parametrize("at,new,match", [
    (8, b"\x00", "Unsupported ARRAY<BLOB> payload version 0"),
    (9, b"\xff\xff\xff\xff", "Invalid ARRAY<BLOB> entry count -1"),
    (15, b"\xff\xff\xff\xff", r"Invalid ARRAY<BLOB> element index length -1: expected a value in \[0, 2\]"),
    (14, b"\x03", "Invalid ARRAY<BLOB> element length -2 at entry 0"),
    (14, b"\x04", "ARRAY<BLOB> element lengths exceed the payload data length 1"),
    (4, b"XCBA", "Invalid ARRAY<BLOB> payload magic number"),
    (9, b"\x02\x00\x00\x00", "Invalid ARRAY<BLOB> element count 2: the element index has only 1 bytes"),
    (14, b"\x00", "ARRAY<BLOB> element lengths use 0 bytes, but the data area holds 1"),
])
def test_malformed_array(at, new, match, read_blob, recrc):
    data = recrc(_patch(ARRAY_A, at, new))
    for r in (read_blob(data, "ARRAY<BLOB>"), read_blob(data, "ARRAY<BLOB>", verify=False)):
        with pytest.raises(CorruptFileError, match=r"mem\.blob: row 0 .*" + match):
            r.get(0)
        with pytest.raises(CorruptFileError, match=match):
            r.open(0, 0)


def test_array_payload_shorter_than_header(read_blob, write_blob):
    # A 12-byte payload (entry 28) cannot hold the 13-byte ARRAY framing.
    data = blob_file(b"\x00" * 28, [28])
    with pytest.raises(CorruptFileError, match="Invalid ARRAY<BLOB> payload length 12: expected at least 13"):
        read_blob(data, "ARRAY<BLOB>", verify=False).get(0)


# -- MAP<K, BLOB> payloads --------------------------------------------------------------------
MAP_A = bytes.fromhex("cf114e584243424d0101000000616102020100000001000000250000000000000090bf06a64a0100000001")
MAP_INT = bytes.fromhex("cf114e584243424d01010000000700000061080201000000010000002800000000000000764bf5e0500100000001")
MAP_AB = bytes.fromhex("cf114e584243424d0102000000616278797a0200020202000000020000002a0000000000000029d24194540100000001")


@pytest.mark.parametrize("at,new,match", [
    (8, b"\x02", "Unsupported MAP<X, BLOB> payload version 2"),
    (4, b"\x00", "Invalid MAP<X, BLOB> payload magic number"),
    (9, b"\xff\xff\xff\xff", "Invalid MAP<X, BLOB> entry count -1"),
    (21, b"\xff\xff\xff\xff", r"Invalid MAP<X, BLOB> value index length -1"),
    (17, b"\xff\xff\xff\xff", r"Invalid MAP<X, BLOB> key index length -1"),
    (17, b"\x03\x00\x00\x00\x03\x00\x00\x00", "indexes exceed the payload length"),
    (9, b"\x00\x00\x00\x00", "entry count 0 does not match key index length"),
    (15, b"\x03", "Invalid MAP<X, BLOB> key length -2 at entry 0"),
    (16, b"\x03", "Invalid MAP<X, BLOB> value length -2 at entry 0"),
    (15, b"\x00", "trailing data"),
    (16, b"\x06", "MAP<X, BLOB> value lengths exceed the payload data length 1"),
])
def test_malformed_map(at, new, match, read_blob, recrc):
    data = recrc(_patch(MAP_A, at, new))
    r = read_blob(data, "MAP<STRING, BLOB>")
    with pytest.raises(CorruptFileError, match=r"mem\.blob: row 0 .*" + match):
        r.get(0)
    with pytest.raises(CorruptFileError, match=match):
        r.descriptor(0, "a")


def test_map_fixed_width_key_length(read_blob, recrc):
    data = recrc(_patch(MAP_INT, 18, b"\x06"))     # INT key declared 3 bytes
    with pytest.raises(CorruptFileError, match="Invalid MAP<X, BLOB> key fixed-width key length 3 at entry 0: expected 4"):
        read_blob(data, "MAP<INT, BLOB>").get(0)


@pytest.mark.parametrize("blob_type", ["MAP<STRING, BLOB>", "MAP<BYTES, BLOB>"])
def test_duplicate_key_on_read(blob_type, read_blob, recrc):
    data = recrc(_patch(MAP_AB, 14, b"a"))          # keys "ab" -> "aa"
    r = read_blob(data, blob_type)
    with pytest.raises(CorruptFileError, match="row 0 .*duplicate key"):
        r.get(0)
    with pytest.raises(CorruptFileError, match="duplicate key"):      # descriptor mode too
        r.descriptor(0, "a" if "STRING" in blob_type else b"a")
    with pytest.raises(CorruptFileError, match="duplicate key"):
        r.read()


@pytest.mark.parametrize("blob_type,key_bytes,match", [
    ("MAP<BOOLEAN, BLOB>", b"\x02", "BOOLEAN key byte must be 0 or 1, found 2"),
    ("MAP<STRING, BLOB>", b"\xff", "key is not UTF-8"),
])
def test_undecodable_key(blob_type, key_bytes, match, read_blob, recrc):
    data = recrc(_patch(MAP_A, 13, key_bytes))
    with pytest.raises(CorruptFileError, match="Invalid MAP<X, BLOB> key at entry 0: .*" + match):
        read_blob(data, blob_type).get(0)


def test_every_error_is_a_rowformat_error():
    assert issubclass(CorruptFileError, RowFormatError)
