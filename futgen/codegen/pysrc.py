"""Shared pieces of Python code generation: names, constants, scalar
expressions, free variables, and an indenting line emitter.

Host code (`futgen.codegen.host`) and vectorised NumPy code
(`futgen.codegen.numpy_kernels`) both print IR names and scalar operations;
printing them in one place keeps the two consistent, which matters because
a kernel plan's arguments name host variables by their printed VName.

Generated code refers to NumPy as `np`, the runtime's primitive operations
through the support module as `S` (`futgen/codegen/cpu_support.py`) and
`FutharkError` by name.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from futgen.codegen.plan import DTYPES
from futgen.core import ir
from futgen.flatten import names

_NOT_IDENT = re.compile(r"[^0-9A-Za-z_]")


def pyname(v: ir.VName) -> str:
    """A VName as a Python identifier: its printed form (`xs_0`) where that is
    one, odd characters spelled `_x<hex>` as in the CUDA code
    (`futgen.codegen.cuda.lower.c_name`), so a kernel plan's host expressions
    name the same variables."""
    return _NOT_IDENT.sub(lambda m: f"_x{ord(m.group()):x}", v.base) + f"_{v.tag}"


def const(value: float | bool, prim: str) -> str:
    """A typed NumPy scalar literal (`np.int32(5)`, `np.float32("inf")`)."""
    dt = DTYPES[prim]
    if prim == "bool":
        return f"np.bool_({bool(value)})"
    if isinstance(value, float) and not math.isfinite(value):
        return f'np.{dt}("{value}")'
    if prim.startswith("f"):
        return f"np.{dt}({float(value)!r})"
    return f"np.{dt}({int(value)})"


def subexp(se: ir.SubExp) -> str:
    """A variable's Python name or a constant's literal."""
    if isinstance(se, ir.Var):
        return pyname(se.name)
    return const(se.value, se.prim)


def loc_text(loc: Any) -> str:
    """A source location as a Python string literal ("" when unknown)."""
    return repr(str(loc)) if loc is not None else "''"


def scalar_exp(e: ir.Exp) -> str | None:
    """The Python expression of a scalar operation, or None for other
    expressions.  The same text works on NumPy scalars (host code) and on
    lane arrays (vectorised kernels): every primitive is elementwise."""
    match e:
        case ir.SubExpOp(se):
            return subexp(se)
        case ir.UnOp(op, prim, x):
            return f"S.unop({op!r}, {prim!r}, {subexp(x)})"
        case ir.BinOp(op, prim, x, y) | ir.CmpOp(op, prim, x, y):
            return f"S.binop({op!r}, {prim!r}, {subexp(x)}, {subexp(y)})"
        case ir.ConvOp(_, dst, x):
            return f"S.prims.convert({subexp(x)}, {dst!r})"
    return None


# ------------------------------------------------------------ free variables

def free_vars(node: Any) -> set[ir.VName]:
    """Names used in `node` but not bound inside it, ignoring the sizes in
    types: code generated for a body never needs them."""
    return names.free_vars(node, types=False)


# ------------------------------------------------------------ emitting


class Emitter:
    """Lines of Python with the current indentation, and fresh helper names."""

    def __init__(self, prefix: str = "_t") -> None:
        self.lines: list[str] = []
        self.depth = 0
        self.counter = 0
        self.prefix = prefix

    def line(self, text: str) -> None:
        self.lines.append("    " * self.depth + text)

    @contextmanager
    def block(self, header: str) -> Iterator[None]:
        """`header:` followed by an indented block (never empty)."""
        self.line(header)
        self.depth += 1
        start = len(self.lines)
        try:
            yield
        finally:
            if len(self.lines) == start:
                self.line("pass")
            self.depth -= 1

    def fresh(self, base: str) -> str:
        """A helper name no IR name can have (IR names end in `_<tag>`)."""
        self.counter += 1
        return f"{self.prefix}{base}{self.counter}"

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def tuple_text(items: list[str]) -> str:
    """A Python tuple display, `(a,)` for one element."""
    if len(items) == 1:
        return f"({items[0]},)"
    return f"({', '.join(items)})"


def emit_loop(em: Emitter, e: ir.Loop, body: Callable[[], list[str]]) -> list[str]:
    """A core `Loop` as Python: the merge parameters assigned their initial
    values, then a `for` (binding the counter as a typed scalar) or a `while`
    whose block runs `body` and reassigns the parameters; returns their names."""
    params = [pyname(p.name) for p, _ in e.merge]
    for p, (_, init) in zip(params, e.merge):
        em.line(f"{p} = {subexp(init)}")
    if isinstance(e.form, ir.ForLoop):
        i = em.fresh("i")
        header = f"for {i} in range(int({subexp(e.form.bound)})):"
    else:
        header = f"while {pyname(e.form.cond)}:"
    with em.block(header):
        if isinstance(e.form, ir.ForLoop):
            em.line(f"{pyname(e.form.i)} = S.prims.scalar({e.form.prim!r}, {i})")
        results = body()
        if params:
            em.line(f"{', '.join(params)}, = {tuple_text(results)}")
    return params
