"""Loop parameter sizes that cross the loop's scope (Futhark's
`checkLoop`, `Terms/Loop.hs`).

Inside the body each size of a loop parameter is an anonymous size
(`typecheck._loop_sizes`), where Futhark has a size variable made before
the loop.  What the body unifies such a size with can break three of
Futhark's rules, checked here once the body is checked:

    loop xs for i < n do
      let a = zip xs (iota (length xs))  -- 1: a size naming `xs` itself
      let b = zip xs (filter p ys)       -- 2: a size made in the body
      in grow xs zs                      -- 3: `zs` (bound outside) of a
                                         --    size the body changes

1. The size of a parameter may not be one that names a variable bound in
   the loop (Futhark's scope violation): that variable does not exist
   where the parameter's size is made.
2. Nor an existential size made inside the body (the result of `filter`
   or of a function returning `?[k].[k]t`): it is unknown before the loop.
3. A size the body changes (`loops.variant_roots`) may not be given to a
   size made before the loop, as `grow [d] (a: [d]t) (b: [d + 1]t)` does
   when the size of `zs` is inferred: `zs` would have a size of one
   iteration (Futhark's "loop-variant size has escaped").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from futgen.errors import ERROR_INDEX, CompileError, Loc
from futgen.frontend.loops import named_roots, variant_roots
from futgen.frontend.types import (
    AnySize,
    Dim,
    SizeExpr,
    SizeVar,
    Type,
    dim_names,
    dim_pairs,
    written_name,
)
from futgen.frontend.unify import Unifier


@dataclass
class LoopScope:
    """One loop, as the checks see it.

    start: the count of inference names made before the loop's parameter
        sizes (a stamp, `levels.py`): sizes made later are the loop's own,
        and so are variables of a larger stamp (bound after those sizes).
    inside: where the code checked in the loop's scope starts (a `while`
        condition or the body), to tell size expressions written there.
    params: each loop parameter's name and type, of anonymous sizes.
    stamp: the stamp of the variable a name denotes at the loop (None
        when none is in scope).
    loc: the loop parameter's location, where errors are reported.
    """

    start: int
    inside: Loc
    params: list[tuple[str, Type]]
    stamp: Callable[[str], int | None]
    loc: Loc


def check_loop_scope(loop: LoopScope, param: Type, body: Type, inits: dict[Dim, Dim],
                     u: Unifier) -> None:
    """Raise if the loop breaks one of the three rules of the module
    docstring; arguments as for `loops.check_loop_classes`."""
    names = _param_names(loop, u)
    _check_bound_inside(loop, names, u)
    _check_made_inside(loop, param, names, u)
    _check_escaped(loop, variant_roots(param, body, inits, u) - named_roots(u), names, u)


def _param_names(loop: LoopScope, u: Unifier) -> dict[int, str]:
    """The name of the loop parameter each anonymous size root is a size of."""
    return {u.anon_root(d): name for name, t in loop.params
            for d, _ in dim_pairs(t, t) if isinstance(d, AnySize)}


def _check_bound_inside(loop: LoopScope, names: dict[int, str], u: Unifier) -> None:
    """Rule 1: no parameter size unified with a size naming a variable of
    the loop."""
    for i, dims in u.anon_named.items():
        name = names.get(u.anon_root(AnySize(i)))
        if name is None:
            continue
        for d in dims:
            for v in sorted(n for n in dim_names(d) if written_name(n)):
                if _bound_in_loop(v, d, loop, u):
                    raise CompileError(
                        f'Cannot link the size of loop parameter "{name}" to "{d}" (scope '
                        f'violation).\nThis is because "{v}" is not in scope when the size '
                        f'of "{name}" is introduced.\n{ERROR_INDEX}scope-violation', loop.loc)


def _bound_in_loop(v: str, d: Dim, loop: LoopScope, u: Unifier) -> bool:
    """Whether name `v` of size `d` is a variable bound in the loop.  Names
    are compared as written, so a name the loop shadows is one of the loop
    only where `d` is written in it (a size expression there); elsewhere
    only if every variable of that name in scope is the loop's."""
    loc = getattr(d.expr, "loc", None) if isinstance(d, SizeExpr) else None
    if isinstance(loc, Loc) and _within(loc, loop.inside):
        stamp = loop.stamp(v)
        return stamp is None or stamp > loop.start
    oldest = u.levels.stamp_of(v)
    return oldest is not None and oldest > loop.start


def _within(loc: Loc, start: Loc) -> bool:
    """Whether `loc` is at or after `start` in its file."""
    return loc.file == start.file and (loc.line, loc.col) >= (start.line, start.col)


def _check_made_inside(loop: LoopScope, param: Type, names: dict[int, str],
                       u: Unifier) -> None:
    """Rule 2: no parameter size unified with an existential result of a
    call in the loop."""
    for i, (at, call) in u.call_existentials.items():
        name = names.get(u.anon_root(AnySize(i))) if i >= loop.start else None
        if name is not None:
            raise CompileError(
                f"Inferred type for loop parameter is {u.zonk(param)}, but the size of "
                f'"{name}" is an existential size created inside the loop body at {at} '
                f"(the result of {call}).", loop.loc)


def _check_escaped(loop: LoopScope, variant: set[int], names: dict[int, str],
                   u: Unifier) -> None:
    """Rule 3: no size of a callee's size expression made in the loop that
    reads a size the body changes unified with a size made before it."""
    for v, reads in u.expr_sizes.items():
        if u.levels.age(v) < loop.start or not _made_before(v, loop.start, u):
            continue
        for r in reads:
            changed = u.resolved(r)
            root = u.anon_root(changed) if isinstance(changed, AnySize) else None
            if root in variant:
                raise CompileError(
                    "Loop-variant size has escaped into type that occurs outside of loop: "
                    f'the size of loop parameter "{names.get(root, "")}" changes in '
                    "the loop, and a value bound outside the loop would have a size "
                    "computed from it.\nThis is likely because the loop body uses a "
                    "variable whose type depends on the loop parameter.\n"
                    f"{ERROR_INDEX}loop-variant-escape", loop.loc)


def _made_before(v: str, start: int, u: Unifier) -> bool:
    """Whether inference size `v` is (or holds) a size made before stamp
    `start`: an older inference size, an older anonymous size, or an
    anonymous size of a parameter (`levels.py`)."""
    d = u.resolved(SizeVar(v))
    if isinstance(d, AnySize):
        return d.id < start
    if isinstance(d, SizeVar) and d.name.startswith("?n") and u.levels.age(d.name) < start:
        return True
    held = u.levels.param_sizes.get(v)
    return held is not None and held[0] < start
