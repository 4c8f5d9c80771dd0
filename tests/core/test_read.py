"""The reader of printed core IR (futgen.core.read): it reads back what the
printer prints after every core IR pass, reports malformed text at its
line and column, and lets a pass be tested text in, text out."""

from __future__ import annotations

from dataclasses import fields, is_dataclass, replace
from pathlib import Path

import pytest

from futgen.core import pretty
from futgen.core.read import IRSyntaxError, read_program
from futgen.pipeline import PASSES, fuse, run_passes

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = [*sorted((ROOT / "examples").glob("*.fut")),
            *sorted((ROOT / "tests" / "programs").glob("*/*.fut"))]
CORE_STAGES = ["core", *(p.name for p in PASSES if not p.gpu)]


def _without_locs(node):
    """`node` with every source location dropped (the text has none)."""
    if isinstance(node, tuple):
        return tuple(_without_locs(x) for x in node)
    if is_dataclass(node) and not isinstance(node, type):
        changes = {f.name: None if f.name == "loc" else _without_locs(getattr(node, f.name))
                   for f in fields(node)}
        return replace(node, **changes)
    return node


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_the_printed_program_reads_back_after_each_core_pass(path: Path, load_core) -> None:
    core = load_core(path)
    for stage in CORE_STAGES:
        prog = core if stage == "core" else run_passes(core, stage)
        text = pretty(prog)
        back = read_program(text)
        assert pretty(back) == text, stage
        assert _without_locs(back) == _without_locs(prog), stage


def test_read_locations_point_into_the_text() -> None:
    prog = read_program("fun f(xs_1: [?]f32) : (f32) =\n{\n  let (x_2: f32) = xs_1[0i64]\n"
                        "  in (x_2)\n}\n", "t.ir")
    assert str(prog.functions[0].body.stms[0].exp.loc) == "t.ir:3:20"


def test_constants_keep_their_type_and_form() -> None:
    text = ("fun f() : (f32, f64, i8, u64, bool, f32) =\n{\n"
            "  in (-0.5f32, 1e-05f64, -128i8, 18446744073709551615u64, true, -inff32)\n}\n")
    assert pretty(read_program(text)) == text


@pytest.mark.parametrize(("text", "where", "expected"), [
    ("fun f() : (i32) =\n{\n  in (x)\n}", "3:7", "expected a variable or a constant, found 'x'"),
    ("fun f(xs_1: [?]f32) : (f32) =\n{\n  let (y_2: f32) = xs_1[0i64\n  in (y_2)\n}",
     "4:3", "expected ']', found 'in'"),
    ("fun f(x_1: i32) : (i32) =\n{\n  let (y_2: i32) = +.i32 x_1\n  in (y_2)\n}",
     "4:3", "expected a variable or a constant, found 'in'"),
    ("fun f() : (i32) =\n{\n  in (1i32)\n", "4:1", "expected '}', found the end of the text"),
    ("fun f() : (i33) =", "1:12", "expected a primitive type, found 'i33'"),
    ("fun f() : (i32) = { in (1i32) } $", "1:33", "expected a token, found '$'"),
])
def test_malformed_text_is_reported_where_it_is(text: str, where: str, expected: str) -> None:
    with pytest.raises(IRSyntaxError) as e:
        read_program(text, "bad.ir")
    assert str(e.value).startswith(f"Error at bad.ir:{where}: {expected}")


# ------------------------------------------- a pass tested text in, text out

BEFORE = """\
entry fun main(xs_0: [?]i32) : (i32) =
{
  let (n_1: i64) = size xs_0 0
  let (map_4: [n_1]i32) =
    screma n_1 (xs_0)
      map
        \\(x_2: i32) : (i32) ->
        {
          let (x_3: i32) = *.i32 x_2 2i32
          in (x_3)
        }
  let (red_9: i32) =
    screma n_1 (map_4)
      reduce (0i32)
        \\(x_5: i32, x_6: i32) : (i32) ->
        {
          let (x_7: i32) = +.i32 x_5 x_6
          in (x_7)
        }
      map
        \\(x_8: i32) : (i32) ->
        {
          in (x_8)
        }
  in (red_9)
}
"""

AFTER_FUSE = """\
entry fun main(xs_0: [?]i32) : (i32) =
{
  let (n_1: i64) = size xs_0 0
  let (red_9: i32) =
    screma n_1 (xs_0)
      reduce (0i32)
        \\(x_5: i32, x_6: i32) : (i32) ->
        {
          let (x_7: i32) = +.i32 x_5 x_6
          in (x_7)
        }
      map
        \\(x_2: i32) : (i32) ->
        {
          let (x_3: i32) = *.i32 x_2 2i32
          in (x_3)
        }
  in (red_9)
}
"""


def test_fuse_makes_a_redomap_text_in_text_out() -> None:
    """The map's body joins the reduction's map lambda: one Screma (a redomap)."""
    assert pretty(fuse(read_program(BEFORE))) == AFTER_FUSE
