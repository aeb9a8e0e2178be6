"""Scans and change data feed against the rows delta-kernel-rs's tests expect."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math

import numpy as np
import pyarrow as pa
import pytest
from corpus_paths import CORPUS

import deltaexplore as dx

pytestmark = pytest.mark.corpus

EXPECTED = CORPUS / "delta-kernel-rs" / "_expected" / "expected_from_tests.json"
CASES = json.loads(EXPECTED.read_text())["cases"] if EXPECTED.exists() else []


def _fmt(value: object, typ: pa.DataType) -> str:
    """A value as arrow's pretty printer shows it."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if pa.types.is_float32(typ):
            return str(np.float32(value))
        return repr(value) if not math.isnan(value) else "NaN"
    if isinstance(value, dt.datetime):
        text = value.isoformat()
        return text.replace("+00:00", "Z")
    if isinstance(value, (dt.date, decimal.Decimal)):
        return str(value)
    return str(value)


def _parse_expected(rows: list[str]) -> tuple[list[str], list[tuple[str, ...]]]:
    body = [r for r in rows if r.startswith("|")]
    header = [c.strip() for c in body[0].strip("|").split("|")]
    data = [tuple(c.strip() for c in r.strip("|").split("|")) for r in body[1:]]
    return header, data


def _actual(table: pa.Table, columns: list[str]) -> list[tuple[str, ...]]:
    types = [table.schema.field(c).type for c in columns]
    return [tuple(_fmt(row[c], t) for c, t in zip(columns, types)) for row in table.select(columns).to_pylist()]


@pytest.mark.parametrize(
    "case",
    CASES,
    ids=[f"{c['kind']}-{c['table']}-{i}" for i, c in enumerate(CASES)],
)
def test_kernel_rs_expected_rows(case: dict) -> None:
    root = CORPUS / "delta-kernel-rs" / case["table"]
    if not root.exists():
        pytest.skip(f"{root} not in corpus")
    header, expected = _parse_expected(case["rows"])
    table = dx.open_table(str(root))
    if case["kind"] == "scan":
        result = table.snapshot().to_arrow(columns=case.get("projection"))
    else:
        result = table.changes(case["start_version"], case.get("end_version"))
    assert sorted(_actual(result, header)) == sorted(expected)


def test_expected_rows_present() -> None:
    if not EXPECTED.exists():
        pytest.skip("corpus absent")
    assert {c["kind"] for c in CASES} == {"scan", "cdf"}
