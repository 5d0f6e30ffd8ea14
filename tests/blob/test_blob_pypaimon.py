"""pypaimon 2.1.0's blob writer and reader against ours, both directions:
the same rows give the same bytes, and each reads the other's files."""
import datetime
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tests._deps import importorskip_pypaimon

importorskip_pypaimon()
from pypaimon.filesystem.local_file_io import LocalFileIO  # noqa: E402
from pypaimon.read.reader.format_blob_reader import FormatBlobReader  # noqa: E402
from pypaimon.schema.data_types import (  # noqa: E402
    ArrayType, AtomicType, DataField, DataTypeParser, MapType)
from pypaimon.table.row.blob import Blob  # noqa: E402
from pypaimon.write.blob_format_writer import BlobFormatWriter  # noqa: E402

from rowformat.blob import PLACEHOLDER, BlobFileReader, BlobFileWriter  # noqa: E402


def paimon_type(blob_type: str):
    if blob_type == "BLOB":
        return AtomicType("BLOB")
    if blob_type == "ARRAY<BLOB>":
        return ArrayType(True, AtomicType("BLOB"))
    key = blob_type[len("MAP<"):blob_type.rindex(",")]
    return MapType(True, DataTypeParser.parse_atomic_type_sql_string(key), AtomicType("BLOB"))


_PLACEHOLDERS = {"BLOB": Blob.PLACE_HOLDER, "ARRAY<BLOB>": Blob.ARRAY_PLACE_HOLDER}


def to_paimon(blob_type, v):
    if v is PLACEHOLDER:
        return _PLACEHOLDERS.get(blob_type, Blob.MAP_PLACE_HOLDER)
    return v


def from_paimon(v):
    if v is None:
        return None
    if v is Blob.PLACE_HOLDER or v is Blob.ARRAY_PLACE_HOLDER or v is Blob.MAP_PLACE_HOLDER:
        return PLACEHOLDER
    if isinstance(v, list):
        return [from_paimon(e) for e in v]
    if isinstance(v, dict):
        return {k: from_paimon(e) for k, e in v.items()}
    assert isinstance(v, Blob)
    return v.to_data()


def paimon_write(path, blob_type, rows):
    fields = [DataField(0, "b", paimon_type(blob_type))]
    w = BlobFormatWriter(open(path, "wb"))
    for v in rows:
        w.write_value(to_paimon(blob_type, v), fields)
    w.close()


def paimon_read(path, blob_type):
    fields = [DataField(0, "b", paimon_type(blob_type))]
    r = FormatBlobReader(LocalFileIO(), str(path), ["b"], fields, None, False)
    try:
        return [from_paimon(v) for v in r.read_values_at(list(range(r.record_count)))]
    finally:
        r.close()


CASES = [
    ("BLOB", [b"hello", None, PLACEHOLDER, b"", bytes(range(256)) * 40]),
    ("ARRAY<BLOB>", [[b"a", None, b""], [], None, PLACEHOLDER, [b"x" * 5000]]),
    ("MAP<STRING, BLOB>", [{"a": b"1", "": None, None: b"n"}, {}, None, PLACEHOLDER]),
    ("MAP<TINYINT, BLOB>", [{-128: b"lo", 127: b"hi"}]),
    ("MAP<SMALLINT, BLOB>", [{-2: b"x"}]),
    ("MAP<INT, BLOB>", [{7: b"a", -1: None}]),
    ("MAP<BIGINT, BLOB>", [{-(1 << 63): b"min", (1 << 63) - 1: b"max"}]),
    ("MAP<BOOLEAN, BLOB>", [{True: b"t", False: b"f"}]),
    ("MAP<DECIMAL(10, 2), BLOB>", [{Decimal("12.34"): b"d", Decimal("-0.01"): b"e"}]),
    ("MAP<DECIMAL(20, 2), BLOB>", [{Decimal("123456789012345678.90"): b"d", Decimal("-1.28"): b"e",
                                    Decimal("0.00"): b"z"}]),
    ("MAP<DATE, BLOB>", [{datetime.date(1969, 12, 31): b"a", datetime.date(2024, 2, 29): b"b"}]),
    ("MAP<TIME(3), BLOB>", [{datetime.time(12, 34, 56, 789000): b"t"}]),
    ("MAP<BINARY(4), BLOB>", [{b"\x00\xff": b"b", b"": b"e"}]),
    ("MAP<VARBINARY(8), BLOB>", [{b"": b"e"}]),
    ("MAP<BYTES, BLOB>", [{b"\x01\x02\x03": b"b"}]),
    ("MAP<CHAR(4), BLOB>", [{"char": b"c"}]),
    ("MAP<VARCHAR(7), BLOB>", [{"varchar": b"v", "\u00e9": b"u"}]),
]


@pytest.mark.parametrize("blob_type,rows", CASES, ids=[c[0] for c in CASES])
def test_same_bytes_and_cross_reads(blob_type, rows, tmp_path):
    ours, theirs = tmp_path / "ours.blob", tmp_path / "theirs.blob"
    with BlobFileWriter(ours, blob_type) as w:
        w.write_many(rows)
    paimon_write(theirs, blob_type, rows)
    assert ours.read_bytes() == theirs.read_bytes()
    assert paimon_read(ours, blob_type) == rows
    with BlobFileReader(theirs, blob_type) as r:
        assert [r.get(i) for i in range(r.num_rows)] == rows


def test_pypaimon_reads_our_streamed_blob(tmp_path):
    import io
    payload = bytes(range(256)) * 4096          # 1 MiB through a file object
    path = tmp_path / "s.blob"
    with BlobFileWriter(path, "BLOB", chunk_size=10_000) as w:
        w.write(io.BytesIO(payload))
        w.write(None)
    assert paimon_read(path, "BLOB") == [payload, None]


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.none() | st.just(PLACEHOLDER) | st.lists(st.none() | st.binary(max_size=30),
                                                                   max_size=4), max_size=6))
def test_array_rows_match_pypaimon_bytes(rows, tmp_path):
    ours, theirs = tmp_path / "o.blob", tmp_path / "t.blob"
    with BlobFileWriter(ours, "ARRAY<BLOB>") as w:
        w.write_many(rows)
    paimon_write(theirs, "ARRAY<BLOB>", rows)
    assert ours.read_bytes() == theirs.read_bytes()
