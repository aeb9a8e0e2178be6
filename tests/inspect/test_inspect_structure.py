"""commits, column_mapping, row_tracking, clustering, domain_metadata, transactions,
catalog_status, and the accessor namespace with every declared schema."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings

import pytest
from corpus_paths import CORPUS, corpus_catalog
from helpers import add, commit_info, metadata, protocol, write_commit
from inspect_tables import T0, build_history_table, stats

import deltaexplore as dx
from deltaexplore import inspect as dxi
from deltaexplore.inspect import (
    catalog_status,
    clustering,
    column_mapping,
    commits,
    domain_metadata,
    row_tracking,
    transactions,
)
from deltaexplore.inspect.errors import InspectError
from deltaexplore.inspect.schemas import SCHEMAS


def test_commits_exact(tmp_path):
    build_history_table(tmp_path)
    t = dx.open_table(str(tmp_path))
    c = commits(t, 0, 3)
    assert c.schema == SCHEMAS["commits"]
    actions = list(zip(c.column("version").to_pylist(), c.column("action").to_pylist()))
    assert actions == [
        (0, "commitInfo"), (0, "protocol"), (0, "metaData"), (0, "add"), (0, "add"),
        (1, "commitInfo"), (1, "add"), (1, "remove"),
        (2, "commitInfo"), (2, "remove"), (2, "add"), (2, "txn"),
        (3, "commitInfo"), (3, "protocol"), (3, "metaData"), (3, "domainMetadata"),
    ]  # fmt: skip
    rows = c.to_pylist()
    assert {r["source"] for r in rows} == {"commit"}
    assert rows[0]["operation"] == "CREATE TABLE" and rows[5]["operation"] == "WRITE"
    assert rows[3]["path"] == "a.parquet" and rows[3]["num_records"] == 10 and rows[3]["data_change"] is True
    assert rows[7]["action"] == "remove" and rows[7]["deletion_timestamp"] is not None
    assert rows[10]["deletion_vector"].startswith("p") and rows[10]["dv_cardinality"] == 3
    assert json.loads(rows[11]["raw"]) == {"txn": {"appId": "app1", "version": 7, "lastUpdated": T0 + 2000}}
    assert [r["line"] for r in rows if r["version"] == 2] == [0, 1, 2, 3]
    assert rows[0]["source_file"] == "_delta_log/00000000000000000000.json"
    # defaults: the last commit only; a snapshot's commits end at it
    assert set(commits(t).column("version").to_pylist()) == {3}
    assert set(t.snapshot(1).inspect.commits().column("version").to_pylist()) == {1}
    with pytest.raises(InspectError):
        commits(t, 3, 1)


@pytest.mark.corpus
def test_commits_sources_checkpoint_sidecar_compaction(corpus):
    t = dx.open_table(str(corpus / "delta-rs" / "checkpoint-v2-table"))
    c = commits(t, 0, 9, checkpoints=True)
    by_source = {}
    for s, a in zip(c.column("source").to_pylist(), c.column("action").to_pylist()):
        by_source.setdefault(s, set()).add(a)
    assert {"commit", "checkpoint", "sidecar"} <= set(by_source)
    assert by_source["sidecar"] == {"add"}
    assert {"checkpointMetadata", "sidecar", "protocol", "metaData"} <= by_source["checkpoint"]
    snap8 = t.snapshot(8)
    side8 = [r for r in c.to_pylist() if r["version"] == 8 and r["source"] == "sidecar"]
    assert len(side8) == snap8.num_files
    raw = json.loads(side8[0]["raw"])
    assert raw["add"]["path"] == side8[0]["path"]
    # a log compaction stands in for commits that are gone
    root = CORPUS / "delta-kernel-rs" / "compacted-log-files-table"
    ct = dx.open_table(str(root))
    lst = ct.listing()
    comp = lst.compactions[0]
    rows = commits(ct, comp.version, comp.end_version).to_pylist()
    assert {r["source"] for r in rows} == {"commit"}  # commits still present: they win


def test_commits_from_a_compaction_when_commits_are_gone(corpus, tmp_path):
    import shutil

    src = CORPUS / "delta-kernel-rs" / "compacted-log-files-table"
    dst = tmp_path / "t"
    shutil.copytree(src, dst)
    t = dx.open_table(str(dst))
    comp = t.listing().compactions[0]
    gone = range(comp.version, comp.end_version + 1)
    for v in gone:
        (dst / "_delta_log" / f"{v:020d}.json").unlink()
    rows = commits(dx.open_table(str(dst)), comp.version, comp.end_version).to_pylist()
    assert rows and {r["source"] for r in rows} == {"compaction"}
    assert {r["version"] for r in rows} == {comp.end_version}


def _cm_tables():
    return [
        pytest.param(t, id=t["id"])
        for t in corpus_catalog()
        if t["status"] == "ok" and t["column_mapping_mode"] in ("name", "id")
    ]


@pytest.mark.corpus
@pytest.mark.parametrize("row", _cm_tables())
def test_corpus_column_mapping(row):
    snap = dx.open_table(str(CORPUS / row["table_root"])).snapshot()
    cm = column_mapping(snap)
    assert cm.schema == SCHEMAS["column_mapping"]
    top = {r["column"]: r for r in cm.to_pylist() if r["depth"] == 0}
    for f in snap.schema.fields:
        assert top[f.name]["physical_path"] == f.physical_name
        assert top[f.name]["field_id"] == f.field_id
    ids = [r["field_id"] for r in cm.to_pylist() if r["field_id"] is not None]
    assert len(ids) == len(set(ids))
    assert {r["column"] for r in cm.to_pylist() if r["is_partition"]} == set(snap.partition_columns)


def test_row_tracking_overlaps_and_high_water_mark(tmp_path):
    write_commit(
        tmp_path,
        0,
        [
            commit_info("WRITE", T0),
            protocol(3, 7, [], ["rowTracking", "domainMetadata"]),
            metadata(configuration={"delta.enableRowTracking": "true"}),
            add("a.parquet", 1, stats=stats(10), baseRowId=0, defaultRowCommitVersion=0),
            add("b.parquet", 1, stats=stats(10), baseRowId=10, defaultRowCommitVersion=0),
            add("c.parquet", 1, stats=stats(5), baseRowId=15, defaultRowCommitVersion=0),
            add("d.parquet", 1, stats=stats(5), baseRowId=18, defaultRowCommitVersion=0),
            {"domainMetadata": {"domain": "delta.rowTracking", "configuration": '{"rowIdHighWaterMark":21}', "removed": False}},
        ],
    )
    t = dx.open_table(str(tmp_path))
    rt = row_tracking(t)
    assert rt.schema == SCHEMAS["row_tracking"]
    rows = {r["path"]: r for r in rt.to_pylist()}
    assert (rows["a.parquet"]["last_row_id"], rows["b.parquet"]["last_row_id"]) == (9, 19)
    # a [0,9], b [10,19], c [15,19], d [18,22]: b, c and d share ids
    assert [rows[f"{p}.parquet"]["overlaps"] for p in "abcd"] == [False, True, True, True]
    assert [rows[f"{p}.parquet"]["above_high_water_mark"] for p in "abcd"] == [False, False, False, True]
    dm = domain_metadata(t).to_pylist()
    assert dm == [
        {
            "domain": "delta.rowTracking",
            "configuration": '{"rowIdHighWaterMark":21}',
            "system": True,
            "meaning": "row tracking: rowIdHighWaterMark, the largest row id assigned",
        }
    ]


@pytest.mark.corpus
def test_corpus_clustering_and_row_tracking(corpus):
    t = dx.open_table(str(corpus / "delta-rs" / "table-with-domain-metadata"))
    cl = clustering(t).to_pylist()
    assert [(r["position"], r["column"]) for r in cl] == [(0, "department")]
    assert 0.0 <= cl[0]["clustering_quality"] <= 1.0
    rt = row_tracking(t)
    assert not any(rt.column("overlaps").to_pylist())
    assert not any(rt.column("above_high_water_mark").to_pylist())
    names = set(domain_metadata(t).column("domain").to_pylist())
    assert names == {"com.databricks.liquid", "delta.clustering", "delta.rowTracking"}


def test_transactions(tmp_path):
    build_history_table(tmp_path)
    t = dx.open_table(str(tmp_path))
    tx = transactions(t).to_pylist()
    assert [(r["app_id"], r["version"], r["expired"]) for r in tx] == [("app1", 7, False)]
    assert transactions(t.snapshot(1)).num_rows == 0


@pytest.mark.corpus
def test_catalog_status_by_path(corpus):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = dx.open_table(str(corpus / "delta-kernel-java" / "catalog-owned-preview"))
        cs = catalog_status(t).to_pylist()
    assert [(r["version"], r["published"], r["ratified"], r["status"]) for r in cs] == [
        (0, True, None, "published"),
        (1, False, None, "staged (catalog unknown)"),
        (2, False, None, "staged (catalog unknown)"),
    ]


# -- the namespace -----------------------------------------------------------------------------


def test_every_function_is_reachable_and_matches_its_schema(tmp_path):
    build_history_table(tmp_path)
    t = dx.open_table(str(tmp_path))
    calls = {
        "layout": ("id",),
        "layout_density": ("id",),
        "explain": ("id > 3",),
        "deleted_rows": ("b.parquet",),
        "diff_rows": (0, 2),  # reads the files that differ
        "at_versions": ("count(*)", [0, 2]),
    }
    for name, fn in dxi.FUNCTIONS.items():
        args = calls.get(name, ())
        if args is None:
            continue
        snap = t.snapshot(2)
        for obj in (t, snap):
            out = getattr(obj.inspect, name)(*args)
            direct = fn(obj, *args)
            if name in SCHEMAS:
                assert out.schema == SCHEMAS[name], name
            assert out.schema == direct.schema, name
            if name not in ("vacuum_preview", "reconstructable_versions", "log_files", "catalog_status"):
                assert out.to_pylist() == direct.to_pylist(), name


def test_snapshot_namespace_is_pinned_to_its_version(tmp_path):
    build_history_table(tmp_path)
    t = dx.open_table(str(tmp_path))
    s1 = t.snapshot(1)
    assert s1.inspect.files().num_rows == 2 and t.inspect.files().num_rows == 2
    assert s1.inspect.history().column("version").to_pylist() == [1, 0]
    assert t.inspect.history(2).column("version").to_pylist() == [3, 2]
    assert "diff" in repr(t.inspect)


def test_importing_deltaexplore_leaves_altair_out():
    code = "import sys, deltaexplore, deltaexplore.inspect; print('altair' in sys.modules, 'vl_convert' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False False"


def test_caches_are_freed_with_the_table(tmp_path):
    import gc
    import weakref

    from deltaexplore.inspect import diff, files

    build_history_table(tmp_path)
    t = dx.open_table(str(tmp_path))
    diff(t, 0, 3)
    files(t)
    ref = weakref.ref(t)
    del t
    gc.collect()
    assert ref() is None
