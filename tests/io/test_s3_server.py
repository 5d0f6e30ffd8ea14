"""The S3 server the object-store tests run against (tests/_s3server.py): real
clients reach it, and its log counts each request's bytes exactly."""
import time

import pytest

pytest.importorskip("moto.server", reason="moto[server] (the test extra) is not installed")
import pyarrow.fs as pafs  # noqa: E402

from tests._s3server import LatencyProxy, Request, S3Server, S3ServerProcess, _bucket_key  # noqa: E402

DATA = bytes(range(256)) * 4096         # 1 MiB


def _boto3(s3):
    boto3 = pytest.importorskip("boto3")
    return boto3.client("s3")           # endpoint, keys and region from s3's env


def test_pyarrow_put_and_ranged_read(s3):
    fs = pafs.S3FileSystem(**s3.storage_options())
    with fs.open_output_stream(f"{s3.bucket}/dir/data.bin") as f:
        f.write(DATA)
    puts = [r for r in s3.log() if r.method == "PUT"]
    assert sum(r.received for r in puts) == len(DATA)
    assert all(r.key == "dir/data.bin" for r in s3.log())

    s3.server.clear_log()
    with fs.open_input_file(f"{s3.bucket}/dir/data.bin") as f:
        f.seek(1000)
        assert f.read(12345) == DATA[1000:13345]
    gets = [r for r in s3.log() if r.method == "GET"]
    assert gets == [Request("GET", s3.bucket, "dir/data.bin", "", (1000, 13344), 12345, 0, 206)]


def test_boto3_put_get_head(s3):
    client = _boto3(s3)
    client.put_object(Bucket=s3.bucket, Key="a/b.bin", Body=DATA)
    body = client.get_object(Bucket=s3.bucket, Key="a/b.bin", Range="bytes=10-19")["Body"].read()
    assert body == DATA[10:20]
    assert client.get_object(Bucket=s3.bucket, Key="a/b.bin", Range="bytes=-5")["Body"].read() == DATA[-5:]
    assert client.head_object(Bucket=s3.bucket, Key="a/b.bin")["ContentLength"] == len(DATA)
    put, get, suffix, head = s3.log()
    assert (put.method, put.key, put.status, put.sent) == ("PUT", "a/b.bin", 200, 0)
    assert put.received == len(DATA)
    assert get == Request("GET", s3.bucket, "a/b.bin", "", (10, 19), 10, 0, 206)
    # an open end is what the server served (its Content-Range)
    assert suffix == Request("GET", s3.bucket, "a/b.bin", "", (len(DATA) - 5, len(DATA) - 1), 5, 0, 206)
    assert head == Request("HEAD", s3.bucket, "a/b.bin", "", None, 0, 0, 200)


def test_multipart_upload_logged(s3):
    client = _boto3(s3)
    upload = client.create_multipart_upload(Bucket=s3.bucket, Key="mp.bin")["UploadId"]
    etag = client.upload_part(Bucket=s3.bucket, Key="mp.bin", PartNumber=1, UploadId=upload,
                              Body=DATA)["ETag"]
    client.complete_multipart_upload(Bucket=s3.bucket, Key="mp.bin", UploadId=upload,
                                     MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]})
    create, part, complete = s3.log()
    assert (create.method, create.key, create.query) == ("POST", "mp.bin", "uploads")
    assert (part.method, part.key) == ("PUT", "mp.bin")
    assert "partNumber=1" in part.query and f"uploadId={upload}" in part.query
    assert part.received == len(DATA)
    assert (complete.method, complete.query, complete.status) == ("POST", f"uploadId={upload}", 200)
    assert complete.received > 0 and complete.sent > 0


def test_log_is_per_bucket_and_the_bucket_fresh(s3):
    assert s3.log() == []
    assert s3.url("x/y.row") == f"s3://{s3.bucket}/x/y.row"
    fs = pafs.S3FileSystem(**s3.storage_options())
    assert fs.get_file_info(pafs.FileSelector(s3.bucket, recursive=True)) == []


def test_stop_is_idempotent():
    server = S3Server()
    server.stop()                       # never started
    server.start()
    server.make_bucket("stop-test")
    server.stop()
    server.stop()
    assert server.log()[-1].method == "PUT"


def test_virtual_host_requests():
    assert _bucket_key({"HTTP_HOST": "bkt.localhost:9000", "PATH_INFO": "/k/e y"}) == ("bkt", "k/e y")
    assert _bucket_key({"HTTP_HOST": "bkt.s3.us-east-1.amazonaws.com", "PATH_INFO": "/k"}) == ("bkt", "k")
    assert _bucket_key({"HTTP_HOST": "127.0.0.1:9000", "PATH_INFO": "/bkt/k/l"}) == ("bkt", "k/l")
    assert _bucket_key({"HTTP_HOST": "localhost", "PATH_INFO": "/bkt"}) == ("bkt", "")


def test_latency_proxy_delays_each_request(s3):
    fs = pafs.S3FileSystem(**s3.storage_options())
    fs.create_dir(f"{s3.bucket}/d")
    with fs.open_output_stream(f"{s3.bucket}/small") as f:
        f.write(b"x")
    s3.server.clear_log()
    proxy = LatencyProxy(s3.server.port, 0.05).start()
    try:
        through = pafs.S3FileSystem(**proxy.storage_options())
        t0 = time.perf_counter()
        for _ in range(3):
            assert through.get_file_info(f"{s3.bucket}/small").size == 1
        elapsed = time.perf_counter() - t0
    finally:
        proxy.stop()
        proxy.stop()
    assert [r.method for r in s3.log()] == ["HEAD"] * 3
    assert elapsed >= 0.15


def test_fast_ranges_answer_as_moto_does(s3, monkeypatch):
    from moto.s3.models import FakeKey
    client = _boto3(s3)
    client.put_object(Bucket=s3.bucket, Key="f.bin", Body=DATA, ContentType="application/x-test",
                      Metadata={"m": "v"})
    client.put_object(Bucket=s3.bucket, Key="plain.bin", Body=DATA)
    whole = FakeKey.value
    reads = []
    monkeypatch.setattr(FakeKey, "value", property(lambda key: reads.append(1) or whole.fget(key),
                                                   whole.fset))
    ranges = ["bytes=100-199", "bytes=1048000-", "bytes=1048570-2000000", "bytes=0-0"]

    def answers():
        out = []
        for key, asked in [("f.bin", r) for r in ranges] + [("plain.bin", ranges[0])]:
            r = client.get_object(Bucket=s3.bucket, Key=key, Range=asked)
            out.append((r["Body"].read(), r["ContentRange"], r["ContentLength"], r["ETag"],
                        r["LastModified"], r["ContentType"], r["Metadata"], r["AcceptRanges"],
                        r["ResponseMetadata"]["HTTPStatusCode"]))
        return out
    assert not s3.server.fast_ranges    # the session's server: moto's own answers
    slow = answers()
    assert len(reads) == len(ranges) + 1
    s3.server.fast_ranges = True
    try:
        reads.clear()
        fast = answers()
        assert reads == []              # the object was never read whole
        # not served fast: moto's answers (a range past the end, a conditional GET)
        with pytest.raises(client.exceptions.ClientError, match="InvalidRange"):
            client.get_object(Bucket=s3.bucket, Key="f.bin", Range=f"bytes={len(DATA)}-")
        got = client.get_object(Bucket=s3.bucket, Key="f.bin", Range="bytes=1-2", IfMatch=slow[0][3])
        assert got["Body"].read() == DATA[1:3] and len(reads) == 2
    finally:
        s3.server.fast_ranges = False
    assert fast == slow
    assert slow[1][0] == DATA[1048000:] and slow[2][0] == DATA[1048570:]
    # the range asked for (past the end too), the bytes served
    logged = [(r.range, r.sent, r.status) for r in s3.log() if r.method == "GET"]
    assert logged[:5] == logged[5:10] == [((100, 199), 100, 206), ((1048000, 1048575), 576, 206),
                                          ((1048570, 2000000), 6, 206), ((0, 0), 1, 206),
                                          ((100, 199), 100, 206)]


def test_server_in_a_child_process():
    with S3ServerProcess(fast_ranges=True) as server:
        server.make_bucket("child-test")
        server.clear_log()
        fs = pafs.S3FileSystem(**server.storage_options())
        with fs.open_output_stream("child-test/k") as f:
            f.write(DATA)
        with fs.open_input_file("child-test/k") as f:
            assert f.read_at(10, 5000) == DATA[5000:5010]
        log = server.log()
        assert log[-1] == Request("GET", "child-test", "k", "", (5000, 5009), 10, 0, 206)
        assert sum(r.received for r in log if r.method == "PUT") == len(DATA)
        with pytest.raises(RuntimeError, match="InvalidBucketName"):
            server.make_bucket("x")
    server.stop()
