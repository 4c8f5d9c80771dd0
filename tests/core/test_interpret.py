"""The core IR interpreter on hand-written IR: Futhark's run-time errors,
the type check of every binding, and the fast paths agreeing with the
row-at-a-time ones."""

from __future__ import annotations

import numpy as np
import pytest

from futgen.core import ir, run
from futgen.core.interpret import IRError
from futgen.errors import FutharkError

I32 = ir.Prim("i32")
I64 = ir.Prim("i64")


def v(name: str, tag: int) -> ir.VName:
    return ir.VName(name, tag)


def _prog(params, ret, stms, result) -> ir.Program:
    body = ir.Body(tuple(stms), tuple(result))
    return ir.Program((ir.Function("f", tuple(params), tuple(ret), body, entry=True),))


def test_division_by_zero_is_a_futhark_error() -> None:
    x, y, r = v("x", 0), v("y", 1), v("r", 2)
    prog = _prog([ir.Param(x, I32), ir.Param(y, I32)], [I32],
                 [ir.Stm((ir.Param(r, I32),), ir.BinOp("/", "i32", ir.Var(x), ir.Var(y)))],
                 [ir.Var(r)])
    assert run(prog, "f", [np.int32(-7), np.int32(2)]) == [np.int32(-4)]
    with pytest.raises(FutharkError, match="division by zero"):
        run(prog, "f", [np.int32(1), np.int32(0)])


def test_index_out_of_bounds_names_index_and_shape() -> None:
    a, i, r = v("a", 0), v("i", 1), v("r", 2)
    prog = _prog([ir.Param(a, ir.ArrayT("i32", (None,))), ir.Param(i, I64)], [I32],
                 [ir.Stm((ir.Param(r, I32),), ir.Index(a, (ir.DimFix(ir.Var(i)),)))],
                 [ir.Var(r)])
    with pytest.raises(FutharkError, match=r"Index \[-1\] out of bounds .* shape \[3\]"):
        run(prog, "f", [np.arange(3, dtype=np.int32), np.int64(-1)])


def test_a_screma_whose_map_feeds_too_few_operators_is_an_ir_error() -> None:
    xs, r, e = v("xs", 0), v("r", 1), v("e", 2)
    ident = ir.Lambda((ir.Param(e, I32),), ir.Body((), ()), ())
    red = ir.Reduce(_sum_lambda("i32"), (ir.Constant(0, "i32"),))
    prog = _prog([ir.Param(xs, ir.ArrayT("i32", (None,)))], [I32],
                 [ir.Stm((ir.Param(r, I32),),
                         ir.Screma(ir.Constant(2, "i64"), (xs,), (), (red,), ident))],
                 [ir.Var(r)])
    with pytest.raises(IRError, match="fewer values"):
        run(prog, "f", [np.arange(2, dtype=np.int32)])


def test_a_binding_of_the_wrong_type_is_an_ir_error() -> None:
    x, r = v("x", 0), v("r", 1)
    prog = _prog([ir.Param(x, I32)], [I64],
                 [ir.Stm((ir.Param(r, I64),), ir.SubExpOp(ir.Var(x)))], [ir.Var(r)])
    with pytest.raises(IRError, match="r_1"):
        run(prog, "f", [np.int32(1)])


def _sum_lambda(prim: str, swapped: bool = False) -> ir.Lambda:
    a, b, c = v("a", 10), v("b", 11), v("c", 12)
    t = ir.Prim(prim)
    x, y = (ir.Var(b), ir.Var(a)) if swapped else (ir.Var(a), ir.Var(b))
    stm = ir.Stm((ir.Param(c, t),), ir.BinOp("+", prim, x, y))
    return ir.Lambda((ir.Param(a, t), ir.Param(b, t)), ir.Body((stm,), (ir.Var(c),)), (t,))


@pytest.mark.parametrize("swapped", [False, True])
def test_scan_and_reduce_fast_and_slow_paths_agree(swapped: bool) -> None:
    # With swapped operands the lambda is not recognised as a plain `+`, so
    # it runs row by row; both must wrap around the same way.
    xs, n, s, r = v("xs", 0), v("n", 1), v("s", 2), v("r", 3)
    e = v("e", 4)
    ident = ir.Lambda((ir.Param(e, I32),), ir.Body((), (ir.Var(e), ir.Var(e))), (I32, I32))
    lam = _sum_lambda("i32", swapped)
    screma = ir.Screma(ir.Var(n), (xs,), (ir.Scan(lam, (ir.Constant(0, "i32"),)),),
                       (ir.Reduce(lam, (ir.Constant(0, "i32"),)),), ident)
    prog = _prog([ir.Param(xs, ir.ArrayT("i32", (None,)))], [ir.ArrayT("i32", (None,)), I32],
                 [ir.Stm((ir.Param(n, I64),), ir.ArraySize(xs, 0)),
                  ir.Stm((ir.Param(s, ir.ArrayT("i32", (ir.Var(n),))), ir.Param(r, I32)),
                         screma)],
                 [ir.Var(s), ir.Var(r)])
    data = np.array([2**31 - 1, 1, 5], dtype=np.int32)
    scan, red = run(prog, "f", [data])
    assert scan.tolist() == [2**31 - 1, -(2**31), -(2**31) + 5]
    assert red == np.int32(-(2**31) + 5)
