"""An interpreter of the GPU IR on NumPy: the executable meaning of SegOps.

Host code is core IR, so this is the core interpreter
(`futgen.core.interpret.Interpreter`) with one more rule: a SegOp evaluates
its kernel body at every point of its segment space (a SegHist or SegScatter
then writes the columns into its destinations as the core Hist and Scatter
do).  Block code (the body of a `BLOCKS` SegMap) runs point by point like
host code, its `BLOCK` SegOps by the same rule.

Kernel bodies bind only scalars (`futgen.gpu.ir`), which makes them easy to
run *vectorised over the space*: every name holds a column with one value
per point, and every scalar operation is elementwise on columns.  Control
flow is vectorised by masking rather than by running both sides: an `If`
runs each branch on the points that take it, and a `Loop` runs its body on
the points still iterating (a `for` bound or `while` condition may differ
between points).  So each point computes exactly what it would alone, and
an index that is out of bounds only in a branch not taken raises nothing.

`vectorise=False` runs the body once per point with the core interpreter
instead: slower, but obviously right, so tests compare the two.

Reductions and scans run along the innermost dimension, segmented by the
outer ones, strictly in order from the neutral element (vectorised across
segments); an operator that is one built-in binary operator with a NumPy
ufunc uses `ufunc.reduce` / `accumulate`, as the core interpreter does.
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Mapping, Sequence
from math import prod

import numpy as np

from futgen.core import ir
from futgen.core.interpret import (
    Env,
    Interpreter,
    IRError,
    Value,
    _binop_of,
    _dtype,
    _out_of_bounds,
    _ufunc_of,
    basic,
    subexp,
)
from futgen.errors import FutharkError
from futgen.flatten.names import free_vars
from futgen.frontend.types import PRIM_DTYPES
from futgen.gpu.ir import (
    BLOCKS,
    BlockFits,
    Scratch,
    SegBinOp,
    SegHist,
    SegMap,
    SegOp,
    SegRed,
    SegScan,
    SegScatter,
    ThresholdCmp,
    binds_arrays,
    num_red_results,
)

Columns = dict[ir.VName, np.ndarray]


def run(prog: ir.Program, entry: str, args: Sequence[Value], *,
        vectorise: bool = True, thresholds: Mapping[str, int] | None = None) -> list[Value]:
    """Call entry point `entry` of GPU IR program `prog` on `args`, with the
    version guards' `thresholds` (name -> value; the defaults elsewhere).

    Arrays passed in are copied first, since entry points may consume them.
    """
    fn = prog.function(entry)
    args = [np.array(a) if isinstance(a, np.ndarray) else a for a in args]
    with np.errstate(all="ignore"):
        return GpuInterpreter(prog, vectorise=vectorise, thresholds=thresholds).call(fn, args)


class GpuInterpreter(Interpreter):
    """The core interpreter plus SegOps."""

    def __init__(self, prog: ir.Program, *, vectorise: bool = True,
                 thresholds: Mapping[str, int] | None = None):
        super().__init__(prog)
        self.vectorise = vectorise
        self.thresholds = dict(thresholds or {})

    def exp(self, e: ir.Exp, pat: tuple[ir.Param, ...], env: Env) -> list[Value]:
        if isinstance(e, SegMap | SegRed | SegScan):
            return self.segop(e, env)
        if isinstance(e, SegHist | SegScatter):
            w = int(subexp(e.space.dims[0], env))
            cols = self.points(e, (w,), env)
            if isinstance(e, SegHist):
                return self.histograms(e.ops, cols, w, env)
            return self.write(e.dests, cols, w, env)
        if isinstance(e, BlockFits):  # shared memory is not limited here
            return [np.bool_(True)]
        if isinstance(e, ThresholdCmp):
            return [np.bool_(self.thresholds.get(e.name, e.default) <= subexp(e.par, env))]
        if isinstance(e, Scratch):  # zeros, so a read before a write is reproducible
            return [np.zeros(tuple(int(subexp(d, env)) for d in e.shape), _dtype(ir.Prim(e.prim)))]
        return super().exp(e, pat, env)

    def segop(self, op: SegMap | SegRed | SegScan, env: Env) -> list[Value]:
        """The results of a SegOp: arrays of the space's shape, or reduced."""
        dims = tuple(int(subexp(d, env)) for d in op.space.dims)
        cols = self.points(op, dims, env)
        if isinstance(op, SegMap):
            return [c.reshape(dims + c.shape[1:]) for c in cols]
        k = num_red_results(op)
        segs = [c.reshape(prod(dims[:-1]), dims[-1]) for c in cols[:k]]
        out: list[Value] = []
        for o in op.ops:
            n = len(o.nes)
            for r in self.segmented(o, segs[:n], isinstance(op, SegScan), env):
                out.append(r.reshape(dims if isinstance(op, SegScan) else dims[:-1]))
            segs = segs[n:]
        return out + [c.reshape(dims) for c in cols[k:]]

    def points(self, op: SegOp, dims: tuple[int, ...],
               env: Env) -> list[np.ndarray]:
        """One column per body result: its value at every point, in row-major order."""
        dtypes = [_dtype(t) for t in op.ret]
        if self.vectorise and op.level != BLOCKS and not binds_arrays(op.body):
            n = prod(dims)
            idx = np.unravel_index(np.arange(n, dtype=np.int64), dims)
            cols: Columns = {g: np.asarray(i, dtype=np.int64) for g, i in zip(op.space.gtids, idx)}
            res = _Vectorised(env).body(op.body, cols, n)
            return [_column(r, n, d) for r, d in zip(res, dtypes)]
        rows = []
        for point in np.ndindex(*dims):
            for g, i in zip(op.space.gtids, point):
                env[g] = np.int64(i)
            rows.append(self.body(op.body, env))
        return [np.array([r[k] for r in rows], dtype=d).reshape(
                    len(rows), *(int(subexp(s, env)) for s in getattr(t, "shape", ())))
                for k, (d, t) in enumerate(zip(dtypes, op.ret))]

    def segmented(self, op: SegBinOp, segs: list[np.ndarray], scan: bool,
                  env: Env) -> list[np.ndarray]:
        """Reduces (or scans) every row of the 2-D `segs` with `op`, in order."""
        nsegs, w = segs[0].shape
        nes = [subexp(x, env) for x in op.nes]
        ufunc = _ufunc_of(op.lam)
        if ufunc is not None and w > 0:
            fn, dtype = ufunc
            combined = (fn.accumulate if scan else fn.reduce)(segs[0], axis=1, dtype=dtype)
            return [np.asarray(_binop_of(op.lam)(nes[0], combined))]
        if not self.vectorise:
            per_seg = [(self.scan if scan else self.reduce)(
                ir.Scan(op.lam, op.nes) if scan else ir.Reduce(op.lam, op.nes),
                [s[j] for s in segs], w, env) for j in range(nsegs)]
            return [np.array([r[k] for r in per_seg], dtype=_dtype(t))
                    for k, t in enumerate(op.lam.ret)]
        vec = _Vectorised(env)
        acc = [_column(ne, nsegs, _dtype(t)) for ne, t in zip(nes, op.lam.ret)]
        steps = []
        for j in range(w):
            args = [*acc, *(s[:, j] for s in segs)]
            cols = {p.name: a for p, a in zip(op.lam.params, args)}
            acc = [_column(r, nsegs, _dtype(t))
                   for r, t in zip(vec.body(op.lam.body, cols, nsegs), op.lam.ret)]
            steps.append(acc)
        if not scan:
            return acc
        return [np.stack([s[k] for s in steps], axis=1) if steps
                else np.empty((nsegs, 0), dtype=_dtype(t))
                for k, t in enumerate(op.lam.ret)]


class _Vectorised:
    """Runs kernel code on columns (one value per point) over a host environment."""

    def __init__(self, env: Env):
        self.env = env
        self._free: dict[int, tuple[ir.Body, set[ir.VName]]] = {}

    def body(self, body: ir.Body, cols: Columns, n: int) -> list[np.ndarray]:
        """The results of `body` at `n` points; binds into `cols`."""
        for stm in body.stms:
            vals = self.exp(stm.exp, cols, n)
            for p, v in zip(stm.pat, vals):
                cols[p.name] = _column(v, n, _dtype(p.type))
        return [self.get(se, cols, n) for se in body.result]

    def get(self, se: ir.SubExp, cols: Columns, n: int) -> np.ndarray:
        if isinstance(se, ir.Var) and se.name in cols:
            return cols[se.name]
        v = subexp(se, self.env)
        return np.broadcast_to(np.asarray(v), (n,))

    def exp(self, e: ir.Exp, cols: Columns, n: int) -> list[Value]:
        match e:
            case ir.Index(arr, sl, loc):
                return [self.index(self.env[arr], sl, loc, cols, n)]
            case ir.Assert(cond, _, loc, args):
                ok = self.get(cond, cols, n)
                if not np.all(ok):
                    lane = int(np.flatnonzero(~np.asarray(ok, dtype=bool))[0])
                    raise FutharkError(e.message([self.get(a, cols, n)[lane] for a in args]),
                                       loc)
                return [np.ones(n, dtype=bool)]
            case ir.If(cond, then_, else_, ret):
                return self.if_(self.get(cond, cols, n).astype(bool), then_, else_, ret, cols, n)
            case ir.Loop():
                return self.loop(e, cols, n)
            case ir.SubExpOp() | ir.UnOp() | ir.BinOp() | ir.CmpOp() | ir.ConvOp() \
                    | ir.ArraySize():
                return [basic(e, ChainMap(cols, self.env))]
        raise IRError(f"{type(e).__name__} is not kernel code")

    def index(self, a: np.ndarray, sl: tuple[ir.DimIndex, ...], loc, cols: Columns,
              n: int) -> np.ndarray:
        if len(sl) != a.ndim or not all(isinstance(d, ir.DimFix) for d in sl):
            raise IRError("an index in kernel code must give a scalar")
        idx = [self.get(d.i, cols, n).astype(np.int64) for d in sl if isinstance(d, ir.DimFix)]
        ok = np.ones(n, dtype=bool)
        for ix, size in zip(idx, a.shape):
            ok &= (ix >= 0) & (ix < size)
        if not ok.all():
            bad = int(np.flatnonzero(~ok)[0])
            _out_of_bounds([int(ix[bad]) for ix in idx], a.shape, loc)
        return a[tuple(idx)]

    def used(self, body: ir.Body, cols: Columns) -> list[ir.VName]:
        """The columns `body` reads (so that masking copies only those)."""
        if id(body) not in self._free:
            self._free[id(body)] = (body, free_vars(body))
        return [v for v in self._free[id(body)][1] if v in cols]

    def subset(self, body: ir.Body, cols: Columns, where: np.ndarray) -> Columns:
        return {v: cols[v][where] for v in self.used(body, cols)}

    def if_(self, cond: np.ndarray, then_: ir.Body, else_: ir.Body,
            ret: tuple[ir.Type, ...], cols: Columns, n: int) -> list[np.ndarray]:
        out = [np.empty(n, dtype=_dtype(t)) for t in ret]
        for branch, mask in ((then_, cond), (else_, ~cond)):
            m = int(mask.sum())
            if m == 0:
                continue
            res = self.body(branch, self.subset(branch, cols, mask), m)
            for o, r in zip(out, res):
                o[mask] = r
        return out

    def loop(self, e: ir.Loop, cols: Columns, n: int) -> list[np.ndarray]:
        """Iterates the points whose loop has not finished, until none is left."""
        vals = [np.array(_column(self.get(v, cols, n), n, _dtype(p.type)))
                for p, v in e.merge]
        names = [p.name for p, _ in e.merge]
        if isinstance(e.form, ir.ForLoop):
            bound = self.get(e.form.bound, cols, n)
            counter = PRIM_DTYPES[e.form.prim].type
        t = 0
        while True:
            if isinstance(e.form, ir.ForLoop):
                active = t < bound
            else:
                active = vals[names.index(e.form.cond)].astype(bool)
            where = np.flatnonzero(active)
            if len(where) == 0:
                return vals
            sub = self.subset(e.body, cols, where)
            sub.update({x: v[where] for x, v in zip(names, vals)})
            if isinstance(e.form, ir.ForLoop):
                sub[e.form.i] = np.full(len(where), counter(t))
            for v, r in zip(vals, self.body(e.body, sub, len(where))):
                v[where] = r
            t += 1


def _column(v: Value, n: int, dtype: np.dtype) -> np.ndarray:
    """`v` as a column of `n` values of `dtype` (IRError if its type is wrong)."""
    a = np.asarray(v)
    if a.dtype != dtype:
        raise IRError(f"kernel value of type {a.dtype} where {dtype} was declared")
    return a if a.shape == (n,) else np.broadcast_to(a, (n,))


__all__ = ["GpuInterpreter", "run"]

