"""Which values `==` may compare (Futhark's rule, checked after inference).

Unification already keeps functions away from `==` (the operand's type
variable carries the "equality" constraint).  What it cannot see is a type
that stays a variable: a type parameter (`def f 't (x: t) = x == x`) or an
operand type nothing determines, which the declaration would make a type
parameter (`def eq x y = x == y`).  Futhark compares only primitive values
and arrays, tuples and records of them, so it rejects both, once the whole
declaration is inferred.  As in Futhark, only the built-in `==` is checked
(not `!=`, nor sections).
"""

from __future__ import annotations

from futgen.errors import CompileError, Loc
from futgen.frontend.types import Array, Record, Scalar, Tuple, Type
from futgen.frontend.unify import Unifier


def check_equalities(comparisons: list[tuple[Loc, Type]], u: Unifier) -> None:
    """Raise for the first `==` (at its operator's location, with its
    operands' type) whose values do not support equality."""
    for loc, t in comparisons:
        t = u.zonk(t)
        if not supports_equality(t):
            unknown = ("\n(nothing determines the operands' type: give it, as in `(x: i32)`)"
                       if "?" in str(t) else "")
            raise CompileError(f"Comparing equality of values of type\n  {t}\n"
                               f"which does not support equality.{unknown}", loc)


def supports_equality(t: Type) -> bool:
    """Whether values of (resolved) type `t` may be compared with `==`."""
    match t:
        case Scalar():
            return True
        case Array(elem, _, _):
            return supports_equality(elem)
        case Tuple(es):
            return all(supports_equality(x) for x in es)
        case Record(fs):
            return all(supports_equality(x) for _, x in fs)
    return False  # a function or a type variable
