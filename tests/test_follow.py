"""Follow mode (`dx.follow`): new versions appear with their summaries, polling backs off while
nothing lands, the follower stops cleanly (stop, with-block, kernel interrupt) and never holds
the caller; on a local table and on S3 (moto)."""

from __future__ import annotations

import _thread
import threading
import time
from pathlib import Path

import pyarrow as pa
import pytest
from snapshot_compare import cold_state, differences, state

import deltaexplore as dx
from deltaexplore.core import operations as ops
from deltaexplore.core.follow import SUMMARY_SCHEMA, Follower, FollowUpdate, summaries
from deltaexplore.core.write.log_cleanup import cleanup_log
from deltaexplore.errors import InvalidArgumentError

WAIT = 20.0  # seconds: reached only when the behaviour is broken


def _write(uri: str, ids: list[int], options: dict | None = None, **kwargs) -> None:
    ops.write_table(uri, pa.table({"id": pa.array(ids, pa.int64())}), storage_options=options, **kwargs)


def _differences(snapshot: dx.Snapshot, cold: dict | str) -> list[str]:
    """`snapshot_compare.differences`, but for the `.crc` file: a writer puts it after its commit,
    so a poll between the two sees the commit alone (a later cold read finds both)."""
    return [d for d in differences(state(snapshot), cold) if d != "crc"]


def _until(check, what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not check():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.02)


def test_new_versions_arrive_with_their_summaries_across_a_checkpoint_and_log_cleanup(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    _write(uri, [1, 2])
    updates: list[FollowUpdate] = []
    with dx.follow(uri, interval=0.05, max_interval=0.2, on_change=updates.append) as follower:
        assert follower.version == 0 and follower.running
        _write(uri, [3, 4, 5])
        ops.delete(uri, "id = 1")
        _until(lambda: follower.version == 2, "versions 1 and 2")
        history = {r["version"]: r for r in dx.open_table(uri).history().to_pylist()}  # before the cleanup
        ops.checkpoint(uri)
        ops.set_table_properties(uri, {"delta.logRetentionDuration": "interval 0 seconds"})
        ops.checkpoint(uri)
        cleanup_log(dx.open_table(uri), retention_ms=0, now_ms=int(time.time() * 1000) + 60_000)
        _write(uri, [6], mode="overwrite")
        _until(lambda: follower.version == 4, "versions 3 and 4")
    assert not follower.running
    commits = follower.commits()
    assert commits.schema == SUMMARY_SCHEMA
    assert commits.column("version").to_pylist() == [1, 2, 3, 4]
    history.update({r["version"]: r for r in dx.open_table(uri).history().to_pylist()})
    for row in commits.to_pylist():
        h = history[row["version"]]
        assert row["operation"] == h["operation"]
        for name in ("files_added", "files_removed", "rows_added", "rows_removed", "bytes_added", "bytes_removed"):
            assert row[name] == h[name], (row["version"], name)
    assert [r["operation"] for r in commits.to_pylist()] == ["WRITE", "DELETE", "SET TBLPROPERTIES", "WRITE"]
    assert commits.column("rows_added").to_pylist()[0] == 3
    # the callbacks saw every version once, in order; the last snapshot is what a cold read gives
    assert [v for u in updates for v in u.commits.column("version").to_pylist()] == [1, 2, 3, 4]
    assert _differences(follower.snapshot, cold_state(uri, 4)) == []


def test_polling_backs_off_while_nothing_lands_and_starts_again_on_a_commit(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    _write(uri, [1])
    delay_on_change: list[float] = []
    follower = Follower(
        dx.open_table(uri),
        interval=0.05,
        max_interval=0.4,
        start=False,
        on_change=lambda _update: delay_on_change.append(follower.delay),
    )
    delays = []
    for _ in range(5):
        assert follower.poll() is None
        follower.delay = min(follower.max_interval, follower.delay * 2)  # what the thread does
        delays.append(follower.delay)
    assert delays == [0.1, 0.2, 0.4, 0.4, 0.4]  # bounded
    follower.start()
    _until(lambda: follower.delay == follower.max_interval and follower.polls > 6, "the back-off's bound")
    _write(uri, [2])
    _until(lambda: bool(delay_on_change), "version 1")
    assert delay_on_change == [0.05]  # the wait starts again from the interval on a new commit
    follower.stop()
    assert not follower.running and follower._thread is not None and not follower._thread.is_alive()


def test_following_never_holds_the_caller_and_stops_at_once(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    _write(uri, [1])
    follower = dx.follow(uri, interval=60, max_interval=600)  # returns while its thread waits a minute
    assert follower.running and follower.polls == 0
    follower.stop(timeout=WAIT)  # wakes the thread's wait: no minute to sit out
    assert follower._thread is not None and not follower._thread.is_alive()


def test_iterating_ends_on_a_kernel_interrupt_and_stops_the_follower(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    _write(uri, [1])
    follower = dx.follow(uri, interval=0.05, max_interval=0.1)
    seen = []

    def writer_then_interrupt() -> None:
        _write(uri, [2])
        _until(lambda: bool(seen), "the update iterated")
        _thread.interrupt_main()  # what the kernel's interrupt does to the running cell

    threading.Thread(target=writer_then_interrupt, daemon=True).start()
    for update in follower:  # a notebook cell that watches the table
        seen.append(update.snapshot.version)
    assert seen == [1] and not follower.running


def test_a_failing_callback_does_not_end_the_follow(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    _write(uri, [1])
    calls = []

    def broken(update) -> None:
        calls.append(update.snapshot.version)
        raise RuntimeError("a bug in the user's callback")

    with dx.follow(uri, interval=0.05, max_interval=0.1, on_change=broken) as follower:
        _write(uri, [2])
        _until(lambda: calls == [1], "the first call")
        _write(uri, [3])
        _until(lambda: calls == [1, 2], "the second call")
        assert follower.running


@pytest.mark.parametrize(
    "kwargs", [{"interval": 0}, {"interval": -1}, {"interval": "1"}, {"interval": True}, {"interval": 2, "max_interval": 1}]
)
def test_bad_intervals_are_refused(tmp_path: Path, kwargs: dict) -> None:
    uri = str(tmp_path / "t")
    _write(uri, [1])
    with pytest.raises(InvalidArgumentError):
        dx.follow(uri, **kwargs)


def test_summaries_of_a_range(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    for i in range(3):
        _write(uri, [i, i + 10])
    rows = summaries(dx.open_table(uri), 1, 2).to_pylist()
    assert [(r["version"], r["operation"], r["files_added"], r["rows_added"]) for r in rows] == [
        (1, "WRITE", 1, 2),
        (2, "WRITE", 1, 2),
    ]


@pytest.mark.s3
def test_follow_on_s3() -> None:
    from s3_server import fsspec_options, s3_endpoint

    with s3_endpoint() as endpoint:
        options = fsspec_options(endpoint)
        uri = "s3://lake/followed"
        _write(uri, [1, 2], options)
        with dx.follow(uri, options, interval=0.05, max_interval=0.2) as follower:
            _write(uri, [3], options)
            _write(uri, [4], options)
            _until(lambda: follower.version == 2, "versions 1 and 2 on S3")
            assert follower.error is None
        assert follower.commits().column("version").to_pylist() == [1, 2]
        assert follower.commits().column("rows_added").to_pylist() == [1, 1]
        assert _differences(follower.snapshot, cold_state(uri, 2, options)) == []
