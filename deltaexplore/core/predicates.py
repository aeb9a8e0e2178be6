"""The old path of `deltaexplore.core.protocol.predicates`, kept for existing imports."""

from deltaexplore.core.protocol.predicates import (
    And,
    Cmp,
    Expr,
    In,
    IsNull,
    Not,
    Or,
    PredicateError,
    parse_predicate,
    typed_literal,
)

__all__ = ["And", "Cmp", "Expr", "In", "IsNull", "Not", "Or", "PredicateError", "parse_predicate", "typed_literal"]
