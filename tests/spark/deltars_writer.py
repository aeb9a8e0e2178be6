"""Write a Delta table with delta-rs in a child process (see tests/write/other_engines.py: delta-rs
and polars in one process can abort at interpreter exit, so tests never import `deltalake`).

    python deltars_writer.py <root> <arrow ipc file> <json keyword arguments of write_deltalake>
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import tempfile
from typing import Any

HERE = os.path.abspath(__file__)


def available() -> bool:
    return importlib.util.find_spec("deltalake") is not None


def write_deltalake(root: str, table: Any, timeout: int = 300, **kwargs: Any) -> str:
    """`deltalake.write_deltalake(root, table, **kwargs)` run in a child process; `root`."""
    import pyarrow as pa
    from helpers import run_script

    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "rows.arrow")
        with pa.OSFile(data, "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
        run_script(HERE, str(root), data, json.dumps(kwargs), timeout=timeout, what=f"delta-rs write of {root}")
    return str(root)


def main() -> None:
    import deltalake
    import pyarrow as pa

    root, data, kwargs = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    with pa.memory_map(data) as source:
        table = pa.ipc.open_file(source).read_all()
    deltalake.write_deltalake(root, table, **kwargs)
    sys.stdout.flush()
    os._exit(0)  # skip interpreter teardown


if __name__ == "__main__":
    main()
