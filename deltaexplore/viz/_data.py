"""Shared helpers of the chart layer: resolving inputs to inspection tables, keeping chart data small."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from deltaexplore.core.snapshot import Snapshot
from deltaexplore.core.table import Table
from deltaexplore.errors import DeltaExploreError
from deltaexplore.inspect.formatting import human_bytes
from deltaexplore.viz.vegalite import channel

__all__ = [
    "BYTES_LABELS",
    "LABEL_SEPARATION",
    "MAX_POINTS",
    "VizError",
    "as_inspect_table",
    "binary_steps",
    "binary_ticks",
    "bucket_versions",
    "bytes_axis",
    "bytes_text",
    "bytes_tooltip",
    "count_axis",
    "count_legend",
    "frame",
    "spaced_axis",
]

#: a Vega label expression showing a byte count in binary units (1.5 KiB, 20 MiB), as the
#: display contract's `bytes` unit does; for an axis' `labelExpr`
BYTES_LABELS = (
    " : ".join(
        f"abs(datum.value) >= {1024**k} ? format(datum.value / {1024**k}, '.1~f') + ' {unit}'"
        for k, unit in ((4, "TiB"), (3, "GiB"), (2, "MiB"), (1, "KiB"))
    )
    + " : format(datum.value, 'd') + ' B'"
)


def binary_ticks(largest: float, most: int = 8) -> list[int]:
    """Tick values for a log-like byte axis from 0 to `largest`: 0 and powers of two from 1 KiB
    up to the first at or above `largest` (1, 2, 4 KiB ...; every 2nd, 4th ... power, counted
    from the top, when there would be more than `most`), so labels read whole binary units
    (never 3.9 KiB). The last tick is the axis' natural top (scale domain `[0, ticks[-1]]`)."""
    top = max(float(largest), 1024.0)
    powers = [1024]
    while powers[-1] < top:
        powers.append(powers[-1] * 2)
    step = 1
    while len(powers[::-step]) + 1 > most:
        step *= 2
    return [0, *powers[::-step][::-1]]


def decimal_ticks(largest: float, most: int = 8) -> list[int]:
    """Tick values for a log-like count axis from 0 to `largest`: 0 and 1, 2, 5, 10, 20, 50 ...
    up to the first at or above `largest` (only the powers of ten when there would be more than
    `most`), so a symlog axis of row counts is labelled evenly, never crowded at its top. The
    last tick is the axis' natural top (scale domain `[0, ticks[-1]]`)."""
    top = max(float(largest), 1.0)
    decades = math.ceil(math.log10(top))  # 10 ** decades >= top
    steps = [m * 10**e for e in range(decades + 1) for m in (1, 2, 5)]
    steps = [v for v in steps if v < top] + [next(v for v in steps if v >= top)]
    if len(steps) + 1 > most:
        steps = [10**e for e in range(decades + 1)]
    return [0, *steps]


def binary_steps(lo: float, hi: float, most: int = 7) -> list[int]:
    """Tick values for a linear byte axis over [lo, hi] (lo may be negative) at whole binary
    units: steps of 1, 2, 5, 10, 25, 50, 100, 250 or 500 B, KiB, MiB ... (the smallest giving at
    most `most` ticks), so labels read 1 KiB, 2 KiB, never 2.9 KiB. The first and last tick are
    the axis' natural domain (scale domain `[ticks[0], ticks[-1]]`)."""
    lo, hi = min(float(lo), 0.0), max(float(hi), 0.0)
    if hi - lo <= 0:
        return [0, 1024]
    for e in range(7):
        for k in (1, 2, 5, 10, 25, 50, 100, 250, 500):
            step = k * 1024**e
            first, last = math.floor(lo / step), math.ceil(hi / step)
            if last - first + 1 <= most:
                return [i * step for i in range(first, last + 1)]
    return [int(lo), int(hi)]


#: the least space between two axis labels in px (Vega hides labels that would come closer)
LABEL_SEPARATION = 8


#: the label of a count's tick: none at a fraction (Vega's `tickMinStep` still puts a tick at 0.5
#: over a domain of 0 to 1, which ",d" would label "1" beside the real 1)
WHOLE_LABELS = "datum.value % 1 ? '' : datum.label"


def count_axis(**kwargs: Any) -> dict[str, Any]:
    """The axis of a count (files, rows, depth): whole-number ticks only, thousands separated,
    labels that would overlap left out."""
    return {
        "format": ",d",
        "labelExpr": WHOLE_LABELS,
        "tickMinStep": 1,
        "labelOverlap": True,
        "labelSeparation": LABEL_SEPARATION,
        **kwargs,
    }


def spaced_axis(**kwargs: Any) -> dict[str, Any]:
    """An axis whose labels that would overlap (or come closer than `LABEL_SEPARATION`) are
    left out."""
    return {"labelOverlap": True, "labelSeparation": LABEL_SEPARATION, **kwargs}


def bytes_axis(ticks: list[int], **kwargs: Any) -> dict[str, Any]:
    """The axis of byte counts at `ticks` (`binary_steps`, `binary_ticks`) labelled in binary
    units, labels that would overlap left out."""
    return {"labelExpr": BYTES_LABELS, "values": ticks, "labelOverlap": True, "labelSeparation": LABEL_SEPARATION, **kwargs}


def count_legend(**kwargs: Any) -> dict[str, Any]:
    """The legend of a colour scale over a count: whole-number labels only (one value reads '2')."""
    return {"format": ",d", "labelExpr": WHOLE_LABELS, "tickMinStep": 1, **kwargs}


def bytes_text(df: pl.DataFrame, column: str) -> pl.DataFrame:
    """`df` with `<column>_text`: the byte counts of `column` as the display contract shows them
    (`human_bytes`: 1.5 KiB), for tooltips (Vega's number formats have no binary units)."""
    return df.with_columns(pl.col(column).map_elements(human_bytes, return_dtype=pl.String).alias(f"{column}_text"))


def bytes_tooltip(column: str, title: str | None = None) -> dict[str, Any]:
    """The tooltip of a byte-count column prepared by `bytes_text`."""
    return channel(f"{column}_text:N", title=title or column)


#: the most marks a chart spec carries; larger inputs are aggregated before charting
MAX_POINTS = 2000


class VizError(DeltaExploreError, ValueError):
    """A chart was given data it cannot draw (wrong table, missing column)."""


def as_inspect_table(data: Any, required: tuple[str, ...], compute: Callable[[Any], pa.Table], what: str) -> pa.Table:
    """`data` itself when it is a table with the `required` columns, else `compute(data)` for a
    deltaexplore `Table`/`Snapshot`.

    Raises:
        VizError: neither.
    """
    if isinstance(data, (Table, Snapshot)):
        return compute(data)
    if isinstance(data, pl.DataFrame):
        data = data.to_arrow()
    if isinstance(data, pa.Table):
        missing = [c for c in required if c not in data.column_names]
        if missing:
            raise VizError(f"{what} needs columns {', '.join(required)}; the table has no {', '.join(missing)}")
        return data
    raise VizError(f"{what} takes an inspection table or a deltaexplore Table/Snapshot, got {type(data).__name__}")


def frame(table: pa.Table, columns: list[str] | None = None) -> pl.DataFrame:
    out = pl.from_arrow(table.select(columns) if columns else table)
    assert isinstance(out, pl.DataFrame)
    return out


def bucket_versions(df: pl.DataFrame, max_points: int = MAX_POINTS) -> tuple[pl.DataFrame, int]:
    """Add a `bucket` column: the version itself, or the first version of a run of `width`
    versions when there are more than `max_points`; returns (frame, width)."""
    if df.height == 0:
        return df.with_columns(pl.col("version").alias("bucket")), 1
    lo, hi = int(df.get_column("version").min()), int(df.get_column("version").max())  # type: ignore[arg-type]
    width = max(1, int(np.ceil((hi - lo + 1) / max_points)))
    if width == 1:
        return df.with_columns(pl.col("version").alias("bucket")), 1
    return df.with_columns(((pl.col("version") - lo) // width * width + lo).alias("bucket")), width
