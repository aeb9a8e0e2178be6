"""The net row diff of two versions on Spark, for ranges too big for the driver.

The plan is inspect's (`inspect.row_diff.plan_row_diff`: the files that differ, the compared
columns in the newer version's schema); Spark reads the older side (removed files, and the files
re-added with another DV under their old DV) and the newer side (added files, those files under
their new DV), counts every distinct row in one aggregate (older -1, newer +1) and brings back
only the rows whose count is not 0. The driver shapes them as the local `diff_rows` does
(`shape_rows`), so both engines return the same table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.snapshot import Snapshot
from deltaexplore.core.table import Table, open_table
from deltaexplore.inspect.row_diff import COUNT, Column, RowDiffPlan, net_rows, plan_meta, plan_row_diff, scan_of, shape_rows
from deltaexplore.spark.reader import read_plan
from deltaexplore.spark.session import spark_errors
from deltaexplore.spark.types import quoted

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["diff_rows"]

SIDE = "__dx_side"


def _side(
    spark: SparkSession, snap: Snapshot, files: list[pa.Table], columns: list[Column], *, older: bool, sign: int
) -> DataFrame | None:
    from pyspark.sql import functions as F

    adds = pa.concat_tables([f for f in files if f.num_rows]) if any(f.num_rows for f in files) else None
    if adds is None:
        return None
    df = read_plan(spark, scan_of(snap, adds))
    newer_types = {c.name: c for c in columns}
    exprs = []
    for c in columns:
        name = c.older_name if older else c.name
        target = _spark_type_of(newer_types[c.name])
        if name is None or name not in df.columns:
            exprs.append(F.lit(None).cast(target).alias(c.name))
        else:
            exprs.append(F.col(quoted(name)).cast(target).alias(c.name))
    return df.select(*exprs, F.lit(sign).alias(SIDE))


def _spark_type_of(column: Column) -> Any:
    from pyspark.sql.pandas.types import from_arrow_type

    return from_arrow_type(column.type)


def diff_rows(
    spark: SparkSession,
    uri: Any,
    v1: int | None = None,
    v2: int | None = None,
    *,
    key: str | list[str] | None = None,
    columns: list[str] | None = None,
    storage_options: dict[str, Any] | None = None,
) -> pa.Table:
    """The rows that truly differ from `v1` to `v2`, computed on Spark: the same table as the
    local `table.inspect.diff_rows` (see `deltaexplore.inspect.row_diff.diff_rows`).

    Raises:
        InspectError: bad versions, key or columns (as locally).
        SparkError: the Spark job failed.
    """
    from pyspark.sql import functions as F

    obj: Table | Snapshot = uri if isinstance(uri, (Table, Snapshot)) else open_table(uri, storage_options=storage_options)
    plan: RowDiffPlan = plan_row_diff(obj, v1, v2, key=key, columns=columns)
    names = [c.name for c in plan.columns]
    target = pa.schema([pa.field(c.name, c.type) for c in plan.columns])
    with spark_errors("diff_rows", path=str(plan.newer.uri)):
        old = _side(spark, plan.older, [plan.removed, plan.dv_before], plan.columns, older=True, sign=-1)
        new = _side(spark, plan.newer, [plan.added, plan.dv_after], plan.columns, older=False, sign=1)
        frames = [f for f in (old, new) if f is not None]
        if not frames:
            net = net_rows(target.empty_table(), target.empty_table())
        else:
            both = frames[0] if len(frames) == 1 else frames[0].unionByName(frames[1])
            grouped = both.groupBy(*[F.col(quoted(n)) for n in names]).agg(F.sum(SIDE).cast("long").alias(COUNT))
            got = grouped.where(F.col(COUNT) != 0).toArrow()
            values = pa.Table.from_arrays([got.column(n).cast(target.field(n).type) for n in names], schema=target)
            net = values.append_column(COUNT, pc.cast(got.column(COUNT), pa.int64()))
    meta = plan_meta(plan, "spark")
    meta["bytes_read"] = str(plan.bytes + int(pc.sum(plan.dv_before.column("size")).as_py() or 0))
    return shape_rows(net, plan.key, backwards=plan.backwards, meta=meta)
