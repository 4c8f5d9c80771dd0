"""A checker for the GPU IR: the core IR's types plus SegOps, and the
kernel-code rules of `futgen.gpu.ir`.

`check_program(prog)` raises `IRTypeError` at the first broken rule.  Host
code is core IR and checks as such (`futgen.core.check`); a SegOp adds:

* **Its space.**  The sizes are i64s in host scope; each thread index (gtid)
  is an i64 bound in the body only.
* **Its results.**  The body returns one value per type of `ret`; the
  statement binds what the SegOp's kind makes of them (`SEGOP_RESULTS`,
  after the shape rules in `futgen.gpu.ir`): a SegMap's results get the
  space's shape, a SegRed's reduced values the outer dimensions', a
  SegHist or SegScatter returns its destinations.
* **Its operators** take and return values of their neutral elements'
  types, which the body's first results must have too.
* **Its `host` statement** (the core statement a backend without atomics or
  private memory runs instead) is checked in the SegOp's scope, its names
  apart: it is another implementation, whose names the body reuses.

`ThresholdCmp` compares an i64 parallelism and is a bool, as is
`BlockFits` of an i64 number of bytes.  A `BLOCKS` SegMap's body is block
code, whose `BLOCK` SegOps check as SegOps do.

**Kernel-code rules** (`check_kernel_rules`, which flattening always runs):
flattening promises its consumers (CUDA code generation, the runtime) that
a SegOp body calls nothing and contains no SOACs, binds only scalars except
for a SegMap's thread-private arrays of host-known shape, and that SegOps
occur only in host code; a pass that breaks the promise is caught at the
pass, not as a confusing failure in the code generator.
"""

from __future__ import annotations

from collections.abc import Callable

from futgen.core import ir
from futgen.core.check import BOOL, I64, Checker, IRTypeError, Scope, located, writes
from futgen.gpu.ir import (
    BLOCK,
    BLOCKS,
    BlockFits,
    Scratch,
    SegHist,
    SegMap,
    SegOp,
    SegRed,
    SegScan,
    SegScatter,
    ThresholdCmp,
)
from futgen.gpu.pretty import GpuPrinter

_KERNEL_OPS = (ir.SubExpOp, ir.UnOp, ir.BinOp, ir.CmpOp, ir.ConvOp, ir.Index, ir.Assert,
               ir.ArraySize, ir.If, ir.Loop)
_PRIVATE_OPS = (Scratch, ir.Replicate, ir.Update, ir.If, ir.Loop)  # may bind private arrays


class KernelRuleError(IRTypeError):
    """A SegOp body (or the placement of a SegOp) breaks the kernel-code rules."""


def check_program(prog: ir.Program) -> None:
    """Raises IRTypeError (KernelRuleError for a kernel-code rule) at the
    first statement of GPU IR program `prog` that breaks a rule."""
    check_kernel_rules(prog)
    GpuChecker(prog).program()


class GpuChecker(Checker):
    """The core checker plus SegOps, Scratch and ThresholdCmp."""

    printer = GpuPrinter()

    def exp(self, e: ir.Exp, scope: Scope) -> tuple[ir.Type, ...]:
        results = SEGOP_RESULTS.get(type(e))
        if results is not None:
            self.segop(e, scope)
            return results(self, e, scope)
        match e:
            case Scratch(prim, shape):
                self.sizes(shape, scope)
                return (ir.ArrayT(prim, shape),)
            case ThresholdCmp(_, par, _, _):
                self.scalar(par, "i64", scope, "the parallelism")
                return (BOOL,)
            case BlockFits(size):
                self.scalar(size, "i64", scope, "the shared memory")
                return (BOOL,)
        return super().exp(e, scope)

    def segop(self, e: SegOp, scope: Scope) -> None:
        """The space, the body against `ret`, and the host statement."""
        space = e.space
        if len(space.gtids) != len(space.dims) or not space.dims:
            raise IRTypeError(f"a space of {len(space.gtids)} thread indices and "
                              f"{len(space.dims)} sizes")
        self.sizes(space.dims, scope)
        self.well_formed(e.ret, scope)
        mark = len(scope)
        self.bind((ir.Param(g, I64) for g in space.gtids), scope)
        self.agree_all(e.ret, self.body(e.body, scope), "the body's results")
        scope.leave(mark)
        host = getattr(e, "host", None)
        if host is not None:
            # Its names are those of the body and of statements hoisted out
            # of it: checked apart, in a copy of the scope, after the
            # statements it reads the results of.
            bound, self.bound = self.bound, set()
            host_scope = Scope(scope)
            for before in getattr(e, "host_before", ()):
                self.stm(before, host_scope)
            self.stm(host, host_scope)
            self.bound = bound

    def operators(self, e: SegRed | SegScan, scope: Scope) -> int:
        """Checks the operators against the body's first results; how many
        results they take."""
        ts: tuple[ir.Type, ...] = ()
        for op in e.ops:
            ts += self.operator(op.lam, op.nes, scope, "the operator")
        self.agree_all(ts, e.ret[:len(ts)], "the body's values for the operators")
        return len(ts)

    def one_dimensional(self, e: SegOp) -> None:
        if len(e.space.dims) != 1:
            raise IRTypeError(f"a {type(e).__name__} over {len(e.space.dims)} dimensions")


# ------------------------------------------------ what each SegOp binds


def _segmap_results(c: GpuChecker, e: SegMap, scope: Scope) -> tuple[ir.Type, ...]:
    return tuple(ir.array_of(t, e.space.dims) for t in e.ret)


def _segred_results(c: GpuChecker, e: SegRed, scope: Scope) -> tuple[ir.Type, ...]:
    k = c.operators(e, scope)
    dims = e.space.dims
    return (*(ir.array_of(t, dims[:-1]) for t in e.ret[:k]),
            *(ir.array_of(t, dims) for t in e.ret[k:]))


def _segscan_results(c: GpuChecker, e: SegScan, scope: Scope) -> tuple[ir.Type, ...]:
    c.operators(e, scope)
    return tuple(ir.array_of(t, e.space.dims) for t in e.ret)


def _seghist_results(c: GpuChecker, e: SegHist, scope: Scope) -> tuple[ir.Type, ...]:
    c.one_dimensional(e)
    bins, values, dests = c.hist_ops(e.ops, scope)
    c.agree_all(bins + values, e.ret, "the body's bins and values")
    return dests


def _segscatter_results(c: GpuChecker, e: SegScatter, scope: Scope) -> tuple[ir.Type, ...]:
    c.one_dimensional(e)
    dests = c.dest_types(e.dests, scope)
    c.agree_all(writes(e.dests, dests), e.ret, "the body's indices and values")
    return dests


# Per kind of SegOp, the types its statement binds (after checking what is
# particular to the kind); `GpuChecker.segop` checks what all share.  A new
# kind of SegOp adds its rule here.
SEGOP_RESULTS: dict[type, Callable[[GpuChecker, SegOp, Scope], tuple[ir.Type, ...]]] = {
    SegMap: _segmap_results,
    SegRed: _segred_results,
    SegScan: _segscan_results,
    SegHist: _seghist_results,
    SegScatter: _segscatter_results,
}


# --------------------------------------------------------- kernel rules


def check_kernel_rules(prog: ir.Program) -> None:
    """Raises KernelRuleError at the first broken kernel-code rule."""
    for f in prog.functions:
        try:
            _host_body(f.body)
        except KernelRuleError as e:
            e.function = f.name
            raise


def _host_body(body: ir.Body) -> None:
    for stm in body.stms:
        with located(stm, GpuChecker.printer):
            match stm.exp:
                case SegMap(level=level) if level == BLOCKS:
                    _block_body(stm.exp.body)
                case e if type(e) in SEGOP_RESULTS:
                    _segop_rules(e, private=isinstance(e, SegMap))
                case ir.If(_, then_, else_, _):
                    _host_body(then_)
                    _host_body(else_)
                case ir.Loop(_, _, loop_body):
                    _host_body(loop_body)


def _segop_rules(e: SegOp, private: bool) -> None:
    if e.level == BLOCKS:
        raise KernelRuleError("a block per point inside a kernel")
    _kernel_body(e.body, private)
    for op in getattr(e, "ops", ()):
        if not all(isinstance(p.type, ir.Prim) for p in op.lam.params):
            raise KernelRuleError("an operator with array parameters")
        _kernel_body(op.lam.body)


def _block_body(body: ir.Body) -> None:
    """Block code: kernel code plus `BLOCK` SegOps (no private arrays in
    their threads), and arrays of host-known shape that are never updated."""
    for stm in body.stms:
        with located(stm, GpuChecker.printer):
            e = stm.exp
            match e:
                case SegMap() | SegRed() | SegScan() if e.level == BLOCK:
                    _segop_rules(e, private=False)
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
        with located(stm, GpuChecker.printer):
            _kernel_stm(stm, private)


def _kernel_stm(stm: ir.Stm, private: bool) -> None:
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


__all__ = ["SEGOP_RESULTS", "GpuChecker", "KernelRuleError", "check_kernel_rules",
           "check_program"]
