"""Fixtures shared by the .blob tests."""
import io
import struct
import zlib

import pytest

from rowformat.blob import BlobFileReader, BlobFileWriter


@pytest.fixture
def write_blob(tmp_path):
    """write_blob(blob_type, rows, **writer_options) -> the file's bytes."""
    counter = iter(range(1 << 30))

    def write(blob_type, rows, **kw):
        path = tmp_path / f"w{next(counter)}.blob"
        with BlobFileWriter(path, blob_type, **kw) as w:
            w.write_many(rows)
        return path.read_bytes()
    return write


@pytest.fixture
def read_blob():
    """read_blob(data, blob_type, **reader_options) -> a reader over bytes."""
    def read(data, blob_type, **kw):
        f = io.BytesIO(bytes(data))
        f.name = "mem.blob"
        return BlobFileReader(f, blob_type, **kw)
    return read


@pytest.fixture
def recrc():
    """recrc(data) -> data with the first entry's CRC recomputed after a test
    mutated its payload, so a structural check is what fails, not the CRC.
    The entry's extent comes from the row index, not the mutated bytes."""
    from rowformat import _blob

    def fix(data):
        data = bytearray(data)
        index_length, _ = struct.unpack_from("<iB", data, len(data) - 5)
        index = bytes(data[len(data) - 5 - index_length:len(data) - 5])
        length = int(_blob.decode(index)[0])
        struct.pack_into("<I", data, length - 4, zlib.crc32(bytes(data[:length - 4])))
        return bytes(data)
    return fix
