"""Small helpers shared by the writer tests."""

from __future__ import annotations

import pyarrow as pa


def sample(n: int = 10, start: int = 0) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "part": pa.array(["a" if i % 2 == 0 else "b" for i in ids]),
            "value": pa.array([f"v{i}" for i in ids]),
        }
    )


def rows(table, *columns: str) -> list:
    """Sorted tuples of the given columns (all by default) of an Arrow table."""
    cols = list(columns) or table.column_names
    return sorted(tuple(r[c] for c in cols) for r in table.select(cols).to_pylist())
