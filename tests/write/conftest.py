"""Fixtures for the writer tests: tables in tmp_path, a moto S3 server on 127.0.0.1, helpers."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


@pytest.fixture(scope="session")
def s3_server():
    """A moto S3 server on 127.0.0.1 (started and stopped here) with a bucket `lake`."""
    moto_server = pytest.importorskip("moto.server")
    boto3 = pytest.importorskip("boto3")
    pytest.importorskip("s3fs")
    # port 0: the server binds a free port itself (no window for another process to take it)
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    endpoint = "http://{}:{}".format(*server.get_host_and_port())
    client = boto3.client(
        "s3", endpoint_url=endpoint, aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-east-1"
    )
    client.create_bucket(Bucket="lake")
    options = {"key": "testing", "secret": "testing", "client_kwargs": {"endpoint_url": endpoint, "region_name": "us-east-1"}}
    yield options
    server.stop()


@pytest.fixture(params=["local", pytest.param("s3", marks=pytest.mark.s3)])
def location(request, tmp_path):
    """(uri, storage_options) of an empty table location, on local disk and on S3."""
    if request.param == "local":
        return str(tmp_path / "t"), None
    options = request.getfixturevalue("s3_server")
    return f"s3://lake/{uuid.uuid4().hex}/t", options
