"""Statistics of variant columns ("Statistics for Variant Columns"): per-path bounds in the file
stats, z85-decoded and shown as JSON, never taken for plain bounds of the column."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from helpers import variant_stats_table

import deltaexplore as dx
from deltaexplore.core.protocol.predicates import PredicateError

LOW = {"$['a']": "min-string", "$['b']['c']": 1}
HIGH = {"$['a']": "variant", "$['b']['c']": 100}


def test_variant_bounds_are_json_objects_of_paths(tmp_path):
    snap = variant_stats_table(tmp_path / "t").snapshot()
    stats = snap.file_stats()
    assert "min.v" not in stats.column_names and "max.v" not in stats.column_names
    row = stats.to_pylist()[0]
    assert json.loads(row["variant_min.v"]) == LOW and json.loads(row["variant_max.v"]) == HIGH
    assert row["null_count.v"] == 1 and (row["min.n"], row["max.n"]) == (1, 3)
    only_v = snap.file_stats("v")
    assert only_v.column_names == ["path", "num_records", "tight_bounds", "variant_min.v", "variant_max.v", "null_count.v"]
    assert "variant_min.v" not in snap.file_stats(["n"]).column_names


def test_variant_bounds_skip_nothing(tmp_path):
    """Path bounds are no bounds of the column: a filter on the variant column itself cannot be
    written (typed error), its null count is the column's and the other columns still skip."""
    snap = variant_stats_table(tmp_path / "t").snapshot()
    assert snap.scan(where="n > 5").explain()["stats_pruned"] == 1
    nulls = snap.scan(where="v is null")
    assert nulls.explain()["selected_files"] == 1 and nulls.to_arrow().num_rows == 1
    with pytest.raises(PredicateError):
        snap.scan(where="v = 'variant'").to_arrow()


def test_malformed_variant_bound_is_null(tmp_path):
    """A bound whose z85 text does not decode (wrong length, bad bytes) bounds nothing."""
    table = variant_stats_table(tmp_path / "t")
    log = tmp_path / "t" / "_delta_log" / f"{0:020d}.json"
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    for a in lines:
        if "add" in a:
            stats = json.loads(a["add"]["stats"])
            stats["minValues"]["v"] = "abc"  # not a multiple of 5
            stats["maxValues"]["v"] = "00000"  # four zero bytes: no valid metadata
            a["add"]["stats"] = json.dumps(stats)
    log.write_text("\n".join(json.dumps(a) for a in lines) + "\n")
    row = dx.open_table(table.uri).snapshot().file_stats("v").to_pylist()[0]
    assert row["variant_min.v"] is None and row["variant_max.v"] is None and row["null_count.v"] == 1


def test_corpus_variant_stats(corpus):
    """Databricks' shredded table: its one path (`$`, the value itself) bounded by 0."""
    root = corpus / "delta-spark" / "variant-stats-state-reconstruction"
    if not root.exists():
        pytest.skip("table not in corpus")
    stats = dx.open_table(str(root)).snapshot().file_stats()
    assert stats.select(["variant_min.v", "variant_max.v", "null_count.v"]).to_pylist() == [
        {"variant_min.v": '{"$":0}', "variant_max.v": '{"$":0}', "null_count.v": 0}
    ]
    assert stats.schema.field("variant_min.v").type == pa.string()
