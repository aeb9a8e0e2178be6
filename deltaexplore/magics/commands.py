"""The `%delta` subcommands: one small function and one argparse parser each.

Every command takes a `Context` (the magics' configuration and the user namespace) and its
argument list, and returns an object: an Arrow table, a `Report`, a chart or a widget. Errors are
`DeltaExploreError`s; `DeltaMagics` turns them into short `UsageError`s. Arrow results are
inspection tables (or rows/schemas tagged here) with a title naming the table and version: the
notebook shows them as formatted HTML tables (`widgets.tables`) while the value stays Arrow.

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
import pyarrow.compute as pc

from deltaexplore import inspect
from deltaexplore.core.protocol.schema import type_text
from deltaexplore.core.table import Table, open_table
from deltaexplore.errors import DeltaExploreError
from deltaexplore.inspect import row_diff
from deltaexplore.inspect.formatting import TABLE_KEY, count_noun, human_bytes, human_count
from deltaexplore.magics.report import Report
from deltaexplore.widgets import explore, maintenance
from deltaexplore.widgets.tables import TITLE_KEY, titled
from deltaexplore.widgets.views import TableView

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


def count(text: str) -> int:
    """An argparse type: a whole number of rows or commits, 0 or more."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


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


def table_named(ctx: Context, ref: str | None) -> Any:
    """The table named by `ref`: a variable holding a `Table`, else a path/URI; else the default."""
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


def _short_name(table: Any) -> str:
    """The table's folder name (never the whole location: outputs are saved with notebooks)."""
    return str(table.uri).rstrip("/").rsplit("/", 1)[-1] or str(table.uri)


def _title(label: str, table: Any, version: int | None = None) -> str:
    return f"{label} · {_short_name(table)}" + (f" @ v{version}" if version is not None else "")


def _named(result: pa.Table, label: str, table: Any, version: int | None = None, *, name: str | None = None) -> pa.Table:
    """`result` (no copy) titled for display; tagged as `name` when it is not an inspection table."""
    return titled(result, _title(label, table, version), name=name)


def _chart(name: str, data: Any, **kwargs: Any) -> Any:
    """`deltaexplore.viz.<name>(data)` shown offline: an `alt.JupyterChart` (its `.chart` is the Altair chart)."""
    try:
        viz = importlib.import_module("deltaexplore.viz")
    except ImportError as exc:
        raise CommandError(f"--chart needs altair and vl-convert-python: pip install 'deltaexplore[viz]' ({exc})") from exc
    return viz.show(getattr(viz, name)(data, **kwargs))


# -- commands --------------------------------------------------------------------------------
@command("use", "set the table later commands use by default")
def cmd_use(ctx: Context, argv: list[str]) -> Any:
    p = parser("use", "Set the default table for later %delta commands.", version=False)
    args = p.parse_args(argv)
    table = table_named(ctx, args.table)
    ctx.current = args.table or table.uri
    return _Text(f"%delta commands now use {ctx.current} (version {table.latest_version()})")


@command("explore", "the explorer widget (version slider, tabs, maintenance)")
def cmd_explore(ctx: Context, argv: list[str]) -> Any:
    p = parser("explore", "Open the explorer widget.")
    p.add_argument("--tab", default="overview", help="tab to open on")
    args = p.parse_args(argv)

    return explore(table_named(ctx, args.table), args.version, page_size=ctx.page_size, tab=args.tab)


@command("follow", "the explorer following the table as it changes (new versions and their commits)")
def cmd_follow(ctx: Context, argv: list[str]) -> Any:
    p = parser("follow", "Open the explorer with Follow on: new versions appear as they land.", version=False)
    p.add_argument("--interval", type=float, default=2.0, help="seconds between polls while commits come (backs off to 30 s)")
    p.add_argument("--tab", default="history", help="tab to open on")
    args = p.parse_args(argv)
    table = table_named(ctx, args.table)
    return explore(table, None, page_size=ctx.page_size, tab=args.tab, follow=True, follow_interval=args.interval)


@command("history", "commits, newest first")
def cmd_history(ctx: Context, argv: list[str]) -> Any:
    p = parser("history", "One row per commit, newest first.", version=False)
    p.add_argument("-n", "--limit", type=count, default=None, help="newest N commits (default: DeltaMagics.limit)")
    p.add_argument("--all", action="store_true", help="every retained commit")
    p.add_argument("--chart", action="store_true", help="a chart instead of the table")
    args = p.parse_args(argv)
    table = table_named(ctx, args.table)
    h = inspect.history(table, None if args.all else (args.limit or ctx.limit))
    return _chart("history_chart", h) if args.chart else _named(h, "History", table)


@command("versions", "which versions can still be read (log retained, data files present)")
def cmd_versions(ctx: Context, argv: list[str]) -> Any:
    p = parser("versions", "Per version: readable now, and after a VACUUM.", version=False)
    p.add_argument("--no-data-check", action="store_true", help="do not check that data files exist")
    p.add_argument("--retention-hours", type=float, default=None, help="VACUUM retention to evaluate")
    p.add_argument("--chart", action="store_true", help="a chart instead of the table")
    args = p.parse_args(argv)
    table = table_named(ctx, args.table)
    out = inspect.reconstructable_versions(table, check_data=not args.no_data_check, vacuum_retention_hours=args.retention_hours)
    return _chart("versions_chart", out) if args.chart else _named(out, "Versions", table)


@command("overview", "key facts: size, rows, layout, protocol")
def cmd_overview(ctx: Context, argv: list[str]) -> Any:
    p = parser("overview", "Key facts about one version.")
    args = p.parse_args(argv)
    snap = table_named(ctx, args.table).snapshot(args.version)
    return _named(inspect.overview(snap), "Overview", snap.table, snap.version)


@command("commits", "every action of commits START..END, raw and parsed")
def cmd_commits(ctx: Context, argv: list[str]) -> Any:
    p = parser("commits", "Actions of a range of commits: %delta commits [TABLE] [START [END]].", table=False, version=False)
    p.add_argument("items", nargs="*", metavar="[TABLE] [START [END]]")
    args = p.parse_args(argv)
    ref, versions = _table_and_versions(p, args.items, required=0, most=2)
    start = versions[0] if versions else None
    end = versions[1] if len(versions) > 1 else start
    table = table_named(ctx, ref)
    out = inspect.commits(table, start, end)
    span = "" if start is None else (f" v{start}" if end == start else f" v{start}..v{end}")
    return titled(out, f"Commits · {_short_name(table)}{span}")


@command("files", "active files, or per-partition aggregates with --partitions")
def cmd_files(ctx: Context, argv: list[str]) -> Any:
    p = parser("files", "The active files at a version (one row per file).")
    p.add_argument("--partitions", action="store_true", help="per partition: files, bytes, rows, small files, skew")
    p.add_argument("--sort", default=None, help="sort by this column (descending unless --asc)")
    p.add_argument("--asc", action="store_true")
    p.add_argument("-n", "--limit", type=count, default=None, help="first N rows")
    p.add_argument("--chart", action="store_true", help="file size histogram (partition skew with --partitions)")
    args = p.parse_args(argv)
    snap = table_named(ctx, args.table).snapshot(args.version)
    out = inspect.partitions(snap) if args.partitions else inspect.files(snap)
    if args.chart:
        return _chart("partition_skew_chart" if args.partitions else "file_size_histogram", out)
    label = "Partitions" if args.partitions else "Files"
    return _named(_sort_limit(out, args.sort, args.asc, args.limit), label, snap.table, snap.version)


def _sort_limit(t: pa.Table, sort: str | None, asc: bool, limit: int | None) -> pa.Table:
    if sort is not None:
        if sort not in t.column_names:
            raise CommandError(f"cannot sort by {sort!r}: expected one of {', '.join(t.column_names)}")
        t = t.sort_by([(sort, "ascending" if asc else "descending")])
    return t.slice(0, limit) if limit else t


@command("layout", "per-file min/max and overlap depth of a column (or every column's summary)")
def cmd_layout(ctx: Context, argv: list[str]) -> Any:
    p = parser("layout", "How values are spread over files: data skipping per column.")
    p.add_argument("-c", "--column", default=None, help="one column's per-file ranges (default: every column's summary)")
    p.add_argument("--chart", action="store_true", help="a chart instead of the table")
    args = p.parse_args(argv)
    snap = table_named(ctx, args.table).snapshot(args.version)
    if args.chart and not args.column:
        raise CommandError("%delta layout --chart needs a column: -c COLUMN")
    out = inspect.layout(snap, args.column) if args.column else inspect.layout_summary(snap)
    if args.chart:
        return _chart("layout_chart", out, column=args.column)
    return _named(out, f"Layout of {args.column}" if args.column else "Layout summary", snap.table, snap.version)


@command("explain", "which files a query with a predicate reads, and why the others are skipped")
def cmd_explain(ctx: Context, argv: list[str]) -> Any:
    p = parser("explain", "Files a query reads: partition pruning, then statistics.")
    p.add_argument("-w", "--where", required=True, help="predicate, e.g. \"date = '2024-01-01' and id > 5\"")
    p.add_argument("--selected", action="store_true", help="only the files the query reads")
    p.add_argument("--chart", action="store_true", help="the pruning funnel")
    args = p.parse_args(argv)
    snap = table_named(ctx, args.table).snapshot(args.version)
    out = inspect.explain(snap, args.where)
    if args.chart:
        return _chart("explain_funnel", out, predicate=args.where)
    read = int(pc.sum(out.column("selected")).as_py() or 0) if out.num_rows else 0
    reads = f"reads {human_count(read)} of {count_noun(out.num_rows, 'file')}"
    out = out.filter(out.column("selected")) if args.selected else out
    return titled(out, f"Explain · {_short_name(snap.table)} @ v{snap.version}: {args.where} {reads}")


@command("dv", "deletion vectors: per-file deleted rows, ratio, storage, sharing")
def cmd_dv(ctx: Context, argv: list[str]) -> Any:
    p = parser("dv", "Deletion vectors at a version.")
    p.add_argument("--files", action="store_true", help="one row per DV file instead")
    p.add_argument("--rows", metavar="PATH", default=None, help="deleted row positions of one data file")
    p.add_argument("--chart", action="store_true", help="DV density (or the deleted-rows heatmap with --rows)")
    args = p.parse_args(argv)
    snap = table_named(ctx, args.table).snapshot(args.version)
    if args.rows:
        rows = inspect.deleted_rows(snap, args.rows)
        return (
            _chart("deleted_rows_heatmap", rows, path=args.rows)
            if args.chart
            else _named(rows, "Deleted rows", snap.table, snap.version)
        )
    if args.chart:
        return _chart("dv_density_chart", inspect.deletion_vectors(snap))
    if args.files:
        return _named(inspect.dv_files(snap), "Deletion vector files", snap.table, snap.version)
    return _named(inspect.deletion_vectors(snap), "Deletion vectors", snap.table, snap.version)


def _table_and_versions(p: _Parser, items: list[str], *, required: int, most: int) -> tuple[str | None, list[int]]:
    """Split ``[TABLE] V1 [V2]``: a first item that is not a number names the table."""
    table = None
    if items and not items[0].lstrip("-").isdigit():
        table, items = items[0], items[1:]
    if not required <= len(items) <= most:
        p.error(f"expected {required}..{most} versions after the table, got {len(items)}: {' '.join(items) or '(none)'}")
    try:
        return table, [int(v) for v in items]
    except ValueError:
        p.error(f"versions must be integers, got {' '.join(items)}")
        raise  # unreachable: p.error raises


@command("diff", "what changed between two versions (files, bytes, rows, schema, properties, protocol)")
def cmd_diff(ctx: Context, argv: list[str]) -> Any:
    p = parser("diff", "Compare two versions from metadata only: %delta diff [TABLE] V1 [V2].", table=False, version=False)
    p.add_argument("items", nargs="*", metavar="[TABLE] V1 [V2]", help="V2 defaults to the latest version")
    p.add_argument("--files", action="store_true", help="one row per changed file")
    p.add_argument("--rows", action="store_true", help="the rows that truly differ (read from the files that differ)")
    p.add_argument(
        "--key",
        action="append",
        default=None,
        metavar="COLUMN",
        help="with --rows: pair old and new rows by this key (repeatable)",
    )
    p.add_argument("--columns", default=None, metavar="A,B", help="with --rows: compare only these columns")
    args = p.parse_args(argv)
    if (args.key or args.columns) and not args.rows:
        p.error("--key and --columns go with --rows")
    ref, versions = _table_and_versions(p, args.items, required=1, most=2)
    table = table_named(ctx, ref)
    v1, v2 = versions[0], (versions[1] if len(versions) > 1 else None)
    span = f"v{v1} → v{v2 if v2 is not None else table.latest_version()}"
    if args.rows:
        out = inspect.diff_rows(table, v1, v2, key=args.key, columns=_names(args.columns))
        read = row_diff.read_summary(out)
        files = count_noun(read["files_read"], "file")
        note = f"{count_noun(out.num_rows, 'changed row')} · read {files}, {human_bytes(read['bytes_read'])}"
        return titled(out, f"Changed rows · {_short_name(table)} {span} · {note}", name="diff_rows")
    out = (inspect.diff_files if args.files else inspect.diff)(table, v1, v2)
    return titled(out, f"{'Changed files' if args.files else 'Diff'} · {_short_name(table)} {span}")


def _names(text: str | None) -> list[str] | None:
    return [c.strip() for c in text.split(",") if c.strip()] if text else None


@command("advise", "what maintenance to run, ranked, with its predicted effect (--check: predicted vs measured)")
def cmd_advise(ctx: Context, argv: list[str]) -> Any:
    p = parser("advise", "Ranked maintenance advice predicted from the log (nothing is written).")
    p.add_argument("-c", "--columns", default=None, metavar="A,B", help="columns point queries filter on")
    p.add_argument("--zorder", default=None, metavar="A,B", help="the what-if of a Z-order by these columns")
    p.add_argument("--target-bytes", type=int, default=None, help="target file size of compaction and Z-order")
    p.add_argument("--check", action="store_true", help="the prediction before the newest OPTIMIZE/REORG vs the result")
    args = p.parse_args(argv)
    snap = table_named(ctx, args.table).snapshot(args.version)
    if args.check:
        out = inspect.advise(snap, check=True, target_size=args.target_bytes)
        ok = sum(out.column("within").to_pylist())
        return titled(out, f"Advice checked · {_short_name(snap.table)}: {ok} of {out.num_rows} predictions within tolerance")
    out = inspect.advise(snap, columns=_names(args.columns), zorder_by=_names(args.zorder), target_size=args.target_bytes)
    return _named(out, f"Advice ({count_noun(out.num_rows, 'recommendation')})", snap.table, snap.version)


@command("health", "log health: checkpoints, commits since, log vs data bytes, tombstones, .crc")
def cmd_health(ctx: Context, argv: list[str]) -> Any:
    p = parser("health", "Log health at a version.")
    p.add_argument("--log-files", action="store_true", help="per version: commit, checkpoint and crc sizes")
    p.add_argument("--chart", action="store_true", help="log bytes and replay cost per version")
    args = p.parse_args(argv)
    snap = table_named(ctx, args.table).snapshot(args.version)
    if args.chart:
        return _chart("log_health_chart", inspect.log_files(snap))
    if args.log_files:
        return _named(inspect.log_files(snap), "Log files", snap.table, snap.version)
    return _named(inspect.log_health(snap), "Log health", snap.table, snap.version)


@command("features", "protocol features (--compat: which clients can read/write the table)")
def cmd_features(ctx: Context, argv: list[str]) -> Any:
    p = parser("features", "Table features and their support.")
    p.add_argument("--compat", action="store_true", help="compatibility matrix of clients")
    p.add_argument("--all", action="store_true", help="every known feature, not only the table's")
    args = p.parse_args(argv)
    snap = table_named(ctx, args.table).snapshot(args.version)
    if args.compat:
        return _named(inspect.compatibility(snap), "Compatibility", snap.table, snap.version)
    return _named(inspect.features(snap, all_known=args.all), "Features", snap.table, snap.version)


@command("schema", "columns and types")
def cmd_schema(ctx: Context, argv: list[str]) -> Any:
    p = parser("schema", "The table schema at a version (Arrow).")
    args = p.parse_args(argv)
    snap = table_named(ctx, args.table).snapshot(args.version)
    schema = snap.arrow_schema
    fields = []
    for f, delta_field in zip(schema, snap.schema.fields):
        text = type_text(delta_field)
        if text != str(delta_field.type):  # collated strings: the collation beside the Arrow type
            f = f.with_metadata({**(f.metadata or {}), b"delta_type": text.encode()})
        fields.append(f)
    md = {**(schema.metadata or {}), TABLE_KEY: b"schema", TITLE_KEY: _title("Schema", snap.table, snap.version).encode()}
    return pa.schema(fields, metadata=md)


@command("read", "rows (deletion vectors applied), optionally filtered")
def cmd_read(ctx: Context, argv: list[str]) -> Any:
    p = parser("read", "Read rows into an Arrow table.")
    p.add_argument("-c", "--columns", default=None, help="comma-separated columns")
    p.add_argument("-w", "--where", default=None)
    p.add_argument("-n", "--limit", type=count, default=None, help="first N rows (default: DeltaMagics.limit; 0 = all)")
    p.add_argument("--spark", action="store_true", help="read with Spark (deltaexplore.spark)")
    args = p.parse_args(argv)
    table = table_named(ctx, args.table)
    cols = [c.strip() for c in args.columns.split(",")] if args.columns else None
    if args.spark:
        try:
            spark = importlib.import_module("deltaexplore.spark")
        except ImportError as exc:
            raise CommandError(
                f"--spark needs deltaexplore.spark and pyspark: pip install 'deltaexplore[spark]' ({exc})"
            ) from exc
        return spark.read(spark.get_spark(), table, version=args.version, columns=cols, where=args.where)
    snap = table.snapshot(args.version)
    rows = snap.to_arrow(cols, where=args.where, variant="json")  # variants as JSON text, as Spark shows them
    limit = ctx.limit if args.limit is None else args.limit
    rows = rows.slice(0, limit) if limit else rows
    return _named(rows, "Rows", table, snap.version, name="rows")


@command("spark", "the Spark session %delta uses: show it, connect (sc://host:15002) or start a local one")
def cmd_spark(ctx: Context, argv: list[str]) -> Any:
    p = parser("spark", "Show, connect to or start the Spark session --engine spark and --spark use.", table=False, version=False)
    p.add_argument(
        "target", nargs="?", default=None, help="a Spark Connect URL (sc://host:15002), 'local', or nothing to show it"
    )
    args = p.parse_args(argv)
    try:
        dxs = importlib.import_module("deltaexplore.spark")
    except ImportError as exc:
        raise CommandError(f"%delta spark needs pyspark: pip install 'deltaexplore[spark]' ({exc})") from exc
    if args.target is None:
        return _Text(dxs.describe_session(dxs.active_session()))
    if args.target.startswith("sc://"):
        spark = dxs.get_spark(remote=args.target)
    elif args.target == "local":
        spark = dxs.get_spark()
    else:
        raise CommandError(f"%delta spark: expected a Spark Connect URL (sc://host:port) or 'local', got {args.target!r}")
    return _Text(f"%delta uses the {dxs.describe_session(spark)}")


def _maintenance(name: str, description: str, extra: Callable[[_Parser], Any]) -> Command:
    def cmd(ctx: Context, argv: list[str]) -> Any:
        p = parser(name, description, version=False)
        mode = p.add_mutually_exclusive_group()
        mode.add_argument("--dry-run", action="store_true", default=True, help="preview only (the default)")
        mode.add_argument("--run", action="store_true", help="really run it")
        p.add_argument(
            "--engine",
            choices=maintenance.ENGINES,
            default="auto",
            help="auto (default): Spark when a Spark session is active, else the local engine; "
            "spark starts one if needed; driver-only work (checkpoint) always runs locally",
        )
        extra(p)
        args = p.parse_args(argv)
        table = table_named(ctx, args.table)
        params = {k: v for k, v in vars(args).items() if k not in ("table", "dry_run", "run", "engine") and v is not None}
        label = maintenance.OPERATIONS[name].label
        backend, why = maintenance.choose_backend(name, args.engine)
        if not args.run:
            note = f"dry run · --run would use {backend}: {why}"
            if name == "vacuum":
                files = inspect.vacuum_preview(table, retention_hours=args.retention_hours)
                total = int(pc.sum(files.column("size")).as_py() or 0) if files.num_rows else 0
                return titled(
                    files,
                    f"VACUUM (dry run) · {_short_name(table)}: {count_noun(files.num_rows, 'file')}, {human_bytes(total)}"
                    f" · --run would use {backend}",
                )
            return Report(f"{label} · {_short_name(table)}", maintenance.preview(name, TableView(table), **params), note=note)
        show = maintenance.progress_display(f"{label} · {_short_name(table)}")
        out = maintenance.run(name, table, show, engine=args.engine, storage_options=ctx.storage_options or None, **params)
        summary = {
            "backend": out["backend"],
            "why": out["backend_reason"],
            "version_before": out["version_before"],
            "version_after": out["version_after"],
            "duration_ms": round(out["seconds"] * 1000),
        }
        metrics = out.get("metrics")
        return Report(f"{label} · {_short_name(table)}", summary, metrics, note=f"done with {out['backend']}")

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
