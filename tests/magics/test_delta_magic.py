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
    expected = {"explore", "history", "diff", "files", "layout", "explain", "dv", "health", "features", "vacuum", "optimize", "read"}
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
    assert isinstance(w, Explorer) and w.version == 2 and w.tab == "files" and w.files_total == 9


def test_use_sets_the_default_table_and_variables_work(ip, sales):
    delta(ip, f"use {sales}")
    assert delta(ip, "files").num_rows == 9
    ip.user_ns["tbl"] = dx.open_table(sales)
    assert delta(ip, "files tbl -v 0").num_rows == 3
    ip.user_ns["where"] = sales
    assert delta(ip, "versions where")["latest"] == 7


def test_files_partitions_layout_dv_health_features(ip, sales):
    parts = delta(ip, f"files {sales} --partitions")
    assert isinstance(parts, Report) and parts["partitions"] == 3
    page = delta(ip, f"files {sales} --sort path --asc -n 2 --offset 1")
    assert page.num_rows == 2 and page.column("path").to_pylist() == sorted(page.column("path").to_pylist())
    lay = delta(ip, f"layout {sales} -c amount")
    assert lay["column"] == "amount" and lay["files_with_stats"] == 9
    dv = delta(ip, f"dv {sales}")
    assert dv["files_with_dv"] == 2
    health = delta(ip, f"health {sales}")
    assert health["commits"] == 8
    feats = delta(ip, f"features {sales}")
    assert "deletionVectors" in feats.column("name").to_pylist()


def test_diff_explain_read_schema(ip, sales):
    d = delta(ip, f"diff {sales} 5 6")
    assert (d["files_added"], d["files_removed"]) == (1, 4)
    assert delta(ip, f"diff {sales} 6")["to_version"] == 7
    e = delta(ip, f"explain {sales} --where \"region = 'emea'\"")
    assert e["selected_files"] == 1 and e["partition_pruned"] == 8
    rows = delta(ip, f"read {sales} -c id,region -w \"region = 'emea'\" -n 0")
    assert rows.column_names == ["id", "region"] and rows.num_rows == 68
    assert delta(ip, f"read {sales}").num_rows == 20  # DeltaMagics.limit
    assert delta(ip, f"schema {sales}").names == ["id", "region", "amount", "customer", "channel"]


def test_vacuum_and_optimize_default_to_a_dry_run(ip, sales):
    v = delta(ip, f"vacuum {sales} --dry-run --retention-hours 0")
    assert v.title == "vacuum (dry run)" and v["files_to_delete"] == 7
    o = delta(ip, f"optimize {sales}")
    assert o.title == "optimize (dry run)" and o["files_to_rewrite"] == 8


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
        assert delta(ip, "versions")["latest"] == 7
    finally:
        ip.run_line_magic("config", "DeltaMagics.default_table = ''")
    assert isinstance(ip.magics_manager.registry["DeltaMagics"], DeltaMagics)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("bogus", "unknown subcommand 'bogus'"),
        ("history /nonexistent/table", "not a Delta table"),
        ("files {sales} -v 99", "99"),
        ("layout {sales} -c nope", "no min/max statistics can exist for column 'nope'"),
        ("files {sales} --sort nope", "cannot sort files by 'nope'"),
        ("diff {sales}", "argument v1: invalid int value"),
        ("diff", "the following arguments are required: v1"),
        ("history {sales} --bogus", "unrecognized arguments: --bogus"),
        ("read {sales} -w 'id ==== 1'", ""),
        ("history 'unclosed", "cannot parse the line"),
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
    r = delta(ip, f"health {hostile}")
    html = r._repr_html_()
    assert "<script>" not in html
    parts = delta(ip, f"files {hostile} --partitions")._repr_html_()
    assert "<img" not in parts and "part=&lt;img src=x onerror=alert(1)&gt;" in parts
