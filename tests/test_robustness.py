"""Damaged tables: whatever is broken, the only exceptions are DeltaExploreErrors.

Each case copies a real corpus table, damages one file of its log or data in a seeded random
way (truncate, flip bytes, delete, replace with garbage), then reads everything a user would:
snapshot, files, history, file stats, rows, changes.
"""

from __future__ import annotations

import random
import shutil
import warnings
from pathlib import Path

import pytest

import deltaexplore as dx

TABLES = [
    "delta-golden/checkpoint",
    "dat/deletion_vectors/delta",
    "delta-kernel-rs/v2-checkpoints-json-with-sidecars",
    "delta-kernel-rs/cdf-table-with-dv",
    "dat/iceberg_compat_v1/delta",
    "delta-kernel-rs/compacted-log-files-table",
    "delta-kernel-rs/v1-multi-part-struct-stats-only",
]
DAMAGES = ["truncate", "flip", "delete", "garbage", "empty"]


def _damage(path: Path, how: str, rng: random.Random) -> None:
    data = path.read_bytes()
    if how == "truncate":
        path.write_bytes(data[: rng.randrange(0, max(1, len(data)))])
    elif how == "flip":
        buf = bytearray(data)
        for _ in range(max(1, len(buf) // 50)):
            if buf:
                i = rng.randrange(len(buf))
                buf[i] = rng.randrange(256)
        path.write_bytes(bytes(buf))
    elif how == "delete":
        path.unlink()
    elif how == "garbage":
        path.write_bytes(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300))))
    else:
        path.write_bytes(b"")


def _exercise(root: Path) -> None:
    table = dx.open_table(str(root))
    for step in (
        table.history,
        lambda: table.snapshot().files(),
        lambda: table.snapshot().file_stats(),
        lambda: table.snapshot().to_arrow(),
        lambda: table.snapshot(version=0).to_arrow(),
        lambda: table.changes(0),
        lambda: table.snapshot().validate_crc(),
        lambda: table.snapshot().tombstones(),
    ):
        try:
            step()
        except dx.DeltaExploreError:
            pass


@pytest.mark.parametrize("table", TABLES)
@pytest.mark.parametrize("how", DAMAGES)
def test_damage_only_raises_typed_errors(corpus, tmp_path, table, how):
    src = corpus / table
    if not src.exists():
        pytest.skip(f"{table} not in corpus")
    rng = random.Random(f"{table}-{how}")
    files = sorted(p for p in src.rglob("*") if p.is_file())
    for trial in range(3):
        dst = tmp_path / f"t{trial}"
        shutil.copytree(src, dst)
        victim = dst / rng.choice(files).relative_to(src)
        _damage(victim, how, rng)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                _exercise(dst)
            except Exception as exc:  # noqa: BLE001 - the point of the test
                pytest.fail(f"{how} {victim.relative_to(dst)}: raw {type(exc).__name__}: {exc}")
