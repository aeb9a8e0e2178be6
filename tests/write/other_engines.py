"""Other engines (delta-rs, DuckDB's delta extension) run in a child process.

delta-rs and polars in one process abort at interpreter exit now and then ("terminate called
without an active exception"), so the tests never load `deltalake` themselves: they run this file
as a script and read its JSON answer.

    python other_engines.py read-deltars <root> [<version> ...]   # rows + files per version
    python other_engines.py read-duckdb <root>                      # rows of the latest version
    python other_engines.py build-deltars <root> <phase>            # a history written by delta-rs
    python other_engines.py merge-deltars <cases.json>              # MERGEs by delta-rs: rows, CDF, metrics
    python other_engines.py read-clients <roots.json>               # every client's rows or error kind
    python other_engines.py write-clients <cases.json>              # delta-rs / DuckDB writes to each table
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import os
import sys
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))


def normalize(value: Any) -> Any:
    """A JSON-comparable form of an Arrow value (temporal types as ISO text, decimals as text)."""
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC).replace(tzinfo=None)
        return value.isoformat()
    if isinstance(value, (dt.date, decimal.Decimal)):
        return str(value)
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, dict):
        return {k: normalize(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [normalize(v) for v in value]
    return value


def table_rows(table: Any) -> list[str]:
    """Sorted JSON lines of an Arrow table's rows (columns sorted by name)."""
    import pyarrow as pa

    t = pa.table(table)
    t = t.select(sorted(t.column_names))
    return sorted(json.dumps(normalize(r), sort_keys=True) for r in t.to_pylist())


def variants_as_json(t: Any) -> Any:
    """`t` with its variant columns as JSON text: one value has many binary encodings (DuckDB
    sets the metadata's sorted-strings flag, for one)."""
    import pyarrow as pa

    from deltaexplore.core.protocol.schema import VARIANT_ARROW
    from deltaexplore.core.protocol.variant import to_json

    for i, field in enumerate(t.schema):
        if field.type == VARIANT_ARROW:
            values = [None if v is None else to_json(v["metadata"], v["value"]) for v in t.column(i).to_pylist()]
            t = t.set_column(i, field.name, pa.array(values, pa.string()))
    return t


def run(command: str, root: str, *args: Any, timeout: int = 300) -> Any:
    """Run a command of this script in a child process and return its JSON answer."""
    from helpers import run_script

    script = os.path.join(HERE, "other_engines.py")
    return json.loads(run_script(script, command, root, *map(str, args), timeout=timeout, what=f"{command} {root}"))


def duckdb_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("duckdb") is not None and importlib.util.find_spec("duckdb_extension_delta") is not None


# -- commands (run in the child) -------------------------------------------------------------


def _deltars_rows(root: str, version: int | None) -> dict[str, Any]:
    import deltalake
    import pyarrow as pa

    dt_ = deltalake.DeltaTable(root, version=version)
    files = sorted(pa.table(dt_.get_add_actions(flatten=True)).column("path").to_pylist())
    try:
        data = dt_.to_pyarrow_table()
    except Exception:  # noqa: BLE001 - pyarrow path refuses DVs: use DataFusion
        try:
            data = pa.table(deltalake.QueryBuilder().register("t", dt_).execute("select * from t").read_all())
        except Exception as exc:  # noqa: BLE001
            return {"files": files, "error": f"{type(exc).__name__}: {exc}"}
    return {"files": files, "rows": table_rows(data), "version": dt_.version()}


def _read_deltars(root: str, versions: list[str]) -> dict[str, Any]:
    import deltalake

    if not versions:
        versions = [str(deltalake.DeltaTable(root).version())]
    out = {}
    for v in versions:
        try:
            out[v] = _deltars_rows(root, int(v))
        except Exception as exc:  # noqa: BLE001
            out[v] = {"error": f"{type(exc).__name__}: {exc}"}
    return out


def _read_duckdb(root: str) -> dict[str, Any]:
    import glob

    import duckdb
    import duckdb_extension_delta

    ext = glob.glob(os.path.join(os.path.dirname(duckdb_extension_delta.__file__), "extensions", "*", "delta.duckdb_extension"))
    con = duckdb.connect(config={"allow_unsigned_extensions": "true"})
    con.execute(f"LOAD '{ext[0]}'")
    data = con.execute(f"select * from delta_scan('{root}')").fetch_arrow_table()
    return {"rows": table_rows(data)}


def error_kind(exc: BaseException, root: str) -> str:
    """`<exception class>: <first line of its message>`, the table's path as `<table>`."""
    text = str(exc).replace(f"file://{root}", "<table>").replace(root, "<table>").strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]


def _duckdb_scan(con: Any, root: str) -> Any:
    """The table through `delta_scan`, VARIANT columns as JSON text (DuckDB's Python client has
    no Arrow form of VARIANT)."""
    columns = con.execute(f"DESCRIBE select * from delta_scan('{root}')").fetchall()
    select = ", ".join(f'"{c[0]}"::JSON::VARCHAR AS "{c[0]}"' if c[1] == "VARIANT" else f'"{c[0]}"' for c in columns)
    return con.execute(f"select {select} from delta_scan('{root}')").fetch_arrow_table()


def _read_clients(roots_path: str) -> dict[str, dict[str, Any]]:
    """Each table read whole by delta-rs (DataFusion, then `to_pyarrow_table`) and DuckDB's
    delta extension (variants as JSON text): per table and client, its rows or the kind of error
    it raised."""
    import glob

    import deltalake
    import duckdb
    import duckdb_extension_delta
    import pyarrow as pa

    with open(roots_path) as f:
        roots = json.load(f)
    ext = glob.glob(os.path.join(os.path.dirname(duckdb_extension_delta.__file__), "extensions", "*", "delta.duckdb_extension"))
    con = duckdb.connect(config={"allow_unsigned_extensions": "true"})
    con.execute(f"LOAD '{ext[0]}'")
    readers = {
        "delta-rs (DataFusion)": lambda r: (
            deltalake.QueryBuilder().register("t", deltalake.DeltaTable(r)).execute("select * from t").read_all()
        ),
        "delta-rs (to_pyarrow)": lambda r: deltalake.DeltaTable(r).to_pyarrow_table(),
        "DuckDB delta": lambda r: _duckdb_scan(con, r),
    }
    out: dict[str, dict[str, Any]] = {}
    for root in roots:
        out[root] = {}
        for client, read in readers.items():
            try:
                out[root][client] = {"rows": table_rows(pa.table(read(root)))}
            except Exception as exc:  # noqa: BLE001 - the answer says what failed
                out[root][client] = {"error": error_kind(exc, root)}
    return out


def _duckdb_connection() -> Any:
    import glob

    import duckdb
    import duckdb_extension_delta

    ext = glob.glob(os.path.join(os.path.dirname(duckdb_extension_delta.__file__), "extensions", "*", "delta.duckdb_extension"))
    con = duckdb.connect(config={"allow_unsigned_extensions": "true"})
    con.execute(f"LOAD '{ext[0]}'")
    return con


def _deltars_steps(case: dict[str, Any]) -> list[tuple[str, Any]]:
    import deltalake
    import pyarrow.parquet as pq

    root = case["root"]

    def merge() -> None:
        source = pq.read_table(case["merge"])
        merger = deltalake.DeltaTable(root).merge(source, "target.id = source.id", source_alias="source", target_alias="target")
        merger.when_matched_update_all().when_not_matched_insert_all().execute()

    def create() -> None:
        deltalake.write_deltalake(root, pq.read_table(case["create"]), configuration=case.get("configuration"))
        table = deltalake.DeltaTable(root)
        if case.get("constraint"):
            table.alter.add_constraint({"positive": "id >= 0"})
        if case.get("add_feature"):
            table.alter.add_feature(getattr(deltalake.TableFeatures, case["add_feature"]), allow_protocol_versions_increase=True)

    return [
        *([("create", create)] if "create" in case else []),
        ("append", lambda: deltalake.write_deltalake(root, pq.read_table(case["append"]), mode="append")),
        ("delete", lambda: deltalake.DeltaTable(root).delete(f"id = {case['delete']}")),
        ("update", lambda: deltalake.DeltaTable(root).update(updates={"id": "id + 100000"}, predicate=f"id = {case['update']}")),
        ("merge", merge),
        ("optimize", lambda: deltalake.DeltaTable(root).optimize.compact()),  # noqa: PLW0108 - load at the step
        ("checkpoint", lambda: deltalake.DeltaTable(root).create_checkpoint()),
    ]


def _duckdb_steps(case: dict[str, Any]) -> list[tuple[str, Any]]:
    con = _duckdb_connection()  # a fatal error invalidates a connection: one per case
    return [
        ("attach", lambda: con.execute(f"ATTACH '{case['root']}' AS t (TYPE delta)")),
        ("append", lambda: con.execute(f"INSERT INTO t BY NAME SELECT * FROM read_parquet('{case['append']}')")),
        ("delete", lambda: con.execute(f"DELETE FROM t WHERE id = {case['delete']}")),
        ("update", lambda: con.execute(f"UPDATE t SET id = id + 100000 WHERE id = {case['update']}")),
    ]


def _write_clients(cases_path: str) -> list[dict[str, Any]]:
    """Each case writes to its own copy of a table with one client, an operation at a time until
    one fails: a case names `client` ("delta-rs" or "DuckDB"), `root`, the parquet files `append`
    (rows to append) and `merge` (a MERGE source: matched rows are updated with all columns, the
    others inserted), and the ids to `delete` and to `update` (`id = id + 100000`). delta-rs then
    runs OPTIMIZE and a checkpoint, and where the case names a `create` parquet file, first
    creates the table from it with its `configuration`, a `constraint` and `add_feature`; DuckDB's delta extension has INSERT, and its DELETE / UPDATE
    are tried. Answers the operations done and the failing one's error kind."""
    with open(cases_path) as f:
        cases = json.load(f)
    out = []
    for case in cases:
        done: list[str] = []
        answer: dict[str, Any] = {"done": done}
        for name, step in _deltars_steps(case) if case["client"] == "delta-rs" else _duckdb_steps(case):
            try:
                step()
            except Exception as exc:  # noqa: BLE001 - the answer says what failed
                answer.update(failed=name, error=error_kind(exc, case["root"]))
                break
            done.append(name)
        out.append(answer)
    return out


def _build_deltars(root: str, phase: str) -> dict[str, Any]:
    """A history written and maintained by delta-rs. Phase 1: appends, delete, optimize,
    overwrite of a partition, z-order, checkpoint, append; phase 2: vacuum (retention 0) and a
    full overwrite."""
    import deltalake
    import pyarrow as pa
    import pyarrow.compute

    def batch(start: int, n: int) -> pa.Table:
        ids = list(range(start, start + n))
        return pa.table(
            {
                "id": pa.array(ids, pa.int64()),
                "part": pa.array(["x" if i % 3 else "y" for i in ids]),
                "amount": pa.array([decimal.Decimal(i) / 4 for i in ids], pa.decimal128(10, 2)),
                "day": pa.array([dt.date(2024, 1, 1 + i % 28) for i in ids]),
                "ts": pa.array([dt.datetime(2024, 1, 1, i % 24, tzinfo=dt.UTC) for i in ids], pa.timestamp("us", tz="UTC")),
            }
        )

    ops = []
    if phase == "2":
        t = deltalake.DeltaTable(root)
        t.vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
        ops.append("vacuum")
        deltalake.write_deltalake(root, batch(400, 12), mode="overwrite")
        ops.append("overwrite")
        return {"ops": ops, "version": deltalake.DeltaTable(root).version()}
    deltalake.write_deltalake(root, batch(0, 30), partition_by=["part"])
    ops.append("create")
    for k in range(1, 4):
        deltalake.write_deltalake(root, batch(30 * k, 10), mode="append")
        ops.append("append")
    t = deltalake.DeltaTable(root)
    t.delete("id % 5 = 0")
    ops.append("delete")
    t = deltalake.DeltaTable(root)
    t.optimize.compact()
    ops.append("optimize")
    replacement = batch(200, 7).filter(pa.compute.equal(batch(200, 7).column("part"), "y"))
    deltalake.write_deltalake(root, replacement, mode="overwrite", predicate="part = 'y'")
    ops.append("overwrite-where")
    t = deltalake.DeltaTable(root)
    t.optimize.z_order(["id", "day"])
    ops.append("zorder")
    t = deltalake.DeltaTable(root)
    t.create_checkpoint()
    ops.append("checkpoint")
    deltalake.write_deltalake(root, batch(300, 5), mode="append")
    ops.append("append")
    return {"ops": ops, "version": deltalake.DeltaTable(root).version()}


def _merge_deltars(cases_path: str) -> list[dict[str, Any]]:
    """Run each MERGE case of the JSON file with delta-rs (`DeltaTable.merge`): a case names the
    table `root`, the `source` parquet file, `on` and `clauses` (kind, action, condition,
    assignments; None assignments: all columns). Answers rows, change data of the MERGE's version
    (with CDF on), metrics and version; or the error."""
    import deltalake
    import pyarrow as pa
    import pyarrow.parquet as pq

    with open(cases_path) as f:
        cases = json.load(f)
    out = []
    for case in cases:
        root = case["root"]
        try:
            table = deltalake.DeltaTable(root)
            before = table.version()
            merger = table.merge(pq.read_table(case["source"]), case["on"], source_alias="source", target_alias="target")
            for c in case["clauses"]:
                kind, action, cond, values = c["kind"], c["action"], c["condition"], c["assignments"]
                if kind == "matched" and action == "update":
                    merger = merger.when_matched_update_all(cond) if values is None else merger.when_matched_update(values, cond)
                elif kind == "matched":
                    merger = merger.when_matched_delete(cond)
                elif kind == "not_matched":
                    merger = (
                        merger.when_not_matched_insert_all(cond)
                        if values is None
                        else merger.when_not_matched_insert(values, cond)
                    )
                elif action == "update":
                    merger = merger.when_not_matched_by_source_update(values, cond)
                else:
                    merger = merger.when_not_matched_by_source_delete(cond)
            metrics = merger.execute()
        except Exception as exc:  # noqa: BLE001 - the answer says what failed
            out.append({"error": f"{type(exc).__name__}: {exc}"})
            continue
        after = deltalake.DeltaTable(root)
        version = after.version()
        data = pa.table(deltalake.QueryBuilder().register("t", after).execute("select * from t").read_all())
        answer: dict[str, Any] = {"rows": table_rows(data), "metrics": metrics, "version": version}
        if case.get("cdf") and version > before:
            changes = pa.table(after.load_cdf(starting_version=version, ending_version=version).read_all())
            changes = changes.drop_columns([c for c in ("_commit_version", "_commit_timestamp") if c in changes.column_names])
            answer["cdf"] = table_rows(changes)
        elif case.get("cdf"):
            answer["cdf"] = []
        out.append(answer)
    return out


def main() -> None:
    command, root, *rest = sys.argv[1:]
    if command == "read-deltars":
        answer = _read_deltars(root, rest)
    elif command == "read-duckdb":
        answer = _read_duckdb(root)
    elif command == "read-clients":
        answer = _read_clients(root)
    elif command == "write-clients":
        answer = _write_clients(root)
    elif command == "merge-deltars":
        answer = _merge_deltars(root)
    elif command == "build-deltars":
        answer = _build_deltars(root, rest[0] if rest else "1")
    else:
        raise SystemExit(f"unknown command {command}")
    sys.stdout.write(json.dumps(answer))
    sys.stdout.flush()
    os._exit(0)  # skip interpreter teardown (see the module docstring)


if __name__ == "__main__":
    main()
