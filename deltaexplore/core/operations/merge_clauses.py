"""MERGE clauses as plain data, and their SQL text resolved against the source and the target.

A clause is what Delta's builder makes: `kind` (matched, not_matched, not_matched_by_source),
`action` (update, delete, insert), an optional condition, and assignments (target column -> SQL
expression) or none for "all columns" (`UPDATE SET *` / `INSERT *`). The constructors are named
after delta-spark's and delta-rs's builder methods (`when_matched_update(...)`, ...).

Conditions and values are SQL text over both sides. A column is named `<alias>.<column>` (the
aliases are the caller's: `source`/`target` by default) or bare when only one side has it.
`resolve_sql` qualifies every column reference once, so both engines evaluate the same text:

- `ResolvedSql.sql`: Spark SQL over a join of the source and target DataFrames aliased `source`
  and `target` (`` `source`.`id` = `target`.`id` ``);
- `ResolvedSql.polars`: the same expression over one flat frame whose columns are named
  `source.<column>` / `target.<column>` (what the local engine builds; polars SQL).

Which side a clause may refer to follows Delta: matched clauses both, not-matched (insert)
clauses the source only, not-matched-by-source clauses the target only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from deltaexplore.errors import InvalidArgumentError, WriteRefusedError

__all__ = [
    "ACTIONS",
    "KINDS",
    "MATCHED",
    "NOT_MATCHED",
    "NOT_MATCHED_BY_SOURCE",
    "SOURCE",
    "TARGET",
    "MergeClause",
    "ResolvedSql",
    "Sides",
    "flat_name",
    "resolve_sql",
    "split_conjuncts",
    "when_matched_delete",
    "when_matched_update",
    "when_matched_update_all",
    "when_not_matched_by_source_delete",
    "when_not_matched_by_source_update",
    "when_not_matched_insert",
    "when_not_matched_insert_all",
]

MATCHED, NOT_MATCHED, NOT_MATCHED_BY_SOURCE = "matched", "not_matched", "not_matched_by_source"
KINDS = (MATCHED, NOT_MATCHED, NOT_MATCHED_BY_SOURCE)
#: the actions each kind of clause may take
ACTIONS = {MATCHED: ("update", "delete"), NOT_MATCHED: ("insert",), NOT_MATCHED_BY_SOURCE: ("update", "delete")}
SOURCE, TARGET = "source", "target"
_LABEL = {MATCHED: "WHEN MATCHED", NOT_MATCHED: "WHEN NOT MATCHED", NOT_MATCHED_BY_SOURCE: "WHEN NOT MATCHED BY SOURCE"}


@dataclass(frozen=True)
class MergeClause:
    """One WHEN clause of a MERGE (see the module docstring).

    `assignments` is None for an update or insert of all columns, a mapping of target column ->
    SQL expression otherwise, and None for a delete.
    """

    kind: str
    action: str
    condition: str | None = None
    assignments: Mapping[str, str] | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise InvalidArgumentError(f"MERGE clause kind must be one of {KINDS}, got {self.kind!r}")
        if self.action not in ACTIONS[self.kind]:
            raise InvalidArgumentError(f"a {_LABEL[self.kind]} clause can {' or '.join(ACTIONS[self.kind])}, not {self.action!r}")
        if self.condition is not None and (not isinstance(self.condition, str) or not self.condition.strip()):
            raise InvalidArgumentError(f"a MERGE clause condition must be SQL text, got {self.condition!r}")
        if self.assignments is not None:
            if self.action == "delete":
                raise InvalidArgumentError("a DELETE clause of a MERGE takes no assignments")
            if not isinstance(self.assignments, Mapping) or not self.assignments:
                raise InvalidArgumentError(f"MERGE {self.action} assignments must be a non-empty dict, got {self.assignments!r}")
            for name, expr in self.assignments.items():
                if not isinstance(name, str) or not isinstance(expr, (str, int, float, bool)):
                    raise InvalidArgumentError(
                        f"MERGE {self.action} assignments map column names to SQL text, got {name!r}: {expr!r}"
                    )
            object.__setattr__(self, "assignments", {k: str(v) for k, v in self.assignments.items()})

    @property
    def all_columns(self) -> bool:
        """`UPDATE SET *` / `INSERT *`: every target column from the source column of its name."""
        return self.action != "delete" and self.assignments is None

    @property
    def label(self) -> str:
        """The clause as Delta's SQL writes it, for messages."""
        what = self.action.upper() + (" *" if self.all_columns else "")
        cond = f" AND {self.condition}" if self.condition else ""
        return f"{_LABEL[self.kind]}{cond} THEN {what}"


def when_matched_update(set: Mapping[str, str], condition: str | None = None) -> MergeClause:
    """WHEN MATCHED [AND condition] THEN UPDATE SET column = expression, ..."""
    return MergeClause(MATCHED, "update", condition, set)


def when_matched_update_all(condition: str | None = None) -> MergeClause:
    """WHEN MATCHED [AND condition] THEN UPDATE SET * (every target column from the source)."""
    return MergeClause(MATCHED, "update", condition)


def when_matched_delete(condition: str | None = None) -> MergeClause:
    """WHEN MATCHED [AND condition] THEN DELETE."""
    return MergeClause(MATCHED, "delete", condition)


def when_not_matched_insert(values: Mapping[str, str], condition: str | None = None) -> MergeClause:
    """WHEN NOT MATCHED [AND condition] THEN INSERT (column, ...) VALUES (expression, ...);
    columns not given are null (generated and identity columns are computed)."""
    return MergeClause(NOT_MATCHED, "insert", condition, values)


def when_not_matched_insert_all(condition: str | None = None) -> MergeClause:
    """WHEN NOT MATCHED [AND condition] THEN INSERT * (every target column from the source)."""
    return MergeClause(NOT_MATCHED, "insert", condition)


def when_not_matched_by_source_update(set: Mapping[str, str], condition: str | None = None) -> MergeClause:
    """WHEN NOT MATCHED BY SOURCE [AND condition] THEN UPDATE SET column = expression, ...
    (target columns only)."""
    return MergeClause(NOT_MATCHED_BY_SOURCE, "update", condition, set)


def when_not_matched_by_source_delete(condition: str | None = None) -> MergeClause:
    """WHEN NOT MATCHED BY SOURCE [AND condition] THEN DELETE."""
    return MergeClause(NOT_MATCHED_BY_SOURCE, "delete", condition)


# -- resolving SQL text ------------------------------------------------------------------------

_TOKEN = re.compile(
    r"""
      (?P<ws>\s+)
    | (?P<str>'(?:[^'\\]|\\.|'')*')
    | (?P<dq>"(?:[^"]|"")*")
    | (?P<bq>`(?:[^`]|``)*`)
    | (?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?[A-Za-z]*)
    | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
    | (?P<dot>\.)
    | (?P<op><=>|::|<=|>=|<>|!=|==|\|\||[-+*/%=<>(),\[\]!&|^~:;?{}])
    """,
    re.VERBOSE,
)
#: words that are never column names unless quoted
_RESERVED = frozenset(
    "AND OR NOT IS NULL TRUE FALSE IN BETWEEN LIKE ILIKE RLIKE REGEXP CASE WHEN THEN ELSE END AS DISTINCT ESCAPE".split()
)
#: words that are syntax where no column of that name exists (EXTRACT(YEAR FROM ts), INTERVAL units)
_SOFT = frozenset(
    "FROM FOR DATE TIMESTAMP TIMESTAMP_NTZ INTERVAL YEAR YEARS MONTH MONTHS WEEK WEEKS DAY DAYS HOUR HOURS MINUTE "
    "MINUTES SECOND SECONDS MILLISECOND MILLISECONDS MICROSECOND MICROSECONDS QUARTER DOW DOY EPOCH TO BOTH LEADING "
    "TRAILING UNKNOWN".split()
)


@dataclass(frozen=True)
class Sides:
    """The columns a piece of SQL may refer to: side name -> column names (target first), and
    the aliases the caller writes for each side."""

    columns: Mapping[str, tuple[str, ...]]
    aliases: Mapping[str, str] = field(default_factory=lambda: {SOURCE: SOURCE, TARGET: TARGET})

    def find(self, side: str, name: str) -> str | None:
        """The column of `side` called `name` (case-insensitively), or None."""
        lower = name.lower()
        return next((c for c in self.columns.get(side, ()) if c.lower() == lower), None)


@dataclass(frozen=True)
class ResolvedSql:
    """SQL text with every column reference qualified (see the module docstring).

    `text` is what the caller wrote; `bare` the text with columns unqualified (for the file
    pruning parser, on one side's terms); `references` the (side, column) pairs it uses;
    `column` the one (side, column) when the whole expression is that column (no function, no
    field).
    """

    text: str
    sql: str
    polars: str
    bare: str
    references: frozenset[tuple[str, str]]
    column: tuple[str, str] | None = None

    @property
    def sides(self) -> set[str]:
        return {side for side, _ in self.references}


def flat_name(side: str, column: str) -> str:
    """The local engine's name for a column of one side in the joined frame."""
    return f"{side}.{column}"


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _tokens(text: str, what: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise WriteRefusedError(f"cannot read {what} {text!r} at {text[pos : pos + 20]!r}")
        kind = m.lastgroup or "op"
        out.append((kind, m.group(0)))
        pos = m.end()
    return out


def _unquote(kind: str, raw: str) -> str:
    return raw[1:-1].replace("``", "`") if kind == "bq" else raw


def _next(tokens: list[tuple[str, str]], i: int) -> tuple[str, str] | None:
    while i < len(tokens) and tokens[i][0] == "ws":
        i += 1
    return tokens[i] if i < len(tokens) else None


def _previous(tokens: list[tuple[str, str]], i: int) -> tuple[str, str] | None:
    i -= 1
    while i >= 0 and tokens[i][0] == "ws":
        i -= 1
    return tokens[i] if i >= 0 else None


def resolve_sql(text: str, sides: Sides, allowed: tuple[str, ...], *, what: str) -> ResolvedSql:
    """Qualify every column reference of `text` (a condition or a value).

    Args:
        text: SQL as the caller wrote it.
        sides: the columns of the source and target, and the aliases that name them.
        allowed: the sides this piece of SQL may refer to.
        what: what the text is, for messages ("the ON condition", "UPDATE value of column x").

    Raises:
        WriteRefusedError: an unknown column, a column both sides have written bare, a side the
            clause may not refer to, text that cannot be read.
    """
    if not isinstance(text, str) or not text.strip():
        raise WriteRefusedError(f"{what} must be SQL text, got {text!r}")
    tokens = _tokens(text, what)
    spark: list[str] = []
    local: list[str] = []
    bare: list[str] = []
    refs: set[tuple[str, str]] = set()
    whole: list[tuple[str, str]] = []
    significant = 0
    i = 0
    while i < len(tokens):
        kind, raw = tokens[i]
        if kind not in ("word", "bq"):
            spark.append(raw)
            local.append(raw)
            bare.append(raw)
            significant += kind != "ws"
            i += 1
            continue
        significant += 1
        parts = [(kind, raw)]
        j = i + 1
        while j + 1 < len(tokens) and tokens[j][0] == "dot" and tokens[j + 1][0] in ("word", "bq"):
            parts.append(tokens[j + 1])
            j += 2
        nxt, prev = _next(tokens, j), _previous(tokens, i)
        upper = raw.upper() if kind == "word" else ""
        single_word = len(parts) == 1 and kind == "word"
        is_syntax = (
            (single_word and (upper in _RESERVED or (nxt is not None and nxt[1] == "(")))
            or (prev is not None and (prev[1].upper() == "AS" or prev[1] == "::"))
            or (single_word and nxt is not None and nxt[0] == "str")  # DATE '2024-01-01', INTERVAL '1' DAY
        )
        ref = None if is_syntax else _reference([_unquote(k, r) for k, r in parts], sides, allowed, soft=single_word, what=what)
        if ref is None:
            text_here = "".join(r for _, r in tokens[i:j])
            spark.append(text_here)
            local.append(text_here)
            bare.append(text_here)
        else:
            side, column, fields = ref
            refs.add((side, column))
            whole.append((side, column) if not fields else ("", ""))
            tail = "".join("." + _quote(f) for f in fields)
            spark.append(f"{_quote(side)}.{_quote(column)}{tail}")
            local.append(_quote(flat_name(side, column)) + tail)
            bare.append(_quote(column) + tail)
        i = j
    single = whole[0] if len(whole) == 1 and significant == 1 and whole[0][0] else None
    return ResolvedSql(text, "".join(spark).strip(), "".join(local).strip(), "".join(bare).strip(), frozenset(refs), single)


def _reference(
    parts: list[str], sides: Sides, allowed: tuple[str, ...], *, soft: bool, what: str
) -> tuple[str, str, list[str]] | None:
    """(side, column, struct fields) of a reference written as `parts`; None when a bare
    syntax word (`_SOFT`) names no column."""
    head = parts[0].lower()
    if len(parts) >= 2:
        for side, alias in sides.aliases.items():
            if head == alias.lower():
                if side not in allowed:
                    raise WriteRefusedError(f"{what} refers to {parts[0]}.{parts[1]}: it may only use {_side_words(allowed)}")
                column = sides.find(side, parts[1])
                if column is None:
                    raise WriteRefusedError(
                        f"{what}: the {side} has no column {parts[1]!r} (its columns: {', '.join(sides.columns.get(side, ()))})"
                    )
                return side, column, parts[2:]
    found = [(side, c) for side in allowed if (c := sides.find(side, parts[0])) is not None]
    if len(found) > 1:
        a = sides.aliases
        raise WriteRefusedError(
            f"{what}: column {parts[0]!r} is ambiguous (both the source and the target have it); "
            f"write {a[SOURCE]}.{parts[0]} or {a[TARGET]}.{parts[0]}"
        )
    if found:
        return found[0][0], found[0][1], parts[1:]
    if soft and parts[0].upper() in _SOFT:
        return None
    others = [side for side in sides.columns if side not in allowed and sides.find(side, parts[0]) is not None]
    if others:
        raise WriteRefusedError(f"{what} refers to {parts[0]!r} of the {others[0]}: it may only use {_side_words(allowed)}")
    names = ", ".join(f"{sides.aliases[s]}.{c}" for s in allowed for c in sides.columns.get(s, ()))
    raise WriteRefusedError(f"{what}: unknown column {'.'.join(parts)!r} (columns: {names})")


def _side_words(allowed: tuple[str, ...]) -> str:
    return " and ".join(f"{s} columns" for s in allowed)


def split_conjuncts(text: str, *, what: str) -> list[str]:
    """The top-level AND terms of a condition (the AND of a BETWEEN stays inside its term)."""
    tokens = _tokens(text, what)
    parts: list[list[str]] = [[]]
    depth = 0
    between = 0
    for kind, raw in tokens:
        if raw == "(":
            depth += 1
        elif raw == ")":
            depth -= 1
        upper = raw.upper() if kind == "word" else ""
        if depth == 0 and upper == "BETWEEN":
            between += 1
        if depth == 0 and upper == "AND":
            if between:
                between -= 1
            else:
                parts.append([])
                continue
        parts[-1].append(raw)
    out = ["".join(p).strip() for p in parts]
    if any(not p for p in out):
        raise WriteRefusedError(f"cannot read {what} {text!r}: an AND without a term")
    return out


def equality_sides(text: str, *, what: str) -> tuple[str, str] | None:
    """`(left, right)` when `text` is one top-level `a = b` (nothing else at its top level but
    arithmetic, function calls and parentheses); else None."""
    tokens = _tokens(text, what)
    depth = 0
    at: int | None = None
    for i, (kind, raw) in enumerate(tokens):
        if raw == "(":
            depth += 1
        elif raw == ")":
            depth -= 1
        elif depth == 0:
            if raw in ("=", "=="):
                if at is not None:
                    return None
                at = i
            elif (kind == "word" and raw.upper() in _RESERVED) or raw in ("<", ">", "<=", ">=", "<>", "!=", "<=>"):
                return None
    if at is None:
        return None
    left = "".join(r for _, r in tokens[:at]).strip()
    right = "".join(r for _, r in tokens[at + 1 :]).strip()
    return (left, right) if left and right else None


def clause_list(clauses: Any) -> list[MergeClause]:
    """The clauses of a MERGE, checked as Delta checks them.

    Raises:
        InvalidArgumentError: not a list of `MergeClause`, or none.
        WriteRefusedError: a clause other than the last of its kind without a condition (it would
            hide the ones after it).
    """
    if isinstance(clauses, MergeClause):
        clauses = [clauses]
    if not isinstance(clauses, (list, tuple)) or not all(isinstance(c, MergeClause) for c in clauses):
        raise InvalidArgumentError(
            "MERGE clauses must be a list of MergeClause (when_matched_update(...), when_not_matched_insert_all(), ...), "
            f"got {clauses!r}"
        )
    if not clauses:
        raise InvalidArgumentError("a MERGE needs at least one WHEN clause")
    for kind in KINDS:
        of_kind = [c for c in clauses if c.kind == kind]
        for c in of_kind[:-1]:
            if c.condition is None:
                raise WriteRefusedError(
                    f"only the last {_LABEL[kind]} clause may omit its condition: {c.label} comes before "
                    f"{len(of_kind) - 1 - of_kind.index(c)} more (Delta: DELTA_NON_LAST_{kind.upper()}_CLAUSE_OMIT_CONDITION)"
                )
    return list(clauses)
