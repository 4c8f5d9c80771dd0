"""What may fail and what may be consumed (futgen.opt.effects)."""

from __future__ import annotations

from futgen.core import internalise, ir
from futgen.frontend import check_source
from futgen.opt.effects import Aliases, can_fail, consuming_parameters

SRC = """
def set_first (xs: *[]i32) (v: i32) : *[]i32 = xs with [0] = v
def pass_on (xs: *[]i32) (ys: []i32) : *[]i32 = set_first xs ys[0]
def total (ys: []i32) : i32 = reduce (+) 0 ys
entry main (xs: *[]i32) (ys: []i32) : ([]i32, i32) =
  let zs = map (+ 1) ys
  in (pass_on xs zs, total zs)
"""


def test_calls_consume_what_their_callees_consume() -> None:
    prog = internalise(check_source(SRC))
    calls = consuming_parameters(prog)
    assert calls["set_first"] == {0} and calls["pass_on"] == {0} and calls["total"] == set()
    main = prog.function("main")
    xs = main.params[0].name
    [zs] = (s.pat[0].name for s in main.body.stms if isinstance(s.exp, ir.Screma))
    consumed = Aliases(main.body, calls).consumed
    assert xs in consumed and zs not in consumed
    assert zs in Aliases(main.body).consumed  # without the facts, calls consume every argument


def test_what_may_fail() -> None:
    x, xs = ir.Var(ir.VName("x", 0)), ir.VName("xs", 1)
    types = {xs: ir.ArrayT("i32", (ir.Constant(5, "i64"),))}

    def index(i: int) -> ir.Index:
        return ir.Index(xs, (ir.DimFix(ir.Constant(i, "i64")),))

    assert can_fail(ir.BinOp("/", "i32", x, x), types)
    assert not can_fail(ir.BinOp("/", "i32", x, ir.Constant(2, "i32")), types)
    assert not can_fail(ir.BinOp("/", "f32", x, x), types)
    assert can_fail(ir.BinOp("**", "i64", x, ir.Constant(-1, "i64")), types)
    assert not can_fail(ir.BinOp("**", "u8", x, x), types)
    assert can_fail(index(5), types) and not can_fail(index(4), types)
    assert can_fail(ir.Assert(x, "no"), types)
    assert not can_fail(ir.Assert(ir.Constant(True, "bool"), "no"), types)


def test_a_read_at_a_loop_counter_below_the_dimension_cannot_fail() -> None:
    n, m = ir.Var(ir.VName("n", 0)), ir.Var(ir.VName("m", 1))
    i, xs, ys = ir.VName("i", 2), ir.VName("xs", 3), ir.VName("ys", 4)
    types = {xs: ir.ArrayT("f32", (n,)), ys: ir.ArrayT("f32", (None,))}
    read = ir.Index(xs, (ir.DimFix(ir.Var(i)),))
    assert can_fail(read, types)  # no range known for i
    assert not can_fail(read, types, {i: n})
    assert can_fail(read, types, {i: m})  # another bound
    assert can_fail(ir.Index(ys, (ir.DimFix(ir.Var(i)),)), types, {i: n})  # size unknown
