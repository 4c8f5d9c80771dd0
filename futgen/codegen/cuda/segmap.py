"""SegMap: one grid-stride loop over the flattened segment space.

Each thread takes flat indices `blockIdx.x * blockDim.x + threadIdx.x`,
then steps by the whole grid, so the kernel is correct for any grid the
runtime picks (it caps the grid).  The flat index is decomposed into the
space's gtids (row-major), the body runs, and result `i` is stored at the
flat index of output `i`.  There are no barriers, so a failing thread simply
returns.
"""

from __future__ import annotations

from futgen.codegen.cuda import imp
from futgen.codegen.cuda.common import (
    BDIM,
    BID,
    GDIM,
    TID,
    SegCompile,
    decompose,
    early_exit,
    pointer,
    product,
)
from futgen.codegen.cuda.imp import Bin, Stm
from futgen.codegen.plan import CTYPES, KernelPlan
from futgen.core import ir
from futgen.gpu.ir import SegMap


def compile_segmap(sc: SegCompile, op: SegMap) -> KernelPlan:
    """The plan of `let (pat) = segmap ...`: one kernel, one output per result."""
    low = sc.lowering()
    prims = []
    for t in op.ret:
        assert isinstance(t, ir.Prim), t
        prims.append(t.name)
    outs = [sc.array(f"{p.name.base}_mem", prim, op.space.dims, output=True)
            for p, prim in zip(sc.stm.pat, prims)]
    out_ptrs = [pointer(low, t) for t in outs]
    dims = [low.subexp(d) for d in op.space.dims]
    total = low.fresh("total")
    flat = low.fresh("flat")
    res = [low.fresh("res") for _ in prims]
    inner: list[Stm] = decompose(low, imp.Var(flat), op.space.gtids, dims)
    inner += [imp.Decl(CTYPES[p], r) for p, r in zip(prims, res)]
    inner += low.region((), op.body, res, None)
    inner += [imp.Store(o, imp.Var(flat), imp.Var(r)) for o, r in zip(out_ptrs, res)]
    body: list[Stm] = [
        early_exit(barriers=False),
        imp.Decl("int64_t", total, product(dims)),
        imp.For("int64_t", flat, Bin("+", Bin("*", BID, BDIM), TID), imp.Var(total),
                tuple(inner), Bin("*", GDIM, BDIM)),
    ]
    sc.kernel("segmap", low, body, sc.host_product(op.space.dims))
    return sc.plan([("array", t.name) for t in outs])
