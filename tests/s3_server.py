"""One S3 endpoint for tests: moto's server on 127.0.0.1 (a free port), with a bucket.

`Faults` sits in front of moto's WSGI app: it adds latency to every request (as an object store
far away does), fails chosen requests with a transient `503 SlowDown`, and logs every request.
`python tests/s3_server.py --latency-ms 20` serves one in its own process (the object-store
benchmark), printing its endpoint on the first line.

Real S3 decides a conditional PUT (`If-None-Match: *`) atomically; moto's server checks, then
puts, in whichever request thread runs, so two racing writers can both "win" the same log
version. The server started here serialises object PUTs so conditional PUT is atomic, as the
commit protocol on S3 relies on.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

_PUT_LOCK = threading.Lock()


def _atomic_put_object() -> None:
    from moto.s3.responses import S3Response

    put = S3Response.put_object
    if getattr(put, "_deltaexplore_atomic", False):
        return

    def put_object(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        with _PUT_LOCK:
            return put(self, *args, **kwargs)

    put_object._deltaexplore_atomic = True  # type: ignore[attr-defined]
    S3Response.put_object = put_object  # type: ignore[method-assign]


#: GET this path for the requests answered since the last GET of it, by kind (`_count`)
COUNT_PATH = "/_faults/requests"


def _count(requests: list[tuple[str, str, str, float, bool]]) -> dict[str, int]:
    """Requests by kind: `LIST` (a GET with `list-type`/`prefix`), `GET`, `HEAD`, `PUT`, ..."""
    out: dict[str, int] = {"total": len(requests)}
    for method, _, query, _, _ in requests:
        kind = "LIST" if method == "GET" and ("list-type" in query or "prefix=" in query) else method
        out[kind] = out.get(kind, 0) + 1
    return out


_SLOW_DOWN = (
    b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code>'
    b"<Message>Please reduce your request rate (injected)</Message></Error>"
)


@dataclass
class Faults:
    """What the server does to requests: `latency_s` before each answer, and a `503 SlowDown`
    for every request `fail(method, path, query)` says to fail. `requests` logs them all
    (method, path, query, start time, failed); `max_in_flight` is the most requests it held at once.
    With `cache_reads`, a GET or HEAD of an object (same path and range) is answered from memory
    after the first time (for benchmarks, whose objects never change): moto's own CPU per
    request (~10 ms here) would otherwise hide the latency being measured."""

    latency_s: float = 0.0
    fail: Callable[[str, str, str], bool] | None = None
    requests: list[tuple[str, str, str, float, bool]] = field(default_factory=list)
    max_in_flight: int = 0
    cache_reads: bool = False
    _cache: dict[tuple[str, str, str], tuple[str, list[tuple[str, str]], bytes]] = field(default_factory=dict)
    _in_flight: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def wrap(self, app: Any) -> Callable[..., Any]:
        def middleware(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
            method, path, query = environ["REQUEST_METHOD"], environ.get("PATH_INFO", ""), environ.get("QUERY_STRING", "")
            if path == COUNT_PATH:  # not S3 (no bucket name starts with '_'): the requests so far, then reset
                with self._lock:
                    body = json.dumps(_count(self.requests)).encode()
                    self.requests.clear()
                start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
                return [body]
            started = time.monotonic()
            failed = bool(self.fail and self.fail(method, path, query))
            with self._lock:
                self.requests.append((method, path, query, started, failed))
                self._in_flight += 1
                self.max_in_flight = max(self.max_in_flight, self._in_flight)
            try:
                if self.latency_s:
                    time.sleep(self.latency_s)
            finally:
                with self._lock:
                    self._in_flight -= 1
            key = (method, path, environ.get("HTTP_RANGE", ""))
            if self.cache_reads and not failed and not query and method in ("GET", "HEAD"):
                hit = self._cache.get(key)
                if hit is None:
                    captured: list[Any] = []
                    body = b"".join(app(environ, lambda status, headers, exc_info=None: captured.extend([status, headers])))
                    hit = (captured[0], list(captured[1]), body)
                    if hit[0].startswith("2"):
                        self._cache[key] = hit
                start_response(hit[0], hit[1])
                return [hit[2]]
            if failed:
                start_response("503 Slow Down", [("Content-Type", "application/xml"), ("Content-Length", str(len(_SLOW_DOWN)))])
                return [_SLOW_DOWN]
            return app(environ, start_response)

        return middleware

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self.max_in_flight = 0
        self.fail = None


@contextmanager
def s3_endpoint(
    bucket: str = "lake", key: str = "testing", secret: str = "testing", faults: Faults | None = None
) -> Iterator[str]:
    """Start moto's S3 server with `bucket` (behind `faults` when given); yield its endpoint
    URL; stop it on exit."""
    pytest.importorskip("moto.server")
    boto3 = pytest.importorskip("boto3")
    pytest.importorskip("s3fs")
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
    from werkzeug.serving import make_server

    _atomic_put_object()
    app: Any = DomainDispatcherApplication(create_backend_app)
    # port 0: the server binds a free port itself (no window for another process to take it)
    server = make_server("127.0.0.1", 0, faults.wrap(app) if faults else app, True, request_handler=MotoRequestHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        endpoint = "http://{}:{}".format(*server.server_address[:2])
        boto3.client(
            "s3", endpoint_url=endpoint, aws_access_key_id=key, aws_secret_access_key=secret, region_name="us-east-1"
        ).create_bucket(Bucket=bucket)
        yield endpoint
    finally:
        server.shutdown()
        thread.join()


def fsspec_options(endpoint: str, key: str = "testing", secret: str = "testing") -> dict:
    """s3fs storage options for `endpoint`."""
    return {"key": key, "secret": secret, "client_kwargs": {"endpoint_url": endpoint, "region_name": "us-east-1"}}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="moto's S3 server on 127.0.0.1 with a latency per request")
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--bucket", default="lake")
    parser.add_argument("--cache-reads", action="store_true", help="answer repeated object reads from memory")
    args = parser.parse_args()
    with s3_endpoint(args.bucket, faults=Faults(latency_s=args.latency_ms / 1000, cache_reads=args.cache_reads)) as url:
        print(url, flush=True)
        threading.Event().wait()
