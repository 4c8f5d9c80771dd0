"""`vjp` by forward mode: one `jvp` per element of the argument, dotted with the cotangent."""

from __future__ import annotations

from futgen.core import ir
from futgen.core.ad.forward import (
    Forward,
    Tangent,
    array_dims,
    element_count,
    indices,
    map_rows,
)
from futgen.core.internalise import Internaliser, _constant
from futgen.errors import Loc


def _cotangent(it: Internaliser, lam: ir.Lambda, xs: list[ir.SubExp], c: int,
               ybars: list[ir.SubExp], loc: Loc) -> ir.SubExp:
    """The cotangent of component `c` of the argument: for each of its
    elements, the tangent of the result seeded there, dotted with `ybar`."""
    x = xs[c]
    t = it.type_of(x)
    if ir.elem_prim(t) == "bool":  # no cotangents through bools (Futhark's reverse mode has none)
        return Forward(it, loc).zero_like(x)
    if isinstance(t, ir.Prim):
        return _seeded_dot(it, lam, xs, c, _constant(1, t.name), ybars, t.name, loc)
    dims = array_dims(it, x)
    n = element_count(it, dims)
    flat = ir.ArrayT(t.elem, (n,))

    def element(i: list[ir.SubExp]) -> list[ir.SubExp]:
        zeros = it.bind1(ir.Replicate((n,), _constant(0, t.elem)), flat, "zeros")
        seed = it.bind1(ir.Update(zeros.name, (ir.DimFix(i[0]),), _constant(1, t.elem)), flat,
                        "seed")
        if len(dims) > 1:
            seed = it.bind1(ir.Reshape(seed.name, tuple(dims)), ir.ArrayT(t.elem, tuple(dims)),
                            "seed")
        return [_seeded_dot(it, lam, xs, c, seed, ybars, t.elem, loc)]

    [grads] = map_rows(it, [indices(it, n)], element, "xbar")
    if len(dims) == 1:
        return grads
    return it.bind1(ir.Reshape(grads.name, tuple(dims)), ir.ArrayT(t.elem, tuple(dims)), "xbar")


def _seeded_dot(it: Internaliser, lam: ir.Lambda, xs: list[ir.SubExp], c: int, seed: ir.SubExp,
                ybars: list[ir.SubExp], prim: str, loc: Loc) -> ir.SubExp:
    """The dot product with `ybar` of the tangent of `lam xs` when component
    `c` has tangent `seed` and the others none, in type `prim`."""
    seeds: list[Tangent] = [None] * len(xs)
    seeds[c] = seed
    ys, dys = Forward(it, loc).inline(lam, xs, seeds)
    total: ir.SubExp | None = None
    for y, dy, ybar in zip(ys, dys, ybars):
        yt = it.type_of(y)
        yprim = ir.elem_prim(yt)
        if dy is None or yprim == "bool":
            continue
        term = it.bind1(ir.BinOp("*", yprim, dy, ybar), ir.Prim(yprim), "dot") \
            if isinstance(yt, ir.Prim) else _dot(it, y, dy, ybar, loc)
        if yprim != prim:
            term = it.bind1(ir.ConvOp(yprim, prim, term), ir.Prim(prim), "dot")
        total = term if total is None else it.bind1(ir.BinOp("+", prim, total, term),
                                                    ir.Prim(prim), "dot")
    return total if total is not None else _constant(0, prim)


def _dot(it: Internaliser, y: ir.SubExp, a: ir.SubExp, b: ir.SubExp, loc: Loc) -> ir.SubExp:
    """The sum of the elementwise products of arrays `a` and `b`, of `y`'s shape."""
    from futgen.core.builtins import binop_lambda

    dims = array_dims(it, y)
    n = element_count(it, dims)
    prim = ir.elem_prim(it.type_of(y))
    flat = ir.ArrayT(prim, (n,))
    if len(dims) > 1:
        a, b = (it.bind1(ir.Reshape(v.name, (n,), loc), flat, "flat") for v in (a, b))
    else:  # `ybar` must have `y`'s shape, as a reshape checks for higher ranks
        b = it.bind1(ir.Reshape(b.name, (n,), loc), flat, "flat")
    p, q, r = (ir.Param(it.fresh(base), ir.Prim(prim)) for base in ("p", "q", "r"))
    prod = ir.Lambda((p, q), ir.Body((ir.Stm((r,), ir.BinOp("*", prim, ir.Var(p.name),
                                                            ir.Var(q.name))),),
                                     (ir.Var(r.name),)), (ir.Prim(prim),))
    red = ir.Reduce(binop_lambda(it, "+", prim), (_constant(0, prim),), comm=True)
    return it.bind1(ir.Screma(n, (a.name, b.name), (), (red,), prod), ir.Prim(prim), "dot")
