"""Operations on Spark, round-tripped: every table written or maintained here is read back by
`snapshot.to_arrow()`, by `dx.spark.read`, by delta-rs and by DuckDB's delta extension (both in a
child process, see tests/write/other_engines.py) with identical rows."""

from __future__ import annotations

import datetime as dt
import decimal
import importlib.util
import json
import os
import time
from pathlib import Path

import pyarrow as pa
import pytest
from corpus_paths import CORPUS

import deltaexplore as dx

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

_spec = importlib.util.spec_from_file_location(
    "spark_other_engines", Path(__file__).resolve().parent.parent / "write" / "other_engines.py"
)
engines = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(engines)  # type: ignore[union-attr]

SCHEMA = "id long, cat string, amount decimal(10,2), day date, ts timestamp, flag boolean, x double"


def _rows(start: int, n: int) -> list[tuple]:
    return [
        (
            i,
            f"c{i % 3}",
            decimal.Decimal(i) / 4,
            dt.date(2024, 1, 1 + i % 28),
            dt.datetime(2024, 1, 1, i % 24, tzinfo=dt.UTC),
            i % 2 == 0,
            i / 7,
        )
        for i in range(start, start + n)
    ]


def _expected(rows: list[tuple]) -> list[str]:
    names = ["id", "cat", "amount", "day", "ts", "flag", "x"]
    return engines.table_rows(pa.Table.from_pylist([dict(zip(names, r)) for r in rows]))


def _check_everywhere(spark, uri: str, expected_rows: list[tuple], *, others: bool = True) -> None:
    from deltaexplore.spark import read

    expected = _expected(expected_rows)
    snap = dx.open_table(uri).snapshot()
    assert engines.table_rows(snap.to_arrow()) == expected, "snapshot.to_arrow()"
    assert engines.table_rows(read(spark, uri).toArrow()) == expected, "dx.spark.read"
    if not others:
        return
    answer = engines.run("read-deltars", uri)
    [(version, got)] = answer.items()
    assert int(version) == snap.version
    assert "error" not in got, got.get("error")
    assert got["rows"] == expected, "delta-rs"
    assert got["files"] == sorted(snap.add_actions().column("path").to_pylist()), "delta-rs file set"
    if engines.duckdb_available():
        assert engines.run("read-duckdb", uri)["rows"] == expected, "duckdb"


def test_write_dml_optimize_with_deletion_vectors(spark, tmp_path):
    import deltaexplore.spark as dxs

    uri = str(tmp_path / "dv")
    conf = {"delta.enableDeletionVectors": "true", "delta.enableChangeDataFeed": "true"}
    state = _rows(0, 120)
    m = dxs.write(spark, spark.createDataFrame(state, SCHEMA).repartition(4), uri, partition_by=["cat"], configuration=conf)
    assert m.column("version")[0].as_py() == 0 and m.column("num_output_rows")[0].as_py() == 120
    assert m.column("num_added_files")[0].as_py() >= 3
    more = _rows(120, 30)
    dxs.write(spark, spark.createDataFrame(more, SCHEMA), uri)
    state += more
    snap = dx.open_table(uri).snapshot()
    paths = snap.add_actions().column("path").to_pylist()
    assert len(set(paths)) == len(paths) and all(p.split("/")[0].startswith("cat=") for p in paths)
    assert all(json.loads(s)["numRecords"] > 0 for s in snap.add_actions().column("stats").to_pylist())

    # dry runs change nothing
    before = dx.open_table(uri).latest_version()
    dry = dxs.delete(spark, uri, "id < 10", dry_run=True)
    assert dry.column("num_deleted_rows")[0].as_py() == 10 and dry.column("version")[0].as_py() is None
    assert dx.open_table(uri).latest_version() == before

    m = dxs.delete(spark, uri, "id < 10 OR x > 20")
    state = [r for r in state if not (r[0] < 10 or r[6] > 20)]
    assert m.column("num_deleted_rows")[0].as_py() == 150 - len(state)
    assert m.column("num_deletion_vectors_added")[0].as_py() > 0 and m.column("num_added_files")[0].as_py() == 0
    dvs = [d for d in dx.open_table(uri).snapshot().add_actions().column("deletionVector").to_pylist() if d]
    assert dvs and all(d["storageType"] == "u" for d in dvs)

    m = dxs.update(spark, uri, {"x": "x * 100", "flag": "NOT flag"}, "id BETWEEN 40 AND 49")
    state = [(*r[:5], not r[5], r[6] * 100) if 40 <= r[0] <= 49 else r for r in state]
    assert m.column("num_updated_rows")[0].as_py() == 10
    _check_everywhere(spark, uri, state)

    # change data feed written by DELETE and UPDATE
    changes = dx.open_table(uri).changes(0)
    kinds = {
        k: changes.filter(pa.compute.equal(changes.column("_change_type"), k)).num_rows
        for k in ("insert", "delete", "update_preimage", "update_postimage")
    }
    assert kinds == {"insert": 150, "delete": 150 - len(state), "update_preimage": 10, "update_postimage": 10}

    # OPTIMIZE with Z-order rewrites with dataChange=false; DV purge leaves no DV
    m = dxs.optimize(spark, uri, zorder_by=["id", "x"])
    assert m.column("num_files_removed")[0].as_py() > 0 and m.column("num_deleted_rows_purged")[0].as_py() > 0
    assert all(not a for a in dx.open_table(uri).snapshot().add_actions().column("dataChange").to_pylist())
    assert not any(d for d in dx.open_table(uri).snapshot().add_actions().column("deletionVector").to_pylist())
    _check_everywhere(spark, uri, state)


def test_rewrites_schema_rules_idempotency_restore_checkpoint_vacuum(spark, tmp_path):
    import deltaexplore.spark as dxs

    uri = str(tmp_path / "plain")
    state = _rows(0, 60)
    dxs.write(spark, spark.createDataFrame(state, SCHEMA), uri)
    # schema enforcement: an extra column is refused, the table is unchanged
    extra = spark.createDataFrame(_rows(60, 5), SCHEMA).withColumnRenamed("x", "y")
    with pytest.raises(dx.WriteRefusedError, match="schema_mode='merge'"):
        dxs.write(spark, extra, uri)
    assert dx.open_table(uri).latest_version() == 0
    with pytest.raises(dx.WriteRefusedError, match="already exists"):
        dxs.write(spark, extra, uri, mode="error")
    # idempotent writes: the second write with the same app version is skipped
    batch = spark.createDataFrame(_rows(60, 5), SCHEMA)
    assert dxs.write(spark, batch, uri, app_id="job", app_version=1).column("version")[0].as_py() == 1
    skipped = dxs.write(spark, batch, uri, app_id="job", app_version=1)
    assert skipped.column("skipped")[0].as_py() is True and dx.open_table(uri).latest_version() == 1
    state += _rows(60, 5)
    assert dx.open_table(uri).snapshot().txns()["job"].version == 1
    # DELETE and UPDATE by rewriting files (no deletion vectors on this table)
    m = dxs.delete(spark, uri, "flag = true AND id < 30")
    state = [r for r in state if not (r[5] and r[0] < 30)]
    assert m.column("num_deletion_vectors_added")[0].as_py() == 0 and m.column("num_removed_files")[0].as_py() > 0
    dxs.update(spark, uri, {"cat": "'moved'"}, "id >= 60")
    state = [(r[0], "moved", *r[2:]) if r[0] >= 60 else r for r in state]
    assert not any(d for d in dx.open_table(uri).snapshot().add_actions().column("deletionVector").to_pylist())
    # schema evolution (opt-in)
    evolved = spark.createDataFrame([(1000, "new", 5)], "id long, cat string, extra int")
    m = dxs.write(spark, evolved, uri, schema_mode="merge")
    assert m.column("schema_changed")[0].as_py() is True
    assert dx.open_table(uri).snapshot().schema.names[-1] == "extra"
    got = dxs.read(spark, uri, where="id = 1000").collect()
    assert len(got) == 1 and got[0]["extra"] == 5 and got[0]["amount"] is None
    latest = dx.open_table(uri).latest_version()
    # RESTORE to the version before the evolution, then CHECKPOINT
    r = dxs.restore(spark, uri, version=latest - 1)
    assert r.column("restored_version")[0].as_py() == latest - 1
    c = dxs.checkpoint(spark, uri)
    assert c.column("written")[0].as_py() is True
    assert dx.open_table(uri).snapshot().checkpoint_version == latest + 1
    _check_everywhere(spark, uri, state)
    # VACUUM: dry run by default, short retention refused, nothing a retained version needs goes
    plan = dxs.vacuum(spark, uri)
    assert plan.column("dry_run")[0].as_py() is True and plan.column("num_files")[0].as_py() == 0
    with pytest.raises(dx.WriteRefusedError):
        dxs.vacuum(spark, uri, retention_hours=1, dry_run=False)
    stray = Path(uri) / "part-stray.parquet"
    stray.write_bytes(b"x")
    old = time.time() - 10 * 86400
    os.utime(stray, (old, old))
    removed = dxs.vacuum(spark, uri, retention_hours=0, enforce_retention_duration=False, dry_run=False)
    assert removed.column("num_files")[0].as_py() >= 1 and not stray.exists()
    _check_everywhere(spark, uri, state, others=False)


def test_write_errors_are_delta_explore_errors(spark, tmp_path):
    import deltaexplore.spark as dxs

    uri = str(tmp_path / "rules")
    conf = {"delta.constraints.positive": "id > 0"}
    dxs.write(spark, spark.createDataFrame(_rows(1, 5), SCHEMA), uri, configuration=conf)
    with pytest.raises(dx.DeltaExploreError) as info:
        dxs.write(spark, spark.createDataFrame(_rows(-3, 2), SCHEMA), uri)
    assert "positive" in str(info.value)
    assert dx.open_table(uri).latest_version() == 0
    with pytest.raises(dx.WriteRefusedError):
        dxs.delete(spark, uri, "id > 1", use_deletion_vectors=True)


@pytest.mark.parametrize("dvs", [True, False], ids=["deletion-vectors", "rewrite"])
def test_update_keeps_identity_and_recomputes_generated_columns(spark, tmp_path, dvs):
    """Spark UPDATE follows the core's rules: identity values stay, generated columns are
    recomputed (data and change data post-images), neither can be set; names match
    case-insensitively."""
    import deltaexplore.spark as dxs
    from deltaexplore.core.operations import write_table

    uri = str(tmp_path / "rules")
    ident = {"delta.identity.start": 100, "delta.identity.step": 10, "delta.identity.allowExplicitInsert": False}
    schema = {
        "type": "struct",
        "fields": [
            {"name": "key", "type": "long", "nullable": True, "metadata": ident},
            {"name": "price", "type": "long", "nullable": True, "metadata": {}},
            {"name": "total", "type": "long", "nullable": True, "metadata": {"delta.generationExpression": "price * 3"}},
        ],
    }
    conf = {"delta.enableChangeDataFeed": "true"}
    if dvs:
        conf["delta.enableDeletionVectors"] = "true"
    features = ["identityColumns", "generatedColumns", "changeDataFeed", *(["deletionVectors"] if dvs else [])]
    log = Path(uri) / "_delta_log"
    log.mkdir(parents=True)
    protocol = {"minReaderVersion": 3 if dvs else 1, "minWriterVersion": 7, "writerFeatures": features}
    if dvs:
        protocol["readerFeatures"] = ["deletionVectors"]
    md = {
        "id": "rules",
        "format": {"provider": "parquet", "options": {}},
        "schemaString": json.dumps(schema),
        "partitionColumns": [],
        "configuration": conf,
    }
    (log / f"{0:020d}.json").write_text(
        "\n".join(
            json.dumps(a) for a in [{"commitInfo": {"operation": "CREATE TABLE"}}, {"protocol": protocol}, {"metaData": md}]
        )
        + "\n"
    )
    write_table(uri, pa.table({"price": pa.array([1, 2, 3, 4], pa.int64())}))
    before = {r["key"]: r for r in dx.open_table(uri).snapshot().to_arrow().to_pylist()}
    assert sorted((k, r["price"], r["total"]) for k, r in before.items()) == [(100, 1, 3), (110, 2, 6), (120, 3, 9), (130, 4, 12)]

    for refused, match in (({"key": "key + 1"}, "GENERATED ALWAYS"), ({"total": "0"}, "is generated")):
        with pytest.raises(dx.WriteRefusedError, match=match):
            dxs.update(spark, uri, refused, "price > 2")
    assert dx.open_table(uri).latest_version() == 1

    m = dxs.update(spark, uri, {"PRICE": "price * 10"}, "price >= 3")  # the column is `price`
    assert m.column("num_updated_rows")[0].as_py() == 2
    after = sorted((r["key"], r["price"], r["total"]) for r in dx.open_table(uri).snapshot().to_arrow().to_pylist())
    assert after == [(100, 1, 3), (110, 2, 6), (120, 30, 90), (130, 40, 120)]
    assert sorted((r[0], r[1], r[2]) for r in dxs.read(spark, uri).collect()) == after
    changes = dx.open_table(uri).changes(2).to_pylist()
    post = sorted((r["key"], r["price"], r["total"]) for r in changes if r["_change_type"] == "update_postimage")
    pre = sorted((r["key"], r["price"], r["total"]) for r in changes if r["_change_type"] == "update_preimage")
    assert post == [(120, 30, 90), (130, 40, 120)] and pre == [(120, 3, 9), (130, 4, 12)]


def test_overwrite_and_dry_runs(spark, tmp_path):
    """mode='overwrite' replaces every row (same schema, then a new one with
    schema_mode='overwrite'); dry runs of write, update and optimize change nothing."""
    import deltaexplore.spark as dxs

    uri = str(tmp_path / "over")
    dxs.write(spark, spark.createDataFrame(_rows(0, 40), SCHEMA).repartition(3), uri)
    dry = dxs.write(spark, spark.createDataFrame(_rows(100, 7), SCHEMA), uri, mode="overwrite", dry_run=True)
    assert dry.column("num_output_rows")[0].as_py() == 7 and dry.column("version")[0].as_py() is None
    dry = dxs.update(spark, uri, {"x": "0"}, "id < 5", dry_run=True)
    assert dry.column("num_updated_rows")[0].as_py() == 5 and dry.column("version")[0].as_py() is None
    dry = dxs.optimize(spark, uri, dry_run=True)
    assert dry.column("version")[0].as_py() is None
    assert dx.open_table(uri).latest_version() == 0
    _check_everywhere(spark, uri, _rows(0, 40), others=False)

    m = dxs.write(spark, spark.createDataFrame(_rows(100, 7), SCHEMA), uri, mode="overwrite")
    assert m.column("num_removed_files")[0].as_py() == 3 and m.column("num_output_rows")[0].as_py() == 7
    _check_everywhere(spark, uri, _rows(100, 7))
    assert dx.open_table(uri).snapshot(version=0).to_arrow().num_rows == 40  # time travel still sees the old rows

    with pytest.raises(dx.WriteRefusedError):
        dxs.write(spark, spark.createDataFrame([(1, "a")], "k long, v string"), uri, mode="overwrite")
    m = dxs.write(
        spark, spark.createDataFrame([(1, "a"), (2, "b")], "k long, v string"), uri, mode="overwrite", schema_mode="overwrite"
    )
    assert m.column("schema_changed")[0].as_py() is True
    snap = dx.open_table(uri).snapshot()
    assert snap.schema.names == ["k", "v"]
    assert sorted(tuple(r.values()) for r in snap.to_arrow().to_pylist()) == [(1, "a"), (2, "b")]


def test_zorder_key_follows_a_z_curve(spark):
    """Spark's Z-order key (sampled range buckets, bits interleaved): rows in key order fill
    quadrants, so 4 runs of a 32 x 32 grid each span about half of both columns."""
    import random

    from deltaexplore.spark.maintenance import zorder_key

    cells = [(a, b) for a in range(32) for b in range(32)]
    random.Random(5).shuffle(cells)
    df = spark.createDataFrame(cells, "a long, b long")
    ordered = [(r[0], r[1]) for r in df.orderBy(zorder_key(df, ["a", "b"]), "a", "b").collect()]
    assert sorted(ordered) == sorted(cells)
    for k in range(0, 1024, 256):
        run = ordered[k : k + 256]
        span_a = max(p[0] for p in run) - min(p[0] for p in run)
        span_b = max(p[1] for p in run) - min(p[1] for p in run)
        assert span_a <= 16 and span_b <= 16, (k, span_a, span_b)  # quadrants: 15 (a sort by a alone: b spans 31)


def test_duckdb_delta_extension_is_there():
    """The round trips above also read with DuckDB when its delta extension is installed."""
    if not engines.duckdb_available():
        pytest.skip("duckdb==1.5.5 with duckdb-extension-delta is not installed (pip install '.[dev]'); DuckDB reads skipped")
    assert engines.run("read-duckdb", str(CORPUS / "dat" / "basic_partitioned" / "delta"))["rows"]


def test_spark_append_keeps_the_preview_type_widening_feature(spark, tmp_path):
    """A table written when type widening was a preview keeps `typeWidening-preview` (readers
    that know only that name can still read it): no silent upgrade to the stable feature."""
    import deltaexplore.spark as dxs
    from deltaexplore.core.operations import write_table

    root = tmp_path / "t"
    write_table(str(root), pa.table({"id": pa.array([1, 2], pa.int32())}), configuration={"delta.enableTypeWidening": "true"})
    first = root / "_delta_log" / f"{0:020d}.json"
    first.write_text(first.read_text().replace('"typeWidening"', '"typeWidening-preview"'))
    before = dx.open_table(str(root)).snapshot().protocol
    dxs.write(spark, spark.createDataFrame([(3,)], "id int"), str(root))
    snap = dx.open_table(str(root)).snapshot()
    assert snap.version == 1 and snap.protocol == before
    assert "typeWidening" not in snap.protocol.writer_feature_set
    assert sorted(snap.to_arrow().column("id").to_pylist()) == [1, 2, 3]
