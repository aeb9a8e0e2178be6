"""Filters for scans: parsed once, evaluated on rows (exact) and on files (may match?).

Accepted forms: SQL-like text (``date >= '2024-01-01' AND (id IN (1, 2) OR name IS NULL)``),
DNF tuples as in pyarrow (``[("date", ">=", "2024-01-01"), ("id", "=", 5)]``, or a list of such
lists for OR), or an `Expr`. File pruning is conservative: a file is skipped only when its
partition values or min/max/null-count statistics prove no row can match.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.errors import DeltaExploreError

__all__ = [
    "And",
    "Cmp",
    "Expr",
    "In",
    "IsNull",
    "Not",
    "Or",
    "PredicateError",
    "lower_literals",
    "parse_predicate",
    "typed_literal",
]


class PredicateError(DeltaExploreError, ValueError):
    """A filter cannot be parsed or refers to an unknown column."""


_NEGATE = {"=": "!=", "!=": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}


class Expr:
    """A boolean filter expression."""

    def columns(self) -> set[str]:
        raise NotImplementedError

    def negate(self) -> Expr:
        raise NotImplementedError

    def to_arrow(self, types: dict[str, pa.DataType]) -> pc.Expression:
        raise NotImplementedError

    def may_match(self, env: FileEnv) -> np.ndarray:
        """Per file: False only where no row can satisfy the expression."""
        raise NotImplementedError


@dataclass(frozen=True)
class Cmp(Expr):
    column: str
    op: str
    value: Any

    def columns(self) -> set[str]:
        return {self.column}

    def negate(self) -> Expr:
        return Cmp(self.column, _NEGATE[self.op], self.value)

    def to_arrow(self, types: dict[str, pa.DataType]) -> pc.Expression:
        field = _field(self.column)
        lit = typed_literal(self.value, types.get(self.column))
        return {
            "=": field == lit,
            "!=": field != lit,
            "<": field < lit,
            "<=": field <= lit,
            ">": field > lit,
            ">=": field >= lit,
        }[self.op]

    def may_match(self, env: FileEnv) -> np.ndarray:
        stats = env.get(self.column)
        if stats is None:
            return env.all_true()
        lo, hi, _, _ = stats
        lit = typed_literal(self.value, lo.type)
        if self.op == "=":
            keep = pc.and_kleene(pc.less_equal(lo, lit), pc.greater_equal(hi, lit))
        elif self.op == "!=":
            keep = pc.invert(pc.and_kleene(pc.equal(lo, lit), pc.equal(hi, lit)))
        elif self.op == "<":
            keep = pc.less(lo, lit)
        elif self.op == "<=":
            keep = pc.less_equal(lo, lit)
        elif self.op == ">":
            keep = pc.greater(hi, lit)
        else:
            keep = pc.greater_equal(hi, lit)
        if env.exact:
            return pc.fill_null(keep, False).to_numpy(zero_copy_only=False).astype(bool)
        return _true_unless_false(keep)


@dataclass(frozen=True)
class In(Expr):
    column: str
    values: tuple[Any, ...]
    negated: bool = False

    def columns(self) -> set[str]:
        return {self.column}

    def negate(self) -> Expr:
        return In(self.column, self.values, not self.negated)

    def to_arrow(self, types: dict[str, pa.DataType]) -> pc.Expression:
        typ = types.get(self.column)
        values = (
            pa.array([typed_literal(v, typ).as_py() for v in self.values], typ)
            if typ is not None
            else pa.array(list(self.values))
        )
        expr = pc.field(*self.column.split(".")).isin(values)
        return ~expr if self.negated else expr

    def may_match(self, env: FileEnv) -> np.ndarray:
        if self.negated or not self.values:
            return env.all_true() if self.negated else np.zeros(env.n, dtype=bool)
        masks = [Cmp(self.column, "=", v).may_match(env) for v in self.values]
        return np.logical_or.reduce(masks)


@dataclass(frozen=True)
class IsNull(Expr):
    column: str
    negated: bool = False

    def columns(self) -> set[str]:
        return {self.column}

    def negate(self) -> Expr:
        return IsNull(self.column, not self.negated)

    def to_arrow(self, types: dict[str, pa.DataType]) -> pc.Expression:
        expr = _field(self.column).is_null()
        return ~expr if self.negated else expr

    def may_match(self, env: FileEnv) -> np.ndarray:
        stats = env.get(self.column)
        if stats is None:
            return env.all_true()
        _, _, nulls, rows = stats
        if nulls is None:
            return env.all_true()
        if not self.negated:
            return _true_unless_false(pc.greater(nulls, 0))
        if rows is None:
            return env.all_true()
        return _true_unless_false(pc.less(nulls, rows))


@dataclass(frozen=True)
class And(Expr):
    children: tuple[Expr, ...]

    def columns(self) -> set[str]:
        return set().union(*(c.columns() for c in self.children))

    def negate(self) -> Expr:
        return Or(tuple(c.negate() for c in self.children))

    def to_arrow(self, types: dict[str, pa.DataType]) -> pc.Expression:
        out = self.children[0].to_arrow(types)
        for c in self.children[1:]:
            out = out & c.to_arrow(types)
        return out

    def may_match(self, env: FileEnv) -> np.ndarray:
        return np.logical_and.reduce([c.may_match(env) for c in self.children])


@dataclass(frozen=True)
class Or(Expr):
    children: tuple[Expr, ...]

    def columns(self) -> set[str]:
        return set().union(*(c.columns() for c in self.children))

    def negate(self) -> Expr:
        return And(tuple(c.negate() for c in self.children))

    def to_arrow(self, types: dict[str, pa.DataType]) -> pc.Expression:
        out = self.children[0].to_arrow(types)
        for c in self.children[1:]:
            out = out | c.to_arrow(types)
        return out

    def may_match(self, env: FileEnv) -> np.ndarray:
        return np.logical_or.reduce([c.may_match(env) for c in self.children])


def Not(child: Expr) -> Expr:
    """Negation, pushed down to the leaves."""
    return child.negate()


def lower_literals(expr: Expr, columns: frozenset[str]) -> Expr:
    """`expr` with its string literals lower-cased where it compares one of `columns` (a
    case-insensitive comparison, spark.UTF8_LCASE, is a comparison of lower-cased values)."""
    if isinstance(expr, Cmp) and expr.column in columns and isinstance(expr.value, str):
        return Cmp(expr.column, expr.op, expr.value.lower())
    if isinstance(expr, In) and expr.column in columns:
        return In(expr.column, tuple(v.lower() if isinstance(v, str) else v for v in expr.values), expr.negated)
    if isinstance(expr, And):
        return And(tuple(lower_literals(c, columns) for c in expr.children))
    if isinstance(expr, Or):
        return Or(tuple(lower_literals(c, columns) for c in expr.children))
    return expr


@dataclass(frozen=True)
class Literal(Expr):
    """TRUE or FALSE."""

    value: bool

    def columns(self) -> set[str]:
        return set()

    def negate(self) -> Expr:
        return Literal(not self.value)

    def to_arrow(self, types: dict[str, pa.DataType]) -> pc.Expression:
        return pc.scalar(self.value)

    def may_match(self, env: FileEnv) -> np.ndarray:
        return np.full(env.n, self.value, dtype=bool)


class FileEnv:
    """Per-file bounds of columns: column -> (min, max, null_count or None, num_records or None)."""

    def __init__(
        self,
        n: int,
        lookup: Callable[[str], tuple[pa.Array, pa.Array, pa.Array | None, pa.Array | None] | None],
        *,
        exact: bool = False,
    ) -> None:
        self.n = n
        self._lookup = lookup
        #: bounds are exact single values (partition columns): a null value matches no comparison
        self.exact = exact

    def get(self, column: str) -> tuple[pa.Array, pa.Array, pa.Array | None, pa.Array | None] | None:
        return self._lookup(column)

    def all_true(self) -> np.ndarray:
        return np.ones(self.n, dtype=bool)


def _true_unless_false(mask: pa.Array) -> np.ndarray:
    return pc.fill_null(mask, True).to_numpy(zero_copy_only=False).astype(bool)


def _field(column: str) -> pc.Expression:
    return pc.field(*column.split(".")) if "." in column else pc.field(column)


def typed_literal(value: Any, typ: pa.DataType | None) -> pa.Scalar:
    """A predicate's literal as a scalar of the column's type `typ` (ISO text for dates and
    timestamps; a float stays a float against an integer column, compared numerically).

    Raises:
        PredicateError: the value cannot be compared with such a column.
    """
    if isinstance(value, pa.Scalar):
        scalar = value
    elif typ is not None and pa.types.is_timestamp(typ) and isinstance(value, str):
        text = value.strip().replace("Z", "+00:00").replace(" ", "T", 1)
        parsed = dt.datetime.fromisoformat(text)
        if typ.tz is not None and parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=dt.UTC)
        if typ.tz is None and parsed.tzinfo is not None:
            parsed = parsed.astimezone(dt.UTC).replace(tzinfo=None)
        return pa.scalar(parsed, typ)
    elif typ is not None and pa.types.is_date(typ) and isinstance(value, str):
        return pa.scalar(dt.date.fromisoformat(value.strip()[:10]), typ)
    elif typ is not None and pa.types.is_decimal(typ) and not isinstance(value, Decimal):
        return pa.scalar(Decimal(str(value))).cast(typ)
    else:
        scalar = pa.scalar(value)
    if typ is None or scalar.type == typ:
        return scalar
    try:
        return scalar.cast(typ)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        if pa.types.is_floating(scalar.type) and pa.types.is_integer(typ):
            return scalar  # compare numerically
        raise PredicateError(f"cannot compare a {typ} column with {value!r}: {exc}") from exc


# -- parsing ---------------------------------------------------------------------------------

_TOKEN = re.compile(
    r"""\s*(?:
      (?P<num>-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)
    | '(?P<str>(?:[^']|'')*)'
    | "(?P<dq>(?:[^"]|"")*)"
    | `(?P<bq>(?:[^`]|``)*)`
    | (?P<op><=|>=|!=|<>|==|=|<|>|\(|\)|,)
    | (?P<word>[A-Za-z_][A-Za-z0-9_.]*)
    )""",
    re.VERBOSE,
)


def _tokenize(text: str, spelling: dict[int, str] | None = None) -> list[tuple[str, Any]]:
    """Tokens of a filter; `spelling` receives the original text of keyword tokens by index."""
    tokens: list[tuple[str, Any]] = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise PredicateError(f"cannot parse filter at {text[pos : pos + 20]!r}")
        pos = m.end()
        if m.group("num") is not None:
            s = m.group("num")
            tokens.append(("lit", float(s) if any(c in s for c in ".eE") else int(s)))
        elif m.group("str") is not None:
            tokens.append(("lit", m.group("str").replace("''", "'")))
        elif m.group("dq") is not None:
            tokens.append(("lit", m.group("dq").replace('""', '"')))
        elif m.group("bq") is not None:
            tokens.append(("ident", m.group("bq").replace("``", "`")))
        elif m.group("op") is not None:
            op = m.group("op")
            tokens.append(("op", {"<>": "!=", "==": "="}.get(op, op)))
        else:
            word = m.group("word")
            upper = word.upper()
            if upper in ("AND", "OR", "NOT", "IN", "IS", "NULL", "DATE", "TIMESTAMP", "BETWEEN"):
                if spelling is not None:
                    spelling[len(tokens)] = word
                tokens.append(("kw", upper))
            elif upper in ("TRUE", "FALSE"):
                tokens.append(("lit", upper == "TRUE"))
            else:
                tokens.append(("ident", word))
        while pos < len(text) and text[pos].isspace():
            pos += 1
    return tokens


class _Parser:
    def __init__(self, text: str) -> None:
        self.spelling: dict[int, str] = {}
        self.tokens = _tokenize(text, self.spelling)
        self.i = 0
        self.text = text

    def peek(self) -> tuple[str, Any] | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self, kind: str | None = None, value: Any = None) -> tuple[str, Any]:
        tok = self.peek()
        if tok is None or (kind and tok[0] != kind) or (value is not None and tok[1] != value):
            want = value or kind or "more input"
            raise PredicateError(f"filter {self.text!r}: expected {want}, found {tok[1] if tok else 'end of input'!r}")
        self.i += 1
        return tok

    def parse(self) -> Expr:
        expr = self.or_()
        if self.peek() is not None:
            raise PredicateError(f"filter {self.text!r}: unexpected {self.peek()[1]!r}")  # type: ignore[index]
        return expr

    def or_(self) -> Expr:
        parts = [self.and_()]
        while self.peek() == ("kw", "OR"):
            self.take()
            parts.append(self.and_())
        return parts[0] if len(parts) == 1 else Or(tuple(parts))

    def and_(self) -> Expr:
        parts = [self.not_()]
        while self.peek() == ("kw", "AND"):
            self.take()
            parts.append(self.not_())
        return parts[0] if len(parts) == 1 else And(tuple(parts))

    def not_(self) -> Expr:
        if self.peek() == ("kw", "NOT"):
            self.take()
            return self.not_().negate()
        return self.atom()

    def literal(self) -> Any:
        tok = self.peek()
        if tok in (("kw", "DATE"), ("kw", "TIMESTAMP")):
            self.take()
            return self.take("lit")[1]
        if tok == ("kw", "NULL"):
            self.take()
            return None
        return self.take("lit")[1]

    def atom(self) -> Expr:
        tok = self.peek()
        if tok == ("op", "("):
            self.take()
            inner = self.or_()
            self.take("op", ")")
            return inner
        if tok is not None and tok[0] == "lit" and isinstance(tok[1], bool):
            self.take()
            return Literal(tok[1])
        if tok is not None and tok[0] == "kw" and tok[1] in ("DATE", "TIMESTAMP"):
            # `date` and `timestamp` are common column names: keywords only before a literal.
            self.tokens[self.i] = ("ident", self.spelling.get(self.i, tok[1].lower()))
        column = self.take("ident")[1]
        tok = self.peek()
        if tok == ("kw", "IS"):
            self.take()
            negated = False
            if self.peek() == ("kw", "NOT"):
                self.take()
                negated = True
            self.take("kw", "NULL")
            return IsNull(column, negated)
        negated = False
        if tok == ("kw", "NOT"):
            self.take()
            negated = True
            tok = self.peek()
        if tok == ("kw", "IN"):
            self.take()
            self.take("op", "(")
            values = [self.literal()]
            while self.peek() == ("op", ","):
                self.take()
                values.append(self.literal())
            self.take("op", ")")
            return In(column, tuple(values), negated)
        if tok == ("kw", "BETWEEN"):
            self.take()
            lo = self.literal()
            self.take("kw", "AND")
            hi = self.literal()
            expr: Expr = And((Cmp(column, ">=", lo), Cmp(column, "<=", hi)))
            return expr.negate() if negated else expr
        op = self.take("op")[1]
        if op not in _NEGATE:
            raise PredicateError(f"filter {self.text!r}: expected a comparison after {column!r}, found {op!r}")
        value = self.literal()
        if value is None:
            raise PredicateError(f"filter {self.text!r}: use IS NULL / IS NOT NULL to compare with NULL")
        return Cmp(column, op, value)


def _from_tuple(t: Any) -> Expr:
    if not isinstance(t, (tuple, list)) or len(t) != 3:
        raise PredicateError(f"expected a (column, op, value) tuple, got {t!r}")
    column, op, value = t
    op = str(op).strip().lower()
    if op in ("in", "not in"):
        return In(str(column), tuple(value), op == "not in")
    op = {"==": "=", "<>": "!="}.get(op, op)
    if op not in _NEGATE:
        raise PredicateError(f"unknown operator {op!r} in {t!r}")
    if value is None:
        return IsNull(str(column), op == "!=")
    return Cmp(str(column), op, value)


def parse_predicate(where: Any) -> Expr | None:
    """An `Expr` from text, DNF tuples or an `Expr` (None stays None).

    Raises:
        PredicateError: the filter cannot be parsed.
    """
    if where is None:
        return None
    if isinstance(where, Expr):
        return where
    if isinstance(where, str):
        return _Parser(where).parse() if where.strip() else None
    if isinstance(where, (list, tuple)):
        if not where:
            return None
        if all(isinstance(x, (list, tuple)) and x and isinstance(x[0], (list, tuple)) for x in where):
            return Or(tuple(And(tuple(_from_tuple(t) for t in conj)) for conj in where))
        return And(tuple(_from_tuple(t) for t in where))
    raise PredicateError(f"unsupported filter {where!r}: use SQL-like text or (column, op, value) tuples")
