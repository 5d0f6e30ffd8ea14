"""Bare .row and .blob files on a real S3-protocol server (moto, on loopback:
the ``s3`` fixture), every request and byte counted from the server's log:
the I/O the format allows and nothing more."""
import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pytest

import rowformat
from rowformat.io import failures, fileio, ranges, settings, uploads, urls

SCHEMA = "id BIGINT NOT NULL, name STRING, v DOUBLE"
ROWS = 60_000


def _table(n, start=0):
    ids = np.arange(start, start + n)
    return pa.table({"id": pa.array(ids, pa.int64()),
                     "name": [f"name-{i}" if i % 11 else None for i in ids.tolist()],
                     "v": ids * 0.25})


@pytest.fixture
def row_url(s3, tmp_path):
    """A .row file of ROWS rows in small blocks on the server, and the same
    bytes written locally; the log cleared."""
    url = s3.url("d/x.row")
    with rowformat.RowFileWriter(url, SCHEMA, block_size=8192) as w:
        w.write(_table(ROWS))
    local = tmp_path / "x.row"
    with rowformat.RowFileWriter(local, SCHEMA, block_size=8192) as w:
        w.write(_table(ROWS))
    s3.server.clear_log()
    return url, local


def _gets(log):
    return [r for r in log if r.method == "GET"]


def _sent(log):
    return sum(r.sent for r in log)


def test_written_object_is_the_local_writers_bytes(s3, row_url):
    url, local = row_url
    fs = pafs.S3FileSystem(**s3.storage_options())
    with fs.open_input_stream(url[5:]) as f:
        assert f.read() == local.read_bytes()


def test_open_reads_the_tail_once(s3, row_url):
    url, local = row_url
    with rowformat.RowFileReader(url, SCHEMA) as r:
        assert r.num_rows == ROWS
        log = s3.log()
    size = local.stat().st_size
    assert [r.method for r in log] == ["HEAD", "GET"]
    first, last = log[1].range
    assert last == size - 1 and log[1].sent == min(size, 65536)


def test_get_is_one_ranged_request_of_its_block(s3, row_url):
    url, _ = row_url
    with rowformat.RowFileReader(url, SCHEMA, cache_bytes=0) as r:
        sizes, offsets = r.block_index.compressed_sizes, r.block_index.offsets
        for i in (0, 12_345, ROWS - 1):
            s3.server.clear_log()
            assert r.get(i) == (i, f"name-{i}" if i % 11 else None, i * 0.25)
            b = int(r._block_of(np.array([i]))[0])
            (req,) = s3.log()
            assert req.method == "GET" and req.sent == int(sizes[b])
            assert req.range == (int(offsets[b]), int(offsets[b]) + int(sizes[b]) - 1)


@pytest.mark.parametrize("n", [100, 1000])
def test_take_reads_only_the_touched_blocks_concurrently(s3, row_url, n):
    url, local = row_url
    rows = np.random.default_rng(n).integers(0, ROWS, n)
    with rowformat.RowFileReader(url, SCHEMA, cache_bytes=0) as r, \
            rowformat.RowFileReader(local, SCHEMA) as lr:
        s3.server.clear_log()
        got = r.take(rows)
        assert got.equals(lr.take(rows))
        blocks = np.unique(r._block_of(rows))
        touched = int(r.block_index.compressed_sizes[blocks].sum())
    log = s3.log()
    assert all(req.method == "GET" for req in log)
    assert touched <= _sent(log) <= 1.1 * touched
    assert len(log) <= len(blocks)      # neighbours merged, never a block twice
    starts = sorted(req.range[0] for req in log)
    assert len(set(starts)) == len(starts)


def test_scans_read_each_byte_once(s3, row_url):
    url, local = row_url
    size = local.stat().st_size
    with rowformat.RowFileReader(url, SCHEMA, threads=2) as r, \
            rowformat.RowFileReader(local, SCHEMA) as lr:
        s3.server.clear_log()
        assert r.read().equals(lr.read())
        scan = s3.log()
        s3.server.clear_log()
        batches = list(r.iter_batches(columns=["id"], batch_size=4096))
        assert pa.Table.from_batches(batches).equals(lr.read(columns=["id"]))
        stream = s3.log()
        s3.server.clear_log()
        part = r.read(selection=range(10_000, 20_000))
        assert part.equals(lr.read(selection=range(10_000, 20_000)))
        ranged = s3.log()
    data = int(r.block_index.compressed_sizes.sum())
    for log in (scan, stream):
        assert _sent(log) == data           # the blocks, each byte once
        spans = sorted(req.range for req in log)
        assert all(a[1] < b[0] for a, b in zip(spans, spans[1:]))
    assert len(scan) < r.num_blocks / 10    # large ranges, not a request per block
    assert _sent(ranged) < data / 3


def test_abandoned_scan_stops_reading(s3, row_url):
    url, _ = row_url
    with rowformat.RowFileReader(url, SCHEMA) as r:
        s3.server.clear_log()
        it = r.iter_batches(batch_size=1024)
        next(it)
        it.close()
    data = int(r.block_index.compressed_sizes.sum())
    assert _sent(s3.log()) < data


def test_read_metadata_and_verify_through_a_url(s3, row_url):
    url, local = row_url
    meta = rowformat.read_metadata(url)
    assert meta.name == url and meta.size == local.stat().st_size
    assert meta.footer == rowformat.read_metadata(local).footer
    assert rowformat.verify(url, SCHEMA).ok


def test_storage_options_and_filesystem_instead_of_the_environment(s3, row_url, monkeypatch):
    url, _ = row_url
    for name in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name, raising=False)
    opts = s3.storage_options()
    with rowformat.RowFileReader(url, SCHEMA, storage_options=opts) as r:
        assert r.get(7)[0] == 7
    catalog = s3.catalog_options()         # Paimon's names: s3.endpoint, s3.access-key, ...
    with rowformat.RowFileReader(url, SCHEMA, storage_options=catalog) as r:
        assert r.get(8)[0] == 8
    fs = pafs.S3FileSystem(**opts)
    with rowformat.RowFileReader(url[5:], SCHEMA, filesystem=fs) as r:
        assert r.get(9)[0] == 9
    with rowformat.RowFileWriter(s3.url("d/y.row"), SCHEMA, storage_options=opts) as w:
        w.write(_table(10))
    with pytest.raises(ValueError, match="'endpoint_overide' is not an S3 setting"):
        rowformat.RowFileReader(url, SCHEMA, storage_options={"endpoint_overide": "x"})


BIG = "id BIGINT NOT NULL, payload BYTES"


def _incompressible(n, start=0):
    """n rows of 100 random bytes each: ZSTD leaves them as they are."""
    data = np.random.default_rng(start).integers(0, 256, n * 100, np.uint8).tobytes()
    return pa.table({"id": pa.array(range(start, start + n), pa.int64()),
                     "payload": [data[i * 100:(i + 1) * 100] for i in range(n)]})


def test_big_write_is_a_streamed_multipart_upload(s3, monkeypatch):
    monkeypatch.setattr(uploads, "PART_SIZE", 5 << 20)     # S3's smallest part
    url = s3.url("big.row")
    n = 120_000         # 12 MB
    with rowformat.RowFileWriter(url, BIG) as w:
        for start in range(0, n, 20_000):
            w.write(_incompressible(20_000, start))
    log = s3.log()
    assert [r.method for r in log][:1] == ["POST"] and "uploads" in log[0].query
    parts = {int(r.query.split("partNumber=")[1].split("&")[0]): r.received
             for r in log if r.method == "PUT" and "partNumber" in r.query}
    assert sorted(parts) == list(range(1, len(parts) + 1)) and len(parts) >= 2
    assert all(parts[k] == 5 << 20 for k in range(1, len(parts)))
    with rowformat.RowFileReader(url, BIG) as r:
        assert r.num_rows == n
        want = pa.concat_tables(_incompressible(20_000, start) for start in range(0, n, 20_000))
        assert r.read().equals(want.cast(r.arrow_schema))


def test_failed_write_leaves_no_object_and_no_upload(s3, monkeypatch):
    import boto3
    monkeypatch.setattr(uploads, "PART_SIZE", 5 << 20)
    url = s3.url("failed.row")
    with pytest.raises(RuntimeError, match="boom"):
        with rowformat.RowFileWriter(url, BIG) as w:
            for start in range(0, 120_000, 20_000):
                w.write(_incompressible(20_000, start))
            raise RuntimeError("boom")
    client = boto3.client("s3")
    assert "Contents" not in client.list_objects_v2(Bucket=s3.bucket)
    assert not client.list_multipart_uploads(Bucket=s3.bucket).get("Uploads")
    assert any(r.method == "DELETE" and "uploadId" in r.query for r in s3.log())


def test_blob_file_through_a_url(s3):
    url = s3.url("b/x.blob")
    values = [b"x" * 100_000, None, b"", b"hello"]
    with rowformat.BlobFileWriter(url, "BLOB") as w:
        w.write_many(values)
    with rowformat.BlobFileReader(url, "BLOB") as r:
        assert [r.get(i) for i in range(len(values))] == values


def test_missing_object_and_bucket_are_named(s3):
    with pytest.raises(rowformat.StorageNotFoundError, match=f"s3://{s3.bucket}/nope.row") as e:
        rowformat.RowFileReader(s3.url("nope.row"), SCHEMA)
    assert isinstance(e.value, FileNotFoundError)
    with pytest.raises(FileNotFoundError, match="s3://no-such-bucket-rf/x.row"):
        rowformat.RowFileReader("s3://no-such-bucket-rf/x.row", SCHEMA)


def test_unreachable_endpoint_fails_fast_naming_the_url(s3, row_url):
    url, _ = row_url
    # a port nothing listens on: refused at once, a StorageError (not a hang, not a bug)
    opts = dict(s3.storage_options(), endpoint_override="http://127.0.0.1:9")
    with pytest.raises(rowformat.StorageError, match=f"{url}: opening for reading:.*connect"):
        rowformat.RowFileReader(url, SCHEMA, storage_options=opts)
    with pytest.raises(rowformat.StorageError, match="uploading"):
        with rowformat.RowFileWriter(s3.url("z.row"), SCHEMA, storage_options=opts) as w:
            w.write(_table(10))


def test_coalesce_reads_small_holes_only():
    # 1000-byte ranges: a 50-byte hole is read through (<= a tenth of the next), 200 is not
    got = ranges.coalesce([(0, 1000), (1050, 1000), (2250, 1000), (3250, 1000)])
    assert got == [(0, 2050, [0, 1]), (2250, 2000, [2, 3])]
    assert ranges.coalesce([(0, 10), (10, 10)], limit=15) == [(0, 10, [0]), (10, 10, [1])]


def test_s3_settings_map_catalog_names_and_bound_waits():
    got = settings.s3_arguments({"s3.endpoint": "http://127.0.0.1:1234", "s3.access-key": "k",
                               "s3.secret-key": "s", "s3.path-style-access": "true"})
    assert got["endpoint_override"] == "127.0.0.1:1234" and got["scheme"] == "http"
    assert got["access_key"] == "k" and got["secret_key"] == "s"
    assert got["force_virtual_addressing"] is False
    assert got["connect_timeout"] == settings.CONNECT_TIMEOUT
    assert got["request_timeout"] == settings.REQUEST_TIMEOUT
    assert settings.of_catalog({"warehouse": "s3://b/w", "s3.region": "r"}) == \
        {"s3.region": "r"}


# -- issue 40: one key per URL, no credentials echoed, lost replies, pinned reads --

def _write(url, n=10, **kw):
    with rowformat.RowFileWriter(url, SCHEMA, **kw) as w:
        w.write(_table(n))


@pytest.mark.parametrize("key", ["dir/../x.row", "dir/./x.row", "./x.row", "dir/..",
                                 "/x.row", "dir//x.row", "dir/"])
def test_a_key_with_dot_or_empty_segments_is_refused_by_every_operation(s3, key):
    # s3://bkt/dir/../x.row was written as that literal key and read as x.row
    _write(s3.url("x.row"))
    url = f"s3://{s3.bucket}/{key}"
    calls = [lambda: rowformat.RowFileWriter(url, SCHEMA), lambda: rowformat.RowFileReader(url, SCHEMA),
             lambda: rowformat.read_metadata(url), lambda: fileio.open_file(url),
             lambda: fileio.delete(url), lambda: fileio.file_size(url)]
    if not key.endswith("/"):       # a trailing "/" is a directory's
        calls += [lambda: fileio.list_names(url), lambda: fileio.walk(url)]
    for call in calls:
        with pytest.raises(rowformat.StorageError, match=f"^{url.replace('.', '[.]')}: "):
            call()
    assert s3.keys() == {"x.row"}


def test_directory_urls_may_end_with_a_slash_but_not_hold_dots(s3):
    _write(s3.url("d/x.row"))
    assert fileio.list_names(f"s3://{s3.bucket}/d/") == ["x.row"]
    assert [p for p, _, _ in fileio.walk(f"s3://{s3.bucket}/d/")] == [s3.url("d/x.row")]
    for bad in ("d/../d/", "e/./d", "e//d/"):
        with pytest.raises(rowformat.StorageError, match="segment"):
            fileio.list_names(f"s3://{s3.bucket}/{bad}")


def test_the_key_written_is_the_key_read(s3):
    url = s3.url("a/b/x.row")
    _write(url)
    assert s3.keys() == {"a/b/x.row"}
    with rowformat.RowFileReader(url, SCHEMA) as r:
        assert r.read().equals(_table(10).cast(r.arrow_schema))


SECRET = "wJalrXUtnFEMIK7MDENGbPxRfiCYzEXAMPLEKEY"


def test_credentials_in_a_url_are_refused_and_never_shown(s3, tmp_path, capfd):
    from rowformat import cli
    _write(s3.url("x.row"))
    url = f"s3://AKIDEXAMPLE:{SECRET}@{s3.bucket}/x.row"
    shown = f"s3://***@{s3.bucket}/x.row"
    calls = [lambda: rowformat.RowFileWriter(url, SCHEMA), lambda: rowformat.RowFileReader(url, SCHEMA),
             lambda: rowformat.read_metadata(url), lambda: rowformat.verify(url, SCHEMA),
             lambda: rowformat.BlobFileReader(url, "BLOB"), lambda: fileio.open_file(url),
             lambda: fileio.delete(url), lambda: fileio.file_size(url),
             lambda: fileio.list_names(url), lambda: fileio.walk(url),
             lambda: rowformat.RowFileReader(url, SCHEMA, memory_map=True)]
    for call in calls:
        with pytest.raises((rowformat.StorageError, ValueError)) as e:
            call()
        assert SECRET not in str(e.value) and "AKIDEXAMPLE" not in str(e.value)
        assert shown in str(e.value)
    local = tmp_path / "x.row"
    _write(local)
    for argv in (["inspect", url], ["cat", url], ["cat", url, "--schema", SCHEMA],
                 ["take", url, "1", "--schema", SCHEMA], ["verify", url, "--schema", SCHEMA],
                 ["convert", str(local), url, "--schema", SCHEMA]):
        assert cli.main(argv) != 0
        out, err = capfd.readouterr()
        assert SECRET not in out + err and "AKIDEXAMPLE" not in out + err, (argv, err)
        assert shown in err, (argv, err)
    assert s3.keys() == {"x.row"}


def test_storage_error_redacts_userinfo():
    e = failures.storage_error("gs://user:pw@b/k", "reading", OSError("gs://user:pw@b/k: boom"))
    assert "pw" not in str(e) and "gs://***@b/k: reading" in str(e)
    assert urls.redact("abfs://container@account.dfs.core.windows.net/x") == \
        "abfs://container@account.dfs.core.windows.net/x"      # Azure's container@account
    assert urls.redact("/tmp/a:b@c/x") == "/tmp/a:b@c/x"


_S3_CLIENT = uploads.s3_client


def _lose_replies(monkeypatch, operation, perform=True, then=None):
    """Every S3 client the writers make answers ``operation`` with a read
    timeout: after the store performed it (``perform``) or without sending
    it; ``then`` runs between the two (another writer's PUT)."""
    from botocore.exceptions import ReadTimeoutError
    make = _S3_CLIENT      # not an earlier call's wrapper

    def client(options):
        c = make(options)
        real = getattr(c, operation)

        def lost(**kw):
            if perform:
                real(**kw)
            if then is not None:
                then()
            raise ReadTimeoutError(endpoint_url="http://127.0.0.1/lost")
        setattr(c, operation, lost)
        return c
    monkeypatch.setattr(uploads, "s3_client", client)


def _big_write(url, n=60_000):
    with rowformat.RowFileWriter(url, BIG) as w:
        for start in range(0, n, 20_000):
            w.write(_incompressible(20_000, start))


@pytest.mark.parametrize("operation", ["complete_multipart_upload", "put_object"])
def test_a_write_whose_reply_was_lost_is_checked(s3, monkeypatch, tmp_path, operation):
    import boto3
    monkeypatch.setattr(uploads, "PART_SIZE", 5 << 20)
    n = 60_000 if operation == "complete_multipart_upload" else 100      # 6 MB: two parts
    local = tmp_path / "x.row"
    _big_write(local, n) if n > 20_000 else _write_small_big(local, n)
    client = boto3.client("s3")
    # the store performed it: the write succeeded, its object is there
    _lose_replies(monkeypatch, operation)
    url = s3.url("done.row")
    _big_write(url, n) if n > 20_000 else _write_small_big(url, n)
    assert client.get_object(Bucket=s3.bucket, Key="done.row")["Body"].read() == local.read_bytes()
    # it never reached the store: an error, and no object nor upload
    _lose_replies(monkeypatch, operation, perform=False)
    with pytest.raises(rowformat.StorageError, match=f"{s3.url('lost.row')}: uploading"):
        _big_write(s3.url("lost.row"), n) if n > 20_000 else _write_small_big(s3.url("lost.row"), n)
    assert s3.keys() == {"done.row"}
    assert not client.list_multipart_uploads(Bucket=s3.bucket).get("Uploads")
    # performed, then another writer replaced it: an error, and the other's object stays
    _lose_replies(monkeypatch, operation, then=lambda: client.put_object(
        Bucket=s3.bucket, Key="raced.row", Body=b"theirs"))
    with pytest.raises(rowformat.StorageError, match=f"{s3.url('raced.row')}: uploading"):
        _big_write(s3.url("raced.row"), n) if n > 20_000 else _write_small_big(s3.url("raced.row"), n)
    assert client.get_object(Bucket=s3.bucket, Key="raced.row")["Body"].read() == b"theirs"


def _write_small_big(url, n):
    with rowformat.RowFileWriter(url, BIG) as w:
        w.write(_incompressible(n))


@pytest.mark.xfail(strict=True, reason="issue 40 item 13, open: pyarrow's ranged reads cannot carry "
                   "If-Match, and botocore's cost 1.1 ms more CPU a request under the GIL (takes "
                   "2.2x slower)")
def test_an_object_replaced_after_opening_is_noticed(s3):
    import boto3
    url = s3.url("x.row")
    _big_write(url, 20_000)
    client = boto3.client("s3")
    first = client.get_object(Bucket=s3.bucket, Key="x.row")["Body"].read()
    # the same size, row 19,000 another payload (zstd keeps random bytes as they are)
    payload = _incompressible(20_000)["payload"][19_000].as_py()
    at = first.index(payload)
    second = first[:at] + payload[::-1] + first[at + len(payload):]
    with rowformat.RowFileReader(url, BIG, cache_bytes=0) as r:
        assert r.take([5])["id"].to_pylist() == [5]
        client.put_object(Bucket=s3.bucket, Key="x.row", Body=second)
        for call in (lambda: r.take([5, 19_000]), lambda: r.get(19_000), r.read):
            with pytest.raises(rowformat.StorageError, match=f"^{url}: changed since it was opened"):
                call()
    with rowformat.RowFileReader(url, BIG, cache_bytes=0) as r:      # opened anew: the new rows
        assert r.get(19_000)[1] == payload[::-1]
