"""`inspect.at_versions`: a user's aggregate at chosen versions equals the aggregate of that
version's rows read on their own; the filter skips files; bad expressions are typed; the chart."""

from __future__ import annotations

from pathlib import Path

import pyarrow.compute as pc
import pytest
from helpers import amounts_table

import deltaexplore as dx
from deltaexplore import inspect, viz
from deltaexplore.inspect.schemas import AT_VERSIONS_SCHEMA


def expected(uri: str, version: int, where: str | None) -> tuple[int, float]:
    rows = dx.open_table(uri).snapshot(version=version).to_arrow(where=where)
    return rows.num_rows, pc.sum(rows.column("amount")).as_py() or 0.0


def test_an_aggregate_at_every_version_equals_that_versions_rows(tmp_path: Path) -> None:
    uri = amounts_table(tmp_path / "t")
    table = dx.open_table(uri)
    counted = table.inspect.at_versions("count(*) where amount > 10", [0, 1, 2, 3, 4])
    summed = table.inspect.at_versions("SUM(amount) WHERE day = 'd2'")  # every version by default
    assert counted.schema == AT_VERSIONS_SCHEMA and summed.schema == AT_VERSIONS_SCHEMA
    assert summed.column("version").to_pylist() == [0, 1, 2, 3, 4]
    for row in counted.to_pylist():
        n, _ = expected(uri, row["version"], "amount > 10")
        assert row["value"] == n == row["rows"]
        assert row["expression"] == "count(*) where amount > 10"
    assert counted.column("value").to_pylist() == [1, 3, 6, 5, 5]
    for row in summed.to_pylist():
        n, total = expected(uri, row["version"], "day = 'd2'")
        assert row["value"] == (total if n else None) and row["rows"] == n
        assert row["files_read"] == (0 if row["version"] == 0 else 1)  # the other days' files skipped
    assert summed.column("value").to_pylist()[-1] == 223.0
    mixed = table.inspect.at_versions("avg(amount) - min(amount) where (day = 'd1' or day = 'd3')", [4])
    rows = table.snapshot(version=4).to_arrow(where="day = 'd1' or day = 'd3'").column("amount").to_pylist()
    assert mixed.column("value").to_pylist() == [pytest.approx(sum(rows) / len(rows) - min(rows))]
    chart = viz.at_versions_chart(counted).to_dict()
    assert chart["title"] == "count(*) where amount > 10" and chart["encoding"]["y"]["field"] == "value"


@pytest.mark.parametrize(
    ("expression", "error", "match"),
    [
        ("", inspect.ExpressionError, "SQL text"),
        ("where amount > 1", inspect.ExpressionError, "no aggregate"),
        ("count(*) where ", inspect.ExpressionError, "empty filter"),
        ("sum(amount", inspect.ExpressionError, "unbalanced"),
        ("sum(nope)", dx.ColumnNotFoundError, "nope"),
        ("amount", inspect.ExpressionError, "not one aggregate"),
        ("min(day)", inspect.ExpressionError, "not numbers"),
        ("count(*) where amount >", dx.DeltaExploreError, "filter .amount >."),
    ],
)
def test_bad_expressions_are_typed(tmp_path: Path, expression: str, error: type, match: str) -> None:
    uri = amounts_table(tmp_path / "t")
    with pytest.raises(error, match=match):
        dx.open_table(uri).inspect.at_versions(expression, [4])


def test_bad_versions_and_engine_are_typed(tmp_path: Path) -> None:
    uri = amounts_table(tmp_path / "t")
    table = dx.open_table(uri)
    with pytest.raises(dx.VersionNotFoundError):
        table.inspect.at_versions("count(*)", [99])
    with pytest.raises(inspect.InspectError, match="a version is an int"):
        table.inspect.at_versions("count(*)", ["1"])
    with pytest.raises(inspect.InspectError, match=r"deltaexplore\.spark\.at_versions"):
        table.inspect.at_versions("count(*)", [1], engine="spark")
    with pytest.raises(viz.VizError):
        viz.at_versions_chart(table)
