"""The return sweep's rules for SOACs (`futgen.core.ad.reverse` says what
each does); `SoacRules` is mixed into `reverse.Reverse`, whose adjoints,
replays and inner sweeps its methods use."""

from __future__ import annotations

from collections.abc import Callable

from futgen.core import ir
from futgen.core.ad.adjoints import (
    NotReversible,
    _bind_into,
    _flat_index,
    _i64,
    _reverse,
    scatter_add,
    sum_leading,
)
from futgen.core.ad.derivatives import (
    Scalar,
)
from futgen.core.ad.forward import (
    I64,
    Forward,
    array_dims,
    emit_zero,
    indices,
    map_rows,
)
from futgen.core.internalise import Internaliser, _constant

# The largest tuples whose scans reverse mode takes: the adjoints' scan has
# k + k * k components, and one of 4-tuples (20) made a kernel file of 9.5 MB
# once flattening had versioned it (Futhark's tests/ad/scan9; 0.5 MB with
# forward mode), too much for nvcc in a test's time.
MAX_SCAN_TUPLE = 2


class SoacRules:
    """Maps, reductions, scans, histograms and scatters, swept."""


    def screma(self, s: ir.Stm, e: ir.Screma) -> None:
        if not e.scans and not e.reds:
            self.map_(s, e)
            return
        lam = e.map_lam
        if lam.body.stms or lam.body.result != tuple(ir.Var(p.name) for p in lam.params):
            raise NotReversible("a scan or reduction of a mapped function")
        start = 0
        for op in (*e.scans, *e.reds):
            k = len(op.nes)
            outs = [p.name for p in s.pat[start:start + k]]
            if any(o in self.adj for o in outs):
                arrs = list(e.arrs[start:start + k])
                if isinstance(op, ir.Scan):
                    self.scan_(op, e.w, arrs, outs)
                else:
                    self.reduce_(op, e.w, arrs, outs)
            start += k

    def scan_(self, op: ir.Scan, w: ir.SubExp, arrs: list[ir.VName], outs: list[ir.VName]
              ) -> None:
        b = ir.lambda_binop(op.lam)
        if b is None or b.op != "+":
            rows = [ir.row(self.type_of(a)) for a in arrs]
            if not all(isinstance(r, ir.Prim) and r == rows[0] and r.name != "bool"
                       for r in rows):
                raise NotReversible("a scan of arrays, or of tuples of mixed types")
            if len(arrs) > MAX_SCAN_TUPLE:
                raise NotReversible(f"a scan of tuples of more than {MAX_SCAN_TUPLE} values")
            self._general_scan(op, w, arrs, outs)
            return
        ybar = self.adj[outs[0]]
        t = self.type_of(ybar)
        prim = ir.elem_prim(t)
        rev = _reverse(self.it, ybar)
        from futgen.core.builtins import binop_lambda, identity_lambda

        scan = ir.Scan(binop_lambda(self.it, "+", prim), (_constant(0, prim),))
        summed = self.emit(ir.Screma(w, (rev.name,), (scan,), (),
                                     identity_lambda(self.it, [ir.Prim(prim)])), t)
        self.add(arrs[0], _reverse(self.it, summed))

    def _general_scan(self, op: ir.Scan, w: ir.SubExp, arrs: list[ir.VName],
                      outs: list[ir.VName]) -> None:
        """A scan by any operator on k scalars of one type (Futhark's rule):
        with A_i, B_i the Jacobians of `ys[i-1] op xs[i]` in its operands,
        the total adjoint of ys[i] is S_i = ybar_i + A_(i+1)^T S_(i+1), a
        linear recurrence solved by a scan from the right of affine maps
        (k x k matrices), and xs[i]'s adjoint is B_i^T S_i."""
        from futgen.core.builtins import identity_lambda

        k = len(arrs)
        prim = ir.elem_prim(self.type_of(arrs[0]))
        t = ir.Prim(prim)
        ybars = [self.adj.get(o) or emit_zero(self.it, ir.Var(o)) for o in outs]
        idx = indices(self.it, w)

        def jacobians(row: list[ir.SubExp]) -> list[ir.SubExp]:
            """A_i and B_i, row-major, k * k entries each."""
            i, xs = row[0], row[1:]
            prev = [self.neighbour(ir.Var(o), i, -1, ne) for o, ne in zip(outs, op.nes)]
            entries = []
            for operand in (0, 1):  # columns c of A (seeds on ys[i-1]), then of B
                cols = []
                for c in range(k):
                    seed: list[ir.SubExp | None] = [None] * (2 * k)
                    seed[operand * k + c] = _constant(1, prim)
                    _, d = Forward(self.it, self.loc, replay=True).inline(op.lam, prev + xs, seed)
                    cols.append([v if v is not None else _constant(0, prim) for v in d])
                entries += [cols[c][j] for j in range(k) for c in range(k)]
            return entries

        parts = map_rows(self.it, [idx, *map(ir.Var, arrs)], jacobians, "partial")
        a_entries, b_entries = parts[:k * k], parts[k * k:]
        # Element i of the scan (from the right) multiplies by A_(i+1)^T; the
        # last by nothing (S beyond the end is 0).
        coef_arrays = map_rows(self.it, [idx], lambda i: [
            self.neighbour(a_entries[c * k + j], i[0], 1, _constant(0, prim))
            for j in range(k) for c in range(k)], "coef")
        scan = ir.Scan(_affine_compose(self.it, k, prim),
                       tuple([_constant(0, prim)] * k
                             + [_constant(int(j == c), prim) for j in range(k) for c in range(k)]))
        inputs = [_reverse(self.it, a) for a in ybars + coef_arrays]
        totals = self.it.bind(ir.Screma(w, tuple(a.name for a in inputs), (scan,), (),
                                        identity_lambda(self.it, [t] * (k + k * k))),
                              [ir.ArrayT(prim, (w,))] * (k + k * k), "adj")
        big_s = [_reverse(self.it, x) for x in totals[:k]]
        sc = Scalar(self.emit, prim)

        def transposed_product(row: list[ir.SubExp]) -> list[ir.SubExp]:
            """xs[i]'s adjoint: B_i^T S_i."""
            b, s_i = row[:k * k], row[k * k:]
            adjs = []
            for c in range(k):
                total: ir.SubExp = _constant(0, prim)
                for j in range(k):
                    total = sc.add(total, sc.mul(b[j * k + c], s_i[j]))
                adjs.append(total)
            return adjs

        for a, adj in zip(arrs, map_rows(self.it, b_entries + big_s, transposed_product, "adj")):
            self.add(a, adj)

    def neighbour(self, arr: ir.SubExp, i: ir.SubExp, step: int, edge: ir.SubExp) -> ir.SubExp:
        """`arr[i + step]`, or `edge` where that is outside `arr`."""
        return self.gather(arr, [self.emit(ir.BinOp("+", "i64", i, _i64(step)), I64)], edge)

    def reduce_(self, op: ir.Reduce, w: ir.SubExp, arrs: list[ir.VName],
                outs: list[ir.VName]) -> None:
        if len(arrs) == 1 and _is_sum(op.lam):
            ybar = self.adj[outs[0]]
            t = self.type_of(ybar)
            self.add(arrs[0], self.emit(ir.Replicate((w,), ybar), ir.array_of(t, (w,))))
            return
        ybars = [self.adj.get(o) or emit_zero(self.it, ir.Var(o)) for o in outs]
        if all(isinstance(ir.row(self.type_of(a)), ir.Prim) for a in arrs):
            for a, adj in zip(arrs, self._reduce_adjoints(op.lam, op.nes, w, arrs, ybars)):
                self.add(a, adj)
            return
        scalar = _elementwise(op.lam)
        if len(arrs) != 1 or scalar is None or len(self.type_of(arrs[0]).shape) != 2:
            raise NotReversible("a reduction of arrays by an operator other than +")
        self._columns_reduce(scalar, op.nes[0], w, arrs[0], ybars[0])

    def _columns_reduce(self, scalar: ir.Lambda, ne: ir.SubExp, w: ir.SubExp, arr: ir.VName,
                        ybar: ir.SubExp) -> None:
        """`reduce (map2 op) ne xss`: a reduction by `op` of each column."""
        t = self.type_of(arr)
        m = array_dims(self.it, ir.Var(arr))[1]
        cols = self.emit(ir.Rearrange(arr, (1, 0)), ir.ArrayT(t.elem, (m, w)))
        nes = ne if isinstance(ne, ir.Var) else \
            self.emit(ir.Replicate((m,), ne), ir.ArrayT(t.elem, (m,)))
        [adjs] = map_rows(self.it, [cols, nes, ybar], lambda row: self._reduce_adjoints(
            scalar, (row[1],), w, [row[0].name], [row[2]]), "adj")
        self.add(arr, self.emit(ir.Rearrange(adjs.name, (1, 0)), ir.ArrayT(t.elem, (w, m))))

    def _reduce_adjoints(self, lam: ir.Lambda, nes: tuple[ir.SubExp, ...], w: ir.SubExp,
                         arrs: list[ir.VName], ybars: list[ir.SubExp]) -> list[ir.SubExp]:
        """Futhark's rule for a reduction by any operator: element i's adjoint
        is ybar times the partials of `ls[i] op x op rs[i]` in x, where ls and
        rs are the exclusive reductions from the left and from the right."""
        k = len(arrs)
        rows = [ir.row(self.type_of(a)) for a in arrs]
        flipped = ir.Lambda(lam.params[k:] + lam.params[:k], lam.body, lam.ret)
        ls = self._exclusive(self.copy_lambda(lam), nes, w,
                             [ir.Var(a) for a in arrs], rows, from_right=False)
        rs = self._exclusive(self.copy_lambda(flipped), nes, w,
                             [_reverse(self.it, ir.Var(a)) for a in arrs], rows,
                             from_right=True)
        def element(row: list[ir.SubExp]) -> list[ir.SubExp]:
            lv, xv, rv = row[:k], row[k:2 * k], row[2 * k:]
            adjs = []
            for c in range(k):
                fw = Forward(self.it, self.loc, replay=True)
                seed = [None] * k
                seed[c] = _constant(1, ir.elem_prim(rows[c]))
                mid, dmid = fw.inline(lam, lv + xv, [None] * k + seed)
                fw2 = Forward(self.it, self.loc, replay=True)
                _, dz = fw2.inline(lam, mid + rv, dmid + [None] * k)
                s = Scalar(self.emit, ir.elem_prim(rows[c]))
                total = _constant(0, ir.elem_prim(rows[c]))
                for d, yb, t in zip(dz, ybars, rows):
                    if d is not None and ir.elem_prim(t) != "bool":
                        term = s.mul(d, yb) if ir.elem_prim(t) == ir.elem_prim(rows[c]) else \
                            self.emit(ir.ConvOp(ir.elem_prim(t), ir.elem_prim(rows[c]), Scalar(
                                self.emit, ir.elem_prim(t)).mul(d, yb)), rows[c])
                        total = s.add(total, term)
                adjs.append(total)
            return adjs

        return map_rows(self.it, [*ls, *map(ir.Var, arrs), *rs], element, "adj")

    def _exclusive(self, lam: ir.Lambda, nes: tuple[ir.SubExp, ...], w: ir.SubExp,
                   arrs: list[ir.SubExp], rows: list[ir.Type], from_right: bool
                   ) -> list[ir.SubExp]:
        """The exclusive scan of `arrs` by `lam` (element i: the reduction of
        the elements before i), reversed back when the arrays were reversed."""
        from futgen.core.builtins import identity_lambda

        types = [ir.array_of(t, (w,)) for t in rows]
        inclusive = self.it.bind(ir.Screma(w, tuple(a.name for a in arrs), (ir.Scan(lam, nes),),
                                           (), identity_lambda(self.it, rows)), types, "scan")
        def element(i: list[ir.SubExp]) -> list[ir.SubExp]:
            pos = i[0]
            if from_right:  # element i of the result is element w - 1 - i of the scan
                last = self.emit(ir.BinOp("-", "i64", w, _i64(1)), I64)
                pos = self.emit(ir.BinOp("-", "i64", last, pos), I64)
            return [self.neighbour(a, pos, -1, ne) for a, ne in zip(inclusive, nes)]

        return map_rows(self.it, [indices(self.it, w)], element, "ex")

    def map_(self, s: ir.Stm, e: ir.Screma) -> None:
        seeded = [(k, self.adj[p.name]) for k, p in enumerate(s.pat) if p.name in self.adj]
        self.adjoint_map(e.w, e.arrs, e.map_lam, [a for _, a in seeded],
                         lambda res, rows: [(k, r) for (k, _), r in zip(seeded, rows)])

    def hist(self, s: ir.Stm, e: ir.Hist) -> None:
        """A histogram by +: the destination's adjoint is the result's, and
        each value's the result's at its bin (none out of range)."""
        if len(e.ops) == 1 and len(e.ops[0].dests) == 1:
            b = ir.lambda_binop(e.ops[0].lam)
            if b is not None and b.op in ("max", "min"):
                self._extremum_hist(s, e, b.op, b.prim)
                return
        ybars, pos, start = [], [], len(e.ops)
        for op in e.ops:
            if len(op.dests) != 1 or not _is_sum(op.lam) or isinstance(
                    ir.row(self.type_of(op.dests[0])), ir.ArrayT):
                raise NotReversible("histograms by operators other than +, max and min")
            pos.append(start)
            start += 1
        for j, (op, p) in enumerate(zip(e.ops, s.pat)):
            ybar = self.adj.get(p.name)
            ybars.append(ybar)
            if ybar is not None:
                self.add(op.dests[0], ybar)

        def seeds(res: list[ir.SubExp], _rows: list[ir.SubExp]) -> list[tuple[int, ir.SubExp]]:
            return [(v, self.gather(ybar, [res[j]])) for j, (v, ybar) in enumerate(zip(pos, ybars))
                    if ybar is not None]

        self.adjoint_map(e.w, e.arrs, e.lam, [], seeds)

    def _extremum_hist(self, s: ir.Stm, e: ir.Hist, which: str, prim: str) -> None:
        """A histogram by max or min: a bin's adjoint goes to the value that
        won it (the destination's on a tie, else the first row's)."""
        from futgen.core.builtins import identity_lambda

        ybar = self.adj[s.pat[0].name]
        [op], w = e.ops, e.w
        dest = self.it.replay_sources[op.dests[0]]  # the copy holds the result now
        t = ir.Prim(prim)
        bins, values = self.it.bind(
            ir.Screma(w, e.arrs, (), (), self.copy_lambda(e.lam)),
            [ir.ArrayT("i64", (w,)), ir.ArrayT(prim, (w,))], "hist")
        rows = indices(self.it, w)
        m = self.it.width(ir.Var(dest))
        best = [self.emit(ir.Replicate((m,), x), ir.ArrayT(ir.elem_prim(self.type_of(x)), (m,)))
                for x in (op.nes[0], w)]
        pick = ir.HistOp(tuple(b.name for b in best), (op.nes[0], w), _first_extremum(
            self.it, which, prim))
        won_value, won_row = self.it.bind(
            ir.Hist(w, (bins.name, values.name, rows.name), (pick,),
                    identity_lambda(self.it, [I64, t, I64])),
            [ir.ArrayT(prim, (m,)), ir.ArrayT("i64", (m,))], "won")
        def per_bin(row: list[ir.SubExp]) -> list[ir.SubExp]:
            """The row that won the bin, or w where the destination did, and
            the destination's adjoint there."""
            d, v, r, y = row
            keeps = self.emit(ir.CmpOp(">=" if which == "max" else "<=", prim, d, v),
                              ir.Prim("bool"))
            who = self.emit(ir.If(keeps, ir.Body((), (w,)), ir.Body((), (r,)), (I64,)), I64)
            kept = self.emit(ir.If(keeps, ir.Body((), (y,)), ir.Body((), (_constant(0, prim),)),
                                   (t,)), t)
            return [who, kept]

        winner, dest_adj = map_rows(self.it, [ir.Var(dest), won_value, won_row, ybar], per_bin,
                                    "won")
        self.add(op.dests[0], dest_adj)

        def seeds(res: list[ir.SubExp], row: list[ir.SubExp]) -> list[tuple[int, ir.SubExp]]:
            won = self.emit(ir.CmpOp("==", "i64", self.gather(winner, [res[0]]), row[0]),
                            ir.Prim("bool"))
            got = self.gather(ybar, [res[0]])
            return [(1, self.emit(ir.If(won, ir.Body((), (got,)),
                                        ir.Body((), (_constant(0, prim),)), (t,)), t))]

        self.adjoint_map(w, e.arrs, e.lam, [rows], seeds)

    def scatter(self, s: ir.Stm, e: ir.Scatter) -> None:
        """The written values' adjoints are the result's at their positions;
        the destination's is the result's with those positions zeroed."""
        ybars, places, start = [], [], 0
        for d, p in zip(e.dests, s.pat):
            ybars.append(self.adj.get(p.name))
            places.append((start, d.num_idx))
            start += d.num_idx + 1

        def seeds(res: list[ir.SubExp], _rows: list[ir.SubExp]) -> list[tuple[int, ir.SubExp]]:
            return [(at + n, self.gather(ybar, res[at:at + n]))
                    for (at, n), ybar in zip(places, ybars) if ybar is not None]

        written = [(d, ybar, at, n) for d, ybar, (at, n) in zip(e.dests, ybars, places)
                   if ybar is not None]
        indices = self.adjoint_map(e.w, e.arrs, e.lam, [], seeds,
                                   lambda res: [i for _, _, at, n in written
                                                for i in res[at:at + n]])
        from futgen.core.builtins import identity_lambda

        for d, ybar, _, n in written:
            its = [indices.pop(0) for _ in range(n)]
            prim = ir.elem_prim(self.type_of(ybar))
            zeros = self.emit(ir.Replicate((e.w,), _constant(0, prim)),
                              ir.ArrayT(prim, (e.w,)))
            rest = self.emit(ir.Copy(ybar.name), self.type_of(ybar))
            ident = identity_lambda(self.it, [I64] * n + [ir.Prim(prim)])
            holes = self.emit(ir.Scatter(e.w, tuple(i.name for i in its) + (zeros.name,), ident,
                                         (ir.ScatterDest(rest.name, n),)), self.type_of(ybar))
            self.add(d.arr, holes)

    def gather(self, arr: ir.SubExp, idx: list[ir.SubExp], edge: ir.SubExp | None = None
               ) -> ir.SubExp:
        """`arr[idx]`, or `edge` (zero unless given) where `idx` is out of
        bounds (a write or bin that was ignored, the element before the first)."""
        t = self.type_of(arr)
        if len(idx) != len(t.shape):
            raise NotReversible("scatters and histograms of arrays")
        prim = ir.elem_prim(t)
        edge = _constant(0, prim) if edge is None else edge
        ok: ir.SubExp = ir.Constant(True, "bool")
        for k, (i, d) in enumerate(zip(idx, array_dims(self.it, arr))):
            low = self.emit(ir.CmpOp("<=", "i64", _i64(0), i), ir.Prim("bool"))
            high = self.emit(ir.CmpOp("<", "i64", i, d), ir.Prim("bool"))
            both = self.emit(ir.BinOp("&&", "bool", low, high), ir.Prim("bool"))
            ok = both if k == 0 else self.emit(ir.BinOp("&&", "bool", ok, both), ir.Prim("bool"))
        with self.it.nested() as stms:
            got = self.emit(ir.Index(arr.name, tuple(ir.DimFix(i) for i in idx)), ir.Prim(prim))
        return self.emit(ir.If(ok, ir.Body(tuple(stms), (got,)), ir.Body((), (edge,)),
                               (ir.Prim(prim),)), ir.Prim(prim))

    def adjoint_map(self, w: ir.SubExp, arrs: tuple[ir.VName, ...], lam: ir.Lambda,
                    seed_arrays: list[ir.SubExp],
                    seeds: Callable[[list[ir.SubExp], list[ir.SubExp]],
                                    list[tuple[int, ir.SubExp]]],
                    extra: Callable[[list[ir.SubExp]], list[ir.SubExp]] = lambda res: []
                    ) -> list[ir.SubExp]:
        """A map over the rows of `arrs` (and of `seed_arrays`) that re-runs
        `lam` and sweeps it from the adjoints `seeds` gives its results; adds
        the rows' adjoints to `arrs`' and the free variables' to theirs.
        Returns the arrays of the `extra` values it computed per row."""
        outer = set(self.it.types)
        free_arrays = frozenset(v for v in outer if isinstance(self.it.types[v], ir.ArrayT))
        with self.it.nested() as stms:
            rows = [ir.Param(self.it.fresh(p.name.base), p.type) for p in lam.params]
            seed_rows = [ir.Param(self.it.fresh("adj"), ir.row(self.type_of(a)))
                         for a in seed_arrays]
            for p in rows + seed_rows:
                self.it.types[p.name] = p.type
            copy, res = self.replay(lam.body, {p.name: ir.Var(q.name)
                                               for p, q in zip(lam.params, rows)})
            given = seeds(res, [ir.Var(q.name) for q in seed_rows])
            rv = self.inner([(res[k], a) for k, a in given], copy, sparse=free_arrays)
            # Free variables' adjoints per row, summed over the rows below: for
            # an array the function uses whole (`map2 (*) row w`), as much
            # memory as the map's work.
            dense = sorted((v for v in rv.adj if v in outer), key=lambda v: v.tag)
            inputs = [(k, p) for k, p in enumerate(rows) if ir.elem_prim(p.type) != "bool"]
            result = [rv.adj.get(p.name) or emit_zero(self.it, ir.Var(p.name)) for _, p in inputs]
            result += [rv.adj[v] for v in dense]
            pairs = [(v, idx, a) for v, got in rv.pairs.items() for idx, a in got]
            for v, idx, a in pairs:
                result += [_flat_index(self.it, v, idx), a]
            more = extra(res)
            result += more
            types = [self.type_of(r) for r in result]
        types = [self.it.scrub(t) for t in types]
        body = ir.Lambda(tuple(rows + seed_rows), ir.Body(tuple(stms), tuple(result)),
                         tuple(types))
        outs = iter(self.it.bind(ir.Screma(w, arrs + tuple(a.name for a in seed_arrays), (), (),
                                           body),
                                 [ir.array_of(t, (w,)) for t in types], "adj"))
        for k, _ in inputs:
            self.add(arrs[k], next(outs))
        for v in dense:
            self.add(v, sum_leading(self.it, next(outs), 1))
        for v, _, _ in pairs:
            bins, values = next(outs), next(outs)
            self.add(v, scatter_add(self.it, v, w, bins, values))
        return list(outs)


def _is_sum(lam: ir.Lambda) -> bool:
    """Whether `lam` is `+`, or `map2 (+)` on rows (summing vectors)."""
    b = ir.lambda_binop(lam)
    if b is not None:
        return b.op == "+"
    scalar = _elementwise(lam)
    return scalar is not None and _is_sum(scalar)


def _elementwise(lam: ir.Lambda) -> ir.Lambda | None:
    """The scalar operator of `lam` when it is `map2 op` on rows, else None."""
    if len(lam.params) != 2 or len(lam.body.stms) != 1:
        return None
    [stm] = lam.body.stms
    inner = stm.exp
    if (isinstance(inner, ir.Screma) and not inner.scans and not inner.reds
            and inner.arrs == (lam.params[0].name, lam.params[1].name)
            and lam.body.result == (ir.Var(stm.pat[0].name),)
            and all(isinstance(p.type, ir.Prim) for p in inner.map_lam.params)):
        return inner.map_lam
    return None


def _affine_compose(it: Internaliser, k: int, prim: str) -> ir.Lambda:
    """The composition of affine maps z -> b + A z (k-vectors, k x k
    matrices row-major), later one second: (B, M) then (b, A) gives
    (b + A B, A M).  Associative, as composition is."""
    t = ir.Prim(prim)
    acc = [ir.Param(it.fresh("acc"), t) for _ in range(k + k * k)]
    new = [ir.Param(it.fresh("new"), t) for _ in range(k + k * k)]
    stms: list[ir.Stm] = []
    s = Scalar(lambda e, tt: _bind_into(it, stms, e, tt), prim)
    big_b, big_m = [ir.Var(p.name) for p in acc[:k]], [ir.Var(p.name) for p in acc[k:]]
    b, a = [ir.Var(p.name) for p in new[:k]], [ir.Var(p.name) for p in new[k:]]

    def dot(row: int, vec: list[ir.SubExp], stride: int, offset: int) -> ir.SubExp:
        total = s.mul(a[row * k], vec[offset])
        for c in range(1, k):
            total = s.add(total, s.mul(a[row * k + c], vec[c * stride + offset]))
        return total

    vector = [s.add(b[j], dot(j, big_b, 1, 0)) for j in range(k)]
    matrix = [dot(j, big_m, k, c) for j in range(k) for c in range(k)]
    return ir.Lambda(tuple(acc + new), ir.Body(tuple(stms), tuple(vector + matrix)),
                     (t,) * (k + k * k))


def _first_extremum(it: Internaliser, which: str, prim: str) -> ir.Lambda:
    """The operator on (value, row) pairs keeping the larger (smaller) value,
    and of equal values the earlier row: associative and commutative."""
    v1, r1, v2, r2 = (ir.Param(it.fresh(n), ir.Prim(t)) for n, t in
                      (("v", prim), ("r", "i64"), ("v", prim), ("r", "i64")))
    stms: list[ir.Stm] = []

    def let(e: ir.Exp, t: str) -> ir.SubExp:
        return _bind_into(it, stms, e, ir.Prim(t))

    x1, x2, y1, y2 = (ir.Var(p.name) for p in (v1, v2, r1, r2))
    better = let(ir.CmpOp(">" if which == "max" else "<", prim, x2, x1), "bool")
    tie = let(ir.BinOp("&&", "bool", let(ir.CmpOp("==", prim, x2, x1), "bool"),
                       let(ir.CmpOp("<", "i64", y2, y1), "bool")), "bool")
    take = let(ir.BinOp("||", "bool", better, tie), "bool")
    value = let(ir.If(take, ir.Body((), (x2,)), ir.Body((), (x1,)), (ir.Prim(prim),)), prim)
    row = let(ir.If(take, ir.Body((), (y2,)), ir.Body((), (y1,)), (ir.Prim("i64"),)), "i64")
    return ir.Lambda((v1, r1, v2, r2), ir.Body(tuple(stms), (value, row)),
                     (ir.Prim(prim), ir.Prim("i64")))
