"""`commit_infos` (provenance of every commit from its commitInfo alone) agrees with `history`;
`layout_density` (files per value range) agrees with brute force over the per-file ranges."""

from __future__ import annotations

import datetime as dt
import decimal
import itertools
import json
import random
import warnings

import numpy as np
import pyarrow as pa
import pytest
from corpus_paths import CORPUS, corpus_catalog
from helpers import add, commit_info, metadata, protocol, remove, write_commit

import deltaexplore as dx
from deltaexplore.inspect import commit_infos, layout, layout_density
from deltaexplore.inspect.layout_density import bound_positions, file_positions
from deltaexplore.inspect.schemas import COMMIT_INFOS_SCHEMA

T0 = 1_700_000_000_000
PROVENANCE = [
    "version",
    "timestamp",
    "operation",
    "parameters",
    "metrics",
    "user_id",
    "user_name",
    "engine",
    "isolation_level",
    "is_blind_append",
    "read_version",
    "user_metadata",
    "txn_id",
    "cluster_id",
    "commit_info",
]


def _same_as_history(t: dx.Table) -> None:
    ci = commit_infos(t)
    assert ci.schema == COMMIT_INFOS_SCHEMA
    h = t.history()
    assert ci.select(PROVENANCE).to_pylist() == h.select(PROVENANCE).to_pylist()


def test_commit_infos_agree_with_history_and_read_only_the_head(tmp_path):
    big = [add(f"big-{i:05d}-{'x' * 40}.parquet", 1000 + i) for i in range(2000)]  # > 64 KiB before commitInfo
    info = commit_info("WRITE", T0 + 2000)
    info["commitInfo"].update(
        userId="42",
        userName="<img src=x onerror=alert(1)>",
        userMetadata="nightly <b>load</b>",
        engineInfo="Spark/4.0 Delta/4.0",
        operationMetrics={"numFiles": "2000", "numOutputBytes": "123456"},
        isolationLevel="Serializable",
        isBlindAppend=True,
    )
    write_commit(tmp_path, 0, [commit_info("CREATE TABLE", T0), protocol(), metadata()])
    write_commit(tmp_path, 1, [*big, info])  # commitInfo last: found after the head
    write_commit(tmp_path, 2, [add("late.parquet", 5)])  # no commitInfo at all
    write_commit(tmp_path, 3, [info, add("c.parquet", 7)])
    t = dx.open_table(str(tmp_path))
    _same_as_history(t)
    rows = {r["version"]: r for r in commit_infos(t).to_pylist()}
    assert rows[1]["user_name"] == "<img src=x onerror=alert(1)>" and rows[1]["user_metadata"] == "nightly <b>load</b>"
    assert dict(rows[3]["metrics"]) == {"numFiles": "2000", "numOutputBytes": "123456"}
    assert rows[2]["operation"] is None and rows[2]["commit_info"] is None
    assert rows[1]["commit_bytes"] == (tmp_path / "_delta_log" / f"{1:020d}.json").stat().st_size
    assert [r["version"] for r in commit_infos(t, 1, 2).to_pylist()] == [2, 1]
    assert [r["version"] for r in commit_infos(t.snapshot(1)).to_pylist()] == [1, 0]  # a snapshot's history ends there
    with pytest.raises(dx.VersionNotFoundError):
        commit_infos(t, 3, 1)


CORPUS_TABLES = [t for t in corpus_catalog() if t.get("is_table", True) and t["status"] in ("ok", "log-only")]


@pytest.mark.corpus
@pytest.mark.parametrize("row", CORPUS_TABLES, ids=[t["id"] for t in CORPUS_TABLES])
def test_commit_infos_agree_with_history_on_the_corpus(row):
    if "{{" in row.get("log_fingerprint", ""):
        pytest.skip("log is a template")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dx.CatalogManagedWarning)
        t = dx.open_table(str(CORPUS / row["table_root"]))
        try:
            t.snapshot()
        except dx.DeltaExploreError as exc:
            pytest.skip(f"refused by the core: {exc}")
        _same_as_history(t)


# -- layout density --------------------------------------------------------------------------


def _table(root, kind: str, ranges: list[tuple | None]):
    types = {"int": "long", "float": "double", "str": "string", "date": "date", "ts": "timestamp", "dec": "decimal(10,2)"}
    schema = {"type": "struct", "fields": [{"name": "c", "type": types[kind], "nullable": True, "metadata": {}}]}
    actions = [commit_info("WRITE", T0), protocol(), metadata(schema=schema)]
    for i, r in enumerate(ranges):
        s = {"numRecords": 10}
        if r is not None:
            s.update(minValues={"c": r[0]}, maxValues={"c": r[1]}, nullCount={"c": 0})
        actions.append(add(f"f{i:04d}.parquet", 100 + i, stats=json.dumps(s)))
    write_commit(root, 0, actions)
    return dx.open_table(str(root))


def _brute(layout_rows: list[dict], density_rows: list[dict]) -> None:
    """Files per bin and the depth there, counted file by file and point by point."""
    ranges = [(r["min"], r["max"]) for r in layout_rows if r["has_stats"]]
    for b in density_rows:
        lo, hi = b["lo"], b["hi"]
        files = [r for r in ranges if r[0] <= hi and r[1] >= lo]
        assert b["files"] == len(files), b
        points = [lo] + [r[0] for r in ranges if lo <= r[0] <= hi]
        assert b["max_depth"] == max(sum(1 for r in ranges if r[0] <= p <= r[1]) for p in points), b
        assert b["starts"] == sum(1 for r in ranges if lo <= r[0] <= hi), b


def _random_ranges(kind: str, n: int, seed: int) -> list[tuple | None]:
    rng = random.Random(seed)
    out: list[tuple | None] = []
    for _ in range(n):
        if rng.random() < 0.1:
            out.append(None)
            continue
        a, b = sorted(rng.randint(0, 5000) for _ in range(2))
        if kind == "int":
            out.append((a, b))
        elif kind == "dec":
            out.append((a / 100, b / 100))
        elif kind == "date":
            base = dt.date(2024, 1, 1)
            out.append(((base + dt.timedelta(days=a // 10)).isoformat(), (base + dt.timedelta(days=b // 10)).isoformat()))
        elif kind == "ts":
            base = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
            out.append(((base + dt.timedelta(seconds=a)).isoformat(), (base + dt.timedelta(seconds=b)).isoformat()))
        else:
            out.append((f"k{a:05d}", f"k{b:05d}"))
    return out


@pytest.mark.parametrize("kind", ["int", "dec", "date", "ts", "str"])
def test_layout_density_matches_brute_force(tmp_path, kind):
    t = _table(tmp_path, kind, _random_ranges(kind, 150, seed=len(kind)))
    lay = layout(t, "c").to_pylist()
    for bins in (1, 7, 100):
        d = layout_density(t, "c", bins=bins)
        rows = d.to_pylist()
        assert 1 <= len(rows) <= bins and [r["bin"] for r in rows] == list(range(len(rows)))
        assert d.schema.field("lo").type == d.schema.field("hi").type
        _brute(lay, rows)
        # every value is in exactly one bin: bins tile the range in order
        assert all(a["hi"] < b["lo"] for a, b in itertools.pairwise(rows))
        assert rows[0]["lo"] == min(r["min"] for r in lay if r["has_stats"])
        assert rows[-1]["hi"] == max(r["max"] for r in lay if r["has_stats"])


def test_layout_density_of_floats_and_positions_pick_the_same_files(tmp_path):
    rng = np.random.default_rng(3)
    lo = rng.uniform(-50, 50, 300)
    ranges = [(float(a), float(a + w)) for a, w in zip(lo, rng.exponential(3, 300))]
    t = _table(tmp_path, "float", ranges)
    lay = layout(t, "c")
    rows = layout_density(t, "c", bins=40).to_pylist()
    _brute(lay.to_pylist(), rows)
    positions, integral = bound_positions(lay)
    assert integral is False
    # the explorer's brush filter: files with min_position < end and max_position >= start
    b0, b1 = rows[5], rows[9]
    mins = positions.column("min_position").to_numpy(zero_copy_only=False)
    maxs = positions.column("max_position").to_numpy(zero_copy_only=False)
    picked = set(np.flatnonzero((mins <= b1["position_hi"]) & (maxs >= b0["position_lo"])))
    expected = {i for i, (a, b) in enumerate(ranges) if a <= b1["hi"] and b >= b0["lo"]}
    assert picked == expected


def test_layout_density_edge_cases(tmp_path):
    t = _table(tmp_path / "one", "int", [(5, 5), (5, 5), None])
    rows = layout_density(t, "c").to_pylist()
    assert rows == [{"bin": 0, "lo": 5, "hi": 5, "position_lo": 5.0, "position_hi": 6.0, "files": 2, "max_depth": 2, "starts": 2}]
    empty = _table(tmp_path / "none", "int", [None, None])
    assert layout_density(empty, "c").num_rows == 0
    with pytest.raises(dx.DeltaExploreError, match="bins must be a positive integer"):
        layout_density(t, "c", bins=0)
    dec = _table(tmp_path / "dec", "dec", [(1.5, 2.25)])
    assert layout_density(dec, "c").to_pylist()[0]["lo"] == decimal.Decimal("1.50")
    assert layout_density(dec, "c").schema.field("lo").type == pa.decimal128(10, 2)


# -- the overview without row counts ---------------------------------------------------------

ROW_METRICS = {("size", "rows"), ("size", "live_rows"), ("size", "files_without_stats"), ("layout", "deleted_ratio")}


@pytest.mark.corpus
@pytest.mark.parametrize("row", CORPUS_TABLES, ids=[t["id"] for t in CORPUS_TABLES])
def test_overview_without_rows_agrees_on_everything_else(row):
    """`overview(rows=False)` (the explorer's first view: no statistics read) and `overview()`
    give the same numbers for every metric but the row counts, which it leaves null."""
    from deltaexplore.inspect import overview

    if "{{" in row.get("log_fingerprint", ""):
        pytest.skip("log is a template")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dx.CatalogManagedWarning)
        t = dx.open_table(str(CORPUS / row["table_root"]))
        try:
            snap = t.snapshot()
            full = overview(snap).to_pylist()
        except dx.DeltaExploreError as exc:
            pytest.skip(f"refused: {exc}")
        lite = overview(snap, rows=False).to_pylist()
    assert [(r["section"], r["metric"]) for r in lite] == [(r["section"], r["metric"]) for r in full]
    for a, b in zip(lite, full):
        if (a["section"], a["metric"]) in ROW_METRICS:
            assert a["value"] is None and a["number"] is None and "not counted" in a["detail"]
        else:
            assert a == b


def test_positions_and_density_kept_per_snapshot_and_column_equal_fresh_ones(tmp_path):
    """Two columns at two versions, asked in turns on one table, after `layout` or not: each
    answer equals one computed on a fresh snapshot (the per-snapshot, per-column cache never
    hands one column's or version's positions to another)."""
    schema = {
        "type": "struct",
        "fields": [{"name": n, "type": ty, "nullable": True, "metadata": {}} for n, ty in (("a", "long"), ("s", "string"))],
    }

    def stats(a: tuple[int, int], s: tuple[str, str] | None) -> str:
        body = {"numRecords": 10, "minValues": {"a": a[0]}, "maxValues": {"a": a[1]}, "nullCount": {"a": 0}}
        if s is not None:
            body["minValues"]["s"], body["maxValues"]["s"], body["nullCount"]["s"] = s[0], s[1], 0
        return json.dumps(body)

    first = [
        add(f"f{i}.parquet", 100, stats=stats((i * 10, i * 10 + 15), (f"k{9 - i}", f"k{9 - i}z") if i % 3 else None))
        for i in range(8)
    ]
    write_commit(tmp_path, 0, [commit_info("WRITE", T0), protocol(), metadata(schema=schema), *first])
    later = [add(f"g{i}.parquet", 100, stats=stats((500 - i * 7, 520 - i * 5), (f"m{i}", f"m{i}9"))) for i in range(5)]
    write_commit(tmp_path, 1, [commit_info("WRITE", T0 + 1), remove("f0.parquet"), *later])
    t = dx.open_table(str(tmp_path))
    asked = [(r, v, c) for r in range(2) for v in (0, 1) for c in ("a", "s")]
    for r, v, c in asked:
        if r == 0 and v == 0:
            layout(t, c, version=v)  # the density takes layout's sorted keys; at v1 it sorts its own
        kept = file_positions(t, c, version=v)
        density = layout_density(t, c, bins=7, version=v)
        fresh = dx.open_table(str(tmp_path)).snapshot(v)
        positions, integral = bound_positions(layout(fresh, c))
        assert kept[0].equals(positions) and kept[1] == integral, (v, c)
        assert density.equals(layout_density(dx.open_table(str(tmp_path)).snapshot(v), c, bins=7)), (v, c)
        _brute(layout(fresh, c).to_pylist(), density.to_pylist())
    assert file_positions(t, "s", version=0)[0].column("min_position").null_count == 3  # files 0, 3, 6 lack bounds of s
