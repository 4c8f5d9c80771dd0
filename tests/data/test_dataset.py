"""Random values of given types (futgen.data.dataset): shapes, types,
bounds, determinism, and errors naming the argument."""

from __future__ import annotations

import numpy as np
import pytest

from futgen.data import read_values
from futgen.data.dataset import (
    ValueType,
    encode,
    generate,
    make_generator,
    parse_bounds,
    parse_type,
    random_value,
)
from futgen.errors import DataError


def values(*specs, bounds=None, seed=1):
    return [v for v, _ in generate([make_generator(s, bounds or {}) for s in specs], seed)]


def test_types_and_shapes():
    assert parse_type("[1024][3]f32") == ValueType((1024, 3), "f32")
    a, n, b = values("[4][2]i32", "i64", "[0]bool")
    assert a.dtype == np.int32 and a.shape == (4, 2)
    assert isinstance(n, np.int64)
    assert b.dtype == np.bool_ and b.shape == (0,)
    got = [v.dtype for v in values("[5]u8", "[5]u64", "[5]f16", "[5]f64")]
    assert got == [np.uint8, np.uint64, np.float16, np.float64]


def test_default_bounds_are_futharks():
    f, i, u = values("[10000]f32", "[10000]i8", "[10000]u16")
    assert 0 <= f.min() and f.max() < 1
    assert i.min() == -128 and i.max() == 127  # the whole range, both ends
    assert u.min() < 100 and u.max() > 65400


def test_bounds_per_type_apply_to_following_generators():
    bounds = {"i64": parse_bounds("i64", "0:9"), "f64": parse_bounds("f64", "-2.5:-1")}
    xs, ys, zs = values("[5000]i64", "[5000]f64", "[5000]i32", bounds=bounds)
    assert set(np.unique(xs)) == set(range(10))  # inclusive bounds
    assert -2.5 <= ys.min() and ys.max() <= -1
    assert zs.min() < -(2**30)  # other types keep their defaults
    assert parse_bounds("u8", "3:3") == (3, 3)


def test_deterministic_for_a_seed_and_independent_of_other_generators():
    a = values("[100]f32", "[50]i32", seed=7)
    b = values("[100]f32", "[50]i32", seed=7)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not np.array_equal(values("[100]f32", seed=8)[0], a[0])
    # Generator k draws from seed + k: a value depends on its position only.
    assert np.array_equal(values("[3]i8", "[50]i32", seed=6)[1], values("[50]i32", seed=7)[0])


def test_literal_values_are_written_as_given():
    five, arr = values("5i64", "[1, 2]")
    assert five == np.int64(5) and five.dtype == np.int64
    assert arr.tolist() == [1, 2] and arr.dtype == np.int32


def test_binary_and_text_round_trip_through_the_reader():
    rng = np.random.default_rng(3)
    for t in ("[7][3]f32", "[4]u64", "i16", "[2][2]bool", "[3]f64"):
        v = random_value(rng, parse_type(t))
        for fmt in ("binary", "text"):
            (back,) = read_values(encode(v, fmt))
            assert back.dtype == v.dtype and np.array_equal(back, v)
    assert encode(np.zeros((2, 3), np.float32), "type") == b"[2][3]f32\n"


def test_large_binary_output_is_vectorised():
    (v,) = values("[2048][2048]f32")
    data = encode(v, "binary")
    assert len(data) == 7 + 2 * 8 + 2048 * 2048 * 4
    assert np.array_equal(read_values(data)[0], v)


@pytest.mark.parametrize("spec, message", [
    ("[n]f32", r"-g '\[n\]f32': array sizes must be constant integers, not \[n\]"),
    ("f31", r"-g 'f31': unknown primitive type 'f31'"),
    ("(i32, f32)", r"-g '\(i32, f32\)' is not a type such as i64 or \[10\]\[3\]f32"),
])
def test_bad_types_name_the_argument(spec, message):
    with pytest.raises(DataError, match=message):
        make_generator(spec, {})


@pytest.mark.parametrize("prim, text, message", [
    ("i32", "5", r"--i32-bounds=5: expected MIN:MAX"),
    ("i8", "0:300", r"outside the range of i8 \[-128, 127\]"),
    ("f32", "1:0", r"MIN is greater than MAX"),
    ("u8", "a:b", r"--u8-bounds=a:b: expected MIN:MAX"),
])
def test_bad_bounds(prim, text, message):
    with pytest.raises(DataError, match=message):
        parse_bounds(prim, text)
