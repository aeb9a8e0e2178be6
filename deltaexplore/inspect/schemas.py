"""Every output schema of `deltaexplore.inspect`, declared in one place.

Each inspection function returns a `pyarrow.Table` with exactly one of these schemas (the
`layout` schema is parameterised by the inspected column's type). Column meanings are documented
next to each field and repeated in the function docstrings; `docs/architecture.md` has a summary.
Timestamps are `timestamp[ms, UTC]`; counts and bytes `int64`; ratios `float64` in [0, 1].
"""

from __future__ import annotations

import pyarrow as pa

from deltaexplore.core.actions import STRING_MAP
from deltaexplore.core.files import FILES_SCHEMA as CORE_FILES_SCHEMA
from deltaexplore.core.history import HISTORY_SCHEMA

__all__ = [
    "CATALOG_SCHEMA",
    "CLIENTS_SCHEMA",
    "CLIENT_FEATURES_SCHEMA",
    "CLUSTERING_SCHEMA",
    "COLUMN_MAPPING_SCHEMA",
    "COMMITS_SCHEMA",
    "COMPATIBILITY_SCHEMA",
    "DELETED_ROWS_SCHEMA",
    "DIFF_FILES_SCHEMA",
    "DIFF_SCHEMA",
    "DOMAINS_SCHEMA",
    "DV_FILES_SCHEMA",
    "DV_SCHEMA",
    "EXPLAIN_SCHEMA",
    "FEATURES_SCHEMA",
    "FILES_SCHEMA",
    "HISTORY_SCHEMA",
    "LAYOUT_SUMMARY_SCHEMA",
    "LOG_FILES_SCHEMA",
    "METRICS_SCHEMA",
    "PARTITIONS_SCHEMA",
    "ROW_TRACKING_SCHEMA",
    "SCHEMAS",
    "TS",
    "TXNS_SCHEMA",
    "VACUUM_SCHEMA",
    "VERSIONS_SCHEMA",
    "layout_schema",
]

#: every timestamp column
TS = pa.timestamp("ms", tz="UTC")


def _s(*fields: tuple[str, pa.DataType, str]) -> pa.Schema:
    """A schema whose fields carry their documentation as field metadata (`doc`)."""
    return pa.schema([pa.field(name, typ, metadata={"doc": doc}) for name, typ, doc in fields])


#: `commits(start, end)`: one row per action of every commit (and, on request, checkpoint).
COMMITS_SCHEMA = _s(
    ("version", pa.int64(), "commit version (end version for a log compaction file)"),
    ("timestamp", TS, "commit time (in-commit timestamp aware)"),
    ("source", pa.string(), "commit | staged | compaction | checkpoint | sidecar"),
    ("source_file", pa.string(), "log file the action was read from, table-relative"),
    ("line", pa.int64(), "0-based line (JSON) or row (parquet) within source_file"),
    ("action", pa.string(), "action key: add, remove, cdc, metaData, protocol, commitInfo, txn, domainMetadata, ..."),
    ("path", pa.string(), "file path of add/remove/cdc actions"),
    ("data_change", pa.bool_(), "dataChange of file actions"),
    ("size", pa.int64(), "bytes of the data file (file actions)"),
    ("num_records", pa.int64(), "numRecords from the stats (add/remove with stats)"),
    ("partition_values", STRING_MAP, "partitionValues as written (physical names under column mapping)"),
    ("deletion_vector", pa.string(), "deletion vector unique id (storageType + path/inline + @offset)"),
    ("dv_cardinality", pa.int64(), "rows deleted by that deletion vector"),
    ("modification_time", TS, "add.modificationTime"),
    ("deletion_timestamp", TS, "remove.deletionTimestamp"),
    ("operation", pa.string(), "commitInfo.operation (commitInfo rows only)"),
    ("raw", pa.string(), "the action as JSON text (for parquet rows: a JSON rendering, maps as key/value lists)"),
)

#: `diff(v1, v2)`: one row per change between two versions, grouped by section.
DIFF_SCHEMA = _s(
    (
        "section",
        pa.string(),
        "files | schema | partitioning | properties | protocol | features | domain_metadata | txn | metadata | cdf",
    ),
    (
        "change",
        pa.string(),
        "added | removed | dv_changed | net | changed | renamed | widened | type_changed | nullability | available | unavailable",
    ),
    ("name", pa.string(), "what changed: column path, property key, feature, domain, app id ('files' for file totals)"),
    ("before", pa.string(), "value at v1 (text)"),
    ("after", pa.string(), "value at v2 (text)"),
    ("files", pa.int64(), "files section: number of logical files"),
    ("bytes", pa.int64(), "files section: bytes of those files (signed for 'net')"),
    ("rows", pa.int64(), "files section: live rows affected (signed for 'net'); null when stats are missing"),
    ("detail", pa.string(), "human-readable explanation"),
)

#: `diff_files(v1, v2)`: one row per data file whose state differs between two versions.
DIFF_FILES_SCHEMA = _s(
    ("path", pa.string(), "data file path as written in the log"),
    ("change", pa.string(), "added | removed | dv_changed (same file re-added with another deletion vector)"),
    ("partition", pa.string(), "partition key 'col=value/...' ('' when unpartitioned)"),
    ("size", pa.int64(), "bytes of the data file"),
    ("num_records", pa.int64(), "rows physically in the file (stats); null without stats"),
    ("deleted_before", pa.int64(), "rows deleted by the file's DV at v1 (null: file absent at v1)"),
    ("deleted_after", pa.int64(), "rows deleted by the file's DV at v2 (null: file absent at v2)"),
    ("rows_delta", pa.int64(), "change of live rows contributed by this file (v2 - v1)"),
    ("dv_before", pa.string(), "deletion vector unique id at v1"),
    ("dv_after", pa.string(), "deletion vector unique id at v2"),
    ("modification_time", TS, "file modification time from the add action"),
)

#: `files()`: the core files table plus derived columns.
FILES_SCHEMA = pa.schema(
    [
        *CORE_FILES_SCHEMA,
        pa.field("partition", pa.string(), metadata={"doc": "partition key 'col=value/...' ('' when unpartitioned)"}),
        pa.field("deleted_rows", pa.int64(), metadata={"doc": "rows deleted by the DV (0 without DV)"}),
        pa.field("live_rows", pa.int64(), metadata={"doc": "num_records - deleted_rows (null without stats)"}),
        pa.field("has_stats", pa.bool_(), metadata={"doc": "the add carries statistics"}),
        pa.field("is_small", pa.bool_(), metadata={"doc": "size < small_file_bytes"}),
    ]
)

#: `partitions()`: one row per partition (one row for an unpartitioned table).
PARTITIONS_SCHEMA = _s(
    ("partition", pa.string(), "partition key 'col=value/...' ('' when unpartitioned)"),
    ("partition_values", STRING_MAP, "logical partition column -> serialized value"),
    ("files", pa.int64(), "active files"),
    ("bytes", pa.int64(), "bytes of those files"),
    ("rows", pa.int64(), "rows in files with stats (see files_without_stats)"),
    ("deleted_rows", pa.int64(), "rows deleted by deletion vectors"),
    ("live_rows", pa.int64(), "rows - deleted_rows"),
    ("files_without_stats", pa.int64(), "files whose row count is unknown"),
    ("dv_files", pa.int64(), "files with a deletion vector"),
    ("small_files", pa.int64(), "files smaller than small_file_bytes"),
    ("small_bytes", pa.int64(), "bytes in small files"),
    ("min_file_bytes", pa.int64(), "smallest file"),
    ("max_file_bytes", pa.int64(), "largest file"),
    ("mean_file_bytes", pa.float64(), "mean file size"),
    ("median_file_bytes", pa.float64(), "median file size"),
    ("bytes_share", pa.float64(), "share of the table's bytes"),
    ("skew", pa.float64(), "bytes / median bytes over partitions (1.0 = typical; large = hot partition)"),
)


def layout_schema(value_type: pa.DataType) -> pa.Schema:
    """`layout(column)`: per-file ranges of one column; `min`/`max` have the column's type."""
    return _s(
        ("path", pa.string(), "data file path"),
        ("partition", pa.string(), "partition key ('' when unpartitioned)"),
        ("size", pa.int64(), "bytes"),
        ("num_records", pa.int64(), "rows in the file (stats)"),
        ("null_count", pa.int64(), "nulls of the column in the file"),
        ("min", value_type, "minimum of the column in the file (stats; partition value for partition columns)"),
        ("max", value_type, "maximum of the column in the file"),
        ("has_stats", pa.bool_(), "min and max are both known"),
        ("truncated", pa.bool_(), "string bounds look truncated (32+ characters or a tie-breaker suffix)"),
        ("rank", pa.int64(), "position of the file when sorted by (min, max); null without stats"),
        ("overlapping_files", pa.int64(), "other files whose [min, max] intersects this file's"),
        ("overlap_depth", pa.int64(), "most files (this one included) containing any single value of this file's range"),
    )


#: `layout_summary(columns)`: per column, stats coverage, data-skipping eligibility, clustering.
LAYOUT_SUMMARY_SCHEMA = _s(
    ("column", pa.string(), "logical column path (dotted for nested fields)"),
    ("physical_name", pa.string(), "physical path in data files and stats"),
    ("type", pa.string(), "Delta type"),
    ("position", pa.int64(), "0-based leaf position in the schema (what dataSkippingNumIndexedCols counts)"),
    ("is_partition", pa.bool_(), "partition column (pruned exactly, no stats needed)"),
    ("is_clustering", pa.bool_(), "listed as a liquid clustering column"),
    ("eligible_type", pa.bool_(), "the type can carry min/max statistics"),
    ("indexed", pa.bool_(), "writers collect stats for it (dataSkippingNumIndexedCols / dataSkippingStatsColumns)"),
    ("files", pa.int64(), "active files"),
    ("files_with_min_max", pa.int64(), "files with both bounds"),
    ("files_with_null_count", pa.int64(), "files with a null count"),
    ("coverage", pa.float64(), "files_with_min_max / files"),
    ("truncated_files", pa.int64(), "files whose string bounds look truncated"),
    ("min", pa.string(), "smallest min over files (text)"),
    ("max", pa.string(), "largest max over files (text)"),
    ("avg_depth", pa.float64(), "mean overlap_depth over files with stats"),
    ("max_depth", pa.int64(), "largest overlap_depth: worst-case files read by a point query"),
    ("clustering_quality", pa.float64(), "1 - (avg_depth - 1) / (files_with_min_max - 1): 1 = disjoint ranges, 0 = all overlap"),
    ("skipping", pa.string(), "partition | stats | partial | none"),
    ("reason", pa.string(), "why skipping is limited, when it is"),
)

#: `explain(predicate)`: one row per active file: read or skipped, and why.
EXPLAIN_SCHEMA = _s(
    ("path", pa.string(), "data file path"),
    ("partition", pa.string(), "partition key ('' when unpartitioned)"),
    ("size", pa.int64(), "bytes"),
    ("num_records", pa.int64(), "rows (stats)"),
    ("stage", pa.string(), "partition_pruned | stats_pruned | read"),
    ("selected", pa.bool_(), "the scan reads this file"),
    ("reason", pa.string(), "the part of the predicate that excluded the file, or why it must be read"),
    ("missing_stats", pa.bool_(), "the file lacks statistics for a predicate column (cannot be skipped by stats)"),
)

#: `deletion_vectors()`: one row per active file that has a deletion vector.
DV_SCHEMA = _s(
    ("path", pa.string(), "data file path"),
    ("partition", pa.string(), "partition key"),
    ("num_records", pa.int64(), "rows physically in the file"),
    ("cardinality", pa.int64(), "rows deleted by the DV"),
    ("live_rows", pa.int64(), "num_records - cardinality"),
    ("deleted_ratio", pa.float64(), "cardinality / num_records"),
    ("storage", pa.string(), "inline | file (table-relative uuid) | absolute"),
    ("dv_path", pa.string(), "DV file path (null when inline)"),
    ("offset", pa.int32(), "offset of the DV in its file"),
    ("dv_bytes", pa.int32(), "serialized bitmap size (sizeInBytes)"),
    ("dv_id", pa.string(), "deletion vector unique id"),
    ("shared_by", pa.int64(), "data files whose DVs live in the same DV file"),
    ("past_threshold", pa.bool_(), "deleted_ratio >= purge_threshold (OPTIMIZE/REORG PURGE would rewrite it)"),
    ("size", pa.int64(), "bytes of the data file"),
)

#: `dv_files()`: one row per deletion vector file (inline DVs grouped under storage 'inline').
DV_FILES_SCHEMA = _s(
    ("dv_path", pa.string(), "DV file path (null for the inline group)"),
    ("storage", pa.string(), "inline | file | absolute"),
    ("data_files", pa.int64(), "data files with a DV in it"),
    ("cardinality", pa.int64(), "deleted rows it holds"),
    ("dv_bytes", pa.int64(), "sum of sizeInBytes of its DVs"),
    ("file_bytes", pa.int64(), "size of the DV file on storage (check_files=True), else null"),
    ("exists", pa.bool_(), "the DV file exists (check_files=True), else null"),
)

#: `deleted_rows(path)`: deleted row positions of one file.
DELETED_ROWS_SCHEMA = _s(
    ("path", pa.string(), "data file path"),
    ("row_index", pa.int64(), "0-based position of a deleted row in the data file"),
)

#: `log_health()`, `overview()`: one row per metric or check.
METRICS_SCHEMA = _s(
    ("section", pa.string(), "group of the metric (log, checkpoints, files, tombstones, crc, ...)"),
    ("metric", pa.string(), "metric or check name"),
    ("value", pa.string(), "value as text"),
    ("number", pa.float64(), "numeric value when there is one"),
    ("unit", pa.string(), "unit of number (files, bytes, versions, ratio, ms, ...)"),
    ("status", pa.string(), "ok | info | warn | error"),
    ("detail", pa.string(), "explanation and advice"),
)

#: `log_files()`: one row per version with what the log holds for it.
LOG_FILES_SCHEMA = _s(
    ("version", pa.int64(), "version"),
    ("file_time", TS, "modification time of the commit file (or checkpoint)"),
    ("commit", pa.string(), "published | ratified | compacted | missing"),
    ("commit_bytes", pa.int64(), "bytes of the commit file"),
    ("checkpoint_kind", pa.string(), "classic | multipart | v2-json | v2-parquet (null: none)"),
    ("checkpoint_bytes", pa.int64(), "bytes of the checkpoint (all parts; sidecars not included)"),
    ("checkpoint_parts", pa.int64(), "part files of the checkpoint"),
    ("has_crc", pa.bool_(), "a .crc file exists"),
    ("crc_bytes", pa.int64(), "bytes of the .crc file"),
    ("commits_since_checkpoint", pa.int64(), "commits a reader replays after the newest checkpoint <= version"),
    ("replay_json_bytes", pa.int64(), "bytes of JSON commits a reader reads to build this version"),
)

#: `reconstructable_versions()`: one row per version the log knows about.
VERSIONS_SCHEMA = _s(
    ("version", pa.int64(), "version"),
    ("file_time", TS, "modification time of its commit file (or checkpoint)"),
    ("commit_present", pa.bool_(), "its commit file is in the log"),
    ("checkpoint", pa.bool_(), "a complete checkpoint exists at this version"),
    ("log_reconstructable", pa.bool_(), "a checkpoint <= version and every commit after it are present"),
    ("files", pa.int64(), "active files at this version (null when not reconstructable)"),
    ("missing_files", pa.int64(), "of those, data files absent from storage (null unless check_data)"),
    ("readable", pa.bool_(), "log reconstructable and (if checked) no data file missing"),
    ("within_log_retention", pa.bool_(), "commit younger than delta.logRetentionDuration"),
    ("readable_after_vacuum", pa.bool_(), "still readable after vacuum_preview(retention) (null unless asked)"),
    ("reason", pa.string(), "why it is not readable"),
)

#: `vacuum_preview(retention)`: one row per file VACUUM would delete.
VACUUM_SCHEMA = _s(
    ("path", pa.string(), "table-relative path of the file"),
    ("size", pa.int64(), "bytes freed"),
    ("reason", pa.string(), "expired_tombstone | unreferenced"),
    ("deletion_time", TS, "remove.deletionTimestamp (tombstones)"),
    ("modification_time", TS, "file modification time on storage"),
    ("first_version_needing", pa.int64(), "oldest retained version whose state includes the file (null: none)"),
    ("last_version_needing", pa.int64(), "newest version whose state includes the file (null: none)"),
)

#: `features()`: one row per feature the protocol lists or implies, or that this library knows.
FEATURES_SCHEMA = _s(
    ("feature", pa.string(), "feature name as in the protocol"),
    ("kind", pa.string(), "reader-writer | writer | unknown"),
    ("supported", pa.bool_(), "listed in (or implied by) the table's protocol"),
    ("in_reader_features", pa.bool_(), "needed by readers"),
    ("in_writer_features", pa.bool_(), "needed by writers"),
    ("legacy", pa.bool_(), "implied by legacy protocol versions (reader < 3 / writer < 7)"),
    ("active", pa.bool_(), "actually in effect (property set, schema uses it, domain present, ...)"),
    ("activation", pa.string(), "what makes it active (or why not)"),
    ("property", pa.string(), "table property controlling it"),
    ("property_value", pa.string(), "its value in this table"),
    ("known", pa.bool_(), "deltaexplore knows the feature"),
    ("deltaexplore_read", pa.bool_(), "deltaexplore reads tables with it"),
    ("deltaexplore_write", pa.bool_(), "deltaexplore writes tables with it"),
    ("description", pa.string(), "what it is"),
)

#: declared client capabilities (`clients.CLIENTS`).
CLIENTS_SCHEMA = _s(
    ("client", pa.string(), "client family"),
    ("version", pa.string(), "client version label"),
    ("max_reader_version", pa.int32(), "highest reader protocol version"),
    ("max_writer_version", pa.int32(), "highest writer protocol version"),
    ("writes", pa.bool_(), "the client writes Delta tables at all"),
    ("confidence", pa.string(), "verified (tested here) | documented | approximate"),
    ("notes", pa.string(), "limits and sources"),
)

#: declared client feature support (`clients.CLIENT_FEATURES`), long format.
CLIENT_FEATURES_SCHEMA = _s(
    ("client", pa.string(), "client family"),
    ("version", pa.string(), "client version label"),
    ("feature", pa.string(), "feature name"),
    ("read", pa.bool_(), "reads tables with the feature"),
    ("write", pa.bool_(), "writes tables with the feature"),
)

#: `compatibility()`: which clients can read and write this table, and why not.
COMPATIBILITY_SCHEMA = _s(
    ("client", pa.string(), "client family"),
    ("version", pa.string(), "client version label"),
    ("can_read", pa.bool_(), "the client can read the table"),
    ("can_write", pa.bool_(), "the client can write the table"),
    ("read_blockers", pa.list_(pa.string()), "features or versions that stop it reading"),
    ("write_blockers", pa.list_(pa.string()), "features or versions that stop it writing"),
    ("confidence", pa.string(), "verified | documented | approximate"),
    ("notes", pa.string(), "client limits"),
)

#: `column_mapping()`: every field (nested included): logical <-> physical <-> field id.
COLUMN_MAPPING_SCHEMA = _s(
    ("column", pa.string(), "logical path (dotted; array elements as 'element', map parts as 'key'/'value')"),
    ("physical_path", pa.string(), "physical path used in data files and stats"),
    ("field_id", pa.int64(), "delta.columnMapping.id (parquet field id in id mode)"),
    ("type", pa.string(), "Delta type"),
    ("nullable", pa.bool_(), "nullable"),
    ("depth", pa.int32(), "0 for top-level columns"),
    ("is_partition", pa.bool_(), "partition column"),
    ("type_changes", pa.string(), "delta.typeChanges history (JSON) for widened columns"),
    ("metadata", pa.string(), "other field metadata (JSON): comments, generation expressions, identity, defaults"),
)

#: `row_tracking()`: one row per active file.
ROW_TRACKING_SCHEMA = _s(
    ("path", pa.string(), "data file path"),
    ("num_records", pa.int64(), "rows in the file"),
    ("base_row_id", pa.int64(), "first row id of the file (fresh rows)"),
    ("last_row_id", pa.int64(), "base_row_id + num_records - 1"),
    ("default_row_commit_version", pa.int64(), "commit version of rows without a materialized one"),
    ("overlaps", pa.bool_(), "its row id range overlaps another file's (a protocol violation)"),
    ("above_high_water_mark", pa.bool_(), "last_row_id > rowIdHighWaterMark (a protocol violation)"),
)

#: `domain_metadata()`: one row per domain.
DOMAINS_SCHEMA = _s(
    ("domain", pa.string(), "domain name"),
    ("configuration", pa.string(), "configuration (JSON text)"),
    ("system", pa.bool_(), "reserved 'delta.*' domain"),
    ("meaning", pa.string(), "what the domain is for, when known"),
)

#: `clustering()`: one row per liquid clustering column.
CLUSTERING_SCHEMA = _s(
    ("position", pa.int32(), "order of the clustering column"),
    ("column", pa.string(), "logical column path"),
    ("physical_path", pa.string(), "physical path as stored in delta.clustering"),
    ("type", pa.string(), "Delta type"),
    ("coverage", pa.float64(), "share of files with min/max for it"),
    ("avg_depth", pa.float64(), "mean overlap depth"),
    ("max_depth", pa.int64(), "worst-case files per point query"),
    ("clustering_quality", pa.float64(), "1 = disjoint file ranges, 0 = every file overlaps every other"),
)

#: `transactions()`: one row per application transaction id (txn action).
TXNS_SCHEMA = _s(
    ("app_id", pa.string(), "application id"),
    ("version", pa.int64(), "latest version the application committed"),
    ("last_updated", TS, "txn.lastUpdated"),
    ("expired", pa.bool_(), "older than delta.setTransactionRetentionDuration"),
)

#: `catalog_status()`: one row per version of a (possibly) catalog-managed table.
CATALOG_SCHEMA = _s(
    ("version", pa.int64(), "version"),
    ("published", pa.bool_(), "the commit is published in _delta_log/"),
    ("ratified", pa.bool_(), "the catalog ratified it (null: no catalog client to ask)"),
    ("staged_files", pa.int64(), "files in _delta_log/_staged_commits/ for this version"),
    ("status", pa.string(), "published | ratified-unpublished | staged-unratified | staged (catalog unknown)"),
    ("path", pa.string(), "commit file (published, else the ratified staged file)"),
)

#: name -> schema of every fixed-schema inspection function
SCHEMAS: dict[str, pa.Schema] = {
    "history": HISTORY_SCHEMA,
    "commits": COMMITS_SCHEMA,
    "diff": DIFF_SCHEMA,
    "diff_files": DIFF_FILES_SCHEMA,
    "files": FILES_SCHEMA,
    "partitions": PARTITIONS_SCHEMA,
    "layout_summary": LAYOUT_SUMMARY_SCHEMA,
    "explain": EXPLAIN_SCHEMA,
    "deletion_vectors": DV_SCHEMA,
    "dv_files": DV_FILES_SCHEMA,
    "deleted_rows": DELETED_ROWS_SCHEMA,
    "log_health": METRICS_SCHEMA,
    "overview": METRICS_SCHEMA,
    "log_files": LOG_FILES_SCHEMA,
    "reconstructable_versions": VERSIONS_SCHEMA,
    "vacuum_preview": VACUUM_SCHEMA,
    "features": FEATURES_SCHEMA,
    "compatibility": COMPATIBILITY_SCHEMA,
    "column_mapping": COLUMN_MAPPING_SCHEMA,
    "row_tracking": ROW_TRACKING_SCHEMA,
    "domain_metadata": DOMAINS_SCHEMA,
    "clustering": CLUSTERING_SCHEMA,
    "transactions": TXNS_SCHEMA,
    "catalog_status": CATALOG_SCHEMA,
}
