"""The GPU IR checker (futgen.gpu.check): SegOp spaces, results and
operators, version guards, and the kernel-code rules; broken programs are
written as GPU IR text (futgen.gpu.read)."""

from __future__ import annotations

import re

import pytest

from futgen.core.check import IRTypeError
from futgen.gpu.check import KernelRuleError, check_program
from futgen.gpu.read import read_program

SEGRED = """\
fun f(xs_1: [?]f32) : ({ret}) =
{{
  let (n_2: i64) = size xs_1 0
  let ({pat}) =
    segred grid (gtid_3 < n_2)
      reduce_comm (0.0f32)
        \\(a_4: f32, b_5: f32) : (f32) ->
        {{
          let (c_6: f32) = +.f32 a_4 b_5
          in (c_6)
        }}
      : ({types})
    {{
      let (x_7: f32) = xs_1[gtid_3]
      in ({results})
    }}
  in ({out})
}}
"""


def _segred(ret="f32", pat="s_8: f32", types="f32", results="x_7", out="s_8") -> str:
    return SEGRED.format(ret=ret, pat=pat, types=types, results=results, out=out)


def _rejects(text: str, message: str, error: type = IRTypeError) -> IRTypeError:
    with pytest.raises(error, match=re.escape(message)) as e:
        check_program(read_program(text))
    return e.value


def test_a_segred_and_its_map_out_result_check() -> None:
    check_program(read_program(_segred()))
    check_program(read_program(_segred(ret="f32, [?]f32", pat="s_8: f32, m_9: [n_2]f32",
                                       types="f32, f32", results="x_7, x_7", out="s_8, m_9")))


def test_a_segred_body_returning_too_few_values() -> None:
    e = _rejects(_segred(types="f32, f32"), "the body's results: 1 values where 2 are expected")
    assert e.function == "f" and e.statement.lstrip().startswith("let (s_8: f32) =")


def test_a_segred_result_of_the_wrong_shape() -> None:
    """A one-dimensional reduction's result is a scalar, not an array."""
    _rejects(_segred(ret="[?]f32", pat="s_8: [n_2]f32"),
             "the value bound to s_8 is f32 where [n_2]f32 is expected")


def test_a_thread_index_is_out_of_scope_after_its_segop() -> None:
    text = _segred().replace("in (s_8)\n}", "let (g_9: i64) = gtid_3\n  in (s_8)\n}")
    _rejects(text, "gtid_3 is not in scope")


def test_an_operator_that_disagrees_with_its_neutral_element() -> None:
    _rejects(_segred().replace("(0.0f32)", "(0i32)"),
             "the value for a_4 is i32 where f32 is expected")


def test_a_guard_compares_an_i64_parallelism() -> None:
    guard = ("fun f(n_1: {t}) : (bool) =\n{{\n"
             "  let (c_2: bool) = threshold(f.suff_outer_par_0, default 32768) <= n_1\n"
             "  in (c_2)\n}}\n")
    check_program(read_program(guard.format(t="i64")))
    _rejects(guard.format(t="i32"), "the parallelism is i32, not i64")


def test_kernel_rules_are_checked_too() -> None:
    text = _segred().replace("let (x_7: f32) = xs_1[gtid_3]",
                             "let (x_7: f32) = xs_1[gtid_3]\n"
                             "      let (r_9: [n_2]i64) = iota n_2 0i64 1i64")
    e = _rejects(text, "Iota in kernel code", KernelRuleError)
    assert "iota n_2 0i64 1i64" in e.statement
