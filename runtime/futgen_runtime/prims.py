"""Primitive operations with Futhark's exact semantics on NumPy values.

Every function here works elementwise on NumPy scalars *and* arrays of the
same dtype, so the interpreter uses them both for single values and for
vectorised lanes.  Callers must run under `np.errstate(all="ignore")`
(`Interpreter.call` does): integer overflow is meant to wrap silently.

`BINOPS` is the one operator table (operator name -> evaluator, NumPy ufunc
for reductions, identity element, commutativity) that the interpreter and
later compiler passes share.  It lives in the runtime so that generated CPU
code and the interpreter (`futgen.interp.prims` re-exports it) share one
definition of Futhark's scalar semantics.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .dtypes import DTYPE_PRIMS, FLOATS, INTS, PRIM_DTYPES, SIGNED_INTS
from .errors import FutharkError

BITS = {"i8": 8, "i16": 16, "i32": 32, "i64": 64, "u8": 8, "u16": 16, "u32": 32, "u64": 64,
        "f16": 16, "f32": 32, "f64": 64, "bool": 8}
UNSIGNED_OF = {"i8": "u8", "i16": "u16", "i32": "u32", "i64": "u64",
               "u8": "u8", "u16": "u16", "u32": "u32", "u64": "u64",
               "f16": "u16", "f32": "u32", "f64": "u64"}
SIGNED_OF = {"u8": "i8", "u16": "i16", "u32": "i32", "u64": "i64",
             "i8": "i8", "i16": "i16", "i32": "i32", "i64": "i64"}

Val = Any  # a NumPy scalar or ndarray


def prim_of(x: Val) -> str:
    """The Futhark primitive type name of a NumPy scalar or array."""
    return DTYPE_PRIMS[np.asarray(x).dtype] if not hasattr(x, "dtype") else DTYPE_PRIMS[x.dtype]


def scalar(t: str, v: Any) -> Val:
    """A NumPy scalar of primitive type `t` from a Python value (wrapping ints)."""
    dt = PRIM_DTYPES[t]
    if t in INTS and isinstance(v, int) and not isinstance(v, bool):
        bits = BITS[t]
        v &= (1 << bits) - 1
        if t in SIGNED_INTS and v >= 1 << (bits - 1):
            v -= 1 << bits
    return dt.type(v)


def _check_div(y: Val) -> None:
    """Integer division by zero is a run-time error in Futhark."""
    if np.any(y == 0):
        raise FutharkError("division by zero")


# ------------------------------------------------------------ integer ops


def int_div(x: Val, y: Val) -> Val:
    """`/` on integers: rounds towards negative infinity (unsigned: plain)."""
    _check_div(y)
    return np.floor_divide(x, y)


def int_mod(x: Val, y: Val) -> Val:
    """`%` on integers: the remainder has the sign of the divisor."""
    _check_div(y)
    return np.remainder(x, y)


def int_quot(x: Val, y: Val) -> Val:
    """`//`: division rounding towards zero."""
    _check_div(y)
    q = np.floor_divide(x, y)
    if x.dtype.kind == "u":
        return q
    r = np.remainder(x, y)
    fix = (r != 0) & ((x < 0) != (y < 0))
    return np.where(fix, q + q.dtype.type(1), q).astype(q.dtype)[()]


def int_rem(x: Val, y: Val) -> Val:
    """`%%`: remainder with the sign of the dividend (C's `%`)."""
    _check_div(y)
    return np.fmod(x, y)


def int_pow(x: Val, y: Val) -> Val:
    """`**` on integers: wrapping integer power; negative exponents fail."""
    if x.dtype.kind == "i" and np.any(y < 0):
        raise FutharkError("Negative exponent")
    return _wrap_pow(x, y)


def _wrap_pow(x: Val, y: Val) -> Val:
    """Exponentiation by squaring in the operands' dtype (so it wraps)."""
    xa = np.asarray(x)
    ya = np.asarray(y)
    shape = np.broadcast_shapes(xa.shape, ya.shape)
    base = np.broadcast_to(xa, shape).copy()
    exp = np.broadcast_to(ya, shape).astype(np.uint64)
    result = np.ones(shape, dtype=xa.dtype)
    while np.any(exp):
        odd = (exp & np.uint64(1)).astype(bool)
        result = np.where(odd, result * base, result)
        base = base * base
        exp = exp >> np.uint64(1)
    return result[()]


def shl(x: Val, y: Val) -> Val:
    """`<<`; shifting by the width or more gives 0."""
    bits = x.dtype.itemsize * 8
    big = (y < 0) | (y >= bits)
    ys = np.where(big, 0, y).astype(x.dtype)
    return np.where(big, x.dtype.type(0), np.left_shift(x, ys)).astype(x.dtype)[()]


def ashr(x: Val, y: Val) -> Val:
    """`>>`: arithmetic shift for signed types (logical for unsigned)."""
    bits = x.dtype.itemsize * 8
    ys = np.where((y < 0) | (y >= bits), bits - 1, y).astype(x.dtype)
    r = np.right_shift(x, ys)
    if x.dtype.kind == "u":
        r = np.where((y < 0) | (y >= bits), x.dtype.type(0), r)
    return np.asarray(r).astype(x.dtype)[()]


def lshr(x: Val, y: Val) -> Val:
    """`>>>`: logical (zero-filling) right shift, at the type's own width."""
    ut = PRIM_DTYPES[UNSIGNED_OF[prim_of(x)]]
    return ashr(np.asarray(x).astype(ut)[()], y).astype(x.dtype)


def bnot(x: Val) -> Val:
    return np.invert(x)


# -------------------------------------------------------------- float ops


def fmod(x: Val, y: Val) -> Val:
    """`%` on floats: the result has the sign of the divisor (Haskell mod')."""
    return np.mod(x, y)


def fpow(x: Val, y: Val) -> Val:
    return np.power(x, y)


def fmax(x: Val, y: Val) -> Val:
    """Float max ignoring NaN operands (NaN only if both are NaN)."""
    return np.fmax(x, y)


def fmin(x: Val, y: Val) -> Val:
    return np.fmin(x, y)


# -------------------------------------------------------------- the table


@dataclass(frozen=True)
class BinOp:
    """A built-in binary operator on primitive values.

    `int_fn`/`float_fn`/`bool_fn` evaluate it for each kind of operand (None
    where the kind is not allowed); `ufunc` is a NumPy ufunc with the same
    semantics usable for reduce/accumulate/at (None if there is none, e.g.
    division); `identity(t)` is the neutral element for type `t` or None;
    `commutative` and `associative` say what reductions may assume.
    """

    name: str
    int_fn: Callable[[Val, Val], Val] | None
    float_fn: Callable[[Val, Val], Val] | None
    bool_fn: Callable[[Val, Val], Val] | None = None
    ufunc: Callable[..., Any] | None = None
    float_ufunc: Callable[..., Any] | None = None
    identity: Callable[[str], Val] | None = None
    commutative: bool = False
    associative: bool = False
    comparison: bool = False

    def evaluator(self, t: str) -> Callable[[Val, Val], Val]:
        """The evaluator for operands of primitive type `t`."""
        fn = self.bool_fn if t == "bool" else self.int_fn if t in INTS else self.float_fn
        if fn is None:
            raise TypeError(f"operator {self.name} not defined on {t}")
        return fn

    def reducer(self, t: str) -> Any:
        """The NumPy ufunc to reduce/scan with for type `t`, or None."""
        if t in FLOATS and self.float_ufunc is not None:
            return self.float_ufunc
        if t == "bool" and self.bool_fn is None:
            return None
        return self.ufunc

    def apply(self, x: Val, y: Val) -> Val:
        return self.evaluator(prim_of(x))(x, y)


def _zero(t: str) -> Val:
    return scalar(t, False if t == "bool" else 0)


def _one(t: str) -> Val:
    return scalar(t, True if t == "bool" else 1)


def highest(t: str) -> Val:
    if t == "bool":
        return np.bool_(True)
    if t in FLOATS:
        return PRIM_DTYPES[t].type(np.inf)
    return PRIM_DTYPES[t].type(np.iinfo(PRIM_DTYPES[t]).max)


def lowest(t: str) -> Val:
    if t == "bool":
        return np.bool_(False)
    if t in FLOATS:
        return PRIM_DTYPES[t].type(-np.inf)
    return PRIM_DTYPES[t].type(np.iinfo(PRIM_DTYPES[t]).min)


def _all_ones(t: str) -> Val:
    return np.invert(_zero(t)) if t != "bool" else np.bool_(True)


BINOPS: dict[str, BinOp] = {
    "+": BinOp("+", np.add, np.add, None, np.add, None, _zero, True, True),
    "-": BinOp("-", np.subtract, np.subtract),
    "*": BinOp("*", np.multiply, np.multiply, None, np.multiply, None, _one, True, True),
    "/": BinOp("/", int_div, np.divide),
    "%": BinOp("%", int_mod, fmod),
    "//": BinOp("//", int_quot, None),
    "%%": BinOp("%%", int_rem, None),
    "**": BinOp("**", int_pow, fpow),
    "&": BinOp("&", np.bitwise_and, None, np.logical_and, np.bitwise_and, None, _all_ones,
               True, True),
    "|": BinOp("|", np.bitwise_or, None, np.logical_or, np.bitwise_or, None, _zero, True, True),
    "^": BinOp("^", np.bitwise_xor, None, np.not_equal, np.bitwise_xor, None, _zero, True, True),
    "<<": BinOp("<<", shl, None),
    ">>": BinOp(">>", ashr, None),
    ">>>": BinOp(">>>", lshr, None),
    "&&": BinOp("&&", None, None, np.logical_and, np.logical_and, None, _one, True, True),
    "||": BinOp("||", None, None, np.logical_or, np.logical_or, None, _zero, True, True),
    "==": BinOp("==", np.equal, np.equal, np.equal, comparison=True),
    "!=": BinOp("!=", np.not_equal, np.not_equal, np.not_equal, comparison=True),
    "<": BinOp("<", np.less, np.less, np.less, comparison=True),
    ">": BinOp(">", np.greater, np.greater, np.greater, comparison=True),
    "<=": BinOp("<=", np.less_equal, np.less_equal, np.less_equal, comparison=True),
    ">=": BinOp(">=", np.greater_equal, np.greater_equal, np.greater_equal, comparison=True),
    # Not infix operators, but reducible functions the interpreter recognises
    # (`t.max`, `t.min`, `bool` `&&` ...).
    "max": BinOp("max", np.maximum, fmax, np.maximum, np.maximum, np.fmax, lowest, True, True),
    "min": BinOp("min", np.minimum, fmin, np.minimum, np.minimum, np.fmin, highest, True, True),
}


def _install_functions() -> None:
    """The binary functions of the numeric modules (`f32.atan2`, `u8.mul_hi`,
    ...) as core BinOps; defined after their evaluators below."""
    BINOPS.update({
        "atan2": BinOp("atan2", None, _same(np.arctan2)),
        "atan2pi": BinOp("atan2pi", None, atan2pi),
        "hypot": BinOp("hypot", None, _same(np.hypot)),
        "copysign": BinOp("copysign", None, _same(np.copysign)),
        "nextafter": BinOp("nextafter", None, _same(np.nextafter)),
        # `ldexp`'s second operand is an i32 whatever the float type.
        "ldexp": BinOp("ldexp", None, ldexp),
        "mul_hi": BinOp("mul_hi", mul_hi, None),
    })


def binop(op: str, x: Val, y: Val) -> Val:
    """Apply operator `op` to two values of the same primitive type."""
    return BINOPS[op].apply(x, y)


# ----------------------------------------------------------- conversions


def convert(x: Val, to: str) -> Val:
    """Convert a primitive value (scalar or array) to type `to` as Futhark does.

    Integer narrowing wraps; widening sign-extends into signed types and
    zero-extends into unsigned ones (`u16.i8 (-128)` is 128); float to integer truncates towards zero and maps NaN and
    infinities to 0; bool converts to 0/1 and numbers to bool by `!= 0`.
    Futhark leaves out-of-range float to integer conversions unspecified:
    here a signed target saturates (what its GPU backends do, and what
    x86 gives for negative values), an unsigned one takes the int64 value
    wrapped (`u32.f32 (-1)` is 4294967295, as Futhark's tests expect).
    """
    a = np.asarray(x)
    src = DTYPE_PRIMS[a.dtype]
    dt = PRIM_DTYPES[to]
    if src == to:
        r = a
    elif to == "bool":
        r = a != 0
    elif src in FLOATS and to in INTS:
        r = _float_to_int(a, to)
    elif src in SIGNED_INTS and to in UNSIGNED_OF and to.startswith("u"):
        # Futhark zero-extends a signed value's bits into an unsigned type.
        r = a.astype(PRIM_DTYPES[UNSIGNED_OF[src]]).astype(dt)
    else:
        r = a.astype(dt)
    return r[()] if r.ndim == 0 else r


def _float_to_int(a: np.ndarray, to: str) -> np.ndarray:
    bad = ~np.isfinite(a)
    t = np.trunc(np.where(bad, 0, a).astype(np.float64))
    if to == "u64":
        big = t >= 2.0**63
        lo = np.clip(np.where(big, 0, t), -(2.0**63), 2.0**63 - 1024).astype(np.int64)
        hi = np.clip(np.where(big, t, 0), 0, 2.0**64 - 2048).astype(np.uint64)
        return np.where(big, hi, lo.astype(np.uint64))
    if to in SIGNED_INTS:
        lo, hi = signed_float_bounds(to)
        return np.clip(t, lo, hi).astype(np.int64).astype(PRIM_DTYPES[to])
    i = np.clip(t, -(2.0**63), 2.0**63 - 1024).astype(np.int64)
    return i.astype(PRIM_DTYPES[to])


def signed_float_bounds(to: str) -> tuple[float, float]:
    """The range a float converted to signed type `to` saturates into: the
    type's bounds, the upper one of i64 the largest double below 2^63."""
    info = np.iinfo(PRIM_DTYPES[to])
    return float(info.min), (2.0**63 - 1024 if to == "i64" else float(info.max))


def to_bits(x: Val) -> Val:
    """The bit pattern of a float as the unsigned integer of its width."""
    a = np.asarray(x)
    r = a.view(PRIM_DTYPES[UNSIGNED_OF[DTYPE_PRIMS[a.dtype]]])
    return r[()] if r.ndim == 0 else r.copy()


def from_bits(x: Val, to: str) -> Val:
    a = np.asarray(x)
    r = a.view(PRIM_DTYPES[to])
    return r[()] if r.ndim == 0 else r.copy()


# ------------------------------------------------------------ bit tricks


def popc(x: Val) -> Val:
    """Population count of the bit pattern (bitwise_count of a signed value
    would count its absolute value)."""
    u = np.asarray(x).astype(PRIM_DTYPES[UNSIGNED_OF[prim_of(x)]])
    return np.bitwise_count(u).astype(np.int32)[()]


def clz(x: Val) -> Val:
    """Count leading zeros at the type's width."""
    u = np.asarray(x).astype(PRIM_DTYPES[UNSIGNED_OF[prim_of(x)]])
    bits = u.dtype.itemsize * 8
    s = 1
    while s < bits:
        u = u | (u >> u.dtype.type(s))
        s *= 2
    return (bits - np.bitwise_count(u).astype(np.int32)).astype(np.int32)[()]


def ctz(x: Val) -> Val:
    """Count trailing zeros; the type's width for 0."""
    u = np.asarray(x).astype(PRIM_DTYPES[UNSIGNED_OF[prim_of(x)]])
    low = (u & (~u + u.dtype.type(1))) - u.dtype.type(1)
    return np.bitwise_count(low).astype(np.int32)[()]


def _bits(x: Val) -> np.ndarray:
    """The bit pattern of an integer or float as the unsigned type of its width."""
    if prim_of(x) in FLOATS:
        return np.asarray(to_bits(x))
    return np.asarray(x).astype(PRIM_DTYPES[UNSIGNED_OF[prim_of(x)]])


def get_bit(i: Val, x: Val) -> Val:
    """Bit `i` of `x`'s bit pattern as 0 or 1 (0 for `i` out of range)."""
    u = _bits(x)
    bit = lshr(u[()], np.asarray(i).astype(u.dtype)[()])
    return (np.asarray(bit) & u.dtype.type(1)).astype(np.int32)[()]


def set_bit(i: Val, x: Val, b: Val) -> Val:
    """`x` with bit `i` of its bit pattern set to 1 if `b == 1`, else to 0."""
    t = prim_of(x)
    if t in FLOATS:
        return from_bits(set_bit(i, to_bits(x), b), t)
    one = PRIM_DTYPES[t].type(1)
    ii = np.asarray(i).astype(PRIM_DTYPES[t])[()]
    mask = shl(one, ii)
    cleared = np.bitwise_and(x, np.invert(mask))
    return np.where(np.asarray(b) == 1, np.bitwise_or(cleared, mask), cleared).astype(
        PRIM_DTYPES[t])[()]


def mul_hi(x: Val, y: Val) -> Val:
    """The high half of the double-width product."""
    t = prim_of(x)
    bits = BITS[t]
    if bits < 64:
        wide = np.int64 if t in SIGNED_INTS else np.uint64
        p = np.asarray(x).astype(wide) * np.asarray(y).astype(wide)
        return (p >> wide(bits)).astype(PRIM_DTYPES[t])[()]
    xs = np.asarray(x, dtype=object)
    ys = np.asarray(y, dtype=object)
    hi = np.vectorize(lambda a, b: scalar(t, (int(a) * int(b)) >> 64), otypes=[PRIM_DTYPES[t]])
    return np.asarray(hi(xs, ys)).astype(PRIM_DTYPES[t])[()]


def mad_hi(a: Val, b: Val, c: Val) -> Val:
    return np.add(mul_hi(a, b), c)


# ------------------------------------------------------------ float math


def _scipy_or_math(name: str) -> Callable[[Val], Val]:
    """A special function from scipy if present, else math's, vectorised."""
    try:
        import scipy.special as sp

        fn = {"gamma": sp.gamma, "lgamma": sp.gammaln, "erf": sp.erf, "erfc": sp.erfc}[name]
    except ImportError:  # pragma: no cover
        mfn = getattr(math, name)

        def fn(x: Any) -> Any:
            return np.vectorize(_safe(mfn), otypes=[np.float64])(x)

    def run(x: Val) -> Val:
        a = np.asarray(x)
        return np.asarray(fn(a.astype(np.float64))).astype(a.dtype)[()]

    return run


def _safe(fn: Callable[[float], float]) -> Callable[[float], float]:
    def g(v: float) -> float:
        try:
            return fn(v)
        except (ValueError, OverflowError):
            return math.inf if v > 0 else math.nan

    return g


def _same(fn: Callable[..., Any]) -> Callable[..., Val]:
    """Wrap a NumPy function so the result keeps the first argument's dtype."""

    def run(*args: Val) -> Val:
        dt = np.asarray(args[0]).dtype
        return np.asarray(fn(*args)).astype(dt)[()]

    return run


def _pi_scaled(fn: Callable[[Val], Val], inverse: bool) -> Callable[[Val], Val]:
    def run(x: Val) -> Val:
        dt = np.asarray(x).dtype
        if inverse:
            return np.asarray(fn(x) / dt.type(np.pi)).astype(dt)[()]
        return np.asarray(fn(x * dt.type(np.pi))).astype(dt)[()]

    return run


def _rsqrt(x: Val) -> Val:
    return _same(lambda v: 1 / np.sqrt(v))(x)


UNARY_REAL: dict[str, Callable[[Val], Val]] = {
    "recip": _same(lambda v: np.asarray(v).dtype.type(1) / v),
    "sqrt": np.sqrt, "rsqrt": _rsqrt, "cbrt": _same(np.cbrt), "exp": np.exp,
    "sin": np.sin, "cos": np.cos, "tan": np.tan,
    "sinpi": _pi_scaled(np.sin, False), "cospi": _pi_scaled(np.cos, False),
    "tanpi": _pi_scaled(np.tan, False),
    "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan,
    "asinpi": _pi_scaled(np.arcsin, True), "acospi": _pi_scaled(np.arccos, True),
    "atanpi": _pi_scaled(np.arctan, True),
    "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh,
    "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
    "gamma": _scipy_or_math("gamma"), "lgamma": _scipy_or_math("lgamma"),
    "erf": _scipy_or_math("erf"), "erfc": _scipy_or_math("erfc"),
    "log": np.log, "log2": np.log2, "log10": np.log10, "log1p": np.log1p,
    "ceil": np.ceil, "floor": np.floor, "trunc": np.trunc, "round": np.rint,
}


def fsgn(x: Val) -> Val:
    return np.sign(x)


def lerp(v0: Val, v1: Val, t: Val) -> Val:
    return v0 + (v1 - v0) * t


def atan2pi(x: Val, y: Val) -> Val:
    dt = np.asarray(x).dtype
    return np.asarray(np.arctan2(x, y) / dt.type(np.pi)).astype(dt)[()]


def ldexp(x: Val, e: Val) -> Val:
    dt = np.asarray(x).dtype
    return np.asarray(np.ldexp(x, np.asarray(e).astype(np.int32))).astype(dt)[()]


def fma(a: Val, b: Val, c: Val) -> Val:
    """Fused multiply-add; computed in f64 (exact enough for f16/f32)."""
    dt = np.asarray(a).dtype
    if dt == np.float64:
        return a * b + c
    return np.asarray(
        np.asarray(a, np.float64) * np.asarray(b, np.float64) + np.asarray(c, np.float64)
    ).astype(dt)[()]


def isinf(x: Val) -> Val:
    return np.isinf(x)


def isnan(x: Val) -> Val:
    return np.isnan(x)


FLOAT_CONSTS: dict[str, Callable[[str], Val]] = {
    "inf": lambda t: PRIM_DTYPES[t].type(np.inf),
    "nan": lambda t: PRIM_DTYPES[t].type(np.nan),
    "pi": lambda t: PRIM_DTYPES[t].type(np.pi),
    "e": lambda t: PRIM_DTYPES[t].type(np.e),
    "epsilon": lambda t: PRIM_DTYPES[t].type(np.finfo(PRIM_DTYPES[t]).eps),
}


_install_functions()


def _from_bits_of(x: Val) -> Val:
    """The float whose bit pattern is the unsigned integer `x` (of its width)."""
    return from_bits(x, _FLOAT_OF_BITS[prim_of(x)])


_FLOAT_OF_BITS = {"u16": "f16", "u32": "f32", "u64": "f64"}

# The core IR's unary operators, other than the float functions of UNARY_REAL.
_UNOPS: dict[str, Callable[[Val], Val]] = {
    "neg": np.negative,
    "not": np.logical_not,
    "bnot": bnot,
    "abs": np.abs,
    "popc": popc,
    "clz": clz,
    "ctz": ctz,
    "isnan": isnan,
    "isinf": isinf,
    "to_bits": to_bits,
    "from_bits": _from_bits_of,
}


def unop(op: str, prim: str, x: Val) -> Val:
    """The core IR's unary operator `op` on `x` of type `prim` (Futhark semantics).

    Raises KeyError for an unknown operator.
    """
    if op == "sgn":
        return fsgn(x) if prim in ("f16", "f32", "f64") else np.sign(x)
    fn = _UNOPS.get(op) or UNARY_REAL.get(op)
    if fn is None:
        raise KeyError(f"no unary operator {op}")
    return fn(x)
