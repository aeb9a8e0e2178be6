"""Local (pyarrow) table operations built on the writer: each returns one row of metrics as an
Arrow table and has a dry run.

The engine-neutral planning functions (`plan_delete`, `deletion_vector_update`,
`plan_optimize`, `plan_vacuum`, `restore_actions`) are what the Spark layer reuses: they decide
which files to rewrite or remove and which actions to commit; the engine only does the data work.
"""

from __future__ import annotations

from deltaexplore.core.operations.delete import (
    DeletePlan,
    DeletionVectorUpdate,
    delete,
    deletion_vector_update,
    plan_delete,
    write_deletion_vector_file,
)
from deltaexplore.core.operations.optimize import OptimizePlan, optimize, plan_optimize, purge_deletion_vectors, zorder_indices
from deltaexplore.core.operations.restore import RestorePlan, checkpoint, cleanup_metadata, restore, restore_actions
from deltaexplore.core.operations.update import update
from deltaexplore.core.operations.vacuum import VacuumPlan, plan_vacuum, vacuum
from deltaexplore.core.operations.write import new_table_metadata, set_table_properties, write_table

__all__ = [
    "DeletePlan",
    "DeletionVectorUpdate",
    "OptimizePlan",
    "RestorePlan",
    "VacuumPlan",
    "checkpoint",
    "cleanup_metadata",
    "delete",
    "deletion_vector_update",
    "new_table_metadata",
    "optimize",
    "plan_delete",
    "plan_optimize",
    "plan_vacuum",
    "purge_deletion_vectors",
    "restore",
    "restore_actions",
    "set_table_properties",
    "update",
    "vacuum",
    "write_deletion_vector_file",
    "write_table",
    "zorder_indices",
]
