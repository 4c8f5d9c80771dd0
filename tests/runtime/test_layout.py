"""convert_args / convert_results: tuples, records and arrays of them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from futgen_runtime import (
    CpuBackend,
    Leaf,
    Param,
    RecordOf,
    TupleOf,
    Unit,
    convert_args,
    convert_results,
    record_class,
)
from futgen_runtime.layout import UNIT_DTYPE

B = CpuBackend()
point = record_class("point", (("x", "f32"), ("y", "i64")), "{x: f32, y: i64}", __name__)
POINTS = RecordOf(point, (("x", "x", Leaf("f32", ("n",), "[n]f32")),
                          ("y", "y", Leaf("i64", ("n",), "[n]i64"))), 1, "[n]{x: f32, y: i64}")
PAIR = TupleOf((Leaf("i32", (), "i32"), POINTS), 0, "(i32, [n]{x: f32, y: i64})")


@dataclass
class Obj:
    x: object
    y: object


def test_arguments_become_leaves_in_order():
    xs, ys = np.arange(3, dtype=np.float32), np.arange(3)
    for arg in (point(xs, ys), {"x": xs, "y": ys}, Obj(xs, ys)):
        leaves = convert_args(B, "main", [Param("p", PAIR), Param("k", Leaf("i64", (), "i64"))],
                              ((5, arg), 7))
        assert [type(v) for v in leaves] == [np.int32, np.ndarray, np.ndarray, np.int64]
        assert np.array_equal(leaves[1], xs) and leaves[0] == 5 and leaves[3] == 7


def test_sizes_are_checked_across_parts_and_parameters():
    xs, ys = np.zeros(3, np.float32), np.zeros(3, np.int64)
    with pytest.raises(ValueError, match=r"n is 3 from parameter p\[1\].x: \[n\]f32 but 2 from "
                                         r"parameter zs: \[n\]i32"):
        convert_args(B, "main", [Param("p", PAIR), Param("zs", Leaf("i32", ("n",), "[n]i32"))],
                     ((1, point(xs, ys)), np.zeros(2, np.int32)))


def test_results_are_built_along_their_layouts():
    xs, ys = np.ones(2, np.float32), np.ones(2, np.int64)
    got = convert_results(B, (PAIR, Leaf("bool", (), "bool")), [np.int32(4), xs, ys, np.bool_(1)],
                          False)
    assert got[0][0] == 4 and isinstance(got[0][1], point) and got[0][1].x is xs
    assert got[1].dtype == np.bool_ and bool(got[1])
    assert convert_results(B, (POINTS,), [xs, ys], False) == point(xs, ys)
    assert "{x: f32, y: i64}" in point.__doc__ and point.x.__doc__.startswith("f32")


def test_units_are_one_bool_leaf_and_come_back_as_units():
    units = Unit(("n",), "[n]()")
    leaves = convert_args(B, "main", [Param("u", Unit((), "()")), Param("us", units)],
                          ((), np.empty(3, UNIT_DTYPE)))
    assert leaves[0] == np.bool_(False) and leaves[1].shape == (3,) and leaves[1].dtype == np.bool_
    got = convert_results(B, (Unit((), "()"), units), leaves, False)
    assert got[0] == () and got[1].dtype == UNIT_DTYPE and got[1].shape == (3,)


def test_bad_unit_arguments_name_the_parameter_and_the_type():
    with pytest.raises(TypeError, match=r"main: parameter u \(#1\) expects \(\), got 0"):
        convert_args(B, "main", [Param("u", Unit((), "()"))], (0,))
    with pytest.raises(TypeError, match=r"main: parameter u \(#1\) expects \(\), got array"):
        convert_args(B, "main", [Param("u", Unit((), "()"))], (np.array([1]),))
    with pytest.raises(TypeError, match=r"parameter us \(#1\) expects \[n\]\(\), an array of dtype "
                                        r"np.dtype\(\[\]\) and rank 1; got list"):
        convert_args(B, "main", [Param("us", Unit(("n",), "[n]()"))], ([(), ()],))
