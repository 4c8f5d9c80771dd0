"""SegRed: the reduction strategies, as CUDA skeletons (templates/cuda/).

One dimension (Futhark's non-segmented SegRed): `reduce.cu.j2`, one pass
with a last-block finish, over a grid of one wave of the device.

Segmented (the innermost dimension is the segment, the others count the
segments), four strategies chosen at run time from the segment size `m`
by three thresholds the tuner can set (`segred_block_<k>`,
`segred_warp_<k>`, `segred_subwarp_<k>`):

* `m >= segred_block`: blocks per segment (`segred_block.cu.j2`), several
  per segment when the segments are too few to fill the device;
* else `m >= segred_warp`: a warp per segment (`segred_warp.cu.j2`);
* else `m >= segred_subwarp`: eight lanes per segment, four segments per
  warp (the same template with a logical warp of 8);
* else a thread per segment, sequential inside (`per_segment_kernel`),
  which also serves segmented scans.

Map-out values are written by whichever strategy runs.
"""

from __future__ import annotations

from collections.abc import Sequence

from futgen.codegen.cuda import imp, render
from futgen.codegen.cuda.common import (
    BDIM,
    BID,
    BLOCK,
    GDIM,
    TID,
    SegCompile,
    apply_op,
    decompose,
    early_exit,
    grid_stride,
    op_types,
    pointer,
)
from futgen.codegen.cuda.imp import Bin, Expr, Lit, Stm
from futgen.codegen.cuda.lower import KernelLowering
from futgen.codegen.cuda.private import product
from futgen.codegen.cuda.skeleton import (
    ITEMS,
    kernel_params,
    operator_slots,
    render_skeleton,
)
from futgen.codegen.plan import CTYPES, KernelPlan, Temp
from futgen.core import ir
from futgen.gpu.ir import SegBinOp, SegRed, SegScan, num_red_results


def compile_segred(sc: SegCompile, op: SegRed) -> KernelPlan:
    """The plan of `let (pat) = segred ...`."""
    if len(op.space.dims) == 1:
        return _one_pass(sc, op)
    return _segmented(sc, op)


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


# Defaults of the strategy thresholds on the segment size (elements).
BLOCK_PER_SEGMENT = 8192
WARP_PER_SEGMENT = 128
SUBWARP_PER_SEGMENT = 16
SUBWARP_LANES = 8


def _one_pass(sc: SegCompile, op: SegRed) -> KernelPlan:
    red, rest = value_types(op)
    pat = sc.stm.pat
    low = sc.lowering()
    n = sc.host_dim(op.space.dims[0])
    grid = f"min(max(1, -(-({n}) // {BLOCK * ITEMS})), b.max_grid({BLOCK}) // 8)"
    partials = [sc.temp("partial", t, grid) for t in red]
    counter = sc.temp("done", "u32", 1, zeroed=True)
    results = [sc.temp(f"{p.name.base}_res", t, 1) for p, t in zip(pat, red)]
    mapouts = [sc.array(f"{p.name.base}_mem", t, op.space.dims, output=True)
               for p, t in zip(pat[len(red):], rest)]
    slots = operator_slots(sc, low, op, red, mapouts, depth=4, vectors=True)
    name = sc.fresh("reduce")
    source = render_skeleton(
        "reduce", name=name, **slots, n=render.expr(low.subexp(op.space.dims[0])),
        partials=[pointer(low, t) for t in partials], counter=pointer(low, counter),
        results=[pointer(low, t) for t in results], params=kernel_params(low))
    sc.add_kernel(name, source, low, f"({grid}) * {BLOCK}")
    return sc.plan([("scalar", t.name) for t in results] +
                   [("array", t.name) for t in mapouts])


def _segmented(sc: SegCompile, op: SegRed) -> KernelPlan:
    """Three strategies, one launched per call, chosen by the segment size."""
    red, rest = value_types(op)
    pat = sc.stm.pat
    results = [sc.array(f"{p.name.base}_mem", t, op.space.dims[:-1], output=True)
               for p, t in zip(pat, red)]
    mapouts = [sc.array(f"{p.name.base}_mem", t, op.space.dims, output=True)
               for p, t in zip(pat[len(red):], rest)]
    segments, m = sc.host_product(op.space.dims[:-1]), sc.host_dim(op.space.dims[-1])
    by_blocks = sc.threshold("segred_block", BLOCK_PER_SEGMENT,
                             "segment size from which blocks reduce each segment", par=m)
    by_warps = sc.threshold("segred_warp", WARP_PER_SEGMENT,
                            "segment size from which a warp reduces each segment", par=m,
                            under=((by_blocks, False),))
    by_lanes = sc.threshold("segred_subwarp", SUBWARP_PER_SEGMENT,
                            f"segment size from which {SUBWARP_LANES} lanes reduce each segment",
                            par=m, under=((by_blocks, False), (by_warps, False)))
    _blocks_per_segment(sc, op, red, results, mapouts, segments, m, by_blocks)
    _warp_per_segment(sc, op, red, results, mapouts, segments, 32, by_warps)
    _warp_per_segment(sc, op, red, results, mapouts, segments, SUBWARP_LANES, by_lanes)
    per_segment_kernel(sc, op, red, rest, results, mapouts, scan=False,
                       when=f"not ({by_blocks}) and not ({by_warps}) and not ({by_lanes})")
    return sc.plan([("array", t.name) for t in results] + [("array", t.name) for t in mapouts])


def _blocks_per_segment(sc: SegCompile, op: SegRed, red: list[str], results: list[Temp],
                        mapouts: list[Temp], segments: str, m: str, when: str) -> None:
    low = sc.lowering()
    wave = f"(b.max_grid({BLOCK}) // 8)"
    tiles = f"max(1, -(-({m}) // {BLOCK * ITEMS}))"
    chunks = sc.fresh("chunks")
    # Enough chunks per segment to fill one wave, never more than its tiles.
    chunks_host = f"min({tiles}, max(1, {wave} // max(1, {segments})))"
    partials = [sc.temp("partial", t, f"({segments}) * ({chunks_host})", when=when)
                for t in red]
    counters = sc.temp("done", "u32", f"max(1, {segments})", zeroed=True, when=when)
    slots = operator_slots(sc, low, op, red, mapouts, depth=5, vectors=True)
    name = sc.fresh("segred_block")
    dims = [render.expr(low.subexp(d)) for d in op.space.dims]
    chunks_param = low.add_param(chunks, "int64_t", False, chunks_host)
    m_name = dims[-1] if isinstance(op.space.dims[-1], ir.Var) else ""
    source = render_skeleton(
        "segred_block", name=name, **slots, segments=" * ".join(dims[:-1]), m=dims[-1],
        m_name=m_name,
        chunks=chunks_param, partials=[pointer(low, t) for t in partials],
        counters=pointer(low, counters), results=[pointer(low, t) for t in results],
        params=kernel_params(low))
    sc.add_kernel(name, source, low,
                  f"min(({segments}) * ({chunks_host}), 8 * {wave}) * {BLOCK}", when=when)


def _warp_per_segment(sc: SegCompile, op: SegRed, red: list[str], results: list[Temp],
                      mapouts: list[Temp], segments: str, lanes: int, when: str) -> None:
    low = sc.lowering()
    slots = operator_slots(sc, low, op, red, mapouts, depth=3)
    name = sc.fresh("segred_warp" if lanes == 32 else "segred_subwarp")
    dims = [render.expr(low.subexp(d)) for d in op.space.dims]
    source = render_skeleton(
        "segred_warp", name=name, **slots, lanes=lanes, segments=" * ".join(dims[:-1]),
        m=dims[-1], results=[pointer(low, t) for t in results], params=kernel_params(low))
    sc.add_kernel(name, source, low, f"({segments}) * {lanes}", when=when)


def per_segment_kernel(sc: SegCompile, op: SegRed | SegScan, red: list[str], rest: list[str],
                       outs: list[Temp], mapouts: list[Temp], *, scan: bool,
                       when: str | None = None) -> None:
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
    # The segment and the position in it give the indices: no division per element.
    elem: list[Stm] = decompose(low, imp.Var(seg), op.space.gtids[:-1], dims[:-1])
    elem.append(imp.Decl("int64_t", low.bind(op.space.gtids[-1], ir.Prim("i64")),
                         imp.Var(inner), True))
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
        grid_stride(seg, Bin("+", Bin("*", BID, BDIM), TID), imp.Var(total), per_seg,
                    Bin("*", GDIM, BDIM)),
    ]
    name = "segscan_segments" if scan else "segred_segments"
    sc.kernel(name, low, body, sc.host_product(op.space.dims[:-1]), when=when)
