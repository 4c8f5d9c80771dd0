"""Vertical fusion of a map into the one Screma, Hist or Scatter that consumes it.

The rule (Futhark's producer-consumer fusion, `Optimise/Fusion.hs`, cut down
to one case): in

    let (ys) = screma w (xs) map f
    ...
    let (zs) = screma w (ys, us) <scans> <reds> map g

where every use of `ys` is as an input array of the second Screma, the two
become one Screma over `(us, xs)` whose map is `f` followed by `g`.  The
consumer's parameters for `ys` are bound to `f`'s results, so no array `ys`
is ever made.  Flattening needs this so that `reduce (+) 0 (map2 (*) xs ys)`
is one SegRed on the host, and one scalar loop inside a kernel body.  A map
fuses into a Hist or Scatter's lambda the same way (`hist (+) 0 k is (map
f xs)` computes `f` in the histogram's threads), unless the map reads an
array the consumer updates in place: its reads would then see the writes.

Moving `f`'s work down to the consumer is safe when nothing in between
consumes (updates in place) an array the map reads; statements in between
are therefore limited to ones that consume nothing (`_INERT`).
"""

from __future__ import annotations

from dataclasses import replace

from futgen.core import ir
from futgen.flatten.names import free_vars, use_counts

# Expressions that never consume (update in place) an array.
_INERT = (ir.SubExpOp, ir.UnOp, ir.BinOp, ir.CmpOp, ir.ConvOp, ir.Index, ir.ArrayLit,
          ir.Iota, ir.Replicate, ir.Reshape, ir.Rearrange, ir.Concat, ir.Copy,
          ir.ArraySize, ir.Assert, ir.Screma)


def fuse_body(body: ir.Body) -> ir.Body:
    """`body` with every map fused into its only consumer, until none is left."""
    stms = list(body.stms)
    while (pair := _fusible_pair(stms, body.result)) is not None:
        i, j = pair
        stms[j] = ir.Stm(stms[j].pat, _fuse(stms[i], stms[j]))
        del stms[i]
    return ir.Body(tuple(stms), body.result)


def _is_map(e: ir.Exp) -> bool:
    return isinstance(e, ir.Screma) and not e.scans and not e.reds


def _fusible_pair(stms: list[ir.Stm], result: tuple[ir.SubExp, ...]) -> tuple[int, int] | None:
    """Positions of a map producer and its only consumer, or None."""
    for i, prod in enumerate(stms):
        if not _is_map(prod.exp):
            continue
        outs = {p.name for p in prod.pat}
        later = use_counts((tuple(stms[i + 1:]), result))
        for j in range(i + 1, len(stms)):
            cons = stms[j].exp
            if not isinstance(cons, _CONSUMERS):
                if not isinstance(cons, _INERT) and outs:
                    break
                continue
            if cons.w != prod.exp.w:
                if not isinstance(cons, ir.Screma):
                    break  # it consumes its destinations
                continue
            if _updated(cons) & free_vars(prod.exp):
                break
            as_input = sum(1 for a in cons.arrs if a in outs)
            if as_input and as_input == sum(later[o] for o in outs):
                return i, j
            if as_input:
                break
    return None


_CONSUMERS = (ir.Screma, ir.Hist, ir.Scatter)


def _updated(e: ir.Exp) -> set[ir.VName]:
    """The arrays a consumer updates in place."""
    match e:
        case ir.Hist(ops=ops):
            return {d for o in ops for d in o.dests}
        case ir.Scatter(dests=dests):
            return {d.arr for d in dests}
    return set()


def _fuse(prod: ir.Stm, cons: ir.Stm) -> ir.Screma | ir.Hist | ir.Scatter:
    """The consumer with the producer map's work at the front of its lambda."""
    p, c = prod.exp, cons.exp
    assert isinstance(p, ir.Screma) and isinstance(c, _CONSUMERS)
    c_lam = c.map_lam if isinstance(c, ir.Screma) else c.lam
    outs = [q.name for q in prod.pat]
    kept = [(a, q) for a, q in zip(c.arrs, c_lam.params) if a not in outs]
    links = [ir.Stm((q,), ir.SubExpOp(p.map_lam.body.result[outs.index(a)]))
             for a, q in zip(c.arrs, c_lam.params) if a in outs]
    lam = ir.Lambda(
        params=tuple(q for _, q in kept) + p.map_lam.params,
        body=ir.Body(p.map_lam.body.stms + tuple(links) + c_lam.body.stms, c_lam.body.result),
        ret=c_lam.ret,
    )
    arrs = tuple(a for a, _ in kept) + p.arrs
    if isinstance(c, ir.Screma):
        return replace(c, arrs=arrs, map_lam=lam)
    return replace(c, arrs=arrs, lam=lam)
