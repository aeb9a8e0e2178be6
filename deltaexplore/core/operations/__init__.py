"""Table operations, and the seam both engines share.

Local (pyarrow) operations — each returns one row of metrics as an Arrow table and has a dry
run: `write_table`, `set_table_properties`, `delete`, `update`, `optimize`,
`merge`, `purge_deletion_vectors`, `vacuum`, `restore`, `checkpoint`, `cleanup_metadata`.

The seam the Spark layer (`deltaexplore.spark`) imports — nothing else of this package: the
engine-neutral planners (`plan_delete`, `deletion_vector_update`, `plan_optimize`,
`plan_vacuum`, `restore_actions`, `resolve_assignments`, `plan_merge`, `write_metadata`, `start_write`, ...)
decide which files to rewrite or remove and which actions to commit; `OperationRun`,
`open_for_write`, `discard` and the metrics schemas (`METRICS`, `engine.py`) are the commit
skeleton and the results both engines return, with the same columns.
"""

from __future__ import annotations

from deltaexplore.core.operations.delete import (
    DeletePlan,
    DeletionVectorUpdate,
    delete,
    deletion_vector_actions,
    deletion_vector_update,
    plan_delete,
    predicate_text,
    write_deletion_vector_file,
)
from deltaexplore.core.operations.engine import (
    CHECKPOINT_METRICS,
    DELETE_METRICS,
    MERGE_METRICS,
    METRICS,
    OPTIMIZE_METRICS,
    RESTORE_METRICS,
    SET_PROPERTIES_METRICS,
    UPDATE_METRICS,
    VACUUM_METRICS,
    WRITE_METRICS,
    OperationRun,
    discard,
    metrics_table,
    open_for_write,
    total_bytes,
)
from deltaexplore.core.operations.merge import merge, source_key_stats, source_table
from deltaexplore.core.operations.merge_clauses import (
    MergeClause,
    ResolvedSql,
    when_matched_delete,
    when_matched_update,
    when_matched_update_all,
    when_not_matched_by_source_delete,
    when_not_matched_by_source_update,
    when_not_matched_insert,
    when_not_matched_insert_all,
)
from deltaexplore.core.operations.merge_plan import (
    KeyStats,
    MergeCondition,
    MergeKey,
    MergePlan,
    MergeScan,
    ResolvedClause,
    complete_metrics,
    deletion_vector_metrics,
    plan_merge,
)
from deltaexplore.core.operations.optimize import OptimizePlan, optimize, plan_optimize, purge_deletion_vectors, zorder_indices
from deltaexplore.core.operations.restore import RestorePlan, checkpoint, cleanup_metadata, restore, restore_actions
from deltaexplore.core.operations.rewrite import refuse_copy_from_outside
from deltaexplore.core.operations.update import resolve_assignments, update
from deltaexplore.core.operations.vacuum import VacuumPlan, plan_vacuum, vacuum
from deltaexplore.core.operations.write import (
    check_write_modes,
    new_table_metadata,
    set_table_properties,
    start_write,
    write_metadata,
    write_table,
)

__all__ = [
    "CHECKPOINT_METRICS",
    "DELETE_METRICS",
    "MERGE_METRICS",
    "METRICS",
    "OPTIMIZE_METRICS",
    "RESTORE_METRICS",
    "SET_PROPERTIES_METRICS",
    "UPDATE_METRICS",
    "VACUUM_METRICS",
    "WRITE_METRICS",
    "DeletePlan",
    "DeletionVectorUpdate",
    "KeyStats",
    "MergeClause",
    "MergeCondition",
    "MergeKey",
    "MergePlan",
    "MergeScan",
    "OperationRun",
    "OptimizePlan",
    "ResolvedClause",
    "ResolvedSql",
    "RestorePlan",
    "VacuumPlan",
    "check_write_modes",
    "checkpoint",
    "cleanup_metadata",
    "complete_metrics",
    "delete",
    "deletion_vector_actions",
    "deletion_vector_metrics",
    "deletion_vector_update",
    "discard",
    "merge",
    "metrics_table",
    "new_table_metadata",
    "open_for_write",
    "optimize",
    "plan_delete",
    "plan_merge",
    "plan_optimize",
    "plan_vacuum",
    "predicate_text",
    "purge_deletion_vectors",
    "refuse_copy_from_outside",
    "resolve_assignments",
    "restore",
    "restore_actions",
    "set_table_properties",
    "source_key_stats",
    "source_table",
    "start_write",
    "total_bytes",
    "update",
    "vacuum",
    "when_matched_delete",
    "when_matched_update",
    "when_matched_update_all",
    "when_not_matched_by_source_delete",
    "when_not_matched_by_source_update",
    "when_not_matched_insert",
    "when_not_matched_insert_all",
    "write_deletion_vector_file",
    "write_metadata",
    "write_table",
    "zorder_indices",
]
