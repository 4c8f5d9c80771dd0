"""Comparing results as `futhark test` does: tolerant floats, exact ints."""

from __future__ import annotations

import numpy as np

from futgen.data import compare_values


def f32(*xs):
    return np.array(xs, dtype=np.float32)


def test_equal_values_match():
    vs = [np.int32(1), f32(1, 2), np.array([True])]
    assert compare_values(vs, [np.int32(1), f32(1, 2), np.array([True])]) == []


def test_floats_within_tolerance_match():
    assert compare_values([f32(1000.0, 0.0)], [f32(1001.0, 1.5)]) == []  # bound 0.002 * 1000
    assert compare_values([np.float64(1.0)], [np.float64(1.0015)]) == []


def test_floats_beyond_tolerance_differ_and_name_the_index():
    [m] = compare_values([f32(1, 2, 3)], [f32(1, 2, 3.1)])
    assert str(m) == "Value #0 index [2]: expected 3.0f32, got 3.1f32"


def test_tolerance_can_be_changed():
    assert compare_values([f32(1)], [f32(1.05)], tolerance=0.1) == []


def test_nan_equals_nan_and_infinities_by_sign():
    assert compare_values([f32(np.nan, np.inf, -np.inf)], [f32(np.nan, np.inf, -np.inf)]) == []
    [m] = compare_values([f32(np.inf)], [f32(-np.inf)])
    assert "expected f32.inf, got -f32.inf" in str(m)
    assert compare_values([f32(1.0)], [f32(np.nan)])


def test_ints_are_exact():
    [m] = compare_values([np.array([[1, 2], [3, 4]], np.int64)], [np.array([[1, 2], [3, 5]], np.int64)])
    assert str(m) == "Value #0 index [1, 1]: expected 4i64, got 5i64"
    assert compare_values([np.int32(1000)], [np.int32(1001)])


def test_counts_other_differing_elements():
    [m] = compare_values([np.arange(5, dtype=np.int32)], [np.zeros(5, np.int32)])
    assert m.count == 4
    assert "(3 other elements differ)" in str(m)


def test_shape_type_and_count_mismatches():
    [m] = compare_values([np.zeros(3, np.int32)], [np.zeros(4, np.int32)])
    assert str(m) == "Value #0: expected shape [3], got [4]"
    [m] = compare_values([np.int32(1), np.zeros(3, np.int32)], [np.int32(1), np.zeros(3, np.float32)])
    assert str(m) == "Value #1: expected type []i32, got []f32"
    [m] = compare_values([np.int32(1)], [np.int32(1), np.int32(2)])
    assert str(m) == "Expected 1 values, got 2."


def test_tuples_and_records_compare_by_component():
    from collections import namedtuple

    from futgen.interp.values import StructArray

    point = namedtuple("point", ["x", "y"])
    xs, ys = np.array([1.0, 2.0], np.float32), np.array([3, 4], np.int32)
    # The interpreter's array of records against a package's record of arrays.
    interp = StructArray((2,), {"y": ys, "x": xs})
    assert compare_values([interp], [point(xs, ys)]) == []
    assert compare_values([(np.int32(1), {"a": xs})], [(np.int32(1), point(xs, ys)[:1])]) == []
    bad = compare_values([interp], [point(xs, ys + 1)])
    assert len(bad) == 1 and "expected 3i32, got 4i32" in str(bad[0])
    assert "a tuple or record of 2 parts" in str(compare_values([interp], [xs])[0])
