"""SegScan: scan-then-propagate for one-dimensional spaces, one thread per segment otherwise.

One dimension, three kernels over `GROUPS` logical blocks (virtualised over
the launched grid), each owning a contiguous chunk of `ceil(n / GROUPS)`:

1. Each block walks its chunk in tiles of `BLOCK` elements: the body gives
   one element per thread (the neutral element past the end), an ordered
   Hillis-Steele scan in shared memory scans the tile, the block's running
   carry is combined in front, the result is stored, and the carry takes
   the tile's total.  The chunk's total goes to `blocksums[block]`.
2. One thread turns `blocksums` into exclusive prefixes in place
   (`GROUPS` sequential steps: a single-block kernel, since the number of
   logical blocks is fixed and small).
3. Every element of chunk `b > 0` becomes `op(blocksums[b], element)`.

Map-out values are written in pass 1.  Operators need only be associative.

Segmented (more than one dimension): one thread per segment scans its row
sequentially (replaced by the performance issue).
"""

from __future__ import annotations

from futgen.codegen.cuda import imp
from futgen.codegen.cuda.common import (
    BDIM,
    BID,
    BLOCK,
    GDIM,
    GROUPS,
    TID,
    SegCompile,
    decompose,
    early_exit,
    imin,
    pointer,
)
from futgen.codegen.cuda.imp import Bin, Lit, Stm
from futgen.codegen.cuda.segred import (
    combine,
    neutrals,
    per_segment_kernel,
    value_types,
)
from futgen.codegen.plan import CTYPES, KernelPlan, Temp
from futgen.gpu.ir import SegScan

_GROUPS = Lit(f"(int64_t){GROUPS}")


def compile_segscan(sc: SegCompile, op: SegScan) -> KernelPlan:
    """The plan of `let (pat) = segscan ...`: scan results, then map-out arrays."""
    red, rest = value_types(op)
    pat = sc.stm.pat
    nred = len(red)
    outs = [sc.array(f"{p.name.base}_mem", t, op.space.dims, output=True)
            for p, t in zip(pat, red)]
    mapouts = [sc.array(f"{p.name.base}_mem", t, op.space.dims, output=True)
               for p, t in zip(pat[nred:], rest)]
    if len(op.space.dims) == 1:
        sums = [sc.temp("blocksum", t, GROUPS) for t in red]
        _scan_tiles(sc, op, red, rest, outs, mapouts, sums)
        _scan_sums(sc, op, red, sums)
        _propagate(sc, op, red, outs, sums)
    else:
        per_segment_kernel(sc, op, red, rest, outs, mapouts, scan=True)
    return sc.plan([("array", t.name) for t in outs + mapouts])


def _chunk(low, n):  # type: ignore[no-untyped-def]
    """Names and declarations of a logical block's chunk `[lo, hi)`."""
    per, vg, lo, hi = (low.fresh(k) for k in ("per", "vg", "lo", "hi"))
    decl_per = imp.Decl("int64_t", per, Bin("/", Bin("+", n, Lit(f"(int64_t){GROUPS - 1}")),
                                             _GROUPS))
    bounds = [imp.Decl("int64_t", lo, Bin("*", imp.Var(vg), imp.Var(per))),
              imp.Decl("int64_t", hi, imin(Bin("+", imp.Var(lo), imp.Var(per)), n))]
    return vg, imp.Var(lo), imp.Var(hi), decl_per, bounds


def _scan_tiles(sc: SegCompile, op: SegScan, red: list[str], rest: list[str],
                outs: list[Temp], mapouts: list[Temp], sums: list[Temp]) -> None:
    low = sc.lowering()
    out_ptrs = [pointer(low, t) for t in outs]
    map_ptrs = [pointer(low, t) for t in mapouts]
    sum_ptrs = [pointer(low, t) for t in sums]
    ctypes = [CTYPES[t] for t in red]
    n = low.subexp(op.space.dims[0])
    vg, lo, hi, decl_per, bounds = _chunk(low, n)
    base, i, off = low.fresh("base"), low.fresh("i"), low.fresh("offset")
    iv, offv = imp.Var(i), imp.Var(off)
    shared = [low.fresh("shared") for _ in red]
    carry = [low.fresh("carry") for _ in red]
    xs = [low.fresh("x") for _ in red]
    prev = [low.fresh("prev") for _ in red]
    ys = [low.fresh("y") for _ in rest]
    nes = neutrals(low, op.ops)
    inside = Bin("<", iv, hi)
    elem: list[Stm] = decompose(low, iv, op.space.gtids, [n])
    elem += [imp.Decl(CTYPES[t], y) for t, y in zip(rest, ys)]
    elem += low.region((), op.body, [*xs, *ys], low.fresh("body_failed"))
    elem += [imp.Store(o, iv, imp.Var(y)) for o, y in zip(map_ptrs, ys)]
    late = Bin(">=", TID, offv)
    step: list[Stm] = [
        *[imp.Decl(c, p, ne) for c, p, ne in zip(ctypes, prev, nes)],
        imp.If(late, tuple(imp.Assign(p, imp.Load(sh, Bin("-", TID, offv)))
                           for p, sh in zip(prev, shared))),
        imp.Sync(),
        imp.If(late, (*combine(low, op.ops, prev, [imp.Var(x) for x in xs], escape=True),
                      *[imp.Assign(x, imp.Var(p)) for x, p in zip(xs, prev)],
                      *[imp.Store(sh, TID, imp.Var(x)) for sh, x in zip(shared, xs)])),
        imp.Sync(),
    ]
    last = [imp.Load(sh, Lit(f"(int64_t){BLOCK - 1}")) for sh in shared]
    tile: list[Stm] = [
        imp.Decl("int64_t", i, Bin("+", imp.Var(base), TID)),
        *[imp.Decl(c, x, ne) for c, x, ne in zip(ctypes, xs, nes)],
        imp.If(inside, tuple(elem)),
        *[imp.Store(sh, TID, imp.Var(x)) for sh, x in zip(shared, xs)],
        imp.Sync(),
        imp.For("int64_t", off, Lit("1"), BDIM, tuple(step), offv),
        # x = carry op x (the carry precedes the tile), then store.
        *_carry_in(low, op, ctypes, carry, xs),
        imp.If(inside, tuple(imp.Store(o, iv, imp.Var(x)) for o, x in zip(out_ptrs, xs))),
        *combine(low, op.ops, carry, last, escape=True),
        imp.Sync(),
    ]
    group: list[Stm] = [
        *bounds,
        *[imp.Decl(c, a, ne) for c, a, ne in zip(ctypes, carry, nes)],
        imp.For("int64_t", base, lo, hi, tuple(tile), BDIM),
        imp.If(Bin("==", TID, Lit("0")),
               tuple(imp.Store(s, imp.Var(vg), imp.Var(c)) for s, c in zip(sum_ptrs, carry))),
    ]
    body: list[Stm] = [
        early_exit(barriers=True),
        *[imp.Shared(c, sh, BLOCK) for c, sh in zip(ctypes, shared)],
        decl_per,
        imp.For("int64_t", vg, BID, _GROUPS, tuple(group), GDIM),
    ]
    sc.kernel("segscan_tiles", low, body, str(GROUPS * BLOCK))


def _carry_in(low, op, ctypes, carry, xs):  # type: ignore[no-untyped-def]
    """`xs = carry op xs`, through temporaries so the carry itself is kept."""
    tmp = [low.fresh("scanned") for _ in xs]
    stms: list[Stm] = [imp.Decl(c, t, imp.Var(a)) for c, t, a in zip(ctypes, tmp, carry)]
    stms += combine(low, op.ops, tmp, [imp.Var(x) for x in xs], escape=True)
    stms += [imp.Assign(x, imp.Var(t)) for x, t in zip(xs, tmp)]
    return stms


def _scan_sums(sc: SegCompile, op: SegScan, red: list[str], sums: list[Temp]) -> None:
    """Exclusive prefixes of the block sums, in place, by one thread."""
    low = sc.lowering()
    sum_ptrs = [pointer(low, t) for t in sums]
    ctypes = [CTYPES[t] for t in red]
    accs = [low.fresh("acc") for _ in red]
    vals = [low.fresh("v") for _ in red]
    g = low.fresh("g")
    gv = imp.Var(g)
    loop: list[Stm] = [
        *[imp.Decl(c, v, imp.Load(s, gv)) for c, v, s in zip(ctypes, vals, sum_ptrs)],
        *[imp.Store(s, gv, imp.Var(a)) for s, a in zip(sum_ptrs, accs)],
        *combine(low, op.ops, accs, [imp.Var(v) for v in vals], escape=False),
    ]
    body: list[Stm] = [
        early_exit(barriers=False),
        imp.If(Bin("!=", Bin("+", TID, BID), Lit("0")), (imp.Return(),)),
        *[imp.Decl(c, a, ne) for c, a, ne in zip(ctypes, accs, neutrals(low, op.ops))],
        imp.For("int64_t", g, Lit("(int64_t)0"), _GROUPS, tuple(loop)),
    ]
    sc.kernel("segscan_sums", low, body, "1", block=1)


def _propagate(sc: SegCompile, op: SegScan, red: list[str], outs: list[Temp],
               sums: list[Temp]) -> None:
    """Every element of chunk b > 0 gets the prefix of the chunks before it."""
    low = sc.lowering()
    out_ptrs = [pointer(low, t) for t in outs]
    sum_ptrs = [pointer(low, t) for t in sums]
    ctypes = [CTYPES[t] for t in red]
    n = low.subexp(op.space.dims[0])
    vg, lo, hi, decl_per, bounds = _chunk(low, n)
    i = low.fresh("i")
    iv = imp.Var(i)
    accs = [low.fresh("acc") for _ in red]
    elem: list[Stm] = [*[imp.Decl(c, a, imp.Load(s, imp.Var(vg)))
                         for c, a, s in zip(ctypes, accs, sum_ptrs)],
                       *combine(low, op.ops, accs, [imp.Load(o, iv) for o in out_ptrs],
                                escape=False),
                       *[imp.Store(o, iv, imp.Var(a)) for o, a in zip(out_ptrs, accs)]]
    group: list[Stm] = [*bounds,
                        imp.For("int64_t", i, Bin("+", lo, TID), hi, tuple(elem), BDIM)]
    body: list[Stm] = [
        early_exit(barriers=False),
        decl_per,
        imp.For("int64_t", vg, Bin("+", BID, Lit("1")), _GROUPS, tuple(group), GDIM),
    ]
    sc.kernel("segscan_propagate", low, body, str(GROUPS * BLOCK))
