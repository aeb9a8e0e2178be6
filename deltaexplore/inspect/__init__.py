"""Inspection: turn a Delta table (or one version of it) into tables a person can read.

Every function takes a `Table` or a `Snapshot` first and returns a `pyarrow.Table` whose schema
is declared in `deltaexplore.inspect.schemas` (`SCHEMAS[name]`; column docs are in each field's
`doc` metadata and in the function docstrings). The same functions are methods of the
`table.inspect` / `snap.inspect` property namespace (registered here; the core never imports
this package). On a table they inspect the latest version; on a snapshot, that version.
Nothing here reads data files except `diff_rows` (the files that differ) and `deleted_rows` (one DV).
Everything is vectorized: 1M-file tables stay Arrow columns end to end.

How the table got there (time):

- `history(limit=None)` -> core `HISTORY_SCHEMA`: one row per commit, newest first.
- `timeline(start=None, end=None, *, column=None, metrics=None)` -> `TIMELINE_SCHEMA`: per
  version files, bytes, rows, small-file share, DV ratio, tombstones, partitions, a column's
  mean and max overlap depth, schema / protocol changes, from one replay.
- `at_versions(expression, versions=None)` -> `AT_VERSIONS_SCHEMA`: a user's aggregate
  (`"count(*) where amount > 10"`) at chosen versions (on Spark: `deltaexplore.spark.at_versions`).
- `commit_infos(start=None, end=None)` -> `COMMIT_INFOS_SCHEMA`: who did what when, per commit,
  from its `commitInfo` alone (the head of each commit file): the whole history cheaply.
- `commits(start=None, end=None, *, checkpoints=False)` -> `COMMITS_SCHEMA`: every action of
  commits start..end, raw JSON and parsed columns, with its source (commit | staged |
  compaction | checkpoint | sidecar).
- `diff(v1=None, v2=None)` -> `DIFF_SCHEMA`: one row per change, by section (files: added /
  removed / dv_changed / net with files, bytes, rows; schema: added / removed / renamed /
  widened / type_changed / nullability / metadata; partitioning; properties; protocol;
  features; domain_metadata; txn; metadata; cdf availability). Metadata only.
- `diff_files(v1=None, v2=None)` -> `DIFF_FILES_SCHEMA`: one row per file that changed.
- `diff_rows(v1=None, v2=None, *, key=None, columns=None)` -> `schemas.diff_rows_schema(...)`:
  the net row changes, read from the files that differ (rows rewritten unchanged cancel out);
  unkeyed a multiset (`_count`), keyed old and new values side by side.
- `reconstructable_versions(*, check_data=True, vacuum_retention_hours=None)` ->
  `VERSIONS_SCHEMA`: per version, can it still be read (log + data files), and after VACUUM.
- `vacuum_preview(retention_hours=None)` -> `VACUUM_SCHEMA`: files VACUUM would delete.
- `catalog_status()` -> `CATALOG_SCHEMA`: published vs ratified vs staged commits.

What is in it (one version):

- `overview()` -> `METRICS_SCHEMA`: key facts (size, rows, layout, protocol).
- `files(*, small_file_bytes=None)` -> `FILES_SCHEMA`: one row per active file.
- `partitions(*, small_file_bytes=None)` -> `PARTITIONS_SCHEMA`: per partition files, bytes,
  rows, small files, DV files, skew.
- `file_sizes(*, small_file_bytes=None)` -> `FILE_SIZES_SCHEMA`: files and bytes per
  power-of-two size bin.
- `column_mapping()` -> `COLUMN_MAPPING_SCHEMA`: logical <-> physical <-> field id.
- `row_tracking()` -> `ROW_TRACKING_SCHEMA`: row id ranges per file, overlaps, high-water mark.
- `clustering()` -> `CLUSTERING_SCHEMA`: liquid clustering columns and their quality.
- `domain_metadata()` -> `DOMAINS_SCHEMA`; `transactions()` -> `TXNS_SCHEMA`.
- `features(*, all_known=False)` -> `FEATURES_SCHEMA`: each feature supported / active.
- `compatibility()` -> `COMPATIBILITY_SCHEMA`: which clients (deltaexplore, Delta Spark
  versions, delta-rs, DuckDB) can read / write it, and what blocks them.

Why it is slow, and what to do about it:

- `layout(column)` -> `schemas.layout_schema(type)`: per-file min/max, overlapping files,
  overlap depth (files a point query reads), truncated bounds.
- `layout_density(column, *, bins=100)` -> `schemas.layout_density_schema(type)`: files per
  range of the column's values and the overlap depth there (readable at a million files).
- `layout_summary(columns=None)` -> `LAYOUT_SUMMARY_SCHEMA`: per column stats coverage,
  data-skipping eligibility, clustering quality.
- `explain(predicate)` -> `EXPLAIN_SCHEMA`: per file read / partition_pruned / stats_pruned and
  the conjunct responsible.
- `deletion_vectors(*, purge_threshold=0.05)` -> `DV_SCHEMA`: per file cardinality, deleted
  ratio, storage, DV file sharing; `dv_files(*, check_files=False)` -> `DV_FILES_SCHEMA`;
  `deleted_rows(path)` -> `DELETED_ROWS_SCHEMA`: deleted row positions of one file.
- `log_health()` -> `METRICS_SCHEMA`: checkpoints and cadence, `_last_checkpoint`, log vs data
  bytes, tombstones and reclaimable bytes, `.crc` validation (status ok | info | warn | error).
- `log_files()` -> `LOG_FILES_SCHEMA`: per version commit / checkpoint / crc sizes and replay
  cost.
- `advise(*, columns=None, zorder_by=None, target_size=None, check=False)` -> `ADVICE_SCHEMA`:
  ranked maintenance (compaction, Z-order, DV purge, checkpoint, log cleanup, VACUUM, stats
  columns) with the predicted effect; `check=True` -> `ADVICE_CHECK_SCHEMA`: predicted vs
  measured around the newest OPTIMIZE / REORG.

Errors are `DeltaExploreError` subclasses (`InspectError` for bad arguments).
"""

from __future__ import annotations

import pyarrow as pa

from deltaexplore.core.snapshot import Snapshot
from deltaexplore.core.table import Table
from deltaexplore.inspect.advise import advise
from deltaexplore.inspect.catalog import catalog_status
from deltaexplore.inspect.columns import clustering, column_mapping, domain_metadata, row_tracking, transactions
from deltaexplore.inspect.commit_infos import commit_infos
from deltaexplore.inspect.commits import commits
from deltaexplore.inspect.deletion_vectors import deleted_rows, deletion_vectors, dv_files
from deltaexplore.inspect.diff import diff, diff_files
from deltaexplore.inspect.errors import InspectError
from deltaexplore.inspect.explain import explain
from deltaexplore.inspect.expressions import ExpressionError, at_versions
from deltaexplore.inspect.features import compatibility, features
from deltaexplore.inspect.file_sizes import file_sizes
from deltaexplore.inspect.files import files, partitions
from deltaexplore.inspect.layout import layout, layout_summary
from deltaexplore.inspect.layout_density import layout_density
from deltaexplore.inspect.log_health import log_files, log_health
from deltaexplore.inspect.namespace import InspectNamespace
from deltaexplore.inspect.overview import overview
from deltaexplore.inspect.retention import reconstructable_versions, vacuum_preview
from deltaexplore.inspect.row_diff import diff_rows
from deltaexplore.inspect.schemas import SCHEMAS
from deltaexplore.inspect.timeline import timeline

__all__ = [
    "FUNCTIONS",
    "SCHEMAS",
    "ExpressionError",
    "InspectError",
    "InspectNamespace",
    "advise",
    "at_versions",
    "catalog_status",
    "clustering",
    "column_mapping",
    "commit_infos",
    "commits",
    "compatibility",
    "deleted_rows",
    "deletion_vectors",
    "diff",
    "diff_files",
    "diff_rows",
    "domain_metadata",
    "dv_files",
    "explain",
    "features",
    "file_sizes",
    "files",
    "history",
    "layout",
    "layout_density",
    "layout_summary",
    "log_files",
    "log_health",
    "overview",
    "partitions",
    "reconstructable_versions",
    "row_tracking",
    "timeline",
    "transactions",
    "vacuum_preview",
]


def history(obj: Table | Snapshot, limit: int | None = None, *, start_version: int | None = None) -> pa.Table:
    """One row per commit, newest first (core `HISTORY_SCHEMA`); a snapshot's history ends at it."""
    return InspectNamespace(obj).history(limit, start_version=start_version)


#: every inspection function by name (the UI builds its tabs and `%delta` subcommands from it)
FUNCTIONS = {
    name: globals()[name]
    for name in (
        "overview",
        "history",
        "timeline",
        "at_versions",
        "commit_infos",
        "commits",
        "diff",
        "diff_files",
        "diff_rows",
        "files",
        "partitions",
        "file_sizes",
        "layout",
        "layout_density",
        "layout_summary",
        "explain",
        "deletion_vectors",
        "dv_files",
        "deleted_rows",
        "log_health",
        "log_files",
        "reconstructable_versions",
        "vacuum_preview",
        "features",
        "compatibility",
        "column_mapping",
        "row_tracking",
        "clustering",
        "domain_metadata",
        "transactions",
        "catalog_status",
        "advise",
    )
}


def _inspect(self: Table | Snapshot) -> InspectNamespace:
    """Inspection tables of this table / snapshot (see `deltaexplore.inspect`)."""
    return InspectNamespace(self)


Snapshot.inspect = property(_inspect)  # type: ignore[attr-defined]
Table.inspect = property(_inspect)  # type: ignore[attr-defined]
