"""Internalisation of the derived prelude functions.

Futhark's prelude defines these in Futhark on top of a few intrinsics
(`prelude/array.fut`, `soacs.fut`, `functional.fut`); here each is one
rule that emits the same core IR those definitions would, written with the
SOAC builders of `futgen.core.builtins`:

* **Shape functions** become core basic operations: `flatten`/`unflatten`
  a `Reshape` (with Futhark's run-time check of the sizes), `take`, `drop`,
  `head`, `tail`, `split`, ... an `Index` with a slice, `rotate` a
  `Concat` of two slices.  Sizes a function takes from its result type
  (`unflatten`, `split`, `rep`) are read from the sizes in scope at the
  call (`Internaliser.call_env`).
* **Second-order functions** become SOACs: `all`/`any` a map-reduce,
  `exscan` an inclusive scan shifted by one, `partition`/`partition2` the
  scan-then-scatter of `filter` with one class per output, `scatter_2d` a
  Scatter with two indices, `reduce_by_index_2d` a Hist on the flattened
  destination; `foldl`/`foldr`/`iterate*` sequential `Loop`s; `flatmap`
  a `Loop` appending each element's array, then a scan and a scatter for
  the segment descriptors.
* **Combinators** (`flip`, `curry`, `>->`, `const`, ...) only rearrange
  arguments: function values are inlined anyway.

Run-time failures use the interpreter's messages (`futgen.interp.builtins`),
through `Assert`s whose messages carry values.
"""

from __future__ import annotations

from collections.abc import Callable

from futgen.core import ir
from futgen.core.builtins import (
    I64,
    _elem,
    _fn,
    _last_or_zero,
    _names,
    _rows,
    binop_lambda,
    gather_rows,
    hist_soac,
    identity_lambda,
    make_lambda,
    map_soac,
    place_indices,
    scan_soac,
    scatter_soac,
)
from futgen.core.checked import array_dims, coerce_array
from futgen.core.internalise import (
    Arg,
    Fn,
    Internaliser,
    V,
    _flatten,
    _no_sizes,
    _unsupported,
)
from futgen.errors import Loc
from futgen.frontend import types as T

Rule = Callable[[Internaliser, T.Type, Loc], Fn]
BOOL = ir.Prim("bool")


def _i64(it: Internaliser, op: str, x: ir.SubExp, y: ir.SubExp) -> ir.SubExp:
    if op in ("==", "!=", "<", ">", "<=", ">="):
        return it.bind1(ir.CmpOp(op, "i64", x, y), BOOL, "c")
    return it.bind1(ir.BinOp(op, "i64", x, y), I64, "n")


def _k(n: int) -> ir.Constant:
    return ir.Constant(n, "i64")


def _and(it: Internaliser, *conds: ir.SubExp) -> ir.SubExp:
    out = conds[0]
    for c in conds[1:]:
        out = it.bind1(ir.BinOp("&&", "bool", out, c), BOOL, "c")
    return out


def _check(it: Internaliser, cond: ir.SubExp, msg: str, args: list[ir.SubExp],
           loc: Loc) -> None:
    it.bind1(ir.Assert(cond, msg, loc, tuple(args)), BOOL, "check")


def _shape_template(rank: int) -> str:
    return "[{}]" * rank


# ------------------------------------------------------------ shapes


def _flatten_k(k: int) -> Rule:
    """`flatten xs`: the outer `k` dimensions as one (a Reshape, never failing)."""
    def body(it: Internaliser, args: list[Arg], ret: T.Type, loc: Loc) -> V:
        def flat(a: ir.SubExp) -> ir.SubExp:
            dims = array_dims(it, a)
            n = dims[0]
            for d in dims[1:k]:
                n = _i64(it, "*", n, d)
            shape = (n, *dims[k:])
            return it.bind1(ir.Reshape(a.name, shape, loc),
                            ir.ArrayT(_elem_prim(it, a), shape), "flat")

        return it.unflatten(ret, iter(flat(a) for a in _flatten(args[0][0])))

    return _fn(1, body)


def _elem_prim(it: Internaliser, a: ir.SubExp) -> str:
    t = it.type_of(a)
    assert isinstance(t, ir.ArrayT)
    return t.elem


def _result_dims(it: Internaliser, ret: T.Type, k: int) -> list[ir.SubExp | None]:
    """The outer `k` sizes of the result type, where known at the call."""
    assert isinstance(ret, T.Array), ret
    return [it.dim(d, it.call_env, exprs=True) or it.anonymous_dim(d) for d in ret.shape[:k]]


def _unflatten_k(k: int) -> Rule:
    """`unflatten xs : [n][m]t`: a Reshape after Futhark's check that the sizes
    are nonnegative and multiply to the length; one size the call leaves
    unknown is the length divided by the others (as the interpreter does)."""
    def body(it: Internaliser, args: list[Arg], ret: T.Type, loc: Loc) -> V:
        leaves = _flatten(args[0][0])
        total = it.width(leaves[0])
        dims = _result_dims(it, ret, k)
        unknown = [i for i, d in enumerate(dims) if d is None]
        if len(unknown) > 1:
            raise _unsupported("unflatten whose result sizes are not known here", loc)
        if unknown:
            dims[unknown[0]] = _inferred_dim(it, total, [d for d in dims if d is not None], loc)
        known: list[ir.SubExp] = [d for d in dims if d is not None]
        product = known[0]
        for d in known[1:]:
            product = _i64(it, "*", product, d)
        ok = _and(it, _i64(it, "==", product, total),
                  *(_i64(it, ">=", d, _k(0)) for d in known))
        _check(it, ok, "Cannot unflatten array of shape [{}] to array of shape "
               + _shape_template(k), [total, *known], loc)

        def reshape(a: ir.SubExp) -> ir.SubExp:
            shape = (*known, *array_dims(it, a)[1:])
            return it.bind1(ir.Reshape(a.name, shape, loc),
                            ir.ArrayT(_elem_prim(it, a), shape), "unflat")

        return it.unflatten(ret, iter(reshape(a) for a in leaves))

    return _fn(1, body)


def _inferred_dim(it: Internaliser, total: ir.SubExp, known: list[ir.SubExp],
                  loc: Loc) -> ir.SubExp:
    """`if total > 0 then (if p == 0 then 0 else total / p) else -1`, p the
    product of the known sizes (the interpreter's rule)."""
    p: ir.SubExp = _k(1)
    for d in known:
        p = _i64(it, "*", p, d)
    positive = _i64(it, ">", total, _k(0))

    def quotient() -> ir.SubExp:
        zero = _i64(it, "==", p, _k(0))
        return it.if_(zero, lambda: _k(0),
                      lambda: _i64(it, "/", total, _i64(it, "max", p, _k(1))), T.I64, {}, loc)

    return it.if_(positive, quotient, lambda: _k(-1), T.I64, {}, loc)


def _slice(it: Internaliser, v: V, t: T.Type, start: ir.SubExp, num: ir.SubExp,
           loc: Loc) -> V:
    """`v[start:start+num]` on every leaf (bounds checked by the Index)."""
    sl = (ir.DimSlice(start, num, _k(1)),)
    return it.unflatten(t, iter(it.bind1(ir.Index(a.name, sl, loc), it.scrub(
        ir.ArrayT(_elem_prim(it, a), (num, *it.type_of(a).shape[1:]))), "slice")
        for a in _flatten(v)))


def _index(it: Internaliser, v: V, t: T.Type, i: ir.SubExp, loc: Loc) -> V:
    return it.unflatten(t, iter(it.bind1(ir.Index(a.name, (ir.DimFix(i),), loc),
                                         ir.row(it.type_of(a)), "elem") for a in _flatten(v)))


def _suffix(it: Internaliser, xs: V, xt: T.Type, start: ir.SubExp, loc: Loc) -> V:
    """`xs[start:]`, failing with the interpreter's message for an open slice."""
    a = _flatten(xs)[0]
    dims = array_dims(it, a)
    ok = _and(it, _i64(it, ">=", start, _k(0)), _i64(it, "<=", start, dims[0]))
    _check(it, ok, "Index [{}:] out of bounds for array of shape "
           + _shape_template(len(dims)) + ".", [start, *dims], loc)
    return _slice(it, xs, xt, start, _i64(it, "-", dims[0], start), loc)


def _head(it: Internaliser, args: list[Arg], ret: T.Type, loc: Loc) -> V:
    return _index(it, args[0][0], ret, _k(0), loc)


def _last(it: Internaliser, args: list[Arg], ret: T.Type, loc: Loc) -> V:
    (xs, _), = args
    n = it.width(_flatten(xs)[0])
    return _index(it, xs, ret, _i64(it, "-", n, _k(1)), loc)


def _tail(it: Internaliser, args: list[Arg], ret: T.Type, loc: Loc) -> V:
    (xs, xt), = args
    return _suffix(it, xs, xt, _k(1), loc)


def _init(it: Internaliser, args: list[Arg], ret: T.Type, loc: Loc) -> V:
    (xs, xt), = args
    n = it.width(_flatten(xs)[0])
    return _slice(it, xs, xt, _k(0), _i64(it, "-", n, _k(1)), loc)


def _take(it: Internaliser, args: list[Arg], ret: T.Type, loc: Loc) -> V:
    (i, _), (xs, xt) = args
    return _slice(it, xs, xt, _k(0), i, loc)


def _drop(it: Internaliser, args: list[Arg], ret: T.Type, loc: Loc) -> V:
    (i, _), (xs, xt) = args
    return _suffix(it, xs, xt, i, loc)


def _split(it: Internaliser, args: list[Arg], ret: T.Type, loc: Loc) -> V:
    """`split xs : ([n]t, [m]t)`: the split point is `n`, else the length minus `m`."""
    (xs, xt), = args
    total = it.width(_flatten(xs)[0])
    assert isinstance(ret, T.Tuple)
    first, second = (_result_dims(it, r, 1)[0] for r in ret.elems)
    if first is not None:
        n = first
    elif second is not None:
        n = _i64(it, "-", total, second)
    else:
        raise _unsupported("split whose result sizes are not known here", loc)
    return (_slice(it, xs, xt, _k(0), n, loc),
            _slice(it, xs, xt, n, _i64(it, "-", total, n), loc))


def _rotate(it: Internaliser, args: list[Arg], ret: T.Type, loc: Loc) -> V:
    """`rotate r xs`: `xs[r':] ++ xs[:r']` with `r' = r mod n` (0 when empty)."""
    (r, _), (xs, xt) = args
    n = it.width(_flatten(xs)[0])
    empty = _i64(it, "==", n, _k(0))
    shift = it.if_(empty, lambda: _k(0),
                   lambda: _i64(it, "%", r, _i64(it, "max", n, _k(1))), T.I64, {}, loc)
    back = _flatten(_slice(it, xs, xt, shift, _i64(it, "-", n, shift), loc))
    front = _flatten(_slice(it, xs, xt, _k(0), shift, loc))
    out = [it.bind1(ir.Concat((b.name, f.name)), it.scrub(ir.ArrayT(
        _elem_prim(it, a), (n, *it.type_of(a).shape[1:]))), "rot")
        for a, b, f in zip(_flatten(xs), back, front)]
    return it.unflatten(xt, iter(out))


def _sized(it: Internaliser, args: list[Arg], ret: T.Type, loc: Loc) -> V:
    """`sized n xs`: `xs` with outer size `n`, checked as `xs :> [n]t` is."""
    (n, _), (xs, xt) = args
    out = [coerce_array(it, a, [n] + [None] * (len(it.type_of(a).shape) - 1), loc)
           for a in _flatten(xs)]
    return it.unflatten(xt, iter(out))


def _rep(it: Internaliser, args: list[Arg], ret: T.Type, loc: Loc) -> V:
    """`rep x : [n]t`: `replicate n x` with `n` from the result type."""
    (x, _), = args
    [n] = _result_dims(it, ret, 1)
    if n is None:
        raise _unsupported("rep whose result size is not known here", loc)
    return it.unflatten(ret, iter(it.bind1(ir.Replicate((n,), v), ir.array_of(
        it.type_of(v), (n,)), "rep") for v in _flatten(x)))


def _indices(it: Internaliser, args: list[Arg], ret: T.Type, loc: Loc) -> V:
    n = it.width(_flatten(args[0][0])[0])
    return it.bind1(ir.Iota(n, _k(0), _k(1)), ir.ArrayT("i64", (n,)), "indices")


def _null(it: Internaliser, args: list[Arg], ret: T.Type, loc: Loc) -> V:
    return _i64(it, "==", it.width(_flatten(args[0][0])[0]), _k(0))


# ------------------------------------------------------------ SOACs


def _reduce_bool(it: Internaliser, op: str, pred: Fn | None, xs: Arg, loc: Loc) -> V:
    """`reduce (op) ne (map pred xs)` for `op` `&&` or `||`, as one Screma."""
    v, xt = xs
    leaves = _flatten(v)
    w = it.width(leaves[0])
    if pred is None:
        lam = identity_lambda(it, _rows(it, leaves))
    else:
        lam = make_lambda(it, pred, [_elem(xt)], _rows(it, leaves), loc)
    red = ir.Reduce(binop_lambda(it, op, "bool"), (ir.Constant(op == "&&", "bool"),), True)
    return it.bind1(ir.Screma(w, _names(leaves), (), (red,), lam), BOOL, "red")


def _exscan(it: Internaliser, args: list[Arg], ret: T.Type, loc: Loc) -> V:
    """`exscan op ne xs`: `([ne] ++ scan op ne xs)[:n]`."""
    (_, _), (ne, _), (xs, xt) = args
    n = it.width(_flatten(xs)[0])
    inc = scan_soac(it, args, loc)
    out = []
    for v, a in zip(_flatten(ne), _flatten(inc)):
        first = it.bind1(ir.Replicate((_k(1),), v), ir.array_of(it.type_of(v), (_k(1),)), "ne")
        cat = it.bind1(ir.Concat((first.name, a.name)), it.scrub(ir.ArrayT(
            _elem_prim(it, a), (None, *it.type_of(a).shape[1:]))), "cat")
        out.append(cat)
    return _slice(it, it.unflatten(xt, iter(out)), xt, _k(0), n, loc)


def _partition(k: int) -> Rule:
    """`partition p xs` (k = 2) and `partition2 p1 p2 xs` (k = 3): each element
    gets one class (the first predicate that holds, else the last); scans of
    the class flags give each element its place among its class, and one
    scatter puts the classes one after another."""
    def body(it: Internaliser, args: list[Arg], ret: T.Type, loc: Loc) -> V:
        preds = [p for p, _ in args[:-1]]
        xs, xt = args[-1]
        leaves = _flatten(xs)
        w = it.width(leaves[0])
        flag_t = T.Tuple(tuple([T.I64] * k * 2))
        classify = Fn(T.Arrow(None, _elem(xt), flag_t), 1,
                      lambda a, _r: _class_flags(it, preds, a, k, loc))
        lam = make_lambda(it, classify, [_elem(xt)], _rows(it, leaves), loc)
        scans = tuple(ir.Scan(binop_lambda(it, "+", "i64"), (_k(0),)) for _ in range(k))
        outs = it.bind(ir.Screma(w, _names(leaves), scans, (), lam),
                       [ir.ArrayT("i64", (w,))] * (2 * k), "part")
        offsets, flags = outs[:k], outs[k:]
        sizes = [_last_or_zero(it, o, w, loc) for o in offsets[:-1]]
        starts = [_k(0)]
        for m in sizes:
            starts.append(_i64(it, "+", starts[-1], m))
        pos = _positions(it, flags, offsets, starts, loc)
        if any(not isinstance(r, ir.Prim) for r in _rows(it, leaves)):
            placed = gather_rows(it, xs, xt, place_indices(it, w, pos, w), loc)
        else:
            dests = [it.bind1(ir.Replicate((w,), ir.Constant(0 if t.name != "bool" else False,
                                                             t.name)),
                              ir.ArrayT(t.name, (w,)), "dest") for t in _rows(it, leaves)]
            placed = it.unflatten(xt, iter(scatter_soac(it, tuple(dests), [pos],
                                                        tuple(leaves))))
        ends = [*starts[1:], w]
        return tuple(_slice(it, placed, xt, s, _i64(it, "-", e, s), loc)
                     for s, e in zip(starts, ends))

    return _fn(k, body)  # k - 1 predicates and the array


def _class_flags(it: Internaliser, preds: list[Fn], arg: list[Arg], k: int,
                 loc: Loc) -> V:
    """The 0/1 flags of an element's class, twice (for the scans and the map)."""
    def flags_from(j: int) -> V:
        if j == k - 1:
            return tuple(_k(1 if c == j else 0) for c in range(k))
        holds = it.apply(preds[j], arg, loc)
        return it.if_(holds, lambda: tuple(_k(1 if c == j else 0) for c in range(k)),
                      lambda: flags_from(j + 1), T.Tuple(tuple([T.I64] * k)), {}, loc)

    flags = _flatten(flags_from(0))
    return (*flags, *flags)


def _positions(it: Internaliser, flags: list[ir.SubExp], offsets: list[ir.SubExp],
               starts: list[ir.SubExp], loc: Loc) -> ir.SubExp:
    """Each element's place: `sum over classes c of flag_c * (start_c + offset_c - 1)`."""
    k = len(flags)

    def pos(args: list[Arg], _r: T.Type) -> V:
        total: ir.SubExp = _k(0)
        for c in range(k):
            place = _i64(it, "-", _i64(it, "+", starts[c], args[k + c][0]), _k(1))
            total = _i64(it, "+", total, _i64(it, "*", args[c][0], place))
        return total

    arr_i = T.Array(T.I64, (T.AnySize(-1),))
    t: T.Type = T.I64
    for _ in range(2 * k):
        t = T.Arrow(None, T.I64, t)
    f = Fn(t, 2 * k, pos)
    return map_soac(it, f, [(a, arr_i) for a in (*flags, *offsets)], arr_i, loc)


def _scatter_nd(it: Internaliser, args: list[Arg], ret: T.Type, loc: Loc) -> V:
    """`scatter_2d dest is vs`: a Scatter with one index per dimension."""
    (dest, _), (is_, _), (vs, _) = args
    return it.unflatten(ret, iter(scatter_soac(it, dest, _flatten(is_), vs)))


def _spread(it: Internaliser, args: list[Arg], ret: T.Type, loc: Loc) -> V:
    """`spread k x is vs`: `scatter (replicate k x) is vs`."""
    (k, _), (x, _), (is_, _), (vs, _) = args
    dest = tuple(it.bind1(ir.Replicate((k,), v), ir.array_of(it.type_of(v), (k,)), "dest")
                 for v in _flatten(x))
    return it.unflatten(ret, iter(scatter_soac(it, dest, [is_], vs)))


def _reduce_by_index_nd(it: Internaliser, args: list[Arg], ret: T.Type, loc: Loc) -> V:
    """`reduce_by_index_2d dest op ne is vs`: a 1-D histogram on the flattened
    destination, each index pair mapped to its row-major bin (-1, ignored,
    when any index is out of range), reshaped back."""
    (dest, _), (op, _), (ne, _), (is_, _), vals = args
    idx = _flatten(is_)
    dleaves = _flatten(dest)
    dims = array_dims(it, dleaves[0])[:len(idx)]
    n = dims[0]
    for d in dims[1:]:
        n = _i64(it, "*", n, d)
    flat = [it.bind1(ir.Reshape(a.name, (n, *array_dims(it, a)[len(idx):]), loc), ir.ArrayT(
        _elem_prim(it, a), (n, *it.type_of(a).shape[len(idx):])), "flat") for a in dleaves]

    def bin_of(a: list[Arg], _r: T.Type) -> V:
        ok = _and(it, *(c for i, (x, _) in enumerate(a)
                        for c in (_i64(it, ">=", x, _k(0)), _i64(it, "<", x, dims[i]))))
        flat_i: ir.SubExp = a[0][0]
        for i in range(1, len(a)):
            flat_i = _i64(it, "+", _i64(it, "*", flat_i, dims[i]), a[i][0])
        return it.if_(ok, lambda: flat_i, lambda: _k(-1), T.I64, {}, loc)

    arr_i = T.Array(T.I64, (T.AnySize(-1),))
    t: T.Type = T.I64
    for _ in idx:
        t = T.Arrow(None, T.I64, t)
    bins = map_soac(it, Fn(t, len(idx), bin_of), [(x, arr_i) for x in idx], arr_i, loc)
    hist = hist_soac(it, tuple(flat) if len(flat) > 1 else flat[0], op, ne, bins, vals, loc)
    out = [it.bind1(ir.Reshape(h.name, tuple(array_dims(it, d)), loc), it.type_of(d), "unflat")
           for h, d in zip(_flatten(hist), dleaves)]
    return it.unflatten(ret, iter(out))


# ------------------------------------------------------------ loops


def _loop(it: Internaliser, init: V, t: T.Type, form: ir.LoopForm,
          before: list[ir.Param], step: Callable[[V], list[ir.SubExp]],
          extra_init: list[ir.SubExp]) -> V:
    """A core Loop with merge parameters for the leaves of `init` (of source
    type `t`) plus `before` (initialised to `extra_init`); `step` gets the
    current value and returns the next leaves (and extra results)."""
    inits = _flatten(init)
    params = [ir.Param(it.fresh("acc"), _no_sizes(it.type_of(x))) for x in inits]
    merge = list(zip(params, inits)) + list(zip(before, extra_init))
    with it.nested() as stms:
        for p, _ in merge:
            it.types[p.name] = p.type
        if isinstance(form, ir.ForLoop):
            it.types[form.i] = ir.Prim(form.prim)
        result = step(it.unflatten(t, iter(ir.Var(p.name) for p in params)))
        body = ir.Body(tuple(stms), tuple(result))
    outs = it.bind(ir.Loop(tuple(merge), form, body), [p.type for p, _ in merge], "loop")
    return it.unflatten(t, iter(outs[:len(params)]))


def _fold(right: bool) -> Rule:
    """`foldl f acc xs` (`foldr`: from the end, `f x acc`) as a counted loop."""
    def body(it: Internaliser, args: list[Arg], ret: T.Type, loc: Loc) -> V:
        (f, _), (acc, at), (xs, xt) = args
        n = it.width(_flatten(xs)[0])
        i = it.fresh("i")

        def step(cur: V) -> list[ir.SubExp]:
            j = _i64(it, "-", _i64(it, "-", n, ir.Var(i)), _k(1)) if right else ir.Var(i)
            x = _index(it, xs, _elem(xt), j, loc)
            fargs = [(x, _elem(xt)), (cur, at)] if right else [(cur, at), (x, _elem(xt))]
            return _flatten(it.apply(f, fargs, loc))

        return _loop(it, acc, at, ir.ForLoop(i, "i64", n), [], step, [])

    return _fn(3, body)


def _flatmap(values: bool) -> Rule:
    """`flatmap f xs` (`flatmap'`: without the other results): a loop over
    the elements appending each call's array (the lengths differ) and value,
    then the segment descriptors from the lengths: the offsets by an
    exclusive scan, the flags by a scatter of `true` at the offsets of the
    nonempty segments.  The loop runs element by element (irregular nested
    parallelism is not flattened yet)."""
    def body(it: Internaliser, args: list[Arg], ret: T.Type, loc: Loc) -> V:
        (f, _), (xs, xt) = args
        assert isinstance(ret, T.Tuple)
        # The accumulated lengths, arrays and (for flatmap) values.
        acc_ts = [ret.elems[0], ret.elems[3], *ret.elems[4:]]
        n = it.width(_flatten(xs)[0])
        init = tuple(_empty(it, t, loc) for t in acc_ts)
        i = it.fresh("i")

        def step(cur: V) -> list[ir.SubExp]:
            r = it.apply(f, [(_index(it, xs, _elem(xt), ir.Var(i), loc), _elem(xt))], loc)
            d, *v = r if values else (r,)
            sizes, data, *vals = cur
            first = it.bind1(ir.CmpOp("==", "i64", ir.Var(i), _k(0)), BOOL, "first")
            return [*_append(it, sizes, _single(it, it.width(_flatten(d)[0]))),
                    *_append(it, data, d, first),
                    *(x for acc, y in zip(vals, v, strict=True)
                      for x in _append(it, acc, _singles(it, y), first))]

        sizes, data, *vals = _loop(it, init, T.Tuple(tuple(acc_ts)), ir.ForLoop(i, "i64", n),
                                   [], step, [])
        # The loop appended one length (and value) per element: n of them.
        sizes = coerce_array(it, sizes, [n], loc)
        vals = [_with_outer(it, v, n, loc) for v in vals]
        [incl] = it.bind(ir.Screma(n, (sizes.name,), (ir.Scan(binop_lambda(it, "+", "i64"),
                                                                 (_k(0),)),),
                                   (), identity_lambda(it, [I64])), [ir.ArrayT("i64", (n,))],
                         "ends")
        offsets = _map2(it, "-", incl, sizes, n)
        total = _last_or_zero(it, incl, n, loc)
        starts = _nonempty_starts(it, offsets, sizes, n)
        falses = it.bind1(ir.Replicate((total,), ir.Constant(False, "bool")),
                          ir.ArrayT("bool", (total,)), "flags")
        trues = it.bind1(ir.Replicate((n,), ir.Constant(True, "bool")),
                         ir.ArrayT("bool", (n,)), "true")
        [flags] = scatter_soac(it, falses, [starts], trues)
        return (sizes, flags, offsets, _with_outer(it, data, total, loc), *vals)

    return _fn(2, body)


def _empty(it: Internaliser, t: T.Type, loc: Loc) -> V:
    """An empty array of source type `t`: each leaf `[0]`, with the row sizes
    known at the call."""
    leaves = []
    for lt in it.leaf_types(T.array_of(T.row_type(t), (T.SizeConst(0),)), it.call_env, loc,
                            exprs=True):
        assert isinstance(lt, ir.ArrayT)
        zero = ir.Constant(False if lt.elem == "bool" else 0, lt.elem)
        # Of no known length: a loop appends to it (row sizes not known at
        # the call are 0 here; the first append replaces it).
        shape = tuple(_k(0) if d is None else d for d in lt.shape)
        leaves.append(it.bind1(ir.Replicate(shape, zero),
                               ir.ArrayT(lt.elem, (None, *lt.shape[1:])), "empty"))
    return it.unflatten(t, iter(leaves))


def _with_outer(it: Internaliser, v: V, n: ir.SubExp, loc: Loc) -> V:
    """`v`'s arrays with outer size `n` (checked)."""
    if isinstance(v, tuple | list):
        return tuple(_with_outer(it, x, n, loc) for x in v)
    return coerce_array(it, v, [n, *([None] * (len(it.type_of(v).shape) - 1))], loc)


def _single(it: Internaliser, x: ir.SubExp) -> ir.SubExp:
    """`[x]`."""
    return it.bind1(ir.Replicate((_k(1),), x), ir.array_of(it.type_of(x), (_k(1),)), "one")


def _singles(it: Internaliser, v: V) -> V:
    """`[v]` for each leaf of `v` (a tuple of them stays a tuple)."""
    if isinstance(v, tuple | list):
        return tuple(_singles(it, x) for x in v)
    return _single(it, v)


def _append(it: Internaliser, xs: V, ys: V, first: ir.SubExp | None = None) -> list[ir.SubExp]:
    """The leaves of `xs ++ ys`; where `first` holds, those of `ys` alone
    (`xs` is then the empty start, whose rows may not have `ys`' sizes)."""
    out = []
    for a, b in zip(_flatten(xs), _flatten(ys), strict=True):
        at = it.type_of(a)
        assert isinstance(at, ir.ArrayT)
        t = ir.ArrayT(at.elem, (None,) * len(at.shape))
        cat = ir.Stm((ir.Param(it.fresh("cat"), t),), ir.Concat((a.name, b.name)))
        if first is None:
            out.append(it.bind1(cat.exp, t, "cat"))
            continue
        out.append(it.bind1(ir.If(first, ir.Body((), (b,)),
                                  ir.Body((cat,), (ir.Var(cat.pat[0].name),)), (t,)),
                            t, "appended"))
    return out


def _map2(it: Internaliser, op: str, xs: ir.SubExp, ys: ir.SubExp, n: ir.SubExp) -> ir.SubExp:
    """`map2 (op) xs ys` on i64."""
    lam = binop_lambda(it, op, "i64")
    [out] = it.bind(ir.Screma(n, _names([xs, ys]), (), (), lam), [ir.ArrayT("i64", (n,))], "map")
    return out


def _nonempty_starts(it: Internaliser, offsets: ir.SubExp, sizes: ir.SubExp,
                     n: ir.SubExp) -> ir.SubExp:
    """Each segment's offset where it is nonempty, else -1 (a scatter skips it)."""
    o, k = it.fresh("o"), it.fresh("k")
    c, r = it.fresh("c"), it.fresh("r")
    stms = (ir.Stm((ir.Param(c, BOOL),), ir.CmpOp(">", "i64", ir.Var(k), _k(0))),
            ir.Stm((ir.Param(r, I64),), ir.If(ir.Var(c), ir.Body((), (ir.Var(o),)),
                                             ir.Body((), (_k(-1),)), (I64,))))
    lam = ir.Lambda((ir.Param(o, I64), ir.Param(k, I64)), ir.Body(stms, (ir.Var(r),)), (I64,))
    [out] = it.bind(ir.Screma(n, _names([offsets, sizes]), (), (), lam),
                    [ir.ArrayT("i64", (n,))], "starts")
    return out


def _iterate(it: Internaliser, args: list[Arg], ret: T.Type, loc: Loc) -> V:
    """`iterate n f x`: `n` applications of `f` (none when `n <= 0`)."""
    (n, _), (f, _), (x, xt) = args
    i = it.fresh("i")
    return _loop(it, x, xt, ir.ForLoop(i, "i32", n), [],
                 lambda cur: _flatten(it.apply(f, [(cur, xt)], loc)), [])


def _iterate_while(until: bool) -> Rule:
    """`iterate_while p f x`: apply `f` while `p` holds (`iterate_until`: until)."""
    def body(it: Internaliser, args: list[Arg], ret: T.Type, loc: Loc) -> V:
        (p, _), (f, _), (x, xt) = args

        def test(v: V) -> ir.SubExp:
            c = it.apply(p, [(v, xt)], loc)
            return it.bind1(ir.UnOp("not", "bool", c), BOOL, "c") if until else c

        cond = ir.Param(it.fresh("cond"), BOOL)

        def step(cur: V) -> list[ir.SubExp]:
            new = it.apply(f, [(cur, xt)], loc)
            return [*_flatten(new), test(new)]

        return _loop(it, x, xt, ir.WhileLoop(cond.name), [cond], step, [test(x)])

    return _fn(3, body)


# ------------------------------------------------------------ combinators


def _compose(it: Internaliser, args: list[Arg], ret: T.Type, loc: Loc,
             first: int) -> V:
    """`(f >-> g) x` and `(g <-< f) x`: `g (f x)`; `first` is the position of `f`."""
    f, g = args[first][0], args[1 - first][0]
    x, xt = args[2]
    # f's own type is the instance it was made at; the argument's type may
    # still name the type variables of the function that passed it.
    ft = f.ty if isinstance(f, Fn) else args[first][1]
    assert isinstance(ft, T.Arrow)
    return it.apply(g, [(it.apply(f, [(x, xt)], loc), ft.ret)], loc)


def compose_operator(it: Internaliser, op: str, ty: T.Type, loc: Loc) -> Fn:
    """`>->` and `<-<` used as infix operators."""
    return DERIVED[op](it, ty, loc)


def _uncurry(it: Internaliser, args: list[Arg], ret: T.Type, loc: Loc) -> V:
    (f, _), (p, pt) = args
    comps = it.components(pt)
    assert comps is not None
    return it.apply(f, [(p[0], comps[0]), (p[1], comps[1])], loc)


def _curry(it: Internaliser, args: list[Arg], ret: T.Type, loc: Loc) -> V:
    (f, _), (a, at), (b, bt) = args
    return it.apply(f, [((a, b), T.Tuple((at, bt)))], loc)


def _flip(it: Internaliser, args: list[Arg], ret: T.Type, loc: Loc) -> V:
    (f, _), b, a = args
    return it.apply(f, [a, b], loc)


def _convert(to: str) -> Rule:
    """`r32`, `t32`, ...: conversions between i32 and floats."""
    def body(it: Internaliser, args: list[Arg], ret: T.Type, loc: Loc) -> V:
        (x, xt), = args
        assert isinstance(xt, T.Scalar)
        return it.bind1(ir.ConvOp(xt.name, to, x), ir.Prim(to), "conv")

    return _fn(1, body)


DERIVED: dict[str, Rule] = {
    "flatten": _flatten_k(2),
    "flatten_3d": _flatten_k(3),
    "flatten_4d": _flatten_k(4),
    "unflatten": _unflatten_k(2),
    "unflatten_3d": _unflatten_k(3),
    "unflatten_4d": _unflatten_k(4),
    "head": _fn(1, _head),
    "last": _fn(1, _last),
    "tail": _fn(1, _tail),
    "init": _fn(1, _init),
    "take": _fn(2, _take),
    "drop": _fn(2, _drop),
    "split": _fn(1, _split),
    "rotate": _fn(2, _rotate),
    "sized": _fn(2, _sized),
    "rep": _fn(1, _rep),
    "indices": _fn(1, _indices),
    "null": _fn(1, _null),
    "all": _fn(2, lambda it, a, ret, loc: _reduce_bool(it, "&&", a[0][0], a[1], loc)),
    "any": _fn(2, lambda it, a, ret, loc: _reduce_bool(it, "||", a[0][0], a[1], loc)),
    "and": _fn(1, lambda it, a, ret, loc: _reduce_bool(it, "&&", None, a[0], loc)),
    "or": _fn(1, lambda it, a, ret, loc: _reduce_bool(it, "||", None, a[0], loc)),
    "exscan": _fn(3, _exscan),
    "partition": _partition(2),
    "partition2": _partition(3),
    "scatter_2d": _fn(3, _scatter_nd),
    "scatter_3d": _fn(3, _scatter_nd),
    "spread": _fn(4, _spread),
    "reduce_by_index_2d": _fn(5, _reduce_by_index_nd),
    "reduce_by_index_3d": _fn(5, _reduce_by_index_nd),
    "flatmap": _flatmap(values=True),
    "flatmap'": _flatmap(values=False),
    "foldl": _fold(right=False),
    "foldr": _fold(right=True),
    "iterate": _fn(3, _iterate),
    "iterate_while": _iterate_while(until=False),
    "iterate_until": _iterate_while(until=True),
    ">->": _fn(3, lambda it, a, ret, loc: _compose(it, a, ret, loc, first=0)),
    "<-<": _fn(3, lambda it, a, ret, loc: _compose(it, a, ret, loc, first=1)),
    "flip": _fn(3, _flip),
    "curry": _fn(3, _curry),
    "uncurry": _fn(2, _uncurry),
    "const": _fn(2, lambda it, a, ret, loc: a[0][0]),
    "id": _fn(1, lambda it, a, ret, loc: a[0][0]),
    "r32": _convert("f32"),
    "t32": _convert("i32"),
    "r64": _convert("f64"),
    "t64": _convert("i32"),
}
