"""A Delta table with script payloads in every field the explorer shows: column names and values
(so min/max statistics), partition values, file paths, table name and description, properties,
commitInfo operation, parameters, metrics, user name and id, engine and userMetadata.

Every payload, if it ever ran, sets `window.__dx_pwned`; the browser tests check it never does
and that each payload is shown as text.
"""

from __future__ import annotations

import os

import pyarrow as pa
from demo_tables import DemoWriter

RUN = "window.__dx_pwned=1"
PAYLOADS = {
    "img": f"<img src=x onerror={RUN}>",
    "script": f"<script>{RUN}</script>",
    "svg": f'"><svg onload={RUN}>',
    "a": f"<a href=javascript:{RUN}>x</a>",
}
COLUMN = "<b onmouseover=window.__dx_pwned=1>col</b>"
PART = "<i>p</i>"


def build_xss(root: str | os.PathLike) -> str:
    """Write the table at `root` (three commits) and return its path."""
    w = DemoWriter(root, PAYLOADS["script"], user=PAYLOADS["img"])
    cols = [("id", "long"), (COLUMN, "string"), (PART, "string")]
    proto = {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}
    md = w.metadata(
        cols,
        partition_columns=[PART],
        configuration={PAYLOADS["svg"]: PAYLOADS["a"], "delta.checkpointInterval": "10"},
        description=PAYLOADS["svg"],
    )
    rows = pa.table(
        {"id": pa.array([1, 2], pa.int64()), COLUMN: [PAYLOADS["img"], PAYLOADS["script"]], PART: [PAYLOADS["a"]] * 2}
    )
    first = w.add(rows, name=f"{PAYLOADS['img']}.parquet".replace("/", "_"))
    extra = {
        "userId": PAYLOADS["svg"],
        "userMetadata": PAYLOADS["script"],
        "engineInfo": PAYLOADS["a"],
        "operationMetrics": {"numFiles": "1", PAYLOADS["img"]: PAYLOADS["svg"]},
    }
    w.commit([proto, md, first], PAYLOADS["img"], {"note": PAYLOADS["script"], PAYLOADS["a"]: "x"}, **extra)
    more = pa.table({"id": pa.array([3], pa.int64()), COLUMN: [PAYLOADS["svg"]], PART: ["plain"]})
    w.commit([w.add(more)], "WRITE", {"mode": "Append"}, **extra)
    md2 = w.metadata(
        cols, partition_columns=[PART], configuration={PAYLOADS["script"]: PAYLOADS["img"]}, description=PAYLOADS["a"]
    )
    w.commit([md2], "SET TBLPROPERTIES", {"properties": PAYLOADS["svg"]}, **extra)
    return str(w.root)
