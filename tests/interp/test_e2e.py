"""End-to-end: parse, type-check and interpret small programs."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from futgen.errors import DataError, FutharkError, register_source
from futgen.frontend import check_source
from futgen.interp import Interpreter


def run(src: str, entry: str, *args: Any) -> Any:
    """Run `entry` of `src`; a single result is returned bare."""
    register_source("t.fut", src)
    it = Interpreter(check_source(src, "t.fut"))
    r = it.call(entry, list(args))
    return r[0] if len(r) == 1 else r


def i32s(*xs: int) -> np.ndarray:
    return np.array(xs, dtype=np.int32)


def test_map_lambda_vectorised_and_partial_application() -> None:
    src = "def f (a: i32) (b: i32) = a * 10 + b\nentry main (xs: []i32) = map (f 1) xs"
    assert run(src, "main", i32s(1, 2)).tolist() == [11, 12]
    src2 = "def f (a: i32) (b: i32) = a - b\nentry main (x: i32) = let g = f 2 in g x"
    assert run(src2, "main", np.int32(5)) == -3


def test_if_in_map_only_evaluates_taken_lanes() -> None:
    src = "entry main (xs: []i32) = map (\\x -> if x == 0 then 0 else 100 / x) xs"
    assert run(src, "main", i32s(0, 3, -3)).tolist() == [0, 33, -34]


def test_int_division_family() -> None:
    src = "entry main (x: i32) (y: i32) = (x / y, x % y, x // y, x %% y)"
    assert [int(v) for v in run(src, "main", np.int32(-7), np.int32(2))] == [-4, 1, -3, -1]
    with pytest.raises(FutharkError, match="division by zero"):
        run(src, "main", np.int32(1), np.int32(0))


def test_f32_stays_f32() -> None:
    src = "entry main (xs: []f32) = map (\\x -> x * 2 + f32.sqrt x) xs"
    assert run(src, "main", np.ones(3, np.float32)).dtype == np.float32


def test_index_out_of_bounds_messages() -> None:
    src = "entry main (xs: [][]i32) (i: i64) (j: i64) = xs[i, j]"
    xs = np.zeros((3, 5), np.int32)
    with pytest.raises(FutharkError) as e:
        run(src, "main", xs, np.int64(2), np.int64(7))
    assert e.value.message == "Index [2, 7] out of bounds for array of shape [3][5]."
    src2 = "entry main (xs: []i32) (i: i64) (j: i64) = xs[i:j]"
    with pytest.raises(FutharkError) as e:
        run(src2, "main", i32s(1, 2, 3, 4, 5), np.int64(1), np.int64(0))
    assert e.value.message == "Index [1:0] out of bounds for array of shape [5]."


def test_gather_bounds_in_map() -> None:
    src = "entry main (xs: []i32) (is: []i64) = map (\\i -> xs[i]) is"
    assert run(src, "main", i32s(5, 6), np.array([1, 0], np.int64)).tolist() == [6, 5]
    with pytest.raises(FutharkError, match=r"Index \[4\] out of bounds for array of shape \[2\]"):
        run(src, "main", i32s(5, 6), np.array([1, 4], np.int64))


def test_scatter_ignores_out_of_bounds() -> None:
    src = ("entry main (xs: *[]i32) = scatter xs [0, 7, -1, 2] [10, 20, 30, 40]")
    assert run(src, "main", i32s(1, 2, 3)).tolist() == [10, 2, 40]


def test_entry_arguments_not_mutated() -> None:
    src = "entry main (xs: *[]i32) = xs with [0] = 9"
    xs = i32s(1, 2)
    assert run(src, "main", xs).tolist() == [9, 2]
    assert xs.tolist() == [1, 2]


def test_reduce_scan_general_and_known() -> None:
    src = """
entry a (xs: []i32) = reduce (+) 0 xs
entry b (xs: []i32) = reduce (\\x y -> if x > y then x else y) i32.lowest xs
entry c (xs: []i32) = scan (\\x y -> x + y) 0 xs
entry d (xs: []i32) = scan (\\x y -> x + y + x * y) 0 xs
entry e (xs: []i32) = reduce (\\(a, b) (c, d) -> (a + c, b * d)) (0, 1) (zip xs xs)
"""
    xs = i32s(3, 1, 4, 1, 5)
    assert run(src, "a", xs) == 14
    assert run(src, "b", xs) == 5
    assert run(src, "c", xs).tolist() == [3, 4, 8, 9, 14]
    expect, acc = [], 0
    for x in xs.tolist():
        acc = acc + x + acc * x
        expect.append(acc)
    assert run(src, "d", xs).tolist() == expect
    assert [int(v) for v in run(src, "e", xs)] == [14, 60]
    assert run(src, "a", i32s()) == 0


def test_empty_map_has_type() -> None:
    src = "entry main (xs: []i32) = map (\\x -> [x, x, x]) xs"
    r = run(src, "main", i32s())
    assert r.shape == (0, 3) and r.dtype == np.int32


def test_zip_unzip_tuples() -> None:
    src = "entry main (xs: []i32) (ys: []f32) = unzip (map2 (\\x y -> (y, x + 1)) xs ys)"
    a, b = run(src, "main", i32s(1, 2), np.array([0.5, 1.5], np.float32))
    assert a.dtype == np.float32 and b.tolist() == [2, 3]


def test_while_loop_in_map() -> None:
    src = ("entry main (xs: []i32) = map (\\x -> (loop (x, c) = (x, 0) while x > 1 do "
           "(if x % 2 == 0 then x / 2 else 3 * x + 1, c + 1)).1) xs")
    assert run(src, "main", i32s(1, 2, 3, 6, 7)).tolist() == [0, 1, 7, 8, 16]


def test_nested_map_and_segmented_reduce() -> None:
    src = ("entry main [n][m] (a: [n][m]f32) (v: [m]f32) = "
           "map (\\row -> f32.sum (map2 (*) row v)) a")
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    v = np.ones(3, np.float32)
    assert run(src, "main", a, v).tolist() == [3.0, 12.0]


def test_ranges_and_errors() -> None:
    src = "entry main (a: i32) (b: i32) = a..<b"
    assert run(src, "main", np.int32(1), np.int32(4)).tolist() == [1, 2, 3]
    with pytest.raises(FutharkError, match=r"Range 0\.\.1\.\.<-2 is invalid\."):
        run("entry main (n: i64) = iota n", "main", np.int64(-2))


def test_loops() -> None:
    src = "entry main (n: i32) = loop acc = 0 for i < n do acc + i"
    assert run(src, "main", np.int32(5)) == 10
    src2 = "entry main (xs: []i32) = loop s = 0 for x in xs do s + x"
    assert run(src2, "main", i32s(1, 2, 3)) == 6


def test_filter_partition_hist() -> None:
    src = """
entry f (xs: []i32) = filter (\\x -> x % 2 == 0) xs
entry h (is: []i64) (vs: []i32) = hist (+) 0 3 is vs
entry r (is: []i64) (vs: []i32) = reduce_by_index (replicate 3 0) i32.max 0 is vs
"""
    assert run(src, "f", i32s(1, 2, 3, 4)).tolist() == [2, 4]
    is_ = np.array([0, 2, 2, 5, -1], np.int64)
    assert run(src, "h", is_, i32s(1, 2, 3, 4, 5)).tolist() == [1, 0, 5]
    assert run(src, "r", is_, i32s(1, 2, 3, 4, 5)).tolist() == [1, 0, 3]


def test_entry_type_errors() -> None:
    src = "entry main (xs: []f32) = xs"
    with pytest.raises(DataError, match=r"argument 1 has type \[\]\[\]f32, expected \[\]f32"):
        run(src, "main", np.zeros((2, 2), np.float32))
    with pytest.raises(DataError):
        run(src, "main")
    src2 = "entry main [n] (xs: [n]i32) (ys: [n]i32) = map2 (+) xs ys"
    with pytest.raises(DataError):
        run(src2, "main", i32s(1), i32s(1, 2))


def test_assert_message() -> None:
    src = "entry main (x: i32) = assert (x % 2 != 0) (2 / x)"
    with pytest.raises(FutharkError, match=r"x % 2 != 0"):
        run(src, "main", np.int32(2))


def test_top_level_constant_is_lazy_once() -> None:
    src = "def k = reduce (+) 0 (iota 10)\nentry main (x: i64) = x + k"
    assert run(src, "main", np.int64(1)) == 46


def test_soac_function_never_runs_on_zero_elements() -> None:
    # `b[0]` does not depend on the element; with no elements it must not run.
    src = "entry main [n] (b: [n]f32) : [n]f32 = map (\\_ -> b[0]) b"
    r = run(src, "main", np.zeros(0, dtype=np.float32))
    assert r.shape == (0,) and r.dtype == np.float32
    src = "entry main (xs: []i32) = filter (\\_ -> assert false true) xs"
    assert run(src, "main", i32s()).shape == (0,)


def test_the_backtrace_lists_every_call_a_failure_left() -> None:
    """Innermost first: the failing index, then each call on the way out
    (a failure while an argument is computed is not inside that call)."""
    src = ("def at (xs: []i32) (i: i64) = xs[i]\n"
           "def twice (xs: []i32) (i: i64) = at xs i + at xs 0\n"
           "entry main (xs: []i32) (i: i64) = twice xs (i + 1)\n"
           "entry arg (xs: []i32) = twice xs (i64.i32 xs[5])\n")
    with pytest.raises(FutharkError) as e:
        run(src, "main", i32s(1, 2), np.int64(1))
    assert str(e.value).endswith("Backtrace:\n-> #0  t.fut:1:31\n-> #1  t.fut:2:34\n"
                                 "-> #2  t.fut:3:35")
    with pytest.raises(FutharkError) as e:
        run(src, "arg", i32s(1, 2))
    assert str(e.value).endswith("Backtrace:\n-> #0  t.fut:4:43")
