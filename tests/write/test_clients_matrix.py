"""The write cells of the clients matrix (`inspect.clients`): one table per feature written by the
core writer (tests/feature_tables.py) is read whole by delta-rs (DataFusion and to_pyarrow),
DuckDB's delta extension and this reader with the rows the writer was asked to leave, or the
other client's error is the kind `WRITTEN_READS` names; every feature this writer does not
write is refused with a typed error naming it. delta-rs and DuckDB run in one child process
(see `other_engines.py`)."""

from __future__ import annotations

import importlib.util
import json
import shutil
import warnings
from pathlib import Path

import pyarrow as pa
import pytest
from clients_evidence import read_evidence, same_kind
from feature_tables import REFUSED, WRITTEN, build_all, refused_table
from other_engines import duckdb_available, run, table_rows, variants_as_json

import deltaexplore as dx
from deltaexplore.core.operations import write_table
from deltaexplore.core.protocol.actions import Protocol
from deltaexplore.core.protocol.features import CATALOG_FEATURES, FEATURES
from deltaexplore.inspect import compatibility
from deltaexplore.inspect.clients import (
    CHECKED_READS,
    CHECKED_WRITES,
    DELTAEXPLORE,
    DUCKDB,
    REFUSED_WRITES,
    WRITTEN_CHECKED_READS,
    WRITTEN_READERS,
    WRITTEN_READS,
    client_features,
)

pytestmark = pytest.mark.xdist_group("interop")


@pytest.fixture(autouse=True)
def _by_path():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dx.CatalogManagedWarning)  # catalogManaged is opened by path
        yield


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """The table of every feature: written by this library, or hand-written for the features
    it refuses to write (their read cells are checked on them too)."""
    tables = build_all(tmp_path_factory.mktemp("written"), refused=True)
    for feature, proto, name in _RELISTED:
        root, rows = tables[feature]
        copy = f"{root} ({name})"
        shutil.copytree(root, copy)
        first = Path(copy) / "_delta_log" / f"{0:020}.json"
        actions = [json.loads(line) for line in first.read_text().splitlines()]
        first.write_text("".join(json.dumps({"protocol": proto} if "protocol" in a else a) + "\n" for a in actions))
        tables[f"{feature} ({name})"] = (copy, rows)
    return tables


#: tables of features whose protocol the evidence rule cannot attribute, listed again so it can
#: (tests/clients_evidence.py counts listed features only): generated and identity columns
#: under a legacy writer version (4, 6) listed as table features; icebergCompatV2 with reader-2
#: column mapping (which delta-rs' to_pyarrow reads) in place of a listed reader feature
_RELISTED = [
    ("generatedColumns", {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["generatedColumns"]}, "writer 7"),
    ("identityColumns", {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["identityColumns"]}, "writer 7"),
    (
        "icebergCompatV2",
        {"minReaderVersion": 2, "minWriterVersion": 7, "writerFeatures": ["icebergCompatV2", "columnMapping"]},
        "reader 2",
    ),
]


def _first_protocol(root: str) -> Protocol:
    """The protocol of commit 0 (a refused table's one protocol), read without this reader."""
    with open(f"{root}/_delta_log/{0:020}.json") as f:
        return next(Protocol.from_json(a["protocol"]) for a in map(json.loads, f) if "protocol" in a)


@pytest.fixture(scope="module")
def other_reads(written, tmp_path_factory):
    """Every written table read by delta-rs both ways and DuckDB, once, in a child process."""
    if importlib.util.find_spec("deltalake") is None or not duckdb_available():
        pytest.skip("deltalake or DuckDB's delta extension is not installed")
    roots = tmp_path_factory.mktemp("roots") / "roots.json"
    roots.write_text(json.dumps([root for root, _ in written.values()]))
    return run("read-clients", str(roots), timeout=900)


def _differing_columns(theirs: list[str], ours: list[str]) -> list[str]:
    a, b = [json.loads(r) for r in theirs], [json.loads(r) for r in ours]
    if len(a) != len(b):
        return [f"{len(a)} rows, not {len(b)}"]
    names = sorted({k for r in a + b for k in r})
    return [n for n in names if sorted(map(repr, (r.get(n) for r in a))) != sorted(map(repr, (r.get(n) for r in b)))]


def our_rows(table: pa.Table, client: str) -> list[str]:
    """This reader's rows of `table` as `client` answers them: DuckDB's with variants as JSON text."""
    return table_rows(variants_as_json(table) if client == DUCKDB else table)


def observed(answers: dict[str, dict], ours: pa.Table) -> dict[str, str]:
    """client -> error kind (or `rows differ: <columns>`) where a client does not read `ours`."""
    out = {}
    for client, answer in answers.items():
        mine = our_rows(ours, client)
        if "error" in answer:
            out[client] = answer["error"]
        elif answer["rows"] != mine:
            out[client] = f"rows differ: {', '.join(_differing_columns(answer['rows'], mine))}"
    return out


@pytest.mark.parametrize("feature", sorted(WRITTEN))
def test_written_feature_read_by_every_client(feature, written, other_reads):
    root, expected = written[feature]
    snap = dx.open_table(root).snapshot()
    assert feature in snap.protocol.writer_feature_set, snap.protocol
    ours = snap.to_arrow()
    assert table_rows(ours) == table_rows(expected), "this reader: rows differ from what was written"
    seen = observed(other_reads[root], ours)
    declared = WRITTEN_READS.get(feature, {})
    assert set(seen) == set(declared), seen
    for client, kind in seen.items():
        assert same_kind(kind, declared[client]), (client, kind)
    # and `compatibility()` says so (wrong rows are not protocol refusals)
    compat = {r["client"]: r for r in compatibility(snap).to_pylist()}
    for client in other_reads[root]:
        refused = client in seen and not seen[client].startswith("rows differ")
        assert compat[client]["can_read"] != refused, (client, compat[client]["read_blockers"])


def test_checked_read_cells_of_the_written_tables(written, other_reads):
    """What delta-rs and DuckDB did with the written tables checks their read cells
    (`WRITTEN_CHECKED_READS`, the same rule as on the corpus); wrong rows show nothing either
    way."""
    results: dict[str, dict[str, bool]] = {}
    protocols = {}
    for feature, (root, rows) in written.items():
        if feature.split(" (")[0] in REFUSED:  # hand-written: the rows are the one file's, whether this reader reads them or not
            protocols[root], ours = _first_protocol(root), rows
        else:
            snap = dx.open_table(root).snapshot()
            protocols[root], ours = snap.protocol, snap.to_arrow()
        results[root] = {}
        for client, answer in other_reads[root].items():
            if "rows" in answer and answer["rows"] == our_rows(ours, client):
                results[root][client] = True
            elif "error" in answer:
                results[root][client] = False
    evidence = read_evidence(results, protocols)
    assert set(evidence) == set(WRITTEN_CHECKED_READS)
    cells = {(r["client"], r["feature"]): r for r in client_features().to_pylist()}
    for client, seen in evidence.items():
        assert set(seen) == WRITTEN_CHECKED_READS[client], client
        for feature, reads in seen.items():
            assert (cells[(client, feature)]["read"], cells[(client, feature)]["read_evidence"]) == (reads, "checked"), (
                client,
                feature,
            )


def test_append_only_refuses_delete(written):
    root, _ = written["appendOnly"]
    from deltaexplore.core.operations import delete

    with pytest.raises(dx.WriteRefusedError, match="append-only"):
        delete(root, "id = 1")


def _comparable(t: pa.Table) -> list:
    t = t.select(sorted(t.column_names)).sort_by("id")
    return [c.cast(pa.int64()).to_pylist() if pa.types.is_timestamp(c.type) else c.to_pylist() for c in t.columns]


@pytest.mark.parametrize("feature", REFUSED)
def test_refused_feature_is_not_written(tmp_path, feature):
    """This reader reads the table (or refuses it: a reader feature it does not read); its writer
    refuses to append, naming the feature."""
    data = refused_table(tmp_path, feature)
    if FEATURES[feature].read:
        assert _comparable(dx.open_table(str(tmp_path)).snapshot().to_arrow()) == _comparable(data)
    else:
        with pytest.raises(dx.UnsupportedFeatureError, match=feature):
            dx.open_table(str(tmp_path)).snapshot().to_arrow()
    before = sorted(p.name for p in tmp_path.rglob("*") if p.is_file())
    catalog = None
    if feature in CATALOG_FEATURES:  # without its catalog the table is refused before its features
        catalog = dx.FileCatalog(tmp_path.parent / f"{tmp_path.name}-catalog.json")
        catalog.register(str(tmp_path), latest_version=0)
    with pytest.raises(dx.UnsupportedFeatureError) as info:
        write_table(str(tmp_path), data, catalog=catalog)
    assert info.value.feature == feature
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == before


@pytest.mark.parametrize("feature", [f for f in REFUSED if FEATURES[f].property and FEATURES[f].canonical is None])
def test_property_of_a_refused_feature_is_refused(tmp_path, feature):
    """A table property that turns on a feature this writer does not write (the Iceberg
    compatibility ones) is refused, not stored without its feature."""
    prop = FEATURES[feature].property
    with pytest.raises(dx.UnsupportedFeatureError) as info:
        write_table(str(tmp_path / "t"), pa.table({"id": pa.array([1], pa.int64())}), configuration={prop: "true"})
    assert info.value.feature == feature
    assert not (tmp_path / "t" / "_delta_log").exists() or not any((tmp_path / "t" / "_delta_log").iterdir())


def test_write_cells_are_the_tests():
    """Every feature has its write test (a table written, or the refusal), so every write cell of
    this library is checked; `written_reads` says what the other clients did with it."""
    writes = {name for name, info in FEATURES.items() if info.write}
    assert set(WRITTEN) == writes and set(REFUSED) == set(REFUSED_WRITES) == set(FEATURES) - writes
    assert set(WRITTEN_READS) <= writes
    assert CHECKED_WRITES[DELTAEXPLORE] == CHECKED_READS[DELTAEXPLORE] == set(WRITTEN) | set(REFUSED)
    cells = {r["feature"]: r for r in client_features().to_pylist() if r["client"] == DELTAEXPLORE}
    for feature in FEATURES:
        cell = cells[feature]
        assert (cell["write"], cell["write_evidence"]) == (feature in writes, "checked"), feature
        if feature in writes:
            for client in WRITTEN_READERS:
                assert f"{client}: " in cell["written_reads"]
            for client, kind in WRITTEN_READS.get(feature, {}).items():
                assert f"{client}: {kind}" in cell["written_reads"]
        else:
            assert "refuses" in cell["written_reads"]
    others = [r for r in client_features().to_pylist() if r["client"] not in CHECKED_WRITES]
    assert others and {r["write_evidence"] for r in others} == {"declared"}
