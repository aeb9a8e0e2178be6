"""Scan planning: which files a read needs, why the others are skipped, and the local reader.

A `ScanPlan` is the contract between the protocol core and any engine: the selected add
actions with resolved locations, typed partition values and deletion vectors, the logical and
physical columns to read, and the row filter. `ScanPlan.to_arrow()` executes it with pyarrow;
the Spark layer executes the same plan on a cluster.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.deletion_vectors import DeletionVectorDescriptor, read_deletion_vector
from deltaexplore.core.partitions import map_column_values, parse_partition_column
from deltaexplore.core.predicates import Expr, FileEnv, parse_predicate
from deltaexplore.core.read import constant_column, read_data_file
from deltaexplore.core.schema import StructField, StructType, to_arrow_type
from deltaexplore.errors import ColumnNotFoundError, InvalidLogError
from deltaexplore.storage import check_relative

if TYPE_CHECKING:
    from deltaexplore.core.snapshot import Snapshot

__all__ = ["ScanPlan", "plan_scan", "resolve_data_path"]


def resolve_data_path(storage: Any, raw_path: str) -> str:
    """The storage path of a data/DV file from its log path (URL-decoded; relative paths must
    stay inside the table).

    Raises:
        StorageError: a relative path escapes the table root.
    """
    decoded = unquote(raw_path)
    if "://" in decoded or decoded.startswith("/") or decoded.startswith("file:"):
        return decoded
    return check_relative(decoded, storage.root)


def partition_table(snapshot: Snapshot, adds: pa.Table) -> pa.Table:
    """Typed partition values of each add (logical column names)."""
    schema = snapshot.schema
    maps = adds.column("partitionValues").combine_chunks()
    cols = {}
    for name in snapshot.partition_columns:
        f = schema.get(name)
        if f is None:
            raise InvalidLogError(f"partition column {name!r} is not in the schema of {snapshot.table.uri}")
        key = f.physical_name if snapshot.column_mapping_mode != "none" else f.name
        raw = map_column_values(maps, key)
        if raw.null_count == len(raw) and key != name and len(raw):
            raw = map_column_values(maps, name)
        cols[f.name] = parse_partition_column(raw, f.type, column=f.name)
    return pa.table(cols) if cols else pa.table({"__n": pa.nulls(adds.num_rows)}).drop_columns(["__n"])


def resolve_columns(schema: StructType, columns: list[str] | None) -> list[StructField]:
    if columns is None:
        return list(schema.fields)
    out = []
    for name in columns:
        f = schema.get(name)
        if f is None:
            raise ColumnNotFoundError(f"column {name!r} is not in the table (columns: {', '.join(schema.names)})")
        out.append(f)
    return out


@dataclass
class ScanPlan:
    """Files and columns a read needs (see the module docstring)."""

    snapshot: Snapshot
    fields: list[StructField]
    predicate: Expr | None
    files: pa.Table  # selected add actions (log field names)
    partition_values: pa.Table  # typed partition columns of the selected files
    total_files: int
    partition_pruned: int = 0
    stats_pruned: int = 0
    extra_fields: list[StructField] = field(default_factory=list)  # needed by the filter only

    @property
    def columns(self) -> list[str]:
        return [f.name for f in self.fields]

    @property
    def arrow_schema(self) -> pa.Schema:
        return pa.schema([pa.field(f.name, to_arrow_type(f.type), nullable=f.nullable) for f in self.fields])

    def locations(self) -> list[str]:
        """Storage paths of the selected files."""
        storage = self.snapshot.storage
        return [resolve_data_path(storage, p) for p in self.files.column("path").to_pylist()]

    def deletion_vectors(self) -> list[DeletionVectorDescriptor | None]:
        return [DeletionVectorDescriptor.from_dict(d) if d else None for d in self.files.column("deletionVector").to_pylist()]

    def to_arrow(self, *, row_tracking: bool = False, max_workers: int = 8) -> pa.Table:
        """Execute the plan with pyarrow: rows with DVs applied and logical names."""
        snapshot = self.snapshot
        storage = snapshot.storage
        mode = snapshot.column_mapping_mode
        parts = set(snapshot.partition_columns)
        needed = [f for f in [*self.fields, *self.extra_fields] if f.name not in parts]
        paths = self.files.column("path").to_pylist()
        dvs = self.deletion_vectors()
        config = snapshot.config if row_tracking else None
        extra_phys: list[str] = []
        if config is not None:
            if not config.row_tracking_enabled and not snapshot.protocol.has("rowTracking"):
                from deltaexplore.errors import DeltaProtocolError

                raise DeltaProtocolError(f"{snapshot.table.uri} does not track row ids (no rowTracking feature)")
            extra_phys = [c for c in (config.materialized_row_id_column, config.materialized_row_commit_version_column) if c]
        base_ids = self.files.column("baseRowId").to_pylist() if row_tracking else []
        commit_versions = self.files.column("defaultRowCommitVersion").to_pylist() if row_tracking else []

        def read_one(i: int) -> pa.Table:
            raw = paths[i]
            location = storage.location(resolve_data_path(storage, raw))
            dv = dvs[i]
            deleted = read_deletion_vector(storage, dv, data_file=raw) if dv is not None else None
            cols, n, extras = read_data_file(
                storage,
                location,
                path=raw,
                read_fields=needed,
                mode=mode,
                deleted_rows=deleted,
                extra_physical=extra_phys,
                with_row_index=row_tracking,
            )
            arrays: dict[str, pa.Array] = {}
            for f in [*self.fields, *self.extra_fields]:
                if f.name in arrays:
                    continue
                if f.name in parts:
                    value = self.partition_values.column(f.name).slice(i, 1).combine_chunks()
                    arrays[f.name] = constant_column(value, to_arrow_type(f.type), n)
                else:
                    arrays[f.name] = cols[f.name]
            if row_tracking and config is not None:
                arrays["_row_id"] = _row_ids(extras, config.materialized_row_id_column, base_ids[i], n)
                arrays["_row_commit_version"] = _commit_versions(
                    extras, config.materialized_row_commit_version_column, commit_versions[i], n
                )
            return pa.table(arrays)

        n_files = self.files.num_rows
        if n_files <= 1 or max_workers <= 1:
            tables = [read_one(i) for i in range(n_files)]
        else:
            with ThreadPoolExecutor(max_workers=min(max_workers, n_files)) as pool:
                tables = list(pool.map(read_one, range(n_files)))
        schema = self.arrow_schema
        extra_schema = [pa.field(f.name, to_arrow_type(f.type)) for f in self.extra_fields if f.name not in schema.names]
        full = pa.schema([*schema, *extra_schema])
        if row_tracking:
            full = full.append(pa.field("_row_id", pa.int64())).append(pa.field("_row_commit_version", pa.int64()))
        if tables:
            result = pa.concat_tables([t.select(full.names).cast(full) for t in tables])
        else:
            result = full.empty_table()
        if self.predicate is not None:
            types = {f.name: to_arrow_type(f.type) for f in [*self.fields, *self.extra_fields]}
            result = result.filter(self.predicate.to_arrow(types))
        if extra_schema:
            result = result.drop_columns([f.name for f in extra_schema])
        return result

    def explain(self) -> dict[str, int]:
        """Counts: total files, pruned by partitions, pruned by stats, selected."""
        return {
            "total_files": self.total_files,
            "partition_pruned": self.partition_pruned,
            "stats_pruned": self.stats_pruned,
            "selected_files": self.files.num_rows,
        }


def _row_ids(extras: dict[str, pa.Array], column: str | None, base: int | None, n: int) -> pa.Array:
    index = extras["__row_index"]
    fresh = pc.add(index, base) if base is not None else pa.nulls(n, pa.int64())
    if column and column in extras:
        return pc.coalesce(extras[column].cast(pa.int64()), fresh)
    return fresh


def _commit_versions(extras: dict[str, pa.Array], column: str | None, version: int | None, n: int) -> pa.Array:
    fresh = constant_column(version, pa.int64(), n)
    if column and column in extras:
        return pc.coalesce(extras[column].cast(pa.int64()), fresh)
    return fresh


def plan_scan(snapshot: Snapshot, *, columns: list[str] | None = None, where: Any = None) -> ScanPlan:
    """Plan a read of `columns` (all by default) filtered by `where` (see `predicates`)."""
    schema = snapshot.schema
    fields = resolve_columns(schema, columns)
    expr = parse_predicate(where)
    adds = snapshot.add_actions()
    total = adds.num_rows
    extra: list[StructField] = []
    if expr is not None:
        for name in sorted(expr.columns()):
            top = name.split(".")[0]
            f = schema.get(top)
            if f is None:
                raise ColumnNotFoundError(f"filter column {name!r} is not in the table (columns: {', '.join(schema.names)})")
            if f.name not in {x.name for x in fields} and f.name not in {x.name for x in extra}:
                extra.append(f)
    parts = partition_table(snapshot, adds)
    part_pruned = stats_pruned = 0
    if expr is not None and total:
        keep = prune_by_partitions(snapshot, expr, parts)
        part_pruned = int(total - keep.sum())
        adds, parts = _kept(adds, keep), _kept(parts, keep)
        if adds.num_rows:
            keep = prune_by_stats(snapshot, expr, adds)
            stats_pruned = int(len(keep) - keep.sum())
            adds, parts = _kept(adds, keep), _kept(parts, keep)
    return ScanPlan(snapshot, fields, expr, adds, parts, total, part_pruned, stats_pruned, extra)


def _kept(table: pa.Table, keep: np.ndarray) -> pa.Table:
    """The rows of `table` where `keep`; the table itself when every row is kept (filtering
    copies every column: half a gigabyte of stats text at a million files)."""
    return table if keep.all() else table.filter(pa.array(keep))


def prune_by_partitions(snapshot: Snapshot, expr: Expr, parts: pa.Table) -> np.ndarray:
    """Mask of files whose partition values may satisfy `expr`."""
    n = parts.num_rows
    names = {c.lower(): c for c in parts.column_names}
    ones = pa.array(np.ones(n, dtype=np.int64))

    def lookup(column: str) -> Any:
        c = names.get(column.lower())
        if c is None:
            return None
        values = parts.column(c).combine_chunks()
        return values, values, pc.cast(pc.is_null(values), pa.int64()), ones

    return expr.may_match(FileEnv(n, lookup, exact=True))


def prune_by_stats(snapshot: Snapshot, expr: Expr, adds: pa.Table) -> np.ndarray:
    """Mask of files whose min/max/null-count statistics may satisfy `expr`."""
    parts = {p.lower() for p in snapshot.partition_columns}
    wanted = sorted(c for c in expr.columns() if c.lower() not in parts)
    if not wanted:
        return np.ones(adds.num_rows, dtype=bool)
    return expr.may_match(FileEnv(adds.num_rows, predicate_bounds(snapshot, adds, wanted).get))


def predicate_bounds(snapshot: Snapshot, adds: pa.Table, wanted: list[str]) -> dict[str, tuple[pa.Array, ...]]:
    """(min, max, null count, num_records) per file of each of the `wanted` columns that has
    statistics. Up to `stats_search.column_limit()` top-level columns are found in the stats
    text (one scan each, the same values as parsing); otherwise, or for a struct or a leaf name
    used twice in the schema, every stats document is parsed (`stats.stats_for_adds`)."""
    from deltaexplore.core.files import num_records_of
    from deltaexplore.core.stats import stats_columns, stats_for_adds
    from deltaexplore.core.stats_search import column_bounds, column_limit, searchable

    if len(wanted) <= column_limit():
        cols = {
            c.name: c for c in stats_columns(snapshot.schema, snapshot.column_mapping_mode, snapshot.partition_columns, wanted)
        }
        # decided before any scan: a struct or an unsearchable column sends every column to the parse
        found = [cols[name] for name in wanted if name in cols]
        nested = any(name not in cols and any(c.startswith(name + ".") for c in cols) for name in wanted)
        if not nested and all(searchable(snapshot, col) for col in found):
            out: dict[str, tuple[pa.Array, ...]] = {}
            records = None
            for col in found:
                got = column_bounds(snapshot, adds, col)
                assert got is not None
                if records is None:
                    records = got.get("num_records")  # the search reads numRecords too (same values)
                    if records is None:
                        records = num_records_of(adds).combine_chunks()
                out[col.name] = (got["min"], got["max"], got["null_count"], records)
            return out
    stats = stats_for_adds(snapshot, adds, wanted)
    parsed_records = stats.column("num_records").combine_chunks()
    return {
        name: (
            stats.column(f"min.{name}").combine_chunks(),
            stats.column(f"max.{name}").combine_chunks(),
            stats.column(f"null_count.{name}").combine_chunks(),
            parsed_records,
        )
        for name in wanted
        if f"min.{name}" in stats.column_names
    }
