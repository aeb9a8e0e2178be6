"""`layout_chart` on more files than marks: groups of consecutive files whose numbers and texts
agree with the files they stand for (computed on numbers first: a million files take
milliseconds, not seconds)."""

from __future__ import annotations

import json
import random

import pytest
from helpers import add, commit_info, metadata, protocol, write_commit

import deltaexplore as dx
from deltaexplore import inspect

pytest.importorskip("altair", reason="the viz extra is not installed")

from deltaexplore import viz


@pytest.mark.parametrize("kind", ["long", "string", "double"])
def test_groups_agree_with_their_files(tmp_path, kind):
    rng = random.Random(5)
    schema = {"type": "struct", "fields": [{"name": "c", "type": kind, "nullable": True, "metadata": {}}]}
    actions = [commit_info("WRITE"), protocol(), metadata(schema=schema)]
    for i in range(1000):
        a, b = sorted(rng.randint(0, 99_999) for _ in range(2))
        lo, hi = (f"k{a:06d}", f"k{b:06d}") if kind == "string" else (a, b) if kind == "long" else (a / 7, b / 7)
        stats = {"numRecords": 5, "minValues": {"c": lo}, "maxValues": {"c": hi}, "nullCount": {"c": 0}}
        actions.append(add(f"f{i:04d}.parquet", 10, stats=json.dumps(stats) if i % 17 else None))
    write_commit(tmp_path, 0, actions)
    lay = inspect.layout(dx.open_table(str(tmp_path)), "c")
    spec = viz.layout_chart(lay, "c", max_files=40).to_dict(validate=False)
    groups = sorted(next(iter(spec["datasets"].values())), key=lambda r: r["rank"])
    files = sorted((r for r in lay.to_pylist() if r["rank"] is not None), key=lambda r: r["rank"])
    assert len(groups) == 40 and sum(g["files"] for g in groups) == len(files)
    for g in groups:
        members = files[g["rank_lo"] : g["rank_hi"] + 1]
        assert len(members) == g["files"] and g["path"] == f"{g['files']} files"
        assert g["depth"] == max(m["overlap_depth"] for m in members)
        value = float if kind == "double" else (int if kind == "long" else str)
        assert value(g["min"]) == min(m["min"] for m in members)
        assert value(g["max"]) == max(m["max"] for m in members)
