"""The "deltaexplore on Spark" column of the clients matrix (`inspect.clients`): the table of every
feature (tests/feature_tables.py: written by the core writer, or hand-written where the writer
refuses the feature) read with `dx.spark.read` gives the local reader's rows, and an append plus
a DELETE through `deltaexplore.spark` leave the rows the local reader expects; where not, the
error is the kind `SPARK_READS` / `SPARK_WRITES` names."""

from __future__ import annotations

import shutil
import warnings

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from clients_evidence import same_kind
from feature_tables import REFUSED, WRITTEN, build_all

import deltaexplore as dx
from deltaexplore.core.protocol.features import FEATURES
from deltaexplore.core.protocol.schema import VARIANT_ARROW
from deltaexplore.core.protocol.variant import variant_structs_as_json
from deltaexplore.inspect.clients import CHECKED_READS, CHECKED_WRITES, DX_SPARK, SPARK_READS, SPARK_WRITES, client_features

from .conftest import SPARK_MARKS, assert_same_rows

pytestmark = SPARK_MARKS
FEATURE_NAMES = sorted(FEATURES)


@pytest.fixture(autouse=True)
def _by_path():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dx.CatalogManagedWarning)  # catalogManaged is opened by path
        yield


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    return build_all(tmp_path_factory.mktemp("features"), refused=True)


def kind(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"


def _check(seen: str | None, declared: str | None) -> None:
    if declared is None:
        assert seen is None, seen
    else:
        assert seen is not None and same_kind(seen, declared), (seen, declared)


@pytest.mark.parametrize("feature", FEATURE_NAMES)
def test_spark_reads_the_feature_table(spark, tables, feature):
    from deltaexplore.spark import read

    root, _ = tables[feature]
    table = dx.open_table(root)
    seen = None
    try:
        local = table.snapshot().to_arrow()
    except dx.DeltaExploreError as exc:  # the local reader refuses it too: so must Spark
        with pytest.raises(type(exc)) as info:
            read(spark, table).toArrow()
        seen = kind(info.value)
    else:
        try:
            got = read(spark, table).toArrow()
        except dx.DeltaExploreError as exc:
            seen = kind(exc)
        else:
            assert_same_rows(_json(got, local.schema), _json(local, local.schema), feature)
    _check(seen, SPARK_READS.get(feature))


def _json(rows: pa.Table, schema: pa.Schema) -> pa.Table:
    """Variant columns as JSON text (Spark gives their struct with nullable fields)."""
    variant = [i for i, f in enumerate(schema) if f.type == VARIANT_ARROW]
    for i in variant:
        rows = rows.set_column(i, schema.field(i).name, rows.column(i).cast(VARIANT_ARROW))
    return variant_structs_as_json(rows)


def _new_rows(before: pa.Table, snapshot) -> pa.Table:
    """Two of the table's rows with new ids; generated and identity columns left to the writer."""
    rows = before.slice(0, 2)
    rows = rows.set_column(rows.column_names.index("id"), "id", pc.add(rows.column("id"), 1000))
    derived = [
        f.name
        for f in snapshot.schema.fields
        if "delta.generationExpression" in f.metadata or "delta.identity.start" in f.metadata
    ]
    return rows.drop_columns(derived)


@pytest.mark.parametrize("feature", FEATURE_NAMES)
def test_spark_writes_to_the_feature_table(spark, tables, tmp_path, feature):
    import deltaexplore.spark as dxs

    source, _ = tables[feature]
    root = str(tmp_path / "t")
    shutil.copytree(source, root)
    table = dx.open_table(root)
    version = table.latest_version()
    seen = None
    appended = False
    try:
        snap = table.snapshot()
        before = snap.to_arrow()
        new = _new_rows(before, snap)
        dxs.write(spark, spark.createDataFrame(new), root, mode="append")
        appended = True
        gone = int(pc.min(before.column("id")).as_py())
        if feature == "appendOnly":
            with pytest.raises(dx.WriteRefusedError, match="append-only"):
                dxs.delete(spark, root, f"id = {gone}")
            gone = None
        else:
            dxs.delete(spark, root, f"id = {gone}")
    except dx.DeltaExploreError as exc:
        seen = kind(exc)
        # a refused operation commits nothing (the append before a refused DELETE stays)
        assert dx.open_table(root).latest_version() == version + (1 if appended else 0)
    else:
        after = dx.open_table(root).snapshot().to_arrow()
        is_new = pc.is_in(after.column("id"), new.column("id"))
        assert sorted(after.filter(is_new).column("id").to_pylist()) == sorted(new.column("id").to_pylist())
        kept = before if gone is None else before.filter(pc.not_equal(before.column("id"), gone))
        schema = before.schema
        assert_same_rows(_json(after.filter(pc.invert(is_new)), schema), _json(kept, schema), feature)
        for name in new.column_names:  # the appended values, as written
            assert _json(after.filter(is_new), schema).sort_by("id").column(name).to_pylist() == (
                _json(new, schema).sort_by("id").column(name).to_pylist()
            ), name
    _check(seen, SPARK_WRITES.get(feature))


def test_spark_cells_are_the_tests():
    assert set(WRITTEN) | set(REFUSED) == set(FEATURES)
    assert CHECKED_READS[DX_SPARK] == CHECKED_WRITES[DX_SPARK] == set(FEATURES)
    assert set(SPARK_READS) <= set(FEATURES) and set(SPARK_WRITES) <= set(FEATURES)
    cells = {r["feature"]: r for r in client_features().to_pylist() if r["client"] == DX_SPARK}
    for feature, info in FEATURES.items():
        cell = cells[feature]
        assert cell["read"] == (info.read and feature not in SPARK_READS), feature
        assert cell["write"] == (info.write and feature not in SPARK_WRITES), feature
        assert (cell["read_evidence"], cell["write_evidence"]) == ("checked", "checked")
