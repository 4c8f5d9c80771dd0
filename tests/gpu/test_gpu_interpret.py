"""The GPU IR interpreter and printer.

The vectorised evaluation of SegOps (masked branches and loops) must agree
with running the body once per point through the core interpreter; errors
in kernel code are Futhark's errors, raised only by points that really run
the failing code.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from futgen.cli import main as cli_main
from futgen.core import internalise, ir
from futgen.errors import FutharkError
from futgen.frontend import check_source, load
from futgen.gpu.check import KernelRuleError, check_program
from futgen.gpu.interpret import run
from futgen.gpu.ir import Scratch, SegBinOp, SegMap, SegRed, SegSpace
from futgen.gpu.pretty import pretty
from futgen.pipeline import run_passes
from futgen.testing.spec import read_spec

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
I64, F32 = ir.Prim("i64"), ir.Prim("f32")


def _flat(src: str) -> ir.Program:
    return run_passes(internalise(check_source(src)))


def _both(prog: ir.Program, entry: str, args: list) -> list:
    """The results of both evaluation strategies, checked equal."""
    vec = run(prog, entry, args)
    per_point = run(prog, entry, args, vectorise=False)
    for a, b in zip(vec, per_point):
        assert np.asarray(a).dtype == np.asarray(b).dtype
        np.testing.assert_array_equal(a, b)
    return vec


CASES = [
    # A while loop whose trip count differs between points.
    (("entry main [n] (xs: [n]i32) : [n]i32 = "
     "map (\\x -> loop y = x while y > 1 do if y % 2 == 0 then y / 2 else 3 * y + 1) xs"),
     [np.array([1, 2, 3, 7, 27, 0], np.int32)]),
    # A for loop with a per-point bound, and a branch on the loop value.
    (("entry main [n] (xs: [n]i64) : [n]i64 = "
     "map (\\x -> loop acc = 0 for i < x do if i % 2 == 0 then acc + i else acc - 1) xs"),
     [np.array([0, 1, 5, 8], np.int64)]),
    # A segmented reduction with a tuple operator (not a single ufunc).
    (("entry main [n][m] (xss: [n][m]f32) : ([n]f32, [n]i64) = "
     "unzip (map (\\r -> reduce (\\(a, i) (b, j) -> if a >= b then (a, i) else (b, j)) "
     "(f32.lowest, -1) (zip r (iota m))) xss)"),
     [np.array([[1, 5, 2], [7, 0, 7], [-1, -2, -3]], np.float32)]),
    # A scan with an operator that branches, and an empty space.
    (("entry main [n] (fs: [n]bool) (xs: [n]i32) : [n]i32 = "
     "(unzip (scan (\\(f1, x1) (f2, x2) -> (f1 || f2, if f2 then x2 else x1 + x2)) "
     "(false, 0) (zip fs xs))).1"),
     [np.array([True, False, True, False]), np.array([1, 2, 3, 4], np.int32)]),
    ("entry main [n][m] (xss: [n][m]i32) : [n]i32 = map (\\r -> reduce i32.max i32.lowest r) xss",
     [np.zeros((3, 0), np.int32)]),
]


@pytest.mark.parametrize(("src", "args"), CASES)
def test_vectorised_segops_agree_with_per_point_evaluation(src: str, args: list) -> None:
    _both(_flat(src), "main", args)


def test_an_index_out_of_bounds_in_a_branch_not_taken_is_not_an_error() -> None:
    prog = _flat("entry main [n] (xs: [n]f32) : [n]f32 = "
                 "map (\\i -> if i == 0 then xs[i] else xs[i - 1] + xs[i]) (iota n)")
    got = _both(prog, "main", [np.array([1, 2, 3], np.float32)])
    assert got[0].tolist() == [1, 3, 5]


def test_an_index_out_of_bounds_in_a_kernel_is_a_futhark_error() -> None:
    prog = _flat("entry main [n] (xs: [n]i32) : [n]i32 = map (\\i -> xs[i + 1]) (iota n)")
    with pytest.raises(FutharkError, match=r"Index \[3\] out of bounds.*\[3\]"):
        run(prog, "main", [np.array([1, 2, 3], np.int32)])


def test_a_hand_written_segred_reduces_the_innermost_dimension() -> None:
    xs, g0, g1, x, a, b, c, r, n, m = (ir.VName(s, t) for t, s in enumerate(
        ["xs", "g", "h", "x", "a", "b", "c", "r", "n", "m"]))
    op = SegBinOp(ir.Lambda((ir.Param(a, F32), ir.Param(b, F32)), ir.Body(
        (ir.Stm((ir.Param(c, F32),), ir.BinOp("+", "f32", ir.Var(a), ir.Var(b))),),
        (ir.Var(c),)), (F32,)), (ir.Constant(0.0, "f32"),))
    body = ir.Body((ir.Stm((ir.Param(x, F32),), ir.Index(
        xs, (ir.DimFix(ir.Var(g0)), ir.DimFix(ir.Var(g1))))),), (ir.Var(x), ir.Var(x)))
    seg = SegRed("grid", SegSpace((g0, g1), (ir.Var(n), ir.Var(m))), (op,), (F32, F32), body)
    stms = (ir.Stm((ir.Param(n, I64),), ir.ArraySize(xs, 0)),
            ir.Stm((ir.Param(m, I64),), ir.ArraySize(xs, 1)),
            ir.Stm((ir.Param(r, ir.ArrayT("f32", (ir.Var(n),))),
                    ir.Param(c, ir.ArrayT("f32", (ir.Var(n), ir.Var(m))))), seg))
    fn = ir.Function("f", (ir.Param(xs, ir.ArrayT("f32", (None, None))),),
                     (ir.ArrayT("f32", (None,)), ir.ArrayT("f32", (None, None))),
                     ir.Body(stms, (ir.Var(r), ir.Var(c))), entry=True)
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    sums, mapped = run(ir.Program((fn,)), "f", [data])
    assert sums.tolist() == [3, 12] and mapped.tolist() == data.tolist()
    text = pretty(fn)
    assert "segred grid (g_1 < n_8, h_2 < m_9)" in text
    assert "reduce (0.0f32)" in text and ": (f32, f32)" in text


def _private_rows_program(make: ir.Exp) -> ir.Program:
    """`f n = segmap (g < n) { let y: [n]i64 = <make>; ... y with [0] = g }`: every
    thread builds a private row and returns it."""
    xs, g, y, z, n = (ir.VName(b, k) for k, b in enumerate(["xs", "g", "y", "z", "n"]))
    row = ir.ArrayT("i64", (ir.Var(n),))
    body = ir.Body((ir.Stm((ir.Param(y, row),), make),
                    ir.Stm((ir.Param(z, row),), ir.Update(y, (ir.DimFix(ir.Constant(0, "i64")),),
                                                           ir.Var(g)))),
                   (ir.Var(z),))
    seg = SegMap("grid", SegSpace((g,), (ir.Var(n),)), (row,), body)
    out = ir.ArrayT("i64", (ir.Var(n), ir.Var(n)))
    fn = ir.Function("f", (ir.Param(n, I64),), (out,),
                     ir.Body((ir.Stm((ir.Param(xs, out),), seg),), (ir.Var(xs),)), entry=True)
    return ir.Program((fn,))


def test_a_segmap_returns_the_private_arrays_its_threads_build() -> None:
    make = ir.Replicate((ir.Var(ir.VName("n", 4)),), ir.Constant(7, "i64"))
    prog = _private_rows_program(make)
    check_program(prog)
    (rows,) = run(prog, "f", [np.int64(3)])
    assert rows.tolist() == [[0, 7, 7], [1, 7, 7], [2, 7, 7]]
    (empty,) = run(prog, "f", [np.int64(0)])
    assert empty.shape == (0, 0)
    assert "replicate (n_4) 7i64" in pretty(prog.functions[0])


def test_kernel_rules_reject_arrays_that_are_not_private_memory() -> None:
    n = ir.VName("n", 4)
    iota = _private_rows_program(ir.Iota(ir.Var(n), ir.Constant(0, "i64"), ir.Constant(1, "i64")))
    with pytest.raises(KernelRuleError, match="Iota in kernel code"):
        check_program(iota)
    unknown = _private_rows_program(Scratch("i64", (ir.Var(n),)))
    stm = unknown.functions[0].body.stms[0]
    first = stm.exp.body.stms[0]
    odd = ir.Param(first.pat[0].name, ir.ArrayT("i64", (None,)))
    bad_body = ir.Body((ir.Stm((odd,), first.exp), *stm.exp.body.stms[1:]), stm.exp.body.result)
    bad = ir.Program((ir.Function("f", unknown.functions[0].params, unknown.functions[0].ret,
                                  ir.Body((ir.Stm(stm.pat, SegMap("grid", stm.exp.space,
                                                                  stm.exp.ret, bad_body)),),
                                          unknown.functions[0].body.result), entry=True),))
    with pytest.raises(KernelRuleError, match="known only in the kernel"):
        check_program(bad)


def test_dump_gpu_prints_segops(capsys) -> None:
    assert cli_main(["dump", "--ir", "gpu", str(EXAMPLES / "dotprod.fut")]) == 0
    out = capsys.readouterr().out
    assert "segred grid (gtid_" in out and "reduce_comm (0.0f32)" in out
    assert "screma" not in out


@pytest.mark.parametrize("example", ["matmul", "prefix_sum", "stencil", "kmeans", "tridiag"])
def test_examples_agree_per_point(example: str) -> None:
    path = EXAMPLES / f"{example}.fut"
    prog = run_passes(internalise(load(str(path))))
    for case in read_spec(str(path)).cases:
        for r in case.runs:
            if r.input.kind == "inline":
                _both(prog, case.entry, list(r.input.values))
