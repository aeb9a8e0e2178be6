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
)

__all__ = ["And", "Cmp", "Expr", "In", "IsNull", "Not", "Or", "PredicateError", "parse_predicate"]
