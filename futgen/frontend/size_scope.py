"""Sizes used outside the scope of the name they are (Futhark's rules).

A size is a name: a parameter, a size parameter, a `let`-bound variable.
Inference may link a size to a name that is not in scope where the size
is used, and Futhark rejects three such cases, checked here once types are
inferred:

- a dependent function `(n: i64) -> [n]t` passed where a plain function
  `a -> b` is expected: `b` would be `[n]t` with `n` bound nowhere (`map`
  of such a function, `uncurry` of one);
- a parameter whose inferred size is a later parameter (`def f xs n = zip
  xs (iota n)`): the size of `xs` is not known when `xs` is bound;
- a function's inferred type with a size in a parameter that names a
  variable of its body: no caller can give an argument of that size;
- a return type annotation naming a variable bound inside a parameter's
  pattern, which the function's type does not name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from futgen.errors import CompileError, Loc
from futgen.frontend import syntax as S
from futgen.frontend.aliases import ERROR_INDEX
from futgen.frontend.astwalk import pattern_names
from futgen.frontend.types import (
    Array,
    Arrow,
    Record,
    Tuple,
    Type,
    TypeVar,
    size_var_names,
)
from futgen.frontend.unify import Unifier


def check_dependent_arg(fname: str, i: int, arg: S.Expr, param: Type, at: Type,
                        result: Type, unlifted: set[str], u: Unifier) -> None:
    """`fname` applied to argument #i+1 `arg` of type `at` (unified with
    the parameter type `param`; `result` is the application's type).  A
    binder of `at` that sizes of `param` name (`param` binding none) is an
    existential size of the application, as in Futhark; it may not be held
    by a non-lifted type parameter (`unlifted`: the type variables of its
    instances), nor be the size of a parameter of `result` only."""
    escaped = set(_escaped_binders(u.zonk(param), u.zonk(at)))
    if not escaped:
        return
    what = f'"{arg.full_name}"' if isinstance(arg, S.Var) else f"argument #{i + 1}"
    head = f'Cannot apply "{fname}" to {what} of dependent type {u.zonk(at)}: '
    for v in sorted(unlifted):
        for name in sorted(size_var_names(u.zonk(TypeVar(v))) & escaped):
            raise CompileError(
                f'{head}its size "{name}" would be existential in the non-lifted type '
                f"parameter instantiated with {u.zonk(TypeVar(v))}: a type parameter "
                "would be instantiated with a type containing anonymous sizes.",
                arg.loc)
    res = u.zonk(result)
    for name in sorted(escaped & (_parameter_sizes(res) - _produced_sizes(res))):
        raise CompileError(
            f'{head}its size "{name}" would be existential in the result. Existential '
            f"size would appear in function parameter of return type: {res}.", arg.loc)


def _escaped_binders(param: Type, at: Type) -> Iterator[str]:
    """The parameter names of arrows of `at` whose counterpart in `param`
    has no parameter name but whose result has a size of that name."""
    if not (isinstance(param, Arrow) and isinstance(at, Arrow)):
        return
    name = at.param_name
    if name is not None and param.param_name is None and name in size_var_names(param.ret):
        yield name
    yield from _escaped_binders(param.param, at.param)
    yield from _escaped_binders(param.ret, at.ret)


def _parameter_sizes(t: Type) -> set[str]:
    """The size names of the parameters of the arrows in `t`."""
    match t:
        case Arrow(_, p, r):
            return size_var_names(p) | _parameter_sizes(r)
        case Tuple(es):
            return set().union(*(_parameter_sizes(x) for x in es))
        case Record(fs):
            return set().union(*(_parameter_sizes(x) for _, x in fs))
    return set()


def check_parameter_scope(params: list[S.Pat], ptypes: list[Type], u: Unifier) -> None:
    """No parameter's inferred size may be a parameter bound after it (or
    the parameter itself): its size must be known when it is bound."""
    later: set[str] = set()
    for p, t in reversed(list(zip(params, ptypes))):
        later |= pattern_names(p)
        for name in sorted(size_var_names(u.zonk(t)) & later):
            raise CompileError(
                f'Cannot link the size of parameter "{_shown(p)}" to "{name}" (scope '
                f'violation): "{name}" is not in scope when the parameter is bound.\n'
                f"{ERROR_INDEX}scope-violation",
                p.loc)


def _shown(p: S.Pat) -> str:
    names = sorted(pattern_names(p))
    return names[0] if len(names) == 1 else "pattern"


def check_unknown_parameter_sizes(fname: str, t: Type, in_scope: Callable[[str], object],
                                  written: Callable[[str], bool], loc: Loc) -> None:
    """No size of a parameter in function type `t` (inferred, not declared)
    may name a variable out of scope (one of the body): unless an array
    of that size is also produced, nothing can give an argument of it."""
    produced = _produced_sizes(t)
    for name in sorted(_parameter_sizes(t) - produced):
        if written(name) and not in_scope(name):
            raise CompileError(
                f'Unknown size "{name}" in parameter of "{fname}", which is inferred '
                f"as: {t}", loc)


def _produced_sizes(t: Type) -> set[str]:
    """The size names of the arrays `t` gives (not only takes)."""
    match t:
        case Arrow(_, _, r):
            return _produced_sizes(r)
        case Array():
            return size_var_names(t)
        case Tuple(es):
            return set().union(*(_produced_sizes(x) for x in es))
        case Record(fs):
            return set().union(*(_produced_sizes(x) for _, x in fs))
    return set()


def check_return_names(params: list[S.Pat], whole: set[str], names: set[str],
                       ret: S.TypeExp) -> None:
    """A return type annotation (naming `names`) may not name a variable
    bound inside a parameter's pattern (`(x: i64, _: bool)`): the function's
    type names only whole parameters (`whole`), so no caller could know
    that size."""
    inner = set().union(*(pattern_names(p) for p in params)) - whole
    for name in sorted(names & inner):
        raise CompileError(
            f'The return type annotation refers to the name "{name}" which is bound to '
            "an inner component of a function parameter.", ret.loc)
