"""Ambiguous sizes: size parameters nothing determines (Futhark's rule).

When a function with a size parameter is used, the parameter becomes an
inference size that the arguments must determine, and so must the sizes a
`let [n]` binds.  Where nothing does, as for `def f [n] (g: [n]i64 -> i64)`
applied to a lambda whose parameter's size nothing fixes, Futhark rejects
the program: the size is ambiguous.  A size that met an anonymous size (one
known at run time) is determined, and so is one the declaration keeps as
its own (an implicit size parameter) or that a local function's type has
(Futhark generalises local functions).
"""

from __future__ import annotations

from dataclasses import dataclass

from futgen.errors import CompileError, Loc
from futgen.frontend.types import SizeVar, Type, size_var_names
from futgen.frontend.unify import Unifier


@dataclass(frozen=True)
class SizeUse:
    """An inference size made for a size the program names: the size
    parameter `name` of function `function` where it is used (at `loc`), or
    the size `name` of a `let [name]` (`function` None)."""

    name: str
    function: str | None
    loc: Loc

    def message(self) -> str:
        if self.function is None:
            return f'Ambiguous size "{self.name}".'
        return (f'Ambiguous size "{self.name}": instantiated size parameter of '
                f'"{self.function}", which nothing here determines.')


def check_ambiguous(uses: dict[str, SizeUse], u: Unifier, kept: list[Type]) -> None:
    """Raise for the first size in `uses` (inference size -> what it stands
    for) that nothing determined; the sizes of the types in `kept` (the
    declaration's type, local functions' types) are determined by uses."""
    own = set().union(*(size_var_names(u.zonk(t)) for t in kept))
    for var, use in uses.items():
        d = u.dim(SizeVar(var))
        if not isinstance(d, SizeVar) or not d.name.startswith("?"):
            continue
        if d.name in u.weak or d.name in u.met_anonymous or d.name in own:
            continue
        raise CompileError(use.message(), use.loc)
