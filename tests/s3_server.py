"""One S3 endpoint for tests: moto's server on 127.0.0.1 (a free port), with a bucket.

Real S3 decides a conditional PUT (`If-None-Match: *`) atomically; moto's server checks, then
puts, in whichever request thread runs, so two racing writers can both "win" the same log
version. The server started here serialises object PUTs so conditional PUT is atomic, as the
commit protocol on S3 relies on.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

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


@contextmanager
def s3_endpoint(bucket: str = "lake", key: str = "testing", secret: str = "testing") -> Iterator[str]:
    """Start moto's S3 server with `bucket`; yield its endpoint URL; stop it on exit."""
    moto_server = pytest.importorskip("moto.server")
    boto3 = pytest.importorskip("boto3")
    pytest.importorskip("s3fs")
    _atomic_put_object()
    # port 0: the server binds a free port itself (no window for another process to take it)
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        endpoint = "http://{}:{}".format(*server.get_host_and_port())
        boto3.client(
            "s3", endpoint_url=endpoint, aws_access_key_id=key, aws_secret_access_key=secret, region_name="us-east-1"
        ).create_bucket(Bucket=bucket)
        yield endpoint
    finally:
        server.stop()


def fsspec_options(endpoint: str, key: str = "testing", secret: str = "testing") -> dict:
    """s3fs storage options for `endpoint`."""
    return {"key": key, "secret": secret, "client_kwargs": {"endpoint_url": endpoint, "region_name": "us-east-1"}}
