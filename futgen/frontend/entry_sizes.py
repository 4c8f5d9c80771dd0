"""Sizes of an entry point's result that nothing determines (Futhark's rule).

An anonymous size of a return type annotation (`: [][]i32`) is a size of
the body's.  Where the body leaves it open, as the row size of an empty
array of a polymorphic element (`[] : [0]a` with `a` only made an array by
the annotation), Futhark makes it a size parameter of the function, which
only the result has: an entry point may not be size-polymorphic in its
return type, since nothing outside could choose that size.

Only sizes that the annotation alone made are checked: a size that met a
size of the program (an instance of a size parameter, a size known at run
time) may be one the type checker leaves open where Futhark fixes it.
"""

from __future__ import annotations

from futgen.errors import CompileError, Loc
from futgen.frontend.types import SizeVar, Type, size_var_names, type_dims
from futgen.frontend.unify import Unifier


def check_entry_result_sizes(fname: str, ret: Type, params: list[Type], u: Unifier,
                             loc: Loc) -> None:
    """`ret`: entry point `fname`'s return type as resolved (before the body
    bound its sizes); `params`: its parameters' types."""
    own = {n for n in size_var_names(ret) if n.startswith("?")}
    given = set().union(*(size_var_names(u.zonk(p)) for p in params))
    for d in type_dims(ret):
        root = u.dim(d)
        if not (isinstance(root, SizeVar) and root.name in own) or root.name in given:
            continue
        if _open(root.name, own, u):
            raise CompileError(
                f'Entry point functions must not be size-polymorphic in their return '
                f'type: a size of the return type of "{fname}" ({u.zonk(ret)}) is '
                "determined by nothing.", loc)


def _open(root: str, own: set[str], u: Unifier) -> bool:
    """Whether inference size `root` (unbound) stands only for sizes the
    annotation made, none of which met a size known at run time."""
    members = {root} | {n for n in u.sizes if u.dim(SizeVar(n)) == SizeVar(root)}
    return members <= own and not members & (set(u.weak) | u.met_anonymous)
