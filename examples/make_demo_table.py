"""Rebuild `examples/demo_table`, the small table the README's first command inspects.

Written with delta-rs (`pip install deltalake`) so the demo is a table from another
implementation: a partitioned table with appends, a delete, an update, an OPTIMIZE and a
checkpoint. Contents are deterministic; file names and commit times are not.

    python examples/make_demo_table.py
"""

from __future__ import annotations

import os
import shutil

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "demo_table")


def batch(start: int, n: int) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "region": pa.array([["emea", "amer", "apac"][i % 3] for i in ids]),
            "amount": pa.array([round(i * 1.25, 2) for i in ids], pa.float64()),
            "customer": pa.array([f"customer-{i % 17:02d}" for i in ids]),
        }
    )


def main() -> None:
    shutil.rmtree(OUT, ignore_errors=True)
    write_deltalake(
        OUT,
        batch(0, 30),
        partition_by=["region"],
        name="demo",
        description="deltaexplore demo table",
        configuration={"delta.enableChangeDataFeed": "true"},
    )
    write_deltalake(OUT, batch(30, 30), mode="append")
    write_deltalake(OUT, batch(60, 15), mode="append")
    dt = DeltaTable(OUT)
    dt.delete("amount > 90")
    dt.update(predicate="customer = 'customer-03'", updates={"amount": "amount * 2"})
    dt.optimize.compact()
    dt.create_checkpoint()
    write_deltalake(OUT, batch(100, 6), mode="append")
    print(f"wrote {OUT} at version {DeltaTable(OUT).version()}")


if __name__ == "__main__":
    main()
