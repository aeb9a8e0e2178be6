"""What deletion vectors cost: deleted-row density per file, and where in a file rows are deleted."""

from __future__ import annotations

from typing import Any

import altair as alt
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

__all__ = ["deleted_rows_heatmap", "dv_density_chart"]


def _dvs(data: Any) -> Any:
    return deletion_vectors(data)


def dv_density_chart(data: Any, *, max_points: int = MAX_POINTS, bins: int = 20) -> alt.Chart:
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
        return (
            alt.Chart(df.to_arrow(), title="deleted rows per file")
            .mark_circle(opacity=0.7)
            .encode(
                x=alt.X(
                    "num_records:Q",
                    title="rows in file",
                    scale=alt.Scale(type="symlog", domain=[0, ticks[-1]]),
                    axis=alt.Axis(values=ticks, format=",d", labelOverlap=True, labelSeparation=LABEL_SEPARATION),
                ),
                y=alt.Y("deleted_ratio:Q", title="deleted ratio", axis=spaced_axis(format="%"), scale=alt.Scale(domain=[0, 1])),
                size=alt.Size(
                    "cardinality:Q",
                    title="rows deleted",
                    # a mid grey reads on light and dark themes (the default symbol is black)
                    legend=count_legend(symbolFillColor="#9d9d9d", symbolStrokeColor="#9d9d9d"),
                ),
                color=alt.Color(
                    "past_threshold:N",
                    title="past purge threshold",
                    scale=alt.Scale(domain=["yes", "no", *unknown], range=["#e45756", "#4c78a8", "#9d9d9d"]),
                ),
                tooltip=[
                    alt.Tooltip("path:N", title="path"),
                    alt.Tooltip("num_records:Q", format=",", title="rows in file"),
                    alt.Tooltip("cardinality:Q", format=",", title="rows deleted"),
                    alt.Tooltip("deleted_ratio:Q", format=".1%", title="deleted ratio"),
                    alt.Tooltip("past_threshold:N", title="past purge threshold"),
                ],
            )
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
    return (
        alt.Chart(table, title=f"deleted rows per file ({df.height:,} files, binned)")
        .mark_rect()
        .encode(
            x=alt.X("x:O", title="rows in file (quantile bins)", axis=alt.Axis(labels=False)),
            y=alt.Y("ratio_from:O", title="deleted ratio (from)", sort="descending", axis=alt.Axis(format=".0%")),
            color=alt.Color("files:Q", scale=alt.Scale(scheme="orangered"), legend=count_legend()),
            tooltip=[
                alt.Tooltip("rows_from:Q", format=",", title="rows from"),
                alt.Tooltip("ratio_from:Q", format=".0%"),
                "files:Q",
            ],
        )
    )


def deleted_rows_heatmap(
    data: Any, path: str | None = None, *, num_records: int | None = None, columns: int = 50, cells: int = 1000
) -> alt.Chart:
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
    return (
        alt.Chart(table, title=title)
        .mark_rect()
        .encode(
            x=alt.X("col:O", axis=None),
            y=alt.Y("row:O", axis=None),
            color=alt.Color(
                "share:Q", title="deleted", scale=alt.Scale(domain=[0, 1], scheme="reds"), legend=alt.Legend(format="%")
            ),
            tooltip=[
                alt.Tooltip("first_row:Q", format=",", title="from row"),
                alt.Tooltip("rows:Q", format=","),
                alt.Tooltip("deleted:Q", format=","),
                alt.Tooltip("share:Q", format=".1%"),
            ],
        )
    )
