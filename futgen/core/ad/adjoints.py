"""What the return sweep's rules share: `NotReversible`, and the array
arithmetic of adjoints (sums, sums over rows, scatter-adds, reversal)."""

from __future__ import annotations

from futgen.core import ir
from futgen.core.ad.forward import (
    I64,
    array_dims,
    element_count,
)
from futgen.core.internalise import Internaliser, _constant


class NotReversible(Exception):
    """A construct the return sweep does not handle (forward mode does)."""


def _i64(v: int) -> ir.Constant:
    return ir.Constant(v, "i64")


def _flatten_array(it: Internaliser, a: ir.SubExp) -> tuple[ir.SubExp, list[ir.SubExp]]:
    """`a` as a one-dimensional array, and its dimensions."""
    dims = array_dims(it, a)
    if len(dims) == 1:
        return a, dims
    n = element_count(it, dims)
    return it.bind1(ir.Reshape(a.name, (n,)), ir.ArrayT(ir.elem_prim(it.type_of(a)), (n,)), "flat"), dims


def _reshaped(it: Internaliser, a: ir.SubExp, dims: list[ir.SubExp]) -> ir.SubExp:
    if len(dims) == 1:
        return a
    return it.bind1(ir.Reshape(a.name, tuple(dims)), ir.ArrayT(ir.elem_prim(it.type_of(a)), tuple(dims)),
                    "adj")


def plus(it: Internaliser, a: ir.SubExp, b: ir.SubExp) -> ir.SubExp:
    """`a + b`, elementwise for arrays (a new array)."""
    from futgen.core.builtins import binop_lambda

    t = it.type_of(a)
    if isinstance(t, ir.Prim):
        return it.bind1(ir.BinOp("+", t.name, a, b), t, "adj")
    fa, dims = _flatten_array(it, a)
    fb, _ = _flatten_array(it, b)
    n = it.width(fa)
    summed = it.bind1(ir.Screma(n, (fa.name, fb.name), (), (), binop_lambda(it, "+", t.elem)),
                      ir.ArrayT(t.elem, (n,)), "adj")
    return _reshaped(it, summed, dims)


def sum_leading(it: Internaliser, a: ir.SubExp, k: int) -> ir.SubExp:
    """The sum of array `a` over its first `k` dimensions."""
    from futgen.core.builtins import binop_lambda, identity_lambda

    t = it.type_of(a)
    assert isinstance(t, ir.ArrayT)
    dims = array_dims(it, a)
    n = element_count(it, dims[:k])
    rest = dims[k:]
    m = element_count(it, rest)
    # [n][m]: summing the rows of the transposition is a segmented sum per column.
    mat = it.bind1(ir.Reshape(a.name, (n, m)), ir.ArrayT(t.elem, (n, m)), "adj")
    cols = it.bind1(ir.Rearrange(mat.name, (1, 0)), ir.ArrayT(t.elem, (m, n)), "adj")
    with it.nested() as stms:
        col = ir.Param(it.fresh("col"), ir.ArrayT(t.elem, (n,)))
        it.types[col.name] = col.type
        red = ir.Reduce(binop_lambda(it, "+", t.elem), (_constant(0, t.elem),), comm=True)
        total = it.bind1(ir.Screma(n, (col.name,), (), (red,),
                                   identity_lambda(it, [ir.Prim(t.elem)])),
                         ir.Prim(t.elem), "sum")
    lam = ir.Lambda((col,), ir.Body(tuple(stms), (total,)), (ir.Prim(t.elem),))
    sums = it.bind1(ir.Screma(m, (cols.name,), (), (), lam), ir.ArrayT(t.elem, (m,)), "adj")
    if not rest:
        return it.bind1(ir.Index(sums.name, (ir.DimFix(_i64(0)),)), ir.Prim(t.elem), "adj")
    return _reshaped(it, sums, rest) if len(rest) > 1 else sums


def scatter_add(it: Internaliser, v: ir.VName, w: ir.SubExp, bins: ir.SubExp,
                values: ir.SubExp) -> ir.SubExp:
    """An array of `v`'s shape holding the sum of `values` at flat positions `bins`."""
    from futgen.core.builtins import binop_lambda, identity_lambda

    dims = array_dims(it, ir.Var(v))
    n = element_count(it, dims)
    prim = ir.elem_prim(it.type_of(ir.Var(v)))
    zeros = it.bind1(ir.Replicate((n,), _constant(0, prim)), ir.ArrayT(prim, (n,)), "adj")
    op = ir.HistOp((zeros.name,), (_constant(0, prim),), binop_lambda(it, "+", prim))
    summed = it.bind1(ir.Hist(w, (bins.name, values.name), (op,),
                              identity_lambda(it, [I64, ir.Prim(prim)])),
                      ir.ArrayT(prim, (n,)), "adj")
    return summed if len(dims) == 1 else _reshaped(it, summed, dims)


def _flat_index(it: Internaliser, v: ir.VName, idx: tuple[ir.SubExp, ...]) -> ir.SubExp:
    """Row-major position of `v[idx]`, or -1 (ignored by a histogram) out of bounds."""
    dims = array_dims(it, ir.Var(v))
    flat: ir.SubExp = _i64(0)
    for i, d in zip(idx, dims):
        flat = it.bind1(ir.BinOp("+", "i64", it.bind1(ir.BinOp("*", "i64", flat, d), I64, "i"),
                                 i), I64, "i")
    return flat


def _reverse(it: Internaliser, a: ir.SubExp) -> ir.SubExp:
    w = it.width(a)
    last = it.bind1(ir.BinOp("-", "i64", w, _i64(1)), I64, "i")
    return it.bind1(ir.Index(a.name, (ir.DimSlice(last, w, _i64(-1)),)), it.type_of(a), "rev")


def _bind_into(it: Internaliser, stms: list[ir.Stm], e: ir.Exp, t: ir.Type) -> ir.SubExp:
    p = ir.Param(it.fresh("x"), t)
    stms.append(ir.Stm((p,), e))
    return ir.Var(p.name)
