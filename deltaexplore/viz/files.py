"""What a version is made of: the file-size distribution and partition skew."""

from __future__ import annotations

from typing import Any

import altair as alt
import numpy as np
import polars as pl
import pyarrow as pa

from deltaexplore.inspect import files, partitions
from deltaexplore.inspect.file_sizes import finish_file_sizes, size_aggregates
from deltaexplore.inspect.files import DEFAULT_SMALL_FILE_BYTES
from deltaexplore.inspect.formatting import human_bytes
from deltaexplore.viz._data import BYTES_LABELS, as_inspect_table, binary_steps, bytes_text, bytes_tooltip, count_axis, frame

__all__ = ["file_size_histogram", "partition_skew_chart"]


def _files(data: Any) -> Any:
    return files(data)


def _partitions(data: Any) -> Any:
    return partitions(data)


def file_size_histogram(data: Any, *, small_file_bytes: int | None = None) -> alt.Chart:
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
    return (
        alt.Chart(table, title="file sizes")
        .mark_bar()
        .encode(
            # each bar's label is where its bin starts (the next bar's start is where it ends)
            x=alt.X(
                "bin:O",
                sort=alt.SortField("bin_start"),
                title="file size (each bin up to twice its start)",
                axis=alt.Axis(labelAngle=0, labelExpr="split(datum.label, '-')[0]", labelOverlap=True),
            ),
            y=alt.Y("files:Q", title="files", axis=count_axis()),
            color=alt.Color(
                "small:N",
                title="small files",
                scale=alt.Scale(domain=[True, False], range=["#f58518", "#4c78a8"]),
                legend=alt.Legend(labelExpr="datum.label == 'true' ? 'yes' : 'no'"),
            ),
            tooltip=[
                alt.Tooltip("bin:N", title="file size"),
                alt.Tooltip("files:Q", format=","),
                bytes_tooltip("bytes"),
                alt.Tooltip("small_text:N", title="small files"),
            ],
        )
    )


def partition_skew_chart(data: Any, *, metric: str = "bytes", top: int = 40) -> alt.Chart:
    """The `top` partitions by `metric` (bytes | files | rows | small_files), the rest summed in
    one "(N other partitions)" bar; colour shows each partition's share of small files. `data` is
    `inspect.partitions()` output or a Table/Snapshot."""
    p = as_inspect_table(data, ("partition", metric, "files", "small_files"), _partitions, "partition_skew_chart")
    cols = list(dict.fromkeys(["partition", metric, "files", "small_files"] + (["bytes"] if "bytes" in p.column_names else [])))
    df = frame(p, cols)
    df = df.sort(metric, descending=True, nulls_last=True)
    head, rest = df.head(top), df.slice(top)
    if rest.height:
        other = rest.select(
            pl.lit(f"({rest.height} other partitions)").alias("partition"),
            *[pl.col(c).sum() for c in df.columns if c != "partition"],
        )
        head = pl.concat([head, other.select(head.columns)], how="vertical_relaxed")
    head = head.with_columns(
        pl.when(pl.col("partition") == "").then(pl.lit("(unpartitioned)")).otherwise(pl.col("partition")).alias("partition"),
        (pl.col("small_files") / pl.col("files")).alias("small_share"),
    )
    if "bytes" in head.columns:
        head = bytes_text(head, "bytes")
    if metric == "bytes":
        ticks = binary_steps(0, head.get_column("bytes").max() or 0)  # type: ignore[arg-type]
        axis, scale = alt.Axis(labelExpr=BYTES_LABELS, values=ticks), alt.Scale(domain=[ticks[0], ticks[-1]])
    else:
        axis, scale = count_axis(), alt.Scale()
    return (
        alt.Chart(head.to_arrow(), title=f"partitions by {metric}")
        .mark_bar()
        .encode(
            y=alt.Y("partition:N", sort=None, title=None),
            x=alt.X(f"{metric}:Q", title=metric, axis=axis, scale=scale),
            color=alt.Color(
                "small_share:Q",
                title="small files",
                scale=alt.Scale(domain=[0, 1], scheme="orangered"),
                legend=alt.Legend(format="%"),
            ),
            tooltip=[
                "partition:N",
                *([bytes_tooltip("bytes")] if "bytes" in head.columns else []),
                alt.Tooltip("files:Q", format=","),
                *([alt.Tooltip(f"{metric}:Q", format=",")] if metric not in ("bytes", "files") else []),
                alt.Tooltip("small_files:Q", format=",", title="small files"),
                alt.Tooltip("small_share:Q", format=".0%"),
            ],
        )
    )
