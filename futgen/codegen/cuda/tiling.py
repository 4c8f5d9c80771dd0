"""Block and register tiling of a SegMap that folds a loop over arrays invariant
to one of its two dimensions (the thesis's chapter 9.2; Futhark's TileLoops).

Matrix multiplication flattens to a 2-D SegMap whose body is one scalar loop:

    segmap (g0 < n, g1 < p) { loop (acc = 0) for i < m do
                                { let a = A[g0, i]  let b = B[i, g1]  in acc + a * b } }

Each of `A[g0, i]` is read by all p threads of row g0, each `B[i, g1]` by
all n of column g1.  `tileable` recognises such a body: one `for` loop with
scalar accumulators, an invariant trip count and initial values, whose
array reads each name the loop index and exactly one of the two thread
indices (otherwise invariants), and whose other statements use neither the
thread indices nor the loop index (they combine the read values into the
accumulators) and cannot fail (the kernel runs them on a tile's padding too).  Statements before the loop that it does not use, and those
after it, form the epilogue, run per point once the loop is done.

`compile_tiled` renders `templates/cuda/tiled_redomap.cu.j2`: shared-memory
tiles of the reads, loaded coalesced along each array's contiguous index,
and a register tile of accumulators per thread.  The plan launches it when
both dimensions are at least `segmap_tile_<k>` (a threshold the tuner can
set; 8 by default), else the plain SegMap kernel; with a register tile of 8 x 8 points
when there are enough of them (`segmap_tile_large_<k>`), else 4 x 4.

Split-K: where even 4 x 4 register tiles give fewer blocks than the device
has SMs (fewer than `segmap_unsplit_<k>`, default 132; a product of a few long rows and
columns), a loop that is a sum
(`split_op`: its one accumulator's new value is `acc + v`, `v` not reading
`acc`) is split into chunks that blocks take side by side; a second kernel
adds each point's partial sums and runs the epilogue (`split_count` says
how many chunks).  Its register tiles shrink with the outputs, to 2 x 2
and 1 x 1 (tiles of 32 x 32 and 16 x 16 points).
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass

import numpy as np

from futgen.codegen.cuda import imp, render
from futgen.codegen.cuda.common import BLOCK, SegCompile
from futgen.codegen.cuda.lower import KernelLowering
from futgen.codegen.cuda.skeleton import kernel_params, render_skeleton
from futgen.codegen.plan import CTYPES, DTYPES, Temp, TileSize
from futgen.core import ir
from futgen.flatten.names import binders, free_vars
from futgen.gpu.ir import SegMap, binds_arrays

BLOCK_SIDE = 16  # threads per side of a block: BLOCK = BLOCK_SIDE ** 2
REG = 8  # points per side of a thread's register tile
TK = 8  # loop iterations per shared-memory chunk, by default
# The chunk lengths a tiled kernel may be compiled with (its tunable tile
# size, `segmap_tile_size_<k>`): those that fit STATIC_SHARED and divide
# each chunk's loads evenly among the block's threads.  Longer chunks mean
# fewer barriers but more registers holding the next chunk.
TILE_KS = (8, 16, 32)
STATIC_SHARED = 48 * 1024  # bytes of static shared memory a kernel may have
# Blocks of BLOCK threads each SM must fit, by register tile size: the
# registers a thread may use.  8 x 8 and 4 x 4 tiles get up to 128 (4 x 4
# at 80 spilled a little: with 128, H200, the 4 x 4 kernels took 26.1
# against 27.6 µs at 1024 x 1024 outputs, 27.6 against 29.8 split at n = 7
# of the matrix family, once their loads were no longer checked one by
# one); 2 x 2 and 1 x 1 tiles of one 4-byte accumulator need no more than
# 64 without spilling, and the split kernels they serve wait on memory, so
# more of their warps hide latency (8-byte ones keep 2 blocks).
MIN_BLOCKS = {64: 2, 16: 2, 8: 2, 4: 4, 1: 4}  # by points in a register tile
# The split kernel's chunks: few tiles, so a block's long run of the loop is
# what must go fast; longer chunks give more work between barriers and load
# 128 bytes of a row at a time where the loop index is contiguous.
SPLIT_TK = 16
SPLIT_BLOCKS_PER_SM = 4
COMBINE_PER_THREAD = 4  # partial sums a thread of the combining kernel adds
COMBINE_THREADS = 1 << 17  # the combining kernel's threads, where points are few
# Default of the threshold: both dimensions at least this.  32 x 32 outputs
# of a long loop (the matrix family's n = 5, 2^18 products each) took 0.175
# ms tiled and split, 93 ms a thread per output (H200, 2026-11-25); 8 x 8
# outputs of 2^22 products took 0.47 ms split in tiles of 16 x 16 (three
# quarters of the threads idle), 1117 ms a thread per output, and 0.58 ms
# flattened (2026-11-26).  The tuner tunes the version guard above this one
# with it at its default, so below it the outer version would lose to the
# flattened one at every size and never be chosen.
MIN_SIDE = 8
# Defaults of the thresholds on the smaller dimension from which the split
# kernel's tiles are 64 x 64 (4 x 4 register tiles) and 32 x 32 (2 x 2):
# below them, most of a larger tile's threads would compute padding.
SPLIT_TILE_64_FROM = 64
SPLIT_TILE_32_FROM = 32
# Default of the threshold on the smaller dimension from which unsplit tiles
# are square; below it, 16 points along that dimension (16 x 2^20 outputs:
# a square tile of 64 x 64 would be three quarters padding).
SQUARE_TILES_FROM = 32
# Default of the threshold on n * p from which 8 x 8 register tiles (blocks of
# 128 x 128) are used rather than 4 x 4: 2048^2, where the large blocks are
# two per SM of an H100.
LARGE_TILES_FROM = 2048 * 2048
# Default of the threshold on tiles of 64 x 64 from which a summing loop is
# not split across blocks (below it, it is): the SMs of an H100 or H200 (one
# tile each would leave the device half idle; the split gives each SM
# SPLIT_BLOCKS_PER_SM blocks).
SPLIT_BELOW_TILES = 132
# Loops shorter than this are not split whatever the tiles: a loop of 128
# iterations split in two chunks, 64 tiles at 512 x 512 outputs, took 31.6
# µs with its combining kernel against 24.2 unsplit (H200, 2026-11-26); at
# 512 iterations split in eight (16 tiles) the split kernel is the faster.
SPLIT_FROM = 512


@dataclass(frozen=True)
class Read:
    """An array read of the loop body: `dim` is the thread index it names."""

    stm: ir.Stm
    dim: int
    k_contiguous: bool  # the loop index is the array's last index


@dataclass(frozen=True)
class Tileable:
    loop: ir.Stm
    reads: tuple[Read, ...]
    step: tuple[ir.Stm, ...]  # the rest of the loop body
    epilogue: tuple[ir.Stm, ...]
    aliases: tuple[tuple[ir.VName, int], ...]  # copies of a thread index (`let x = g1`)
    split_op: str | None = None  # the loop's reduction operator, if it may be split

    def reg(self) -> int:
        """Points per side of a thread's register tile: 8, or 4 where 64
        accumulators would not fit in registers."""
        loop = self.loop.exp
        assert isinstance(loop, ir.Loop)
        return REG if len(loop.merge) == 1 and all(
            p.type.name in ("f32", "i32", "u32") for p, _ in loop.merge) else REG // 2


def tileable(op: SegMap, types: dict[ir.VName, ir.Type]) -> Tileable | None:
    """The tiling of `op` (see the module docstring), or None."""
    if (len(op.space.dims) != 2 or binds_arrays(op.body)
            or not all(isinstance(t, ir.Prim) for t in op.ret)):
        return None
    loops = [k for k, s in enumerate(op.body.stms) if isinstance(s.exp, ir.Loop)]
    if len(loops) != 1:
        return None
    stm = op.body.stms[loops[0]]
    loop = stm.exp
    assert isinstance(loop, ir.Loop)
    before = op.body.stms[:loops[0]]
    gtids = op.space.gtids
    aliases = {s.pat[0].name: gtids.index(s.exp.se.name) for s in before
               if isinstance(s.exp, ir.SubExpOp) and isinstance(s.exp.se, ir.Var)
               and s.exp.se.name in gtids}
    local = set(binders(op.body)) | set(gtids)
    if (not isinstance(loop.form, ir.ForLoop)
            or free_vars(loop.form.bound) & local
            or any(not isinstance(p.type, ir.Prim) or (free_vars(v) & local)
                   for p, v in loop.merge)
            or (free_vars(stm.exp) & set(binders(ir.Body(before, ())))) - set(aliases)):
        return None
    reads, step = [], []
    i = loop.form.i
    for s in loop.body.stms:
        read = _read(s, gtids, aliases, i, local, types)
        if read is not None:
            reads.append(read)
        elif (free_vars(s.exp) & {*gtids, *aliases, i}
              or isinstance(s.exp, ir.Index | ir.Loop | ir.If) or _may_fail(s.exp)):
            return None
        else:
            step.append(s)
    if not any(r.dim == 0 for r in reads) or not any(r.dim == 1 for r in reads):
        return None
    after = op.body.stms[loops[0] + 1:]
    return Tileable(stm, tuple(reads), tuple(step), before + after, tuple(aliases.items()),
                    _sum_op(loop, step))


def _sum_op(loop: ir.Loop, step: list[ir.Stm]) -> str | None:
    """`+` if `loop` sums (its one accumulator's new value is the last step
    `acc + v`, and no other step reads `acc` but to copy it), so that chunks
    of its iterations may run apart and their sums be added; else None."""
    if len(loop.merge) != 1 or not step:
        return None
    (acc, _), last = loop.merge[0], step[-1]
    e = last.exp
    if (not isinstance(acc.type, ir.Prim) or acc.type.name == "bool"
            or not isinstance(e, ir.BinOp) or e.op != "+" or e.prim != acc.type.name
            or loop.body.result != (ir.Var(last.pat[0].name),)):
        return None
    copies = {acc.name}  # `acc` and its copies (a sequential redomap's operator binds them)
    for s in step[:-1]:
        if isinstance(s.exp, ir.SubExpOp) and s.exp.se in map(ir.Var, copies):
            copies.add(s.pat[0].name)
        elif free_vars(s.exp) & copies:
            return None
    operands = [isinstance(x, ir.Var) and x.name in copies for x in (e.x, e.y)]
    return "+" if operands.count(True) == 1 else None


def split_count(tiles: str, m: str) -> str:
    """The host expression of how many chunks a split kernel's loop of `m`
    iterations runs in, for `tiles` block tiles: SPLIT_BLOCKS_PER_SM blocks
    per SM, each chunk at least 4 x SPLIT_TK iterations (no tiles, an empty
    product: one chunk, never run)."""
    return (f"max(1, min(-(-({m}) // {4 * SPLIT_TK}), "
            f"-(-({SPLIT_BLOCKS_PER_SM} * b.sm_count) // max(1, {tiles}))))")


def _may_fail(e: ir.Exp) -> bool:
    """Whether a step statement can fail: the tiled kernel also runs the step
    on the padding of a tile (points past the edge, values never loaded), so
    only steps that cannot fail are tiled."""
    if isinstance(e, ir.Assert):
        return True
    return (isinstance(e, ir.BinOp) and e.op in ("/", "%", "//", "%%", "**")
            and not e.prim.startswith("f"))


def _read(s: ir.Stm, gtids: tuple[ir.VName, ...], aliases: dict[ir.VName, int], i: ir.VName,
          local: set[ir.VName], types: dict[ir.VName, ir.Type]) -> Read | None:
    """`s` as a tiled read: `arr[...]` of a host array at the loop index, one
    thread index, and invariants."""
    e = s.exp
    if (not isinstance(e, ir.Index) or e.arr in local
            or not isinstance(types.get(e.arr), ir.ArrayT)
            or not all(isinstance(d, ir.DimFix) for d in e.slice)):
        return None
    names = [d.i.name if isinstance(d.i, ir.Var) else None for d in e.slice]
    names = [gtids[aliases[n]] if n in aliases else n for n in names]
    used = {g for g in gtids if g in names}
    if names.count(i) != 1 or len(used) != 1 or any(
            n is not None and n not in (i, *gtids) and n in local for n in names):
        return None
    return Read(s, gtids.index(used.pop()), names[-1] == i)


def _load(sc: SegCompile, low: KernelLowering, rd: Read,
          params: list[tuple[ir.Param, imp.Expr]], target: str, checked: bool) -> str:
    """The read `rd` at the thread index and loop index bound by `params`,
    into `target`; bounds-checked if `checked`, else trusting the check of
    its tile's corners (`_reads`)."""
    body = ir.Body((rd.stm,), (ir.Var(rd.stm.pat[0].name),))
    with nullcontext() if checked else low.indices_checked():
        stms = low.region(params, body, [target], sc.fresh("load_failed"))
    return "\n".join(render.stms(stms, 5))


def _reads(sc: SegCompile, low: KernelLowering, t: Tileable, loop: ir.Loop,
           gparams: list[ir.Param]) -> dict[int, list[dict]]:
    """The template's slots for the reads of each dimension (0: rows, 1:
    columns).  A read's indices are the loop index, one thread index and
    invariants, so those of a whole tile (its points, a chunk of the loop)
    lie between the indices at its first and its last point and iteration:
    the kernel bounds-checks the reads there (`check_first`, `check_last`,
    into `probe<j>`) once per tile, and loads the tile unchecked."""
    assert isinstance(loop.form, ir.ForLoop)
    i = ir.Param(loop.form.i, ir.Prim(loop.form.prim))
    tiles: dict[int, list[dict]] = {0: [], 1: []}
    for rd in t.reads:
        side = "row" if rd.dim == 0 else "col"
        j = len(tiles[rd.dim])
        params = [(gparams[rd.dim], imp.Var("g")),
                  *((ir.Param(a, ir.Prim("i64")), imp.Var("g")) for a, d in t.aliases
                    if d == rd.dim),
                  (i, imp.Cast(CTYPES[loop.form.prim], imp.Var("i")))]
        target, probe = f"{side}_next{j}[s]", f"{side}_probe{j}"
        # Rendered once per use in the template, so each copy has its own label.
        tiles[rd.dim].append({"ctype": CTYPES[rd.stm.pat[0].type.name],
                              "k_contiguous": rd.k_contiguous,
                              "check_first": _load(sc, low, rd, params, probe, True),
                              "check_last": _load(sc, low, rd, params, probe, True),
                              "load_first": _load(sc, low, rd, params, target, False),
                              "load_next": _load(sc, low, rd, params, target, False)})
    return tiles


def combine_groups(splits: str, points: str) -> str:
    """The host expression of how many threads add up each of `points`
    points' `splits` partial sums in the combining kernel: a power of two,
    at most a block, enough that each adds at most COMBINE_PER_THREAD of
    them, but no more than keep COMBINE_THREADS threads in all.  One
    thread's additions wait on its loads one after another, so few points
    need many threads each (256 points of 528 partial sums: 17.5 µs by 8
    threads a point, 5.6 by 256, H200); many points have threads enough
    (4096 points: 18.5 µs by 8, 27 by 256 in blocks of one point)."""
    by_splits = f"1 << int(-(-({splits}) // {COMBINE_PER_THREAD}) - 1).bit_length()"
    by_points = f"1 << (int(max(1, {COMBINE_THREADS} // max(1, {points}))).bit_length() - 1)"
    return f"min({BLOCK}, {by_splits}, {by_points})"


def _chunk_size(sc: SegCompile, t: Tileable, rows: int, cols: int, default: int,
                split: bool) -> TileSize:
    """The tiled kernel's tunable chunk length (`TILE_KS` that fit its
    tiles), `default` unless tuned."""
    def fits(k: int) -> bool:
        shared = sum(k * ((rows, cols)[rd.dim] + 4)
                     * np.dtype(DTYPES[rd.stm.pat[0].type.name]).itemsize for rd in t.reads)
        return k * rows % BLOCK == 0 and k * cols % BLOCK == 0 and shared <= STATIC_SHARED
    # The default's loads divide among the threads (its shared memory may not
    # fit where a kernel reads many arrays: nvcc says so, as it always did).
    assert default * rows % BLOCK == 0 and default * cols % BLOCK == 0
    return sc.tile_size("segmap_tile_size", "loop iterations per shared-memory chunk of the "
                        f"{rows} x {cols} {'split' if split else 'tiled'} kernel", default,
                        sorted({default, *filter(fits, TILE_KS)}))


def compile_tiled(sc: SegCompile, op: SegMap, t: Tileable, outs: list[Temp],
                  when: str, regs: tuple[int, int], split: bool = False) -> None:
    """Adds the tiled kernel with register tiles of `regs` (rows, columns:
    1, 2, 4 or 8 each), launched `when`, writing `outs`; with `split`
    (`t.split_op` set), the split kernel and its combining kernel."""
    low = sc.lowering()
    loop = t.loop.exp
    assert isinstance(loop, ir.Loop) and isinstance(loop.form, ir.ForLoop)
    g0, g1 = op.space.gtids
    gparams = [ir.Param(g, ir.Prim("i64")) for g in (g0, g1)]
    tiles = _reads(sc, low, t, loop, gparams)
    names = {0: iter(range(len(tiles[0]))), 1: iter(range(len(tiles[1])))}
    bindings = [(p, imp.Lit(f"acc{k}[r][c]")) for k, (p, _) in enumerate(loop.merge)]
    bindings += [(rd.stm.pat[0], imp.Lit(f"{'row' if rd.dim == 0 else 'col'}_vals"
                                         f"{next(names[rd.dim])}[{'r' if rd.dim == 0 else 'c'}]"))
                 for rd in t.reads]
    step = low.region(bindings, ir.Body(t.step, loop.body.result),
                      [f"acc{k}[r][c]" for k in range(len(loop.merge))], sc.fresh("step_failed"))
    epi_bindings = [(gparams[0], imp.Var("row")), (gparams[1], imp.Var("col"))]
    epi_bindings += [(p, imp.Lit(f"acc{k}[r][c]")) for k, p in enumerate(t.loop.pat)]
    epilogue = low.region(epi_bindings, ir.Body(t.epilogue, op.body.result),
                          [f"res{k}" for k in range(len(op.ret))], sc.fresh("epilogue_failed"))
    out_ptrs = [low.add_param(o.name, CTYPES[o.prim], True, o.name) for o in outs]
    rows, cols = (BLOCK_SIDE * r for r in regs)
    # A side of 16 points needs chunks of 16 iterations for each thread to
    # load whole slots of them.  Register tiles up to 4 x 4 of one 4-byte
    # accumulator take them too (twice the work between barriers: 50 -> 42
    # µs for 1024 x 1024 outputs, H200) and leave whole chunks unguarded
    # (`peel`: the step twice); 8 x 8 tiles and 8-byte values would spill.
    one_word = t.reg() == REG  # one 4-byte accumulator
    small = max(regs) <= 4 and one_word
    tile = _chunk_size(sc, t, rows, cols,
                       SPLIT_TK if split or min(rows, cols) < 2 * BLOCK_SIDE or small else TK,
                       split)
    tk = tile.macro
    dims = [render.expr(low.subexp(d)) for d in op.space.dims]
    m = render.expr(low.subexp(loop.form.bound))
    n, p = (sc.host_dim(d) for d in op.space.dims)
    tiles_host = f"(-(-({n}) // {rows}) * -(-({p}) // {cols}))"
    partials: list[str] = []
    if split:
        splits = sc.let("split_count", split_count(tiles_host, sc.host_dim(loop.form.bound)),
                        when)
        groups = sc.let("combine_groups", combine_groups(splits, f"{n} * {p}"), when)
        low.add_param("split_count", "int64_t", False, splits)
        low.add_param("combine_groups", "int32_t", False, groups)
        partials = [low.add_param(tmp.name, CTYPES[tmp.prim], True, tmp.name)
                    for tmp in (sc.temp("partial", pa.type.name, f"{splits} * {n} * {p}",
                                        when=when) for pa, _ in loop.merge)]
    name = sc.fresh("segmap_split" if split else "segmap_tiled")
    source = f"#ifndef {tk}\n#define {tk} {tile.default}\n#endif\n" + render_skeleton(
        "tiled_redomap", name=name, block=BLOCK, block_side=BLOCK_SIDE,
        reg_r=regs[0], reg_c=regs[1], run_r=min(regs[0], 4), run_c=min(regs[1], 4),
        peel=small,
        min_blocks=MIN_BLOCKS[regs[0] * regs[1] if one_word else REG * REG],
        tk=tk,
        rows=rows, cols=cols, n=dims[0], p=dims[1], m=m,
        split=split, splits="split_count", split_op=t.split_op, partials=partials,
        groups="combine_groups",
        row_reads=tiles[0], col_reads=tiles[1],
        accs=[{"ctype": CTYPES[p.type.name], "init": render.expr(low.subexp(v))}
              for p, v in loop.merge],
        step="\n".join(render.stms(step, 7)), epilogue="\n".join(render.stms(epilogue, 5)),
        results=[CTYPES[r.name] for r in op.ret], outs=out_ptrs, params=kernel_params(low))
    if not split:
        sc.add_kernel(name, source, low, f"{tiles_host} * {BLOCK}", when=when, tile_sizes=[tile])
        return
    sc.add_kernel(name, source, low, f"{tiles_host} * {splits} * {BLOCK}", when=when,
                  tile_sizes=[tile])
    sc.add_kernel(f"{name}_combine", "", low, f"-(-({n} * {p}) // ({BLOCK} // {groups})) * {BLOCK}",
                  when=when)
