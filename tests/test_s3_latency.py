"""An object store at its latency: moto's S3 server with 40 ms added to every GET and HEAD of an
object (in the server: the requests are real HTTP). A table with a multi-part checkpoint and
100 JSON commits opens with its commits fetched side by side, never more than the bound at once,
and gives the same state (replayed and streamed) as the local copy."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from s3_server import fsspec_options, s3_endpoint

import deltaexplore as dx
from deltaexplore.inspect.streaming import file_pass

pytestmark = pytest.mark.s3

GENERATOR = Path(__file__).resolve().parents[1] / "benchmarks" / "gen_many_files.py"
LATENCY_S = 0.04
#: the most requests in flight this test allows (the storage option `max_concurrency`; the
#: default, `storage.concurrency.DEFAULT_MAX_CONCURRENCY`, is more than the 100 commits)
BOUND = 16


class InFlight:
    """Counts the object GET/HEADs being served at once (the most seen)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now = self.most = self.total = 0

    def wrap(self, method):  # type: ignore[no-untyped-def]
        def slow(response, *args, **kwargs):  # type: ignore[no-untyped-def]
            with self.lock:
                self.now += 1
                self.total += 1
                self.most = max(self.most, self.now)
            try:
                time.sleep(LATENCY_S)
                return method(response, *args, **kwargs)
            finally:
                with self.lock:
                    self.now -= 1

        return slow


@pytest.fixture(scope="module")
def slow_s3(tmp_path_factory):
    boto3 = pytest.importorskip("boto3")
    local = tmp_path_factory.mktemp("slow") / "t"
    subprocess.run(
        [sys.executable, str(GENERATOR), str(local), "--files", "30000", "--parts", "3", "--commits", "100"], check=True
    )
    with s3_endpoint() as endpoint:
        client = boto3.client(
            "s3", endpoint_url=endpoint, aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-east-1"
        )
        for dirpath, _, names in os.walk(local):
            for name in names:
                full = os.path.join(dirpath, name)
                client.upload_file(full, "lake", "t/" + os.path.relpath(full, local).replace(os.sep, "/"))
        from moto.s3.responses import S3Response

        counter = InFlight()
        originals = {name: getattr(S3Response, name) for name in ("get_object", "head_object")}
        for name, method in originals.items():
            setattr(S3Response, name, counter.wrap(method))
        try:
            yield str(local), fsspec_options(endpoint), counter
        finally:
            for name, method in originals.items():
                setattr(S3Response, name, method)


def test_commits_are_fetched_side_by_side_within_the_bound(slow_s3):
    local, options, counter = slow_s3
    counter.most = counter.total = 0
    remote = dx.open_table("s3://lake/t", storage_options={**options, "max_concurrency": BOUND}).snapshot()
    assert remote.version == 101 and len(remote.segment.json_files) == 100
    expected = dx.open_table(local).snapshot().add_actions()
    got = remote.add_actions()
    assert sorted(got.column("path").to_pylist()) == sorted(expected.column("path").to_pylist())
    # 100 commits behind 40 ms each: read one after the other they would never overlap
    assert 8 <= counter.most <= BOUND + 4  # the bound, plus a checkpoint part's or listing's own requests
    assert counter.total >= 100


def test_streaming_pass_over_s3_equals_local(slow_s3):
    local, options, _ = slow_s3
    remote = file_pass(dx.open_table("s3://lake/t", storage_options=options).snapshot())
    here = file_pass(dx.open_table(local).snapshot())
    assert remote.partitions().equals(here.partitions())
    assert remote.file_sizes().equals(here.file_sizes())
    assert remote.deletion_vectors().equals(here.deletion_vectors())
