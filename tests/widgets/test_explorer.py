"""The explorer widget, headless: set traits as the browser would, assert state and Arrow buffers."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
import traitlets
from ipywidgets.widgets.widget import _remove_buffers

import deltaexplore as dx
from deltaexplore.widgets import Explorer, explore, maintenance
from deltaexplore.widgets.arrow_ipc import from_ipc

IPC_TRAITS = {
    "history_ipc",
    "partitions_ipc",
    "sizes_ipc",
    "files_ipc",
    "layout_ipc",
    "dv_ipc",
    "diff_ipc",
    "diff_changes_ipc",
    "health_ipc",
}


def rows(w: Explorer, trait: str) -> list[dict]:
    return from_ipc(getattr(w, trait)).to_pylist()


def test_first_render_is_the_overview_at_the_latest_version(sales):
    w = explore(sales)
    assert isinstance(w, Explorer)
    assert (w.version, w.min_version, w.max_version) == (7, 0, 7)
    o = w.overview
    assert o["num_files"] == 9 and o["name"] == "sales" and o["partition_columns"] == ["region"]
    assert [c["name"] for c in o["schema"]] == ["id", "region", "amount", "customer", "channel"]
    assert o["files_with_dv"] == 2 and o["live_rows"] == o["num_records"] - o["deleted_rows"]
    assert o["timestamp"] == "2024-01-01T07:00:00+00:00"
    # other tabs are computed only when shown
    assert w.files_ipc == b"" and w.history_ipc == b""
    assert w.error == ""


def test_rows_travel_as_arrow_ipc_buffers_not_json(sales):
    w = explore(sales)
    for tab in ("history", "files", "dv", "diff", "health"):
        w.tab = tab
    w.tab = "layout"
    w.layout_column = "amount"
    state, buffer_paths, buffers = _remove_buffers(w.get_state())
    paths = {p[0] for p in buffer_paths}
    assert IPC_TRAITS <= paths
    for name in IPC_TRAITS:
        assert name not in state  # not in the JSON part of the message
    stream = buffers[buffer_paths.index(["files_ipc"])]
    assert bytes(stream[:4]) == b"\xff\xff\xff\xff"  # an Arrow IPC stream (continuation marker)
    assert pa.ipc.open_stream(pa.py_buffer(bytes(stream))).read_all().num_rows == 9


def test_history_tab_and_travelling_by_clicking_a_commit(sales):
    w = explore(sales)
    w.tab = "history"
    hist = rows(w, "history_ipc")
    assert [r["version"] for r in hist] == [7, 6, 5, 4, 3, 2, 1, 0]
    assert hist[1]["operation"] == "OPTIMIZE" and hist[0]["user_name"] == "ana"
    assert hist[-1]["timestamp"].startswith("2024-01-01T00:00:00")
    assert w.history_more is False
    w2 = explore(sales, history_limit=3, tab="history")
    assert [r["version"] for r in rows(w2, "history_ipc")] == [7, 6, 5] and w2.history_more
    w2._on_custom_msg(w2, {"type": "more_history"}, [])  # "Load older commits"
    assert [r["version"] for r in rows(w2, "history_ipc")] == [7, 6, 5, 4, 3, 2]
    w.version = 0  # what clicking the v0 row does
    assert w.overview["version"] == 0 and w.overview["num_files"] == 3
    assert "channel" not in [c["name"] for c in w.overview["schema"]]
    assert w.history_ipc and w.error == ""


def test_version_outside_the_log_is_refused(sales):
    w = explore(sales)
    with pytest.raises(traitlets.TraitError, match=r"outside the table.s versions 0\.\.7"):
        w.version = 99
    assert w.version == 7


def test_files_tab_aggregates_first_then_pages(sales):
    w = explore(sales, page_size=4)
    w.tab = "files"
    parts = {r["partition"]: r for r in rows(w, "partitions_ipc")}
    assert set(parts) == {"region=emea", "region=amer", "region=apac"}
    assert parts["region=emea"]["files"] == 1 and parts["region=amer"]["files"] == 4
    assert w.partitions_summary["partitions"] == 3
    assert sum(r["files"] for r in rows(w, "sizes_ipc")) == 9
    assert w.files_total == 9
    page1 = rows(w, "files_ipc")
    assert len(page1) == 4
    sizes = [r["size"] for r in page1]
    assert sizes == sorted(sizes, reverse=True)
    w.files_query = {**w.files_query, "limit": 9}
    storage = sorted((r["dv_storage"] or "-") for r in rows(w, "files_ipc"))
    assert storage == ["-"] * 7 + ["file", "file"]  # the two DVs are files next to the data (code u)
    w.files_query = {**w.files_query, "limit": 4}
    w.files_query = {**w.files_query, "offset": 4}
    page2 = rows(w, "files_ipc")
    assert len(page2) == 4 and not {r["path"] for r in page1} & {r["path"] for r in page2}
    w.files_query = {**w.files_query, "offset": 0, "search": "REGION=APAC", "sort": "path", "descending": False}
    apac = rows(w, "files_ipc")
    assert w.files_total == 4 and all(r["partition"] == "region=apac" for r in apac)
    assert [r["path"] for r in apac] == sorted(r["path"] for r in apac)


def test_bad_sort_shows_an_error_instead_of_raising(sales):
    w = explore(sales)
    w.tab = "files"
    w.files_query = {**w.files_query, "sort": "bogus"}
    assert "cannot sort files by 'bogus'" in w.error


def test_layout_overlap_depth_before_and_after_clustering(events):
    w = explore(events, version=0, tab="layout")
    assert "event_id" in w.layout_columns
    w.layout_column = "event_id"
    assert w.layout_summary["files_with_stats"] == 12
    assert w.layout_summary["max_overlap"] == 12  # random ids: every file spans nearly everything
    w.version = 1
    assert w.layout_summary["max_overlap"] == 1  # sorted: disjoint ranges
    ranges = rows(w, "layout_ipc")
    assert [r["lo"] for r in ranges] == sorted(r["lo"] for r in ranges)
    assert ranges[0]["min"] == "0"


def test_deletion_vectors_tab(sales):
    w = explore(sales, tab="dv")
    s = w.dv_summary
    assert s["files_with_dv"] == 2 and s["dv_files"] == 2
    dvs = rows(w, "dv_ipc")
    assert [r["storage"] for r in dvs] == ["file", "file"]
    assert all(0 < r["deleted_ratio"] <= 1 for r in dvs)
    assert dvs[0]["deleted_ratio"] >= dvs[1]["deleted_ratio"]
    w.version = 2
    assert w.dv_summary["files_with_dv"] == 0 and rows(w, "dv_ipc") == []


def changes(w: Explorer) -> dict[tuple[str, str], dict]:
    return {(r["section"], r["change"]): r for r in rows(w, "diff_changes_ipc")}


def test_diff_between_two_versions(sales):
    w = explore(sales, tab="diff")
    assert (w.diff_from, w.diff_to) == (6, 7)
    w.diff_from, w.diff_to = 5, 6  # the OPTIMIZE of emea
    c = changes(w)
    assert (c[("files", "added")]["files"], c[("files", "removed")]["files"]) == (1, 4)
    assert c[("files", "net")]["rows"] == 0
    assert sorted(r["change"] for r in rows(w, "diff_ipc")) == ["added"] + ["removed"] * 4
    w.diff_from, w.diff_to = 3, 4  # ADD COLUMNS + a property
    c = changes(w)
    assert ("schema", "added") in c and c[("schema", "added")]["name"] == "channel"
    assert c[("properties", "added")]["name"] == "delta.logRetentionDuration"
    w.diff_from, w.diff_to = 2, 3  # DELETE with DVs: files re-added with a new DV
    assert changes(w)[("files", "dv_changed")]["files"] == 2
    assert w.diff_summary == {"from_version": 2, "to_version": 3, "files_shown": 2}


def test_log_health_tab(sales):
    w = explore(sales, tab="health")
    h = {r["metric"]: r for r in rows(w, "health_ipc")}
    assert h["commits_since_checkpoint"]["value"] == "8"
    assert {r["status"] for r in h.values()} <= {"ok", "info", "warn", "error"}


def test_maintenance_preview_and_a_missing_backend(sales, monkeypatch):
    w = explore(sales, tab="maintenance")
    names = [o["name"] for o in w.maintenance["operations"]]
    assert names == ["optimize", "vacuum", "checkpoint", "purge"]
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


def test_running_optimize_with_the_local_writer(tmp_path):
    import demo_tables

    path = demo_tables.build_sales(tmp_path / "sales")
    rows_before = dx.open_table(path).snapshot().to_arrow().num_rows
    w = explore(path, tab="maintenance")
    # the local writer even where Spark would be preferred (pyspark installed)
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
    assert w.max_version == 8 and w.overview["num_files"] == 3
    assert "with local: version 7 -> 8" in outcome["result"] and outcome["progress"] == 1.0
    assert dx.open_table(path).snapshot().to_arrow().num_rows == rows_before


def test_running_a_dv_purge_with_the_local_writer(tmp_path):
    import demo_tables

    path = demo_tables.build_sales(tmp_path / "sales")
    rows_before = sorted(r["id"] for r in dx.open_table(path).snapshot().to_arrow().to_pylist())
    w = explore(path, tab="dv")
    assert w.error == ""
    maintenance.register_runner("purge", "local", maintenance._local_purge)
    try:
        w._on_custom_msg(w, {"type": "run", "op": "purge"}, [])
    finally:
        maintenance._REGISTERED.clear()
    assert w.error == "" and "DV purge done with local: version 7 -> 8" in w.maintenance["result"]
    snap = dx.open_table(path).snapshot()
    assert not any(d for d in snap.add_actions().column("deletionVector").to_pylist())
    assert sorted(r["id"] for r in snap.to_arrow().to_pylist()) == rows_before


def _compact(table: dx.Table, *, progress, **params) -> dict:
    """A real (tiny) compaction: rewrites each partition's files into one and commits the change."""
    import json
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
    assert w.overview["num_files"] == 5
    assert "version 7 -> 8" in w.maintenance["result"]
    assert 0.5 in seen and 1.0 in seen and w.maintenance["running"] is False
    assert dx.open_table(path).snapshot().to_arrow().num_rows == dx.open_table(path).snapshot(7).to_arrow().num_rows


def test_refresh_picks_up_a_commit_made_elsewhere(tmp_path):
    import demo_tables

    path = demo_tables.build_events(tmp_path / "ev")
    w = explore(path, version=0)
    (tmp_path / "ev" / "_delta_log" / f"{2:020d}.json").write_text(
        '{"commitInfo":{"timestamp":1704081600000,"operation":"SET TBLPROPERTIES"}}\n'
    )
    w._on_custom_msg(w, {"type": "refresh"}, [])
    assert (w.max_version, w.version) == (2, 2)


def test_table_errors_become_messages(tmp_path):
    import demo_tables

    path = demo_tables.build_sales(tmp_path / "s")
    w = explore(path, tab="files")
    first = w.files_total
    for f in (tmp_path / "s" / "_delta_log").glob("*.json"):
        if f.name.startswith("0000000000000000000"):
            f.unlink()
    w.version = 5  # its commits are gone now
    assert "version 5" in w.error and w.files_total == first


def test_open_table_accepts_a_table_object_and_storage_options(sales):
    t = dx.open_table(sales)
    assert explore(t).uri == t.uri


def test_layout_tab_opens_on_a_column_and_agrees_with_inspect_layout(events):
    """The layout tab is never empty when a column has stats; its numbers are `inspect.layout`'s."""
    w = explore(events, version=0, tab="layout")
    assert w.layout_column == "event_id" and w.error == ""  # the first column with stats
    per_file = dx.open_table(events).snapshot(0).inspect.layout("event_id")
    depth = per_file.column("overlap_depth").to_pylist()
    s = w.layout_summary
    assert (s["files"], s["files_with_stats"], s["max_overlap"]) == (12, 12, max(depth))
    assert s["mean_overlap"] == round(sum(depth) / 12, 2)
    assert s["clustering_quality"] == round(1 - (sum(depth) / 12 - 1) / 11, 3) and s["clustering_quality"] < 0.2
    shown = rows(w, "layout_ipc")
    assert sorted(r["depth"] for r in shown) == sorted(depth)
    # each shown range is its file's, in (min, max) order
    bounds = {r["path"]: (str(r["min"]), str(r["max"]), r["overlap_depth"]) for r in per_file.to_pylist()}
    assert all(bounds[r["path"]] == (r["min"], r["max"], r["depth"]) for r in shown)
    keys = [(int(r["min"]), int(r["max"])) for r in shown]
    assert keys == sorted(keys) and [r["lo"] for r in shown] == sorted(r["lo"] for r in shown)
    w.version = 1  # after OPTIMIZE ZORDER: disjoint ranges
    assert w.layout_summary["clustering_quality"] == 1.0 and w.layout_summary["max_overlap"] == 1
    w.layout_column = "value"
    assert w.layout_summary["column"] == "value" and w.error == ""
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
    assert w.layout_summary["files_with_stats"] == 3 and w.layout_summary["files_without_stats"] == 1
    assert [r["path"] for r in rows(w, "layout_ipc")] == ["a.parquet", "c.parquet", "b.parquet"]  # by ts (5, 8, 9)


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
