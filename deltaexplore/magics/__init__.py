"""`%load_ext deltaexplore`, then `%delta <subcommand> …`.

One line magic with subcommands (`deltaexplore.magics.commands`), each returning an object.
Defaults are traitlets configurable with `%config DeltaMagics.<name> = …`. Errors from the
library become IPython `UsageError`s: one short line, no traceback.
"""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class
from traitlets import Dict, Int, Unicode

from deltaexplore.errors import DeltaExploreError
from deltaexplore.magics.commands import COMMANDS, Context, run_command
from deltaexplore.widgets.tables import register_table_display

__all__ = ["COMMANDS", "DeltaMagics", "load_ipython_extension"]


@magics_class
class DeltaMagics(Magics):
    """`%delta SUBCOMMAND [TABLE] [options]`: explore Delta tables from a notebook."""

    default_table = Unicode("", help="table used when a command names none (see also `%delta use`)").tag(config=True)
    limit = Int(20, help="rows returned by history and read when no --limit is given").tag(config=True)
    page_size = Int(200, help="rows per page of file lists (explorer and `%delta files`)").tag(config=True)
    storage_options = Dict(help="storage options passed to open_table (credentials, endpoints)").tag(config=True)

    def __init__(self, shell: Any = None, **kwargs: Any) -> None:
        super().__init__(shell=shell, **kwargs)
        self._current = ""

    def context(self) -> Context:
        return Context(
            default_table=self.default_table,
            limit=self.limit,
            page_size=self.page_size,
            storage_options=dict(self.storage_options),
            user_ns=self.shell.user_ns if self.shell is not None else {},
            current=self._current,
        )

    @line_magic
    def delta(self, line: str) -> Any:
        """Explore a Delta table. `%delta help` lists the subcommands."""
        ctx = self.context()
        try:
            result = run_command(ctx, line)
        except DeltaExploreError as exc:
            raise UsageError(str(exc)) from None
        self._current = ctx.current
        return result


def load_ipython_extension(ipython: Any) -> None:
    """Register `%delta` (and `DeltaMagics` for `%config`) and the notebook display of
    deltaexplore's Arrow tables (formatted HTML tables; the values stay Arrow)."""
    ipython.register_magics(DeltaMagics)
    register_table_display(ipython)
