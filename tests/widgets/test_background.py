"""The user first: the explorer's background work gives way to the user's requests, drops work
for versions the user left; moves on the slider, typed versions and the diff reuse the table's
cached states (`Table.snapshot` moves them)."""

from __future__ import annotations

import subprocess
import sys
import threading
from concurrent.futures import CancelledError

import pytest
from snapshot_compare import cold_state, differences, state

import deltaexplore as dx
from deltaexplore import inspect
from deltaexplore.widgets import explore
from deltaexplore.widgets.background import Background

WAIT = 10  # seconds: only ever reached when the behaviour is broken


def _stages(bg: Background, log: list[str], started: threading.Event, go: threading.Event):
    def job() -> str:
        log.append("stage 1")
        started.set()
        assert go.wait(WAIT)
        bg.pause()
        log.append("stage 2")
        return "done"

    return job


def test_a_running_job_pauses_while_the_user_is_served_and_queued_jobs_wait():
    bg = Background()
    log: list[str] = []
    started, go = threading.Event(), threading.Event()
    first = bg.submit("a", _stages(bg, log, started, go))
    second = bg.submit("b", lambda: log.append("b") or "b")
    assert started.wait(WAIT)
    with bg.user():
        go.set()  # the job reaches its pause while the user is served: it waits there
        assert not first.done()
        threading.Event().wait(0.2)
        assert log == ["stage 1"] and not second.done()
        log.append("user")
    assert first.result(WAIT) == "done" and second.result(WAIT) == "b"
    assert log == ["stage 1", "user", "stage 2", "b"]
    bg.close()


def test_a_job_the_user_waits_for_is_not_paused():
    bg = Background()
    log: list[str] = []
    started, go = threading.Event(), threading.Event()
    future = bg.submit("a", _stages(bg, log, started, go))
    assert started.wait(WAIT)
    with bg.user():
        go.set()
        assert bg.result(future) == "done"  # would wait forever if the job paused for this user
    bg.close()


def test_cancelled_jobs_stop_at_their_next_pause_or_never_start():
    bg = Background()
    log: list[str] = []
    started, go = threading.Event(), threading.Event()
    running = bg.submit((5, "files"), _stages(bg, log, started, go))
    queued = bg.submit((5, "health"), lambda: log.append("health"))
    kept = bg.submit((6, "files"), lambda: log.append("v6") or 6)
    assert started.wait(WAIT)
    assert sorted(bg.cancel(lambda key: key[0] == 6)) == [(5, "files"), (5, "health")]
    go.set()
    with pytest.raises(CancelledError):
        running.result(WAIT)
    assert queued.cancelled()
    assert kept.result(WAIT) == 6
    assert log == ["stage 1", "v6"]  # stage 2 and the health job never ran
    bg.close()


def test_pause_is_a_no_op_outside_the_background_thread():
    bg = Background()
    with bg.user():
        bg.pause()  # the user's own thread never waits for itself
    bg.close()


def _as_a_big_table(monkeypatch):
    from deltaexplore.widgets import views

    monkeypatch.setattr(views, "EAGER_SEGMENT_BYTES", 0)


def test_slider_typed_versions_and_diff_move_the_cached_state(sales, monkeypatch):
    from deltaexplore.core import table as table_module

    _as_a_big_table(monkeypatch)
    monkeypatch.setenv("DELTAEXPLORE_PREFETCH", "0")  # no background work: the moves alone
    w = explore(sales)
    w._on_custom_msg(w, {"type": "complete_overview", "version": 7}, [])
    w._counting.result(WAIT)  # counted on the jobs thread
    assert w.view.snap.files_loaded
    cold: list[int] = []
    real = table_module.build_snapshot

    def counting(table, listing, version, **kwargs):
        if table is w.view.table:
            cold.append(version)
        return real(table, listing, version, **kwargs)

    monkeypatch.setattr(table_module, "build_snapshot", counting)
    for v in (6, 5, 7, 3, 4):  # the slider's steps and a typed version
        w.version = v
        snap = w.view.snap
        assert snap.files_loaded, f"version {v} was read cold"  # moved: its files came replayed
        assert differences(state(snap), cold_state(sales, v)) == [], f"version {v}"
    w.diff_from, w.diff_to = 1, 2
    w.tab = "diff"
    assert w.diff_data["state"] == "ready" and (w.diff_data["from"], w.diff_data["to"]) == (1, 2)
    expected = inspect.diff(dx.open_table(sales), 1, 2)
    assert w.diff_data["changes"] and w.view.diff(1, 2)[0]["changes"] == w.diff_data["changes"]
    assert inspect.diff(w.view.table, 1, 2).to_pylist() == expected.to_pylist()
    assert cold == []  # every version above was moved from the table's cached states


def test_a_click_waits_for_no_background_work_and_a_version_left_drops_its_jobs(sales, monkeypatch):
    _as_a_big_table(monkeypatch)
    w = explore(sales)
    view = w.view
    gate = threading.Event()
    blocker_started = threading.Event()

    def blocker() -> None:  # a long background job, in stages
        blocker_started.set()
        assert gate.wait(WAIT)
        view.pause()

    blocking = view._background(blocker, (7, "blocker"))
    assert blocker_started.wait(WAIT)
    w._on_custom_msg(w, {"type": "complete_overview", "version": 7}, [])  # queues the next tabs
    w._counting.result(WAIT)  # counted on the jobs thread
    # the history was queued with the first view (before the blocker); the rest behind it
    queued = {key: f for key, f in view._prepared.items() if key[1] != "history"}
    assert (view.listing.latest_version, "history") in view._prepared
    assert queued and all(not f.done() for f in queued.values())
    w.tab = "files"  # the user's click: computed at once, not behind the queue
    assert w.files_data["files"]["total"] == dx.open_table(sales).snapshot().num_files
    assert (7, "files") not in view._prepared
    pending = view._pending
    assert pending is not None and pending[0] == 6
    w.version = 3  # the user leaves version 7: its jobs and the prefetch of version 6 go
    assert not any(key[0] == 7 and key[1] != "history" for key in view._prepared)
    assert view._pending is None or view._pending[0] != 6
    gate.set()
    with pytest.raises(CancelledError):
        blocking.result(WAIT)
    for key, future in queued.items():
        if key[1] != "history":
            assert future.cancelled() or isinstance(future.exception(WAIT), CancelledError)
    assert pending[1].cancelled() or isinstance(pending[1].exception(WAIT), CancelledError)
    w.close()  # the widget closed: its background thread ends
    thread = view.background._thread
    assert thread is not None
    thread.join(WAIT)
    assert not thread.is_alive() and not view.background.busy


def test_a_tab_clicked_while_the_overview_counts_is_answered_at_once(sales, monkeypatch):
    """The overview's counts (a streaming pass of seconds at 1M files) run off the kernel's
    message thread: History clicked meanwhile shows without waiting for them."""
    _as_a_big_table(monkeypatch)
    w = explore(sales)
    counting, go = threading.Event(), threading.Event()
    real = w.view.overview

    def slow(stage=None):
        if stage:
            counting.set()
            assert go.wait(WAIT)
        return real(stage)

    monkeypatch.setattr(w.view, "overview", slow)
    w._on_custom_msg(w, {"type": "complete_overview", "version": 7}, [])
    assert counting.wait(WAIT)
    w.tab = "history"  # answered while the counts are held
    assert w.history_data["source"]["total"] == dx.open_table(sales).history().num_rows
    assert w.history_data["timeline"]["mark"]["type"] == "tick" and w.overview_data["stage"] == 0
    assert w.busy == ""  # the cards say "counting": the explorer is not marked busy for it
    go.set()
    w._counting.result(WAIT)
    assert w.overview_data["complete"] and w.overview_data["version"] == 7
    w.close()


def test_the_history_is_prepared_with_the_first_view_before_the_counts(sales, monkeypatch):
    """History needs none of the overview's counts: it is prepared as soon as the first view
    is shown, sent when the browser asks (`prefetch`) before the counts are done, and never
    computed twice (the full preparation, once the counts are done, does not queue it again)."""
    from deltaexplore.widgets import views

    _as_a_big_table(monkeypatch)
    real = views.inspect.commit_infos
    made: list[int] = []

    def counted(*args, **kwargs):
        if len(args) == 1 and not kwargs:  # the whole history (not one commit's info)
            made.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(views.inspect, "commit_infos", counted)
    w = explore(sales)
    view = w.view
    key = (7, "history")
    assert w.overview_data["stage"] == 0 and key in view._prepared  # queued with the first view
    view._prepared[key].result(WAIT)
    sent: list[dict] = []
    monkeypatch.setattr(w, "send", lambda content, buffers=None: sent.append(content))
    w._on_custom_msg(w, {"type": "prefetch", "req": 1, "version": 7, "tabs": ["history"]}, [])
    assert sent[-1]["states"] == {"history": "sent"} and w.overview_data["stage"] == 0  # before the counts
    expected = dx.open_table(sales).history()
    assert w.history_data["source"]["total"] == expected.num_rows
    w._on_custom_msg(w, {"type": "complete_overview", "version": 7}, [])
    w._counting.result(WAIT)
    assert w.overview_data["complete"] and key not in view._prepared  # not queued a second time
    w.tab = "history"  # sent already: shown as it is
    assert w.history_data["source"]["total"] == expected.num_rows and made == [1]
    w.close()


def test_the_explorer_draws_every_chart_without_importing_altair(sales):
    """The explorer's charts are the viz specs as plain Vega-Lite dicts: no tab waits for
    altair's import (3-6 s on a cold kernel; History and Files clicked early waited for it)."""
    code = f"""
import sys
import deltaexplore as dx
w = dx.explore({sales!r})
for tab in ("history", "files", "layout", "dv", "health"):
    w.tab = tab
charts = [w.history_data["timeline"], w.files_data["size_chart"], w.files_data["skew_chart"],
          w.layout_data["density_chart"], w.layout_data["ranges_chart"], w.dv_data["chart"],
          w.health_data["chart"], w.view.health_timeline()["chart"]]
rows = [len(next(iter(c["datasets"].values()))) for c in charts]
print(min(rows) > 0, "altair" in sys.modules)
w.close()
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.split() == ["True", "False"], out.stderr
    commits = dx.open_table(sales).history().num_rows
    w = explore(sales)
    w.tab = "history"
    spec = w.history_data["timeline"]
    assert sum(len(rows) for rows in spec["datasets"].values()) == commits  # one mark per commit
    assert spec["params"] == [{"name": "time_brush", "select": {"type": "interval", "encodings": ["x"]}}]
    w.close()


def test_a_streamed_table_prepares_its_layout_from_the_overviews_one_pass(sales, monkeypatch):
    from deltaexplore.widgets import views

    _as_a_big_table(monkeypatch)
    real = views.file_pass
    passes: list[list[str]] = []

    def counted(snap, **kwargs):
        passes.append(list(kwargs.get("layout_columns") or []))
        return real(snap, **kwargs)

    monkeypatch.setattr(views, "file_pass", counted)
    w = explore(sales, streaming_files=0)
    view = w.view
    column = view.default_layout_column()
    key = (7, f"layout:{column}")
    with view.user():  # the counts, asked for by the browser: the jobs they queue wait for the user
        w._on_custom_msg(w, {"type": "complete_overview", "version": 7}, [])
        w._counting.result(WAIT)  # counted on the jobs thread
        assert view.engine()["name"] == "streaming" and w.overview_data["complete"]
        # never a replay ahead of the user (no previous version); the history was queued with
        # the first view, then the files (a fraction of a second), the layout, the diff's default
        # pair (the paths its commits touch) and the log health (one pass over the log's batches)
        assert list(view._prepared) == [(7, "history"), (7, "files"), key, (7, "diff:6-7"), (7, "health")]
        assert view._pending is None
        prepared = view._prepared[key]
        threading.Event().wait(0.2)
        assert not prepared.done()
    prepared.result(WAIT)
    w.tab = "layout"  # takes the prepared result
    assert key not in view._prepared
    assert w.layout_data["column"] == column and w.layout_data["engine"]["name"] == "streaming"
    assert w.layout_data["files"]["total"] == dx.open_table(sales).snapshot().num_files
    assert passes == [[column]]  # one pass over the log: the overview's, keeping the column's bounds
    w.layout_column = next(c for c in view.stats_columns() if c != column)  # another column: its own pass
    assert passes == [[column], [w.layout_column]] and w.layout_data["column"] == w.layout_column
    chosen = w.layout_column
    with view.user():  # what the step prepares next waits
        w.version = 6  # a slider step: a plain pass (no default column's bounds), then the open Layout's
        w._on_custom_msg(w, {"type": "complete_overview", "version": 6}, [])
        w._counting.result(WAIT)  # counted on the jobs thread
        assert w.overview_data["complete"] and passes[2:] == [[], [chosen]]
    w.close()
