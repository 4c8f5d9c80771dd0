"""Internalisation of source `loop`s into core `Loop`s.

The loop pattern becomes one merge parameter per flattened value.  Sizes of
loop parameters are left existential (`?`), constants too: an array may
change size from one iteration to the next; size binders (`loop [n] (xs: [n]t) = ...`) read
the sizes of the merge arrays at the start of every iteration.  `for p in xs` becomes a counted loop that
indexes `xs`; `while c` gets a bool merge parameter holding `c`, computed
once before the loop from the initial values and again at the end of every
iteration from the new ones, as in Futhark's internaliser.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from futgen.core import ir
from futgen.frontend import syntax as S
from futgen.frontend import types as T
from futgen.frontend.entry import leaf_types

if TYPE_CHECKING:
    from futgen.core.internalise import Internaliser, V


def loop(it: Internaliser, e: S.Loop, env: dict[str, V]) -> V:
    """Emits the Loop statement for `e` and returns its results."""
    from futgen.core.internalise import _base, _flatten

    init = it.expr(e.init, env) if e.init is not None else it._pat_value(e.pat, env)
    inits = _flatten(init)
    types = [_merge_type(it, t, r, x) for t, r, x in
             zip(it.leaf_types(e.pat.ty, {}, e.loc), leaf_types(it.subst(e.ty)), inits)]
    params = [ir.Param(it.fresh(_base(e.pat)), t) for t in types]
    merge = list(zip(params, inits))
    pat_value = it.unflatten(e.pat.ty, iter(ir.Var(p.name) for p in params))
    cond_param = None
    if isinstance(e.form, S.WhileLoop):
        first = dict(env)
        it.bind_pat(e.pat, init, first)
        _bind_sizes(it, e, first)
        cond_param = ir.Param(it.fresh("cond"), ir.Prim("bool"))
        merge.append((cond_param, it.subexp(e.form.cond, first)))
    form, setup = _form(it, e, env, cond_param)
    with it.nested() as stms:
        for p, _ in merge:
            it.types[p.name] = p.type
        inner = dict(env)
        setup(inner)
        it.bind_pat(e.pat, pat_value, inner)
        _bind_sizes(it, e, inner)
        new = it.expr(e.body, inner)
        result = _flatten(new)
        if isinstance(e.form, S.WhileLoop):
            after = dict(env)
            it.bind_pat(e.pat, new, after)
            _bind_sizes(it, e, after)
            result.append(it.subexp(e.form.cond, after))
        body = ir.Body(tuple(stms), tuple(result))
    outs = it.bind(ir.Loop(tuple(merge), form, body), [p.type for p, _ in merge], "loop")
    return it.unflatten(e.pat.ty, iter(outs[:len(params)]))


def _merge_type(it: Internaliser, t: ir.Type, result: T.Type, init: ir.SubExp) -> ir.Type:
    """A merge parameter's type: a size the body keeps (the type checker
    gives the loop's `result` that size, not an anonymous one) is the
    initial value's, read before the loop where its type does not say it;
    any other is unknown, even a constant size in the checked pattern type,
    which may be the initial value's only (`loop acc = [] ...`)."""
    if isinstance(t, ir.Prim):
        return t
    kept = [not isinstance(d, T.AnySize) for d in result.shape] \
        if isinstance(result, T.Array) else [False] * len(t.shape)
    init_t = it.type_of(init)
    have = list(init_t.shape) if isinstance(init_t, ir.ArrayT) else [None] * len(t.shape)
    for k, d in enumerate(have):
        if kept[k] and d is None and isinstance(init, ir.Var):
            have[k] = it.bind1(ir.ArraySize(init.name, k), ir.Prim("i64"), "n")
    return ir.ArrayT(t.elem, tuple(h if k else None for k, h in zip(kept, have)))


def _bind_sizes(it: Internaliser, e: S.Loop, env: dict[str, V]) -> None:
    """`loop [n] (xs: [n]t) = ...`: each iteration reads `n` from `xs`."""
    it.bind_size_binders(e.sizes, e.pat, it._pat_value(e.pat, env), env)


def _form(it: Internaliser, e: S.Loop, env: dict[str, V], cond: ir.Param | None):
    """The core loop form, and a function binding the loop variable inside
    the body's environment (called once the body's scope is open)."""
    from futgen.core.internalise import _flatten

    match e.form:
        case S.WhileLoop():
            assert cond is not None
            return ir.WhileLoop(cond.name), lambda inner: None
        case S.ForLoop(var, bound):
            b = it.subexp(bound, env)
            t = it.subst(bound.ty)
            assert isinstance(t, T.Scalar)
            i = it.fresh(var)

            def bind_i(inner: dict) -> None:
                it.types[i] = ir.Prim(t.name)
                inner[var] = ir.Var(i)

            return ir.ForLoop(i, t.name, b), bind_i
        case S.ForInLoop(pat, array):
            arr = it.expr(array, env)
            leaves = _flatten(arr)
            w = it.width(leaves[0])
            i = it.fresh("i")

            def bind_elem(inner: dict) -> None:
                it.types[i] = ir.Prim("i64")
                elems = [it.bind1(ir.Index(a.name, (ir.DimFix(ir.Var(i)),), e.loc),
                                  ir.row(it.type_of(a)), "elem") for a in leaves]
                it.bind_pat(pat, it.unflatten(pat.ty, iter(elems)), inner)

            return ir.ForLoop(i, "i64", w), bind_elem
    raise AssertionError(e.form)
