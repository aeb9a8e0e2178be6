"""Interoperability with real engines: tables written here are read by delta-rs and DuckDB's delta
extension with identical rows; tables written and maintained by delta-rs are read here with
identical rows and file sets at every version. delta-rs and DuckDB run in child processes
(see `other_engines.py`)."""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
from decimal import Decimal
from urllib.parse import unquote

import pyarrow as pa
import pytest
from other_engines import duckdb_available, run, table_rows

import deltaexplore as dx
from deltaexplore.core.operations import checkpoint, delete, optimize, restore, set_table_properties, write_table
from deltaexplore.core.write.checkpoint_writer import write_checkpoint

pytestmark = pytest.mark.xdist_group("interop")
if importlib.util.find_spec("deltalake") is None:  # never imported here: see other_engines.py
    pytest.skip("deltalake is not installed", allow_module_level=True)


def typed(start: int, n: int) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "part": pa.array(["a" if i % 2 else "b c" for i in ids]),
            "small": pa.array([i % 100 for i in ids], pa.int16()),
            "price": pa.array([Decimal(i) / 8 for i in ids], pa.decimal128(12, 3)),
            "ratio": pa.array([i / 7 for i in ids], pa.float64()),
            "flag": pa.array([i % 3 == 0 for i in ids]),
            "day": pa.array([dt.date(2024, 2, 1 + i % 28) for i in ids]),
            "ts": pa.array([dt.datetime(2024, 3, 1, i % 24, i % 60, tzinfo=dt.UTC) for i in ids], pa.timestamp("us", tz="UTC")),
            "name": pa.array([None if i % 5 == 0 else f"name {i}" for i in ids]),
        }
    )


def ours(root, version=None) -> list[str]:
    return table_rows(dx.open_table(str(root)).snapshot(version).to_arrow())


def _check_others(root, *, deltars: bool = True, duckdb: bool = True) -> None:
    expected = ours(root)
    if deltars:
        got = run("read-deltars", str(root))
        (answer,) = got.values()
        assert "error" not in answer, answer.get("error")
        assert answer["rows"] == expected
        files = sorted(unquote(p) for p in dx.open_table(str(root)).snapshot().add_actions().column("path").to_pylist())
        assert sorted(unquote(p) for p in answer["files"]) == files
    if duckdb and duckdb_available():
        assert run("read-duckdb", str(root))["rows"] == expected


def test_plain_partitioned_table_with_maintenance(tmp_path):
    root = tmp_path / "t"
    write_table(str(root), typed(0, 40), partition_by=["part"], max_rows_per_file=7)
    write_table(str(root), typed(40, 15))
    delete(str(root), "small < 5")  # rewrite (no deletion vectors)
    optimize(str(root))
    write_checkpoint(dx.open_table(str(root)))
    write_table(str(root), typed(100, 5))
    _check_others(root)
    restore(str(root), version=1)
    _check_others(root)
    assert len(ours(root)) == 55


def test_deletion_vector_table(tmp_path):
    root = tmp_path / "t"
    write_table(str(root), typed(0, 60), partition_by=["part"], configuration={"delta.enableDeletionVectors": "true"})
    delete(str(root), "id % 4 = 0")
    delete(str(root), "ratio > 5")
    checkpoint(str(root))
    write_table(str(root), typed(60, 3))
    snap = dx.open_table(str(root)).snapshot()
    assert snap.add_actions().column("deletionVector").null_count < snap.num_files
    _check_others(root)


def _part_first(t: pa.Table) -> pa.Table:
    return t.select(["part"] + [c for c in t.column_names if c != "part"])


def test_column_mapping_table(tmp_path):
    # DuckDB 1.5.5's delta extension returns null partition values under column mapping unless
    # the partition column is the first column (delta-rs and this library agree with the spec);
    # the partition column comes first here so that all three engines can be compared.
    root = tmp_path / "t"
    write_table(str(root), _part_first(typed(0, 20)), partition_by=["part"], configuration={"delta.columnMapping.mode": "name"})
    write_table(str(root), _part_first(typed(20, 5)).append_column("extra", pa.array([1.5] * 5)), schema_mode="merge")
    delete(str(root), "id = 3")
    _check_others(root)
    other = tmp_path / "u"
    write_table(str(other), typed(0, 6), partition_by=["part"], configuration={"delta.columnMapping.mode": "id"})
    _check_others(other, duckdb=False)


def test_row_tracking_in_commit_timestamps_cdf(tmp_path):
    root = tmp_path / "t"
    conf = {
        "delta.enableRowTracking": "true",
        "delta.enableInCommitTimestamps": "true",
        "delta.enableChangeDataFeed": "true",
        "delta.enableDeletionVectors": "true",
    }
    write_table(str(root), typed(0, 30), configuration=conf)
    delete(str(root), "id < 10")
    optimize(str(root))
    _check_others(root)
    changes = dx.open_table(str(root)).changes(1, 1)
    assert sorted(changes.column("id").to_pylist()) == list(range(10))
    assert set(changes.column("_change_type").to_pylist()) == {"delete"}


def test_v2_checkpoint_table(tmp_path):
    root = tmp_path / "t"
    write_table(str(root), typed(0, 20), configuration={"delta.checkpointPolicy": "v2"})
    write_table(str(root), typed(20, 5))
    write_checkpoint(dx.open_table(str(root)), actions_per_sidecar=1)
    write_table(str(root), typed(30, 5))
    assert dx.open_table(str(root)).snapshot().segment.checkpoint.kind == "v2-parquet"
    _check_others(root)


def test_appending_to_a_delta_rs_table(tmp_path):
    root = tmp_path / "t"
    run("build-deltars", str(root), "1")
    write_table(str(root), pa.table({"id": pa.array([999], pa.int64()), "part": ["x"]}))
    set_table_properties(str(root), {"delta.appendOnly": "false"})
    _check_others(root)


def test_delta_rs_history_read_here_at_every_version(tmp_path):
    root = tmp_path / "t"
    built = run("build-deltars", str(root), "1")
    latest = built["version"]
    versions = list(range(latest + 1))
    theirs = run("read-deltars", str(root), *versions)
    table = dx.open_table(str(root))
    assert table.latest_version() == latest
    for v in versions:
        snap = table.snapshot(v)
        answer = theirs[str(v)]
        assert "error" not in answer, (v, answer)
        files = sorted(unquote(p) for p in snap.add_actions().column("path").to_pylist())
        assert sorted(unquote(p) for p in answer["files"]) == files, v
        assert table_rows(snap.to_arrow()) == answer["rows"], v
    ops = [h["operation"] for h in table.history().to_pylist()][::-1]
    assert "DELETE" in ops and "OPTIMIZE" in ops and ops.count("WRITE") >= 4
    # phase 2: delta-rs vacuums (retention 0) and overwrites; file sets still agree everywhere
    built = run("build-deltars", str(root), "2")
    latest = built["version"]
    theirs = run("read-deltars", str(root), *range(latest + 1))
    table = dx.open_table(str(root))
    for v in range(latest + 1):
        files = sorted(unquote(p) for p in table.snapshot(v).add_actions().column("path").to_pylist())
        assert sorted(unquote(p) for p in theirs[str(v)]["files"]) == files, v
    assert table_rows(table.snapshot().to_arrow()) == theirs[str(latest)]["rows"]
    # and we can keep writing the table delta-rs wrote
    write_table(str(root), pa.table({"id": pa.array([7], pa.int64())}), schema_mode="merge")
    _check_others(root)


def test_checksum_and_history_of_delta_rs_table(tmp_path):
    root = tmp_path / "t"
    run("build-deltars", str(root), "1")
    table = dx.open_table(str(root))
    hist = table.history()
    assert hist.num_rows == table.latest_version() + 1
    assert json.loads(json.dumps(hist.column("operation").to_pylist()))
