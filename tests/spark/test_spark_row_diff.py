"""The net row diff on Spark returns the local `diff_rows` table (keyed and unkeyed) on a table
with DV deletes, a copy-on-write UPDATE, a MERGE, OPTIMIZE, an added column and an overwrite."""

from __future__ import annotations

from collections import Counter

import pyarrow as pa
import pytest

import deltaexplore as dx
from deltaexplore.core.operations import (
    delete,
    merge,
    optimize,
    update,
    when_matched_update_all,
    when_not_matched_insert_all,
    write_table,
)
from deltaexplore.inspect.row_diff import read_summary

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]


def _rows(ids, amount=1.0, name="a"):
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "part": pa.array([i % 3 for i in ids], pa.int64()),
            "amount": pa.array([amount * i for i in ids], pa.float64()),
            "name": pa.array([f"{name}{i}" for i in ids]),
        }
    )


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    """v0 create, v1 DELETE (DV), v2 UPDATE (DV), v3 MERGE, v4 OPTIMIZE, v5 add a column,
    v6 UPDATE it, v7 overwrite, v8 duplicates appended."""
    path = str(tmp_path_factory.mktemp("rowdiff") / "t")
    write_table(
        path,
        _rows(range(200)),
        partition_by=["part"],
        max_rows_per_file=30,
        configuration={"delta.enableDeletionVectors": "true"},
    )
    delete(path, "id between 10 and 19")
    update(path, {"amount": "amount + 1"}, "id % 7 = 0")
    merge(
        path,
        _rows(list(range(190, 220)), 2.0, "m"),
        "source.id = target.id",
        [when_matched_update_all(), when_not_matched_insert_all()],
    )
    optimize(path)
    write_table(path, _rows([900]).append_column("extra", pa.array(["x"])), schema_mode="merge")
    update(path, {"extra": "'set'"}, "id < 5")
    write_table(path, _rows(range(0, 40)), mode="overwrite")
    write_table(path, _rows([1, 1, 2]))
    return dx.open_table(path)


def _multiset(t: pa.Table) -> Counter:
    return Counter(tuple(sorted(r.items())) for r in t.to_pylist())


def test_spark_equals_local(spark, table):
    import deltaexplore.spark as dxs

    latest = table.latest_version()
    pairs = [(0, 1), (1, 2), (2, 3), (3, 4), (4, 6), (0, latest), (latest - 1, latest), (6, 2)]
    for v1, v2 in pairs:
        local = table.inspect.diff_rows(v1, v2)
        remote = dxs.diff_rows(spark, table, v1, v2)
        assert remote.schema.remove_metadata() == local.schema.remove_metadata(), (v1, v2)
        assert _multiset(remote) == _multiset(local), (v1, v2)
        assert (
            read_summary(remote)["engine"] == "spark" and read_summary(remote)["files_read"] == read_summary(local)["files_read"]
        )
    assert table.inspect.diff_rows(3, 4).num_rows == 0  # OPTIMIZE: everything cancels
    for v1, v2 in [(1, 2), (2, 3), (4, 6)]:
        local = table.inspect.diff_rows(v1, v2, key="id")
        remote = dxs.diff_rows(spark, table.uri, v1, v2, key="id")
        assert remote.num_rows > 0 and remote.equals(local), (v1, v2)


def test_advice_checked_after_a_spark_zorder(spark, tmp_path):
    """A Z-order run on Spark: the advisor's prediction against what the new version measures."""
    import numpy as np

    import deltaexplore.spark as dxs
    from deltaexplore.inspect import advise

    path = str(tmp_path / "z")
    rng = np.random.default_rng(0)
    for _ in range(8):
        write_table(
            path, pa.table({"id": pa.array(rng.integers(0, 1_000_000, 4000), pa.int64()), "v": pa.array(rng.random(4000))})
        )
    table = dx.open_table(path)
    predicted = next(r for r in advise(table, zorder_by=["id"]).to_pylist() if r["kind"] == "zorder")
    assert predicted["point_files_before"] > 6 and predicted["point_files_after"] == 1.0
    dxs.optimize(spark, path, zorder_by=["id"])
    rows = {r["metric"]: r for r in advise(dx.open_table(path), check=True).to_pylist()}
    shown = {m: (r["predicted"], r["measured"], r["within"]) for m, r in rows.items()}
    assert rows["point_files"]["measured"] <= 2 and rows["mean_depth"]["within"] and rows["point_files"]["within"], shown
    assert rows["files"]["within"], shown
    # bytes are predicted as the live bytes read; Spark's own writer (snappy, its encodings) wrote
    # the sorted ids about a third smaller here (local writer: within 5%): the check says so
    assert rows["bytes"]["measured"] <= rows["bytes"]["predicted"] * 1.1, shown


def test_restore_through_the_explorer_maintenance_on_spark(spark, tmp_path):
    """RESTORE from the explorer's maintenance path on the Spark engine: the version comes back."""
    from deltaexplore.widgets import maintenance
    from deltaexplore.widgets.views import TableView

    path = str(tmp_path / "r")
    write_table(path, _rows(range(50)))
    delete(path, "id < 20")
    table = dx.open_table(path)
    preview = maintenance.preview("restore", TableView(table), version=0)
    assert (preview["restorable"], preview["rows_back"] - preview["rows_away"]) == (True, 20)
    out = maintenance.run("restore", table, lambda f, m: None, engine="spark", version=0)
    assert out["backend"] == "spark" and out["version_after"] == 2
    assert dx.open_table(path).inspect.diff_rows(0, 2).num_rows == 0
