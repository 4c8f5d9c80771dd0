"""The host code's scalar simplification after flattening
(futgen.opt.simplify_host): GPU IR text in, text out, and that programs
mean the same before and after it."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from futgen.core import ir
from futgen.gpu.check import check_program
from futgen.gpu.interpret import run as run_gpu
from futgen.gpu.pretty import pretty
from futgen.gpu.read import read_program
from futgen.opt.simplify_host import simplify_host

# A time loop whose body has a guarded version, as flattening writes them:
# the guard's parallelism and a size computed again in each branch.
LOOP = """\
fun f(n_1: i64, m_2: i64, k_3: i64, xs_4: [?]f32) : ([?]f32) =
{
  let (r_5: [n_1]f32) =
    loop (acc_6: [n_1]f32 = xs_4) for i_7: i64 < k_3 do
    {
      let (p_8: i64) = *.i64 n_1 m_2
      let (g_9: bool) = threshold(f.suff_outer_par_0, default 32768) <= p_8
      let (y_10: [n_1]f32) =
        if g_9 : ([n_1]f32)
        then
        {
          let (q_11: i64) = *.i64 m_2 n_1
          let (b_12: i64) = +.i64 q_11 15i64
          let (c_13: i64) = {divisor}
          let (t_14: f32) = i64->f32 c_13
          let (z_15: [n_1]f32) =
            segmap grid (gtid_16 < n_1)
            : (f32)
            {
              let (a_17: f32) = acc_6[gtid_16]
              let (s_18: f32) = +.f32 a_17 t_14
              in (s_18)
            }
          in (z_15)
        }
        else
        {
          let (q_19: i64) = *.i64 n_1 m_2
          let (b_20: i64) = +.i64 q_19 15i64
          let (d_21: i64) = +.i64 b_20 i_7
          let (t_22: f32) = i64->f32 d_21
          let (z_23: [n_1]f32) =
            segmap grid (gtid_24 < n_1)
            : (f32)
            {
              let (a_25: f32) = acc_6[gtid_24]
              let (s_26: f32) = -.f32 a_25 t_22
              in (s_26)
            }
          in (z_23)
        }
      in (y_10)
    }
  in (r_5)
}
"""


def _program(divisor: str = "+.i64 b_12 1i64"):
    prog = read_program(LOOP.replace("{divisor}", divisor))
    check_program(prog)
    return prog


def _body_of_loop(text: str) -> str:
    return text[text.index("loop ("):]


def test_equal_scalars_move_out_of_the_loop_and_its_branches_once() -> None:
    before = _program()
    after = simplify_host(before)
    check_program(after)
    text = pretty(after)
    # n * m once (m * n is the same product), in front of the loop; the
    # branch-local sizes that use nothing of the loop's move too.
    assert text.count("*.i64") == 1
    assert text.count("+.i64 ") == 3  # b + 15 once, then b + 1 and b + i
    loop = _body_of_loop(text)
    assert "*.i64" not in loop and "+.i64 q" not in loop
    # What depends on the loop's counter stays inside, in its branch.
    assert "+.i64 b_12 i_7" in loop or "+.i64 i_7 b_12" in loop
    # The guard stays where it was: it logs, in order.
    assert loop.index("threshold(f.suff_outer_par_0") < loop.index("if g_9")


def test_the_meaning_is_kept_in_every_version() -> None:
    before, after = _program(), simplify_host(_program())
    xs = np.arange(6, dtype=np.float32)
    for threshold in (1, 2_000_000_000):
        tuning = {"f.suff_outer_par_0": threshold}
        args = [np.int64(6), np.int64(3), np.int64(4), xs]
        want = run_gpu(before, "f", args, thresholds=tuning)
        got = run_gpu(after, "f", args, thresholds=tuning)
        np.testing.assert_array_equal(got[0], want[0])
        assert not np.array_equal(want[0], xs)


def test_an_operation_that_may_fail_stays_in_its_branch() -> None:
    """An integer division by a variable may fail: outside the branch it would
    fail where the program did not."""
    text = pretty(simplify_host(_program(divisor="/.i64 b_12 k_3")))
    then_branch = text[text.index("then"):text.index("else")]
    assert "/.i64" in then_branch


def test_a_name_bound_twice_is_never_renamed() -> None:
    """A SegOp's kept core statement (`host`, for the CPU backend) may bind
    host names again; sharing such a name would rename its binder there too."""
    prog = _program()
    fun = prog.functions[0]
    loop = fun.body.stms[0].exp
    branch = next(s.exp for s in loop.body.stms if isinstance(s.exp, ir.If))
    q_11, segmap = branch.then_.stms[0], branch.then_.stms[-1]
    kept = replace(segmap, exp=replace(segmap.exp, host=q_11))
    then_ = replace(branch.then_, stms=(*branch.then_.stms[:-1], kept))
    new_if = replace(branch, then_=then_)
    body = replace(loop.body, stms=tuple(replace(s, exp=new_if) if s.exp is branch else s
                                         for s in loop.body.stms))
    fun = replace(fun, body=replace(fun.body, stms=(
        replace(fun.body.stms[0], exp=replace(loop, body=body)), *fun.body.stms[1:])))
    out = pretty(simplify_host(ir.Program((fun,))))
    # q_11 is still computed (under its own name), p_8's twin q_19 is shared.
    assert "let (q_11: i64) =" in out and "q_19" not in out


REPLICATES = """\
fun f(n_1: i64, k_2: i64, x_3: f32) : ([?]f32) =
{
  let (r_4: [n_1]f32) =
    loop (acc_5: [n_1]f32 = {init}) for i_6: i64 < k_2 do
    {
      let (zs_7: [n_1]f32) = replicate (n_1) 0.0f32
      let (ws_8: [n_1]f32) = replicate (n_1) x_3
      let (vs_9: [n_1]f32) = ws_8 with [i_6] = 1.0f32
      let (s_10: [n_1]f32) =
        segmap grid (gtid_11 < n_1)
          : (f32)
        {
          let (a_12: f32) = acc_5[gtid_11]
          let (z_13: f32) = zs_7[gtid_11]
          let (v_14: f32) = vs_9[gtid_11]
          let (b_15: f32) = +.f32 a_12 z_13
          let (c_16: f32) = +.f32 b_15 v_14
          in (c_16)
        }
      in (s_10)
    }
  in (r_4)
}
"""


def test_an_invariant_array_leaves_the_loop_unless_something_consumes_it() -> None:
    prog = read_program(REPLICATES.replace("{init}", "acc_init_17").replace(
        "{\n  let (r_4", "{\n  let (acc_init_17: [n_1]f32) = replicate (n_1) 2.0f32\n  let (r_4"))
    check_program(prog)
    after = simplify_host(prog)
    check_program(after)
    text = pretty(after)
    loop = _body_of_loop(text)
    assert "replicate (n_1) 0.0f32" in text and "replicate (n_1) 0.0f32" not in loop
    # ws_8 is updated in place in every iteration: each needs its own.
    assert "replicate (n_1) x_3" in loop
    args = [np.int64(5), np.int64(3), np.float32(0.5)]
    np.testing.assert_array_equal(run_gpu(after, "f", args)[0], run_gpu(prog, "f", args)[0])


SHARED = """\
fun f(n_1: i64, xs_2: [n_1][n_1]f32) : ([?][?]f32, [?][?]f32) =
{
  let (a_3: [n_1][n_1]f32) = rearrange (1, 0) xs_2
  let (b_4: [n_1][n_1]f32) = rearrange (1, 0) xs_2
  let (c_5: [n_1][n_1]f32) = rearrange (1, 0) xs_2
  let (d_6: [n_1][n_1]f32) = {update}
  in (a_3, {second})
}
"""


def test_equal_arrays_are_shared_and_unused_ones_removed_unless_consumed() -> None:
    prog = read_program(SHARED.replace("{update}", "iota n_1 0i64 1i64").replace(
        "d_6: [n_1][n_1]f32", "d_6: [n_1]i64").replace("{second}", "b_4"))
    check_program(prog)
    text = pretty(simplify_host(prog))
    assert text.count("rearrange") == 1 and "iota" not in text and "in (a_3, a_3)" in text
    # b_4 updated in place: it needs its own copy.
    prog = read_program(SHARED.replace("{update}", "b_4 with [0i64, 0i64] = 1.0f32")
                        .replace("{second}", "d_6"))
    check_program(prog)
    text = pretty(simplify_host(prog))
    assert text.count("rearrange") == 2 and "let (b_4" in text


BRANCH = """\
fun f(n_1: i64, k_2: i64, c_3: bool, xs_4: [n_1][n_1]f32) : ([?][?]f32) =
{
  let (r_5: [n_1][n_1]f32) =
    loop (acc_6: [n_1][n_1]f32 = xs_4) for i_7: i64 < k_2 do
    {
      let (y_8: [n_1][n_1]f32) =
        if c_3 : ([n_1][n_1]f32)
        then
        {
          let (t_9: [n_1][n_1]f32) = rearrange (1, 0) acc_6
          let (u_10: [n_1][n_1]f32) = rearrange (1, 0) xs_4
          let (z_11: [n_1][n_1]f32) =
            segmap grid (gtid_12 < n_1, gtid_13 < n_1)
              : (f32)
            {
              let (a_14: f32) = t_9[gtid_12, gtid_13]
              let (b_15: f32) = u_10[gtid_12, gtid_13]
              let (s_16: f32) = +.f32 a_14 b_15
              in (s_16)
            }
          in (z_11)
        }
        else
        {
          in (acc_6)
        }
      in (y_8)
    }
  in (r_5)
}
"""


def test_an_array_leaves_a_branch_only_on_its_way_out_of_the_loop() -> None:
    prog = read_program(BRANCH)
    check_program(prog)
    after = simplify_host(prog)
    check_program(after)
    text = pretty(after)
    loop, then_ = _body_of_loop(text), text[text.index("then"):text.index("else")]
    assert "rearrange (1, 0) xs_4" not in loop  # invariant: made once, before the loop
    assert "rearrange (1, 0) acc_6" in then_  # depends on the iteration: stays in its branch
    args = [np.int64(3), np.int64(2), True, np.arange(9, dtype=np.float32).reshape(3, 3)]
    np.testing.assert_array_equal(run_gpu(after, "f", args)[0], run_gpu(prog, "f", args)[0])
