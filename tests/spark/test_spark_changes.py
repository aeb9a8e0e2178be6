"""`dx.spark.changes` against the core's change data feed (itself checked against the rows
delta-kernel-rs's tests expect): every CDF case of the corpus."""

from __future__ import annotations

import json

import pytest
from corpus_paths import CORPUS, corpus_catalog

import deltaexplore as dx

from .conftest import SPARK_MARKS, assert_same_rows

pytestmark = [*SPARK_MARKS, pytest.mark.corpus]


def _cases() -> list[tuple[str, int, int | None]]:
    expected = CORPUS / "delta-kernel-rs" / "_expected" / "expected_from_tests.json"
    out = []
    if expected.exists():
        for c in json.loads(expected.read_text())["cases"]:
            if c["kind"] == "cdf":
                out.append((f"delta-kernel-rs/{c['table']}", c["start_version"], c.get("end_version")))
    for t in corpus_catalog():
        if t.get("cdf_enabled") and t["status"] == "ok" and t["table_root"].split("/")[0] in ("dat", "delta-rs"):
            out.append((t["table_root"], 0, None))
    return out


CASES = _cases()


def test_changes_match_the_core(spark):
    from deltaexplore.spark import changes

    if not CASES:
        pytest.skip(f"corpus absent at {CORPUS}")
    assert len(CASES) >= 10
    for root, start, end in CASES:
        expected = dx.open_table(str(CORPUS / root)).changes(start, end)
        got = changes(spark, str(CORPUS / root), start, end).toArrow()
        assert_same_rows(got, expected, f"{root} {start}..{end}")
    root = str(CORPUS / CASES[0][0])
    got = changes(spark, root, CASES[0][1], CASES[0][2])
    assert got.columns[-3:] == ["_change_type", "_commit_version", "_commit_timestamp"]


def test_changes_errors(spark):
    from deltaexplore.spark import changes

    if not CASES:
        pytest.skip("corpus absent")
    root = str(CORPUS / CASES[0][0])
    with pytest.raises(dx.VersionNotFoundError):
        changes(spark, root, 99)
    plain = CORPUS / "dat" / "basic_partitioned" / "delta"
    if plain.exists():
        with pytest.raises(dx.DeltaProtocolError, match="change data feed is not enabled"):
            changes(spark, str(plain), 0)
