"""A first open in a fresh process imports only what it needs: no pandas, polars or Altair.

pyarrow imports pandas (when installed: it is, in the dev environment) on its first conversion
of a Python or NumPy value (`pa.array`, `pa.scalar`, `Array.to_numpy`, a compute function given
a Python value): 0.2-0.5 s that delta-rs never pays. The open path converts through
`deltaexplore.core.arrow` instead. Each case runs `open_table(...).snapshot().files()` in a
new interpreter whose import hook records the stack of any such import, so a failure names
the line that made it. The S3 case is in tests/test_s3.py (`test_s3_open_imports_no_pandas`).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import HEAVY_MODULES, add, metadata, open_in_fresh_process, protocol, remove, write_commit

from deltaexplore.core.arrow import empty, empty_table, from_numpy, from_pylist, scalar, to_numpy

#: one table per path through the reader: JSON commits only, a checkpoint with commits after,
#: deletion vectors (in commits, in a checkpoint), a V2 checkpoint with sidecars, partitions of
#: every type, column mapping (every openable corpus table passed this check when it was written)
TABLES = [
    "dat/basic_partitioned/delta",
    "delta-golden/checkpoint",
    "dat/deletion_vectors/delta",
    "delta-golden/dv-partitioned-with-checkpoint",
    "delta-kernel-rs/v2-checkpoints-json-with-sidecars",
    "delta-golden/data-reader-partition-values",
    "dat/iceberg_compat_v1/delta",
]


def _stacks(imported: dict[str, str]) -> str:
    return "\n".join(f"{name} imported at:\n{stack}" for name, stack in imported.items())


@pytest.mark.parametrize("rel", TABLES)
def test_first_open_imports_no_pandas(corpus: Path, rel: str) -> None:
    if not (corpus / rel).exists():
        pytest.skip(f"{rel} not in corpus")
    rows, imported = open_in_fresh_process(str(corpus / rel))
    assert rows > 0
    assert imported == {}, _stacks(imported)


def test_first_open_of_many_commits_imports_no_pandas(tmp_path: Path) -> None:
    """Commits of more than `SMALL_LINES` lines (the vectorized parse: maps, stats, removes),
    as the generated benchmark tables have them."""
    paths = [f"value={i % 3}/f{i}.parquet" for i in range(200)]
    adds = [add(p, size=100 + i, records=i, pv={"value": str(i % 3)}, tags={"k": "v"}) for i, p in enumerate(paths)]
    write_commit(tmp_path, 0, [protocol(), metadata(partition_columns=["value"]), *adds[:100]])
    write_commit(tmp_path, 1, [*adds[100:], *(remove(p) for p in paths[:10])])
    rows, imported = open_in_fresh_process(str(tmp_path))
    assert rows == 190
    assert imported == {}, _stacks(imported)


IN_IPYTHON = """
import json, sys
from IPython.testing.globalipapp import get_ipython
shell = get_ipython()
formatters = shell.display_formatter.formatters
formatters["text/html"].enabled = True  # the terminal testing shell disables HTML
import deltaexplore as dx
snap = dx.open_table(sys.argv[1]).snapshot()
files = snap.files()
after_open = sorted(m for m in json.loads(sys.argv[2]) if m in sys.modules)
history = snap.inspect.overview()  # an inspection table, tagged for the formatted display
data, _ = shell.display_formatter.format(history, include=("text/html", "text/plain"))
from deltaexplore.widgets import tables
print(json.dumps({"after_open": after_open, "html": data.get("text/html"), "want": tables.table_html(history),
                  "plain": data["text/plain"], "want_plain": tables.table_text(history)}))
"""


def test_first_open_in_an_ipython_session_imports_no_pandas_and_tables_still_display(corpus: Path) -> None:
    """In IPython, `import deltaexplore` registers the Arrow tables' notebook display without
    importing it (it loads inspection and polars): the first table shown imports it, and shows
    what the formatter gives."""
    pytest.importorskip("IPython")
    rel = corpus / "dat/basic_partitioned/delta"
    if not rel.exists():
        pytest.skip("dat/basic_partitioned not in corpus")
    out = subprocess.run(
        [sys.executable, "-c", IN_IPYTHON, str(rel), json.dumps(HEAVY_MODULES)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["after_open"] == []
    assert result["html"] is not None and result["html"] == result["want"]
    assert result["plain"] == result["want_plain"]


# The conversions themselves: equal to pyarrow's own (which may import pandas here: in-process).


@pytest.mark.parametrize(
    ("values", "typ"),
    [
        ([1, None, -3], "int64"),
        ([1, 2, None], "int32"),
        ([1.5, None, float("inf")], "float64"),
        ([True, None, False, True, True, False, False, True, True], "bool_"),
        (["a", None, "ü€", ""], "string"),
        (["a", None, "b"], "large_string"),
        ([b"\x00\xff", None], "binary"),
        ([], "string"),
        ([None, None], "int64"),
    ],
)
def test_from_pylist_equals_pa_array(values: list, typ: str) -> None:
    import pyarrow as pa

    t = getattr(pa, typ)()
    assert from_pylist(values, t).equals(pa.array(values, t))
    for v in values:
        assert scalar(v, t).equals(pa.scalar(v, t))


def test_from_pylist_nested_equals_pa_array() -> None:
    import pyarrow as pa

    dv = pa.struct([("storageType", pa.string()), ("offset", pa.int32()), ("cardinality", pa.int64())])
    typ = pa.struct(
        [("path", pa.string()), ("dv", dv), ("tags", pa.map_(pa.string(), pa.string())), ("xs", pa.list_(pa.int64()))]
    )
    values = [
        {"path": "a", "dv": {"storageType": "u", "offset": 1, "cardinality": 3}, "tags": [("k", "v"), ("z", None)], "xs": [1, 2]},
        None,
        {"path": None, "dv": None, "tags": None, "xs": None},
        {"path": "b", "dv": {"storageType": None, "offset": None, "cardinality": None}, "tags": [], "xs": []},
    ]
    assert from_pylist(values, typ).equals(pa.array(values, typ))
    assert from_pylist([[("k", "v")], None, []], pa.map_(pa.string(), pa.string())).equals(
        pa.array([[("k", "v")], None, []], pa.map_(pa.string(), pa.string()))
    )
    assert scalar(None, dv).equals(pa.scalar(None, dv))


def test_from_pylist_refuses_what_pa_array_refuses() -> None:
    import pyarrow as pa

    with pytest.raises(OverflowError):
        from_pylist([2**63], pa.int64())
    with pytest.raises(OverflowError):
        from_pylist([2**31], pa.int32())


def test_numpy_round_trips_equal_pyarrow() -> None:
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(7)
    for values in (
        rng.integers(-(2**40), 2**40, 1000),
        rng.integers(0, 2**31, 1000).astype(np.int32),
        rng.random(1000),
        rng.random(1000) > 0.5,
        np.arange(5).astype("datetime64[us]"),
    ):
        mask = rng.random(len(values)) > 0.7
        assert from_numpy(values).equals(pa.array(values))
        assert from_numpy(values, mask=mask).equals(pa.array(values, mask=mask))
        arr = pa.array(values)
        for sliced in (arr, arr.slice(3, 17), pa.chunked_array([arr.slice(0, 5), arr.slice(9)])):
            assert np.array_equal(to_numpy(sliced), np.asarray(sliced))
    assert from_numpy(np.arange(4), pa.int32()).equals(pa.array(np.arange(4), pa.int32()))
    with_nulls = pa.array([1, None, 3])
    assert to_numpy(with_nulls, null=0).tolist() == [1, 0, 3]
    assert to_numpy(pa.array([True, None, False]), null=False).tolist() == [True, False, False]
    with pytest.raises(ValueError, match="nulls"):
        to_numpy(with_nulls)
    assert to_numpy(pa.chunked_array([], pa.int64())).tolist() == []
    assert empty(pa.map_(pa.string(), pa.string())).equals(pa.array([], pa.map_(pa.string(), pa.string())))
    schema = pa.schema([("a", pa.int64()), ("m", pa.map_(pa.string(), pa.string()))])
    assert empty_table(schema).equals(schema.empty_table())
