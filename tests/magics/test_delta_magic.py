"""`%delta` through IPython's testing shell: each subcommand returns an object; errors are short."""

from __future__ import annotations

import pyarrow as pa
import pytest
from IPython.core.error import UsageError

import deltaexplore as dx
from deltaexplore.magics import COMMANDS, DeltaMagics
from deltaexplore.magics.report import Report
from deltaexplore.widgets import Explorer


def delta(ip, line: str):
    return ip.run_line_magic("delta", line)


def test_every_documented_subcommand_exists():
    expected = {
        "explore",
        "history",
        "diff",
        "files",
        "layout",
        "explain",
        "dv",
        "health",
        "features",
        "vacuum",
        "optimize",
        "read",
        "advise",
    }
    assert expected <= set(COMMANDS)


def test_help_lists_subcommands(ip):
    text = repr(delta(ip, "help"))
    assert "explore" in text and "vacuum" in text and "%delta SUBCOMMAND" in text
    assert repr(delta(ip, "")) == text


def test_history_returns_an_arrow_table(ip, sales):
    h = delta(ip, f"history {sales} -n 3")
    assert isinstance(h, pa.Table)
    assert h.column("version").to_pylist() == [7, 6, 5]
    assert delta(ip, f"history {sales} --all").num_rows == 8


def test_explore_returns_the_widget(ip, sales):
    w = delta(ip, f"explore {sales} -v 2 --tab files")
    assert isinstance(w, Explorer) and w.version == 2 and w.tab == "files" and w.files_data["files"]["total"] == 9


def test_use_sets_the_default_table_and_variables_work(ip, sales):
    delta(ip, f"use {sales}")
    assert delta(ip, "files").num_rows == 9
    ip.user_ns["tbl"] = dx.open_table(sales)
    assert delta(ip, "files tbl -v 0").num_rows == 3
    ip.user_ns["where"] = sales
    versions = delta(ip, "versions where")
    assert versions.column("version").to_pylist() == list(range(8)) and all(versions.column("readable").to_pylist())


def test_inspection_subcommands_return_the_inspection_tables(ip, sales):
    parts = delta(ip, f"files {sales} --partitions --sort files --asc")
    assert parts.column("partition").to_pylist()[0] == "region=emea" and parts.num_rows == 3
    page = delta(ip, f"files {sales} --sort path --asc -n 2")
    assert page.num_rows == 2 and page.column("path").to_pylist() == sorted(page.column("path").to_pylist())
    lay = delta(ip, f"layout {sales} -c amount")
    assert lay.num_rows == 9 and {"min", "max", "overlap_depth"} <= set(lay.column_names)
    summary = delta(ip, f"layout {sales}")
    assert "amount" in summary.column("column").to_pylist()
    dv = delta(ip, f"dv {sales}")
    assert dv.num_rows == 2 and set(dv.column("storage").to_pylist()) == {"file"}
    assert delta(ip, f"dv {sales} --files").num_rows == 2
    health = delta(ip, f"health {sales}")
    assert "commits_since_checkpoint" in health.column("metric").to_pylist()
    feats = delta(ip, f"features {sales}")
    assert "deletionVectors" in feats.column("feature").to_pylist()
    assert delta(ip, f"features {sales} --compat").num_rows > 0
    ov = delta(ip, f"overview {sales} -v 0")
    assert dict(zip(ov.column("metric").to_pylist(), ov.column("value").to_pylist()))["files"] == "3"
    assert delta(ip, f"commits {sales} 0 0").num_rows > 3


def test_diff_explain_read_schema(ip, sales):
    d = delta(ip, f"diff {sales} 5 6")
    files = {r["change"]: r["files"] for r in d.to_pylist() if r["section"] == "files"}
    assert (files["added"], files["removed"]) == (1, 4)
    assert sorted(delta(ip, f"diff {sales} 5 6 --files").column("change").to_pylist()) == ["added"] + ["removed"] * 4
    delta(ip, f"use {sales}")
    assert delta(ip, "diff 5 6 --files").num_rows == 5  # a number first: versions of the current table
    assert delta(ip, "diff 6 --files").column("change").to_pylist() == ["dv_changed"]  # v6 -> latest (v7)
    # net rows: --rows reads the files that differ, --key pairs old and new values
    rows = delta(ip, "diff 6 7 --rows")
    direct = dx.open_table(sales).inspect.diff_rows(6, 7)
    assert rows.num_rows == direct.num_rows > 0 and set(rows.column("_change").to_pylist()) == {"delete"}
    assert "read 1 file," in rows.schema.metadata[b"deltaexplore.title"].decode()
    keyed = delta(ip, "diff 5 6 --rows --key id --columns region")
    assert keyed.column_names[:3] == ["_change", "_changed_columns", "id"] and "after.region" in keyed.column_names
    assert keyed.num_rows == dx.open_table(sales).inspect.diff_rows(5, 6, key="id", columns=["region"]).num_rows
    e = delta(ip, f"explain {sales} --where \"region = 'emea'\"")
    assert e.num_rows == 9 and e.filter(e.column("selected")).num_rows == 1
    assert delta(ip, f"explain {sales} --where \"region = 'emea'\" --selected").num_rows == 1
    rows = delta(ip, f"read {sales} -c id,region -w \"region = 'emea'\" -n 0")
    assert rows.column_names == ["id", "region"] and rows.num_rows == 68
    assert delta(ip, f"read {sales}").num_rows == 20  # DeltaMagics.limit
    assert delta(ip, f"schema {sales}").names == ["id", "region", "amount", "customer", "channel"]


def test_vacuum_and_optimize_default_to_a_dry_run(ip, sales):
    v = delta(ip, f"vacuum {sales} --dry-run --retention-hours 0")
    # 4 data files compacted away by OPTIMIZE + the DV file replaced at v7 (DV re-adds keep their data file)
    assert isinstance(v, pa.Table) and v.num_rows == 5
    o = delta(ip, f"optimize {sales}")
    assert o.title == "OPTIMIZE (compact) · sales" and o.note.startswith("dry run") and o["files_to_rewrite"] == 8
    c = delta(ip, f"checkpoint {sales}")
    assert c["commits_since_checkpoint"] == 8


@pytest.mark.parametrize(
    "line",
    [
        "history {sales} --chart",
        "versions {sales} --chart",
        "files {sales} --chart",
        "files {sales} --partitions --chart",
        "layout {sales} -c amount --chart",
        "explain {sales} -w \"region = 'emea'\" --chart",
        "dv {sales} --chart",
        "health {sales} --chart",
    ],
)
def test_chart_options_return_offline_charts(ip, sales, line):
    import altair as alt

    chart = delta(ip, line.format(sales=sales))
    assert isinstance(chart, alt.JupyterChart)
    spec = chart.chart.to_dict()
    assert spec["$schema"].startswith("https://vega.github.io/schema/vega-lite/")


def test_layout_chart_needs_a_column(ip, sales):
    with pytest.raises(UsageError, match="needs a column"):
        delta(ip, f"layout {sales} --chart")


def test_config_traitlets_set_defaults(ip, sales):
    ip.run_line_magic("config", "DeltaMagics.limit = 2")
    try:
        assert delta(ip, f"history {sales}").num_rows == 2
        assert delta(ip, f"read {sales}").num_rows == 2
    finally:
        ip.run_line_magic("config", "DeltaMagics.limit = 20")
    ip.run_line_magic("config", f"DeltaMagics.default_table = '{sales}'")
    try:
        magics = ip.magics_manager.registry["DeltaMagics"]
        magics._current = ""
        assert delta(ip, "versions").num_rows == 8
    finally:
        ip.run_line_magic("config", "DeltaMagics.default_table = ''")
    assert isinstance(ip.magics_manager.registry["DeltaMagics"], DeltaMagics)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("bogus", "unknown subcommand 'bogus'"),
        ("history /nonexistent/table", "not a Delta table"),
        ("files {sales} -v 99", "99"),
        ("layout {sales} -c nope", "nope"),
        ("files {sales} --sort nope", "cannot sort by 'nope'"),
        ("diff {sales}", "expected 1..2 versions after the table, got 0"),
        ("diff", "expected 1..2 versions after the table, got 0"),
        ("diff {sales} 1 2 3", "expected 1..2 versions after the table, got 3"),
        ("diff {sales} 1 2 --key id", "--key and --columns go with --rows"),
        ("diff {sales} 1 2 --rows --key nope", "nope"),
        ("history {sales} --bogus", "unrecognized arguments: --bogus"),
        ("read {sales} -w 'id ==== 1'", ""),
        ("history 'unclosed", "cannot parse the line"),
        ("history {sales} -n -5", "must be 0 or more, got -5"),
        ("read {sales} --limit -1", "must be 0 or more, got -1"),
        ("files {sales} -n x", "expected a whole number, got 'x'"),
    ],
)
def test_errors_are_short_usage_errors(ip, sales, line, message):
    magics = ip.magics_manager.registry["DeltaMagics"]
    magics._current = ""
    with pytest.raises(UsageError) as info:
        delta(ip, line.format(sales=sales))
    assert message in str(info.value)
    assert "Traceback" not in str(info.value)


def test_no_table_anywhere_is_a_usage_error(ip):
    ip.magics_manager.registry["DeltaMagics"]._current = ""
    with pytest.raises(UsageError, match="no table given"):
        delta(ip, "files")


def test_usage_error_shows_one_line_in_the_shell(ip, capsys):
    ip.run_cell("%delta history /nonexistent/table")
    err = capsys.readouterr()
    text = err.out + err.err
    assert "UsageError" in text and "not a Delta table" in text and "Traceback" not in text


def test_reports_render_escaped_html(ip, hostile):
    r = delta(ip, f"optimize {hostile}")
    assert r.note.startswith("dry run") and "<script>" not in r._repr_html_()
    from deltaexplore.widgets.tables import table_html

    parts = table_html(delta(ip, f"files {hostile} --partitions"))
    # the partition column "part" holds the payload, as text
    assert "<img" not in parts and "<td><span>&lt;img src=x onerror=alert(1)&gt;</span></td>" in parts and ">part</th>" in parts
    assert "&lt;script&gt;" in Report("t", {"x": "<script>"})._repr_html_()


def test_run_flag_runs_the_operation(ip, tmp_path):
    import demo_tables

    from deltaexplore.widgets import maintenance

    path = demo_tables.build_sales(tmp_path / "sales")
    maintenance.register_runner("optimize", "local", maintenance._local_optimize)
    try:
        r = delta(ip, f"optimize {path} --run")
    finally:
        maintenance._REGISTERED.clear()
    assert r.title == "OPTIMIZE (compact) · sales" and (r["backend"], r["version_before"], r["version_after"]) == ("local", 7, 8)
    assert dx.open_table(path).snapshot().num_files == 3


def test_follow_opens_the_explorer_following_the_table(ip, sales, tmp_path):
    import shutil
    import time

    from deltaexplore.core import operations as ops

    uri = str(tmp_path / "sales")
    shutil.copytree(sales, uri)
    w = delta(ip, f"follow {uri} --interval 0.05")
    try:
        assert isinstance(w, Explorer) and w.follow is True and w.tab == "history" and w._follower.running
        ops.write_table(uri, dx.open_table(uri).snapshot().to_arrow().slice(0, 1))
        deadline = time.monotonic() + 20
        while w.max_version != 8:
            assert time.monotonic() < deadline, "version 8 never appeared"
            time.sleep(0.02)
    finally:
        w.close()
    assert not w.follow


def test_advise_and_its_check(ip, tmp_path):
    from deltaexplore.core.operations import optimize, write_table

    path = str(tmp_path / "adv")
    for i in range(6):
        write_table(path, pa.table({"id": pa.array([(i * 7919 + k * 104729) % 10007 for k in range(500)], pa.int64())}))
    advice = delta(ip, f"advise {path} -c id")
    assert advice.num_rows >= 1 and advice.column("rank").to_pylist()[0] == 1
    direct = dx.open_table(path).inspect.advise(columns=["id"])
    assert advice.column("kind").to_pylist() == direct.column("kind").to_pylist()
    assert "compaction" in advice.column("kind").to_pylist()
    assert "Advice" in advice.schema.metadata[b"deltaexplore.title"].decode()
    optimize(path)
    checked = delta(ip, f"advise {path} --check")
    assert set(checked.column("metric").to_pylist()) == {"files", "bytes"} and all(checked.column("within").to_pylist())
    assert "2 of 2 predictions within tolerance" in checked.schema.metadata[b"deltaexplore.title"].decode()
