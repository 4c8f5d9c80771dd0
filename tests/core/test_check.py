"""The core IR type checker (futgen.core.check): it accepts what the passes
make of every example and test program, and rejects broken programs,
written as IR text, with a message naming the function, the statement and
the problem."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from futgen.core.check import IRTypeError, check_program
from futgen.core.read import read_program
from futgen.flatten import FLATTENINGS
from futgen.pipeline import Options, run_passes

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = [*sorted((ROOT / "examples").glob("*.fut")),
            *sorted((ROOT / "tests" / "programs").glob("*/*.fut"))]


def test_every_pass_output_of_the_programs_checks(load_core) -> None:
    """The input and every pass's result, core IR and GPU IR (the pipeline
    runs the checkers under `check_ir`), by both flattenings."""
    for path in PROGRAMS:
        core = load_core(path)
        for flattening in FLATTENINGS:
            run_passes(core, options=Options(flattening, check_ir=True))


def _function(*stms: str, params: str = "x_1: i32, xs_2: [?]f32", ret: str = "i32",
              result: str = "y_9") -> str:
    lines = "\n".join(f"  {s}" for s in stms)
    return f"fun f({params}) : ({ret}) =\n{{\n{lines}\n  in ({result})\n}}\n"


def _rejects(text: str, message: str) -> IRTypeError:
    prog = read_program(text)
    with pytest.raises(IRTypeError, match=re.escape(message)) as e:
        check_program(prog)
    return e.value


def test_a_well_typed_function_checks() -> None:
    check_program(read_program(_function("let (y_9: i32) = +.i32 x_1 1i32")))


def test_a_variable_out_of_scope() -> None:
    e = _rejects(_function("let (y_9: i32) = +.i32 x_8 1i32"), "x_8 is not in scope")
    assert str(e) == ("in function f: x_8 is not in scope\n"
                      "  at\n"
                      "    let (y_9: i32) = +.i32 x_8 1i32")


def test_a_name_bound_inside_a_branch_is_out_of_scope_after_it() -> None:
    _rejects(_function("let (c_3: bool) = <.i32 x_1 0i32",
                       "let (z_4: i32) =",
                       "  if c_3 : (i32)",
                       "  then",
                       "  {",
                       "    let (w_5: i32) = neg.i32 x_1",
                       "    in (w_5)",
                       "  }",
                       "  else",
                       "  {",
                       "    in (x_1)",
                       "  }",
                       "let (y_9: i32) = +.i32 w_5 z_4"), "w_5 is not in scope")


def test_a_size_out_of_scope() -> None:
    _rejects(_function("let (y_9: [n_7]f32) = copy xs_2", ret="[?]f32"),
             "n_7 is not in scope")


def test_a_name_bound_twice() -> None:
    _rejects(_function("let (x_1: i32) = neg.i32 x_1", result="x_1"), "x_1 is bound twice")


def test_a_binop_operand_of_the_wrong_type() -> None:
    e = _rejects(_function("let (y_9: i32) = +.i32 x_1 1.5f32"),
                 "the second operand of +.i32 is f32, not i32")
    assert e.function == "f" and "+.i32 x_1 1.5f32" in e.statement


def test_a_pattern_of_the_wrong_type() -> None:
    _rejects(_function("let (y_9: i64) = *.i32 x_1 x_1", ret="i64"),
             "the value bound to y_9 is i32 where i64 is expected")


def test_branches_that_disagree_with_the_if() -> None:
    _rejects(_function("let (c_3: bool) = <.i32 x_1 0i32",
                       "let (y_9: i32) =",
                       "  if c_3 : (i32)",
                       "  then",
                       "  {",
                       "    in (1.0f32)",
                       "  }",
                       "  else",
                       "  {",
                       "    in (x_1)",
                       "  }"),
             "the then branch's results, value 0 is f32 where i32 is expected")


def test_a_map_lambda_of_the_wrong_arity() -> None:
    e = _rejects(_function("let (n_3: i64) = size xs_2 0",
                           "let (y_9: [n_3]f32) =",
                           "  screma n_3 (xs_2)",
                           "    map",
                           "      \\(a_4: f32, b_5: f32) : (f32) ->",
                           "      {",
                           "        in (a_4)",
                           "      }", ret="[?]f32"),
                 "the map lambda has 2 parameters for 1 values")
    assert e.statement.splitlines()[0] == "    let (y_9: [n_3]f32) ="


def test_a_reduction_whose_neutral_element_is_not_its_operators_type() -> None:
    _rejects(_function("let (n_3: i64) = size xs_2 0",
                       "let (y_9: f32) =",
                       "  screma n_3 (xs_2)",
                       "    reduce (0i32)",
                       "      \\(a_4: f32, b_5: f32) : (f32) ->",
                       "      {",
                       "        let (c_6: f32) = +.f32 a_4 b_5",
                       "        in (c_6)",
                       "      }",
                       "    map",
                       "      \\(x_7: f32) : (f32) ->",
                       "      {",
                       "        in (x_7)",
                       "      }", ret="f32"),
             "the value for a_4 is i32 where f32 is expected")


def test_sizes_are_compared_only_where_both_are_constants() -> None:
    check_program(read_program(_function("let (n_3: i64) = size xs_2 0",
                                         "let (y_9: [n_3]i64) = iota 5i64 0i64 1i64",
                                         ret="[?]i64")))
    _rejects(_function("let (y_9: [4i64]i64) = iota 5i64 0i64 1i64", ret="[?]i64"),
             "the value bound to y_9 is [5i64]i64 where [4i64]i64 is expected")


def test_a_coercion_may_change_sizes() -> None:
    """`xs :> [4]i64` is a copy whose type has the new sizes, after an Assert."""
    check_program(read_program(_function("let (a_3: [5i64]i64) = iota 5i64 0i64 1i64",
                                         "let (y_9: [4i64]i64) = a_3", ret="[?]i64")))


def test_a_call_with_the_wrong_arguments() -> None:
    g = "fun g(a_20: i32) : (i32) =\n{\n  in (a_20)\n}\n"
    _rejects(_function("let (y_9: i32) = apply g(x_1, x_1)") + g,
             "the arguments of g: 2 values where 1 are expected")


def test_a_long_statement_is_shortened() -> None:
    body = [f"    let (v_{k}: i32) = neg.i32 x_1" for k in range(20, 40)]
    e = _rejects(_function("let (c_3: bool) = <.i32 x_1 0i32",
                           "let (y_9: i32) =",
                           "  if c_3 : (i32)",
                           "  then",
                           "  {",
                           *body,
                           "    in (x_1)",
                           "  }",
                           "  else",
                           "  {",
                           "    in (1i64)",
                           "  }"), "the else branch's results")
    lines = e.statement.splitlines()
    assert len(lines) == 13 and lines[-1] == "    ... (18 more lines)"
