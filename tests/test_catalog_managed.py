"""Catalog-managed tables: the catalog decides which staged commits are ratified."""

from __future__ import annotations

import shutil
import warnings

import pytest
from helpers import add, commit_info, metadata, protocol, write_commit

import deltaexplore as dx

CM_PROTOCOL = protocol(3, 7, ["catalogManaged"], ["catalogManaged", "inCommitTimestamp"])
ICT = {"delta.enableInCommitTimestamps": "true"}


@pytest.fixture
def owned(corpus, tmp_path):
    dst = tmp_path / "t"
    shutil.copytree(corpus / "delta-kernel-java" / "catalog-owned-preview", dst)
    return dst


def test_path_only_open_reads_published_commits_and_warns(owned):
    with pytest.warns(dx.CatalogManagedWarning, match="published"):
        snap = dx.open_table(str(owned)).snapshot()
    assert snap.version == 0
    assert snap.published_only


def test_file_catalog_supplies_ratified_staged_commits(owned, tmp_path):
    staged = sorted((owned / "_delta_log" / "_staged_commits").glob("*.json"))
    catalog = dx.FileCatalog(tmp_path / "catalog.json")
    catalog.register(str(owned), latest_version=0)
    for path in staged:
        catalog.ratify(str(owned), int(path.name.split(".")[0]), path=f"_delta_log/_staged_commits/{path.name}")
    table = dx.open_table(str(owned), catalog=catalog)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        snap = table.snapshot()
    assert snap.version == 2 and not snap.published_only
    rows = snap.to_arrow().to_pylist()
    assert sorted((r["part1"], r["col1"]) for r in rows) == sorted((x // 100, x) for x in range(200))
    assert int(snap.timestamp.timestamp() * 1000) == 1749830881799  # in-commit timestamp
    assert [h["version"] for h in table.history().to_pylist()] == [2, 1, 0]


def test_catalog_caps_versions_and_wins_over_published(tmp_path):
    root = tmp_path / "t"
    write_commit(root, 0, [commit_info(inCommitTimestamp=1), CM_PROTOCOL, metadata(configuration=ICT), add("a.parquet")])
    write_commit(root, 1, [commit_info(inCommitTimestamp=2), add("published-1.parquet")])
    write_commit(root, 2, [commit_info(inCommitTimestamp=3), add("published-2-not-ratified.parquet")])
    staged = root / "_delta_log" / "_staged_commits"
    staged.mkdir()
    (staged / f"{1:020d}.3a0d65cd-4056-49b8-937b-95f9e3ee90e5.json").write_text(
        '{"commitInfo":{"inCommitTimestamp":2}}\n{"add":{"path":"ratified-1.parquet","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true}}\n'
    )
    (staged / f"{2:020d}.016ae953-37a9-438e-8683-9a9a4a79a395.json").write_text("{}\n")  # rejected attempt
    catalog = dx.FileCatalog(tmp_path / "catalog.json")
    catalog.register(str(root), latest_version=0)
    catalog.ratify(str(root), 1, path=f"_delta_log/_staged_commits/{1:020d}.3a0d65cd-4056-49b8-937b-95f9e3ee90e5.json")
    snap = dx.open_table(str(root), catalog=catalog).snapshot()
    assert snap.version == 1  # version 2 is published but not ratified: ignored
    assert sorted(snap.files().column("path").to_pylist()) == ["a.parquet", "ratified-1.parquet"]


def test_inline_commit(tmp_path):
    root = tmp_path / "t"
    write_commit(root, 0, [commit_info(inCommitTimestamp=1), CM_PROTOCOL, metadata(configuration=ICT), add("a.parquet")])
    catalog = dx.FileCatalog(tmp_path / "catalog.json")
    catalog.register(str(root), latest_version=0)
    catalog.ratify(
        str(root),
        1,
        content=b'{"commitInfo":{"inCommitTimestamp":5}}\n{"add":{"path":"inline.parquet","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true}}\n',
    )
    snap = dx.open_table(str(root), catalog=catalog).snapshot()
    assert snap.version == 1
    assert "inline.parquet" in snap.files().column("path").to_pylist()


def test_ratify_out_of_order_is_a_conflict(tmp_path):
    catalog = dx.FileCatalog(tmp_path / "catalog.json")
    catalog.register("/some/table", latest_version=3)
    with pytest.raises(dx.CommitConflictError):
        catalog.ratify("/some/table", 5, path="x")


def test_catalog_status_with_a_catalog(owned, tmp_path):
    """inspect.catalog_status asks the table's catalog: version 1 ratified but not published,
    version 2 staged but not ratified (a writer that lost, or has not finished)."""
    from deltaexplore.inspect import catalog_status

    staged = sorted((owned / "_delta_log" / "_staged_commits").glob("*.json"))
    assert [int(p.name.split(".")[0]) for p in staged] == [1, 2]
    catalog = dx.FileCatalog(tmp_path / "catalog.json")
    catalog.register(str(owned), latest_version=0)
    catalog.ratify(str(owned), 1, path=f"_delta_log/_staged_commits/{staged[0].name}")
    rows = catalog_status(dx.open_table(str(owned), catalog=catalog)).to_pylist()
    assert [(r["version"], r["published"], r["ratified"], r["staged_files"], r["status"]) for r in rows] == [
        (0, True, True, 0, "published"),
        (1, False, True, 1, "ratified-unpublished"),
        (2, False, False, 1, "staged-unratified"),
    ]
    assert rows[1]["path"].endswith(staged[0].name) and rows[2]["path"].endswith(staged[1].name)
