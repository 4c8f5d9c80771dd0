"""Futhark's restrictions on recursive functions.

A function may call itself, but defunctionalisation can only remove the
functions it passes along if they stay the same: so a recursive function's
result must be first-order, and where it has higher-order parameters (or
parameters of a lifted type, which may be functions), every recursive use
is a fully saturated application passing those parameters unchanged.  These
are syntactic checks on the checked definition, as in the reference
compiler.
"""

from __future__ import annotations

from collections.abc import Callable

from futgen.errors import CompileError, Loc
from futgen.frontend import syntax as S
from futgen.frontend.astwalk import pattern_names, walk
from futgen.frontend.lifted import functional

Error = Callable[[str, Loc | None], CompileError]


def check_recursion(d: S.ValDecl, err: Error) -> None:
    """Raise `err` if `d` (type-checked, `d.ty` set) breaks a rule above."""
    if not d.params or not _calls_itself(d):
        return
    ret = d.ty
    for _ in d.params:
        ret = ret.ret
    lifted = {p.name for p in d.tparams if isinstance(p, S.TypeParam) and p.lifted == "^"}
    if functional(ret, lifted):
        raise err(f'Recursive function "{d.name}" returns type\n  {ret}\nwhich is not '
                  "first-order.\nWrite the function type as further parameters instead.",
                  d.loc)
    higher = [functional(p.ty, lifted) for p in d.params]
    if any(higher):
        _check_uses(d, higher, err)


def _calls_itself(d: S.ValDecl) -> bool:
    """Whether the body names `d` itself.  A body that rebinds the name is
    left alone: which uses are recursive would need scoping we do not redo."""
    uses = False
    for n in walk(d.body):
        if isinstance(n, S.PId | S.LetFun) and n.name == d.name:
            return False
        uses |= isinstance(n, S.Var) and not n.qual and n.name == d.name
    return uses


def _check_uses(d: S.ValDecl, higher: list[bool], err: Error) -> None:
    applied = set()
    for n in walk(d.body):
        if isinstance(n, S.Apply) and _is_self(n.fn, d):
            applied.add(id(n.fn))
            _check_application(d, n, higher, err)
        elif _is_self(n, d) and id(n) not in applied:
            raise err(f'Recursive reference to "{d.name}" must be a fully saturated '
                      "application, as it has a higher-order parameter.", n.loc)


def _check_application(d: S.ValDecl, app: S.Apply, higher: list[bool], err: Error) -> None:
    if len(app.args) != len(d.params):
        raise err(f'Recursive application of "{d.name}" is not fully saturated: '
                  f"expected {len(d.params)} arguments but got {len(app.args)}.", app.loc)
    for is_higher, param, arg in zip(higher, d.params, app.args):
        if is_higher and not (isinstance(arg, S.Var) and not arg.qual
                              and arg.name in pattern_names(param)):
            raise err(f'Higher-order argument in recursive application of "{d.name}" '
                      "must be passed unchanged, i.e. be the corresponding parameter.",
                      arg.loc)


def _is_self(e: object, d: S.ValDecl) -> bool:
    return isinstance(e, S.Var) and not e.qual and e.name == d.name
