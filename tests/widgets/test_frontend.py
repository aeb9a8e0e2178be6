"""The explorer's front end as built: up to date with its sources, versioned, scoped, never
assigning HTML; its TypeScript formatter and Arrow decoding agree with the Python side (run in
node on the same inputs)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from datetime import UTC
from pathlib import Path

import pyarrow as pa
import pytest

from deltaexplore.inspect import formatting
from deltaexplore.widgets import frontend
from deltaexplore.widgets.arrow_ipc import from_ipc, to_ipc

ROOT = Path(__file__).resolve().parents[2]
FRONTEND = ROOT / "frontend"
NODE = shutil.which("node")
needs_node = pytest.mark.skipif(NODE is None, reason="node is not installed (make setup needs Node.js to build the front end)")


@needs_node
def test_the_bundle_is_built_from_the_current_sources():
    out = subprocess.run(["node", "build.mjs", "--check"], cwd=FRONTEND, capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr + out.stdout


def test_our_sources_never_assign_html():
    """Everything from a table stays text: no innerHTML/outerHTML/insertAdjacentHTML/document.write
    in our code (the libraries' own uses never see table text: AG Grid gets elements from our
    cell renderers, Vega gets our tooltip handler)."""
    offenders = []
    for f in (FRONTEND / "src").rglob("*.ts"):
        text = f.read_text()
        for pattern in (
            r"\.innerHTML\b",
            r"\.outerHTML\b",
            r"insertAdjacentHTML",
            r"document\.write",
            r"\beval\(",
            r"new Function\(",
        ):
            if re.search(pattern, text):
                offenders.append(f"{f.name}: {pattern}")
    assert offenders == []
    # AG Grid treats a string returned by a cell renderer as HTML: ours return elements only
    grid = (FRONTEND / "src" / "grid.ts").read_text()
    renderers = grid[grid.index("function renderer(") : grid.index("function columnDef(")]
    assert "=> h(" in renderers and not re.search(r"return\s+['`\"]", renderers)


def test_the_build_is_versioned_and_every_rule_scoped():
    b = frontend.bundle()
    meta = json.loads((frontend.STATIC / "build.json").read_text())
    assert b.build_id == meta["id"] and b.root_class == f"dx-{b.build_id}"
    assert f'"{b.build_id}"' in b.esm  # the module knows its build (the root element's class)
    rules = re.findall(
        r"([^{}]+)\{[^{}]*\}",
        re.sub(r"@(media|container|supports)[^{]*\{|@keyframes[^{]*\{(?:[^{}]*\{[^{}]*\})*[^{}]*\}", "", b.css),
    )
    unscoped = [
        sel for sel in rules for part in sel.split(",") if f".{b.root_class}" not in part and part.strip() != ".dxe-offscreen"
    ]
    assert unscoped == []
    assert ".dx-root" not in b.css and "http://" not in b.css.replace("http://www.w3.org", "") and "https://" not in b.css


def test_the_explorer_carries_the_build(sales):
    from deltaexplore.widgets import explore

    w = explore(sales)
    b = frontend.bundle()
    assert w._anywidget_id == f"deltaexplore.Explorer@{b.build_id}"
    assert w._esm == b.esm and w._css == b.css


def test_a_checkout_never_built_says_how_to_build(monkeypatch, tmp_path, sales):
    import deltaexplore as dx

    monkeypatch.setattr(frontend, "STATIC", tmp_path)
    frontend.bundle.cache_clear()
    try:
        with pytest.raises(frontend.FrontendNotBuiltError, match=r"make frontend"):
            dx.explore(sales)
    finally:
        frontend.bundle.cache_clear()


def _run_ts(tmp_path: Path, entry: str, script: str) -> str:
    """Bundle `entry` (a TypeScript module of frontend/src) for node and run `script` against it."""
    out = tmp_path / "mod.mjs"
    subprocess.run(
        [
            "node",
            "-e",
            f"require('esbuild').buildSync({{entryPoints: [{json.dumps(str(FRONTEND / 'src' / entry))}], bundle: true, "
            f"format: 'esm', platform: 'node', outfile: {json.dumps(str(out))}, logLevel: 'error'}})",
        ],
        cwd=FRONTEND,
        check=True,
    )
    runner = tmp_path / "run.mjs"
    runner.write_text(f"import * as m from {json.dumps(str(out))};\n{script}\n")
    return subprocess.run([str(NODE), str(runner)], capture_output=True, text=True, check=True, env={"TZ": "UTC"}).stdout


def _ts_map(tmp_path: Path, call: str, values: list) -> list:
    """`values.map(call)` run by format.ts's bundle in node (`call` names its module `m`)."""
    (tmp_path / "values.json").write_text(json.dumps(values))
    out = _run_ts(
        tmp_path,
        "format.ts",
        f"import fs from 'fs';\nconst v = JSON.parse(fs.readFileSync({json.dumps(str(tmp_path / 'values.json'))}, 'utf8'));\n"
        f"console.log(JSON.stringify(v.map({call})));",
    )
    result: list = json.loads(out)
    return result


@needs_node
def test_typescript_and_python_formatters_agree(tmp_path):
    samples = [[unit, value] for unit, value in formatting.SAMPLES]
    extra = [
        ["bytes", 1099511627776 * 1024 * 3],
        ["count", 1234.56],
        ["number", -0.005],
        ["number", 999.95],
        ["ratio", 0.0005],
        ["duration_ms", -61000],
        ["json", '{"k": "<b>x</b>", "n": 1, "l": [1, "é"]}'],
        ["json", {"nested": {"a": True}}],
        ["text", 42],
        ["timestamp", "2024-03-05T01:02:03Z"],
        ["version", 7.0],
    ]
    cases = samples + extra
    got = _ts_map(tmp_path, "([u, v]) => m.formatValue(u, v, { tz: 'UTC' })", cases)
    expected = [formatting.format_value(unit, value, tz=UTC) for unit, value in cases]
    mismatches = [(c, g, e) for c, g, e in zip(cases, got, expected) if g != e]
    assert mismatches == []
    floats = [1.0, 0.4, 0.0, -0.005, 99.995, 100.0, 999.95, 1234.0, 1e6]  # a float column's values
    assert _ts_map(tmp_path, "(x) => m.humanFloat(x)", floats) == [formatting.human_float(x) for x in floats]
    assert formatting.human_float(1.0) == "1.00" and formatting.human_number(1.0) == "1"
    words = ["bytes", "files", "ratio", "ms", "version", None, "timestamp", "rows"]
    assert _ts_map(tmp_path, "(x) => m.metricUnit(x)", words) == [formatting.metric_unit(w) for w in words]


@needs_node
def test_the_browser_decodes_what_the_kernel_sends(tmp_path):
    fields = [
        pa.field("i", pa.int64(), metadata={"unit": "count", "doc": "an <i>integer</i>"}),
        pa.field("s", pa.string()),
        pa.field("b", pa.bool_()),
        pa.field("f", pa.float64()),
        pa.field("ts", pa.timestamp("us", tz="UTC"), metadata={"unit": "timestamp"}),
        pa.field("m", pa.map_(pa.string(), pa.string()), metadata={"unit": "json"}),
        pa.field("u", pa.uint16()),
    ]
    t = pa.table(
        [
            pa.array([1, None, -3, 2**40], pa.int64()),
            pa.array(["<script>alert(1)</script>", None, "é✓", ""]),
            pa.array([True, False, None, True]),
            pa.array([1.5, None, 3.25, -0.5]),
            pa.array([0, 1000, 1704067200000000, None], pa.timestamp("us", tz="UTC")),
            pa.array([[("k", "v")], None, [], [("a", "<b>")]], pa.map_(pa.string(), pa.string())),
            pa.array([1, 2, 3, 4], pa.uint16()),
        ],
        schema=pa.schema(fields),
    )
    (tmp_path / "t.arrow").write_bytes(to_ipc(t))
    out = _run_ts(
        tmp_path,
        "arrow.ts",
        f"import fs from 'fs';\nconst b = fs.readFileSync({json.dumps(str(tmp_path / 't.arrow'))});\n"
        "const shifted = new Uint8Array(b.length + 5); shifted.set(b, 5);\n"  # unaligned, like a widget buffer
        "const r = m.decode(new DataView(shifted.buffer, 5, b.length));\n"
        "console.log(JSON.stringify({ fields: r.fields, rows: r.rows }));",
    )
    got = json.loads(out)
    expected = from_ipc(to_ipc(t)).to_pylist()
    for row in expected:
        row["ts"] = None if row["ts"] is None else int(row["ts"].timestamp() * 1000)
    assert got["rows"] == expected
    assert got["rows"][0]["s"] == "<script>alert(1)</script>" and got["rows"][3]["m"] == '{"a": "<b>"}'
    units = {f["name"]: f["unit"] for f in got["fields"]}
    assert units == {"i": "count", "s": "text", "b": "bool", "f": "number", "ts": "timestamp", "m": "json", "u": "count"}
    assert got["fields"][0]["doc"] == "an <i>integer</i>"


@needs_node
def test_typescript_and_python_agree_on_compact_counts_plurals_and_short_paths(tmp_path):
    counts = [0, 7, 9_999, 10_000, 12_345, 99_950, 999_499, 999_949, 4_775_210, -31_030_000, 2_130_471_111, 1e15, 1e18, 12.5]
    assert _ts_map(tmp_path, "(x) => m.humanCompact(x)", counts) == [formatting.human_compact(x) for x in counts]
    nouns = [[n, w] for n in (0, 1, 2, 1_000_200) for w in ("file", "property", "fix", "day", "file with a deletion vector")]
    assert _ts_map(tmp_path, "([n, w]) => m.countNoun(n, w)", nouns) == [formatting.count_noun(n, w) for n, w in nouns]
    paths = [
        "date=2026-11-27/part-00002-3f2a8c1e-7b4d-4c3a-9f2e-1a2b3c4d5e6f-c000.snappy.parquet",
        "region=emea/day=2024-01-01/part-9a8b7c6d-7b4d-4c3a-9f2e-1a2b3c4d5e6f.c000.zstd.parquet",
        "s3://bucket/t/Ab/part-00000-3F2A8C1E-7b4d-4c3a-9f2e-1a2b3c4d5e6f.c000.zstd.parquet",
        "/abs/dir/x=1/file.parquet",
        "deletion_vector_3f2a8c1e-7b4d-4c3a-9f2e-1a2b3c4d5e6f.bin",
        "plain.parquet",
        "",
        "<i>p</i>=<a href=x>/<img src=x onerror=1>.parquet",
    ]
    assert _ts_map(tmp_path, "(x) => m.shortPath(x)", paths) == [formatting.short_path(p) for p in paths]
