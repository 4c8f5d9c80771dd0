"""Internalisation of `==` and `!=` on arrays, tuples and records.

Futhark compares such values structurally: tuples and records field by
field, arrays by shape and then element by element.  The element-wise part
is a reduction, `reduce (&&) true (map2 (==) xs ys)` over the arrays viewed
as one dimension, run only when the shapes agree (arrays of other shapes
are simply unequal), as the interpreter's `values.equal` does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from futgen.core import ir
from futgen.core.checked import BOOL, I64, Scalars
from futgen.errors import Loc
from futgen.frontend import types as T

if TYPE_CHECKING:
    from futgen.core.internalise import Internaliser, V


def structural_equal(it: Internaliser, op: str, x: V, y: V, loc: Loc) -> ir.SubExp:
    """`x == y` (or `x != y`) for values of any non-function type."""
    from futgen.core.internalise import _flatten

    sc = Scalars(it)
    same = sc.all([_leaf_equal(it, sc, a, b, loc) for a, b in zip(_flatten(x), _flatten(y))])
    if op == "==":
        return same
    return it.bind1(ir.UnOp("not", "bool", same), BOOL, "ne")


def _leaf_equal(it: Internaliser, sc: Scalars, a: ir.SubExp, b: ir.SubExp,
                loc: Loc) -> ir.SubExp:
    t = it.type_of(a)
    if isinstance(t, ir.Prim):
        return it.bind1(ir.CmpOp("==", t.name, a, b), BOOL, "eq")
    assert isinstance(a, ir.Var) and isinstance(b, ir.Var)
    shape_a = _shape(it, a)
    shape_b = _shape(it, b)
    same_shape = sc.all([sc.cmp("==", m, n) for m, n in zip(shape_a, shape_b)])
    return it.if_(same_shape, lambda: _elements_equal(it, sc, a, b, t.elem, shape_a, loc),
                  lambda: ir.Constant(False, "bool"), T.BOOL, {}, loc)


def _shape(it: Internaliser, arr: ir.Var) -> list[ir.SubExp]:
    t = it.type_of(arr)
    assert isinstance(t, ir.ArrayT)
    return [d if d is not None else it.bind1(ir.ArraySize(arr.name, k), I64, "n")
            for k, d in enumerate(t.shape)]


def _elements_equal(it: Internaliser, sc: Scalars, a: ir.Var, b: ir.Var, elem: str,
                    shape: list[ir.SubExp], loc: Loc) -> ir.SubExp:
    """`reduce (&&) true (map2 (==) (flatten a) (flatten b))` for arrays of `shape`."""
    total = shape[0]
    for n in shape[1:]:
        total = sc.op("*", total, n)
    flat = []
    for arr in (a, b):
        if len(shape) > 1:
            arr = it.bind1(ir.Reshape(arr.name, (total,), loc), ir.ArrayT(elem, (total,)),
                           "flat")
        flat.append(arr.name)
    x, y, e = it.fresh("x"), it.fresh("y"), it.fresh("eq")
    t = ir.Prim(elem)
    eq = ir.Stm((ir.Param(e, BOOL),), ir.CmpOp("==", elem, ir.Var(x), ir.Var(y)))
    cmp = ir.Lambda((ir.Param(x, t), ir.Param(y, t)), ir.Body((eq,), (ir.Var(e),)), (BOOL,))
    p, q, r = it.fresh("p"), it.fresh("q"), it.fresh("r")
    both = ir.Stm((ir.Param(r, BOOL),), ir.BinOp("&", "bool", ir.Var(p), ir.Var(q)))
    and_ = ir.Lambda((ir.Param(p, BOOL), ir.Param(q, BOOL)), ir.Body((both,), (ir.Var(r),)),
                     (BOOL,))
    red = ir.Reduce(and_, (ir.Constant(True, "bool"),), comm=True)
    return it.bind1(ir.Screma(total, tuple(flat), (), (red,), cmp), BOOL, "all_eq")
