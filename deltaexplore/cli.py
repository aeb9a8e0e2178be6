"""Command line: `deltaexplore inspect PATH` prints a summary of a Delta table; `deltaexplore --version`."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import deltaexplore
from deltaexplore.core.protocol.features import features_of
from deltaexplore.core.protocol.schema import ArrayType, DataType, MapType, StructType, type_text
from deltaexplore.core.table import open_table
from deltaexplore.errors import DeltaExploreError
from deltaexplore.inspect.formatting import count_noun, human_bytes, human_count

__all__ = ["main", "summary"]


def _schema_lines(t: DataType, indent: int = 1) -> list[str]:
    out = []
    pad = "  " * indent
    if isinstance(t, StructType):
        for f in t.fields:
            null = "" if f.nullable else " not null"
            if isinstance(f.type, (StructType, ArrayType, MapType)):
                out.append(f"{pad}{f.name}: {f.type.name}{null}")
                inner: DataType = f.type
                while isinstance(inner, ArrayType):
                    inner = inner.element_type
                if isinstance(inner, MapType):
                    inner = inner.value_type
                if isinstance(inner, StructType):
                    out.extend(_schema_lines(inner, indent + 1))
                elif isinstance(f.type, (ArrayType, MapType)):
                    out[-1] = f"{pad}{f.name}: {type_text(f)}{null}"
            else:
                out.append(f"{pad}{f.name}: {type_text(f)}{null}")
    return out


def summary(uri: str, *, version: int | None = None, commits: int = 5, storage_options: dict[str, Any] | None = None) -> str:
    """A text summary of a table: version, protocol, schema, partitioning, files, last commits."""
    table = open_table(uri, storage_options)
    snap = table.snapshot(version)
    p = snap.protocol
    readers, writers = features_of(p)
    lines = [
        f"Delta table  {table.uri}",
        f"version      {snap.version}  ({snap.timestamp.isoformat(timespec='seconds')})",
        f"protocol     reader v{p.min_reader_version}, writer v{p.min_writer_version}",
        f"features     readers: {', '.join(readers) or '-'}; writers: {', '.join(writers) or '-'}",
    ]
    if snap.published_only:
        lines.append("catalog      catalog-managed table read by path: published commits only")
    if snap.has_metadata:
        md = snap.metadata
        if md.name:
            lines.append(f"name         {md.name}")
        lines.append(f"table id     {md.id}")
        lines.append(f"partitioned  {', '.join(md.partition_columns) if md.partition_columns else 'no'}")
        mode = snap.column_mapping_mode
        if mode != "none":
            lines.append(f"col mapping  {mode}")
        try:
            lines.append("schema")
            lines.extend(_schema_lines(md.schema))
        except DeltaExploreError as exc:
            lines.append(f"  (unreadable: {exc})")
        props = {k: v for k, v in md.configuration.items()}
        if props:
            lines.append("properties")
            lines.extend(f"  {k} = {v}" for k, v in sorted(props.items()))
    files = snap.files()
    n_dv = files.column("storage_type").null_count
    dv_files = files.num_rows - n_dv
    rows = files.column("num_records").to_pylist()
    known_rows = [r for r in rows if r is not None]
    lines.append(
        f"files        {human_count(files.num_rows)} ({human_bytes(snap.size_in_bytes)})"
        + (
            f", {count_noun(sum(known_rows), 'row')}" + (" (some files lack stats)" if len(known_rows) < len(rows) else "")
            if known_rows
            else ""
        )
        + (f", {human_count(dv_files)} with deletion vectors" if dv_files else "")
    )
    if snap.checkpoint_version is not None:
        lines.append(f"checkpoint   version {snap.checkpoint_version} ({snap.segment.checkpoint.kind})")  # type: ignore[union-attr]
    hist = table.history(limit=commits).to_pylist()
    if hist:
        lines.append("last commits")
        for h in hist:
            ts = h["timestamp"].isoformat(timespec="seconds") if h["timestamp"] else "?"
            op = h["operation"] or "?"
            delta = f"+{h['files_added']}/-{h['files_removed']} files"
            who = f" by {h['user']}" if h["user"] else ""
            lines.append(f"  v{h['version']:<5} {ts}  {op:<18} {delta}{who}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="deltaexplore", description="Explore Delta Lake tables.")
    parser.add_argument("--version", action="version", version=f"deltaexplore {deltaexplore.__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    p_inspect = sub.add_parser("inspect", help="print a summary of a table")
    p_inspect.add_argument("path", help="table location (path or URI)")
    p_inspect.add_argument("--version", type=int, default=None, help="time travel to this version")
    p_inspect.add_argument("--commits", type=int, default=5, help="how many recent commits to list")
    args = parser.parse_args(argv)
    try:
        if args.command == "inspect":
            print(summary(args.path, version=args.version, commits=args.commits))
    except DeltaExploreError as exc:
        print(f"deltaexplore: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
