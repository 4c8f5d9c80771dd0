"""An interpreter of the core IR on NumPy: the executable meaning of the IR.

It is an `eval_jaxpr`-style walk over statements with one environment per
function activation (`dict[VName, value]`): names are unique in a program,
so lambda bodies and loop bodies can bind into the same dictionary.
Values are NumPy scalars of the exact dtype and `ndarray`s; primitive
operations come from `futgen.interp.prims`, so integer arithmetic wraps,
division rounds and conversions behave exactly as the reference interpreter
(and Futhark) define them.

Two things keep it usable on the example programs:

* a map lambda whose body is straight-line scalar code (no control flow,
  no indexing) runs once on whole columns instead of once per row; every
  primitive operation is elementwise on arrays, and a straight-line body
  evaluates every operation for every row anyway, so the results and the
  errors are the same;
* a scan, reduction or histogram whose operator is one built-in binary
  operator with a NumPy ufunc runs as `ufunc.accumulate` / `reduce` / `at`.

Every value a statement binds is checked against the statement's declared
type (dtype, rank and every known size), so an internalisation bug shows up
as a clear error at the statement that caused it rather than as a wrong
answer later.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from futgen.core import ir
from futgen.errors import FutharkError
from futgen.frontend.types import PRIM_DTYPES
from futgen.interp import prims

Value = Any  # a NumPy scalar or ndarray
Env = dict[ir.VName, Value]


class IRError(Exception):
    """The IR itself is malformed (a compiler bug, not a user error)."""


def run(prog: ir.Program, entry: str, args: Sequence[Value]) -> list[Value]:
    """Call entry point `entry` of `prog` on `args`; one value per result.

    Arrays passed in are copied first, since entry points may consume them.
    """
    fn = prog.function(entry)
    args = [np.array(a) if isinstance(a, np.ndarray) else a for a in args]
    with np.errstate(all="ignore"):
        return Interpreter(prog).call(fn, args)


class Interpreter:
    """Evaluates the functions of one program."""

    def __init__(self, prog: ir.Program):
        self.functions = {f.name: f for f in prog.functions}

    def call(self, fn: ir.Function, args: Sequence[Value]) -> list[Value]:
        """Run `fn` on `args` in a fresh environment."""
        if len(args) != len(fn.params):
            raise IRError(f"{fn.name} takes {len(fn.params)} arguments, got {len(args)}")
        env: Env = {}
        for p, a in zip(fn.params, args):
            env[p.name] = _check(a, p.type, env, f"parameter {p.name} of {fn.name}")
        return self.body(fn.body, env)

    def body(self, body: ir.Body, env: Env) -> list[Value]:
        """Run the statements of `body`, then read its results."""
        for stm in body.stms:
            vals = self.exp(stm.exp, stm.pat, env)
            if len(vals) != len(stm.pat):
                raise IRError(f"statement binding {len(stm.pat)} names got {len(vals)} values")
            for p, v in zip(stm.pat, vals):
                env[p.name] = _check(v, p.type, env, f"the value bound to {p.name}")
        return [subexp(se, env) for se in body.result]

    def lam(self, lam: ir.Lambda, args: Sequence[Value], env: Env) -> list[Value]:
        """Apply a lambda; its free variables are read from `env`."""
        if len(args) != len(lam.params):
            raise IRError(f"lambda of {len(lam.params)} parameters applied to {len(args)}")
        for p, a in zip(lam.params, args):
            env[p.name] = a
        return self.body(lam.body, env)

    # ------------------------------------------------------------ dispatch

    def exp(self, e: ir.Exp, pat: tuple[ir.Param, ...], env: Env) -> list[Value]:
        """The values of expression `e`, which `pat` will bind."""
        match e:
            case ir.Apply(fn, args, _):
                return self.call(self.functions[fn], [subexp(a, env) for a in args])
            case ir.If(cond, then_, else_, _):
                return self.body(then_ if subexp(cond, env) else else_, env)
            case ir.Loop():
                return self.loop(e, env)
            case ir.Screma():
                return self.screma(e, pat, env)
            case ir.Scatter():
                return self.scatter(e, pat, env)
            case ir.Hist():
                return self.hist(e, pat, env)
        return [basic(e, env)]

    def loop(self, e: ir.Loop, env: Env) -> list[Value]:
        """Run a for or while loop, rebinding the merge parameters each time."""
        vals = [subexp(v, env) for _, v in e.merge]

        def bind() -> None:
            for (p, _), v in zip(e.merge, vals):
                env[p.name] = _check(v, p.type, env, f"loop parameter {p.name}")

        bind()
        if isinstance(e.form, ir.ForLoop):
            dtype = PRIM_DTYPES[e.form.prim]
            for i in range(int(subexp(e.form.bound, env))):
                env[e.form.i] = dtype.type(i)
                vals = self.body(e.body, env)
                bind()
        else:
            while env[e.form.cond]:
                vals = self.body(e.body, env)
                bind()
        return vals

    # --------------------------------------------------------------- SOACs

    def map_rows(self, lam: ir.Lambda, w: int, arrs: list[np.ndarray], env: Env) -> list[Value]:
        """The lambda applied to every row: one array (w rows) per result."""
        if w > 0 and _is_vectorisable(lam):
            outs = _run_vectorised(lam, arrs, env)
            return [_broadcast(o, w, t) for o, t in zip(outs, lam.ret)]
        rows = [self.lam(lam, [a[i] for a in arrs], env) for i in range(w)]
        return [_stack([r[k] for r in rows], t, w, env) for k, t in enumerate(lam.ret)]

    def screma(self, e: ir.Screma, pat: tuple[ir.Param, ...], env: Env) -> list[Value]:
        """Map, then scans over the first results and reductions over the next."""
        w = int(subexp(e.w, env))
        cols = self.map_rows(e.map_lam, w, [env[a] for a in e.arrs], env)
        if len(cols) < sum(len(op.nes) for op in (*e.scans, *e.reds)):
            raise IRError("a Screma's map lambda returns fewer values than its operators take")
        out: list[Value] = []
        k = 0
        for s in e.scans:
            n = len(s.nes)
            out += self.scan(s, cols[k:k + n], w, env)
            k += n
        for r in e.reds:
            n = len(r.nes)
            out += self.reduce(r, cols[k:k + n], w, env)
            k += n
        return out + cols[k:]

    def scan(self, s: ir.Scan, cols: list[Value], w: int, env: Env) -> list[Value]:
        """An inclusive scan starting from the neutral elements."""
        nes = [subexp(n, env) for n in s.nes]
        ufunc = _ufunc_of(s.lam)
        if ufunc is not None and w > 0:
            fn, dtype = ufunc
            acc = fn.accumulate(cols[0], dtype=dtype)
            return [_binop_of(s.lam)(nes[0], acc)]
        acc = nes
        rows = []
        for i in range(w):
            acc = self.lam(s.lam, [*acc, *(c[i] for c in cols)], env)
            rows.append(acc)
        return [_stack([r[k] for r in rows], t, w, env, like=c)
                for k, (t, c) in enumerate(zip(s.lam.ret, cols))]

    def reduce(self, r: ir.Reduce, cols: list[Value], w: int, env: Env) -> list[Value]:
        """A reduction folded from the neutral elements, left to right."""
        nes = [subexp(n, env) for n in r.nes]
        ufunc = _ufunc_of(r.lam)
        if ufunc is not None and w > 0:
            fn, dtype = ufunc
            return [_binop_of(r.lam)(nes[0], fn.reduce(cols[0], dtype=dtype))]
        acc = nes
        for i in range(w):
            acc = self.lam(r.lam, [*acc, *(c[i] for c in cols)], env)
        return acc

    def scatter(self, e: ir.Scatter, pat: tuple[ir.Param, ...], env: Env) -> list[Value]:
        w = int(subexp(e.w, env))
        cols = self.map_rows(e.lam, w, [env[a] for a in e.arrs], env)
        return self.write(e.dests, cols, w, env)

    @staticmethod
    def write(dests: tuple[ir.ScatterDest, ...], cols: list[Value], w: int,
              env: Env) -> list[Value]:
        """Scatter's writes of `w` rows of indices and values (`cols`), in row
        order (so the last write to a position wins), skipping out-of-bounds
        indices."""
        out, k = [], 0
        for d in dests:
            dest = env[d.arr]
            idx = [np.asarray(c, dtype=np.int64).reshape(w) for c in cols[k:k + d.num_idx]]
            vals = cols[k + d.num_idx]
            k += d.num_idx + 1
            ok = np.ones(w, dtype=bool)
            for dim, ix in enumerate(idx):
                ok &= (ix >= 0) & (ix < dest.shape[dim])
            dest[tuple(ix[ok] for ix in idx)] = np.asarray(vals)[ok]
            out.append(dest)
        return out

    def hist(self, e: ir.Hist, pat: tuple[ir.Param, ...], env: Env) -> list[Value]:
        w = int(subexp(e.w, env))
        cols = self.map_rows(e.lam, w, [env[a] for a in e.arrs], env)
        return self.histograms(e.ops, cols, w, env)

    def histograms(self, ops: tuple[ir.HistOp, ...], cols: list[Value], w: int,
                   env: Env) -> list[Value]:
        """Combines each of `w` rows of values into its bin (`cols`: one bin
        column per operator, then the values); bins out of range are skipped."""
        bins = cols[:len(ops)]
        vals = cols[len(ops):]
        out = []
        for op, b in zip(ops, bins):
            n = len(op.dests)
            dests = [env[d] for d in op.dests]
            out += self.hist_op(op, np.asarray(b, dtype=np.int64).reshape(w), vals[:n],
                                dests, env)
            vals = vals[n:]
        return out

    def hist_op(self, op: ir.HistOp, bins: np.ndarray, vals: list[Value],
                dests: list[np.ndarray], env: Env) -> list[Value]:
        """One histogram, in place on its destinations."""
        ok = (bins >= 0) & (bins < (dests[0].shape[0] if dests else 0))
        ufunc = _ufunc_of(op.lam)
        if ufunc is not None and dests[0].ndim == 1:
            ufunc[0].at(dests[0], bins[ok], np.asarray(vals[0])[ok])
            return dests
        for i in np.flatnonzero(ok):
            b = bins[i]
            new = self.lam(op.lam, [*(d[b] for d in dests), *(v[i] for v in vals)], env)
            for d, x in zip(dests, new):
                d[b] = x
        return dests


# ------------------------------------------------------------ basic ops


def subexp(se: ir.SubExp, env: Env) -> Value:
    """The value of a variable or constant."""
    if isinstance(se, ir.Var):
        return env[se.name]
    return prims.scalar(se.prim, se.value)


def basic(e: ir.Exp, env: Env) -> Value:
    """The value of a basic operation."""
    match e:
        case ir.SubExpOp(se):
            return subexp(se, env)
        case ir.UnOp(op, prim, x):
            return unop(op, prim, subexp(x, env))
        case ir.BinOp(op, prim, x, y) | ir.CmpOp(op, prim, x, y):
            return prims.BINOPS[op].evaluator(prim)(subexp(x, env), subexp(y, env))
        case ir.ConvOp(_, dst, x):
            return prims.convert(subexp(x, env), dst)
        case ir.Index(arr, sl, loc):
            return index(env[arr], [_dim_index(d, env) for d in sl], loc)
        case ir.Update(arr, sl, value, loc):
            return update(env[arr], [_dim_index(d, env) for d in sl], subexp(value, env), loc)
        case ir.ArrayLit(elems, elem):
            return _array_lit([subexp(x, env) for x in elems], elem, env)
        case ir.Iota(n, start, stride):
            n_, s, d = (int(subexp(x, env)) for x in (n, start, stride))
            return (np.arange(n_, dtype=np.int64) * d + s).astype(np.int64)
        case ir.Replicate(shape, value):
            v = np.asarray(subexp(value, env))
            dims = tuple(int(subexp(d, env)) for d in shape)
            return np.array(np.broadcast_to(v, dims + v.shape))
        case ir.Reshape(arr, shape, loc):
            return reshape(env[arr], tuple(int(subexp(d, env)) for d in shape), loc)
        case ir.Rearrange(arr, perm):
            return np.array(np.transpose(env[arr], perm))
        case ir.Concat(arrs):
            return np.concatenate([env[a] for a in arrs])
        case ir.Copy(arr):
            return np.array(env[arr])
        case ir.ArraySize(arr, dim):
            return np.int64(env[arr].shape[dim])
        case ir.Assert(cond, _, loc, args):
            if not subexp(cond, env):
                raise FutharkError(e.message([subexp(a, env) for a in args]), loc)
            return np.bool_(True)
    raise IRError(f"no evaluation rule for {type(e).__name__}")


def unop(op: str, prim: str, x: Value) -> Value:
    """A unary operator or float function applied to `x` of type `prim`."""
    try:
        return prims.unop(op, prim, x)
    except KeyError:
        raise IRError(f"no unary operator {op}") from None


def _dim_index(d: ir.DimIndex, env: Env) -> int | tuple[int, int, int]:
    if isinstance(d, ir.DimFix):
        return int(subexp(d.i, env))
    return (int(subexp(d.start, env)), int(subexp(d.num, env)), int(subexp(d.stride, env)))


def _numpy_index(a: np.ndarray, idx: list, loc: Any) -> tuple:
    """`idx` as a NumPy index, after Futhark's bounds checks."""
    out: list[Any] = []
    for dim, i in enumerate(idx):
        n = a.shape[dim]
        if isinstance(i, int):
            if not 0 <= i < n:
                _out_of_bounds(idx, a.shape, loc)
            out.append(i)
        else:
            start, num, stride = i
            last = start + (num - 1) * stride
            if num < 0 or (num > 0 and not (0 <= start < n and 0 <= last < n)):
                _out_of_bounds(idx, a.shape, loc)
            out.append(start + stride * np.arange(num, dtype=np.int64))
    return tuple(out)


def _out_of_bounds(idx: list, shape: tuple, loc: Any) -> None:
    def show(i: Any) -> str:
        return str(i) if isinstance(i, int) else f"{i[0]}:+{i[1]}*{i[2]}"

    raise FutharkError(
        f"Index [{', '.join(show(i) for i in idx)}] out of bounds for array of shape "
        f"[{']['.join(map(str, shape))}].", loc)


def index(a: np.ndarray, idx: list, loc: Any) -> Value:
    """Futhark indexing: fixed indices drop a dimension, slices keep it."""
    np_idx = _numpy_index(a, idx, loc)
    if all(isinstance(i, int) for i in np_idx):
        r = a[np_idx]
        return np.array(r) if isinstance(r, np.ndarray) else r
    # Apply one dimension at a time so that several slices do not broadcast.
    r, axis = a, 0
    for i in np_idx:
        r = np.take(r, i, axis=axis)
        axis += 0 if isinstance(i, int) else 1
    return np.array(r)


def update(a: np.ndarray, idx: list, v: Value, loc: Any) -> np.ndarray:
    """In-place update; the source is consumed, so writing into it is safe."""
    np_idx = _numpy_index(a, idx, loc)
    if all(isinstance(i, int) for i in np_idx):
        a[np_idx] = v
        return a
    view_idx = tuple(i if isinstance(i, int) else slice(None) for i in np_idx)
    sel = [np.asarray(i) for i in np_idx if not isinstance(i, int)]
    a[view_idx][np.ix_(*sel)] = v
    return a


def reshape(a: np.ndarray, shape: tuple[int, ...], loc: Any) -> np.ndarray:
    if int(np.prod(shape)) != a.size:
        raise FutharkError(f"Cannot reshape array of shape [{']['.join(map(str, a.shape))}] "
                           f"to [{']['.join(map(str, shape))}].", loc)
    return np.array(a.reshape(shape))


def _array_lit(elems: list[Value], elem: ir.Type, env: Env) -> np.ndarray:
    if elems:
        return np.array([np.asarray(x) for x in elems])
    return np.empty((0, *_dims(elem, env)), dtype=_dtype(elem))


# ---------------------------------------------------- fast paths for SOACs

_VECTOR_OPS = (ir.SubExpOp, ir.UnOp, ir.BinOp, ir.CmpOp, ir.ConvOp)


def _is_vectorisable(lam: ir.Lambda) -> bool:
    """Straight-line scalar code: safe to run once on whole columns."""
    return (all(isinstance(p.type, ir.Prim) for p in lam.params)
            and all(isinstance(t, ir.Prim) for t in lam.ret)
            and all(isinstance(s.exp, _VECTOR_OPS) for s in lam.body.stms))


def _run_vectorised(lam: ir.Lambda, cols: list[np.ndarray], env: Env) -> list[Value]:
    """Runs a vectorisable lambda once on whole columns (types are not
    checked: every name holds a column instead of a scalar)."""
    for p, c in zip(lam.params, cols):
        env[p.name] = c
    for stm in lam.body.stms:
        env[stm.pat[0].name] = basic(stm.exp, env)
    return [subexp(se, env) for se in lam.body.result]


def _ufunc_of(lam: ir.Lambda) -> tuple[Any, np.dtype] | None:
    """A NumPy ufunc with the lambda's exact semantics, and the dtype to use."""
    op = ir.lambda_binop(lam)
    if op is None:
        return None
    fn = prims.BINOPS[op.op].reducer(op.prim)
    return None if fn is None else (fn, PRIM_DTYPES[op.prim])


def _binop_of(lam: ir.Lambda) -> Any:
    op = ir.lambda_binop(lam)
    assert op is not None
    return prims.BINOPS[op.op].evaluator(op.prim)


# ------------------------------------------------------------ types


def _dtype(t: ir.Type) -> np.dtype:
    return PRIM_DTYPES[t.name if isinstance(t, ir.Prim) else t.elem]


def _dims(t: ir.Type, env: Env) -> tuple[int, ...]:
    """The sizes of `t` where known; an unknown size of an empty array is 0."""
    if isinstance(t, ir.Prim):
        return ()
    return tuple(0 if d is None else int(subexp(d, env)) for d in t.shape)


def _broadcast(v: Value, w: int, t: ir.Type) -> np.ndarray:
    """A column of `w` rows from a vectorised result (a scalar if it did not
    depend on the row)."""
    return np.array(np.broadcast_to(np.asarray(v, dtype=_dtype(t)), (w,)))


def _stack(rows: list[Value], t: ir.Type, w: int, env: Env, like: Any = None) -> np.ndarray:
    """Rows of type `t` as one array; empty with the right shape when w = 0."""
    if rows:
        return np.array([np.asarray(r) for r in rows], dtype=_dtype(t))
    if like is not None:
        return np.array(like[:0], dtype=_dtype(t))
    return np.empty((0, *_dims(t, env)), dtype=_dtype(t))


def _check(v: Value, t: ir.Type, env: Env, what: str) -> Value:
    """`v` if it has type `t` (dtype, rank, known sizes); IRError otherwise."""
    a = np.asarray(v)
    dtype = _dtype(t)
    rank = 0 if isinstance(t, ir.Prim) else len(t.shape)
    if a.dtype != dtype or a.ndim != rank:
        raise IRError(f"{what}: expected {_show(t)}, got {a.dtype} of rank {a.ndim}")
    if isinstance(t, ir.ArrayT):
        for k, d in enumerate(t.shape):
            if isinstance(d, ir.Var) and d.name not in env:
                continue  # a parameter's size given by a later parameter
            if d is not None and int(subexp(d, env)) != a.shape[k]:
                raise IRError(f"{what}: expected {_show(t)}, got shape {a.shape}")
        return v
    return a[()] if isinstance(v, np.ndarray) else v


def _show(t: ir.Type) -> str:
    from futgen.core.pretty import type_text

    return type_text(t)
