"""SegMap and SegScatter: one grid-stride loop over the flattened segment space.

Each thread takes flat indices `blockIdx.x * blockDim.x + threadIdx.x`,
then steps by the whole grid, so the kernel is correct for any grid the
runtime picks (it caps the grid).  The flat index is decomposed into the
space's gtids (row-major), the body runs, and result `i` is stored at the
flat index of output `i`.  There are no barriers, so a failing thread simply
returns.

When the threads build private arrays (`private.py`), the launch asks for
at most the runtime's grid cap of threads, so the host knows how many there
are and sizes every private buffer to that many copies of the array; an
array result is copied from its buffer into the thread's row of the output.

A SegMap over two dimensions whose threads fold a loop over arrays each
invariant to one dimension (a matrix product) also gets a tiled kernel
(`tiling.py`), launched instead when both dimensions are large enough (with
tiles of 128 x 128 points, or 64 x 64 for products with fewer points; with
the loop split across blocks where even those tiles are fewer than SMs).

A SegScatter runs the same loop; each point stores its value into the
destination at its indices when they are in bounds.  The destinations are
updated in place (they are consumed), so they are the plan's results.
"""

from __future__ import annotations

from functools import partial, reduce

from futgen.codegen.cuda import imp
from futgen.codegen.cuda.common import (
    BDIM,
    BID,
    BLOCK,
    GDIM,
    TID,
    SegCompile,
    decompose,
    early_exit,
    grid_stride,
    pointer,
)
from futgen.codegen.cuda.imp import Bin, Stm
from futgen.codegen.cuda.lower import KernelLowering, Out, c_name
from futgen.codegen.cuda.private import Alloc, Buffer, PrivateMemory, product, row_major
from futgen.codegen.cuda.tiling import (
    BLOCK_SIDE,
    LARGE_TILES_FROM,
    MIN_SIDE,
    SPLIT_BELOW_TILES,
    SPLIT_FROM,
    SPLIT_TILE_32_FROM,
    SPLIT_TILE_64_FROM,
    SQUARE_TILES_FROM,
    Tileable,
    compile_tiled,
    tileable,
)
from futgen.codegen.cuda.transposed import compile_transposed, tiled_when
from futgen.codegen.plan import CTYPES, KernelPlan, branch_conditions
from futgen.core import ir
from futgen.gpu.ir import SegMap, SegScatter, binds_arrays
from futgen.gpu.transposed_reads import transposed_reads


def compile_segmap(sc: SegCompile, op: SegMap) -> KernelPlan:
    """The plan of `let (pat) = segmap ...`: one kernel, one output per result."""
    low = sc.lowering()
    prims = [t.name if isinstance(t, ir.Prim) else t.elem for t in op.ret]
    outs = [sc.array(f"{p.name.base}_mem", prim, (*op.space.dims, *getattr(t, "shape", ())),
                     output=True)
            for p, prim, t in zip(sc.stm.pat, prims, op.ret)]
    out_ptrs = [pointer(low, t) for t in outs]
    dims = [low.subexp(d) for d in op.space.dims]
    flat = low.fresh("flat")
    threads = sc.host_product(op.space.dims)
    block: int | str = BLOCK
    if binds_arrays(op.body) or any(isinstance(t, ir.ArrayT) for t in op.ret):
        threads = f"min({threads}, b.max_grid({BLOCK}) * {BLOCK})"
        low.mem = PrivateMemory(op.body, _allocator(sc, low, threads),
                                Bin("+", Bin("*", BID, BDIM), TID), Bin("*", GDIM, BDIM))
    res: list[Out] = [
        low.fresh("res") if isinstance(t, ir.Prim)
        else partial(_store_row, low, o, imp.Var(flat)) for t, o in zip(op.ret, out_ptrs)]
    inner: list[Stm] = decompose(low, imp.Var(flat), op.space.gtids, dims)
    low.flat_space = (imp.Var(flat), op.space.gtids, op.space.dims)
    inner += [imp.Decl(CTYPES[p], r) for p, r in zip(prims, res) if isinstance(r, str)]
    inner += low.region((), op.body, res, None)
    inner += [imp.Store(o, imp.Var(flat), imp.Var(r))
              for o, r in zip(out_ptrs, res) if isinstance(r, str)]
    tiling = tileable(op, sc.types)
    when = None
    if tiling is not None:
        when = f"not ({_tiled(sc, op, tiling, outs)})"
    elif tiles := transposed_reads(op):
        when = tiled_when(sc, op)
        compile_transposed(sc, op, tiles, outs, when)
        when = f"not ({when})"
    if low.mem is None:  # per-thread memory is sized for blocks of BLOCK
        block = sc.block_size("segmap_tblock_size", "threads per block of the plain kernel")
    sc.kernel("segmap", low, _grid_stride(low, dims, flat, inner), threads, block, when=when)
    return sc.plan([("array", t.name) for t in outs])


def _tiled(sc: SegCompile, op: SegMap, tiling: Tileable, outs: list) -> str:
    """Adds the tiled kernels; the host condition under which one of them runs.

    Tiles need both dimensions at least `segmap_tile_<k>`.  With too few
    tiles of 64 x 64 to fill the device (fewer than `segmap_unsplit_<k>`)
    a loop of at least SPLIT_FROM iterations is split across blocks
    (split-K).  Else, where a dimension is
    shorter than `segmap_tile_square_<k>`, tiles are 16 points along it
    (register tiles of 1 x 8 or 8 x 1).  Where a thread's register tile is
    8 x 8, a second kernel with 4 x 4 (blocks of 64 x 64 points) serves
    products of fewer than `segmap_tile_large_<k>` points."""
    n, p = (sc.host_dim(d) for d in op.space.dims)
    tiled = sc.threshold("segmap_tile", MIN_SIDE,
                         "size of both dimensions from which block and register tiles are used",
                         par=f"min({n}, {p})")
    whole = ((tiled, True),)  # where each block runs the whole loop
    if tiling.split_op is not None:
        tiles = f"-(-({n}) // {4 * BLOCK_SIDE}) * -(-({p}) // {4 * BLOCK_SIDE})"
        unsplit = sc.threshold("segmap_unsplit", SPLIT_BELOW_TILES,
                               "tiles of 64 x 64 from which each block runs the whole loop "
                               "(below: the loop is split across blocks)",
                               par=tiles, under=whole,
                               holds=f"{sc.host_dim(tiling.loop.exp.form.bound)} < {SPLIT_FROM}")
        _split_kernels(sc, op, tiling, outs, whole + ((unsplit, False),))
        whole += ((unsplit, True),)
    reg = tiling.reg()
    square = sc.threshold("segmap_tile_square", SQUARE_TILES_FROM,
                          "size of both dimensions from which tiles are square (below: 16 "
                          "points along the shorter one)", par=f"min({n}, {p})", under=whole)
    narrow = _conjunction(whole + ((square, False),))
    compile_tiled(sc, op, tiling, outs, f"{narrow} and {n} <= {p}", (1, reg))
    compile_tiled(sc, op, tiling, outs, f"{narrow} and {n} > {p}", (reg, 1))
    whole += ((square, True),)
    if reg < 8:
        compile_tiled(sc, op, tiling, outs, _conjunction(whole), (reg, reg))
        return tiled
    large = sc.threshold("segmap_tile_large", LARGE_TILES_FROM,
                         "points from which tiles of 128 x 128 are used, rather than 64 x 64",
                         par=f"{n} * {p}", under=whole)
    compile_tiled(sc, op, tiling, outs, large, (reg, reg))
    compile_tiled(sc, op, tiling, outs, _conjunction(whole + ((large, False),)),
                  (reg // 2, reg // 2))
    return tiled


def _split_kernels(sc: SegCompile, op: SegMap, tiling: Tileable, outs: list,
                   under: tuple[tuple[str, bool], ...]) -> None:
    """Adds the split kernels, launched where the guards of `under` take
    their branches: register tiles of 4 x 4 (blocks of 64 x 64 points) where
    both dimensions are at least `segmap_split_64_<k>`, else 2 x 2 where
    they are at least `segmap_split_32_<k>`, else 1 x 1, so that a block's
    threads are not mostly padding where there are few outputs."""
    side = "min({}, {})".format(*(sc.host_dim(d) for d in op.space.dims))
    by_side = under
    for reg, default in ((4, SPLIT_TILE_64_FROM), (2, SPLIT_TILE_32_FROM)):
        larger = sc.threshold(f"segmap_split_{16 * reg}", default,
                              f"size of both dimensions from which the split kernel's "
                              f"tiles are {16 * reg} x {16 * reg}", par=side, under=by_side)
        compile_tiled(sc, op, tiling, outs, _conjunction(by_side + ((larger, True),)),
                      (reg, reg), split=True)
        by_side += ((larger, False),)
    compile_tiled(sc, op, tiling, outs, _conjunction(by_side), (1, 1), split=True)


def _conjunction(guards: tuple[tuple[str, bool], ...]) -> str:
    """The host condition that each guard (key, branch) takes its branch."""
    return " and ".join(branch_conditions(guards))


def compile_segscatter(sc: SegCompile, op: SegScatter) -> KernelPlan:
    """The plan of `let (pat) = segscatter ...`: one kernel writing in place."""
    low = sc.lowering()
    dims = [low.subexp(d) for d in op.space.dims]
    flat = low.fresh("flat")
    res = [low.fresh("res") for _ in op.ret]
    inner: list[Stm] = decompose(low, imp.Var(flat), op.space.gtids, dims)
    low.flat_space = (imp.Var(flat), op.space.gtids, op.space.dims)
    inner += [imp.Decl(CTYPES[t.name], r) for t, r in zip(op.ret, res)]  # type: ignore[union-attr]
    inner += low.region((), op.body, res, None)
    k = 0
    for d in op.dests:
        dest, _, shape = low.array(d.arr)
        idx = [imp.Var(r) for r in res[k:k + d.num_idx]]
        inside = [Bin("&&", Bin(">=", i, imp.Lit("(int64_t)0")), Bin("<", i, n))
                  for i, n in zip(idx, shape)]
        inner.append(imp.If(reduce(partial(Bin, "&&"), inside),
                            (imp.Store(dest, row_major(idx, shape), imp.Var(res[k + d.num_idx])),)))
        k += d.num_idx + 1
    sc.kernel("segscatter", low, _grid_stride(low, dims, flat, inner),
              sc.host_product(op.space.dims))
    return sc.plan([("array", c_name(d.arr)) for d in op.dests])


def _grid_stride(low: KernelLowering, dims: list[imp.Expr], flat: str,
                 inner: list[Stm]) -> list[Stm]:
    """A kernel body running `inner` at every flat index `flat` of `dims`."""
    total = low.fresh("total")
    return [
        early_exit(barriers=False),
        imp.Decl("int64_t", total, product(dims)),
        grid_stride(flat, Bin("+", Bin("*", BID, BDIM), TID), imp.Var(total), inner,
                    Bin("*", GDIM, BDIM)),
    ]


def _allocator(sc: SegCompile, low: KernelLowering, threads: str) -> Alloc:
    """Private buffers as plan temporaries: one array per thread launched
    (the runtime rounds the launch up to whole blocks)."""
    lanes = f"(-(-({threads}) // {BLOCK}) * {BLOCK})"

    def alloc(prim: str, shape: tuple[ir.SubExp, ...]) -> str:
        size = " * ".join([lanes, *(f"({sc.host_dim(d)})" for d in shape)])
        return pointer(low, sc.temp("private", prim, size))

    return alloc


def _store_row(low: KernelLowering, out: str, flat: imp.Expr, buf: Buffer) -> list[Stm]:
    """Copies a thread's private array into row `flat` of output `out`."""
    size = product([low.subexp(d) for d in buf.shape])
    j = low.fresh("j")
    value = low.mem.load(buf, imp.Var(j))  # type: ignore[union-attr]
    store = imp.Store(out, Bin("+", Bin("*", flat, size), imp.Var(j)), value)
    return [imp.For("int64_t", j, imp.Lit("(int64_t)0"), size, (store,))]
