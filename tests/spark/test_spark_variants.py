"""Variants written by a real Spark (4.x), read by the local reader and by `dx.spark.read`.

Spark writes the data files (unshredded, and shredded with `forceShreddingSchemaForTest`, two
shredding schemas in one table beside unshredded files); the test wraps them in a Delta table
by hand. What Spark's own `to_json` says of each value (session time zone UTC) is what the
writer wrote: the local reader's `to_arrow(variant="json")` must say the same, and Spark reading
the table through this project (`dx.spark.read`, shredded values rebuilt by Spark's reader)
must give variants whose JSON is the same again.
"""

from __future__ import annotations

import glob
import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import deltaexplore as dx
from deltaexplore.core.protocol.variant import to_json

from .conftest import SPARK_MARKS, corpus_available

pytestmark = SPARK_MARKS

# one row per kind of value JSON lacks (dates, timestamps, decimals, binary, floats) and nesting
VALUES_SQL = """
SELECT id, CASE id
  WHEN 0 THEN to_variant_object(named_struct('d', DATE'2024-11-07', 'ts', TIMESTAMP'2024-11-07 12:33:54.123456',
                                             'ntz', TIMESTAMP_NTZ'1957-11-07 12:33:54', 'dec', CAST(-12.50 AS DECIMAL(9,2)),
                                             'big', CAST(98765432109876543210.5 AS DECIMAL(38,1)), 'bin', X'0A0B0C0D'))
  WHEN 1 THEN to_variant_object(named_struct('f', CAST(10.11 AS FLOAT), 'dbl', 1.0E10, 'small', 1.5E-5, 'neg0', -0.0D,
                                             'nan', CAST('NaN' AS DOUBLE), 'inf', CAST('-Infinity' AS DOUBLE)))
  WHEN 2 THEN parse_json('{"a": {"b": [1, 2.5, "x", null, {"c": true}]}, "s": "quote \\\\" and \\\\u00e9", "n": 9876543210}')
  WHEN 3 THEN to_variant_object(array(named_struct('k', 1), named_struct('k', 2)))
  WHEN 4 THEN parse_json('"just a string"')
  ELSE NULL END AS v
FROM range(6)
"""

SHREDDED_SQL = """
SELECT id, parse_json(CASE id % 4
  WHEN 0 THEN '{"a": 1, "b": "x", "c": [1, 2], "o": {"p": 1.5}}'
  WHEN 1 THEN '{"a": "not an int", "d": 2.5, "o": {"p": "q"}}'
  WHEN 2 THEN '42'
  ELSE '{"o": null, "b": "only b"}' END) AS v
FROM range(__FIRST__, __LAST__)
"""


def _spark_files(spark, sql: str, out: Path, *, shredding: str | None) -> list[Path]:
    conf = {
        "spark.sql.variant.writeShredding.enabled": "true" if shredding else "false",
        "spark.sql.variant.forceShreddingSchemaForTest": shredding or "",
        "spark.sql.session.timeZone": "UTC",
    }
    old = {k: spark.conf.get(k, None) for k in conf}
    try:
        for k, v in conf.items():
            spark.conf.set(k, v)
        spark.sql(sql).coalesce(1).write.mode("overwrite").parquet(str(out))
    finally:
        for k, v in old.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)
    return [Path(p) for p in sorted(glob.glob(str(out / "*.parquet")))]


def _delta_table(root: Path, files: list[Path], *, shredding: bool) -> dx.Table:
    features = ["variantType", "variantShredding"] if shredding else ["variantType"]
    schema = {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "v", "type": "variant", "nullable": True, "metadata": {}},
        ],
    }
    actions = [
        {"commitInfo": {"timestamp": 1_700_000_000_000, "operation": "WRITE"}},
        {"protocol": {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": features, "writerFeatures": features}},
        {
            "metaData": {
                "id": "spark-variants",
                "format": {"provider": "parquet", "options": {}},
                "schemaString": json.dumps(schema),
                "partitionColumns": [],
                "configuration": {"delta.enableVariantShredding": "true"} if shredding else {},
                "createdTime": 1_700_000_000_000,
            }
        },
    ]
    (root / "_delta_log").mkdir(parents=True)
    for i, f in enumerate(files):
        name = f"part-{i:03d}.parquet"
        os.link(f, root / name)
        actions.append(
            {"add": {"path": name, "partitionValues": {}, "size": f.stat().st_size, "modificationTime": 1, "dataChange": True}}
        )
    (root / "_delta_log" / f"{0:020d}.json").write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    return dx.open_table(str(root))


def _spark_json(spark, files: list[Path]) -> dict[int, str | None]:
    old = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    try:
        rows = spark.read.parquet(*[str(f) for f in files]).selectExpr("id", "to_json(v) AS j").collect()
    finally:
        spark.conf.set("spark.sql.session.timeZone", old)
    return {r["id"]: r["j"] for r in rows}


def _local_json(table: dx.Table) -> dict[int, str | None]:
    return {r["id"]: r["v"] for r in table.snapshot().to_arrow(variant="json").to_pylist()}


def _through_spark_json(spark, table: dx.Table) -> dict[int, str | None]:
    got = dx.spark.read(spark, table).toArrow()
    assert got.schema.field("v").type == pa.struct([pa.field("metadata", pa.binary()), pa.field("value", pa.binary())])
    return {r["id"]: None if r["v"] is None else to_json(r["v"]["metadata"], r["v"]["value"]) for r in got.to_pylist()}


def test_json_text_is_sparks_to_json(spark, tmp_path):
    """Dates, timestamps, decimals, binaries, floats (NaN, infinities, -0.0, exponents), nested
    objects and arrays, escapes: the local JSON is Spark's `to_json`, character for character."""
    files = _spark_files(spark, VALUES_SQL, tmp_path / "spark", shredding=None)
    table = _delta_table(tmp_path / "t", files, shredding=False)
    want = _spark_json(spark, files)
    assert len(want) == 6 and want[5] is None
    assert _local_json(table) == want
    assert _through_spark_json(spark, table) == want


def test_shredded_files_mixed_with_unshredded(spark, tmp_path):
    """Two shredding schemas (an int/string object with a nested object; an array and an
    object) and an unshredded file in one table: the local reader rebuilds what the writer
    wrote, and Spark through this project reads the same values."""
    files = [
        *_spark_files(
            spark,
            SHREDDED_SQL.replace("__FIRST__", "0").replace("__LAST__", "8"),
            tmp_path / "s1",
            shredding="a int, b string, o struct<p double>",
        ),
        *_spark_files(
            spark,
            SHREDDED_SQL.replace("__FIRST__", "8").replace("__LAST__", "16"),
            tmp_path / "s2",
            shredding="c array<int>, d double",
        ),
        *_spark_files(spark, SHREDDED_SQL.replace("__FIRST__", "16").replace("__LAST__", "20"), tmp_path / "u", shredding=None),
    ]
    shapes = [str(pq.ParquetFile(f).schema_arrow.field("v").type) for f in files]
    assert "typed_value" in shapes[0] and "typed_value" in shapes[1] and "typed_value" not in shapes[-1], shapes
    table = _delta_table(tmp_path / "t", files, shredding=True)
    want = _spark_json(spark, files)
    assert len(want) == 20
    assert _local_json(table) == want
    assert _through_spark_json(spark, table) == want


@pytest.mark.corpus
def test_corpus_shredded_table(spark):
    """The corpus's shredded table (Databricks, variantShredding-preview, an int64 shredded as
    typed_value) reads the same on both engines."""
    from corpus_paths import CORPUS

    root = CORPUS / "delta-spark" / "variant-stats-state-reconstruction"
    if not corpus_available() or not root.exists():
        pytest.skip("corpus absent")
    table = dx.open_table(str(root))
    assert table.snapshot().to_arrow(variant="json").column("v").to_pylist() == ["0"]
    got = dx.spark.read(spark, table).toArrow().to_pylist()
    assert [to_json(r["v"]["metadata"], r["v"]["value"]) for r in got] == ["0"]
