"""Vectorised NumPy kernels on hand-made GPU IR: per-lane `if` and loops,
tree reductions and log-step scans with operators that have no ufunc, and
gathers failing with Futhark's message."""

from __future__ import annotations

import numpy as np
import pytest

from futgen.codegen import cpu_support as S
from futgen.codegen.numpy_kernels import emit_segop, is_vectorisable
from futgen.codegen.pysrc import Emitter, free_vars, pyname
from futgen.core import ir
from futgen.errors import FutharkError
from futgen.gpu.ir import SegBinOp, SegMap, SegRed, SegScan, SegSpace

I64, I32, F32, BOOL = ir.Prim("i64"), ir.Prim("i32"), ir.Prim("f32"), ir.Prim("bool")
_tags = iter(range(1000, 100000))


def v(base: str) -> ir.VName:
    return ir.VName(base, next(_tags))


def stm(name: ir.VName, t: ir.Type, e: ir.Exp) -> ir.Stm:
    return ir.Stm((ir.Param(name, t),), e)


def run(segop_stm: ir.Stm, env: dict[ir.VName, object]) -> tuple:
    """Emit the SegOp's CPU function, exec it, call it on `env`."""
    free = sorted(free_vars(segop_stm.exp), key=lambda x: x.tag)
    em = Emitter()
    with em.block(f"def f({', '.join(['self', 'b', *(pyname(x) for x in free)])}):"):
        results = emit_segop(em, segop_stm, rows=None)  # type: ignore[arg-type]
        em.line(f"return ({', '.join(results)},)")
    ns: dict = {"np": np, "S": S}
    exec(em.text(), ns)  # noqa: S102 - the code under test
    with np.errstate(all="ignore"):
        return ns["f"](None, None, *(env[x] for x in free))


def gather_body(xs: ir.VName, gtid: ir.VName, x: ir.VName) -> ir.Stm:
    return stm(x, I32, ir.Index(xs, (ir.DimFix(ir.Var(gtid)),)))


def test_if_runs_each_branch_only_on_its_lanes():
    # map (\x -> if x != 0 then 100 / x else -1) xs: no division by zero.
    xs, n, g, x, c, r, q = v("xs"), v("n"), v("g"), v("x"), v("c"), v("r"), v("q")
    then_ = ir.Body((stm(q, I32, ir.BinOp("/", "i32", ir.Constant(100, "i32"), ir.Var(x))),),
                    (ir.Var(q),))
    else_ = ir.Body((), (ir.Constant(-1, "i32"),))
    body = ir.Body((gather_body(xs, g, x),
                    stm(c, BOOL, ir.CmpOp("!=", "i32", ir.Var(x), ir.Constant(0, "i32"))),
                    stm(r, I32, ir.If(ir.Var(c), then_, else_, (I32,)))), (ir.Var(r),))
    op = SegMap("grid", SegSpace((g,), (ir.Var(n),)), (I32,), body)
    (out,) = run(stm(v("out"), ir.ArrayT("i32", (ir.Var(n),)), op),
                 {xs: np.array([5, 0, -3, 0], np.int32), n: np.int64(4)})
    assert out.tolist() == [20, -1, -34, -1]


def test_a_branch_no_lane_takes_does_not_run():
    # map (\b -> if b then ys[2] else 0) bs: `ys[2]` is the same in every
    # lane; with a short `ys` it fails only where some lane takes the branch.
    bs, ys, n, g, c, e, r = v("bs"), v("ys"), v("n"), v("g"), v("c"), v("e"), v("r")
    then_ = ir.Body((stm(e, I32, ir.Index(ys, (ir.DimFix(ir.Constant(2, "i64")),))),),
                    (ir.Var(e),))
    else_ = ir.Body((), (ir.Constant(0, "i32"),))
    body = ir.Body((stm(c, BOOL, ir.Index(bs, (ir.DimFix(ir.Var(g)),))),
                    stm(r, I32, ir.If(ir.Var(c), then_, else_, (I32,)))), (ir.Var(r),))
    op = stm(v("out"), ir.ArrayT("i32", (ir.Var(n),)),
             SegMap("grid", SegSpace((g,), (ir.Var(n),)), (I32,), body))
    short = np.array([1, 2], np.int32)
    (out,) = run(op, {bs: np.array([False, False]), ys: short, n: np.int64(2)})
    assert out.tolist() == [0, 0]
    (out,) = run(op, {bs: np.array([False, True]), ys: np.arange(3, dtype=np.int32),
                      n: np.int64(2)})
    assert out.tolist() == [0, 2]
    with pytest.raises(FutharkError, match=r"Index \[2\] out of bounds"):
        run(op, {bs: np.array([False, True]), ys: short, n: np.int64(2)})


def test_while_loop_with_a_trip_count_per_lane():
    # Collatz steps of each element: lanes stop at different iterations.
    xs, n, g, x, r = v("xs"), v("n"), v("g"), v("x"), v("r")
    a, k, go = v("a"), v("k"), v("go")
    a2, k2, go2, odd, half, tri, t1, m = (v(s) for s in ["a2", "k2", "go2", "odd", "half", "tri", "t1", "m"])
    lb = ir.Body((
        stm(m, I32, ir.BinOp("%", "i32", ir.Var(a), ir.Constant(2, "i32"))),
        stm(odd, BOOL, ir.CmpOp("==", "i32", ir.Var(m), ir.Constant(1, "i32"))),
        stm(half, I32, ir.BinOp("/", "i32", ir.Var(a), ir.Constant(2, "i32"))),
        stm(t1, I32, ir.BinOp("*", "i32", ir.Var(a), ir.Constant(3, "i32"))),
        stm(tri, I32, ir.BinOp("+", "i32", ir.Var(t1), ir.Constant(1, "i32"))),
        stm(a2, I32, ir.If(ir.Var(odd), ir.Body((), (ir.Var(tri),)),
                           ir.Body((), (ir.Var(half),)), (I32,))),
        stm(k2, I32, ir.BinOp("+", "i32", ir.Var(k), ir.Constant(1, "i32"))),
        stm(go2, BOOL, ir.CmpOp("!=", "i32", ir.Var(a2), ir.Constant(1, "i32"))),
    ), (ir.Var(a2), ir.Var(k2), ir.Var(go2)))
    start = v("start")
    loop = ir.Loop(((ir.Param(a, I32), ir.Var(x)), (ir.Param(k, I32), ir.Constant(0, "i32")),
                    (ir.Param(go, BOOL), ir.Var(start))), ir.WhileLoop(go), lb)
    body = ir.Body((gather_body(xs, g, x),
                    stm(start, BOOL, ir.CmpOp("!=", "i32", ir.Var(x), ir.Constant(1, "i32"))),
                    ir.Stm((ir.Param(v("af"), I32), ir.Param(r, I32), ir.Param(v("gf"), BOOL)),
                           loop)), (ir.Var(r),))
    op = SegMap("grid", SegSpace((g,), (ir.Var(n),)), (I32,), body)
    (out,) = run(stm(v("out"), ir.ArrayT("i32", (ir.Var(n),)), op),
                 {xs: np.array([1, 2, 3, 6, 7], np.int32), n: np.int64(5)})
    assert out.tolist() == [0, 1, 7, 8, 16]


def _affine_op() -> SegBinOp:
    """Composition of affine maps (a1, b1) then (a2, b2): associative, not commutative."""
    a1, b1, a2, b2, ra, t, rb = (v(s) for s in ["a1", "b1", "a2", "b2", "ra", "t", "rb"])
    body = ir.Body((stm(ra, I32, ir.BinOp("*", "i32", ir.Var(a1), ir.Var(a2))),
                    stm(t, I32, ir.BinOp("*", "i32", ir.Var(b1), ir.Var(a2))),
                    stm(rb, I32, ir.BinOp("+", "i32", ir.Var(t), ir.Var(b2)))),
                   (ir.Var(ra), ir.Var(rb)))
    lam = ir.Lambda(tuple(ir.Param(p, I32) for p in (a1, b1, a2, b2)), body, (I32, I32))
    assert is_vectorisable(lam)
    return SegBinOp(lam, (ir.Constant(1, "i32"), ir.Constant(0, "i32")))


def _affine_segop(kind: type, rows: int, cols: int) -> tuple[ir.Stm, dict]:
    aa, bb, m, n, g0, g1, x, y = (v(s) for s in ["aa", "bb", "m", "n", "g0", "g1", "x", "y"])
    body = ir.Body((stm(x, I32, ir.Index(aa, (ir.DimFix(ir.Var(g0)), ir.DimFix(ir.Var(g1))))),
                    stm(y, I32, ir.Index(bb, (ir.DimFix(ir.Var(g0)), ir.DimFix(ir.Var(g1)))))),
                   (ir.Var(x), ir.Var(y)))
    op = kind("grid", SegSpace((g0, g1), (ir.Var(m), ir.Var(n))), (_affine_op(),),
              (I32, I32), body)
    rng = np.random.default_rng(1)
    env = {aa: rng.integers(-3, 4, (rows, cols)).astype(np.int32),
           bb: rng.integers(-3, 4, (rows, cols)).astype(np.int32),
           m: np.int64(rows), n: np.int64(cols)}
    shape = (ir.Var(m),) if kind is SegRed else (ir.Var(m), ir.Var(n))
    pat = (ir.Param(v("ra"), ir.ArrayT("i32", shape)), ir.Param(v("rb"), ir.ArrayT("i32", shape)))
    return ir.Stm(pat, op), env


def _sequential(a: np.ndarray, b: np.ndarray) -> tuple[list, list]:
    """Left-to-right prefixes of the affine composition, per row."""
    ra, rb = [], []
    for row_a, row_b in zip(a.tolist(), b.tolist()):
        acc, out = (1, 0), []
        for x, y in zip(row_a, row_b):
            acc = (acc[0] * x, acc[1] * x + y)
            out.append(acc)
        ra.append([p[0] for p in out])
        rb.append([p[1] for p in out])
    return ra, rb


@pytest.mark.parametrize("cols", [0, 1, 5, 8, 13])
def test_segmented_tree_reduce_keeps_operand_order(cols):
    s, env = _affine_segop(SegRed, 3, cols)
    ra, rb = run(s, env)
    a, b = list(env.values())[:2]
    want_a, want_b = _sequential(a, b)
    assert ra.tolist() == [r[-1] if r else 1 for r in want_a]
    assert rb.tolist() == [r[-1] if r else 0 for r in want_b]


@pytest.mark.parametrize("cols", [0, 1, 6, 17])
def test_segmented_log_step_scan_keeps_operand_order(cols):
    s, env = _affine_segop(SegScan, 2, cols)
    ra, rb = run(s, env)
    a, b = list(env.values())[:2]
    want_a, want_b = _sequential(a, b)
    assert ra.tolist() == (want_a if cols else [[], []])
    assert rb.tolist() == (want_b if cols else [[], []])


def test_gather_out_of_bounds_gives_futharks_message():
    with pytest.raises(FutharkError, match=r"Index \[2, 9\] out of bounds for array of shape "
                                           r"\[3\]\[4\]"):
        S.gather(np.zeros((3, 4)), (np.array([0, 2]), np.array([1, 9])), "p.fut:3:5")
