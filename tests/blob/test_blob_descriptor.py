"""Blob descriptors v1 and v2 (Paimon's BlobDescriptorTest and its v1 fixture)."""
import pytest

from rowformat.blob import BlobDescriptor, BlobDescriptorError, BlobFileWriter, is_blob_descriptor

V1 = bytes.fromhex("010a0000002f746573742f706174686400000000000000c800000000000000")
V2 = bytes.fromhex("0243534544424f4c420a0000002f746573742f706174686400000000000000c800000000000000")


def test_v1_fixture_parses_and_reserializes_as_v2():
    d = BlobDescriptor.deserialize(V1)
    assert (d.uri, d.offset, d.length, d.version) == ("/test/path", 100, 200, 1)
    assert d.serialize() == V2
    assert d.serialize(version=1) == V1


def test_v2_round_trip_and_detection():
    d = BlobDescriptor("/test/path", 100, 200)
    assert d.serialize() == V2 and BlobDescriptor.deserialize(V2) == d
    assert BlobDescriptor.deserialize(V2 + b"trailing") == d
    assert is_blob_descriptor(V2) and not is_blob_descriptor(V1) and not is_blob_descriptor(b"\x02")
    assert len(BlobDescriptor("\u00e9", 0, -1).serialize()) == 29 + 2


@pytest.mark.parametrize("data,match", [
    (b"\x03" + V2[1:], "version to be less than or equal to 2, but found 3"),
    (V2[:9], "too short"),
    (b"", "empty"),
    (V2[:9] + b"\xff\xff\xff\xff" + V2[13:], "negative uri length -1"),
    (V2[:9] + b"\x00\x01\x00\x00" + V2[13:], "uri length 256 exceeds the 26 bytes left"),
    (V2[:-1], "expected 16 bytes of offset and length after the uri, found 15"),
    (V2[:23], "found 0"),
    (b"\x01\x00\x01\x00\x00" + V1[5:], "v1: uri length 256 exceeds"),
    (b"\x02XXXXXXXX" + V2[9:], "expected magic"),
    (V2[:-8] + b"\xfe" * 8, r"length -72340172838076674 outside \[-1, 2\^63\)"),
])
def test_malformed(data, match):
    with pytest.raises(BlobDescriptorError, match=match):
        BlobDescriptor.deserialize(data)


def test_open_reads_exactly_the_range(tmp_path):
    src = tmp_path / "src.bin"
    src.write_bytes(b"0123456789")
    with BlobDescriptor(str(src), 2, 5).open() as f:
        assert f.read() == b"23456" and f.read() == b""
    with BlobDescriptor("file://" + str(src), 7, -1).open() as f:
        assert f.read() == b"789"
    with pytest.raises(BlobDescriptorError, match="passes the end"):
        BlobDescriptor(str(src), 8, 5).open()
    with pytest.raises(BlobDescriptorError, match="only local files"):
        BlobDescriptor("s3://bucket/key", 0, 1).open()


def test_writer_copies_descriptor_bytes(tmp_path, read_blob):
    src = tmp_path / "src.bin"
    src.write_bytes(b"0123456789")
    path = tmp_path / "d.blob"
    with BlobFileWriter(path, "ARRAY<BLOB>") as w:
        w.write([BlobDescriptor(str(src), 2, 3), BlobDescriptor(str(src), 8, -1)])
    assert read_blob(path.read_bytes(), "ARRAY<BLOB>").get(0) == [b"234", b"89"]
