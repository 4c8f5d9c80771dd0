"""Liftedness: where function types, and types of varying size, may go.

Futhark sorts types into three levels, written on type parameters and type
abbreviations: a value type (`'t`, `type`), a size-lifted one (`'~t`,
`type~`: its values may differ in size) and a lifted one (`'^t`, `type^`:
it may be a function).  Defunctionalisation needs to know every function
statically, so only a lifted type parameter may stand for a function type,
and array elements must be value types (an array of functions, or of
values of different sizes, has no representation).  The rules here are
Futhark's (`Types.hs: evalTypeExp`, `Terms.hs: localChecks`,
`Unsized.hs: checkTyInstLiftedness`); all but the first are checked once a
declaration's types are inferred, as they do not guide inference.

Levels are the markers as written: "" (value type) < "~" < "^".
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

from futgen.errors import CompileError, Loc
from futgen.frontend import syntax as S
from futgen.frontend.types import Array, Arrow, Record, Tuple, Type, TypeVar

LEVELS = ("", "~", "^")


def functional(t: Type, lifted: Collection[str] = frozenset()) -> bool:
    """Whether `t` holds a function, counting the type parameters `lifted`
    (which may be instantiated with one)."""
    match t:
        case Arrow():
            return True
        case TypeVar(name):
            return name in lifted
        case Tuple(es):
            return any(functional(x, lifted) for x in es)
        case Record(fs):
            return any(functional(x, lifted) for _, x in fs)
        case Array(e, _, _):
            return functional(e, lifted)
    return False


def type_vars(t: Type) -> list[str]:
    """The names of the type variables in `t`, in order of appearance."""
    match t:
        case TypeVar(name):
            return [name]
        case Tuple(es):
            return [n for x in es for n in type_vars(x)]
        case Record(fs):
            return [n for _, x in fs for n in type_vars(x)]
        case Array(e, _, _):
            return type_vars(e)
        case Arrow(_, p, r):
            return type_vars(p) + type_vars(r)
    return []


# ---------------------------------------------------------- type expressions


def type_exp_level(te: S.TypeExp, lookup: Callable[[str], Any]) -> str:
    """The level of type expression `te`, from what it is written with:
    a function type is lifted, an existential size makes a type size-lifted,
    an abbreviation or type parameter has its declared level (`lookup`
    gives a name's entry in the type scope: an object with a `lifted`
    marker for abbreviations, and under `'name` the marker of a lifted type
    parameter)."""
    match te:
        case S.TEName(name, args, _):
            found = lookup(name)
            own = getattr(found, "lifted", None) or lookup(f"'{name}") or ""
            return _max([own, *(type_exp_level(a, lookup) for a in args
                                 if not isinstance(a, S.DimExp))])
        case S.TETuple(elems, _):
            return _max([type_exp_level(e, lookup) for e in elems])
        case S.TERecord(fields, _):
            return _max([type_exp_level(t, lookup) for _, t in fields])
        case S.TEArrow():
            return "^"
        case S.TEUnique(inner, _):
            return type_exp_level(inner, lookup)
        case S.TEExist(_, body, _):
            return _max(["~", type_exp_level(body, lookup)])
    return ""  # an array: its elements are checked to be value types


def check_array_element(elem: S.TypeExp, shown: str, lookup: Callable[[str], Any],
                        loc: Loc) -> None:
    """Raise if the element type `elem` (`shown` as written) of an array
    type is not a value type."""
    level = type_exp_level(elem, lookup)
    if level == "~":
        raise CompileError(f'Cannot create array with elements of size-lifted type "{shown}" '
                           "(might cause irregular array).", loc)
    if level == "^":
        raise CompileError(f'Cannot create array with elements of lifted type "{shown}" '
                           "(might contain function).", loc)


def _max(levels: list[str]) -> str:
    return max(levels, key=LEVELS.index, default="")


# ------------------------------------------------------------- instantiations


@dataclass(frozen=True)
class TypeParamInfo:
    """A type parameter of the declaration being checked (or of one of its
    local functions): its level and where it is bound."""

    level: str
    loc: Loc


@dataclass(frozen=True)
class Instance:
    """A use (at `loc`) of polymorphic `function` that instantiated its type
    parameter `param` of level `level` (not lifted) with `var`."""

    var: TypeVar
    param: str
    level: str
    function: str
    loc: Loc


def check_instance(inst: Instance, t: Type, tparams: dict[str, TypeParamInfo]) -> None:
    """Raise if `t`, what `inst.var` was found to be, is too lifted for the
    parameter: a function, or a type parameter of a higher level (for a
    value type parameter, a size-lifted one too: its values may be array
    elements)."""
    when = f"When instantiating type parameter '{inst.param} of \"{inst.function}\"."
    if functional(t):
        raise CompileError(f"Type\n  {t}\nfound to be functional.\n{when}", inst.loc)
    bad = ("~", "^") if inst.level == "" else ("^",)
    for name in type_vars(t):
        info = tparams.get(name)
        if info is None or info.level not in bad:
            continue
        what = ("is lifted and cannot be an array element." if inst.level == ""
                else "is lifted and may be a functional type.")
        raise CompileError(f'Type parameter "{name}" bound at {info.loc} {what}\n{when}',
                           inst.loc)


def bind_tparams(tparams: dict[str, TypeParamInfo], params: list[S.TParam]) -> None:
    """Note the type parameters `params` of a function in `tparams`.  A name
    bound twice (a local function's parameter named as an outer one) keeps
    the lower level, so that no check rejects more than Futhark does."""
    for p in params:
        if isinstance(p, S.TypeParam):
            old = tparams.get(p.name)
            if old is None or LEVELS.index(p.lifted) < LEVELS.index(old.level):
                tparams[p.name] = TypeParamInfo(p.lifted, p.loc)


def lifted_names(tparams: dict[str, TypeParamInfo]) -> set[str]:
    return {n for n, info in tparams.items() if info.level == "^"}


# ---------------------------------------------------------- checked bodies


def check_order_zero(node: Any, tparams: dict[str, TypeParamInfo]) -> None:
    """Futhark's rules on a checked expression (types known): an `if` may
    not return a function (nor a tuple or record holding one, nor a value of
    a lifted type parameter), nor may a loop parameter be one; the elements
    of an array literal must be value types."""
    lifted = lifted_names(tparams)
    if isinstance(node, S.If) and functional(node.ty, lifted):
        raise CompileError(f"If-expression returns type\n  {node.ty}\n"
                           "but if-results may not be of function type.", node.loc)
    if isinstance(node, S.Loop) and functional(node.ty, lifted):
        raise CompileError(f"Loop parameter inferred to have type\n  {node.ty}\n"
                           "but a loop parameter may not be of function type.", node.pat.loc)
    if isinstance(node, S.ArrayLit) and isinstance(node.ty, Array):
        _check_literal_element(node.ty.elem, tparams, node.loc)


def _check_literal_element(elem: Type, tparams: dict[str, TypeParamInfo], loc: Loc) -> None:
    if functional(elem):
        raise CompileError(f"Type\n  {elem}\nfound to be functional.\n"
                           "An array literal may not hold functions.", loc)
    for name in type_vars(elem):
        info = tparams.get(name)
        if info is not None and info.level != "":
            raise CompileError(f'Type parameter "{name}" bound at {info.loc} is lifted '
                               "and cannot be an array element.", loc)
