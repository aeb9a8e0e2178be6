"""Tables for the browser tests of the Diff tab's Rows view and of RESTORE from History.

`build_keyed(root)`: 200 rows in 10 files (copy-on-write), v1 UPDATE of 15 names, v2 DELETE of
5 rows, v3 an append of 10 (unique ids). `build_wide(root, rows)`: `rows` rows in files of
100,000, then an UPDATE of every row (v1): its row diff reads every file of both versions.
"""

from __future__ import annotations

import os
import shutil

import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.operations import delete, update, write_table

__all__ = ["build_keyed", "build_small_files", "build_vacuumed", "build_wide"]


def _rows(ids: pa.Array) -> pa.Table:
    return pa.table(
        {
            "id": ids,
            "amount": pc.multiply(ids, 1.5),
            "name": pc.binary_join_element_wise("n", pc.cast(ids, pa.string()), ""),
            "city": pc.choose(pc.cast(pc.bit_wise_and(ids, 3), pa.int8()), "Oslo", "Lima", "Pune", "Kyiv"),
        }
    )


def build_keyed(root: str | os.PathLike) -> str:
    path = str(root)
    shutil.rmtree(path, ignore_errors=True)
    write_table(
        path,
        _rows(pa.array(range(200), pa.int64())),
        max_rows_per_file=20,
        configuration={"delta.enableDeletionVectors": "false"},
    )
    update(path, {"name": "'changed'"}, "id < 15")
    delete(path, "id between 100 and 104")
    write_table(path, _rows(pa.array(range(300, 310), pa.int64())))
    return path


def build_wide(root: str | os.PathLike, rows: int) -> str:
    path = str(root)
    shutil.rmtree(path, ignore_errors=True)
    write_table(
        path,
        _rows(pa.array(range(rows), pa.int64())),
        max_rows_per_file=100_000,
        configuration={"delta.enableDeletionVectors": "false"},
    )
    update(path, {"amount": "amount + 1"}, "id >= 0")
    return path


def build_vacuumed(root: str | os.PathLike) -> str:
    """`build_keyed`, then a VACUUM with no retention: the files versions 0-2 needed are gone."""
    from deltaexplore.core.operations import vacuum

    path = build_keyed(root)
    vacuum(path, retention_hours=0, dry_run=False, enforce_retention_duration=False)
    return path


def build_small_files(root: str | os.PathLike) -> str:
    """Six appends of 500 rows each: small files the advisor asks to compact."""
    path = str(root)
    shutil.rmtree(path, ignore_errors=True)
    for i in range(6):
        ids = pa.array([(i * 7919 + k * 104729) % 10007 for k in range(500)], pa.int64())
        write_table(path, _rows(ids))
    return path
