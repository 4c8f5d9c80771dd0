"""Work of an intra-block kernel that does not depend on some of its block
indices, done once per value of the others by a kernel of its own (the
`hoist-block-invariants` pass).

LocVolCalib's solves are intra-block kernels with a block per (strike,
row).  Each solves a tridiagonal system by three block scans, and the
system's matrix depends on the row, not on the strike: the first scan (of
2 x 2 matrices, the costliest) and the maps around it read only the matrix,
so every row's were computed once per strike, 256 times over.  Here a BLOCK
SegMap or SegScan of block code whose values depend on none of the block
indices in some set (the strike's) moves, with the block-level scalars it
needs, to a BLOCKS SegMap over the other indices, launched just before the
kernel; the kernel reads its rows from global memory (`H[row, i]` where it
read `a[i]` from shared memory).  Hoisted ops that depend on fewer indices
still go to a kernel of their own, launched first, which the others read.

A BLOCK SegMap returning values of both kinds is split first: one SegMap
per set of indices its hoistable values depend on, and the rest, which
keeps every statement that may fail, so that the kernel still checks all
it checked.  A hoisted op with a use other than a read of one element
stays where it is.  A costly invariant value inside an op that every block
index changes (a division, a power, a math function: LocVolCalib's
`a[i] / b[i - 1]` and `c[i] / b[i]` in its second and third scans, each
under `if i > 0`) becomes a BLOCK SegMap of its own, its `if` split from
the variant values' where needed, and is hoisted in turn.

The hoisted version is one branch of `if threshold(<fn>.suff_hoisted_<k>)
<= reuse`, the original kernel the other: `reuse` is how many blocks share
a row of the widest hoisted kernel.  Two more launches a step do not pay
for themselves everywhere (LocVolCalib's small dataset: 16 strikes of
32-wide rows); the tuner decides.

Invariance needs the uniform arrays seen: a GRID SegMap whose body does not
use its indices makes the same values at every point (LocVolCalib's time
step, `dtInv`, one per strike, all equal), and the kernel's reads of them
at its indices over the same dimensions (in range: they index its points)
read element 0 instead.

A hoisted kernel runs only where the kernel would run at some point, so it
fails only where the kernel would: where the indices left out span no
points, its first dimension is 0.  The CPU backend runs the intra-block
kernel as the map it came from (`SegMap.host`), which does all the work
itself; it runs a hoisted kernel point by point, as it runs block code.
BLOCK SegReds (scalar results) are not hoisted.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any

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
    BLOCK,
    BLOCKS,
    GRID,
    SegMap,
    SegScan,
    SegSpace,
    ThresholdCmp,
    binds_arrays,
    block_ops,
)
from futgen.opt.effects import can_fail
from futgen.opt.parts import map_bodies, map_code_bodies

Deps = frozenset[ir.VName]  # the block indices a block-level value depends on
# A hoisted op's array -> the hoisted kernel's result and the index of the row to read.
Rows = dict[ir.VName, tuple[ir.VName, tuple[ir.SubExp, ...]]]
_NONE: Deps = frozenset()


def hoist_block_invariants(prog: ir.Program) -> ir.Program:
    """`prog` (GPU IR) with the BLOCK SegOps of intra-block kernels that
    some block indices do not change computed once per value of the others."""
    names = NameSource(prog)
    return ir.Program(tuple(replace(f, body=_Hoister(names, f.name).body(f.body, {}))
                            for f in prog.functions))


class _Hoister:
    def __init__(self, names: NameSource, fun_name: str):
        self.names = names
        self.fun_name = fun_name
        self.guards = 0

    def body(self, body: ir.Body, uniform: dict[ir.VName, tuple[ir.SubExp, ...]]) -> ir.Body:
        """Host code `body` with its intra-block kernels' invariant work
        hoisted; `uniform`: the uniform arrays in scope, with their shapes."""
        uniform = dict(uniform)
        out: list[ir.Stm] = []
        for stm in body.stms:
            e = stm.exp
            if isinstance(e, SegMap) and e.level == BLOCKS:
                out += self.kernel(stm, uniform)
                continue
            if _is_uniform(e):
                uniform.update((p.name, e.space.dims) for p in stm.pat)  # type: ignore[union-attr]
            elif isinstance(e, ir.If | ir.Loop):
                stm = replace(stm, exp=map_bodies(e, lambda b: self.body(b, uniform)))
            out.append(stm)
        return ir.Body(tuple(out), body.result)

    def kernel(self, stm: ir.Stm, uniform: dict[ir.VName, tuple[ir.SubExp, ...]]
               ) -> list[ir.Stm]:
        """The BLOCKS SegMap `stm`, preceded by the kernels that compute
        its invariant work (and their sizes), or as it is."""
        e = stm.exp
        assert isinstance(e, SegMap)
        gtids, dims = e.space.gtids, dict(zip(e.space.gtids, e.space.dims))
        body = _read_uniform_at_zero(e.body, uniform, dims)
        stms = self.extract(self.split(list(body.stms), gtids), gtids)
        deps = _deps(stms, gtids)
        groups: dict[Deps, list[int]] = {}
        for k, s in enumerate(stms):
            left_out = [dims[g] for g in gtids if g not in deps[k]]
            if (_hoistable(s, body, stms) and len(deps[k]) < len(gtids)
                    and not all(d == ir.Constant(1, "i64") for d in left_out)):
                groups.setdefault(deps[k], []).append(k)
        if not groups:
            return [stm]
        ops = {k for ks in groups.values() for k in ks}
        # Each hoisted kernel: its ops and the block-level statements they
        # need, other groups' ops excepted (read from their kernels).
        included = {d: _backward(stms, (), keep=set(ks).__contains__,
                                 may_take=lambda k, d=d: k not in ops and deps[k] <= d)
                    for d, ks in groups.items()}
        # The kernel keeps what may fail but the hoisted kernels run too.
        copied = set().union(*included.values())
        main = _backward(stms, free_vars(body.result),
                         keep=lambda k: k not in ops | copied and can_fail(stms[k].exp, {}),
                         may_take=lambda k: k not in ops)
        out: list[ir.Stm] = []
        rows: Rows = {}
        for d in sorted(groups, key=len):
            users = [stms[k] for k in main] + [stms[k] for other in groups if other != d
                                                for k in included[other]]
            used = use_counts(ir.Body(tuple(users), body.result))
            out += self.hoisted(stms, groups[d], included[d], d, e.space, used, rows)
        kernel_body = _read_rows(ir.Body(tuple(stms[k] for k in main), body.result), rows, {})
        hoisted = [*out, replace(stm, exp=replace(e, body=kernel_body))]
        widest = max(groups, key=len)  # its kernel has the most blocks
        return self.guarded(stm, hoisted, [dims[g] for g in gtids if g not in widest])

    def guarded(self, stm: ir.Stm, hoisted: list[ir.Stm], left_out: list[ir.SubExp]
                ) -> list[ir.Stm]:
        """`if threshold <= reuse then <hoisted> else <stm>`: the hoisted
        kernels' launches pay where their rows serve enough blocks (`reuse`,
        the points of the block indices left out of the hoisted kernel with
        the most blocks), a tunable threshold (LocVolCalib's small dataset,
        16 strikes of short rows, is faster without)."""
        host: list[ir.Stm] = []
        reuse = i64_product(left_out, self.names, host, "reuse")
        cond = self.names.fresh("suff_hoisted")
        name = f"{self.fun_name}.suff_hoisted_{self.guards}"
        self.guards += 1
        host.append(ir.Stm((ir.Param(cond, ir.Prim("bool")),),
                           ThresholdCmp(name, reuse, default=HOISTED_FROM)))
        then_, else_ = _branch(hoisted, self.names), _branch([stm], self.names)
        return [*host, ir.Stm(stm.pat, ir.If(ir.Var(cond), then_, else_,
                                             tuple(p.type for p in stm.pat)))]

    def hoisted(self, stms: list[ir.Stm], ops: list[int], included: list[int], d: Deps,
                space: SegSpace, used: Counter[ir.VName], rows: Rows) -> list[ir.Stm]:
        """The host statements of the kernel computing `ops` (whose values
        depend on the block indices `d` only); `rows` learns where the
        values that `used` counts went."""
        host: list[ir.Stm] = []
        kept = [g for g in space.gtids if g in d]
        sizes = [s for g, s in zip(space.gtids, space.dims) if g in d]
        left_out = [s for g, s in zip(space.gtids, space.dims) if g not in d]
        if not kept:  # one block, for the values no block index changes
            kept, sizes = [self.names.fresh("gtid")], [ir.Constant(1, "i64")]
        if not all(isinstance(s, ir.Constant) and s.value > 0 for s in left_out):
            # Where the indices left out span no points, neither does this kernel.
            points = i64_product(left_out, self.names, host, "points")
            spread = i64_op(host, self.names, "*", sizes[0], points, "spread")
            sizes[0] = i64_op(host, self.names, "min", sizes[0], spread, "hoisted")
        fresh = {g: self.names.fresh(g.base) for g in kept}
        results = [p for k in ops for p in stms[k].pat if used[p.name] > 0]
        body = ir.Body(tuple(stms[k] for k in included), tuple(ir.Var(p.name) for p in results))
        # Its own names: the block-level scalars it needs stay in the kernel too.
        body = self.names.renamed(substitute(_read_rows(body, rows, fresh), fresh))
        pat = []
        for p in results:
            assert isinstance(p.type, ir.ArrayT)
            h = ir.Param(self.names.fresh(f"{p.name.base}_hoisted"),
                         ir.ArrayT(p.type.elem, (*sizes, *p.type.shape)))
            pat.append(h)
            at = tuple(ir.Var(g) for g in space.gtids if g in d) or (ir.Constant(0, "i64"),)
            rows[p.name] = (h.name, at)
        op = SegMap(BLOCKS, SegSpace(tuple(fresh.get(g, g) for g in kept), tuple(sizes)),
                    tuple(p.type for p in results), body)
        return [*host, ir.Stm(tuple(pat), op)]

    def split(self, stms: list[ir.Stm], gtids: Sequence[ir.VName]) -> list[ir.Stm]:
        """`stms` with each BLOCK SegMap that returns both values some
        block indices do not change and values all of them do split in
        two or more: one per set of indices of the former, and the rest."""
        deps: dict[ir.VName, Deps] = {g: frozenset({g}) for g in gtids}
        out: list[ir.Stm] = []
        for s in stms:
            parts = [s]
            if isinstance(s.exp, SegMap) and s.exp.level == BLOCK and len(s.pat) > 1:
                parts = self.split_op(s, _result_deps_of(s.exp.body, deps), len(gtids))
            for part in parts:
                _learn(deps, part)
            out += parts
        return out

    def split_op(self, s: ir.Stm, result_deps: list[Deps], n_gtids: int) -> list[ir.Stm]:
        e = s.exp
        assert isinstance(e, SegMap)
        by_deps: dict[Deps, list[int]] = {}
        for i, d in enumerate(result_deps):
            by_deps.setdefault(d if len(d) < n_gtids else _ALL, []).append(i)
        rest = by_deps.pop(_ALL, [])
        if not by_deps or not rest:
            return [s]
        parts = [self.part(s, ix) for ix in by_deps.values()]
        covered = frozenset(id(x) for part in parts for x in part.exp.body.stms)
        return [*(replace(part, exp=self.names.renamed(part.exp)) for part in parts),
                self.part(s, rest, covered)]

    def part(self, s: ir.Stm, ix: list[int], covered: frozenset[int] | None = None) -> ir.Stm:
        """The BLOCK SegMap `s` returning its results `ix` only: what they
        need, and where `covered` is given, every statement that may fail
        but those it covers (another part runs them)."""
        e = s.exp
        assert isinstance(e, SegMap)
        body = _sliced(e.body.stms, tuple(e.body.result[i] for i in ix), covered is not None,
                       covered or frozenset())
        return ir.Stm(tuple(s.pat[i] for i in ix),
                      replace(e, ret=tuple(e.ret[i] for i in ix), body=body))

    def extract(self, stms: list[ir.Stm], gtids: Sequence[ir.VName]) -> list[ir.Stm]:
        """`stms` with the costly values that BLOCK ops of every block index
        compute from what some block indices do not change (a division of
        two invariant rows) made by BLOCK SegMaps of their own, read by
        those ops: the SegMaps are then hoisted."""
        deps: dict[ir.VName, Deps] = {g: frozenset({g}) for g in gtids}
        out: list[ir.Stm] = []
        for s in stms:
            parts = [s]
            e = s.exp
            if (isinstance(e, SegMap | SegScan) and e.level == BLOCK and len(e.space.dims) == 1
                    and len(_depends(deps, e)) == len(gtids)):
                parts = self.extract_op(s, deps, len(gtids))
            for part in parts:
                _learn(deps, part)
            out += parts
        return out

    def extract_op(self, s: ir.Stm, deps: dict[ir.VName, Deps], n: int) -> list[ir.Stm]:
        """The BLOCK op `s`, preceded by BLOCK SegMaps computing the costly
        invariant values of its body (see `extract`), or as it is."""
        e = s.exp
        assert isinstance(e, SegMap | SegScan)
        [ltid] = e.space.gtids
        local = dict(deps)
        body: list[ir.Stm] = []
        body_deps: list[Deps] = []
        for st in e.body.stms:
            parts = self.split_if(st, local, n) if isinstance(st.exp, ir.If) else [st]
            body_deps += [_learn(local, part) for part in parts]
            body += parts
        used_by_variant = free_vars(e.body.result) | set().union(
            *(free_vars(st.exp) for st, d in zip(body, body_deps) if len(d) == n))
        picks: dict[Deps, list[int]] = {}
        for k, (st, d) in enumerate(zip(body, body_deps)):
            needed = _backward(body, (), keep={k}.__contains__)
            if (len(d) < n and all(isinstance(p.type, ir.Prim) for p in st.pat)
                    and any(p.name in used_by_variant for p in st.pat)
                    and any(_costly(body[j].exp) for j in needed)):
                picks.setdefault(d, []).append(k)
        if not picks:
            return [s]
        made: list[ir.Stm] = []
        reads: dict[int, list[ir.Stm]] = {}
        for ks in picks.values():
            values = [p for k in ks for p in body[k].pat]
            arrays = [ir.Param(self.names.fresh(f"{p.name.base}_row"),
                               ir.ArrayT(p.type.name, e.space.dims))  # type: ignore[union-attr]
                      for p in values]
            needed = _backward(body, (), keep=set(ks).__contains__)
            op = SegMap(BLOCK, e.space, tuple(p.type for p in values),
                        ir.Body(tuple(body[j] for j in needed),
                                tuple(ir.Var(p.name) for p in values)))
            made.append(ir.Stm(tuple(arrays), self.names.renamed(op)))
            by_name = dict(zip((p.name for p in values), arrays))
            for k in ks:
                reads[k] = [ir.Stm((p,), ir.Index(by_name[p.name].name,
                                                  (ir.DimFix(ir.Var(ltid)),)))
                            for p in body[k].pat]
        new_body = [r for k, st in enumerate(body) for r in reads.get(k, [st])]
        return [*made, replace(s, exp=replace(e, body=ir.Body(tuple(new_body), e.body.result)))]

    def split_if(self, st: ir.Stm, local: dict[ir.VName, Deps], n: int) -> list[ir.Stm]:
        """An `if` (of kernel code) on an invariant condition returning costly
        invariant values and others, as two: the invariant values' first."""
        e = st.exp
        assert isinstance(e, ir.If)
        if len(_depends(local, e.cond)) == n:
            return [st]
        inv = [i for i in range(len(st.pat))
               if all(len(_result_deps_of(b, local)[i]) < n for b in (e.then_, e.else_))]
        rest = [i for i in range(len(st.pat)) if i not in inv]
        if not inv or not rest:
            return [st]

        def part(ix: list[int], covered: frozenset[int] | None = None) -> ir.Stm:
            branches = [_sliced(b.stms, tuple(b.result[i] for i in ix), covered is not None,
                                covered or frozenset()) for b in (e.then_, e.else_)]
            return ir.Stm(tuple(st.pat[i] for i in ix),
                          replace(e, then_=branches[0], else_=branches[1],
                                  ret=tuple(e.ret[i] for i in ix)))
        first = part(inv)
        branches = (first.exp.then_, first.exp.else_)  # type: ignore[union-attr]
        if not any(_costly(x.exp) for b in branches for x in b.stms):
            return [st]
        covered = frozenset(id(x) for b in branches for x in b.stms)
        return [replace(first, exp=self.names.renamed(first.exp)), part(rest, covered)]


_ALL = frozenset({ir.VName("", -1)})  # split_op's key for values of every index

# Scalar operations that cost more than a read of global memory or two.
_COSTLY_BINOPS = frozenset({"/", "//", "%", "%%", "**"})
_CHEAP_UNOPS = frozenset({"neg", "not", "abs", "sgn", "complement"})


def _costly(e: ir.Exp) -> bool:
    """Whether kernel code `e` divides, raises to a power or calls a math function."""
    match e:
        case ir.BinOp(op=op):
            return op in _COSTLY_BINOPS
        case ir.UnOp(op=op):
            return op not in _CHEAP_UNOPS
        case ir.If(_, then_, else_, _):
            return any(_costly(s.exp) for b in (then_, else_) for s in b.stms)
        case ir.Loop(body=body):
            return any(_costly(s.exp) for s in body.stms)
    return False


def _result_deps_of(body: ir.Body, deps: dict[ir.VName, Deps]) -> list[Deps]:
    """The block indices each result of kernel code `body` depends on."""
    local = dict(deps)
    for s in body.stms:
        _learn(local, s)
    return [local.get(r.name, _NONE) if isinstance(r, ir.Var) else _NONE for r in body.result]

# The reuse from which the hoisted version runs where nothing tunes it.
HOISTED_FROM = 64


def _branch(stms: list[ir.Stm], names: NameSource) -> ir.Body:
    """A branch running `stms` and returning what the last binds, under
    fresh names (all its binders': a SegMap's `host_before` binds its
    pattern's names too)."""
    *before, last = stms
    last = names.renamed(last)
    return ir.Body((*before, last), tuple(ir.Var(p.name) for p in last.pat))


def _is_uniform(e: ir.Exp) -> bool:
    """Whether `e` is a GRID SegMap of scalars whose body uses none of its
    indices (so has the same values at every point)."""
    return (isinstance(e, SegMap) and e.level == GRID and e.host is None
            and all(isinstance(t, ir.Prim) for t in e.ret) and not binds_arrays(e.body)
            and not free_vars(e.body) & set(e.space.gtids))


def _hoistable(s: ir.Stm, body: ir.Body, stms: list[ir.Stm]) -> bool:
    """Whether block-level `s` is a BLOCK SegMap or SegScan whose arrays are
    used, and used only by reads of one element."""
    e = s.exp
    if not (isinstance(e, SegMap | SegScan) and e.level == BLOCK):
        return False
    rest = ir.Body(tuple(x for x in stms if x is not s), body.result)
    uses, reads = use_counts(rest), _element_reads(rest)
    return any(uses[p.name] for p in s.pat) and all(uses[p.name] == reads.get(p.name, 0)
                                                        for p in s.pat)


def _deps(stms: list[ir.Stm], gtids: Sequence[ir.VName]) -> list[Deps]:
    """The block indices each statement of block code `stms` depends on."""
    deps: dict[ir.VName, Deps] = {g: frozenset({g}) for g in gtids}
    return [_learn(deps, s) for s in stms]




def _union(sets: Iterable[Deps]) -> Deps:
    return frozenset().union(*sets)


def _depends(deps: dict[ir.VName, Deps], node: Any) -> Deps:
    """The block indices `node` depends on, by those of its free names (`deps`)."""
    return _union(deps.get(v, _NONE) for v in free_vars(node))


def _learn(deps: dict[ir.VName, Deps], stm: ir.Stm) -> Deps:
    """The block indices `stm` depends on, which its names then depend on too."""
    d = _depends(deps, stm.exp)
    deps.update((p.name, d) for p in stm.pat)
    return d


def _backward(stms: Sequence[ir.Stm], live: Iterable[ir.VName],
              keep: Callable[[int], bool] = lambda k: False,
              may_take: Callable[[int], bool] = lambda k: True) -> list[int]:
    """The positions of `stms`, in order, that a walk from the last keeps:
    those `keep` names, and those `may_take` allows that bind a name used
    after `stms` (`live`) or by a statement kept after them."""
    live = set(live)
    out = []
    for k in range(len(stms) - 1, -1, -1):
        if keep(k) or (may_take(k) and any(p.name in live for p in stms[k].pat)):
            out.append(k)
            live |= free_vars(stms[k].exp)
    return out[::-1]


def _sliced(stms: tuple[ir.Stm, ...], result: tuple[ir.SubExp, ...], keep_failing: bool,
            covered: frozenset[int] = frozenset()) -> ir.Body:
    """Kernel code computing `result` from `stms`: what it needs, and (if
    `keep_failing`) every statement that may fail, but those (`id`s in
    `covered`) that another part runs at the same points."""
    def failing(k: int) -> bool:
        return keep_failing and id(stms[k]) not in covered and can_fail(stms[k].exp, {})
    return ir.Body(tuple(stms[k] for k in _backward(stms, free_vars(result), keep=failing)),
                   result)


# -------------------------------------------------------------- rewriting reads


def _map_reads(body: ir.Body, f: Callable[[ir.Index], ir.Index]) -> ir.Body:
    """Block code `body` with `f` applied to every `Index` in it, at any depth."""
    return ir.Body(tuple(
        replace(s, exp=f(s.exp) if isinstance(s.exp, ir.Index)
                else map_code_bodies(s.exp, lambda b: _map_reads(b, f)))
        for s in body.stms), body.result)


def _element_reads(body: ir.Body) -> dict[ir.VName, int]:
    """How often each array is read one element at a time in block code `body`."""
    counts: dict[ir.VName, int] = {}

    def count(ix: ir.Index) -> ir.Index:
        if all(isinstance(i, ir.DimFix) for i in ix.slice):
            counts[ix.arr] = counts.get(ix.arr, 0) + 1
        return ix

    _map_reads(body, count)
    return counts


def _read_rows(body: ir.Body, rows: Rows, fresh: dict[ir.VName, ir.VName]) -> ir.Body:
    """Block code `body` reading the values of hoisted ops from their kernels' results
    (`rows`: array -> (result, the index of the block's row)), with the
    block indices renamed by `fresh`."""
    def read(ix: ir.Index) -> ir.Index:
        if ix.arr not in rows:
            return ix
        h, at = rows[ix.arr]
        row = (ir.DimFix(ir.Var(fresh.get(i.name, i.name)) if isinstance(i, ir.Var) else i)
               for i in at)
        return replace(ix, arr=h, slice=(*row, *ix.slice))
    return _map_reads(body, read)


def _read_uniform_at_zero(body: ir.Body, uniform: dict[ir.VName, tuple[ir.SubExp, ...]],
                          dims: dict[ir.VName, ir.SubExp]) -> ir.Body:
    """Block code `body` (of a kernel whose block indices have the sizes
    `dims`) reading uniform arrays at 0 where it reads them at indices of
    its own over the same dimensions."""
    if not uniform:
        return body
    spaces = dict(dims)
    for op in block_ops(body):
        spaces.update(zip(op.space.gtids, op.space.dims))

    def read(ix: ir.Index) -> ir.Index:
        shape = uniform.get(ix.arr)
        if shape is None or len(ix.slice) != len(shape):
            return ix
        if all(isinstance(i, ir.DimFix) and isinstance(i.i, ir.Var)
               and spaces.get(i.i.name) == n for i, n in zip(ix.slice, shape)):
            return replace(ix, slice=tuple(ir.DimFix(ir.Constant(0, "i64")) for _ in shape))
        return ix
    return _map_reads(body, read)
