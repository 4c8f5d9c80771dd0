"""Vertical fusion of a map into the one Screma that consumes it.

The rule (Futhark's producer-consumer fusion, `Optimise/Fusion.hs`, cut down
to one case): in

    let (ys) = screma w (xs) map f
    ...
    let (zs) = screma w (ys, us) <scans> <reds> map g

where every use of `ys` is as an input array of the second Screma, the two
become one Screma over `(us, xs)` whose map is `f` followed by `g`.  The
consumer's parameters for `ys` are bound to `f`'s results, so no array `ys`
is ever made.  Flattening needs this so that `reduce (+) 0 (map2 (*) xs ys)`
is one SegRed on the host, and one scalar loop inside a kernel body.

Moving `f`'s work down to the consumer is safe when nothing in between
consumes (updates in place) an array the map reads; statements in between
are therefore limited to ones that consume nothing (`_INERT`).
"""

from __future__ import annotations

from dataclasses import replace

from futgen.core import ir
from futgen.flatten.names import use_counts

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
            if not isinstance(cons, ir.Screma):
                if not isinstance(cons, _INERT) and outs:
                    break
                continue
            if cons.w != prod.exp.w:
                continue
            as_input = sum(1 for a in cons.arrs if a in outs)
            if as_input and as_input == sum(later[o] for o in outs):
                return i, j
            if as_input:
                break
    return None


def _fuse(prod: ir.Stm, cons: ir.Stm) -> ir.Screma:
    """The consumer Screma with the producer map's work at the front of its map."""
    p, c = prod.exp, cons.exp
    assert isinstance(p, ir.Screma) and isinstance(c, ir.Screma)
    outs = [q.name for q in prod.pat]
    kept = [(a, q) for a, q in zip(c.arrs, c.map_lam.params) if a not in outs]
    links = [ir.Stm((q,), ir.SubExpOp(p.map_lam.body.result[outs.index(a)]))
             for a, q in zip(c.arrs, c.map_lam.params) if a in outs]
    lam = ir.Lambda(
        params=tuple(q for _, q in kept) + p.map_lam.params,
        body=ir.Body(p.map_lam.body.stms + tuple(links) + c.map_lam.body.stms,
                     c.map_lam.body.result),
        ret=c.map_lam.ret,
    )
    return replace(c, arrs=tuple(a for a, _ in kept) + p.arrs, map_lam=lam)
