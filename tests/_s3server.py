"""A real S3-protocol server on loopback for tests and benchmarks, with every
request logged, and a proxy that adds a fixed latency to each request.

``S3Server`` runs moto's S3 (server mode: the whole S3 HTTP API, state in
memory) on 127.0.0.1 in a thread of this process. Its WSGI app is wrapped so
that each request is logged once its response is done: method, bucket, key,
query string, the Range asked for, the response body bytes and the request
body bytes, and the status. Clients reach it through ``env()`` (the AWS_*
variables botocore, s3fs and pyarrow read), ``storage_options()`` (pyarrow's
``S3FileSystem`` keyword arguments) or ``catalog_options()`` (pypaimon's).

moto reads a whole object for every ranged GET: count requests and bytes
through it, do not time it. ``LatencyProxy`` in front of it gives each
request a round trip's delay, for benchmarks that model a remote store.

Nothing here imports pytest; benchmarks import it from ``tests/`` too.
"""
from __future__ import annotations

import ipaddress
import re
import socket
import threading
import time
from typing import NamedTuple

ACCESS_KEY = "testing"
SECRET_KEY = "testing"
REGION = "us-east-1"
JOIN_SECONDS = 5.0      # stop() waits at most this long for each group of threads


class Request(NamedTuple):
    method: str                         # GET, HEAD, PUT, POST, DELETE
    bucket: str
    key: str                            # object key ("" for bucket-level requests)
    query: str                          # raw query string (uploads, partNumber=..., uploadId=...)
    range: tuple[int, int] | None       # the Range asked for, first-last inclusive; None if absent
    sent: int                           # response body bytes
    received: int                       # request body bytes
    status: int


# Hosts of virtual-host style requests: <bucket>.<one of these>
_VIRTUAL_HOST = re.compile(r"^(?P<bucket>.+?)\.(localhost|127\.0\.0\.1|s3([.-][^.]+)*\.amazonaws\.com)$")
_RANGE = re.compile(r"^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)")
_CONTENT_RANGE = re.compile(r"^\s*bytes\s+(\d+)-(\d+)/")


def _bucket_key(environ) -> tuple[str, str]:
    """(bucket, key) of a path-style (``/bucket/key``) or virtual-host style
    (``bucket.localhost/key``) request."""
    # PATH_INFO is unquoted already, its UTF-8 bytes as latin-1 (PEP 3333)
    path = (environ.get("PATH_INFO") or "").encode("latin-1").decode("utf-8", "replace")
    host = environ.get("HTTP_HOST") or ""
    host = "" if host.startswith("[") else host.rsplit(":", 1)[0]     # an IPv6 address: path style
    virtual = None
    if host and host != "localhost":
        try:
            ipaddress.ip_address(host)
        except ValueError:
            virtual = _VIRTUAL_HOST.match(host)
    if virtual:
        return virtual.group("bucket"), path.lstrip("/")
    bucket, _, key = path.lstrip("/").partition("/")
    return bucket, key


def _asked_range(header: str | None, content_range: str | None) -> tuple[int, int] | None:
    """The Range header's first-last. An open end (``bytes=10-``, ``bytes=-5``)
    is taken from the response's Content-Range (what was served), -1 if the
    response has none (a failed request)."""
    if not header:
        return None
    m = _RANGE.match(header)
    if m is None:
        return None
    first, last = m.group(1), m.group(2)
    if first and last:
        return int(first), int(last)
    served = _CONTENT_RANGE.match(content_range or "")
    if served:
        return int(served.group(1)), int(served.group(2))
    return (int(first) if first else -1), (int(last) if last else -1)


class _CountingInput:
    """wsgi.input, counting the bytes read from it."""

    def __init__(self, stream):
        self._stream = stream
        self.count = 0

    def read(self, *args):
        data = self._stream.read(*args)
        self.count += len(data)
        return data

    def readline(self, *args):
        data = self._stream.readline(*args)
        self.count += len(data)
        return data

    def readlines(self, *args):
        lines = self._stream.readlines(*args)
        self.count += sum(map(len, lines))
        return lines

    def __iter__(self):
        for line in self._stream:
            self.count += len(line)
            yield line

    def __getattr__(self, name):
        return getattr(self._stream, name)


class _LoggedApp:
    """A WSGI app that logs each request of the app it wraps."""

    def __init__(self, app, record):
        self._app = app
        self._record = record

    def __call__(self, environ, start_response):
        counting = _CountingInput(environ["wsgi.input"])
        environ["wsgi.input"] = counting
        method = environ.get("REQUEST_METHOD", "")
        response = {"status": 0, "content_range": None}

        def start(status, headers, exc_info=None):
            response["status"] = int(status.split(None, 1)[0])
            for name, value in headers:
                if name.lower() == "content-range":
                    response["content_range"] = value
            return start_response(status, headers, exc_info)

        sent = 0
        recorded = False

        def record():
            nonlocal recorded
            recorded = True
            # the payload: newer AWS SDKs (pyarrow 26's) send it aws-chunked,
            # framed with chunk sizes and a checksum trailer, and declare its size
            declared = (environ.get("HTTP_X_AMZ_DECODED_CONTENT_LENGTH")
                        or environ.get("CONTENT_LENGTH") or "")
            try:
                received = int(declared)
            except ValueError:              # no Content-Length: chunked transfer
                received = counting.count
            bucket, key = _bucket_key(environ)
            self._record(Request(
                method=method, bucket=bucket, key=key, query=environ.get("QUERY_STRING", ""),
                range=_asked_range(environ.get("HTTP_RANGE"), response["content_range"]),
                sent=sent, received=received, status=response["status"]))

        # One chunk ahead: the request is logged before its last bytes go out,
        # so a client that has its whole response finds it in the log.
        body = self._app(environ, start)
        try:
            chunks = iter(body)
            chunk = next(chunks, None)
            while chunk is not None:
                after = next(chunks, None)
                if method != "HEAD":        # the server sends no body for HEAD
                    sent += len(chunk)
                if after is None:
                    record()
                yield chunk
                chunk = after
            if not recorded:
                record()
        finally:
            close = getattr(body, "close", None)
            if close is not None:
                close()
            if not recorded:                # the client went away mid-response
                record()


_FAST_RANGE = re.compile(r"^bytes=(\d+)-(\d*)$")
# request headers that ask for more than the bytes of the latest version
_NOT_PLAIN = ("HTTP_IF_MATCH", "HTTP_IF_NONE_MATCH", "HTTP_IF_MODIFIED_SINCE", "HTTP_IF_UNMODIFIED_SINCE",
              "HTTP_X_AMZ_SERVER_SIDE_ENCRYPTION_CUSTOMER_ALGORITHM")


class _FastRanges:
    """Serves a plain ranged GET (one ``bytes=first-[last]`` range, no query,
    no conditions, the latest version of a STANDARD object) from the bytes
    moto stores, as moto would answer it but reading only the range: moto
    reads the whole object for each ranged GET (0.1 s for 100 MB). Everything
    else goes to moto."""

    def __init__(self, app, enabled, ignore_conditions=lambda: False):
        self._app = app
        self._enabled = enabled         # a callable: read per request
        self._ignore_conditions = ignore_conditions

    def __call__(self, environ, start_response):
        if self._ignore_conditions():       # a store without conditional writes
            environ.pop("HTTP_IF_NONE_MATCH", None)
        served = self._enabled() and self._serve(environ)
        if not served:
            return self._app(environ, start_response)
        headers, data = served
        start_response("206 Partial Content", headers)
        return [data]

    @staticmethod
    def _serve(environ):
        if (environ.get("REQUEST_METHOD") != "GET" or environ.get("QUERY_STRING")
                or any(h in environ for h in _NOT_PLAIN)
                or "/s3/aws4_request" not in environ.get("HTTP_AUTHORIZATION", "")):
            return None
        asked = _FAST_RANGE.match((environ.get("HTTP_RANGE") or "").strip())
        bucket, key = _bucket_key(environ)
        if asked is None or not key:
            return None
        try:
            from moto.core import DEFAULT_ACCOUNT_ID
            from moto.s3.models import FakeKey, s3_backends
            obj = s3_backends[DEFAULT_ACCOUNT_ID]["aws"].get_object(bucket, key)
            if not isinstance(obj, FakeKey) or obj.storage_class != "STANDARD":
                return None
            size = obj.size
            first = int(asked.group(1))
            last = min(int(asked.group(2)) if asked.group(2) else size - 1, size - 1)
            if first > last:            # moto answers these (416, or the whole object)
                return None
            if first == 0 and last == size - 1 and environ.get("HTTP_X_AMZ_CHECKSUM_MODE"):
                return None             # the whole object: moto adds its checksum
            with obj.lock:
                obj._value_buffer.seek(first)
                data = obj._value_buffer.read(last - first + 1)
            headers = {**obj.response_dict, **obj.metadata}
        except Exception:               # noqa: BLE001 - whatever moto would say, it says
            return None
        headers.pop("content-length", None)
        if not any(k.lower() == "content-type" for k in headers):
            headers["Content-Type"] = "binary/octet-stream"
        headers.update({"Accept-Ranges": "bytes", "Content-Length": str(len(data)),
                        "Content-Range": f"bytes {first}-{last}/{size}"})
        return [(k, str(v)) for k, v in headers.items()], data


def _join_all(threads, seconds: float = JOIN_SECONDS) -> None:
    deadline = time.monotonic() + seconds
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))


class _Clients:
    """How clients reach the server at ``self.endpoint``."""
    endpoint: str

    def env(self) -> dict[str, str]:
        """The environment of a client of this server (botocore, s3fs, pyarrow)."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ENDPOINT_URL_S3": self.endpoint,
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_DEFAULT_REGION": REGION,
            "AWS_REGION": REGION,
            "AWS_EC2_METADATA_DISABLED": "true",
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
        }

    def storage_options(self) -> dict:
        """pyarrow.fs.S3FileSystem's keyword arguments for this server."""
        return {"endpoint_override": self.endpoint.split("://", 1)[1], "scheme": "http",
                "access_key": ACCESS_KEY, "secret_key": SECRET_KEY, "region": REGION}

    def catalog_options(self) -> dict:
        """pypaimon catalog options for this server (add ``warehouse``)."""
        return {"s3.endpoint": self.endpoint, "s3.access-key": ACCESS_KEY, "s3.secret-key": SECRET_KEY,
                "s3.region": REGION, "s3.path-style-access": "true"}


class S3Server(_Clients):
    """A real S3-protocol server (moto) on 127.0.0.1, every request logged.

    ``fast_ranges``: plain ranged GETs read only their range from moto's
    stored bytes instead of moto reading the whole object each time
    (``_FastRanges``; the same status, headers that matter and bytes). An
    attribute, read per request. ``ignore_conditions``: the server drops
    ``If-None-Match`` from every request, as S3-compatible stores without
    conditional writes do (another such attribute)."""

    def __init__(self, port: int = 0, fast_ranges: bool = False):
        self._port = port
        self.fast_ranges = fast_ranges
        self.ignore_conditions = False
        self._lock = threading.Lock()
        self._log: list[Request] = []
        self._server = None
        self._thread: threading.Thread | None = None
        self._handlers: set[threading.Thread] = set()
        self.endpoint = ""

    def _record(self, request: Request) -> None:
        with self._lock:
            self._log.append(request)

    def start(self) -> S3Server:
        if self._server is not None:
            return self
        from moto.moto_server.werkzeug_app import (DomainDispatcherApplication, MotoRequestHandler,
                                                   create_backend_app)
        from werkzeug.serving import ThreadedWSGIServer

        handlers, handlers_lock = self._handlers, self._lock

        class Handler(MotoRequestHandler):
            def log_request(self, code="-", size="-"):     # no access log on stderr
                pass

        class Server(ThreadedWSGIServer):
            def process_request(self, request, client_address):
                t = threading.Thread(target=self.process_request_thread,
                                     args=(request, client_address), daemon=True)
                with handlers_lock:
                    handlers.add(t)
                t.start()

            def process_request_thread(self, request, client_address):
                try:
                    super().process_request_thread(request, client_address)
                finally:
                    with handlers_lock:
                        handlers.discard(threading.current_thread())

        app = _LoggedApp(_FastRanges(DomainDispatcherApplication(create_backend_app),
                                     lambda: self.fast_ranges, lambda: self.ignore_conditions),
                         self._record)
        self._server = Server("127.0.0.1", self._port, app, Handler)
        self.port = self._server.server_address[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"S3Server:{self.port}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stops serving and joins the server's threads (each group at most
        JOIN_SECONDS). Idempotent."""
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        server.server_close()
        _join_all([self._thread])
        with self._lock:
            handlers = list(self._handlers)
        _join_all(handlers)

    def __enter__(self) -> S3Server:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def log(self) -> list[Request]:
        with self._lock:
            return list(self._log)

    def clear_log(self) -> None:
        with self._lock:
            self._log.clear()

    def make_bucket(self, name: str) -> None:
        import pyarrow.fs as pafs
        pafs.S3FileSystem(allow_bucket_creation=True, **self.storage_options()).create_dir(name)


def _serve_in_child(conn, port: int, fast_ranges: bool) -> None:
    """S3ServerProcess's child: an S3Server, and its methods called over ``conn``."""
    server = S3Server(port, fast_ranges).start()
    conn.send(server.endpoint)
    try:
        while True:
            try:
                method, args = conn.recv()
            except EOFError:            # the parent is gone
                break
            if method == "stop":
                break
            try:
                conn.send(("ok", getattr(server, method)(*args)))
            except Exception as e:      # noqa: BLE001 - raised again in the parent
                conn.send(("error", f"{type(e).__name__}: {e}"))
    finally:
        server.stop()
        conn.close()


class S3ServerProcess(_Clients):
    """An S3Server in a child process (spawned), for benchmarks: moto's
    Python work then does not share the client's interpreter and GIL. The
    same methods; ``log()`` copies the log over a pipe."""

    def __init__(self, port: int = 0, fast_ranges: bool = False):
        self._args = (port, fast_ranges)
        self._proc = None
        self._conn = None
        self._lock = threading.Lock()
        self.endpoint = ""

    def start(self) -> S3ServerProcess:
        if self._proc is not None:
            return self
        import multiprocessing
        ctx = multiprocessing.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve_in_child, args=(child, *self._args), daemon=True,
                                 name="S3ServerProcess")
        self._proc.start()
        child.close()
        if not self._conn.poll(120):
            self.stop()
            raise RuntimeError("the S3 server process did not start in 120 s")
        self.endpoint = self._conn.recv()
        self.port = int(self.endpoint.rsplit(":", 1)[1])
        return self

    def _call(self, method: str, *args):
        with self._lock:
            if self._conn is None:
                raise RuntimeError("the S3 server process is not running")
            self._conn.send((method, args))
            status, value = self._conn.recv()
        if status != "ok":
            raise RuntimeError(f"S3 server process: {method}: {value}")
        return value

    def stop(self) -> None:
        """Stops the child (its server joins its threads), at most
        JOIN_SECONDS + 5 s, then kills it. Idempotent."""
        proc, conn, self._proc, self._conn = self._proc, self._conn, None, None
        if proc is None:
            return
        try:
            conn.send(("stop", ()))
        except OSError:
            pass
        proc.join(JOIN_SECONDS + 5)
        if proc.is_alive():
            proc.kill()
            proc.join(5)
        conn.close()

    def __enter__(self) -> S3ServerProcess:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def log(self) -> list[Request]:
        return self._call("log")

    def clear_log(self) -> None:
        self._call("clear_log")

    def make_bucket(self, name: str) -> None:
        self._call("make_bucket", name)


class LatencyProxy(_Clients):
    """A loopback TCP proxy that delays each HTTP request by a fixed time (for
    benchmarks): listens on 127.0.0.1, forwards to a target port.

    On each connection, the first bytes from the client after the server's
    last bytes (or the connection's start) are held ``delay`` seconds: once
    per request, keep-alive or not (an ``Expect: 100-continue`` body pays it
    again, as it would pay a round trip). Responses are not delayed."""

    def __init__(self, target_port: int, delay: float):
        self.target_port = target_port
        self.delay = delay
        self.endpoint = ""
        self._listener: socket.socket | None = None
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        self._threads: set[threading.Thread] = set()
        self._acceptor: threading.Thread | None = None

    def start(self) -> LatencyProxy:
        if self._listener is not None:
            return self
        self._stopping.clear()
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen(128)
        listener.settimeout(0.05)
        self._listener = listener
        self.port = listener.getsockname()[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._acceptor = threading.Thread(target=self._accept, name=f"LatencyProxy:{self.port}",
                                          daemon=True)
        self._acceptor.start()
        return self

    def stop(self) -> None:
        """Closes the listener and every connection, joins the threads (each
        group at most JOIN_SECONDS). Idempotent."""
        listener, self._listener = self._listener, None
        if listener is None:
            return
        self._stopping.set()
        _join_all([self._acceptor])
        listener.close()
        with self._lock:
            sockets, threads = list(self._sockets), list(self._threads)
        for s in sockets:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        _join_all(threads)

    def __enter__(self) -> LatencyProxy:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def _spawn(self, target, *args) -> None:
        t = threading.Thread(target=self._run, args=(target, *args), daemon=True)
        with self._lock:
            self._threads.add(t)
        t.start()

    def _run(self, target, *args) -> None:
        try:
            target(*args)
        finally:
            with self._lock:
                self._threads.discard(threading.current_thread())

    def _accept(self) -> None:
        while not self._stopping.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            client.settimeout(None)
            self._spawn(self._connect, client)

    def _connect(self, client: socket.socket) -> None:
        try:
            upstream = socket.create_connection(("127.0.0.1", self.target_port))
        except OSError:
            client.close()
            return
        for s in (client, upstream):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self._lock:
            self._sockets.update((client, upstream))
        state = {"new_request": True, "open": 2}
        if self._stopping.is_set():
            self._close(state, client, upstream)
            self._close(state, client, upstream)
            return
        self._spawn(self._pump, client, upstream, state, True)
        self._pump(upstream, client, state, False)

    def _pump(self, src: socket.socket, dst: socket.socket, state: dict, requests: bool) -> None:
        """Copies src to dst until src ends; client->server (``requests``)
        holds the first bytes of each request ``delay`` seconds."""
        try:
            while True:
                data = src.recv(1 << 16)
                if not data:
                    break
                if requests:
                    if state["new_request"]:
                        state["new_request"] = False
                        if self._stopping.wait(self.delay):
                            break
                else:
                    state["new_request"] = True
                dst.sendall(data)
        except OSError:
            pass
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        self._close(state, src, dst)

    def _close(self, state: dict, *sockets: socket.socket) -> None:
        """The second of the two pumps to end closes the sockets."""
        with self._lock:
            state["open"] -= 1
            if state["open"]:
                return
            for s in sockets:
                self._sockets.discard(s)
        for s in sockets:
            s.close()
