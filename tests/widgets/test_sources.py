"""RowSource: the grids' windows and exports over a table in many chunks (as replayed file
actions are) agree with the same table in one piece, sorted and filtered by pyarrow itself."""

from __future__ import annotations

import io
import itertools

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pytest

from deltaexplore.widgets.sources import RowSource


def _chunked(n: int = 5000, pieces: int = 7) -> pa.Table:
    rng = np.random.default_rng(7)
    paths = [f"part={i % 13}/file-{i:05d}.parquet" for i in range(n)]
    sizes = rng.integers(0, 1000, n)  # ties: the order must keep the table's order among equals
    cuts = np.linspace(0, n, pieces + 1).astype(int)
    return pa.table(
        {
            "path": pa.chunked_array([pa.array(paths[a:b]) for a, b in itertools.pairwise(cuts)]),
            "size": pa.chunked_array([pa.array(sizes[a:b]) for a, b in itertools.pairwise(cuts)]),
        }
    )


@pytest.mark.parametrize(
    ("sort", "text", "start", "end"),
    [
        (None, "", 0, 100),
        ([["size", "desc"]], "", 0, 100),
        ([["size", "asc"]], "", 4900, 5000),
        ([["size", "desc"]], "part=3/", 10, 60),
        ([["path", "desc"]], "file-01", 0, 50),
    ],
)
def test_windows_of_a_chunked_table_match_pyarrow(sort, text, start, end):
    table = _chunked()
    assert table.column("path").num_chunks > 1
    source = RowSource(table, search_columns=("path",))
    whole = table.combine_chunks().append_column("__i", pa.array(np.arange(table.num_rows)))
    if text:
        whole = whole.filter(pc.match_substring(whole.column("path"), text, ignore_case=True))
    if sort:
        ((name, direction),) = sort
        whole = whole.sort_by([(name, "descending" if direction == "desc" else "ascending"), ("__i", "ascending")])
    total, rows = source.window(start, end, sort=sort, filter={"text": text} if text else None)
    assert total == whole.num_rows
    assert rows.column("path").to_pylist() == whole.column("path").to_pylist()[start:end]
    exported, _, _ = source.export("csv", sort=sort, filter={"text": text} if text else None)
    assert pacsv.read_csv(io.BytesIO(exported)).column("path").to_pylist() == whole.column("path").to_pylist()
