"""Loop parameters whose sizes the loop body makes equal (Futhark's loop
size inference, `Terms/Loop.hs`).

Inside a loop body each size of the loop parameter is an anonymous size
(`typecheck._loop_sizes`).  Futhark gives each a fresh inference size
instead, so using two parameters as arrays of one size (`map2 f xs ys`)
makes their sizes one.  A size the body changes is variant, and a variant
size is one size parameter for every place it stands: the body must return
one size for all of them.  Here the unifier records which anonymous sizes
met (`Unifier.anon_links`), and `check_loop_classes` checks that rule:

    loop (xs, ys) for i < 10 do
      let zs = filter (> 0) (map2 (+) xs ys)   -- xs and ys: one size
      in (xs, zs)                              -- but two sizes come back

A group of sizes that also met a known size (a name, a constant) is left
alone: Futhark would have made them that size, a rule not checked here.
"""

from __future__ import annotations

from futgen.errors import CompileError, Loc
from futgen.frontend.types import (
    AnySize,
    Dim,
    SizeConst,
    SizeVar,
    Type,
    dim_pairs,
    written_name,
)
from futgen.frontend.unify import Unifier


def check_loop_classes(
    param: Type, body: Type, inits: dict[Dim, Dim], u: Unifier, body_loc: Loc, init_loc: Loc
) -> None:
    """Raise if the body returns different sizes for loop-parameter sizes
    that it made one size and that change in the loop, or if they start as
    different known sizes.

    Args:
        param: the loop parameter's type inside the body (anonymous sizes).
        body: the body's type.
        inits: each anonymous size of `param` to the initial value's size.
        u: the unifier, with the links between anonymous sizes.
        body_loc, init_loc: the body's and the initial value's locations.
    """
    pairs = _parameter_pairs(param, body, u)
    variant = _variant(pairs, inits, u)
    named = named_roots(u)
    params = {u.anon_root(p) for p, _ in pairs}
    returned: dict[int, set[object]] = {}
    initial: dict[int, set[Dim]] = {}
    for p, b in pairs:
        root = u.anon_root(p)
        if root in named:
            continue
        if root in variant and _distinct(b, params, u):
            returned.setdefault(root, set()).add(_key(b, u))
        if _is_named(u.dim(inits.get(p, p))):
            initial.setdefault(root, set()).add(u.dim(inits[p]))
    if any(len(sizes) > 1 for sizes in returned.values()):
        raise CompileError(
            "Loop body does not have expected type: the loop parameter's sizes "
            "that change in the loop and that the body uses as one size are "
            f"returned as different sizes (the body's type is {u.zonk(body)}).",
            body_loc,
        )
    for sizes in initial.values():
        if len(sizes) > 1:
            raise CompileError(
                "Initial loop values do not have expected type: the loop "
                "parameter's sizes that the body uses as one size start as "
                f"different sizes ({', '.join(sorted(map(str, sizes)))}).",
                init_loc,
            )


def changed_sizes(param: Type, body: Type, result: Type, inits: dict[Dim, Dim],
                  u: Unifier) -> list[Dim]:
    """The sizes of a loop's `result` where the body changes the parameter's
    size: Futhark's existential sizes of the loop, known once it ends.
    Arguments as for `check_loop_classes`."""
    variant = variant_roots(param, body, inits, u)
    return [r for p, r in dim_pairs(param, result)
            if isinstance(p, AnySize) and u.anon_root(p) in variant]


def variant_roots(param: Type, body: Type, inits: dict[Dim, Dim], u: Unifier) -> set[int]:
    """The roots of the sizes of the loop parameter that the body changes
    (Futhark's size parameters of the loop).  Arguments as for
    `check_loop_classes`."""
    return _variant(_parameter_pairs(param, body, u), inits, u)


def named_roots(u: Unifier) -> set[int]:
    """The roots of the anonymous sizes unified with a known size."""
    return {u.anon_root(AnySize(i)) for i in u.anon_named}


def _distinct(d: Dim, params: set[int], u: Unifier) -> bool:
    """Whether `d` is a size that Futhark too knows to differ from every
    other one: a loop parameter's, a built-in's existential result, a
    constant or a rigid name.  Other anonymous sizes (slices) may be sizes
    Futhark knows, as may `++`'s existentials (sums in Futhark)."""
    if isinstance(d, AnySize):
        return u.anon_root(d) in params or d.id in u.call_results
    return _is_named(d)


def _variant(pairs: list[tuple[AnySize, Dim]], inits: dict[Dim, Dim], u: Unifier) -> set[int]:
    """The roots of the parameter sizes that change: those the body replaces
    by a new size, and those it replaces by another parameter's size of the
    same initial size that changes (Futhark's closure over copies)."""
    params = {u.anon_root(p): p for p, _ in pairs}
    seeds: set[int] = set()
    copies: dict[int, int] = {}
    for p, b in pairs:
        root = u.anon_root(p)
        other = u.anon_root(b) if isinstance(b, AnySize) else None
        if other == root or b == inits.get(p):
            continue
        if other in params and inits.get(params[other]) == inits.get(p):
            copies[root] = other
        else:
            seeds.add(root)
    variant = set(seeds)
    while grown := {p for p, u_ in copies.items() if u_ in variant} - variant:
        variant |= grown
    return variant


def _parameter_pairs(param: Type, body: Type, u: Unifier) -> list[tuple[AnySize, Dim]]:
    """Each anonymous size of the loop parameter with the size the body
    returns in its place."""
    return [(p, u.resolved(b)) for p, b in dim_pairs(param, body) if isinstance(p, AnySize)]


def _is_named(d: Dim) -> bool:
    """A size the checker knows exactly: a constant or a rigid name (not an
    existential)."""
    return isinstance(d, SizeConst) or (isinstance(d, SizeVar) and written_name(d.name))


def _key(d: Dim, u: Unifier) -> object:
    """What identifies a size: anonymous sizes that met are one."""
    return ("anon", u.anon_root(d)) if isinstance(d, AnySize) else d
