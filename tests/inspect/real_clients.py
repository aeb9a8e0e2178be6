"""Which tables delta-rs and DuckDB's delta extension can read, checked in a child process.

delta-rs and polars in one process abort at interpreter exit now and then, so the test process
never loads `deltalake`: it runs this script once for all tables and reads its JSON answer.

    python real_clients.py ROOT [ROOT ...]   # -> {root: {"delta-rs (DataFusion)": bool, "delta-rs (to_pyarrow)": bool, "DuckDB delta": bool}}
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def check(roots: list[str]) -> dict[str, dict[str, bool]]:
    out: dict[str, dict[str, bool]] = {root: {} for root in roots}
    try:
        import deltalake
    except ImportError:
        deltalake = None
    if deltalake is not None:
        for root in roots:
            try:
                dt = deltalake.DeltaTable(root)
                deltalake.QueryBuilder().register("t", dt).execute("select count(*) from t").read_all()
                out[root]["delta-rs (DataFusion)"] = True
            except Exception:  # noqa: BLE001 - any failure means "cannot read"
                out[root]["delta-rs (DataFusion)"] = False
            try:
                deltalake.DeltaTable(root).to_pyarrow_table()
                out[root]["delta-rs (to_pyarrow)"] = True
            except Exception:  # noqa: BLE001 - any failure means "cannot read"
                out[root]["delta-rs (to_pyarrow)"] = False
    try:
        import duckdb
        import duckdb_extension_delta

        ext = Path(duckdb_extension_delta.__file__).parent / "extensions" / f"v{duckdb.__version__}" / "delta.duckdb_extension"
        con = duckdb.connect(config={"allow_unsigned_extensions": "true"})
        con.execute(f"LOAD '{ext}'")
    except (ImportError, OSError, Exception):  # noqa: BLE001 - no DuckDB: nothing to report
        return out
    for root in roots:
        try:
            con.execute(f"select count(*) from delta_scan('file://{Path(root).resolve()}')").fetchall()
            out[root]["DuckDB delta"] = True
        except duckdb.Error:
            out[root]["DuckDB delta"] = False
    return out


if __name__ == "__main__":
    json.dump(check(sys.argv[1:]), sys.stdout)
    sys.stdout.flush()
