"""Forward mode: the tangent of every value of a copied body (see the package docstring)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from futgen.core import ir
from futgen.core.ad.derivatives import (
    BINARY_DERIVATIVES,
    BITWISE,
    PIECEWISE_CONSTANT,
    UNARY_DERIVATIVES,
    Scalar,
)
from futgen.core.internalise import Internaliser, _constant
from futgen.errors import Loc, UnsupportedFeature
from futgen.flatten.names import replace_uses
from futgen.frontend import types as T

Tangent = ir.SubExp | None
I64 = ir.Prim("i64")


def zero_stms(it: Internaliser, like: ir.SubExp, t: ir.Type) -> tuple[list[ir.Stm], ir.SubExp]:
    """Statements making a zero of type `t` (of `like`'s shape where `t`
    leaves a size unknown), and the zero."""
    if isinstance(t, ir.Prim):
        return [], _constant(0, t.name)
    stms, dims = [], []
    for k, d in enumerate(t.shape):
        if d is None:
            assert isinstance(like, ir.Var)
            n = ir.Param(it.fresh("n"), I64)
            stms.append(ir.Stm((n,), ir.ArraySize(like.name, k)))
            d = ir.Var(n.name)
        dims.append(d)
    z = ir.Param(it.fresh("zeros"), ir.ArrayT(t.elem, tuple(dims)))
    stms.append(ir.Stm((z,), ir.Replicate(tuple(dims), _constant(0, t.elem))))
    return stms, ir.Var(z.name)


def array_dims(it: Internaliser, x: ir.SubExp) -> list[ir.SubExp]:
    """The dimensions of array `x`, read at run time where its type leaves them unknown."""
    t = it.type_of(x)
    assert isinstance(t, ir.ArrayT)
    return [d if d is not None else it.bind1(ir.ArraySize(x.name, k), I64, "n")
            for k, d in enumerate(t.shape)]


def element_count(it: Internaliser, dims: list[ir.SubExp]) -> ir.SubExp:
    """The product of `dims` (1 for none)."""
    if not dims:
        return ir.Constant(1, "i64")
    n = dims[0]
    for d in dims[1:]:
        n = it.bind1(ir.BinOp("*", "i64", n, d), I64, "n")
    return n


def indices(it: Internaliser, w: ir.SubExp) -> ir.SubExp:
    """`iota w`, emitted here."""
    return it.bind1(ir.Iota(w, ir.Constant(0, "i64"), ir.Constant(1, "i64")),
                    ir.ArrayT("i64", (w,)), "iota")


def map_rows(it: Internaliser, arrays: list[ir.SubExp],
             body: Callable[[list[ir.SubExp]], list[ir.SubExp]], base: str = "map"
             ) -> list[ir.SubExp]:
    """`map` of `body` over the rows of `arrays`, emitted here: `body`
    builds the function's statements from the rows and returns its results."""
    w = it.width(arrays[0])
    with it.nested() as stms:
        rows = [ir.Param(it.fresh("row"), ir.row(it.type_of(a))) for a in arrays]
        for r in rows:
            it.types[r.name] = r.type
        out = body([ir.Var(r.name) for r in rows])
        inner = [it.type_of(o) for o in out]
    types = [it.scrub(t) for t in inner]  # sizes named inside the function are unknown outside
    lam = ir.Lambda(tuple(rows), ir.Body(tuple(stms), tuple(out)), tuple(types))
    return it.bind(ir.Screma(w, tuple(a.name for a in arrays), (), (), lam),
                   [ir.array_of(t, (w,)) for t in types], base)


def emit_zero(it: Internaliser, like: ir.SubExp) -> ir.SubExp:
    """A zero of the type of `like`, made in the body being built."""
    stms, z = zero_stms(it, like, it.type_of(like))
    for s in stms:
        it.stms.append(s)
        it.types[s.pat[0].name] = s.pat[0].type
    return z


@dataclass
class Built:
    """A body built in a nested scope: its statements, results and their
    tangents, and the types of the names it binds (for zeros made later)."""

    stms: list[ir.Stm]
    res: list[ir.SubExp]
    dres: list[Tangent]
    types: dict[ir.VName, ir.Type]


class Forward:
    """One forward-mode copy: the new name of every copied value (`env`) and
    its tangent (`tan`).  Old names not in `env` are free in the copied code
    (in scope as they are) and have a zero tangent."""

    def __init__(self, it: Internaliser, loc: Loc | None, replay: bool = False):
        self.it, self.loc = it, loc
        self.env: dict[ir.VName, ir.SubExp] = {}
        self.tan: dict[ir.VName, Tangent] = {}
        # A copy for reverse mode's return sweep: calls are inlined (every
        # statement in sight), and in-place updates update a copy, so every
        # array keeps its value for the sweep and for the bodies it re-runs.
        self.replay = replay

    # ------------------------------------------------------------ values

    def sub(self, x: ir.SubExp) -> ir.SubExp:
        return self.env.get(x.name, x) if isinstance(x, ir.Var) else x

    def rn(self, node):
        return replace_uses(node, self.env)

    def dt(self, x: ir.SubExp | ir.VName) -> Tangent:
        name = x if isinstance(x, ir.VName) else getattr(x, "name", None)
        return self.tan.get(name) if name is not None else None

    def zero_like(self, x: ir.SubExp) -> ir.SubExp:
        """A zero of the type of `x` (a copied value), made here."""
        return emit_zero(self.it, x)

    def consumed(self, arr: ir.VName) -> ir.VName:
        """The copied array an update, scatter or histogram consumes: in a
        replay, a copy of it, so that the array keeps its value."""
        new = self.sub(ir.Var(arr))
        if self.replay:
            copy = self.it.bind1(ir.Copy(new.name), self.it.type_of(new), "copy")
            self.it.replay_sources[copy.name] = new.name
            new = copy
        return new.name

    def dt_or_zero(self, x: ir.SubExp | ir.VName) -> ir.SubExp:
        old = ir.Var(x) if isinstance(x, ir.VName) else x
        d = self.dt(old)
        return d if d is not None else self.zero_like(self.sub(old))

    def fresh_params(self, params: tuple[ir.Param, ...], want: list[bool] | None = None
                     ) -> tuple[list[ir.Param], list[ir.Param]]:
        """New parameters for `params`, and a tangent parameter for each one
        marked in `want` (the others' tangents are zero)."""
        new, tangents = [], []
        for k, p in enumerate(params):
            q = ir.Param(self.it.fresh(p.name.base), self.rn(p.type))
            self.env[p.name] = ir.Var(q.name)
            self.it.types[q.name] = q.type
            new.append(q)
            self.tan[p.name] = None
            if want is not None and want[k]:
                d = ir.Param(self.it.fresh("d" + p.name.base), q.type)
                self.it.types[d.name] = d.type
                self.tan[p.name] = ir.Var(d.name)
                tangents.append(d)
        return new, tangents

    def bind_results(self, pat: tuple[ir.Param, ...], outs: list[ir.SubExp],
                     want: list[bool]) -> None:
        """Binds `pat` to the first outputs, and the tangents of those marked
        in `want` to the outputs after them, in order."""
        tangents = iter(outs[len(pat):])
        for p, o, w in zip(pat, outs, want):
            self.env[p.name] = o
            self.tan[p.name] = next(tangents) if w else None

    def bind_layout(self, pat: tuple[ir.Param, ...], layout: list[tuple[int, bool]],
                    outs: list[ir.SubExp]) -> None:
        """Binds the outputs of a SOAC whose results are laid out as `layout`
        says: (position in `pat`, whether it is that value's tangent)."""
        for p in pat:
            self.tan[p.name] = None
        for (j, tangent), o in zip(layout, outs):
            if tangent:
                self.tan[pat[j].name] = o
            else:
                self.env[pat[j].name] = o

    # ------------------------------------------------------------ bodies

    def inline(self, lam: ir.Lambda, args: list[ir.SubExp], targs: list[Tangent]
               ) -> tuple[list[ir.SubExp], list[Tangent]]:
        """The copy of `lam` applied to `args` with tangents `targs`, emitted here."""
        for p, a, d in zip(lam.params, args, targs):
            self.env[p.name] = a
            self.tan[p.name] = d
        return self.body(lam.body)

    def body(self, body: ir.Body) -> tuple[list[ir.SubExp], list[Tangent]]:
        for s in body.stms:
            self.stm(s)
        return [self.sub(r) for r in body.result], [self.dt(r) for r in body.result]

    def nested(self, build: Callable[[], tuple[list[ir.SubExp], list[Tangent]]]) -> Built:
        with self.it.nested() as stms:
            res, dres = build()
            types = dict(self.it.types)
        return Built(stms, res, dres, types)

    def complete(self, b: Built, want: list[bool]) -> tuple[list[ir.Stm], list[Tangent]]:
        """`b`'s statements, with zeros made for the results marked in `want`
        that have no tangent, and the tangents (None where not wanted)."""
        stms, dres = list(b.stms), []
        for r, d, w in zip(b.res, b.dres, want):
            if w and d is None:
                zs, d = zero_stms(self.it, r, ir.subexp_type(r, b.types))
                stms += zs
            dres.append(d if w else None)
        return stms, dres

    def finish(self, b: Built, want: list[bool]) -> ir.Body:
        """`b` as a body returning its results, then the tangents in `want`."""
        stms, dres = self.complete(b, want)
        return ir.Body(tuple(stms), tuple(b.res) + tuple(d for d in dres if d is not None))

    # ------------------------------------------------------------ statements

    def stm(self, s: ir.Stm) -> None:
        e = s.exp
        compound = {ir.Apply: self.apply, ir.If: self.if_, ir.Loop: self.loop,
                    ir.Screma: self.screma, ir.Scatter: self.scatter, ir.Hist: self.hist,
                    ir.CustomVjp: self.custom_vjp}
        if type(e) in compound:
            compound[type(e)](s, e)
            return
        copied = self.rn(e)
        if isinstance(e, ir.Update):
            copied = ir.Update(self.consumed(e.arr), copied.slice, copied.value, copied.loc)
        outs = self.it.bind(copied, [self.rn(p.type) for p in s.pat], s.pat[0].name.base)
        self.env[s.pat[0].name] = outs[0]
        self.tan[s.pat[0].name] = self.basic(e, outs[0])

    def emit(self, e: ir.Exp, t: ir.Type) -> ir.SubExp:
        return self.it.bind1(e, t, "d")

    def basic(self, e: ir.Exp, out: ir.SubExp) -> Tangent:
        """The tangent of the result `out` of basic operation `e`."""
        t = self.it.type_of(out)
        match e:
            case ir.SubExpOp(se):
                return self.dt(se)
            case ir.UnOp(op, prim, x):
                return self.unop(op, prim, x, out)
            case ir.BinOp(op, prim, x, y):
                return self.binop(op, prim, x, y, out)
            case ir.ConvOp(src, dst, x):
                d = self.dt(x)
                return None if d is None else self.emit(ir.ConvOp(src, dst, d), t)
            case ir.Index(arr, sl, loc):
                d = self.dt(arr)
                return None if d is None else self.emit(ir.Index(d.name, self.rn(sl), loc), t)
            case ir.Update(arr, sl, v, loc):
                if self.dt(arr) is None and self.dt(v) is None:
                    return None
                da, dv = self.dt_or_zero(arr), self.dt_or_zero(v)
                return self.emit(ir.Update(da.name, self.rn(sl), dv, loc), t)
            case ir.ArrayLit(elems, elem):
                if all(self.dt(x) is None for x in elems):
                    return None
                return self.emit(ir.ArrayLit(tuple(self.dt_or_zero(x) for x in elems),
                                             self.rn(elem)), t)
            case ir.Replicate(shape, v):
                d = self.dt(v)
                return None if d is None else self.emit(ir.Replicate(self.rn(shape), d), t)
            case ir.Reshape(arr, shape, loc):
                d = self.dt(arr)
                return None if d is None else self.emit(ir.Reshape(d.name, self.rn(shape), loc),
                                                        t)
            case ir.Rearrange(arr, perm):
                d = self.dt(arr)
                return None if d is None else self.emit(ir.Rearrange(d.name, perm), t)
            case ir.Copy(arr):
                d = self.dt(arr)
                return None if d is None else self.emit(ir.Copy(d.name), t)
            case ir.Concat(arrs):
                if all(self.dt(a) is None for a in arrs):
                    return None
                return self.emit(ir.Concat(tuple(self.dt_or_zero(a).name for a in arrs)), t)
        # Iota, ArraySize, CmpOp, Assert: integers of no input, or bools.
        return None

    # ------------------------------------------------------------ scalars

    def unop(self, op: str, prim: str, x: ir.SubExp, y: ir.SubExp) -> Tangent:
        dx = self.dt(x)
        if dx is None:
            return None
        s = Scalar(self.emit, prim)
        x = self.sub(x)
        if op in ("to_bits", "from_bits"):  # Futhark's rule: bit casts carry tangents along
            return self.emit(ir.UnOp(op, prim, dx), self.it.type_of(y))
        if op == "not":  # Futhark's partial derivative of `!x` is x
            return s.mul(dx, x)
        if op == "bnot":
            return s.mul(dx, s.un("bnot", x))
        if op == "neg":
            return s.neg(dx)
        if op == "abs":
            return s.mul(s.un("sgn", x), dx)
        if prim not in T.FLOATS or op in PIECEWISE_CONSTANT:
            return None  # the other integer operators are piecewise constant
        rule = UNARY_DERIVATIVES.get(op)
        if rule is None:
            raise UnsupportedFeature(f"differentiation of {prim}.{op}", self.loc)
        return s.mul(rule(s, x, y), dx)

    def binop(self, op: str, prim: str, x: ir.SubExp, y: ir.SubExp, z: ir.SubExp) -> Tangent:
        dx, dy = self.dt(x), self.dt(y)
        if dx is None and dy is None:
            return None
        s = Scalar(self.emit, prim)
        x, y = self.sub(x), self.sub(y)
        if op == "ldexp":  # x * 2^y, y an i32
            return None if dx is None else s.binop("ldexp", dx, y)
        rule = BINARY_DERIVATIVES.get(op)
        if rule is None:
            if op in BITWISE:
                return None
            raise UnsupportedFeature(f"differentiation of {prim}.{op}", self.loc)
        px, py = rule(s, x, y, z)
        terms = [s.mul(p, d) for p, d in ((px, dx), (py, dy)) if d is not None and not s.is_zero(p)]
        if not terms:
            return None
        return terms[0] if len(terms) == 1 else s.add(terms[0], terms[1])

    # ------------------------------------------------------------ calls and control

    def custom_vjp(self, s: ir.Stm, e: ir.CustomVjp) -> None:
        """`with_vjp`: forward mode differentiates the function itself; a
        replay keeps the statement, for the return sweep to use its adjoint."""
        args = [self.sub(a) for a in e.args]
        if not self.replay:
            res, dres = self.inline(e.primal, args, [self.dt(a) for a in e.args])
            for p, r, d in zip(s.pat, res, dres):
                self.env[p.name], self.tan[p.name] = r, d
            return
        copied = ir.CustomVjp(self.copy_lambda(e.primal), self.copy_lambda(e.adjoint), tuple(args))
        outs = self.it.bind(copied, [self.rn(p.type) for p in s.pat], s.pat[0].name.base)
        self.bind_results(s.pat, outs, [False] * len(outs))

    def copy_lambda(self, lam: ir.Lambda) -> ir.Lambda:
        """`lam` with fresh names (a program binds every name once)."""
        params, built = self.lambda_body(lam, [False] * len(lam.params))
        return ir.Lambda(tuple(params), ir.Body(tuple(built.stms), tuple(built.res)), lam.ret)

    def apply(self, s: ir.Stm, e: ir.Apply) -> None:
        callee = self.it.function_named(e.fn)
        if all(self.dt(a) is None for a in e.args) and not self.replay:
            # A core function has no free variables: no tangents in, none out.
            outs = self.it.bind(self.rn(e), [self.rn(p.type) for p in s.pat], s.pat[0].name.base)
            self.bind_results(s.pat, outs, [False] * len(outs))
            return
        if self.replay:
            res, dres = self.inline(ir.Lambda(callee.params, callee.body, callee.ret),
                                    [self.sub(a) for a in e.args], [self.dt(a) for a in e.args])
            for p, r, d in zip(s.pat, res, dres):
                self.env[p.name], self.tan[p.name] = r, d
            return
        name = jvp_function(self.it, callee, self.loc)
        args = [self.sub(a) for a in e.args]
        dargs = [self.dt_or_zero(a) for a in e.args]
        ret = [self.rn(p.type) for p in s.pat]
        outs = self.it.bind(ir.Apply(name, tuple(args + dargs), tuple(ret + ret), e.loc),
                            ret + ret, s.pat[0].name.base)
        self.bind_results(s.pat, outs, [True] * len(ret))

    def if_(self, s: ir.Stm, e: ir.If) -> None:
        branches = [self.nested(lambda b=b: self.body(b)) for b in (e.then_, e.else_)]
        want = [any(b.dres[k] is not None for b in branches) for k in range(len(e.ret))]
        ret = [self.rn(t) for t in e.ret]
        ret += [t for t, w in zip(ret, want) if w]
        bodies = [self.finish(b, want) for b in branches]
        outs = self.it.bind(ir.If(self.sub(e.cond), bodies[0], bodies[1], tuple(ret)), ret,
                            s.pat[0].name.base)
        self.bind_results(s.pat, outs, want)

    def loop(self, s: ir.Stm, e: ir.Loop) -> None:
        # Which merge values carry tangents is a fixed point: those whose
        # initial value has one, and those the body gives one.
        want = [self.dt(x) is not None for _, x in e.merge]
        while True:
            params, tparams, form, built = self._loop_body(e, want)
            grown = [w or d is not None for w, d in zip(want, built.dres)]
            if grown == want:
                break
            want = grown
        inits = [self.sub(x) for _, x in e.merge]
        tinits = [self.dt_or_zero(x) for (_, x), w in zip(e.merge, want) if w]
        merge = tuple(zip(params + tparams, inits + tinits))
        outs = self.it.bind(ir.Loop(merge, form, self.finish(built, want)),
                            [p.type for p in params + tparams], s.pat[0].name.base)
        self.bind_results(s.pat, outs, want)

    def _loop_body(self, e: ir.Loop, want: list[bool]):
        params, tparams = self.fresh_params(tuple(p for p, _ in e.merge), want)
        if isinstance(e.form, ir.ForLoop):
            i = self.it.fresh(e.form.i.base)
            self.env[e.form.i] = ir.Var(i)
            self.it.types[i] = ir.Prim(e.form.prim)
            form: ir.LoopForm = ir.ForLoop(i, e.form.prim, self.sub(e.form.bound))
        else:
            form = ir.WhileLoop(self.sub(ir.Var(e.form.cond)).name)
        return params, tparams, form, self.nested(lambda: self.body(e.body))

    # ------------------------------------------------------------ SOACs

    def lambda_inputs(self, arrs: tuple[ir.VName, ...]
                      ) -> tuple[list[ir.VName], list[bool]]:
        """The copied input arrays of a SOAC followed by the tangents they
        have, and which inputs have one."""
        want = [self.dt(a) is not None for a in arrs]
        new = [self.sub(ir.Var(a)).name for a in arrs]
        return new + [self.dt(a).name for a, w in zip(arrs, want) if w], want

    def lambda_body(self, lam: ir.Lambda, want: list[bool]) -> tuple[list[ir.Param], Built]:
        with self.it.nested():
            params, tparams = self.fresh_params(lam.params, want)
            built = self.nested(lambda: self.body(lam.body))
        return params + tparams, built

    def operator(self, lam: ir.Lambda, want: list[bool]) -> tuple[ir.Lambda, list[bool]]:
        """The dual-number operator of a reduction, scan or histogram operator
        `lam` (`k` accumulator then `k` element parameters) on the components
        marked in `want`, grown to those the operator gives a tangent."""
        k = len(lam.params) // 2
        while True:
            with self.it.nested():
                acc, dacc = self.fresh_params(lam.params[:k], want)
                elem, delem = self.fresh_params(lam.params[k:], want)
                built = self.nested(lambda: self.body(lam.body))
            grown = [w or d is not None for w, d in zip(want, built.dres)]
            if grown == want:
                break
            want = grown
        ret = [self.rn(t) for t in lam.ret]
        ret += [t for t, w in zip(ret, want) if w]
        return ir.Lambda(tuple(acc + dacc + elem + delem), self.finish(built, want),
                         tuple(ret)), want

    def laid_out(self, params: list[ir.Param], built: Built, layout: list[tuple[int, bool]],
                 lam: ir.Lambda) -> ir.Lambda:
        """The copy of SOAC function `lam` returning what `layout` lists:
        (result position, whether it is that result's tangent); zeros are
        made for the tangents it lists that the body has none of."""
        want = [False] * len(built.res)
        for j, tangent in layout:
            want[j] = want[j] or tangent
        stms, dres = self.complete(built, want)
        ret = [self.rn(t) for t in lam.ret]
        return ir.Lambda(tuple(params),
                         ir.Body(tuple(stms), tuple(dres[j] if tangent else built.res[j]
                                                    for j, tangent in layout)),
                         tuple(ret[j] for j, _ in layout))

    def neutral(self, nes: tuple[ir.SubExp, ...], want: list[bool]) -> tuple[ir.SubExp, ...]:
        new = [self.sub(n) for n in nes]
        return tuple(new + [self.zero_like(n) for n, w in zip(new, want) if w])

    def op_wants(self, lam: ir.Lambda, start: int, built: Built) -> list[bool]:
        return [built.dres[start + j] is not None for j in range(len(lam.ret))]

    def screma(self, s: ir.Stm, e: ir.Screma) -> None:
        arrs, in_want = self.lambda_inputs(e.arrs)
        params, built = self.lambda_body(e.map_lam, in_want)
        # Results, in the Screma's order: each scan's and reduction's values
        # followed by their tangents, then the mapped values, then theirs.
        layout: list[tuple[int, bool]] = []
        start, scans, reds = 0, [], []
        for op in (*e.scans, *e.reds):
            k = len(op.nes)
            lam, want = self.operator(op.lam, self.op_wants(op.lam, start, built))
            if isinstance(op, ir.Scan):
                scans.append(ir.Scan(lam, self.neutral(op.nes, want)))
            else:
                reds.append(ir.Reduce(lam, self.neutral(op.nes, want), op.comm))
            layout += [(start + j, False) for j in range(k)]
            layout += [(start + j, True) for j in range(k) if want[j]]
            start += k
        mapped = range(start, len(built.res))
        map_want = [built.dres[j] is not None for j in mapped]
        layout += [(j, False) for j in mapped]
        layout += [(j, True) for j, w in zip(mapped, map_want) if w]
        lam = self.laid_out(params, built, layout, e.map_lam)
        types = [self.rn(s.pat[j].type) for j, _ in layout]
        outs = self.it.bind(ir.Screma(self.sub(e.w), tuple(arrs), tuple(scans), tuple(reds), lam),
                            types, s.pat[0].name.base)
        self.bind_layout(s.pat, layout, outs)

    def scatter(self, s: ir.Stm, e: ir.Scatter) -> None:
        arrs, in_want = self.lambda_inputs(e.arrs)
        params, built = self.lambda_body(e.lam, in_want)
        values, start = [], 0
        for d in e.dests:
            values.append(start + d.num_idx)
            start += d.num_idx + 1
        want = [self.dt(d.arr) is not None or built.dres[v] is not None
                for d, v in zip(e.dests, values)]
        want_res = [False] * len(built.res)
        for v, w in zip(values, want):
            want_res[v] = w
        stms, dres = self.complete(built, want_res)
        extra, extra_t = [], []
        lam_ret = [self.rn(t) for t in e.lam.ret]
        for d, v, w in zip(e.dests, values, want):
            if w:  # the tangent is written at the same indices
                extra += [*built.res[v - d.num_idx:v], dres[v]]
                extra_t += lam_ret[v - d.num_idx:v + 1]
        lam = ir.Lambda(tuple(params), ir.Body(tuple(stms), tuple(built.res) + tuple(extra)),
                        tuple(lam_ret + extra_t))
        dests = [ir.ScatterDest(self.consumed(d.arr), d.num_idx) for d in e.dests]
        dests += [ir.ScatterDest(self.dt_or_zero(d.arr).name, d.num_idx)
                  for d, w in zip(e.dests, want) if w]
        types = [self.rn(p.type) for p in s.pat]
        types += [t for t, w in zip(types, want) if w]
        outs = self.it.bind(ir.Scatter(self.sub(e.w), tuple(arrs), lam, tuple(dests)), types,
                            s.pat[0].name.base)
        self.bind_results(s.pat, outs, want)

    def hist(self, s: ir.Stm, e: ir.Hist) -> None:
        arrs, in_want = self.lambda_inputs(e.arrs)
        params, built = self.lambda_body(e.lam, in_want)
        nops = len(e.ops)
        layout = [(b, False) for b in range(nops)]
        out_layout: list[tuple[int, bool]] = []
        ops, start, out = [], nops, 0
        for op in e.ops:
            k = len(op.dests)
            want = [self.dt(d) is not None or built.dres[start + j] is not None
                    for j, d in enumerate(op.dests)]
            lam, want = self.operator(op.lam, want)
            dests = [self.consumed(d) for d in op.dests]
            dests += [self.dt_or_zero(d).name for d, w in zip(op.dests, want) if w]
            ops.append(ir.HistOp(tuple(dests), self.neutral(op.nes, want), lam))
            layout += [(start + j, False) for j in range(k)]
            layout += [(start + j, True) for j in range(k) if want[j]]
            out_layout += [(out + j, False) for j in range(k)]
            out_layout += [(out + j, True) for j in range(k) if want[j]]
            start, out = start + k, out + k
        lam = self.laid_out(params, built, layout, e.lam)
        types = [self.rn(s.pat[j].type) for j, _ in out_layout]
        outs = self.it.bind(ir.Hist(self.sub(e.w), tuple(arrs), tuple(ops), lam), types,
                            s.pat[0].name.base)
        self.bind_layout(s.pat, out_layout, outs)


# ---------------------------------------------------------------- functions


def jvp_function(it: Internaliser, f: ir.Function, loc: Loc | None) -> str:
    """The name of the differentiated copy of core function `f`: its
    parameters, then their tangents; its results, then theirs."""
    key = ("jvp", f.name)
    if key in it.names:
        return it.names[key]
    taken = set(it.names.values()) | set(it.decls)
    name = next(n for n in (f"{f.name}_jvp{k or ''}" for k in range(len(taken) + 1))
                if n not in taken)
    it.names[key] = name
    it.functions[key] = None
    it.order.append(key)
    saved = (it.stms, it.types)
    it.stms, it.types = [], {}
    try:
        fw = Forward(it, loc)
        params, tparams = fw.fresh_params(f.params, [True] * len(f.params))
        res, dres = fw.body(f.body)
        tangents = [d if d is not None else fw.zero_like(r) for r, d in zip(res, dres)]
        body = ir.Body(tuple(it.stms), tuple(res + tangents))
    finally:
        it.stms, it.types = saved
    ret = f.ret + f.ret
    it.functions[key] = ir.Function(name, tuple(params + tparams), ret, body)
    return name
