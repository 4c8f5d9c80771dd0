"""Internalisation of constructs beyond the examples, and the constructs it
refuses: those raise UnsupportedFeature with the source location, never
produce a program that means something else."""

from __future__ import annotations

import numpy as np
import pytest

from futgen.core import internalise, run
from futgen.errors import UnsupportedFeature
from futgen.frontend import check_source


def _run(source: str, entry: str, *args):
    return run(internalise(check_source(source, "t.fut")), entry, list(args))


def test_polymorphic_function_is_copied_per_type() -> None:
    src = """
def first 't (xs: []t) : t = xs[0]
entry main (a: []i32) (b: []f64) : (i32, f64) = (first a, first b)
"""
    prog = internalise(check_source(src, "t.fut"))
    assert len([f for f in prog.functions if f.name.startswith("first")]) == 2
    got = run(prog, "main", [np.array([3, 4], np.int32), np.array([0.5])])
    assert got == [np.int32(3), np.float64(0.5)]


def test_records_and_tuples_flatten() -> None:
    src = """
entry main (x: f32) : (f32, f32) =
  let r = {a = x, b = (x + 1, x * 2)}
  let r = r with a = 10
  in (r.a, r.b.1)
"""
    assert _run(src, "main", np.float32(3)) == [np.float32(10), np.float32(6)]


def test_records_with_numeric_fields_are_tuples() -> None:
    # `{0 = a, 1 = b}` has the tuple type (a, b); patterns and projections agree.
    src = """
entry main (x: i32) : (i32, i32) =
  let r = {0 = x + 1, 1 = x - 1}
  let {0 = a, 1 = b} = r
  in (b, r.0 + a)
"""
    assert _run(src, "main", np.int32(5)) == [np.int32(4), np.int32(12)]


def test_short_circuit_guards_the_right_operand() -> None:
    src = """
entry main (xs: []i32) (i: i64) : bool = i < length xs && xs[i] > 0
"""
    xs = np.array([1, -1], np.int32)
    assert _run(src, "main", xs, np.int64(5)) == [np.bool_(False)]
    assert _run(src, "main", xs, np.int64(0)) == [np.bool_(True)]


def test_integer_arithmetic_wraps() -> None:
    src = "entry main (x: u8) : u8 = x * 3 + 1"
    assert _run(src, "main", np.uint8(100)) == [np.uint8(45)]


def test_size_parameter_no_argument_or_type_gives_is_unsupported_where_used() -> None:
    src = """
def f [n] (_: [n]i32 -> i32) : i64 = n + 1
entry main (xs: []i32) = filter (> 0) xs |> \\ys -> f (\\(_: [length ys]i32) -> 0)
"""
    with pytest.raises(UnsupportedFeature, match=r"size parameter \[n\] of f, not known") as e:
        internalise(check_source(src, "t.fut"))
    assert (e.value.loc.line, e.value.loc.col) == (2, 38)
