"""The Spark session: the active one, or a local one with laptop defaults, and Spark errors.

`get_spark()` never starts a second session; it checks for Java first so that a missing JVM
gives a `SparkError` naming the fix instead of a gateway stack trace. `spark_errors()` turns
failures raised inside Spark (analysis errors, failed jobs, py4j errors) into `SparkError`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from deltaexplore.errors import DeltaExploreError, MissingDependencyError, SparkError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["LAPTOP_DEFAULTS", "active_session", "get_spark", "require_pyspark", "spark_errors"]

JAVA_FIX = (
    "Spark needs a Java runtime (17 or 21): install one (Debian/Ubuntu: apt-get install openjdk-17-jre-headless; "
    "macOS: brew install openjdk@17) and put `java` on PATH or set JAVA_HOME"
)

#: Settings of the local session `get_spark()` starts (a laptop: few cores, small data).
LAPTOP_DEFAULTS: dict[str, str] = {
    "spark.sql.shuffle.partitions": "8",
    "spark.default.parallelism": "4",
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.parquet.fieldId.read.enabled": "true",
    "spark.sql.parquet.fieldId.read.ignoreMissing": "true",
    "spark.sql.parquet.fieldId.write.enabled": "true",
    "spark.ui.showConsoleProgress": "false",
    "spark.ui.enabled": "false",
    "spark.driver.memory": "2g",
    "spark.sql.sources.parallelPartitionDiscovery.parallelism": "4",
}


def require_pyspark() -> Any:
    """Import pyspark or raise `MissingDependencyError` naming the extra."""
    try:
        import pyspark
    except ImportError as exc:
        raise MissingDependencyError("the Spark layer needs pyspark: pip install 'deltaexplore[spark]'", extra="spark") from exc
    return pyspark


def java_available() -> str | None:
    """Path of the `java` executable Spark would use, or None."""
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = os.path.join(home, "bin", "java")
        return candidate if os.path.exists(candidate) else None
    return shutil.which("java")


def active_session() -> SparkSession | None:
    """The Spark session this process already runs (this thread's active one, else the default
    one), or None. Never starts Spark, and never imports pyspark when nothing imported it yet
    (then no session can exist)."""
    if "pyspark" not in sys.modules:
        return None
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        return None
    session = SparkSession.getActiveSession() or getattr(SparkSession, "_instantiatedSession", None)
    if session is None:
        return None
    sc = getattr(session, "_sc", None)
    if sc is None or getattr(sc, "_jsc", None) is None:  # stopped
        return None
    return session


def get_spark(
    *,
    master: str | None = None,
    app_name: str = "deltaexplore",
    config: dict[str, str] | None = None,
) -> SparkSession:
    """The active Spark session, or a new local one with laptop defaults.

    Args:
        master: Spark master for a new session (default ``local[N]`` with N = min(cores, 4)).
        app_name: application name of a new session.
        config: extra settings for a new session (override `LAPTOP_DEFAULTS`).

    Raises:
        MissingDependencyError: pyspark is not installed.
        SparkError: Java is missing or the JVM cannot start (the message says how to fix it).
    """
    require_pyspark()
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    if java_available() is None:
        where = f"JAVA_HOME={os.environ['JAVA_HOME']} has no bin/java" if os.environ.get("JAVA_HOME") else "no `java` on PATH"
        raise SparkError(f"cannot start Spark: {where}. {JAVA_FIX}")
    # Python workers run the driver's interpreter (a laptop: same venv, same packages).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    cores = os.cpu_count() or 2
    builder = SparkSession.builder.master(master or f"local[{min(cores, 4)}]").appName(app_name)
    for key, value in {**LAPTOP_DEFAULTS, **(config or {})}.items():
        builder = builder.config(key, value)
    try:
        spark = builder.getOrCreate()
    except Exception as exc:
        text = str(exc)
        if "JAVA_GATEWAY_EXITED" in text or "Java gateway" in text or "JAVA_HOME" in text:
            raise SparkError(f"cannot start Spark: the Java gateway exited ({text.strip()[:200]}). {JAVA_FIX}") from exc
        raise SparkError(f"cannot start Spark: {text.strip()[:500]}") from exc
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _short(exc: BaseException) -> str:
    text = getattr(exc, "getMessage", None)
    message = text() if callable(text) else str(exc)
    lines = [line.strip() for line in str(message).splitlines() if line.strip() and not line.startswith(("\tat ", "at "))]
    if not lines:
        return type(exc).__name__
    # Python worker failures: the first line is generic, the error is at the end of the traceback.
    cause = next((line for line in reversed(lines) if "Error" in line or "Exception" in line), lines[-1])
    head = lines[0][:300]
    return head if cause == lines[0] else f"{head} ... {cause[:500]}"


@contextlib.contextmanager
def spark_errors(what: str, *, path: str | None = None) -> Iterator[None]:
    """Turn Spark and py4j failures inside the block into `SparkError` ("<what> failed: ...")."""
    try:
        yield
    except DeltaExploreError:
        raise
    except Exception as exc:
        module = type(exc).__module__ or ""
        if module.startswith(("pyspark", "py4j")):
            raise SparkError(f"{what} failed in Spark: {_short(exc)}", path=path) from exc
        raise
