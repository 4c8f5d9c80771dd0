"""Causality: a size must be computed before a value that needs it is made
(Futhark's causality check, `causalityCheck` in `TypeChecker/Terms.hs`).

Some sizes are known only once an expression has been evaluated: the
length of `filter`'s result, of a range of unknown length, of the value a
loop returns when the body changes it.  The checker notes where each is
computed (`Unifier.note_computed`).  Unification may make such a size the
size of a value evaluated earlier, which then could not be made:

    let a = [] : [][]i32         -- an empty array of rows of which size?
    let b = [filter (> 0) xs]
    in a[0] == b[0]              -- ... of the size filter computes later

This module walks a declaration's body in Futhark's evaluation order (a
`let`'s value before its body, a function's arguments from the last to the
first and then the function, an operator's left operand before its right
one) with the set of computed sizes known so far, and rejects a value that
needs one not yet known.  As in Futhark, the values checked are empty
array literals, lambdas (their parameters' types) and sections; sizes
computed inside a lambda, a branch or a loop body are not known after it
until the whole expression has a value.  Anonymous sizes that unification
made one (`Unifier.anon_links`) are one size here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from futgen.errors import ERROR_INDEX, CompileError, Loc
from futgen.frontend import syntax as S
from futgen.frontend.types import (
    AnySize,
    Dim,
    SizeProd,
    Type,
    substitute,
    type_dims,
)
from futgen.frontend.unify import Unifier

Known = frozenset  # of the keys of computed sizes (`_Walk.key`)


def check_causality(body: S.Expr, params: list[S.Pat], u: Unifier,
                    concat_sections: set[int] = frozenset()) -> None:
    """Raise a CompileError for the first value in `body` (of a declaration
    with parameters `params`) that needs a size computed after it.
    `concat_sections`: the `id`s of the sections of the built-in `++` (not
    a `++` the program defines)."""
    walk = _Walk(u, concat_sections)
    walk.visit(body, Known(walk.sizes_of_patterns(params)))


class _Walk:
    def __init__(self, u: Unifier, concat_sections: set[int]) -> None:
        self.u = u
        self.concat_sections = concat_sections
        # Computed sizes by key (anonymous sizes that met are one).
        self.computed: dict[object, tuple[Loc, str]] = {}
        for d, where in u.computed.items():
            self.computed.setdefault(self.key(d), where)

    # ------------------------------------------------------------ sizes

    def key(self, d: Dim) -> object:
        d = self.u.resolved(d)
        return ("anon", self.u.anon_root(d)) if isinstance(d, AnySize) else d

    def sizes(self, t: Type | None) -> set[object]:
        """The keys of the computed sizes in `t`."""
        return {k for k in map(self.key, _dims(self.u.zonk(t))) if k in self.computed} \
            if t is not None else set()

    def sizes_of_patterns(self, pats: list[S.Pat]) -> set[object]:
        return set().union(*(self.sizes(p.ty) for p in pats))

    def shown(self, t: Type) -> Type:
        """`t` as a message shows it: sizes that met only anonymous ones
        are anonymous."""
        return substitute(self.u.zonk(t), {}, dict(self.u.weak))

    def require(self, t: Type | None, known: Known, what: str, loc: Loc) -> None:
        """Raise if `t`, the type of `what` at `loc`, has a computed size
        not in `known`."""
        for k in self.sizes(t) - known:
            at, producer = self.computed[k]
            raise CompileError(
                f"Causality check: the size computed by {producer} at {at} is "
                f"needed for the type of {what}, {self.shown(t)}, which is "
                "evaluated before it.\nHint: bind the expression that computes "
                f"the size with \"let\" beforehand.\n{ERROR_INDEX}causality-check", loc)

    # ------------------------------------------------------------ evaluation order

    def visit(self, e: S.Expr, known: Known) -> set[object]:
        """Check `e` given the sizes `known` before it; return the sizes
        known once it has been evaluated (its value's sizes too)."""
        return self._visit(e, known) | self.sizes(e.ty)

    def _visit(self, e: S.Expr, known: Known) -> set[object]:
        match e:
            case S.ArrayLit([]):
                self.require(e.ty, known, "an empty array", e.loc)
                return set()
            case S.Lambda(params, _, body):
                for p in params:
                    self.require(p.ty, known, "a lambda's parameter", p.loc)
                self.visit(body, known | self.sizes_of_patterns(params))
                return set()  # sizes computed in the body stay there
            case S.LeftSection(_, arg) | S.RightSection(_, arg):
                self.require(e.ty, known, "an operator section", e.loc)
                if id(e) in self.concat_sections:  # its size is a sum of the operand's
                    self.require(arg.ty, known, 'a section of "++"', e.loc)
                return self.visit(arg, known)
            case S.ProjectSection():
                self.require(e.ty, known, "a projection section", e.loc)
                return set()
            case S.Apply(fn, args):  # the last argument first, the function last
                return self.in_order([*reversed(args), fn], known)
            case S.BinOp(_, lhs, rhs):
                return self.in_order([lhs, rhs], known)
            case S.LetPat(_, pat, value, body):
                new = self.visit(value, known)
                return new | self.visit(body, known | new | self.sizes(pat.ty))
            case S.LetFun(_, _, params, _, value, body):
                self.visit(value, known | self.sizes_of_patterns(params))
                return self.visit(body, known)
            case S.If(cond, then, els):
                new = self.visit(cond, known)
                for branch in (then, els):
                    self.visit(branch, known | new)
                return new
            case S.Loop():
                return self.loop(e, known)
        return self.in_order(list(_subexpressions(e)), known)

    def in_order(self, exprs: list[S.Expr], known: Known) -> set[object]:
        """Evaluate `exprs` one after the other."""
        new: set[object] = set()
        for x in exprs:
            new |= self.visit(x, known | new)
        return new

    def loop(self, e: S.Loop, known: Known) -> set[object]:
        """The initial value and the bound first; the parameters' sizes are
        known in the body, whose own computed sizes stay there."""
        before = [e.init] if e.init is not None else []
        match e.form:
            case S.ForLoop(_, bound, _):
                before.append(bound)
            case S.ForInLoop(_, array, _):
                before.append(array)
        new = self.in_order(before, known)
        inside = known | new | self.sizes(e.pat.ty)
        if isinstance(e.form, S.ForInLoop):
            inside |= self.sizes(e.form.pat.ty)
        if isinstance(e.form, S.WhileLoop):
            self.visit(e.form.cond, inside)
        self.visit(e.body, inside)
        return new


def _dims(t: Type) -> Iterator[Dim]:
    """Every size in `t`, factors of products included."""
    for d in type_dims(t):
        yield from _factors(d)


def _factors(d: Dim) -> Iterator[Dim]:
    if isinstance(d, SizeProd):
        for f in d.factors:
            yield from _factors(f)
    else:
        yield d


def _subexpressions(node: object) -> Iterator[S.Expr]:
    """The expressions directly under `node`, in source order (through
    index and slice parts; not into patterns or type expressions)."""
    for f in dataclasses.fields(node):
        if f.name in ("loc", "ty"):
            continue
        yield from _expressions_in(getattr(node, f.name))


def _expressions_in(value: object) -> Iterator[S.Expr]:
    if isinstance(value, S.Expr):
        yield value
    elif isinstance(value, (list, tuple)):
        for x in value:
            yield from _expressions_in(x)
    elif isinstance(value, (S.IdxFix, S.IdxSlice)):
        yield from _subexpressions(value)
