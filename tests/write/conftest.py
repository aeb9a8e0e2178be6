"""Fixtures for the writer tests: tables in tmp_path, a moto S3 server on 127.0.0.1, helpers."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


@pytest.fixture(scope="session")
def s3_server():
    """A moto S3 server on 127.0.0.1 (started and stopped here) with a bucket `lake`; its options."""
    from s3_server import fsspec_options, s3_endpoint

    with s3_endpoint() as endpoint:
        yield fsspec_options(endpoint)


@pytest.fixture(params=["local", pytest.param("s3", marks=pytest.mark.s3)])
def location(request, tmp_path):
    """(uri, storage_options) of an empty table location, on local disk and on S3."""
    if request.param == "local":
        return str(tmp_path / "t"), None
    options = request.getfixturevalue("s3_server")
    return f"s3://lake/{uuid.uuid4().hex}/t", options
