"""Primitive semantics: division signs, wrap-around, shifts, conversions, floats."""

import numpy as np
import pytest

from futgen.errors import FutharkError
from futgen.interp import prims as P

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

A = np.array([7, -7, 7, -7], np.int32)
B = np.array([3, 3, -3, -3], np.int32)


def test_division_family() -> None:
    assert P.int_div(A, B).tolist() == [2, -3, -3, 2]
    assert P.int_mod(A, B).tolist() == [1, 2, -2, -1]
    assert P.int_quot(A, B).tolist() == [2, -2, -2, 2]
    assert P.int_rem(A, B).tolist() == [1, -1, 1, -1]
    assert P.int_quot(A, B).dtype == np.int32


def test_division_by_zero() -> None:
    with pytest.raises(FutharkError, match="division by zero"):
        P.int_div(np.int32(1), np.int32(0))
    with pytest.raises(FutharkError, match="division by zero"):
        P.int_rem(np.int64(1), np.int64(0))


def test_wraparound_keeps_dtype() -> None:
    with np.errstate(all="ignore"):
        r = P.binop("+", np.int32(2**31 - 1), np.int32(1))
        assert r == -(2**31) and isinstance(r, np.int32)
        assert P.binop("*", np.uint8(200), np.uint8(2)) == 144
        assert P.int_pow(np.int32(3), np.int32(40)) == P.scalar("i32", 3**40)


def test_negative_exponent() -> None:
    with pytest.raises(FutharkError):
        P.int_pow(np.int32(2), np.int32(-1))


def test_shifts() -> None:
    assert P.shl(np.int32(1), np.int32(40)) == 0
    assert P.ashr(np.int32(-8), np.int32(1)) == -4
    assert P.lshr(np.int32(-1), np.int32(1)) == 2**31 - 1
    assert P.lshr(np.int8(-128), np.int8(7)) == 1
    assert isinstance(P.lshr(np.int32(-1), np.int32(1)), np.int32)


def test_conversions() -> None:
    assert P.convert(np.float32(np.nan), "i32") == 0
    assert P.convert(np.float32(np.inf), "i64") == 0
    assert P.convert(np.float32(-3.7), "i32") == -3
    assert P.convert(np.float32(-6.9e18), "i32") == -(2**31)  # signed targets saturate
    assert P.convert(np.float64(1e10), "i16") == 2**15 - 1
    assert P.convert(np.float32(-1.0), "u32") == 2**32 - 1  # unsigned ones wrap
    assert P.convert(np.int32(300), "i8") == 44
    assert P.convert(np.int8(-1), "u16") == 255  # zero-extends, as Futhark
    assert P.convert(np.uint8(255), "i32") == 255
    assert P.convert(np.bool_(True), "f32") == 1.0
    assert P.convert(np.float64(0.5), "bool")
    assert isinstance(P.convert(np.int32(1), "f16"), np.float16)


def test_float_ops() -> None:
    r = P.binop("+", np.float32(1), np.float32(2))
    assert isinstance(r, np.float32)
    assert np.signbit(P.fmod(np.float32(1), np.float32(-1)))
    assert P.fmod(np.float32(-1), np.float32(3)) == 2
    assert P.fmax(np.float32(np.nan), np.float32(1)) == 1
    assert np.isnan(P.fmin(np.float32(np.nan), np.float32(np.nan)))
    assert P.UNARY_REAL["round"](np.float32(2.5)) == 2
    assert P.UNARY_REAL["round"](np.float32(-0.5)) == 0
    assert isinstance(P.UNARY_REAL["sqrt"](np.float16(4)), np.float16)


def test_bits() -> None:
    assert P.popc(np.int32(-1)) == 32
    assert P.clz(np.int32(1)) == 31
    assert P.clz(np.uint8(0)) == 8
    assert P.ctz(np.int32(0)) == 32
    assert P.ctz(np.int64(8)) == 3
    assert P.get_bit(np.int32(31), np.int32(-1)) == 1
    assert P.set_bit(np.int32(3), np.int32(0), np.int32(1)) == 8
    assert P.mul_hi(np.int32(2**30), np.int32(8)) == 2
    assert P.mul_hi(np.uint64(2**63), np.uint64(4)) == 2
    assert P.to_bits(np.float32(1)) == 0x3F800000
    assert P.from_bits(np.uint32(0x3F800000), "f32") == 1.0


def test_operator_table() -> None:
    plus = P.BINOPS["+"]
    assert plus.commutative and plus.associative and plus.identity("i32") == 0
    assert P.BINOPS["min"].identity("f32") == np.inf
    assert P.BINOPS["max"].reducer("f32") is np.fmax
    assert not P.BINOPS["-"].associative
