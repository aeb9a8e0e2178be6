"""features / compatibility: activation rules, blockers, and the declared client capabilities
checked against real clients (delta-rs both ways, DuckDB and this reader reading the corpus)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from clients_evidence import read_evidence
from corpus_paths import CORPUS, corpus_catalog
from helpers import commit_info, metadata, protocol, write_commit

import deltaexplore as dx
from deltaexplore.core.protocol.actions import Protocol
from deltaexplore.inspect import compatibility, features
from deltaexplore.inspect.clients import (
    CHECKED_READS,
    CHECKED_WRITES,
    CLIENTS,
    CORPUS_CHECKED_READS,
    DELTAEXPLORE,
    DX_SPARK,
    FEATURE_SINCE,
    client_features,
    clients_table,
)
from deltaexplore.inspect.schemas import CLIENT_FEATURES_SCHEMA, CLIENTS_SCHEMA, COMPATIBILITY_SCHEMA, FEATURES_SCHEMA


def _table(root, proto, config=None, schema=None):
    write_commit(root, 0, [commit_info("CREATE TABLE"), proto, metadata(schema=schema, configuration=config or {})])
    return dx.open_table(str(root))


def test_features_active_vs_supported(tmp_path):
    schema = {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "ts", "type": "timestamp_ntz", "nullable": True, "metadata": {}},
            {"name": "g", "type": "long", "nullable": True, "metadata": {"delta.generationExpression": "id + 1"}},
        ],
    }
    t = _table(
        tmp_path,
        protocol(
            3,
            7,
            ["deletionVectors", "timestampNtz"],
            ["deletionVectors", "timestampNtz", "generatedColumns", "appendOnly", "changeDataFeed"],
        ),
        config={"delta.enableDeletionVectors": "false", "delta.appendOnly": "true", "delta.enableRowTracking": "true"},
        schema=schema,
    )
    f = features(t)
    assert f.schema == FEATURES_SCHEMA
    rows = {r["feature"]: r for r in f.to_pylist()}
    assert rows["deletionVectors"]["supported"] and rows["deletionVectors"]["in_reader_features"]
    assert rows["deletionVectors"]["active"] is False and rows["deletionVectors"]["property_value"] == "false"
    assert rows["timestampNtz"]["active"] and "timestamp_ntz" in rows["timestampNtz"]["activation"]
    assert rows["generatedColumns"]["active"] and rows["generatedColumns"]["activation"] == "columns: g"
    assert rows["appendOnly"]["active"] and rows["changeDataFeed"]["active"] is False
    # a property set without protocol support is reported
    assert rows["rowTracking"]["supported"] is False and "does not list the feature" in rows["rowTracking"]["activation"]
    assert not any(r["legacy"] for r in rows.values())
    assert len(features(t, all_known=True).to_pylist()) > len(rows)


def test_legacy_protocol_implies_features(tmp_path):
    rows = {r["feature"]: r for r in features(_table(tmp_path, protocol(2, 5), {"delta.columnMapping.mode": "name"})).to_pylist()}
    assert set(rows) == {"columnMapping", "appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns"}
    assert (
        rows["columnMapping"]["legacy"] and rows["columnMapping"]["active"] and rows["columnMapping"]["kind"] == "reader-writer"
    )


def test_compatibility_blockers(tmp_path):
    t = _table(
        tmp_path / "a",
        protocol(3, 7, ["deletionVectors", "v2Checkpoint"], ["deletionVectors", "v2Checkpoint", "inCommitTimestamp"]),
    )
    c = compatibility(t)
    assert c.schema == COMPATIBILITY_SCHEMA
    rows = {(r["client"], r["version"]): r for r in c.to_pylist()}
    assert rows[("deltaexplore", "this")]["can_read"]
    assert rows[("Delta Spark", "2.2")]["read_blockers"][0].startswith("readerVersion=3")
    assert rows[("Delta Spark", "2.4")]["read_blockers"] == ["v2Checkpoint"]
    assert rows[("Delta Spark", "3.1")]["can_read"] and rows[("Delta Spark", "3.1")]["write_blockers"] == ["inCommitTimestamp"]
    assert rows[("Delta Spark", "3.3")]["can_write"]
    assert rows[("delta-rs (DataFusion)", "1.x")]["can_read"] and not rows[("delta-rs (DataFusion)", "1.x")]["can_write"]
    assert set(rows[("delta-rs (to_pyarrow)", "1.x")]["read_blockers"]) == {"deletionVectors", "v2Checkpoint"}
    assert rows[("delta-rs (to_pyarrow)", "1.x")]["write_blockers"][-1] == "the client does not write Delta tables"
    # an unknown reader feature blocks everyone, this library included
    u = _table(tmp_path / "b", protocol(3, 7, ["madeUp"], ["madeUp"]))
    with pytest.raises(dx.UnsupportedFeatureError):
        compatibility(u)


def test_client_tables_are_declared_data():
    assert clients_table().schema == CLIENTS_SCHEMA and clients_table().num_rows == len(CLIENTS)
    cf = client_features()
    assert cf.schema == CLIENT_FEATURES_SCHEMA
    assert cf.num_rows == len(CLIENTS) * len(set(cf.column("feature").to_pylist()))
    for feature, by_client in FEATURE_SINCE.items():
        assert set(by_client) == {c[0] for c in CLIENTS} - {DELTAEXPLORE, DX_SPARK}, feature


def _readable_tables():
    return [pytest.param(t, id=t["id"]) for t in corpus_catalog() if t["status"] == "ok" and t["data_completeness"] == "complete"]


@pytest.fixture(scope="module")
def real_clients(corpus):
    """delta-rs and DuckDB read every readable corpus table, once, in a child process."""
    if importlib.util.find_spec("deltalake") is None:  # never imported in this process
        pytest.skip("deltalake is not installed")
    roots = [
        str(CORPUS / t["table_root"]) for t in corpus_catalog() if t["status"] == "ok" and t["data_completeness"] == "complete"
    ]
    script = Path(__file__).with_name("real_clients.py")
    out = subprocess.run([sys.executable, str(script), *roots], capture_output=True, text=True, timeout=900, check=False)
    if not out.stdout.strip():
        pytest.fail(f"real_clients.py gave no answer (exit {out.returncode}): {out.stderr[-2000:]}")
    return json.loads(out.stdout)


@pytest.mark.corpus
@pytest.mark.slow
@pytest.mark.parametrize("row", _readable_tables())
def test_declared_read_support_matches_real_clients(row, real_clients):
    """What `compatibility()` says about delta-rs and DuckDB reading a table is what they do."""
    root = Path(CORPUS / row["table_root"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = dx.open_table(str(root))
        try:
            compat = {(r["client"]): r for r in compatibility(table).to_pylist()}
        except dx.DeltaExploreError as exc:
            pytest.skip(f"not readable by deltaexplore: {exc}")
    types = set(row["schema_types"])
    checks = sorted(real_clients[str(root)].items())
    for client, really in checks:
        said = compat[client]["can_read"]
        if said and not really and ("void" in types or "geometry" in types or "geography" in types):
            continue  # a column type the client lacks, not a protocol feature
        assert said == really, (client, compat[client]["read_blockers"])


@pytest.mark.corpus
@pytest.mark.slow
def test_checked_read_cells_are_what_the_clients_do(real_clients):
    """Every read cell marked "checked" agrees with what the real client does on the corpus, and
    every cell the corpus can check is marked "checked" (the others stay "declared")."""
    results = {root: dict(by_client) for root, by_client in real_clients.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for root, by_client in results.items():
            try:
                dx.open_table(root).snapshot().to_arrow()
                by_client[DELTAEXPLORE] = True
            except dx.UnsupportedFeatureError:
                by_client[DELTAEXPLORE] = False
    catalog = {str(CORPUS / t["table_root"]): t for t in corpus_catalog()}
    evidence = read_evidence(results, {root: Protocol.from_json(catalog[root]["protocol"]) for root in results})
    assert set(evidence) == set(CORPUS_CHECKED_READS) | {DELTAEXPLORE}
    cells = {(r["client"], r["feature"]): r for r in client_features().to_pylist()}
    for client, features_seen in evidence.items():
        if client == DELTAEXPLORE:  # every feature's table: tests/write/test_clients_matrix.py
            assert set(features_seen) <= CHECKED_READS[client]
        else:
            assert set(features_seen) == CORPUS_CHECKED_READS[client], client
        for feature, reads in features_seen.items():
            cell = cells[(client, feature)]
            assert (cell["read"], cell["read_evidence"]) == (reads, "checked"), (client, feature)
    declared = [r for r in cells.values() if r["read_evidence"] == "declared"]
    assert all((r["client"], r["feature"]) not in {(c, f) for c, fs in evidence.items() for f in fs} for r in declared)
    # write cells: checked for the clients tests/write/test_clients_matrix.py and the Spark one write with
    assert {r["write_evidence"] for r in cells.values() if r["client"] not in CHECKED_WRITES} == {"declared"}
