"""Checks that a GPU IR program keeps the kernel-code rules of `futgen.gpu.ir`.

Flattening promises its consumers (CUDA code generation, the runtime) that a
SegOp body calls nothing and contains no SOACs, binds only scalars except
for a SegMap's thread-private arrays of host-known shape, and that SegOps
occur only in host code.  `check_program` states that promise
as code, so tests (and later `--check-ir`) catch a pass that breaks it at
the pass, not as a confusing failure in the code generator.
"""

from __future__ import annotations

from futgen.core import ir
from futgen.gpu.ir import (
    BLOCK,
    BLOCKS,
    Scratch,
    SegHist,
    SegMap,
    SegOp,
    SegRed,
    SegScan,
    SegScatter,
)

_KERNEL_OPS = (ir.SubExpOp, ir.UnOp, ir.BinOp, ir.CmpOp, ir.ConvOp, ir.Index, ir.Assert,
               ir.ArraySize, ir.If, ir.Loop)
_PRIVATE_OPS = (Scratch, ir.Replicate, ir.Update, ir.If, ir.Loop)  # may bind private arrays


class KernelRuleError(Exception):
    """A SegOp body (or the placement of a SegOp) breaks the kernel-code rules."""


def check_program(prog: ir.Program) -> None:
    """Raises KernelRuleError at the first broken rule, naming the function."""
    for f in prog.functions:
        try:
            _host_body(f.body)
        except KernelRuleError as e:
            raise KernelRuleError(f"in {f.name}: {e}") from None


def _host_body(body: ir.Body) -> None:
    for stm in body.stms:
        match stm.exp:
            case SegMap(level=level) if level == BLOCKS:
                _block_body(stm.exp.body)
            case SegMap() | SegRed() | SegScan() | SegHist() | SegScatter():
                _segop(stm.exp, private=isinstance(stm.exp, SegMap))
            case ir.If(_, then_, else_, _):
                _host_body(then_)
                _host_body(else_)
            case ir.Loop(_, _, loop_body):
                _host_body(loop_body)


def _segop(op: SegOp, private: bool) -> None:
    if op.level == BLOCKS:
        raise KernelRuleError("a block per point inside a kernel")
    _kernel_body(op.body, private)
    for o in getattr(op, "ops", ()):
        if not all(isinstance(p.type, ir.Prim) for p in o.lam.params):
            raise KernelRuleError("an operator with array parameters")
        _kernel_body(o.lam.body)


def _block_body(body: ir.Body) -> None:
    """Block code: kernel code plus `BLOCK` SegOps (no private arrays in
    their threads), and arrays of host-known shape that are never updated."""
    for stm in body.stms:
        e = stm.exp
        match e:
            case SegMap() | SegRed() | SegScan() if e.level == BLOCK:
                _segop(e, private=False)
            case ir.If(_, then_, else_, _):
                _block_body(then_)
                _block_body(else_)
            case ir.Loop(merge, _, loop_body):
                for p, _ in merge:
                    _check_binding(p, True)
                _block_body(loop_body)
            case ir.Replicate():
                pass
            case _ if not isinstance(e, _KERNEL_OPS):
                raise KernelRuleError(f"{type(e).__name__} in block code")
        for p in stm.pat:
            _check_binding(p, True)


def _kernel_body(body: ir.Body, private: bool = False) -> None:
    for stm in body.stms:
        e = stm.exp
        if not isinstance(e, _KERNEL_OPS + (_PRIVATE_OPS if private else ())):
            raise KernelRuleError(f"{type(e).__name__} in kernel code")
        for p in stm.pat:
            _check_binding(p, private and isinstance(e, _PRIVATE_OPS))
        match e:
            case ir.Index(_, sl, _) | ir.Update(_, sl, _, _) if not all(
                    isinstance(d, ir.DimFix) for d in sl):
                raise KernelRuleError("a slice in kernel code")
            case ir.If(_, then_, else_, _):
                _kernel_body(then_, private)
                _kernel_body(else_, private)
            case ir.Loop(merge, _, loop_body):
                for p, _ in merge:
                    _check_binding(p, private)
                _kernel_body(loop_body, private)


def _check_binding(p: ir.Param, private: bool) -> None:
    """A scalar, or (where allowed) a private array whose shape the host knows."""
    if isinstance(p.type, ir.Prim):
        return
    if not private:
        raise KernelRuleError(f"kernel code binds the array {p.name}")
    if any(d is None for d in p.type.shape):
        raise KernelRuleError(f"the private array {p.name} has a size known only in the kernel")
