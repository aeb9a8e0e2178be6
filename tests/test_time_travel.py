"""Version and timestamp time travel: monotonic file times, in-commit timestamps."""

from __future__ import annotations

import datetime as dt

import pytest
from helpers import add, commit_info, metadata, protocol, write_commit

import deltaexplore as dx

T0 = 1_700_000_000_000


def _table(tmp_path, mtimes):
    write_commit(tmp_path, 0, [commit_info(ts=mtimes[0]), protocol(), metadata(), add("f0.parquet")], mtime_ms=mtimes[0])
    for v, m in enumerate(mtimes[1:], start=1):
        write_commit(tmp_path, v, [commit_info(ts=m), add(f"f{v}.parquet")], mtime_ms=m)
    return dx.open_table(str(tmp_path))


def test_version_time_travel(tmp_path):
    table = _table(tmp_path, [T0, T0 + 1000, T0 + 2000])
    assert table.snapshot().version == 2
    assert table.snapshot(version=1).files().num_rows == 2
    assert table.snapshot(version=0).files().num_rows == 1


def test_timestamp_time_travel(tmp_path):
    table = _table(tmp_path, [T0, T0 + 1000, T0 + 2000])
    at = dx.core.log.timestamps.to_datetime  # noqa: F841 - module is importable
    assert table.snapshot(timestamp=T0 + 1500).version == 1
    assert table.snapshot(timestamp=dt.datetime.fromtimestamp((T0 + 1000) / 1000, dt.UTC)).version == 1
    iso = dt.datetime.fromtimestamp((T0 + 2500) / 1000, dt.UTC).isoformat().replace("+00:00", "Z")
    assert table.snapshot(timestamp=iso).version == 2
    with pytest.raises(dx.VersionNotFoundError, match="before the earliest"):
        table.snapshot(timestamp=T0 - 1)


def test_non_monotonic_file_times_are_adjusted(tmp_path):
    # v1 and v2 were written with clocks going backwards: they become v0 + 1 ms, v0 + 2 ms.
    table = _table(tmp_path, [T0 + 5000, T0 + 1000, T0 + 2000])
    history = table.history().to_pylist()
    times = {h["version"]: int(h["timestamp"].timestamp() * 1000) for h in history}
    assert times == {0: T0 + 5000, 1: T0 + 5001, 2: T0 + 5002}
    assert table.snapshot(timestamp=T0 + 5001).version == 1
    assert int(table.snapshot(version=2).timestamp.timestamp() * 1000) == T0 + 5002


def _ict_table(tmp_path, enable_at: int | None):
    """Commits 0..4 with file times T0+v s and in-commit timestamps T0+100 s + v s."""
    conf = {"delta.enableInCommitTimestamps": "true"}
    if enable_at is not None:
        conf["delta.inCommitTimestampEnablementVersion"] = str(enable_at)
        conf["delta.inCommitTimestampEnablementTimestamp"] = str(T0 + 100_000 + enable_at * 1000)
    proto = protocol(1, 7, None, ["inCommitTimestamp"])
    for v in range(5):
        actions = []
        if enable_at is None or v >= enable_at:
            actions.append(commit_info(ts=T0 + v * 1000, inCommitTimestamp=T0 + 100_000 + v * 1000))
        else:
            actions.append(commit_info(ts=T0 + v * 1000))
        if v == 0:
            actions += [proto, metadata(configuration=conf if enable_at is None else {})]
        if enable_at is not None and v == enable_at:
            actions += [proto, metadata(configuration=conf)]
        actions.append(add(f"f{v}.parquet"))
        write_commit(tmp_path, v, actions, mtime_ms=T0 + v * 1000)
    return dx.open_table(str(tmp_path))


def test_in_commit_timestamps_from_creation(tmp_path):
    table = _ict_table(tmp_path, None)
    snap = table.snapshot(version=3)
    assert int(snap.timestamp.timestamp() * 1000) == T0 + 103_000
    assert table.snapshot(timestamp=T0 + 102_500).version == 2
    with pytest.raises(dx.VersionNotFoundError):
        table.snapshot(timestamp=T0 + 3_000)  # file times are ignored with ICT


def test_in_commit_timestamps_enabled_later(tmp_path):
    table = _ict_table(tmp_path, 2)
    hist = {h["version"]: int(h["timestamp"].timestamp() * 1000) for h in table.history().to_pylist()}
    assert hist == {0: T0, 1: T0 + 1000, 2: T0 + 102_000, 3: T0 + 103_000, 4: T0 + 104_000}
    assert table.snapshot(timestamp=T0 + 1500).version == 1  # before enablement: file times
    assert table.snapshot(timestamp=T0 + 103_500).version == 3  # after: in-commit timestamps
    assert table.snapshot(timestamp=T0 + 50_000).version == 1  # between ranges
