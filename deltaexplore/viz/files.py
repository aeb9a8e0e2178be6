"""What a version is made of: the file-size distribution and partition skew."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.inspect import files, partitions
from deltaexplore.inspect.file_sizes import finish_file_sizes, size_aggregates
from deltaexplore.inspect.files import DEFAULT_SMALL_FILE_BYTES
from deltaexplore.inspect.formatting import human_bytes, partition_names, partition_value_columns
from deltaexplore.viz._data import (
    BYTES_LABELS,
    LABEL_SEPARATION,
    as_inspect_table,
    binary_steps,
    bytes_axis,
    bytes_text,
    bytes_tooltip,
    count_axis,
    frame,
)
from deltaexplore.viz.render import altair_chart
from deltaexplore.viz.vegalite import channel, chart

if TYPE_CHECKING:
    import altair as alt

__all__ = ["TOP_PARTITIONS", "file_size_histogram", "file_size_spec", "partition_skew_chart", "partition_skew_spec"]


def _files(data: Any) -> Any:
    return files(data)


def _partitions(data: Any) -> Any:
    return partitions(data)


def file_size_histogram(data: Any, *, small_file_bytes: int | None = None) -> alt.Chart:
    """`file_size_spec` as an Altair chart."""
    return altair_chart(file_size_spec(data, small_file_bytes=small_file_bytes))


def file_size_spec(data: Any, *, small_file_bytes: int | None = None) -> dict[str, Any]:
    """Files per size bin (powers of two: 1-2 MiB, 2-4 MiB, ...), bins whose files are all small
    coloured as small: under `small_file_bytes` when given, else as `inspect.files()` says
    (`is_small`: `delta.targetFileSize` / 2, else 128 MiB). `data` is `inspect.file_sizes()`
    output (the bins, whichever engine counted them), `inspect.files()` output (or any table
    with `size`) or a Table/Snapshot. The spec holds one row per bin, never per file."""
    if isinstance(data, pa.Table) and "bin_start" in data.column_names and "files" in data.column_names:
        bins = data
    else:
        f = as_inspect_table(data, ("size",), _files, "file_size_histogram")
        sizes = f.column("size").to_numpy(zero_copy_only=False).astype(np.float64) if f.num_rows else np.zeros(0)
        if small_file_bytes is not None or "is_small" not in f.column_names:
            is_small = sizes < (small_file_bytes if small_file_bytes is not None else DEFAULT_SMALL_FILE_BYTES)
        else:
            is_small = f.column("is_small").to_numpy(zero_copy_only=False).astype(bool)
        known = ~np.isnan(sizes)
        bins = finish_file_sizes(size_aggregates(sizes[known].astype(np.int64), is_small[known]))
    lo = bins.column("bin_start").to_numpy().astype(np.int64)
    hi = bins.column("bin_end").to_numpy().astype(np.int64)
    counts = bins.column("files").to_numpy().astype(np.int64)
    bytes_per = bins.column("bytes").to_numpy().astype(np.int64)
    small_per = bins.column("small_files").to_numpy().astype(np.int64)
    labels = [f"{human_bytes(a)}-{human_bytes(b)}" for a, b in zip(lo, hi)]
    small = [bool(n_small == n) for n_small, n in zip(small_per, counts)]
    table = pa.table(
        {
            "bin": pa.array(labels, pa.string()),
            "bin_start": pa.array(lo, pa.int64()),
            "files": pa.array(counts, pa.int64()),
            "bytes": pa.array(bytes_per, pa.int64()),
            "small": pa.array(small, pa.bool_()),
            "small_text": pa.array(["yes" if v else "no" for v in small], pa.string()),
            "bytes_text": pa.array([human_bytes(b) for b in bytes_per], pa.string()),
        }
    )
    return chart(
        table,
        title="file sizes",
        mark={"type": "bar"},
        encoding={
            # each bar's label is where its bin starts (the next bar's start is where it ends)
            "x": channel(
                "bin_start:O",
                title="file size (each bin up to twice its start)",
                axis={"labelAngle": 0, "labelExpr": BYTES_LABELS, "labelOverlap": True, "labelSeparation": LABEL_SEPARATION},
            ),
            "y": channel("files:Q", title="files", axis=count_axis()),
            "color": channel(
                "small:N",
                title="small files",
                scale={"domain": [True, False], "range": ["#f58518", "#4c78a8"]},
                legend={"labelExpr": "datum.label == 'true' ? 'yes' : 'no'"},
            ),
            "tooltip": [
                channel("bin:N", title="file size"),
                channel("files:Q", format=","),
                bytes_tooltip("bytes"),
                channel("small_text:N", title="small files"),
            ],
        },
    )


#: most partitions `partition_skew_chart` draws one bar each for (the rest share one bar)
TOP_PARTITIONS = 15
#: the height of one partition's bar and label in px: labels never overlap
_BAR_STEP = 18


def partition_skew_chart(data: Any, *, metric: str = "bytes", top: int = TOP_PARTITIONS) -> alt.Chart:
    """`partition_skew_spec` as an Altair chart."""
    return altair_chart(partition_skew_spec(data, metric=metric, top=top))


def partition_skew_spec(data: Any, *, metric: str = "bytes", top: int = TOP_PARTITIONS) -> dict[str, Any]:
    """The `top` partitions by `metric` (bytes | files | rows | small_files), one bar each,
    labelled by their values (the partition columns name the axis), the chart as tall as its
    bars; beyond `top` the others are one grey bar at their mean per partition ("350 others
    (mean)", on the same scale as the rest: drawn, never a sum that flattens every other bar;
    its tooltip has their total). Colour: each partition's share of small files. `data` is
    `inspect.partitions()` output or a Table/Snapshot."""
    p = as_inspect_table(data, ("partition", metric, "files", "small_files"), _partitions, "partition_skew_chart")
    cols = list(dict.fromkeys(["partition", metric, "files", "small_files"] + (["bytes"] if "bytes" in p.column_names else [])))
    df = frame(p, cols).sort(metric, descending=True, nulls_last=True)
    keys = df.get_column("partition")
    names = partition_names(keys.unique().to_list()) or []
    if names:
        values = partition_value_columns(keys.to_arrow(), names)
        label = values[0] if len(names) == 1 else pc.binary_join_element_wise(*values, " / ")
        df = df.with_columns(pl.Series("label", pl.from_arrow(label), pl.String).fill_null("(null)"))
    else:
        df = df.with_columns(
            pl.when(pl.col("partition") == "").then(pl.lit("(unpartitioned)")).otherwise(pl.col("partition")).alias("label")
        )
    head, rest = df.head(top), df.slice(top)
    head = head.with_columns(pl.lit(1).alias("partitions"), pl.lit(False).alias("other"))
    if rest.height:
        sums = [c for c in df.columns if c not in ("partition", "label")]
        other = rest.select(
            pl.lit(f"({rest.height:,} others)").alias("partition"),
            pl.lit(f"{rest.height:,} others (mean)").alias("label"),
            *[(pl.col(c).sum() / rest.height).alias(c) for c in sums],
            pl.lit(rest.height).alias("partitions"),
            pl.lit(True).alias("other"),
        )
        head = pl.concat([head, other.select(head.columns)], how="vertical_relaxed")
        totals = rest.select(*[pl.col(c).sum().alias(f"{c}_total") for c in sums])
        head = head.with_columns(
            *[
                pl.when(pl.col("other")).then(pl.lit(totals.item(0, f"{c}_total"))).otherwise(pl.col(c)).alias(f"{c}_total")
                for c in sums
            ]
        )
    else:
        head = head.with_columns(*[pl.col(c).alias(f"{c}_total") for c in df.columns if c not in ("partition", "label")])
    head = head.with_columns((pl.col("small_files_total") / pl.col("files_total")).alias("small_share"))
    if "bytes" in head.columns:
        head = bytes_text(head.with_columns(pl.col("bytes_total").alias("total_bytes")), "total_bytes")
    if metric == "bytes":
        ticks = binary_steps(0, head.get_column("bytes").max() or 0, most=5)  # type: ignore[arg-type]
        axis, scale = bytes_axis(ticks), {"scale": {"domain": [ticks[0], ticks[-1]]}}
    else:
        axis, scale = count_axis(tickCount=5), {}
    small = channel(
        "small_share:Q",
        condition={"test": "datum.other", "value": "#9d9d9d"},
        title="small files",
        scale={"domain": [0, 1], "scheme": "orangered"},
        legend={"format": "%", "orient": "top", "direction": "horizontal", "gradientLength": 120},
    )
    title = f"partitions by {metric}" + (f" (the {top} largest of {df.height:,})" if rest.height else "")
    return chart(
        head,
        title=title,
        mark={"type": "bar"},
        encoding={
            "y": channel("label:N", sort=None, title=" / ".join(names) or None, axis={"labelLimit": 200}),
            "x": channel(f"{metric}:Q", title=metric + (" (others: their mean)" if rest.height else ""), axis=axis, **scale),
            "color": small,
            "tooltip": [
                channel("label:N", title=" / ".join(names) or "partition"),
                channel("partitions:Q", format=","),
                *([bytes_tooltip("total_bytes", "bytes")] if "bytes" in head.columns else []),
                channel("files_total:Q", format=",", title="files"),
                *([channel(f"{metric}_total:Q", format=",", title=metric)] if metric not in ("bytes", "files") else []),
                channel("small_files_total:Q", format=",", title="small files"),
                channel("small_share:Q", format=".0%", title="small share"),
            ],
        },
        height={"step": _BAR_STEP},
    )
