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


def test_partition_keys_become_a_sortable_column_per_partition_column():
    """A grid's source carries one column of values per partition column (`partition:<name>`,
    its name in the field's metadata), sortable and exported like any other."""
    from deltaexplore.widgets.sources import with_partition_values

    keys = ["region=emea/day=2024-01-02", "region=amer/day=2024-01-01", "region=emea/day=2024-01-01"]
    table = pa.table({"path": ["a", "b", "c"], "partition": keys, "size": [3, 2, 1]})
    source = RowSource(with_partition_values(table, ["region", "day"]), search_columns=("path",))
    fields = {f["name"]: f for f in source.describe()["fields"]}
    assert fields["partition:region"]["partition_column"] == "region" and "partition_column" not in fields["path"]
    _, rows = source.window(0, 3, sort=[["partition:day", "asc"], ["partition:region", "desc"]])
    assert rows.column("path").to_pylist() == ["c", "b", "a"]
    assert rows.column("partition:region").to_pylist() == ["emea", "amer", "emea"]
    data, _, _ = source.export("csv", sort=[["partition:day", "desc"]])
    assert b'"partition:region","partition:day"' in data.splitlines()[0]
    # read from the keys when not given; an unpartitioned table is left as it is
    assert with_partition_values(table).column_names == source.table.column_names
    plain = pa.table({"path": ["a"], "partition": [""]})
    assert with_partition_values(plain, []) is plain and with_partition_values(plain) is plain
