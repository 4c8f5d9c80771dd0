"""Reads of host `iota` and `replicate` arrays in kernel code are computed.

`map f (iota n)` flattens to a SegMap whose threads read element `gtid` of
an iota the host made: a launch and `8n` bytes written, then read again by
a kernel that could have computed each value from its thread index.  For
`a = iota n start stride` bound in host code and never consumed, this pass
turns a read `let x = a[i]` in kernel or block code into
`let x = start + i * stride` wherever `i` is known to lie in `[0, n)`: a
thread index of a dimension `n` (of the SegOp's space, or of a BLOCK SegOp
of block code), the counter of a `for` loop of `n` iterations, or a copy of
one (as `map g is` reads `is[gtid]`, a copy once computed).

Likewise a read `a[i, j, ...]` of `a = replicate (n, ...) v`, its leading
indices known in range, becomes `v` (a scalar) or a read of the rest of the
indices from `v` (an array, which may be a replicate or iota again):
LocVolCalib's `replicate numX (replicate numY 0.0)` coefficients then cost
no loads, and no tiles where the kernel read them across its threads.

Other reads stay reads, with their bounds checks.  An array that no kernel
reads any more is dead; `simplify-host`, which runs next, removes it.
Futhark's kernel simplifier does the same.
"""

from __future__ import annotations

from dataclasses import replace

from futgen.core import ir
from futgen.flatten.names import NameSource, i64_op
from futgen.gpu.ir import SegHist, SegMap, SegRed, SegScan, SegScatter
from futgen.opt.effects import consumed_on_host
from futgen.opt.parts import host_stms, map_bodies, map_code_bodies

SegOp = SegMap | SegRed | SegScan | SegHist | SegScatter


def computed_reads(prog: ir.Program) -> ir.Program:
    """`prog` (GPU IR) with its kernels' in-range reads of host iotas and
    replicates computed."""
    names = NameSource(prog)
    return ir.Program(tuple(_function(f, names) for f in prog.functions))


def _function(fun: ir.Function, names: NameSource) -> ir.Function:
    consumed = consumed_on_host(fun)
    # A replicate of an array whose value something consumes keeps its copy:
    # its kernels may run after the update.
    made = {s.pat[0].name: s.exp for s in host_stms(fun.body)
            if isinstance(s.exp, ir.Iota | ir.Replicate) and s.pat[0].name not in consumed
            and not (isinstance(s.exp, ir.Replicate) and isinstance(s.exp.value, ir.Var)
                     and s.exp.value.name in consumed)}
    if not made:
        return fun
    return replace(fun, body=_Rewriter(made, names).host(fun.body))


class _Rewriter:
    def __init__(self, made: dict[ir.VName, ir.Iota | ir.Replicate], names: NameSource):
        self.made = made
        self.names = names
        self.ranges: dict[ir.VName, ir.SubExp] = {}  # index -> its exclusive bound

    def host(self, body: ir.Body) -> ir.Body:
        stms = []
        for stm in body.stms:
            if isinstance(stm.exp, SegOp):
                stm = replace(stm, exp=self.segop(stm.exp))
            elif isinstance(stm.exp, ir.If | ir.Loop):
                stm = replace(stm, exp=map_bodies(stm.exp, self.host))
            stms.append(stm)
        return ir.Body(tuple(stms), body.result)

    def segop(self, e: SegOp) -> SegOp:
        self.ranges.update(zip(e.space.gtids, e.space.dims))
        return replace(e, body=self.code(e.body))

    def code(self, body: ir.Body) -> ir.Body:
        """Kernel or block code `body`, its in-range iota and replicate reads computed."""
        stms: list[ir.Stm] = []
        pending = list(body.stms)
        while pending:
            stm = pending.pop(0)
            e = stm.exp
            computed = self.computed(e, stm.pat[0])
            if computed is not None:
                # A read of a replicate's value may read another: look again.
                pending[:0] = computed
                continue
            if isinstance(e, ir.SubExpOp) and isinstance(e.se, ir.Var) \
                    and e.se.name in self.ranges:  # a copy of an index: its range too
                self.ranges[stm.pat[0].name] = self.ranges[e.se.name]
            elif isinstance(e, SegMap | SegRed | SegScan):  # a BLOCK SegOp of block code
                self.ranges.update(zip(e.space.gtids, e.space.dims))
            elif isinstance(e, ir.Loop) and isinstance(e.form, ir.ForLoop) \
                    and e.form.prim == "i64":
                self.ranges[e.form.i] = e.form.bound
            stms.append(replace(stm, exp=map_code_bodies(e, self.code)))
        return ir.Body(tuple(stms), body.result)

    def computed(self, e: ir.Exp, x: ir.Param) -> list[ir.Stm] | None:
        """What binds `x` to the iota or replicate element `e` reads without
        reading it, if `e` reads one at indices known in range."""
        if not (isinstance(e, ir.Index) and e.arr in self.made
                and all(isinstance(d, ir.DimFix) for d in e.slice)):
            return None
        made = self.made[e.arr]
        if isinstance(made, ir.Iota):
            if len(e.slice) == 1 and self.in_range(e.slice[0].i, made.n):  # type: ignore[union-attr]
                return self.value(x, e.slice[0].i, made)  # type: ignore[union-attr]
            return None
        rank = len(made.shape)
        indices = [d.i for d in e.slice]  # type: ignore[union-attr]
        if len(indices) < rank or not all(map(self.in_range, indices, made.shape)):
            return None
        if isinstance(x.type, ir.ArrayT):
            return None  # a row of the replicate's value: the read (a slice) stays
        if len(indices) == rank:
            return [ir.Stm((x,), ir.SubExpOp(made.value))]
        rest = tuple(ir.DimFix(i) for i in indices[rank:])
        return [ir.Stm((x,), ir.Index(made.value.name, rest, e.loc))]  # type: ignore[union-attr]

    def in_range(self, i: ir.SubExp, n: ir.SubExp) -> bool:
        """Whether index `i` is known to lie in [0, n)."""
        if isinstance(i, ir.Constant) and isinstance(n, ir.Constant):
            return 0 <= i.value < n.value
        return isinstance(i, ir.Var) and self.ranges.get(i.name) == n

    def value(self, x: ir.Param, i: ir.Var, iota: ir.Iota) -> list[ir.Stm]:
        """`x = start + i * stride`, without the operations that do nothing
        (`x = i`, where x is then known below n too)."""
        stms: list[ir.Stm] = []
        v: ir.SubExp = i
        if iota.start == ir.Constant(0, "i64") and iota.stride == ir.Constant(1, "i64"):
            self.ranges[x.name] = iota.n
        if iota.stride != ir.Constant(1, "i64"):
            v = i64_op(stms, self.names, "*", v, iota.stride, "iota_scaled")
        if iota.start != ir.Constant(0, "i64"):
            v = i64_op(stms, self.names, "+", v, iota.start, "iota_shifted")
        return [*stms, ir.Stm((x,), ir.SubExpOp(v))]
