"""Every inspection function on every table of the conformance corpus: a table with its
declared schema, or a `DeltaExploreError` naming the problem — never a raw exception. Tables
written by other implementations exercise paths the hand-built ones do not (odd stats, nested
columns, checkpoints of every kind, missing files)."""

from __future__ import annotations

import warnings

import pyarrow as pa
import pytest
from corpus_paths import CORPUS, corpus_catalog
from helpers import first_primitive_column

import deltaexplore as dx
import deltaexplore.inspect as dxi
from deltaexplore.inspect.schemas import SCHEMAS

pytestmark = pytest.mark.corpus

TABLES = [t for t in corpus_catalog() if t.get("is_table", True) and t["status"] in ("ok", "log-only", "special")]


def _calls(snap: dx.Snapshot) -> dict[str, tuple | None]:
    column = first_primitive_column(snap)
    adds = snap.add_actions()
    dvs = [p for p, d in zip(adds.column("path").to_pylist(), adds.column("deletionVector").to_pylist()) if d]
    return {
        "layout": (column,) if column else None,
        "layout_density": (column,) if column else None,
        "explain": (f"`{column}` IS NOT NULL",) if column else None,
        "deleted_rows": (dvs[0],) if dvs else None,
        "at_versions": ("count(*)", [snap.version]),
    }


@pytest.mark.parametrize("table", TABLES, ids=[t["id"] for t in TABLES])
def test_every_inspection_on_the_corpus(table):
    root = str(CORPUS / table["table_root"])
    if "{{" in table.get("log_fingerprint", "") or table["id"] == "delta-spark/table-with-dv-special-char":
        pytest.skip("log is a template")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dx.CatalogManagedWarning)
        t = dx.open_table(root)
        try:
            snap = t.snapshot()
            calls = _calls(snap)
        except dx.DeltaExploreError as exc:
            # a table the core refuses: every inspection refuses it the same way
            for name in ("overview", "files", "features"):
                with pytest.raises(dx.DeltaExploreError):
                    getattr(t.inspect, name)()
            pytest.skip(f"refused by the core: {exc}")
        failures = []
        for name in dxi.FUNCTIONS:
            args = calls.get(name, ())
            if args is None:
                continue
            try:
                out = getattr(t.inspect, name)(*args)
            except dx.DeltaExploreError:
                continue
            except Exception as exc:  # noqa: BLE001 - the point: nothing else may escape
                failures.append(f"{name}: {type(exc).__name__}: {exc}")
                continue
            if not isinstance(out, pa.Table):
                failures.append(f"{name}: returned {type(out).__name__}")
            elif name in SCHEMAS and out.schema != SCHEMAS[name]:
                failures.append(f"{name}: schema differs from SCHEMAS[{name!r}]")
            elif name == "layout" and out.num_rows != snap.add_actions().num_rows:
                failures.append(f"layout: {out.num_rows} rows for {snap.add_actions().num_rows} files")
        assert not failures, failures
