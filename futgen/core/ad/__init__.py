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

import warnings
from collections.abc import Callable
from dataclasses import fields, replace

from futgen.core import ir
from futgen.core.ad.basis import _cotangent
from futgen.core.ad.forward import Forward, Tangent, map_rows
from futgen.core.ad.reverse import NotReversible, reverse_vjp
from futgen.core.internalise import Arg, Fn, Internaliser, V, _flatten
from futgen.errors import Loc, UnsupportedFeature
from futgen.frontend import types as T

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


# Reverse mode where it applies (tests turn it off to compare with forward mode).
REVERSE_MODE = True


class ForwardModeVjp(UserWarning):
    """A `vjp` runs by forward mode: one pass of the function per element of
    its argument, because reverse mode does not handle something in it."""


def cotangents(it: Internaliser, lam: ir.Lambda, xs: list[ir.SubExp], ybars: list[ir.SubExp],
               loc: Loc) -> list[ir.SubExp]:
    """`vjp` of `lam` at `xs`: by reverse mode, or by forward mode (one pass
    per element of `xs`) where the return sweep meets what it does not handle."""
    if REVERSE_MODE:
        mark, types = len(it.stms), dict(it.types)
        try:
            return reverse_vjp(it, lam, xs, ybars, loc)
        except NotReversible as why:
            if _has_custom_vjp(it, lam):
                raise UnsupportedFeature(
                    f"vjp through with_vjp of a function reverse mode does not handle ({why})",
                    loc) from None
            warnings.warn(f"{loc}: vjp runs by forward mode, one pass of the function per "
                          f"element of its argument: reverse mode does not handle {why} yet",
                          ForwardModeVjp, stacklevel=2)
            del it.stms[mark:]
            it.types.clear()
            it.types.update(types)
    return [_cotangent(it, lam, xs, c, ybars, loc) for c in range(len(xs))]


def _has_custom_vjp(it: Internaliser, node: object) -> bool:
    """Whether IR `node`, or a function it calls, holds a `with_vjp`
    statement (forward mode would lose its derivative)."""
    if isinstance(node, ir.CustomVjp):
        return True
    if isinstance(node, ir.Apply):
        return _has_custom_vjp(it, it.function_named(node.fn).body)
    if isinstance(node, tuple):
        return any(_has_custom_vjp(it, x) for x in node)
    if isinstance(node, ir.Body | ir.Lambda | ir.Stm | ir.If | ir.Loop | ir.Screma | ir.Scatter
                  | ir.Hist | ir.Scan | ir.Reduce | ir.HistOp):
        return any(_has_custom_vjp(it, getattr(node, f.name)) for f in fields(node))
    return False


def strip_custom_vjps(it: Internaliser, prog: ir.Program) -> ir.Program:
    """`prog` with every `with_vjp` statement replaced by its function's body
    (what it means outside a `vjp`): no later pass sees `ir.CustomVjp`."""
    def body(b: ir.Body) -> ir.Body:
        stms: list[ir.Stm] = []
        for s in b.stms:
            e = strip(s.exp)
            if not isinstance(e, ir.CustomVjp):
                stms.append(ir.Stm(s.pat, e))
                continue
            saved, it.stms = it.stms, []
            try:
                res, _ = Forward(it, None).inline(e.primal, list(e.args), [None] * len(e.args))
                inlined = it.stms
            finally:
                it.stms = saved
            stms += body(ir.Body(tuple(inlined), ())).stms
            stms += [ir.Stm((p,), ir.SubExpOp(r)) for p, r in zip(s.pat, res)]
        return ir.Body(tuple(stms), b.result)

    def strip(node: object) -> object:
        if isinstance(node, ir.Body):
            return body(node)
        if isinstance(node, tuple):
            return tuple(strip(x) for x in node)
        if isinstance(node, ir.Lambda | ir.If | ir.Loop | ir.Screma | ir.Scatter | ir.Hist
                      | ir.Scan | ir.Reduce | ir.HistOp):
            return type(node)(*(strip(getattr(node, f.name)) for f in fields(node)))
        return node

    return ir.Program(tuple(replace(f, body=body(f.body)) for f in prog.functions))


def _vjp(both: bool) -> Callable[[Internaliser, T.Type, Loc], Fn]:
    """`vjp f x ybar` (`vjp2`: the value of `f x` too)."""
    def rule(it: Internaliser, ty: T.Type, loc: Loc) -> Fn:
        def impl(args: list[Arg], ret: T.Type) -> V:
            (f, _), (x, xt), (ybar, _) = args
            lam = _lambda(it, f, x, xt, loc)
            xs, ybars = _flatten(x), _flatten(ybar)
            xbars = cotangents(it, lam, xs, ybars, loc)
            if not both:
                return it.unflatten(ret, iter(xbars))
            ys, _ = Forward(it, loc).inline(lam, xs, [None] * len(xs))
            return it.unflatten(ret, iter(ys + xbars))

        return Fn(ty, 3, impl)

    return rule

def _seeded(both: bool, per_seed: Callable[..., list[ir.SubExp]]
            ) -> Callable[[Internaliser, T.Type, Loc], Fn]:
    """`g f x seeds`: `per_seed(it, lam, xs, seed, loc)` of every seed in
    `seeds` (with `both`, `f x` too): `jmp`/`jmp2` by `jvp`, `mjp`/`mjp2`
    by `vjp`."""
    def rule(it: Internaliser, ty: T.Type, loc: Loc) -> Fn:
        def impl(args: list[Arg], ret: T.Type) -> V:
            (f, _), (x, xt), (seeds, _) = args
            lam, xs = _lambda(it, f, x, xt, loc), _flatten(x)
            out = map_rows(it, _flatten(seeds),
                           lambda row: per_seed(it, lam, xs, list(row), loc), "seeded")
            if both:
                out = Forward(it, loc).inline(lam, xs, [None] * len(xs))[0] + out
            return it.unflatten(ret, iter(out))

        return Fn(ty, 3, impl)

    return rule


def _jvp_of_seed(it: Internaliser, lam: ir.Lambda, xs: list[ir.SubExp],
                 seed: list[ir.SubExp], loc: Loc) -> list[ir.SubExp]:
    fw = Forward(it, loc)
    return _tangent_values(fw, *fw.inline(lam, xs, seed))


def _vjp_of_seed(it: Internaliser, lam: ir.Lambda, xs: list[ir.SubExp],
                 seed: list[ir.SubExp], loc: Loc) -> list[ir.SubExp]:
    return cotangents(it, lam, xs, seed, loc)


def _with_vjp(it: Internaliser, ty: T.Type, loc: Loc) -> Fn:
    """`with_vjp f df x`: a `CustomVjp` statement, which `vjp` differentiates
    by `df` and `strip_custom_vjps` turns into `f x` everywhere else."""
    def impl(args: list[Arg], ret: T.Type) -> V:
        from futgen.core.builtins import make_lambda

        (f, _), (df, _), (x, xt) = args
        primal = _lambda(it, f, x, xt, loc)
        results = [it.scrub(t) for t in primal.ret]
        adjoint = make_lambda(it, df, [ret, ret], results + results, loc)
        outs = it.bind(ir.CustomVjp(primal, adjoint, tuple(_flatten(x))), results, "custom")
        it.custom_vjps = True
        return it.unflatten(ret, iter(outs))

    return Fn(ty, 3, impl)


RULES: dict[str, Callable[[Internaliser, T.Type, Loc], Fn]] = {
    "with_vjp": _with_vjp,
    "jmp": _seeded(False, _jvp_of_seed),
    "jmp2": _seeded(True, _jvp_of_seed),
    "mjp": _seeded(False, _vjp_of_seed),
    "mjp2": _seeded(True, _vjp_of_seed),
    "jvp": _jvp(both=False),
    "jvp2": _jvp(both=True),
    "vjp": _vjp(both=False),
    "vjp2": _vjp(both=True),
}
