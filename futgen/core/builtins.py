"""Internalisation of the prelude: built-in functions and operators.

Each built-in is a rule `(internaliser, type, loc) -> V` in one table
(`GENERIC`, plus the members of numeric modules such as `f32.sqrt`), so a
missing built-in is one clear `UnsupportedFeature`.  The second-order
built-ins become SOACs: `map`/`reduce`/`scan` a `Screma`, `hist` and
`reduce_by_index` a `Hist`, `scatter` a `Scatter`, and `filter` the
scan-then-scatter program GPU code uses.  `zip` and `unzip` cost nothing,
because an array of tuples already is a tuple of arrays.  Names not in
`GENERIC` are the derived functions of `futgen.core.derived`.

Numeric module members are scalar operations: unary ones `UnOp`s, the
binary functions (`atan2`, `hypot`, `ldexp`, `mul_hi`, ...) `BinOp`s with
their rules in `prims.BINOPS` and the CUDA scalar prelude, and the rest
(`get_bit`, `set_bit`, `fma`, `lerp`, `from_fraction`, ...) composed of
those, mirroring their definitions in `prims`.
"""

from __future__ import annotations

from collections.abc import Callable

from futgen.core import ir
from futgen.core.checked import check_count
from futgen.core.internalise import (
    Arg,
    Fn,
    Internaliser,
    V,
    _constant,
    _flatten,
    _unsupported,
)
from futgen.errors import Loc, assertion_text
from futgen.frontend import types as T
from futgen.frontend.prelude import INTEGRAL_OPS, NUMERIC_OPS
from futgen.interp import prims

I64 = ir.Prim("i64")
ARITH = {"+", "-", "*", "/", "%", "//", "%%", "**", "&", "|", "^", "<<", ">>", ">>>",
         "&&", "||", "max", "min"}
COMPARE = {"==", "!=", "<", ">", "<=", ">="}


def builtin(it: Internaliser, name: str, ty: T.Type, loc: Loc) -> V:
    """The value of the built-in `name` used at type `ty`."""
    if "." in name:
        module, member = name.split(".", 1)
        return _numeric_member(it, module, member, ty, loc)
    from futgen.core.ad import RULES as AD_RULES
    from futgen.core.derived import DERIVED

    rule = GENERIC.get(name) or DERIVED.get(name) or AD_RULES.get(name)
    if rule is None:
        raise _unsupported(f'the built-in "{name}"', loc)
    return rule(it, ty, loc)


def operator(it: Internaliser, op: str, ty: T.Type, loc: Loc) -> Fn:
    """A binary operator as a two-argument function value."""
    if op == "++":
        return Fn(ty, 2, lambda args, ret: _concat(it, args, loc))
    if op in it.decls:  # a user-defined operator: its definition, as a name would be
        from futgen.frontend.syntax import Var

        return it.global_value(it.decls[op], Var(op, loc=loc, ty=ty), it.call_env or {})
    if op in (">->", "<-<"):
        from futgen.core.derived import compose_operator

        return compose_operator(it, op, ty, loc)
    module, _, member = op.rpartition(".")
    if module in T.PRIMS and member in ARITH | COMPARE:
        op = member  # `(f64.+)`: the checker typed it at its module's type
    if op not in ARITH | COMPARE:
        raise _unsupported(f"the operator {op}", loc)

    def impl(args: list[Arg], _ret: T.Type) -> V:
        (x, xt), (y, _) = args
        if not isinstance(xt, T.Scalar) and op in ("==", "!="):
            from futgen.core.equality import structural_equal

            return structural_equal(it, op, x, y, loc)
        if not isinstance(xt, T.Scalar):
            raise _unsupported(f"{op} on values of type {xt}", loc)
        return _binop(it, op, xt.name, x, y)

    return Fn(ty, 2, impl)


def _binop(it: Internaliser, op: str, prim: str, x: ir.SubExp, y: ir.SubExp) -> ir.SubExp:
    if op in COMPARE:
        return it.bind1(ir.CmpOp(op, prim, x, y), ir.Prim("bool"), "c")
    return it.bind1(ir.BinOp(op, prim, x, y), ir.Prim(prim), "x")


# ------------------------------------------------------------ lambdas


def make_lambda(it: Internaliser, f: Fn, arg_types: list[T.Type],
                param_types: list[ir.Type], loc: Loc) -> ir.Lambda:
    """A core lambda that applies `f` to parameters of the given types.

    `param_types` are the core types of the flattened parameters (rows of
    the input arrays, so their sizes are known); the result types are those
    of the values the body computes, with sizes of inner names left out.
    """
    with it.nested() as stms:
        params = tuple(ir.Param(it.fresh("x"), t) for t in param_types)
        for p in params:
            it.types[p.name] = p.type
        leaves = iter(ir.Var(p.name) for p in params)
        args = [(it.unflatten(t, leaves), t) for t in arg_types]
        res = _flatten(it.apply(f, args, loc))
        ret = [it.type_of(r) for r in res]
        body = ir.Body(tuple(stms), tuple(res))
    return ir.Lambda(params, body, tuple(it.scrub(t) for t in ret))


def identity_lambda(it: Internaliser, types: list[ir.Type]) -> ir.Lambda:
    """`\\x ... -> (x, ...)`: the map part of a plain reduce, scan or hist."""
    params = tuple(ir.Param(it.fresh("x"), t) for t in types)
    return ir.Lambda(params, ir.Body((), tuple(ir.Var(p.name) for p in params)), tuple(types))


def binop_lambda(it: Internaliser, op: str, prim: str) -> ir.Lambda:
    """`\\x y -> x op y` on `prim`."""
    x, y, r = it.fresh("x"), it.fresh("y"), it.fresh("r")
    t = ir.Prim(prim)
    stm = ir.Stm((ir.Param(r, t),), ir.BinOp(op, prim, ir.Var(x), ir.Var(y)))
    return ir.Lambda((ir.Param(x, t), ir.Param(y, t)), ir.Body((stm,), (ir.Var(r),)), (t,))


def _rows(it: Internaliser, arrs: list[ir.SubExp]) -> list[ir.Type]:
    return [ir.row(it.type_of(a)) for a in arrs]


def _elem(t: T.Type) -> T.Type:
    assert isinstance(t, T.Array), t
    return T.row_type(t)


def _names(arrs: list[ir.SubExp]) -> tuple[ir.VName, ...]:
    out = []
    for a in arrs:
        if not isinstance(a, ir.Var):
            raise _unsupported("a constant where an array is needed", None)
        out.append(a.name)
    return tuple(out)


# ------------------------------------------------------------ SOACs


def map_soac(it: Internaliser, f: Fn, arrays: list[Arg], ret: T.Type, loc: Loc) -> V:
    """`map f xs ys ...` as a Screma with only a map part."""
    leaves = [x for v, _ in arrays for x in _flatten(v)]
    w = it.width(leaves[0])
    lam = make_lambda(it, f, [_elem(t) for _, t in arrays], _rows(it, leaves), loc)
    outs = it.bind(ir.Screma(w, _names(leaves), (), (), lam),
                   [ir.array_of(t, (w,)) for t in lam.ret], "map")
    return it.unflatten(ret, iter(outs))


def _op_lambda(it: Internaliser, op: Fn, elem: T.Type, arrs: list[ir.SubExp],
               loc: Loc) -> ir.Lambda:
    rows = _rows(it, arrs)
    return make_lambda(it, op, [elem, elem], rows + rows, loc)


def reduce_soac(it: Internaliser, args: list[Arg], loc: Loc, comm: bool = False) -> V:
    """`reduce op ne xs` as a Screma with one reduction."""
    (op, _), (ne, _), (xs, xt) = args
    leaves = _flatten(xs)
    w = it.width(leaves[0])
    lam = _op_lambda(it, op, _elem(xt), leaves, loc)
    red = ir.Reduce(lam, tuple(_flatten(ne)), comm)
    ident = identity_lambda(it, _rows(it, leaves))
    outs = it.bind(ir.Screma(w, _names(leaves), (), (red,), ident), list(lam.ret), "red")
    return it.unflatten(_elem(xt), iter(outs))


def scan_soac(it: Internaliser, args: list[Arg], loc: Loc) -> V:
    """`scan op ne xs` as a Screma with one inclusive scan."""
    (op, _), (ne, _), (xs, xt) = args
    leaves = _flatten(xs)
    w = it.width(leaves[0])
    lam = _op_lambda(it, op, _elem(xt), leaves, loc)
    ident = identity_lambda(it, _rows(it, leaves))
    scan = ir.Scan(lam, tuple(_flatten(ne)))
    outs = it.bind(ir.Screma(w, _names(leaves), (scan,), (), ident),
                   [ir.array_of(t, (w,)) for t in lam.ret], "scan")
    return it.unflatten(xt, iter(outs))


def hist_soac(it: Internaliser, dest: V, op: Fn, ne: V, is_: V, vals: Arg, loc: Loc) -> V:
    """A histogram into `dest` (consumed) as a Hist with one operator."""
    vs, vt = vals
    leaves = _flatten(vs)
    dests = _flatten(dest)
    w = it.width(is_)
    lam = _op_lambda(it, op, _elem(vt), leaves, loc)
    hop = ir.HistOp(_names(dests), tuple(_flatten(ne)), lam)
    ident = identity_lambda(it, _rows(it, [is_, *leaves]))
    outs = it.bind(ir.Hist(w, _names([is_, *leaves]), (hop,), ident),
                   [it.type_of(d) for d in dests], "hist")
    return it.unflatten(T.array_of(_elem(vt), (T.AnySize(-1),)), iter(outs))


def _hist(it: Internaliser, ty: T.Type, loc: Loc) -> Fn:
    def impl(args: list[Arg], ret: T.Type) -> V:
        (op, _), (ne, _), (k, _), (is_, _), vals = args
        check_count(it, k, loc)
        dest = [it.bind1(ir.Replicate((k,), x), ir.array_of(it.type_of(x), (k,)), "dest")
                for x in _flatten(ne)]
        return hist_soac(it, it.unflatten(ret, iter(dest)), op, ne, is_, vals, loc)

    return Fn(ty, 5, impl)


def _reduce_by_index(it: Internaliser, ty: T.Type, loc: Loc) -> Fn:
    def impl(args: list[Arg], ret: T.Type) -> V:
        (dest, _), (op, _), (ne, _), (is_, _), vals = args
        return hist_soac(it, dest, op, ne, is_, vals, loc)

    return Fn(ty, 5, impl)


def scatter_soac(it: Internaliser, dest: V, idxs: list[ir.SubExp],
                 vals: V) -> list[ir.SubExp]:
    """`scatter dest is vs` (`scatter_2d`, ... with one index array per
    dimension): every destination array written at the same indices."""
    dests = _flatten(dest)
    leaves = _flatten(vals)
    w = it.width(idxs[0])
    params = identity_lambda(it, _rows(it, [*idxs, *leaves])).params
    cols = [ir.Var(p.name) for p in params]
    ix, vs = cols[:len(idxs)], cols[len(idxs):]
    res = tuple(x for v in vs for x in (*ix, v))
    ptypes = {p.name: p.type for p in params}
    lam = ir.Lambda(params, ir.Body((), res), tuple(ir.subexp_type(r, ptypes) for r in res))
    sdests = tuple(ir.ScatterDest(d, len(idxs)) for d in _names(dests))
    return it.bind(ir.Scatter(w, _names([*idxs, *leaves]), lam, sdests),
                   [it.type_of(d) for d in dests], "scatter")


def _scatter(it: Internaliser, ty: T.Type, loc: Loc) -> Fn:
    def impl(args: list[Arg], ret: T.Type) -> V:
        (dest, _), (is_, _), (vs, _) = args
        return it.unflatten(ret, iter(scatter_soac(it, dest, [is_], vs)))

    return Fn(ty, 3, impl)


def _filter(it: Internaliser, ty: T.Type, loc: Loc) -> Fn:
    """`filter p xs`: an inclusive scan of 0/1 flags gives each kept element
    its position plus one; the last prefix sum is the result's length."""

    def impl(args: list[Arg], ret: T.Type) -> V:
        (p, _), (xs, xt) = args
        leaves = _flatten(xs)
        w = it.width(leaves[0])
        flags = Fn(T.Arrow(None, _elem(xt), T.Tuple((T.I64, T.BOOL))), 1,
                   lambda a, _r: _flag(it, it.apply(p, a, loc)))
        lam = make_lambda(it, flags, [_elem(xt)], _rows(it, leaves), loc)
        scan = ir.Scan(binop_lambda(it, "+", "i64"), (ir.Constant(0, "i64"),))
        offsets, keep = it.bind(ir.Screma(w, _names(leaves), (scan,), (), lam),
                                [ir.ArrayT("i64", (w,)), ir.ArrayT("bool", (w,))], "flt")
        m = _last_or_zero(it, offsets, w, loc)
        pos = _positions(it, keep, offsets, w, loc)
        if any(not isinstance(r, ir.Prim) for r in _rows(it, leaves)):
            return gather_rows(it, xs, xt, place_indices(it, m, pos, w), loc)
        dests = [it.bind1(ir.Replicate((m,), ir.Constant(0 if t.name != "bool" else False,
                                                         t.name)),
                          ir.ArrayT(t.name, (m,)), "dest") for t in _rows(it, leaves)]
        return it.unflatten(ret, iter(scatter_soac(it, tuple(dests), [pos], tuple(leaves))))

    return Fn(ty, 2, impl)


def place_indices(it: Internaliser, m: ir.SubExp, pos: ir.SubExp,
                  w: ir.SubExp) -> ir.SubExp:
    """`scatter (replicate m 0) pos (iota w)`: for each of `m` places, the
    index of the element `pos` sends there."""
    zeros = it.bind1(ir.Replicate((m,), ir.Constant(0, "i64")), ir.ArrayT("i64", (m,)), "dest")
    iota = it.bind1(ir.Iota(w, ir.Constant(0, "i64"), ir.Constant(1, "i64")),
                    ir.ArrayT("i64", (w,)), "iota")
    [src] = scatter_soac(it, (zeros,), [pos], (iota,))
    return src


def gather_rows(it: Internaliser, xs: V, xt: T.Type, src: ir.SubExp, loc: Loc) -> V:
    """`map (\\i -> xs[i]) src`: the rows of `xs` (of any row type) at `src`."""
    elem = _elem(xt)

    def row(args: list[Arg], _r: T.Type) -> V:
        (i, _), = args
        rows = [it.bind1(ir.Index(a.name, (ir.DimFix(i),), loc), ir.row(it.type_of(a)), "row")
                for a in _flatten(xs)]
        return it.unflatten(elem, iter(rows))

    ret = T.array_of(elem, (T.AnySize(-1),))
    f = Fn(T.Arrow(None, T.I64, elem), 1, row)
    return map_soac(it, f, [(src, T.Array(T.I64, (T.AnySize(-1),)))], ret, loc)


def _flag(it: Internaliser, b: ir.SubExp) -> V:
    return (it.bind1(ir.ConvOp("bool", "i64", b), I64, "flag"), b)


def _last_or_zero(it: Internaliser, arr: ir.SubExp, w: ir.SubExp, loc: Loc) -> ir.SubExp:
    """`if w == 0 then 0 else arr[w - 1]`."""
    empty = it.bind1(ir.CmpOp("==", "i64", w, ir.Constant(0, "i64")), ir.Prim("bool"), "e")

    def last() -> ir.SubExp:
        i = it.bind1(ir.BinOp("-", "i64", w, ir.Constant(1, "i64")), I64, "i")
        return it.bind1(ir.Index(arr.name, (ir.DimFix(i),), loc), I64, "m")

    return it.if_(empty, lambda: ir.Constant(0, "i64"), last, T.I64, {}, loc)


def _positions(it: Internaliser, keep: ir.SubExp, offsets: ir.SubExp, w: ir.SubExp,
               loc: Loc) -> ir.SubExp:
    """`map2 (\\k o -> if k then o - 1 else -1) keep offsets`."""
    def pos(args: list[Arg], _r: T.Type) -> V:
        (k, _), (o, _) = args
        return it.if_(k, lambda: it.bind1(ir.BinOp("-", "i64", o, ir.Constant(1, "i64")),
                                          I64, "p"),
                      lambda: ir.Constant(-1, "i64"), T.I64, {}, loc)

    f = Fn(T.Arrow(None, T.BOOL, T.Arrow(None, T.I64, T.I64)), 2, pos)
    arr_b = T.Array(T.BOOL, (T.AnySize(-1),))
    arr_i = T.Array(T.I64, (T.AnySize(-1),))
    return map_soac(it, f, [(keep, arr_b), (offsets, arr_i)], arr_i, loc)


# ------------------------------------------------------- array built-ins


def _per_leaf(it: Internaliser, v: V, t: T.Type, op: Callable[[ir.SubExp], ir.SubExp]) -> V:
    return it.unflatten(t, iter(op(x) for x in _flatten(v)))


def _iota(it: Internaliser, ty: T.Type, loc: Loc) -> Fn:
    def impl(args: list[Arg], _ret: T.Type) -> V:
        [(n, _)] = args
        check_count(it, n, loc)
        return it.bind1(ir.Iota(n, ir.Constant(0, "i64"), ir.Constant(1, "i64")),
                        ir.ArrayT("i64", (n,)), "iota")

    return Fn(ty, 1, impl)


def _replicate(it: Internaliser, ty: T.Type, loc: Loc) -> Fn:
    def impl(args: list[Arg], ret: T.Type) -> V:
        (n, _), (x, _) = args
        check_count(it, n, loc)
        return _per_leaf(it, x, ret, lambda v: it.bind1(
            ir.Replicate((n,), v), ir.array_of(it.type_of(v), (n,)), "rep"))

    return Fn(ty, 2, impl)


def _tabulate(it: Internaliser, ty: T.Type, loc: Loc) -> Fn:
    def impl(args: list[Arg], ret: T.Type) -> V:
        (n, nt), (f, _) = args
        iota = _iota(it, T.Arrow(None, nt, T.Array(T.I64, (T.AnySize(-1),))), loc)
        arr_i = T.Array(T.I64, (T.AnySize(-1),))
        return map_soac(it, f, [(it.apply(iota, [(n, nt)], loc), arr_i)], ret, loc)

    return Fn(ty, 2, impl)


def _tabulate_nd(k: int) -> Callable[[Internaliser, T.Type, Loc], Fn]:
    """`tabulate_2d n m f` is `map (\\i -> map (f i) (iota m)) (iota n)`, and
    so on for more dimensions."""
    def rule(it: Internaliser, ty: T.Type, loc: Loc) -> Fn:
        def impl(args: list[Arg], ret: T.Type) -> V:
            *sizes, (f, _) = args
            arr_i = T.Array(T.I64, (T.AnySize(-1),))
            iotas = [it.bind1(ir.Iota(n, ir.Constant(0, "i64"), ir.Constant(1, "i64")),
                              ir.ArrayT("i64", (n,)), "iota") for n, _ in sizes]

            def nest(g: V, depth: int, t: T.Type) -> V:
                if depth == k:
                    return g
                assert isinstance(t, T.Array)
                row = T.row_type(t)
                inner = Fn(T.Arrow(None, T.I64, row), 1,
                           lambda a, _r: nest(it.apply(g, [a[0]], loc), depth + 1, row))
                return map_soac(it, inner, [(iotas[depth], arr_i)], t, loc)

            return nest(f, 0, ret)

        return Fn(ty, k + 1, impl)

    return rule


def _transpose(it: Internaliser, ty: T.Type, loc: Loc) -> Fn:
    def impl(args: list[Arg], ret: T.Type) -> V:
        [(x, _)] = args

        def tr(a: ir.SubExp) -> ir.SubExp:
            t = it.type_of(a)
            assert isinstance(t, ir.ArrayT)
            perm = (1, 0, *range(2, len(t.shape)))
            shape = tuple(t.shape[k] for k in perm)
            return it.bind1(ir.Rearrange(a.name, perm), ir.ArrayT(t.elem, shape), "tr")

        return _per_leaf(it, x, ret, tr)

    return Fn(ty, 1, impl)


def _concat(it: Internaliser, args: list[Arg], loc: Loc) -> V:
    (x, xt), (y, _) = args

    def cat(a: ir.SubExp, b: ir.SubExp) -> ir.SubExp:
        t = it.type_of(a)
        assert isinstance(t, ir.ArrayT)
        return it.bind1(ir.Concat(_names([a, b])), ir.ArrayT(t.elem, (None, *t.shape[1:])),
                        "cat")

    return it.unflatten(xt, iter(cat(a, b) for a, b in zip(_flatten(x), _flatten(y))))


def _reverse(it: Internaliser, ty: T.Type, loc: Loc) -> Fn:
    def impl(args: list[Arg], ret: T.Type) -> V:
        [(x, _)] = args

        def rev(a: ir.SubExp) -> ir.SubExp:
            w = it.width(a)
            last = it.bind1(ir.BinOp("-", "i64", w, ir.Constant(1, "i64")), I64, "i")
            sl = ir.DimSlice(last, w, ir.Constant(-1, "i64"))
            return it.bind1(ir.Index(a.name, (sl,), loc), it.type_of(a), "rev")

        return _per_leaf(it, x, ret, rev)

    return Fn(ty, 1, impl)


def _length(it: Internaliser, ty: T.Type, loc: Loc) -> Fn:
    return Fn(ty, 1, lambda args, _r: it.width(_flatten(args[0][0])[0]))


def _copy(it: Internaliser, ty: T.Type, loc: Loc) -> Fn:
    def cp(a: ir.SubExp) -> ir.SubExp:
        if isinstance(it.type_of(a), ir.Prim):
            return a
        return it.bind1(ir.Copy(a.name), it.type_of(a), "copy")

    return Fn(ty, 1, lambda args, ret: _per_leaf(it, args[0][0], ret, cp))


def _identity(n: int) -> Callable[[Internaliser, T.Type, Loc], Fn]:
    """`zip`, `unzip`, `opaque`, ...: the value itself (tuples of arguments)."""
    def rule(it: Internaliser, ty: T.Type, loc: Loc) -> Fn:
        if n == 1:
            return Fn(ty, 1, lambda args, _r: args[0][0])
        return Fn(ty, n, lambda args, _r: tuple(a for a, _ in args))

    return rule


def _assert(it: Internaliser, ty: T.Type, loc: Loc) -> Fn:
    """`assert c` checks `c` and is the identity: applied to `c` alone, so the
    check comes before the guarded value is computed (Futhark's order)."""
    def impl(args: list[Arg], ret: T.Type) -> V:
        ((c, _),) = args
        msg = ir.assert_template(f"Assertion is false: {assertion_text(loc)}")
        it.bind1(ir.Assert(c, msg, loc), ir.Prim("bool"), "assert")
        return Fn(ret, 1, lambda xs, _r: xs[0][0])

    return Fn(ty, 1, impl)


def _fn(arity: int, body: Callable[[Internaliser, list[Arg], T.Type, Loc], V]
        ) -> Callable[[Internaliser, T.Type, Loc], Fn]:
    def rule(it: Internaliser, ty: T.Type, loc: Loc) -> Fn:
        return Fn(ty, arity, lambda args, ret: body(it, args, ret, loc))

    return rule


GENERIC: dict[str, Callable[[Internaliser, T.Type, Loc], Fn]] = {
    **{name: _fn(n + 1, lambda it, a, ret, loc: map_soac(it, a[0][0], a[1:], ret, loc))
       for name, n in (("map", 1), ("map1", 1), ("map2", 2), ("map3", 3), ("map4", 4),
                       ("map5", 5))},
    "reduce": _fn(3, lambda it, a, ret, loc: reduce_soac(it, a, loc)),
    "reduce_comm": _fn(3, lambda it, a, ret, loc: reduce_soac(it, a, loc, comm=True)),
    "scan": _fn(3, lambda it, a, ret, loc: scan_soac(it, a, loc)),
    "hist": _hist,
    "reduce_by_index": _reduce_by_index,
    "scatter": _scatter,
    "filter": _filter,
    "iota": _iota,
    "replicate": _replicate,
    "tabulate": _tabulate,
    "tabulate_2d": _tabulate_nd(2),
    "tabulate_3d": _tabulate_nd(3),
    "transpose": _transpose,
    "concat": _fn(2, lambda it, a, ret, loc: _concat(it, a, loc)),
    "reverse": _reverse,
    "length": _length,
    "copy": _copy,
    "manifest": _copy,
    "opaque": _identity(1),
    "trace": _identity(1),
    "unzip": _identity(1),
    "unzip2": _identity(1),
    "unzip3": _identity(1),
    "unzip4": _identity(1),
    "unzip5": _identity(1),
    "zip": _identity(2),
    "zip2": _identity(2),
    "zip3": _identity(3),
    "zip4": _identity(4),
    "zip5": _identity(5),
    "assert": _assert,
    "not": _fn(1, lambda it, a, ret, loc: it.bind1(ir.UnOp("not", "bool", a[0][0]),
                                                   ir.Prim("bool"), "not")),
}


# ---------------------------------------------------------- numeric modules

_UNARY = {"neg", "abs", "sgn", *prims.UNARY_REAL, *ir.UNOP_RESULTS}
_CONSTANTS = {"highest": prims.highest, "lowest": prims.lowest,
              **{k: v for k, v in prims.FLOAT_CONSTS.items()}}
_REDUCTIONS = {"sum": "+", "product": "*", "maximum": "max", "minimum": "min"}


def _numeric_member(it: Internaliser, t: str, name: str, ty: T.Type, loc: Loc) -> V:
    """`f32.sqrt`, `i64.f32`, `i32.max`, `f32.inf`, `i32.sum`, ..."""
    if name in T.PRIMS:
        return Fn(ty, 1, lambda args, _r: _convert(it, args[0], t))
    if name in ("to_i64", "to_f64"):
        return Fn(ty, 1, lambda args, _r: _convert(it, args[0], name[3:]))
    if name in ("max", "min") or name in NUMERIC_OPS or name in INTEGRAL_OPS:
        return operator(it, name, ty, loc)
    if name == "not" and t != "bool":
        name = "bnot"
    if name in _UNARY or name == "bnot":
        out = ir.Prim(ir.unop_type(name, t))
        return Fn(ty, 1, lambda args, _r: it.bind1(ir.UnOp(name, t, args[0][0]), out, name))
    if name in _CONSTANTS:
        return _constant(_CONSTANTS[name](t).item(), t)
    if name in _REDUCTIONS:
        return Fn(ty, 1, lambda args, _r: _reduce_with(it, _REDUCTIONS[name], t, args[0], loc))
    if name == "num_bits":
        return _constant(prims.BITS[t], "i32")
    if name in _BINARY_FUNCTIONS:
        return Fn(ty, 2, lambda args, _r: it.bind1(
            ir.BinOp(name, t, args[0][0], args[1][0]), ir.Prim(t), name))
    if name == "to_bits":
        return Fn(ty, 1, lambda args, _r: _bit_pattern(it, t, args[0][0]))
    if name == "from_bits":
        return Fn(ty, 1, lambda args, _r: it.bind1(
            ir.UnOp("from_bits", ir.FLOAT_BITS[t], args[0][0]), ir.Prim(t), "float"))
    if name in _COMPOSITE:
        arity, rule = _COMPOSITE[name]
        return Fn(ty, arity, lambda args, _r: rule(_Scalar(it, t), *(a for a, _ in args)))
    raise _unsupported(f'the built-in "{t}.{name}"', loc)


def _convert(it: Internaliser, arg: Arg, to: str) -> ir.SubExp:
    x, xt = arg
    assert isinstance(xt, T.Scalar)
    if xt.name == to:
        return x
    return it.bind1(ir.ConvOp(xt.name, to, x), ir.Prim(to), "conv")


def _reduce_with(it: Internaliser, op: str, t: str, xs: Arg, loc: Loc) -> V:
    """`t.sum xs` and friends: a reduction with a built-in operator."""
    arr, _ = xs
    w = it.width(arr)
    ne = prims.BINOPS[op].identity(t)  # type: ignore[misc]
    red = ir.Reduce(binop_lambda(it, op, t), (_constant(ne.item(), t),), True)
    ident = identity_lambda(it, [ir.Prim(t)])
    return it.bind1(ir.Screma(w, _names([arr]), (), (red,), ident), ir.Prim(t), "red")


# ------------------------------------------- numeric functions, composed

# Binary functions of the numeric modules that are core BinOps (with their
# rules in `prims.BINOPS` and the CUDA scalar prelude).
_BINARY_FUNCTIONS = {"atan2", "atan2pi", "hypot", "copysign", "nextafter", "ldexp", "mul_hi"}


class _Scalar:
    """Builds scalar statements on one primitive type `t`, so that the
    composed numeric functions below read like their definitions."""

    def __init__(self, it: Internaliser, t: str):
        self.it, self.t = it, t

    def op(self, op: str, x: ir.SubExp, y: ir.SubExp, t: str | None = None) -> ir.SubExp:
        return _binop(self.it, op, t or self.t, x, y)

    def conv(self, x: ir.SubExp, src: str, dst: str) -> ir.SubExp:
        if src == dst:
            return x
        return self.it.bind1(ir.ConvOp(src, dst, x), ir.Prim(dst), "conv")

    def const(self, v: int, t: str | None = None) -> ir.SubExp:
        return _constant(v, t or self.t)


def _bit_pattern(it: Internaliser, t: str, x: ir.SubExp) -> ir.SubExp:
    """The bits of `x` (of type `t`) as the unsigned integer of its width."""
    if t in ir.FLOAT_BITS:
        return it.bind1(ir.UnOp("to_bits", t, x), ir.Prim(ir.FLOAT_BITS[t]), "bits")
    u = prims.UNSIGNED_OF[t]
    return x if u == t else it.bind1(ir.ConvOp(t, u, x), ir.Prim(u), "bits")


def _get_bit(s: _Scalar, i: ir.SubExp, x: ir.SubExp) -> ir.SubExp:
    """`(bits x >>> i) & 1` as an i32 (`prims.get_bit`)."""
    u = prims.UNSIGNED_OF.get(s.t) or ir.FLOAT_BITS[s.t]
    shifted = s.op(">>>", _bit_pattern(s.it, s.t, x), s.conv(i, "i32", u), u)
    return s.conv(s.op("&", shifted, s.const(1, u), u), u, "i32")


def _set_bit(s: _Scalar, i: ir.SubExp, x: ir.SubExp, b: ir.SubExp) -> ir.SubExp:
    """`x` with bit `i` cleared, then or-ed with `mask * (b == 1)` (`prims.set_bit`)."""
    if s.t in ir.FLOAT_BITS:
        u = ir.FLOAT_BITS[s.t]
        bits = _set_bit(_Scalar(s.it, u), i, _bit_pattern(s.it, s.t, x), b)
        return s.it.bind1(ir.UnOp("from_bits", u, bits), ir.Prim(s.t), "float")
    mask = s.op("<<", s.const(1), s.conv(i, "i32", s.t))
    cleared = s.op("&", x, s.it.bind1(ir.UnOp("bnot", s.t, mask), ir.Prim(s.t), "bnot"))
    one = s.it.bind1(ir.CmpOp("==", "i32", b, _constant(1, "i32")), ir.Prim("bool"), "c")
    return s.op("|", cleared, s.op("*", mask, s.conv(one, "bool", s.t)))


def _fma(s: _Scalar, a: ir.SubExp, b: ir.SubExp, c: ir.SubExp) -> ir.SubExp:
    """`a * b + c`, computed in f64 for f16 and f32 (`prims.fma`)."""
    if s.t == "f64":
        return s.op("+", s.op("*", a, b), c)
    wide = [s.conv(v, s.t, "f64") for v in (a, b, c)]
    return s.conv(s.op("+", s.op("*", wide[0], wide[1], "f64"), wide[2], "f64"), "f64", s.t)


# name -> (arity, rule): numeric functions composed of core scalar operations.
_COMPOSITE: dict[str, tuple[int, Callable[..., ir.SubExp]]] = {
    "get_bit": (2, _get_bit),
    "set_bit": (3, _set_bit),
    "mad_hi": (3, lambda s, a, b, c: s.op("+", s.op("mul_hi", a, b), c)),
    "mad": (3, lambda s, a, b, c: s.op("+", s.op("*", a, b), c)),
    "fma": (3, _fma),
    "lerp": (3, lambda s, v0, v1, t: s.op("+", v0, s.op("*", s.op("-", v1, v0), t))),
    "from_fraction": (2, lambda s, x, y: s.op("/", s.conv(x, "i64", s.t),
                                              s.conv(y, "i64", s.t))),
}
