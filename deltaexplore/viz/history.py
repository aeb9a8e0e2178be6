"""How the table got there: files/bytes/rows added and removed per version, operations over time,
and which versions can still be read."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import polars as pl

from deltaexplore.inspect import history, reconstructable_versions
from deltaexplore.viz._data import (
    LABEL_SEPARATION,
    MAX_POINTS,
    VizError,
    as_inspect_table,
    binary_steps,
    bucket_versions,
    bytes_axis,
    bytes_text,
    bytes_tooltip,
    count_axis,
    frame,
    spaced_axis,
)
from deltaexplore.viz.render import altair_chart
from deltaexplore.viz.vegalite import channel, chart, interval

if TYPE_CHECKING:
    import altair as alt

__all__ = [
    "TIME_BRUSH",
    "history_chart",
    "history_spec",
    "operations_chart",
    "operations_spec",
    "time_axis",
    "versions_chart",
    "versions_spec",
]

_METRICS = {
    "files": ("files_added", "files_removed"),
    "bytes": ("bytes_added", "bytes_removed"),
    "rows": ("rows_added", "rows_removed"),
}


def _history(data: Any) -> Any:
    return history(data)


def history_chart(data: Any, *, metric: str = "files", max_points: int = MAX_POINTS) -> alt.Chart:
    """`history_spec` as an Altair chart."""
    return altair_chart(history_spec(data, metric=metric, max_points=max_points))


def history_spec(data: Any, *, metric: str = "files", max_points: int = MAX_POINTS) -> dict[str, Any]:
    """Bars per version: `metric` (files | bytes | rows) added above the axis, removed below.

    `data` is a history table (`table.history()` / `inspect.history`) or a Table/Snapshot.
    More than `max_points` versions are summed into equal version ranges first. Tooltips show
    the operation (or "N commits" for a range) and the commit time.
    """
    if metric not in _METRICS:
        raise VizError(f"metric must be one of {', '.join(_METRICS)}, got {metric!r}")
    added, removed = _METRICS[metric]
    h = as_inspect_table(data, ("version", "timestamp", "operation", added, removed), _history, "history_chart")
    df = frame(h, ["version", "timestamp", "operation", added, removed])
    df, width = bucket_versions(df, max_points)
    agg = (
        df.group_by("bucket")
        .agg(
            pl.col(added).sum().alias("added"),
            (-pl.col(removed).sum()).alias("removed"),
            pl.len().alias("commits"),
            pl.col("operation").first(),
            pl.col("timestamp").min(),
            pl.col("version").max().alias("last_version"),
        )
        .with_columns(
            pl.when(pl.col("commits") > 1)
            .then(pl.format("{} commits", pl.col("commits")))
            .otherwise(pl.col("operation"))
            .alias("operation")
        )
        .unpivot(
            index=["bucket", "last_version", "operation", "timestamp", "commits"],
            on=["added", "removed"],
            variable_name="change",
            value_name=metric,
        )
        .rename({"bucket": "version"})
        .sort(["version", "change"])
    )
    if metric == "bytes":
        agg = bytes_text(agg.with_columns(pl.col("bytes").abs().alias("size")), "size")
    if metric == "bytes":
        values = agg.get_column("bytes")
        ticks = binary_steps(values.min() or 0, values.max() or 0)  # type: ignore[arg-type]
        axis, scale = bytes_axis(ticks), {"scale": {"domain": [ticks[0], ticks[-1]]}}
    else:
        axis, scale = count_axis(), {}
    title = f"{metric} added (+) and removed (-) per version" + (f" (ranges of {width} versions)" if width > 1 else "")
    return chart(
        agg,
        title=title,
        mark={"type": "bar"},
        encoding={
            "x": channel("version:Q", title="version", axis=spaced_axis(format="d")),
            "y": channel(f"{metric}:Q", title=metric, axis=axis, **scale),
            "color": channel("change:N", scale={"domain": ["added", "removed"], "range": ["#4c78a8", "#e45756"]}),
            "tooltip": [
                channel("version:Q", format="d"),
                channel("last_version:Q", format="d", title="to version"),
                channel("operation:N"),
                channel("timestamp:T", format="%Y-%m-%d %H:%M:%S"),
                bytes_tooltip("size", "bytes") if metric == "bytes" else channel(f"{metric}:Q", format=","),
                channel("change:N"),
            ],
        },
    )


#: names of the selections `interactive=True` adds (the explorer listens to them)
TIME_BRUSH = "time_brush"


def operations_chart(data: Any, *, max_points: int = MAX_POINTS, interactive: bool = False) -> alt.Chart:
    """`operations_spec` as an Altair chart."""
    return altair_chart(operations_spec(data, max_points=max_points, interactive=interactive))


def operations_spec(data: Any, *, max_points: int = MAX_POINTS, interactive: bool = False) -> dict[str, Any]:
    """One tick per commit on a time axis, one row per operation (WRITE, MERGE, OPTIMIZE, ...).

    `data` is a history table, `inspect.commit_infos()` output (the whole history, cheap) or a
    Table/Snapshot. More than `max_points` commits are counted per (operation, time bucket)
    instead (`version` is then the bucket's first version, `last_version` its last).
    `interactive=True` adds an interval selection over time named `TIME_BRUSH` ("time_brush").
    """
    h = as_inspect_table(data, ("version", "timestamp", "operation"), _history, "operations_chart")
    cols = ["version", "timestamp", "operation"] + [c for c in ("user_name",) if c in h.column_names]
    df = frame(h, cols).with_columns(pl.col("operation").fill_null("(unknown)"))
    if "user_name" not in df.columns:
        df = df.with_columns(pl.lit(None, pl.String).alias("user_name"))
    aggregated = df.height > max_points
    if aggregated:
        df = (
            df.sort("timestamp")
            .group_by_dynamic("timestamp", every=_every(df), group_by="operation")
            .agg(
                pl.len().alias("commits"),
                pl.col("version").min().alias("version"),
                pl.col("version").max().alias("last_version"),
                pl.col("user_name").drop_nulls().first().alias("user_name"),
            )
        )
    else:
        df = df.with_columns(pl.lit(1).alias("commits"), pl.col("version").alias("last_version"))
    return chart(
        df,
        title="operations over time",
        mark={"type": "tick", "thickness": 2},
        encoding={
            "x": channel("timestamp:T", title="commit time", axis=time_axis(df.get_column("timestamp")), scale={"padding": 10}),
            "y": channel("operation:N", title=None),
            "color": channel("operation:N", legend=None),
            "tooltip": [
                channel("version:Q", format="d", title="from version" if aggregated else "version"),
                *([channel("last_version:Q", format="d", title="to version")] if aggregated else []),
                channel("operation:N"),
                channel("timestamp:T", format="%Y-%m-%d %H:%M:%S"),
                channel("user_name:N", title="user"),
                *([channel("commits:Q", format=",")] if aggregated else []),
            ],
        },
        **({"params": [interval(TIME_BRUSH)]} if interactive else {}),
    )


#: time axis steps, finest first: (unit, its length in ms, steps, label format)
_TIME_STEPS: tuple[tuple[str, int, tuple[int, ...], str], ...] = (
    ("millisecond", 1, (1, 2, 5, 10, 20, 50, 100, 200, 250, 500), "%H:%M:%S.%L"),
    ("second", 1000, (1, 2, 5, 10, 15, 30), "%H:%M:%S"),
    ("minute", 60_000, (1, 2, 5, 10, 15, 30), "%H:%M"),
    ("hour", 3_600_000, (1, 2, 3, 6, 12), "%H:%M"),
    ("day", 86_400_000, (1, 2), "%b %d"),
    ("week", 7 * 86_400_000, (1, 2), "%b %d"),
    ("month", 30 * 86_400_000, (1, 2, 3, 6), "%b %Y"),
    ("year", 365 * 86_400_000, (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000), "%Y"),
)


def time_axis(times: pl.Series, most: int = 7) -> dict[str, Any]:
    """A time axis for `times` whose ticks step by one unit chosen from their span: milliseconds
    for commits within a second ... years across decades, at most `most` ticks, every label in
    one format that tells them apart (``10:33:28.250``, ``10:33:20``, ``10:30``, ``Nov 27``,
    ``Nov 2026``, ``2026``; hours of more than a day carry the day). The ticks are given as
    values (UTC steps): Vega's own choice mixes formats on one axis, and a fixed ``%H:%M``
    labelled seven ticks "10:33" for commits within a minute."""
    ms = times.cast(pl.Datetime("ms")).cast(pl.Int64).drop_nulls()
    lo, hi = (int(ms.min()), int(ms.max())) if ms.len() else (0, 0)  # type: ignore[arg-type]
    span = hi - lo
    common: dict[str, Any] = {"labelOverlap": True, "labelSeparation": LABEL_SEPARATION}
    if span <= 0:
        return {"format": "%Y-%m-%d %H:%M:%S", "values": [lo] if ms.len() else [], **common}
    for unit, size, steps, fmt in _TIME_STEPS:
        for step in steps:
            if span / (size * step) <= most - 1:
                if unit in ("hour", "minute") and span >= 43_200_000:
                    fmt = "%b %d %H:%M"  # hours of more than one day
                elif unit in ("day", "week") and span > 300 * 86_400_000:
                    fmt = "%b %d %Y"
                return {"format": fmt, "values": _time_ticks(lo, hi, unit, size, step), **common}
    return {"format": "%Y", **common}


def _time_ticks(lo: int, hi: int, unit: str, size: int, step: int) -> list[int]:
    """Epoch ms of the ticks in [lo, hi] every `step` `unit`s (calendar months and years)."""
    if unit not in ("month", "year"):
        width = size * step
        return list(range(-(-lo // width) * width, hi + 1, width))
    start = datetime.fromtimestamp(lo / 1000, UTC)
    months = step * (12 if unit == "year" else 1)
    index = start.year * 12 + start.month - 1
    index = -(-index // months) * months  # the first whole step at or after lo
    out: list[int] = []
    while True:
        t = datetime(index // 12, index % 12 + 1, 1, tzinfo=UTC)
        tick = int(t.timestamp() * 1000)
        if tick > hi:
            return out
        if tick >= lo:
            out.append(tick)
        index += months


def _every(df: pl.DataFrame) -> str:
    ts = df.get_column("timestamp").cast(pl.Int64)
    lo, hi = ts.min(), ts.max()
    span_ms = int(hi) - int(lo) if lo is not None and hi is not None else 0  # type: ignore[arg-type]
    seconds = max(1, span_ms // 1000 // 500)
    return f"{seconds}s"


def _versions(data: Any) -> Any:
    return reconstructable_versions(data)


def versions_chart(data: Any, *, max_points: int = MAX_POINTS) -> alt.Chart:
    """`versions_spec` as an Altair chart."""
    return altair_chart(versions_spec(data, max_points=max_points))


def versions_spec(data: Any, *, max_points: int = MAX_POINTS) -> dict[str, Any]:
    """Which versions can be read: one cell per version coloured by status (readable, data
    files missing, log gone, lost after VACUUM). `data` is `reconstructable_versions()` output."""
    v = as_inspect_table(data, ("version", "log_reconstructable", "readable"), _versions, "versions_chart")
    df = frame(v)
    after = pl.col("readable_after_vacuum") if "readable_after_vacuum" in df.columns else pl.lit(None, pl.Boolean)
    status = (
        pl.when(~pl.col("log_reconstructable"))
        .then(pl.lit("log gone"))
        .when(~pl.col("readable"))
        .then(pl.lit("data files missing"))
        .when(after.eq(False))
        .then(pl.lit("lost after VACUUM"))
        .otherwise(pl.lit("readable"))
    )
    df = df.with_columns(status.alias("status"))
    df, width = bucket_versions(df, max_points)
    df = df.group_by(["bucket", "status"]).agg(pl.len().alias("versions")).rename({"bucket": "version"}).sort("version")
    domain = ["readable", "lost after VACUUM", "data files missing", "log gone"]
    return chart(
        df,
        title="readable versions" + (f" (ranges of {width})" if width > 1 else ""),
        mark={"type": "tick", "thickness": 3, "size": 30},
        encoding={
            "x": channel("version:Q", axis=spaced_axis(format="d")),
            "color": channel("status:N", scale={"domain": domain, "range": ["#54a24b", "#f58518", "#e45756", "#9d9d9d"]}),
            "tooltip": [channel("version:Q", format="d"), channel("status:N"), channel("versions:Q")],
        },
    )
