"""Partial derivatives of the core IR's scalar operators (Futhark's `AD/Derivatives.hs`),
emitted as scalar code by `Scalar`; forward and reverse mode share them."""

from __future__ import annotations

import math
from collections.abc import Callable

from futgen.core import ir
from futgen.core.internalise import _constant
from futgen.frontend import types as T

# ---------------------------------------------------------------- derivatives


class Scalar:
    """Scalar arithmetic of one primitive type, emitted by `emit` (which binds a name)."""

    def __init__(self, emit: Callable[[ir.Exp, ir.Type], ir.SubExp], prim: str):
        self.emit, self.prim, self.t = emit, prim, ir.Prim(prim)

    def k(self, v: float) -> ir.Constant:
        return _constant(v, self.prim)

    def is_zero(self, x: ir.SubExp) -> bool:
        return isinstance(x, ir.Constant) and x.value == 0

    def binop(self, op: str, x: ir.SubExp, y: ir.SubExp) -> ir.SubExp:
        return self.emit(ir.BinOp(op, self.prim, x, y), self.t)

    def un(self, op: str, x: ir.SubExp) -> ir.SubExp:
        return self.emit(ir.UnOp(op, self.prim, x), self.t)

    def sub(self, x: ir.SubExp, y: ir.SubExp) -> ir.SubExp:
        return self.binop("-", x, y)

    def add(self, x: ir.SubExp, y: ir.SubExp) -> ir.SubExp:
        return self.binop("||" if self.prim == "bool" else "+", x, y)

    def mul(self, x: ir.SubExp, y: ir.SubExp) -> ir.SubExp:
        for a, b in ((x, y), (y, x)):  # a partial derivative of 1 or -1 costs nothing
            if isinstance(a, ir.Constant) and a.value == 1:
                return b
            if isinstance(a, ir.Constant) and a.value == -1 and self.prim != "bool":
                return self.neg(b)
        return self.binop("&&" if self.prim == "bool" else "*", x, y)

    def div(self, x: ir.SubExp, y: ir.SubExp) -> ir.SubExp:
        return self.binop("/", x, y)

    def neg(self, x: ir.SubExp) -> ir.SubExp:
        return self.un("neg", x)

    def recip(self, x: ir.SubExp) -> ir.SubExp:
        return self.div(self.k(1), x)

    def cmp(self, op: str, x: ir.SubExp, y: ir.SubExp) -> ir.SubExp:
        return self.emit(ir.CmpOp(op, self.prim, x, y), ir.Prim("bool"))

    def of_bool(self, c: ir.SubExp) -> ir.SubExp:
        """1 where `c` holds, else 0 (how Futhark writes max's partials)."""
        return self.emit(ir.ConvOp("bool", self.prim, c), self.t)

    def select(self, c: ir.SubExp, x: ir.SubExp, y: ir.SubExp) -> ir.SubExp:
        return self.emit(ir.If(c, ir.Body((), (x,)), ir.Body((), (y,)), (self.t,)), self.t)


Rule1 = Callable[[Scalar, ir.SubExp, ir.SubExp], ir.SubExp]  # (s, x, f x) -> f' x


def _over_pi(rule: Rule1) -> Rule1:
    return lambda s, x, y: s.div(rule(s, x, y), s.k(math.pi))


def _asin(s: Scalar, x: ir.SubExp, _y: ir.SubExp) -> ir.SubExp:
    return s.recip(s.un("sqrt", s.sub(s.k(1), s.mul(x, x))))


def _acos(s: Scalar, x: ir.SubExp, y: ir.SubExp) -> ir.SubExp:
    return s.neg(_asin(s, x, y))


def _atan(s: Scalar, x: ir.SubExp, _y: ir.SubExp) -> ir.SubExp:
    return s.recip(s.add(s.k(1), s.mul(x, x)))


def _erf(s: Scalar, x: ir.SubExp, _y: ir.SubExp) -> ir.SubExp:
    return s.mul(s.k(2 / math.sqrt(math.pi)), s.un("exp", s.neg(s.mul(x, x))))


# f' in terms of x and y = f x, for the float functions of the numeric modules.
UNARY_DERIVATIVES: dict[str, Rule1] = {
    "sqrt": lambda s, x, y: s.recip(s.mul(s.k(2), y)),
    "rsqrt": lambda s, x, y: s.mul(s.k(-0.5), s.mul(y, s.mul(y, y))),
    "cbrt": lambda s, x, y: s.recip(s.mul(s.k(3), s.mul(y, y))),
    "recip": lambda s, x, y: s.neg(s.mul(y, y)),
    "exp": lambda s, x, y: y,
    "log": lambda s, x, y: s.recip(x),
    "log2": lambda s, x, y: s.recip(s.mul(x, s.k(math.log(2)))),
    "log10": lambda s, x, y: s.recip(s.mul(x, s.k(math.log(10)))),
    "log1p": lambda s, x, y: s.recip(s.add(x, s.k(1))),
    "sin": lambda s, x, y: s.un("cos", x),
    "cos": lambda s, x, y: s.neg(s.un("sin", x)),
    "tan": lambda s, x, y: s.add(s.k(1), s.mul(y, y)),
    "sinpi": lambda s, x, y: s.mul(s.k(math.pi), s.un("cospi", x)),
    "cospi": lambda s, x, y: s.neg(s.mul(s.k(math.pi), s.un("sinpi", x))),
    "tanpi": lambda s, x, y: s.mul(s.k(math.pi), s.add(s.k(1), s.mul(y, y))),
    "asin": _asin,
    "acos": _acos,
    "atan": _atan,
    "asinpi": _over_pi(_asin),
    "acospi": _over_pi(_acos),
    "atanpi": _over_pi(_atan),
    "sinh": lambda s, x, y: s.un("cosh", x),
    "cosh": lambda s, x, y: s.un("sinh", x),
    "tanh": lambda s, x, y: s.sub(s.k(1), s.mul(y, y)),
    "asinh": lambda s, x, y: s.recip(s.un("sqrt", s.add(s.mul(x, x), s.k(1)))),
    "acosh": lambda s, x, y: s.recip(s.un("sqrt", s.sub(s.mul(x, x), s.k(1)))),
    "atanh": lambda s, x, y: s.recip(s.sub(s.k(1), s.mul(x, x))),
    "erf": _erf,
    "erfc": lambda s, x, y: s.neg(_erf(s, x, y)),
}
# Unary operators whose derivative is zero wherever it exists.
PIECEWISE_CONSTANT = {"sgn", "floor", "ceil", "trunc", "round", "isnan", "isinf", "to_bits",
                      "from_bits", "popc", "clz", "ctz", "not", "bnot"}
# Bitwise operators: Futhark's AD gives them zero derivatives too.
BITWISE = {"&", "|", "^", "<<", ">>", ">>>", "mul_hi"}
PIECEWISE_CONSTANT -= {"not", "bnot", "to_bits", "from_bits"}

Rule2 = Callable[[Scalar, ir.SubExp, ir.SubExp, ir.SubExp], tuple[ir.SubExp, ir.SubExp]]


def _div(s: Scalar, x: ir.SubExp, y: ir.SubExp, z: ir.SubExp) -> tuple[ir.SubExp, ir.SubExp]:
    if s.prim in T.FLOATS:
        return s.recip(y), s.neg(s.div(z, y))
    # Integer division: Futhark's partials, in integer arithmetic.
    return s.binop("//", s.k(1), y), s.neg(s.binop("//", x, s.mul(y, y)))


def _pow(s: Scalar, x: ir.SubExp, y: ir.SubExp, z: ir.SubExp) -> tuple[ir.SubExp, ir.SubExp]:
    one = s.k(1)
    if s.prim not in T.FLOATS:
        return s.mul(s.binop("**", x, s.sub(y, one)), y), s.k(0)
    # 0 ** y has no derivative in x for y < 1, and x ** y none in y for x <= 0.
    at_zero = s.emit(ir.BinOp("&&", "bool", s.cmp("==", x, s.k(0)), s.cmp("<", y, one)),
                        ir.Prim("bool"))
    px = s.select(at_zero, s.k(0), s.mul(y, s.binop("**", x, s.sub(y, one))))
    py = s.mul(z, s.select(s.cmp("<=", x, s.k(0)), s.k(0), s.un("log", x)))
    return px, py


def _atan2(s: Scalar, x: ir.SubExp, y: ir.SubExp, z: ir.SubExp) -> tuple[ir.SubExp, ir.SubExp]:
    r2 = s.add(s.mul(x, x), s.mul(y, y))
    return s.div(y, r2), s.neg(s.div(x, r2))


# (∂z/∂x, ∂z/∂y) of z = x op y.
BINARY_DERIVATIVES: dict[str, Rule2] = {
    "+": lambda s, x, y, z: (s.k(1), s.k(1)),
    "-": lambda s, x, y, z: (s.k(1), s.k(-1)),
    "*": lambda s, x, y, z: (y, x),
    "/": _div,
    "//": _div,
    "%": lambda s, x, y, z: (s.k(1), s.k(0)),
    "%%": lambda s, x, y, z: (s.k(1), s.k(0)),
    "**": _pow,
    "max": lambda s, x, y, z: (s.of_bool(s.cmp(">=", x, y)), s.of_bool(s.cmp("<", x, y))),
    "min": lambda s, x, y, z: (s.of_bool(s.cmp("<=", x, y)), s.of_bool(s.cmp(">", x, y))),
    "atan2": _atan2,
    "atan2pi": lambda s, x, y, z: tuple(s.div(p, s.k(math.pi)) for p in _atan2(s, x, y, z)),
    "hypot": lambda s, x, y, z: (s.div(x, z), s.div(y, z)),
    "copysign": lambda s, x, y, z: (s.mul(s.un("sgn", x), s.binop("copysign", s.k(1), y)),
                                    s.k(0)),
    "nextafter": lambda s, x, y, z: (s.k(1), s.k(0)),
    "&&": lambda s, x, y, z: (y, x),
    "||": lambda s, x, y, z: (s.k(1), s.k(0)),
}
