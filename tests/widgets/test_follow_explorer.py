"""The explorer's Follow toggle and `%delta follow`: new versions extend the slider (the
explorer moves to them when the latest was shown), their commits' summaries arrive, an open
History tab shows them; the toggle, closing the widget and `follow=False` stop the poll."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import deltaexplore as dx
from deltaexplore.core import operations as ops
from deltaexplore.widgets import explore

WAIT = 20.0  # seconds: reached only when the behaviour is broken


def _until(check, what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not check():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.02)


def _copy(sales: str, tmp_path: Path) -> str:
    root = tmp_path / "sales"
    shutil.copytree(sales, root)
    return str(root)


def _append(uri: str, n: int) -> None:
    sample = dx.open_table(uri).snapshot().to_arrow().slice(0, n)
    ops.write_table(uri, sample)


def test_the_follow_toggle_shows_new_versions_as_they_land(sales, tmp_path):
    uri = _copy(sales, tmp_path)
    w = explore(uri, follow_interval=0.05)
    assert (w.version, w.max_version, w.follow) == (7, 7, False)
    w.tab = "history"
    w.follow = True  # the toggle
    assert w.follow_state["running"] is True and w._follower is not None and w._follower.running
    _append(uri, 2)
    _until(lambda: w.max_version == 8, "version 8 on the slider")
    _until(lambda: w.version == 8, "the explorer at the newest version")
    _until(lambda: len(w.follow_state.get("commits") or []) == 1, "the commit's summary")
    commit = w.follow_state["commits"][0]
    expected = dx.open_table(uri).history(limit=1).to_pylist()[0]
    assert (commit["version"], commit["operation"], commit["rows_added"], commit["files_added"]) == (
        8,
        expected["operation"],
        2,
        expected["files_added"],
    )
    assert isinstance(commit["timestamp"], int)
    _until(lambda: w.history_data.get("latest") == 8, "the open History tab reloaded")
    # the user travels back: new versions extend the slider, the explorer stays where the user is
    w.version = 5
    _append(uri, 1)
    _until(lambda: w.max_version == 9, "version 9 on the slider")
    assert w.version == 5
    follower = w._follower
    w.follow = False  # the toggle again
    assert follower is not None and not follower.running and w.follow_state["running"] is False
    _append(uri, 1)
    time.sleep(0.3)  # a poll would have seen it by now (interval 0.05 s)
    assert w.max_version == 9


def test_closing_the_widget_stops_following(sales, tmp_path):
    uri = _copy(sales, tmp_path)
    w = explore(uri, follow=True, follow_interval=0.05)
    follower = w._follower
    assert follower is not None and follower.running
    w.close()
    assert not follower.running and follower._thread is not None and not follower._thread.is_alive()
