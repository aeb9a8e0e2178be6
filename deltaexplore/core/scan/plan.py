"""Scan planning: which files a read needs (data skipping in `scan.skipping`), and the local reader.

A `ScanPlan` is the contract between the protocol core and any engine: the selected add
actions with resolved locations, typed partition values and deletion vectors, the logical and
physical columns to read, and the row filter. `ScanPlan.to_arrow()` executes it with pyarrow;
the Spark layer executes the same plan on a cluster.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.arrow import empty_table
from deltaexplore.core.log.state import TableState
from deltaexplore.core.protocol.deletion_vectors import DeletionVectorDescriptor, read_deletion_vector
from deltaexplore.core.protocol.predicates import Expr, lower_literals, parse_predicate
from deltaexplore.core.protocol.schema import StructField, StructType, to_arrow_type
from deltaexplore.core.protocol.variant import has_variant, json_type, variants_as_json
from deltaexplore.core.scan.data_file import constant_column, read_data_file, resolve_data_path
from deltaexplore.core.scan.partition_values import partition_table
from deltaexplore.core.scan.skipping import filter_collations, prune_by_partitions, prune_by_stats, unprunable
from deltaexplore.errors import ColumnNotFoundError, DeltaProtocolError, InvalidArgumentError

__all__ = ["ScanPlan", "plan_scan", "resolve_columns"]


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

    snapshot: TableState
    fields: list[StructField]
    predicate: Expr | None
    files: pa.Table  # selected add actions (log field names)
    partition_values: pa.Table  # typed partition columns of the selected files
    total_files: int
    partition_pruned: int = 0
    stats_pruned: int = 0
    extra_fields: list[StructField] = field(default_factory=list)  # needed by the filter only
    #: filtered columns compared lower-cased (collation spark.UTF8_LCASE)
    lowered: frozenset[str] = frozenset()

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

    def to_arrow(self, *, row_tracking: bool = False, max_workers: int = 8, variant: str = "binary") -> pa.Table:
        """Execute the plan with pyarrow: rows with DVs applied and logical names.

        `variant`: "binary" gives variant columns as `struct<metadata, value>` (the encoding, shredded
        values rebuilt), "json" as JSON text (as Spark's `to_json` writes them).
        """
        if variant not in ("binary", "json"):
            raise InvalidArgumentError(f'variant must be "binary" or "json", got {variant!r}')
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
                raise DeltaProtocolError(f"{snapshot.uri} does not track row ids (no rowTracking feature)")
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
            result = empty_table(full)
        if self.predicate is not None:
            types = {f.name: to_arrow_type(f.type) for f in [*self.fields, *self.extra_fields]}
            if self.lowered:  # case-insensitive columns: compare lower-cased copies, keep the rows
                keyed = result.append_column("__dx_row", pa.array(np.arange(result.num_rows, dtype=np.int64)))
                for c in self.lowered:
                    i = keyed.schema.get_field_index(c)
                    keyed = keyed.set_column(i, c, pc.utf8_lower(keyed.column(i)))
                kept = keyed.filter(lower_literals(self.predicate, self.lowered).to_arrow(types)).column("__dx_row")
                result = result.take(kept)
            else:
                result = result.filter(self.predicate.to_arrow(types))
        if extra_schema:
            result = result.drop_columns([f.name for f in extra_schema])
        if variant == "json":
            for f in self.fields:
                if has_variant(f.type):
                    i = result.schema.get_field_index(f.name)
                    result = result.set_column(
                        i, pa.field(f.name, json_type(f.type), nullable=f.nullable), variants_as_json(result.column(i), f.type)
                    )
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


def plan_scan(snapshot: TableState, *, columns: list[str] | None = None, where: Any = None) -> ScanPlan:
    """Plan a read of `columns` (all by default) filtered by `where` (see `predicates`).

    Raises:
        DeltaProtocolError: the state was read with `strict=False` and its rows cannot be read
            (`TableState.problem`).
    """
    if snapshot.problem is not None:
        raise snapshot.problem
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
    lowered: frozenset[str] = frozenset()
    if expr is not None:
        lowered = frozenset(filter_collations(snapshot, expr))  # raises for collations it cannot compare
    if expr is not None and total:
        skip = unprunable(snapshot, expr)
        keep = prune_by_partitions(snapshot, expr, parts, skip=skip)
        part_pruned = int(total - keep.sum())
        adds, parts = _kept(adds, keep), _kept(parts, keep)
        if adds.num_rows:
            keep = prune_by_stats(snapshot, expr, adds, skip=skip)
            stats_pruned = int(len(keep) - keep.sum())
            adds, parts = _kept(adds, keep), _kept(parts, keep)
    return ScanPlan(snapshot, fields, expr, adds, parts, total, part_pruned, stats_pruned, extra, lowered)


def _kept(table: pa.Table, keep: np.ndarray) -> pa.Table:
    """The rows of `table` where `keep`; the table itself when every row is kept (filtering
    copies every column: half a gigabyte of stats text at a million files)."""
    return table if keep.all() else table.filter(pa.array(keep))
