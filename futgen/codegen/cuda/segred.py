"""SegRed: two-pass reduction for one-dimensional spaces, one thread per segment otherwise.

One dimension (Futhark's non-segmented SegRed):

1. `GROUPS` logical blocks, virtualised over whatever grid the runtime
   launches, each own a contiguous chunk of `ceil(n / GROUPS)` elements.
   Threads fold their elements into an accumulator that starts at the
   neutral element (strided for commutative operators, a contiguous
   sub-chunk per thread otherwise, so the order is kept), then the block
   combines the accumulators with an ordered shared-memory tree and thread
   0 writes `partials[block]`.
2. One block folds the `GROUPS` partials the same way and writes the
   result to a one-element array, read back by the host (`("scalar", temp)`).

Empty chunks give the neutral element, so any length including 0 works.

Segmented (more than one dimension): one thread per segment reduces its
row sequentially.  This is correct for every shape but slow for few, long
segments; the performance issue replaces it with Futhark's
large/small-segment strategies.
"""

from __future__ import annotations

from collections.abc import Sequence

from futgen.codegen.cuda import imp
from futgen.codegen.cuda.common import (
    BDIM,
    BID,
    BLOCK,
    GDIM,
    GROUPS,
    TID,
    SegCompile,
    apply_op,
    decompose,
    early_exit,
    imin,
    op_types,
    pointer,
    product,
)
from futgen.codegen.cuda.imp import Bin, Expr, Lit, Stm
from futgen.codegen.cuda.lower import KernelLowering
from futgen.codegen.plan import CTYPES, KernelPlan, Temp
from futgen.core import ir
from futgen.gpu.ir import SegBinOp, SegRed, SegScan, num_red_results


def compile_segred(sc: SegCompile, op: SegRed) -> KernelPlan:
    """The plan of `let (pat) = segred ...`."""
    if len(op.space.dims) == 1:
        return _two_pass(sc, op)
    return _per_segment(sc, op)


def value_types(op: SegRed | SegScan) -> tuple[list[str], list[str]]:
    """Primitive types of the operator values and of the map-out values."""
    red = [t for o in op.ops for t in op_types(o)]
    rest = []
    for t in op.ret[num_red_results(op):]:
        assert isinstance(t, ir.Prim), t
        rest.append(t.name)
    return red, rest


def _slices(ops: Sequence[SegBinOp]) -> list[slice]:
    out, k = [], 0
    for o in ops:
        out.append(slice(k, k + len(o.nes)))
        k += len(o.nes)
    return out


def combine(low: KernelLowering, ops: Sequence[SegBinOp], accs: Sequence[str],
            xs: Sequence[Expr], escape: bool) -> list[Stm]:
    """`accs = ops(accs, xs)` for every operator in turn."""
    stms: list[Stm] = []
    for o, sl in zip(ops, _slices(ops)):
        label = low.fresh("op_failed") if escape else None
        stms += apply_op(low, o, [imp.Var(a) for a in accs[sl]], xs[sl], accs[sl], label)
    return stms


def block_tree(low: KernelLowering, ops: Sequence[SegBinOp], ctypes: Sequence[str],
               shared: Sequence[str], accs: Sequence[str]) -> list[Stm]:
    """Combines every thread's `accs` in thread order; the result is in `shared[*][0]`.

    Interleaved addressing (`tid % 2s == 0` combines `tid` and `tid + s`)
    keeps the operands in order, so non-commutative operators are fine.
    """
    s = low.fresh("stride")
    sv = imp.Var(s)
    stms: list[Stm] = [imp.Store(sh, TID, imp.Var(a)) for sh, a in zip(shared, accs)]
    stms.append(imp.Sync())
    mine = [imp.Load(sh, TID) for sh in shared]
    theirs = [imp.Load(sh, Bin("+", TID, sv)) for sh in shared]
    step: list[Stm] = [imp.Assign(a, x) for a, x in zip(accs, mine)]
    step += combine(low, ops, accs, theirs, escape=True)
    step += [imp.Store(sh, TID, imp.Var(a)) for sh, a in zip(shared, accs)]
    active = Bin("==", Bin("%", TID, Bin("*", Lit("2"), sv)), Lit("0"))
    stms.append(imp.For("int64_t", s, Lit("1"), BDIM,
                        (imp.If(active, tuple(step)), imp.Sync()), sv))
    return stms


def neutrals(low: KernelLowering, ops: Sequence[SegBinOp]) -> list[Expr]:
    return [low.subexp(ne) for o in ops for ne in o.nes]


def _two_pass(sc: SegCompile, op: SegRed) -> KernelPlan:
    red, rest = value_types(op)
    nred = len(red)
    pat = sc.stm.pat
    partials = [sc.temp("partial", t, GROUPS) for t in red]
    results = [sc.temp(f"{p.name.base}_res", t, 1) for p, t in zip(pat, red)]
    mapouts = [sc.array(f"{p.name.base}_mem", t, op.space.dims, output=True)
               for p, t in zip(pat[nred:], rest)]
    _stage1(sc, op, red, rest, partials, mapouts)
    _stage2(sc, op, red, partials, results)
    return sc.plan([("scalar", t.name) for t in results] +
                   [("array", t.name) for t in mapouts])


def _stage1(sc: SegCompile, op: SegRed, red: list[str], rest: list[str],
            partials: list[Temp], mapouts: list[Temp]) -> None:
    low = sc.lowering()
    part_ptrs = [pointer(low, t) for t in partials]
    out_ptrs = [pointer(low, t) for t in mapouts]
    ctypes = [CTYPES[t] for t in red]
    n = low.subexp(op.space.dims[0])
    names = {k: low.fresh(k) for k in ("per", "vg", "lo", "hi", "i")}
    per, vg, lo, hi, i = (imp.Var(names[k]) for k in ("per", "vg", "lo", "hi", "i"))
    shared = [low.fresh("shared") for _ in red]
    accs = [low.fresh("acc") for _ in red]
    xs = [low.fresh("x") for _ in red]
    ys = [low.fresh("y") for _ in rest]
    nes = neutrals(low, op.ops)
    elem: list[Stm] = decompose(low, i, op.space.gtids, [n])
    elem += [imp.Decl(c, x, ne) for c, x, ne in zip(ctypes, xs, nes)]
    elem += [imp.Decl(CTYPES[t], y) for t, y in zip(rest, ys)]
    elem += low.region((), op.body, [*xs, *ys], low.fresh("body_failed"))
    elem += [imp.Store(o, i, imp.Var(y)) for o, y in zip(out_ptrs, ys)]
    elem += combine(low, op.ops, accs, [imp.Var(x) for x in xs], escape=True)
    if all(o.commutative for o in op.ops):
        loop = imp.For("int64_t", names["i"], Bin("+", lo, TID), hi, tuple(elem), BDIM)
        chunk: list[Stm] = [loop]
    else:
        tper, tlo = low.fresh("tper"), low.fresh("tlo")
        chunk = [imp.Decl("int64_t", tper, Bin("/", Bin("+", per, Bin("-", BDIM, Lit("1"))),
                                                 BDIM)),
                 imp.Decl("int64_t", tlo, Bin("+", lo, Bin("*", TID, imp.Var(tper)))),
                 imp.For("int64_t", names["i"], imp.Var(tlo),
                         imin(Bin("+", imp.Var(tlo), imp.Var(tper)), hi), tuple(elem))]
    group: list[Stm] = [
        imp.Decl("int64_t", names["lo"], Bin("*", vg, per)),
        imp.Decl("int64_t", names["hi"], imin(Bin("+", lo, per), n)),
        *[imp.Decl(c, a, ne) for c, a, ne in zip(ctypes, accs, nes)],
        *chunk,
        *block_tree(low, op.ops, ctypes, shared, accs),
        imp.If(Bin("==", TID, Lit("0")),
               tuple(imp.Store(p, vg, imp.Load(sh, Lit("0")))
                     for p, sh in zip(part_ptrs, shared))),
        imp.Sync(),
    ]
    body: list[Stm] = [
        early_exit(barriers=True),
        *[imp.Shared(c, sh, BLOCK) for c, sh in zip(ctypes, shared)],
        imp.Decl("int64_t", names["per"],
                 Bin("/", Bin("+", n, Lit(f"(int64_t){GROUPS - 1}")), Lit(f"(int64_t){GROUPS}"))),
        imp.For("int64_t", names["vg"], BID, Lit(f"(int64_t){GROUPS}"), tuple(group), GDIM),
    ]
    sc.kernel("segred_stage1", low, body, str(GROUPS * BLOCK))


def _stage2(sc: SegCompile, op: SegRed, red: list[str], partials: list[Temp],
            results: list[Temp]) -> None:
    """One block folds the partials: a contiguous run per thread, then the tree."""
    low = sc.lowering()
    part_ptrs = [pointer(low, t) for t in partials]
    res_ptrs = [pointer(low, t) for t in results]
    ctypes = [CTYPES[t] for t in red]
    shared = [low.fresh("shared") for _ in red]
    accs = [low.fresh("acc") for _ in red]
    j = low.fresh("j")
    run = GROUPS // BLOCK
    lo = Bin("*", TID, Lit(str(run)))
    fold = combine(low, op.ops, accs, [imp.Load(p, imp.Var(j)) for p in part_ptrs],
                   escape=True)
    body: list[Stm] = [
        early_exit(barriers=True),
        *[imp.Shared(c, sh, BLOCK) for c, sh in zip(ctypes, shared)],
        *[imp.Decl(c, a, ne) for c, a, ne in zip(ctypes, accs, neutrals(low, op.ops))],
        imp.For("int64_t", j, lo, Bin("+", lo, Lit(str(run))), tuple(fold)),
        *block_tree(low, op.ops, ctypes, shared, accs),
        imp.If(Bin("==", TID, Lit("0")),
               tuple(imp.Store(r, Lit("0"), imp.Load(sh, Lit("0")))
                     for r, sh in zip(res_ptrs, shared))),
    ]
    sc.kernel("segred_stage2", low, body, str(BLOCK))


def _per_segment(sc: SegCompile, op: SegRed) -> KernelPlan:
    """One thread per segment (all but the innermost dimension), sequential inside."""
    red, rest = value_types(op)
    nred = len(red)
    pat = sc.stm.pat
    results = [sc.array(f"{p.name.base}_mem", t, op.space.dims[:-1], output=True)
               for p, t in zip(pat, red)]
    mapouts = [sc.array(f"{p.name.base}_mem", t, op.space.dims, output=True)
               for p, t in zip(pat[nred:], rest)]
    per_segment_kernel(sc, op, red, rest, results, mapouts, scan=False)
    return sc.plan([("array", t.name) for t in results] + [("array", t.name) for t in mapouts])


def per_segment_kernel(sc: SegCompile, op: SegRed | SegScan, red: list[str], rest: list[str],
                       outs: list[Temp], mapouts: list[Temp], *, scan: bool) -> None:
    """The simple segmented strategy: one thread per segment (all but the innermost
    dimension), folding the segment sequentially.  A scan stores every running
    value into `outs` (shaped like the space); a reduction stores the final value
    per segment.  The performance issue replaces this for few, long segments."""
    low = sc.lowering()
    out_ptrs = [pointer(low, t) for t in outs]
    map_ptrs = [pointer(low, t) for t in mapouts]
    ctypes = [CTYPES[t] for t in red]
    dims = [low.subexp(d) for d in op.space.dims]
    seg, inner, total = low.fresh("segment"), low.fresh("inner"), low.fresh("segments")
    flat = Bin("+", Bin("*", imp.Var(seg), dims[-1]), imp.Var(inner))
    accs = [low.fresh("acc") for _ in red]
    xs = [low.fresh("x") for _ in red]
    ys = [low.fresh("y") for _ in rest]
    elem: list[Stm] = decompose(low, flat, op.space.gtids, dims)
    elem += [imp.Decl(c, x) for c, x in zip(ctypes, xs)]
    elem += [imp.Decl(CTYPES[t], y) for t, y in zip(rest, ys)]
    elem += low.region((), op.body, [*xs, *ys], None)
    elem += [imp.Store(o, flat, imp.Var(y)) for o, y in zip(map_ptrs, ys)]
    elem += combine(low, op.ops, accs, [imp.Var(x) for x in xs], escape=False)
    if scan:
        elem += [imp.Store(o, flat, imp.Var(a)) for o, a in zip(out_ptrs, accs)]
    per_seg: list[Stm] = [
        *[imp.Decl(c, a, ne) for c, a, ne in zip(ctypes, accs, neutrals(low, op.ops))],
        imp.For("int64_t", inner, Lit("(int64_t)0"), dims[-1], tuple(elem)),
    ]
    if not scan:
        per_seg += [imp.Store(r, imp.Var(seg), imp.Var(a)) for r, a in zip(out_ptrs, accs)]
    body: list[Stm] = [
        early_exit(barriers=False),
        imp.Comment("One thread per segment, sequential inside (the simple strategy)."),
        imp.Decl("int64_t", total, product(dims[:-1])),
        imp.For("int64_t", seg, Bin("+", Bin("*", BID, BDIM), TID), imp.Var(total),
                tuple(per_seg), Bin("*", GDIM, BDIM)),
    ]
    name = "segscan_segments" if scan else "segred_segments"
    sc.kernel(name, low, body, sc.host_product(op.space.dims[:-1]))
