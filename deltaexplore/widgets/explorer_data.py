"""What each explorer tab shows, computed from a snapshot: aggregates first, pages of rows after.

`ExplorerData` holds one table and one current snapshot and answers each tab's question as a
small dict (summaries, sent as JSON) plus Arrow tables (rows, sent as IPC buffers). Nothing here
imports ipywidgets, so the same code serves the widget, the magics, the HTML fallback and the
benchmark. Where the inspection layer (`snap.inspect.<name>()`) provides a view, it is used;
until then the tab is computed from the core directly.

A million files stay cheap: partition and size aggregates are grouped once per snapshot, the
file list is sorted once per (sort, filter) and only the requested page is materialised.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.arrow import take_rows
from deltaexplore.core.scan.partition_values import partition_keys
from deltaexplore.errors import DeltaExploreError

if TYPE_CHECKING:
    from deltaexplore.core.snapshot import Snapshot
    from deltaexplore.core.table import Table

__all__ = ["FILE_SORTS", "ExplorerData", "human_bytes"]

#: sort keys the file list accepts (column of `snap.files()` or a derived one)
FILE_SORTS = ("path", "size", "num_records", "modification_time", "partition", "deleted_rows")
SMALL_FILE_BYTES = 32 * 1024 * 1024


def human_bytes(n: float | None) -> str:
    """`1536` -> `"1.5 KiB"`."""
    if n is None:
        return "?"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(value) < 1024 or unit == "PiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"


def _inspect(snap: Any, name: str) -> Any:
    """`snap.inspect.<name>` when the inspection layer provides it, else None."""
    ns = getattr(type(snap), "inspect", None)
    if ns is None:
        return None
    return getattr(snap.inspect, name, None)


def _sum(col: pa.ChunkedArray | pa.Array) -> int:
    v = pc.sum(col).as_py()
    return int(v) if v is not None else 0


@dataclass
class _FileCache:
    files: pa.Table
    partition: pa.Array  # "k=v/k2=v2" per file ("" when unpartitioned)
    orders: dict[tuple[str, bool, str], pa.Array] = field(default_factory=dict)


class ExplorerData:
    """The explorer's questions, answered for one table at one version.

    Args:
        table: the table.
        version: the version to show (latest when None).
        small_file_bytes: files under this size count as small.
    """

    def __init__(self, table: Table, version: int | None = None, *, small_file_bytes: int = SMALL_FILE_BYTES) -> None:
        self.table = table
        self.small_file_bytes = small_file_bytes
        self.listing = table.listing()
        self.snap: Snapshot = table.snapshot(version)
        self._files: _FileCache | None = None
        self._snaps: dict[int, Snapshot] = {self.snap.version: self.snap}

    # -- time ------------------------------------------------------------------------------
    @property
    def version(self) -> int:
        return self.snap.version

    def set_version(self, version: int) -> None:
        """Move to `version` (a new immutable snapshot; caches are per snapshot)."""
        if version == self.snap.version:
            return
        self.snap = self.snapshot(version)
        self._files = None

    def snapshot(self, version: int) -> Snapshot:
        if version not in self._snaps:
            if len(self._snaps) > 4:
                self._snaps.pop(next(iter(self._snaps)))
            self._snaps[version] = self.table.snapshot(version)
        return self._snaps[version]

    def version_range(self) -> tuple[int, int]:
        """(earliest version that can be reconstructed, latest version)."""
        listing = self.listing
        latest = listing.latest_version
        if latest is None:
            return (0, 0)
        commits = sorted(set(listing.commits) | set(listing.ratified))
        earliest = latest
        if commits and commits[0] == 0:
            earliest = 0
        else:
            cps = [v for v in listing.checkpoints if v <= latest]
            earliest = min(cps) if cps else (commits[0] if commits else latest)
        return (earliest, latest)

    # -- overview --------------------------------------------------------------------------
    def overview(self) -> dict[str, Any]:
        """Name, version, time, protocol, schema, partitioning, properties, files, bytes, rows, DVs."""
        from deltaexplore.core.protocol.features import features_of

        snap = self.snap
        p = snap.protocol
        readers, writers = features_of(p)
        out: dict[str, Any] = {
            "uri": self.table.uri,
            "version": snap.version,
            "timestamp": snap.timestamp.isoformat(timespec="seconds"),
            "reader_version": p.min_reader_version,
            "writer_version": p.min_writer_version,
            "reader_features": list(readers),
            "writer_features": list(writers),
            "published_only": bool(snap.published_only),
            "name": None,
            "description": None,
            "table_id": None,
            "partition_columns": [],
            "schema": [],
            "properties": {},
            "problems": [],
        }
        if snap.has_metadata:
            md = snap.metadata
            out.update(
                name=md.name,
                description=md.description,
                table_id=md.id,
                partition_columns=list(md.partition_columns),
                properties=dict(md.configuration),
            )
            try:
                out["schema"] = [{"name": f.name, "type": str(f.type), "nullable": bool(f.nullable)} for f in snap.schema.fields]
            except DeltaExploreError as exc:
                out["problems"].append(f"schema unreadable: {exc}")
        files = self.files_cache().files
        num_records = files.column("num_records")
        card = files.column("cardinality")
        out.update(
            num_files=files.num_rows,
            size_bytes=_sum(files.column("size")),
            num_records=_sum(num_records),
            files_without_stats=num_records.null_count,
            files_with_dv=len(card) - card.null_count,
            deleted_rows=_sum(card),
            small_files=_sum(pc.less(files.column("size"), self.small_file_bytes)),
        )
        out["live_rows"] = out["num_records"] - out["deleted_rows"]
        out["size"] = human_bytes(out["size_bytes"])
        out["checkpoint_version"] = snap.checkpoint_version
        return out

    # -- history ---------------------------------------------------------------------------
    def history(self, limit: int | None = 500) -> pa.Table:
        """The newest `limit` commits: version, time, operation, user, counts, parameters (JSON)."""
        h = self.table.history(limit=limit)
        params = [json.dumps(dict(p or []), ensure_ascii=False, sort_keys=True) for p in h.column("parameters").to_pylist()]
        cols = [
            "version",
            "timestamp",
            "operation",
            "user_name",
            "engine",
            "files_added",
            "files_removed",
            "bytes_added",
            "bytes_removed",
            "rows_added",
            "rows_removed",
            "dv_files_added",
        ]
        out = h.select([c for c in cols if c in h.column_names])
        return out.append_column("parameters", pa.array(params, pa.string()))

    # -- files -----------------------------------------------------------------------------
    def files_cache(self) -> _FileCache:
        if self._files is None:
            files = self.snap.files()
            self._files = _FileCache(files, self._partition_keys(files))
        return self._files

    def _partition_keys(self, files: pa.Table) -> pa.Array:
        """`col=value/...` per file of `files` (the snapshot's files, in its order)."""
        return partition_keys(self.snap, self.snap.add_actions()) if files.num_rows else pa.array([], pa.string())

    def partitions(self, limit: int = 2000) -> tuple[dict[str, Any], pa.Table]:
        """Per partition: files, bytes, rows, small files, deleted rows; largest first (top `limit`)."""
        fc = self.files_cache()
        f = fc.files
        t = pa.table(
            {
                "partition": fc.partition,
                "size": f.column("size"),
                "num_records": pc.fill_null(f.column("num_records"), 0),
                "small": pc.cast(pc.less(f.column("size"), self.small_file_bytes), pa.int64()),
                "deleted": pc.fill_null(f.column("cardinality"), 0),
            }
        )
        g = t.group_by("partition").aggregate(
            [("size", "count"), ("size", "sum"), ("num_records", "sum"), ("small", "sum"), ("deleted", "sum")]
        )
        g = g.rename_columns(["partition", "files", "bytes", "rows", "small_files", "deleted_rows"])
        g = g.take(pc.sort_indices(g, [("bytes", "descending"), ("partition", "ascending")]))
        sizes = g.column("bytes").to_numpy() if g.num_rows else np.array([0])
        summary = {
            "partitions": g.num_rows,
            "largest_bytes": int(sizes.max()) if g.num_rows else 0,
            "median_bytes": float(np.median(sizes)) if g.num_rows else 0.0,
            "skew": float(sizes.max() / np.median(sizes)) if g.num_rows and np.median(sizes) > 0 else None,
            "shown": min(limit, g.num_rows),
        }
        return summary, g.slice(0, limit)

    def size_histogram(self) -> pa.Table:
        """File counts and bytes per power-of-two size bucket (`lower` ≤ size < `upper`)."""
        sizes = self.files_cache().files.column("size").to_numpy(zero_copy_only=False)
        if len(sizes) == 0:
            return pa.table(
                {
                    "lower": pa.array([], pa.int64()),
                    "upper": pa.array([], pa.int64()),
                    "files": pa.array([], pa.int64()),
                    "bytes": pa.array([], pa.int64()),
                }
            )
        buckets = np.floor(np.log2(np.maximum(sizes, 1))).astype(np.int64)
        counts = np.bincount(buckets)
        totals = np.bincount(buckets, weights=sizes)
        nz = np.nonzero(counts)[0]
        lo, hi = nz.min(), nz.max()
        idx = np.arange(lo, hi + 1)
        return pa.table(
            {
                "lower": pa.array((2**idx).astype(np.int64)),
                "upper": pa.array((2 ** (idx + 1)).astype(np.int64)),
                "files": pa.array(counts[idx].astype(np.int64)),
                "bytes": pa.array(totals[idx].astype(np.int64)),
            }
        )

    def files_page(
        self, offset: int = 0, limit: int = 200, *, sort: str = "size", descending: bool = True, search: str = ""
    ) -> tuple[int, pa.Table]:
        """(matching file count, one page of the file list) sorted and filtered by path substring."""
        from deltaexplore.inspect.deletion_vectors import storage_names

        if sort not in FILE_SORTS:
            raise DeltaExploreError(f"cannot sort files by {sort!r}: expected one of {', '.join(FILE_SORTS)}")
        fc = self.files_cache()
        key = (sort, descending, search)
        order = fc.orders.get(key)
        if order is None:
            f = fc.files
            view = pa.table(
                {
                    "path": f.column("path"),
                    "size": f.column("size"),
                    "num_records": f.column("num_records"),
                    "modification_time": f.column("modification_time"),
                    "partition": fc.partition,
                    "deleted_rows": f.column("cardinality"),
                    "_i": pa.array(np.arange(f.num_rows, dtype=np.int64)),
                }
            )
            if search:
                view = view.filter(pc.match_substring(view.column("path"), search, ignore_case=True))
            keys = [(sort, "descending" if descending else "ascending")]
            if sort != "path":
                keys.append(("path", "ascending"))
            order = view.column("_i").take(pc.sort_indices(view, keys)).combine_chunks()
            if len(fc.orders) > 8:
                fc.orders.pop(next(iter(fc.orders)))
            fc.orders[key] = order
        offset = max(0, min(offset, max(len(order) - 1, 0)))
        idx = order.slice(offset, limit)
        page = take_rows(fc.files, idx)
        out = pa.table(
            {
                "path": page.column("path"),
                "partition": fc.partition.take(idx),
                "size": page.column("size"),
                "num_records": page.column("num_records"),
                "deleted_rows": page.column("cardinality"),
                "modification_time": page.column("modification_time"),
                "dv_storage": storage_names(page.column("storage_type")),
            }
        )
        return len(order), out

    # -- layout ----------------------------------------------------------------------------
    def stats_columns(self) -> list[str]:
        """Top-level primitive columns that can carry min/max stats."""
        if not self.snap.has_metadata:
            return []
        try:
            fields = self.snap.schema.fields
        except DeltaExploreError:
            return []
        parts = set(self.snap.partition_columns)
        out = []
        for f in fields:
            t = str(f.type)
            if f.name in parts or t.startswith(("struct", "array", "map")) or t in ("binary", "boolean", "variant"):
                continue
            out.append(f.name)
        return out

    def default_layout_column(self) -> str:
        """The column the layout tab opens on: the first clustering column with stats, else the
        first column with stats ('' when there is none)."""
        from deltaexplore.inspect.layout import clustering_columns

        candidates = self.stats_columns()
        mode = self.snap.column_mapping_mode
        by_physical = {}
        for f in self.snap.schema.fields:
            if f.name in candidates:
                by_physical[(f.physical_name if mode != "none" else f.name).lower()] = f.name
        for path in clustering_columns(self.snap):
            if len(path) == 1 and path[0].lower() in by_physical:
                return by_physical[path[0].lower()]
        return candidates[0] if candidates else ""

    def layout(self, column: str, *, sample: int = 2000) -> tuple[dict[str, Any], pa.Table]:
        """`inspect.layout(column)` summarised (stats coverage, overlap depth, clustering quality,
        truncated bounds) with up to `sample` file ranges ordered by min for the chart: `lo`/`hi`
        are the bounds' dense ranks among the shown files scaled to [0, 1], `depth` the file's
        overlap depth (the most files a point query in its range reads)."""
        from deltaexplore.inspect import layout

        candidates = self.stats_columns()
        if column not in candidates:
            expected = ", ".join(candidates) or "(none)"
            raise DeltaExploreError(f"no min/max statistics can exist for column {column!r}: expected one of {expected}")
        per_file = layout(self.snap, column)
        # only the shown rows are copied: a million paths are never filtered or sorted
        rows = np.flatnonzero(per_file.column("has_stats").to_numpy(zero_copy_only=False))
        n = len(rows)
        depth = pc.fill_null(per_file.column("overlap_depth"), 0).to_numpy().astype(np.int64)[rows]
        summary: dict[str, Any] = {
            "column": column,
            "type": str(per_file.schema.field("min").type),
            "files": per_file.num_rows,
            "files_with_stats": n,
            "files_without_stats": per_file.num_rows - n,
            "truncated": _sum(pc.cast(per_file.column("truncated"), pa.int64())),
            "max_overlap": int(depth.max()) if n else 0,
            "mean_overlap": round(float(depth.mean()), 2) if n else 0.0,
            # 1: disjoint ranges (a point query reads one file); 0: every file overlaps every other
            "clustering_quality": round(1.0 - (float(depth.mean()) - 1.0) / (n - 1), 3) if n > 1 else (1.0 if n else None),
            "shown": 0,
        }
        if n == 0:
            return summary, pa.table(
                {
                    "path": pa.array([], pa.string()),
                    "min": pa.array([], pa.string()),
                    "max": pa.array([], pa.string()),
                    "lo": pa.array([], pa.float64()),
                    "hi": pa.array([], pa.float64()),
                    "depth": pa.array([], pa.int64()),
                }
            )
        # `rank` numbers the files with stats 0..n-1 in (min, max) order: its inverse is that order
        order = np.empty(n, dtype=np.int64)
        order[pc.fill_null(per_file.column("rank"), 0).to_numpy()[rows]] = np.arange(n)
        if n > sample:
            order = order[np.linspace(0, n - 1, sample).astype(np.int64)]
        shown = take_rows(per_file.select(["path", "min", "max"]), rows[order])
        summary["shown"] = len(order)
        lo_hi = pa.chunked_array(shown.column("min").chunks + shown.column("max").chunks)
        ranks = pc.rank(lo_hi, sort_keys="ascending", tiebreaker="dense").to_numpy().astype(np.float64) - 1
        top = max(float(ranks.max()), 1.0)
        out = pa.table(
            {
                "path": shown.column("path"),
                "min": pc.cast(shown.column("min"), pa.string()),
                "max": pc.cast(shown.column("max"), pa.string()),
                "lo": pa.array(ranks[: len(order)] / top),
                "hi": pa.array(ranks[len(order) :] / top),
                "depth": pa.array(depth[order]),
            }
        )
        return summary, out

    # -- deletion vectors ------------------------------------------------------------------
    def deletion_vectors(self, limit: int = 500) -> tuple[dict[str, Any], pa.Table]:
        """`snap.inspect.deletion_vectors()` summarised, worst files first (top `limit`)."""
        from deltaexplore.inspect import deletion_vectors

        dv = deletion_vectors(self.snap)
        on_disk = dv.filter(pc.is_valid(dv.column("dv_path")))
        summary = {
            "files": self.snap.num_files,
            "files_with_dv": dv.num_rows,
            "deleted_rows": _sum(dv.column("cardinality")),
            "rows_in_files_with_dv": _sum(dv.column("num_records")),
            "inline": _sum(pc.cast(pc.equal(dv.column("storage"), "inline"), pa.int64())),
            "dv_files": len(pc.unique(on_disk.column("dv_path"))) if on_disk.num_rows else 0,
            "dv_bytes": _sum(dv.column("dv_bytes")),
            "past_purge_threshold": _sum(pc.cast(dv.column("past_threshold"), pa.int64())),
        }
        if dv.num_rows:
            dv = dv.take(pc.sort_indices(dv, [("deleted_ratio", "descending"), ("path", "ascending")]))
        cols = [
            "path",
            "partition",
            "num_records",
            "cardinality",
            "deleted_ratio",
            "storage",
            "dv_bytes",
            "shared_by",
            "past_threshold",
        ]
        return summary, dv.select(cols).slice(0, limit)

    # -- diff ------------------------------------------------------------------------------
    def diff(self, v1: int, v2: int, limit: int = 1000) -> tuple[pa.Table, pa.Table]:
        """(`inspect.diff` sections: files, schema, properties, protocol, …; the first `limit` changed files)."""
        from deltaexplore.inspect import diff, diff_files

        changes = diff(self.table, v1, v2)
        files = diff_files(self.table, v1, v2)
        cols = ["change", "path", "partition", "size", "num_records", "rows_delta", "deleted_before", "deleted_after"]
        return changes, files.select(cols).slice(0, limit)

    # -- log health ------------------------------------------------------------------------
    def log_health(self) -> pa.Table:
        """`inspect.log_health` at the current version (section, metric, value, unit, status, detail)."""
        from deltaexplore.inspect import log_health

        return log_health(self.snap).select(["section", "metric", "value", "unit", "status", "detail"])
