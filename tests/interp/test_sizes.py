"""Size rules of the checker and the interpreter, on programs run end to end."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from futgen.errors import FutharkError, register_source
from futgen.frontend import check_source
from futgen.interp import Interpreter


def run(src: str, entry: str, *args: Any) -> Any:
    register_source("t.fut", src)
    r = Interpreter(check_source(src, "t.fut")).call(entry, list(args))
    return r[0] if len(r) == 1 else r


def test_abbreviation_arguments_do_not_see_its_parameters() -> None:
    # `pair b a` once bound `a := b` and then `b := a` (now `b`): (b, b).
    src = """
type pair 'a 'b = (a, b)
def swap 'a 'b (p: pair a b) : pair b a = (p.1, p.0)
def total (p: pair i32 f32) : f32 = f32.i32 p.0 + p.1
entry main (x: i32) (y: f32) = (swap (x, y), total (x, y))
"""
    (a, b), t = run(src, "main", np.int32(3), np.float32(1.5))
    assert (a, b, t) == (np.float32(1.5), np.int32(3), np.float32(4.5))


def test_dependent_sizes_of_later_parameters_are_not_captured() -> None:
    # tabulate_2d's parameters are named n and m: `tabulate_2d m n` is [m][n].
    src = """
def grid (m: i64) (n: i64) : [m][n]i64 = tabulate_2d m n (\\i j -> i * 10 + j)
entry main (m: i64) (n: i64) = grid m n
"""
    r = run(src, "main", np.int64(2), np.int64(3))
    assert r.tolist() == [[0, 1, 2], [10, 11, 12]]


def test_coercion_does_not_fix_the_size_of_a_parameter() -> None:
    # `xs :> [1]i32` must leave `xs: []i32` of any size for other callers.
    src = """
def first (k: i32) (xs: []i32) : i32 = if k == 1 then (xs :> [1]i32)[0] else xs[1]
entry main (a: [3]i32) (b: [1]i32) = first 0 a + first 1 b
"""
    r = run(src, "main", np.array([1, 2, 3], np.int32), np.array([40], np.int32))
    assert r == 42


def test_size_parameter_known_only_from_the_result_type() -> None:
    src = """
def fill [n] (x: i64) : [n]i64 = replicate n x
entry main (k: i64) : [k]i64 = fill (k + 1)
"""
    assert run(src, "main", np.int64(3)).tolist() == [4, 4, 4]


def test_size_parameter_known_only_from_a_function_argument() -> None:
    src = """
def width [n] (_g: i32 -> [n]i32) : i64 = n
entry main (x: i32) = width (replicate 4) + i64.i32 x
"""
    assert run(src, "main", np.int32(1)) == 5


def test_local_function_size_parameter_from_its_use() -> None:
    src = """
entry main (m: i64) =
  let f [n] (k: i64) (v: i32) : ([k]i32, [n]i32 -> i32) =
    (replicate k (v + i32.i64 n), i32.sum)
  let (xs, g) = f m 3
  in g xs
"""
    assert run(src, "main", np.int64(4)) == 28


def test_empty_array_of_a_type_parameter_takes_the_instance_type() -> None:
    src = """
def none 'a (k: i64) = (k, [] : [0]a)
entry main (k: i64) : (i64, [][k]i32) = none k
"""
    k, xs = run(src, "main", np.int64(2))
    assert k == 2 and xs.dtype == np.int32 and xs.shape == (0, 2)


def test_coercion_fails_where_it_is_written() -> None:
    src = """
entry main [n] (xs: [n]i32) (k: i64) =
  let ys = xs :> [k]i32
  in ys
"""
    assert run(src, "main", np.array([1, 2], np.int32), np.int64(2)).tolist() == [1, 2]
    with pytest.raises(FutharkError) as e:
        run(src, "main", np.array([1, 2], np.int32), np.int64(3))
    msg = str(e.value)
    # The message compiled code gives too (core/checked.py), sizes as values.
    assert 'Value of (desugared) shape [2] cannot match shape of type "[3]i32".' in msg
    assert "t.fut:3:12" in msg


def test_coercion_checks_arrays_inside_tuples() -> None:
    src = "entry main (x: i32) = ([x], [x, x]) :> ([2]i32, [1]i32)"
    with pytest.raises(FutharkError) as e:
        run(src, "main", np.int32(1))
    assert 'shape ([1], [2]) cannot match shape of type "([2]i32, [1]i32)"' in str(e.value)
