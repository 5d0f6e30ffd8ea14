import os
import pathlib

import pytest
from hypothesis import HealthCheck, settings

DATA = pathlib.Path(__file__).resolve().parent / "data"

settings.register_profile("ci", max_examples=60, derandomize=True, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=30, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


@pytest.fixture
def fixture_path():
    """A .row file written by Paimon Java's RowFileFormat writer."""
    return DATA / "java-written-fixture.row"


@pytest.fixture(autouse=True)
def _no_ignored_exceptions(capfd):
    """Fails a test whose stderr shows an exception swallowed in a destructor."""
    yield
    err = capfd.readouterr().err
    assert "Exception ignored" not in err, err


# --- an S3-protocol server on loopback (tests/_s3server.py) ---

@pytest.fixture(scope="session")
def s3_server():
    """One moto S3 server for the whole session, started on first use."""
    from tests._s3server import S3Server
    server = S3Server().start()
    yield server
    server.stop()


class S3Bucket:
    """A fresh bucket on the session's S3 server (the ``s3`` fixture)."""

    def __init__(self, server, bucket: str):
        self.server = server
        self.bucket = bucket

    def url(self, key: str) -> str:
        return f"s3://{self.bucket}/{key.lstrip('/')}"

    def log(self):
        """The server's requests to this bucket since the fixture made it."""
        return [r for r in self.server.log() if r.bucket == self.bucket]

    def storage_options(self) -> dict:
        return self.server.storage_options()

    def keys(self, prefix: str = "") -> set[str]:
        """The keys of the bucket's objects under ``prefix`` (pyarrow's own listing)."""
        import pyarrow.fs as pafs
        fs = pafs.S3FileSystem(**self.storage_options())
        infos = fs.get_file_info(pafs.FileSelector(f"{self.bucket}/{prefix}".rstrip("/"),
                                                   recursive=True, allow_not_found=True))
        return {i.path.split("/", 1)[1] for i in infos if i.type == pafs.FileType.File}

    def catalog_options(self) -> dict:
        return self.server.catalog_options()


_s3_buckets = iter(range(1, 1 << 62))


@pytest.fixture
def s3(s3_server, monkeypatch):
    """A fresh, empty bucket on the session's S3 server, the server's AWS_*
    variables set for the test, and the log cleared after making the bucket."""
    import uuid
    for name, value in s3_server.env().items():
        monkeypatch.setenv(name, value)
    bucket = f"test-{next(_s3_buckets)}-{uuid.uuid4().hex[:8]}"
    s3_server.make_bucket(bucket)
    s3_server.clear_log()
    return S3Bucket(s3_server, bucket)
