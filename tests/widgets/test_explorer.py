"""The explorer widget, headless: set traits and send messages as the browser does, check the
state, the Arrow buffers and the replies against the inspection tables they come from."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.compute as pc
import pytest
import traitlets
from ipywidgets.widgets.widget import _remove_buffers

import deltaexplore as dx
from deltaexplore import inspect
from deltaexplore.inspect.row_diff import read_summary
from deltaexplore.widgets import Explorer, explore, maintenance
from deltaexplore.widgets.arrow_ipc import from_ipc

WAIT = 10  # seconds: only ever reached when the behaviour is broken


class Replies:
    """What the kernel sends back to the browser (custom messages with their buffers)."""

    def __init__(self, w: Explorer) -> None:
        self.sent: list[tuple[dict, list]] = []
        w.send = lambda content, buffers=None: self.sent.append((content, list(buffers or [])))  # type: ignore[method-assign]
        self.w = w

    def ask(self, kind: str, **payload) -> tuple[dict, list]:
        self.w._on_custom_msg(self.w, {"type": kind, "req": f"r{len(self.sent)}", **payload}, [])
        return self.sent[-1]

    def rows(self, source: dict, start: int = 0, end: int = 100, sort=None, filter=None) -> tuple[int, list[dict]]:
        reply, buffers = self.ask("rows", source=source["id"], start=start, end=end, sort=sort or [], filter=filter or {})
        assert "error" not in reply, reply
        return reply["total"], from_ipc(buffers[0]).to_pylist()


def table(data: bytes) -> pa.Table:
    return from_ipc(data)


def test_first_render_is_the_overview_from_inspect(sales, monkeypatch):
    from deltaexplore.widgets import views

    monkeypatch.setattr(views, "EAGER_SEGMENT_BYTES", 0)  # as a big table: stage by stage
    # nothing prepared in the background (the history, queued once the first view is made, may
    # replay this small log's versions): what the first view alone reads
    monkeypatch.setenv("DELTAEXPLORE_PREFETCH", "0")
    w = explore(sales)
    assert isinstance(w, Explorer)
    assert (w.version, w.min_version, w.max_version) == (7, 0, 7)
    assert w.title == "sales"
    data = w.overview_data
    assert data["version"] == 7 and data["commit"]["operation"] == "DELETE" and data["commit"]["user_name"] == "ana"
    cols = ["section", "metric", "value", "number", "unit", "status"]
    # first the log's metadata alone, then (asked for by the browser once drawn) the file
    # counts and the row counts, each a stage of inspect.overview
    assert (data["stage"], data["complete"]) == (0, False)
    assert w.view.snap.files_loaded is False  # no file action replayed before the first view
    first = table(data["metrics"]).select(cols).to_pylist()
    assert first == inspect.overview(dx.open_table(sales), files=False).select(cols).to_pylist()
    stages: list[int] = []
    w.observe(lambda ch: stages.append(ch["new"]["stage"]), names="overview_data")
    w._on_custom_msg(w, {"type": "complete_overview", "version": 7}, [])
    w._counting.result(WAIT)  # counted on the jobs thread
    assert stages == [1, 2] and w.overview_data["complete"] is True
    shown = table(w.overview_data["metrics"]).select(cols)
    expected = inspect.overview(dx.open_table(sales)).select(cols)
    assert shown.to_pylist() == expected.to_pylist()
    unread = {(r["section"], r["metric"]) for r in first if r["number"] is None and r["value"] is None}
    assert ("size", "files") in unread and ("size", "rows") in unread and ("layout", "partition_columns") not in unread
    schema = table(data["schema"]).to_pylist()
    assert [c["column"] for c in schema] == ["id", "region", "amount", "customer", "channel"]
    assert schema[1]["is_partition"] is True
    assert [f["feature"] for f in table(data["features"]).to_pylist()] == ["deletionVectors"]
    # other tabs are computed only when shown
    assert w.files_data == {} and w.history_data == {} and w.error == ""


def test_a_small_table_shows_everything_at_once(sales):
    w = explore(sales)  # its log is a few KiB: replayed, and statistics read, before the first view
    assert w.overview_data["stage"] == 2 and w.overview_data["complete"] is True
    cols = ["section", "metric", "value", "number"]
    assert (
        table(w.overview_data["metrics"]).select(cols).to_pylist()
        == inspect.overview(dx.open_table(sales)).select(cols).to_pylist()
    )


def test_the_next_steps_are_prepared_in_the_background(sales, monkeypatch):
    from deltaexplore.widgets import views

    monkeypatch.setattr(views, "EAGER_SEGMENT_BYTES", 0)  # as a big table
    w = explore(sales)
    seen: list[tuple[bool, set]] = []
    w.observe(lambda ch: seen.append((ch["new"]["complete"], set(w.view._prepared))), names="overview_data")
    w._on_custom_msg(w, {"type": "complete_overview", "version": 7}, [])
    w._counting.result(WAIT)  # counted on the jobs thread
    view = w.view
    # the previous version, the files, history, log health, layout tab and the diff of the
    # previous version to this one (the Diff tab's default pair): one worker
    assert view._pending is not None and view._pending[0] == 6
    column = view.default_layout_column()
    assert column
    expected = {(7, "files"), (7, "history"), (7, "health"), (7, "diff:6-7"), (7, f"layout:{column}")}
    assert {key for key in view._prepared} == expected
    # already submitted when the complete overview goes out: the browser's prefetch, sent when it
    # sees it (and handled, with ipykernel's subshells, maybe on another thread), finds the jobs;
    # the history's since the first view (it needs no counts)
    assert seen == [(False, {(7, "history")}), (True, expected)]
    laid_out = view._prepared[(7, f"layout:{column}")].result()
    w.tab = "layout"
    assert (7, f"layout:{column}") not in view._prepared  # taken, not computed again
    assert w.layout_data["column"] == column and w.layout_data["density_chart"] == laid_out[0]["density_chart"]
    prepared = view._prepared[(7, "files")].result()
    # the grids' default orders too: the first window the browser asks for (main thread) is a take
    assert [key[0] for key in prepared[1]._orders] == [(("size", True),)] and laid_out[1]._orders
    w.tab = "files"
    assert (7, "files") not in view._prepared  # taken, not computed again
    assert w.files_data["files"]["total"] == prepared[0]["files"]["total"] == dx.open_table(sales).snapshot().num_files
    w.tab = "history"
    assert w.history_data["commits"] and (7, "history") not in view._prepared
    diffed = view._prepared[(7, "diff:6-7")].result()
    assert (w.diff_from, w.diff_to) == (6, 7)
    w.tab = "diff"
    assert (7, "diff:6-7") not in view._prepared  # taken, not computed again
    assert w.diff_data["changes"] == diffed[0]["changes"] and w.diff_data["state"] == "ready"
    # what was prepared agrees with what is computed on the spot
    fresh = views.TableView(dx.open_table(sales))
    monkeypatch.setenv("DELTAEXPLORE_PREFETCH", "0")
    assert table(fresh.health()["metrics"]).to_pylist() == table(view.health()["metrics"]).to_pylist()
    on_the_spot, files = fresh.diff(6, 7)
    assert table(w.diff_data["changes"]).to_pylist() == table(on_the_spot["changes"]).to_pylist()
    assert w.diff_data["columns"] == on_the_spot["columns"]
    assert diffed[1].window(0, 100)[1].to_pylist() == files.window(0, 100)[1].to_pylist()
    assert table(on_the_spot["changes"]).to_pylist() == inspect.diff(dx.open_table(sales), 6, 7).to_pylist()
    # moving to another version drops what was prepared for the version left
    view._prepared[(7, "health")] = view._background(lambda: view.health(view.snap))
    w.version = 6
    assert (7, "health") not in view._prepared


def _prepared_as_a_big_table(sales, monkeypatch):
    """An explorer of `sales` treated as a big table (tabs prepared in the background), whose
    inspect calls are recorded with the thread that made them."""
    from deltaexplore.widgets import views

    monkeypatch.setattr(views, "EAGER_SEGMENT_BYTES", 0)
    w = explore(sales)
    # the history's job, queued with the first view (tests/widgets/test_background.py), done and
    # dropped: the tests below hand in the background's results themselves
    queued = w.view._prepared.pop((w.view.listing.latest_version, "history"))
    queued.result(WAIT)
    calls: list[tuple[str, str]] = []
    for name in ("files", "partitions", "layout", "layout_summary", "layout_density", "log_health", "commit_infos"):
        real = getattr(views.inspect, name)

        def spy(*args, _real=real, _name=name, **kwargs):
            import threading

            calls.append((_name, threading.current_thread().name))
            return _real(*args, **kwargs)

        monkeypatch.setattr(views.inspect, name, spy)
    return w, calls


def test_prepared_tabs_are_sent_before_they_open(sales, monkeypatch):
    from concurrent.futures import Future

    from deltaexplore.widgets import views

    w, calls = _prepared_as_a_big_table(sales, monkeypatch)
    replies = Replies(w)
    view = w.view
    column = view.default_layout_column()
    keys = {
        "history": (7, "history"),
        "files": (7, "files"),
        "health": (7, "health"),
        "layout": (7, f"layout:{column}"),
        "diff": (7, "diff:6-7"),  # the Diff tab's default pair: the previous version -> this one
    }
    tabs = list(keys)
    reply, _ = replies.ask("prefetch", version=7, tabs=tabs)
    assert reply["states"] == dict.fromkeys(tabs, "none") and reply["version"] == 7  # nothing prepares them yet
    assert (w.history_data, w.files_data, w.health_data, w.layout_data, w.diff_data) == ({}, {}, {}, {}, {})
    running = {tab: Future() for tab in tabs}  # the background jobs, still running
    for tab, future in running.items():
        future.set_running_or_notify_cancel()
        view._prepared[keys[tab]] = future
    assert replies.ask("prefetch", version=7, tabs=tabs)[0]["states"] == dict.fromkeys(tabs, "pending")
    assert (w.history_data, w.files_data, w.health_data, w.layout_data, w.diff_data) == ({}, {}, {}, {}, {})
    assert calls == [] and all(key in view._prepared for key in keys.values())  # never computed on this thread
    # the jobs finish (computed as the background thread does, by a view of its own)
    other = views.TableView(dx.open_table(sales))
    running["history"].set_result(other.history())
    running["files"].set_result(other.files())
    running["health"].set_result(other.health())
    running["layout"].set_result(other.layout(column))
    running["diff"].set_result(other.diff(6, 7))
    calls.clear()
    reply, _ = replies.ask("prefetch", version=7, tabs=tabs)
    assert reply["states"] == dict.fromkeys(tabs, "sent") and reply["req"]
    assert calls == [], calls  # taken from the background, nothing computed here
    assert not any(key in view._prepared for key in keys.values())
    assert w.tab == "overview" and w.busy == "" and w.error == ""
    assert [c["version"] for c in table(w.history_data["commits"]).to_pylist()] == [7, 6, 5, 4, 3, 2, 1, 0]
    assert w.files_data["version"] == w.health_data["version"] == w.layout_data["version"] == 7
    assert w.layout_column == column == w.layout_data["column"]
    assert (w.diff_data["from"], w.diff_data["to"], w.diff_data["state"]) == (6, 7, "ready")
    # the same data a click loads (a second explorer that prepares nothing)
    monkeypatch.setenv("DELTAEXPLORE_PREFETCH", "0")
    clicked = explore(sales)
    for tab in tabs:
        clicked.tab = tab
        assert getattr(w, f"{tab}_data") == getattr(clicked, f"{tab}_data"), tab
    calls.clear()
    # opening a tab keeps what was sent (nothing loaded again)
    sent = {tab: getattr(w, f"{tab}_data") for tab in tabs}
    for tab in tabs:
        w.tab = tab
        assert getattr(w, f"{tab}_data") is sent[tab], tab
    assert calls == []
    assert replies.ask("prefetch", version=7, tabs=tabs)[0]["states"] == dict.fromkeys(tabs, "sent")
    # another version: what was sent for the version left is no longer counted as loaded, and
    # a prefetch still asking for the version left sends nothing
    w.tab = "overview"
    w.version = 6
    assert w.files_data["version"] == 7  # (the browser prerenders only data of its version)
    reply, _ = replies.ask("prefetch", version=7, tabs=tabs)
    assert reply["states"] == dict.fromkeys(tabs, "stale") and reply["version"] == 6
    assert w.files_data["version"] == 7 and w.layout_data["version"] == 7
    reply, _ = replies.ask("prefetch", version=6, tabs=tabs)
    # (the diff's pair did not move with the version: what was sent is still its data)
    assert reply["states"] == {"history": "sent", "files": "none", "health": "none", "layout": "none", "diff": "sent"}
    w.tab = "files"  # opening it loads this version's files
    assert w.files_data["version"] == 6


def test_a_layout_column_chosen_by_the_user_wins_over_the_prepared_one(events, monkeypatch):
    from concurrent.futures import Future

    from deltaexplore.widgets import views

    monkeypatch.setattr(views, "EAGER_SEGMENT_BYTES", 0)
    w = explore(events)
    replies = Replies(w)
    view = w.view
    default = view.default_layout_column()
    chosen = next(c for c in view.stats_columns() if c != default)
    done: Future = Future()
    done.set_result(views.TableView(dx.open_table(events)).layout(default))
    view._prepared[(view.version, f"layout:{default}")] = done
    w.layout_column = chosen  # the user picks a column (the picker): loaded now
    assert w.layout_data["column"] == chosen
    assert replies.ask("prefetch", version=view.version, tabs=["layout"])[0]["states"] == {"layout": "sent"}
    assert w.layout_data["column"] == chosen and w.layout_column == chosen
    w.version = view.version - 1  # another version: the user's column still wins over the default
    done2: Future = Future()
    done2.set_result(views.TableView(dx.open_table(events), w.version).layout(default))
    view._prepared[(w.version, f"layout:{default}")] = done2
    assert replies.ask("prefetch", version=w.version, tabs=["layout"])[0]["states"] == {"layout": "none"}
    assert w.layout_column == chosen and (w.version, f"layout:{default}") in view._prepared


def test_rows_travel_as_arrow_ipc_buffers_not_json(sales):
    w = explore(sales)
    for tab in ("history", "files", "layout", "dv", "diff", "health"):
        w.tab = tab
        assert w.error == "", w.error
    state, buffer_paths, buffers = _remove_buffers(w.get_state())
    paths = {tuple(p) for p in buffer_paths}
    for path in (("overview_data", "metrics"), ("history_data", "commits"), ("diff_data", "changes"), ("health_data", "metrics")):
        assert path in paths
        stream = buffers[buffer_paths.index(list(path))]
        assert bytes(stream[:4]) == b"\xff\xff\xff\xff"  # an Arrow IPC stream (continuation marker)
    assert "metrics" not in state["overview_data"]  # not in the JSON part of the message
    # field metadata (display units, docs) travel with the schema
    f = table(w.history_data["commits"]).schema.field("timestamp")
    assert f.metadata[b"unit"] == b"timestamp" and f.type == pa.timestamp("ms", tz="UTC")


def test_history_lists_every_commit_with_its_commit_info(sales):
    w = explore(sales, tab="history")
    commits = table(w.history_data["commits"]).to_pylist()
    assert [c["version"] for c in commits] == [7, 6, 5, 4, 3, 2, 1, 0]
    assert commits[1]["operation"] == "OPTIMIZE" and commits[0]["user_name"] == "ana"
    assert json.loads(commits[0]["parameters"]) == {"predicate": '["id < 103"]'}
    spec = w.history_data["timeline"]
    assert spec["mark"]["type"] == "tick" and spec["params"][0]["name"] == "time_brush"
    replies = Replies(w)
    reply, _ = replies.ask("commit", version=6)
    counts = reply["detail"]["counts"]
    hist = dx.open_table(sales).history(start_version=6, end_version=6).to_pylist()[0]
    assert counts["files_added"] == hist["files_added"] == 1 and counts["files_removed"] == 4
    assert json.loads(reply["detail"]["commit_info"])["operation"] == "OPTIMIZE"
    reply, _ = replies.ask("commit", version=99)
    assert "no commit file" in reply["error"]


def test_history_shows_the_table_through_time_with_a_version_brush(sales):
    """The History tab asks for `inspect.timeline` (on a thread of its own: the kernel answers
    other messages meanwhile) and gets `viz.timeline_chart` of the metric asked, with the
    version brush the browser turns into a diff; a bad metric is an error reply."""
    import time

    w = explore(sales, tab="history")
    assert w.history_data["health_auto"] is True  # a small log: drawn at once
    replies = Replies(w)

    def ask(**payload) -> dict:
        before = len(replies.sent)
        w._on_custom_msg(w, {"type": "timeline", "req": f"t{before}", **payload}, [])
        deadline = time.monotonic() + 60
        while len(replies.sent) == before and time.monotonic() < deadline:
            time.sleep(0.02)
        return replies.sent[-1][0]

    reply = ask(metric="tombstones")
    spec = reply["chart"]
    offered = dict(reply["metrics"])
    assert reply["metric"] == "tombstones" and offered["tombstones"] == "tombstones"
    assert reply["column"] and offered["overlap_depth_max"] == "max overlap depth"  # the default layout column
    assert spec["params"][0]["name"] == "version_brush" and spec["params"][0]["select"]["encodings"] == ["x"]
    values = {r["version"]: r["tombstones"] for r in spec["datasets"][spec["data"]["name"]]}
    want = inspect.timeline(dx.open_table(sales)).to_pylist()
    assert values == {r["version"]: r["tombstones"] for r in want} and max(values.values()) > 0
    assert "metric must be one of" in ask(metric="nope")["error"]


def test_travelling_in_time(sales):
    w = explore(sales)
    w.tab = "files"
    w.version = 0  # what clicking version 0 does
    assert w.overview_data["version"] == 0 and w.files_data["version"] == 0
    assert w.files_data["files"]["total"] == 3
    assert "channel" not in [c["column"] for c in table(w.overview_data["schema"]).to_pylist()]
    with pytest.raises(traitlets.TraitError, match=r"outside the table.s versions 0\.\.7"):
        w.version = 99
    assert w.version == 0 and w.error == ""


def test_files_grid_rows_stay_in_the_kernel(sales):
    w = explore(sales, tab="files")
    replies = Replies(w)
    files = w.files_data["files"]
    assert files["total"] == 9 and {f["name"] for f in files["fields"]} >= {"path", "size", "partition"}
    assert next(f for f in files["fields"] if f["name"] == "size")["unit"] == "bytes"
    total, page = replies.rows(files, 0, 4)
    assert total == 9 and len(page) == 4
    sizes = [r["size"] for r in page]
    assert sizes == sorted(sizes, reverse=True)  # the default order: largest first
    _, rest = replies.rows(files, 4, 9)
    assert not {r["path"] for r in page} & {r["path"] for r in rest}
    total, apac = replies.rows(files, 0, 50, sort=[["path", "asc"]], filter={"text": "REGION=APAC"})
    assert total == 4 and all(r["partition"] == "region=apac" for r in apac)
    assert [r["path"] for r in apac] == sorted(r["path"] for r in apac)
    expected = inspect.files(dx.open_table(sales)).select(["path", "size", "num_records", "deleted_rows"]).to_pylist()
    _, everything = replies.rows(files, 0, 100, sort=[["path", "asc"]])
    assert [(r["path"], r["size"], r["num_records"], r["deleted_rows"]) for r in everything] == sorted(
        (r["path"], r["size"], r["num_records"], r["deleted_rows"]) for r in expected
    )
    assert sorted(r["dv_storage"] or "-" for r in everything) == ["-"] * 7 + ["file", "file"]
    parts = w.files_data["partitions"]
    _, rows = replies.rows(parts)
    assert {r["partition"]: r["files"] for r in rows} == {"region=amer": 4, "region=apac": 4, "region=emea": 1}
    assert w.files_data["size_chart"]["mark"]["type"] == "bar" and w.files_data["skew_chart"]


def test_grid_exports_csv_and_arrow(sales):
    w = explore(sales, tab="files")
    replies = Replies(w)
    reply, (data,) = replies.ask(
        "export", source=w.files_data["files"]["id"], format="csv", sort=[["path", "asc"]], filter={"text": "apac"}
    )
    assert reply["filename"] == "files_v7.csv" and reply["mime"] == "text/csv"
    lines = data.decode().splitlines()
    assert lines[0].startswith('"path","partition","size"') and len(lines) == 5
    reply, (data,) = replies.ask("export", source=w.files_data["files"]["id"], format="arrow")
    exported = pa.ipc.open_file(pa.py_buffer(data)).read_all()
    assert exported.num_rows == 9 and exported.schema.field("modification_time").type == pa.timestamp("ms", tz="UTC")
    reply, _ = replies.ask("export", source=w.files_data["files"]["id"], format="xlsx")
    assert "export format must be 'csv' or 'arrow'" in reply["error"]


def test_bad_requests_get_an_error_reply(sales):
    w = explore(sales, tab="files")
    replies = Replies(w)
    reply, _ = replies.ask("rows", source=w.files_data["files"]["id"], start=0, end=10, sort=[["bogus", "asc"]])
    assert "cannot sort by 'bogus'" in reply["error"]
    reply, _ = replies.ask("rows", source="files@1234", start=0, end=10)
    assert "no longer loaded" in reply["error"]
    assert w.error == ""


def test_layout_tab_agrees_with_inspect_and_filters_by_chart_selections(events):
    w = explore(events, version=0, tab="layout")
    assert w.layout_column == "event_id" and w.error == ""
    data = w.layout_data
    summary = table(data["summary"]).to_pylist()[0]
    expected = inspect.layout_summary(dx.open_table(events).snapshot(0), ["event_id"]).to_pylist()[0]
    assert summary == expected and summary["max_depth"] == 12  # random ids: every file spans nearly everything
    assert data["density_chart"]["params"][0]["name"] == "value_brush"
    replies = Replies(w)
    total, worst = replies.rows(data["files"], 0, 3)
    assert total == 12 and worst[0]["overlap_depth"] == max(r["overlap_depth"] for r in worst)
    w.version = 1  # after OPTIMIZE ZORDER: disjoint ranges
    data = w.layout_data
    assert table(data["summary"]).to_pylist()[0]["clustering_quality"] == 1.0
    per_file = inspect.layout(dx.open_table(events).snapshot(1), "event_id").to_pylist()
    # clicking a range in the ranges chart: the files of its rank range
    total, ranked = replies.rows(data["files"], filter={"ranges": {"rank": [2, 4]}})
    assert total == 3 and {r["path"] for r in ranked} == {r["path"] for r in per_file if 2 <= r["rank"] <= 4}
    # brushing the density chart: the files whose range overlaps the brushed bins
    density = inspect.layout_density(dx.open_table(events).snapshot(1), "event_id").to_pylist()
    b0, b1 = density[10], density[19]
    total, hit = replies.rows(
        data["files"],
        filter={"ranges": {"max_position": [b0["position_lo"], 1e300], "min_position": [-1e300, b1["position_hi"] - 1]}},
    )
    overlapping = {r["path"] for r in per_file if r["max"] >= b0["lo"] and r["min"] <= b1["hi"]}
    assert {r["path"] for r in hit} == overlapping and total == len(overlapping) > 0
    w.layout_column = "value"
    assert w.layout_data["column"] == "value" and w.error == ""
    w.layout_column = "nope"
    assert "no min/max statistics can exist for column 'nope'" in w.error


def test_layout_tab_opens_on_the_clustering_column(tmp_path):
    from helpers import add, commit_info, metadata, protocol, write_commit

    schema = {
        "type": "struct",
        "fields": [{"name": n, "type": "long", "nullable": True, "metadata": {}} for n in ("id", "ts")],
    }

    def stats(lo: int, hi: int) -> str:
        return json.dumps(
            {"numRecords": 2, "minValues": {"id": lo, "ts": hi}, "maxValues": {"id": hi, "ts": hi}, "nullCount": {}}
        )

    clustering = {
        "domainMetadata": {
            "domain": "delta.clustering",
            "configuration": json.dumps({"clusteringColumns": [["ts"]]}),
            "removed": False,
        }
    }
    actions = [
        commit_info("CREATE TABLE"),
        protocol(3, 7, [], ["domainMetadata", "clustering"]),
        metadata(schema),
        clustering,
        add("c.parquet", stats=stats(7, 8)),
        add("a.parquet", stats=stats(0, 5)),
        add("nostats.parquet"),
        add("b.parquet", stats=stats(3, 9)),
    ]
    write_commit(tmp_path, 0, actions)
    w = explore(str(tmp_path), tab="layout")
    assert w.layout_column == "ts" and w.error == ""
    summary = table(w.layout_data["summary"]).to_pylist()[0]
    assert (summary["files"], summary["files_with_min_max"]) == (4, 3)
    _total, rows = Replies(w).rows(w.layout_data["files"], sort=[["rank", "asc"]])
    assert [r["path"] for r in rows][:3] == ["a.parquet", "c.parquet", "b.parquet"]  # by ts (5, 8, 9); no stats last


def test_deletion_vectors_tab(sales):
    w = explore(sales, tab="dv")
    data = w.dv_data
    dvs = inspect.deletion_vectors(dx.open_table(sales))
    assert data["files_with_dv"] == dvs.num_rows == 2
    assert data["summary"]["deleted_rows"] == pc.sum(dvs.column("cardinality")).as_py() == 46
    assert data["summary"]["past_threshold"] == 2
    total, rows = Replies(w).rows(data["files"])
    assert total == 2 and rows[0]["deleted_ratio"] >= rows[1]["deleted_ratio"] and {r["storage"] for r in rows} == {"file"}
    w.version = 2
    assert w.dv_data["files_with_dv"] == 0 and w.dv_data["chart"] is None


def test_diff_agrees_with_inspect_and_clears_stale_results(sales):
    w = explore(sales, tab="diff")
    assert (w.diff_from, w.diff_to) == (6, 7)
    states: list[tuple] = []
    w.observe(lambda ch: states.append((ch["new"].get("from"), ch["new"].get("to"), ch["new"].get("state"))), names="diff_data")
    w.diff_from, w.diff_to = 5, 6  # the OPTIMIZE of emea
    assert states[-2:] == [(5, 6, "loading"), (5, 6, "ready")]  # the old pair never shows under the new one
    changes = table(w.diff_data["changes"])
    assert changes.to_pylist() == inspect.diff(dx.open_table(sales), 5, 6).to_pylist()
    c = {(r["section"], r["change"]): r for r in changes.to_pylist()}
    assert (c[("files", "added")]["files"], c[("files", "removed")]["files"]) == (1, 4) and c[("files", "net")]["rows"] == 0
    total, files = Replies(w).rows(w.diff_data["files"])
    assert total == 5 and sorted(r["change"] for r in files) == ["added"] + ["removed"] * 4
    w.diff_from, w.diff_to = 3, 4  # ADD COLUMNS + a property
    c = {(r["section"], r["change"]): r for r in table(w.diff_data["changes"]).to_pylist()}
    assert c[("schema", "added")]["name"] == "channel"
    assert c[("properties", "added")]["name"] == "delta.logRetentionDuration"
    w.diff_from = 99  # no such version: the error replaces the result
    assert w.diff_data["state"] == "error" and "99" in w.diff_data["error"] and "changes" not in w.diff_data
    assert "diff" in w.error


def test_log_health_tab(sales):
    w = explore(sales, tab="health")
    shown = table(w.health_data["metrics"]).to_pylist()
    expected = inspect.log_health(dx.open_table(sales)).to_pylist()
    assert [(r["metric"], r["value"], r["status"]) for r in shown] == [(r["metric"], r["value"], r["status"]) for r in expected]
    assert sum(w.health_data["status_counts"].values()) == len(shown)
    assert w.health_data["chart"]["mark"]["type"] == "line"


def test_maintenance_preview_and_a_missing_backend(sales, monkeypatch):
    w = explore(sales, tab="maintenance")
    names = [o["name"] for o in w.maintenance["operations"]]
    assert names == ["optimize", "vacuum", "checkpoint", "purge", "restore"]
    w._on_custom_msg(w, {"type": "preview", "op": "optimize"}, [])  # what the Preview button sends
    p = w.maintenance["preview"]
    assert w.maintenance["selected"] == "optimize"
    # amer and apac: 3 small files each without DVs + the file whose DV deletes over 5% of it
    assert p["bins"] == 2 and p["files_to_rewrite"] == 8 and p["files_after"] == 2
    exact = dict(p)
    monkeypatch.setattr(maintenance, "EXACT_PLAN_MAX_FILES", 5)  # the vectorized estimate for big tables
    est = w.preview("optimize")
    assert "estimate" in est and (est["files_to_rewrite"], est["files_after"]) == (exact["files_to_rewrite"], 2)
    w.preview("vacuum", retention_hours=0)
    assert w.maintenance["preview"]["files_to_delete"] == 5
    w.preview("checkpoint")
    assert w.maintenance["preview"]["commits_since_checkpoint"] == 8
    w.preview("purge")  # the two files with DVs (29 + 17 of 40 rows deleted)
    p = w.maintenance["preview"]
    assert (p["files_to_rewrite"], p["deleted_rows_dropped"], p["rows_kept"], p["files_past_purge_threshold"]) == (2, 46, 34, 2)
    w.preview("bogus")
    assert "unknown maintenance operation 'bogus'" in w.error


def _files(w: Explorer) -> int:
    return int(
        table(w.overview_data["metrics"])
        .filter(pc.equal(table(w.overview_data["metrics"]).column("metric"), "files"))["number"][0]
        .as_py()
    )


def test_running_optimize_with_the_local_writer(tmp_path):
    import demo_tables

    path = demo_tables.build_sales(tmp_path / "sales")
    rows_before = dx.open_table(path).snapshot().to_arrow().num_rows
    w = explore(path, tab="maintenance")
    maintenance.register_runner("optimize", "local", maintenance._local_optimize)
    maintenance.register_runner("checkpoint", "local", maintenance._local_checkpoint)
    try:
        w._on_custom_msg(w, {"type": "run", "op": "optimize"}, [])
        outcome = dict(w.maintenance)
        w._on_custom_msg(w, {"type": "run", "op": "checkpoint"}, [])
    finally:
        maintenance._REGISTERED.clear()
    assert w.error == "" and dx.open_table(path).listing().checkpoints
    w.version = 8
    assert w.max_version == 8 and _files(w) == 3
    assert "with local: version 7 -> 8" in outcome["result"] and outcome["progress"] == 1.0
    assert outcome["metrics"]  # the operation's own metrics, shown under the result
    assert dx.open_table(path).snapshot().to_arrow().num_rows == rows_before


def test_running_a_dv_purge_with_the_local_writer(tmp_path):
    import demo_tables

    path = demo_tables.build_sales(tmp_path / "sales")
    rows_before = sorted(r["id"] for r in dx.open_table(path).snapshot().to_arrow().to_pylist())
    w = explore(path, tab="dv")
    maintenance.register_runner("purge", "local", maintenance._local_purge)
    try:
        w._on_custom_msg(w, {"type": "run", "op": "purge"}, [])
    finally:
        maintenance._REGISTERED.clear()
    assert w.error == "" and "DV purge done with local: version 7 -> 8" in w.maintenance["result"]
    assert w.dv_data["version"] == 8 and w.dv_data["files_with_dv"] == 0  # the open tab shows the new version
    snap = dx.open_table(path).snapshot()
    assert not any(d for d in snap.add_actions().column("deletionVector").to_pylist())
    assert sorted(r["id"] for r in snap.to_arrow().to_pylist()) == rows_before


def test_restore_the_version_shown_with_a_preview(tmp_path):
    import demo_tables

    from deltaexplore.core.operations import vacuum

    path = demo_tables.build_sales(tmp_path / "sales")
    w = explore(path, tab="maintenance")
    w.version = 3
    w._on_custom_msg(w, {"type": "preview", "op": "restore"}, [])  # what the Preview button sends
    p = w.maintenance["preview"]
    changes = inspect.diff_files(dx.open_table(path), 7, 3)
    back = changes.filter(pc.not_equal(changes.column("change"), "removed"))
    away = changes.filter(pc.not_equal(changes.column("change"), "added"))
    assert (p["restore_to_version"], p["latest_version"], p["restorable"], p["files_missing"]) == (3, 7, True, 0)
    assert (p["files_back"], p["files_away"]) == (back.num_rows, away.num_rows) and p["files_back"] > 0
    assert p["rows_back"] - p["rows_away"] == (
        dx.open_table(path).snapshot(3).to_arrow().num_rows - dx.open_table(path).snapshot(7).to_arrow().num_rows
    )
    maintenance.register_runner("restore", "local", maintenance._local_restore)
    try:
        w._on_custom_msg(w, {"type": "run", "op": "restore"}, [])
    finally:
        maintenance._REGISTERED.clear()
    assert w.error == "" and "RESTORE done with local: version 7 -> 8" in w.maintenance["result"]
    table = dx.open_table(path)
    assert table.inspect.diff_rows(3, 8).num_rows == 0 and table.inspect.diff_rows(7, 8).num_rows > 0
    # once VACUUM deleted the files version 7 needs, the preview says so
    vacuum(path, retention_hours=0, dry_run=False, enforce_retention_duration=False)
    gone = explore(path, tab="maintenance").preview("restore", version=7)
    assert gone["restorable"] is False and gone["files_missing"] > 0 and gone["missing_examples"]


def _compact(table: dx.Table, *, progress, **params) -> dict:
    """A real (tiny) compaction: rewrites each partition's files into one and commits the change."""
    import os
    import uuid

    import pyarrow.parquet as pq

    snap = table.snapshot()
    files = snap.files()
    root = table.storage.root
    by_part: dict[str, list[dict]] = {}
    for f in files.to_pylist():
        if f["cardinality"] is None:
            by_part.setdefault(dict(f["partition_values"])["region"], []).append(f)
    actions = [{"commitInfo": {"timestamp": 1_704_100_000_000, "operation": "OPTIMIZE", "operationParameters": {}}}]
    groups = [g for g in by_part.items() if len(g[1]) > 1]
    for i, (region, group) in enumerate(groups):
        data = pa.concat_tables([pq.read_table(os.path.join(root, f["path"])) for f in group], promote_options="default")
        name = f"region={region}/part-compacted-{uuid.uuid4()}.parquet"
        pq.write_table(data, os.path.join(root, name))
        for f in group:
            actions.append({"remove": {"path": f["path"], "deletionTimestamp": 1_704_100_000_000, "dataChange": False}})
        actions.append(
            {
                "add": {
                    "path": name,
                    "partitionValues": {"region": region},
                    "size": os.path.getsize(os.path.join(root, name)),
                    "modificationTime": 1_704_100_000_000,
                    "dataChange": False,
                    "stats": json.dumps({"numRecords": data.num_rows}),
                }
            }
        )
        progress((i + 1) / len(groups), f"compacted {region}")
    version = snap.version + 1
    with open(os.path.join(root, "_delta_log", f"{version:020d}.json"), "x") as fh:
        fh.write("\n".join(json.dumps(a) for a in actions) + "\n")
    return {"partitions": len(groups)}


def test_running_an_operation_shows_progress_and_the_new_version(tmp_path):
    import demo_tables

    path = demo_tables.build_sales(tmp_path / "sales")
    w = explore(path, tab="maintenance")
    seen: list[float] = []
    w.observe(lambda ch: seen.append(ch["new"].get("progress", 0)), names="maintenance")
    previous = maintenance._REGISTERED.pop("optimize", None)
    maintenance.register_runner("optimize", "test-compactor", _compact)
    try:
        w._on_custom_msg(w, {"type": "run", "op": "optimize"}, [])
    finally:
        maintenance._REGISTERED.pop("optimize", None)
        if previous:
            maintenance._REGISTERED["optimize"] = previous
    assert w.error == ""
    assert (w.version, w.max_version) == (8, 8)  # the new version appeared and is shown
    assert _files(w) == 5
    assert "version 7 -> 8" in w.maintenance["result"] and w.maintenance["metrics"] == {"partitions": 2}
    assert 0.5 in seen and 1.0 in seen and w.maintenance["running"] is False
    assert dx.open_table(path).snapshot().to_arrow().num_rows == dx.open_table(path).snapshot(7).to_arrow().num_rows


def test_refresh_picks_up_a_commit_made_elsewhere(tmp_path):
    import demo_tables

    path = demo_tables.build_events(tmp_path / "ev")
    w = explore(path, version=0, tab="history")
    (tmp_path / "ev" / "_delta_log" / f"{2:020d}.json").write_text(
        '{"commitInfo":{"timestamp":1704081600000,"operation":"SET TBLPROPERTIES"}}\n'
    )
    w._on_custom_msg(w, {"type": "refresh"}, [])
    assert (w.max_version, w.version) == (2, 2)
    assert table(w.history_data["commits"]).column("operation")[0].as_py() == "SET TBLPROPERTIES"


def test_table_errors_become_messages(tmp_path):
    import demo_tables

    path = demo_tables.build_sales(tmp_path / "s")
    w = explore(path, tab="files")
    for f in (tmp_path / "s" / "_delta_log").glob("*.json"):
        if f.name.startswith("0000000000000000000"):
            f.unlink()
    w.version = 5  # its commits are gone now
    assert "version 5" in w.error and w.files_data["version"] == 7


def test_open_table_accepts_a_table_object(sales):
    t = dx.open_table(sales)
    assert explore(t).uri == t.uri


def test_an_internal_bug_shows_in_the_widget(sales, monkeypatch, caplog):
    """A failure that is not a DeltaExploreError (a bug) is shown in the widget and logged
    with its traceback, instead of vanishing into the kernel's log."""
    w = explore(sales)

    def broken() -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(w, "_load_files", broken)
    with caplog.at_level("ERROR", logger="deltaexplore.widgets.explorer"):
        w.tab = "files"
    assert w.error == "files: unexpected RuntimeError: boom (a deltaexplore bug: please report it)"
    assert w.busy == "" and "loading files failed" in caplog.text


def test_an_unknown_tab_is_refused(sales):
    with pytest.raises(dx.InvalidArgumentError, match="tab must be one of overview, history, files"):
        explore(sales, tab="bogus")


def test_advice_cards_preview_and_run_with_their_parameters(tmp_path):
    import json

    from deltaexplore.core.operations import write_table

    path = str(tmp_path / "adv")
    for i in range(6):
        write_table(path, pa.table({"id": pa.array([(i * 7919 + k * 104729) % 10007 for k in range(500)], pa.int64())}))
    w = explore(path, tab="maintenance")
    w._on_custom_msg(w, {"type": "advise"}, [])  # what "What should I run?" sends
    cards = w.maintenance["advice"]
    expected = inspect.advise(dx.open_table(path))
    assert [c["kind"] for c in cards] == expected.column("kind").to_pylist() and cards[0]["kind"] == "compaction"
    assert json.dumps(cards)  # JSON-safe for the browser
    first = cards[0]
    w._on_custom_msg(w, {"type": "preview", "op": first["operation"], "params": first["parameters"]}, [])
    assert w.maintenance["selected"] == "optimize" and w.maintenance["params"] == first["parameters"]
    assert w.maintenance["preview"]["files_after"] == first["files_after"]
    maintenance.register_runner("optimize", "local", maintenance._local_optimize)
    try:
        w._on_custom_msg(w, {"type": "run", "op": "optimize", "params": w.maintenance["params"]}, [])
    finally:
        maintenance._REGISTERED.clear()
    assert w.error == "" and dx.open_table(path).snapshot().num_files == first["files_after"]


def _rows_done(w: Explorer, timeout: float = 60.0) -> dict:
    """The Rows view once its job ended (it runs on its own thread)."""
    import time

    end = time.monotonic() + timeout
    while w.diff_rows_data.get("state") == "loading" and time.monotonic() < end:
        time.sleep(0.02)
    return w.diff_rows_data


@pytest.fixture
def keyed(tmp_path) -> str:
    """v0 200 rows in 10 files, v1 UPDATE of 15, v2 DELETE of 5, v3 an append of 10 (unique ids)."""
    from deltaexplore.core.operations import delete, update, write_table

    path = str(tmp_path / "keyed")
    ids = pa.array(range(200), pa.int64())
    data = pa.table({"id": ids, "amount": pc.multiply(ids, 1.5), "name": pc.cast(ids, pa.string())})
    write_table(path, data, max_rows_per_file=20, configuration={"delta.enableDeletionVectors": "false"})
    update(path, {"name": "'changed'"}, "id < 15")
    delete(path, "id between 100 and 104")
    more = pa.array(range(300, 310), pa.int64())
    write_table(path, pa.table({"id": more, "amount": pc.multiply(more, 1.5), "name": pc.cast(more, pa.string())}))
    return path


def test_diff_rows_view_runs_as_a_job_and_agrees_with_inspect(keyed):
    sales = keyed
    w = explore(sales, tab="diff")
    states: list[str] = []
    w.observe(lambda ch: states.append(ch["new"].get("state")), names="diff_rows_data")
    w._on_custom_msg(w, {"type": "diff_rows", "from": 0, "to": 3, "key": "id"}, [])  # the Rows view's button
    data = _rows_done(w)
    assert states[0] == "loading" and data["state"] == "ready", data
    expected = inspect.diff_rows(dx.open_table(sales), 0, 3, key="id")
    read = read_summary(expected)
    assert (data["from"], data["to"], data["key"], data["total"]) == (0, 3, ["id"], expected.num_rows)
    assert data["counts"] == {"update": 15, "delete": 5, "insert": 10}
    assert (data["files_read"], data["bytes_read"]) == (read["files_read"], read["bytes_read"]) and data["bytes_read"] > 0
    kinds = expected.column("_change").to_pylist()
    assert data["counts"] == {k: kinds.count(k) for k in set(kinds)}
    replies = Replies(w)
    total, got = replies.rows(data["rows"], end=1000)
    assert total == expected.num_rows and [r["id"] for r in got] == expected.column("id").to_pylist()
    # filter by key: the key's text (an integer column) matched as the grid's filter box sends it
    some = str(expected.column("id")[0].as_py())
    total, got = replies.rows(data["rows"], end=1000, filter={"text": some})
    assert total == sum(some in str(k) for k in expected.column("id").to_pylist()) and all(some in str(r["id"]) for r in got)
    reply, buffers = replies.ask("export", source=data["rows"]["id"], format="csv", sort=[], filter={"text": some})
    assert reply["filename"] == "diff_rows_v0_v3.csv" and buffers[0].count(b"\n") == total + 1
    assert "diff_rows(0, 3, key='id')" in data["rows"]["code"]
    # without a key: whole rows, counted (the filter matches any scalar column)
    w.diff_rows(0, 2).result(timeout=60)
    data = _rows_done(w)
    plain = inspect.diff_rows(dx.open_table(sales), 0, 2)
    assert data["counts"] == {"insert": 15, "delete": 20}
    assert data["state"] == "ready" and data["key"] == [] and data["total"] == plain.num_rows
    # a bad key is said in the view, not raised at the browser
    w._on_custom_msg(w, {"type": "diff_rows", "from": 0, "to": 3, "key": "nope"}, [])
    data = _rows_done(w)
    assert data["state"] == "error" and "nope" in data["error"] and "columns:" in data["error"]


def test_diff_rows_reports_progress_and_cancels_between_pieces(sales, monkeypatch):
    import threading
    import time

    import deltaexplore.inspect.row_diff as rd

    monkeypatch.setattr(rd, "PIECE_BYTES", 1)  # one file a piece
    monkeypatch.setattr(rd, "MIN_PIECE_BYTES", 1)
    reading = threading.Event()
    release = threading.Event()
    scan = rd.scan_of
    calls = []

    def slow_scan(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            time.sleep(0.25)  # past the view's 0.2 s between two progress updates
        if len(calls) == 2:
            reading.set()
            release.wait(30)
        return scan(*args, **kwargs)

    monkeypatch.setattr(rd, "scan_of", slow_scan)
    w = explore(sales, tab="diff")
    seen: list[dict] = []
    w.observe(lambda ch: seen.append(dict(ch["new"])), names="diff_rows_data")
    future = w.diff_rows(0, 7)
    assert reading.wait(30)  # the job reads its second piece; the kernel is free meanwhile
    assert w.diff_rows_data["state"] == "loading" and "read" in w.diff_rows_data["message"]
    w._on_custom_msg(w, {"type": "diff_rows_cancel"}, [])  # the Cancel button
    assert w.diff_rows_data["state"] == "cancelled"
    release.set()
    with pytest.raises(Exception, match="cancelled"):
        future.result(timeout=30)
    assert w.diff_rows_data["state"] == "cancelled" and "rows" not in w.diff_rows_data
    assert len(calls) == 2  # stopped before the next piece
    assert any(s.get("state") == "loading" and 0 < s.get("progress", 0) < 1 for s in seen)
    # a new request runs to the end
    monkeypatch.setattr(rd, "scan_of", scan)
    w.diff_rows(0, 7).result(timeout=60)
    assert _rows_done(w)["state"] == "ready"


def test_restore_to_a_history_commit_through_the_maintenance_path(tmp_path):
    """History's "Restore to this version": the same preview and run as the Maintenance tab's
    RESTORE, for the commit's version while the explorer shows the latest."""
    import demo_tables

    path = demo_tables.build_sales(tmp_path / "sales")
    w = explore(path, tab="history")
    assert w.version == 7
    w._on_custom_msg(w, {"type": "preview", "op": "restore", "params": {"version": 2}}, [])  # the History button
    m = w.maintenance
    assert (m["selected"], m["params"]) == ("restore", {"version": 2})
    assert m["preview"] == maintenance.preview("restore", w.view, version=2)
    assert (m["preview"]["restore_to_version"], m["preview"]["restorable"]) == (2, True)
    maintenance.register_runner("restore", "local", maintenance._local_restore)
    try:
        w._on_custom_msg(w, {"type": "run", "op": "restore", "params": m["params"]}, [])
    finally:
        maintenance._REGISTERED.clear()
    assert w.error == "" and "version 7 -> 8" in w.maintenance["result"] and w.version == 8
    assert dx.open_table(path).inspect.diff_rows(2, 8).num_rows == 0


def test_an_advice_run_shows_its_prediction_next_to_the_measure(tmp_path):
    """Run from an advice card: the card gets advise(check=True) of the new version (each
    metric predicted and measured, within its tolerance); a plain run of the same operation
    (not from a card) adds no check."""
    from deltaexplore.core.operations import write_table

    path = str(tmp_path / "adv")
    for i in range(6):
        write_table(path, pa.table({"id": pa.array([(i * 7919 + k * 104729) % 10007 for k in range(500)], pa.int64())}))
    w = explore(path, tab="maintenance")
    w._on_custom_msg(w, {"type": "advise"}, [])
    card = w.maintenance["advice"][0]
    assert card["kind"] == "compaction" and "check" not in card
    assert w.maintenance["advice_version"] == 5  # the version the advice is of
    # what the card's Preview button sends, then the panel's Run
    w._on_custom_msg(w, {"type": "preview", "op": card["operation"], "params": card["parameters"], "advice": card["rank"]}, [])
    assert w.maintenance["advice_rank"] == card["rank"]
    maintenance.register_runner("optimize", "local", maintenance._local_optimize)
    try:
        w._on_custom_msg(w, {"type": "run", "op": "optimize", "params": w.maintenance["params"]}, [])
    finally:
        maintenance._REGISTERED.clear()
    assert w.error == "" and w.version == 6
    check = w.maintenance["advice"][0]["check"]
    expected = inspect.advise(dx.open_table(path), check=True).to_pylist()
    assert check == {"version": 6, "rows": expected} and json.dumps(check)
    by_metric = {r["metric"]: r for r in check["rows"]}
    assert by_metric["files"]["predicted"] == card["files_after"] and by_metric["files"]["measured"] == 1
    assert all(r["within"] for r in check["rows"]) and (
        by_metric["files"]["version_before"],
        by_metric["files"]["version_after"],
    ) == (5, 6)
    assert w.maintenance["advice_rank"] is None
    assert w.maintenance["advice_version"] == 5  # kept: the front end says it is of an older version
    assert w.view.advice_check(5) == {
        "version": 5,
        "rows": [],
        "note": "no OPTIMIZE or REORG commit up to version 5: nothing to check",
    }
    # the operation's own card (not an advice) previews without an advice rank: its run adds no check
    for i in range(3):
        write_table(path, pa.table({"id": pa.array([i], pa.int64())}))
    w.refresh()
    w._on_custom_msg(w, {"type": "preview", "op": "optimize"}, [])
    assert w.maintenance["advice_rank"] is None
    maintenance.register_runner("optimize", "local", maintenance._local_optimize)
    try:
        w._on_custom_msg(w, {"type": "run", "op": "optimize"}, [])
    finally:
        maintenance._REGISTERED.clear()
    assert w.version == 10 and w.maintenance["advice"][0]["check"]["version"] == 6
