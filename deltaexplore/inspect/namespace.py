"""`table.inspect` / `snap.inspect`: a property namespace over the inspection functions.

On a `Snapshot` every method inspects that version (time-range functions end there); on a
`Table` they inspect the latest version (cached while the table does not move) and accept
`version=` where it makes sense.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

from deltaexplore.core.snapshot import Snapshot
from deltaexplore.inspect.advise import advise
from deltaexplore.inspect.catalog import catalog_status
from deltaexplore.inspect.columns import clustering, column_mapping, domain_metadata, row_tracking, transactions
from deltaexplore.inspect.commit_infos import commit_infos
from deltaexplore.inspect.commits import commits
from deltaexplore.inspect.deletion_vectors import deleted_rows, deletion_vectors, dv_files
from deltaexplore.inspect.diff import diff, diff_files
from deltaexplore.inspect.explain import explain
from deltaexplore.inspect.expressions import at_versions
from deltaexplore.inspect.features import compatibility, features
from deltaexplore.inspect.file_sizes import file_sizes
from deltaexplore.inspect.files import files, partitions
from deltaexplore.inspect.layout import layout, layout_summary
from deltaexplore.inspect.layout_density import layout_density
from deltaexplore.inspect.log_health import log_files, log_health
from deltaexplore.inspect.overview import overview
from deltaexplore.inspect.retention import reconstructable_versions, vacuum_preview
from deltaexplore.inspect.row_diff import diff_rows
from deltaexplore.inspect.schemas import annotate_core
from deltaexplore.inspect.snapshots import table_of
from deltaexplore.inspect.timeline import timeline

if TYPE_CHECKING:
    from deltaexplore.core.table import Table

__all__ = ["InspectNamespace"]


class InspectNamespace:
    """Inspection tables of a table or snapshot; every method returns a `pyarrow.Table`."""

    def __init__(self, obj: Table | Snapshot) -> None:
        self._obj = obj

    def __repr__(self) -> str:
        names = ", ".join(n for n in dir(self) if not n.startswith("_"))
        return f"<inspect {self._obj!r}: {names}>"

    @property
    def _snapshot_version(self) -> int | None:
        return self._obj.version if isinstance(self._obj, Snapshot) else None

    @property
    def _table(self) -> Table:
        return table_of(self._obj)

    # -- how it got there ------------------------------------------------------------------
    def history(self, limit: int | None = None, *, start_version: int | None = None) -> pa.Table:
        """One row per commit, newest first (`schemas.HISTORY_SCHEMA`: the core's with display
        units), up to this snapshot."""
        return annotate_core(
            self._table.history(limit, start_version=start_version, end_version=self._snapshot_version), "history"
        )

    def commit_infos(self, start: int | None = None, end: int | None = None) -> pa.Table:
        """Provenance of every commit from its commitInfo alone (see `inspect.commit_infos.commit_infos`)."""
        return commit_infos(self._obj, start, end)

    def commits(self, start: int | None = None, end: int | None = None, *, checkpoints: bool = False) -> pa.Table:
        """Every action of commits start..end (see `inspect.commits.commits`)."""
        return commits(self._obj, start, end, checkpoints=checkpoints)

    def diff(self, v1: int | None = None, v2: int | None = None) -> pa.Table:
        """Changes from v1 to v2 (default: previous version to this one) (see `inspect.diff.diff`)."""
        return diff(self._obj, v1, v2)

    def diff_files(self, v1: int | None = None, v2: int | None = None) -> pa.Table:
        """Per-file changes from v1 to v2 (see `inspect.diff.diff_files`)."""
        return diff_files(self._obj, v1, v2)

    def diff_rows(
        self,
        v1: int | None = None,
        v2: int | None = None,
        *,
        key: str | list[str] | None = None,
        columns: list[str] | None = None,
    ) -> pa.Table:
        """The rows that truly differ from v1 to v2, from the files that differ (see `inspect.row_diff.diff_rows`)."""
        return diff_rows(self._obj, v1, v2, key=key, columns=columns)

    # -- what is in it -----------------------------------------------------------------------
    def overview(self, *, version: int | None = None, small_file_bytes: int | None = None) -> pa.Table:
        """Key facts of the version (see `inspect.overview.overview`)."""
        return overview(self._obj, version=version, small_file_bytes=small_file_bytes)

    def files(self, *, version: int | None = None, small_file_bytes: int | None = None) -> pa.Table:
        """One row per active file (see `inspect.files.files`)."""
        return files(self._obj, version=version, small_file_bytes=small_file_bytes)

    def partitions(self, *, version: int | None = None, small_file_bytes: int | None = None) -> pa.Table:
        """One row per partition (see `inspect.files.partitions`)."""
        return partitions(self._obj, version=version, small_file_bytes=small_file_bytes)

    def file_sizes(self, *, version: int | None = None, small_file_bytes: int | None = None) -> pa.Table:
        """Files per power-of-two size bin (see `inspect.file_sizes.file_sizes`)."""
        return file_sizes(self._obj, version=version, small_file_bytes=small_file_bytes)

    def column_mapping(self, *, version: int | None = None) -> pa.Table:
        """Logical <-> physical <-> field id of every field (see `inspect.columns.column_mapping`)."""
        return column_mapping(self._obj, version=version)

    def row_tracking(self, *, version: int | None = None) -> pa.Table:
        """Row id ranges per file (see `inspect.columns.row_tracking`)."""
        return row_tracking(self._obj, version=version)

    def clustering(self, *, version: int | None = None) -> pa.Table:
        """Liquid clustering columns and their quality (see `inspect.columns.clustering`)."""
        return clustering(self._obj, version=version)

    def domain_metadata(self, *, version: int | None = None) -> pa.Table:
        """Domains (see `inspect.columns.domain_metadata`)."""
        return domain_metadata(self._obj, version=version)

    def transactions(self, *, version: int | None = None) -> pa.Table:
        """Application transaction ids (see `inspect.columns.transactions`)."""
        return transactions(self._obj, version=version)

    # -- why it is slow ------------------------------------------------------------------------
    def layout(self, column: str, *, version: int | None = None) -> pa.Table:
        """Per-file ranges of a column and their overlap (see `inspect.layout.layout`)."""
        return layout(self._obj, column, version=version)

    def layout_density(self, column: str, *, bins: int = 100, version: int | None = None) -> pa.Table:
        """Files per range of a column's values (see `inspect.layout_density.layout_density`)."""
        return layout_density(self._obj, column, bins=bins, version=version)

    def layout_summary(self, columns: list[str] | None = None, *, version: int | None = None) -> pa.Table:
        """Per column: stats coverage, skipping, clustering (see `inspect.layout.layout_summary`)."""
        return layout_summary(self._obj, columns, version=version)

    def explain(self, predicate: Any, *, version: int | None = None) -> pa.Table:
        """Files a query reads and why others are skipped (see `inspect.explain.explain`)."""
        return explain(self._obj, predicate, version=version)

    def deletion_vectors(self, *, version: int | None = None, purge_threshold: float = 0.05) -> pa.Table:
        """Files with deletion vectors (see `inspect.deletion_vectors.deletion_vectors`)."""
        return deletion_vectors(self._obj, version=version, purge_threshold=purge_threshold)

    def dv_files(self, *, version: int | None = None, check_files: bool = False) -> pa.Table:
        """Deletion vector files (see `inspect.deletion_vectors.dv_files`)."""
        return dv_files(self._obj, version=version, check_files=check_files)

    def deleted_rows(self, path: str, *, version: int | None = None) -> pa.Table:
        """Deleted row positions of one file (see `inspect.deletion_vectors.deleted_rows`)."""
        return deleted_rows(self._obj, path, version=version)

    # -- the log and maintenance ---------------------------------------------------------------
    def log_health(self, *, version: int | None = None) -> pa.Table:
        """Checks and metrics of the log (see `inspect.log_health.log_health`)."""
        return log_health(self._obj, version=version)

    def timeline(
        self,
        start: int | None = None,
        end: int | None = None,
        *,
        column: str | None = None,
        metrics: list[str] | tuple[str, ...] | None = None,
        small_file_bytes: int | None = None,
    ) -> pa.Table:
        """Per version: files, bytes, rows, small files, DVs, tombstones, partitions, `column`'s
        overlap depth, schema and protocol changes, from one replay (see
        `inspect.timeline.timeline`); up to this snapshot."""
        return timeline(self._obj, start, end, column=column, metrics=metrics, small_file_bytes=small_file_bytes)

    def at_versions(self, expression: str, versions: list[int] | None = None, *, engine: str = "local") -> pa.Table:
        """An aggregate (`"count(*) where amount > 10"`, `"sum(amount)"`) at each of `versions`
        (see `inspect.expressions.at_versions`; on Spark: `deltaexplore.spark.at_versions`)."""
        return at_versions(self._obj, expression, versions, engine=engine)

    def log_files(self) -> pa.Table:
        """Per version: what the log holds (see `inspect.log_health.log_files`)."""
        return log_files(self._obj)

    def reconstructable_versions(self, *, check_data: bool = True, vacuum_retention_hours: float | None = None) -> pa.Table:
        """Versions that can still be read (see `inspect.retention.reconstructable_versions`)."""
        return reconstructable_versions(self._obj, check_data=check_data, vacuum_retention_hours=vacuum_retention_hours)

    def vacuum_preview(self, retention_hours: float | None = None) -> pa.Table:
        """What VACUUM would delete (see `inspect.retention.vacuum_preview`)."""
        return vacuum_preview(self._obj, retention_hours=retention_hours)

    def features(self, *, version: int | None = None, all_known: bool = False, all_versions: bool = False) -> pa.Table:
        """Protocol features, supported and active; with `all_versions` the protocol of every
        version (see `inspect.features.features`)."""
        return features(self._obj, version=version, all_known=all_known, all_versions=all_versions)

    def compatibility(self, *, version: int | None = None) -> pa.Table:
        """Which clients can read/write the table (see `inspect.features.compatibility`)."""
        return compatibility(self._obj, version=version)

    def advise(
        self,
        *,
        columns: list[str] | None = None,
        zorder_by: list[str] | None = None,
        target_size: int | None = None,
        check: bool = False,
    ) -> pa.Table:
        """Ranked maintenance recommendations and their predicted effect (see `inspect.advise.advise`)."""
        return advise(self._obj, columns=columns, zorder_by=zorder_by, target_size=target_size, check=check)

    def catalog_status(self) -> pa.Table:
        """Published vs ratified commits (see `inspect.catalog.catalog_status`)."""
        return catalog_status(self._obj)
