"""The table through time: one of `inspect.timeline`'s metrics over every version, and a user's
aggregate at chosen versions (`inspect.at_versions`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl

from deltaexplore.inspect import timeline
from deltaexplore.viz._data import MAX_POINTS, VizError, as_inspect_table, bucket_versions, count_axis, frame, spaced_axis
from deltaexplore.viz.render import altair_chart
from deltaexplore.viz.vegalite import channel, chart, interval

if TYPE_CHECKING:
    import altair as alt

__all__ = ["TIMELINE_METRICS", "VERSION_BRUSH", "at_versions_chart", "at_versions_spec", "timeline_chart", "timeline_spec"]

#: the interval selection over versions `interactive=True` adds (the explorer listens to it)
VERSION_BRUSH = "version_brush"

#: metric -> (axis title, vega format)
TIMELINE_METRICS = {
    "files": ("active files", ",d"),
    "bytes": ("bytes", "~s"),
    "rows": ("live rows", "~s"),
    "small_files": ("small files", ",d"),
    "small_file_share": ("small-file share", ".0%"),
    "dv_files": ("files with a deletion vector", ",d"),
    "dv_deleted_rows": ("rows deleted by DVs", "~s"),
    "dv_deleted_ratio": ("DV deleted-row ratio", ".1%"),
    "tombstones": ("tombstones", ",d"),
    "partitions": ("partitions", ",d"),
    "overlap_depth_mean": ("mean overlap depth", ".2f"),
    "overlap_depth_max": ("max overlap depth", ",d"),
}

#: the metrics that are whole numbers (their axes tick at whole values only)
WHOLE_METRICS = frozenset(TIMELINE_METRICS) - {"small_file_share", "dv_deleted_ratio", "overlap_depth_mean"}


def _timeline(data: Any) -> Any:
    return timeline(data)


def timeline_chart(data: Any, *, metric: str = "files", max_points: int = MAX_POINTS, interactive: bool = False) -> alt.Chart:
    """`timeline_spec` as an Altair chart."""
    return altair_chart(timeline_spec(data, metric=metric, max_points=max_points, interactive=interactive))


def timeline_spec(data: Any, *, metric: str = "files", max_points: int = MAX_POINTS, interactive: bool = False) -> dict[str, Any]:
    """`metric` of every version as a step line; versions whose commit changed the schema or the
    protocol are marked (filled points, named in the tooltip). `data` is `inspect.timeline()`
    output or a Table/Snapshot. Over `max_points` versions, ranges of versions keep their
    maximum (and any change they hold). `interactive=True` adds an interval selection over
    versions named `VERSION_BRUSH` ("version_brush")."""
    if metric not in TIMELINE_METRICS:
        raise VizError(f"metric must be one of {', '.join(TIMELINE_METRICS)}, got {metric!r}")
    tl = as_inspect_table(data, ("version", metric, "schema_changed", "protocol_changed"), _timeline, "timeline_chart")
    df = frame(tl, ["version", metric, "schema_changed", "protocol_changed"])
    df, width = bucket_versions(df, max_points)
    if width > 1:
        df = df.group_by("bucket").agg(pl.col(metric).max(), pl.col("schema_changed").any(), pl.col("protocol_changed").any())
        df = df.rename({"bucket": "version"})
    change = (
        pl.when(pl.col("schema_changed") & pl.col("protocol_changed"))
        .then(pl.lit("schema and protocol"))
        .when(pl.col("schema_changed"))
        .then(pl.lit("schema"))
        .when(pl.col("protocol_changed"))
        .then(pl.lit("protocol"))
        .otherwise(pl.lit(None, pl.String))
    )
    df = df.with_columns(change.alias("change")).sort("version")
    title, fmt = TIMELINE_METRICS[metric]
    return chart(
        df,
        title=f"{title} per version" + (f" (max over {width} versions)" if width > 1 else ""),
        mark={"type": "line", "interpolate": "step-after", "point": {"filled": True, "size": 18}},
        encoding={
            "x": channel("version:Q", axis=count_axis(format="d")),
            "y": channel(
                f"{metric}:Q", title=title, axis=count_axis(format=fmt) if metric in WHOLE_METRICS else spaced_axis(format=fmt)
            ),
            "tooltip": [
                channel("version:Q", format="d"),
                channel(f"{metric}:Q", title=title, format=fmt),
                channel("change:N", title="changed"),
            ],
        },
        **({"params": [interval(VERSION_BRUSH)]} if interactive else {}),
    )


def _needs_expression(data: Any) -> Any:
    raise VizError("at_versions_chart takes the result of table.inspect.at_versions(expression, versions)")


def at_versions_chart(data: Any) -> alt.Chart:
    """`at_versions_spec` as an Altair chart."""
    return altair_chart(at_versions_spec(data))


def at_versions_spec(data: Any) -> dict[str, Any]:
    """The value of `inspect.at_versions(...)` per version: a line with a point per version
    evaluated, the expression as the title, rows and files read in the tooltip."""
    tl = as_inspect_table(data, ("version", "value", "expression", "rows", "files_read"), _needs_expression, "at_versions_chart")
    df = frame(tl, ["version", "value", "expression", "rows", "files_read"]).sort("version")
    title = df["expression"][0] if df.height else "expression"
    return chart(
        df.drop("expression"),
        title=str(title),
        mark={"type": "line", "point": {"filled": True, "size": 30}},
        encoding={
            "x": channel("version:Q", axis=count_axis(format="d")),
            "y": channel("value:Q", title="value", axis=spaced_axis()),
            "tooltip": [
                channel("version:Q", format="d"),
                channel("value:Q", format=",.6~g"),
                channel("rows:Q", title="rows kept", format=",d"),
                channel("files_read:Q", title="files read", format=",d"),
            ],
        },
    )
