"""EntryPoint: the fast path takes exactly the calls convert_args would take
unchanged, and every other call gets convert_args' conversions and errors."""

from __future__ import annotations

import numpy as np
import pytest
from futgen_runtime import (
    MISSING,
    ArgumentTypeError,
    ArgumentValueError,
    CpuBackend,
    EntryPoint,
    Leaf,
    Param,
    TupleOf,
    convert_args,
)

B = CpuBackend()
XS = Param("xs", Leaf("f32", ("n",), "[n]f32"))
YS = Param("ys", Leaf("f32", ("n",), "[n]f32"))
K = Param("k", Leaf("i64", (), "i64"))
M3 = Param("m", Leaf("i32", ("3", ""), "[3][]i32"))
MAIN = EntryPoint("main", (XS, YS, K), (Leaf("f32", ("n",), "[n]f32"),),
                  ("[n]f32", "[n]f32", "i64"))


def _f32(n: int) -> np.ndarray:
    return np.arange(n, dtype=np.float32)


def _same(a: list, b: list) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert type(x) is type(y)
        assert np.array_equal(x, y)


def test_fast_path_gives_what_convert_args_gives():
    values = (_f32(4), _f32(4)[::-1], np.int64(3))  # a reversed view: any layout is taken
    assert MAIN._fast_ok(B, values)
    got = MAIN.arguments(B, values, ())
    _same(got, convert_args(B, "main", MAIN.params, values))
    assert not got[0].flags.writeable  # the caller's array is protected, as convert_args does


@pytest.mark.parametrize("values", [
    (_f32(4), _f32(4), 3),  # a Python int for i64: converted on the full path
    (_f32(4), _f32(4), np.int32(3)),
])
def test_other_scalars_take_the_full_path(values):
    assert not MAIN._fast_ok(B, values)
    _same(MAIN.arguments(B, values, ()), convert_args(B, "main", MAIN.params, values))


def test_size_mismatch_reports_like_convert_args():
    values = (_f32(4), _f32(5), np.int64(1))
    assert not MAIN._fast_ok(B, values)
    with pytest.raises(ArgumentValueError, match=r"n is 4 from parameter xs: \[n\]f32 but 5"):
        MAIN.arguments(B, values, ())


def test_constant_sizes_are_checked():
    e = EntryPoint("g", (M3,), (), ("[3][]i32",))
    ok = np.zeros((3, 7), np.int32)
    assert e._fast_ok(B, (ok,))
    assert not e._fast_ok(B, (np.zeros((2, 7), np.int32),))
    with pytest.raises(ArgumentValueError, match="dimension of 2 where the type says 3"):
        e.arguments(B, (np.zeros((2, 7), np.int32),), ())


@pytest.mark.parametrize("bad, message", [
    ((np.arange(4), _f32(4), np.int64(0)), "expects \\[\\]f32, got a NumPy array of int64"),
    ((_f32(4).reshape(2, 2), _f32(4), np.int64(0)), "expects \\[\\]f32.*rank 2"),
    (([1.0, 2.0], _f32(2), np.int64(0)), "got a list"),
])
def test_wrong_arguments_raise_the_full_paths_errors(bad, message):
    with pytest.raises(ArgumentTypeError, match=message):
        MAIN.arguments(B, bad, ())


def test_wrong_counts_name_the_signature():
    with pytest.raises(ArgumentTypeError, match=r"missing argument for parameter ys \(\[n\]f32\)"):
        MAIN.arguments(B, (_f32(2), MISSING, MISSING), ())
    with pytest.raises(ArgumentTypeError, match=r"takes 3 arguments .* got 4"):
        MAIN.arguments(B, (_f32(2), _f32(2), np.int64(0)), (1,))


def test_structured_parameters_skip_the_fast_path():
    pair = Param("p", TupleOf((Leaf("i32", (), "i32"), Leaf("f32", ("n",), "[n]f32")), 0,
                              "(i32, [n]f32)"))
    e = EntryPoint("h", (pair,), (), ("(i32, [n]f32)",))
    got = e.arguments(B, ((np.int32(1), _f32(3)),), ())
    assert [type(v) for v in got] == [np.int32, np.ndarray]


def test_results_one_value_or_a_tuple():
    one = MAIN.results(B, [_f32(2)], False)
    assert isinstance(one, np.ndarray)
    two = EntryPoint("t", (), (Leaf("f32", ("n",), "[n]f32"), Leaf("i64", (), "i64")), ())
    assert isinstance(two.results(B, [_f32(2), np.int64(1)], False), tuple)
