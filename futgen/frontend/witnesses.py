"""Sizes a type expression witnesses (Futhark's rule).

A size is witnessed by a type when it is the size of an array outside any
function type in it: a value of the type then carries the size.  A size
only used inside function types (`?[n].bool -> [n]t`, an anonymous `[]` of
a function parameter in a type abbreviation) would have to come from
somewhere else, and Futhark rejects such types.
"""

from __future__ import annotations

from futgen.errors import CompileError
from futgen.frontend import syntax as S
from futgen.frontend.astwalk import walk


def check_existentials_witnessed(te: S.TEExist) -> None:
    """Each name of `?[n]. t` must be the size of an array of `t`."""
    seen = _witnessed(te.body)
    for n in te.names:
        if n not in seen:
            raise CompileError(f'Existential size "{n}" not used as array size.', te.loc)


def check_abbreviation_witnessed(body: S.TypeExp) -> None:
    """A type abbreviation may not have an anonymous size in a function
    parameter: nothing would give it."""
    for arrow in walk(body):
        if not isinstance(arrow, S.TEArrow):
            continue
        for d in walk(arrow.param):
            if isinstance(d, S.DimAny):
                raise CompileError(
                    "Type abbreviation contains an anonymous size not used constructively "
                    "as an array size (it is in a function parameter).", d.loc)


def _witnessed(te: object) -> set[str]:
    """The size names `te` uses as array sizes outside function types (an
    abbreviation's size arguments count: it may use them so)."""
    match te:
        case S.DimName(name, _):
            return {name}
        case S.TEArray(dim, elem, _):
            return _witnessed(dim) | _witnessed(elem)
        case S.TETuple(elems, _) | S.TEName(_, elems, _):
            return set().union(*(_witnessed(x) for x in elems))
        case S.TERecord(fields, _):
            return set().union(*(_witnessed(x) for _, x in fields))
        case S.TEUnique(inner, _) | S.TEExist(_, inner, _):
            return _witnessed(inner)
    return set()
