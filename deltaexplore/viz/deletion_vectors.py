"""What deletion vectors cost: deleted-row density per file, and where in a file rows are deleted."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl
import pyarrow as pa

from deltaexplore.inspect import deleted_rows, deletion_vectors, files
from deltaexplore.viz._data import (
    LABEL_SEPARATION,
    MAX_POINTS,
    VizError,
    as_inspect_table,
    count_legend,
    decimal_ticks,
    frame,
    spaced_axis,
)
from deltaexplore.viz.render import altair_chart
from deltaexplore.viz.vegalite import channel, chart

if TYPE_CHECKING:
    import altair as alt

__all__ = ["deleted_rows_heatmap", "deleted_rows_spec", "dv_density_chart", "dv_density_spec"]


def _dvs(data: Any) -> Any:
    return deletion_vectors(data)


def dv_density_chart(data: Any, *, max_points: int = MAX_POINTS, bins: int = 20) -> alt.Chart:
    """`dv_density_spec` as an Altair chart."""
    return altair_chart(dv_density_spec(data, max_points=max_points, bins=bins))


def dv_density_spec(data: Any, *, max_points: int = MAX_POINTS, bins: int = 20) -> dict[str, Any]:
    """Deleted-row ratio per file against its row count, point size = rows deleted, colour =
    past the purge threshold. Over `max_points` files it becomes a heatmap of file counts over
    (row count, deleted ratio) bins computed beforehand. `data` is `inspect.deletion_vectors()`
    output or a Table/Snapshot."""
    dv = as_inspect_table(data, ("path", "num_records", "cardinality", "deleted_ratio"), _dvs, "dv_density_chart")
    df = frame(dv, [c for c in ("path", "num_records", "cardinality", "deleted_ratio", "past_threshold") if c in dv.column_names])
    if "past_threshold" not in df.columns:
        df = df.with_columns(pl.lit(None, pl.Boolean).alias("past_threshold"))
    if df.height <= max_points:
        # booleans read "yes"/"no" (as everywhere the explorer shows them); unknown stays apart
        purge = pl.col("past_threshold").replace_strict({True: "yes", False: "no"}, default="unknown", return_dtype=pl.String)
        df = df.with_columns(purge.alias("past_threshold"))
        unknown = ["unknown"] if (df.get_column("past_threshold") == "unknown").any() else []
        records = df.get_column("num_records").fill_null(0).to_numpy()
        ticks = decimal_ticks(float(records.max()) if len(records) else 1.0)
        return chart(
            df,
            title="deleted rows per file",
            mark={"type": "circle", "opacity": 0.7},
            encoding={
                "x": channel(
                    "num_records:Q",
                    title="rows in file",
                    scale={"type": "symlog", "domain": [0, ticks[-1]]},
                    axis={"values": ticks, "format": ",d", "labelOverlap": True, "labelSeparation": LABEL_SEPARATION},
                ),
                "y": channel("deleted_ratio:Q", title="deleted ratio", axis=spaced_axis(format="%"), scale={"domain": [0, 1]}),
                "size": channel(
                    "cardinality:Q",
                    title="rows deleted",
                    # a mid grey reads on light and dark themes (the default symbol is black)
                    legend=count_legend(symbolFillColor="#9d9d9d", symbolStrokeColor="#9d9d9d"),
                ),
                "color": channel(
                    "past_threshold:N",
                    title="past purge threshold",
                    scale={"domain": ["yes", "no", *unknown], "range": ["#e45756", "#4c78a8", "#9d9d9d"]},
                ),
                "tooltip": [
                    channel("path:N", title="path"),
                    channel("num_records:Q", format=",", title="rows in file"),
                    channel("cardinality:Q", format=",", title="rows deleted"),
                    channel("deleted_ratio:Q", format=".1%", title="deleted ratio"),
                    channel("past_threshold:N", title="past purge threshold"),
                ],
            },
        )
    rec = df.get_column("num_records").fill_null(0).to_numpy().astype(np.float64)
    edges = np.unique(np.quantile(np.log10(np.maximum(rec, 1)), np.linspace(0, 1, bins + 1)))
    xb = np.clip(np.searchsorted(edges, np.log10(np.maximum(rec, 1)), side="right") - 1, 0, max(len(edges) - 2, 0))
    ratio = df.get_column("deleted_ratio").fill_null(0).to_numpy()
    yb = np.clip((ratio * bins).astype(np.int64), 0, bins - 1)
    grid = pl.DataFrame({"x": xb, "y": yb}).group_by(["x", "y"]).agg(pl.len().alias("files"))
    lo = (10 ** edges[grid.get_column("x").to_numpy()]).astype(np.int64)
    table = pa.table(
        {
            "rows_from": pa.array(lo, pa.int64()),
            "ratio_from": pa.array(grid.get_column("y").to_numpy() / bins, pa.float64()),
            "files": pa.array(grid.get_column("files").to_numpy(), pa.int64()),
            "x": pa.array(grid.get_column("x").to_numpy(), pa.int64()),
        }
    )
    return chart(
        table,
        title=f"deleted rows per file ({df.height:,} files, binned)",
        mark={"type": "rect"},
        encoding={
            "x": channel("x:O", title="rows in file (quantile bins)", axis={"labels": False}),
            "y": channel("ratio_from:O", title="deleted ratio (from)", sort="descending", axis={"format": ".0%"}),
            "color": channel("files:Q", scale={"scheme": "orangered"}, legend=count_legend()),
            "tooltip": [
                channel("rows_from:Q", format=",", title="rows from"),
                channel("ratio_from:Q", format=".0%"),
                channel("files:Q"),
            ],
        },
    )


def deleted_rows_heatmap(
    data: Any, path: str | None = None, *, num_records: int | None = None, columns: int = 50, cells: int = 1000
) -> alt.Chart:
    """`deleted_rows_spec` as an Altair chart."""
    return altair_chart(deleted_rows_spec(data, path, num_records=num_records, columns=columns, cells=cells))


def deleted_rows_spec(
    data: Any, path: str | None = None, *, num_records: int | None = None, columns: int = 50, cells: int = 1000
) -> dict[str, Any]:
    """Where a file's deleted rows are: the file's rows split into at most `cells` equal runs laid
    out on a grid `columns` wide (reading order), coloured by the share of deleted rows in each.

    `data` is `inspect.deleted_rows(path)` output (then pass `num_records`, else the last deleted
    position bounds the file), or a Table/Snapshot with `path` (its row count comes from stats).
    """
    if path is None and not isinstance(data, pa.Table | pl.DataFrame):
        raise VizError("deleted_rows_heatmap needs the data file path when given a table or snapshot")

    def compute(obj: Any) -> pa.Table:
        assert path is not None
        return deleted_rows(obj, path)

    rows = as_inspect_table(data, ("row_index",), compute, "deleted_rows_heatmap")
    if num_records is None and path is not None and not isinstance(data, pa.Table | pl.DataFrame):
        f = files(data)
        match = [n for p, n in zip(f.column("path").to_pylist(), f.column("num_records").to_pylist()) if p == path]
        num_records = match[0] if match and match[0] is not None else None
    positions = (
        rows.column("row_index").to_numpy(zero_copy_only=False).astype(np.int64) if rows.num_rows else np.zeros(0, np.int64)
    )
    n = int(num_records) if num_records is not None else (int(positions.max()) + 1 if len(positions) else 0)
    if n <= 0:
        n = 1
    span = max(1, int(np.ceil(n / cells)))
    n_cells = int(np.ceil(n / span))
    deleted = np.bincount(positions // span, minlength=n_cells)[:n_cells]
    sizes = np.full(n_cells, span, dtype=np.int64)
    sizes[-1] = n - span * (n_cells - 1)
    idx = np.arange(n_cells)
    table = pa.table(
        {
            "col": pa.array(idx % columns, pa.int64()),
            "row": pa.array(idx // columns, pa.int64()),
            "first_row": pa.array(idx * span, pa.int64()),
            "rows": pa.array(sizes, pa.int64()),
            "deleted": pa.array(deleted, pa.int64()),
            "share": pa.array(deleted / sizes, pa.float64()),
        }
    )
    title = f"deleted rows within {path or 'the file'} ({span:,} rows per cell)"
    return chart(
        table,
        title=title,
        mark={"type": "rect"},
        encoding={
            "x": channel("col:O", axis=None),
            "y": channel("row:O", axis=None),
            "color": channel("share:Q", title="deleted", scale={"domain": [0, 1], "scheme": "reds"}, legend={"format": "%"}),
            "tooltip": [
                channel("first_row:Q", format=",", title="from row"),
                channel("rows:Q", format=","),
                channel("deleted:Q", format=","),
                channel("share:Q", format=".1%"),
            ],
        },
    )
