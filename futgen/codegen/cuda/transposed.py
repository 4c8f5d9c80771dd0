"""SegMaps that read arrays across their threads, run in shared-memory tiles.

`futgen.gpu.transposed_reads` finds a SegMap's reads `x[..., b + c, a]`
(`b` its innermost index, `a` the next out): read at each thread's own
point, consecutive threads read a row of `x` apart.  This kernel takes tiles
of TILE x TILE points of `(a, b)`, the outer indices fixed in a tile, blocks
a grid stride of tiles apart:

1. the block loads rows `b0 - h ... b0 + TILE + h` of each such `x`, columns
   `a0 ... a0 + TILE`, into shared memory, consecutive threads along the
   columns (coalesced), skipping elements outside `x`;
2. after a barrier, its threads run the tile's points, POINTS each,
   consecutive threads along `b` (so the other reads and the stores stay
   coalesced), reading `x` from the tile at row `b - b0 + c + h`, column
   `a - a0`; rows are padded to TILE + 1 words, so a warp reading down a
   column hits 32 banks.

Where no tile depends on the outer indices (an array every outer point reads
alike, as LocVolCalib's `mu` and `var`), a block keeps its tiles for a chunk
of consecutive outer points: steps 1 and its barrier once, step 2 for each.
The chunk is as long as leaves two waves of blocks (at most MAX_CHUNK).

The program's bounds checks stay: a read that passes them lies in the tile.
A thread that fails flags it (the first failure is the one reported) and
stores nothing; the barrier before the next tile lets all the block's
threads leave together.
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
    imax,
    imin,
)
from futgen.codegen.cuda.imp import Bin, Call, Cast, Expr, Lit, Stm
from futgen.codegen.cuda.lower import KernelLowering, c_name
from futgen.codegen.cuda.private import product, row_major
from futgen.codegen.plan import CTYPES, Temp
from futgen.core import ir
from futgen.gpu.ir import SegMap
from futgen.gpu.transposed_reads import TILE, TileRead

THREADS = 256  # a block's threads
POINTS = TILE * TILE // THREADS  # points of a tile each thread runs
# Both dimensions of the tiles at least this many, or the plain kernel runs:
# a tile of TILE x TILE over fewer points leaves most of its threads idle.
TILED_FROM = 16
# Outer points a block runs on one load of tiles that do not depend on them.
MAX_CHUNK = 16
FAILED = "failed"
TID32 = Cast("int32_t", Lit("threadIdx.x"))


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
    outer = op.space.gtids[:-2]
    shared_by_outer = bool(outer) and not any(
        isinstance(se, ir.Var) and se.name in outer for tr in tiles for se in tr.lead)
    n_a, n_b = dims[-2], dims[-1]
    t, al, bl = low.fresh("tile"), low.fresh("al"), low.fresh("bl")
    a0, b0 = low.fresh("a0"), low.fresh("b0")
    tiles_a, tiles_b = _ceil_tiles(n_a), _ceil_tiles(n_b)
    rest = low.fresh("rest")
    # A tile's coordinates in 32 bits: there are fewer than 2^32 tiles of
    # 1024 points in any memory, and a 64-bit division costs some 70
    # instructions (three a tile were a sixth of the kernel's).
    tu, ta, tb = low.fresh("t"), low.fresh("tiles_a"), low.fresh("tiles_b")
    inner: list[Stm] = [
        imp.Decl("uint32_t", tu, Cast("uint32_t", imp.Var(t))),
        imp.Decl("uint32_t", ta, Cast("uint32_t", tiles_a)),
        imp.Decl("uint32_t", tb, Cast("uint32_t", tiles_b)),
        imp.Decl("int64_t", a0, Bin("*", Cast("int64_t", Bin("%", Bin("/", imp.Var(tu), imp.Var(tb)),
                                                              imp.Var(ta))),
                                    Lit(f"(int64_t){TILE}"))),
        imp.Decl("int64_t", b0, Bin("*", Cast("int64_t", Bin("%", imp.Var(tu), imp.Var(tb))),
                                    Lit(f"(int64_t){TILE}"))),
        imp.Decl("int64_t", rest, Cast("int64_t", Bin("/", imp.Var(tu),
                                                      Bin("*", imp.Var(ta), imp.Var(tb)))), True),
    ]
    if outer and not shared_by_outer:
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
    host_ab = " * ".join(f"(-(-({sc.host_dim(d)}) // {TILE}))" for d in op.space.dims[-2:])
    host_outer = sc.host_product(op.space.dims[:-2])
    outer_tiles: Expr = product(dims[:-2])
    if shared_by_outer:
        chunk_host = (f"max(1, min({MAX_CHUNK}, ({host_outer}) * {host_ab} // "
                      f"(2 * max(1, b.resident_threads // {THREADS}))))")
        chunk = imp.Var(low.add_param(low.fresh("chunk"), "int64_t", False, chunk_host))
        o = low.fresh("outer")
        bind_outer = decompose(low, imp.Var(o), outer, dims[:-2])  # before the body's lowering
        points = _chunk_of_outer_points(
            low, o, product(dims[:-2]), imp.Var(rest), chunk,
            [*bind_outer, *_points(low, op, out_ptrs, dims, imp.Var(a0), imp.Var(b0), al, bl)])
        outer_tiles = Bin("/", Bin("+", outer_tiles, Bin("-", chunk, Lit("(int64_t)1"))), chunk)
        host_outer = f"(-(-({host_outer}) // {chunk_host}))"
    else:
        points = _points(low, op, out_ptrs, dims, imp.Var(a0), imp.Var(b0), al, bl)
    inner += points
    total = low.fresh("tiles")
    shared = [imp.Shared(CTYPES[low.type_of(tr.arr).elem], name,  # type: ignore[union-attr]
                         (TILE + 2 * tr.halo) * (TILE + 1)) for name, tr in views]
    body = [*shared, early_exit(barriers=True), imp.Decl("bool", FAILED, Lit("false")),
            imp.Decl("int64_t", total, Bin("*", outer_tiles, Bin("*", tiles_a, tiles_b))),
            grid_stride(t, BID, imp.Var(total), inner, GDIM)]
    sc.kernel("transposed", low, body, f"{host_outer} * {host_ab} * {THREADS}", THREADS,
              when=when, max_threads=THREADS)


def _chunk_of_outer_points(low: KernelLowering, o: str, n: Expr, rest: Expr, chunk: Expr,
                           body: list[Stm]) -> list[Stm]:
    """`body` for each outer point `o` of chunk `rest` (`chunk` of the `n`,
    the last chunk fewer), on the tiles already loaded."""
    end = low.fresh("end")
    first = Bin("*", rest, chunk)
    return [imp.Decl("int64_t", end, imin(Bin("+", first, chunk), n)),
            imp.For("int64_t", o, first, imp.Var(end), tuple(body), unroll=1)]


def _points(low: KernelLowering, op: SegMap, outs: list[str], dims: list[Expr],
            a0: Expr, b0: Expr, al: str, bl: str) -> list[Stm]:
    """The thread's POINTS points of the tile, then their stores.  The loop is
    unrolled, each body runs unguarded (at the tile's last point where it
    lies past the space's edge), and the stores wait for all of them, so
    that nvcc may issue every point's global reads at once.  (Measured on
    LocVolCalib, this alone changed nothing against a point at a time; the
    32-bit tile coordinates did.)  `res` holds each result at each point."""
    *_, a, b = op.space.gtids
    n_a, n_b = dims[-2], dims[-1]
    j, k = low.fresh("j"), low.fresh("j")
    res = [low.fresh("res") for _ in op.ret]

    def coords(j: str) -> tuple[Expr, Expr]:
        rows = Bin("+", Bin(">>", TID32, Lit("5")), Bin("*", imp.Var(j), Lit(str(THREADS // 32))))
        return (Bin("+", a0, Cast("int64_t", rows)),
                Bin("+", b0, Cast("int64_t", Bin("&", TID32, Lit("31")))))

    ga, gb = coords(j)
    last = Lit("(int64_t)1")
    point = [imp.Decl("int64_t", low.bind(a, ir.Prim("i64")), imin(ga, Bin("-", n_a, last)), True),
             imp.Decl("int64_t", low.bind(b, ir.Prim("i64")), imin(gb, Bin("-", n_b, last)), True),
             imp.Decl("int32_t", al, Cast("int32_t", Bin("-", imp.Var(c_name(a)), a0))),
             imp.Decl("int32_t", bl, Cast("int32_t", Bin("-", imp.Var(c_name(b)), b0)))]
    slots = [f"{r}[{j}]" for r in res]  # C lvalues: element j of each result's array
    point += low.region((), op.body, slots, low.fresh("failed"))
    ga, gb = coords(k)
    inside = Bin("&&", Bin("&&", Bin("<", ga, n_a), Bin("<", gb, n_b)), imp.Un("!", imp.Var(FAILED)))
    flat = row_major([*(imp.Var(c_name(g)) for g in op.space.gtids[:-2]), ga, gb], dims)
    stores = tuple(imp.Store(o, flat, imp.Load(r, imp.Var(k))) for o, r in zip(outs, res))
    return [*(imp.Decl(CTYPES[t.name], f"{r}[{POINTS}]")  # type: ignore[union-attr]
              for t, r in zip(op.ret, res)),
            imp.For("int32_t", j, Lit("0"), Lit(str(POINTS)), tuple(point), unroll=POINTS),
            imp.For("int32_t", k, Lit("0"), Lit(str(POINTS)), (imp.If(inside, stores),),
                    unroll=POINTS)]


def _ceil_tiles(n: Expr) -> Expr:
    return Bin("/", Bin("+", n, Lit(f"(int64_t){TILE - 1}")), Lit(f"(int64_t){TILE}"))


def _load(low: KernelLowering, tr: TileRead, name: str, a0: Expr, b0: Expr) -> list[Stm]:
    """The block's loads of tile `name`: rows b0 - halo ... b0 + TILE + halo
    of `tr.arr` at `tr.lead`, columns a0 ... a0 + TILE, where they exist.
    Which rows and columns exist, and where the tile starts, are worked out
    once; each element then costs 32-bit arithmetic and one multiply."""
    cname, _, xdims = low.array(tr.arr)
    h, rows_all = tr.halo, TILE + 2 * tr.halo
    e, k = low.fresh("e"), low.fresh("k")
    base, lo, hi, cols = (low.fresh(x) for x in ("base", "lo", "hi", "cols"))
    lead = [Cast("int64_t", low.subexp(se)) for se in tr.lead]
    top = Bin("-", b0, Lit(f"(int64_t){h}"))
    ok: Expr = Lit("true")
    for i, n in zip(lead, xdims):
        ok = Bin("&&", ok, Bin("&&", Bin(">=", i, Lit("0")), Bin("<", i, n)))

    zero = Lit("(int64_t)0")

    def clamp(x: Expr, most: int) -> Expr:  # into [0, most], as an int32_t
        return Cast("int32_t", imin(imax(x, zero), Lit(f"(int64_t){most}")))

    setup = [
        imp.Decl("int64_t", base, row_major([*lead, top, a0], xdims)),
        imp.Decl("int32_t", lo, Cast("int32_t", imax(Bin("-", Lit(f"(int64_t){h}"), b0), zero))),
        imp.Decl("int32_t", hi, imp.Cond(ok, clamp(Bin("-", xdims[-2], top), rows_all), Lit("0"))),
        imp.Decl("int32_t", cols, clamp(Bin("-", xdims[-1], a0), TILE)),
    ]
    elements = rows_all * TILE
    rows = Bin("/", imp.Var(e), Lit(str(TILE)))
    col = Bin("%", imp.Var(e), Lit(str(TILE)))
    exists = Bin("&&", Bin("&&", Bin(">=", rows, imp.Var(lo)), Bin("<", rows, imp.Var(hi))),
                 Bin("<", col, imp.Var(cols)))
    at = Bin("+", imp.Var(base), Bin("+", Bin("*", Cast("int64_t", rows), xdims[-1]),
                                     Cast("int64_t", col)))
    store = imp.Store(name, Bin("+", Bin("*", rows, Lit(str(TILE + 1))), col),
                      imp.Load(cname, at))
    # A constant trip count, unrolled: the loads go out together (their
    # stores are to shared memory, which no global read can alias).
    trips = -(-elements // THREADS)
    return [*setup, imp.For("int32_t", k, Lit("0"), Lit(str(trips)), (
        imp.Decl("int32_t", e, Bin("+", TID32, Bin("*", imp.Var(k), Lit(str(THREADS))))),
        imp.If(Bin("&&", Bin("<", imp.Var(e), Lit(str(elements))), exists), (store,))),
        unroll=trips)]
