"""Sizes that parameter types write as products or other size expressions
(`def f [n] (xs: [n * n]t)`, `def g [k] (xs: [2 ** k]t)`).

The type checker keeps such a parameter's size anonymous in the declared
type (an argument of any size may be passed, and is checked at run time),
but at a call it has unified the product factor by factor with the
argument's type, as Futhark does: `[n * n]` at `[4 * 4]` makes `n` 4.  Later
stages read the size parameters that only products name from the written
parameter types and the instantiated type at the use.
"""

from __future__ import annotations

from futgen.frontend import syntax as S
from futgen.frontend import types as T


def product_sizes(params: list[S.Pat], inst: T.Type) -> dict[str, T.Dim]:
    """The sizes that the names in `params`' written types stand for at a use
    of type `inst` (the function's instantiated arrow type)."""
    sub: dict[str, T.Dim] = {}
    for p in params:
        if not isinstance(inst, T.Arrow):
            break
        if isinstance(p, S.PAscribe):
            _match_type_exp(p.type, inst.param, sub)
        inst = inst.ret
    return sub


def match_dim(g: T.Dim, i: T.Dim, sub: dict[str, T.Dim]) -> None:
    """Extends `sub` with what the names of size `g` are in size `i`; products
    match factor by factor, other size expressions operator by operator
    (`[2 ** k]` at `[2 ** (i + 1)]` makes `k` `i + 1`), as Futhark's
    unification of size expressions does."""
    if isinstance(g, T.SizeVar):
        sub.setdefault(g.name, i)
    elif isinstance(g, T.SizeProd) and isinstance(i, T.SizeProd) \
            and len(g.factors) == len(i.factors):
        for gf, jf in zip(g.factors, i.factors):
            match_dim(gf, jf, sub)
    elif isinstance(g, T.SizeExpr) and isinstance(i, T.SizeExpr):
        _match_exprs(g.expr, i.expr, sub)


def _match_exprs(g: S.Expr, i: S.Expr, sub: dict[str, T.Dim]) -> None:
    """`match_dim` on the written expressions of two size expressions."""
    if isinstance(g, S.BinOp) and isinstance(i, S.BinOp) and g.op == i.op:
        _match_exprs(g.lhs, i.lhs, sub)
        _match_exprs(g.rhs, i.rhs, sub)
    elif isinstance(g, S.Var) and not g.qual:
        d = _written_dim(i)
        if d is not None:
            sub.setdefault(g.name, d)


def _match_type_exp(te: S.TypeExp, inst: T.Type, sub: dict[str, T.Dim]) -> None:
    while isinstance(te, S.TEUnique):
        te = te.inner
    if isinstance(te, S.TEArray) and isinstance(inst, T.Array):
        dim = _written_dim(te.dim.expr) if isinstance(te.dim, S.DimExpr) else None
        if dim is not None:
            match_dim(dim, inst.shape[0], sub)
        _match_type_exp(te.elem, T.row_type(inst), sub)
    elif isinstance(te, S.TETuple) and isinstance(inst, T.Tuple) \
            and len(te.elems) == len(inst.elems):
        for x, t in zip(te.elems, inst.elems):
            _match_type_exp(x, t, sub)


def _written_dim(e: S.Expr) -> T.Dim | None:
    """A size expression of names and constants, as a Dim: products as
    products, other operations as size expressions."""
    match e:
        case S.Var(name, []):
            return T.SizeVar(name)
        case S.Literal() if e.kind == "int":
            return T.SizeConst(int(e.value))
        case S.BinOp() if e.op in ("*", *SIZE_OPS):
            left, right = _written_dim(e.lhs), _written_dim(e.rhs)
            if left is not None and right is not None:
                return T.size_operation(e.op, left, right, e)
    return None


# Operators a size may be written with besides `*` (kept as size expressions).
SIZE_OPS = ("+", "-", "**", "/", "%")
