"""Sizes of a declared result type that a lambda's parameters would name.

In `def f : i64 -> []i64 = \\n -> iota (n + 1)` the anonymous size of the
declared type is one size of the definition, made before the lambda binds
`n`: it cannot be `n + 1`, which differs at each call.  Futhark rejects the
link as a scope violation (`Unify.hs: linkVarToDim`, a size at a level
where a parameter bound deeper is not in scope).  futgen's anonymous sizes
match any size, so the check is made once the definition is checked, by
pairing the declared result's sizes with those of the lambda's result.
"""

from __future__ import annotations

from futgen.errors import CompileError
from futgen.frontend import syntax as S
from futgen.frontend.aliases import ERROR_INDEX
from futgen.frontend.astwalk import pattern_names
from futgen.frontend.types import (
    AnySize,
    Arrow,
    SizeVar,
    Type,
    dim_names,
    dim_pairs,
    written_name,
)
from futgen.frontend.unify import Unifier


def check_lambda_sizes(declared: Type, body: S.Expr, u: Unifier) -> None:
    """Raise if an unnamed size of `declared`, the declared type of a
    definition whose body is the lambda `body` (checked), stands for a
    size naming one of the lambda's parameters."""
    if not isinstance(body, S.Lambda) or body.ty is None:
        return
    params = _lambda_params(body)
    want, got = declared, u.zonk(body.ty)
    while isinstance(want, Arrow) and isinstance(got, Arrow):
        want, got = want.ret, got.ret
    for mine, theirs in dim_pairs(want, got):
        if not _unnamed(mine, u):
            continue
        names = sorted(dim_names(u.resolved(theirs)) & params)
        if names:
            raise CompileError(
                f'Cannot link an anonymous size of the declared type to "{u.resolved(theirs)}" '
                f'(scope violation).\nThis is because "{names[0]}" is not in scope when '
                f"the size is introduced.\n{ERROR_INDEX}scope-violation", body.loc)


def _unnamed(d: object, u: Unifier) -> bool:
    """Whether a size of a declared type is one the program left unnamed
    (an existential `?[m].` size names a size of each result: the lambda's
    may be it)."""
    if isinstance(d, AnySize):
        return d.id not in u.existentials
    return isinstance(d, SizeVar) and not written_name(d.name)


def _lambda_params(lam: S.Expr) -> set[str]:
    """The names the parameters of `lam`, and of lambdas it is made of
    (`\\n -> \\m -> ...`), bind."""
    names: set[str] = set()
    while isinstance(lam, S.Lambda):
        for p in lam.params:
            names |= pattern_names(p)
        lam = lam.body
    return names
