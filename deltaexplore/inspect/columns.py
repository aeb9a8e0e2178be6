"""Table structure views: column mapping (logical <-> physical <-> field id), row tracking,
liquid clustering, domain metadata and application transactions.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.arrow import combined
from deltaexplore.core.protocol.schema import ArrayType, DataType, MapType, StructField, StructType, collations
from deltaexplore.core.scan.stats import num_records
from deltaexplore.errors import DeltaExploreError
from deltaexplore.inspect.layout import clustering_view
from deltaexplore.inspect.results import conform, sorted_rows, to_ts
from deltaexplore.inspect.schemas import (
    CLUSTERING_SCHEMA,
    COLUMN_MAPPING_SCHEMA,
    DOMAINS_SCHEMA,
    ROW_TRACKING_SCHEMA,
    TXNS_SCHEMA,
)
from deltaexplore.inspect.snapshots import snapshot_of

if TYPE_CHECKING:
    from deltaexplore.core.snapshot import Snapshot
    from deltaexplore.core.table import Table

__all__ = ["clustering", "column_mapping", "domain_metadata", "row_tracking", "transactions"]

_MAPPING_KEYS = ("delta.columnMapping.id", "delta.columnMapping.physicalName", "delta.typeChanges", "__COLLATIONS")

#: what the well-known domains are for
DOMAIN_MEANINGS = {
    "delta.clustering": "liquid clustering columns (physical names)",
    "delta.rowTracking": "row tracking: rowIdHighWaterMark, the largest row id assigned",
    "delta.columnMapping": "column mapping: the largest field id assigned",
    "delta.identity": "identity column high-water marks",
    "delta.icebergCompat": "Iceberg compatibility state",
    "com.databricks.liquid": "Databricks liquid clustering state",
}


def _walk(
    t: DataType, logical: tuple[str, ...], physical: tuple[str, ...], depth: int, out: list[dict[str, Any]], parts: set[str]
) -> None:
    if isinstance(t, StructType):
        for f in t.fields:
            _field_row(f, (*logical, f.name), (*physical, f.physical_name), depth, out, parts)
    elif isinstance(t, ArrayType):
        _anon_row(t.element_type, (*logical, "element"), (*physical, "element"), t.contains_null, depth, out, parts)
    elif isinstance(t, MapType):
        _anon_row(t.key_type, (*logical, "key"), (*physical, "key"), False, depth, out, parts)
        _anon_row(t.value_type, (*logical, "value"), (*physical, "value"), t.value_contains_null, depth, out, parts)


def _field_row(
    f: StructField, logical: tuple[str, ...], physical: tuple[str, ...], depth: int, out: list, parts: set[str]
) -> None:
    other = {k: v for k, v in f.metadata.items() if k not in _MAPPING_KEYS}
    changes = f.metadata.get("delta.typeChanges")
    out.append(
        {
            "column": ".".join(logical),
            "physical_path": ".".join(physical),
            "field_id": f.field_id,
            "type": str(f.type),
            "nullable": f.nullable,
            "depth": depth,
            "is_partition": depth == 0 and f.name.lower() in parts,
            "type_changes": json.dumps(changes) if changes is not None else None,
            "metadata": json.dumps(other, sort_keys=True, default=str) if other else None,
        }
    )
    _walk(f.type, logical, physical, depth + 1, out, parts)


def _anon_row(
    t: DataType, logical: tuple[str, ...], physical: tuple[str, ...], nullable: bool, depth: int, out: list, parts: set[str]
) -> None:
    out.append(
        {
            "column": ".".join(logical),
            "physical_path": ".".join(physical),
            "field_id": None,
            "type": str(t),
            "nullable": nullable,
            "depth": depth,
            "is_partition": False,
            "type_changes": None,
            "metadata": None,
        }
    )
    _walk(t, logical, physical, depth + 1, out, parts)


def column_mapping(obj: Table | Snapshot, *, version: int | None = None) -> pa.Table:
    """Every field, nested ones included, with its physical name and field id (`COLUMN_MAPPING_SCHEMA`).

    Columns: column (logical dotted path; array elements `element`, map parts `key`/`value`),
    physical_path (what data files and statistics use: the physical names under column
    mapping, else the logical ones), field_id, type, nullable, depth, is_partition,
    type_changes (`delta.typeChanges` of widened columns, JSON), collation (of a collated
    string, from `__COLLATIONS`) and metadata (other field metadata as JSON: comments,
    generation expressions, identity, defaults, invariants).
    """
    snap = snapshot_of(obj, version)
    rows: list[dict[str, Any]] = []
    mode = snap.column_mapping_mode
    schema = snap.schema
    parts = {p.lower() for p in snap.partition_columns}
    _walk(schema, (), (), 0, rows, parts)
    if mode == "none":
        for r in rows:
            r["physical_path"] = r["column"]
    declared = collations(schema)
    for r in rows:
        r["collation"] = declared.get(r["column"])
    cols = {f.name: [r[f.name] for r in rows] for f in COLUMN_MAPPING_SCHEMA}
    return conform(cols, COLUMN_MAPPING_SCHEMA)


def row_tracking(obj: Table | Snapshot, *, version: int | None = None) -> pa.Table:
    """Row id ranges of the active files (`ROW_TRACKING_SCHEMA`), ordered by base_row_id.

    Columns: path, num_records, base_row_id, last_row_id (base + rows - 1),
    default_row_commit_version, overlaps (the range intersects another file's: a protocol
    violation) and above_high_water_mark (beyond the `delta.rowTracking` high-water mark).
    Empty columns (nulls) when the table does not track rows.
    """
    snap = snapshot_of(obj, version)
    adds = snap.add_actions()
    n = adds.num_rows
    base = combined(adds.column("baseRowId")).cast(pa.int64())
    records = num_records(adds)
    last = pc.subtract(pc.add(base, records), 1)
    overlaps = np.zeros(n, dtype=bool)
    valid = pc.and_(pc.is_valid(base), pc.is_valid(last)).to_numpy(zero_copy_only=False).astype(bool) if n else np.zeros(0, bool)
    idx = np.flatnonzero(valid)
    if len(idx) > 1:
        b = base.to_numpy(zero_copy_only=False)[idx].astype(np.int64)
        e = last.to_numpy(zero_copy_only=False)[idx].astype(np.int64)
        order = np.argsort(b, kind="stable")
        b, e = b[order], e[order]
        running_end = np.maximum.accumulate(e)
        clash = np.zeros(len(b), dtype=bool)
        clash[1:] = b[1:] <= running_end[:-1]
        # the earlier file of a clash overlaps too
        nxt = np.zeros(len(b), dtype=bool)
        nxt[:-1] = b[1:] <= e[:-1]
        hit = np.zeros(len(b), dtype=bool)
        hit[order] = clash | nxt
        overlaps[idx] = hit
    mark = snap.row_id_high_water_mark
    above = pc.greater(last, mark) if mark is not None and n else pa.nulls(n, pa.bool_())
    cols = {
        "path": combined(adds.column("path")).cast(pa.string()),
        "num_records": records,
        "base_row_id": base,
        "last_row_id": last,
        "default_row_commit_version": adds.column("defaultRowCommitVersion"),
        "overlaps": pa.array(overlaps),
        "above_high_water_mark": above,
    }
    out = conform(cols, ROW_TRACKING_SCHEMA)
    return sorted_rows(out, [("base_row_id", "ascending"), ("path", "ascending")]) if n else out


def domain_metadata(obj: Table | Snapshot, *, version: int | None = None) -> pa.Table:
    """Domains of the snapshot (`DOMAINS_SCHEMA`): domain, configuration (JSON text),
    system (`delta.*` domains are reserved for the protocol) and meaning (when known)."""
    snap = snapshot_of(obj, version)
    domains = snap.domain_metadata()
    names = sorted(domains)
    cols = {
        "domain": names,
        "configuration": [domains[d].configuration for d in names],
        "system": [d.startswith("delta.") for d in names],
        "meaning": [DOMAIN_MEANINGS.get(d) for d in names],
    }
    return conform(cols, DOMAINS_SCHEMA)


def clustering(obj: Table | Snapshot, *, version: int | None = None) -> pa.Table:
    """Liquid clustering columns with their layout quality (`CLUSTERING_SCHEMA`).

    From the `delta.clustering` domain (physical names, mapped back to logical columns) joined
    with `layout_summary`: position, column, physical_path, type, coverage, avg_depth,
    max_depth and clustering_quality. Empty when the table is not clustered.
    """
    snap = snapshot_of(obj, version)
    try:
        rows = clustering_view(snap)
    except DeltaExploreError:
        rows = []
    cols = {f.name: [r.get(f.name) for r in rows] for f in CLUSTERING_SCHEMA}
    return conform(cols, CLUSTERING_SCHEMA)


def transactions(obj: Table | Snapshot, *, version: int | None = None) -> pa.Table:
    """Application transaction ids (`txn` actions) of the snapshot (`TXNS_SCHEMA`): app_id,
    version, last_updated and expired (older than `delta.setTransactionRetentionDuration`)."""
    snap = snapshot_of(obj, version)
    txns = snap._all_txns
    live = snap.txns()
    ids = sorted(txns)
    cols = {
        "app_id": ids,
        "version": [txns[a].version for a in ids],
        "last_updated": to_ts(pa.array([txns[a].last_updated for a in ids], pa.int64())),
        "expired": [a not in live for a in ids],
    }
    return conform(cols, TXNS_SCHEMA)
