"""Charts of inspection tables: functions that return `altair.Chart` objects, built from
Vega-Lite dicts (the `*_spec` functions of each module, which the explorer sends as they are).

Every function takes the output of a `deltaexplore.inspect` function (or a `Table`/`Snapshot`,
then it calls that function itself) and returns one `alt.Chart`: never displayed, never
configured, no theme enabled, so charts stay layerable (`a + b`) and concatenable (`a | b`).
Large inputs are aggregated with polars/numpy first: a chart spec carries at most a few
thousand rows, whatever the table size.

- `history_chart(history, metric="files")`: files | bytes | rows added/removed per version
- `operations_chart(history)`: commits on a time axis, one row per operation
- `versions_chart(reconstructable_versions)`: readable / data missing / log gone per version
- `file_size_histogram(files)`: files per power-of-two size bin, small files highlighted
- `partition_skew_chart(partitions, metric="bytes", top=40)`: largest partitions
- `layout_chart(layout, column=None)`: per-file min..max ranges coloured by overlap depth
- `layout_density_chart(layout_density, column=None)`: files per value range and the overlap
  depth there (any number of files)
- `explain_funnel(explain, predicate=None)`: files left after partition and stats pruning
- `dv_density_chart(deletion_vectors)`: deleted ratio per file (binned when large)
- `deleted_rows_heatmap(deleted_rows, path=None, num_records=None)`: deleted rows within a file
- `log_health_chart(log_files)`: commit / checkpoint bytes and JSON replayed per version
- `at_versions_chart(result)`: `inspect.at_versions`'s value per version (the expression as title).
- `timeline_chart(timeline, metric="files")`: one metric of `inspect.timeline` per version,
  schema and protocol changes marked

Each `*_chart` is `altair_chart(<its spec>)`: `history_spec`, `operations_spec`, `versions_spec`,
`file_size_spec`, `partition_skew_spec`, `layout_spec`, `layout_density_spec`,
`explain_funnel_spec`, `dv_density_spec`, `deleted_rows_spec`, `log_health_spec`,
`timeline_spec`, `at_versions_spec` take the same arguments and return the Vega-Lite dict
(built without altair, `vegalite.py`; the explorer sends these as they are).

Rendering: in a Jupyter kernel, importing this package switches Altair from its default
renderer (Vega from a CDN: blank without internet, and JupyterLab 4 has no Vega-Lite 6
renderer of its own) to its offline `jupyter` renderer, unless another renderer was chosen:
a chart left as a cell's last expression renders with the bundled Vega
(`enable_offline_renderer()` does it by hand). `show(chart)` returns the `alt.JupyterChart`
itself; `to_svg(chart)` / `to_png(chart)` export through vl-convert (widget outputs are not
saved with a notebook: keep an SVG where a chart must persist).

Importing `deltaexplore` does not import this package, and importing this package does not
import altair: the first chart made does (and then switches the renderer, as above; at import
when altair is loaded already).
"""

from __future__ import annotations

import sys

from deltaexplore.viz._data import VizError
from deltaexplore.viz.deletion_vectors import deleted_rows_heatmap, deleted_rows_spec, dv_density_chart, dv_density_spec
from deltaexplore.viz.files import file_size_histogram, file_size_spec, partition_skew_chart, partition_skew_spec
from deltaexplore.viz.history import (
    history_chart,
    history_spec,
    operations_chart,
    operations_spec,
    versions_chart,
    versions_spec,
)
from deltaexplore.viz.layout import (
    explain_funnel,
    explain_funnel_spec,
    layout_chart,
    layout_density_chart,
    layout_density_spec,
    layout_spec,
)
from deltaexplore.viz.log import log_health_chart, log_health_spec
from deltaexplore.viz.render import altair_chart, enable_in_kernel, enable_offline_renderer, show, to_png, to_svg
from deltaexplore.viz.timeline import TIMELINE_METRICS, at_versions_chart, at_versions_spec, timeline_chart, timeline_spec

if "altair" in sys.modules:
    enable_in_kernel()

__all__ = [
    "TIMELINE_METRICS",
    "VizError",
    "altair_chart",
    "at_versions_chart",
    "at_versions_spec",
    "deleted_rows_heatmap",
    "deleted_rows_spec",
    "dv_density_chart",
    "dv_density_spec",
    "enable_offline_renderer",
    "explain_funnel",
    "explain_funnel_spec",
    "file_size_histogram",
    "file_size_spec",
    "history_chart",
    "history_spec",
    "layout_chart",
    "layout_density_chart",
    "layout_density_spec",
    "layout_spec",
    "log_health_chart",
    "log_health_spec",
    "operations_chart",
    "operations_spec",
    "partition_skew_chart",
    "partition_skew_spec",
    "show",
    "timeline_chart",
    "timeline_spec",
    "to_png",
    "to_svg",
    "versions_chart",
    "versions_spec",
]
