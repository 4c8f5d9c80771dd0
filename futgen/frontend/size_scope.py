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
  variable of its body: no caller can give an argument of that size
  (Futhark's "Cannot generalise"; see `opaque_names` for which variables
  Futhark replaces by their definitions instead);
- a return type annotation naming a variable bound inside a parameter's
  pattern, which the function's type does not name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from futgen.errors import CompileError, Loc
from futgen.frontend import syntax as S
from futgen.frontend.aliases import ERROR_INDEX
from futgen.frontend.astwalk import pattern_names, walk
from futgen.frontend.types import (
    AnySize,
    Array,
    Arrow,
    Dim,
    Record,
    SizeVar,
    Tuple,
    Type,
    TypeVar,
    dim_names,
    dim_pairs,
    map_dims,
    names_in_sizes,
    size_var_names,
    type_dims,
)
from futgen.frontend.unify import Unifier


def argument_text(arg: S.Expr, i: int) -> str:
    """How a message names argument #i+1 `arg`: by its variable, as
    Futhark's messages do, else by its position."""
    return f'"{arg.full_name}"' if isinstance(arg, S.Var) else f"argument #{i + 1}"


def function_text(fn: S.Expr) -> str:
    """How a message names the applied `fn`: by its name, else (a section,
    a lambda) as "function", unquoted, as Futhark's messages do."""
    return f'"{fn.full_name}"' if isinstance(fn, S.Var) else "function"


def cannot_apply(fn: S.Expr, arg: S.Expr, i: int) -> str:
    """The start of a message on `fn`'s argument #i+1 `arg`."""
    return f"Cannot apply {function_text(fn)} to {argument_text(arg, i)}"


def check_dependent_arg(fn: S.Expr, i: int, arg: S.Expr, param: Type, at: Type,
                        result: Type, unlifted: set[str], u: Unifier) -> None:
    """`fn` applied to argument #i+1 `arg` of type `at` (unified with
    the parameter type `param`; `result` is the application's type).  A
    binder of `at` that sizes of `param` name (`param` binding none) is an
    existential size of the application, as in Futhark; it may not be held
    by a non-lifted type parameter (`unlifted`: the type variables of its
    instances), nor be the size of a parameter of `result` only."""
    escaped = set(_escaped_binders(u.zonk(param), u.zonk(at)))
    if not escaped:
        return
    head = f"{cannot_apply(fn, arg, i)} of dependent type {u.zonk(at)}: "
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


def _parameter_sizes(t: Type, names: Callable[[Type], set[str]] = size_var_names) -> set[str]:
    """The size names (or other `names` of sizes) of the parameters of the
    arrows in `t`, but not those of an arrow's result that name its own
    parameter (`(m: i64) -> [m]t -> ...`)."""
    match t:
        case Arrow(n, p, r):
            return names(p) | (_parameter_sizes(r, names) - {n})
        case Tuple(es):
            return set().union(*(_parameter_sizes(x, names) for x in es))
        case Record(fs):
            return set().union(*(_parameter_sizes(x, names) for _, x in fs))
    return set()


def check_parameter_scope(params: list[S.Pat], ptypes: list[Type], u: Unifier) -> None:
    """No parameter's inferred size may be a parameter bound after it (or
    the parameter itself): its size must be known when it is bound."""
    later: set[str] = set()
    for p, t in reversed(list(zip(params, ptypes))):
        later |= pattern_names(p)
        for name in sorted(_size_reads(u.zonk(t), u) & later):
            raise CompileError(
                f'Cannot link the size of parameter "{_shown(p)}" to "{name}" (scope '
                f'violation): "{name}" is not in scope when the parameter is bound.\n'
                f"{ERROR_INDEX}scope-violation",
                p.loc)


def _size_reads(t: Type, u: Unifier) -> set[str]:
    """The variables the sizes of `t` read, an anonymous size given by an
    argument (`iota xs[0]`) reading those of the argument."""
    names: set[str] = set()
    for d in type_dims(t):
        d = u.resolved(d)
        names |= u.arg_reads.get(d.id, set()) if isinstance(d, AnySize) else dim_names(d)
    return names


def _shown(p: S.Pat) -> str:
    names = sorted(pattern_names(p))
    return names[0] if len(names) == 1 else "pattern"


def check_unknown_parameter_sizes(fname: str, t: Type, in_scope: Callable[[str], object],
                                  written: Callable[[str], bool], opaque: set[str],
                                  loc: Loc) -> None:
    """No size of a parameter in function type `t` (inferred, not declared)
    may name a variable out of scope (one of the body): unless an array
    of that size is also produced, nothing can give an argument of it.  An
    `opaque` variable's size is unknown outside the body, a new one at each
    place, so that an array produced does not give it either."""
    unknown = (_parameter_sizes(t) - _produced_sizes(t)) | (
        _parameter_sizes(t, names_in_sizes) & opaque)
    for name in sorted(unknown):
        if written(name) and not in_scope(name):
            raise CompileError(
                f'Cannot generalise type of "{fname}". Unknown size "{name}" in parameter '
                f'of "{fname}", which is inferred as: {t}', loc)


def hide_unscoped_sizes(fname: str, t: Type, hidden: set[str], u: Unifier) -> Type:
    """Function `fname`'s inferred result type `t` with each size that reads
    a `hidden` variable (opaque, bound in the body) made an existential
    size, one per size, as Futhark's unknown sizes."""
    made: dict[Dim, Dim] = {}

    def hide(d: Dim) -> Dim:
        if d not in made:
            made[d] = u.existential_size(f'is a size local to "{fname}" ("{d}")')
            u.unscoped[made[d].name] = (fname, d)
        return made[d]

    return map_dims(t, lambda d: hide(d) if dim_names(d) & hidden else d)


def check_unscoped_arg(fn: S.Expr, i: int, arg: S.Expr, param: Type, at: Type,
                       u: Unifier) -> None:
    """`fn` applied to argument #i+1 `arg` (of type `at`, unified with
    `param`): a size of the parameter that is an expression of the callee's
    size parameters (`[n + 1]`) cannot be matched with a size local to the
    function that gave the argument (Futhark's unknown size)."""
    for mine, theirs in dim_pairs(param, u.zonk(at)):
        if isinstance(mine, SizeVar) and mine.name in u.expr_params \
                and isinstance(theirs, SizeVar) and theirs.name in u.unscoped:
            origin, size = u.unscoped[theirs.name]
            raise CompileError(
                f'{cannot_apply(fn, arg, i)}: its size "{size}" names a variable local '
                f'to "{origin}", unknown here, which cannot match "{u.expr_params[mine.name]}".',
                arg.loc)


def opaque_names(body: S.Expr) -> set[str]:
    """The variables bound in `body` whose sizes Futhark makes unknown when
    they go out of scope.  It replaces a name bound alone by a `let` (`let
    m = n + 1`) by its definition instead (`[n + 1]`), unless that holds a
    binding (a `let`, a lambda, a loop) or reads an opaque variable; every
    other binder (a tuple pattern, `let [n]`, a parameter of a lambda or
    local function, a loop's) is opaque.  A name bound several times is
    opaque only if every binding is."""
    defs: dict[str, list[S.Expr | None]] = {}  # None: an opaque binding
    for node in walk(body):
        for name, value in _bindings(node):
            defs.setdefault(name, []).append(value)
    opaque: set[str] = set()
    changed = True
    while changed:  # until no definition reads a newly opaque name
        changed = False
        for name, values in defs.items():
            if name not in opaque and all(v is None or reads(v) & opaque for v in values):
                opaque.add(name)
                changed = True
    return opaque


def _bindings(node: object) -> Iterator[tuple[str, S.Expr | None]]:
    """The names `node` binds, each with its substituted definition (None
    when Futhark does not substitute it)."""
    match node:
        case S.LetPat(sizes, S.PId(name) | S.PAscribe(S.PId(name)), value) if not sizes:
            yield name, (None if has_binding(value) else value)
            return
        case S.LetPat(sizes, pat):
            names = set(sizes) | pattern_names(pat)
        case S.LetFun(name, _, params):
            names = {name}.union(*(pattern_names(p) for p in params))
        case S.Lambda(params):
            names = set().union(*(pattern_names(p) for p in params))
        case S.Loop(sizes, pat, _, form):
            names = set(sizes) | pattern_names(pat)
            if isinstance(form, S.ForLoop):
                names.add(form.var)
            elif isinstance(form, S.ForInLoop):
                names |= pattern_names(form.pat)
        case _:
            return
    for name in sorted(names):
        yield name, None


def has_binding(e: S.Expr) -> bool:
    """Whether `e` binds a name (Futhark then gives no size the expression)."""
    return any(isinstance(n, S.LetPat | S.LetFun | S.Lambda | S.Loop) for n in walk(e))


def reads(e: S.Expr) -> set[str]:
    """The (unqualified) names expression `e` reads."""
    return {n.name for n in walk(e) if isinstance(n, S.Var) and not n.qual}


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
