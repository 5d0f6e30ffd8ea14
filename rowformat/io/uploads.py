"""Streamed writes to a store that appear only when commit() succeeds: on S3
(with botocore installed) a multipart upload completed only by a
successful close and aborted otherwise, so no object ever appears for a
failed or killed write; on other stores a hidden temporary object moved
into place by commit()."""
from __future__ import annotations

import hashlib
import io
import uuid
from concurrent.futures import Future
from typing import Any, Callable

from ..errors import StorageError
from . import settings as st
from .failures import mapped, storage_error
from .ranges import io_pool
from .stores import Store, resolve
from .urls import S3_SCHEMES, check_url, redact

PART_SIZE = 8 << 20         # a multipart upload's part (S3's minimum is 5 MiB)
PARTS_IN_FLIGHT = 4

# An upload has AtomicOutput's interface: ``file`` takes the bytes, ``commit()``
# makes the object appear, ``discard()`` leaves nothing.

class _S3Multipart(io.RawIOBase):
    """A streamed S3 upload through botocore, also its own binary file
    (``file``): parts of PART_SIZE uploaded as they fill (PARTS_IN_FLIGHT at
    once); commit() completes the multipart upload (or PUTs a small object
    whole); discard(), or a killed process, leaves no object (an aborted
    upload, or one never completed)."""

    def __init__(self, url: str, bucket: str, key: str, options: dict | None):
        super().__init__()
        self.url, self.bucket, self.key = url, bucket, key
        self._client = s3_client(options)
        self._buf = bytearray()
        self._written = 0
        self._upload_id: str | None = None
        self._parts: list[Future] = []
        self.file = self

    def writable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._written

    def write(self, data) -> int:
        n = len(memoryview(data).cast("B"))
        self._buf += data
        self._written += n
        if len(self._buf) >= PART_SIZE:
            self._flush_parts()
        return n

    def _flush_parts(self) -> None:
        try:
            if self._upload_id is None:
                self._upload_id = self._client.create_multipart_upload(
                    Bucket=self.bucket, Key=self.key)["UploadId"]
            while len(self._buf) >= PART_SIZE:
                part, self._buf = bytes(self._buf[:PART_SIZE]), self._buf[PART_SIZE:]
                # bounded: wait for the oldest part when PARTS_IN_FLIGHT are out
                pending = [f for f in self._parts if not f.done()]
                if len(pending) >= PARTS_IN_FLIGHT:
                    pending[0].result()
                number = len(self._parts) + 1
                self._parts.append(io_pool().submit(self._upload_part, number, part))
        except Exception as e:
            raise storage_error(self.url, "uploading", e) from None

    def _upload_part(self, number: int, data: bytes) -> dict:
        r = self._client.upload_part(Bucket=self.bucket, Key=self.key, UploadId=self._upload_id,
                                     PartNumber=number, Body=data)
        return {"PartNumber": number, "ETag": r["ETag"]}

    def commit(self, durable: bool = True) -> None:
        try:
            if self._upload_id is None:         # small: one PUT
                body = bytes(self._buf)
                self._settle(lambda: self._client.put_object(Bucket=self.bucket, Key=self.key,
                                                             Body=body),
                             lambda: [hashlib.md5(body).digest()])
                return
            if self._buf or not self._parts:
                self._parts.append(io_pool().submit(self._upload_part, len(self._parts) + 1,
                                                    bytes(self._buf)))
                self._buf = bytearray()
            parts = [f.result() for f in self._parts]
            self._settle(lambda: self._client.complete_multipart_upload(
                Bucket=self.bucket, Key=self.key, UploadId=self._upload_id,
                MultipartUpload={"Parts": parts}),
                lambda: [bytes.fromhex(p["ETag"].strip('"')) for p in parts])
            self._upload_id = None
        except Exception as e:
            raise storage_error(self.url, "uploading", e) from None

    def _settle(self, complete: Callable, digests: Callable) -> None:
        """complete() makes the object appear. When it raises, the store may
        have done it and the reply been lost (a timeout; botocore's retry of
        a completion then finds no upload): one HEAD tells. The object there
        is this write's when its ETag is the one S3 gives these bytes (the
        MD5 of a PUT's body, or ``"<MD5 of the parts' MD5s>-<parts>"``, from
        ``digests()``): the write succeeded. Otherwise the error stands, and
        an object there (another writer's) is left as it is."""
        try:
            complete()
        except Exception as e:
            try:
                etag = self._client.head_object(Bucket=self.bucket, Key=self.key).get("ETag")
            except Exception:
                raise e from None   # no object (or no answer): the write failed
            try:
                md5s = digests()
                ours = f'"{md5s[0].hex()}"' if self._upload_id is None else \
                    f'"{hashlib.md5(b"".join(md5s)).hexdigest()}-{len(md5s)}"'
            except ValueError:      # parts' ETags that are no MD5s (SSE-KMS): cannot tell
                ours = None
            if etag != ours:
                raise StorageError(f"{self.url}: uploading: {redact(str(e).strip() or type(e).__name__)}; "
                                   f"the object now there is not this write's (ETag {etag}): left "
                                   f"as it is") from None

    def discard(self) -> None:
        self._buf = bytearray()
        for f in self._parts:
            f.cancel()
        if self._upload_id is not None:
            upload, self._upload_id = self._upload_id, None
            for f in self._parts:
                try:
                    f.result()
                except BaseException:
                    pass
            try:
                self._client.abort_multipart_upload(Bucket=self.bucket, Key=self.key,
                                                    UploadId=upload)
            except Exception:
                pass    # the store's lifecycle rules remove what an abort could not


class _TemporaryObject:
    """A write to a store without an abortable upload: streamed to a hidden
    ``.<name>.<random>.tmp`` beside the target, moved there by commit(),
    deleted by discard()."""

    def __init__(self, url: str, store: Store, path: str):
        self.url, self._store, self.path = url, store, path
        head, _, name = path.rpartition("/")
        self.tmp = f"{head}/.{name}.{uuid.uuid4().hex[:12]}.tmp" if head else \
            f".{name}.{uuid.uuid4().hex[:12]}.tmp"
        with mapped(url, "opening for writing"):
            self.file = store.open_output(self.tmp)

    def commit(self, durable: bool = True) -> None:
        with mapped(self.url, "writing"):
            self.file.close()
            self._store.move(self.tmp, self.path)

    def discard(self) -> None:
        try:
            self.file.close()
        except Exception:
            pass
        try:
            self._store.delete(self.tmp)
        except Exception:
            pass


def s3_client(options: dict | None):
    """A botocore S3 client with the same endpoint, credentials and region as
    the pyarrow filesystem of ``options`` (else the environment's), bounded
    timeouts and retries."""
    import botocore.config
    import botocore.session
    s = st.s3_arguments(options)
    endpoint = s.get("endpoint_override")
    if endpoint:
        endpoint = f"{s.get('scheme', 'https')}://{endpoint}"
    session = botocore.session.get_session()
    config = botocore.config.Config(
        connect_timeout=s["connect_timeout"], read_timeout=s["request_timeout"],
        retries={"max_attempts": st.MAX_ATTEMPTS, "mode": "standard"},
        s3={"addressing_style": "virtual" if s.get("force_virtual_addressing") else "path"}
        if endpoint else None)
    return session.create_client(
        "s3", endpoint_url=endpoint or None, region_name=s.get("region") or None,
        aws_access_key_id=s.get("access_key"), aws_secret_access_key=s.get("secret_key"),
        aws_session_token=s.get("session_token"), config=config)


def _has_botocore() -> bool:
    try:
        import botocore  # noqa: F401
    except ImportError:
        return False
    return True


def open_upload(url: str, filesystem: Any = None, storage_options: dict | None = None
                ) -> "_S3Multipart | _TemporaryObject":
    """A streamed write of ``url`` that appears only when commit() succeeds."""
    located = _s3_object(url, filesystem)
    if located is not None:
        return _S3Multipart(url, *located, storage_options)
    store, path = resolve(url, filesystem, storage_options, file=True)
    return _TemporaryObject(url, store, path)


def _s3_object(url: str, filesystem: Any) -> tuple[str, str] | None:
    """(bucket, key) of an S3 URL (checked) that botocore reads and writes,
    else None: pyarrow's S3 reads cannot be conditional, nor its uploads
    aborted."""
    if filesystem is not None or url.partition("://")[0].lower() not in S3_SCHEMES \
            or not _has_botocore():
        return None
    check_url(url, True)
    bucket, _, key = url.partition("://")[2].partition("/")
    return bucket, key
