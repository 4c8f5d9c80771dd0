"""Transpositions the kernels can do without (the `fuse-rearranges` pass).

The runtime materialises a `rearrange` (`b.rearrange`: a transposition
kernel, an allocation, and on small problems some 10 µs of host time).
Flattening writes one wherever the program transposes, as matrix
multiplication does: `map (\\xs -> map (\\ys -> ...) (transpose yss)) xss`
reads `tr = rearrange (1, 0) yss` as `tr[g1, i]`.  A kernel can read
`yss[i, g1]` instead, with no copy, and here that is even the better read:
a warp's threads (consecutive `g1`) then read consecutive words.

So a SegMap whose kernel code uses `tr = rearrange perm x` only in scalar
reads reads `x` with the indices permuted, unless that makes a read worse:
where `tr`'s last index varies with the innermost thread index (is it, or
is computed from it) but `x`'s would not (consecutive threads reading
consecutive words before, a row apart after) and the CUDA kernel cannot
stage it in shared-memory tiles (`futgen.gpu.transposed_reads`: a GRID
SegMap reading `x[..., b + c, a]`, which the tiles read along `a`).  In an
intra-block SegMap the threads are those of its BLOCK SegOps, whose spaces
they share.  The
core map a SegMap keeps for the CPU backend (`host`) keeps reading `tr`:
on CUDA the runtime makes a transposition only once something reads it
(`futgen_runtime.cuda._Deferred`), so there the copy is made only where a
kernel still reads `tr`.  Reductions and scans, whose
threads run along other dimensions, keep reading `tr`.  Then `tr` goes if
nothing uses it, or moves into the one `if` branch that still does (matrix
multiplication's flattened version reads the transposition, coalesced; its
outer version no longer makes it).
Nothing is done where `x` or `tr` may be consumed.

A transposition of a GRID SegMap's result, `tr = rearrange (.., 1, 0) v`,
is made by the SegMap itself with its two inner indices swapped (its body
unchanged, so it writes `tr`), where that keeps its reads coalesced or
tiled; `v` becomes `rearrange (.., 1, 0) tr`, which the SegMaps reading `v`
read through in turn.  Where a kernel would need the transposition made
(a block reading its rows), this saves it: LocVolCalib's explicit y step
writes `v` transposed, which its x solve reads by rows, and the map after
reads `v` through tiles.

Where reading through would make a read worse, whether it pays depends on
the array: a small one sits in the L2 cache, where a strided read costs
little beside a transposition's launch and its host time (LocVolCalib's
small dataset transposes 16 x 32 x 256 arrays four times a time step).  So
such a SegMap gets two versions, as incremental flattening gives a nest
(a guard that the autotuner tunes):

    if threshold(<fn>.suff_transposed_<k>) <= elements of x
    then the SegMap reading tr (coalesced; tr is made, in this branch only)
    else the SegMap reading x with the indices permuted

The default, TRANSPOSED_FROM elements, reads arrays that fit the L2 cache
a few times over through.  Sizes of `tr` (`size tr d`) are those of `x`
permuted, so they do not keep `tr` alive.

Measured (BENCHMARKS.md, matrix family on an H200): the tiled outer version
got 20% faster.  The untiled one (a thread per output, used only where the
outputs are too few for tiles, and then 100 to 10 000 times slower than the
flattened version anyway) got 2 to 4 times slower: with that few threads,
a thread streaming its own row of `tr` hit its cache line 31 times in 32,
and reading `x` across the warp misses every time.
"""

from __future__ import annotations

import re
from dataclasses import replace

from futgen.core import ir
from futgen.flatten.names import (
    NameSource,
    free_vars,
    i64_op,
    i64_product,
    substitute,
    use_counts,
)
from futgen.gpu.ir import (
    BLOCKS,
    GRID,
    SegMap,
    SegSpace,
    ThresholdCmp,
    binds_arrays,
    block_ops,
)
from futgen.gpu.transposed_reads import tiled_arrays
from futgen.opt.effects import consumed_on_host
from futgen.opt.parts import code_bodies, host_stms, map_bodies, map_code_bodies

# Default of the `suff_transposed` guards: arrays of fewer elements (16 MiB
# of f32, a third of an H100's or H200's L2 cache) are read through,
# strided; larger ones transposed first.  LocVolCalib on an H200, tuned
# versions otherwise (BENCHMARKS.md): its 2^17- and 2^20-element arrays
# (small, medium) took 24.5 and 11.6 ms read through, 32.6 and 12.2 ms
# transposed; its 2^24-element ones (large) 98.1 through, 91.9 transposed.
TRANSPOSED_FROM = 1 << 22


def fuse_rearranges(prog: ir.Program) -> ir.Program:
    """`prog` (GPU IR) with the transpositions its SegMaps can read through
    removed, and those whose reads would get worse versioned by size."""
    names = NameSource(prog)
    return ir.Program(tuple(_Fuser(f, names).function() for f in prog.functions))


Source = tuple[ir.VName, tuple[int, ...]]  # a rearrange: its array and permutation


class _Fuser:
    def __init__(self, fun: ir.Function, names: NameSource):
        self.fun = fun
        self.names = names
        self.consumed = consumed_on_host(fun)
        self.sources: dict[ir.VName, Source] = {}
        names_used = (s.exp.name for s in host_stms(fun.body) if isinstance(s.exp, ThresholdCmp))
        self.guards = 1 + max((int(m.group(1)) for name in names_used
                               if (m := re.search(r"_(\d+)$", name))), default=-1)

    def function(self) -> ir.Function:
        body = self.body(self.fun.body)
        counts = use_counts(replace(self.fun, body=body))
        return replace(self.fun, body=_place(body, set(self.sources), counts))

    def body(self, body: ir.Body) -> ir.Body:
        out: list[ir.Stm] = []
        body = self.produced_transposed(body)
        for stm in body.stms:
            match stm.exp:
                case ir.Rearrange(arr, perm) if len(stm.pat) == 1 and not (
                        {arr, stm.pat[0].name} & self.consumed):
                    self.sources[stm.pat[0].name] = (arr, perm)
                case ir.ArraySize(arr, dim) if arr in self.sources:
                    src, perm = self.sources[arr]
                    stm = replace(stm, exp=ir.ArraySize(src, perm[dim]))
                case ir.If() | ir.Loop():
                    stm = replace(stm, exp=map_bodies(stm.exp, self.body))
                case SegMap(level=level, space=space) if level in (GRID, BLOCKS) and space.gtids:
                    out += self.segmap(stm)
                    continue
            out.append(stm)
        return ir.Body(tuple(out), body.result)

    def produced_transposed(self, body: ir.Body) -> ir.Body:
        """`body` with each `tr = rearrange perm v` that swaps the two inner
        dimensions of a GRID SegMap's result made by that SegMap itself, its
        two inner indices swapped, where its reads stay coalesced or tiled:
        `tr` is then that SegMap's result, and `v` a rearrange of it, which
        the SegMaps reading `v` read through.  A transposition of `v` that a
        kernel would need made (a block's rows, as LocVolCalib's x solve reads
        `transpose v`) costs nothing then; one of `tr` costs the same."""
        stms = list(body.stms)
        result = body.result
        made = {s.pat[0].name for s in stms if _transposable(s)}
        sources = {**self.sources, **{
            s.pat[0].name: (s.exp.arr, s.exp.perm) for s in stms
            if isinstance(s.exp, ir.Rearrange) and len(s.pat) == 1}}
        k = 0
        while k < len(stms):
            match stms[k]:
                case ir.Stm((ir.Param(tr),), ir.Rearrange(v, perm)) if (
                        v in made and perm == _inner_swap(len(perm))
                        and not {v, tr} & self.consumed):
                    made.discard(v)
                    j = next(i for i, s in enumerate(stms) if s.pat and s.pat[0].name == v)
                    swapped = _swap_inner(stms[j].exp)
                    if not _coalesced(swapped, sources):
                        k += 1
                        continue
                    [p] = stms[j].pat
                    t = p.type
                    vt = ir.Param(self.names.fresh(f"{v.base}_tr"),
                                  replace(t, shape=_swapped(t.shape)))  # type: ignore[union-attr]
                    stms[j] = ir.Stm((vt,), swapped)
                    stms.insert(j + 1, ir.Stm((p,), ir.Rearrange(vt.name, perm)))
                    del stms[k + 1]  # `tr`, one down; those after it stay put
                    rest = substitute(ir.Body(tuple(stms[k + 1:]), result), {tr: vt.name})
                    stms[k + 1:], result = list(rest.stms), rest.result
            k += 1
        return ir.Body(tuple(stms), result)

    def segmap(self, stm: ir.Stm) -> list[ir.Stm]:
        """`stm`'s SegMap reading the sources of the rearranges it may read
        through; where that makes a read worse, versioned by size (see the
        module docstring)."""
        e = stm.exp
        assert isinstance(e, SegMap)
        reads: dict[ir.VName, list[ir.Index]] = {}
        _reads(e.body, reads)
        inner = _thread_varying(e)
        counts = use_counts(replace(e, host=None))  # `host` keeps reading `tr` (see above)
        fused: dict[ir.VName, Source] = {}
        strided: dict[ir.VName, Source] = {}
        for tr, indexes in reads.items():
            if tr not in self.sources or counts[tr] != len(indexes):
                continue  # not a rearrange, or used other than by scalar reads
            src, perm = self.sources[tr]
            coalesced = all(_not_worse(ix.slice, perm, inner) for ix in indexes)
            (fused if coalesced else strided)[tr] = (src, perm)
        if fused:
            e = replace(e, body=_rewrite(e.body, fused))
        if not strided:
            return [replace(stm, exp=e)]
        through = replace(e, body=_rewrite(e.body, strided))
        if {src for src, _ in strided.values()} <= tiled_arrays(through):
            return [replace(stm, exp=through)]  # tiles read the sources coalesced
        return self.by_size(stm.pat, e, strided)

    def by_size(self, pat: tuple[ir.Param, ...], e: SegMap,
                strided: dict[ir.VName, Source]) -> list[ir.Stm]:
        """`if threshold <= elements then e else e reading `strided`'s
        sources`, the elements those of the largest source (a product of
        host sizes)."""
        stms: list[ir.Stm] = []
        counts = [self._elements(tr, stms) for tr in strided]
        elements = counts[0]
        for n in counts[1:]:
            elements = i64_op(stms, self.names, "max", elements, n, "elements")
        cond = self.names.fresh("suff_transposed")
        name = f"{self.fun.name}.suff_transposed_{self.guards}"
        self.guards += 1
        stms.append(ir.Stm((ir.Param(cond, ir.Prim("bool")),),
                           ThresholdCmp(name, elements, default=TRANSPOSED_FROM)))
        through = self.names.renamed(replace(e, body=_rewrite(e.body, strided)))
        stms.append(ir.Stm(pat, ir.If(ir.Var(cond), self._branch(pat, e),
                                      self._branch(pat, through), tuple(p.type for p in pat))))
        return stms

    def _branch(self, pat: tuple[ir.Param, ...], e: SegMap) -> ir.Body:
        res = tuple(ir.Param(self.names.fresh(p.name.base), p.type) for p in pat)
        return ir.Body((ir.Stm(res, e),), tuple(ir.Var(p.name) for p in res))

    def _elements(self, tr: ir.VName, stms: list[ir.Stm]) -> ir.SubExp:
        """The elements of `tr`'s source, as host statements' product of its sizes."""
        src, perm = self.sources[tr]
        sizes = []
        for d in range(len(perm)):
            n = ir.Param(self.names.fresh("size"), ir.Prim("i64"))
            stms.append(ir.Stm((n,), ir.ArraySize(src, d)))
            sizes.append(ir.Var(n.name))
        return i64_product(sizes, self.names, stms, "elements")


def _transposable(stm: ir.Stm) -> bool:
    """Whether `stm` is a GRID SegMap of one scalar result over two or more
    dimensions (its result is its space's shape)."""
    e = stm.exp
    return (isinstance(e, SegMap) and e.level == GRID and len(e.space.gtids) >= 2
            and len(stm.pat) == 1 and isinstance(e.ret[0], ir.Prim) and e.host is None
            and not binds_arrays(e.body))


def _inner_swap(rank: int) -> tuple[int, ...]:
    return (*range(rank - 2), rank - 1, rank - 2)


def _swapped(xs: tuple) -> tuple:
    return (*xs[:-2], xs[-1], xs[-2])


def _swap_inner(e: SegMap) -> SegMap:
    """`e` over its space with the two inner dimensions swapped: the same
    body, so its result is `e`'s transposed."""
    space = SegSpace(_swapped(e.space.gtids), _swapped(e.space.dims))
    return replace(e, space=space)


def _coalesced(e: SegMap, sources: dict[ir.VName, Source]) -> bool:
    """Whether every scalar read of `e`'s kernel code, reading the
    rearranges of `sources` through, is coalesced, the same for all threads
    along the innermost index, or served by tiles."""
    e = replace(e, body=_rewrite(e.body, sources))
    reads: dict[ir.VName, list[ir.Index]] = {}
    _reads(e.body, reads)
    inner = _varying(e.body, e.space.gtids[-1])
    tiled = tiled_arrays(e)
    for arr, indexes in reads.items():
        for ix in indexes:
            varies = [bool(free_vars(d) & inner) for d in ix.slice]
            if any(varies) and not varies[-1] and arr not in tiled:
                return False
    return True


def _not_worse(sl: tuple[ir.DimIndex, ...], perm: tuple[int, ...], inner: set[ir.VName]) -> bool:
    """Whether reading the source with `sl` permuted is as coalesced: not when
    the last index varies with the innermost thread index (names `inner`)
    and the source's last index would not."""
    def varies(d: ir.DimIndex) -> bool:
        return bool(free_vars(d) & inner)

    return not (varies(sl[-1]) and not varies(_source_slice(sl, perm)[-1]))


def _thread_varying(e: SegMap) -> set[ir.VName]:
    """The names that vary with the innermost thread index of `e`'s threads:
    its own innermost index for a GRID SegMap; for an intra-block one,
    those of its BLOCK SegOps, whose spaces its threads share."""
    if e.level == GRID:
        return _varying(e.body, e.space.gtids[-1])
    out: set[ir.VName] = set()
    for op in block_ops(e.body):
        out |= _varying(op.body, op.space.gtids[-1])
    return out


def _varying(body: ir.Body, gtid: ir.VName) -> set[ir.VName]:
    """`gtid` and the names of kernel code `body` computed from it (an index
    `g - 1` varies with the thread as `g` does)."""
    out = {gtid}

    def walk(b: ir.Body) -> None:
        for stm in b.stms:
            for inner in code_bodies(stm.exp):
                walk(inner)
            if free_vars(stm.exp) & out:
                out.update(p.name for p in stm.pat)

    walk(body)
    walk(body)  # twice: a loop's values may vary through its later statements
    return out


def _source_slice(sl: tuple[ir.DimIndex, ...], perm: tuple[int, ...]) -> tuple[ir.DimIndex, ...]:
    """`tr[sl]` as an index of `x`, for `tr = rearrange perm x` (dimension
    `d` of `tr` is dimension `perm[d]` of `x`)."""
    out: list[ir.DimIndex] = [sl[0]] * len(perm)
    for d, p in enumerate(perm):
        out[p] = sl[d]
    return tuple(out)


def _reads(body: ir.Body, out: dict[ir.VName, list[ir.Index]]) -> None:
    """The scalar reads (every dimension fixed) of kernel code `body`, by array."""
    for stm in body.stms:
        match stm.exp:
            case ir.Index(arr, sl) if all(isinstance(d, ir.DimFix) for d in sl) and all(
                    isinstance(p.type, ir.Prim) for p in stm.pat):
                out.setdefault(arr, []).append(stm.exp)
        for inner in code_bodies(stm.exp):
            _reads(inner, out)


def _rewrite(body: ir.Body, fused: dict[ir.VName, Source]) -> ir.Body:
    stms = []
    for stm in body.stms:
        e = stm.exp
        if isinstance(e, ir.Index) and e.arr in fused:
            src, perm = fused[e.arr]
            e = replace(e, arr=src, slice=_source_slice(e.slice, perm))
        else:
            e = map_code_bodies(e, lambda b: _rewrite(b, fused))
        stms.append(replace(stm, exp=e))
    return ir.Body(tuple(stms), body.result)


def _place(body: ir.Body, rearranges: set[ir.VName], counts) -> ir.Body:
    """`body` without the rearranges nothing uses, and with those that only
    one branch of a later `if` uses moved into that branch."""
    stms = list(body.stms)
    k = 0
    while k < len(stms):
        stm = stms[k]
        name = stm.pat[0].name if len(stm.pat) == 1 else None
        if name in rearranges:
            if counts[name] <= 0:
                del stms[k]
                continue
            target = _only_branch_using(stms[k + 1:], body.result, name)
            if target is not None:
                j, which = target
                j += k + 1
                branch = getattr(stms[j].exp, which)
                moved = ir.Body((stm, *branch.stms), branch.result)
                stms[j] = replace(stms[j], exp=replace(stms[j].exp, **{which: moved}))
                del stms[k]
                continue
        if isinstance(stm.exp, ir.If | ir.Loop):
            stms[k] = replace(stm, exp=map_bodies(stm.exp,
                                                  lambda b: _place(b, rearranges, counts)))
        k += 1
    return ir.Body(tuple(stms), body.result)


def _only_branch_using(rest: list[ir.Stm], result: tuple[ir.SubExp, ...],
                       name: ir.VName) -> tuple[int, str] | None:
    """The statement (position in `rest`) and branch of the one `if` whose
    one branch holds every later use of `name`, if there is one."""
    if use_counts(result)[name] > 0:
        return None
    found = None
    for j, stm in enumerate(rest):
        if use_counts(stm)[name] <= 0:
            continue
        if found is not None or not isinstance(stm.exp, ir.If):
            return None
        e = stm.exp
        in_then, in_else = use_counts(e.then_)[name] > 0, use_counts(e.else_)[name] > 0
        if in_then == in_else or use_counts(e.cond)[name] > 0:
            return None
        found = (j, "then_" if in_then else "else_")
    return found
