"""Literals out of range for their inferred type (Futhark's rule).

An unsuffixed literal takes its type from inference, so its range can be
checked only once the declaration's types are known: `def x : i8 = 128` is
an error, as is `-129` (a negated integer literal is checked as the
negative number) and `1e40` as an `f32` (a float literal must not become
infinite).  Suffixed literals (`300u8`) are not checked, as in Futhark.
"""

from __future__ import annotations

import math
import re
import struct

from futgen.errors import CompileError, source_line
from futgen.frontend import syntax as S
from futgen.frontend.astwalk import walk
from futgen.frontend.types import Scalar

_INT_BITS = {"i8": 8, "i16": 16, "i32": 32, "i64": 64, "u8": 8, "u16": 16, "u32": 32, "u64": 64}
# `struct` formats that round a double to each float type (standard sizes:
# only these raise OverflowError where the result is infinite).  Futhark
# tests a float literal's range as an f32 even when it is an f16.
_FLOAT_LITERAL_FORMATS = {"f16": "<f", "f32": "<f", "f64": "<d"}
_INT_LITERAL_FORMATS = {"f16": "<e", "f32": "<f", "f64": "<d"}


def check_literals(body: S.Expr) -> None:
    """Raise a CompileError for the first literal in `body` (types
    resolved) whose value its type cannot hold."""
    negated: set[int] = set()
    for node in walk(body):
        if isinstance(node, S.UnOp) and node.op == "-" and _unsuffixed(node.expr, "int"):
            negated.add(id(node.expr))
            _check(-node.expr.value, node.expr, node)
        elif _unsuffixed(node, "int", "float") and id(node) not in negated:
            _check(node.value, node, node)


def _unsuffixed(e: S.Expr, *kinds: str) -> bool:
    return isinstance(e, S.Literal) and e.suffix is None and e.kind in kinds


def _check(value: float, lit: S.Literal, where: S.Expr) -> None:
    t = lit.ty
    if isinstance(t, Scalar) and not _in_bounds(value, lit.kind, t.name):
        raise CompileError(
            f"Literal {_shown(value, lit)} out of bounds for inferred type {t.name}.", where.loc
        )


def _in_bounds(value: float, kind: str, t: str) -> bool:
    if t in _INT_BITS:
        bits = _INT_BITS[t]
        if t.startswith("u"):
            return 0 <= value < 2**bits
        return -(2 ** (bits - 1)) <= value < 2 ** (bits - 1)
    fmt = (_INT_LITERAL_FORMATS if kind == "int" else _FLOAT_LITERAL_FORMATS).get(t)
    if fmt is None:
        return True
    try:  # the value rounds to infinity: too large even for a double, or for `fmt`
        return not math.isinf(value) and bool(struct.pack(fmt, float(value)))
    except OverflowError:
        return False


def _shown(value: float, lit: S.Literal) -> str:
    """`value` as the program wrote it where it is too large for a double."""
    line = source_line(lit.loc.file, lit.loc.line)
    if not (isinstance(value, float) and math.isinf(value)) or line is None:
        return str(value)
    m = re.match(r"[0-9][0-9a-zA-Z_.]*(?:(?<=[eEpP])[+-][0-9_]+)?", line[lit.loc.col - 1:])
    return m.group() if m else str(value)
