"""The transaction log over versions: commit and checkpoint sizes, and the JSON a reader replays."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl

from deltaexplore.inspect import log_files
from deltaexplore.viz._data import (
    MAX_POINTS,
    as_inspect_table,
    binary_ticks,
    bucket_versions,
    bytes_axis,
    bytes_text,
    bytes_tooltip,
    frame,
    spaced_axis,
)
from deltaexplore.viz.render import altair_chart
from deltaexplore.viz.vegalite import channel, chart

if TYPE_CHECKING:
    import altair as alt

__all__ = ["log_health_chart", "log_health_spec"]

_SERIES = {"commit_bytes": "commit file", "checkpoint_bytes": "checkpoint", "replay_json_bytes": "JSON replayed to open"}


def _log_files(data: Any) -> Any:
    return log_files(data)


def log_health_chart(data: Any, *, max_points: int = MAX_POINTS) -> alt.Chart:
    """`log_health_spec` as an Altair chart."""
    return altair_chart(log_health_spec(data, max_points=max_points))


def log_health_spec(data: Any, *, max_points: int = MAX_POINTS) -> dict[str, Any]:
    """Bytes per version: each commit file, each checkpoint, and the JSON a reader must replay to
    open that version (it drops to zero at every checkpoint; a rising saw-tooth that never drops
    means checkpoints are not being written). `data` is `inspect.log_files()` output or a
    Table/Snapshot. Over `max_points` versions, ranges of versions keep their maximum."""
    lf = as_inspect_table(data, ("version", *_SERIES), _log_files, "log_health_chart")
    df = frame(lf, ["version", *_SERIES, "checkpoint_kind"])
    df, width = bucket_versions(df, max_points)
    if width > 1:
        df = (
            df.group_by("bucket")
            .agg(*[pl.col(c).max() for c in _SERIES], pl.col("checkpoint_kind").drop_nulls().first())
            .rename({"bucket": "version"})
        )
    long = (
        df.unpivot(index=["version", "checkpoint_kind"], on=list(_SERIES), variable_name="series", value_name="bytes")
        .drop_nulls("bytes")
        .with_columns(pl.col("series").replace_strict(_SERIES, return_dtype=pl.String))
        .sort(["series", "version"])
    )
    long = bytes_text(long, "bytes")
    ticks = binary_ticks(long.get_column("bytes").max() or 0)  # type: ignore[arg-type]
    return chart(
        long,
        title="log size per version" + (f" (max over {width} versions)" if width > 1 else ""),
        mark={"type": "line", "point": True, "interpolate": "step-after"},
        encoding={
            "x": channel("version:Q", axis=spaced_axis(format="d")),
            "y": channel(
                "bytes:Q",
                title="bytes",
                scale={"type": "symlog", "constant": 1024, "domain": [0, ticks[-1]]},
                axis=bytes_axis(ticks),
            ),
            "color": channel(
                "series:N", title=None, scale={"domain": list(_SERIES.values()), "range": ["#4c78a8", "#54a24b", "#e45756"]}
            ),
            "tooltip": [
                channel("version:Q", format="d"),
                channel("series:N"),
                bytes_tooltip("bytes"),
                channel("checkpoint_kind:N", title="checkpoint"),
            ],
        },
    )
