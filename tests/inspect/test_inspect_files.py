"""files / partitions / overview: exact values on a hand-built partitioned table; corpus counts."""

from __future__ import annotations

import pytest
from corpus_paths import CORPUS, corpus_catalog
from inspect_tables import build_partitioned_table

import deltaexplore as dx
from deltaexplore.inspect import files, overview, partitions
from deltaexplore.inspect.schemas import FILES_SCHEMA, METRICS_SCHEMA, PARTITIONS_SCHEMA


@pytest.fixture
def parted(tmp_path):
    build_partitioned_table(tmp_path)
    return dx.open_table(str(tmp_path))


def test_files_derived_columns(parted):
    f = files(parted, small_file_bytes=200)
    assert f.schema == FILES_SCHEMA
    rows = {r["path"].split("/")[-1]: r for r in f.to_pylist()}
    assert rows["f1.parquet"]["partition"] == "date=2024-01-01"
    assert rows["f4.parquet"]["partition"] == "date=__HIVE_DEFAULT_PARTITION__"
    assert (rows["f2.parquet"]["deleted_rows"], rows["f2.parquet"]["live_rows"]) == (6, 24)
    assert (rows["f1.parquet"]["deleted_rows"], rows["f1.parquet"]["live_rows"]) == (0, 10)
    assert rows["f4.parquet"]["has_stats"] is False and rows["f4.parquet"]["live_rows"] is None
    assert [rows[n]["is_small"] for n in ("f1.parquet", "f2.parquet", "f3.parquet", "f4.parquet")] == [True, False, False, True]


def test_partitions_aggregates_and_skew(parted):
    p = partitions(parted, small_file_bytes=200)
    assert p.schema == PARTITIONS_SCHEMA
    rows = {r["partition"]: r for r in p.to_pylist()}
    assert list(rows) == ["date=2024-01-02", "date=2024-01-01", "date=__HIVE_DEFAULT_PARTITION__"]  # largest first
    d1 = rows["date=2024-01-01"]
    assert (d1["files"], d1["bytes"], d1["rows"], d1["deleted_rows"], d1["live_rows"]) == (2, 400, 40, 6, 34)
    assert (d1["dv_files"], d1["small_files"], d1["small_bytes"], d1["min_file_bytes"], d1["max_file_bytes"]) == (
        1,
        1,
        100,
        100,
        300,
    )
    assert d1["mean_file_bytes"] == 200.0 and d1["median_file_bytes"] == 200.0
    assert d1["partition_values"] == [("date", "2024-01-01")]
    nul = rows["date=__HIVE_DEFAULT_PARTITION__"]
    assert (nul["files"], nul["files_without_stats"], nul["rows"]) == (1, 1, None)
    # bytes 1000, 400, 50: median 400
    assert rows["date=2024-01-02"]["skew"] == pytest.approx(1000 / 400)
    assert rows["date=2024-01-02"]["bytes_share"] == pytest.approx(1000 / 1450)
    assert sum(r["bytes_share"] for r in rows.values()) == pytest.approx(1.0)


def test_overview_metrics(parted):
    o = overview(parted, small_file_bytes=200)
    assert o.schema == METRICS_SCHEMA
    m = {r["metric"]: r for r in o.to_pylist()}
    assert m["files"]["number"] == 4 and m["bytes"]["number"] == 1450
    assert m["rows"]["number"] == 140 and m["rows"]["status"] == "warn"  # f4 has no stats
    assert m["deleted_rows"]["number"] == 6 and m["live_rows"]["number"] == 134
    assert m["partitions"]["number"] == 3 and m["dv_files"]["number"] == 1
    assert m["reader_features"]["value"] == "deletionVectors"


def test_unpartitioned_and_empty(tmp_path):
    from helpers import commit_info, metadata, protocol, write_commit

    write_commit(tmp_path, 0, [commit_info("CREATE TABLE"), protocol(), metadata()])
    t = dx.open_table(str(tmp_path))
    assert files(t).num_rows == 0 and partitions(t).num_rows == 0
    assert files(t).schema == FILES_SCHEMA


@pytest.mark.corpus
@pytest.mark.parametrize("row", [t for t in corpus_catalog() if t["status"] == "ok"][:400], ids=lambda t: t["id"])
def test_corpus_file_counts_match_the_catalog(row):
    table = dx.open_table(str(CORPUS / row["table_root"]))
    f = table.inspect.files()
    assert f.num_rows == row["active_files"]
    p = table.inspect.partitions()
    assert sum(p.column("files").to_pylist()) == row["active_files"]
    if row["partition_columns"] and f.num_rows:
        assert all(k.startswith(row["partition_columns"][0] + "=") for k in p.column("partition").to_pylist())
    dv_files = sum(1 for c in f.column("cardinality").to_pylist() if c is not None)
    assert dv_files == row["active_files_with_dv"]


@pytest.mark.parametrize("columns", [["p"], ["p", "q"]])
def test_partition_keys_null_empty_and_repeated_values(tmp_path, columns):
    """`col=value` per file, one column or several; null and empty values as Hive's default (the
    protocol: an empty string is null), and so one partition for OPTIMIZE and the explorer."""
    from helpers import add, commit_info, metadata, protocol, write_commit

    from deltaexplore.core.scan.partition_values import partition_groups, partition_keys, partition_table

    fields = [{"name": n, "type": "string", "nullable": True, "metadata": {}} for n in ("id", "p", "q")]
    values = ["a", None, "", "a", "b=c/d"]
    adds = [add(f"f{i}.parquet", 10, 1, pv={c: v for c in columns}) for i, v in enumerate(values)]
    write_commit(tmp_path, 0, [commit_info(), protocol(), metadata({"type": "struct", "fields": fields}, columns), *adds])
    snap = dx.open_table(str(tmp_path)).snapshot()
    got = dict(zip(snap.add_actions().column("path").to_pylist(), partition_keys(snap, snap.add_actions()).to_pylist()))
    hive = "__HIVE_DEFAULT_PARTITION__"
    texts = ["a", hive, hive, "a", "b=c/d"]
    want = {f"f{i}.parquet": "/".join(f"{c}={t}" for c in columns) for i, t in enumerate(texts)}
    assert got == want
    groups = partition_groups(snap, snap.add_actions()).tolist()
    assert groups[1] == groups[2] and groups[0] == groups[3] and len(set(groups)) == 3
    assert partition_table(snap, snap.add_actions()).column("p").to_pylist() == ["a", None, None, "a", "b=c/d"]
    assert table_keys(snap) == [want[f"f{i}.parquet"] for i in range(len(values))]


def table_keys(snap):
    """The partition of each file as the inspection table shows it (the explorer shows that table)."""
    return snap.inspect.files().column("partition").to_pylist()
