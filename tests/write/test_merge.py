"""MERGE (local): Delta's semantics (clause order, conditions, multiple matches, null keys),
deletion vectors or rewrites, change data, the rules of written rows (constraints, generated and
identity columns, row ids), schema evolution, pruning, conflicts, dry runs, typed errors, and the
commit as history shows it. The comparison with delta-rs is in `test_merge_deltars.py`."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from helpers import commit_info, metadata, protocol, write_commit

import deltaexplore as dx
from deltaexplore.core.operations import (
    MergeClause,
    delete,
    merge,
    plan_merge,
    when_matched_delete,
    when_matched_update,
    when_matched_update_all,
    when_not_matched_by_source_delete,
    when_not_matched_by_source_update,
    when_not_matched_insert,
    when_not_matched_insert_all,
    write_table,
)
from deltaexplore.core.write.transaction import Transaction

DV = {"delta.enableDeletionVectors": "true"}
CDF = {"delta.enableChangeDataFeed": "true"}
ON = "source.key = target.key"


def kv(pairs: list[tuple[int | None, int]]) -> pa.Table:
    return pa.table({"key": pa.array([k for k, _ in pairs], pa.int64()), "value": pa.array([v for _, v in pairs], pa.int64())})


def table_of(root: Path, pairs: list[tuple[int | None, int]], **kw) -> str:
    write_table(str(root), kv(pairs), **kw)
    return str(root)


def content(root: str) -> list[tuple]:
    got = dx.open_table(root).snapshot().to_arrow().to_pylist()
    return sorted((tuple(r.values()) for r in got), key=lambda row: tuple((v is None, v) for v in row))


def one(metrics: pa.Table) -> dict:
    assert metrics.num_rows == 1
    return metrics.to_pylist()[0]


# -- Delta's semantics (MergeIntoSuiteBase's cases) --------------------------------------------------


@pytest.mark.parametrize("conf", [{}, DV], ids=["rewrite", "dv"])
def test_clause_order_and_conditions(tmp_path, conf):
    # conditional update + conditional delete: the first clause whose condition holds wins
    root = table_of(tmp_path / "a", [(1, 1), (2, 2), (3, 3), (4, 4)], configuration=conf)
    src = kv([(0, 0), (1, 10), (2, 20), (3, 30)])
    clauses = [
        when_matched_update({"key": "source.key", "value": "source.value"}, condition="source.key <> 1"),
        when_matched_delete(condition="source.key <> 2"),
    ]
    m = one(merge(root, src, ON, clauses))
    assert content(root) == [(2, 20), (3, 30), (4, 4)]
    assert (m["num_target_rows_updated"], m["num_target_rows_deleted"], m["num_target_rows_inserted"]) == (2, 1, 0)
    # the other order: delete first
    root = table_of(tmp_path / "b", [(1, 1), (2, 2), (3, 3), (4, 4)], configuration=conf)
    merge(root, src, ON, clauses[::-1])
    assert content(root) == [(2, 20), (4, 4)]


def test_complex_on_condition_with_target_and_source_only_terms(tmp_path):
    root = table_of(tmp_path / "t", [(-1, -1), (1, 1), (2, 2), (3, 3), (5, 5)])
    src = kv([(-1, -10), (0, 0), (1, 10), (2, 20), (3, 30), (4, 40), (5, 50)])
    merge(
        root,
        src,
        "s.key = t.key AND t.value > 0 AND s.key < 5",
        [
            when_matched_update({"key": "s.key", "value": "s.value"}, condition="s.key < 2"),
            when_matched_delete(condition="s.key < 3"),
            when_not_matched_insert({"key": "s.key", "value": "s.value"}, condition="s.key > 1"),
        ],
        source_alias="s",
        target_alias="t",
    )
    assert content(root) == [(-1, -1), (1, 10), (3, 3), (4, 40), (5, 5), (5, 50)]


@pytest.mark.parametrize(
    "clauses",
    [
        [when_matched_update({"value": "source.value"})],
        [when_matched_update({"value": "source.value"}, condition="source.value = 10")],
        [when_matched_delete(condition="source.value = 10")],
        [when_matched_update({"value": "source.value"}, condition="source.value = 20"), when_matched_delete()],
    ],
    ids=["update", "conditional-update", "conditional-delete", "update-and-delete"],
)
def test_a_target_row_matched_twice_is_an_error_when_a_matched_clause_is_ambiguous(tmp_path, clauses):
    root = table_of(tmp_path / "t", [(1, 1), (2, 2)])
    src = kv([(0, 0), (1, 10), (1, 11), (2, 20)])
    with pytest.raises(dx.MultipleMatchError, match=r"1 target row\(s\) matched more than one source row.*key=1"):
        merge(root, src, ON, clauses)
    assert dx.open_table(root).latest_version() == 0
    assert isinstance(dx.MultipleMatchError("x"), dx.WriteRefusedError)


@pytest.mark.parametrize("conf", [{}, {**DV, **CDF}], ids=["rewrite", "dv-cdf"])
def test_multiple_matches_are_fine_for_one_unconditional_delete_and_for_inserts(tmp_path, conf):
    root = table_of(tmp_path / "a", [(1, 1), (2, 2)], configuration=conf)
    m = one(merge(root, kv([(0, 0), (1, 10), (1, 100), (3, 30)]), ON, [when_matched_delete()]))
    assert content(root) == [(2, 2)] and m["num_target_rows_deleted"] == 1
    if conf:  # one delete row per target row, however many source rows matched it
        changes = dx.open_table(root).changes(1)
        assert changes.select(["key", "_change_type"]).to_pylist() == [{"key": 1, "_change_type": "delete"}]
    root = table_of(tmp_path / "b", [(1, 1), (2, 2)], configuration=conf)
    merge(root, kv([(1, 10), (1, 100), (3, 30), (3, 300)]), ON, [when_matched_delete(), when_not_matched_insert_all()])
    assert content(root) == [(2, 2), (3, 30), (3, 300)]
    root = table_of(tmp_path / "c", [(1, 1), (2, 2)], configuration=conf)
    merge(root, kv([(0, 0), (1, 10), (1, 100), (3, 30), (3, 300)]), ON, [when_not_matched_insert_all()])
    assert content(root) == [(0, 0), (1, 1), (2, 2), (3, 30), (3, 300)]


def test_a_target_row_matched_twice_stays_once_without_matched_clauses(tmp_path):
    # delta-spark refuses this MERGE; delta-rs 1.6 copies the twice-matched row twice when it
    # rewrites its file. Without a WHEN MATCHED clause nothing is ambiguous: the row stays as it is.
    root = table_of(tmp_path / "t", [(1, 1), (2, 2), (3, 3)])
    m = one(merge(root, kv([(1, 10), (1, 11)]), ON, [when_not_matched_by_source_update({"value": "target.value * 100"})]))
    assert content(root) == [(1, 1), (2, 200), (3, 300)]
    assert m["num_target_rows_updated"] == 2 and m["num_target_rows_copied"] == 1


def test_null_keys_never_match(tmp_path):
    root = table_of(tmp_path / "t", [(None, 1), (1, 1)])
    src = kv([(None, 10), (1, 10)])
    m = one(
        merge(
            root,
            src,
            "target.key = source.key",  # either side first
            [
                when_matched_update({"value": "source.value"}),
                when_not_matched_insert_all(),
                when_not_matched_by_source_update({"value": "target.value + 1000"}),
            ],
        )
    )
    assert content(root) == [(1, 10), (None, 10), (None, 1001)]
    assert (m["num_target_rows_matched_updated"], m["num_target_rows_inserted"]) == (1, 1)
    assert m["num_target_rows_not_matched_by_source_updated"] == 1


def test_a_merge_that_changes_nothing_commits_nothing(tmp_path):
    root = table_of(tmp_path / "t", [(1, 1), (2, 2)])
    m = one(merge(root, kv([(1, 10)]), ON, [when_matched_update({"value": "source.value"}, condition="source.value > 100")]))
    assert m["version"] is None and m["num_source_rows"] == 1 and m["num_target_rows_updated"] == 0
    empty = kv([])
    m = one(merge(root, empty, ON, [when_matched_delete(), when_not_matched_insert_all()]))
    assert m["version"] is None and m["num_source_rows"] == 0
    assert m["num_target_files_after_skipping"] == 0  # no source key: no target file can match
    assert dx.open_table(root).latest_version() == 0
    # into a table without files
    empty_table = str(tmp_path / "e")
    write_table(empty_table, kv([]))
    m = one(merge(empty_table, kv([(1, 1)]), ON, [when_matched_delete(), when_not_matched_insert_all()]))
    assert m["version"] == 1 and content(empty_table) == [(1, 1)]


def test_an_empty_source_deletes_every_row_not_matched_by_source(tmp_path):
    root = table_of(tmp_path / "t", [(1, 1), (2, 2), (3, 3)], configuration=DV)
    m = one(merge(root, kv([]), ON, [when_not_matched_by_source_delete(condition="target.value > 1")]))
    assert content(root) == [(1, 1)]
    assert m["num_target_rows_not_matched_by_source_deleted"] == 2 and m["num_target_deletion_vectors_added"] == 1


def test_insert_values_and_columns_not_given(tmp_path):
    root = str(tmp_path / "t")
    write_table(root, pa.table({"key": pa.array([1], pa.int64()), "value": pa.array([1], pa.int64()), "note": ["x"]}))
    merge(root, kv([(2, 20)]), ON, [when_not_matched_insert({"key": "source.key", "value": "source.value * 2"})])
    assert content(root) == [(1, 1, "x"), (2, 40, None)]


def test_source_as_other_arrow_data_and_on_as_column_names(tmp_path):
    root = table_of(tmp_path / "t", [(1, 1)])
    batches = kv([(1, 5), (2, 6)]).to_batches()
    merge(root, pa.RecordBatchReader.from_batches(batches[0].schema, batches), ON, [when_matched_update_all()])
    merge(root, {"key": [3], "value": [7]}, ["key"], [when_not_matched_insert_all()])
    merge(root, {"KEY": [3], "Value": [8]}, ["key"], [when_matched_update_all()])  # names match case-insensitively
    assert content(root) == [(1, 5), (3, 8)]


# -- files: deletion vectors or rewrites, pruning ---------------------------------------------------


def test_deletion_vectors_mark_changed_rows_and_new_files_hold_updates_and_inserts(tmp_path):
    root = str(tmp_path / "t")
    write_table(root, kv([(i, i) for i in range(20)]), configuration=DV, max_rows_per_file=5)
    delete(root, "key = 0")  # a file with a DV before the MERGE
    files_before = {r["path"]: r for r in dx.open_table(root).snapshot().add_actions().to_pylist()}
    m = one(
        merge(
            root,
            kv([(1, 100), (6, 600), (7, 700), (99, 9900)]),
            ON,
            [when_matched_update_all(condition="source.key <> 7"), when_matched_delete(), when_not_matched_insert_all()],
        )
    )
    assert content(root) == sorted([(1, 100), (6, 600), (99, 9900)] + [(i, i) for i in range(2, 20) if i not in (6, 7)])
    assert m["num_target_rows_copied"] == 0 and m["num_target_files_added"] == 1
    # two files get a DV: one had one (updated), one had none (added); commitInfo counts replaced ones as both
    assert (m["num_target_deletion_vectors_added"], m["num_target_deletion_vectors_updated"]) == (2, 1)
    assert m["num_target_deletion_vectors_removed"] == 1 and m["num_target_files_removed"] == 0
    after = dx.open_table(root).snapshot().add_actions().to_pylist()
    kept = [r for r in after if r["path"] in files_before]
    assert len(kept) == 4 and sum(r["deletionVector"] is not None for r in kept) == 2


def test_rewrites_touch_only_files_with_changed_rows(tmp_path):
    root = str(tmp_path / "t")
    write_table(root, kv([(i, i) for i in range(20)]), max_rows_per_file=5)
    before = set(dx.open_table(root).snapshot().add_actions().column("path").to_pylist())
    # key 12 matches but its clause's condition does not hold: its file stays
    m = one(merge(root, kv([(1, 100), (12, 0)]), ON, [when_matched_update_all(condition="source.value > 0")]))
    after = set(dx.open_table(root).snapshot().add_actions().column("path").to_pylist())
    assert len(before - after) == 1 and len(after - before) == 1
    assert (m["num_target_files_removed"], m["num_target_rows_copied"], m["num_output_rows"]) == (1, 4, 5)
    assert m["num_target_bytes_removed"] > 0 and m["num_target_bytes_added"] > 0


def test_files_pruned_by_partition_values_and_key_ranges(tmp_path):
    root = str(tmp_path / "t")
    data = pa.table(
        {
            "part": pa.array([f"p{i % 4}" for i in range(40)]),
            "key": pa.array(range(40), pa.int64()),
            "value": pa.array(range(40), pa.int64()),
        }
    )
    write_table(root, data.sort_by("key"), partition_by=["part"], max_rows_per_file=5)
    src = pa.table({"part": ["p1", "p1"], "key": pa.array([1, 5], pa.int64()), "value": pa.array([-1, -5], pa.int64())})
    m = one(merge(root, src, "source.key = target.key AND source.part = target.part", [when_matched_update_all()]))
    assert m["num_target_files_before_skipping"] == 8
    assert m["num_target_files_after_skipping"] == 1  # partition p1, and of its files the one holding keys 1..5
    assert m["num_target_rows_updated"] == 2
    # a target-only term of ON prunes too
    m = one(merge(root, src, "source.key = target.key AND target.part = 'p2'", [when_matched_delete()]))
    assert m["num_target_files_after_skipping"] <= 1 and m["num_target_rows_deleted"] == 0
    # NOT MATCHED BY SOURCE needs every file
    m = one(merge(root, src, ON, [when_not_matched_by_source_delete(condition="target.key > 100")], dry_run=True))
    assert m["num_target_files_after_skipping"] == m["num_target_files_before_skipping"] == 8


def test_dry_run_writes_nothing(tmp_path):
    root = tmp_path / "t"
    write_table(str(root), kv([(1, 1), (2, 2)]), configuration={**DV, **CDF})
    files = sorted(p.relative_to(root) for p in root.rglob("*") if p.is_file())
    m = one(
        merge(str(root), kv([(1, 10), (3, 30)]), ON, [when_matched_update_all(), when_not_matched_insert_all()], dry_run=True)
    )
    assert m["dry_run"] and m["version"] is None
    assert (m["num_target_rows_updated"], m["num_target_rows_inserted"], m["num_target_deletion_vectors_added"]) == (1, 1, 1)
    assert sorted(p.relative_to(root) for p in root.rglob("*") if p.is_file()) == files


# -- change data -----------------------------------------------------------------------------------


@pytest.mark.parametrize("conf", [CDF, {**CDF, **DV}], ids=["rewrite", "dv"])
def test_change_data(tmp_path, conf):
    root = table_of(tmp_path / "t", [(1, 1), (2, 2), (3, 3), (4, 4)], configuration=conf)
    m = one(
        merge(
            root,
            kv([(1, 10), (2, 20), (5, 50)]),
            ON,
            [
                when_matched_update({"value": "source.value"}, condition="source.key = 1"),
                when_matched_delete(),
                when_not_matched_insert_all(),
                when_not_matched_by_source_update({"value": "target.value * 100"}, condition="target.key = 3"),
            ],
        )
    )
    changes = dx.open_table(root).changes(1)
    got = sorted((r["key"], r["value"], r["_change_type"], r["_commit_version"]) for r in changes.to_pylist())
    assert got == [
        (1, 1, "update_preimage", 1),
        (1, 10, "update_postimage", 1),
        (2, 2, "delete", 1),
        (3, 3, "update_preimage", 1),
        (3, 300, "update_postimage", 1),
        (5, 50, "insert", 1),
    ]
    assert m["num_target_change_files_added"] == 1
    # a MERGE that only inserts needs no change data files: its new files are the inserts
    m = one(merge(root, kv([(9, 90)]), ON, [when_not_matched_insert_all()]))
    assert m["num_target_change_files_added"] == 0
    assert [(r["key"], r["_change_type"]) for r in dx.open_table(root).changes(2).to_pylist()] == [(9, "insert")]


# -- rules of written rows -----------------------------------------------------------------------------


def test_constraints_checked_on_updated_and_inserted_rows(tmp_path):
    root = table_of(tmp_path / "t", [(1, 1)], configuration={"delta.constraints.small": "value < 100"})
    with pytest.raises(dx.WriteRefusedError, match="CHECK constraint 'small'"):
        merge(root, kv([(1, 500)]), ON, [when_matched_update_all()])
    with pytest.raises(dx.WriteRefusedError, match="CHECK constraint 'small'"):
        merge(root, kv([(2, 500)]), ON, [when_not_matched_insert_all()])
    assert dx.open_table(root).latest_version() == 0


def test_generated_and_identity_columns(tmp_path):
    root = tmp_path / "t"
    ident = {"delta.identity.start": 10, "delta.identity.step": 5, "delta.identity.allowExplicitInsert": False}
    schema = {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": ident},
            {"name": "key", "type": "long", "nullable": True, "metadata": {}},
            {"name": "value", "type": "long", "nullable": True, "metadata": {}},
            {"name": "double", "type": "long", "nullable": True, "metadata": {"delta.generationExpression": "value * 2"}},
        ],
    }
    write_commit(root, 0, [commit_info(), protocol(1, 6), metadata(schema)])
    write_table(str(root), kv([(1, 1), (2, 2)]))
    merge(str(root), kv([(2, 20), (3, 30)]), ON, [when_matched_update_all(), when_not_matched_insert_all()])
    snap = dx.open_table(str(root)).snapshot()
    got = sorted((r["key"], r["id"], r["value"], r["double"]) for r in snap.to_arrow().to_pylist())
    assert got == [(1, 10, 1, 2), (2, 15, 20, 40), (3, 20, 30, 60)]  # id kept on update, generated on insert
    assert snap.schema.field("id").metadata["delta.identity.highWaterMark"] == 20
    with pytest.raises(dx.WriteRefusedError, match="generated"):
        merge(str(root), kv([(2, 1)]), ON, [when_matched_update({"double": "1"})])
    with pytest.raises(dx.WriteRefusedError, match="GENERATED ALWAYS"):
        merge(str(root), kv([(9, 1)]), ON, [when_not_matched_insert({"id": "source.key", "key": "source.key"})])


@pytest.mark.parametrize("conf", [{}, DV], ids=["rewrite", "dv"])
def test_row_tracking_keeps_row_ids_of_updated_and_copied_rows(tmp_path, conf):
    root = table_of(tmp_path / "t", [(1, 1), (2, 2), (3, 3)], configuration={**conf, "delta.enableRowTracking": "true"})
    before = {r["key"]: r["_row_id"] for r in dx.open_table(root).snapshot().to_arrow(row_tracking=True).to_pylist()}
    merge(root, kv([(2, 20), (4, 40)]), ON, [when_matched_update_all(), when_not_matched_insert_all()])
    after = {
        r["key"]: (r["_row_id"], r["_row_commit_version"])
        for r in dx.open_table(root).snapshot().to_arrow(row_tracking=True).to_pylist()
    }
    assert after[1] == (before[1], 0) and after[3] == (before[3], 0)  # copied (or untouched) rows
    assert after[2] == (before[2], 1)  # updated: same id, new version
    assert after[4][0] not in before.values() and after[4][1] == 1  # inserted: a fresh id


def test_column_mapping_table(tmp_path):
    root = table_of(tmp_path / "t", [(1, 1), (2, 2)], configuration={"delta.columnMapping.mode": "name", **DV})
    merge(root, kv([(2, 20), (3, 30)]), ON, [when_matched_update_all(), when_not_matched_insert_all()])
    assert content(root) == [(1, 1), (2, 20), (3, 30)]


# -- schema evolution ---------------------------------------------------------------------------------


def test_schema_evolution_is_opt_in(tmp_path):
    root = table_of(tmp_path / "t", [(1, 1), (2, 2)])
    src = pa.table({"key": pa.array([2, 3], pa.int64()), "value": pa.array([20, 30], pa.int64()), "extra": ["b", "c"]})
    merge(root, src, ON, [when_matched_update_all(), when_not_matched_insert_all()])
    assert dx.open_table(root).snapshot().schema.names == ["key", "value"]  # new source columns are ignored
    assert content(root) == [(1, 1), (2, 20), (3, 30)]
    src = src.set_column(2, "extra", pa.array(["B", "C"]))
    m = one(merge(root, src.slice(0, 1), ON, [when_matched_update_all()], schema_mode="merge"))
    assert m["version"] == 2
    snap = dx.open_table(root).snapshot()
    assert snap.schema.names == ["key", "value", "extra"]
    assert content(root) == [(1, 1, None), (2, 20, "B"), (3, 30, None)]
    with pytest.raises(dx.WriteRefusedError, match="not in the table"):
        merge(root, src, ON, [when_matched_update({"nope": "source.value"})])


# -- errors ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("on", "clauses", "error", "match"),
    [
        ("source.nope = target.key", [when_matched_delete()], dx.WriteRefusedError, "source has no column 'nope'"),
        ("key = key", [when_matched_delete()], dx.WriteRefusedError, "ambiguous"),
        (ON, [when_matched_delete(condition="target.value >>> 1")], dx.WriteRefusedError, "cannot evaluate"),
        (ON, [when_matched_delete(condition="target.value + 1")], dx.WriteRefusedError, "not a condition"),
        (ON, [when_not_matched_insert({"key": "target.key"})], dx.WriteRefusedError, "may only use source columns"),
        (ON, [when_not_matched_by_source_delete(condition="source.value > 1")], dx.WriteRefusedError, "only use target"),
        (ON, [when_matched_delete(), when_matched_update_all()], dx.WriteRefusedError, "only the last WHEN MATCHED"),
        (ON, [], dx.InvalidArgumentError, "at least one WHEN clause"),
        (ON, ["delete"], dx.InvalidArgumentError, "list of MergeClause"),
        (ON, [when_matched_update({"value": "nosuch(1)"})], dx.WriteRefusedError, "cannot evaluate"),
        (42, [when_matched_delete()], dx.InvalidArgumentError, "ON condition"),
    ],
    ids=[
        "unknown-column",
        "ambiguous-column",
        "bad-sql",
        "not-boolean",
        "insert-uses-target",
        "by-source-uses-source",
        "non-last-unconditional",
        "no-clause",
        "not-a-clause",
        "unknown-function",
        "on-not-text",
    ],
)
def test_bad_input_is_a_typed_error(tmp_path, on, clauses, error, match):
    root = table_of(tmp_path / "t", [(1, 1)])
    with pytest.raises(error, match=match):
        merge(root, kv([(1, 2)]), on, clauses)
    assert dx.open_table(root).latest_version() == 0


def test_bad_sources_and_arguments(tmp_path):
    root = table_of(tmp_path / "t", [(1, 1)])
    with pytest.raises(dx.InvalidArgumentError, match="must be Arrow data"):
        merge(root, [(1, 2)], ON, [when_matched_delete()])
    with pytest.raises(dx.InvalidArgumentError, match="must differ"):
        merge(root, kv([(1, 2)]), ON, [when_matched_delete()], source_alias="t", target_alias="T")
    with pytest.raises(dx.InvalidArgumentError, match="kind"):
        MergeClause("sometimes", "update")
    with pytest.raises(dx.InvalidArgumentError, match="can insert"):
        MergeClause("not_matched", "delete")
    not_null = tmp_path / "nn"
    schema = {
        "type": "struct",
        "fields": [
            {"name": "key", "type": "long", "nullable": True, "metadata": {}},
            {"name": "must", "type": "string", "nullable": False, "metadata": {}},
        ],
    }
    write_commit(not_null, 0, [commit_info(), protocol(1, 2), metadata(schema)])
    with pytest.raises(dx.WriteRefusedError, match="'must' is NOT NULL but the source has no column"):
        merge(str(not_null), kv([(1, 2)]), ON, [when_not_matched_insert_all()])
    append_only = table_of(tmp_path / "ao", [(1, 1)], configuration={"delta.appendOnly": "true"})
    with pytest.raises(dx.WriteRefusedError, match="append-only"):
        merge(append_only, kv([(1, 2)]), ON, [when_matched_delete()])
    merge(append_only, kv([(2, 2)]), ON, [when_not_matched_insert_all()])  # inserting is fine
    assert content(append_only) == [(1, 1), (2, 2)]


def test_the_plan_resolves_sql_for_both_engines(tmp_path):
    root = table_of(tmp_path / "t", [(1, 1)])
    snap = dx.open_table(root).snapshot()
    plan = plan_merge(
        snap,
        pa.schema([("key", pa.int64()), ("value", pa.int64()), ("flag", pa.bool_())]),
        "s.key = t.key + 1 AND t.value BETWEEN 0 AND 10 AND flag",
        [when_matched_update({"value": "s.value + t.value"}, condition="t.value < s.value"), when_not_matched_insert_all()],
        source_alias="s",
        target_alias="t",
    )
    (key,) = plan.condition.keys
    assert key.source.sql == "`source`.`key`" and key.target.sql == "`target`.`key` + 1" and key.target_column is None
    assert plan.condition.target_filter.sql == "`target`.`value` BETWEEN 0 AND 10"
    assert plan.condition.source_filter.polars == "`source.flag`"
    assert plan.condition.target_predicate is not None  # the BETWEEN prunes files
    update = plan.clauses[0]
    assert update.values["value"].sql == "`source`.`value` + `target`.`value`"
    assert update.values["key"].column == ("target", "key")  # not set: kept
    assert plan.case_sql("matched") == "CASE WHEN (`target`.`value` < `source`.`value`) THEN 0 ELSE -1 END"
    params = plan.parameters()
    assert json.loads(params["matchedPredicates"]) == [{"predicate": "t.value < s.value", "actionType": "update"}]
    assert json.loads(params["notMatchedPredicates"]) == [{"actionType": "insert"}]
    assert json.loads(params["predicate"]) == ["s.key = t.key + 1 AND t.value BETWEEN 0 AND 10 AND flag"]


# -- conflicts and history ---------------------------------------------------------------------------


def _concurrently(monkeypatch: pytest.MonkeyPatch, winner) -> None:
    """Run `winner` (another writer's commit) just before the next commit."""
    original = Transaction.commit

    def commit(self: Transaction, **kw: object) -> object:
        monkeypatch.setattr(Transaction, "commit", original)
        winner()
        return original(self, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(Transaction, "commit", commit)


@pytest.mark.parametrize("conf", [{}, DV, {**DV, **CDF}], ids=["rewrite", "dv", "dv-cdf"])
def test_a_concurrent_change_to_the_rows_read_conflicts_and_leaves_nothing(tmp_path, monkeypatch, conf):
    root = tmp_path / "t"
    write_table(str(root), kv([(i, i) for i in range(10)]), configuration=conf, max_rows_per_file=5)
    _concurrently(monkeypatch, lambda: delete(str(root), "key = 1", use_deletion_vectors=False))
    with pytest.raises(dx.CommitConflictError):
        merge(str(root), kv([(2, 20), (50, 5)]), ON, [when_matched_update_all(), when_not_matched_insert_all()])
    t = dx.open_table(str(root))
    assert t.latest_version() == 1 and t.history(1).to_pylist()[0]["operation"] == "DELETE"
    referenced = set()
    for v in t.versions():
        for kind in ("add", "remove", "cdc"):
            referenced |= set(t.snapshot(v).json_lines.file_actions(kind).column("path").to_pylist())
    written = {str(p.relative_to(root)) for p in root.rglob("*.parquet")}
    assert written <= referenced  # the loser's files are gone
    assert not list(root.glob("deletion_vector_*.bin"))


def test_a_concurrent_append_elsewhere_does_not_conflict(tmp_path, monkeypatch):
    root = str(tmp_path / "t")
    write_table(root, kv([(i, i) for i in range(10)]))
    _concurrently(monkeypatch, lambda: write_table(root, kv([(1000, 0)])))  # outside the keys' range
    m = one(merge(root, kv([(2, 20), (3, 30)]), ON, [when_matched_update_all()]))
    assert m["version"] == 2 and (1000, 0) in content(root) and (2, 20) in content(root)


def test_history_and_inspection_show_the_merge(tmp_path):
    root = table_of(tmp_path / "t", [(1, 1), (2, 2)])
    m = one(merge(root, kv([(1, 10), (3, 30)]), ON, [when_matched_update_all(), when_not_matched_insert_all()]))
    t = dx.open_table(root)
    row = t.history(1).to_pylist()[0]
    assert row["operation"] == "MERGE"
    metrics = dict(row["metrics"])
    assert metrics["numSourceRows"] == "2" and metrics["numTargetRowsInserted"] == "1"
    assert metrics["numTargetRowsMatchedUpdated"] == "1" and metrics["numTargetRowsCopied"] == "1"
    assert metrics["numOutputRows"] == "3" and metrics["numTargetFilesAdded"] == str(m["num_target_files_added"])
    params = dict(row["parameters"])
    assert json.loads(params["predicate"]) == [ON]
    infos = t.inspect.commit_infos()
    assert infos.to_pylist()[0]["operation"] == "MERGE" and dict(infos.to_pylist()[0]["metrics"]) == metrics
    commits = t.inspect.commits(1, 1).to_pylist()
    info = [c for c in commits if c["action"] == "commitInfo"]
    assert len(info) == 1 and info[0]["operation"] == "MERGE" and len(commits) > 1
    assert json.loads(info[0]["raw"])["commitInfo"]["operationMetrics"] == metrics


def test_merge_through_storage(location):
    uri, options = location
    write_table(uri, kv([(1, 1), (2, 2)]), configuration=DV, storage_options=options)
    m = one(
        merge(
            uri, kv([(2, 20), (3, 30)]), ON, [when_matched_update_all(), when_not_matched_insert_all()], storage_options=options
        )
    )
    assert m["version"] == 1
    got = sorted(tuple(r.values()) for r in dx.open_table(uri, options).snapshot().to_arrow().to_pylist())
    assert got == [(1, 1), (2, 20), (3, 30)]


def test_new_partition_values_with_control_characters_are_refused(tmp_path):
    root = str(tmp_path / "t")
    write_table(root, pa.table({"key": pa.array([1], pa.int64()), "part": ["a"]}), partition_by=["part"])
    src = pa.table({"key": pa.array([1, 2], pa.int64()), "part": ["a", "b\x01"]})
    with pytest.raises(dx.WriteRefusedError, match="control character"):
        merge(root, src, ON, [when_matched_update_all(), when_not_matched_insert_all()])
    assert dx.open_table(root).latest_version() == 0
    assert not [p for p in Path(root).rglob("*.parquet") if "b" in p.parent.name]
