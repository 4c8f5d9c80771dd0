"""The simplifier (futgen.opt.simplify): each rewrite on a small program,
checked on the printed core IR, and that failures stay where they were."""

from __future__ import annotations

import numpy as np
import pytest

from futgen.core import internalise, ir
from futgen.core.interpret import run
from futgen.core.pretty import pretty
from futgen.errors import FutharkError, Loc
from futgen.frontend import check_source
from futgen.opt.simplify import simplify


def _core(src: str) -> ir.Program:
    return internalise(check_source(src))


def _simple(src: str) -> str:
    return pretty(simplify(_core(src)))


def _lines(text: str, marker: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if marker in line]


def test_copies_are_propagated() -> None:
    out = _simple("entry main (x: i32) : i32 = let y = x let z = y in z * z")
    [stm] = _lines(out, "let")
    assert stm.endswith("= *.i32 x_0 x_0")


def test_constants_are_folded_and_propagated() -> None:
    out = _simple("entry main (x: i32) : i32 = x + (2 + 3) * 4")
    assert _lines(out, "let") == ["let (x_3: i32) = +.i32 x_0 20i32"]


def test_exact_integer_laws_apply() -> None:
    out = _simple("entry main (x: i32) : (i32, i32, i32, i32) = (x + 0, 1 * x, x * 0, x << 0)")
    assert "in (x_0, x_0, 0i32, x_0)" in out and not _lines(out, "let")


def test_float_laws_apply_only_where_exact() -> None:
    out = _simple("entry main (x: f32) : (f32, f32, f32, f32) = (x * 1, x - 0, x + 0, x * 0)")
    assert _lines(out, "let") == ["let (x_3: f32) = +.f32 x_0 0.0f32",
                                  "let (x_4: f32) = *.f32 x_0 0.0f32"]
    assert "in (x_0, x_0, x_3, x_4)" in out


def test_common_subexpressions_are_shared() -> None:
    out = _simple("entry main (x: i32) (y: i32) : (i32, i32, i32) = (x * y + 1, y * x + 2, x * y)")
    assert len(_lines(out, "*.i32")) == 1


def test_an_assertion_is_shared_only_with_the_same_message() -> None:
    c = ir.VName("c", 0)
    checks = [ir.Stm((ir.Param(ir.VName("ok", k), ir.Prim("bool")),),
                     ir.Assert(ir.Var(c), msg, Loc("f.fut", k, 1)))
              for k, msg in enumerate(["one", "two", "one"], start=1)]
    fun = ir.Function("main", (ir.Param(c, ir.Prim("bool")),), (ir.Prim("bool"),) * 3,
                      ir.Body(tuple(checks), tuple(ir.Var(s.pat[0].name) for s in checks)),
                      entry=True)
    out = pretty(simplify(ir.Program((fun,))))
    assert _lines(out, "assert") == ["let (ok_1: bool) = assert c_0 'one'",
                                     "let (ok_2: bool) = assert c_0 'two'"]
    assert "in (ok_1, ok_2, ok_1)" in out


def test_an_array_that_is_updated_is_not_shared() -> None:
    src = """entry main (n: i64) : ([n]i32, [n]i32) =
               let a = replicate n 0i32
               let b = replicate n 0i32
               let b[0] = 1
               in (a, b)"""
    prog = simplify(_core(src))
    assert len(_lines(pretty(prog), "replicate")) == 2
    a, b = run(prog, "main", [np.int64(3)])
    assert a.tolist() == [0, 0, 0] and b.tolist() == [1, 0, 0]


def test_sizes_are_known_non_negative() -> None:
    out = _simple("entry main (xs: []i32) : []i64 = iota (length xs)")
    assert "assert" not in out and ">=" not in out


def test_dead_code_goes_but_failures_stay() -> None:
    src = """entry main (xs: []i32) (d: i32) : i64 =
               let _unused = map (* 2) xs
               let _y = xs[100]
               let _q = d / d
               in length xs"""
    prog = simplify(_core(src))
    out = pretty(prog)
    assert "screma" not in out and "*.i32" not in out
    assert "xs_0[100i64]" in out and "/.i32" in out
    with pytest.raises(FutharkError, match="out of bounds"):
        run(prog, "main", [np.arange(5, dtype=np.int32), np.int32(1)])
    ok = simplify(_core(src.replace("xs[100]", "xs[0]")))
    with pytest.raises(FutharkError, match="division by zero"):
        run(ok, "main", [np.arange(5, dtype=np.int32), np.int32(0)])


def test_unused_mapped_arrays_go() -> None:
    out = _simple("""entry main (xs: []i32) : []i32 =
                       let (a, _) = unzip (map (\\x -> (x + 1, x * 2)) xs) in a""")
    assert "*.i32" not in out and len(_lines(out, "screma")) == 1
    assert _lines(out, ": (i32) ->")


def _before(text: str, marker: str) -> list[str]:
    """The statements printed before the first line containing `marker`."""
    lines = text.splitlines()
    end = next(k for k, line in enumerate(lines) if marker in line)
    return [line.strip() for line in lines[:end] if "let" in line]


@pytest.mark.parametrize("src, marker", [
    ("entry main (xs: []i32) (a: i32) (b: i32) : []i32 = map (\\x -> x + a * b) xs", "screma"),
    ("entry main (a: i32) (b: i32) : i32 = loop acc = 0 for i < 10 do acc + i + a * b", "loop"),
])
def test_invariant_scalar_code_is_hoisted(src: str, marker: str) -> None:
    out = _simple(src)
    assert any("*.i32 a_" in line for line in _before(out, marker))


def test_code_that_may_fail_is_not_hoisted() -> None:
    src = "entry main (xs: []i32) (a: i32) (b: i32) : []i32 = map (\\x -> x + a / b) xs"
    prog = simplify(_core(src))
    assert not any("/.i32" in line for line in _before(pretty(prog), "screma"))
    empty = np.zeros(0, dtype=np.int32)
    assert run(prog, "main", [empty, np.int32(1), np.int32(0)])[0].size == 0


def test_a_known_branch_is_taken() -> None:
    out = _simple("""entry main (x: i32) : i32 =
                       let n = 3i64 in if n > 2 then x + 1 else x - 1""")
    assert "if" not in out and "-.i32" not in out


def test_simplify_reaches_a_fixed_point() -> None:
    src = "entry main (xs: []i32) (a: i32) : i32 = reduce (+) 0 (map (\\x -> x * (a + 0)) xs)"
    once = simplify(_core(src))
    assert simplify(once) == once


def test_a_copy_of_a_loop_counter_is_propagated() -> None:
    n, acc, i, j, x, out = (ir.VName(b, k) for k, b in enumerate(("n", "acc", "i", "j", "x", "r")))
    i64 = ir.Prim("i64")
    body = ir.Body((ir.Stm((ir.Param(j, i64),), ir.SubExpOp(ir.Var(i))),
                    ir.Stm((ir.Param(x, i64),), ir.BinOp("+", "i64", ir.Var(acc), ir.Var(j)))),
                   (ir.Var(x),))
    loop = ir.Loop(((ir.Param(acc, i64), ir.Constant(0, "i64")),), ir.ForLoop(i, "i64", ir.Var(n)),
                   body)
    fun = ir.Function("main", (ir.Param(n, i64),), (i64,),
                      ir.Body((ir.Stm((ir.Param(out, i64),), loop),), (ir.Var(out),)), entry=True)
    assert "+.i64 acc_1 i_2" in pretty(simplify(ir.Program((fun,))))


def test_returned_arrays_are_not_shared() -> None:
    out = _simple("entry main (n: i64) : ([n]i32, [n]i32) = (replicate n 0, replicate n 0)")
    assert len(_lines(out, "replicate")) == 2


def test_a_size_the_type_states_is_known() -> None:
    out = _simple("entry main (xs: []i32) : i64 = let ys = map (+ 1) xs in length ys")
    assert "screma" not in out and _lines(out, "let") == ["let (n_1: i64) = size xs_0 0"]
