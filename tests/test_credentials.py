"""Credentials passed in `storage_options` never show: not in a repr, an error message (nor the
traceback of its causes), a log line or warning, the explorer's widget state, a `%delta` output,
or a notebook saved after using them all (run for real in a kernel, against S3 on moto).

The secrets are sentinels; every text the library produces around them is searched for each of
them, raw and URL-quoted. (Spark: `tests/spark/test_spark_credentials.py`.)
"""

from __future__ import annotations

import json
import logging
import traceback
import uuid
import warnings
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pyarrow as pa
import pytest
from s3_server import s3_endpoint

import deltaexplore as dx
from deltaexplore import inspect as dxi
from deltaexplore.core.operations import delete, optimize, vacuum, write_table

pytestmark = pytest.mark.s3

KEY = "AKIASENTINELKEY7Q3Z"
SECRET = "sentinel/Secret+Value=9f2c41"
TOKEN = "SENTINEL-session-token-4b7d"
SAS = "sv=2024-11-04&sig=SENTINELsasSIGNATURE%3D"
SENTINELS = (KEY, SECRET, TOKEN, SAS)


def leaks(text: str) -> list[str]:
    """The sentinels (raw or URL-quoted) that appear in `text`."""
    return [s for s in SENTINELS if s in text or quote(s, safe="") in text]


def error_text(exc: BaseException) -> str:
    """Everything a user could see of an error: message, repr, the printed traceback (causes
    and contexts included)."""
    return f"{exc}\n{exc!r}\n" + "".join(traceback.format_exception(exc))


@pytest.fixture(scope="module")
def s3() -> Iterator[str]:
    """A moto S3 server on 127.0.0.1 with a bucket; its endpoint."""
    with s3_endpoint(key="x", secret="x") as endpoint:
        yield endpoint


def options(endpoint: str, **extra: Any) -> dict[str, Any]:
    return {
        "key": KEY,
        "secret": SECRET,
        "token": TOKEN,
        "client_kwargs": {"endpoint_url": endpoint, "region_name": "us-east-1"},
        **extra,
    }


@pytest.fixture(scope="module")
def table_uri(s3: str) -> str:
    uri = f"s3://lake/{uuid.uuid4().hex}/t"
    opts = options(s3)
    data = pa.table({"id": pa.array(range(6), pa.int64()), "part": ["a", "b"] * 3})
    write_table(uri, data, partition_by=["part"], configuration={"delta.enableDeletionVectors": "true"}, storage_options=opts)
    delete(uri, "id = 1", storage_options=opts)
    write_table(uri, data, storage_options=opts)
    return uri


@pytest.fixture
def captured() -> Iterator[list[str]]:
    """Every log record (deltaexplore's at DEBUG, everyone's at WARNING) and warning."""
    texts: list[str] = []

    class Grab(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.name.startswith("deltaexplore") or record.levelno >= logging.WARNING:
                texts.append(self.format(record))

    handler = Grab(level=logging.DEBUG)
    root = logging.getLogger()
    ours = logging.getLogger("deltaexplore")
    old = ours.level
    ours.setLevel(logging.DEBUG)
    root.addHandler(handler)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield texts
    root.removeHandler(handler)
    ours.setLevel(old)
    texts.extend(str(w.message) for w in caught)


def test_reprs_results_and_displays_hold_no_secret(s3: str, table_uri: str, captured: list[str]) -> None:
    table = dx.open_table(table_uri, options(s3))
    snap = table.snapshot()
    texts = [repr(table), str(table), repr(table.storage), repr(snap), table.uri, table.storage.uri("x")]
    texts += [str(table.history()), str(snap.files()), str(dxi.overview(table)), str(dxi.files(table))]
    texts += [str(dxi.vacuum_preview(table, retention_hours=0)), str(dxi.log_health(table))]
    texts.append(str(optimize(table, dry_run=True)))
    texts.append(str(vacuum(table, retention_hours=0, enforce_retention_duration=False)))
    bundle = getattr(table, "_repr_mimebundle_", None)
    if bundle is not None:
        texts.append(json.dumps(bundle(), default=str))
    found = {t: leaks(t) for t in texts + captured if leaks(t)}
    assert not found


@pytest.mark.parametrize(
    "case",
    [
        "missing table",
        "missing bucket",
        "unknown option",
        "bad option value",
        "option the driver echoes",
        "unreachable endpoint",
        "missing version",
    ],
)
def test_failed_opens_hold_no_secret(s3: str, table_uri: str, case: str, captured: list[str]) -> None:
    opts = options(s3)
    uri = table_uri
    if case == "missing table":
        uri = "s3://lake/nothing/here"
    elif case == "missing bucket":
        uri = "s3://no-such-bucket/t"
    elif case == "unknown option":
        opts = options(s3, sas_token=SAS)
    elif case == "bad option value":
        opts = options(s3, client_kwargs=SAS)
    elif case == "option the driver echoes":  # botocore: "Unknown Signature Version: <value>"
        opts = options(s3, config_kwargs={"signature_version": SAS})
    elif case == "unreachable endpoint":
        opts = options("http://127.0.0.1:9", config_kwargs={"retries": {"max_attempts": 1}, "connect_timeout": 1})
    with pytest.raises(dx.DeltaExploreError) as info:
        table = dx.open_table(uri, opts)
        table.snapshot(99 if case == "missing version" else None).to_arrow()
    assert not leaks(error_text(info.value))
    assert not [t for t in captured if leaks(t)]


def test_explorer_state_holds_no_secret(s3: str, table_uri: str, captured: list[str]) -> None:
    pytest.importorskip("anywidget")
    widget = dx.explore(table_uri, storage_options=options(s3))
    states = []
    for tab in ("overview", "history", "files", "layout", "dv", "diff", "health", "maintenance"):
        widget.tab = tab
        states.append(widget.get_state())
    widget.version = 0
    states.append(widget.get_state())
    text = json.dumps(states, default=lambda b: bytes(b).decode("latin-1") if isinstance(b, (bytes, memoryview)) else str(b))
    assert not leaks(text)
    assert not leaks(json.dumps(widget._repr_mimebundle_() if hasattr(widget, "_repr_mimebundle_") else {}, default=str))
    assert not [t for t in captured if leaks(t)]


def test_delta_magic_outputs_hold_no_secret(s3: str, table_uri: str, captured: list[str]) -> None:
    pytest.importorskip("IPython")
    from IPython.core.error import UsageError
    from IPython.testing.globalipapp import get_ipython

    ip = get_ipython()
    ip.run_line_magic("load_ext", "deltaexplore")
    magics = ip.magics_manager.registry["DeltaMagics"]
    old = dict(magics.storage_options)
    magics.storage_options = options(s3)
    try:
        outputs = []
        for line in (
            f"history {table_uri}",
            f"files {table_uri}",
            f"health {table_uri}",
            f"features {table_uri}",
            f"vacuum {table_uri} --dry-run",
            f"optimize {table_uri}",
            f"diff {table_uri} 0 2",
        ):
            result = ip.run_line_magic("delta", line)
            outputs.append(repr(result))
            for method in ("_repr_html_", "_repr_mimebundle_"):
                if hasattr(result, method):
                    outputs.append(json.dumps(getattr(result, method)(), default=str))
            formatted, _ = ip.display_formatter.format(result)
            outputs.append(json.dumps(formatted, default=str))
        for line in (f"history s3://no-such-bucket/{uuid.uuid4().hex}", "history s3://lake/nothing/here"):
            with pytest.raises(UsageError) as info:
                ip.run_line_magic("delta", line)
            outputs.append(error_text(info.value))
        assert not [o for o in outputs if leaks(o)]
        assert not [t for t in captured if leaks(t)]
    finally:
        magics.storage_options = old


@pytest.mark.slow
def test_a_saved_notebook_holds_no_secret(s3: str, table_uri: str, tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A kernel uses the credentials every way (open, display, %delta, the explorer, errors);
    the notebook it leaves (outputs and widget state) holds none of them."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    secret_file = tmp_path / "options.json"
    secret_file.write_text(json.dumps(options(s3)))
    monkeypatch.setenv("DX_TEST_STORAGE_OPTIONS", str(secret_file))
    cells = [
        "import json, os\nimport deltaexplore as dx\nopts = json.load(open(os.environ['DX_TEST_STORAGE_OPTIONS']))",
        "%load_ext deltaexplore\n%config DeltaMagics.storage_options = opts",
        f"t = dx.open_table({table_uri!r}, opts)\nt",
        "t.snapshot().files()",
        f"%delta history {table_uri}",
        f"%delta health {table_uri}",
        f"%delta vacuum {table_uri} --dry-run",
        "dx.explore(t)",
        "dx.open_table('s3://no-such-bucket/t', opts).snapshot()",
        "%delta files s3://lake/nothing/here",
        "dx.open_table(" + repr(table_uri) + ", {**opts, 'unknown_option': opts['secret']}).snapshot()",
        "print(opts['secret'][::-1][::-1])  # the control: a notebook that does show a secret",
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True, store_widget_state=True)
    client.execute(cwd=str(tmp_path))
    outputs = [o for c in nb.cells for o in c.get("outputs", [])]
    assert any(o.get("output_type") == "error" for o in outputs)  # the failing cells did fail
    assert any("text/html" in o.get("data", {}) for o in outputs)  # and the others displayed
    control = nb.cells.pop()
    assert leaks(json.dumps(control.outputs)) == [SECRET]  # the search finds what is there
    assert not leaks(nbformat.writes(nb))
