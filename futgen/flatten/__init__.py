"""Flattening: core IR to GPU IR.

`flatten(prog)` keeps every function and rewrites host code statement by
statement.  The rules, in the spirit of Futhark's moderate flattening
(Henriksen et al., PLDI 2017) and incremental flattening (Henriksen et
al., PPoPP 2019; `research/seed000_003.md`):

1. **Fused first.**  The `fuse` pass before flattening (`futgen.pipeline`)
   has fused SOACs by the thesis's rules (`fusion`): a map into the Screma,
   Hist or Scatter reading it, so `reduce (+) 0 (map2 (*) xs ys)` is one
   redomap (a map whose values are also used later stays one's map-out),
   and Scremas over one input array into one (a SegRed may have several
   operators).  Flattening fuses the bodies it builds for kernels itself
   (`fusion.fuse_body`), after inlining; unlike the pass, which
   `--no-fusion` skips, that always happens.  Before that, after inlining,
   a map's function loses the statements no point changes
   (`interchange.hoist_invariant`): they run once, before the map (one that
   may fail, where a SOAC moves with it, only if the map has points);
   scalar reads of arrays stay in the map (on the host they would wait for
   the device), a moved Screma reading copies of them in its own threads
   (an array literal of them moves as a map of one point).
2. **A map nest becomes a SegMap.**  `map f xs` becomes a one-dimensional
   SegMap whose thread `gtid` reads `xs[gtid]`; when `f`'s body ends in a map
   over arrays the threads can index, and returns exactly that map's
   results, the inner map becomes a further dimension of the space
   (`map (\\row -> map g row)` is a 2-D SegMap).  The statements before the
   inner map are repeated per thread; invariant array bookkeeping is hoisted
   to the host.
3. **A reduce or scan becomes a SegRed or SegScan**: at the top level a
   one-dimensional one, directly under one map a segmented one over the
   map's dimension (the reduction runs along the innermost dimension).  The
   Screma's map part is the SegOp body.  A reduction under two or more maps
   is left inside the body as a sequential loop: the outer maps already give
   a space of their own (incremental flattening's outermost version; e.g.
   matrix multiplication is a 2-D SegMap whose body is one scalar loop).
4. **A Screma that cannot be a SegOp gets a second chance** (`interchange`):
   a redomap whose operator works on arrays is split into its map and its
   reduction, and a reduction by a map operator becomes row reductions of
   the transposed input.
5. **Bodies must be kernel code** (`futgen.gpu.ir`): calls are inlined and
   inner SOACs become sequential loops (`kernel.KernelBuilder`).  A map's
   threads may build arrays in thread-private memory when their shapes are
   known on the host (moderate flattening's "sequential inside" version for
   bodies such as OptionPricing's path generation); a SOAC whose body would
   need an array of a size only the thread knows stays on the host as it
   is, for the host code generator to run there.
6. **Scatter and hist become a SegScatter and a SegHist** when their
   destinations hold scalars (a scatter of rows, or a histogram whose
   operator combines arrays, stays on the host).

7. **Versions** (`incremental`, the default; rule G3 of incremental
   flattening): where a map has parallel work inside, the program gets up
   to three versions, chosen at run time:

       if suff_outer_par <= P then outer
       else if suff_intra_par <= P * intra_par && fits then intra
       else flat

   * `outer` (moderate flattening's version): the maps' space, the inner
     work sequential in each of the P threads;
   * `intra` (`intra.py`): a thread block per point, the inner SOACs shared
     by its threads, their arrays in shared memory (`fits`: checked at run
     time); for maps whose body has two or more reductions or scans, or a
     SOAC in a loop (Futhark's rule);
   * `flat`: the inner work flattened too: a reduction or scan under two or
     more maps becomes a SegRed or SegScan segmented by all of them (G4);
     a map whose body is a loop becomes a loop of a map (G7,
     `interchange.map_loop`); a map of several parallel statements, or of
     one followed by more work, becomes a map per statement (G6,
     `interchange.distribute`); a map whose body ends in an `if` on a
     condition its points share becomes an `if` of two maps (G8,
     `interchange.map_if`); a redomap whose map function has parallel
     work, at the top or ending a map's body, becomes its map and its
     reduction (G9, `interchange.split_parallel_redomap`).  The maps these
     make are flattened in turn, with versions of their own.

   Without an intra version the guard is `suff_outer_par` alone; without a
   flat one, `outer` is the fallback: `if suff_outer_par <= P || !fits`.
   A reduction under one map needs no guard: the segmented SegRed's code
   generator already picks among a thread, a warp or blocks per segment.
"""

from __future__ import annotations

import warnings
from dataclasses import replace

from futgen.core import ir
from futgen.flatten import interchange
from futgen.flatten.fusion import fuse_body
from futgen.flatten.intra import (
    NotIntra,
    intra_parallelism,
    intra_version,
    loop_parallelism,
    shared_bytes,
    worth_intra,
)
from futgen.flatten.kernel import KernelBuilder, NotKernel, commutative_operator, inline
from futgen.flatten.names import (
    NameSource,
    free_vars,
    i64_product,
    param_types,
    substitute,
    vnames,
)
from futgen.gpu.ir import (
    BlockFits,
    SegBinOp,
    SegHist,
    SegMap,
    SegOp,
    SegRed,
    SegScan,
    SegScatter,
    SegSpace,
    ThresholdCmp,
    binds_arrays,
)

LEVEL = "grid"

# A version of a Screma: host statements to run first, and its SegOp.
Version = tuple[list[ir.Stm], SegOp]


# The flattening strategies: `moderate` gives each Screma one version (the
# papers' MF baseline); `incremental` adds the guarded versions of rule 7.
FLATTENINGS = ("incremental", "moderate")

# Version guards one function may have.  Versions nest (a flat version's
# maps get versions of their own), so their number grows with the depth of
# the parallel nests; past this many, further maps get one version.
MAX_GUARDS = 32


class TooManyVersions(UserWarning):
    """A function reached MAX_GUARDS: the rest of it is flattened moderately."""


def flatten(prog: ir.Program, flattening: str = "incremental") -> ir.Program:
    """The GPU IR of `prog`: each Screma that can run in parallel becomes a
    SegOp, or (`incremental`) a choice of SegOps guarded by thresholds."""
    if flattening not in FLATTENINGS:
        raise ValueError(f"unknown flattening {flattening!r}; expected one of {FLATTENINGS}")
    pass_ = _Flattener(prog, flattening == "incremental")
    functions = []
    for f in prog.functions:
        pass_.fun_name, pass_.fun_guards, pass_.capped = f.name, 0, False
        functions.append(replace(f, body=pass_.host_body(f.body)))
        if pass_.capped:
            warnings.warn(f"{f.name} reached {MAX_GUARDS} version guards; the maps flattened "
                          "after that have one version each (as with --flattening=moderate)",
                          TooManyVersions, stacklevel=2)
    return ir.Program(tuple(functions))


class _Flattener:
    def __init__(self, prog: ir.Program, incremental: bool):
        self.funs = {f.name: f for f in prog.functions}
        self.names = NameSource(prog)
        self.types = param_types(prog.functions)
        self.incremental = incremental
        self.fun_name = ""  # the function being flattened, which names its thresholds
        self.fun_guards = 0  # its version guards so far (MAX_GUARDS)
        self.capped = False  # whether a map of it went without versions for that
        self.num_thresholds = 0
        # Set when translating a Screma met a reduction or scan under two
        # or more maps and ran it sequentially: only then can a second,
        # deeper translation give a flat version.
        self.flat_version_possible = False
        # The counters of the host loops around the code being flattened,
        # with their bounds: their reads are known in bounds (distribution).
        self.ranges: dict[ir.VName, ir.SubExp] = {}

    def host_body(self, body: ir.Body) -> ir.Body:
        """Host code with every Screma that can become a SegOp replaced by one."""
        out: list[ir.Stm] = []
        defs: dict[ir.VName, ir.Exp] = {}
        for stm in body.stms:
            defs.update((p.name, stm.exp) for p in stm.pat)
            match stm.exp:
                case ir.Screma():
                    out += self.screma(stm, defs)
                case ir.Scatter() | ir.Hist():
                    out += self.writes(stm)
                case ir.If(_, then_, else_, _):
                    out.append(replace(stm, exp=replace(
                        stm.exp, then_=self.host_body(then_), else_=self.host_body(else_))))
                case ir.Loop(_, form, loop_body):
                    if isinstance(form, ir.ForLoop) and form.prim == "i64":
                        self.ranges[form.i] = form.bound
                    out.append(replace(stm, exp=replace(stm.exp,
                                                        body=self.host_body(loop_body))))
                case _:
                    out.append(stm)
        return ir.Body(tuple(out), body.result)

    def screma(self, stm: ir.Stm, defs: dict[ir.VName, ir.Exp]) -> list[ir.Stm]:
        """The host statements computing Screma `stm`: a SegOp, or SegOps of
        its parts after a rewrite (`interchange`), or `stm` itself."""
        ops = self.segop(stm)
        if ops is not None:
            return ops
        parts = (interchange.split(stm, self.names)
                 or interchange.transpose_reduce(stm, defs, self.names))
        if parts is None:
            return [stm]
        out: list[ir.Stm] = []
        for part in parts:
            defs.update((p.name, part.exp) for p in part.pat)
            out += self.screma(part, defs) if isinstance(part.exp, ir.Screma) else [part]
        return out

    def segop(self, stm: ir.Stm) -> list[ir.Stm] | None:
        """The host statements (hoisted ones, then the SegOp, or a guarded
        choice of SegOps) computing `stm`, or None if its Screma cannot be a SegOp."""
        e = stm.exp
        assert isinstance(e, ir.Screma)
        e = replace(e, map_lam=self._inlined(e.map_lam))
        e = replace(e, scans=tuple(replace(s, lam=self._inlined(s.lam)) for s in e.scans),
                    reds=tuple(replace(r, lam=self._inlined(r.lam)) for r in e.reds))
        hoisted_code = interchange.hoist_invariant(replace(stm, exp=e), self.names,
                                                   self.types, self.ranges)
        if hoisted_code is not None:
            self.types.update(param_types(hoisted_code.stms))
            return list(self.host_body(hoisted_code).stms)
        stm, e = _widened(replace(stm, exp=e), self.names)
        self.flat_version_possible = False
        outer = self.translate(e, deep=False)
        if outer is None:
            return None
        hoisted, op = outer
        if isinstance(op, SegMap) and binds_arrays(op.body):
            # The rows' shapes as the threads found them (the lambda may say
            # `[?]`), under the space's inner dimensions: the map's rows.
            lam = replace(stm.exp.map_lam,
                          ret=tuple(ir.array_of(t, op.space.dims[1:]) for t in op.ret))
            op = replace(op, host=replace(stm, exp=replace(stm.exp, map_lam=lam)))
        if not self.incremental or self.fun_guards >= MAX_GUARDS:
            self.capped |= self.incremental
            return [*hoisted, ir.Stm(stm.pat, op)]
        # Keep a guard for this map before the maps inside it take theirs:
        # under the cap, outer maps get versions first.
        self.fun_guards += 1
        intra = self.intra(stm, e, hoisted)
        flat: Version | None = None
        deep: Version | None = None
        if self.flat_version_possible:
            translated = self.translate(e, deep=True)
            if translated is not None and len(translated[1].space.dims) > len(op.space.dims):
                deep = self._renamed(translated, hoisted)
        counters = (self.num_thresholds, self.fun_guards, self.capped)
        split = self.further(stm, interchange.split_parallel_redomap(replace(stm, exp=e),
                                                                     self.names))
        top = deep[1] if deep is not None else op
        if split is not None and not _deeper(split, len(top.space.dims)):
            # Its map runs the inner work sequentially too: no gain, and the
            # guards it made are not the program's.
            split = None
            self.num_thresholds, self.fun_guards, self.capped = counters
        if split is not None:
            flat = split if deep is None else self.redomap_versions(stm.pat, deep, split)
        elif self.flat_version_possible:
            flat = deep
        elif loop_parallelism(e.map_lam.body):
            flat = self.further(stm, interchange.map_loop(replace(stm, exp=e), self.names))
        elif (interchange.parallel_statements(e.map_lam.body) >= 2
              or interchange.work_after_parallel(e.map_lam.body)):
            flat = self.further(stm, interchange.distribute(replace(stm, exp=e), self.names,
                                                            ranges=self.ranges))
        else:
            flat = self.further(stm, interchange.map_if(replace(stm, exp=e), self.names))
        return [*hoisted, *self.versions(stm.pat, op, intra, flat)]

    def further(self, stm: ir.Stm, code: ir.Body | None) -> ir.Body | None:
        """The version that flattens a map further: its rewrite `code` into
        host code (`interchange.map_loop`: a loop of a map; `distribute`: a
        map per parallel statement; `map_if`: an `if` of two maps), each map
        flattened in turn, with versions of its own."""
        if code is None:
            return None
        self.types.update(param_types(code.stms))
        return self.host_body(code)

    def intra(self, stm: ir.Stm, e: ir.Screma,
              hoisted: list[ir.Stm]) -> Version | None:
        """The intra-block version of map `e` (`futgen.flatten.intra`), if
        it is worth having and its body can be block code."""
        if e.scans or e.reds or not worth_intra(e.map_lam.body):
            return None
        kb = KernelBuilder(self.names, self.types)
        try:
            op = intra_version(e, kb, stm)
        except NotIntra:
            return None
        return self._renamed((kb.hoisted, op), hoisted)

    def _renamed(self, version: Version, hoisted: list[ir.Stm]) -> Version:
        """A second translation of a Screma: the statements it hoists that
        the first did not, and its SegOp with every name it binds renamed,
        so names stay unique in the program."""
        more = [s for s in version[0] if all(s.pat != h.pat for h in hoisted)]
        op = version[1]
        host = getattr(op, "host", None)
        if host is None:
            return more, self.names.renamed(op)
        # The core statement a SegMap keeps binds names the SegOp may use
        # (hoisted): renamed on its own, it leaves those uses alone.
        return more, replace(self.names.renamed(replace(op, host=None)),
                             host=self.names.renamed(host))

    def translate(self, e: ir.Screma, deep: bool) -> tuple[list[ir.Stm], SegOp] | None:
        """The host statements to hoist and the SegOp computing `e`, or None.
        `deep`: reductions and scans under several maps become segmented
        SegOps over all of them (else the threads run them sequentially)."""
        kb = KernelBuilder(self.names, self.types)
        try:
            op = self.level(kb, e, (), (), [], deep)
        except NotKernel:
            return None
        return kb.hoisted, op

    def versions(self, pat: tuple[ir.Param, ...], outer: SegOp, intra: Version | None,
                 flat: Version | ir.Body | None) -> list[ir.Stm]:
        """The guarded choice of versions (rule G3 of incremental flattening):

            if suff_outer_par <= P then outer
            else if suff_intra_par <= P * intra_par && fits then intra
            else flat

        `outer` runs the inner parallelism sequentially in each of its P
        threads, `intra` runs it in a block per point, `flat` flattens it
        too.  Without a flat version, `outer` is the fallback:
        `if suff_outer_par <= P || !fits then outer else intra`."""
        if intra is None and flat is None:
            self.fun_guards -= 1  # the guard `segop` kept for it
            return [ir.Stm(pat, outer)]
        stms, par = self.product(outer.space.dims)
        outer_ok = self.threshold(stms, "suff_outer_par", par)
        if intra is None:
            assert flat is not None
            return [*stms, self.choice(pat, outer_ok, ([], outer), flat)]
        more, op = intra
        assert isinstance(op, SegMap)
        stms += more
        fits = self.fits(stms, op)
        if flat is None:
            unfit = self.bool_op(stms, ir.UnOp("not", "bool", fits))
            take_outer = self.bool_op(stms, ir.BinOp("|", "bool", outer_ok, unfit))
            return [*stms, self.choice(pat, take_outer, ([], outer), ([], op))]
        inner: list[ir.Stm] = []
        block_par, intra_par = intra_parallelism(op, self.names)
        inner += block_par
        inner_par = self.bool_op(inner, ir.BinOp("*", "i64", par, intra_par), "par")
        intra_ok = self.threshold(inner, "suff_intra_par", inner_par)
        take_intra = self.bool_op(inner, ir.BinOp("&", "bool", intra_ok, fits))
        res = tuple(ir.Param(self.names.fresh(p.name.base), p.type) for p in pat)
        inner.append(self.choice(res, take_intra, ([], op), flat))
        rest = ir.Body(tuple(inner), tuple(ir.Var(p.name) for p in res))
        return [*stms, self.choice(pat, outer_ok, ([], outer), rest)]

    def redomap_versions(self, pat: tuple[ir.Param, ...], top: Version,
                         split: ir.Body) -> ir.Body:
        """Rule G9 under a map nest: `if suff_outer_par <= P then top else
        split`, where `top` is the redomap as a SegRed segmented by the maps,
        its map function sequential in each thread, and `split` its map and
        reduction flattened on their own."""
        stms, par = self.product(top[1].space.dims)
        top_ok = self.threshold(stms, "suff_outer_par", par)
        res = tuple(ir.Param(self.names.fresh(p.name.base), p.type) for p in pat)
        stms.append(self.choice(res, top_ok, top, split))
        return ir.Body(tuple(stms), tuple(ir.Var(p.name) for p in res))

    def threshold(self, stms: list[ir.Stm], base: str, par: ir.SubExp) -> ir.Var:
        """`threshold(<fn>.<base>_<k>) <= par`, a new tuning parameter."""
        name = f"{self.fun_name}.{base}_{self.num_thresholds}"
        self.num_thresholds += 1
        cond = self.names.fresh(base)
        stms.append(ir.Stm((ir.Param(cond, ir.Prim("bool")),), ThresholdCmp(name, par)))
        return ir.Var(cond)

    def fits(self, stms: list[ir.Stm], op: SegMap) -> ir.Var:
        """Whether a block of the intra-block version `op` fits the device."""
        size_stms, size = shared_bytes(op, self.names)
        stms += size_stms
        return self.bool_op(stms, BlockFits(size), "fits")

    def bool_op(self, stms: list[ir.Stm], e: ir.Exp, base: str = "cond") -> ir.Var:
        """`e` bound to a fresh name (a bool, or an i64 for `par`)."""
        v = self.names.fresh(base)
        t = ir.Prim("i64") if base == "par" else ir.Prim("bool")
        stms.append(ir.Stm((ir.Param(v, t),), e))
        return ir.Var(v)

    def choice(self, pat: tuple[ir.Param, ...], cond: ir.SubExp, then_: Version,
               else_: Version | ir.Body) -> ir.Stm:
        """`let pat = if cond then <then_> else <else_>`; a version is its
        own host statements and SegOp, or a body (a further choice)."""
        branches = []
        for version in (then_, else_):
            if isinstance(version, ir.Body):
                branches.append(version)
                continue
            stms, op = version
            res = tuple(ir.Param(self.names.fresh(p.name.base), p.type) for p in pat)
            branches.append(ir.Body((*stms, ir.Stm(res, op)),
                                    tuple(ir.Var(p.name) for p in res)))
        return ir.Stm(pat, ir.If(cond, *branches, tuple(p.type for p in pat)))

    def product(self, dims: tuple[ir.SubExp, ...]) -> tuple[list[ir.Stm], ir.SubExp]:
        """Host statements multiplying `dims`, and the product."""
        stms: list[ir.Stm] = []
        return stms, i64_product(dims, self.names, stms, "par")

    def writes(self, stm: ir.Stm) -> list[ir.Stm]:
        """A Scatter or Hist as a SegScatter or SegHist over its rows (rule 6),
        or `stm` itself when its destinations are not arrays of scalars."""
        e = stm.exp
        assert isinstance(e, ir.Scatter | ir.Hist)
        lam = self._inlined(e.lam)
        kb = KernelBuilder(self.names, self.types)
        gtid = self.names.fresh("gtid")
        kb.local.add(gtid)
        pre: list[ir.Stm] = []
        try:
            if not all(isinstance(t, ir.Prim) for t in lam.ret):
                raise NotKernel("a write of a row")
            if isinstance(e, ir.Hist):
                ops = tuple(replace(o, lam=kb.op_lambda(self._inlined(o.lam))) for o in e.ops)
            for p, a in zip(lam.params, e.arrs):
                kb.bind_row(p, a, (ir.Var(gtid),), pre)
            body = _prepend(pre, kb.body(lam.body))
            if kb.private:
                raise NotKernel("writes whose threads need private arrays")
        except NotKernel:
            return [stm]
        space = SegSpace((gtid,), (e.w,))
        op: SegHist | SegScatter
        if isinstance(e, ir.Hist):
            op = SegHist(LEVEL, space, ops, lam.ret, body, stm)
        else:
            op = SegScatter(LEVEL, space, e.dests, lam.ret, body, stm)
        return [*kb.hoisted, ir.Stm(stm.pat, op)]

    def _inlined(self, lam: ir.Lambda) -> ir.Lambda:
        """`lam` with its calls inlined and simplified: inlining binds each
        parameter and result anew, and those copies would otherwise be
        arrays that distribution passes between its maps."""
        inlined = inline(lam.body, self.funs, self.names)
        if inlined == lam.body:
            return lam
        self.types.update(param_types(inlined))
        names = free_vars(replace(lam, body=inlined))
        # The sizes in those names' types are in scope too (simplification
        # may replace an array's size by the name its type gives).
        names |= {n for v in names for n in vnames(self.types[v])}
        free = tuple(ir.Param(v, self.types[v]) for v in sorted(names, key=lambda v: v.tag))
        # Imported here: futgen.opt.simplify imports flattening's names.
        from futgen.opt.simplify import simplify_function

        fun = simplify_function(ir.Function("lambda", (*lam.params, *free), lam.ret, inlined))
        return replace(lam, body=fun.body)

    def level(self, kb: KernelBuilder, e: ir.Screma, gtids: tuple[ir.VName, ...],
              dims: tuple[ir.SubExp, ...], pre: list[ir.Stm],
              deep: bool) -> SegMap | SegRed | SegScan:
        """The SegOp for Screma `e` nested in a map nest of space (`gtids`, `dims`),
        whose threads first run the kernel statements `pre`."""
        if isinstance(e.w, ir.Var) and e.w.name in kb.local:
            raise NotKernel("the width depends on the thread")
        gtid = self.names.fresh("gtid")
        kb.local.add(gtid)
        gtids, dims, pre = (*gtids, gtid), (*dims, e.w), list(pre)
        for p, a in zip(e.map_lam.params, e.arrs):
            kb.bind_row(p, a, (ir.Var(gtid),), pre)
        space = SegSpace(gtids, dims)
        if e.scans and e.reds:
            raise NotKernel("a Screma with both scans and reductions")
        if e.scans or e.reds:
            ops = tuple(SegBinOp(kb.op_lambda(o.lam), o.nes,
                                 getattr(o, "comm", False) or commutative_operator(o.lam))
                        for o in (*e.scans, *e.reds))
            if any(isinstance(ne, ir.Var) and ne.name in kb.local
                   for o in ops for ne in o.nes):
                raise NotKernel("a neutral element computed by the thread")
            body = kb.body(e.map_lam.body)
            if kb.private:
                raise NotKernel("a reduction or scan whose threads need private arrays")
            ret = self._scalar_ret(e.map_lam)
            kind = SegScan if e.scans else SegRed
            return kind(LEVEL, space, ops, ret, _prepend(pre, body))
        nested = self.nest(kb, e.map_lam.body, gtids, dims, pre, deep)
        if nested is not None:
            return nested
        body = kb.body(e.map_lam.body, e.map_lam.ret)
        ret = self._map_ret(kb, e.map_lam, body)
        return SegMap(LEVEL, space, ret, _prepend(pre, body))

    def nest(self, kb: KernelBuilder, body: ir.Body, gtids: tuple[ir.VName, ...],
             dims: tuple[ir.SubExp, ...], pre: list[ir.Stm],
             deep: bool) -> SegMap | SegRed | SegScan | None:
        """The SegOp with one more dimension, when `body` ends in a Screma that
        returns the body's results (rules 2 and 3), or None.  On success `kb`
        holds the inner translation; on failure it is left as it was."""
        body = _forward_copies(fuse_body(body))
        if not body.stms:
            return None
        last = body.stms[-1]
        inner = last.exp
        if (not isinstance(inner, ir.Screma)
                or tuple(ir.Var(p.name) for p in last.pat) != body.result):
            return None
        if (inner.scans or inner.reds) and len(gtids) > 1 and not deep:
            self.flat_version_possible = True
            return None
        trial = kb.copy()
        stms = list(pre)
        try:
            trial.stms(body.stms[:-1], stms)
            if trial.private - kb.private:
                return None  # every thread of the inner map would build the arrays again
            op = self.level(trial, inner, gtids, dims, stms, deep)
        except NotKernel:
            return None
        kb.views, kb.local, kb.hoisted = trial.views, trial.local, trial.hoisted
        kb.private, kb.types = trial.private, trial.types
        return op

    @staticmethod
    def _map_ret(kb: KernelBuilder, lam: ir.Lambda, body: ir.Body) -> tuple[ir.Type, ...]:
        """A SegMap's result types: scalars, or rows of a shape the host knows
        (the private arrays' shapes where the lambda's type leaves one open)."""
        ret = []
        for t, r in zip(lam.ret, body.result):
            if isinstance(t, ir.ArrayT) and isinstance(r, ir.Var):
                t = kb.types[r.name]
                if not all(d is not None and kb.invariant_size(d) for d in t.shape):
                    raise NotKernel("a thread would return an array of unknown size")
            ret.append(t)
        return tuple(ret)

    @staticmethod
    def _scalar_ret(lam: ir.Lambda) -> tuple[ir.Type, ...]:
        if not all(isinstance(t, ir.Prim) for t in lam.ret):
            raise NotKernel("a thread would return an array")
        return lam.ret


def _deeper(body: ir.Body, dims: int) -> bool:
    """Whether host code `body` has a SegOp over more than `dims` dimensions."""
    for stm in body.stms:
        match stm.exp:
            case SegMap() | SegRed() | SegScan() | SegHist() | SegScatter():
                if len(stm.exp.space.dims) > dims:
                    return True
            case ir.If(_, then_, else_, _):
                if _deeper(then_, dims) or _deeper(else_, dims):
                    return True
    return False


def _forward_copies(body: ir.Body) -> ir.Body:
    """`body` without its top-level copies `let y = x`, every `y` replaced by `x`
    (inlining leaves such copies between a call's body and its result)."""
    subst: dict[ir.VName, ir.VName] = {}
    stms = []
    for stm in body.stms:
        match stm.exp:
            case ir.SubExpOp(ir.Var(v)) if len(stm.pat) == 1:
                subst[stm.pat[0].name] = subst.get(v, v)
            case _:
                stms.append(stm)
    return substitute(ir.Body(tuple(stms), body.result), subst)


def _widened(stm: ir.Stm, names: NameSource) -> tuple[ir.Stm, ir.Screma]:
    """Map `stm`, returning all the results of the Screma its body ends in
    where it returns only some (`let (a, b) = scan ... in b`, a fused
    tridiagonal solve), so that the Screma can become an inner dimension
    of the SegOp (rules 2 and 3); the extra results are bound to fresh,
    unused names."""
    e = stm.exp
    assert isinstance(e, ir.Screma)
    lam = _widened_lambda(e.map_lam, names) if not (e.scans or e.reds) else None
    if lam is None:
        return stm, e
    at = {r.name: p for r, p in zip(e.map_lam.body.result, stm.pat)}  # type: ignore[union-attr]
    pat = tuple(at.get(r.name) or ir.Param(names.fresh(r.name.base), ir.array_of(t, (e.w,)))
                for r, t in zip(lam.body.result, lam.ret))  # type: ignore[union-attr]
    e = replace(e, map_lam=lam)
    return ir.Stm(pat, e), e


def _widened_lambda(lam: ir.Lambda, names: NameSource) -> ir.Lambda | None:
    """`lam` returning every result of the map or Screma its body ends in,
    of which it returns some, each once (inner maps widened first); None
    if it already returns them all or ends otherwise."""
    body = _forward_copies(fuse_body(lam.body))
    if not body.stms or not isinstance(body.stms[-1].exp, ir.Screma):
        return None
    last = body.stms[-1]
    inner = last.exp
    assert isinstance(inner, ir.Screma)
    if not (inner.scans or inner.reds):
        last, _ = _widened(last, names)
        body = ir.Body((*body.stms[:-1], last), body.result)
    results = {r.name for r in body.result if isinstance(r, ir.Var)}
    bound = {p.name for p in last.pat}
    if (len(results) != len(body.result) or not results <= bound or results == bound):
        return None if last is body.stms[-1] else replace(lam, body=body)
    return ir.Lambda(lam.params, ir.Body(body.stms, tuple(ir.Var(p.name) for p in last.pat)),
                     tuple(p.type for p in last.pat))


def _prepend(stms: list[ir.Stm], body: ir.Body) -> ir.Body:
    return ir.Body((*stms, *body.stms), body.result)


__all__ = ["FLATTENINGS", "MAX_GUARDS", "TooManyVersions", "flatten"]
