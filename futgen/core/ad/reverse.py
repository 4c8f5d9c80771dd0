"""Reverse mode: `vjp` by a return sweep over a forward copy of the function.

The function's body is copied into the caller with its calls inlined (the
forward sweep); then its statements are visited last to first, each adding
its operands' adjoints from its result's (the return sweep), as in
Futhark's `AD/Rev.hs`.  Every value the sweep needs is still in scope, so
straight-line code needs no tape.  Nested bodies are recomputed inside
their adjoint code rather than stored:

* `if`: each branch's adjoint body re-runs the branch, then sweeps it, and
  returns the adjoints of the free variables it touched;
* a loop: a copy of the loop first records each iteration's loop values
  (the tape, one array per loop value: arrays must keep their size from
  iteration to iteration; a while loop is first run once more to count
  its iterations); a loop counting down then restores them, re-runs the
  body and sweeps it, carrying the loop values' adjoints and the free
  variables' as loop values;
* `map`: a map over the rows and their adjoints re-runs and sweeps the
  function per row; reads `a[i]` of free arrays become (index, adjoint)
  pairs added into the array's adjoint by a histogram (Futhark's
  scatter-add), and other adjoints of free variables are summed over the
  rows (for an array used whole, such as `w` in `map2 (*) row w`, one
  adjoint per row: memory in proportion to the map's work);
* `reduce`: with `+`, the adjoint is the result's, copied; with any other
  operator on scalars, Futhark's rule: exclusive scans from both sides give
  each element's neighbours, and the operator's partials (by forward mode)
  the adjoint; rows reduced by `map2 op`, the same per column; `scan` with
  `+`: a reversed scan of the adjoints.

* `with_vjp f df x`: the arguments' adjoints are `df` of the results and
  their adjoints (the statement stays in the forward sweep for this);
* histograms by `+` and `scatter`: the values' adjoints are gathered from
  the result's at their bins and positions (zero where ignored), and the
  function computing them is swept per row as a map's; histograms by `max`
  and `min`: a histogram of (value, row) pairs finds each bin's winner,
  which alone gets the bin's adjoint.

What the sweep does not handle (histograms by other operators than `+`,
`max` and `min`, scans of arrays, of tuples of mixed types or of more than
MAX_SCAN_TUPLE values, reductions of arrays by other than `map2 op`)
raises `NotReversible`, and
`vjp` uses forward mode instead (`futgen.core.ad.basis`).  Adjoints are
values of the primal's type, integers included (as forward mode's
tangents); bools have none.
"""

from __future__ import annotations

from futgen.core import ir
from futgen.core.ad.adjoints import NotReversible, _i64, plus, sum_leading
from futgen.core.ad.derivatives import (
    BINARY_DERIVATIVES,
    BITWISE,
    PIECEWISE_CONSTANT,
    UNARY_DERIVATIVES,
    Scalar,
)
from futgen.core.ad.forward import (
    I64,
    Forward,
    array_dims,
    emit_zero,
    zero_stms,
)
from futgen.core.ad.soacs import SoacRules
from futgen.core.internalise import Internaliser, _constant
from futgen.errors import Loc, UnsupportedFeature
from futgen.frontend import types as T

__all__ = ["NotReversible", "Reverse", "reverse_vjp"]


def reverse_vjp(it: Internaliser, lam: ir.Lambda, xs: list[ir.SubExp],
                ybars: list[ir.SubExp], loc: Loc | None) -> list[ir.SubExp]:
    """The cotangents of arguments `xs` of `lam` for result cotangents `ybars`."""
    start = len(it.stms)
    ys, _ = Forward(it, loc, replay=True).inline(lam, xs, [None] * len(xs))
    rv = Reverse(it, loc)
    for y, ybar in zip(ys, ybars):
        rv.add(y, ybar)
    rv.sweep(it.stms[start:])
    return [rv.adj.get(x.name) if isinstance(x, ir.Var) and x.name in rv.adj
            else emit_zero(it, x) for x in xs]


class Reverse(SoacRules):
    """One return sweep: the adjoint of every value that has one so far.

    `owned` are adjoint arrays this sweep made, which it may update in place;
    `sparse` are the arrays free in a map's function whose reads collect
    (indices, adjoint) pairs in `pairs` instead of a dense adjoint.
    """

    def __init__(self, it: Internaliser, loc: Loc | None,
                 sparse: frozenset[ir.VName] = frozenset()):
        self.it, self.loc = it, loc
        self.adj: dict[ir.VName, ir.SubExp] = {}
        self.owned: set[ir.VName] = set()
        self.sparse = sparse
        self.pairs: dict[ir.VName, list[tuple[tuple[ir.SubExp, ...], ir.SubExp]]] = {}

    # ------------------------------------------------------------ adjoints

    def emit(self, e: ir.Exp, t: ir.Type) -> ir.SubExp:
        return self.it.bind1(e, t, "adj")

    def type_of(self, x: ir.SubExp | ir.VName) -> ir.Type:
        return self.it.type_of(ir.Var(x) if isinstance(x, ir.VName) else x)

    def add(self, v: ir.SubExp | ir.VName, c: ir.SubExp) -> None:
        """Adds contribution `c` to the adjoint of `v`."""
        v = ir.Var(v) if isinstance(v, ir.VName) else v
        if not isinstance(v, ir.Var) or ir.elem_prim(self.type_of(v)) == "bool":
            return
        old = self.adj.get(v.name)
        if old is None:
            self.adj[v.name] = c
            return
        self.adj[v.name] = new = plus(self.it, old, c)
        if isinstance(new, ir.Var) and isinstance(self.type_of(new), ir.ArrayT):
            self.owned.add(new.name)

    def owned_adjoint(self, v: ir.VName) -> ir.SubExp:
        """The adjoint array of `v`, made this sweep's own (to update in place)."""
        a = self.adj.get(v)
        if a is None:
            a = emit_zero(self.it, ir.Var(v))
        elif a.name not in self.owned:
            a = self.emit(ir.Copy(a.name), self.type_of(a))
        self.owned.add(a.name)
        self.adj[v] = a
        return a

    # ------------------------------------------------------------ the sweep

    def sweep(self, stms: list[ir.Stm]) -> None:
        for s in reversed(stms):
            if any(p.name in self.adj for p in s.pat):
                self.stm(s)

    def stm(self, s: ir.Stm) -> None:
        e = s.exp
        compound = {ir.If: self.if_, ir.Loop: self.loop, ir.Screma: self.screma,
                    ir.Hist: self.hist, ir.Scatter: self.scatter,
                    ir.CustomVjp: self.custom_vjp}
        if type(e) in compound:
            compound[type(e)](s, e)
        elif isinstance(e, ir.Apply):  # a replay inlines calls; never sweep past one
            raise NotReversible("calls")
        else:
            self.basic(e, ir.Var(s.pat[0].name), self.adj[s.pat[0].name])

    def custom_vjp(self, s: ir.Stm, e: ir.CustomVjp) -> None:
        """`with_vjp f df x`: the arguments' adjoints are `df results ybars`."""
        results = [ir.Var(p.name) for p in s.pat]
        ybars = [self.adj.get(p.name) or emit_zero(self.it, r) for p, r in zip(s.pat, results)]
        adjs, _ = Forward(self.it, self.loc, replay=True).inline(
            e.adjoint, results + ybars, [None] * (2 * len(results)))
        for a, adj in zip(e.args, adjs):
            self.add(a, adj)

    def basic(self, e: ir.Exp, y: ir.Var, ybar: ir.SubExp) -> None:
        match e:
            case ir.SubExpOp(x) | ir.Copy(x):
                self.add(x, ybar)
            case ir.UnOp(op, prim, x):
                self.unop(op, prim, x, y, ybar)
            case ir.BinOp(op, prim, x, x2):
                self.binop(op, prim, x, x2, y, ybar)
            case ir.ConvOp(src, dst, x):
                if "bool" not in (src, dst):
                    self.add(x, self.emit(ir.ConvOp(dst, src, ybar), ir.Prim(src)))
            case ir.Index(arr, sl, loc):
                self.index(arr, sl, ybar, loc)
            case ir.Update(arr, sl, v, loc):
                t = self.type_of(arr)
                self.add(v, self.emit(ir.Index(ybar.name, sl, loc), ir.indexed_type(t, sl)))
                rest = self.emit(ir.Copy(ybar.name), t)
                hole = emit_zero(self.it, v)
                self.add(arr, self.emit(ir.Update(rest.name, sl, hole, loc), t))
            case ir.ArrayLit(elems, elem):
                for k, x in enumerate(elems):
                    self.add(x, self.emit(ir.Index(ybar.name, (ir.DimFix(_i64(k)),)), elem))
            case ir.Replicate(shape, v):
                self.add(v, sum_leading(self.it, ybar, len(shape)))
            case ir.Reshape(arr, _shape, loc):
                dims = array_dims(self.it, ir.Var(arr))
                self.add(arr, self.emit(ir.Reshape(ybar.name, tuple(dims), loc),
                                        ir.ArrayT(ir.elem_prim(self.type_of(arr)), tuple(dims))))
            case ir.Rearrange(arr, perm):
                inverse = tuple(sorted(range(len(perm)), key=lambda k: perm[k]))
                self.add(arr, self.emit(ir.Rearrange(ybar.name, inverse), self.type_of(arr)))
            case ir.Concat(arrs):
                offset: ir.SubExp = _i64(0)
                for a in arrs:
                    w = self.it.width(ir.Var(a))
                    sl = (ir.DimSlice(offset, w, _i64(1)),)
                    self.add(a, self.emit(ir.Index(ybar.name, sl), self.type_of(a)))
                    offset = self.emit(ir.BinOp("+", "i64", offset, w), I64)
        # Iota, ArraySize, CmpOp, Assert: no operand with an adjoint.

    def unop(self, op: str, prim: str, x: ir.SubExp, y: ir.SubExp, ybar: ir.SubExp) -> None:
        if prim == "bool" or op in PIECEWISE_CONSTANT or op in ("not", "bnot", "to_bits",
                                                                  "from_bits"):
            return
        s = Scalar(self.emit, prim)
        if op == "neg":
            self.add(x, s.neg(ybar))
        elif op == "abs":
            self.add(x, s.mul(s.un("sgn", x), ybar))
        elif prim in T.FLOATS:
            rule = UNARY_DERIVATIVES.get(op)
            if rule is None:
                raise UnsupportedFeature(f"differentiation of {prim}.{op}", self.loc)
            self.add(x, s.mul(rule(s, x, y), ybar))

    def binop(self, op: str, prim: str, x: ir.SubExp, x2: ir.SubExp, y: ir.SubExp,
              ybar: ir.SubExp) -> None:
        if prim == "bool" or op in BITWISE:
            return
        s = Scalar(self.emit, prim)
        if op == "ldexp":
            self.add(x, s.binop("ldexp", ybar, x2))
            return
        rule = BINARY_DERIVATIVES.get(op)
        if rule is None:
            raise UnsupportedFeature(f"differentiation of {prim}.{op}", self.loc)
        for v, p in zip((x, x2), rule(s, x, x2, y)):
            if not s.is_zero(p):
                self.add(v, s.mul(p, ybar))

    def index(self, arr: ir.VName, sl: tuple[ir.DimIndex, ...], ybar: ir.SubExp,
              loc: Loc | None) -> None:
        t = self.type_of(arr)
        if arr in self.sparse:
            if not all(isinstance(d, ir.DimFix) for d in sl) or len(sl) != len(t.shape):
                raise NotReversible("a slice of an array free in a map's function")
            self.pairs.setdefault(arr, []).append((tuple(d.i for d in sl), ybar))
            return
        a = self.owned_adjoint(arr)
        part = ir.indexed_type(t, sl)
        cur = self.emit(ir.Index(a.name, sl, loc), part)
        new = self.emit(ir.Update(a.name, sl, plus(self.it, cur, ybar), loc), self.type_of(a))
        self.adj[arr] = new
        self.owned.add(new.name)

    # ------------------------------------------------------------ nested bodies

    def copy_lambda(self, lam: ir.Lambda) -> ir.Lambda:
        """`lam` with fresh names (a program binds every name once)."""
        return Forward(self.it, self.loc, replay=True).copy_lambda(lam)

    def replay(self, body: ir.Body, env: dict[ir.VName, ir.SubExp]
               ) -> tuple[list[ir.Stm], list[ir.SubExp]]:
        """Emits a copy of `body` with the names in `env` replaced: its
        statements and results, for a sweep inside the adjoint code."""
        start = len(self.it.stms)
        fw = Forward(self.it, self.loc, replay=True)
        fw.env.update(env)
        res, _ = fw.body(body)
        return self.it.stms[start:], res

    def inner(self, seeds: list[tuple[ir.SubExp, ir.SubExp]], stms: list[ir.Stm],
              start: dict[ir.VName, ir.SubExp] | None = None,
              sparse: frozenset[ir.VName] = frozenset()) -> Reverse:
        """A sweep of `stms` from the adjoints `seeds` (value, adjoint) and
        the free variables' adjoints `start` (arrays made its own)."""
        rv = Reverse(self.it, self.loc, sparse)
        for v, a in (start or {}).items():
            rv.adj[v] = a
            rv.owned.add(a.name) if isinstance(a, ir.Var) else None
        for v, a in seeds:
            rv.add(v, a)
        rv.sweep(stms)
        return rv

    def if_(self, s: ir.Stm, e: ir.If) -> None:
        outer = set(self.it.types)
        seeds = [(k, self.adj[p.name]) for k, p in enumerate(s.pat) if p.name in self.adj]
        branches = []
        for body in (e.then_, e.else_):
            with self.it.nested() as stms:
                copy, res = self.replay(body, {})
                rv = self.inner([(res[k], a) for k, a in seeds], copy)
                branches.append((stms, {v: a for v, a in rv.adj.items() if v in outer}))
        names = sorted({v for _, got in branches for v in got}, key=lambda v: v.tag)
        bodies = []
        for stms, got in branches:
            stms = list(stms)
            result = []
            for v in names:
                if v not in got:
                    zs, got[v] = zero_stms(self.it, ir.Var(v), self.it.types[v])
                    stms += zs
                result.append(got[v])
            bodies.append(ir.Body(tuple(stms), tuple(result)))
        types = [self.it.scrub(self.it.types[v]) for v in names]
        outs = self.it.bind(ir.If(e.cond, bodies[0], bodies[1], tuple(types)), types, "adj")
        for v, o in zip(names, outs):
            self.add(v, o)

    def loop(self, s: ir.Stm, e: ir.Loop) -> None:
        if isinstance(e.form, ir.WhileLoop):
            e = self._counted(e)
        tapes = self.tape(e)
        params = [p for p, _ in e.merge]
        outer = set(self.it.types)
        # Which free variables the body gives adjoints: a sweep whose code is dropped.
        with self.it.nested():
            restored, copy, res = self._replay_iteration(e, tapes)
            rv = self.inner([(r, emit_zero(self.it, r)) for r in res], copy)
            free = sorted((v for v in rv.adj if v in outer), key=lambda v: v.tag)
        adj_params = [ir.Param(self.it.fresh("adj_" + p.name.base), p.type) for p in params]
        acc_params = [ir.Param(self.it.fresh("adj_" + v.base), self.it.scrub(self.it.types[v]))
                      for v in free]
        inits = [self._unique(self.adj.get(p.name) or emit_zero(self.it, ir.Var(p.name)))
                 for p in s.pat]
        inits += [self._unique(self.adj.get(v) or emit_zero(self.it, ir.Var(v))) for v in free]
        with self.it.nested() as stms:
            j = self.it.fresh("j")
            self.it.types[j] = ir.Prim(e.form.prim)
            for q in adj_params + acc_params:
                self.it.types[q.name] = q.type
            restored, copy, res = self._replay_iteration(e, tapes, counting_down=j)
            rv = self.inner([(r, ir.Var(q.name)) for r, q in zip(res, adj_params)], copy,
                            {v: ir.Var(q.name) for v, q in zip(free, acc_params)})
            result = [rv.adj.get(p.name) if p.name in rv.adj else emit_zero(self.it, ir.Var(p.name))
                      for p in restored]
            result += [rv.adj[v] for v in free]
        merge = tuple(zip(adj_params + acc_params, inits))
        form = ir.ForLoop(j, e.form.prim, e.form.bound)
        outs = self.it.bind(ir.Loop(merge, form, ir.Body(tuple(stms), tuple(result))),
                            [q.type for q in adj_params + acc_params], "adj")
        for (_, x), o in zip(e.merge, outs):
            self.add(x, o)
        for v, o in zip(free, outs[len(params):]):
            self.adj[v] = o  # the accumulator started from the adjoint so far
            if isinstance(self.type_of(o), ir.ArrayT):
                self.owned.add(o.name)

    def _counted(self, e: ir.Loop) -> ir.Loop:
        """While loop `e` as a for loop of as many iterations, counted by a
        copy of it that also counts (its condition is then a loop value
        like any other)."""
        fw = Forward(self.it, self.loc, replay=True)
        params, _ = fw.fresh_params(tuple(p for p, _ in e.merge))
        count = ir.Param(self.it.fresh("count"), I64)
        with self.it.nested() as stms:
            self.it.types[count.name] = I64
            res, _ = fw.body(e.body)
            res.append(self.emit(ir.BinOp("+", "i64", ir.Var(count.name), _i64(1)), I64))
        merge = tuple(zip(params + [count], [x for _, x in e.merge] + [_i64(0)]))
        form = ir.WhileLoop(fw.sub(ir.Var(e.form.cond)).name)
        outs = self.it.bind(ir.Loop(merge, form, ir.Body(tuple(stms), tuple(res))),
                            [p.type for p in params] + [I64], "count")
        return ir.Loop(e.merge, ir.ForLoop(self.it.fresh("i"), "i64", outs[-1]), e.body)

    def _unique(self, a: ir.SubExp) -> ir.SubExp:
        """`a`, copied if an array (a loop consumes what it updates in place)."""
        if isinstance(a, ir.Var) and isinstance(self.type_of(a), ir.ArrayT):
            return self.emit(ir.Copy(a.name), self.type_of(a))
        return a

    def tape(self, e: ir.Loop) -> list[ir.SubExp]:
        """A copy of loop `e` that also records the loop values at the start
        of each iteration: one array per loop value, `bound` rows."""
        n = e.form.bound
        if e.form.prim != "i64":
            n = self.emit(ir.ConvOp(e.form.prim, "i64", n), I64)
        shapes = [[n, *(array_dims(self.it, x) if isinstance(self.type_of(x), ir.ArrayT) else [])]
                  for _, x in e.merge]
        inits = [self.emit(ir.Replicate(tuple(sh), _constant(0, ir.elem_prim(p.type))),
                           ir.ArrayT(ir.elem_prim(p.type), tuple(sh)))
                 for (p, _), sh in zip(e.merge, shapes)]
        fw = Forward(self.it, self.loc, replay=True)
        params, _ = fw.fresh_params(tuple(p for p, _ in e.merge))
        tape_params = [ir.Param(self.it.fresh("tape"), self.type_of(t)) for t in inits]
        i = self.it.fresh(e.form.i.base)
        fw.env[e.form.i] = ir.Var(i)
        with self.it.nested() as stms:
            self.it.types[i] = ir.Prim(e.form.prim)
            for q in tape_params:
                self.it.types[q.name] = q.type
            idx = ir.Var(i) if e.form.prim == "i64" else \
                self.emit(ir.ConvOp(e.form.prim, "i64", ir.Var(i)), I64)
            recorded = [self.emit(ir.Update(t.name, (ir.DimFix(idx),), ir.Var(p.name)), t.type)
                        for t, p in zip(tape_params, params)]
            res, _ = fw.body(e.body)
        body = ir.Body(tuple(stms), tuple(res) + tuple(recorded))
        merge = tuple(zip(params + tape_params, [x for _, x in e.merge] + inits))
        outs = self.it.bind(ir.Loop(merge, ir.ForLoop(i, e.form.prim, e.form.bound), body),
                            [q.type for q in params + tape_params], "tape")
        return outs[len(params):]

    def _replay_iteration(self, e: ir.Loop, tapes: list[ir.SubExp],
                          counting_down: ir.VName | None = None
                          ) -> tuple[list[ir.Param], list[ir.Stm], list[ir.SubExp]]:
        """In a loop counting `j` up, iteration i = bound - 1 - j of `e`
        again: its loop values restored from the tapes and its body copied."""
        prim = e.form.prim
        j = ir.Var(counting_down) if counting_down is not None else _constant(0, prim)
        last = self.emit(ir.BinOp("-", prim, e.form.bound, _constant(1, prim)), ir.Prim(prim))
        i = self.emit(ir.BinOp("-", prim, last, j), ir.Prim(prim))
        idx = i if prim == "i64" else self.emit(ir.ConvOp(prim, "i64", i), I64)
        restored = []
        for (p, _), t in zip(e.merge, tapes):
            v = self.emit(ir.Index(t.name, (ir.DimFix(idx),)), ir.row(self.type_of(t)))
            restored.append(ir.Param(v.name, self.type_of(v)))
        env = {p.name: ir.Var(q.name) for (p, _), q in zip(e.merge, restored)}
        env[e.form.i] = i
        copy, res = self.replay(e.body, env)
        return restored, copy, res
