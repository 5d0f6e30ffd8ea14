"""The storage layer without a server: URLs through fsspec (its memory
filesystem), pyarrow filesystems passed in, settings, and range coalescing.
Against a real S3-protocol server: tests/io/test_object_store.py."""
import uuid

import pyarrow as pa
import pytest

import rowformat
from rowformat.io import urls

fsspec = pytest.importorskip("fsspec")

SCHEMA = "id BIGINT NOT NULL, name STRING, tags ARRAY<INT>"


def _table(n):
    return pa.table({
        "id": pa.array(range(n), pa.int64()),
        "name": [f"name-{i}" if i % 7 else None for i in range(n)],
        "tags": [[i, i + 1] if i % 3 else [] for i in range(n)],
    })


@pytest.fixture
def url():
    base = f"memory://rowformat-test-{uuid.uuid4().hex}"
    yield base
    mem = fsspec.filesystem("memory")
    if mem.exists(base):
        mem.rm(base, recursive=True)


def test_is_url():
    assert urls.is_url("s3://bucket/key.row")
    assert urls.is_url("memory://x/y.row")
    assert urls.is_url("file:///tmp/x.row")
    assert not urls.is_url("/tmp/x.row")
    assert not urls.is_url("C:\\data\\x.row")
    assert not urls.is_url("C://data/x.row")      # a one-letter scheme is a drive
    assert not urls.is_url(b"memory://x")


def test_row_file_round_trip_through_memory_url(url, tmp_path):
    table = _table(5000)
    path = f"{url}/data/part-0.row"
    with rowformat.RowFileWriter(path, SCHEMA, block_size=4096) as w:
        w.write(table)
    mem = fsspec.filesystem("memory")
    assert mem.exists(path)
    # The uploaded bytes are exactly what a local writer makes.
    local = tmp_path / "part-0.row"
    with rowformat.RowFileWriter(local, SCHEMA, block_size=4096) as w:
        w.write(table)
    with fsspec.open(path, "rb") as f:
        assert f.read() == local.read_bytes()
    with rowformat.RowFileReader(path, SCHEMA, threads=2) as r:
        assert r.name == path
        assert r.num_rows == 5000 and r.num_blocks > 1
        assert r.read().equals(table.cast(r.arrow_schema))
        assert r.get(4999) == (4999, "name-4999", [4999, 5000])
        assert r.take([17, 3]).column("id").to_pylist() == [17, 3]


def test_closed_remote_reader_refuses_reads(url):
    path = f"{url}/x.row"
    with rowformat.RowFileWriter(path, SCHEMA) as w:
        w.write(_table(10))
    r = rowformat.RowFileReader(path, SCHEMA, cache_bytes=0)
    remote = r._source.remote
    r.close()
    with pytest.raises(ValueError, match="closed"):
        r.get(0)
    with pytest.raises(ValueError, match="closed"):
        remote.read_at(0, 4)


def test_failed_write_uploads_nothing(url):
    path = f"{url}/failed.row"
    with pytest.raises(RuntimeError):
        with rowformat.RowFileWriter(path, SCHEMA) as w:
            w.write(_table(10))
            raise RuntimeError("boom")
    assert not fsspec.filesystem("memory").exists(path)


def test_missing_url_raises_file_not_found(url):
    with pytest.raises(FileNotFoundError):
        rowformat.RowFileReader(f"{url}/nope.row", SCHEMA)


def test_corrupt_remote_file_names_the_url(url):
    path = f"{url}/bad.row"
    with fsspec.open(path, "wb") as f:
        f.write(b"\0" * 40)
    with pytest.raises(rowformat.CorruptFileError, match="memory://.*bad.row"):
        rowformat.RowFileReader(path, SCHEMA)


def test_blob_file_round_trip_through_memory_url(url):
    path = f"{url}/data/blob-0.blob"
    values = [b"x" * 100, None, b"", b"hello"]
    with rowformat.BlobFileWriter(path, "BLOB") as w:
        w.write_many(values)
    with rowformat.BlobFileReader(path, "BLOB") as r:
        assert [r.get(i) for i in range(len(values))] == values
