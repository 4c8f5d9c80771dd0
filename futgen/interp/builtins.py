"""Implementations of every built-in name in `prelude.SIGNATURES`.

`BUILTINS` maps a (possibly module-qualified) name to
`(arity, fn, elementwise)`; `fn(call, *args)` gets a `functions.Call`
giving access to the interpreter, the call's instantiated result type and
its source location.  Elementwise built-ins take primitive arguments and
also work on whole NumPy arrays, which is what lets the vectoriser run
them over all lanes at once.

SOACs delegate to `vectorize.Vectorizer`, which evaluates the function
once over all elements when it can and falls back to a loop otherwise.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from futgen.errors import FutharkError, UnsupportedFeature, assertion_text
from futgen.frontend import types as T
from futgen.frontend.prelude import DIFFERENTIATION, INTEGRAL_OPS, NUMERIC_OPS
from futgen.interp import prims as P
from futgen.interp import values as V
from futgen.interp.interpreter import (
    check_coercion,
    index_value,
    make_range,
    prim_binop,
)

Builtin = tuple[int, Callable[..., Any], bool]
BUILTINS: dict[str, Builtin] = {}


def builtin(name: str, arity: int, elementwise: bool = False) -> Callable:
    def deco(fn: Callable) -> Callable:
        BUILTINS[name] = (arity, fn, elementwise)
        return fn

    return deco


def _i64(x: Any) -> int:
    return int(x)


def _elem_type(c: Any) -> T.Type | None:
    rt = c.ret_type()
    return T.row_type(rt) if isinstance(rt, T.Array) else None


def _same_length(c: Any, arrays: tuple) -> int:
    n = V.length(arrays[0])
    for a in arrays[1:]:
        if V.length(a) != n:
            raise FutharkError(
                f"Value of shape \"[{V.length(a)}]\" cannot match shape of type \"[{n}]\" "
                "(arrays passed to a SOAC must have equal outer sizes)", c.loc)
    return n


# ------------------------------------------------------------------ SOACs


def _map(c: Any, f: Any, *arrays: Any) -> Any:
    _same_length(c, arrays)
    return c.interp.vec.map(f, arrays, _elem_type(c), c.size_of)


for _k, _n in (("map", 1), ("map1", 1), ("map2", 2), ("map3", 3), ("map4", 4), ("map5", 5)):
    BUILTINS[_k] = (_n + 1, _map, False)


@builtin("reduce", 3)
def _reduce(c: Any, op: Any, ne: Any, xs: Any) -> Any:
    return c.interp.vec.reduce(op, ne, xs)


BUILTINS["reduce_comm"] = BUILTINS["reduce"]


@builtin("scan", 3)
def _scan(c: Any, op: Any, ne: Any, xs: Any) -> Any:
    return c.interp.vec.scan(op, ne, xs)


@builtin("exscan", 3)
def _exscan(c: Any, op: Any, ne: Any, xs: Any) -> Any:
    n = V.length(xs)
    if n == 0:
        return V.copy(xs)
    inc = c.interp.vec.scan(op, ne, V.apply_key(xs, (slice(0, n - 1),)))
    return V.concat([V.replicate(1, ne), inc])


@builtin("filter", 2)
def _filter(c: Any, p: Any, xs: Any) -> Any:
    mask = c.interp.vec.predicate(p, xs)
    return V.copy(V.apply_key(xs, (np.nonzero(mask)[0],)))


@builtin("partition", 2)
def _partition(c: Any, p: Any, xs: Any) -> Any:
    mask = c.interp.vec.predicate(p, xs)
    return (V.copy(V.apply_key(xs, (np.nonzero(mask)[0],))),
            V.copy(V.apply_key(xs, (np.nonzero(~mask)[0],))))


def _flatmap(c: Any, f: Any, xs: Any, values: bool) -> Any:
    """`flatmap f xs` (`flatmap'` without `values`): `f` of each element,
    whose arrays may differ in length, as Futhark's segmented layout: the
    lengths, a flag starting each nonempty segment, the offsets, the arrays
    concatenated (and the other results)."""
    rt = c.ret_type()
    assert isinstance(rt, T.Tuple)
    results = [c.apply(f, x) for x in V.rows(xs)]
    datas = [r[0] if values else r for r in results]
    sizes = np.array([V.length(d) for d in datas], np.int64)
    offsets = np.cumsum(sizes) - sizes  # an exclusive scan
    flags = np.zeros(int(sizes.sum()), bool)
    flags[offsets[sizes > 0]] = True
    data_t = rt.elems[3]
    assert isinstance(data_t, T.Array)
    data = V.concat(datas) if datas else V.empty(
        T.array_of(T.row_type(data_t), (T.SizeConst(0),)), c.size_of)
    out = (sizes, flags, offsets, data)
    if values:
        vals_t = rt.elems[4]
        assert isinstance(vals_t, T.Array)
        out += (V.stack([r[1] for r in results], T.row_type(vals_t), c.size_of),)
    return out


BUILTINS["flatmap"] = (2, lambda c, f, xs: _flatmap(c, f, xs, True), False)
BUILTINS["flatmap'"] = (2, lambda c, f, xs: _flatmap(c, f, xs, False), False)


@builtin("all", 2)
def _all(c: Any, p: Any, xs: Any) -> Any:
    return np.bool_(np.all(c.interp.vec.predicate(p, xs)))


@builtin("any", 2)
def _any(c: Any, p: Any, xs: Any) -> Any:
    return np.bool_(np.any(c.interp.vec.predicate(p, xs)))


@builtin("and", 1)
def _and(c: Any, xs: Any) -> Any:
    return np.bool_(np.all(xs))


@builtin("or", 1)
def _or(c: Any, xs: Any) -> Any:
    return np.bool_(np.any(xs))


def _scatter_nd(dest: Any, idxs: list[np.ndarray], vs: Any) -> Any:
    """Write `vs` at the in-bounds index tuples; out-of-bounds ones are ignored."""
    dest, key, vals = V.scatter_targets(dest, idxs, vs)
    _put(dest, key, vals)
    return dest


def _put(dest: Any, key: tuple, vals: Any) -> None:
    if isinstance(dest, np.ndarray):
        dest[key] = vals
        return
    for d, v in zip(V.fields_of(dest.fields), V.fields_of(vals.fields)):
        _put(d, key, v)


def _index_columns(c: Any, is_: Any, k: int) -> list[np.ndarray]:
    if k == 1:
        return [np.asarray(is_)]
    return [np.asarray(f) for f in V.fields_of(is_.fields)]


@builtin("scatter", 3)
def _scatter(c: Any, dest: Any, is_: Any, vs: Any) -> Any:
    _same_length(c, (is_, vs))
    return _scatter_nd(dest, [is_], vs)


@builtin("scatter_2d", 3)
def _scatter2(c: Any, dest: Any, is_: Any, vs: Any) -> Any:
    _same_length(c, (is_, vs))
    return _scatter_nd(dest, _index_columns(c, is_, 2), vs)


@builtin("scatter_3d", 3)
def _scatter3(c: Any, dest: Any, is_: Any, vs: Any) -> Any:
    _same_length(c, (is_, vs))
    return _scatter_nd(dest, _index_columns(c, is_, 3), vs)


@builtin("spread", 4)
def _spread(c: Any, k: Any, x: Any, is_: Any, vs: Any) -> Any:
    return _scatter_nd(V.replicate(_nonneg(c, k), x), [is_], vs)


def _nonneg(c: Any, n: Any) -> int:
    if int(n) < 0:
        make_range(np.int64(0), np.int64(1), n, "..<", c.loc)
    return int(n)


@builtin("hist", 5)
def _hist(c: Any, op: Any, ne: Any, k: Any, is_: Any, as_: Any) -> Any:
    dest = V.replicate(_nonneg(c, k), ne)
    return c.interp.vec.reduce_by_index(dest, op, ne, [np.asarray(is_)], as_)


@builtin("reduce_by_index", 5)
def _rbi(c: Any, dest: Any, op: Any, ne: Any, is_: Any, as_: Any) -> Any:
    return c.interp.vec.reduce_by_index(dest, op, ne, [np.asarray(is_)], as_)


@builtin("reduce_by_index_2d", 5)
def _rbi2(c: Any, dest: Any, op: Any, ne: Any, is_: Any, as_: Any) -> Any:
    return c.interp.vec.reduce_by_index(dest, op, ne, _index_columns(c, is_, 2), as_)


@builtin("reduce_by_index_3d", 5)
def _rbi3(c: Any, dest: Any, op: Any, ne: Any, is_: Any, as_: Any) -> Any:
    return c.interp.vec.reduce_by_index(dest, op, ne, _index_columns(c, is_, 3), as_)


@builtin("foldl", 3)
def _foldl(c: Any, f: Any, acc: Any, xs: Any) -> Any:
    for x in V.rows(xs):
        acc = c.apply(f, acc, x)
    return acc


@builtin("foldr", 3)
def _foldr(c: Any, f: Any, acc: Any, xs: Any) -> Any:
    for x in reversed(V.rows(xs)):
        acc = c.apply(f, x, acc)
    return acc


@builtin("iterate", 3)
def _iterate(c: Any, n: Any, f: Any, x: Any) -> Any:
    for _ in range(int(n)):
        x = c.apply(f, x)
    return x


@builtin("iterate_while", 3)
def _iterate_while(c: Any, p: Any, f: Any, x: Any) -> Any:
    while c.apply(p, x):
        x = c.apply(f, x)
    return x


@builtin("iterate_until", 3)
def _iterate_until(c: Any, p: Any, f: Any, x: Any) -> Any:
    while not c.apply(p, x):
        x = c.apply(f, x)
    return x


@builtin("tabulate", 2)
def _tabulate(c: Any, n: Any, f: Any) -> Any:
    return c.interp.vec.map(f, (_iota(c, n),), _elem_type(c), c.size_of)


@builtin("tabulate_2d", 3)
def _tabulate2(c: Any, n: Any, m: Any, f: Any) -> Any:
    n, m = _nonneg(c, n), _nonneg(c, m)
    ii, jj = np.meshgrid(np.arange(n), np.arange(m), indexing="ij")
    rt = c.ret_type()
    et = T.array_of(rt.elem, rt.shape[2:]) if isinstance(rt, T.Array) else None
    flat = c.interp.vec.map(f, (ii.ravel(), jj.ravel()), et, c.size_of)
    return V.reshape_outer(flat, (n, m), 1)


@builtin("tabulate_3d", 4)
def _tabulate3(c: Any, n: Any, m: Any, o: Any, f: Any) -> Any:
    n, m, o = _nonneg(c, n), _nonneg(c, m), _nonneg(c, o)
    ii, jj, kk = np.meshgrid(np.arange(n), np.arange(m), np.arange(o), indexing="ij")
    rt = c.ret_type()
    et = T.array_of(rt.elem, rt.shape[3:]) if isinstance(rt, T.Array) else None
    flat = c.interp.vec.map(f, (ii.ravel(), jj.ravel(), kk.ravel()), et, c.size_of)
    return V.reshape_outer(flat, (n, m, o), 1)


# ------------------------------------------------------ array functions


def _iota(c: Any, n: Any) -> np.ndarray:
    return make_range(np.int64(0), np.int64(1), np.int64(n), "..<", c.loc)


@builtin("iota", 1)
def _iota_b(c: Any, n: Any) -> Any:
    return _iota(c, n)


@builtin("indices", 1)
def _indices(c: Any, xs: Any) -> Any:
    return np.arange(V.length(xs), dtype=np.int64)


@builtin("replicate", 2)
def _replicate(c: Any, n: Any, x: Any) -> Any:
    return V.replicate(len(_iota(c, n)), x)


def _zip(c: Any, *arrays: Any) -> Any:
    n = _same_length(c, arrays)
    return V.StructArray((n,), tuple(arrays))


def _unzip(c: Any, xs: Any) -> Any:
    return tuple(xs.fields) if isinstance(xs.fields, tuple) else tuple(xs.fields.values())


for _k, _n in (("zip", 2), ("zip2", 2), ("zip3", 3), ("zip4", 4), ("zip5", 5)):
    BUILTINS[_k] = (_n, _zip, False)
for _k in ("unzip", "unzip2", "unzip3", "unzip4", "unzip5"):
    BUILTINS[_k] = (1, _unzip, False)


@builtin("transpose", 1)
def _transpose(c: Any, xs: Any) -> Any:
    return V.transpose(xs)


def _flatten_k(k: int) -> Callable:
    def run(c: Any, xs: Any) -> Any:
        shape = V.shape_of(xs)
        return V.reshape_outer(xs, (int(np.prod(shape[:k], dtype=np.int64)),), k)

    return run


BUILTINS["flatten"] = (1, _flatten_k(2), False)
BUILTINS["flatten_3d"] = (1, _flatten_k(3), False)
BUILTINS["flatten_4d"] = (1, _flatten_k(4), False)


def _unflatten_k(k: int) -> Callable:
    def run(c: Any, xs: Any) -> Any:
        rt = c.ret_type()
        total = V.length(xs)
        dims = [c.size_of(d) if isinstance(rt, T.Array) and not isinstance(d, T.AnySize)
                else -1 for d in (rt.shape[:k] if isinstance(rt, T.Array) else [None] * k)]
        unknown = [i for i, d in enumerate(dims) if d <= 0]
        if len(unknown) == 1 and total > 0:
            known = int(np.prod([d for i, d in enumerate(dims) if i not in unknown]))
            dims[unknown[0]] = total // known if known else 0
        if int(np.prod(dims)) != total or any(d < 0 for d in dims):
            raise FutharkError(f"Cannot unflatten array of shape [{total}] to array of shape "
                               + "".join(f"[{d}]" for d in dims), c.loc)
        return V.reshape_outer(xs, tuple(dims), 1)

    return run


BUILTINS["unflatten"] = (1, _unflatten_k(2), False)
BUILTINS["unflatten_3d"] = (1, _unflatten_k(3), False)
BUILTINS["unflatten_4d"] = (1, _unflatten_k(4), False)


@builtin("concat", 2)
def _concat(c: Any, xs: Any, ys: Any) -> Any:
    return concat_arrays(xs, ys, c.loc)


def concat_arrays(xs: Any, ys: Any, loc: Any) -> Any:
    """`xs ++ ys`: row shapes must agree."""
    if V.shape_of(xs)[1:] != V.shape_of(ys)[1:] and V.length(xs) and V.length(ys):
        raise FutharkError("Cannot concatenate arrays of shapes "
                           + "".join(f"[{n}]" for n in V.shape_of(xs)) + " and "
                           + "".join(f"[{n}]" for n in V.shape_of(ys)) + ".", loc)
    if V.length(xs) == 0:
        return V.copy(ys)
    if V.length(ys) == 0:
        return V.copy(xs)
    return V.concat([xs, ys])


BUILTINS["++"] = BUILTINS["concat"]


@builtin("rotate", 2)
def _rotate(c: Any, r: Any, xs: Any) -> Any:
    n = V.length(xs)
    return V.roll(xs, int(r) % n) if n else V.copy(xs)


@builtin("reverse", 1)
def _reverse(c: Any, xs: Any) -> Any:
    return V.reverse(xs)


@builtin("length", 1)
def _length(c: Any, xs: Any) -> Any:
    return np.int64(V.length(xs))


@builtin("null", 1)
def _null(c: Any, xs: Any) -> Any:
    return np.bool_(V.length(xs) == 0)


@builtin("copy", 1)
def _copy(c: Any, x: Any) -> Any:
    return V.copy(x)


BUILTINS["manifest"] = BUILTINS["copy"]


def _compiled_only(name: str) -> Callable:
    def run(c: Any, *_args: Any) -> Any:
        raise UnsupportedFeature(
            f"automatic differentiation ({name}) in the interpreter; the compiled backends "
            "run it (--backend cpu or cuda)", c.loc)

    return run


@builtin("with_vjp", 3)
def _with_vjp(c: Any, f: Any, _df: Any, x: Any) -> Any:
    """A custom derivative changes only what `vjp` computes: the value is `f x`."""
    return c.apply(f, x)


# Differentiation is a transformation of the core IR (`futgen.core.ad`).
for _name in DIFFERENTIATION:
    BUILTINS[_name] = (3, _compiled_only(_name), False)


@builtin("head", 1)
def _head(c: Any, xs: Any) -> Any:
    return index_value(xs, [0], c.loc)


@builtin("last", 1)
def _last(c: Any, xs: Any) -> Any:
    return index_value(xs, [V.length(xs) - 1], c.loc)


@builtin("tail", 1)
def _tail(c: Any, xs: Any) -> Any:
    return index_value(xs, [(1, None, None)], c.loc)


@builtin("init", 1)
def _init(c: Any, xs: Any) -> Any:
    return index_value(xs, [(0, V.length(xs) - 1, None)], c.loc)


@builtin("take", 2)
def _take(c: Any, i: Any, xs: Any) -> Any:
    return index_value(xs, [(0, int(i), None)], c.loc)


@builtin("drop", 2)
def _drop(c: Any, i: Any, xs: Any) -> Any:
    return index_value(xs, [(int(i), None, None)], c.loc)


@builtin("split", 1)
def _split(c: Any, xs: Any) -> Any:
    rt = c.ret_type()
    total = V.length(xs)
    n = -1
    if isinstance(rt, T.Tuple) and isinstance(rt.elems[0], T.Array):
        d0, d1 = rt.elems[0].shape[0], rt.elems[1].shape[0]
        if not isinstance(d0, T.AnySize) and (isinstance(d0, T.SizeConst) or c.size_of(d0)):
            n = c.size_of(d0)
        elif not isinstance(d1, T.AnySize):
            n = total - c.size_of(d1)
    if n < 0:
        raise FutharkError("split: cannot determine the split point", c.loc)
    return (index_value(xs, [(0, n, None)], c.loc), index_value(xs, [(n, total, None)], c.loc))


@builtin("sized", 2)
def _sized(c: Any, n: Any, xs: Any) -> Any:
    if V.length(xs) != int(n):
        # `xs :> [n]t`, checked as compiled code checks it: per component array.
        for leaf in V.leaves(xs):
            want = (T.SizeConst(int(n)), *(T.SizeConst(k) for k in leaf.shape[1:]))
            check_coercion(leaf, T.Array(T.Scalar(P.prim_of(leaf)), want),
                           lambda d: d.value, c.loc)
    return xs


# ------------------------------------------------------- functional bits


@builtin("flip", 3)
def _flip(c: Any, f: Any, b: Any, a: Any) -> Any:
    return c.apply(f, a, b)


@builtin("curry", 3)
def _curry(c: Any, f: Any, a: Any, b: Any) -> Any:
    return c.apply(f, (a, b))


@builtin("uncurry", 2)
def _uncurry(c: Any, f: Any, p: Any) -> Any:
    return c.apply(f, p[0], p[1])


@builtin("const", 2)
def _const(c: Any, x: Any, y: Any) -> Any:
    return x


@builtin("id", 1)
def _id(c: Any, x: Any) -> Any:
    return x


BUILTINS["opaque"] = BUILTINS["id"]


@builtin("trace", 1)
def _trace(c: Any, x: Any) -> Any:
    print(f"Trace at {c.loc}: {x}", file=sys.stderr)
    return x


@builtin("assert", 2)
def _assert(c: Any, cond: Any, x: Any) -> Any:
    if not np.all(cond):
        raise FutharkError(f"Assertion is false: {assertion_text(c.loc)}", c.loc)
    return x


@builtin("not", 1, True)
def _not(c: Any, x: Any) -> Any:
    return np.logical_not(x)


BUILTINS["r32"] = (1, lambda c, x: P.convert(x, "f32"), True)
BUILTINS["t32"] = (1, lambda c, x: P.convert(x, "i32"), True)
BUILTINS["r64"] = (1, lambda c, x: P.convert(x, "f64"), True)
BUILTINS["t64"] = (1, lambda c, x: P.convert(x, "i32"), True)


# ------------------------------------------------------- numeric modules


def _const0(v: Callable[[], Any]) -> Builtin:
    return (0, lambda c: v(), False)


def _ew(n: int, fn: Callable[..., Any]) -> Builtin:
    """An elementwise built-in of n primitive arguments."""
    return (n, lambda c, *xs: fn(*xs), True)


def _reduction(t: str, op: str) -> Builtin:
    def run(c: Any, xs: Any) -> Any:
        return c.interp.vec.reduce_known(op, t, xs)

    return (1, run, False)


def _module(t: str) -> None:
    q = t + "."
    dt = T.PRIM_DTYPES[t]
    for p in T.PRIMS:
        BUILTINS[q + p] = _ew(1, lambda x, t=t: P.convert(x, t))
    if t == "bool":
        return
    for op in NUMERIC_OPS + (INTEGRAL_OPS if t in T.INTS else ()):
        BUILTINS[q + op] = _ew(2, lambda x, y, op=op, t=t: prim_binop(op, x, y, T.Scalar(t)))
    BUILTINS[q + "neg"] = _ew(1, np.negative)
    BUILTINS[q + "max"] = _ew(2, P.BINOPS["max"].evaluator(t))
    BUILTINS[q + "min"] = _ew(2, P.BINOPS["min"].evaluator(t))
    BUILTINS[q + "abs"] = _ew(1, np.abs)
    BUILTINS[q + "sgn"] = _ew(1, lambda x: np.sign(x).astype(x.dtype)[()] if hasattr(x, "astype")
                              else np.sign(x))
    BUILTINS[q + "highest"] = _const0(lambda t=t: P.highest(t))
    BUILTINS[q + "lowest"] = _const0(lambda t=t: P.lowest(t))
    BUILTINS[q + "sum"] = _reduction(t, "+")
    BUILTINS[q + "product"] = _reduction(t, "*")
    BUILTINS[q + "maximum"] = _reduction(t, "max")
    BUILTINS[q + "minimum"] = _reduction(t, "min")
    BUILTINS[q + "to_i64"] = _ew(1, lambda x: P.convert(x, "i64"))
    BUILTINS[q + "num_bits"] = _const0(lambda t=t: np.int32(P.BITS[t]))
    BUILTINS[q + "get_bit"] = _ew(2, P.get_bit)
    BUILTINS[q + "set_bit"] = _ew(3, P.set_bit)
    if t in T.INTS:
        BUILTINS[q + "not"] = _ew(1, np.invert)
        BUILTINS[q + "popc"] = _ew(1, P.popc)
        BUILTINS[q + "clz"] = _ew(1, P.clz)
        BUILTINS[q + "ctz"] = _ew(1, P.ctz)
        BUILTINS[q + "mul_hi"] = _ew(2, P.mul_hi)
        BUILTINS[q + "mad_hi"] = _ew(3, P.mad_hi)
        return
    for name, fn in P.UNARY_REAL.items():
        BUILTINS[q + name] = _ew(1, fn)
    BUILTINS[q + "sgn"] = _ew(1, P.fsgn)
    BUILTINS[q + "from_fraction"] = _ew(2, lambda x, y, dt=dt: (
        np.asarray(x).astype(dt) / np.asarray(y).astype(dt))[()])
    BUILTINS[q + "to_f64"] = _ew(1, lambda x: P.convert(x, "f64"))
    BUILTINS[q + "atan2"] = _ew(2, np.arctan2)
    BUILTINS[q + "atan2pi"] = _ew(2, P.atan2pi)
    BUILTINS[q + "hypot"] = _ew(2, np.hypot)
    BUILTINS[q + "lerp"] = _ew(3, P.lerp)
    BUILTINS[q + "mad"] = _ew(3, lambda a, b, c_: a * b + c_)
    BUILTINS[q + "fma"] = _ew(3, P.fma)
    BUILTINS[q + "isinf"] = _ew(1, P.isinf)
    BUILTINS[q + "isnan"] = _ew(1, P.isnan)
    for name, mk in P.FLOAT_CONSTS.items():
        BUILTINS[q + name] = _const0(lambda mk=mk, t=t: mk(t))
    BUILTINS[q + "nextafter"] = _ew(2, np.nextafter)
    BUILTINS[q + "ldexp"] = _ew(2, P.ldexp)
    BUILTINS[q + "copysign"] = _ew(2, np.copysign)
    BUILTINS[q + "from_bits"] = _ew(1, lambda x, t=t: P.from_bits(x, t))
    BUILTINS[q + "to_bits"] = _ew(1, P.to_bits)


for _t in T.PRIMS:
    _module(_t)


@builtin(">->", 3)
def _compose_fwd(c: Any, f: Any, g: Any, x: Any) -> Any:
    return c.apply(g, c.apply(f, x))


@builtin("<-<", 3)
def _compose_bwd(c: Any, g: Any, f: Any, x: Any) -> Any:
    return c.apply(g, c.apply(f, x))


@builtin("rep", 1)
def _rep(c: Any, x: Any) -> Any:
    rt = c.ret_type()
    n = c.size_of(rt.shape[0]) if isinstance(rt, T.Array) else 0
    return V.replicate(n, x)


@builtin("partition2", 3)
def _partition2(c: Any, p1: Any, p2: Any, xs: Any) -> Any:
    m1 = c.interp.vec.predicate(p1, xs)
    rest = np.nonzero(~m1)[0]
    m2 = np.zeros_like(m1)
    if len(rest):
        m2[rest] = c.interp.vec.predicate(p2, V.apply_key(xs, (rest,)))
    pick = [np.nonzero(m1)[0], np.nonzero(m2)[0], np.nonzero(~m1 & ~m2)[0]]
    return tuple(V.copy(V.apply_key(xs, (i,))) for i in pick)
