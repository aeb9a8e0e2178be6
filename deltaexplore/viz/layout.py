"""Why it is slow: per-file value ranges of a column with their overlap, and the explain funnel."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.inspect import explain, layout, layout_density
from deltaexplore.inspect.formatting import count_noun
from deltaexplore.viz._data import (
    VizError,
    as_inspect_table,
    bytes_text,
    bytes_tooltip,
    count_axis,
    count_legend,
    frame,
    spaced_axis,
)
from deltaexplore.viz.render import altair_chart
from deltaexplore.viz.vegalite import channel, chart, interval

if TYPE_CHECKING:
    import altair as alt

__all__ = [
    "VALUE_BRUSH",
    "explain_funnel",
    "explain_funnel_spec",
    "layout_chart",
    "layout_density_chart",
    "layout_density_spec",
    "layout_spec",
]

#: overlap depth colours: viridis from its blue (its darkest purple vanishes on a dark theme)
_DEPTH_SCALE = {"scheme": {"name": "viridis", "extent": [0.2, 1]}}

#: a value axis spans the values, not zero to them (ids from 7 billion: no empty 70% of the chart)
_VALUES = {"zero": False}

#: name of the interval selection `layout_density_chart(interactive=True)` adds
VALUE_BRUSH = "value_brush"


def _numeric_bounds(mins: pa.Array, maxs: pa.Array) -> tuple[pa.Array, pa.Array, str]:
    """Bounds as something Vega-Lite can place on a continuous axis, and the axis type."""
    t = mins.type
    if pa.types.is_timestamp(t) or pa.types.is_date(t):
        return mins, maxs, "T"
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        return mins, maxs, "Q"
    if pa.types.is_decimal(t) or pa.types.is_boolean(t):
        return mins.cast(pa.float64()), maxs.cast(pa.float64()), "Q"
    # strings, binary: place values by their rank in the sorted union of bounds
    both = pa.concat_arrays([mins, maxs])
    ranks = pc.rank(both, sort_keys="ascending", tiebreaker="dense").cast(pa.int64())
    ranks = pc.if_else(pc.is_valid(both), ranks, pa.scalar(None, pa.int64()))
    n = len(mins)
    return ranks.slice(0, n), ranks.slice(n), "Q"


def layout_chart(data: Any, column: str | None = None, *, max_files: int = 400, height: int | None = None) -> alt.Chart:
    """`layout_spec` as an Altair chart."""
    return altair_chart(layout_spec(data, column, max_files=max_files, height=height))


def layout_spec(data: Any, column: str | None = None, *, max_files: int = 400, height: int | None = None) -> dict[str, Any]:
    """One horizontal rule per file from its min to its max of a column, files ordered by min,
    coloured by overlap depth (how many files a point query in that range reads).

    `data` is `inspect.layout(column)` output, or a Table/Snapshot with `column`. More than
    `max_files` files are merged into `max_files` groups of consecutive files (the group's
    smallest min, largest max and deepest overlap). String bounds are placed by rank. Each
    mark's data holds `rank_lo`/`rank_hi`: the files' ranks it stands for (a click in the
    explorer shows those files).
    """
    if column is None and not isinstance(data, pa.Table | pl.DataFrame):
        raise VizError("layout_chart needs the column name when given a table or snapshot")

    def compute(obj: Any) -> pa.Table:
        assert column is not None
        return layout(obj, column)

    lay = as_inspect_table(data, ("min", "max", "rank", "overlap_depth", "path"), compute, "layout_chart")
    rank = lay.column("rank").combine_chunks()
    # the files with bounds, in rank order: rank numbers them 0..n-1 (nulls: no bounds)
    if rank.null_count:
        rows = np.flatnonzero(pc.is_valid(rank).to_numpy(zero_copy_only=False))
        ranks = rank.to_numpy(zero_copy_only=False)[rows].astype(np.int64)
    else:
        rows = np.arange(len(rank), dtype=np.int64)
        ranks = rank.to_numpy().astype(np.int64, copy=False)
    n = len(rows)
    order = np.empty(n, np.int64)
    order[ranks] = rows
    raw_min, raw_max = lay.column("min").combine_chunks(), lay.column("max").combine_chunks()
    depth = lay.column("overlap_depth").combine_chunks()
    if n > max_files:
        # groups of consecutive files, aggregated on numbers; text only for the rows shown
        take = pa.array(order)
        mins, maxs, kind = _numeric_bounds(raw_min.take(take), raw_max.take(take))
        # group i * max_files // n of file i: group g starts at ceil(g * n / max_files)
        group = np.repeat(np.arange(max_files, dtype=np.int64), np.diff(-(-np.arange(max_files + 1) * n // max_files)))
        agg = (
            pl.DataFrame(
                {"group": group, "lo": pl.from_arrow(mins), "hi": pl.from_arrow(maxs), "depth": pl.from_arrow(depth.take(take))}
            )
            .with_row_index("r")
            .group_by("group", maintain_order=True)
            .agg(
                pl.col("lo").min(),
                pl.col("hi").max(),
                pl.col("depth").max(),
                pl.len().alias("files"),
                pl.col("r").min().alias("rank_lo"),
                pl.col("r").max().alias("rank_hi"),
                pl.col("r").get(pl.col("hi").arg_max()).alias("r_max"),
            )
        )
        # the smallest min is the first file's (files are in min order), the largest max any one's
        first = pa.array(order[agg.get_column("rank_lo").to_numpy()])
        last = pa.array(order[agg.get_column("r_max").to_numpy()])
        df = (
            agg.drop("r_max")
            .rename({"group": "rank"})
            .with_columns(
                pl.col("files").map_elements(lambda n: count_noun(n, "file"), return_dtype=pl.String).alias("path"),
                pl.Series("min", _text(raw_min.take(first)).to_pylist(), pl.String),
                pl.Series("max", _text(raw_max.take(last)).to_pylist(), pl.String),
                pl.col("rank_lo").cast(pl.Int64),
                pl.col("rank_hi").cast(pl.Int64),
            )
        )
        numeric = pa.types.is_decimal(raw_min.type) or pa.types.is_boolean(raw_min.type)
        by_rank = kind == "Q" and mins.type != raw_min.type and not numeric
    else:
        take = pa.array(order)
        shown_min, shown_max = raw_min.take(take), raw_max.take(take)
        mins, maxs, kind = _numeric_bounds(shown_min, shown_max)
        by_rank = mins.type != raw_min.type and pa.types.is_integer(mins.type) and not pa.types.is_boolean(raw_min.type)
        df = frame(
            pa.table(
                {
                    "rank": pa.array(np.arange(n, dtype=np.int64)),
                    "lo": mins,
                    "hi": maxs,
                    "depth": depth.take(take),
                    "path": lay.column("path").combine_chunks().take(take),
                    "min": _text(shown_min),
                    "max": _text(shown_max),
                }
            )
        ).with_columns(pl.lit(1).alias("files"), pl.col("rank").alias("rank_lo"), pl.col("rank").alias("rank_hi"))
    name = column or "column"
    title = f"{name}: file ranges ordered by min" + (f" ({n:,} files in {df.height:,} groups)" if n > max_files else "")
    depths = df.get_column("depth").drop_nulls().unique()
    if depths.len() == 1:  # one colour: a gradient legend with one label says nothing; the title does
        title += f" (overlap depth {depths[0]:,} everywhere)"
    return chart(
        df.sort("rank"),
        title=title,
        mark={"type": "rule", "strokeWidth": 3},
        encoding={
            "x": channel(f"lo:{kind}", title=f"{name} (rank of value)" if by_rank else name, axis=spaced_axis(), scale=_VALUES),
            "x2": channel("hi"),
            "y": channel("rank:Q", title="files (ordered by min)", axis=count_axis()),
            "color": channel(
                "depth:Q", title="overlap depth", scale=_DEPTH_SCALE, legend=None if depths.len() == 1 else count_legend()
            ),
            "tooltip": [
                channel("path:N"),
                channel("min:N"),
                channel("max:N"),
                channel("depth:Q", title="overlap depth"),
                channel("files:Q"),
            ],
        },
        **({"height": height} if height is not None else {}),
    )


def _density(data: Any, column: str | None) -> pa.Table:
    def compute(obj: Any) -> pa.Table:
        assert column is not None
        return layout_density(obj, column)

    return as_inspect_table(
        data, ("lo", "hi", "position_lo", "position_hi", "files", "max_depth"), compute, "layout_density_chart"
    )


def layout_density_chart(data: Any, column: str | None = None, *, interactive: bool = False) -> alt.Chart:
    """`layout_density_spec` as an Altair chart."""
    return altair_chart(layout_density_spec(data, column, interactive=interactive))


def layout_density_spec(data: Any, column: str | None = None, *, interactive: bool = False) -> dict[str, Any]:
    """Files per range of a column's values: bars of the files whose [min, max] intersects each
    range, a line of the overlap depth there (the files a point query in that range reads).
    Readable at any number of files: `inspect.layout_density` bins the values first.

    `data` is `inspect.layout_density(column)` output, or a Table/Snapshot with `column`.
    Numbers, dates and times are placed by value, other types by the rank of their bounds.
    `interactive=True` adds an interval selection over the value axis named `VALUE_BRUSH`.
    """
    if column is None and not isinstance(data, pa.Table | pl.DataFrame):
        raise VizError("layout_density_chart needs the column name when given a table or snapshot")
    d = _density(data, column)
    lo_type = d.schema.field("lo").type
    if pa.types.is_timestamp(lo_type) or pa.types.is_date(lo_type):
        x, x2, kind, title = "lo", "hi", "T", column or "value"
    elif pa.types.is_integer(lo_type) or pa.types.is_floating(lo_type) or pa.types.is_decimal(lo_type):
        x, x2, kind, title = "x_lo", "x_hi", "Q", column or "value"
    else:
        x, x2, kind, title = "position_lo", "position_hi", "Q", f"{column or 'value'} (rank of value)"
    cols = {
        "bin": d.column("bin"),
        "lo": d.column("lo") if kind == "T" else _text(d.column("lo").combine_chunks()),
        "hi": d.column("hi") if kind == "T" else _text(d.column("hi").combine_chunks()),
        "position_lo": d.column("position_lo"),
        "position_hi": d.column("position_hi"),
        "files": d.column("files"),
        "max_depth": d.column("max_depth"),
        "starts": d.column("starts"),
    }
    if x == "x_lo" and d.num_rows:
        # each bar reaches the next bin's start (the last one its max), so the bins tile the axis
        starts = d.column("lo").combine_chunks().cast(pa.float64())
        last = d.column("hi").combine_chunks().cast(pa.float64()).slice(d.num_rows - 1)
        cols["x_lo"] = starts
        cols["x_hi"] = pa.concat_arrays([starts.slice(1), last])
    elif x == "x_lo":
        cols["x_lo"] = cols["x_hi"] = pa.array([], pa.float64())
    return chart(
        pa.table(cols),
        title=f"{column or 'column'}: files per value range",
        mark={"type": "rect", "opacity": 0.85},
        encoding={
            "x": channel(f"{x}:{kind}", title=title, axis=spaced_axis(), scale=_VALUES),
            "x2": channel(x2),
            "y": channel("files:Q", title="files", axis=count_axis()),
            "y2": {"datum": 0},
            "color": channel("max_depth:Q", title="overlap depth", scale=_DEPTH_SCALE, legend=count_legend()),
            "tooltip": [
                channel("lo:T" if kind == "T" else "lo:N", title="from"),
                channel("hi:T" if kind == "T" else "hi:N", title="to"),
                channel("files:Q", format=",", title="files overlapping"),
                channel("max_depth:Q", format=",", title="overlap depth (files a point query reads)"),
                channel("starts:Q", format=",", title="files starting here"),
            ],
        },
        **({"params": [interval(VALUE_BRUSH)]} if interactive else {}),
    )


_STAGES = ["all files", "after partition pruning", "after stats pruning (read)"]


def explain_funnel(data: Any, predicate: Any = None) -> alt.Chart:
    """`explain_funnel_spec` as an Altair chart."""
    return altair_chart(explain_funnel_spec(data, predicate))


def explain_funnel_spec(data: Any, predicate: Any = None) -> dict[str, Any]:
    """Files (and, in the tooltip, bytes and rows) left after each pruning stage of a query:
    all files, after partition pruning, after statistics pruning. `data` is `inspect.explain()`
    output, or a Table/Snapshot with `predicate`."""
    if predicate is None and not isinstance(data, pa.Table | pl.DataFrame):
        raise VizError("explain_funnel needs a predicate when given a table or snapshot")

    def compute(obj: Any) -> pa.Table:
        return explain(obj, predicate)

    e = as_inspect_table(data, ("stage", "size", "num_records"), compute, "explain_funnel")
    df = frame(e, ["stage", "size", "num_records"])
    stages: list[dict[str, Any]] = []
    for label, keep in zip(_STAGES, ([], ["partition_pruned"], ["partition_pruned", "stats_pruned"])):
        sub = df.filter(~pl.col("stage").is_in(keep)) if keep else df
        stages.append(
            {
                "stage": label,
                "order": len(stages),
                "files": sub.height,
                "bytes": int(sub.get_column("size").sum() or 0),
                "rows": int(sub.get_column("num_records").sum() or 0),
            }
        )
    total = max(int(stages[0]["files"]), 1)
    for s in stages:
        s["share"] = s["files"] / total
    table = bytes_text(
        pl.DataFrame({k: [s[k] for s in stages] for k in ("stage", "order", "files", "bytes", "rows", "share")}), "bytes"
    )
    return chart(
        table,
        title="files read by the query",
        mark={"type": "bar"},
        encoding={
            "y": channel("stage:N", sort=_STAGES, title=None),
            "x": channel("files:Q", title="files", axis=count_axis()),
            "color": channel("stage:N", sort=_STAGES, legend=None, scale={"range": ["#9d9d9d", "#72b7b2", "#4c78a8"]}),
            "tooltip": [
                channel("stage:N"),
                channel("files:Q", format=","),
                bytes_tooltip("bytes"),
                channel("rows:Q", format=","),
                channel("share:Q", format=".1%"),
            ],
        },
    )


def _text(values: pa.Array) -> pa.Array:
    if pa.types.is_binary(values.type) or pa.types.is_large_binary(values.type):
        return pa.array([None if v is None else v.hex() for v in values.to_pylist()], pa.string())
    return values.cast(pa.string())
