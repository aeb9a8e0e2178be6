"""`dx.spark.read` against the conformance corpus: every table with expected rows, every table
with deletion vectors, column mapping, type widening, variant, timestamp_ntz or row tracking —
same rows and columns as `snapshot.to_arrow()`, and the expected rows where the corpus has them."""

from __future__ import annotations

import glob
import os
import shutil
import warnings
from urllib.parse import quote

import pytest
from corpus_paths import CORPUS, corpus_catalog

import deltaexplore as dx
from deltaexplore.core.protocol.variant import to_json

from .conftest import CHECKER, SPARK_MARKS, assert_same_rows

pytestmark = [*SPARK_MARKS, pytest.mark.corpus]


def _selected() -> list[dict]:
    out = []
    for t in corpus_catalog():
        interesting = (
            t.get("expected")
            or t.get("dv")
            or t.get("column_mapping_mode") in ("name", "id")
            or (t["status"] == "ok" and any(t.get(k) for k in ("type_widening", "variant", "timestamp_ntz", "row_tracking")))
        )
        if interesting and t["status"] in ("ok", "special", "log-only"):
            out.append(t)
    return out


TABLES = _selected()
# Special tables whose data cannot be read by any reader (their expected behaviour is an error).
UNREADABLE = {"delta-spark/table-with-dv-small": "DV file has a test-only name prefix"}
SHREDDED = {"delta-spark/variant-stats-state-reconstruction"}


def test_selection_covers_the_corpus():
    if not TABLES:
        pytest.skip(f"corpus absent at {CORPUS}")
    ids = {t["id"] for t in TABLES}
    assert len(ids) >= 85
    assert {"dat/deletion_vectors", "delta-golden/table-with-columnmapping-mode-id", "dat/iceberg_compat_v1"} <= ids


@pytest.mark.parametrize("table", TABLES, ids=[t["id"] for t in TABLES])
def test_read_matches_core(spark, table):
    from deltaexplore.spark import read

    root = str(CORPUS / table["table_root"])
    if table["id"] in UNREADABLE:
        with pytest.raises(dx.DeltaExploreError):
            read(spark, root).collect()
        return
    if table["id"] in SHREDDED:
        # shredded variants: rebuilt by the core and by Spark's reader, whose encodings of one
        # value may differ (Spark narrows integers): the same JSON on both
        local = dx.open_table(root).snapshot().to_arrow(variant="json").column("v").to_pylist()
        got = read(spark, root).toArrow().column("v").to_pylist()
        assert [to_json(r["metadata"], r["value"]) for r in got] == local == ["0"]
        return
    if table["id"] == "delta-spark/table-with-dv-special-char":
        pytest.skip("log is a template: covered by test_absolute_dv_in_folder_with_special_characters")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dx.CatalogManagedWarning)
        t = dx.open_table(root)
        snap = t.snapshot()
        if table["status"] == "log-only":
            df = read(spark, snap)
            assert df.columns == snap.schema.names
            assert df.count() == 0 or table["active_files"] > 0
            return
        got = read(spark, snap).toArrow()
        assert_same_rows(got, snap.to_arrow(), table["id"])
        ignore = CHECKER.IGNORE_COLUMNS.get(table["id"].rsplit("/", 1)[-1], ())
        for exp in table.get("expected") or []:
            if exp["kind"] == "dat":
                for ver in exp["versions"]:
                    s = snap if ver == "latest" else t.snapshot(version=int(ver[1:]))
                    got = read(spark, root, version=s.version).toArrow()
                    assert_same_rows(got, s.to_arrow(), f"{table['id']}@{ver}")
                    files = sorted(glob.glob(os.path.join(CORPUS, exp["path"], ver, "table_content", "*.parquet")))
                    assert CHECKER._compare(got, files, ignore) is None
            elif exp["kind"] == "golden-parquet" and got.num_rows <= 20_000:
                files = sorted(glob.glob(os.path.join(CORPUS, exp["path"], "**", "*.parquet"), recursive=True))
                assert CHECKER._compare(got, files, ignore) is None


# Inline and relative DVs, partitioned with a checkpoint, and a DAT table.
EXECUTOR_DV_TABLES = ("delta-kernel-rs/cdf-table-with-dv", "delta-golden/dv-partitioned-with-checkpoint", "dat/deletion_vectors")
DV_TABLES = [t for t in TABLES if t["id"] in EXECUTOR_DV_TABLES]


def test_dvs_decoded_on_executors_match(spark):
    """The executor DV decoder gives the same rows as the driver one."""
    from deltaexplore.spark import read

    if not DV_TABLES:
        pytest.skip("corpus absent")
    for table in DV_TABLES:
        root = str(CORPUS / table["table_root"])
        snap = dx.open_table(root).snapshot()
        got = read(spark, snap, dv_mode="executor").toArrow()
        assert_same_rows(got, snap.to_arrow(), table["id"])


@pytest.mark.parametrize("encoded", [True, False], ids=["url-encoded", "raw"])
def test_absolute_dv_in_folder_with_special_characters(spark, tmp_path, encoded):
    from deltaexplore.spark import read

    src = CORPUS / "delta-spark" / "table-with-dv-special-char"
    if not src.exists():
        pytest.skip("table not in corpus")
    dst = tmp_path / "t"
    shutil.copytree(src, dst)
    folder = str((dst / "folder&with%special char").resolve())
    log = next((dst / "_delta_log").glob("*.json"))
    log.write_text(log.read_text().replace("{{FOLDER_WITH_SPECIAL_CHAR}}", quote(folder) if encoded else folder))
    df = read(spark, str(dst))
    rows = df.toArrow()
    assert sorted(rows.column(rows.column_names[0]).to_pylist()) == [1, 3, 5, 7, 9]


# DVs (inline, relative, partitioned with a checkpoint), partition values of many types,
# column mapping by field id: every way of attaching per-file values must give the same rows.
STRATEGY_TABLES = (
    *EXECUTOR_DV_TABLES,
    "delta-golden/table-with-columnmapping-mode-id",
    "dat/multi_partitioned",
    "delta-kernel-rs/timestamp-partitioned-table",
    "delta-golden/data-reader-partition-values",
)


@pytest.mark.parametrize(
    ("strategy", "bitmaps"),
    [("literal", True), ("broadcast", True), ("path", True), ("auto", False)],
    ids=["size-literal", "size-broadcast", "path-broadcast", "anti-join-keys"],
)
def test_every_file_value_strategy_gives_the_same_rows(spark, monkeypatch, strategy, bitmaps):
    from deltaexplore.spark import deletion_vectors, file_values, read

    tables = [t for t in TABLES if t["id"] in STRATEGY_TABLES]
    if len(tables) < 6:
        pytest.skip("corpus absent")
    monkeypatch.setattr(file_values, "STRATEGY", strategy)
    if not bitmaps:
        monkeypatch.setattr(deletion_vectors, "BITMAP_MAX_WORDS", 0)
    for table in tables:
        snap = dx.open_table(str(CORPUS / table["table_root"])).snapshot()
        assert_same_rows(read(spark, snap).toArrow(), snap.to_arrow(), f"{table['id']} ({strategy})")
