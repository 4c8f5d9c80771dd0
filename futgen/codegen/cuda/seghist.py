"""SegHist: histograms by atomics, in shared-memory sub-histograms or in place.

Two kernels from `templates/cuda/histogram.cu.j2`, one launched per call:

* **shared**: each block builds sub-histograms in shared memory and adds
  them to the destinations at the end.  Taken when every histogram fits in
  the block's shared memory together (`SHARED_BYTES`) and there are at
  least `seghist_shared_<k>` elements per bin (a threshold the tuner can
  set): then the per-block cost of clearing and merging the bins is small
  beside the atomics it keeps on chip.  The grid is one wave of blocks, so
  the merges stay few.
* **global**: atomics straight into the destinations.

The destinations are consumed, so they are updated in place and are the
plan's results.  A value is combined with the hardware atomic of its
operator where there is one, else by compare and swap around the operator
(`futgen_atomic_combine`, `templates/kernels.cu.j2`) for values of 32 and
64 bits (`HIST_PRIMS`), else (tuples, 8- and 16-bit values) under a lock
per bin, in the global kernel only.
"""

from __future__ import annotations

import numpy as np

from futgen.codegen.cuda import imp, render
from futgen.codegen.cuda.common import BLOCK, SegCompile, decompose, pointer
from futgen.codegen.cuda.lower import KernelLowering, c_name
from futgen.codegen.cuda.skeleton import (
    ValueType,
    kernel_params,
    neutral,
    operator_functor,
    render_skeleton,
    value_type,
)
from futgen.codegen.plan import DTYPES, KernelPlan, Temp
from futgen.core import ir
from futgen.gpu.ir import HIST_PRIMS, SegBinOp, SegHist

# Shared memory a block may take without opting in (bytes).
SHARED_BYTES = 48 * 1024
# Default of the threshold on elements per bin from which blocks use shared memory.
SHARED_ELEMENTS_PER_BIN = 16

# The compare-and-swap word of each type in HIST_PRIMS.
WORDS = {"i32": "unsigned int", "u32": "unsigned int", "f32": "unsigned int",
         "i64": "unsigned long long", "u64": "unsigned long long",
         "f64": "unsigned long long"}

_INT_CASTS = {"i32": "int", "u32": "unsigned int", "i64": "long long",
              "u64": "unsigned long long"}
_BITS_CASTS = {"i32": "unsigned int", "u32": "unsigned int", "i64": "unsigned long long",
               "u64": "unsigned long long"}


def native_atomic(op: ir.HistOp, prim: str) -> str | None:
    """The hardware atomic of `op` on `prim` as C over `@p` and `@v`, or None."""
    b = ir.lambda_binop(op.lam)
    if b is None:
        return None
    if b.op == "+" and prim in ("f32", "f64"):
        return "atomicAdd(@p, @v)"
    fn = {"+": "atomicAdd", "max": "atomicMax", "min": "atomicMin",
          "&": "atomicAnd", "|": "atomicOr", "^": "atomicXor"}.get(b.op)
    if fn is None or prim not in _INT_CASTS:
        return None
    # Sums and bitwise operators act on the bits; the order ones on the signed type.
    cast = _INT_CASTS[prim] if b.op in ("max", "min") else _BITS_CASTS[prim]
    return f"{fn}(({cast} *)@p, ({cast})@v)"


def compile_seghist(sc: SegCompile, op: SegHist) -> KernelPlan:
    """The plan of `let (pat) = seghist ...`."""
    prims = [_prims(sc, o) for o in op.ops]
    n = sc.host_dim(op.space.dims[0])
    bins = [f"{c_name(o.dests[0])}.shape[0]" for o in op.ops]
    results = [("array", c_name(d)) for o in op.ops for d in o.dests]
    if not all(_atomic(p) for p in prims):
        locks = [sc.temp("locks", "i32", f"max(1, {b})", zeroed=True) if not _atomic(p) else None
                 for b, p in zip(bins, prims)]
        _kernel(sc, op, prims, shared=False, threads=n, when=None, locks=locks)
        return sc.plan(results)
    sizes = [np.dtype(DTYPES[p[0]]).itemsize for p in prims]
    shared_bytes = " + ".join(f"-(-({b}) * {z} // 8) * 8" for b, z in zip(bins, sizes))
    # T * bins <= n exactly when T <= n // bins (T, n, bins integers, bins > 0).
    use_shared = sc.threshold("seghist_shared", SHARED_ELEMENTS_PER_BIN,
                              "elements per bin from which blocks build histograms in shared "
                              "memory", par=f"({n}) // max(1, {' + '.join(bins)})",
                              requires=f"({shared_bytes}) <= {SHARED_BYTES}")
    wave = f"(b.max_grid({BLOCK}) // 8)"
    _kernel(sc, op, prims, shared=True, threads=f"min({n}, {wave} * {BLOCK})",
            when=use_shared, shared_bytes=shared_bytes)
    _kernel(sc, op, prims, shared=False, threads=n, when=f"not ({use_shared})")
    return sc.plan(results)


def _prims(sc: SegCompile, op: ir.HistOp) -> list[str]:
    """The element types of a histogram's destinations."""
    out = []
    for d in op.dests:
        t = sc.types[d]
        assert isinstance(t, ir.ArrayT), t
        out.append(t.elem)
    return out


def _atomic(prims: list[str]) -> bool:
    """Whether a value of these components is combined by an atomic (else a lock)."""
    return len(prims) == 1 and prims[0] in HIST_PRIMS


def _kernel(sc: SegCompile, op: SegHist, prims: list[list[str]], *, shared: bool,
            threads: str, when: str | None, shared_bytes: str = "0",
            locks: list[Temp | None] | None = None) -> None:
    low = sc.lowering()
    name = sc.fresh("seghist_shared" if shared else "seghist")
    hists, vts = [], []
    for k, (o, ps) in enumerate(zip(op.ops, prims)):
        vt = value_type(sc, ps)
        vts.append(vt)
        bop = SegBinOp(o.lam, o.nes, commutative=True)
        functor = operator_functor(sc, low, [bop], vt)
        sc.sources.append(vt.source + functor.source)
        arrays = [low.array(d) for d in o.dests]
        dests = [name for name, _, _ in arrays]
        lock = locks[k] if locks else None
        hists.append({"ctype": vt.name, "word": WORDS.get(ps[0]), "dests": dests,
                      "fields": vt.fields, "bins": render.expr(arrays[0][2][0]),
                      "op": functor.name,
                      "op_init": functor.init, "neutral": neutral(low, [bop], vt),
                      "native": native_atomic(o, ps[0]) if _atomic(ps) else None,
                      "lock": None if lock is None else pointer(low, lock),
                      "into": f"&sub{k}[bin{k}]" if shared else f"&{dests[0]}[bin{k}]"})
    source = render_skeleton("histogram", name=name, block=BLOCK, shared=shared, hists=hists,
                             n=render.expr(low.subexp(op.space.dims[0])),
                             element=_element(sc, low, op, vts), params=kernel_params(low))
    sc.add_kernel(name, source, low, threads, when=when, shared_bytes=shared_bytes)


def _element(sc: SegCompile, low: KernelLowering, op: SegHist, vts: list[ValueType]) -> str:
    """The body at flat index `i`: bins into `bin<k>`, values into `x<k>`'s components."""
    stms: list[imp.Stm] = decompose(low, imp.Var("i"), op.space.gtids,
                                    [low.subexp(d) for d in op.space.dims])
    outs = [f"bin{k}" for k in range(len(op.ops))]
    outs += [vt.field(f"x{k}", j) for k, vt in enumerate(vts) for j in range(len(vt.fields))]
    stms += low.region((), op.body, outs, sc.fresh("element_failed"))
    return "\n".join(render.stms([imp.Block(tuple(stms))], 2))
