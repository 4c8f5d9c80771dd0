"""Grid SegMaps computed inside the intra-block kernels that read them (the
`fuse-producers` pass).

LocVolCalib's explicit y step is a GRID SegMap over (outer, y, x) whose
result `A` its x solve, an intra-block kernel with a block per (outer, y)
row, reads at its own point, `A[o, y, x]` in a BLOCK SegMap over x; a later
kernel reads `A` again.  Made apart, `A` costs a launch, a write and a read
of the whole array more than its values do.  So where a BLOCKS SegMap's one
use of `A` is a read `A[gtids..., ltid]` in the body of a BLOCK SegMap
over the last dimension (the BLOCKS space being the others), the read
becomes the producer's body at that point, and, where later code reads `A`
too, the BLOCK SegMap also returns the value, which the kernel writes out
as a further result: the producer goes.  Every point of `A` is then still
computed exactly once (measured on an H200, `--fast-division`: LocVolCalib
large 39.2 -> 37.0 ms, medium 4.97 -> 4.22; BENCHMARKS.md).

Flattening puts the intra-block kernel in one branch of a version tree, so
the producer moves into the branches of a later `if` (a copy in each, so
that it still runs, and can still fail, on every path), each returning `A`
where later code reads it; where no branch fuses it, nothing moves.

The CPU backend runs a BLOCKS SegMap as the core map it came from
(`SegMap.host`), which still reads `A`: the fused SegMap keeps the
producer in `host_before`, run before that map.

Nothing moves where `A`, or an array the producer reads, may be consumed,
nor where the producer reads across its threads (`transposed_reads`): made
apart, its kernel stages those reads in shared-memory tiles, which the
rows of an intra-block kernel do not have.
"""

from __future__ import annotations

from dataclasses import replace

from futgen.core import ir
from futgen.flatten.names import NameSource, free_vars, substitute, use_counts
from futgen.gpu.ir import BLOCK, BLOCKS, GRID, SegMap
from futgen.gpu.transposed_reads import transposed_reads
from futgen.opt.effects import consumed_on_host
from futgen.opt.parts import host_stms, map_bodies


def fuse_producers(prog: ir.Program) -> ir.Program:
    """`prog` (GPU IR) with the GRID SegMaps that intra-block kernels read
    at their own points computed by those kernels."""
    names = NameSource(prog)
    return ir.Program(tuple(_function(f, names) for f in prog.functions))


def _function(fun: ir.Function, names: NameSource) -> ir.Function:
    copies = {s.pat[0].name: s.exp.se for s in host_stms(fun.body)
              if isinstance(s.exp, ir.SubExpOp) and len(s.pat) == 1}
    return replace(fun, body=_Fuser(names, consumed_on_host(fun), copies).body(fun.body))


class _Fuser:
    def __init__(self, names: NameSource, consumed: set[ir.VName],
                 copies: dict[ir.VName, ir.SubExp]):
        self.names = names
        self.consumed = consumed
        self.copies = copies  # host `let n = m`: sizes compare through them

    def body(self, body: ir.Body) -> ir.Body:
        stms, result = list(body.stms), body.result
        k = 0
        while k < len(stms):
            if self.producer(stms[k]) and (moved := self.sink(stms, k, result)) is not None:
                stms, result = moved
                continue
            if isinstance(stms[k].exp, ir.If | ir.Loop):
                stms[k] = replace(stms[k], exp=map_bodies(stms[k].exp, self.body))
            k += 1
        return ir.Body(tuple(stms), result)

    def producer(self, stm: ir.Stm) -> bool:
        """A GRID SegMap of one scalar result over two or more dimensions,
        none of whose arrays anything consumes, reading none across its
        threads."""
        e = stm.exp
        return (isinstance(e, SegMap) and e.level == GRID and e.host is None
                and not e.host_before and len(stm.pat) == 1 and len(e.space.dims) >= 2
                and isinstance(e.ret[0], ir.Prim)
                and not (free_vars(e) | {stm.pat[0].name}) & self.consumed
                and not transposed_reads(e))

    def sink(self, stms: list[ir.Stm], k: int, result: tuple[ir.SubExp, ...]
             ) -> tuple[list[ir.Stm], tuple[ir.SubExp, ...]] | None:
        """`stms` (and `result`) with the producer at `k` fused into the
        first statement that uses its result (or into branches of it), or
        None.  Copies of the result on the way (`let b = a`) become uses of it."""
        a = stms[k].pat[0].name
        stms = list(stms)
        while True:
            j = next((j for j in range(k + 1, len(stms)) if use_counts(stms[j])[a] > 0), None)
            if j is None:
                return None
            match stms[j]:
                case ir.Stm((ir.Param(b),), ir.SubExpOp(ir.Var(name))) if name == a:
                    rest = substitute(ir.Body(tuple(stms[j + 1:]), result), {b: a})
                    stms[j:], result = list(rest.stms), rest.result
                    continue
            break
        target = stms[j].exp
        if not (isinstance(target, ir.If) or isinstance(target, SegMap) and target.level == BLOCKS):
            return None  # only a version tree or an intra-block kernel takes it in
        keep = any(use_counts(s)[a] for s in stms[j + 1:]) or use_counts(result)[a] > 0
        fused = self.into(stms[k], stms[j], keep)
        if fused is None:
            return None
        return [*stms[:k], *stms[k + 1:j], fused, *stms[j + 1:]], result

    def into(self, prod: ir.Stm, stm: ir.Stm, keep: bool) -> ir.Stm | None:
        """`stm` computing `prod`'s result itself (binding it too where
        `keep`), or None where it cannot."""
        match stm.exp:
            case SegMap(level=level) if level == BLOCKS:
                return self.fuse(prod, stm, keep)
            case ir.If(cond, then_, else_, ret) if use_counts(cond)[prod.pat[0].name] == 0:
                branches = [self.branch(prod, b, keep) for b in (then_, else_)]
                if not any(fused for _, fused in branches):
                    return None
                [p] = prod.pat
                (t, _), (e, _) = branches
                return ir.Stm((*stm.pat, p) if keep else stm.pat,
                              ir.If(cond, t, e, (*ret, p.type) if keep else ret))
        return None

    def branch(self, prod: ir.Stm, body: ir.Body, keep: bool) -> tuple[ir.Body, bool]:
        """A branch with a copy of `prod` in front, fused where it can be
        (returning its result where `keep`), and whether it fused."""
        [p] = prod.pat
        copy = ir.Stm((ir.Param(self.names.fresh(p.name.base), p.type),),
                      self.names.renamed(prod.exp))
        a = copy.pat[0].name
        inner = substitute(body, {p.name: a})
        stms = [copy, *inner.stms]
        result = (*inner.result, ir.Var(a)) if keep else inner.result
        moved = self.sink(stms, 0, result)
        if moved is None:
            return ir.Body(tuple(stms), result), False
        return ir.Body(tuple(moved[0]), moved[1]), True

    def fuse(self, prod: ir.Stm, stm: ir.Stm, keep: bool) -> ir.Stm | None:
        """The BLOCKS SegMap `stm` with its read of `prod`'s result at its
        own point replaced by `prod`'s body there (see the module docstring)."""
        e, src = stm.exp, prod.exp
        a = prod.pat[0].name
        assert isinstance(e, SegMap) and isinstance(src, SegMap)
        outer, last = src.space.dims[:-1], src.space.dims[-1]
        if list(map(self.size, e.space.dims)) != list(map(self.size, outer)):
            return None
        if use_counts(e.body)[a] != 1:
            return None
        for i, s in enumerate(e.body.stms):
            op = s.exp
            if (isinstance(op, SegMap) and op.level == BLOCK and len(op.space.dims) == 1
                    and self.size(op.space.dims[0]) == self.size(last)
                    and use_counts(op)[a] == 1):
                new = self.inline(prod, s, e.space.gtids, keep)
                if new is None:
                    return None
                stms = list(e.body.stms)
                stms[i] = new
                body = ir.Body(tuple(stms), e.body.result)
                # The CPU backend's map (`host`) still reads `prod`'s result.
                before = e.host_before if e.host is None else (*e.host_before, prod)
                fused = replace(e, body=body, host_before=before)
                if not keep:
                    return replace(stm, exp=fused)
                [p] = prod.pat
                row = new.pat[-1]
                fused = replace(fused, ret=(*e.ret, row.type),
                                body=ir.Body(body.stms, (*body.result, ir.Var(row.name))))
                return ir.Stm((*stm.pat, p), fused)
        return None

    def inline(self, prod: ir.Stm, stm: ir.Stm, gtids: tuple[ir.VName, ...],
               keep: bool) -> ir.Stm | None:
        """The BLOCK SegMap `stm` computing `prod`'s value where it read it
        (at the top of its body, at its own point), and returning it too
        where `keep`."""
        op = stm.exp
        assert isinstance(op, SegMap)
        a = prod.pat[0].name
        point = (*gtids, *op.space.gtids)
        for i, s in enumerate(op.body.stms):
            if not (isinstance(s.exp, ir.Index) and s.exp.arr == a):
                continue
            if tuple(s.exp.slice) != tuple(ir.DimFix(ir.Var(g)) for g in point):
                return None
            src = self.names.renamed(prod.exp)
            at = dict(zip(src.space.gtids, point))
            value = substitute(src.body, at)
            [res] = value.result
            [x] = s.pat
            stms = [*op.body.stms[:i], *value.stms, ir.Stm((x,), ir.SubExpOp(res)),
                    *op.body.stms[i + 1:]]
            body = ir.Body(tuple(stms), op.body.result)
            if not keep:
                return replace(stm, exp=replace(op, body=body))
            t = src.ret[0]
            row = ir.Param(self.names.fresh(f"{a.base}_row"),
                           ir.ArrayT(t.name, op.space.dims))  # type: ignore[union-attr]
            return ir.Stm((*stm.pat, row), replace(
                op, ret=(*op.ret, t), body=ir.Body(body.stms, (*body.result, ir.Var(x.name)))))
        return None  # read deeper down (in a branch or loop): left as it is

    def size(self, se: ir.SubExp) -> ir.SubExp:
        while isinstance(se, ir.Var) and se.name in self.copies:
            se = self.copies[se.name]
        return se
