"""Internalisation of the array forms Futhark checks at run time: ranges,
slices and size coercions (and the sizes given to `iota` and `replicate`),
and parameter types that say more of sizes than the arguments' shapes fix
(`check_params`: `(n: i64) (xs: [n]i32)`, `[three]i64`, `[x + 1]i32`; at
an entry point with the package's "invalid size" wording).

Each form computes its sizes with scalar statements and guards them with an
`Assert` whose message template shows the run-time values Futhark's own
message shows (`Range 1..0...5 is invalid.`, `Index [1:7:2] out of bounds
for array of shape [5].`, `Value of (desugared) shape [2][2] cannot match
shape of type "[1][4]i32".`), as Futhark's internaliser does
(`Internalise/Exps.hs`).  The reference interpreter raises the same
messages (`futgen.interp.interpreter`: `make_range`, `slice_indices`,
`check_coercion`), and tests compare the two.

Integer work is done in i64: every range endpoint and index is converted
first (sign- or zero-extended as Futhark's conversions do); a range of
another element type converts the i64 `iota` it computes.  `Scalars` folds
operations on constants, so a slice such as `xs[::-1]` or `xs[1:]` costs
no more than it has to.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from futgen.core import ir
from futgen.errors import Loc
from futgen.frontend import syntax as S
from futgen.frontend import types as T
from futgen.interp import prims

if TYPE_CHECKING:
    from futgen.core.internalise import Internaliser, V

I64 = ir.Prim("i64")
BOOL = ir.Prim("bool")
_FOLDABLE = {"+", "-", "*", "max", "min", "&", "|"}
_COMPARE = {"==": int.__eq__, "!=": int.__ne__, "<": int.__lt__, "<=": int.__le__,
            ">": int.__gt__, ">=": int.__ge__}


def i64(n: int) -> ir.Constant:
    return ir.Constant(n, "i64")


class Scalars:
    """Emits i64 and bool scalar statements through an internaliser, folding
    operations whose operands are constants."""

    def __init__(self, it: Internaliser):
        self.it = it

    def op(self, op: str, x: ir.SubExp, y: ir.SubExp) -> ir.SubExp:
        """`x op y` on i64 (or on bools for `&` and `|`)."""
        prim = "bool" if op in ("&", "|") and self.it.type_of(x) == BOOL else "i64"
        if isinstance(x, ir.Constant) and isinstance(y, ir.Constant) and op in _FOLDABLE:
            v = prims.binop(op, prims.scalar(prim, x.value), prims.scalar(prim, y.value))
            return ir.Constant(v.item(), prim)
        if (op in ("+", "-") and y == i64(0)) or (op == "*" and y == i64(1)):
            return x
        if (op == "+" and x == i64(0)) or (op == "*" and x == i64(1)):
            return y
        if op == "&" and prim == "bool":
            if x == ir.Constant(True, "bool"):
                return y
            if y == ir.Constant(True, "bool"):
                return x
        if op == "|" and prim == "bool":
            if x == ir.Constant(False, "bool"):
                return y
            if y == ir.Constant(False, "bool"):
                return x
        return self.it.bind1(ir.BinOp(op, prim, x, y), ir.Prim(prim), "s")

    def cmp(self, op: str, x: ir.SubExp, y: ir.SubExp) -> ir.SubExp:
        """`x op y` on i64: a bool."""
        if isinstance(x, ir.Constant) and isinstance(y, ir.Constant):
            return ir.Constant(_COMPARE[op](int(x.value), int(y.value)), "bool")
        return self.it.bind1(ir.CmpOp(op, "i64", x, y), BOOL, "c")

    def all(self, conds: list[ir.SubExp]) -> ir.SubExp:
        out: ir.SubExp = ir.Constant(True, "bool")
        for c in conds:
            out = self.op("&", out, c)
        return out

    def abs(self, x: ir.SubExp) -> ir.SubExp:
        if isinstance(x, ir.Constant):
            return i64(abs(int(x.value)))
        return self.it.bind1(ir.UnOp("abs", "i64", x), I64, "abs")

    def sgn(self, x: ir.SubExp) -> ir.SubExp:
        if isinstance(x, ir.Constant):
            return i64((int(x.value) > 0) - (int(x.value) < 0))
        return self.it.bind1(ir.UnOp("sgn", "i64", x), I64, "sgn")

    def select(self, c: ir.SubExp, x: ir.SubExp, y: ir.SubExp) -> ir.SubExp:
        """`if c then x else y` on i64, as arithmetic (no branch)."""
        if isinstance(c, ir.Constant):
            return x if c.value else y
        if x == y:
            return x
        flag = self.it.bind1(ir.ConvOp("bool", "i64", c), I64, "flag")
        return self.op("+", y, self.op("*", flag, self.op("-", x, y)))

    def div_up(self, x: ir.SubExp, y: ir.SubExp) -> ir.SubExp:
        """`ceil(x / y)` for x >= 0 and y >= 1."""
        if y == i64(1):
            return x
        return self.it.bind1(ir.BinOp("//", "i64", self.op("-", self.op("+", x, y), i64(1)),
                                      y), I64, "n")

    def assert_(self, cond: ir.SubExp, parts: list[str | ir.SubExp], loc: Loc) -> None:
        """Fails with the message `parts` (text and i64 values) unless `cond`."""
        if cond == ir.Constant(True, "bool"):
            return
        template, args = "", []
        for p in parts:
            if isinstance(p, str):
                template += ir.assert_template(p)
            else:
                template += "{" + str(len(args)) + "}"
                args.append(p)
        self.it.bind1(ir.Assert(cond, template, loc, tuple(args)), BOOL, "check")


# ------------------------------------------------------------------ ranges


def range_(it: Internaliser, e: S.Range, env: dict[str, V]) -> V:
    """`a..<b`, `a..>b`, `a...b`, each optionally `a..s..`: an iota of the
    range's element type, after Futhark's validity check."""
    sc = Scalars(it)
    t = it.subst(e.start.ty)
    assert isinstance(t, T.Scalar)
    start, end = it.i64(e.start, env), it.i64(e.end, env)
    second = None if e.second is None else it.i64(e.second, env)
    step = i64(-1 if e.kind == "..>" else 1) if second is None else sc.op("-", second, start)
    up = sc.cmp(">", step, i64(0))
    if e.kind == "..<":
        ok = [sc.cmp("<=", start, end), up]
        distance = sc.op("-", end, start)
    elif e.kind == "..>":
        ok = [sc.cmp(">=", start, end), sc.cmp("<", step, i64(0))]
        distance = sc.op("-", start, end)
    else:
        down_ok = sc.op("&", sc.cmp("<", step, i64(0)), sc.cmp(">=", start, end))
        ok = [sc.op("|", sc.op("&", up, sc.cmp("<=", start, end)), down_ok)]
        distance = sc.op("+", sc.abs(sc.op("-", end, start)), i64(1))
    shown: list[str | ir.SubExp] = ["Range ", start]
    if second is not None:
        shown += ["..", second]
    sc.assert_(sc.all(ok), [*shown, e.kind, end, " is invalid."], e.loc)
    n = sc.div_up(distance, sc.op("max", sc.abs(step), i64(1)))
    r = it.bind1(ir.Iota(n, start, step), ir.ArrayT("i64", (n,)), "range")
    if t.name == "i64":
        return r
    return _convert_all(it, r, n, t.name)


def check_count(it: Internaliser, n: ir.SubExp, loc: Loc) -> None:
    """`iota n`, `replicate n x`, ...: `n` must not be negative, failing as
    Futhark's prelude does (`iota n` is the range `0..1..<n`)."""
    sc = Scalars(it)
    sc.assert_(sc.cmp(">=", n, i64(0)), ["Range 0..1..<", n, " is invalid."], loc)


def _convert_all(it: Internaliser, arr: ir.SubExp, n: ir.SubExp, prim: str) -> ir.SubExp:
    """`map (prim.i64) arr`: the elements of an i64 array converted."""
    x, y = it.fresh("x"), it.fresh("y")
    stm = ir.Stm((ir.Param(y, ir.Prim(prim)),), ir.ConvOp("i64", prim, ir.Var(x)))
    lam = ir.Lambda((ir.Param(x, I64),), ir.Body((stm,), (ir.Var(y),)), (ir.Prim(prim),))
    assert isinstance(arr, ir.Var)
    return it.bind1(ir.Screma(n, (arr.name,), (), (), lam), ir.ArrayT(prim, (n,)), "range")


# ------------------------------------------------------------------ slices


def slice_(it: Internaliser, idx: list[S.DimIndex], arr: ir.SubExp, env: dict[str, V],
           loc: Loc) -> tuple[ir.DimIndex, ...]:
    """Source indices on `arr` as core ones.  When one of them is a slice,
    one Assert checks them all first, with Futhark's message; indices that
    are all fixed are checked by `Index` itself."""
    if all(isinstance(d, S.IdxFix) for d in idx):
        return tuple(ir.DimFix(it.i64(d.index, env)) for d in idx)
    sc = Scalars(it)
    t = it.type_of(arr)
    assert isinstance(t, ir.ArrayT) and isinstance(arr, ir.Var)
    dims = [d if d is not None else it.bind1(ir.ArraySize(arr.name, k), I64, "n")
            for k, d in enumerate(t.shape)]
    out: list[ir.DimIndex] = []
    oks: list[ir.SubExp] = []
    shown: list[str | ir.SubExp] = ["Index ["]
    for k, (d, w) in enumerate(zip(idx, dims)):
        if k:
            shown.append(", ")
        if isinstance(d, S.IdxFix):
            i = it.i64(d.index, env)
            oks += [sc.cmp("<=", i64(0), i), sc.cmp("<", i, w)]
            out.append(ir.DimFix(i))
            shown.append(i)
        else:
            dim, ok, text = _dim_slice(it, sc, d, w, env)
            out.append(dim)
            oks.append(ok)
            shown += text
    shown.append("] out of bounds for array of shape ")
    for w in dims:
        shown += ["[", w, "]"]
    sc.assert_(sc.all(oks), [*shown, "."], loc)
    return tuple(out)


def _dim_slice(it: Internaliser, sc: Scalars, d: S.IdxSlice, w: ir.SubExp,
               env: dict[str, V]) -> tuple[ir.DimSlice, ir.SubExp, list[str | ir.SubExp]]:
    """`i:j:s` on a dimension of size `w`: the core slice, whether it is in
    bounds, and its text in the message.

    Omitted bounds default as in Futhark: `0` and `w` going forwards, `w-1`
    and `-1` going backwards.  The slice is valid when its stride is not 0,
    `j - i` goes the stride's way (or is 0), and, unless it is empty, its
    first and last elements lie in `[0, w)`.
    """
    def part(x: S.Expr | None) -> ir.SubExp | None:
        return None if x is None else it.i64(x, env)

    i, j, s = part(d.start), part(d.end), part(d.stride)
    stride = i64(1) if s is None else s
    known = isinstance(stride, ir.Constant) and stride.value != 0
    back = sc.cmp("<", stride, i64(0))
    start = i if i is not None else sc.select(back, sc.op("-", w, i64(1)), i64(0))
    end = j if j is not None else sc.select(back, i64(-1), w)
    dist = sc.op("-", end, start)
    if known:  # the direction is known: count towards `end` in steps of |stride|
        away = sc.op("-", i64(0), dist) if int(stride.value) < 0 else dist
        n = sc.div_up(away, sc.abs(stride))
        right_way = sc.cmp(">=", away, i64(0))
    else:
        n = sc.div_up(sc.abs(dist), sc.op("max", sc.abs(stride), i64(1)))
        right_way = sc.all([sc.cmp("!=", stride, i64(0)),
                            sc.cmp(">=", sc.op("*", sc.sgn(dist), sc.sgn(stride)), i64(0))])
    if known and i is None and j is None:
        ok: ir.SubExp = ir.Constant(True, "bool")  # a whole dimension, in steps
    else:
        last = sc.op("+", start, sc.op("*", sc.op("-", n, i64(1)), stride))
        inside = sc.all([sc.cmp("<=", i64(0), start), sc.cmp("<", start, w),
                         sc.cmp("<=", i64(0), last), sc.cmp("<", last, w)])
        ok = sc.op("&", right_way, sc.op("|", sc.cmp("==", n, i64(0)), inside))
    shown: list[str | ir.SubExp]
    if s is not None:
        shown = [*_opt(i), ":", *_opt(j), ":", s]
    elif j is not None:
        shown = [*_opt(i), ":", j]
    else:
        shown = [start, ":"]
    return ir.DimSlice(start, n, stride), ok, shown


def _opt(x: ir.SubExp | None) -> list[str | ir.SubExp]:
    return [] if x is None else [x]


# ------------------------------------------------------------ coercions


def coerce(it: Internaliser, e: S.Coerce, env: dict[str, V]) -> V:
    """`e :> t`: each array's sizes must equal those `t` knows; afterwards
    the arrays have `t`'s sizes in their core types."""
    from futgen.core.internalise import _flatten

    v = it.expr(e.expr, env)
    t = it.subst(e.ty)
    out = []
    # Sizes written as expressions (`[n + 1]`, `[intsqrt n * intsqrt n]`) are
    # computed here and checked like any other.
    for x, want in zip(_flatten(v), it.leaf_types(t, env, e.loc, exprs=True)):
        have = it.type_of(x)
        if not isinstance(have, ir.ArrayT) or not isinstance(want, ir.ArrayT):
            out.append(x)
            continue
        out.append(coerce_array(it, x, list(want.shape), e.loc))
    return it.unflatten(t, iter(out))


def array_dims(it: Internaliser, x: ir.SubExp) -> list[ir.SubExp]:
    """Every dimension of array `x`, read at run time where its type does not know it."""
    t = it.type_of(x)
    assert isinstance(t, ir.ArrayT) and isinstance(x, ir.Var)
    return [d if d is not None else it.bind1(ir.ArraySize(x.name, k), I64, "n")
            for k, d in enumerate(t.shape)]


def coerce_array(it: Internaliser, x: ir.SubExp, want: list[ir.SubExp | None],
                 loc: Loc) -> ir.SubExp:
    """Array `x` with the sizes `want` (None: keep its own), checked at run
    time with Futhark's message; the result's core type has those sizes."""
    have = it.type_of(x)
    assert isinstance(have, ir.ArrayT)
    target = check_shape(it, x, want, loc)
    return it.bind1(ir.SubExpOp(x), ir.ArrayT(have.elem, tuple(target)), "coerced")


def check_shape(it: Internaliser, x: ir.SubExp, want: list[ir.SubExp | None], loc: Loc,
                entry: str | None = None, param: str = "") -> list[ir.SubExp]:
    """Checks that array `x` has the sizes `want` (None: any) and returns
    them.  The message is Futhark's for a coercion, or, for a parameter
    `param` of entry point `entry`, the package's "invalid size" message
    (`futgen_runtime.args.check_sizes`)."""
    sc = Scalars(it)
    have = it.type_of(x)
    assert isinstance(have, ir.ArrayT)
    dims = array_dims(it, x)
    target = [w if w is not None else d for w, d in zip(want, dims)]
    ok = sc.all([sc.cmp("==", d, w) for d, w in zip(dims, target)])
    if entry is None:
        shown: list[str | ir.SubExp] = ["Value of (desugared) shape ", *_shape(dims),
                                        ' cannot match shape of type "', *_shape(target),
                                        f'{have.elem}".']
    else:
        shown = [f"{entry}: invalid size: parameter {param} has shape ", *_shape(dims),
                 " where its type says ", *_shape(target)]
    sc.assert_(ok, shown, loc)
    return target


def _shape(dims: list[ir.SubExp]) -> list[str | ir.SubExp]:
    """`[d0][d1]...` as message parts."""
    return [part for d in dims for part in ("[", d, "]")]


def check_params(it: Internaliser, params: list[S.Pat], values: list[V], env: dict[str, V],
                 size_params: set[str], loc: Loc, entry: str | None = None) -> None:
    """Checks at a function's start what its parameter types say of sizes
    that the arguments' shapes do not fix: a size naming a value (the `n`
    of `(n: i64) (xs: [n]i32)`, a constant `[three]i64`), a size expression
    (`[x + 1]i32`), and arrays given for one type parameter (`x: t` and
    `y: t`), which must have one shape."""
    first: dict[str, list[ir.SubExp]] = {}
    for p, v in zip(params, values):
        want: dict[ir.VName, list[ir.SubExp | None]] = {}
        for name, arr, k in it._size_positions(p.ty, v):
            if name not in size_params and isinstance(arr, ir.Var):
                n = _named_size(it, name, env)
                if n is not None:
                    _want(it, want, arr, k)[k] = n
        for dim, arr, k in _expr_dims(p, v):
            if isinstance(arr, ir.Var):
                _want(it, want, arr, k)[k] = it.i64(dim.expr, env)
        for arr_name, dims in want.items():
            check_shape(it, ir.Var(arr_name), dims, p.loc, entry, f"{_pat_name(p)}: {p.ty}")
        tv = it.subst(p.ty) if isinstance(p.ty, T.TypeVar) else None
        if isinstance(tv, T.Array):
            leaves = [x for x in _leaves(v) if isinstance(x, ir.Var)]
            seen = first.setdefault(p.ty.name, [])
            if not seen:
                seen += leaves
            for x, y in zip(seen, leaves):
                check_shape(it, y, list(array_dims(it, x)), p.loc)


def _want(it: Internaliser, want: dict, arr: ir.Var, k: int) -> list[ir.SubExp | None]:
    t = it.type_of(arr)
    assert isinstance(t, ir.ArrayT)
    return want.setdefault(arr.name, [None] * len(t.shape))


def _named_size(it: Internaliser, name: str, env: dict[str, V]) -> ir.SubExp | None:
    """The value of a size that names a value in scope or a constant."""
    v = env.get(name)
    if isinstance(v, ir.Constant) and v.prim == "i64":
        return v
    return it.dim(T.SizeVar(name), env)


def _expr_dims(p: S.Pat, v: V):
    """(size expression, array, dimension) for the sizes written as
    expressions in `p`'s type annotations (`(ys: [x + 1]i32)`)."""
    match p:
        case S.PAscribe(inner, te):
            k = 0
            while isinstance(te, (S.TEArray, S.TEUnique)):
                if isinstance(te, S.TEUnique):
                    te = te.inner
                    continue
                if isinstance(te.dim, S.DimExpr) and not isinstance(v, tuple):
                    yield te.dim, v, k
                te, k = te.elem, k + 1
            yield from _expr_dims(inner, v)
        case S.PTuple(elems) if isinstance(v, tuple) and len(elems) == len(v):
            for q, x in zip(elems, v):
                yield from _expr_dims(q, x)


def _leaves(v: V) -> list:
    return [x for c in v for x in _leaves(c)] if isinstance(v, tuple) else [v]


def _pat_name(p: S.Pat) -> str:
    match p:
        case S.PId(name):
            return name
        case S.PAscribe(inner):
            return _pat_name(inner)
    return "_"
