"""Unknown (existential) sizes: where Futhark's size rules make a size
unknown, a known size may not be demanded of it.  Each rule has a program
rejected at the right place and a close variant that is accepted."""

import pytest

from futgen.errors import CompileError
from futgen.frontend import check_source


def reject(src: str) -> str:
    with pytest.raises(CompileError) as e:
        check_source(src, "t.fut")
    return str(e.value)


def accept(src: str) -> None:
    check_source(src, "t.fut")


def test_loop_result_of_changing_size_is_unknown() -> None:
    msg = reject(
        "def main (k: i32) : [1]i32 =\n"
        "  loop xs = replicate 1 0i32 for _i < k do xs ++ xs\n"
    )
    assert "t.fut:2:3" in msg
    assert 'Sizes "1" and "ext#' in msg
    assert "is unknown size of the value returned by the loop at t.fut:2:3." in msg


def test_loop_result_of_kept_size_is_known() -> None:
    accept(
        "def main (k: i32) : [1]i32 =\n"
        "  loop xs = replicate 1 0i32 for _i < k do map (+ 1) xs\n"
    )
    accept(
        "def main [n] (k: i32) (a: [n]i32) (b: [n]i32) : [n]i32 =\n"
        "  (loop (x, y) = (a, b) for _i < k do (y, x)).0\n"
    )
