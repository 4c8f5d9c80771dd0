"""The parts of a core (or GPU) IR expression that hold code: bodies and lambdas.

Passes that look into every body (simplification, dead code, fusion) go
through these instead of matching each compound expression themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace

from futgen.core import ir
from futgen.gpu.ir import BLOCK, SegMap, SegRed, SegScan


def lambdas(e: ir.Exp) -> Iterator[ir.Lambda]:
    """The lambdas of a SOAC: its map lambda first, then its operators'."""
    match e:
        case ir.Screma():
            yield e.map_lam
            for op in (*e.scans, *e.reds):
                yield op.lam
        case ir.Scatter():
            yield e.lam
        case ir.Hist():
            yield e.lam
            for hop in e.ops:
                yield hop.lam


def bodies(e: ir.Exp) -> Iterator[ir.Body]:
    """The bodies directly inside `e`: lambda bodies, branches, a loop body."""
    for lam in lambdas(e):
        yield lam.body
    match e:
        case ir.If(_, then_, else_, _):
            yield then_
            yield else_
        case ir.Loop(body=body):
            yield body


def host_stms(body: ir.Body) -> Iterator[ir.Stm]:
    """The statements of GPU IR host code `body` and, at any depth, of its
    `if` branches and loop bodies (not of lambdas or kernels)."""
    for stm in body.stms:
        yield stm
        if isinstance(stm.exp, ir.If | ir.Loop):
            for b in bodies(stm.exp):
                yield from host_stms(b)


def map_lambdas(e: ir.Exp, f: Callable[[ir.Lambda], ir.Lambda]) -> ir.Exp:
    """`e` with `f` applied to each of its lambdas."""
    match e:
        case ir.Screma():
            return replace(e, map_lam=f(e.map_lam),
                           scans=tuple(replace(s, lam=f(s.lam)) for s in e.scans),
                           reds=tuple(replace(r, lam=f(r.lam)) for r in e.reds))
        case ir.Scatter():
            return replace(e, lam=f(e.lam))
        case ir.Hist():
            return replace(e, lam=f(e.lam), ops=tuple(replace(o, lam=f(o.lam)) for o in e.ops))
    return e


def map_bodies(e: ir.Exp, f: Callable[[ir.Body], ir.Body]) -> ir.Exp:
    """`e` with `f` applied to each body directly inside it."""
    match e:
        case ir.If(_, then_, else_, _):
            return replace(e, then_=f(then_), else_=f(else_))
        case ir.Loop(body=body):
            return replace(e, body=f(body))
    return map_lambdas(e, lambda lam: replace(lam, body=f(lam.body)))


def code_bodies(e: ir.Exp) -> list[ir.Body]:
    """The bodies inside GPU IR kernel or block code `e`: `bodies`, and
    those of the BLOCK SegOps of block code."""
    if isinstance(e, SegMap | SegRed | SegScan) and e.level == BLOCK:
        return [e.body]
    return list(bodies(e))


def map_code_bodies(e: ir.Exp, f: Callable[[ir.Body], ir.Body]) -> ir.Exp:
    """`e` with `f` applied to each of its `code_bodies`."""
    if isinstance(e, SegMap | SegRed | SegScan) and e.level == BLOCK:
        return replace(e, body=f(e.body))
    return map_bodies(e, f)
