"""Vectorised execution of SOAC functions over all elements ("lanes") at once.

A function body is evaluated once with its parameters bound to `Lanes`
values: `Lanes(data)` holds one value per lane, `data` being the array
representation of `[L]t` (lane axis in front).  Tuples/records of lane
values stay Python tuples/dicts; values that do not vary between lanes
(captured variables, constants) stay ordinary values.  Sub-expressions
whose free variables are all uniform are handed to the ordinary
interpreter, so loops, SOACs etc. over invariant data cost nothing extra.

Scalar operators and elementwise built-ins apply NumPy ufuncs to lane
data; indexing with lane-varying indices is a gather with a vectorised
bounds check; `if` with a lane-varying condition evaluates each branch only
on the lanes that take it (so errors and costs happen only there); `while`
loops with lane-varying conditions retire finished lanes as they go.
Anything else raises NotVectorizable and the SOAC falls back to a loop
over elements; that decision is remembered per function body.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from futgen.errors import FutharkError
from futgen.frontend import syntax as S
from futgen.frontend import types as T
from futgen.frontend.astwalk import pattern_names
from futgen.interp import prims as P
from futgen.interp import values as V
from futgen.interp.functions import Closure, PyFun
from futgen.interp.interpreter import (
    _MISSING,
    GLOBALS,
    oob_message,
    pat_size_bindings,
    prim_binop,
    prim_name,
    project,
    record_update,
    slice_indices,
    unop,
)

LANES = "\0lanes"  # env key: frozenset of lane-varying names
NLANES = "\0nlanes"  # env key: the lane count


class NotVectorizable(Exception):
    """The lifted evaluator met a construct it cannot run over lanes."""


class Lanes:
    """One value per lane; `data` is the array representation of `[L]t`."""

    __slots__ = ("data",)

    def __init__(self, data: Any):
        self.data = data

    def __repr__(self) -> str:
        return f"Lanes({self.data!r})"


# ------------------------------------------------------------ lane helpers


def has_lanes(v: Any) -> bool:
    if isinstance(v, Lanes):
        return True
    if isinstance(v, tuple):
        return any(has_lanes(x) for x in v)
    if isinstance(v, dict):
        return any(has_lanes(x) for x in v.values())
    if isinstance(v, Closure):
        lanes = v.env.get(LANES)
        if lanes and lanes & _closure_free(v):
            return True
        return any(has_lanes(a) for a in v.args)
    if isinstance(v, PyFun):
        return any(has_lanes(a) for a in v.args)
    return False


def _closure_free(c: Closure) -> frozenset:
    bound: set[str] = set()
    for p in c.params:
        bound |= pattern_names(p)
    return free_vars(c.body) - bound


def to_lanes(arr: Any) -> Any:
    """Lane view of an array: tuples of arrays become tuples of lanes."""
    if isinstance(arr, V.StructArray) and arr.rank == 1:
        return V.rebuild(arr.fields, [to_lanes(f) for f in V.fields_of(arr.fields)])
    return Lanes(arr)


def from_lanes(v: Any, n: int, inputs: set[int]) -> Any:
    """The array `[n]t` of a lane value; uniform parts are broadcast.

    Leaves that alias an input array (or any other storage) are copied:
    SOAC results are fresh, unique arrays.
    """
    if isinstance(v, Lanes):
        return _fresh(v.data, inputs)
    if isinstance(v, tuple | dict):
        comps = [from_lanes(x, n, inputs) for x in V.fields_of(v)]
        return V.StructArray((n,), V.rebuild(v, comps))
    if isinstance(v, Closure | PyFun):
        raise NotVectorizable("function-valued result")
    return V.replicate(n, v)


def _fresh(a: Any, inputs: set[int]) -> Any:
    if isinstance(a, np.ndarray):
        if id(a) in inputs or a.base is not None or not a.flags.writeable:
            return a.copy()
        return a
    return a.map_fields(lambda f: _fresh(f, inputs), a.shape)


def broadcast(v: Any, n: int) -> Any:
    """A lane value with all `n` lanes explicit."""
    if isinstance(v, Lanes):
        return v
    if isinstance(v, tuple | dict):
        return V.rebuild(v, [broadcast(x, n) for x in V.fields_of(v)])
    if isinstance(v, Closure | PyFun):
        raise NotVectorizable("lane-varying function")
    return Lanes(V.replicate(n, v))


def compress(v: Any, idx: np.ndarray) -> Any:
    """Keep only lanes `idx` of a (possibly partly uniform) lane value."""
    if isinstance(v, Lanes):
        return Lanes(V.apply_key(v.data, (idx,)))
    if isinstance(v, tuple | dict):
        return V.rebuild(v, [compress(x, idx) for x in V.fields_of(v)])
    if isinstance(v, Closure) and has_lanes(v):
        env = compress_env(v.env, idx, None)
        return Closure(v.params, v.body, env, tuple(compress(a, idx) for a in v.args),
                       v.sizes, v.name)
    if isinstance(v, PyFun) and has_lanes(v):
        return v.with_args(tuple(compress(a, idx) for a in v.args))
    return v


def compress_env(env: dict, idx: np.ndarray, names: Any) -> dict:
    lanes = env.get(LANES, frozenset())
    out = dict(env)
    for name in lanes if names is None else (lanes & names):
        out[name] = compress(env[name], idx)
    out[NLANES] = len(idx)
    return out


def merge(n: int, parts: list[tuple[np.ndarray, Any]]) -> Any:
    """Combine per-branch lane values back into `n` lanes."""
    vals = [v for _, v in parts]
    if all(not has_lanes(v) for v in vals) and _all_same(vals):
        return vals[0]
    first = vals[0]
    if isinstance(first, tuple | dict) and all(isinstance(v, tuple | dict) for v in vals):
        comps = [merge(n, [(i, V.fields_of(v)[j]) for i, v in parts])
                 for j in range(len(V.fields_of(first)))]
        return V.rebuild(first, comps)
    datas = [(i, broadcast(v, len(i)).data) for i, v in parts]
    return Lanes(_scatter_rows(n, datas))


def _all_same(vals: list) -> bool:
    f = vals[0]
    return all(x is f for x in vals[1:])


def _scatter_rows(n: int, datas: list[tuple[np.ndarray, Any]]) -> Any:
    first = datas[0][1]
    if isinstance(first, np.ndarray):
        shapes = {d.shape[1:] for _, d in datas}
        if len(shapes) > 1:
            raise NotVectorizable("branches of different shapes")
        out = np.empty((n,) + first.shape[1:], dtype=first.dtype)
        for i, d in datas:
            out[i] = d
        return out
    comps = [_scatter_rows(n, [(i, V.fields_of(d.fields)[j]) for i, d in datas])
             for j in range(len(V.fields_of(first.fields)))]
    return V.StructArray((n,) + first.shape[1:], V.rebuild(first.fields, comps))


def raw(v: Any) -> Any:
    return v.data if isinstance(v, Lanes) else v


# --------------------------------------------------------------- free vars


def free_vars(e: Any) -> frozenset:
    """Names an expression may refer to (over-approximated), cached on the node."""
    r = e.__dict__.get("_fv")
    if r is None:
        r = frozenset(_fv(e))
        e.__dict__["_fv"] = r
    return r


def _fv(e: Any) -> set[str]:
    if isinstance(e, S.Var):
        return {e.name} if not e.qual else set()
    if isinstance(e, S.Literal):
        return set()
    if isinstance(e, S.Lambda):
        bound = set().union(*[pattern_names(p) for p in e.params]) if e.params else set()
        return set(free_vars(e.body)) - bound
    if isinstance(e, S.LetPat):
        return set(free_vars(e.value)) | (set(free_vars(e.body)) - pattern_names(e.pat)
                                          - set(e.sizes))
    if isinstance(e, S.LetFun):
        bound = set().union(*[pattern_names(p) for p in e.params]) if e.params else set()
        return (set(free_vars(e.value)) - bound) | (set(free_vars(e.body)) - {e.name})
    if isinstance(e, S.Loop):
        out = set(free_vars(e.init)) if e.init is not None else pattern_names(e.pat)
        inner = set(free_vars(e.body))
        form = e.form
        if isinstance(form, S.ForLoop):
            out |= set(free_vars(form.bound))
            inner -= {form.var}
        elif isinstance(form, S.ForInLoop):
            out |= set(free_vars(form.array))
            inner -= pattern_names(form.pat)
        else:
            inner |= set(free_vars(form.cond))
        return out | (inner - pattern_names(e.pat) - set(e.sizes))
    out: set[str] = set()
    if isinstance(e, S.BinOp | S.OpSection | S.LeftSection | S.RightSection):
        out.add(e.op)
    for name, val in vars(e).items():
        if name in ("ty", "loc") or name.startswith("_"):
            continue
        out |= _fv_any(val)
    return out


def _fv_any(val: Any) -> set[str]:
    if isinstance(val, S.Expr):
        return set(free_vars(val))
    if isinstance(val, S.IdxFix):
        return set(free_vars(val.index))
    if isinstance(val, S.IdxSlice):
        return set().union(*[free_vars(x) for x in (val.start, val.end, val.stride)
                             if x is not None])
    if isinstance(val, list | tuple):
        out: set[str] = set()
        for x in val:
            out |= _fv_any(x)
        return out
    return set()


# ------------------------------------------------------------- vectoriser


class Vectorizer:
    """Runs SOACs, vectorised where possible (see the module docstring)."""

    def __init__(self, interp: Any):
        self.interp = interp
        self.bad: set[int] = set()
        self.stats = {"vectorised": 0, "fallback": 0}
        self._dispatch = {
            S.Var: self._lv_Var, S.BinOp: self._lv_BinOp, S.UnOp: self._lv_UnOp,
            S.Apply: self._lv_Apply, S.Lambda: self._lv_Lambda, S.If: self._lv_If,
            S.LetPat: self._lv_LetPat, S.LetFun: self._lv_LetFun,
            S.TupleExp: self._lv_TupleExp, S.RecordExp: self._lv_RecordExp,
            S.Project: self._lv_Project, S.Index: self._lv_Index,
            S.ArrayLit: self._lv_ArrayLit, S.Ascribe: self._lv_Ascribe,
            S.Loop: self._lv_Loop, S.RecordUpdate: self._lv_RecordUpdate,
            S.LeftSection: self._lv_Section, S.RightSection: self._lv_Section,
        }

    # ------------------------------------------------------------ SOACs

    def map(self, f: Any, arrays: tuple, elem_type: Any, size_of: Any) -> Any:
        n = V.length(arrays[0])
        r = self.try_lifted(f, [to_lanes(a) for a in arrays], n, arrays)
        if r is not _MISSING:
            return r
        rows = [V.rows(a) for a in arrays]
        out = [self.interp.apply(f, *xs) for xs in zip(*rows)]
        return V.stack(out, elem_type, size_of)

    def try_lifted(self, f: Any, args: list, n: int, inputs: tuple) -> Any:
        """Apply `f` over lanes and return the array of results, or _MISSING.

        With no lanes nothing is evaluated (the per-element fallback then builds
        the empty result): Futhark never runs a SOAC's function on zero
        elements, so even its element-independent parts must not fail.
        """
        if n == 0:
            return _MISSING
        key = _fun_key(f)
        if key in self.bad:
            self.stats["fallback"] += 1
            return _MISSING
        try:
            res = self.apply_lifted(f, args, n)
            out = from_lanes(res, n, {id(x) for a in inputs for x in V.leaves(a)})
        except NotVectorizable:
            if key is not None:
                self.bad.add(key)
            self.stats["fallback"] += 1
            return _MISSING
        self.stats["vectorised"] += 1
        return out

    def predicate(self, p: Any, xs: Any) -> np.ndarray:
        n = V.length(xs)
        r = self.try_lifted(p, [to_lanes(xs)], n, (xs,))
        if r is not _MISSING:
            return np.asarray(r, dtype=bool)
        return np.array([bool(self.interp.apply(p, x)) for x in V.rows(xs)], dtype=bool)

    def known_op(self, op: Any) -> str | None:
        """The BINOPS name of a function value that is a built-in operator."""
        if isinstance(op, PyFun) and not op.args:
            name = op.name
            if name.startswith("(") and name.endswith(")") and name[1:-1] in P.BINOPS:
                return name[1:-1]
            if "." in name:
                base = name.split(".", 1)[1]
                if base in ("+", "*", "max", "min", "&", "|", "^", "&&", "||"):
                    return base
        if isinstance(op, Closure) and not op.args and len(op.params) == 2:
            return _lambda_op(op)
        return None

    def known_ufunc(self, op: Any, a: Any) -> tuple | None:
        """(primitive type, BINOPS entry, NumPy ufunc) when `op` is a built-in
        operator with a ufunc over the plain array `a`, else None."""
        name = self.known_op(op)
        if name is None or not isinstance(a, np.ndarray):
            return None
        t = T.DTYPE_PRIMS[a.dtype]
        info = P.BINOPS[name]
        ufunc = info.reducer(t)
        return None if ufunc is None else (t, info, ufunc)

    def reduce_known(self, op: str, t: str, xs: Any) -> Any:
        info = P.BINOPS[op]
        ufunc = info.reducer(t)
        ne = info.identity(t)
        a = np.asarray(xs)
        if a.shape[0] == 0:
            return ne if a.ndim == 1 else np.full(a.shape[1:], ne, dtype=a.dtype)
        r = ufunc.reduce(a, axis=0, dtype=a.dtype)
        return r if isinstance(r, np.ndarray) else a.dtype.type(r)

    def reduce(self, op: Any, ne: Any, xs: Any) -> Any:
        known = self.known_ufunc(op, xs)
        if known is not None:
            t, info, ufunc = known
            if xs.shape[0] == 0:
                return V.copy(ne)
            r = ufunc.reduce(xs, axis=0, dtype=xs.dtype)
            r = r if isinstance(r, np.ndarray) else xs.dtype.type(r)
            return info.evaluator(t)(ne, r)
        return self.tree_reduce(op, ne, xs)

    def tree_reduce(self, op: Any, ne: Any, xs: Any) -> Any:
        """Generic reduction: combine neighbours, halving each step (log n lifted calls)."""
        n = V.length(xs)
        if n == 0:
            return V.copy(ne)
        cur = xs
        key = _fun_key(op)
        while V.length(cur) > 1 and key not in self.bad:
            m = V.length(cur)
            half = m // 2
            a = V.apply_key(cur, (slice(0, 2 * half, 2),))
            b = V.apply_key(cur, (slice(1, 2 * half, 2),))
            r = self.try_lifted(op, [to_lanes(a), to_lanes(b)], half, (cur,))
            if r is _MISSING:
                break
            if m % 2:
                r = V.concat([r, V.apply_key(cur, (slice(m - 1, m),))])
            cur = r
        acc = ne
        for x in V.rows(cur):
            acc = self.interp.apply(op, acc, x)
        return acc

    def scan(self, op: Any, ne: Any, xs: Any) -> Any:
        n = V.length(xs)
        if n == 0:
            return V.copy(xs)
        known = self.known_ufunc(op, xs)
        if known is not None:
            t, info, ufunc = known
            r = ufunc.accumulate(xs, axis=0, dtype=xs.dtype)
            return info.evaluator(t)(ne, r) if not _is_identity(info, t, ne) else r
        return self.step_scan(op, ne, xs)

    def step_scan(self, op: Any, ne: Any, xs: Any) -> Any:
        """Generic inclusive scan: Hillis-Steele, log2(n) lifted calls."""
        n = V.length(xs)
        key = _fun_key(op)
        cur = V.copy(xs)
        first = self.interp.apply(op, ne, V.index(xs, 0))
        cur = _set_row(cur, 0, first)
        d = 1
        ok = key not in self.bad
        while ok and d < n:
            a = V.apply_key(cur, (slice(0, n - d),))
            b = V.apply_key(cur, (slice(d, n),))
            r = self.try_lifted(op, [to_lanes(a), to_lanes(b)], n - d, (cur,))
            if r is _MISSING:
                ok = False
                break
            cur = V.concat([V.apply_key(cur, (slice(0, d),)), r])
            d *= 2
        if ok:
            return cur
        acc = ne
        out = []
        for x in V.rows(xs):
            acc = self.interp.apply(op, acc, x)
            out.append(acc)
        return V.stack(out)

    def reduce_by_index(self, dest: Any, op: Any, ne: Any, idxs: list, vs: Any) -> Any:
        """`reduce_by_index`: out-of-bounds indices are ignored."""
        shape = V.shape_of(dest)
        dest, key, vals = V.scatter_targets(dest, idxs, vs)
        name = self.known_op(op)
        if name is not None and isinstance(dest, np.ndarray):
            t = T.DTYPE_PRIMS[dest.dtype]
            ufunc = P.BINOPS[name].reducer(t)
            if ufunc is not None and hasattr(ufunc, "at"):
                ufunc.at(dest, key, vals)
                return dest
        flat = np.ravel_multi_index(key, shape[:len(idxs)]) if len(key[0]) else np.zeros(0, int)
        for j, x in zip(flat, V.rows(vals)):
            pos = np.unravel_index(j, shape[:len(idxs)])
            cur = V.apply_key(dest, tuple(int(p) for p in pos))
            new = self.interp.apply(op, cur, x)
            _assign_at(dest, tuple(int(p) for p in pos), new)
        return dest

    # ------------------------------------------------- lifted application

    def apply_lifted(self, f: Any, args: list, n: int) -> Any:
        """Apply function value `f` to lane arguments `args` over `n` lanes."""
        while args:
            if isinstance(f, Closure):
                need = len(f.params) - len(f.args)
                take, args = args[:need], args[need:]
                allargs = f.args + tuple(take)
                if len(allargs) < len(f.params):
                    return Closure(f.params, f.body, f.env, allargs, f.sizes, f.name)
                f = self.enter_lifted(f, allargs, n)
            elif isinstance(f, PyFun):
                need = f.arity - len(f.args)
                take, args = args[:need], args[need:]
                allargs = f.args + tuple(take)
                if len(allargs) < f.arity:
                    return f.with_args(allargs)
                f = self.call_builtin(f, allargs, n)
            else:
                raise NotVectorizable("application of a non-function")
        return f

    def enter_lifted(self, c: Closure, args: tuple, n: int) -> Any:
        key = id(c.body)
        if key in self.bad:
            raise NotVectorizable("known bad")
        env = dict(c.env)
        lanes = set(env.get(LANES, ()))
        for p, a in zip(c.params, args):
            self.bind(p, a, env, lanes)
        if c.sizes:
            self._bind_sizes(c, args, env, lanes)
        env[LANES] = frozenset(lanes)
        env[NLANES] = n
        try:
            return self.ev(c.body, env)
        except NotVectorizable:
            self.bad.add(key)
            raise

    def _bind_sizes(self, c: Closure, args: tuple, env: dict, lanes: set) -> None:
        """Bind size parameters from argument shapes (lane axis dropped)."""
        for p, a in zip(c.params, args):
            for name, size in pat_size_bindings(p, _shape_proxy(a)):
                if name in c.sizes:
                    env[name] = np.int64(size)
                    lanes.discard(name)

    def bind(self, p: Any, v: Any, env: dict, lanes: set) -> None:
        if isinstance(p, S.PId):
            env[p.name] = v
            if has_lanes(v):
                lanes.add(p.name)
            else:
                lanes.discard(p.name)
        elif isinstance(p, S.PTuple):
            if isinstance(v, Lanes):
                raise NotVectorizable("tuple pattern on lanes")
            vs = list(v.values()) if isinstance(v, dict) else v
            for q, x in zip(p.elems, vs):
                self.bind(q, x, env, lanes)
        elif isinstance(p, S.PRecord):
            if isinstance(v, Lanes):
                raise NotVectorizable("record pattern on lanes")
            for f, q in p.fields:
                self.bind(q, v[int(f)] if isinstance(v, tuple) else v[f], env, lanes)
        elif isinstance(p, S.PAscribe):
            self.bind(p.pat, v, env, lanes)
        elif isinstance(p, S.PWild):
            pass

    def call_builtin(self, f: PyFun, args: tuple, n: int) -> Any:
        if not any(has_lanes(a) for a in args):
            return self.interp.apply(f.with_args(()), *args)
        if f.elementwise:
            if any(isinstance(a, tuple | dict) or V.is_array(a) for a in args):
                raise NotVectorizable("elementwise builtin on non-scalars")
            from futgen.interp.functions import Call

            r = f.fn(Call(self.interp, f), *[raw(a) for a in args])
            return Lanes(np.asarray(r))
        if f.name.startswith("(."):
            v = args[0]
            if isinstance(v, Lanes):
                raise NotVectorizable("projection of lanes")
            from futgen.interp.functions import Call

            return f.fn(Call(self.interp, f), v)
        special = _LIFTED_BUILTINS.get(f.name)
        if special is not None:
            return special(self, f, args, n)
        raise NotVectorizable(f"builtin {f.name} on lanes")

    # --------------------------------------------------- lifted evaluation

    def ev(self, e: S.Expr, env: dict) -> Any:
        lanes = env[LANES]
        if not (free_vars(e) & lanes):
            return self.interp.eval(e, env)
        h = self._dispatch.get(type(e))
        if h is None:
            raise NotVectorizable(type(e).__name__)
        return h(e, env)

    def _lv_Var(self, e: S.Var, env: dict) -> Any:
        return env[e.name]

    def _lv_BinOp(self, e: S.BinOp, env: dict) -> Any:
        op = e.op
        if op in ("&&", "||"):
            return self._short_circuit(e, env)
        x = self.ev(e.lhs, env)
        y = self.ev(e.rhs, env)
        n = env[NLANES]
        if op == "|>":
            return self.apply_lifted(y, [x], n)
        if op == "<|":
            return self.apply_lifted(x, [y], n)
        user = self.interp.lookup(op, env)
        if user is not _MISSING:
            return self.apply_lifted(user, [x, y], n)
        if op not in P.BINOPS:
            raise NotVectorizable(f"operator {op}")
        if prim_name(e.lhs.ty) is None:
            raise NotVectorizable("non-primitive operator")
        return Lanes(np.asarray(prim_binop(op, raw(x), raw(y), e.lhs.ty)))

    def _short_circuit(self, e: S.BinOp, env: dict) -> Any:
        x = self.ev(e.lhs, env)
        if not isinstance(x, Lanes):
            if bool(x) == (e.op == "||"):
                return x
            return self.ev(e.rhs, env)
        mask = x.data if e.op == "&&" else ~x.data
        return self._branch(mask, e.rhs, None, env, x)

    def _lv_UnOp(self, e: S.UnOp, env: dict) -> Any:
        return Lanes(np.asarray(unop(e.op, raw(self.ev(e.expr, env)))))

    def _lv_Apply(self, e: S.Apply, env: dict) -> Any:
        f = self.ev(e.fn, env)
        args = [self.ev(a, env) for a in e.args]
        return self.apply_lifted(f, args, env[NLANES])

    def _lv_Lambda(self, e: S.Lambda, env: dict) -> Any:
        return Closure(e.params, e.body, env)

    def _lv_Section(self, e: Any, env: dict) -> Any:
        x = self.ev(e.arg, env)
        f = self.interp.op_function(e.op, None, env, e.loc)
        if isinstance(e, S.LeftSection):
            return self.apply_lifted(f, [x], env[NLANES]) if isinstance(f, Closure) else \
                f.with_args((x,))
        raise NotVectorizable("right section over lanes")

    def _lv_If(self, e: S.If, env: dict) -> Any:
        c = self.ev(e.cond, env)
        if not isinstance(c, Lanes):
            return self.ev(e.then if c else e.els, env)
        return self._branch(c.data, e.then, e.els, env, None)

    def _branch(self, mask: np.ndarray, then: Any, els: Any, env: dict, else_val: Any) -> Any:
        """Evaluate `then` on lanes where mask holds, `els` (or else_val) elsewhere."""
        n = env[NLANES]
        it = np.nonzero(mask)[0]
        if len(it) == n:
            return self.ev(then, env)
        i_f = np.nonzero(~mask)[0]
        if els is not None and len(i_f) == n:
            return self.ev(els, env)
        parts = []
        if len(it):
            parts.append((it, self.ev(then, compress_env(env, it, free_vars(then)))))
        if len(i_f):
            if els is None:
                parts.append((i_f, compress(else_val, i_f)))
            else:
                parts.append((i_f, self.ev(els, compress_env(env, i_f, free_vars(els)))))
        if not parts:
            r = self.ev(then, compress_env(env, it, free_vars(then)))
            return r
        return merge(n, parts)

    def _lv_LetPat(self, e: S.LetPat, env: dict) -> Any:
        if e.sizes:
            raise NotVectorizable("let with sizes")
        v = self.ev(e.value, env)
        env = dict(env)
        lanes = set(env[LANES])
        self.bind(e.pat, v, env, lanes)
        env[LANES] = frozenset(lanes)
        return self.ev(e.body, env)

    def _lv_LetFun(self, e: S.LetFun, env: dict) -> Any:
        if not e.params:
            raise NotVectorizable("local constant")
        env = dict(env)
        sizes = tuple(p.name for p in e.tparams if isinstance(p, S.SizeParam))
        env[e.name] = Closure(e.params, e.value, env, (), sizes, e.name)
        env[LANES] = env[LANES] - {e.name}
        return self.ev(e.body, env)

    def _lv_TupleExp(self, e: S.TupleExp, env: dict) -> Any:
        return tuple(self.ev(x, env) for x in e.elems)

    def _lv_RecordExp(self, e: S.RecordExp, env: dict) -> Any:
        r = {f: self.ev(x, env) for f, x in e.fields}
        if T.is_tuple_record(tuple((f, None) for f in r)):
            return tuple(r[str(i)] for i in range(len(r)))
        return r

    def _lv_Project(self, e: S.Project, env: dict) -> Any:
        v = self.ev(e.expr, env)
        if isinstance(v, Lanes):
            raise NotVectorizable("projection of lanes")
        return project(v, e.field)

    def _lv_Ascribe(self, e: S.Ascribe, env: dict) -> Any:
        return self.ev(e.expr, env)

    def _lv_RecordUpdate(self, e: S.RecordUpdate, env: dict) -> Any:
        r = self.ev(e.src, env)
        if isinstance(r, Lanes):
            raise NotVectorizable("record update of lanes")
        return record_update(r, e.fields, self.ev(e.value, env))

    def _lv_ArrayLit(self, e: S.ArrayLit, env: dict) -> Any:
        n = env[NLANES]
        elems = [self.ev(x, env) for x in e.elems]
        if any(isinstance(x, tuple | dict) for x in elems):
            raise NotVectorizable("array literal of tuples")
        datas = [broadcast(x, n).data for x in elems]
        if any(not isinstance(d, np.ndarray) for d in datas):
            raise NotVectorizable("array literal of structs")
        if len({d.shape for d in datas}) > 1:
            raise FutharkError("Cannot create array with elements of different shapes.", e.loc)
        return Lanes(np.stack(datas, axis=1))

    def _lv_Index(self, e: S.Index, env: dict) -> Any:
        arr = self.ev(e.expr, env)
        n = env[NLANES]
        idx = []
        for i in e.indices:
            if isinstance(i, S.IdxFix):
                idx.append(self.ev(i.index, env))
            else:
                parts = [None if x is None else self.ev(x, env) for x in
                         (i.start, i.end, i.stride)]
                if any(isinstance(p, Lanes) for p in parts):
                    raise NotVectorizable("lane-varying slice")
                idx.append(tuple(None if p is None else int(p) for p in parts))
        return lifted_index(arr, idx, n, e.loc)

    def _lv_Loop(self, e: S.Loop, env: dict) -> Any:
        if e.sizes:
            raise NotVectorizable("loop with sizes")
        acc = self.ev(e.init, env) if e.init is not None else self._pattern_value(e.pat, env)
        form = e.form
        if isinstance(form, S.ForLoop):
            bound = self.ev(form.bound, env)
            if isinstance(bound, Lanes):
                raise NotVectorizable("lane-varying loop bound")
            it = bound.dtype.type
            for i in range(max(int(bound), 0)):
                acc = self._loop_step(e, acc, env, {form.var: it(i)})
            return acc
        if isinstance(form, S.ForInLoop):
            xs = self.ev(form.array, env)
            if has_lanes(xs):
                raise NotVectorizable("for-in over lanes")
            for row in V.rows(xs):
                extra: dict = {}
                lanes: set = set()
                self.bind(form.pat, row, extra, lanes)
                acc = self._loop_step(e, acc, env, extra)
            return acc
        return self._while(e, acc, env)

    def _pattern_value(self, p: Any, env: dict) -> Any:
        return self.interp.pattern_value(p, env)

    def _loop_env(self, e: S.Loop, acc: Any, env: dict, extra: dict) -> dict:
        env2 = dict(env)
        lanes = set(env[LANES])
        for k, v in extra.items():
            env2[k] = v
            lanes.discard(k)
        self.bind(e.pat, acc, env2, lanes)
        env2[LANES] = frozenset(lanes)
        return env2

    def _loop_step(self, e: S.Loop, acc: Any, env: dict, extra: dict) -> Any:
        return self.ev(e.body, self._loop_env(e, acc, env, extra))

    def _while(self, e: S.Loop, acc: Any, env: dict) -> Any:
        """A while loop whose condition may vary: finished lanes retire."""
        n = env[NLANES]
        if n == 0:
            return acc
        cond = e.form.cond
        live = np.arange(n)
        done: list[tuple[np.ndarray, Any]] = []
        cur_env = env
        while True:
            env2 = self._loop_env(e, acc, cur_env, {})
            c = self.ev(cond, env2)
            if not isinstance(c, Lanes):
                if not c:
                    done.append((live, acc))
                    break
                acc = self.ev(e.body, env2)
                continue
            stay = np.nonzero(c.data)[0]
            if len(stay) < len(live):
                leave = np.nonzero(~c.data)[0]
                done.append((live[leave], compress(acc, leave)))
                if not len(stay):
                    break
                live = live[stay]
                acc = compress(acc, stay)
                cur_env = compress_env(cur_env, stay, None)
                env2 = self._loop_env(e, acc, cur_env, {})
            acc = self.ev(e.body, env2)
        if len(done) == 1:
            return done[0][1]
        return merge(n, done)


def _shape_proxy(v: Any) -> Any:
    """A value with the shape one lane of `v` has (for binding size names)."""
    if isinstance(v, Lanes):
        if not isinstance(v.data, np.ndarray):
            raise NotVectorizable("sizes of lane-varying struct arrays")
        return np.broadcast_to(np.zeros((), v.data.dtype), v.data.shape[1:])
    if isinstance(v, tuple):
        return tuple(_shape_proxy(x) for x in v)
    if isinstance(v, dict):
        return {k: _shape_proxy(x) for k, x in v.items()}
    return v


def _set_row(arr: Any, i: int, v: Any) -> Any:
    _assign_at(arr, (i,), v)
    return arr


def _assign_at(arr: Any, key: tuple, v: Any) -> None:
    if isinstance(arr, np.ndarray):
        arr[key] = v
        return
    vs = V.fields_of(v.fields) if isinstance(v, V.StructArray) else V.fields_of(v)
    for f, x in zip(V.fields_of(arr.fields), vs):
        _assign_at(f, key, x)


def _is_identity(info: P.BinOp, t: str, ne: Any) -> bool:
    if info.identity is None or isinstance(ne, np.ndarray):
        return False
    ident = info.identity(t)
    return bool(ne == ident) and not (t in T.FLOATS and np.signbit(ne) != np.signbit(ident))


def _fun_key(f: Any) -> int | None:
    if isinstance(f, Closure):
        return id(f.body)
    return None


def _lambda_op(c: Closure) -> str | None:
    """Recognise `\\a b -> a op b` (also via min/max functions) as a known operator."""
    p = c.params
    if not all(isinstance(x, S.PId) for x in p):
        return None
    body = c.body
    if isinstance(body, S.BinOp) and isinstance(body.lhs, S.Var) and \
            isinstance(body.rhs, S.Var) and prim_name(body.lhs.ty) is not None:
        names = {body.lhs.name, body.rhs.name}
        if names == {p[0].name, p[1].name} and body.op in P.BINOPS and \
                P.BINOPS[body.op].associative:
            if body.op in c.env or GLOBALS in c.env and body.op in c.env[GLOBALS]:
                return None
            return body.op
    return None


def lifted_index(arr: Any, idx: list, n: int, loc: Any) -> Any:
    """Index a uniform or lane array with uniform or lane-varying indices."""
    lane_arr = isinstance(arr, Lanes)
    data = arr.data if lane_arr else arr
    if isinstance(data, tuple | dict):
        raise NotVectorizable("indexing a tuple")
    shape = V.shape_of(data)[1:] if lane_arr else V.shape_of(data)
    if len(idx) > len(shape):
        raise NotVectorizable("too many indices")
    fixed_done = False
    key: list = [np.arange(n)] if lane_arr else []
    any_lanes = lane_arr
    for i, d in zip(idx, shape):
        if isinstance(i, tuple):
            sl = slice_indices(*i, d)
            if sl is None:
                raise FutharkError(oob_message([_fmt_first(x) for x in idx], shape), loc)
            key.append(sl)
            fixed_done = True
            continue
        if fixed_done:
            raise NotVectorizable("fixed index after slice")
        if isinstance(i, Lanes):
            any_lanes = True
            iv = i.data.astype(np.int64)
        else:
            iv = np.full(n, int(i), dtype=np.int64)
        key.append(iv)
    if not any_lanes:
        raise NotVectorizable("uniform index")  # cannot happen: free vars say otherwise
    _check_bounds(idx, shape, key[1:] if lane_arr else key, loc)
    return to_lanes(V.apply_key(data, tuple(key)))


def _fmt_first(x: Any) -> Any:
    if isinstance(x, Lanes):
        return int(x.data[0])
    return x


def _check_bounds(idx: list, shape: tuple, key: list, loc: Any) -> None:
    bad = None
    for k, d in zip(key, shape):
        if isinstance(k, np.ndarray):
            b = (k < 0) | (k >= d)
            bad = b if bad is None else (bad | b)
    if bad is not None and bad.any():
        lane = int(np.argmax(bad))
        shown = []
        for i in idx:
            if isinstance(i, Lanes):
                shown.append(int(i.data[lane]))
            else:
                shown.append(i if isinstance(i, tuple) else int(i))
        raise FutharkError(oob_message(shown, shape), loc)


# ----------------------------------------------- builtins applied to lanes


def _lifted_length(vec: Vectorizer, f: PyFun, args: tuple, n: int) -> Any:
    (xs,) = args
    if isinstance(xs, Lanes):
        return np.int64(V.shape_of(xs.data)[1])
    raise NotVectorizable("length")


def _known_segmented(vec: Vectorizer, args: tuple, what: str) -> tuple:
    """For a per-element reduce/scan by a known operator: the lifted array (lanes x
    elements), its primitive type, the operator's table entry and its ufunc."""
    op, ne, xs = args
    if not isinstance(xs, Lanes) or has_lanes(ne):
        raise NotVectorizable(f"segmented {what}")
    known = vec.known_ufunc(op, xs.data)
    if known is None:
        raise NotVectorizable(f"segmented {what} by an operator without a ufunc")
    return (xs.data, *known)


def _lifted_reduce_known(vec: Vectorizer, f: PyFun, args: tuple, n: int) -> Any:
    ne = args[1]
    a, t, info, ufunc = _known_segmented(vec, args, "reduce")
    if a.shape[1] == 0:
        return Lanes(np.full((n,) + a.shape[2:], ne, dtype=a.dtype))
    r = ufunc.reduce(a, axis=1, dtype=a.dtype)
    return Lanes(np.asarray(info.evaluator(t)(ne, r)))


def _lifted_scan_known(vec: Vectorizer, f: PyFun, args: tuple, n: int) -> Any:
    ne = args[1]
    a, t, info, ufunc = _known_segmented(vec, args, "scan")
    if a.shape[1] == 0:
        return Lanes(a.copy())
    return Lanes(np.asarray(info.evaluator(t)(ne, ufunc.accumulate(a, axis=1, dtype=a.dtype))))


def _lifted_module_reduce(op: str) -> Any:
    def run(vec: Vectorizer, f: PyFun, args: tuple, n: int) -> Any:
        (xs,) = args
        if not isinstance(xs, Lanes) or not isinstance(xs.data, np.ndarray):
            raise NotVectorizable("module reduce")
        a = xs.data
        t = T.DTYPE_PRIMS[a.dtype]
        info = P.BINOPS[op]
        ne = info.identity(t)
        if a.shape[1] == 0:
            return Lanes(np.full((n,) + a.shape[2:], ne, dtype=a.dtype))
        return Lanes(np.asarray(info.reducer(t).reduce(a, axis=1, dtype=a.dtype)))

    return run


def _lifted_map(vec: Vectorizer, f: PyFun, args: tuple, n: int) -> Any:
    """A map over lane-varying arrays: flatten lanes x elements into one axis."""
    fn, *arrays = args
    if has_lanes(fn) or not all(isinstance(a, Lanes) or V.is_array(a) for a in arrays):
        raise NotVectorizable("nested map with lane-varying function")
    datas = [a.data if isinstance(a, Lanes) else None for a in arrays]
    m = None
    for a, d in zip(arrays, datas):
        mm = V.shape_of(d)[1] if d is not None else V.length(a)
        if m is not None and mm != m:
            raise NotVectorizable("size mismatch in nested map")
        m = mm
    flat = []
    for a, d in zip(arrays, datas):
        if d is None:
            d = V.replicate(n, a)
        flat.append(to_lanes(V.reshape_outer(d, (n * m,), 2)))
    r = vec.apply_lifted(fn, flat, n * m)
    out = from_lanes(r, n * m, set())
    return Lanes(V.reshape_outer(out, (n, m), 1))


def _lifted_iota(vec: Vectorizer, f: PyFun, args: tuple, n: int) -> Any:
    raise NotVectorizable("lane-varying iota")


_LIFTED_BUILTINS: dict[str, Any] = {
    "length": _lifted_length,
    "reduce": _lifted_reduce_known,
    "reduce_comm": _lifted_reduce_known,
    "scan": _lifted_scan_known,
    "map": _lifted_map, "map1": _lifted_map, "map2": _lifted_map, "map3": _lifted_map,
    "map4": _lifted_map, "map5": _lifted_map,
    "iota": _lifted_iota,
}
for _t in T.NUMERIC:
    _LIFTED_BUILTINS[f"{_t}.sum"] = _lifted_module_reduce("+")
    _LIFTED_BUILTINS[f"{_t}.product"] = _lifted_module_reduce("*")
    _LIFTED_BUILTINS[f"{_t}.maximum"] = _lifted_module_reduce("max")
    _LIFTED_BUILTINS[f"{_t}.minimum"] = _lifted_module_reduce("min")
