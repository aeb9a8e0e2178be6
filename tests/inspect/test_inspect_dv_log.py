"""deletion_vectors / dv_files / deleted_rows, log_health / log_files: hand-built DV files shared
by several data files, inline DVs, corpus DV tables, checkpoints, stale hints and .crc files."""

from __future__ import annotations

import json
import shutil

import pytest
from corpus_paths import CORPUS, corpus_catalog
from helpers import add, commit_info, metadata, protocol, write_commit
from inspect_tables import T0, build_history_table, build_partitioned_table, dv_file, stats

import deltaexplore as dx
from deltaexplore.core.protocol.deletion_vectors import DeletionVectorDescriptor, read_deletion_vector
from deltaexplore.errors import DeletionVectorError
from deltaexplore.inspect import deleted_rows, deletion_vectors, dv_files, log_files, log_health
from deltaexplore.inspect.errors import InspectError
from deltaexplore.inspect.schemas import DV_FILES_SCHEMA, DV_SCHEMA, LOG_FILES_SCHEMA, METRICS_SCHEMA


@pytest.fixture
def shared_dv(tmp_path):
    """Three data files; two DVs share one DV file (rows {1,3} and {0..9}), the third has none."""
    name, (d1, d2) = dv_file(tmp_path, "shared.bin", [[1, 3], list(range(10))])
    write_commit(
        tmp_path,
        0,
        [
            commit_info("DELETE", T0),
            protocol(3, 7, ["deletionVectors"], ["deletionVectors"]),
            metadata(configuration={"delta.enableDeletionVectors": "true"}),
            add("x.parquet", 10, dv=d1, stats=stats(100)),
            add("y.parquet", 20, dv=d2, stats=stats(20)),
            add("z.parquet", 30, stats=stats(5)),
        ],
    )
    return dx.open_table(str(tmp_path)), name


def test_deletion_vectors_exact(shared_dv):
    table, name = shared_dv
    dv = deletion_vectors(table, purge_threshold=0.1)
    assert dv.schema == DV_SCHEMA
    rows = dv.to_pylist()
    assert [r["path"] for r in rows] == ["y.parquet", "x.parquet"]  # most deleted first
    y, x = rows
    assert (y["cardinality"], y["live_rows"], y["deleted_ratio"], y["past_threshold"]) == (10, 10, 0.5, True)
    assert (x["cardinality"], x["live_rows"], x["deleted_ratio"], x["past_threshold"]) == (2, 98, 0.02, False)
    assert x["storage"] == y["storage"] == "absolute"
    assert x["dv_path"] == y["dv_path"] and x["dv_path"].endswith(name)
    assert x["shared_by"] == y["shared_by"] == 2
    assert x["offset"] == 1 and y["offset"] > x["offset"]
    files = dv_files(table, check_files=True)
    assert files.schema == DV_FILES_SCHEMA
    (f,) = files.to_pylist()
    assert (f["data_files"], f["cardinality"], f["dv_bytes"]) == (2, 12, x["dv_bytes"] + y["dv_bytes"])
    assert f["exists"] is True and f["file_bytes"] == 1 + 2 * 8 + f["dv_bytes"]
    assert deleted_rows(table, "x.parquet").column("row_index").to_pylist() == [1, 3]
    assert deleted_rows(table, "y.parquet").column("row_index").to_pylist() == list(range(10))
    assert deleted_rows(table, "z.parquet").num_rows == 0
    with pytest.raises(InspectError):
        deleted_rows(table, "nope.parquet")


def test_inline_dv_and_missing_dv_file(tmp_path, shared_dv):
    build_partitioned_table(tmp_path / "p")
    t = dx.open_table(str(tmp_path / "p"))
    (row,) = deletion_vectors(t).to_pylist()
    assert (row["storage"], row["dv_path"], row["cardinality"]) == ("inline", None, 6)
    assert deleted_rows(t, row["path"]).column("row_index").to_pylist() == [0, 1, 2, 3, 4, 5]
    (group,) = dv_files(t).to_pylist()
    assert (group["dv_path"], group["storage"], group["data_files"]) == (None, "inline", 1)
    table, name = shared_dv
    (tmp_path / name).unlink()
    with pytest.raises(DeletionVectorError):
        deleted_rows(table, "x.parquet")
    assert dv_files(table, check_files=True).column("exists").to_pylist() == [False]


def _dv_tables():
    return [pytest.param(t, id=t["id"]) for t in corpus_catalog() if t["status"] == "ok" and t["active_files_with_dv"]]


@pytest.mark.corpus
@pytest.mark.parametrize("row", _dv_tables())
def test_corpus_deletion_vectors(row):
    table = dx.open_table(str(CORPUS / row["table_root"]))
    snap = table.snapshot()
    dv = deletion_vectors(snap)
    assert dv.num_rows == row["active_files_with_dv"]
    for r in dv.to_pylist()[:3]:
        positions = deleted_rows(snap, r["path"]).column("row_index").to_pylist()
        assert len(positions) == r["cardinality"]
        desc = DeletionVectorDescriptor.from_dict(
            next(
                d
                for p, d in zip(snap.files().column("path").to_pylist(), snap.add_actions().column("deletionVector").to_pylist())
                if p == r["path"]
            )
        )
        assert positions == read_deletion_vector(snap.storage, desc).tolist()
    total = sum(dv_files(snap).column("cardinality").to_pylist())
    assert total == sum(dv.column("cardinality").to_pylist())


# -- log health -------------------------------------------------------------------------------


def _metrics(t):
    return {r["metric"]: r for r in log_health(t).to_pylist()}


def test_log_health_without_checkpoint(tmp_path):
    build_history_table(tmp_path)
    t = dx.open_table(str(tmp_path))
    h = log_health(t)
    assert h.schema == METRICS_SCHEMA
    m = _metrics(t)
    assert m["commits_since_checkpoint"]["number"] == 4 and m["commits_since_checkpoint"]["status"] == "ok"
    assert m["last_checkpoint"]["value"] is None
    assert m["_last_checkpoint"]["value"] == "absent" and m["_last_checkpoint"]["status"] == "ok"
    assert m["tombstones"]["number"] == 2  # a.parquet and the old b.parquet key
    assert m["version_gaps"]["number"] == 0
    assert m["crc_present"]["value"] == "no"
    log_bytes = sum(p.stat().st_size for p in (tmp_path / "_delta_log").glob("*.json"))
    assert m["log_bytes"]["number"] == log_bytes and m["replay_json_bytes"]["number"] == log_bytes
    assert m["reclaimable_bytes"]["status"] == "warn"  # tombstones from 2023 are past 7 days
    lf = log_files(t)
    assert lf.schema == LOG_FILES_SCHEMA
    assert lf.column("commits_since_checkpoint").to_pylist() == [1, 2, 3, 4]
    sizes = [(tmp_path / "_delta_log" / f"{v:020d}.json").stat().st_size for v in range(4)]
    assert lf.column("replay_json_bytes").to_pylist() == [sum(sizes[: i + 1]) for i in range(4)]


def test_log_health_interval_warning(tmp_path):
    actions = [commit_info("CREATE TABLE", T0), protocol(), metadata(configuration={"delta.checkpointInterval": "2"})]
    write_commit(tmp_path, 0, actions)
    for v in range(1, 6):
        write_commit(tmp_path, v, [commit_info("WRITE", T0 + v), add(f"f{v}.parquet", 10, stats=stats(1))])
    m = _metrics(dx.open_table(str(tmp_path)))
    assert m["commits_since_checkpoint"]["number"] == 6 and m["commits_since_checkpoint"]["status"] == "warn"


@pytest.mark.corpus
def test_log_health_crc_and_checkpoint(corpus, tmp_path):
    src = corpus / "delta-rs" / "table_with_deletion_logs"
    m = _metrics(dx.open_table(str(src)))
    assert m["last_checkpoint"]["number"] == 20 and m["checkpoint_count"]["number"] == 2
    assert m["checkpoint_cadence"]["number"] == 10.0
    assert m["_last_checkpoint"]["status"] == "ok"
    assert m["numFiles"]["status"] == "ok" and m["numDeletedRecordsOpt"]["status"] == "ok"
    dst = tmp_path / "t"
    shutil.copytree(src, dst)
    crc = dst / "_delta_log" / f"{20:020d}.crc"
    body = json.loads(crc.read_text())
    body["numFiles"] += 1
    crc.write_text(json.dumps(body))
    bad = _metrics(dx.open_table(str(dst)))
    assert bad["numFiles"]["status"] == "error" and bad["numFiles"]["value"] == "mismatch"


def _stale_tables():
    return [
        pytest.param(t, id=t["id"])
        for t in corpus_catalog()
        if "_last_checkpoint:stale" in t["tags"] and t["status"] in ("ok", "special")
    ]


@pytest.mark.corpus
@pytest.mark.parametrize("row", _stale_tables())
def test_corpus_stale_last_checkpoint_is_reported(row):
    table = dx.open_table(str(CORPUS / row["table_root"]))
    m = _metrics(table)
    assert m["_last_checkpoint"]["status"] == "warn"


def test_storage_names_words_for_every_code():
    import pyarrow as pa

    from deltaexplore.inspect.deletion_vectors import storage_names

    codes = pa.array(["i", "u", "p", None, "x"])
    assert storage_names(codes).to_pylist() == ["inline", "file", "absolute", None, "x"]
    chunked = pa.chunked_array([["u"], [None, "i"]])
    assert storage_names(chunked).to_pylist() == ["file", None, "inline"]


def test_sorted_rows_orders_as_arrow_does():
    """The polars-ordered sort of the DV and row-tracking tables keeps Arrow's `sort_by`
    semantics: stable, nulls last in either direction, ties broken by the next key."""
    import random

    import pyarrow as pa

    from deltaexplore.inspect.results import sorted_rows

    rng = random.Random(5)
    n = 5000
    table = pa.table(
        {
            "c": pa.array([rng.choice([None, 0, 1, 2, 3]) for _ in range(n)], pa.int64()),
            "p": pa.array([rng.choice([None, "a", "b", "é", "z/x"]) for _ in range(n)], pa.string()),
            "i": pa.array(range(n), pa.int64()),
        }
    )
    for keys in ([("c", "descending"), ("p", "ascending")], [("p", "descending"), ("c", "ascending")], [("c", "ascending")]):
        assert sorted_rows(table, keys).equals(table.sort_by(keys)), keys
