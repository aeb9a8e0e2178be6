"""The `%delta` subcommands: one small function and one argparse parser each.

Every command takes a `Context` (the magics' configuration and the user namespace) and its
argument list, and returns an object: an Arrow table, a `Report`, a chart or a widget. Errors are
`DeltaExploreError`s; `DeltaMagics` turns them into short `UsageError`s.

Commands backed by a layer that is not installed or not built yet still exist and say so.
"""

from __future__ import annotations

import argparse
import importlib
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from deltaexplore.errors import DeltaExploreError
from deltaexplore.magics.report import Report

__all__ = ["COMMANDS", "CommandError", "Context", "run_command"]


class CommandError(DeltaExploreError):
    """A `%delta` command line is wrong (unknown subcommand, bad option, no table given)."""


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of printing and exiting."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise CommandError(f"%delta {self.prog.split()[-1]}: {message}\nusage: {self.format_usage().strip()[7:]}")

    def exit(self, status: int = 0, message: str | None = None) -> None:  # type: ignore[override]
        raise CommandError(message or self.format_help())


@dataclass
class Context:
    """What a command needs from the magics: defaults and the user's namespace."""

    default_table: str = ""
    limit: int = 20
    page_size: int = 200
    storage_options: dict[str, Any] = field(default_factory=dict)
    user_ns: dict[str, Any] = field(default_factory=dict)
    #: set by `%delta use`
    current: str = ""


Command = Callable[[Context, list[str]], Any]
COMMANDS: dict[str, tuple[Command, str]] = {}


def command(name: str, help_text: str) -> Callable[[Command], Command]:
    def register(fn: Command) -> Command:
        COMMANDS[name] = (fn, help_text)
        return fn

    return register


def parser(name: str, description: str, *, table: bool = True, version: bool = True) -> _Parser:
    p = _Parser(prog=f"%delta {name}", description=description, add_help=True)
    if table:
        p.add_argument(
            "table",
            nargs="?",
            help="table path/URI, or a variable holding a Table (default: %%delta use / DeltaMagics.default_table)",
        )
    if version:
        p.add_argument("-v", "--version", type=int, default=None, help="version to look at (default: latest)")
    return p


def open_table(ctx: Context, ref: str | None) -> Any:
    """The table named by `ref`: a variable holding a `Table`, else a path/URI; else the default."""
    from deltaexplore.core.table import Table, open_table

    ref = ref or ctx.current or ctx.default_table
    if not ref:
        raise CommandError(
            "no table given: pass a path or URI, run `%delta use PATH`, or set `%config DeltaMagics.default_table`"
        )
    value = ctx.user_ns.get(ref) if ref.isidentifier() else None
    if isinstance(value, Table):
        return value
    if isinstance(value, str):
        ref = value
    return open_table(ref, ctx.storage_options or None)


def _inspect(snap: Any, name: str) -> Callable[..., Any] | None:
    ns = getattr(type(snap), "inspect", None)
    return getattr(snap.inspect, name, None) if ns is not None else None


def _data(ctx: Context, args: argparse.Namespace) -> Any:
    from deltaexplore.widgets.explorer_data import ExplorerData

    return ExplorerData(open_table(ctx, args.table), args.version)


def _viz(name: str) -> Callable[..., Any]:
    try:
        mod = importlib.import_module("deltaexplore.viz")
    except ImportError as exc:
        raise CommandError(
            f"--chart needs deltaexplore.viz, which cannot be imported here ({exc}): pip install 'deltaexplore[viz]'"
        ) from exc
    fn = getattr(mod, name, None)
    if fn is None:
        raise CommandError(f"--chart: deltaexplore.viz has no {name}() yet")
    return fn


# -- commands --------------------------------------------------------------------------------
@command("use", "set the table later commands use by default")
def cmd_use(ctx: Context, argv: list[str]) -> Any:
    p = parser("use", "Set the default table for later %delta commands.", version=False)
    args = p.parse_args(argv)
    table = open_table(ctx, args.table)
    ctx.current = args.table or table.uri
    return table


@command("explore", "the explorer widget (version slider, tabs, maintenance)")
def cmd_explore(ctx: Context, argv: list[str]) -> Any:
    p = parser("explore", "Open the explorer widget.")
    p.add_argument("--tab", default="overview", help="tab to open on")
    args = p.parse_args(argv)
    from deltaexplore.widgets import explore

    return explore(open_table(ctx, args.table), args.version, page_size=ctx.page_size, tab=args.tab)


@command("history", "commits, newest first")
def cmd_history(ctx: Context, argv: list[str]) -> Any:
    p = parser("history", "One row per commit, newest first.", version=False)
    p.add_argument("-n", "--limit", type=int, default=None, help="newest N commits (default: DeltaMagics.limit)")
    p.add_argument("--all", action="store_true", help="every retained commit")
    p.add_argument("--chart", action="store_true", help="a chart instead of the table")
    args = p.parse_args(argv)
    table = open_table(ctx, args.table)
    h = table.history(limit=None if args.all else (args.limit or ctx.limit))
    if args.chart:
        return _viz("history_chart")(h)
    return h


@command("versions", "versions that can be read, and the latest")
def cmd_versions(ctx: Context, argv: list[str]) -> Any:
    p = parser("versions", "The range of versions that can be time-travelled to.", version=False)
    args = p.parse_args(argv)
    data = _data(ctx, argparse.Namespace(table=args.table, version=None))
    fn = _inspect(data.snap, "reconstructable_versions")
    if fn is not None:
        return fn()
    lo, hi = data.version_range()
    return Report(f"versions of {data.table.uri}", {"earliest_readable": lo, "latest": hi})


@command("files", "active files (one page), or per-partition aggregates with --partitions")
def cmd_files(ctx: Context, argv: list[str]) -> Any:
    p = parser("files", "The active files at a version.")
    p.add_argument("--partitions", action="store_true", help="per-partition files, bytes, rows, small files")
    p.add_argument("--sort", default="size", help="path, size, num_records, modification_time, partition, deleted_rows")
    p.add_argument("--asc", action="store_true", help="ascending (default: descending)")
    p.add_argument("--search", default="", help="only paths containing this text")
    p.add_argument("-n", "--limit", type=int, default=None)
    p.add_argument("--offset", type=int, default=0)
    args = p.parse_args(argv)
    data = _data(ctx, args)
    if args.partitions:
        summary, rows = data.partitions()
        return Report(f"partitions of {data.table.uri} at version {data.version}", summary, rows)
    _, page = data.files_page(
        args.offset, args.limit or ctx.page_size, sort=args.sort, descending=not args.asc, search=args.search
    )
    return page


@command("layout", "min/max ranges per file, overlap depth and stats coverage of a column")
def cmd_layout(ctx: Context, argv: list[str]) -> Any:
    p = parser("layout", "How a column's values are spread over files (data skipping).")
    p.add_argument("-c", "--column", required=True)
    args = p.parse_args(argv)
    data = _data(ctx, args)
    fn = _inspect(data.snap, "layout")
    if fn is not None:
        return fn(args.column)
    summary, rows = data.layout(args.column)
    return Report(f"layout of {args.column} at version {data.version}", summary, rows)


@command("explain", "which files a query with a predicate reads, and why the others are skipped")
def cmd_explain(ctx: Context, argv: list[str]) -> Any:
    p = parser("explain", "Files a query reads: partition pruning, then statistics.")
    p.add_argument("-w", "--where", required=True, help="predicate, e.g. \"date = '2024-01-01' and id > 5\"")
    args = p.parse_args(argv)
    snap = open_table(ctx, args.table).snapshot(args.version)
    fn = _inspect(snap, "explain")
    if fn is not None:
        return fn(args.where)
    plan = snap.scan(where=args.where)
    files = plan.files
    rows = pa.table({"path": files.column("path"), "size": files.column("size")}) if files.num_rows else None
    return Report(f"explain {args.where}", dict(plan.explain()), rows)


@command("dv", "deletion vectors: per-file deleted rows, ratio, storage")
def cmd_dv(ctx: Context, argv: list[str]) -> Any:
    p = parser("dv", "Deletion vectors at a version.")
    args = p.parse_args(argv)
    data = _data(ctx, args)
    fn = _inspect(data.snap, "deletion_vectors")
    if fn is not None:
        return fn()
    summary, rows = data.deletion_vectors()
    return Report(f"deletion vectors at version {data.version}", summary, rows)


@command("diff", "what changed between two versions (files, bytes, rows, schema, properties, protocol)")
def cmd_diff(ctx: Context, argv: list[str]) -> Any:
    p = parser("diff", "Compare two versions from metadata only.", version=False)
    p.add_argument("v1", type=int)
    p.add_argument("v2", type=int, nargs="?", help="default: latest")
    args = p.parse_args(argv)
    data = _data(ctx, argparse.Namespace(table=args.table, version=None))
    v2 = data.version if args.v2 is None else args.v2
    fn = _inspect(data.snap, "diff")
    if fn is not None:
        return fn(args.v1, v2)
    summary, rows = data.diff(args.v1, v2)
    return Report(f"diff {args.v1} -> {v2}", summary, rows)


@command("health", "log health: checkpoints, commits since, log vs data bytes, tombstones")
def cmd_health(ctx: Context, argv: list[str]) -> Any:
    p = parser("health", "Log health at a version.")
    args = p.parse_args(argv)
    data = _data(ctx, args)
    fn = _inspect(data.snap, "log_health")
    if fn is not None:
        return fn()
    return Report(f"log health at version {data.version}", data.log_health())


@command("features", "protocol features: active, supported by this library")
def cmd_features(ctx: Context, argv: list[str]) -> Any:
    p = parser("features", "Table features and their support.")
    args = p.parse_args(argv)
    snap = open_table(ctx, args.table).snapshot(args.version)
    fn = _inspect(snap, "features")
    if fn is not None:
        return fn()
    from deltaexplore.core.features import feature_table, features_of

    readers, writers = features_of(snap.protocol)
    ft = feature_table()
    active = [n in readers or n in writers for n in ft.column("name").to_pylist()]
    return ft.append_column("active", pa.array(active)).filter(pa.array(active))


@command("schema", "columns and types")
def cmd_schema(ctx: Context, argv: list[str]) -> Any:
    p = parser("schema", "The table schema at a version (Arrow).")
    args = p.parse_args(argv)
    return open_table(ctx, args.table).snapshot(args.version).arrow_schema


@command("read", "rows (deletion vectors applied), optionally filtered")
def cmd_read(ctx: Context, argv: list[str]) -> Any:
    p = parser("read", "Read rows into an Arrow table.")
    p.add_argument("-c", "--columns", default=None, help="comma-separated columns")
    p.add_argument("-w", "--where", default=None)
    p.add_argument("-n", "--limit", type=int, default=None, help="first N rows (default: DeltaMagics.limit; 0 = all)")
    p.add_argument("--spark", action="store_true", help="read with Spark (deltaexplore.spark)")
    args = p.parse_args(argv)
    table = open_table(ctx, args.table)
    cols = [c.strip() for c in args.columns.split(",")] if args.columns else None
    if args.spark:
        try:
            spark = importlib.import_module("deltaexplore.spark")
        except ImportError as exc:
            raise CommandError(
                f"--spark needs deltaexplore.spark and pyspark: pip install 'deltaexplore[spark]' ({exc})"
            ) from exc
        reader = getattr(spark, "read", None)
        if reader is None:
            raise CommandError("--spark: deltaexplore.spark has no read() yet")
        return reader(table, version=args.version, columns=cols, where=args.where)
    rows = table.snapshot(args.version).to_arrow(cols, where=args.where)
    limit = ctx.limit if args.limit is None else args.limit
    return rows.slice(0, limit) if limit else rows


def _maintenance(name: str, description: str, extra: Callable[[_Parser], None]) -> Command:
    def cmd(ctx: Context, argv: list[str]) -> Any:
        from deltaexplore.widgets import maintenance
        from deltaexplore.widgets.explorer_data import ExplorerData

        p = parser(name, description, version=False)
        mode = p.add_mutually_exclusive_group()
        mode.add_argument("--dry-run", action="store_true", default=True, help="preview only (the default)")
        mode.add_argument("--run", action="store_true", help="really run it")
        extra(p)
        args = p.parse_args(argv)
        table = open_table(ctx, args.table)
        params = {k: v for k, v in vars(args).items() if k not in ("table", "dry_run", "run") and v is not None}
        if not args.run:
            return Report(f"{name} (dry run)", maintenance.preview(name, ExplorerData(table), **params))
        return Report(f"{name}", maintenance.run(name, table, lambda f, m: None, **params))

    return cmd


COMMANDS["vacuum"] = (
    _maintenance(
        "vacuum",
        "Delete files no retained version needs (dry run unless --run).",
        lambda p: p.add_argument("--retention-hours", type=float, default=None),
    ),
    "files VACUUM would delete and bytes freed (--dry-run, the default), or --run it",
)
COMMANDS["optimize"] = (
    _maintenance(
        "optimize",
        "Compact small files (dry run unless --run).",
        lambda p: p.add_argument("--target-bytes", type=int, default=None),
    ),
    "small files OPTIMIZE would compact (--dry-run, the default), or --run it",
)
COMMANDS["checkpoint"] = (
    _maintenance("checkpoint", "Write a checkpoint (dry run unless --run).", lambda p: None),
    "what a checkpoint would cover (--dry-run, the default), or --run it",
)


@command("help", "this list")
def cmd_help(ctx: Context, argv: list[str]) -> Any:
    width = max(len(n) for n in COMMANDS)
    lines = ["%delta SUBCOMMAND [options]   (%delta SUBCOMMAND --help for options)"]
    lines += [f"  {n.ljust(width)}  {h}" for n, (_, h) in sorted(COMMANDS.items())]
    return _Text("\n".join(lines))


class _Text(str):
    def __repr__(self) -> str:
        return str(self)


def run_command(ctx: Context, line: str) -> Any:
    """Run one `%delta` line."""
    try:
        argv = shlex.split(line)
    except ValueError as exc:
        raise CommandError(f"%delta: cannot parse the line ({exc})") from exc
    if not argv:
        return cmd_help(ctx, [])
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        raise CommandError(f"%delta: unknown subcommand {name!r}; expected one of {', '.join(sorted(COMMANDS))}")
    return COMMANDS[name][0](ctx, rest)
