"""Schema changes between two versions: added, dropped, renamed, widened and retyped columns.

Fields are flattened into paths (nested struct fields, array `element`, map `key`/`value`) and
matched by column mapping field id when both schemas have ids (so renames are recognised), else
by logical path (case-insensitive, as Delta resolves names).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from deltaexplore.core.protocol.schema import ArrayType, DataType, DecimalType, MapType, StructField, StructType

__all__ = ["SchemaChange", "is_widening", "schema_changes"]

_CM_KEYS = {"delta.columnMapping.id", "delta.columnMapping.physicalName", "delta.typeChanges"}

_INTEGERS = ["byte", "short", "integer", "long"]
_INT_DECIMAL_PRECISION = {"byte": 3, "short": 5, "integer": 10, "long": 20}


@dataclass(frozen=True)
class SchemaChange:
    """One schema difference (a row of the `schema` section of `diff`)."""

    change: str  # added | removed | renamed | widened | type_changed | nullability | metadata
    name: str
    before: str | None
    after: str | None
    detail: str


@dataclass(frozen=True)
class _Leaf:
    path: tuple[str, ...]
    field: StructField | None  # None for array elements / map parts
    type: DataType
    nullable: bool
    field_id: int | None

    @property
    def name(self) -> str:
        return ".".join(self.path)


def _flatten(t: DataType, prefix: tuple[str, ...] = ()) -> list[_Leaf]:
    out: list[_Leaf] = []
    if isinstance(t, StructType):
        for f in t.fields:
            path = (*prefix, f.name)
            out.append(_Leaf(path, f, f.type, f.nullable, f.field_id))
            out.extend(_flatten(f.type, path))
    elif isinstance(t, ArrayType):
        path = (*prefix, "element")
        out.append(_Leaf(path, None, t.element_type, t.contains_null, None))
        out.extend(_flatten(t.element_type, path))
    elif isinstance(t, MapType):
        kpath, vpath = (*prefix, "key"), (*prefix, "value")
        out.append(_Leaf(kpath, None, t.key_type, False, None))
        out.extend(_flatten(t.key_type, kpath))
        out.append(_Leaf(vpath, None, t.value_type, t.value_contains_null, None))
        out.extend(_flatten(t.value_type, vpath))
    return out


def is_widening(before: DataType, after: DataType) -> bool:
    """True when `before` -> `after` is a type change the typeWidening feature allows."""
    b, a = before.name, after.name
    if b in _INTEGERS and a in _INTEGERS:
        return _INTEGERS.index(a) > _INTEGERS.index(b)
    if b == "float" and a == "double":
        return True
    if b in ("byte", "short", "integer") and a == "double":
        return True
    if b == "date" and a == "timestamp_ntz":
        return True
    if isinstance(before, DecimalType) and isinstance(after, DecimalType):
        return (
            after.scale >= before.scale
            and after.precision - after.scale >= before.precision - before.scale
            and (after.precision, after.scale) != (before.precision, before.scale)
        )
    if b in _INT_DECIMAL_PRECISION and isinstance(after, DecimalType):
        return after.precision - after.scale >= _INT_DECIMAL_PRECISION[b]
    return False


def _shape(t: DataType) -> str:
    """A type's own kind without its children (children are compared as their own paths)."""
    if isinstance(t, StructType):
        return "struct"
    if isinstance(t, ArrayType):
        return "array"
    if isinstance(t, MapType):
        return "map"
    return t.name


def _user_metadata(f: StructField | None) -> dict[str, Any]:
    if f is None:
        return {}
    return {k: v for k, v in f.metadata.items() if k not in _CM_KEYS}


def schema_changes(before: StructType | None, after: StructType | None) -> list[SchemaChange]:
    """Differences from `before` to `after` (either may be None: no schema)."""
    a_leaves = _flatten(before) if before is not None else []
    b_leaves = _flatten(after) if after is not None else []
    by_id = all(x.field_id is not None for x in a_leaves + b_leaves if x.field is not None) and bool(a_leaves and b_leaves)

    def key(leaf: _Leaf, leaves_by_path: dict[tuple[str, ...], _Leaf]) -> Any:
        if not by_id:
            return tuple(p.lower() for p in leaf.path)
        # array elements / map parts have no id: key them under their nearest field's id
        for i in range(len(leaf.path), 0, -1):
            anc = leaves_by_path.get(leaf.path[:i])
            if anc is not None and anc.field is not None:
                return (("id", anc.field_id), *leaf.path[i:])
        return tuple(leaf.path)

    a_paths = {x.path: x for x in a_leaves}
    b_paths = {x.path: x for x in b_leaves}
    a_keyed = {key(x, a_paths): x for x in a_leaves}
    b_keyed = {key(x, b_paths): x for x in b_leaves}
    dropped = {a.path for k, a in a_keyed.items() if k not in b_keyed}
    new = {b.path for k, b in b_keyed.items() if k not in a_keyed}
    out: list[SchemaChange] = []
    for k, a in a_keyed.items():
        b = b_keyed.get(k)
        if b is None:
            if not _under(a.path, dropped):  # a dropped struct implies its children
                out.append(SchemaChange("removed", a.name, _type_text(a), None, f"column {a.name} ({_type_text(a)}) dropped"))
            continue
        if a.path[-1] != b.path[-1] and a.field is not None:
            out.append(
                SchemaChange(
                    "renamed", b.name, a.name, b.name, f"column renamed from {a.name} to {b.name} (field id {a.field_id})"
                )
            )
        if _shape(a.type) != _shape(b.type):
            widened = is_widening(a.type, b.type)
            history = b.field.metadata.get("delta.typeChanges") if b.field is not None else None
            change = "widened" if widened else "type_changed"
            detail = f"{b.name}: {a.type} -> {b.type}"
            if history:
                detail += f" (delta.typeChanges: {json.dumps(history)})"
            elif widened:
                detail += " (widening)"
            out.append(SchemaChange(change, b.name, str(a.type), str(b.type), detail))
        if a.nullable != b.nullable:
            before_txt = "nullable" if a.nullable else "not null"
            after_txt = "nullable" if b.nullable else "not null"
            out.append(SchemaChange("nullability", b.name, before_txt, after_txt, f"{b.name}: {before_txt} -> {after_txt}"))
        ma, mb = _user_metadata(a.field), _user_metadata(b.field)
        if ma != mb:
            keys = sorted((set(ma) ^ set(mb)) | {m for m in set(ma) & set(mb) if ma[m] != mb[m]})
            out.append(
                SchemaChange(
                    "metadata",
                    b.name,
                    json.dumps(ma, sort_keys=True, default=str),
                    json.dumps(mb, sort_keys=True, default=str),
                    f"{b.name}: {', '.join(keys)} changed",
                )
            )
    for b in b_keyed.values():
        if b.path in new and not _under(b.path, new):
            out.append(SchemaChange("added", b.name, None, _type_text(b), f"column {b.name} ({_type_text(b)}) added"))
    return out


def _under(path: tuple[str, ...], prefixes: set[tuple[str, ...]]) -> bool:
    """True when a proper prefix of `path` is in `prefixes`."""
    return any(path[:i] in prefixes for i in range(1, len(path)))


def _type_text(leaf: _Leaf) -> str:
    return str(leaf.type) + ("" if leaf.nullable else " not null")
