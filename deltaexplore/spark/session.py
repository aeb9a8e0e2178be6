"""The Spark session: the active one, or a local one with laptop defaults, and Spark errors.

`get_spark()` never starts a second session; it checks for Java first so that a missing JVM
gives a `SparkError` naming the fix instead of a gateway stack trace. `spark_errors()` turns
failures raised inside Spark (analysis errors, failed jobs, py4j errors) into `SparkError`.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import sys
import weakref
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from deltaexplore.errors import DeltaExploreError, MissingDependencyError, SparkError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "LAPTOP_DEFAULTS",
    "active_session",
    "default_parallelism",
    "describe_session",
    "get_spark",
    "is_connect",
    "is_local_master",
    "require_pyspark",
    "spark_errors",
]

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


def is_connect(spark: Any) -> bool:
    """Whether `spark` is a Spark Connect session (``sc://...``: no JVM in this process)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def _connect_session_class() -> Any:
    """pyspark's Connect `SparkSession` class when it was imported already (else None)."""
    module = sys.modules.get("pyspark.sql.connect.session")
    return getattr(module, "SparkSession", None) if module is not None else None


def active_session() -> SparkSession | None:
    """The Spark session this process already runs (this thread's active one, else the default
    one; a classic session first, then a Spark Connect one), or None. Never starts Spark, and
    never imports pyspark when nothing imported it yet (then no session can exist)."""
    if "pyspark" not in sys.modules:
        return None
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        return None
    session = SparkSession.getActiveSession() or getattr(SparkSession, "_instantiatedSession", None)
    if session is not None and not is_connect(session):
        sc = getattr(session, "_sc", None)
        if sc is not None and getattr(sc, "_jsc", None) is not None:  # else stopped
            return session
    elif session is not None and not getattr(session, "is_stopped", False):
        return session
    connect = _connect_session_class()
    if connect is None:
        return None
    try:
        remote = connect.getActiveSession() or getattr(connect, "_default_session", None)
    except Exception:  # noqa: BLE001 - a Connect client that cannot answer is no session
        return None
    return None if remote is None or getattr(remote, "is_stopped", False) else remote


def is_local_master(master: str | None) -> bool:
    """A master running everything in this machine's one JVM (``local``, ``local[N]``, ...)."""
    return master is None or master == "local" or master.startswith("local[") or master.startswith("local-cluster[")


def get_spark(
    *,
    master: str | None = None,
    remote: str | None = None,
    app_name: str = "deltaexplore",
    config: dict[str, str] | None = None,
) -> SparkSession:
    """The active Spark session, or a new one: a local one with laptop defaults, a session on
    `master` (a cluster) or a Spark Connect session on `remote`.

    An existing session is returned as it is (its settings are never changed). Laptop defaults
    (`LAPTOP_DEFAULTS`, the executors' Python set to this interpreter) apply only to a local
    master this call starts; a cluster (`master` such as ``spark://host:7077``) or a Connect
    server gets only `config`.

    Args:
        master: Spark master for a new session (default ``local[N]`` with N = min(cores, 4)).
        remote: a Spark Connect URL (``sc://host:15002``); also taken from ``SPARK_REMOTE``
            when neither `master` nor `remote` is given.
        app_name: application name of a new session.
        config: settings for a new session (over `LAPTOP_DEFAULTS` for a local one).

    Raises:
        MissingDependencyError: pyspark (or, for Connect, its client packages) is not installed.
        SparkError: Java is missing or the JVM cannot start, or the Connect server cannot be
            reached (the message says how to fix it).
    """
    require_pyspark()
    active = active_session()
    if active is not None:
        connected = is_connect(active)
        if (remote is None and master is None) or (remote is not None and connected) or (master is not None and not connected):
            return active  # the session asked for (a `master` never gets an active Connect session)
    remote = remote or (os.environ.get("SPARK_REMOTE") if master is None else None)
    if remote:
        return _connect(remote, app_name, config or {})
    from pyspark.sql import SparkSession

    if java_available() is None:
        where = f"JAVA_HOME={os.environ['JAVA_HOME']} has no bin/java" if os.environ.get("JAVA_HOME") else "no `java` on PATH"
        raise SparkError(f"cannot start Spark: {where}. {JAVA_FIX}")
    local = is_local_master(master)
    settings = {**LAPTOP_DEFAULTS, **(config or {})} if local else dict(config or {})
    if local:
        # Python workers run the driver's interpreter (a laptop: same venv, same packages).
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    cores = os.cpu_count() or 2
    builder = SparkSession.builder.master(master or f"local[{min(cores, 4)}]").appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    try:
        spark = builder.getOrCreate()
    except Exception as exc:
        text = str(exc)
        if "JAVA_GATEWAY_EXITED" in text or "Java gateway" in text or "JAVA_HOME" in text:
            raise SparkError(f"cannot start Spark: the Java gateway exited ({text.strip()[:200]}). {JAVA_FIX}") from exc
        raise SparkError(f"cannot start Spark: {text.strip()[:500]}") from exc
    if local:
        spark.sparkContext.setLogLevel("ERROR")
    return spark


def _connect(url: str, app_name: str, config: dict[str, str]) -> SparkSession:
    """A Spark Connect session on `url` (checked with one round trip); pyspark is in Connect
    mode from then on, as in any Connect client process."""
    shown = url.split(";", maxsplit=1)[0]  # parameters after ';' may hold a token
    if not url.startswith("sc://"):
        raise SparkError(f"a Spark Connect URL starts with sc://, got {shown!r}")
    try:
        from pyspark.sql.connect.utils import check_dependencies

        check_dependencies()
    except ImportError as exc:
        raise MissingDependencyError(
            f"Spark Connect needs its client packages ({exc}): pip install 'deltaexplore[spark-connect]'", extra="spark-connect"
        ) from exc
    from pyspark.sql import SparkSession

    classic = getattr(SparkSession, "_instantiatedSession", None)
    if classic is not None and not is_connect(classic) and getattr(getattr(classic, "_sc", None), "_jsc", None) is not None:
        raise SparkError(
            f"cannot connect to {shown}: this process runs a classic Spark session, and pyspark cannot mix one with a "
            "Spark Connect session; stop it first (spark.stop()) or use it"
        )
    _reachable(url, shown)
    builder = SparkSession.builder.remote(url).appName(app_name)
    for key, value in config.items():
        builder = builder.config(key, value)
    try:
        spark = builder.getOrCreate()
        spark.range(1).count()  # fail here, not in the first operation, when nothing listens
    except DeltaExploreError:
        raise
    except Exception as exc:  # noqa: BLE001 - gRPC and pyspark errors alike: the server is not there
        raise SparkError(f"cannot connect to the Spark Connect server {shown}: {_short(exc)[:300]}") from None
    return spark


def _reachable(url: str, shown: str, timeout: float = 10.0) -> None:
    """Fail fast when nothing listens at the URL's host and port (the Connect client would
    retry for minutes)."""
    hostport = url[len("sc://") :].split("/", 1)[0].split(";", 1)[0]
    host, _, port = hostport.rpartition(":") if ":" in hostport else (hostport, "", "15002")
    try:
        with socket.create_connection((host.strip("[]") or "localhost", int(port)), timeout=timeout):
            pass
    except (OSError, ValueError) as exc:
        raise SparkError(f"cannot reach the Spark Connect server {shown}: {exc}") from None


def describe_session(spark: SparkSession | None) -> str:
    """One line naming a session: its Connect server (never a token) or its master."""
    if spark is None:
        return "no Spark session"
    if is_connect(spark):
        client = getattr(spark, "client", None)
        host = getattr(client, "host", None) or "?"
        return f"Spark Connect session on {host}"
    try:
        master = spark.sparkContext.master
        version = spark.version
    except Exception:  # noqa: BLE001 - a stopped session still gets a name
        return "a stopped Spark session"
    return f"Spark {version} session, master {master}"


def default_parallelism(spark: SparkSession) -> int:
    """The cluster's default parallelism (cores), on a classic or a Connect session."""
    if not is_connect(spark):
        return max(1, int(spark.sparkContext.defaultParallelism))
    cached = _PARALLELISM.get(spark)
    if cached is not None:
        return cached
    value = spark.conf.get("spark.default.parallelism", None)
    if value:
        n = int(value)
    else:  # `range` without a partition count uses the server's default parallelism
        from pyspark.sql import functions as F

        with spark_errors("asking the Spark Connect server for its parallelism"):
            n = int(spark.range(0, 1 << 16).select(F.max(F.spark_partition_id())).first()[0]) + 1  # type: ignore[index]
    _PARALLELISM[spark] = max(1, n)
    return max(1, n)


_PARALLELISM: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()


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


#: a Python worker that could not import a package (the package missing on the executors)
_MISSING_MODULE = re.compile(r"No module named '([A-Za-z0-9_.]+)'")


def missing_on_executors(exc: BaseException) -> str | None:
    """The top-level package a Python worker failed to import, when that is why `exc` happened."""
    found = _MISSING_MODULE.search(str(exc))
    return found.group(1).split(".")[0] if found else None


@contextlib.contextmanager
def spark_errors(what: str, *, path: str | None = None) -> Iterator[None]:
    """Turn Spark, Spark Connect (gRPC) and py4j failures inside the block into `SparkError`
    ("<what> failed: ..."); a package missing in the executors' Python is named as such. A
    `SparkError` of an inner block gets the outer `what` in front ("MERGE: writing data files
    failed in Spark: ...")."""
    try:
        yield
    except SparkError as exc:
        if str(exc).startswith(what):
            raise
        raise SparkError(f"{what}: {exc}", path=exc.path or path) from exc  # the operation, then the step
    except DeltaExploreError:
        raise
    except Exception as exc:
        module = type(exc).__module__ or ""
        if module.startswith(("pyspark", "py4j", "grpc")):
            package = missing_on_executors(exc)
            if package is not None:
                raise SparkError(
                    f"{what} failed in Spark: the Python package {package!r} is not installed on the Spark executors "
                    f"(the Python the workers run: spark.pyspark.python / PYSPARK_PYTHON on the cluster); install it there "
                    f"(pip install {'deltaexplore' if package == 'deltaexplore' else package}) or use an operation that "
                    "needs only pyspark and pyarrow on the executors",
                    path=path,
                ) from exc
            raise SparkError(f"{what} failed in Spark: {_short(exc)}", path=path) from exc
        raise
