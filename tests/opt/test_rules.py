"""The simplifier's rules (futgen.opt.rules): constant folding agrees with
the core IR interpreter bit for bit, or does not fold; the algebraic laws
are applied only where they hold exactly."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from futgen.core import ir
from futgen.core.interpret import basic
from futgen.errors import FutharkError
from futgen.interp import prims
from futgen.opt import rules

INTS = ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64")
INT_BINOPS = ("+", "-", "*", "/", "%", "//", "%%", "**", "&", "|", "^", "<<", ">>", ">>>",
              "max", "min", "mul_hi")
FLOAT_BINOPS = ("+", "-", "*", "/", "max", "min", "copysign", "**", "%", "atan2")
CMPS = ("==", "!=", "<", ">", "<=", ">=")
X = ir.VName("x", 0)


def _const(prim: str, v: float | bool) -> ir.Constant:
    """A constant as the IR holds it: the value of type `prim` (ints wrapped)."""
    return ir.Constant(prims.scalar(prim, v).item(), prim)


def _stm(e: ir.Exp, prim: str) -> ir.Stm:
    return ir.Stm((ir.Param(ir.VName("r", 1), ir.Prim(prim)),), e)


def _folded(e: ir.Exp, prim: str) -> ir.SubExp | None:
    new = rules.fold_constants(_stm(e, prim), rules.Facts())
    if new is None:
        return None
    [stm] = new
    assert isinstance(stm.exp, ir.SubExpOp)
    return stm.exp.se


def _interpreted(e: ir.Exp):
    """What the interpreter computes, or None if it fails."""
    with np.errstate(all="ignore"):
        try:
            return basic(e, {})
        except FutharkError:
            return None


def _check(e: ir.Exp, prim: str) -> ir.SubExp | None:
    """The folded constant, after checking that it has the interpreter's
    bits (and that what fails is not folded)."""
    got = _folded(e, prim)
    want = _interpreted(e)
    if want is None:
        assert got is None, e
    elif got is not None:
        assert isinstance(got, ir.Constant) and got.prim == prim
        assert np.asarray(prims.scalar(prim, got.value)).tobytes() == np.asarray(want).tobytes()
    return got


def _ints(prim: str) -> st.SearchStrategy:
    info = np.iinfo(prims.PRIM_DTYPES[prim])
    return st.one_of(st.integers(-3, 70), st.integers(int(info.min), int(info.max))).map(
        lambda v: _const(prim, v))


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(INTS).flatmap(lambda p: st.tuples(
    st.just(p), st.sampled_from(INT_BINOPS + CMPS), _ints(p), _ints(p))))
def test_integer_folding_is_the_interpreters_arithmetic(case) -> None:
    prim, op, x, y = case
    e = ir.CmpOp(op, prim, x, y) if op in CMPS else ir.BinOp(op, prim, x, y)
    got = _check(e, "bool" if op in CMPS else prim)
    assert got is not None or _interpreted(e) is None  # integers always fold, unless failing


def _floats(prim: str) -> st.SearchStrategy:
    width = 32 if prim == "f32" else 64
    return st.floats(width=width, allow_nan=True, allow_infinity=True).map(
        lambda v: _const(prim, v))


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(("f32", "f64")).flatmap(lambda p: st.tuples(
    st.just(p), st.sampled_from(FLOAT_BINOPS + CMPS), _floats(p), _floats(p))))
def test_float_folding_is_exact_or_absent(case) -> None:
    prim, op, x, y = case
    e = ir.CmpOp(op, prim, x, y) if op in CMPS else ir.BinOp(op, prim, x, y)
    got = _check(e, "bool" if op in CMPS else prim)
    if op in ("**", "%", "atan2"):  # the GPU's libm may round these differently
        assert got is None
    if op in ("max", "min") and x.value == y.value == 0:  # IEEE: either zero
        assert got is None
    if got is not None and op not in CMPS:
        assert not np.isnan(got.value)  # a NaN's bits are the backend's


@pytest.mark.parametrize("op, prim, x, want", [
    ("neg", "i8", -128, -128), ("abs", "i32", -(2**31), -(2**31)), ("popc", "i16", -1, 16),
    ("clz", "u32", 1, 31), ("ctz", "i64", 0, 64), ("bnot", "u8", 0, 255), ("sgn", "i32", -7, -1),
    ("sqrt", "f32", 2.0, 1.4142135381698608), ("round", "f64", 2.5, 2.0),
    ("floor", "f32", -0.5, -1.0), ("neg", "f64", 0.0, -0.0),
    ("sin", "f32", 1.0, None), ("exp", "f64", 1.0, None), ("sqrt", "f16", 2.0, None),
    ("sqrt", "f32", -1.0, None),  # a NaN
])
def test_unary_operators(op: str, prim: str, x, want) -> None:
    e = ir.UnOp(op, prim, _const(prim, x))
    result = {"popc": "i32", "clz": "i32", "ctz": "i32"}.get(op, prim)
    got = _check(e, result)
    assert (got and got.value) == want and (want is None or np.copysign(1, got.value)
                                            == np.copysign(1, want))


@pytest.mark.parametrize("src, dst, x, want", [
    ("i32", "i8", 300, 44), ("i8", "u16", -128, 128), ("i64", "f32", 2**24 + 1, 16777216.0),
    ("f64", "f32", 0.1, 0.10000000149011612), ("f32", "i32", -3.9, -3), ("bool", "i32", True, 1),
    ("f32", "i32", 3e9, None), ("f64", "u8", float("nan"), None), ("f32", "f16", 1.0, None),
    ("f64", "i64", float("inf"), None),
])
def test_conversions_fold_only_in_range(src: str, dst: str, x, want) -> None:
    got = _check(ir.ConvOp(src, dst, _const(src, x)), dst)
    assert (got and got.value) == want


@pytest.mark.parametrize("op, prim, y", [("/", "i32", 0), ("%", "u8", 0), ("//", "i64", 0),
                                         ("%%", "i16", 0), ("**", "i32", -1)])
def test_what_fails_is_not_folded(op: str, prim: str, y: int) -> None:
    assert _check(ir.BinOp(op, prim, _const(prim, 1), _const(prim, y)), prim) is None


@pytest.mark.parametrize("op, prim, y, result", [
    ("+", "i32", 0, ir.Var(X)), ("*", "u8", 1, ir.Var(X)), ("*", "i64", 0, ir.Constant(0, "i64")),
    ("&", "i16", -1, ir.Var(X)), ("<<", "i32", 0, ir.Var(X)), ("max", "i8", -128, ir.Var(X)),
    ("*", "f32", 1.0, ir.Var(X)), ("/", "f64", 1.0, ir.Var(X)), ("-", "f32", 0.0, ir.Var(X)),
    ("+", "f32", -0.0, ir.Var(X)),
    ("+", "f32", 0.0, None), ("*", "f64", 0.0, None), ("-", "f32", -0.0, None),
    ("max", "f32", float("-inf"), None),
])
def test_algebraic_laws_hold_exactly(op: str, prim: str, y: float, result) -> None:
    stm = _stm(ir.BinOp(op, prim, ir.Var(X), ir.Constant(y, prim)), prim)
    new = next((r for rule in (rules.unit, rules.absorb)
                if (r := rule(stm, rules.Facts())) is not None), None)
    assert (new and new[0].exp) == (result and ir.SubExpOp(result))
