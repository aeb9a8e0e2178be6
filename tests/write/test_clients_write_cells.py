"""The write cells of delta-rs and DuckDB in the clients matrix (`inspect.clients`): each client
writes to a copy of the table of each feature (tests/feature_tables.py: written by this library,
or hand-written for the features it refuses), an operation at a time (delta-rs: append, DELETE,
UPDATE, MERGE, OPTIMIZE, checkpoint; DuckDB's delta extension: INSERT, then DELETE and UPDATE are
tried), in a child process (`other_engines.py write-clients`). This reader then reads the table
with the rows those operations must leave, computed here without reading it. A client writes a
feature when its append succeeds and this reader reads the result; where an operation fails, its
error kind is what `CLIENT_WRITES` declares, and where this reader reads something else,
`CLIENT_WRITTEN_READS`. delta-rs is also asked to create a table with each feature it has a way
to ask for (`DELTA_RS_CREATES`)."""

from __future__ import annotations

import importlib.util
import json
import shutil
import warnings
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from clients_evidence import same_kind
from feature_tables import REFUSED, build_all, rows
from other_engines import duckdb_available, run, table_rows, variants_as_json

import deltaexplore as dx
from deltaexplore.core.operations import write_table
from deltaexplore.core.protocol.features import CATALOG_FEATURES, FEATURES
from deltaexplore.inspect.clients import (
    CHECKED_WRITES,
    CLIENT_WRITES,
    CLIENT_WRITTEN_READS,
    DELTA_RS_CREATES,
    DELTA_RS_CREATES_UNLISTED,
    DELTA_RS_PYARROW,
    SPARK,
    WRITING_CLIENTS,
    client_features,
)

pytestmark = pytest.mark.xdist_group("interop")

#: the child's client name -> the matrix's
CLIENTS = {"delta-rs": WRITING_CLIENTS[0], "DuckDB": WRITING_CLIENTS[1]}


def _shifted(t: pa.Table, by: int) -> pa.Table:
    """`t` with ids moved by `by` (and the generated column of the generated-columns table)."""
    t = t.set_column(t.column_names.index("id"), "id", pc.add(t.column("id"), by))
    if "double_id" in t.column_names:
        t = t.set_column(t.column_names.index("double_id"), "double_id", pc.multiply(t.column("id"), 2))
    return t


def _plan(feature: str, root: str, expected: pa.Table, base, partitions: list[str]) -> tuple[dict, dict[str, pa.Table]]:
    """The operations' inputs for a copy of `root`, and the rows after each of them. The rows
    appended to a partitioned table are of one partition, its least value (DuckDB 1.5.5's INSERT
    fails on rows of several: "DeltaInsert::Sink expects a single row", whatever the features;
    and it writes a file of partition `b c` under a directory named `part=b%20c`, where its log
    path `part=b%20c/...` says `part=b c/...`)."""
    appended = _shifted(expected, 1000)
    for column in partitions:
        appended = appended.filter(pc.equal(appended.column(column), pc.min(appended.column(column))))
    source = pa.concat_tables([appended.slice(0, 1), _shifted(expected, 2000).slice(0, 2)])
    ids = appended.column("id").to_pylist()
    d, u = ids[1], ids[2]
    pq.write_table(appended, base / f"{feature}-append.parquet")
    pq.write_table(source, base / f"{feature}-merge.parquet")
    after = {"": expected, "create": expected}
    t = pa.concat_tables([expected, appended])
    after["append"] = t
    t = t.filter(pc.not_equal(t.column("id"), d))
    after["delete"] = t
    t = t.set_column(t.column_names.index("id"), "id", pc.if_else(pc.equal(t.column("id"), u), u + 100000, t.column("id")))
    after["update"] = t
    t = pa.concat_tables([t, source.slice(1)])  # the first source row is matched, with its own values
    after["merge"] = after["optimize"] = after["checkpoint"] = t
    after["attach"] = expected
    case = {
        "root": root,
        "append": str(base / f"{feature}-append.parquet"),
        "merge": str(base / f"{feature}-merge.parquet"),
        "delete": d,
        "update": u,
    }
    return case, after


_PROPERTY_VALUES = {"delta.columnMapping.mode": "name", "delta.checkpointPolicy": "v2"}
#: how delta-rs is asked to create a table with each feature it has a way to ask for: its table
#: property, `alter.add_constraint` or `alter.add_feature` (`TableFeatures`)
_CREATES: dict[str, dict] = {
    **{
        name: {"configuration": {info.property: _PROPERTY_VALUES.get(info.property, "true")}}
        for name, info in FEATURES.items()
        if info.property and not name.endswith("-preview")
    },
    "checkConstraints": {"constraint": True},
    "domainMetadata": {"add_feature": "DomainMetadata"},
    "generatedColumns": {"add_feature": "GeneratedColumns"},
    "identityColumns": {"add_feature": "IdentityColumns"},
    "invariants": {"add_feature": "Invariants"},
    "timestampNanos": {"add_feature": "TimestampNanos"},
    "timestampNtz": {"add_feature": "TimestampWithoutTimezone"},
    "variantType": {"add_feature": "VariantType"},
    "variantType-preview": {"add_feature": "VariantTypePreview"},
}


@pytest.fixture(scope="module")
def client_writes(tmp_path_factory):
    """feature -> client -> (answer, rows after each operation, root)."""
    if importlib.util.find_spec("deltalake") is None or not duckdb_available():
        pytest.skip("deltalake or DuckDB's delta extension is not installed")
    base = tmp_path_factory.mktemp("client-writes")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dx.CatalogManagedWarning)  # catalogManaged is opened by path
        tables = build_all(base / "tables", refused=True)
    cases, plans = [], []
    for feature, (root, expected) in sorted(tables.items()):
        for client in CLIENTS:
            copy = base / client / feature
            shutil.copytree(root, copy)
            unopened = feature in REFUSED or feature in CATALOG_FEATURES  # clients refuse those before partitions matter
            partitions = [] if unopened else dx.open_table(root).snapshot().metadata.partition_columns
            case, after = _plan(f"{client}-{feature}", str(copy), expected, base, list(partitions))
            cases.append({**case, "client": client})
            plans.append((feature, client, after, str(copy)))
    for feature, how in sorted(_CREATES.items()):
        copy = base / "delta-rs-create" / feature
        case, after = _plan(f"create-{feature}", str(copy), rows(0, 10), base, [])
        pq.write_table(rows(0, 10), base / f"create-{feature}.parquet")
        cases.append({**case, **how, "client": "delta-rs", "create": str(base / f"create-{feature}.parquet")})
        plans.append((feature, "delta-rs create", after, str(copy)))
    (base / "cases.json").write_text(json.dumps(cases))
    answers = run("write-clients", str(base / "cases.json"), timeout=900)
    out: dict[str, dict] = {}
    for (feature, client, after, root), answer in zip(plans, answers, strict=True):
        out.setdefault(feature, {})[CLIENTS.get(client, client)] = (answer, after, root)
    return out


def _read_here(feature: str, root: str, rows: pa.Table) -> str | None:
    """What this reader makes of a client's writes, where it is not `rows`: the error kind or
    `rows differ`. None also where this reader does not read the feature, or the table needs its
    catalog."""
    if not FEATURES[feature].read or feature in CATALOG_FEATURES:
        return None
    try:
        snap = dx.open_table(root).snapshot()
        assert feature in snap.protocol.writer_feature_set, snap.protocol
        ours = table_rows(snap.to_arrow(variant="json"))
    except dx.DeltaExploreError as exc:
        return f"{type(exc).__name__}: {exc}"
    return None if ours == table_rows(variants_as_json(rows)) else "rows differ"


@pytest.mark.parametrize("feature", sorted(FEATURES))
def test_client_writes_to_a_table_with_the_feature(feature, client_writes):
    """The operation that failed failed the way `CLIENT_WRITES` declares; this reader reads what
    each client wrote with the rows its operations must leave, or as `CLIENT_WRITTEN_READS`
    declares."""
    for client in WRITING_CLIENTS:
        answer, after, root = client_writes[feature][client]
        declared = CLIENT_WRITES[client].get(feature)
        if "error" in answer:
            seen = f"{answer['failed']}: {answer['error']}"
            assert declared is not None, (client, seen)
            op, _, kind = declared.partition(": ")
            assert op == answer["failed"] and same_kind(answer["error"], kind), (client, seen)
        else:
            assert declared is None, (client, answer)
        read = _read_here(feature, root, after[answer["done"][-1] if answer["done"] else ""])
        declared_read = CLIENT_WRITTEN_READS[client].get(feature)
        if read is None:
            assert declared_read is None, (client, "read the rows")
        else:
            assert declared_read is not None and same_kind(read, declared_read), (client, read)


def test_write_cells_are_the_writes(client_writes):
    """A client's write cell is checked, and says it writes the feature exactly where its append
    to the feature's table succeeded and this reader reads what it wrote."""
    cells = {(r["client"], r["feature"]): r for r in client_features().to_pylist()}
    wrong = []
    for feature, by_client in client_writes.items():
        for client in WRITING_CLIENTS:
            answer = by_client[client][0]
            writes = "append" in answer["done"] and feature not in CLIENT_WRITTEN_READS[client]
            cell = cells[(client, feature)]
            if (cell["write"], cell["write_evidence"]) != (writes, "checked"):
                wrong.append((client, feature, writes))
            assert cell["written_reads"].startswith("refuses: " if "append" not in answer["done"] else "deltaexplore reads: ")
    assert not wrong
    for client in WRITING_CLIENTS:
        assert CHECKED_WRITES[client] == frozenset(FEATURES)
    # the write cells left declared say why
    declared = [r for r in client_features().to_pylist() if r["write_evidence"] == "declared"]
    assert declared and {r["client"] for r in declared} == {SPARK, DELTA_RS_PYARROW}
    assert all("not checkable here" in r["written_reads"] for r in declared if r["client"] == SPARK)
    assert all("writes nothing" in r["written_reads"] for r in declared if r["client"] == DELTA_RS_PYARROW)


@pytest.mark.parametrize("feature", sorted(_CREATES))
def test_deltars_creates_a_table_with_the_feature(feature, client_writes):
    """delta-rs asked to create a table with the feature (its property, a constraint or
    `alter.add_feature`), then to append, DELETE, UPDATE, MERGE, OPTIMIZE and checkpoint: the
    operation that fails fails as `DELTA_RS_CREATES` declares; the table lists the feature unless
    `DELTA_RS_CREATES_UNLISTED` says not; this reader reads the rows the operations must leave."""
    answer, after, root = client_writes[feature]["delta-rs create"]
    declared = DELTA_RS_CREATES.get(feature)
    if "error" in answer:
        op, _, kind = (declared or "").partition(": ")
        assert op == answer["failed"] and same_kind(answer["error"], kind), answer
    else:
        assert declared is None, answer
    if not answer["done"] and not (Path(root) / "_delta_log").is_dir():
        return  # nothing was written
    snap = dx.open_table(root).snapshot()
    assert (feature in snap.protocol.writer_feature_set) == (feature not in DELTA_RS_CREATES_UNLISTED), snap.protocol
    ours = table_rows(snap.to_arrow(variant="json"))
    assert ours == table_rows(variants_as_json(after[answer["done"][-1] if answer["done"] else ""]))


def test_duckdb_partitioned_inserts(tmp_path):
    """DuckDB 1.5.5's INSERT into a partitioned table: rows of several partitions fail (whatever
    the features), and a file of partition `b c` goes under a directory named `part=b%20c` while
    its log path `part=b%20c/...` says `part=b c/...`: this reader says the file is missing, as
    delta-rs does."""
    if not duckdb_available():
        pytest.skip("DuckDB's delta extension is not installed")
    cases = []
    for name, parts in (("several", ["a", "b c"]), ("spaced", ["b c"])):
        root = tmp_path / name
        write_table(str(root), rows(0, 4), partition_by=["part"])
        batch = rows(10, 6).filter(pc.is_in(rows(10, 6).column("part"), pa.array(parts)))
        pq.write_table(batch, tmp_path / f"{name}.parquet")
        cases.append(
            {"client": "DuckDB", "root": str(root), "append": str(tmp_path / f"{name}.parquet"), "delete": 0, "update": 0}
        )
    (tmp_path / "cases.json").write_text(json.dumps(cases))
    several, spaced = run("write-clients", str(tmp_path / "cases.json"))
    assert several["failed"] == "append" and "DeltaInsert::Sink expects a single row" in several["error"], several
    assert spaced["done"] == ["attach", "append"], spaced
    assert list((tmp_path / "spaced" / "part=b%20c").glob("duckdb*.parquet"))
    assert not list((tmp_path / "spaced" / "part=b c").glob("duckdb*.parquet"))
    with pytest.raises(dx.StorageError, match=r"part=b%20c/duckdb.* is missing"):
        dx.open_table(str(tmp_path / "spaced")).snapshot().to_arrow()
    # delta-rs decodes the path the same way (and DuckDB cannot read its own write either)
    (deltars,) = run("read-deltars", str(tmp_path / "spaced")).values()
    assert "part=b c/duckdb" in deltars["error"], deltars
