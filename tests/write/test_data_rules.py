"""Rules on written rows: schema enforcement and evolution, NOT NULL, invariants, CHECK
constraints, generated and identity columns. A refused write leaves the table unchanged."""

from __future__ import annotations

import datetime as dt
import json

import pyarrow as pa
import pytest
from helpers import commit_info, metadata, protocol, write_commit
from write_helpers import rows, sample

import deltaexplore as dx
from deltaexplore.core.operations import set_table_properties, write_table


def _unchanged(root, version):
    t = dx.open_table(str(root))
    assert t.latest_version() == version
    return t


def test_schema_enforced(tmp_path):
    root = tmp_path / "t"
    write_table(str(root), sample(3))
    extra = sample(2, 10).append_column("other", pa.array([1, 2]))
    with pytest.raises(dx.WriteRefusedError, match=r"other.*schema_mode='merge'"):
        write_table(str(root), extra)
    with pytest.raises(dx.WriteRefusedError, match=r"column 'id'.*expected long.*string"):
        write_table(str(root), pa.table({"id": ["x"], "part": ["a"], "value": ["v"]}))
    with pytest.raises(dx.WriteRefusedError, match="column 'id'"):
        write_table(str(root), pa.table({"id": pa.array([2**40], pa.uint64())}).cast(pa.schema([("id", pa.float64())])))
    _unchanged(root, 0)
    # safe implicit casts and missing nullable columns are fine; column names are case-insensitive
    write_table(str(root), pa.table({"ID": pa.array([7], pa.int32()), "Part": ["a"]}))
    got = dx.open_table(str(root)).snapshot().to_arrow().to_pylist()
    assert {"id": 7, "part": "a", "value": None} in got


def test_schema_evolution_merge_and_overwrite(tmp_path):
    root = tmp_path / "t"
    write_table(str(root), sample(2))
    write_table(str(root), sample(1, 5).append_column("score", pa.array([0.5])), schema_mode="merge")
    snap = dx.open_table(str(root)).snapshot()
    assert snap.schema.names == ["id", "part", "value", "score"]
    assert snap.table.history(1).column("operation")[0].as_py() == "WRITE"
    new = pa.table({"x": pa.array([1, 2], pa.int16())})
    with pytest.raises(dx.WriteRefusedError, match="mode='overwrite'"):
        write_table(str(root), new, schema_mode="overwrite")
    write_table(str(root), new, mode="overwrite", schema_mode="overwrite")
    snap = dx.open_table(str(root)).snapshot()
    assert snap.schema.names == ["x"] and rows(snap.to_arrow()) == [(1,), (2,)]
    assert rows(dx.open_table(str(root)).snapshot(1).to_arrow(), "id") == [(0,), (1,), (5,)]


def test_not_null(tmp_path):
    root = tmp_path / "t"
    schema = {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": False, "metadata": {}},
            {
                "name": "s",
                "type": {"type": "struct", "fields": [{"name": "x", "type": "long", "nullable": False, "metadata": {}}]},
                "nullable": True,
                "metadata": {},
            },
        ],
    }
    write_commit(root, 0, [commit_info(), protocol(1, 2), metadata(schema)])
    with pytest.raises(dx.WriteRefusedError, match="'id' is NOT NULL but 1 rows are null"):
        write_table(str(root), pa.table({"id": pa.array([1, None], pa.int64())}))
    with pytest.raises(dx.WriteRefusedError, match="'id' is NOT NULL but the data does not have it"):
        write_table(str(root), pa.table({"s": pa.array([None], pa.struct([("x", pa.int64())]))}))
    s_type = pa.struct([("x", pa.int64())])
    with pytest.raises(dx.WriteRefusedError, match=r"'s\.x' is NOT NULL"):
        write_table(str(root), pa.table({"id": pa.array([1], pa.int64()), "s": pa.array([{"x": None}], s_type)}))
    # a null parent struct does not make its NOT NULL child null
    write_table(str(root), pa.table({"id": pa.array([1], pa.int64()), "s": pa.array([None], s_type)}))
    _unchanged(root, 1)


def test_invariants(tmp_path):
    root = tmp_path / "t"
    schema = {
        "type": "struct",
        "fields": [
            {
                "name": "x",
                "type": "integer",
                "nullable": True,
                "metadata": {"delta.invariants": json.dumps({"expression": {"expression": "x > 3"}})},
            },
        ],
    }
    write_commit(root, 0, [commit_info(), protocol(1, 2), metadata(schema)])
    with pytest.raises(dx.WriteRefusedError, match=r"invariant on column 'x' \(x > 3\) is violated by 1 of 3 rows"):
        write_table(str(root), pa.table({"x": pa.array([4, 5, 2], pa.int32())}))
    with pytest.raises(dx.WriteRefusedError, match="false or null"):
        write_table(str(root), pa.table({"x": pa.array([None], pa.int32())}))
    write_table(str(root), pa.table({"x": pa.array([4, 5], pa.int32())}))
    _unchanged(root, 1)


def test_check_constraints(tmp_path):
    root = tmp_path / "t"
    data = pa.table({"id": pa.array([1, 2], pa.int64()), "born": pa.array([dt.date(1950, 1, 1), dt.date(2000, 5, 5)])})
    write_table(str(root), data, configuration={"delta.constraints.bornAfter1900": "born > '1900-01-01'"})
    snap = dx.open_table(str(root)).snapshot()
    assert "checkConstraints" in snap.protocol.writer_feature_set
    bad = pa.table({"id": pa.array([3], pa.int64()), "born": pa.array([dt.date(1850, 1, 1)])})
    with pytest.raises(dx.WriteRefusedError, match="CHECK constraint 'bornAfter1900'"):
        write_table(str(root), bad)
    _unchanged(root, 0)
    # adding a constraint validates the rows already in the table
    with pytest.raises(dx.WriteRefusedError, match="existing rows violate it"):
        set_table_properties(str(root), {"delta.constraints.smallId": "id < 2"})
    set_table_properties(str(root), {"delta.constraints.positive": "id > 0"})
    with pytest.raises(dx.WriteRefusedError, match="positive"):
        write_table(str(root), pa.table({"id": pa.array([-1], pa.int64()), "born": pa.array([dt.date(2001, 1, 1)])}))


def test_unevaluable_constraint_refuses(tmp_path):
    root = tmp_path / "t"
    with pytest.raises(dx.WriteRefusedError, match="cannot evaluate CHECK constraint 'weird'"):
        write_table(str(root), sample(2), configuration={"delta.constraints.weird": "no_such_function(id) > 0"})
    with pytest.raises(dx.TableNotFoundError):
        dx.open_table(str(root)).snapshot()


def test_generated_columns(tmp_path):
    root = tmp_path / "t"
    schema = {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "double_id", "type": "long", "nullable": True, "metadata": {"delta.generationExpression": "id * 2"}},
        ],
    }
    write_commit(root, 0, [commit_info(), protocol(1, 4), metadata(schema)])
    write_table(str(root), pa.table({"id": pa.array([1, 2], pa.int64())}))
    got = dx.open_table(str(root)).snapshot().to_arrow().to_pylist()
    assert sorted((r["id"], r["double_id"]) for r in got) == [(1, 2), (2, 4)]
    write_table(str(root), pa.table({"id": pa.array([3], pa.int64()), "double_id": pa.array([6], pa.int64())}))
    with pytest.raises(dx.WriteRefusedError, match="differs from its generation expression"):
        write_table(str(root), pa.table({"id": pa.array([4], pa.int64()), "double_id": pa.array([9], pa.int64())}))
    _unchanged(root, 2)


def test_identity_columns(tmp_path):
    root = tmp_path / "t"
    ident = {"delta.identity.start": 10, "delta.identity.step": 5, "delta.identity.allowExplicitInsert": False}
    schema = {
        "type": "struct",
        "fields": [
            {"name": "key", "type": "long", "nullable": True, "metadata": ident},
            {"name": "v", "type": "string", "nullable": True, "metadata": {}},
        ],
    }
    write_commit(root, 0, [commit_info(), protocol(1, 6), metadata(schema)])
    write_table(str(root), pa.table({"v": ["a", "b"]}))
    write_table(str(root), pa.table({"v": ["c"]}))
    snap = dx.open_table(str(root)).snapshot()
    assert sorted((r["key"], r["v"]) for r in snap.to_arrow().to_pylist()) == [(10, "a"), (15, "b"), (20, "c")]
    assert snap.schema.field("key").metadata["delta.identity.highWaterMark"] == 20
    with pytest.raises(dx.WriteRefusedError, match="GENERATED ALWAYS"):
        write_table(str(root), pa.table({"key": pa.array([99], pa.int64()), "v": ["x"]}))
    _unchanged(root, 2)


def test_identity_explicit_values_move_high_water_mark(tmp_path):
    root = tmp_path / "t"
    ident = {"delta.identity.start": 1, "delta.identity.step": 1, "delta.identity.allowExplicitInsert": True}
    schema = {"type": "struct", "fields": [{"name": "key", "type": "long", "nullable": True, "metadata": ident}]}
    write_commit(root, 0, [commit_info(), protocol(1, 6), metadata(schema)])
    write_table(str(root), pa.table({"key": pa.array([100], pa.int64())}))
    write_table(str(root), pa.table({"key": pa.array([None], pa.int64())}))
    assert sorted(r["key"] for r in dx.open_table(str(root)).snapshot().to_arrow().to_pylist()) == [100, 101]


def test_variant_structs_with_nullable_parts(tmp_path):
    """A variant column takes `struct<metadata, value>` with nullable fields (as Spark and most
    Arrow producers give it); a present value without its metadata or value is refused."""
    root = tmp_path / "t"
    features = ["variantType-preview"]  # the preview name is enough for a variant column
    schema = {"type": "struct", "fields": [{"name": "v", "type": "variant", "nullable": True, "metadata": {}}]}
    write_commit(root, 0, [commit_info(), protocol(3, 7, features, features), metadata(schema)])
    loose = pa.struct([("metadata", pa.binary()), ("value", pa.binary())])
    short_string_a = b"\x05a"
    write_table(str(root), pa.table({"v": pa.array([{"metadata": b"\x01\x00\x00", "value": short_string_a}, None], loose)}))
    got = dx.open_table(str(root)).snapshot().to_arrow(variant="json").column("v").to_pylist()
    assert sorted(got, key=str) == ['"a"', None]
    with pytest.raises(dx.WriteRefusedError, match="a variant value has no metadata"):
        write_table(str(root), pa.table({"v": pa.array([{"metadata": None, "value": short_string_a}], loose)}))
    with pytest.raises(dx.WriteRefusedError, match="expected variant"):
        write_table(str(root), pa.table({"v": pa.array([{"metadata": b"\x01\x00\x00"}], pa.struct([("metadata", pa.binary())]))}))
    _unchanged(root, 1)
