"""Charts through `chart.to_dict()`: marks, encodings and data shape; aggregation of large inputs;
one offline SVG/PNG render through vl-convert; the offline JupyterChart helper."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest

alt = pytest.importorskip("altair", reason="the viz extra is not installed: pip install -e '.[viz]'")

import deltaexplore as dx  # noqa: E402
from deltaexplore import viz  # noqa: E402
from deltaexplore.inspect import history  # noqa: E402
from deltaexplore.viz import VizError  # noqa: E402

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1] / "inspect"))
from inspect_tables import build_history_table, build_partitioned_table  # noqa: E402


def spec(chart):
    d = chart.to_dict()
    rows = next(iter(d.get("datasets", {}).values()), [])
    mark = d["mark"]["type"] if isinstance(d["mark"], dict) else d["mark"]
    return d, mark, d["encoding"], rows


@pytest.fixture
def hist(tmp_path):
    build_history_table(tmp_path / "h")
    return dx.open_table(str(tmp_path / "h"))


@pytest.fixture
def parted(tmp_path):
    build_partitioned_table(tmp_path / "p")
    return dx.open_table(str(tmp_path / "p"))


def test_history_chart(hist):
    d, mark, enc, rows = spec(viz.history_chart(hist))
    assert mark == "bar" and enc["x"]["field"] == "version" and enc["y"]["field"] == "files" and enc["color"]["field"] == "change"
    values = {(r["version"], r["change"]): r["files"] for r in rows}
    assert values[(0, "added")] == 2 and values[(1, "added")] == 1 and values[(1, "removed")] == -1
    assert values[(2, "added")] == 1 and values[(2, "removed")] == -1 and values[(3, "added")] == 0
    assert {r["operation"] for r in rows} == {"CREATE TABLE", "WRITE", "DELETE", "SET TBLPROPERTIES"}
    assert d.get("config") == alt.Chart(pa.table({"a": [1]})).mark_bar().to_dict().get("config")  # no configure_*
    _, _, enc_b, rows_b = spec(viz.history_chart(history(hist), metric="rows"))
    assert enc_b["y"]["field"] == "rows" and {(r["version"], r["change"]): r["rows"] for r in rows_b}[(0, "added")] == 30
    with pytest.raises(VizError):
        viz.history_chart(hist, metric="nope")
    with pytest.raises(VizError):
        viz.history_chart(pa.table({"x": [1]}))


def test_history_chart_aggregates_many_versions():
    n = 50_000
    h = pa.table(
        {
            "version": pa.array(np.arange(n), pa.int64()),
            "timestamp": pa.array(np.arange(n) * 1000, pa.int64()).cast(pa.timestamp("ms", tz="UTC")),
            "operation": pa.array(["WRITE"] * n),
            "files_added": pa.array(np.ones(n, np.int64)),
            "files_removed": pa.array(np.zeros(n, np.int64)),
        }
    )
    _, _, _, rows = spec(viz.history_chart(h, max_points=1000))
    assert len(rows) <= 2 * 1000
    assert sum(r["files"] for r in rows if r["change"] == "added") == n
    _, mark, _, op_rows = spec(viz.operations_chart(h, max_points=1000))
    assert mark == "tick" and len(op_rows) <= 1000 and sum(r["commits"] for r in op_rows) == n


def test_operations_and_versions_charts(hist):
    _, mark, enc, rows = spec(viz.operations_chart(hist))
    assert mark == "tick" and enc["x"]["type"] == "temporal" and len(rows) == 4
    _, mark, enc, rows = spec(viz.versions_chart(hist))
    assert mark == "tick" and enc["color"]["field"] == "status"
    assert {r["status"] for r in rows} == {"readable"} and sorted(r["version"] for r in rows) == [0, 1, 2, 3]


def test_file_size_histogram_bins(parted):
    _, mark, enc, rows = spec(viz.file_size_histogram(parted, small_file_bytes=256))
    assert mark == "bar" and enc["x"]["field"] == "bin_start" and "TiB" in enc["x"]["axis"]["labelExpr"]  # 16 MiB, not 16.0
    by_bin = {r["bin_start"]: r for r in rows}
    # sizes 100, 300, 1000, 50: bins 64-128, 256-512, 512-1024, 32-64
    assert sorted(by_bin) == [32, 64, 256, 512]
    assert [by_bin[b]["files"] for b in (32, 64, 256, 512)] == [1, 1, 1, 1]
    assert by_bin[64]["small"] and not by_bin[512]["small"]
    big = pa.table({"size": pa.array(np.random.default_rng(0).integers(1, 1 << 30, 200_000), pa.int64())})
    _, _, _, rows = spec(viz.file_size_histogram(big))
    assert len(rows) <= 31 and sum(r["files"] for r in rows) == 200_000


def test_file_size_histogram_small_files_follow_the_inspection(tmp_path):
    """Without `small_file_bytes`, a bin is small when `inspect.files()` says its files are
    (`delta.targetFileSize` / 2 here: 300 bytes), not by a default of the chart's own."""
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1]))
    from helpers import add, commit_info, metadata, protocol, write_commit

    fields = [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]
    md = metadata({"type": "struct", "fields": fields}, configuration={"delta.targetFileSize": "600"})
    sizes = [100, 300, 1000, 50]
    write_commit(tmp_path, 0, [commit_info(), protocol(), md, *[add(f"f{i}.parquet", s, 1) for i, s in enumerate(sizes)]])
    table = dx.open_table(str(tmp_path))
    assert table.inspect.files().column("is_small").to_pylist() == [True, False, False, True]
    for data in (table, table.snapshot(), table.inspect.files()):
        _, _, _, rows = spec(viz.file_size_histogram(data))
        assert {r["bin_start"]: r["small"] for r in rows} == {32: True, 64: True, 256: False, 512: False}


def test_partition_skew_chart(parted):
    d, mark, enc, rows = spec(viz.partition_skew_chart(parted, top=2))
    assert mark == "bar" and enc["x"]["field"] == "bytes" and enc["y"]["field"] == "label"
    # the values label the bars, the partition column names the axis; the rest: one bar, drawn
    assert enc["y"]["title"] == "date" and [r["label"] for r in rows] == ["2024-01-02", "2024-01-01", "1 others (mean)"]
    assert [r["bytes"] for r in rows] == [1000, 400, 50] and [r["partitions"] for r in rows] == [1, 1, 1]
    assert d["height"] == {"step": 18}  # as tall as its bars: labels never overlap


def _partitions_table(n: int, columns: tuple[str, ...] = ("date",)) -> pa.Table:
    rng = np.random.default_rng(n)
    keys = ["/".join(f"{c}={c[0]}{i:05d}" for c in columns) for i in range(n)]
    size = rng.integers(1, 1 << 40, n)
    return pa.table(
        {
            "partition": keys,
            "files": rng.integers(1, 5000, n),
            "bytes": size,
            "rows": size // 900,
            "small_files": rng.integers(0, 3, n),
        }
    )


@pytest.mark.parametrize("n", [1, 15, 16, 365, 10_000])
def test_partition_skew_chart_stays_legible_from_1_to_10000_partitions(n):
    """At most 16 bars whatever the count: the 15 largest, and the rest as one bar at their mean
    (on the scale of the others: drawn, never a sum that flattens them), with their totals."""
    parts = _partitions_table(n)
    d, _, _, rows = spec(viz.partition_skew_chart(parts))
    assert len(rows) == min(n, 16) and len({r["label"] for r in rows}) == len(rows)
    largest = sorted(parts.column("bytes").to_pylist(), reverse=True)
    assert [r["bytes"] for r in rows[:15]] == largest[:15]
    if n > 15:
        other = rows[-1]
        assert other["label"] == f"{n - 15:,} others (mean)" and other["partitions"] == n - 15
        assert other["bytes"] == pytest.approx(sum(largest[15:]) / (n - 15)) and other["bytes_total"] == sum(largest[15:])
        assert 0 < other["bytes"] <= largest[0] and d["title"] == f"partitions by bytes (the 15 largest of {n:,})"
    svg = viz.to_svg(viz.partition_skew_chart(parts))
    shown = {r["label"] for r in rows}
    labels = next(axis for axis in _axis_labels(svg) if shown & set(axis))
    assert sorted(labels) == sorted(shown)  # every bar labelled, none hidden for want of room


def test_partition_skew_chart_of_two_partition_columns():
    _, _, enc, rows = spec(viz.partition_skew_chart(_partitions_table(40, ("region", "day"))))
    assert enc["y"]["title"] == "region / day" and rows[0]["label"].startswith("r") and " / d" in rows[0]["label"]


def _axis_labels(svg: str) -> list[list[str]]:
    """The labels of each axis of a chart rendered to SVG (vl-convert), in drawing order."""
    groups = re.findall(r'role-axis-label".*?</g>', svg, re.S)
    return [re.findall(r">([^<>]+)</text>", g) for g in groups]


@pytest.mark.parametrize(
    ("gap_ms", "unit"),
    [
        (130, r"\d\d:\d\d:\d\d\.\d{3}"),  # commits within a second
        (7_000, r"\d\d:\d\d:\d\d"),
        (9 * 60_000, r"\d\d:\d\d"),
        (4 * 3_600_000, r"[A-Z][a-z]{2} \d\d \d\d:\d\d"),
        (86_400_000, r"[A-Z][a-z]{2} \d\d"),
        (61 * 86_400_000, r"[A-Z][a-z]{2} \d{4}"),
        (800 * 86_400_000, r"\d{4}"),  # across years
    ],
)
def test_time_axes_choose_their_unit_from_the_span(gap_ms, unit):
    """Seven commits `gap_ms` apart: every tick label in one format fine enough to tell them
    apart, none repeated (a fixed "%H:%M" labelled seven ticks "10:33" within a minute)."""
    from datetime import UTC, datetime, timedelta

    t0 = datetime(2026, 11, 27, 10, 33, 28, 250000, tzinfo=UTC)
    times = [t0 + timedelta(milliseconds=gap_ms * i) for i in range(7)]
    h = pa.table(
        {"version": list(range(7)), "timestamp": pa.array(times, pa.timestamp("ms", tz="UTC")), "operation": ["WRITE"] * 7}
    )
    chart = viz.operations_chart(h).properties(width=900)
    axis = chart.to_dict()["encoding"]["x"]["axis"]
    assert 2 <= len(axis["values"]) <= 7 and axis["labelOverlap"] is True
    labels = _axis_labels(viz.to_svg(chart))[0]
    assert len(labels) >= 2 and len(set(labels)) == len(labels), labels
    assert all(re.fullmatch(unit, x) for x in labels), labels
    one = viz.operations_chart(h.slice(0, 1)).to_dict()["encoding"]["x"]["axis"]
    assert len(one["values"]) == 1 and one["format"] == "%Y-%m-%d %H:%M:%S"  # one commit: its date and time


def test_layout_chart(parted, hist):
    _, mark, enc, rows = spec(viz.layout_chart(parted, "id"))
    assert mark == "rule" and enc["x"]["field"] == "lo" and enc["x2"]["field"] == "hi" and enc["color"]["field"] == "depth"
    assert sorted((r["lo"], r["hi"]) for r in rows) == [(0, 9), (5, 40), (100, 199)]
    with pytest.raises(VizError):
        viz.layout_chart(parted)
    n = 30_000
    lo = np.random.default_rng(1).integers(0, 1_000_000, n)
    lay = pa.table(
        {
            "path": pa.array([f"f{i}" for i in range(n)]),
            "min": pa.array(lo, pa.int64()),
            "max": pa.array(lo + 100, pa.int64()),
            "rank": pa.array(np.argsort(np.argsort(lo)), pa.int64()),
            "overlap_depth": pa.array(np.ones(n, np.int64)),
        }
    )
    d, _, _, rows = spec(viz.layout_chart(lay, max_files=300))
    assert len(rows) == 300 and sum(r["files"] for r in rows) == n
    assert "(30,000 files in 300 groups)" in d["title"] and rows[0]["path"] == "100 files"  # separators
    few = lay.slice(0, 301).set_column(3, "rank", pa.array(np.argsort(np.argsort(lo[:301])), pa.int64()))
    _, _, _, rows = spec(viz.layout_chart(few, max_files=300))
    assert {r["path"] for r in rows if r["files"] == 1} == {"1 file"}  # a group of one
    s = pa.table(
        {"path": ["a", "b"], "min": ["apple", "kiwi"], "max": ["melon", "zebra"], "rank": [0, 1], "overlap_depth": [2, 2]}
    )
    d, _, enc, rows = spec(viz.layout_chart(s))
    assert "rank of value" in enc["x"]["title"] and [(r["lo"], r["hi"]) for r in rows] == [(1, 3), (2, 4)]
    # one depth everywhere: said in the title, no one-label gradient legend
    assert d["title"].endswith("(overlap depth 2 everywhere)") and enc["color"]["legend"] is None
    d, _, enc, _ = spec(viz.layout_chart(s.set_column(4, "overlap_depth", pa.array([1, 2]))))
    assert "everywhere" not in d["title"] and enc["color"]["legend"]["format"] == ",d"


def test_value_axes_span_the_values_not_zero_to_them(tmp_path):
    """Ids from 7 billion: both layout charts' value axes start near the smallest value (an axis
    from 0 left 70% of the chart empty)."""
    from helpers import add, commit_info, metadata, protocol, write_commit
    from inspect_tables import T0, stats

    schema = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]}
    lows = [7_000_000_000 + i * 200_000_000 for i in range(11)]
    write_commit(
        tmp_path,
        0,
        [
            commit_info("WRITE", T0),
            protocol(1, 2),
            metadata(schema=schema),
            *(add(f"f{i}.parquet", 100, stats=stats(10, lo, lo + 150_000_000)) for i, lo in enumerate(lows)),
        ],
        mtime_ms=T0,
    )
    t = dx.open_table(str(tmp_path))
    for chart in (viz.layout_density_chart(t, "id"), viz.layout_chart(t.inspect.layout("id"), "id")):
        ticks = [float(x.replace(",", "")) for x in _axis_labels(viz.to_svg(chart))[0]]
        assert len(ticks) >= 2 and min(ticks) >= 6_000_000_000, ticks


@pytest.mark.parametrize("n", [1, 1_000_000])
def test_file_charts_stay_legible_from_1_to_1m_files(n):
    """File sizes, file ranges and deleted rows per file over 1 and a million files: a bounded
    number of marks that still count every file, and drawn (vl-convert) with no axis label cut
    short or repeated."""
    rng = np.random.default_rng(n)
    sizes = rng.lognormal(27, 1.5, n).astype(np.int64) + 1
    lo = rng.integers(0, 10**12, n)
    paths = (
        pa.array([f"part-{i:05d}.parquet" for i in range(n)])
        if n < 1000
        else pa.array(np.char.add("f", np.arange(n).astype(str)))
    )
    files = pa.table({"path": paths, "size": sizes, "is_small": sizes < (128 << 20)})
    lay = pa.table(
        {
            "path": paths,
            "min": pa.array(lo, pa.int64()),
            "max": pa.array(lo + rng.integers(0, 10**9, n), pa.int64()),
            "rank": pa.array(np.argsort(np.argsort(lo, kind="stable")), pa.int64()),
            "overlap_depth": pa.array(rng.integers(1, 4, n), pa.int64()),
        }
    )
    records = rng.integers(1, 5_000_000, n)
    deleted = rng.integers(0, 1000, n)
    dvs = pa.table(
        {
            "path": paths,
            "num_records": records,
            "cardinality": deleted,
            "deleted_ratio": deleted / records,
            "past_threshold": deleted > 500,
        }
    )
    counted = {
        "file sizes": (viz.file_size_histogram(files), "files"),
        "file ranges": (viz.layout_chart(lay, "id"), "files"),
        "deleted rows": (viz.dv_density_chart(dvs), "files" if n > 2000 else None),
    }
    for what, (chart, count) in counted.items():
        _, _, _, rows = spec(chart)
        assert 1 <= len(rows) <= 2000, what
        assert sum(r[count] for r in rows) == n if count else len(rows) == n, what
        for labels in _axis_labels(viz.to_svg(chart)):
            assert labels and len(set(labels)) == len(labels) and not any(x.endswith("…") for x in labels), (what, labels)


def test_explain_funnel(parted):
    _, mark, enc, rows = spec(viz.explain_funnel(parted, "`date` = '2024-01-01' AND id > 20"))
    assert mark == "bar" and enc["x"]["field"] == "files"
    assert [(r["stage"], r["files"]) for r in sorted(rows, key=lambda r: r["order"])] == [
        ("all files", 4),
        ("after partition pruning", 2),
        ("after stats pruning (read)", 1),
    ]
    assert rows[0]["bytes"] == 1450
    with pytest.raises(VizError):
        viz.explain_funnel(parted)


def test_dv_charts(parted):
    _, mark, enc, rows = spec(viz.dv_density_chart(parted))
    assert mark == "circle" and enc["y"]["field"] == "deleted_ratio" and len(rows) == 1
    assert rows[0]["deleted_ratio"] == pytest.approx(0.2)
    # 30 rows: a symlog axis labelled 0, 1, 2, 5 ... 50 (not every even number crowded at the top)
    assert rows[0]["num_records"] == 30 and enc["x"]["axis"]["values"] == [0, 1, 2, 5, 10, 20, 50]
    assert rows[0]["past_threshold"] in ("yes", "no") and enc["color"]["scale"]["domain"] == ["yes", "no"]
    assert enc["size"]["legend"]["symbolFillColor"] == "#9d9d9d"  # not black: readable on a dark theme
    no_threshold = pa.table({"path": ["a"], "num_records": [10], "cardinality": [1], "deleted_ratio": [0.1]})
    _, _, unknown_enc, unknown_rows = spec(viz.dv_density_chart(no_threshold))
    assert unknown_rows[0]["past_threshold"] == "unknown"
    assert unknown_enc["color"]["scale"]["domain"] == ["yes", "no", "unknown"]
    path = rows[0]["path"]
    _, mark, enc, cells = spec(viz.deleted_rows_heatmap(parted, path, columns=10, cells=10))
    assert mark == "rect" and enc["color"]["field"] == "share"
    # 30 rows in 10 cells of 3: rows 0-5 deleted -> the first two cells fully
    assert [c["deleted"] for c in sorted(cells, key=lambda c: c["first_row"])] == [3, 3, 0, 0, 0, 0, 0, 0, 0, 0]
    n = 10_000
    rng = np.random.default_rng(2)
    big = pa.table(
        {
            "path": pa.array([f"f{i}" for i in range(n)]),
            "num_records": pa.array(rng.integers(1, 10**6, n), pa.int64()),
            "cardinality": pa.array(rng.integers(0, 10, n), pa.int64()),
            "deleted_ratio": pa.array(rng.random(n)),
        }
    )
    _, mark, _, rows = spec(viz.dv_density_chart(big, max_points=1000))
    assert mark == "rect" and sum(r["files"] for r in rows) == n and len(rows) <= 20 * 20
    positions = pa.table({"path": ["x"] * 3, "row_index": pa.array([0, 5_000_000, 9_999_999], pa.int64())})
    _, _, _, cells = spec(viz.deleted_rows_heatmap(positions, num_records=10_000_000, cells=1000))
    assert len(cells) == 1000 and sum(c["deleted"] for c in cells) == 3 and sum(c["rows"] for c in cells) == 10_000_000


def test_log_health_chart(hist):
    _, mark, enc, rows = spec(viz.log_health_chart(hist))
    assert mark == "line" and enc["y"]["field"] == "bytes" and enc["color"]["field"] == "series"
    series = {r["series"] for r in rows}
    assert series == {"commit file", "JSON replayed to open"}
    replay = [r["bytes"] for r in sorted(rows, key=lambda r: r["version"]) if r["series"] == "JSON replayed to open"]
    assert replay == sorted(replay) and len(replay) == 4


def test_charts_compose_and_render_offline(hist, parted):
    combined = (viz.history_chart(hist) | viz.log_health_chart(hist)) & viz.layout_chart(parted, "id")
    svg = viz.to_svg(combined)
    assert svg.startswith("<svg") and "files added" in svg
    layered = viz.history_chart(hist) + viz.history_chart(hist, metric="bytes")
    assert isinstance(layered, alt.LayerChart)
    png = viz.to_png(viz.file_size_histogram(parted), scale=1)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"


def test_show_returns_an_offline_jupyter_chart(hist):
    pytest.importorskip("anywidget")
    w = viz.show(viz.history_chart(hist))
    assert isinstance(w, alt.JupyterChart)
    assert w.spec["mark"]["type"] == "bar" if isinstance(w.spec["mark"], dict) else w.spec["mark"] == "bar"


_REMOTE_IMPORT = re.compile(r"""(?:import|from)\s*\(?["'](https?:)?//""")


def test_show_bundles_vega_even_after_the_renderer_was_enabled(hist):
    """The first chart of a kernel may come from `viz.show` (`%delta ... --chart`) after
    importing `deltaexplore.viz` only switched the renderer: the widget must still carry the
    bundled Vega, not the CDN imports (regression: show() trusted a module flag)."""
    pytest.importorskip("anywidget")
    alt.JupyterChart.enable_offline(offline=False)  # a fresh kernel: Altair's CDN module
    assert _REMOTE_IMPORT.search(alt.JupyterChart._esm)
    viz.enable_offline_renderer()
    w = viz.show(viz.history_chart(hist))
    assert not _REMOTE_IMPORT.search(w._esm) and "esm.sh" not in w._esm
    alt.JupyterChart.enable_offline(offline=False)  # someone (Altair's renderer) went online again
    w = viz.show(viz.history_chart(hist))
    assert not _REMOTE_IMPORT.search(w._esm)


def test_importing_deltaexplore_does_not_import_altair():
    code = "import sys, deltaexplore; print('altair' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_bare_charts_render_offline_in_a_kernel():
    """In a real Jupyter kernel, importing deltaexplore.viz switches Altair to its offline
    `jupyter` renderer: a chart left as a cell's result is a widget with bundled Vega, no CDN
    script; a renderer the user chose first is kept."""
    pytest.importorskip("anywidget")
    jupyter_client = pytest.importorskip("jupyter_client")
    km, kc = jupyter_client.manager.start_new_kernel(kernel_name="python3")
    try:

        def run(code: str) -> dict:
            kc.execute(code)
            data: dict = {}
            while True:
                msg = kc.get_iopub_msg(timeout=60)
                kind, content = msg["msg_type"], msg["content"]
                if kind in ("execute_result", "display_data"):
                    data.update(content["data"])
                elif kind == "error":
                    raise AssertionError("\n".join(content["traceback"]))
                elif (
                    kind == "status"
                    and content["execution_state"] == "idle"
                    and msg["parent_header"].get("msg_type") == "execute_request"
                ):
                    return data

        run("import altair as alt, pyarrow as pa\nimport deltaexplore.viz as viz")
        shown = run(
            "print(alt.renderers.active)\nalt.Chart(pa.table({'v': [0, 1], 'n': [3, 5]})).mark_bar().encode(x='v:O', y='n:Q')"
        )
        assert "application/vnd.jupyter.widget-view+json" in shown
        assert not any("cdn.jsdelivr" in str(v) or "vega@" in str(v) for v in shown.values())
        run("alt.renderers.enable('mimetype')\nimport importlib; importlib.reload(viz)")
        kept = run("alt.Chart(pa.table({'v': [0]})).mark_bar().encode(x='v:O')")
        assert "application/vnd.vegalite.v6+json" in kept or any(k.startswith("application/vnd.vegalite") for k in kept)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def test_byte_counts_show_in_binary_units_in_tooltips_and_axes(hist, parted):
    """Tooltips of byte counts carry the display contract's text (human_bytes), never raw counts."""
    from deltaexplore.inspect.formatting import human_bytes

    charts = {
        "file sizes": viz.file_size_histogram(parted),
        "partitions": viz.partition_skew_chart(parted),
        "funnel": viz.explain_funnel(parted, "id > 20"),
        "log": viz.log_health_chart(hist),
        "history bytes": viz.history_chart(hist, metric="bytes"),
    }
    for name, chart in charts.items():
        _, _, enc, rows = spec(chart)
        tips = {t["field"]: t for t in enc["tooltip"]}
        text_field = next(f for f in tips if f.endswith("_text"))
        assert tips[text_field]["type"] == "nominal", name
        number = text_field.removesuffix("_text")
        assert rows and all(r[text_field] == human_bytes(abs(r[number])) for r in rows), name
        assert not any(f in ("bytes", "size") and t.get("type") == "quantitative" for f, t in tips.items()), name
    _, _, enc, _ = spec(charts["log"])
    assert "KiB" in enc["y"]["axis"]["labelExpr"] and enc["y"]["scale"]["type"] == "symlog"


@pytest.mark.parametrize(
    ("largest", "ticks"),
    [
        (0, [0, 1]),
        (1, [0, 1]),
        (3, [0, 1, 2, 5]),
        (40, [0, 1, 2, 5, 10, 20, 50]),
        (100, [0, 1, 2, 5, 10, 20, 50, 100]),
        (101, [0, 1, 10, 100, 1000]),  # 1-2-5 would be 9 ticks: powers of ten
        (999_999, [0, 1, 10, 100, 1000, 10_000, 100_000, 1_000_000]),
    ],
)
def test_decimal_ticks(largest, ticks):
    from deltaexplore.viz._data import decimal_ticks

    assert decimal_ticks(largest) == ticks


def test_timeline_chart(hist, tmp_path):
    tl = hist.inspect.timeline()
    _, mark, enc, rows = spec(viz.timeline_chart(tl, metric="small_file_share"))
    assert mark == "line" and enc["y"]["field"] == "small_file_share" and enc["y"]["axis"]["format"] == ".0%"
    assert [(r["version"], r["small_file_share"]) for r in rows] == [
        (r["version"], r["small_file_share"]) for r in tl.to_pylist()
    ]
    # a table or snapshot works too; a schema change is named in the tooltip
    from deltaexplore.core import operations as ops

    root = str(tmp_path / "evolving")
    ops.write_table(root, pa.table({"id": pa.array([1], pa.int64())}))
    ops.write_table(root, pa.table({"id": pa.array([2], pa.int64()), "x": ["a"]}), schema_mode="merge")
    _, _, _, rows = spec(viz.timeline_chart(dx.open_table(root)))
    assert [(r["version"], r["files"], r["change"]) for r in rows] == [(0, 1, None), (1, 2, "schema")]
    # many versions: ranges keep their maximum
    _, _, _, rows = spec(viz.timeline_chart(tl, metric="files", max_points=2))
    assert len(rows) <= 2 and max(r["files"] for r in rows) == max(tl.column("files").to_pylist())
    with pytest.raises(viz.VizError):
        viz.timeline_chart(tl, metric="nope")
    assert viz.to_svg(viz.timeline_chart(tl)).startswith("<svg")


def test_a_timeline_of_constant_counts_labels_each_whole_value_once(tmp_path):
    """Every version with one file (and a few rows): the count axes label whole values only,
    none twice (fractions were labelled "1, 1, 1, 0, 0, 0")."""
    from deltaexplore.core import operations as ops

    root = str(tmp_path / "constant")
    for i in range(6):
        ops.write_table(root, pa.table({"id": pa.array([i], pa.int64())}), mode="overwrite")
    tl = dx.open_table(root).inspect.timeline()
    assert set(tl.column("files").to_pylist()) == {1}
    for metric in ("files", "rows", "partitions", "tombstones"):
        y_labels = _axis_labels(viz.to_svg(viz.timeline_chart(tl, metric=metric)))[1]
        assert y_labels and len(set(y_labels)) == len(y_labels), (metric, y_labels)
        assert all(float(x.replace(",", "")) == int(float(x.replace(",", ""))) for x in y_labels), (metric, y_labels)
