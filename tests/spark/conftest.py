"""One local Spark session for every Spark test, and row comparison helpers.

Spark tests are marked `spark` and grouped (`xdist_group("spark")`) so that `pytest -n 2
--dist loadgroup` runs them all in one worker with one session.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pyarrow as pa
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from corpus_paths import CORPUS, SHARED_TOOLS


def _checker():
    spec = importlib.util.spec_from_file_location("corpus_check", SHARED_TOOLS / "corpus_check.py")
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CHECKER = _checker() if (SHARED_TOOLS / "corpus_check.py").exists() else None


@pytest.fixture(scope="session")
def spark():
    pytest.importorskip("pyspark", reason="pyspark is not installed (pip install 'deltaexplore[spark]')")
    from deltaexplore.spark.session import get_spark, java_available

    if java_available() is None:
        pytest.skip("no Java runtime: Spark tests need java 17+ on PATH or JAVA_HOME")
    session = get_spark(
        master="local[2]",
        config={
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
            "spark.driver.memory": "3g",
            "spark.sql.session.timeZone": "America/Los_Angeles",  # results must not depend on it
        },
    )
    yield session
    session.stop()


@pytest.fixture(scope="session")
def connect_server(tmp_path_factory):
    """A Spark Connect server from pyspark's own distribution, on loopback, for the session."""
    pytest.importorskip("pyspark", reason="pyspark is not installed")
    try:
        from pyspark.sql.connect.utils import check_dependencies

        check_dependencies()
    except ImportError as exc:
        pytest.skip(f"the Spark Connect client packages are missing (pip install 'deltaexplore[spark-connect]'): {exc}")
    from deltaexplore.spark.session import java_available

    if java_available() is None:
        pytest.skip("no Java runtime: the Spark Connect server needs java 17+")
    from .servers import start_connect_server

    server = start_connect_server(tmp_path_factory.mktemp("spark-connect"))
    yield server
    server.stop()


@pytest.fixture
def spark_connect(spark, connect_server, monkeypatch):
    """A Spark Connect session (as a Connect client process has it: pyspark in Connect mode).

    The classic session starts first (pyspark refuses a classic session in Connect mode) and the
    client session lives for the test only, so that tests of the classic session in the same
    process never see it as the active session."""
    monkeypatch.setenv("SPARK_CONNECT_MODE_ENABLED", "1")
    from pyspark.sql.connect.session import SparkSession as RemoteSession

    session = RemoteSession.builder.remote(connect_server.url).getOrCreate()
    yield session
    session.stop()


def normalized_rows(table: pa.Table, columns: list[str]) -> list:
    """Rows as sorted, comparable tuples (maps as sorted pairs, timestamps as UTC)."""
    assert CHECKER is not None
    return CHECKER._rows(table, columns)


def _sortable(t: pa.DataType) -> bool:
    return not (pa.types.is_nested(t) or pa.types.is_floating(t) or pa.types.is_binary(t) or pa.types.is_null(t))


def assert_same_rows(got: pa.Table, expected: pa.Table, where: str = "") -> None:
    """Same columns (names and order) and the same multiset of rows."""
    assert got.column_names == expected.column_names, f"{where}: columns {got.column_names} != {expected.column_names}"
    assert got.num_rows == expected.num_rows, f"{where}: {got.num_rows} rows != {expected.num_rows}"
    cols = expected.column_names
    if expected.num_rows > 20_000 and cols and all(_sortable(f.type) for f in expected.schema):
        # Big tables: cast to the expected types, sort and compare in Arrow.
        got = got.cast(expected.schema)
        keys = [(c, "ascending") for c in cols]
        assert got.sort_by(keys).equals(expected.sort_by(keys)), f"{where}: rows differ"
        return
    a, b = normalized_rows(got, cols), normalized_rows(expected, cols)
    if a != b:
        diff = [(x, y) for x, y in zip(a, b) if x != y][:2]
        raise AssertionError(f"{where}: rows differ, first (got, expected): {diff}")


def corpus_available() -> bool:
    return (CORPUS / "catalog.json").exists() and CHECKER is not None


SPARK_MARKS = [pytest.mark.spark, pytest.mark.xdist_group("spark")]
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
