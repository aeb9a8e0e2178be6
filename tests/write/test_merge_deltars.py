"""MERGE checked against delta-rs (`DeltaTable.merge`) on generated inputs.

Each case is a random target table (some files, some null and duplicate keys, deletion vectors
from an earlier DELETE when the table enables them) copied to a second directory, a random
source, and random clauses of every kind (matched update / update all / delete, not matched
insert / insert all, not matched by source update / delete; several of a kind, with
conditions). Our `merge` runs on one copy, delta-rs's on the other (in a child process: see
`other_engines.py`); the resulting rows, the change data of the MERGE's version, and the
metrics both define must be equal. Seeds are fixed.
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import shutil
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from other_engines import run, table_rows

import deltaexplore as dx
from deltaexplore.core.operations import MergeClause, delete, merge, write_table

pytestmark = pytest.mark.xdist_group("interop")
if importlib.util.find_spec("deltalake") is None:  # never imported here: see other_engines.py
    pytest.skip("deltalake is not installed", allow_module_level=True)

CASES_PER_LAYOUT = 8
MATCHED_CONDITIONS = [
    "source.value > target.value",
    "target.value % 3 = 0",
    "source.name = 'n1'",
    "source.value < 50",
    "source.day >= target.day",
    "source.ts < target.ts",
    "source.fresh",
]
MATCHED_SETS: list[dict[str, str] | None] = [
    {"value": "source.value + target.value"},
    {"value": "target.value * 2", "name": "source.name"},
    {"amount": "source.amount + target.amount", "day": "source.day", "ts": "source.ts"},
    None,  # UPDATE SET *
]
INSERT_CONDITIONS = ["source.value % 2 = 0", "source.value > 20", "source.name <> 'n2'", "source.amount > 25", "NOT source.fresh"]
INSERT_VALUES: list[dict[str, str] | None] = [
    {"id": "source.id", "part": "source.part", "value": "source.value * 10", "name": "source.name"},
    {"id": "source.id", "part": "'c'", "value": "source.value", "name": "'new'"},
    None,  # INSERT *
]
BY_SOURCE_CONDITIONS = ["target.value > 30", "target.value % 2 = 1", "target.name = 'n0'", "target.day < '2024-01-10'"]
BY_SOURCE_SETS = [{"value": "target.value - 1"}, {"name": "'gone'"}]


def _clauses(rng: np.random.Generator) -> list[MergeClause]:
    """Random clauses: 0-2 of each kind (only the last of a kind may have no condition)."""
    out: list[MergeClause] = []
    while not out:
        for kind in ("matched", "not_matched", "not_matched_by_source"):
            n = int(rng.choice([0, 1, 2], p=[0.3, 0.45, 0.25]))
            for k in range(n):
                conditional = k < n - 1 or rng.random() < 0.5
                if kind == "matched":
                    action = "update" if rng.random() < 0.6 else "delete"
                    cond = str(rng.choice(MATCHED_CONDITIONS)) if conditional else None
                    values = MATCHED_SETS[int(rng.integers(len(MATCHED_SETS)))] if action == "update" else None
                elif kind == "not_matched":
                    action = "insert"
                    cond = str(rng.choice(INSERT_CONDITIONS)) if conditional else None
                    values = INSERT_VALUES[int(rng.integers(len(INSERT_VALUES)))]
                else:
                    action = "update" if rng.random() < 0.5 else "delete"
                    cond = str(rng.choice(BY_SOURCE_CONDITIONS)) if conditional else None
                    values = BY_SOURCE_SETS[int(rng.integers(len(BY_SOURCE_SETS)))] if action == "update" else None
                out.append(MergeClause(kind, action, cond, values))
    return out


def _rows(rng: np.random.Generator, ids: list[int | None]) -> pa.Table:
    n = len(ids)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "part": pa.array([str(rng.choice(["a", "b", "c"])) for _ in range(n)], pa.string()),
            "value": pa.array(rng.integers(0, 100, n), pa.int64()),
            "name": pa.array([f"n{int(v)}" for v in rng.integers(0, 4, n)], pa.string()),
            "day": pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=int(d)) for d in rng.integers(0, 30, n)], pa.date32()),
            "amount": pa.array([Decimal(int(c)) / 4 for c in rng.integers(0, 200, n)], pa.decimal128(10, 2)),
            "ts": pa.array(
                [dt.datetime(2024, 1, 1, tzinfo=dt.UTC) + dt.timedelta(minutes=int(m)) for m in rng.integers(0, 5000, n)],
                pa.timestamp("us", tz="UTC"),
            ),
        }
    )


#: the first case of every layout: every clause kind and action, several of a kind
EVERY_CLAUSE = [
    MergeClause("matched", "update", "source.value > target.value", MATCHED_SETS[0]),
    MergeClause("matched", "delete"),
    MergeClause("not_matched", "insert", "source.value % 2 = 0", INSERT_VALUES[0]),
    MergeClause("not_matched", "insert"),
    MergeClause("not_matched_by_source", "update", "target.value > 30", BY_SOURCE_SETS[0]),
    MergeClause("not_matched_by_source", "delete"),
]


def _case(rng: np.random.Generator, *, first: bool = False) -> tuple[pa.Table, pa.Table, list[MergeClause]]:
    clauses = EVERY_CLAUSE if first else _clauses(rng)
    matched = [c for c in clauses if c.kind == "matched"]
    # several source rows per key where both engines agree on the meaning: an insert-only MERGE, or
    # one unconditional matched DELETE (with clauses of the other kinds, delta-rs 1.6 copies a
    # target row once per match: see test_merge.py)
    insert_only = all(c.kind == "not_matched" for c in clauses)
    duplicates_ok = insert_only or (len(matched) == 1 and matched[0].action == "delete" and matched[0].condition is None)
    target_ids: list[int | None] = [int(i) for i in rng.choice(np.arange(60), int(rng.integers(15, 50)), replace=False)]
    target_ids += [None, None, target_ids[0]]  # null keys never match; a duplicate target key is fine
    n_source = int(rng.integers(0, 30)) if rng.random() > 0.1 or first else 0
    n_source = max(n_source, 15) if first else n_source
    source_ids: list[int | None] = [int(i) for i in rng.choice(np.arange(-10, 80), n_source, replace=duplicates_ok)]
    source_ids += [None] if n_source else []
    source = _rows(rng, source_ids)
    source = source.append_column("fresh", pa.array(rng.random(source.num_rows) < 0.5))  # a column only the source has
    return _rows(rng, target_ids), source, clauses


def _spec(clause: MergeClause) -> dict[str, Any]:
    assignments = dict(clause.assignments) if clause.assignments is not None else None
    return {"kind": clause.kind, "action": clause.action, "condition": clause.condition, "assignments": assignments}


@pytest.mark.parametrize("partitioned", [False, True], ids=["flat", "partitioned"])
@pytest.mark.parametrize("cdf", [False, True], ids=["no-cdf", "cdf"])
@pytest.mark.parametrize("dvs", [False, True], ids=["rewrite", "dv"])
def test_merge_matches_delta_rs_on_generated_inputs(tmp_path: Path, dvs: bool, cdf: bool, partitioned: bool) -> None:
    seed = 1000 + 100 * dvs + 10 * cdf + partitioned
    rng = np.random.default_rng(seed)
    conf = {"delta.enableDeletionVectors": str(dvs).lower(), "delta.enableChangeDataFeed": str(cdf).lower()}
    cases: list[dict[str, Any]] = []
    mine: list[dict[str, Any]] = []
    for k in range(CASES_PER_LAYOUT):
        target, source, clauses = _case(rng, first=k == 0)
        ours_root, theirs_root = tmp_path / f"ours{k}", tmp_path / f"theirs{k}"
        write_table(
            str(ours_root), target, partition_by=["part"] if partitioned else None, configuration=conf, max_rows_per_file=12
        )
        if dvs:
            delete(str(ours_root), "value >= 90")  # files with deletion vectors before the MERGE
        shutil.copytree(ours_root, theirs_root)
        source_path = tmp_path / f"source{k}.parquet"
        pq.write_table(source, source_path)
        on = "source.id = target.id" + (" AND source.part = target.part" if partitioned and k % 2 else "")
        on += {0: "", 1: "", 2: " AND target.value < 95", 3: " AND source.value >= 10"}[k % 4]  # one-side terms
        before = dx.open_table(str(ours_root)).latest_version()
        result = merge(str(ours_root), source, on, clauses).to_pylist()[0]
        table = dx.open_table(str(ours_root))
        got: dict[str, Any] = {"rows": table_rows(table.snapshot().to_arrow()), "metrics": result}
        if cdf:
            changes = table.changes(before + 1) if table.latest_version() > before else None
            got["cdf"] = table_rows(changes.drop_columns(["_commit_version", "_commit_timestamp"])) if changes else []
        mine.append(got)
        cases.append(
            {
                "root": str(theirs_root),
                "source": str(source_path),
                "on": on,
                "clauses": [_spec(c) for c in clauses],
                "cdf": cdf,
                "what": [c.label for c in clauses],
            }
        )
    spec_path = tmp_path / "cases.json"
    spec_path.write_text(json.dumps(cases))
    theirs = run("merge-deltars", str(spec_path))
    for case, got, want in zip(cases, mine, theirs):
        label = f"{case['on']} {case['what']}"
        assert "error" not in want, f"{label}: delta-rs failed: {want.get('error')}"
        assert got["rows"] == want["rows"], label
        if cdf:
            assert got["cdf"] == want["cdf"], label
        m, w = got["metrics"], want["metrics"]
        for name in ("num_source_rows", "num_target_rows_inserted", "num_target_rows_updated", "num_target_rows_deleted"):
            assert m[name] == w[name], f"{label}: {name} {m[name]} != {w[name]}"
        if not dvs:  # delta-rs rewrites files (no DVs): copies and output rows agree only when we rewrite too
            assert m["num_target_rows_copied"] == w["num_target_rows_copied"], label
            assert m["num_output_rows"] == w["num_output_rows"], label
    # the generated cases cover every clause and change every way
    kinds = {(c["kind"], c["action"]) for case in cases for c in case["clauses"]}
    assert {kind for kind, _ in kinds} == {"matched", "not_matched", "not_matched_by_source"} and len(kinds) >= 4, kinds
    total = {k: sum(g["metrics"][k] for g in mine) for k in mine[0]["metrics"] if k.startswith("num_")}
    assert total["num_target_rows_inserted"] and total["num_target_rows_updated"] and total["num_target_rows_deleted"]
    assert total["num_target_deletion_vectors_added" if dvs else "num_target_files_removed"] > 0
    if cdf:
        assert total["num_target_change_files_added"] > 0
