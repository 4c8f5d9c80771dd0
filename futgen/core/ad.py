"""Automatic differentiation on the core IR: `jvp` and `vjp`, by forward mode.

`jvp f x dx` copies the core lambda of `f` statement by statement, each one
followed by the statements of its tangent: dual numbers, source to source,
as Futhark's forward mode (`src/Futhark/AD/Fwd.hs`), with its partial
derivatives (`AD/Derivatives.hs`).  Every value has a tangent of its own
type, as in Futhark: integers are differentiated by the same rules as
floats, and a bool's tangent is a bool (`&&` multiplies, `||` adds).  A tangent
known to be zero is `None` and costs nothing; it becomes an actual zero
only where each value needs one (branch, loop and lambda results, SOAC
inputs, calls).  A called function gets a differentiated copy
(`<name>_jvp`).  A SOAC keeps its kind: its lambda is differentiated, and
the dual-number extension of an associative operator is associative with
neutral element (ne, 0), so a reduction, scan or histogram of dual numbers
is one of the same kind.

`vjp f x ybar` is computed by forward mode too: every scalar element of
`x` is seeded in turn, and its cotangent is the dot product of the
resulting tangent with `ybar`.  For an array the seeds are a `map` over
the element indices, so the passes run in parallel, but the work is one
pass of `f` per element of `x`, where reverse mode would cost a small
multiple of one pass (ARCHITECTURE.md: what is still to come).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from futgen.core import ir
from futgen.core.internalise import Arg, Fn, Internaliser, V, _constant, _flatten
from futgen.errors import Loc, UnsupportedFeature
from futgen.flatten.names import replace_uses
from futgen.frontend import types as T

Tangent = ir.SubExp | None
I64 = ir.Prim("i64")


def _prim(t: ir.Type) -> str:
    return t.name if isinstance(t, ir.Prim) else t.elem


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

    def __init__(self, it: Internaliser, loc: Loc | None):
        self.it, self.loc = it, loc
        self.env: dict[ir.VName, ir.SubExp] = {}
        self.tan: dict[ir.VName, Tangent] = {}

    # ------------------------------------------------------------ values

    def sub(self, x: ir.SubExp) -> ir.SubExp:
        return self.env.get(x.name, x) if isinstance(x, ir.Var) else x

    def rn(self, node):  # noqa: ANN001, ANN201 - any IR node
        return replace_uses(node, self.env)

    def dt(self, x: ir.SubExp | ir.VName) -> Tangent:
        name = x if isinstance(x, ir.VName) else getattr(x, "name", None)
        return self.tan.get(name) if name is not None else None

    def zero_like(self, x: ir.SubExp) -> ir.SubExp:
        """A zero of the type of `x` (a copied value), made here."""
        stms, z = zero_stms(self.it, x, self.it.type_of(x))
        for s in stms:
            self.it.stms.append(s)
            self.it.types[s.pat[0].name] = s.pat[0].type
        return z

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
                    ir.Screma: self.screma, ir.Scatter: self.scatter, ir.Hist: self.hist}
        if type(e) in compound:
            compound[type(e)](s, e)
            return
        outs = self.it.bind(self.rn(e), [self.rn(p.type) for p in s.pat], s.pat[0].name.base)
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
        s = Scalar(self, prim)
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
        s = Scalar(self, prim)
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

    def apply(self, s: ir.Stm, e: ir.Apply) -> None:
        callee = self.it.function_named(e.fn)
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

    def _loop_body(self, e: ir.Loop, want: list[bool]):  # noqa: ANN202
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
        want_res = [False] * len(built.res)
        for j, tangent in layout:
            want_res[j] = want_res[j] or tangent
        stms, dres = self.complete(built, want_res)
        result = tuple(dres[j] if tangent else built.res[j] for j, tangent in layout)
        lam_ret = [self.rn(t) for t in e.map_lam.ret]
        lam = ir.Lambda(tuple(params), ir.Body(tuple(stms), result),
                        tuple(lam_ret[j] for j, _ in layout))
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
        dests = [ir.ScatterDest(self.sub(ir.Var(d.arr)).name, d.num_idx) for d in e.dests]
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
            dests = [self.sub(ir.Var(d)).name for d in op.dests]
            dests += [self.dt_or_zero(d).name for d, w in zip(op.dests, want) if w]
            ops.append(ir.HistOp(tuple(dests), self.neutral(op.nes, want), lam))
            layout += [(start + j, False) for j in range(k)]
            layout += [(start + j, True) for j in range(k) if want[j]]
            out_layout += [(out + j, False) for j in range(k)]
            out_layout += [(out + j, True) for j in range(k) if want[j]]
            start, out = start + k, out + k
        want_res = [False] * len(built.res)
        for j, tangent in layout:
            want_res[j] = want_res[j] or tangent
        stms, dres = self.complete(built, want_res)
        lam_ret = [self.rn(t) for t in e.lam.ret]
        lam = ir.Lambda(tuple(params),
                        ir.Body(tuple(stms), tuple(dres[j] if t else built.res[j]
                                                   for j, t in layout)),
                        tuple(lam_ret[j] for j, _ in layout))
        types = [self.rn(s.pat[j].type) for j, _ in out_layout]
        outs = self.it.bind(ir.Hist(self.sub(e.w), tuple(arrs), tuple(ops), lam), types,
                            s.pat[0].name.base)
        self.bind_layout(s.pat, out_layout, outs)


# ---------------------------------------------------------------- derivatives


class Scalar:
    """Scalar arithmetic of one primitive type, emitted by a `Forward`."""

    def __init__(self, fw: Forward, prim: str):
        self.fw, self.prim, self.t = fw, prim, ir.Prim(prim)

    def k(self, v: float) -> ir.Constant:
        return _constant(v, self.prim)

    def is_zero(self, x: ir.SubExp) -> bool:
        return isinstance(x, ir.Constant) and x.value == 0

    def binop(self, op: str, x: ir.SubExp, y: ir.SubExp) -> ir.SubExp:
        return self.fw.emit(ir.BinOp(op, self.prim, x, y), self.t)

    def un(self, op: str, x: ir.SubExp) -> ir.SubExp:
        return self.fw.emit(ir.UnOp(op, self.prim, x), self.t)

    def sub(self, x: ir.SubExp, y: ir.SubExp) -> ir.SubExp:
        return self.binop("-", x, y)

    def add(self, x: ir.SubExp, y: ir.SubExp) -> ir.SubExp:
        return self.binop("||" if self.prim == "bool" else "+", x, y)

    def mul(self, x: ir.SubExp, y: ir.SubExp) -> ir.SubExp:
        for a, b in ((x, y), (y, x)):  # a partial derivative of 1 or -1 costs nothing
            if isinstance(a, ir.Constant) and a.value == 1:
                return b
            if isinstance(a, ir.Constant) and a.value == -1 and self.prim != "bool":
                return self.neg(b)
        return self.binop("&&" if self.prim == "bool" else "*", x, y)

    def div(self, x: ir.SubExp, y: ir.SubExp) -> ir.SubExp:
        return self.binop("/", x, y)

    def neg(self, x: ir.SubExp) -> ir.SubExp:
        return self.un("neg", x)

    def recip(self, x: ir.SubExp) -> ir.SubExp:
        return self.div(self.k(1), x)

    def cmp(self, op: str, x: ir.SubExp, y: ir.SubExp) -> ir.SubExp:
        return self.fw.emit(ir.CmpOp(op, self.prim, x, y), ir.Prim("bool"))

    def of_bool(self, c: ir.SubExp) -> ir.SubExp:
        """1 where `c` holds, else 0 (how Futhark writes max's partials)."""
        return self.fw.emit(ir.ConvOp("bool", self.prim, c), self.t)

    def select(self, c: ir.SubExp, x: ir.SubExp, y: ir.SubExp) -> ir.SubExp:
        return self.fw.emit(ir.If(c, ir.Body((), (x,)), ir.Body((), (y,)), (self.t,)), self.t)


Rule1 = Callable[[Scalar, ir.SubExp, ir.SubExp], ir.SubExp]  # (s, x, f x) -> f' x


def _over_pi(rule: Rule1) -> Rule1:
    return lambda s, x, y: s.div(rule(s, x, y), s.k(math.pi))


def _asin(s: Scalar, x: ir.SubExp, _y: ir.SubExp) -> ir.SubExp:
    return s.recip(s.un("sqrt", s.sub(s.k(1), s.mul(x, x))))


def _acos(s: Scalar, x: ir.SubExp, y: ir.SubExp) -> ir.SubExp:
    return s.neg(_asin(s, x, y))


def _atan(s: Scalar, x: ir.SubExp, _y: ir.SubExp) -> ir.SubExp:
    return s.recip(s.add(s.k(1), s.mul(x, x)))


def _erf(s: Scalar, x: ir.SubExp, _y: ir.SubExp) -> ir.SubExp:
    return s.mul(s.k(2 / math.sqrt(math.pi)), s.un("exp", s.neg(s.mul(x, x))))


# f' in terms of x and y = f x, for the float functions of the numeric modules.
UNARY_DERIVATIVES: dict[str, Rule1] = {
    "sqrt": lambda s, x, y: s.recip(s.mul(s.k(2), y)),
    "rsqrt": lambda s, x, y: s.mul(s.k(-0.5), s.mul(y, s.mul(y, y))),
    "cbrt": lambda s, x, y: s.recip(s.mul(s.k(3), s.mul(y, y))),
    "recip": lambda s, x, y: s.neg(s.mul(y, y)),
    "exp": lambda s, x, y: y,
    "log": lambda s, x, y: s.recip(x),
    "log2": lambda s, x, y: s.recip(s.mul(x, s.k(math.log(2)))),
    "log10": lambda s, x, y: s.recip(s.mul(x, s.k(math.log(10)))),
    "log1p": lambda s, x, y: s.recip(s.add(x, s.k(1))),
    "sin": lambda s, x, y: s.un("cos", x),
    "cos": lambda s, x, y: s.neg(s.un("sin", x)),
    "tan": lambda s, x, y: s.add(s.k(1), s.mul(y, y)),
    "sinpi": lambda s, x, y: s.mul(s.k(math.pi), s.un("cospi", x)),
    "cospi": lambda s, x, y: s.neg(s.mul(s.k(math.pi), s.un("sinpi", x))),
    "tanpi": lambda s, x, y: s.mul(s.k(math.pi), s.add(s.k(1), s.mul(y, y))),
    "asin": _asin,
    "acos": _acos,
    "atan": _atan,
    "asinpi": _over_pi(_asin),
    "acospi": _over_pi(_acos),
    "atanpi": _over_pi(_atan),
    "sinh": lambda s, x, y: s.un("cosh", x),
    "cosh": lambda s, x, y: s.un("sinh", x),
    "tanh": lambda s, x, y: s.sub(s.k(1), s.mul(y, y)),
    "asinh": lambda s, x, y: s.recip(s.un("sqrt", s.add(s.mul(x, x), s.k(1)))),
    "acosh": lambda s, x, y: s.recip(s.un("sqrt", s.sub(s.mul(x, x), s.k(1)))),
    "atanh": lambda s, x, y: s.recip(s.sub(s.k(1), s.mul(x, x))),
    "erf": _erf,
    "erfc": lambda s, x, y: s.neg(_erf(s, x, y)),
}
# Unary operators whose derivative is zero wherever it exists.
PIECEWISE_CONSTANT = {"sgn", "floor", "ceil", "trunc", "round", "isnan", "isinf", "to_bits",
                      "from_bits", "popc", "clz", "ctz", "not", "bnot"}
# Bitwise operators: Futhark's AD gives them zero derivatives too.
BITWISE = {"&", "|", "^", "<<", ">>", ">>>", "mul_hi"}
PIECEWISE_CONSTANT -= {"not", "bnot", "to_bits", "from_bits"}

Rule2 = Callable[[Scalar, ir.SubExp, ir.SubExp, ir.SubExp], tuple[ir.SubExp, ir.SubExp]]


def _div(s: Scalar, x: ir.SubExp, y: ir.SubExp, z: ir.SubExp) -> tuple[ir.SubExp, ir.SubExp]:
    if s.prim in T.FLOATS:
        return s.recip(y), s.neg(s.div(z, y))
    # Integer division: Futhark's partials, in integer arithmetic.
    return s.binop("//", s.k(1), y), s.neg(s.binop("//", x, s.mul(y, y)))


def _pow(s: Scalar, x: ir.SubExp, y: ir.SubExp, z: ir.SubExp) -> tuple[ir.SubExp, ir.SubExp]:
    one = s.k(1)
    if s.prim not in T.FLOATS:
        return s.mul(s.binop("**", x, s.sub(y, one)), y), s.k(0)
    # 0 ** y has no derivative in x for y < 1, and x ** y none in y for x <= 0.
    at_zero = s.fw.emit(ir.BinOp("&&", "bool", s.cmp("==", x, s.k(0)), s.cmp("<", y, one)),
                        ir.Prim("bool"))
    px = s.select(at_zero, s.k(0), s.mul(y, s.binop("**", x, s.sub(y, one))))
    py = s.mul(z, s.select(s.cmp("<=", x, s.k(0)), s.k(0), s.un("log", x)))
    return px, py


def _atan2(s: Scalar, x: ir.SubExp, y: ir.SubExp, z: ir.SubExp) -> tuple[ir.SubExp, ir.SubExp]:
    r2 = s.add(s.mul(x, x), s.mul(y, y))
    return s.div(y, r2), s.neg(s.div(x, r2))


# (∂z/∂x, ∂z/∂y) of z = x op y.
BINARY_DERIVATIVES: dict[str, Rule2] = {
    "+": lambda s, x, y, z: (s.k(1), s.k(1)),
    "-": lambda s, x, y, z: (s.k(1), s.k(-1)),
    "*": lambda s, x, y, z: (y, x),
    "/": _div,
    "//": _div,
    "%": lambda s, x, y, z: (s.k(1), s.k(0)),
    "%%": lambda s, x, y, z: (s.k(1), s.k(0)),
    "**": _pow,
    "max": lambda s, x, y, z: (s.of_bool(s.cmp(">=", x, y)), s.of_bool(s.cmp("<", x, y))),
    "min": lambda s, x, y, z: (s.of_bool(s.cmp("<=", x, y)), s.of_bool(s.cmp(">", x, y))),
    "atan2": _atan2,
    "atan2pi": lambda s, x, y, z: tuple(s.div(p, s.k(math.pi)) for p in _atan2(s, x, y, z)),
    "hypot": lambda s, x, y, z: (s.div(x, z), s.div(y, z)),
    "copysign": lambda s, x, y, z: (s.mul(s.un("sgn", x), s.binop("copysign", s.k(1), y)),
                                    s.k(0)),
    "nextafter": lambda s, x, y, z: (s.k(1), s.k(0)),
    "&&": lambda s, x, y, z: (y, x),
    "||": lambda s, x, y, z: (s.k(1), s.k(0)),
}


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


# ---------------------------------------------------------------- built-ins


def _lambda(it: Internaliser, f: Fn, x: V, xt: T.Type, loc: Loc) -> ir.Lambda:
    from futgen.core.builtins import make_lambda

    return make_lambda(it, f, [xt], [it.type_of(a) for a in _flatten(x)], loc)


def _tangent_values(fw: Forward, ys: list[ir.SubExp], dys: list[Tangent]) -> list[ir.SubExp]:
    """The tangents of results `ys`, zeros made where known (bools: false)."""
    return [d if d is not None else fw.zero_like(y) for y, d in zip(ys, dys)]


def _jvp(both: bool) -> Callable[[Internaliser, T.Type, Loc], Fn]:
    """`jvp f x dx` (`jvp2`: the value of `f x` too)."""
    def rule(it: Internaliser, ty: T.Type, loc: Loc) -> Fn:
        def impl(args: list[Arg], ret: T.Type) -> V:
            (f, _), (x, xt), (dx, _) = args
            fw = Forward(it, loc)
            ys, dys = fw.inline(_lambda(it, f, x, xt, loc), _flatten(x), _flatten(dx))
            out = _tangent_values(fw, ys, dys)
            return it.unflatten(ret, iter(ys + out if both else out))

        return Fn(ty, 3, impl)

    return rule


def _vjp(both: bool) -> Callable[[Internaliser, T.Type, Loc], Fn]:
    """`vjp f x ybar` (`vjp2`: the value of `f x` too)."""
    def rule(it: Internaliser, ty: T.Type, loc: Loc) -> Fn:
        def impl(args: list[Arg], ret: T.Type) -> V:
            (f, _), (x, xt), (ybar, _) = args
            lam = _lambda(it, f, x, xt, loc)
            xs, ybars = _flatten(x), _flatten(ybar)
            xbars = [_cotangent(it, lam, xs, c, ybars, loc) for c in range(len(xs))]
            if not both:
                return it.unflatten(ret, iter(xbars))
            ys, _ = Forward(it, loc).inline(lam, xs, [None] * len(xs))
            return it.unflatten(ret, iter(ys + xbars))

        return Fn(ty, 3, impl)

    return rule


def _dims(it: Internaliser, x: ir.SubExp) -> list[ir.SubExp]:
    t = it.type_of(x)
    assert isinstance(t, ir.ArrayT)
    return [d if d is not None else it.bind1(ir.ArraySize(x.name, k), I64, "n")
            for k, d in enumerate(t.shape)]


def _count(it: Internaliser, dims: list[ir.SubExp]) -> ir.SubExp:
    n = dims[0]
    for d in dims[1:]:
        n = it.bind1(ir.BinOp("*", "i64", n, d), I64, "n")
    return n


def _cotangent(it: Internaliser, lam: ir.Lambda, xs: list[ir.SubExp], c: int,
               ybars: list[ir.SubExp], loc: Loc) -> ir.SubExp:
    """The cotangent of component `c` of the argument: for each of its
    elements, the tangent of the result seeded there, dotted with `ybar`."""
    x = xs[c]
    t = it.type_of(x)
    if _prim(t) == "bool":  # no cotangents through bools (Futhark's reverse mode has none)
        return Forward(it, loc).zero_like(x)
    if isinstance(t, ir.Prim):
        return _seeded_dot(it, lam, xs, c, _constant(1, t.name), ybars, t.name, loc)
    dims = _dims(it, x)
    n = _count(it, dims)
    idx = it.bind1(ir.Iota(n, ir.Constant(0, "i64"), ir.Constant(1, "i64")),
                   ir.ArrayT("i64", (n,)), "iota")
    flat = ir.ArrayT(t.elem, (n,))
    with it.nested() as stms:
        i = ir.Param(it.fresh("i"), I64)
        it.types[i.name] = I64
        zeros = it.bind1(ir.Replicate((n,), _constant(0, t.elem)), flat, "zeros")
        seed = it.bind1(ir.Update(zeros.name, (ir.DimFix(ir.Var(i.name)),),
                                  _constant(1, t.elem)), flat, "seed")
        if len(dims) > 1:
            seed = it.bind1(ir.Reshape(seed.name, tuple(dims)), ir.ArrayT(t.elem, tuple(dims)),
                            "seed")
        dot = _seeded_dot(it, lam, xs, c, seed, ybars, t.elem, loc)
        body = ir.Body(tuple(stms), (dot,))
    grads = it.bind1(ir.Screma(n, (idx.name,), (), (), ir.Lambda((i,), body, (ir.Prim(t.elem),))),
                     flat, "xbar")
    if len(dims) == 1:
        return grads
    return it.bind1(ir.Reshape(grads.name, tuple(dims)), ir.ArrayT(t.elem, tuple(dims)), "xbar")


def _seeded_dot(it: Internaliser, lam: ir.Lambda, xs: list[ir.SubExp], c: int, seed: ir.SubExp,
                ybars: list[ir.SubExp], prim: str, loc: Loc) -> ir.SubExp:
    """The dot product with `ybar` of the tangent of `lam xs` when component
    `c` has tangent `seed` and the others none, in type `prim`."""
    seeds: list[Tangent] = [None] * len(xs)
    seeds[c] = seed
    ys, dys = Forward(it, loc).inline(lam, xs, seeds)
    total: ir.SubExp | None = None
    for y, dy, ybar in zip(ys, dys, ybars):
        yt = it.type_of(y)
        yprim = _prim(yt)
        if dy is None or yprim == "bool":
            continue
        term = it.bind1(ir.BinOp("*", yprim, dy, ybar), ir.Prim(yprim), "dot") \
            if isinstance(yt, ir.Prim) else _dot(it, y, dy, ybar, loc)
        if yprim != prim:
            term = it.bind1(ir.ConvOp(yprim, prim, term), ir.Prim(prim), "dot")
        total = term if total is None else it.bind1(ir.BinOp("+", prim, total, term),
                                                    ir.Prim(prim), "dot")
    return total if total is not None else _constant(0, prim)


def _dot(it: Internaliser, y: ir.SubExp, a: ir.SubExp, b: ir.SubExp, loc: Loc) -> ir.SubExp:
    """The sum of the elementwise products of arrays `a` and `b`, of `y`'s shape."""
    from futgen.core.builtins import binop_lambda

    dims = _dims(it, y)
    n = _count(it, dims)
    prim = _prim(it.type_of(y))
    flat = ir.ArrayT(prim, (n,))
    if len(dims) > 1:
        a, b = (it.bind1(ir.Reshape(v.name, (n,), loc), flat, "flat") for v in (a, b))
    else:  # `ybar` must have `y`'s shape, as a reshape checks for higher ranks
        b = it.bind1(ir.Reshape(b.name, (n,), loc), flat, "flat")
    p, q, r = (ir.Param(it.fresh(base), ir.Prim(prim)) for base in ("p", "q", "r"))
    prod = ir.Lambda((p, q), ir.Body((ir.Stm((r,), ir.BinOp("*", prim, ir.Var(p.name),
                                                            ir.Var(q.name))),),
                                     (ir.Var(r.name),)), (ir.Prim(prim),))
    red = ir.Reduce(binop_lambda(it, "+", prim), (_constant(0, prim),), comm=True)
    return it.bind1(ir.Screma(n, (a.name, b.name), (), (red,), prod), ir.Prim(prim), "dot")


def _over_rows(it: Internaliser, arrays: list[ir.SubExp],
               body: Callable[[list[ir.SubExp]], list[ir.SubExp]]) -> list[ir.SubExp]:
    """`map` of `body` over the rows of `arrays` (the seeds of `jmp`, `mjp`)."""
    w = it.width(arrays[0])
    with it.nested() as stms:
        rows = [ir.Param(it.fresh("seed"), ir.row(it.type_of(a))) for a in arrays]
        for r in rows:
            it.types[r.name] = r.type
        out = body([ir.Var(r.name) for r in rows])
        inner = [it.type_of(o) for o in out]
    types = [it.scrub(t) for t in inner]  # sizes named inside the lambda are unknown outside
    lam = ir.Lambda(tuple(rows), ir.Body(tuple(stms), tuple(out)), tuple(types))
    return it.bind(ir.Screma(w, tuple(a.name for a in arrays), (), (), lam),
                   [ir.array_of(t, (w,)) for t in types], "seeded")


def _jmp(both: bool) -> Callable[[Internaliser, T.Type, Loc], Fn]:
    """`jmp f x dxs`: `jvp f x` of every seed in `dxs` (`jmp2`: `f x` too)."""
    def rule(it: Internaliser, ty: T.Type, loc: Loc) -> Fn:
        def impl(args: list[Arg], ret: T.Type) -> V:
            (f, _), (x, xt), (seeds, _) = args
            lam, xs = _lambda(it, f, x, xt, loc), _flatten(x)

            def jvp(row: list[ir.SubExp]) -> list[ir.SubExp]:
                fw = Forward(it, loc)
                return _tangent_values(fw, *fw.inline(lam, xs, list(row)))

            out = _over_rows(it, _flatten(seeds), jvp)
            if both:
                out = Forward(it, loc).inline(lam, xs, [None] * len(xs))[0] + out
            return it.unflatten(ret, iter(out))

        return Fn(ty, 3, impl)

    return rule


def _mjp(both: bool) -> Callable[[Internaliser, T.Type, Loc], Fn]:
    """`mjp f x ybars`: `vjp f x` of every seed in `ybars` (`mjp2`: `f x` too)."""
    def rule(it: Internaliser, ty: T.Type, loc: Loc) -> Fn:
        def impl(args: list[Arg], ret: T.Type) -> V:
            (f, _), (x, xt), (seeds, _) = args
            lam, xs = _lambda(it, f, x, xt, loc), _flatten(x)
            out = _over_rows(it, _flatten(seeds), lambda row: [
                _cotangent(it, lam, xs, c, row, loc) for c in range(len(xs))])
            if both:
                out = Forward(it, loc).inline(lam, xs, [None] * len(xs))[0] + out
            return it.unflatten(ret, iter(out))

        return Fn(ty, 3, impl)

    return rule


RULES: dict[str, Callable[[Internaliser, T.Type, Loc], Fn]] = {
    "jmp": _jmp(both=False),
    "jmp2": _jmp(both=True),
    "mjp": _mjp(both=False),
    "mjp2": _mjp(both=True),
    "jvp": _jvp(both=False),
    "jvp2": _jvp(both=True),
    "vjp": _vjp(both=False),
    "vjp2": _vjp(both=True),
}
