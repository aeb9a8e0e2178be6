"""OPTIMIZE, Z-order and DV purge written by Spark's own parquet writer (`spark.native_write`):
the same rows before and after, stats from the footers, physical names and field ids under
column mapping, INT64 microsecond timestamps, nothing stray left in the table, a failed job
leaves the table and its directory as they were. Tables are read back by the core, by
`dx.spark.read` and by delta-rs/DuckDB in a child process (tests/write/other_engines.py)."""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import os
from decimal import Decimal
from pathlib import Path
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import deltaexplore as dx
from deltaexplore.core.operations import delete, write_table

from .conftest import assert_same_rows

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

_spec = importlib.util.spec_from_file_location(
    "native_other_engines", Path(__file__).resolve().parent.parent / "write" / "other_engines.py"
)
engines = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(engines)  # type: ignore[union-attr]
DELTARS = importlib.util.find_spec("deltalake") is not None


def rows(start: int, n: int) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table(
        {
            "part": pa.array(["a" if i % 3 else "b c/é" for i in ids]),
            "id": pa.array(ids, pa.int64()),
            "price": pa.array([Decimal(i) / 8 for i in ids], pa.decimal128(12, 3)),
            "ts": pa.array(
                [dt.datetime(2024, 3, 1, i % 24, i % 60, i % 60, 123456 + i, tzinfo=dt.UTC) for i in ids],
                pa.timestamp("us", tz="UTC"),
            ),
            "name": pa.array([None if i % 5 == 0 else f"name {i} " + "x" * 40 for i in ids]),
            "day": pa.array([dt.date(1500 + i % 600, 1, 1 + i % 28) for i in ids]),  # before 1582: no rebasing
            "x": pa.array([float("nan") if i % 11 == 0 else i / 7 for i in ids], pa.float64()),
            "s": pa.array([{"a": i, "b": f"b{i}"} for i in ids], pa.struct([("a", pa.int32()), ("b", pa.string())])),
            "tags": pa.array([[f"t{i}", None] for i in ids], pa.list_(pa.string())),
            "m": pa.array([[("k", i)] for i in ids], pa.map_(pa.string(), pa.int64())),
        }
    )


def _adds(uri: str) -> pa.Table:
    return dx.open_table(uri).snapshot().add_actions()


def _no_strays(uri: str) -> None:
    """Outside `_delta_log`: no Spark markers, checksums or temporary directories; every file in
    a staging directory is a data file of some version."""
    table = dx.open_table(uri)
    live = {
        unquote(p) for v in range(table.latest_version() + 1) for p in table.snapshot(v).add_actions().column("path").to_pylist()
    }
    for dirpath, dirnames, filenames in os.walk(uri):
        rel_dir = os.path.relpath(dirpath, uri)
        if rel_dir.split(os.sep)[0] == "_delta_log":
            continue
        assert "_temporary" not in dirnames, dirpath
        for name in filenames:
            rel = os.path.normpath(os.path.join(rel_dir, name)).replace(os.sep, "/")
            assert not name.endswith(".crc") and name != "_SUCCESS", rel
            if rel.startswith("dx-"):
                assert rel in live, f"stray file {rel}"


def _new_files(uri: str, before: pa.Table) -> pa.Table:
    adds = _adds(uri)
    old = pa.array(before.column("path").to_pylist())
    return adds.filter(pc.invert(pc.is_in(adds.column("path"), value_set=old)))


def _others(uri: str, *, duckdb: bool = True) -> None:
    """delta-rs and DuckDB (child processes) read the rows the core reads."""
    if not DELTARS:
        return
    expected = engines.table_rows(dx.open_table(uri).snapshot().to_arrow())
    [(_, got)] = engines.run("read-deltars", uri).items()
    assert "error" not in got, got.get("error")
    assert got["rows"] == expected, "delta-rs"
    if duckdb and engines.duckdb_available():
        assert engines.run("read-duckdb", uri)["rows"] == expected, "duckdb"


def test_optimize_and_purge_write_spark_parquet_with_footer_stats(spark, tmp_path):
    import deltaexplore.spark as dxs

    uri = str(tmp_path / "d i r+é [x]")
    conf = {"delta.enableDeletionVectors": "true", "delta.dataSkippingNumIndexedCols": "4"}
    write_table(uri, rows(0, 300), partition_by=["part"], configuration=conf, max_rows_per_file=40)
    write_table(uri, rows(300, 50))
    delete(uri, "id % 7 = 0")  # deletion vectors on every file
    before_files = _adds(uri)
    before = dx.open_table(uri).snapshot().to_arrow()

    m = dxs.optimize(spark, uri, max_deleted_rows_ratio=0.5)  # small files only: DVs of ~14% stay...
    from pyspark.sql import SparkSession

    # the write ran in its own session: the caller's session and settings are untouched
    assert spark.conf.get("spark.sql.unionOutputPartitioning") == "true"
    assert SparkSession.getActiveSession()._jsparkSession.equals(spark._jsparkSession)
    assert m.column("num_files_removed")[0].as_py() == before_files.num_rows
    assert m.column("num_files_added")[0].as_py() == 2  # ...because every file is small: one file per partition
    snap = dx.open_table(uri).snapshot()
    assert_same_rows(snap.to_arrow(), before, "after OPTIMIZE")
    added = _new_files(uri, before_files)
    assert added.num_rows == 2 and not any(added.column("dataChange").to_pylist())
    assert all(p.startswith("dx-") for p in added.column("path").to_pylist())
    assert added.column("deletionVector").null_count == 2
    assert sorted(dict(pv)["part"] for pv in added.column("partitionValues").to_pylist()) == ["a", "b c/é"]
    assert dx.open_table(uri).history().column("operation").to_pylist()[0] == "OPTIMIZE"

    for path, stats_text, pv in zip(*(added.column(c).to_pylist() for c in ("path", "stats", "partitionValues"))):
        stats = json.loads(stats_text)
        data = pq.read_table(os.path.join(uri, unquote(path)))
        schema = pq.read_schema(os.path.join(uri, unquote(path)))
        # data columns only, timestamps as INT64 micros (INT96 would read back as nanoseconds)
        assert "part" not in schema.names and schema.field("ts").type == pa.timestamp("us", tz="UTC")
        part = dict(pv)["part"]
        expected = before.filter(pc.equal(before.column("part"), part))
        assert stats["numRecords"] == data.num_rows == expected.num_rows
        # the table's first 4 data columns: id, price, ts, name (strings truncated to 32 characters)
        assert set(stats["nullCount"]) == {"id", "price", "ts", "name"}
        assert stats["minValues"]["id"] == pc.min(expected.column("id")).as_py()
        assert stats["maxValues"]["id"] == pc.max(expected.column("id")).as_py()
        assert Decimal(str(stats["minValues"]["price"])) == pc.min(expected.column("price")).as_py()
        assert stats["nullCount"]["name"] == expected.column("name").null_count > 0
        assert len(stats["minValues"]["name"]) == 32 and len(stats["maxValues"]["name"]) == 32
        ts_min = pc.min(expected.column("ts")).as_py()
        assert stats["minValues"]["ts"] == ts_min.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ts_min.microsecond // 1000:03d}Z"
        assert stats["tightBounds"] is True
        assert data.column("ts").equals(data.column("ts"))  # exact micros: compared through the table below
    got_ts = sorted(snap.to_arrow(columns=["ts"]).column("ts").to_pylist())
    assert got_ts == sorted(before.column("ts").to_pylist()) and got_ts[0].microsecond % 1000
    assert_same_rows(dxs.read(spark, uri).toArrow().select(before.column_names), before, "dx.spark.read")
    _no_strays(uri)

    # DV purge: a new delete, then every file with a DV is rewritten (through the same writer)
    delete(uri, "id < 20")
    with_dv = _adds(uri)
    before = dx.open_table(uri).snapshot().to_arrow()
    m = dxs.purge_deletion_vectors(spark, uri)
    assert m.column("num_deleted_rows_purged")[0].as_py() > 0
    assert _adds(uri).column("deletionVector").null_count == _adds(uri).num_rows
    assert_same_rows(dx.open_table(uri).snapshot().to_arrow(), before, "after purge")
    assert _new_files(uri, with_dv).num_rows >= 1
    _no_strays(uri)
    _others(uri)


def _part_first(t: pa.Table) -> pa.Table:
    return t.select(["part"] + [c for c in t.column_names if c != "part"])


@pytest.mark.parametrize("mode", ["name", "id"])
def test_column_mapping_zorder_and_purge(spark, tmp_path, mode):
    import deltaexplore.spark as dxs

    uri = str(tmp_path / mode)
    conf = {"delta.columnMapping.mode": mode, "delta.enableDeletionVectors": "true"}
    data = _part_first(rows(0, 200))
    write_table(uri, data, partition_by=["part"], configuration=conf, max_rows_per_file=30)
    write_table(uri, _part_first(rows(200, 40)))
    delete(uri, "id % 9 = 0")
    before_files = _adds(uri)
    before = dx.open_table(uri).snapshot().to_arrow()

    m = dxs.optimize(spark, uri, zorder_by=["id", "x"], target_size=4_000)  # small files: several per partition
    assert m.column("num_files_added")[0].as_py() > 2
    snap = dx.open_table(uri).snapshot()
    assert_same_rows(snap.to_arrow(), before, "after Z-order")
    added = _new_files(uri, before_files)
    assert added.num_rows == m.column("num_files_added")[0].as_py()
    fields = {f.name: f for f in snap.schema.fields}
    for path, pv, stats_text in zip(*(added.column(c).to_pylist() for c in ("path", "partitionValues", "stats"))):
        file = os.path.join(uri, unquote(path))
        schema = pq.read_schema(file)
        physical = {f.physical_name: f for f in snap.schema.fields if f.name != "part"}
        assert set(schema.names) == set(physical), "physical names only, no partition column"
        for name, f in physical.items():
            assert schema.field(name).metadata[b"PARQUET:field_id"] == str(f.field_id).encode()
        inner = schema.field(fields["s"].physical_name).type
        assert [x.name for x in inner] == [x.physical_name for x in fields["s"].type.fields]
        assert [x.metadata[b"PARQUET:field_id"] for x in inner] == [str(x.field_id).encode() for x in fields["s"].type.fields]
        # the file's rows all belong to its partition: its ids are ids of that partition
        ids = pq.read_table(file, columns=[fields["id"].physical_name]).column(0)
        part = dict(pv)[fields["part"].physical_name]
        of_part = before.filter(pc.equal(before.column("part"), part)).column("id")
        assert pc.all(pc.is_in(ids, value_set=of_part)).as_py()
        stats = json.loads(stats_text)
        assert stats["numRecords"] == len(ids) and stats["minValues"][fields["id"].physical_name] == pc.min(ids).as_py()
    # Z-order: files of a partition cover disjoint-ish id ranges (sorted by the curve, not random)
    assert_same_rows(dxs.read(spark, uri).toArrow().select(before.column_names), before, "dx.spark.read")
    _no_strays(uri)
    _others(uri, duckdb=mode == "name")

    delete(uri, "id > 230")
    before = dx.open_table(uri).snapshot().to_arrow()
    dxs.purge_deletion_vectors(spark, uri)
    assert _adds(uri).column("deletionVector").null_count == _adds(uri).num_rows
    assert_same_rows(dx.open_table(uri).snapshot().to_arrow(), before, "after purge")
    _no_strays(uri)
    _others(uri, duckdb=mode == "name")


def test_failed_job_leaves_table_and_directory_unchanged(spark, tmp_path):
    import deltaexplore.spark as dxs

    uri = str(tmp_path / "t")
    write_table(uri, rows(0, 60), max_rows_per_file=10)
    version = dx.open_table(uri).latest_version()
    listing = sorted(os.listdir(uri))
    victim = unquote(_adds(uri).column("path")[3].as_py())
    with open(os.path.join(uri, victim), "wb") as fh:
        fh.write(b"not parquet")
    with pytest.raises(dx.SparkError):
        dxs.optimize(spark, uri)
    assert dx.open_table(uri).latest_version() == version
    assert sorted(os.listdir(uri)) == listing, "the staging directory is gone"


def _tracked(uri: str) -> list[tuple]:
    t = dx.open_table(uri).snapshot().scan(["id"]).to_arrow(row_tracking=True)
    return sorted(zip(*(t.column(c).to_pylist() for c in ("id", "_row_id", "_row_commit_version"))))


def test_row_tracking_ids_survive_optimize_and_zorder(spark, tmp_path):
    import deltaexplore.spark as dxs

    uri = str(tmp_path / "rt")
    conf = {"delta.enableRowTracking": "true", "delta.enableDeletionVectors": "true"}
    write_table(uri, rows(0, 90), partition_by=["part"], configuration=conf, max_rows_per_file=20)
    write_table(uri, rows(90, 30))
    delete(uri, "id % 4 = 1")
    ids = _tracked(uri)
    assert len({r[1] for r in ids}) == len(ids) and {r[2] for r in ids} == {0, 1}

    v = dxs.optimize(spark, uri).column("version")[0].as_py()
    assert _tracked(uri) == ids, "stable row ids and commit versions kept"
    adds = _adds(uri)
    assert adds.column("baseRowId").null_count == 0 and set(adds.column("defaultRowCommitVersion").to_pylist()) == {v}
    config = dx.open_table(uri).snapshot().config
    for path in adds.column("path").to_pylist():
        names = pq.read_schema(os.path.join(uri, unquote(path))).names
        assert config.materialized_row_id_column in names and config.materialized_row_commit_version_column in names
    write_table(uri, rows(120, 10))  # fresh ids for new rows
    ids = _tracked(uri)
    dxs.optimize(spark, uri, zorder_by=["x"])
    assert _tracked(uri) == ids
    _no_strays(uri)


def test_python_writer_path_still_rewrites_and_agrees_on_stats(spark, tmp_path):
    """The fallback (types Spark cannot write) keeps working, and both writers record the same
    stats for the same rows (stats of both come from the footer code of the core)."""
    import deltaexplore.spark as dxs
    from deltaexplore.spark.maintenance import optimize

    stats = {}
    for writer in ("native", "python"):
        uri = str(tmp_path / writer)
        write_table(uri, rows(0, 80), configuration={"delta.enableDeletionVectors": "true"}, max_rows_per_file=16)
        delete(uri, "id % 6 = 0")
        before = dx.open_table(uri).snapshot().to_arrow()
        m = optimize(spark, uri, zorder_by=["id"], _python_writer=writer == "python")
        assert m.column("num_files_added")[0].as_py() == 1
        assert_same_rows(dx.open_table(uri).snapshot().to_arrow(), before, writer)
        [text] = _adds(uri).column("stats").to_pylist()
        stats[writer] = json.loads(text)
        path = _adds(uri).column("path")[0].as_py()
        assert path.startswith("dx-") == (writer == "native")
        _no_strays(uri)
    native, python = stats["native"], stats["python"]
    # NaN: Arrow's footer bounds skip NaNs, parquet-mr's do not (then no bounds are recorded)
    assert "x" in python["minValues"] and "x" not in native["minValues"]
    for doc in (native, python):
        for key in ("minValues", "maxValues"):
            doc[key].pop("x", None)
    assert native == python
    with pytest.raises(dx.WriteRefusedError, match="row ids"):
        uri = str(tmp_path / "rt")
        write_table(uri, rows(0, 20), configuration={"delta.enableRowTracking": "true"}, max_rows_per_file=5)
        dxs.optimize(spark, uri, _python_writer=True)


def test_delete_by_rewrite_uses_spark_parquet_and_keeps_row_ids(spark, tmp_path):
    import deltaexplore.spark as dxs

    uri = str(tmp_path / "del")
    conf = {"delta.enableRowTracking": "true", "delta.columnMapping.mode": "name"}
    write_table(uri, _part_first(rows(0, 120)), partition_by=["part"], configuration=conf, max_rows_per_file=25)
    ids = _tracked(uri)
    before_files = _adds(uri)
    before = dx.open_table(uri).snapshot().to_arrow()
    m = dxs.delete(spark, uri, "id BETWEEN 40 AND 70 AND part = 'a'")
    ids_col = before.column("id")
    hit = pc.and_(pc.and_(pc.greater_equal(ids_col, 40), pc.less_equal(ids_col, 70)), pc.equal(before.column("part"), "a"))
    kept = before.filter(pc.invert(hit))
    assert m.column("num_deleted_rows")[0].as_py() == before.num_rows - kept.num_rows > 0
    assert m.column("num_copied_rows")[0].as_py() == sum(
        json.loads(s)["numRecords"] for s in _new_files(uri, before_files).column("stats").to_pylist()
    )
    assert_same_rows(dx.open_table(uri).snapshot().to_arrow(), kept, "after DELETE")
    added = _new_files(uri, before_files)
    assert added.num_rows and all(added.column("dataChange").to_pylist())
    assert all(p.startswith("dx-") for p in added.column("path").to_pylist())
    assert {dict(pv)[next(iter(dict(pv)))] for pv in added.column("partitionValues").to_pylist()} == {"a"}
    gone = {r[0] for r in ids} - set(kept.column("id").to_pylist())
    assert _tracked(uri) == [r for r in ids if r[0] not in gone], "row ids of copied rows unchanged"
    _no_strays(uri)
    _others(uri)


def test_many_small_bins_one_scan_and_shuffle(spark, tmp_path):
    """More bins than 4 per core, all small: one scan hash-partitioned by bin (not one scan per
    bin); still one file per partition, its rows only, row ids kept."""
    import deltaexplore.spark as dxs

    uri = str(tmp_path / "many")
    data = rows(0, 240).append_column("p", pa.array([i % 12 for i in range(240)], pa.int32()))
    conf = {"delta.enableRowTracking": "true", "delta.enableDeletionVectors": "true"}
    write_table(uri, data.slice(0, 120), partition_by=["p"], configuration=conf)
    write_table(uri, data.slice(120))
    delete(uri, "id < 30")
    ids = _tracked(uri)
    before = dx.open_table(uri).snapshot().to_arrow()
    m = dxs.optimize(spark, uri)
    assert m.column("num_bins")[0].as_py() == 12 > 4 * spark.sparkContext.defaultParallelism
    adds = _adds(uri)
    assert adds.num_rows == 12 and all(p.startswith("dx-") and "/dxbin=" in p for p in adds.column("path").to_pylist())
    assert_same_rows(dx.open_table(uri).snapshot().to_arrow(), before, "after OPTIMIZE")
    assert _tracked(uri) == ids
    for path, pv in zip(adds.column("path").to_pylist(), adds.column("partitionValues").to_pylist()):
        got = pq.read_table(os.path.join(uri, unquote(path)), columns=["id"]).column("id")
        assert {i % 12 for i in got.to_pylist()} == {int(dict(pv)["p"])}
    _no_strays(uri)
