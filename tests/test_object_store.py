"""Object stores at their latency: reads overlapped up to a bound, transient failures retried,
a failed open typed and leaving nothing behind; results equal to the local path.

S3 is moto's server on 127.0.0.1 behind `Faults` (latency and `503 SlowDown` per request). GCS
and Azure have no emulator among the project's Python packages: their paths (`gs://`, `az://`)
run through the same `FsspecStorage` code on fsspec's memory filesystem with a latency per call.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import fsspec
import pytest
from fsspec.implementations.memory import MemoryFileSystem
from s3_server import Faults, fsspec_options, s3_endpoint

import deltaexplore as dx
from deltaexplore.errors import StorageError
from deltaexplore.storage.concurrency import map_bounded
from deltaexplore.storage.retries import is_transient, with_retries

TABLES = [
    "delta-golden/checkpoint",  # checkpoint + commits
    "dat/deletion_vectors/delta",  # deletion vectors
    "delta-kernel-rs/v2-parquet-sidecars-struct-stats-only",  # V2 checkpoint, parquet sidecars
    "delta-golden/data-reader-partition-values",  # every partition type
    "delta-kernel-rs/cdf-table-with-cdc-and-dvs",  # 26 commits, deletion vectors
]
LATENCY_S = 0.02


def _files(snapshot: dx.core.snapshot.Snapshot) -> list:
    return sorted(map(repr, snapshot.files().select(["path", "size", "num_records"]).to_pylist()))


def _rows(snapshot: dx.core.snapshot.Snapshot) -> list:
    try:
        return sorted(map(repr, snapshot.to_arrow().to_pylist()))
    except dx.DeltaExploreError:
        return []  # log-only table


@pytest.fixture(scope="module")
def s3(corpus):
    boto3 = pytest.importorskip("boto3")
    faults = Faults()
    with s3_endpoint(faults=faults) as endpoint:
        client = boto3.client(
            "s3", endpoint_url=endpoint, aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-east-1"
        )
        for rel in TABLES:
            root = corpus / rel
            for dirpath, _, files in os.walk(root):
                for name in files:
                    full = os.path.join(dirpath, name)
                    client.upload_file(full, "lake", f"{rel}/{os.path.relpath(full, root)}".replace(os.sep, "/"))
        yield faults, fsspec_options(endpoint)


@pytest.fixture
def faults(s3):
    faults, _ = s3
    faults.reset()
    faults.latency_s = LATENCY_S
    yield faults
    faults.reset()
    faults.latency_s = 0.0


@pytest.mark.s3
@pytest.mark.parametrize("rel", TABLES)
def test_s3_at_latency_equals_local(s3, faults, corpus, rel):
    _, options = s3
    local = dx.open_table(str(corpus / rel)).snapshot()
    remote = dx.open_table(f"s3://lake/{rel}", storage_options=options).snapshot()
    assert remote.version == local.version
    assert _files(remote) == _files(local)
    assert _rows(remote) == _rows(local)


@pytest.mark.s3
def test_s3_requests_overlap_within_the_bound(s3, faults, corpus):
    _, options = s3
    rel = "delta-kernel-rs/cdf-table-with-cdc-and-dvs"
    assert len(dx.open_table(str(corpus / rel)).listing().commits) > 4
    dx.open_table(f"s3://lake/{rel}", storage_options={**options, "max_concurrency": 3}).snapshot().files()
    assert faults.max_in_flight == 3  # the commits were read three at a time, never more
    faults.reset()
    dx.open_table(f"s3://lake/{rel}", storage_options={**options, "max_concurrency": 1}).snapshot().files()
    assert faults.max_in_flight == 1


@pytest.mark.s3
def test_s3_checkpoint_fetched_once_in_one_request(s3, faults):
    _, options = s3
    rel = "delta-golden/checkpoint"
    dx.open_table(f"s3://lake/{rel}", storage_options=options).snapshot().files()
    gets = [r for r in faults.requests if r[0] == "GET" and r[1].endswith(".checkpoint.parquet")]
    assert len(gets) == 1  # opened twice (metadata, then files), fetched whole once


@pytest.mark.s3
def test_s3_transient_failures_are_retried(s3, faults, corpus):
    _, options = s3
    rel = "delta-kernel-rs/v2-parquet-sidecars-struct-stats-only"
    seen: set[str] = set()
    lock = threading.Lock()

    def first_attempt_fails(method: str, path: str, query: str) -> bool:
        key = f"{method} {path} {query}"
        with lock:
            if key in seen:
                return False
            seen.add(key)
            return True

    faults.fail = first_attempt_fails
    remote = dx.open_table(f"s3://lake/{rel}", storage_options=options).snapshot()
    local = dx.open_table(str(corpus / rel)).snapshot()
    assert _files(remote) == _files(local)
    assert _rows(remote) == _rows(local)
    failed = [r for r in faults.requests if r[4]]
    assert len(failed) >= 5  # listing, commits, checkpoint, sidecars: each failed once, then answered
    assert any(".checkpoint." in r[1] and "_sidecars" not in r[1] for r in failed) and any("_sidecars" in r[1] for r in failed)


@pytest.mark.s3
@pytest.mark.parametrize("target", [".json", ".checkpoint.parquet"])
def test_s3_failed_open_is_typed_and_leaves_nothing_half_built(s3, faults, corpus, target):
    _, options = s3
    rel = "delta-golden/checkpoint"
    faults.latency_s = 0.0
    faults.fail = lambda method, path, query: method == "GET" and path.endswith(target)
    table = dx.open_table(f"s3://lake/{rel}", storage_options={**options, "config_kwargs": {"retries": {"max_attempts": 1}}})
    with pytest.raises(dx.DeltaExploreError) as err:
        table.snapshot().files()
    assert isinstance(err.value, StorageError) or "cannot be read" in str(err.value) or "cannot read" in str(err.value)
    assert "testing" not in str(err.value)  # no credential in the message
    faults.fail = None  # the store recovers: the same table opens in full, nothing kept from the failure
    assert _files(table.snapshot()) == _files(dx.open_table(str(corpus / rel)).snapshot())


# -- GCS and Azure paths: the same code on fsspec's memory filesystem with a latency ----------
class _SlowMemory(MemoryFileSystem):
    """An in-memory object store of its own, every call answered after `LATENCY_S`."""

    store: dict = {}  # noqa: RUF012 - fsspec's memory filesystems share a class-level store
    pseudo_dirs = [""]  # noqa: RUF012
    in_flight = 0
    max_in_flight = 0
    lock = threading.Lock()

    @classmethod
    def _strip_protocol(cls, path):  # type: ignore[no-untyped-def, override]
        for scheme in cls.protocol:
            if path.startswith(f"{scheme}://"):
                path = path[len(scheme) + 3 :]
        return super()._strip_protocol(path)

    def _slow(self) -> None:
        cls = type(self)
        with cls.lock:
            cls.in_flight += 1
            cls.max_in_flight = max(cls.max_in_flight, cls.in_flight)
        time.sleep(LATENCY_S)
        with cls.lock:
            cls.in_flight -= 1

    def cat_file(self, path, start=None, end=None, **kwargs):  # type: ignore[no-untyped-def, override]
        self._slow()
        return super().cat_file(path, start=start, end=end, **kwargs)

    def ls(self, path, detail=True, **kwargs):  # type: ignore[no-untyped-def, override]
        self._slow()
        return super().ls(path, detail=detail, **kwargs)

    def info(self, path, **kwargs):  # type: ignore[no-untyped-def, override]
        self._slow()
        return super().info(path, **kwargs)


@pytest.mark.parametrize("scheme", ["gs", "az"])
def test_gcs_and_azure_paths_at_latency_equal_local(monkeypatch, corpus, scheme):
    cls = type(f"SlowMemory_{scheme}", (_SlowMemory,), {"protocol": (scheme,), "store": {}, "pseudo_dirs": [""]})
    monkeypatch.setitem(sys.modules["fsspec.registry"]._registry, scheme, cls)
    fs = fsspec.filesystem(scheme, skip_instance_cache=True)
    for rel in ("delta-golden/checkpoint", "delta-kernel-rs/v2-parquet-sidecars-struct-stats-only"):
        root = Path(corpus / rel)
        for f in root.rglob("*"):
            if f.is_file():
                fs.pipe_file(f"bucket/{rel}/{f.relative_to(root).as_posix()}", f.read_bytes())
        cls.max_in_flight = 0
        remote = dx.open_table(f"{scheme}://bucket/{rel}").snapshot()
        local = dx.open_table(str(root)).snapshot()
        assert remote.version == local.version
        assert _files(remote) == _files(local)
        assert cls.max_in_flight > 1  # commits, checkpoint parts and sidecars overlapped


@pytest.mark.s3
def test_s3_open_reads_each_log_file_in_one_request_without_s3fs(s3, faults, corpus):
    _, options = s3
    rel = "delta-kernel-rs/cdf-table-with-cdc-and-dvs"
    faults.latency_s = 0.0
    script = (
        "import sys, deltaexplore as dx; "
        f"dx.open_table('s3://lake/{rel}', storage_options={options!r}).snapshot().files(); "
        "print(sorted(m for m in ('s3fs', 'aiobotocore', 'botocore') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"  # reads and listings are plain signed requests
    commits = dx.open_table(str(corpus / rel)).listing().commits
    reads = [r for r in faults.requests if r[0] in ("GET", "HEAD") and r[1].endswith(".json")]
    assert sorted(r[1].rsplit("/", 1)[-1] for r in reads) == sorted(c.path.rsplit("/", 1)[-1] for c in commits.values())
    assert all(r[0] == "GET" for r in reads)  # the listing gave the sizes: no HEAD before a GET


@pytest.mark.s3
def test_s3_listing_in_ranges_equals_one_listing(s3, faults, corpus):
    _, options = s3
    rel = "delta-kernel-rs/cdf-table-with-cdc-and-dvs"
    storage = dx.open_table(f"s3://lake/{rel}", storage_options=options).storage
    whole = storage.list_dir("_delta_log")
    assert [f.name for f in whole] == sorted(p.name for p in (corpus / rel / "_delta_log").iterdir() if p.is_file())
    faults.reset()
    cuts = ["00000000000000000003", "00000000000000000010", "00000000000000000011", "00000000000000000099"]
    assert storage.list_dir_split("_delta_log", cuts) == whole
    starts = sorted(q for m, _, q, _, _ in faults.requests if m == "GET" and "list-type=2" in q)
    assert len(starts) == len(cuts) + 1  # one request per range, at once
    assert faults.max_in_flight > 1
    later = storage.list_dir_split("_delta_log", cuts, start_after="00000000000000000010.json")
    assert later == [f for f in whole if f.name > "00000000000000000010.json"]
    with pytest.raises(FileNotFoundError):
        dx.open_table("s3://lake/no-such-table", storage_options=options).storage.list_dir("_delta_log")


def test_s3_request_signature_matches_botocore():
    import datetime as dt

    auth = pytest.importorskip("botocore.auth")
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    from deltaexplore.storage.s3_requests import S3Client

    client = S3Client(endpoint="http://127.0.0.1:9000", region="eu-west-1", credentials=("AKID", "SECRET/KEY", "TOKEN"))
    query = "continuation-token=a%2Fb%3D&list-type=2&prefix=t%2F_delta_log%2F&start-after=t%2F_delta_log%2F0009"
    for path, q in [("/lake/", query), ("/lake/t/_delta_log/00000000000000000001%20a%2Bb.json", "")]:
        request = AWSRequest(
            method="GET", url=f"http://127.0.0.1:9000{path}{'?' + q if q else ''}", headers={"range": "bytes=0-9"}
        )
        auth.S3SigV4Auth(Credentials("AKID", "SECRET/KEY", "TOKEN"), "s3", "eu-west-1").add_auth(request)
        when = dt.datetime.strptime(request.headers["X-Amz-Date"], "%Y%m%dT%H%M%SZ").replace(tzinfo=dt.UTC)
        ours = client._sign("GET", path, q, {"host": "127.0.0.1:9000", "range": "bytes=0-9"}, when)
        assert ours["authorization"] == request.headers["Authorization"]


# -- the pieces ---------------------------------------------------------------------------------
def test_with_retries_backs_off_then_succeeds():
    calls, pauses = [], []

    def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise OSError("503 SlowDown: Please reduce your request rate")
        return "ok"

    assert with_retries(flaky, base_delay=0.1, sleep=pauses.append) == "ok"
    assert len(calls) == 3 and len(pauses) == 2
    assert 0 <= pauses[0] <= 0.1 and 0 <= pauses[1] <= 0.2  # full jitter under a doubling cap


def test_with_retries_gives_up_and_never_retries_a_lasting_error():
    calls = []

    def down() -> None:
        calls.append(1)
        raise ConnectionError("connection refused")

    with pytest.raises(ConnectionError):
        with_retries(down, attempts=4, sleep=lambda s: None)
    assert len(calls) == 4
    calls.clear()

    def missing() -> None:
        calls.append(1)
        raise FileNotFoundError("no such key")

    with pytest.raises(FileNotFoundError):
        with_retries(missing, sleep=lambda s: None)
    assert len(calls) == 1
    assert not is_transient(PermissionError("403 Forbidden"))
    assert is_transient(RuntimeError("An error occurred (SlowDown) when calling GetObject"))


def test_map_bounded_keeps_order_and_bound():
    lock = threading.Lock()
    state = {"now": 0, "most": 0}

    def work(x: int) -> int:
        with lock:
            state["now"] += 1
            state["most"] = max(state["most"], state["now"])
        time.sleep(0.01)
        with lock:
            state["now"] -= 1
        if x == 7:
            raise ValueError("seven")
        return x * 2

    assert map_bounded(work, list(range(7)), 3) == [0, 2, 4, 6, 8, 10, 12]
    assert state["most"] == 3
    with pytest.raises(ValueError, match="seven"):
        map_bounded(work, list(range(10)), 4)
    assert state["now"] == 0  # every call had ended when the error was raised


def test_max_concurrency_option_is_checked():
    with pytest.raises(StorageError, match="max_concurrency"):
        dx.open_table("memory://nowhere", storage_options={"max_concurrency": 0})


def _history(table: dx.Table) -> list:
    return table.history().select(["version", "operation"]).to_pylist()


@pytest.mark.s3
def test_s3_open_lists_from_the_checkpoint_and_the_rest_when_asked(s3, faults, corpus):
    _, options = s3
    rel = "delta-golden/checkpoint"  # checkpoint 10, commits 0-14
    local = dx.open_table(str(corpus / rel))
    remote = dx.open_table(f"s3://lake/{rel}", storage_options=options)
    snap = remote.snapshot()
    assert _files(snap) == _files(local.snapshot())
    lists = [q for m, _, q, _, _ in faults.requests if m == "GET" and "list-type=2" in q]
    # one page holds the whole log: asked for while `_last_checkpoint` is read, it is the listing
    # (a log past one page lists from the checkpoint on: test_s3_open_overlapping_...)
    assert len(lists) == 1 and "start-after" not in lists[0]
    assert remote._listing is not None and remote._listing.tail_from == 0
    assert not any(r[1].endswith(("00000000000000000003.json", "00000000000000000009.json")) for r in faults.requests)
    # history, old versions and time travel list the older names, once
    faults.reset()
    assert _history(remote) == _history(local)
    assert remote._listing.tail_from == 0
    assert sorted(remote.listing(refresh=False).commits) == sorted(local.listing().commits)
    assert _files(remote.snapshot(3)) == _files(local.snapshot(3))
    rest = [q for m, _, q, _, _ in faults.requests if m == "GET" and "list-type=2" in q]
    assert len(rest) == 1  # history lists afresh (one page), once
    ts = remote.snapshot().clock.timestamp(5)
    assert _files(dx.open_table(f"s3://lake/{rel}", storage_options=options).snapshot(timestamp=ts)) == _files(local.snapshot(5))


def _memory_copy(corpus: Path, rel: str, name: str) -> str:
    fs = fsspec.filesystem("memory")
    root = corpus / rel
    for f in root.rglob("*"):
        if f.is_file():
            fs.pipe_file(f"/{name}/{f.relative_to(root).as_posix()}", f.read_bytes())
    return f"memory://{name}"


def test_hint_to_a_missing_checkpoint_lists_the_whole_log(corpus):
    uri = _memory_copy(corpus, "delta-golden/checkpoint", "hint-missing")
    fs = fsspec.filesystem("memory")
    fs.pipe_file("/hint-missing/_delta_log/_last_checkpoint", b'{"version":12,"size":14}')
    table = dx.open_table(uri)
    snap = table.snapshot()
    listing = table.listing(refresh=False)
    assert listing.tail_from == 0 and "missing" in (listing.last_checkpoint.problem or "")
    assert _files(snap) == _files(dx.open_table(str(corpus / "delta-golden/checkpoint")).snapshot())


def test_gap_after_the_listed_checkpoint_is_the_same_error_as_local(corpus, tmp_path):
    rel = "delta-golden/checkpoint"
    uri = _memory_copy(corpus, rel, "gap-after")
    fsspec.filesystem("memory").rm_file("/gap-after/_delta_log/00000000000000000012.json")
    local_root = tmp_path / "t"
    shutil.copytree(corpus / rel, local_root)
    (local_root / "_delta_log" / "00000000000000000012.json").unlink()
    with pytest.raises(dx.DeltaExploreError) as local_error:
        dx.open_table(str(local_root)).snapshot()
    with pytest.raises(type(local_error.value)) as remote_error:
        dx.open_table(uri).snapshot()
    assert "12" in str(remote_error.value) and str(remote_error.value).split(":")[-1] == str(local_error.value).split(":")[-1]


@pytest.mark.s3
def test_s3_listing_stops_before_a_name(s3, faults, corpus):
    _, options = s3
    storage = dx.open_table("s3://lake/delta-kernel-rs/cdf-table-with-cdc-and-dvs", storage_options=options).storage
    whole = storage.list_dir("_delta_log")
    cut = "00000000000000000011"
    expected = [f for f in whole if f.name < cut]
    assert storage.list_dir_split("_delta_log", ["00000000000000000003"], stop_before=cut) == expected
    assert storage.list_dir_split("_delta_log", [], stop_before="00000000000000000000") == []  # an empty range is no error


def _outcome(table: dx.Table) -> tuple:
    """What an open shows: version, files, history versions; or the error's type."""
    try:
        snap = table.snapshot()
        return snap.version, _files(snap), table.history().column("version").to_pylist()
    except dx.DeltaExploreError as exc:
        return (type(exc).__name__,)


def test_every_corpus_table_on_an_object_store_equals_local(corpus):
    """Through `FsspecStorage` (the object-store path: `_last_checkpoint` first, the listing from
    its checkpoint, the older names when history asks), every corpus table opens as it does
    locally, or fails with the same error type."""
    fs = fsspec.filesystem("memory")
    differ = []
    for i, log in enumerate(sorted(corpus.rglob("_delta_log"))):
        root = log.parent
        name = f"corpus-{i}"
        for f in root.rglob("*"):
            if f.is_file() and not f.is_symlink():
                fs.pipe_file(f"/{name}/{f.relative_to(root).as_posix()}", f.read_bytes())
        try:
            remote, local = _outcome(dx.open_table(f"memory://{name}")), _outcome(dx.open_table(str(root)))
            if remote != local:
                differ.append((str(root.relative_to(corpus)), remote[:1], local[:1]))
        finally:
            fs.rm(f"/{name}", recursive=True)
    assert not differ


# -- many reads at once on S3 (`S3Client.get_many`: one thread on asyncio) ---------------------
@pytest.mark.s3
def test_s3_read_many_equals_one_read_at_a_time_within_the_bound(s3, faults, corpus):
    _, options = s3
    rel = "delta-kernel-rs/cdf-table-with-cdc-and-dvs"
    storage = dx.open_table(f"s3://lake/{rel}", storage_options={**options, "max_concurrency": 4}).storage
    names = sorted(p.name for p in (corpus / rel / "_delta_log").glob("*.json"))
    paths = [f"_delta_log/{n}" for n in names]
    faults.reset()
    faults.latency_s = LATENCY_S
    many = storage.read_many(paths)
    assert many == [(corpus / rel / p).read_bytes() for p in paths]
    assert faults.max_in_flight == 4  # four connections kept alive, never more requests at once
    assert sum(1 for r in faults.requests if r[0] == "GET") == len(paths)  # one request per file


@pytest.mark.s3
def test_s3_read_many_retries_what_failed_for_now_and_types_the_rest(s3, faults, corpus):
    _, options = s3
    rel = "delta-kernel-rs/cdf-table-with-cdc-and-dvs"
    storage = dx.open_table(f"s3://lake/{rel}", storage_options=options).storage
    paths = [f"_delta_log/{i:020d}.json" for i in range(6)]
    seen: set[str] = set()
    lock = threading.Lock()

    def first_attempt_fails(method: str, path: str, query: str) -> bool:
        with lock:
            if path in seen:
                return False
            seen.add(path)
            return True

    faults.fail = first_attempt_fails
    assert storage.read_many(paths) == [(corpus / rel / p).read_bytes() for p in paths]
    assert sum(1 for r in faults.requests if r[4]) == len(paths)  # each failed once (503), then answered
    faults.fail = None
    with pytest.raises(FileNotFoundError) as missing:
        storage.read_many([*paths, "_delta_log/00000000000000099999.json"])
    assert missing.value.filename == "_delta_log/00000000000000099999.json"
    faults.fail = lambda method, path, query: True  # 503 on every attempt: retried, then a StorageError
    with pytest.raises(StorageError, match="SlowDown"):
        storage.read_many(paths[:2])


@pytest.mark.s3
def test_s3_get_many_past_the_connect_ramp_stays_within_the_bound(s3, faults, corpus):
    """More workers than `CONNECT_RAMP`: they start a batch at a time, answers equal one read at
    a time, and the bound (40) holds while the second batch joins the first."""
    from deltaexplore.storage.s3_requests import CONNECT_RAMP, S3Client

    _, options = s3
    rel = "delta-kernel-rs/cdf-table-with-cdc-and-dvs"
    names = sorted(p.name for p in (corpus / rel / "_delta_log").glob("*.json"))
    keys = [f"{rel}/_delta_log/{n}" for n in names] * 3
    client = S3Client(
        endpoint=options["client_kwargs"]["endpoint_url"], region="us-east-1", credentials=("testing", "testing", None)
    )
    bound = CONNECT_RAMP + 8
    assert len(keys) > bound
    # Each answer held long enough that the first batch is still in flight when the second joins,
    # even on a loaded machine where connecting the second batch can take tens of milliseconds.
    faults.latency_s = 0.3
    got = client.get_many("lake", keys, max_in_flight=bound)
    assert got == [(corpus / rel / "_delta_log" / k.rsplit("/", 1)[1]).read_bytes() for k in keys]
    assert CONNECT_RAMP < faults.max_in_flight <= bound
    assert sum(1 for r in faults.requests if r[0] == "GET") == len(keys)


def test_s3_get_many_hands_back_connect_failures_past_the_ramp():
    """Nothing listens: every read ends with a ConnectionError (no batch waits for ever)."""
    import socket

    from deltaexplore.storage.s3_requests import CONNECT_RAMP, S3Client

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again below: a port nothing listens on
    client = S3Client(endpoint=f"http://127.0.0.1:{port}", region="us-east-1", credentials=None)
    got = client.get_many("lake", [f"t/{i}" for i in range(3 * CONNECT_RAMP)], max_in_flight=2 * CONNECT_RAMP)
    assert len(got) == 3 * CONNECT_RAMP
    assert all(isinstance(g, ConnectionError) for g in got)


def _run(coroutine):  # type: ignore[no-untyped-def]
    """`asyncio.run(coroutine)` on a thread of its own: this worker's thread may already run an
    event loop (Playwright's sync API, a kernel), where `asyncio.run` refuses to start."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def test_http_exchange_reads_every_body_framing():
    import asyncio

    from deltaexplore.storage.s3_requests import _exchange

    class Writer:
        def __init__(self) -> None:
            self.sent = b""

        def write(self, data: bytes) -> None:
            self.sent += data

        async def drain(self) -> None:
            return None

    async def answer(raw: bytes) -> tuple[int, str, bytes, bool, bytes]:
        reader = asyncio.StreamReader()
        reader.feed_data(raw)
        reader.feed_eof()
        writer = Writer()
        status, reason, body, keep = await _exchange(reader, writer, b"GET / HTTP/1.1\r\n\r\n")  # type: ignore[arg-type]
        return status, reason, body, keep, await reader.read()

    length = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloNEXT"
    assert _run(answer(length)) == (200, "OK", b"hello", True, b"NEXT")  # the next answer left unread
    chunked = b"HTTP/1.1 206 Partial Content\r\nTransfer-Encoding: chunked\r\n\r\n5;x=1\r\nhello\r\n3\r\n wo\r\n0\r\nT: 1\r\n\r\n"
    assert _run(answer(chunked)) == (206, "Partial Content", b"hello wo", True, b"")
    closing = b"HTTP/1.1 404 Not Found\r\nConnection: close\r\n\r\n<Error/>"
    assert _run(answer(closing)) == (404, "Not Found", b"<Error/>", False, b"")
    old = b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok"
    assert _run(answer(old))[3] is False  # HTTP/1.0: the connection is not kept


@pytest.mark.s3
def test_s3_read_many_inside_a_running_event_loop(s3, faults, corpus):
    """A notebook kernel's thread runs an event loop: the reads run on their own."""

    _, options = s3
    rel = "delta-kernel-rs/cdf-table-with-cdc-and-dvs"

    async def open_in_loop() -> list:
        return _files(dx.open_table(f"s3://lake/{rel}", storage_options=options).snapshot())

    assert _run(open_in_loop()) == _files(dx.open_table(str(corpus / rel)).snapshot())


def test_s3_get_many_reconnects_when_a_kept_alive_connection_was_closed():
    """A server that closes each connection after one answer without saying so: the next read
    on that connection fails and is sent again on a new one; a lasting failure is handed back."""
    import asyncio
    import socket

    from deltaexplore.storage.s3_requests import S3Client

    served: list[str] = []
    ready = threading.Event()
    box: dict = {}

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode()
        target = head.split(" ")[1]
        served.append(target)
        if target.endswith("/missing"):
            writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
        else:
            body = target.encode()
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        await writer.drain()
        writer.close()  # keep-alive promised (HTTP/1.1, no Connection: close), then broken

    def serve() -> None:
        async def main() -> None:
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            server = await asyncio.start_server(handle, sock=sock)
            box["port"] = sock.getsockname()[1]
            box["stop"] = asyncio.get_running_loop().create_future()
            ready.set()
            async with server:
                await box["stop"]

        asyncio.run(main())

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    assert ready.wait(10)
    try:
        client = S3Client(endpoint=f"http://127.0.0.1:{box['port']}", region="us-east-1", credentials=None)
        keys = [f"t/{i}" for i in range(6)] + ["t/missing"]
        got = client.get_many("lake", keys, max_in_flight=2)
        assert got[:6] == [f"/lake/t/{i}".encode() for i in range(6)]
        assert isinstance(got[6], FileNotFoundError)
        assert len(served) == 7  # each key answered once: the broken connections were replaced
    finally:
        loop_stop = box.get("stop")
        if loop_stop is not None:
            loop_stop.get_loop().call_soon_threadsafe(loop_stop.set_result, None)
        thread.join(5)


GENERATED_COMMITS = 1100  # names past one listing page (1,000)
GENERATED_CHECKPOINT = 1050


def _generated_log(root: Path) -> None:
    """A log of `GENERATED_COMMITS` commits, one small add each, written by hand."""
    log = root / "_delta_log"
    log.mkdir(parents=True)
    schema = '{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}'
    first = [
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
        {
            "metaData": {
                "id": "gen",
                "format": {"provider": "parquet", "options": {}},
                "schemaString": schema,
                "partitionColumns": [],
                "configuration": {},
                "createdTime": 0,
            }
        },
    ]
    import json

    for v in range(GENERATED_COMMITS):
        actions = [*first] if v == 0 else []
        actions.append({"commitInfo": {"timestamp": 1_000_000 + v, "operation": "WRITE"}})
        actions.append(
            {
                "add": {
                    "path": f"part-{v:05d}.parquet",
                    "partitionValues": {},
                    "size": 100 + v,
                    "modificationTime": 1_000_000 + v,
                    "dataChange": True,
                    "stats": json.dumps({"numRecords": v % 7 + 1}),
                }
            }
        )
        (log / f"{v:020d}.json").write_text("\n".join(json.dumps(a) for a in actions) + "\n")


@pytest.fixture(scope="module")
def generated(s3, tmp_path_factory):
    """Three logs of `GENERATED_COMMITS` commits on S3 and on disk: no checkpoint (`plain`),
    a checkpoint at `GENERATED_CHECKPOINT` (`ck`), and a `_last_checkpoint` naming that
    checkpoint where there is none (`hint-missing`)."""
    boto3 = pytest.importorskip("boto3")
    from concurrent.futures import ThreadPoolExecutor

    from deltaexplore.core.operations import checkpoint

    faults, options = s3
    base = tmp_path_factory.mktemp("generated")
    _generated_log(base / "plain")
    shutil.copytree(base / "plain", base / "ck")
    checkpoint(str(base / "ck"), version=GENERATED_CHECKPOINT)
    assert (base / "ck" / "_delta_log" / "_last_checkpoint").exists()
    shutil.copytree(base / "plain", base / "hint-missing")
    shutil.copy(base / "ck" / "_delta_log" / "_last_checkpoint", base / "hint-missing" / "_delta_log" / "_last_checkpoint")
    client = boto3.client(
        "s3",
        endpoint_url=options["client_kwargs"]["endpoint_url"],
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
    )
    uploads = [(f, f"gen/{f.relative_to(base).as_posix()}") for f in base.rglob("*") if f.is_file()]
    faults.latency_s = 0.0
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda u: client.upload_file(str(u[0]), "lake", u[1]), uploads))
    return base


@pytest.mark.s3
@pytest.mark.parametrize("name", ["plain", "ck", "hint-missing"])
def test_s3_open_overlapping_the_hint_and_the_first_page_equals_the_sequential_open(s3, faults, generated, name):
    _, options = s3
    local = dx.open_table(str(generated / name))
    expected = local.snapshot()
    faults.latency_s = 0.0  # the sequential open: one request at a time
    sequential = dx.open_table(f"s3://lake/gen/{name}", storage_options={**options, "max_concurrency": 1}).snapshot()
    faults.reset()
    faults.latency_s = LATENCY_S
    table = dx.open_table(f"s3://lake/gen/{name}", storage_options=options)
    snap = table.snapshot()
    requests = list(faults.requests)  # the open's
    lists = [q for m, _, q, _, _ in requests if m == "GET" and "list-type=2" in q]
    for other in (expected, sequential):
        assert snap.version == other.version == GENERATED_COMMITS - 1
        assert _files(snap) == _files(other)
        assert (snap.segment.checkpoint is None) == (other.segment.checkpoint is None)
    assert len(_files(snap)) == GENERATED_COMMITS
    listing = table.listing(refresh=False)
    assert listing.tail_from == (GENERATED_CHECKPOINT if name == "ck" else 0)  # "ck": the older names when asked
    listing.complete()
    assert listing.last_checkpoint == dx.open_table(str(generated / name)).listing().last_checkpoint
    assert sorted(listing.commits) == sorted(local.listing().commits)  # every name, once asked for
    gets = [r[1].rsplit("/", 1)[-1] for r in requests if r[0] == "GET" and "list-type=2" not in r[2]]
    assert gets.count("_last_checkpoint") == 1
    assert "start-after" not in lists[0]  # the first page, asked for with the hint
    if name == "plain":
        assert len(lists) == 2 and "start-after=gen%2Fplain%2F_delta_log%2F00000000000000000999.json" in lists[1]
        assert sum(g.endswith(".json") for g in gets) == GENERATED_COMMITS
    elif name == "ck":
        # the first page (wasted: more names follow), then from the checkpoint on
        assert "start-after=gen%2Fck%2F_delta_log%2F00000000000000001050" in lists[1]
        assert sum(g.endswith(".json") for g in gets) == GENERATED_COMMITS - 1 - GENERATED_CHECKPOINT
    else:
        assert "missing" in (listing.last_checkpoint.problem or "")
        assert sum(g.endswith(".json") for g in gets) == GENERATED_COMMITS
