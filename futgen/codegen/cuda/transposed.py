"""SegMaps that read arrays across their threads, run in shared-memory tiles.

`futgen.gpu.transposed_reads` finds a SegMap's reads `x[..., b + c, a]`
(`b` its innermost index, `a` the next out): read at each thread's own
point, consecutive threads read a row of `x` apart.  This kernel takes tiles
of TILE x TILE points of `(a, b)`, the outer indices fixed in a tile, blocks
a grid stride of tiles apart:

1. the block loads rows `b0 - h ... b0 + TILE + h` of each such `x`, columns
   `a0 ... a0 + TILE`, into shared memory, consecutive threads along the
   columns (coalesced), skipping elements outside `x`;
2. after a barrier, its threads run the tile's points, consecutive threads
   along `b` (so the other reads and the stores stay coalesced), reading `x`
   from the tile at row `b - b0 + c + h`, column `a - a0`; rows are padded
   to TILE + 1 words, so a warp reading down a column hits 32 banks.

The program's bounds checks stay: a read that passes them lies in the tile.
A thread that fails flags it and skips its other points; the barrier before
the next tile lets all the block's threads leave together.
"""

from __future__ import annotations

from futgen.codegen.cuda import imp
from futgen.codegen.cuda.common import (
    BID,
    GDIM,
    SegCompile,
    decompose,
    early_exit,
    grid_stride,
)
from futgen.codegen.cuda.imp import Bin, Call, Cast, Expr, Lit, Stm
from futgen.codegen.cuda.lower import KernelLowering, c_name
from futgen.codegen.cuda.private import product
from futgen.codegen.plan import CTYPES, Temp
from futgen.core import ir
from futgen.gpu.ir import SegMap
from futgen.gpu.transposed_reads import TILE, TileRead

THREADS = 256  # a block's threads: TILE * TILE / THREADS points each
# Both dimensions of the tiles at least this many, or the plain kernel runs:
# a tile of TILE x TILE over fewer points leaves most of its threads idle.
TILED_FROM = 16
FAILED = "failed"
TID32 = Cast("int32_t", Lit("threadIdx.x"))
BDIM32 = Cast("int32_t", Lit("blockDim.x"))


def tiled_when(sc: SegCompile, op: SegMap) -> str:
    """The host condition under which the tiled kernel runs."""
    n_a, n_b = (sc.host_dim(d) for d in op.space.dims[-2:])
    return f"min({n_a}, {n_b}) >= {TILED_FROM}"


def compile_transposed(sc: SegCompile, op: SegMap, tiles: tuple[TileRead, ...],
                       outs: list[Temp], when: str) -> None:
    """Adds the tiled kernel of `op` (results stored to `outs`), launched where `when`."""
    low = sc.lowering()
    low.fail_flag = FAILED
    out_ptrs = [low.add_param(t.name, CTYPES[t.prim], True, t.name) for t in outs]
    dims = [low.subexp(d) for d in op.space.dims]
    *outer, a, b = op.space.gtids
    n_a, n_b = dims[-2], dims[-1]
    t, al, bl = low.fresh("tile"), low.fresh("al"), low.fresh("bl")
    a0, b0 = low.fresh("a0"), low.fresh("b0")
    tiles_a, tiles_b = _ceil_tiles(n_a), _ceil_tiles(n_b)
    rest = low.fresh("rest")
    inner: list[Stm] = [
        imp.Decl("int64_t", a0, Bin("*", Bin("%", Bin("/", imp.Var(t), tiles_b), tiles_a),
                                    Lit(f"(int64_t){TILE}"))),
        imp.Decl("int64_t", b0, Bin("*", Bin("%", imp.Var(t), tiles_b), Lit(f"(int64_t){TILE}"))),
        imp.Decl("int64_t", rest, Bin("/", imp.Var(t), Bin("*", tiles_a, tiles_b)), True),
    ]
    if outer:
        inner += decompose(low, imp.Var(rest), outer, dims[:-2])
    inner.append(imp.If(Call("__syncthreads_or", (imp.Var(FAILED),)), (imp.Return(),)))
    views = []
    for k, tr in enumerate(tiles):
        name = low.fresh(f"tile_{k}")
        inner += _load(low, tr, name, imp.Var(a0), imp.Var(b0))
        views.append((name, tr))
    inner.append(imp.Sync())

    def staged(arr: ir.VName, sl: tuple[ir.DimIndex, ...]) -> Expr | None:
        for name, tr in views:
            c = tr.serves(arr, sl)
            if c is not None:
                row = Bin("+", imp.Var(bl), Lit(str(c + tr.halo)))
                return imp.Load(name, Bin("+", Bin("*", row, Lit(str(TILE + 1))), imp.Var(al)))
        return None

    low.staged = staged
    res = [low.fresh("res") for _ in op.ret]
    point = [imp.Decl("int64_t", low.bind(a, ir.Prim("i64")),
                      Bin("+", imp.Var(a0), Cast("int64_t", imp.Var(al))), True),
             imp.Decl("int64_t", low.bind(b, ir.Prim("i64")),
                      Bin("+", imp.Var(b0), Cast("int64_t", imp.Var(bl))), True)]
    inside = Bin("&&", Bin("<", imp.Var(c_name(a)), n_a),
                 Bin("<", imp.Var(c_name(b)), n_b))
    run: list[Stm] = [imp.Decl(CTYPES[r.name], v) for r, v in zip(op.ret, res)]  # type: ignore[union-attr]
    run += low.region((), op.body, res, low.fresh("failed"))
    flat = _flat([imp.Var(c_name(g)) for g in op.space.gtids], dims)
    run += [imp.If(imp.Un("!", imp.Var(FAILED)), tuple(imp.Store(o, flat, imp.Var(r))
                                                      for o, r in zip(out_ptrs, res)))]
    p = low.fresh("p")
    inner.append(imp.For("int32_t", p, TID32, Lit(str(TILE * TILE)), (
        imp.Decl("int32_t", bl, Bin("%", imp.Var(p), Lit(str(TILE)))),
        imp.Decl("int32_t", al, Bin("/", imp.Var(p), Lit(str(TILE)))),
        *point,
        imp.If(Bin("&&", inside, imp.Un("!", imp.Var(FAILED))), tuple(run))), BDIM32))
    total = low.fresh("tiles")
    shared = [imp.Shared(CTYPES[low.type_of(tr.arr).elem], name,  # type: ignore[union-attr]
                         (TILE + 2 * tr.halo) * (TILE + 1)) for name, tr in views]
    body = [*shared, early_exit(barriers=True), imp.Decl("bool", FAILED, Lit("false")),
            imp.Decl("int64_t", total, Bin("*", product(dims[:-2]), Bin("*", tiles_a, tiles_b))),
            grid_stride(t, BID, imp.Var(total), inner, GDIM)]
    host_tiles = " * ".join([sc.host_product(op.space.dims[:-2]),
                             *(f"(-(-({sc.host_dim(d)}) // {TILE}))"
                               for d in op.space.dims[-2:])])
    sc.kernel("transposed", low, body, f"{host_tiles} * {THREADS}", THREADS, when=when,
              max_threads=THREADS)


def _ceil_tiles(n: Expr) -> Expr:
    return Bin("/", Bin("+", n, Lit(f"(int64_t){TILE - 1}")), Lit(f"(int64_t){TILE}"))


def _flat(idx: list[Expr], dims: list[Expr]) -> Expr:
    flat = idx[0]
    for i, d in zip(idx[1:], dims[1:]):
        flat = Bin("+", Bin("*", flat, d), i)
    return flat


def _load(low: KernelLowering, tr: TileRead, name: str, a0: Expr, b0: Expr) -> list[Stm]:
    """The block's loads of tile `name`: rows b0 - halo ... b0 + TILE + halo
    of `tr.arr` at `tr.lead`, columns a0 ... a0 + TILE, where they exist."""
    cname, _, xdims = low.array(tr.arr)
    e, row, col = low.fresh("e"), low.fresh("row"), low.fresh("col")
    lead = [Cast("int64_t", low.subexp(se)) for se in tr.lead]
    at = [*lead, imp.Var(row), imp.Var(col)]
    exists = Bin("&&", Bin(">=", imp.Var(row), Lit("0")), Bin("<", imp.Var(row), xdims[-2]))
    exists = Bin("&&", exists, Bin("<", imp.Var(col), xdims[-1]))
    for i, n in zip(lead, xdims):
        exists = Bin("&&", exists, Bin("&&", Bin(">=", i, Lit("0")), Bin("<", i, n)))
    rows = Bin("/", imp.Var(e), Lit(str(TILE)))
    cols = Bin("%", imp.Var(e), Lit(str(TILE)))
    store = imp.Store(name, Bin("+", Bin("*", rows, Lit(str(TILE + 1))), cols),
                      imp.Load(cname, _flat(at, xdims)))
    return [imp.For("int32_t", e, TID32, Lit(str((TILE + 2 * tr.halo) * TILE)), (
        imp.Decl("int64_t", row, Bin("-", Bin("+", b0, Cast("int64_t", rows)),
                                     Lit(f"(int64_t){tr.halo}"))),
        imp.Decl("int64_t", col, Bin("+", a0, Cast("int64_t", cols))),
        imp.If(exists, (store,))), BDIM32)]
