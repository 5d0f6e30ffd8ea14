"""MAP<K, BLOB> key encodings: BlobFileFormatTest's byte vectors for every
supported key type, their round trip, and the rejected types and values."""
import datetime
import struct
from decimal import Decimal

import pytest

from rowformat.blob import BlobFileWriter
from rowformat.errors import SchemaError, ValueConversionError

KEYS = [
    ("TINYINT", 1, "01"),
    ("SMALLINT", 2, "0200"),
    ("INT", 3, "03000000"),
    ("BIGINT", 4, "0400000000000000"),
    ("BOOLEAN", True, "01"),
    ("BOOLEAN", False, "00"),
    ("DECIMAL(10, 2)", Decimal("12.34"), "d204000000000000"),
    ("DECIMAL(20, 2)", Decimal("123456789012345678.90"), "00ab54a98ceb1f0ad2"),
    ("DECIMAL(20, 2)", Decimal("-1.28"), "80"),          # minimal two's complement
    ("DECIMAL(38, 0)", Decimal(0), "00"),
    ("DATE", datetime.date(1969, 12, 31), "ffffffff"),
    ("TIME(3)", datetime.time(12, 34, 56, 789000), "952cb302"),
    ("BINARY(4)", b"\x00\xff", "00ff"),
    ("VARBINARY(8)", b"", ""),
    ("BYTES", b"\x01\x02\x03", "010203"),
    ("CHAR(4)", "char", "63686172"),
    ("VARCHAR(7)", "varchar", "76617263686172"),
    ("STRING", "\u00e9", "c3a9"),
]


@pytest.mark.parametrize("key_type,key,hexkey", KEYS, ids=[f"{k[0]}={k[1]!r}" for k in KEYS])
def test_key_bytes_and_round_trip(key_type, key, hexkey, write_blob, read_blob):
    blob_type = f"MAP<{key_type}, BLOB>"
    data = write_blob(blob_type, [{key: b"v"}])
    key_bytes = bytes.fromhex(hexkey)
    # Entry magic 4 + map header 9, then the key, then the value.
    assert data[13:13 + len(key_bytes) + 1] == key_bytes + b"v"
    r = read_blob(data, blob_type)
    (got,) = r.get(0).items()
    assert got == (key, b"v") and type(got[0]) is type(key)
    assert r.read().column(0).to_pylist() == [[(key, b"v")]]


def test_time_key_truncates_microseconds(write_blob, read_blob):
    data = write_blob("MAP<TIME(6), BLOB>", [{datetime.time(0, 0, 0, 1999): b"v"}])
    assert data[13:17] == struct.pack("<i", 1)
    assert read_blob(data, "MAP<TIME(6), BLOB>").get(0) == {datetime.time(0, 0, 0, 1000): b"v"}


@pytest.mark.parametrize("blob_type", ["MAP<FLOAT, BLOB>", "MAP<DOUBLE, BLOB>", "MAP<TIMESTAMP(3), BLOB>",
                                       "MAP<ARRAY<INT>, BLOB>", "MAP<INT, INT>", "MAP<INT, BYTES>",
                                       "ARRAY<INT>", "INT", "ARRAY<ARRAY<BLOB>>"])
def test_unsupported_types(blob_type, tmp_path):
    with pytest.raises(SchemaError):
        BlobFileWriter(tmp_path / "x.blob", blob_type)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("key_type,key", [
    ("TINYINT", 128), ("INT", "1"), ("INT", True), ("BOOLEAN", 1), ("DATE", datetime.datetime(2020, 1, 1)),
    ("DECIMAL(4, 2)", Decimal("100.00")), ("DECIMAL(4, 2)", Decimal("1.234")), ("STRING", b"x"),
    ("BYTES", "x"), ("TIME(3)", 5),
])
def test_bad_key_values(key_type, key, tmp_path):
    with BlobFileWriter(tmp_path / "x.blob", f"MAP<{key_type}, BLOB>") as w:
        with pytest.raises(ValueConversionError, match="row 0"):
            w.write({key: b"v"})
        w.write({})        # a rejected row leaves the writer usable
    assert w.num_rows == 1


@pytest.mark.parametrize("blob_type,pairs", [
    ("MAP<STRING, BLOB>", [("a", b"1"), ("a", b"2")]),
    ("MAP<BYTES, BLOB>", [(b"k", b"1"), (b"k", None)]),
    ("MAP<TIME(6), BLOB>", [(datetime.time(0, 0, 0, 1000), b"1"), (datetime.time(0, 0, 0, 1500), b"2")]),
    ("MAP<INT, BLOB>", [(None, b"1"), (None, b"2")]),
])
def test_duplicate_keys_rejected_on_write(blob_type, pairs, tmp_path):
    with BlobFileWriter(tmp_path / "x.blob", blob_type) as w:
        with pytest.raises(ValueConversionError, match="keys must be unique"):
            w.write(pairs)
    assert w.num_rows == 0


def test_null_key_and_values_round_trip(write_blob, read_blob):
    rows = [{None: b"n", 1: None, 2: b""}]
    r = read_blob(write_blob("MAP<INT, BLOB>", rows), "MAP<INT, BLOB>")
    assert r.get(0) == rows[0]
    with pytest.raises(ValueConversionError, match="row 0: a MAP<X, BLOB> with a null key"):
        r.read()
