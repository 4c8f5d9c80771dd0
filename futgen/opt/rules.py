"""The simplifier's rewrite rules, one law each.

A rule looks at one statement, whose operands the simplifier has already
substituted, and returns the statements that replace it, or None when its
law does not apply.  The simplifier feeds the replacements through every
rule again, so a rule only has to make one step (`let x = 2 + 3` becomes
`let x = 5i32`, which copy propagation then removes).  Sizes a type
states are known (`size xs 0` is `n` for `xs : [n]f32`), and array sizes
are non-negative.

Constant folding is exact: it computes with the interpreter's and the CPU
runtime's own primitive operations (`futgen_runtime.prims`: integers wrap,
shifts past the width give what the runtime gives, conversions follow
Futhark's rules) and folds only what the CUDA code computes the same way.
So it never folds an operation that fails (division by zero, a negative
exponent: the error must still happen at run time), a float function the
GPU rounds differently (`exp`, `sin`, `**`, `%` on floats: only IEEE
operations that are correctly rounded everywhere are folded), `f16`
arithmetic, a float to integer conversion out of the target's range
(Futhark leaves it unspecified), or anything whose result is a NaN (its
bits may differ between NumPy and the GPU).

Algebraic laws hold exactly too: `x + 0 = x` for integers but not for
floats (`-0.0 + 0.0` is `0.0`), `x * 0 = 0` for integers only (NaN and
infinities), while `x * 1.0 = x`, `x - 0.0 = x` and `x + -0.0 = x` do hold
for every float.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from futgen_runtime.dtypes import DTYPE_PRIMS, FLOATS, INTS, PRIM_DTYPES

from futgen.core import ir
from futgen.errors import FutharkError
from futgen.interp import prims

Replacement = list[ir.Stm] | None


@dataclass
class Facts:
    """What the simplifier knows at a statement: the type of every name in
    scope, and the integers known to be non-negative (array sizes, loop
    counters)."""

    types: dict[ir.VName, ir.Type] = field(default_factory=dict)
    nonneg: set[ir.VName] = field(default_factory=set)


Rule = Callable[[ir.Stm, Facts], Replacement]

TRUE = ir.Constant(True, "bool")
FALSE = ir.Constant(False, "bool")


def _becomes(stm: ir.Stm, *ses: ir.SubExp) -> list[ir.Stm]:
    """`stm`'s names bound to `ses` instead (copies, which propagation removes)."""
    return [ir.Stm((p,), ir.SubExpOp(se)) for p, se in zip(stm.pat, ses)]


# ------------------------------------------------------------ constant folding

# Float operations that NumPy and CUDA both compute exactly or correctly
# rounded (IEEE 754 basic operations; CUDA's sqrt is correctly rounded
# unless fast math is on, which futgen never asks nvcc for).
_EXACT_FLOAT_BINOPS = frozenset({"+", "-", "*", "/", "max", "min", "copysign"})
_EXACT_FLOAT_UNOPS = frozenset({"neg", "abs", "sqrt", "floor", "ceil", "trunc", "round",
                                "isnan", "isinf", "to_bits"})


def _value(se: ir.SubExp):
    assert isinstance(se, ir.Constant)
    return prims.scalar(se.prim, se.value)


def _compute(stm: ir.Stm) -> object | None:
    """The value of a scalar operation on constants, or None where folding
    it would not be exact (see the module docstring)."""
    match stm.exp:
        case ir.BinOp(op, prim, ir.Constant() as x, ir.Constant() as y) | ir.CmpOp(
                op, prim, ir.Constant() as x, ir.Constant() as y):
            if prim in FLOATS and (prim == "f16" or (
                    isinstance(stm.exp, ir.BinOp) and op not in _EXACT_FLOAT_BINOPS)):
                return None
            if prim in FLOATS and op in ("max", "min") and x.value == y.value == 0:
                return None  # IEEE leaves the sign of max(-0.0, 0.0) open
            return _run(prims.BINOPS[op].evaluator(prim), _value(x), _value(y))
        case ir.UnOp(op, prim, ir.Constant() as x):
            if prim in FLOATS and (prim == "f16" or op not in _EXACT_FLOAT_UNOPS):
                return None
            return _run(lambda v: prims.unop(op, prim, v), _value(x))
        case ir.ConvOp(src, dst, ir.Constant() as x):
            if not _exact_conversion(src, dst, x.value):
                return None
            return _run(lambda v: prims.convert(v, dst), _value(x))
    return None


def _run(fn: Callable, *args) -> object | None:
    with np.errstate(all="ignore"):
        try:
            return fn(*args)
        except FutharkError:  # it fails: leave the failure to run time
            return None


def _exact_conversion(src: str, dst: str, value: float | bool) -> bool:
    """Whether converting `value` from `src` to `dst` is fully specified
    and the same on every backend."""
    if "f16" in (src, dst):
        return False
    if src in FLOATS and dst in INTS:
        lo, hi = _int_range(dst)
        return math.isfinite(value) and lo <= math.trunc(value) <= hi
    if src in FLOATS and dst == "bool":
        return not math.isnan(value)
    return True


def _int_range(t: str) -> tuple[int, int]:
    info = np.iinfo(PRIM_DTYPES[t])
    return int(info.min), int(info.max)


def fold_constants(stm: ir.Stm, facts: Facts) -> Replacement:
    """`op c1 c2 = c` where `c` is exactly what the runtime computes."""
    v = _compute(stm)
    if v is None or len(stm.pat) != 1:
        return None
    prim = DTYPE_PRIMS.get(np.asarray(v).dtype)
    if np.ndim(v) != 0 or stm.pat[0].type != ir.Prim(prim):
        return None
    if prim in FLOATS and math.isnan(v):
        return None
    return _becomes(stm, ir.Constant(np.asarray(v).item(), prim))


# ------------------------------------------------------------ algebraic laws

# Right units that the operator table does not list as identities.
_INT_RIGHT_UNITS = {"-": 0, "/": 1, "//": 1, "**": 1, "<<": 0, ">>": 0, ">>>": 0}


def _is(se: ir.SubExp, value: float) -> bool:
    """Whether `se` is a constant with exactly `value` (the sign of a zero included)."""
    return (isinstance(se, ir.Constant) and not isinstance(se.value, bool)
            and se.value == value and math.copysign(1, se.value) == math.copysign(1, value))


def _is_identity(op: str, prim: str, se: ir.SubExp) -> bool:
    """Whether `se` is the identity element of `op` in the operator table."""
    entry = prims.BINOPS.get(op)
    if entry is None or entry.identity is None or not isinstance(se, ir.Constant):
        return False
    return bool(_value(se) == entry.identity(prim))


def unit(stm: ir.Stm, facts: Facts) -> Replacement:
    """`x op e = x` and `e op x = x` for the identity `e` of `op`: exact for
    integers and booleans; for floats only `x * 1.0`, `x / 1.0`, `x - 0.0`
    and `x + -0.0`."""
    e = stm.exp
    if not isinstance(e, ir.BinOp):
        return None
    if e.prim in FLOATS:
        right = (e.op in ("*", "/") and _is(e.y, 1.0) or e.op == "-" and _is(e.y, 0.0)
                 or e.op == "+" and _is(e.y, -0.0))
        left = e.op == "*" and _is(e.x, 1.0) or e.op == "+" and _is(e.x, -0.0)
    else:
        right = _is_identity(e.op, e.prim, e.y) or (
            e.op in _INT_RIGHT_UNITS and _is(e.y, _INT_RIGHT_UNITS[e.op]))
        left = prims.BINOPS[e.op].commutative and _is_identity(e.op, e.prim, e.x)
    if right:
        return _becomes(stm, e.x)
    if left:
        return _becomes(stm, e.y)
    return None


def absorb(stm: ir.Stm, facts: Facts) -> Replacement:
    """`x * 0 = 0 * x = 0` and `x & 0 = 0 & x = 0` on integers (never on
    floats: NaN and infinities times zero are NaN, and `-1.0 * 0.0` is `-0.0`)."""
    e = stm.exp
    if not (isinstance(e, ir.BinOp) and e.op in ("*", "&") and e.prim in INTS):
        return None
    for se in (e.x, e.y):
        if _is(se, 0):
            return _becomes(stm, se)
    return None


def same_type_conversion(stm: ir.Stm, facts: Facts) -> Replacement:
    """`t->t x = x`."""
    e = stm.exp
    if isinstance(e, ir.ConvOp) and e.src == e.dst:
        return _becomes(stm, e.x)
    return None


def non_negative(stm: ir.Stm, facts: Facts) -> Replacement:
    """`n >= 0` is true and `n < 0` false for an array size or loop counter
    `n`, and for any unsigned `n` (with the operands swapped too)."""
    e = stm.exp
    if not isinstance(e, ir.CmpOp) or e.prim not in INTS:
        return None

    def known(se: ir.SubExp) -> bool:
        return e.prim.startswith("u") or (isinstance(se, ir.Var) and se.name in facts.nonneg)

    if _is(e.y, 0) and known(e.x):
        result = {">=": TRUE, "<": FALSE}.get(e.op)
    elif _is(e.x, 0) and known(e.y):
        result = {"<=": TRUE, ">": FALSE}.get(e.op)
    else:
        return None
    return None if result is None else _becomes(stm, result)


def stated_size(e: ir.Exp, types: dict[ir.VName, ir.Type]) -> ir.SubExp | None:
    """What `size v d` reads when `v`'s type states it (else None)."""
    if not isinstance(e, ir.ArraySize):
        return None
    t = types.get(e.arr)
    return t.shape[e.dim] if isinstance(t, ir.ArrayT) else None


def known_size(stm: ir.Stm, facts: Facts) -> Replacement:
    """`size v d = n` where `v : [..][n]..` (its d-th dimension)."""
    n = stated_size(stm.exp, facts.types)
    return None if n is None else _becomes(stm, n)


def true_assert(stm: ir.Stm, facts: Facts) -> Replacement:
    """`assert true msg = true`."""
    if isinstance(stm.exp, ir.Assert) and stm.exp.cond == TRUE:
        return _becomes(stm, TRUE)
    return None


def known_branch(stm: ir.Stm, facts: Facts) -> Replacement:
    """`if true then A else B = A` and `if false then A else B = B`: the
    branch's statements, then its results bound to the `if`'s names."""
    e = stm.exp
    if not (isinstance(e, ir.If) and isinstance(e.cond, ir.Constant)):
        return None
    taken = e.then_ if e.cond.value else e.else_
    return [*taken.stms, *_becomes(stm, *taken.result)]


RULES: tuple[Rule, ...] = (fold_constants, unit, absorb, same_type_conversion,
                           non_negative, known_size, true_assert, known_branch)


def rewrite(stm: ir.Stm, facts: Facts) -> Replacement:
    """What the first rule that applies to `stm` replaces it with (None: none applies)."""
    for rule in RULES:
        new = rule(stm, facts)
        if new is not None:
            return new
    return None
