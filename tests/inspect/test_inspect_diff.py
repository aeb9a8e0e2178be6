"""diff / diff_files / diff_rows: exact values on a hand-built table, the incremental path against
full replay on the corpus, and the net row diff against the change data feed (more: test_row_diff.py)."""

from __future__ import annotations

import warnings

import pyarrow as pa
import pytest
from corpus_paths import CORPUS, corpus_catalog
from inspect_tables import build_history_table

import deltaexplore as dx
from deltaexplore.inspect import diff as diff_fn
from deltaexplore.inspect import diff_files, diff_rows
from deltaexplore.inspect.diff import _compute, _full, _incremental, _range_files, _to_arrow
from deltaexplore.inspect.errors import InspectError
from deltaexplore.inspect.schemas import DIFF_FILES_SCHEMA, DIFF_SCHEMA


@pytest.fixture
def history_table(tmp_path):
    info = build_history_table(tmp_path)
    return dx.open_table(str(tmp_path)), info


def _rows(t, section=None):
    rows = t.to_pylist()
    return [r for r in rows if section is None or r["section"] == section]


def test_diff_files_sections_exact(history_table):
    table, info = history_table
    sizes = info["sizes"]
    d = diff_fn(table, 0, 3)
    assert d.schema == DIFF_SCHEMA
    files = {r["change"]: r for r in _rows(d, "files")}
    assert (files["added"]["files"], files["added"]["bytes"], files["added"]["rows"]) == (1, sizes["c.parquet"], 5)
    assert (files["removed"]["files"], files["removed"]["bytes"], files["removed"]["rows"]) == (1, sizes["a.parquet"], 10)
    assert (files["dv_changed"]["files"], files["dv_changed"]["rows"]) == (1, 3)
    assert files["dv_changed"]["detail"] == "1 file re-added with another deletion vector: 3 rows deleted in place"
    assert files["added"]["detail"] == "1 file added"
    net = files["net"]
    assert (net["files"], net["bytes"], net["rows"]) == (0, sizes["c.parquet"] - sizes["a.parquet"], 5 - 10 - 3)


def test_diff_metadata_sections_exact(history_table):
    table, _ = history_table
    d = diff_fn(table, 0, 3)
    got = {(r["section"], r["change"], r["name"], r["before"], r["after"]) for r in d.to_pylist() if r["section"] != "files"}
    assert ("schema", "added", "extra", None, "long") in got
    assert ("properties", "changed", "x", "1", "2") in got
    assert ("properties", "added", "y", None, "3") in got
    assert ("protocol", "changed", "minWriterVersion", "2", "4") in got
    for feature in ("checkConstraints", "changeDataFeed", "generatedColumns"):
        assert ("features", "added", feature, None, "writer") in got
    assert ("domain_metadata", "added", "my.domain", None, '{"k": 1}') in got
    assert ("txn", "added", "app1", None, "7") in got
    cdf = _rows(d, "cdf")
    assert len(cdf) == 1 and cdf[0]["change"] == "unavailable"
    sections = {r[0] for r in got}
    assert "partitioning" not in sections and "metadata" not in sections


def test_diff_files_per_file_and_reverse(history_table):
    table, _info = history_table
    f = diff_files(table, 0, 3)
    assert f.schema == DIFF_FILES_SCHEMA
    by_path = {r["path"]: r for r in f.to_pylist()}
    assert set(by_path) == {"a.parquet", "b.parquet", "c.parquet"}
    assert by_path["a.parquet"]["change"] == "removed" and by_path["a.parquet"]["rows_delta"] == -10
    assert by_path["c.parquet"]["change"] == "added" and by_path["c.parquet"]["rows_delta"] == 5
    b = by_path["b.parquet"]
    assert (b["change"], b["deleted_before"], b["deleted_after"], b["rows_delta"]) == ("dv_changed", 0, 3, -3)
    assert b["dv_before"] is None and b["dv_after"].startswith("p")
    back = {r["path"]: r for r in diff_files(table, 3, 0).to_pylist()}
    assert back["a.parquet"]["change"] == "added" and back["c.parquet"]["change"] == "removed"
    assert (back["b.parquet"]["deleted_before"], back["b.parquet"]["deleted_after"], back["b.parquet"]["rows_delta"]) == (3, 0, 3)
    files = {r["change"]: r for r in _rows(diff_fn(table, 3, 0), "files")}
    assert "3 rows restored" in files["dv_changed"]["detail"]


def test_diff_defaults_and_namespace(history_table):
    table, _ = history_table
    # default: previous version -> this one
    d = table.snapshot(2).inspect.diff()
    files = {r["change"]: r["files"] for r in _rows(d, "files")}
    assert files == {"added": 0, "removed": 0, "dv_changed": 1, "net": 0}
    assert table.inspect.diff_files(2, 2).num_rows == 0
    assert all(r["files"] in (0, None) for r in _rows(table.inspect.diff(3, 3), "files"))
    with pytest.raises(InspectError):
        diff_fn(table, -1, 2)


def _assert_small_equals_polars(table, a, b, files) -> None:
    """The file diff of a few actions computed in Python (`_incremental_small`) equals the
    polars one: the changes (values, types, order) and the adds it replayed."""
    import importlib

    diff_module = importlib.import_module("deltaexplore.inspect.diff")  # the package exports a `diff` function

    small = _incremental(table, a, b, files)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(diff_module, "SMALL_FILE_DIFF", -1)
        polars = _incremental(table, a, b, files)
    assert small[0].schema == polars[0].schema and small[0].equals(polars[0])
    for got, want in zip(small[1], polars[1]):
        assert got.schema == want.schema and got.equals(want)


def test_incremental_equals_full(history_table):
    table, _ = history_table
    for lo, hi in [(0, 1), (0, 2), (0, 3), (1, 3), (2, 3)]:
        a, b = table.snapshot(lo), table.snapshot(hi)
        inc, (older, newer) = _incremental(table, a, b, _range_files(table, lo, hi))
        full = _to_arrow(_full(a, b))
        _assert_small_equals_polars(table, a, b, _range_files(table, lo, hi))
        assert inc.to_pylist() == full.to_pylist(), (lo, hi)
        # the adds it replayed on the way (what the row diff reads): the older version's of every
        # touched path, and the newer version's of every path added or given another DV
        changed = [r["path"] for r in inc.to_pylist() if r["change"] != "removed"]
        assert sorted(newer.column("path").to_pylist()) == sorted(changed)
        want = b.add_actions_for(pa.array(changed, pa.string())).select(newer.column_names)
        assert sorted(newer.to_pylist(), key=str) == sorted(want.to_pylist(), key=str)
        touched = older.column("path")
        assert sorted(older.to_pylist(), key=str) == sorted(a.add_actions_for(touched).to_pylist(), key=str)


def test_full_path_when_commits_are_gone(tmp_path):
    """Commits between two checkpoints cleaned up: the diff replays both versions."""
    import shutil

    src = CORPUS / "delta-kernel-java" / "basic-dv-with-checkpoint"
    if not (src / "_delta_log").exists():
        pytest.skip(f"corpus table absent: {src}")
    dst = tmp_path / "t"
    shutil.copytree(src, dst)
    table = dx.open_table(str(dst))
    expected = _to_arrow(_full(table.snapshot(10), table.snapshot(40))).to_pylist()
    assert expected  # the versions differ
    _, _, _, method, _ = _compute(table, 10, 40)
    assert method == "incremental"
    for v in range(11, 40):
        (dst / "_delta_log" / f"{v:020d}.json").unlink()
    table = dx.open_table(str(dst))
    changes, _, _, method, _ = _compute(table, 10, 40)
    assert method == "full"
    assert changes.to_pylist() == expected


def _corpus_pairs():
    out = []
    for t in corpus_catalog():
        if t["status"] != "ok" or t["latest_version"] < 1:
            continue
        lv = t["latest_version"]
        out.append(pytest.param(t["table_root"], 0, lv, id=f"{t['id']}:0-{lv}"))
        if lv > 2:
            out.append(pytest.param(t["table_root"], lv // 2, lv, id=f"{t['id']}:{lv // 2}-{lv}"))
    return out


@pytest.mark.corpus
@pytest.mark.parametrize(("root", "lo", "hi"), _corpus_pairs())
def test_corpus_incremental_matches_full_replay(root, lo, hi):
    table = dx.open_table(str(CORPUS / root))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            a, b = table.snapshot(lo), table.snapshot(hi)
        except dx.DeltaExploreError as exc:
            pytest.skip(f"version not reconstructable: {exc}")
        files = _range_files(table, lo, hi)
        if files is None:
            pytest.skip("commits of the range were cleaned up")
        inc = _incremental(table, a, b, files)[0].to_pylist()
        full = _to_arrow(_full(a, b)).to_pylist()
        _assert_small_equals_polars(table, a, b, files)
    assert [r["path"] for r in inc] == [r["path"] for r in full]
    for x, y in zip(inc, full):
        # a checkpoint written without JSON stats knows no row counts: the commits may
        if y["num_records"] is None:
            x = {**x, "num_records": None, "rows_delta": None}
        assert x == y
    net = next(r for r in diff_fn(table, lo, hi).to_pylist() if r["change"] == "net")
    active = b.num_files - a.num_files
    assert net["files"] == active


@pytest.mark.corpus
def test_diff_rows_equals_the_net_change_data_feed(corpus):
    """With a change data feed, the net row diff from the files is the feed's net change."""
    from collections import Counter

    table = dx.open_table(str(corpus / "dat" / "cdf" / "delta"))
    rows = diff_rows(table, 0, 2)
    names = [n for n in rows.column_names if not n.startswith("_")]
    got = Counter()
    for r in rows.to_pylist():
        got[tuple(r[n] for n in names)] += r["_count"] if r["_change"] == "insert" else -r["_count"]
    feed = Counter()
    for r in table.changes(1, 2).to_pylist():
        sign = 1 if r["_change_type"] in ("insert", "update_postimage") else -1
        feed[tuple(r[n] for n in names)] += sign
    assert rows.num_rows > 0
    assert +got == +feed and -got == -feed
    assert diff_rows(table, 1, 1).num_rows == 0
    cdf = next(r for r in diff_fn(table, 0, 2).to_pylist() if r["section"] == "cdf")
    assert cdf["change"] == "available"


@pytest.mark.corpus
def test_diff_schema_rename_by_field_id(corpus, tmp_path):
    """Column mapping: a rename keeps the field id, so it is a rename, not drop + add."""
    import shutil

    from helpers import commit_info, write_commit

    src = corpus / "delta-golden" / "table-with-columnmapping-mode-name"
    dst = tmp_path / "t"
    shutil.copytree(src, dst)
    table = dx.open_table(str(dst))
    snap = table.snapshot()
    md = snap.metadata.to_json()
    import json

    schema = json.loads(md["schemaString"])
    old_name = schema["fields"][0]["name"]
    schema["fields"][0]["name"] = old_name + "_renamed"
    md["schemaString"] = json.dumps(schema)
    write_commit(dst, snap.version + 1, [commit_info("RENAME COLUMN"), {"metaData": md}])
    d = dx.open_table(str(dst)).inspect.diff()
    schema_rows = [r for r in d.to_pylist() if r["section"] == "schema"]
    assert [(r["change"], r["before"], r["after"]) for r in schema_rows] == [("renamed", old_name, old_name + "_renamed")]


def test_diff_widening_nullability_partitioning_domains_txns(tmp_path):
    """Every metadata section that can change, changed or removed (not only added)."""
    from helpers import add, commit_info, metadata, protocol, write_commit

    def field(name, typ, nullable=True, meta=None):
        return {"name": name, "type": typ, "nullable": nullable, "metadata": meta or {}}

    before = {
        "type": "struct",
        "fields": [
            field("id", "integer", False),
            field("amount", "decimal(10,2)"),
            field("name", "string"),
            field("day", "string"),
        ],
    }
    after = {
        "type": "struct",
        "fields": [
            field("id", "long", True),
            field("amount", "decimal(12,2)"),
            field("name", "integer"),
            field("day", "string", meta={"comment": "partition day"}),
        ],
    }
    write_commit(
        tmp_path,
        0,
        [
            commit_info("CREATE TABLE"),
            protocol(1, 2),
            metadata(before),
            {"domainMetadata": {"domain": "keep.me", "configuration": '{"a":1}', "removed": False}},
            {"domainMetadata": {"domain": "drop.me", "configuration": "{}", "removed": False}},
            {"txn": {"appId": "app-1", "version": 1}},
            add("f0.parquet", records=1),
        ],
    )
    write_commit(
        tmp_path,
        1,
        [
            commit_info("REPLACE TABLE"),
            metadata(after, partition_columns=["day"]),
            {"domainMetadata": {"domain": "keep.me", "configuration": '{"a":2}', "removed": False}},
            {"domainMetadata": {"domain": "drop.me", "configuration": "{}", "removed": True}},
            {"txn": {"appId": "app-1", "version": 5}},
        ],
    )
    got = {
        (r["section"], r["change"], r["name"], r["before"], r["after"])
        for r in diff_fn(dx.open_table(str(tmp_path)), 0, 1).to_pylist()
    }
    expected = {
        ("schema", "widened", "id", "integer", "long"),
        ("schema", "nullability", "id", "not null", "nullable"),
        ("schema", "widened", "amount", "decimal(10,2)", "decimal(12,2)"),
        ("schema", "type_changed", "name", "string", "integer"),
        ("schema", "metadata", "day", "{}", '{"comment": "partition day"}'),
        ("partitioning", "changed", "partitionColumns", "[]", '["day"]'),
        ("domain_metadata", "changed", "keep.me", '{"a":1}', '{"a":2}'),
        ("domain_metadata", "removed", "drop.me", "{}", None),
        ("txn", "changed", "app-1", "1", "5"),
    }
    assert expected <= got, sorted(expected - got)
    # and back again: every change reverses
    back = {(r["section"], r["change"], r["name"]) for r in diff_fn(dx.open_table(str(tmp_path)), 1, 0).to_pylist()}
    assert {("schema", "type_changed", "id"), ("schema", "nullability", "id"), ("domain_metadata", "added", "drop.me")} <= back


def test_small_file_diff_takes_the_older_values_the_newer_add_lacks(tmp_path):
    """A file re-added with a DV and without stats or partition values keeps its row count
    from the older add (the polars path coalesces newer and older): both paths agree."""
    from helpers import add, metadata, protocol, remove, write_commit

    dv = {"storageType": "u", "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^", "offset": 1, "sizeInBytes": 36, "cardinality": 2}
    write_commit(
        tmp_path,
        0,
        [
            protocol(3, 7, ["deletionVectors"], ["deletionVectors"]),
            metadata(),
            add("a.parquet", 10, records=10),
            add("b.parquet", 20),
        ],
    )
    bare = {"add": {"path": "a.parquet", "size": 10, "modificationTime": 5, "dataChange": True, "deletionVector": dv}}
    write_commit(tmp_path, 1, [remove("a.parquet"), bare, remove("b.parquet")])
    table = dx.open_table(str(tmp_path))
    a, b = table.snapshot(0), table.snapshot(1)
    changes = _incremental(table, a, b, _range_files(table, 0, 1))[0].to_pylist()
    assert [(r["path"], r["change"], r["num_records"], r["rows_delta"]) for r in changes] == [
        ("a.parquet", "dv_changed", 10, None),
        ("b.parquet", "removed", None, None),
    ]
    _assert_small_equals_polars(table, a, b, _range_files(table, 0, 1))
