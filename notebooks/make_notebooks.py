"""Write the tour and tutorial notebooks from the cell lists below, then execute them in place.

    .venv/bin/python notebooks/make_notebooks.py          # all notebooks
    .venv/bin/python notebooks/make_notebooks.py 00_tour  # one

The stored outputs are what `tests/notebooks` (nbval) compares a fresh run against, so
regenerate after changing a notebook. Cells marked `# NBVAL_IGNORE_OUTPUT` show widgets or
charts (their outputs are kept for readers, not compared).

What is written is what a reader of the repository can use: no widget state (a saved widget
model goes stale with the next release of its front end), widget outputs reduced to their
static fallback (HTML/text), and no path of the machine that ran them (the checkout's location
is cut, so tables read `tables/...`, as the cells name them; `tests/notebooks` fails otherwise).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
IGNORE = "# NBVAL_IGNORE_OUTPUT\n"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def md(text: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_markdown_cell(text.strip())


def code(text: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_code_cell(text.strip())


NOTEBOOKS: dict[str, list[nbformat.NotebookNode]] = {
    "00_tour": [
        md("""
# deltaexplore: a tour

Understand a Delta table from a notebook cell: what is in it, how it got there, what changed
between two versions, why it is slow, what its deletion vectors cost, and what to do about it.

This notebook builds its own small table (`demo_tables.build_sales`: 8 versions of a sales
table partitioned by region, with appends, a DELETE with deletion vectors, a new column, an
OPTIMIZE). Contents, ids and commit times are fixed, so every run shows the same thing.
"""),
        code("""
from demo_tables import build_sales, show, static_chart

import deltaexplore as dx

path = build_sales("tables/tour_sales")
table = dx.open_table(path)
snap = table.snapshot()
print(f"version {snap.version} committed {snap.timestamp:%Y-%m-%d %H:%M} UTC: {snap.num_files} files")
"""),
        md("""
## The explorer

A table shows itself as the explorer: a version slider (or click a commit in *History*) moves
through time; the tabs show files and partitions, the layout of a column, deletion vectors, a
diff between two versions, log health, and maintenance (preview, then run). Rows travel to the
browser as Arrow buffers, so large tables stay responsive. (Saved notebooks keep a static
summary; re-run the cell for the live explorer.)
"""),
        code(IGNORE + "table"),
        md("""
## `%delta` magics

`%load_ext deltaexplore` adds one line magic; `%delta help` lists its subcommands. Each returns
an object (an Arrow table, a chart or the explorer) that you can keep working with.
"""),
        code("%load_ext deltaexplore"),
        code("%delta use tables/tour_sales"),
        code("%delta help"),
        md("""
Inspection tables show as formatted tables (sizes, local times with UTC on hover, operations,
parameters as chips); the value is still the Arrow table, so `_` or an assignment keeps it.
"""),
        code("%delta history -n 5"),
        code("""
history = %delta history --all
show(history, ["version", "operation", "user_name", "files_added", "files_removed", "rows_added", "rows_removed"])
"""),
        code("""
changes = %delta diff 3 4
show(changes, ["section", "change", "name", "before", "after"])
"""),
        code("""
parts = %delta files --partitions --sort partition --asc
show(parts, ["partition", "files", "rows", "deleted_rows", "small_files"])
"""),
        md("## Charts\n\nThe `deltaexplore.viz` functions return Altair charts; `static_chart` keeps one as SVG."),
        code(
            IGNORE
            + """
from deltaexplore.viz import history_chart

static_chart(history_chart(table.history()))
"""
        ),
        md("""
## Where next

- `01_time_travel_and_history.ipynb`: versions, timestamps, what can still be read
- `02_diffs.ipynb`: what changed between two versions
- `03_layout_and_data_skipping.ipynb`: why a query reads the files it reads
- `04_deletion_vectors.ipynb`: what deletion vectors cost and when to purge them
- `05_maintenance_with_spark.ipynb`: OPTIMIZE, VACUUM and checkpoints, previewed then run
"""),
    ],
    "01_time_travel_and_history": [
        md("""
# Time travel and history

Every commit of a Delta table is a version. A snapshot is one version, immutable; time travel
builds another snapshot, by version or by timestamp.
"""),
        code("""
from demo_tables import build_sales, show

import deltaexplore as dx

path = build_sales("tables/history_sales")
table = dx.open_table(path)
print("versions:", table.versions())
"""),
        code("""
for v in (0, 3, 7):
    s = table.snapshot(version=v)
    print(f"v{v}: {s.timestamp:%H:%M}  {s.num_files} files  {s.to_arrow().num_rows} rows")
"""),
        md("Commit times here are one hour apart, so a timestamp picks the latest version committed at or before it:"),
        code("""
print(table.snapshot(timestamp="2024-01-01T03:30:00Z").version)
print(table.snapshot(timestamp="2024-01-01T07:00:00Z").version)
"""),
        code("""
show(table.history(), ["version", "timestamp", "operation", "user_name", "files_added", "files_removed", "rows_added"])
"""),
        md("""
Which versions can still be read? The log must still hold them (or a checkpoint), and their
data files must still exist. A VACUUM with a short retention would break time travel:
"""),
        code("""
versions = table.inspect.reconstructable_versions(vacuum_retention_hours=0)
show(versions, ["version", "readable", "readable_after_vacuum", "reason"])
"""),
        md("The explorer opens at any version; the slider and the *History* tab move through time."),
        code(IGNORE + "dx.explore(table, version=3, tab='history')"),
    ],
    "02_diffs": [
        md("""
# What changed between two versions

`table.inspect.diff(v1, v2)` compares two versions from the log alone (no data is read): files
and bytes and rows added or removed, files re-added with a new deletion vector, schema,
partitioning, properties, protocol and features.
"""),
        code("""
from demo_tables import build_sales, show

import deltaexplore as dx

table = dx.open_table(build_sales("tables/diff_sales"))
cols = ["section", "change", "name", "before", "after", "files", "rows"]
"""),
        md("Version 4 added a column and changed a property:"),
        code("show(table.inspect.diff(3, 4), cols)"),
        md("Version 6 was an OPTIMIZE: four small files of `emea` became one, no rows changed:"),
        code("show(table.inspect.diff(5, 6), cols)"),
        md("Version 3 deleted rows with deletion vectors: the same data files, re-added with a DV:"),
        code("""
show(table.inspect.diff(2, 3), cols)
show(table.inspect.diff_files(2, 3), ["change", "partition", "num_records", "deleted_before", "deleted_after", "rows_delta"])
"""),
        md("The same with the magic, or in the explorer's *Diff* tab:"),
        code(
            """
import pyarrow.compute as pc

%load_ext deltaexplore
d = %delta diff diff_table 0 7
show(d.filter(pc.equal(d.column("section"), "files")), cols)
""".replace("diff_table", "tables/diff_sales")
        ),
        code(IGNORE + "dx.explore(table, tab='diff')"),
    ],
    "03_layout_and_data_skipping": [
        md("""
# Layout and data skipping

A query with a filter reads only the files whose min/max statistics can match. How well that
works depends on how values are spread over files. `build_events` writes 12 files whose
`event_id`s are shuffled (version 0), then rewrites them sorted (version 1, like a Z-ORDER).
"""),
        code("""
from demo_tables import build_events, show, static_chart

import deltaexplore as dx

table = dx.open_table(build_events("tables/events"))
for v in (0, 1):
    layout = table.snapshot(v).inspect.layout("event_id")
    depth = max(layout.column("overlap_depth").to_pylist())
    print(f"v{v}: a point query on event_id may read up to {depth} of {layout.num_rows} files")
"""),
        md("`explain` shows which files a query reads and why the others are skipped:"),
        code("""
where = "event_id >= 100 and event_id < 120"
for v in (0, 1):
    e = table.snapshot(v).inspect.explain(where)
    print(f"v{v}: reads {sum(e.column('selected').to_pylist())} of {e.num_rows} files")
show(table.snapshot(1).inspect.explain(where), ["stage", "selected", "reason"], limit=4)
"""),
        code(
            IGNORE
            + """
from deltaexplore.viz import layout_chart

static_chart(layout_chart(table.snapshot(0).inspect.layout("event_id"), "event_id"))
"""
        ),
        code(IGNORE + "dx.explore(table, version=0, tab='layout')"),
    ],
    "04_deletion_vectors": [
        md("""
# Deletion vectors

With deletion vectors, a DELETE marks rows as deleted in a small bitmap file instead of
rewriting the data file. Reads stay correct (the rows are skipped) but pay for it: data files
hold rows no query wants, and every read decodes the bitmaps.
"""),
        code("""
from demo_tables import build_sales, show

import deltaexplore as dx

path = build_sales("tables/dv_sales")
table = dx.open_table(path)
show(table.inspect.deletion_vectors(), ["partition", "num_records", "cardinality", "deleted_ratio", "storage", "past_threshold"])
"""),
        md("The deleted row positions of one file, read from its DV:"),
        code("""
dv = table.inspect.deletion_vectors()
first = dv.column("path")[0].as_py()
rows = table.inspect.deleted_rows(first)
print(rows.num_rows, rows.column(rows.column_names[-1]).to_pylist()[:10])
"""),
        md("Files past the purge threshold are worth rewriting (`REORG TABLE … APPLY (PURGE)`). Preview, then run it locally:"),
        code("""
from deltaexplore.core.operations import purge_deletion_vectors

print(purge_deletion_vectors(table, dry_run=True).select(["num_files_removed", "num_deleted_rows_purged"]).to_pylist())
result = purge_deletion_vectors(table)
print("new version:", table.latest_version(), "files with DVs now:", table.inspect.deletion_vectors().num_rows)
print("rows unchanged:", table.snapshot().to_arrow().num_rows == table.snapshot(7).to_arrow().num_rows)
"""),
        code(IGNORE + "dx.explore(table, version=7, tab='dv')"),
    ],
    "05_maintenance_with_spark": [
        md("""
# Maintenance: preview, run, see the new version

OPTIMIZE (compact small files), VACUUM (delete files no retained version needs) and checkpoints
are previewed from the log first, with the same planning code that runs them. They run with
Spark (`deltaexplore.spark`) when it provides the operation, else with the local pyarrow
writer; the explorer's *Maintenance* tab does the same with a progress bar.
"""),
        code("""
from demo_tables import build_sales, show

import deltaexplore as dx

path = build_sales("tables/maint_sales")
table = dx.open_table(path)
%load_ext deltaexplore
%delta use tables/maint_sales
"""),
        code("%delta optimize --dry-run"),
        code("""
vac = %delta vacuum --dry-run --retention-hours 0
show(vac, ["reason", "first_version_needing", "last_version_needing"])
"""),
        code("%delta checkpoint"),
        md("Run OPTIMIZE from the explorer (what its *Run* button does), and watch the new version appear:"),
        code(
            IGNORE
            + """
explorer = dx.explore(table, tab="maintenance")
outcome = explorer.run("optimize")  # Spark (with a progress bar) when it provides OPTIMIZE, else local
explorer
"""
        ),
        code("""
print(outcome["version_before"], "->", outcome["version_after"], "| explorer shows version", explorer.version)
print("files:", table.snapshot(7).num_files, "->", table.snapshot(explorer.version).num_files)
print("rows unchanged:", table.snapshot().to_arrow().num_rows == table.snapshot(7).to_arrow().num_rows)
"""),
        md("""
## Reading with Spark

`deltaexplore.spark.read` plans the scan with deltaexplore (deletion vectors, column mapping,
partition values) and reads the files with plain PySpark. Without Java or pyspark the cell
falls back to the local reader; both count the same rows.
"""),
        code(
            IGNORE
            + """
import importlib.util

from deltaexplore.spark.session import java_available

local_rows = table.snapshot().to_arrow().num_rows
spark_ready = importlib.util.find_spec("pyspark") is not None and java_available() is not None
if spark_ready:
    import deltaexplore.spark as dxs

    spark = dxs.get_spark()
    rows = dxs.read(spark, path).count()
else:
    rows = local_rows
"""
        ),
        code('print("rows:", rows, "| same as the local reader:", rows == local_rows)'),
        md("""
## MERGE: upserts with Delta's clauses

`merge` takes Delta's clauses in order (when matched update / delete, when not matched insert,
when not matched by source update / delete; of the clauses of a kind, the first whose condition
holds applies). Conditions and values are SQL over `source.<column>` and `target.<column>`. The
same call runs locally on Arrow data (`deltaexplore.core.operations.merge`) or on a Spark
DataFrame (`deltaexplore.spark.merge`: a local session, a cluster, or Spark Connect —
`dxs.get_spark(remote="sc://host:15002")` or `%delta spark sc://host:15002`). With deletion
vectors on, matched rows are marked deleted instead of rewriting their files.
"""),
        code("""
import pyarrow as pa

from deltaexplore.core.operations import merge, when_matched_update, when_not_matched_insert_all

updates = pa.table(
    {
        "id": [0, 1, 5000],
        "region": ["emea", "emea", "apac"],
        "amount": [99.0, 98.0, 12.5],
        "customer": ["customer-00", "customer-01", "customer-new"],
        "channel": ["web", "web", "store"],
    }
)
clauses = [when_matched_update({"amount": "source.amount"}), when_not_matched_insert_all()]
on = "source.id = target.id AND source.region = target.region"
m = merge(table, updates, on=on, clauses=clauses)
show(m, ["version", "num_target_rows_updated", "num_target_rows_inserted", "num_target_deletion_vectors_added"])
"""),
        md("The same MERGE on Spark (the local engine when this machine has no Java or pyspark):"),
        code(
            IGNORE
            + """
more = pa.table(
    {
        "id": [2, 6000],
        "region": ["emea", "amer"],
        "amount": [97.0, 3.0],
        "customer": ["customer-02", "customer-x"],
        "channel": ["store", "web"],
    }
)
if spark_ready:
    m = dxs.merge(spark, path, spark.createDataFrame(more), on=on, clauses=clauses)
else:
    m = merge(table, more, on=on, clauses=clauses)
"""
        ),
        code("""
show(m, ["version", "num_target_rows_updated", "num_target_rows_inserted"])
show(table.history(limit=2), ["version", "operation"])
"""),
    ],
}


def build(name: str) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = NOTEBOOKS[name]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(HERE)}}).execute()
    out = HERE / f"{name}.ipynb"
    nb.metadata.pop("widgets", None)
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"{name[:2]}-{i:02d}"  # stable cell ids: clean diffs
        cell.get("metadata", {}).pop("execution", None)
        if cell.cell_type == "code":  # only code cells have outputs (nbformat's schema)
            cell["outputs"] = [_portable(o) for o in cell.get("outputs", []) if _portable(o) is not None]
    nbformat.validate(nb)
    nbformat.write(nb, out)
    return out


def _without_machine_paths(value: Any) -> Any:
    """Strings with this checkout's location cut (`<root>/notebooks/tables/x` -> `tables/x`)."""
    if isinstance(value, str):
        for prefix in (f"{HERE}/", f"{ROOT}/", str(ROOT)):
            value = value.replace(prefix, "")
        return value
    if isinstance(value, list):
        return [_without_machine_paths(v) for v in value]
    if isinstance(value, dict):
        return {k: _without_machine_paths(v) for k, v in value.items()}
    return value


def _portable(output: nbformat.NotebookNode) -> nbformat.NotebookNode | None:
    """An output as stored: widget views reduced to their static fallback (None when a widget
    has none: a bare progress bar), machine paths cut."""
    data = output.get("data")
    if data is not None and WIDGET_VIEW in data:
        data.pop(WIDGET_VIEW)
        if not set(data) - {"text/plain"} and "Widget" in data.get("text/plain", "Widget"):
            return None  # only ipywidgets' own "SomeWidget(...)" repr was left
    return nbformat.from_dict(_without_machine_paths(dict(output)))


if __name__ == "__main__":
    for name in sys.argv[1:] or list(NOTEBOOKS):
        print("wrote", build(name))
