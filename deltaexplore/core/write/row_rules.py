"""Rules on the rows a writer adds: schema enforcement, NOT NULL, invariants, CHECK
constraints, generated and identity columns.

`conform` casts incoming Arrow data to the table's logical schema (columns matched
case-insensitively, missing nullable columns null, safe casts only; with schema evolution new
columns are added to the schema). `enforce` fills generated and identity columns and checks
every rule; SQL expressions are evaluated with polars (`pl.sql_expr`). A row that makes a rule
false or null refuses the whole write with a `WriteRefusedError` naming the rule; an
expression we cannot evaluate refuses the write too (never skipped silently).

The rules are also exposed as data (`constraint_rules`, `generated_columns`,
`identity_columns`) so an engine such as Spark can enforce them with its own SQL.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.protocol.actions import Metadata
from deltaexplore.core.protocol.schema import ArrayType, MapType, PrimitiveType, StructField, StructType, to_arrow_type
from deltaexplore.core.write.schema_evolution import merge_schemas, schema_from_arrow, schema_json
from deltaexplore.errors import WriteRefusedError

__all__ = [
    "ConstraintRule",
    "IdentityColumn",
    "as_arrow_table",
    "conform",
    "constraint_rules",
    "enforce",
    "evaluate_sql",
    "fill_generated",
    "generated_columns",
    "identity_columns",
]


@dataclass(frozen=True)
class ConstraintRule:
    """A row rule: `kind` is 'invariant' or 'check'; `name` the column or constraint name."""

    kind: str
    name: str
    expression: str


@dataclass(frozen=True)
class IdentityColumn:
    name: str
    start: int
    step: int
    high_water_mark: int | None
    allow_explicit_insert: bool

    def next_values(self, n: int) -> tuple[list[int], int | None]:
        """`n` fresh values and the new high-water mark.

        Raises:
            WriteRefusedError: the values would overflow a long.
        """
        if n == 0:
            return [], self.high_water_mark
        if self.high_water_mark is None:
            first = self.start
        else:  # the next start + k * step beyond the high-water mark
            k = max(0, (self.high_water_mark - self.start) // self.step + 1)
            first = self.start + k * self.step
        last = first + self.step * (n - 1)
        if not (-(2**63) <= first < 2**63 and -(2**63) <= last < 2**63):
            raise WriteRefusedError(f"identity column {self.name!r}: generating {n} values overflows a long")
        return list(range(first, last + (1 if self.step > 0 else -1), self.step)), last


def as_arrow_table(data: Any) -> pa.Table:
    """An Arrow table from a pa.Table, RecordBatch(Reader), polars/pandas DataFrame or anything
    with the Arrow C stream interface.

    Raises:
        WriteRefusedError: the object is not tabular data.
    """
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if isinstance(data, pa.RecordBatchReader):
        return data.read_all()
    mod = type(data).__module__
    if mod.startswith("polars"):
        return data.to_arrow()
    if mod.startswith("pandas"):
        return pa.Table.from_pandas(data, preserve_index=False)
    if hasattr(data, "__arrow_c_stream__"):
        return pa.table(data)
    raise WriteRefusedError(f"cannot write {type(data).__name__}: expected an Arrow table, RecordBatch or DataFrame")


# -- rules as data ------------------------------------------------------------------------------


def constraint_rules(metadata: Metadata) -> list[ConstraintRule]:
    """Column invariants and CHECK constraints of a table."""
    rules: list[ConstraintRule] = []
    for path, f in _leaf_and_struct_fields(metadata.schema):
        raw = f.metadata.get("delta.invariants")
        if raw is None:
            continue
        try:
            obj = json.loads(raw) if isinstance(raw, str) else raw
            expr = obj["expression"]["expression"]
        except (ValueError, KeyError, TypeError, RecursionError) as exc:
            raise WriteRefusedError(f"invariant of column {path!r} is malformed: {raw!r}") from exc
        rules.append(ConstraintRule("invariant", path, str(expr)))
    for key, value in metadata.configuration.items():
        if key.startswith("delta.constraints."):
            rules.append(ConstraintRule("check", key[len("delta.constraints.") :], str(value)))
    return rules


def generated_columns(metadata: Metadata) -> dict[str, str]:
    """Top-level generated columns: logical name -> generation expression."""
    return {
        f.name: str(f.metadata["delta.generationExpression"])
        for f in metadata.schema.fields
        if f.metadata.get("delta.generationExpression") is not None
    }


def identity_columns(metadata: Metadata) -> dict[str, IdentityColumn]:
    """Top-level identity columns by name."""
    out = {}
    for f in metadata.schema.fields:
        m = f.metadata
        if "delta.identity.start" not in m and "delta.identity.step" not in m:
            continue
        hwm = m.get("delta.identity.highWaterMark")
        try:
            out[f.name] = IdentityColumn(
                f.name,
                int(m.get("delta.identity.start", 1)),
                int(m.get("delta.identity.step", 1)),
                int(hwm) if hwm is not None else None,
                str(m.get("delta.identity.allowExplicitInsert", "false")).lower() == "true",
            )
        except (TypeError, ValueError) as exc:
            raise WriteRefusedError(f"identity column {f.name!r} has malformed delta.identity.* metadata: {exc}") from exc
        if out[f.name].step == 0:
            raise WriteRefusedError(f"identity column {f.name!r}: delta.identity.step must not be 0")
    return out


def _leaf_and_struct_fields(t: StructType, prefix: str = "") -> list[tuple[str, StructField]]:
    out = []
    for f in t.fields:
        path = f"{prefix}{f.name}"
        out.append((path, f))
        if isinstance(f.type, StructType):
            out.extend(_leaf_and_struct_fields(f.type, path + "."))
    return out


# -- schema enforcement -----------------------------------------------------------------------


def conform(data: pa.Table, metadata: Metadata, *, schema_mode: str | None = None) -> tuple[pa.Table, StructType]:
    """Cast `data` to the table's logical schema.

    Args:
        data: the rows to write.
        metadata: the table's metadata (its schema is the target).
        schema_mode: None (the schema is enforced), 'merge' (new columns are added) or
            'overwrite' (the data's schema replaces the table's, for overwrites).

    Returns:
        (data with exactly the columns of the resulting schema, the resulting schema); a
        schema different from the table's means the metadata must change.

    Raises:
        WriteRefusedError: extra columns without evolution, a missing NOT NULL column, or a
            column whose values cannot be cast safely (expected vs found type named).
    """
    if schema_mode not in (None, "merge", "overwrite"):
        raise WriteRefusedError(f"schema_mode must be None, 'merge' or 'overwrite', got {schema_mode!r}")
    incoming = schema_from_arrow(data.schema)
    table_schema = metadata.schema
    if schema_mode == "overwrite":
        target = _keep_metadata(incoming, table_schema)
    elif schema_mode == "merge":
        target = merge_schemas(table_schema, incoming)
    else:
        target = table_schema
        extra = [f.name for f in incoming.fields if target.get(f.name) is None]
        if extra:
            raise WriteRefusedError(
                f"the data has columns {extra} that the table does not have (columns: {', '.join(table_schema.names)}); "
                "pass schema_mode='merge' to add them"
            )
    generated = {f.name for f in target.fields if f.metadata.get("delta.generationExpression") is not None}
    identity = {f.name for f in target.fields if "delta.identity.start" in f.metadata or "delta.identity.step" in f.metadata}
    by_lower = {name.lower(): i for i, name in enumerate(data.column_names)}
    cols: list[pa.Array | pa.ChunkedArray] = []
    fields: list[pa.Field] = []
    for f in target.fields:
        arrow_type = to_arrow_type(f.type)
        i = by_lower.get(f.name.lower())
        if i is None:
            if not f.nullable and f.name not in generated and f.name not in identity:
                raise WriteRefusedError(f"column {f.name!r} is NOT NULL but the data does not have it")
            cols.append(pa.nulls(data.num_rows, arrow_type))
        else:
            cols.append(_cast(data.column(i), f.type, f.name))
        fields.append(pa.field(f.name, arrow_type, nullable=True))
    return pa.Table.from_arrays(cols, schema=pa.schema(fields)), target


def _keep_metadata(new: StructType, old: StructType) -> StructType:
    """For schema overwrite: columns that keep their name and type keep their metadata."""
    out = []
    for f in new.fields:
        prev = old.get(f.name)
        if prev is not None and prev.type == f.type:
            out.append(replace(f, metadata=dict(prev.metadata), nullable=prev.nullable and f.nullable))
        else:
            out.append(f)
    return StructType(tuple(out))


def _cast(col: pa.ChunkedArray | pa.Array, dtype: Any, name: str) -> pa.Array:
    target = to_arrow_type(dtype)
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if arr.type == target:
        return arr
    if dtype == PrimitiveType("variant") and pa.types.is_struct(arr.type):
        return _variant(arr, target, name)
    if isinstance(dtype, StructType) and pa.types.is_struct(arr.type):
        by_lower = {arr.type.field(i).name.lower(): i for i in range(arr.type.num_fields)}
        children = []
        for f in dtype.fields:
            i = by_lower.get(f.name.lower())
            if i is None:
                children.append(pa.nulls(len(arr), to_arrow_type(f.type)))
            else:
                children.append(_cast(arr.field(i), f.type, f"{name}.{f.name}"))
        mask = arr.is_null() if arr.null_count else None
        return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)
    if isinstance(dtype, ArrayType) and (pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type)):
        values = _cast(arr.values, dtype.element_type, f"{name}[]")
        mask = arr.is_null() if arr.null_count else None
        offsets = arr.offsets
        if pa.types.is_large_list(arr.type):
            offsets = offsets.cast(pa.int32())
        return pa.ListArray.from_arrays(offsets, values, type=target, mask=mask)
    if isinstance(dtype, MapType) and pa.types.is_map(arr.type):
        keys = _cast(arr.keys, dtype.key_type, f"{name}{{key}}")
        items = _cast(arr.items, dtype.value_type, f"{name}{{value}}")
        mask = arr.is_null() if arr.null_count else None
        return pa.MapArray.from_arrays(arr.offsets, keys, items, type=target, mask=mask)
    try:
        if pa.types.is_timestamp(target) and pa.types.is_timestamp(arr.type):
            if arr.type.tz is None and target.tz is not None:
                arr = pc.assume_timezone(arr, "UTC")
            elif arr.type.tz is not None and target.tz is None:
                arr = arr.cast(pa.timestamp(arr.type.unit, tz="UTC")).cast(pa.timestamp(arr.type.unit))
            return arr.cast(target, safe=arr.type.unit != "ns")
        if not _castable(arr.type, target):
            raise pa.ArrowInvalid("not an implicit cast")
        return arr.cast(target, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise WriteRefusedError(f"column {name!r}: expected {dtype} ({target}), the data has {arr.type} ({exc})") from exc


def _variant(arr: pa.StructArray, target: pa.DataType, name: str) -> pa.Array:
    """A struct of `metadata` and `value` binaries (nullable fields, as Spark and most Arrow
    producers give them) as the variant type, whose parts are never null in a present value."""
    names = sorted(arr.type.field(i).name for i in range(arr.type.num_fields))
    if names != ["metadata", "value"]:
        raise WriteRefusedError(f"column {name!r}: expected variant ({target}), the data has {arr.type}")
    parts = [_cast(arr.field(k), PrimitiveType("binary"), f"{name}.{k}") for k in ("metadata", "value")]
    present = arr.is_valid()
    for k, part in zip(("metadata", "value"), parts):
        if part.null_count and pc.any(pc.and_(present, part.is_null())).as_py():
            raise WriteRefusedError(f"column {name!r}: a variant value has no {k} (null)")
    return pa.StructArray.from_arrays(parts, fields=list(target), mask=arr.is_null() if arr.null_count else None)


def _castable(src: pa.DataType, dst: pa.DataType) -> bool:
    """Implicit casts allowed on write (values are still checked: overflow refuses)."""
    num = pa.types.is_integer
    if num(src) and (num(dst) or pa.types.is_floating(dst) or pa.types.is_decimal(dst)):
        return True
    if pa.types.is_floating(src) and pa.types.is_floating(dst):
        return True
    if pa.types.is_decimal(src) and pa.types.is_decimal(dst):
        return True
    strings = (pa.types.is_string, pa.types.is_large_string)
    if any(t(src) for t in strings) and any(t(dst) for t in strings):
        return True
    binaries = (pa.types.is_binary, pa.types.is_large_binary, pa.types.is_fixed_size_binary)
    if any(t(src) for t in binaries) and any(t(dst) for t in binaries):
        return True
    if pa.types.is_date(src) and pa.types.is_date(dst):
        return True
    return bool(pa.types.is_null(src))


# -- evaluation --------------------------------------------------------------------------------

_DATE_LIT = re.compile(r"(?<![A-Za-z_])'(\d{4}-\d{2}-\d{2})'")
_TS_LIT = re.compile(r"(?<![A-Za-z_])'(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)'")


def _frame(data: pa.Table) -> Any:
    import polars as pl

    cols = {}
    for name in data.column_names:
        col = data.column(name).combine_chunks()
        if pa.types.is_timestamp(col.type) and col.type.tz is not None:
            col = col.cast(pa.timestamp(col.type.unit))  # compare as UTC wall time
        cols[name] = col
    return pl.from_arrow(pa.table(cols)) if cols else pl.DataFrame()


def evaluate_sql(data: pa.Table, expression: str, *, what: str = "expression") -> pa.Array:
    """Evaluate a Spark-SQL-like expression on each row (via polars SQL).

    Date/timestamp literals compared with temporal columns are understood ('2024-01-01').

    Raises:
        WriteRefusedError: the expression cannot be evaluated.
    """
    import polars as pl

    frame = _frame(data)
    attempts = [expression]
    rewritten = _TS_LIT.sub(lambda m: f"TIMESTAMP '{m.group(1)}'" if len(m.group(1)) > 10 else m.group(0), expression)
    rewritten = _DATE_LIT.sub(lambda m: f"DATE '{m.group(1)}'", rewritten)
    if rewritten != expression:
        attempts.append(rewritten)
    error: Exception | None = None
    for text in attempts:
        try:
            out = frame.select(pl.sql_expr(text).alias("__result"))
        except Exception as exc:  # noqa: BLE001 - polars raises many kinds; all mean "cannot evaluate"
            error = exc
            continue
        result = out.get_column("__result").to_arrow()
        if len(result) == 1 and data.num_rows != 1:
            result = pa.repeat(result[0], data.num_rows)
        return result
    raise WriteRefusedError(f"cannot evaluate {what} {expression!r}: {error}; refusing to write") from error


def _violations(data: pa.Table, rule: ConstraintRule) -> None:
    label = f"invariant on column {rule.name!r}" if rule.kind == "invariant" else f"CHECK constraint {rule.name!r}"
    result = evaluate_sql(data, rule.expression, what=label)
    if not pa.types.is_boolean(result.type):
        raise WriteRefusedError(f"{label} ({rule.expression}) is not a boolean expression (it gives {result.type})")
    bad = pc.invert(pc.fill_null(result, False))
    n_bad = int(pc.sum(bad.cast(pa.int64())).as_py() or 0) if len(bad) else 0
    if n_bad:
        first = int(pc.index(bad, True).as_py())
        example = {k: v for k, v in data.slice(first, 1).to_pylist()[0].items()}
        raise WriteRefusedError(
            f"{label} ({rule.expression}) is violated by {n_bad} of {data.num_rows} rows (false or null), e.g. {example}; "
            "nothing was written"
        )


def _generated_values(data: pa.Table, f: StructField, expr: str) -> pa.Array:
    computed = evaluate_sql(data, expr, what=f"generation expression of column {f.name!r}")
    try:
        return computed.cast(to_arrow_type(f.type))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise WriteRefusedError(f"generated column {f.name!r}: {expr!r} gives {computed.type}, expected {f.type}") from exc


def fill_generated(data: pa.Table, metadata: Metadata) -> pa.Table:
    """`data` with the null entries of its generated columns computed from their expressions
    (nothing checked): change data rows, whose post-images carry no generated values yet."""
    schema = metadata.schema
    for name, expr in generated_columns(metadata).items():
        col = data.column(name)
        if col.null_count:
            computed = _generated_values(data, schema.field(name), expr)
            data = data.set_column(data.column_names.index(name), name, pc.coalesce(col.combine_chunks(), computed))
    return data


def enforce(data: pa.Table, schema: StructType, metadata: Metadata, *, identity: bool = True) -> tuple[pa.Table, Metadata | None]:
    """Fill generated and identity columns, then check NOT NULL, invariants and CHECK
    constraints on conformed data (`conform`'s output).

    With `identity=False` (UPDATE of existing rows) identity columns keep the values they have.

    Returns:
        (the rows to write, a new metadata when identity high-water marks moved, else None).

    Raises:
        WriteRefusedError: naming the rule and a violating row.
    """
    meta_for_rules = (
        replace(metadata, schema_string=schema_json(schema)) if schema_json(schema) != metadata.schema_string else metadata
    )
    new_fields: dict[str, StructField] = {}
    # Generated columns: fill the missing ones, check the given ones.
    for name, expr in generated_columns(meta_for_rules).items():
        col = data.column(name)
        computed = _generated_values(data, schema.field(name), expr)
        if col.null_count == len(col):
            data = data.set_column(data.column_names.index(name), name, computed)
            continue
        same = pc.or_(
            pc.fill_null(pc.equal(col.combine_chunks(), computed), False),
            pc.and_(pc.is_null(col.combine_chunks()), pc.is_null(computed)),
        )
        if not pc.all(same).as_py():
            i = int(pc.index(same, False).as_py())
            raise WriteRefusedError(
                f"generated column {name!r}: value {col[i].as_py()!r} differs from its generation expression {expr!r} "
                f"({computed[i].as_py()!r}); nothing was written"
            )
    # Identity columns.
    for name, ident in (identity_columns(meta_for_rules) if identity else {}).items():
        col = data.column(name)
        given = len(col) - col.null_count
        if given and not ident.allow_explicit_insert:
            raise WriteRefusedError(
                f"identity column {name!r} is GENERATED ALWAYS: {given} rows give explicit values (leave the column out)"
            )
        missing = col.null_count
        if given:  # explicit values (allowed) move the high-water mark too
            extreme = (pc.max if ident.step > 0 else pc.min)(col).as_py()
            beyond = ident.high_water_mark is None or (extreme - ident.high_water_mark) * ident.step > 0
            if beyond:
                ident = replace(ident, high_water_mark=extreme)
        if not missing:
            if given and ident.high_water_mark is not None:
                f = schema.field(name)
                if f.metadata.get("delta.identity.highWaterMark") != ident.high_water_mark:
                    new_fields[name] = replace(f, metadata={**f.metadata, "delta.identity.highWaterMark": ident.high_water_mark})
            continue
        values, hwm = ident.next_values(missing)
        mask = pc.is_null(col.combine_chunks())
        filled = pc.replace_with_mask(col.combine_chunks(), mask, pa.array(values, pa.int64()))
        data = data.set_column(data.column_names.index(name), name, filled)
        f = schema.field(name)
        new_fields[name] = replace(f, metadata={**f.metadata, "delta.identity.highWaterMark": hwm})
    _check_not_null(data, schema)
    for rule in constraint_rules(meta_for_rules):
        _violations(data, rule)
    if new_fields:
        schema = StructType(tuple(new_fields.get(f.name, f) for f in schema.fields))
    if schema_json(schema) != metadata.schema_string:
        return data, replace(metadata, schema_string=schema_json(schema))
    return data, None


def _check_not_null(data: pa.Table, schema: StructType) -> None:
    for f in schema.fields:
        _not_null(data.column(f.name).combine_chunks(), f, f.name, None)


def _not_null(arr: pa.Array, f: StructField, path: str, parent_valid: pa.Array | None) -> None:
    valid_here = pc.is_valid(arr)
    if not f.nullable:
        bad = pc.invert(valid_here) if parent_valid is None else pc.and_(parent_valid, pc.invert(valid_here))
        n = int(pc.sum(bad.cast(pa.int64())).as_py() or 0) if len(bad) else 0
        if n:
            raise WriteRefusedError(f"column {path!r} is NOT NULL but {n} rows are null; nothing was written")
    if isinstance(f.type, StructType) and pa.types.is_struct(arr.type):
        valid = valid_here if parent_valid is None else pc.and_(parent_valid, valid_here)
        for i, child in enumerate(f.type.fields):
            _not_null(arr.field(i), child, f"{path}.{child.name}", valid)
