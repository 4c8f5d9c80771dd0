"""Intra-block kernels: a block, or a group of lanes, per point of a `BLOCKS` SegMap.

Incremental flattening's intra-block version (`futgen.flatten.intra`) runs
each point's block code in one block.  The kernel loops over the points
with a grid stride of blocks; every thread of a block runs the block code
alike (its scalars redundantly, its control flow in step), and each
`BLOCK` SegOp shares its space among the threads:

* a SegMap: thread `t` takes points `t, t + B, ...` (B threads per block);
* a SegRed: each thread folds its points (strided where the operator is
  commutative, else a contiguous run), then `futgen_block_scan`
  (templates/kernels.cu.j2: CUB's warp scans and one warp over the warps'
  totals) combines the threads' values in order;
* a SegScan: each thread stores its run's elements and folds them, the
  block scans the folds, and each thread scans its run again from its
  prefix.  A SegMap right after it that reads the scan's results only at
  its own point (a tridiagonal solve's `map` after each `scan`) runs in
  that second pass, on the values in registers (`PostMap`): a barrier, a
  pass over shared memory and the scan's stores fewer.

The arrays of block code live in dynamic shared memory, in the slots of
their `SharedLayout` (16-byte aligned; arrays whose lifetimes do not
overlap share one), whose total the host computes for the launch; element
`i` is at `i + (i >> 5)`, counted in 32 bits (`position`: padded, a scan's
runs of consecutive elements per thread fall in distinct banks; unpadded,
runs of 4 had 4-way bank conflicts and runs of 8 cost LocVolCalib large
95 ms against 68); they are
never updated in place, so a loop's array parameters are copied from the
body's results between iterations.
After every block operation the threads meet at a barrier that also asks
whether any of them failed (`futgen_group_sync_or` of a local flag), so a
failure in any thread stops the whole block together.

The threads of a point are picked at launch: the widest block operation's
space, over runs of up to `intra_runs_<k>` elements a thread (4 by
default) where the device has that many to spare (`_block_shape`),
rounded up to a multiple of 32, at most the
tunable `intra_tblock_size_<k>` (1024 by default; wider spaces loop), so
`__launch_bounds__(1024)` holds for every launch.  Where a point needs 16
lanes or fewer (`limits.intra_shape`), the kernel's second variant
(`GROUPS`) runs a warp of such groups instead, a point each: its block
is `(lanes, groups)`, each group has shared memory of its own, its
barriers are `__syncwarp`s of its lanes and its scans CUB's of a logical
warp.  (One kernel choosing at run time cost the other variant registers
and spills.)
"""

from __future__ import annotations

from collections.abc import Container, Sequence
from dataclasses import dataclass

import numpy as np
from futgen_runtime.limits import BLOCK_RESERVED_BYTES
from futgen_runtime.tuning import RUN_LENGTH

from futgen.codegen.cuda import imp, render
from futgen.codegen.cuda.common import (
    BDIM,
    BID,
    GDIM,
    TID,
    SegCompile,
    decompose,
    early_exit,
    grid_stride,
    imin,
    in_both_widths,
    narrow_when,
    pointer,
)
from futgen.codegen.cuda.imp import Bin, Call, Cast, Lit, Stm
from futgen.codegen.cuda.lower import INDEX_MACRO, KernelLowering, Out
from futgen.codegen.cuda.private import ZERO, Buffer, PrivateMemory, product
from futgen.codegen.cuda.skeleton import (
    ValueType,
    neutral,
    operator_functor,
    value_type,
)
from futgen.codegen.plan import CTYPES, DTYPES, KernelPlan
from futgen.core import ir
from futgen.flatten.names import free_vars
from futgen.flatten.shared_layout import SharedLayout
from futgen.gpu.ir import (
    BLOCK,
    SHARED_ALIGN,
    SHARED_PAD_SHIFT,
    SegMap,
    SegRed,
    SegScan,
    block_ops,
    block_shared_arrays,
)

MAX_BLOCK = 1024
# Indices into the space of a block operation whose arrays live in shared
# memory (a few hundred KiB at most) fit 32 bits: loops over such spaces
# count in int32_t, which halves their index arithmetic.
INT32 = ("int32_t", Cast("int32_t", Lit("threadIdx.x")), Cast("int32_t", Lit("blockDim.x")))
INT64 = ("int64_t", TID, BDIM)
RUNS = 4  # elements per thread where the device is full many times over (default)
RUN_LENGTHS = (1, 2, 4, 8, 16)  # the values the tunable `intra_runs_<k>` allows
SHARED = "futgen_shared"  # the dynamic shared memory
SCRATCH = "futgen_block_scratch"  # 32 values of the widest collective
FAILED = "failed"  # whether this thread failed (a local flag)
# Whether the kernel is the variant for short rows: several points to a
# warp, each a group of `blockDim.x` < 32 lanes (a macro around each variant).
GROUPS = "FUTGEN_GROUPS"


@dataclass(frozen=True)
class PostMap:
    """A block SegMap run inside the block SegScan before it: at each point
    of the scan's second pass, with `reads` (its reads of the scan's
    results at its own point) bound to the scanned value's components."""

    pat: tuple[ir.Param, ...]
    op: SegMap
    reads: tuple[tuple[ir.Param, int], ...]  # (the read's binder, the component)
    body: ir.Body  # the map's body without those reads
    keep: bool  # whether later code reads the scan's results (then they are stored)


def post_map(scan: ir.Stm, after: ir.Stm, later: object,
             shared: Container[ir.VName] = ()) -> PostMap | None:
    """`after` as the PostMap of block scan `scan` where it may be one: a
    block map over the scan's (one-dimensional) space whose body uses the
    scan's results only in reads at its own point; `later` is the code
    after both (whether it reads the scan's results).  The scan's operator
    must read no array of `shared` (block arrays): the map's results may
    take the place of one that dies at the scan, and the operator runs
    beside the map."""
    op, post = scan.exp, after.exp
    if not (isinstance(op, SegScan) and op.level == BLOCK and isinstance(post, SegMap)
            and post.level == BLOCK and len(op.space.dims) == 1
            and post.space.dims == op.space.dims):
        return None
    if any(v in shared for v in free_vars(tuple(o.lam for o in op.ops))):
        return None
    scanned = {p.name: k for k, p in enumerate(scan.pat[:sum(len(o.nes) for o in op.ops)])}
    own = (ir.DimFix(ir.Var(post.space.gtids[0])),)
    reads: list[tuple[ir.Param, int]] = []
    rest: list[ir.Stm] = []
    for s in post.body.stms:
        match s.exp:
            case ir.Index(arr, sl) if arr in scanned and sl == own:
                reads.append((s.pat[0], scanned[arr]))
            case _:
                rest.append(s)
    body = ir.Body(tuple(rest), post.body.result)
    if not reads or free_vars(body) & {p.name for p in scan.pat}:
        return None  # another use of the scan's arrays needs them whole
    keep = bool(free_vars(later) & scanned.keys())
    return PostMap(after.pat, post, tuple(reads), body, keep)


def barrier() -> Stm:
    """A barrier all threads of the point's group reach; all leave if one
    failed (templates/kernels.cu.j2: `futgen_group_sync_or`)."""
    return imp.If(Call(f"futgen_group_sync_or<{GROUPS}>", (imp.Var(FAILED),)), (imp.Return(),))


def compile_intra(sc: SegCompile, op: SegMap) -> KernelPlan:
    """The plan of `let (pat) = segmap blocks ...`: one kernel in two
    variants, a block per point or (short rows) a group of lanes per point."""
    low = BlockLowering(sc)
    low.fail_flag = FAILED
    layout = SharedLayout.of(op.body)
    low.mem = SharedMemory(low, layout, block_shared_arrays(op.body))
    prims = [t.name if isinstance(t, ir.Prim) else t.elem for t in op.ret]
    outs = [pointer(low, sc.array(f"{p.name.base}_mem", prim,
                                  (*op.space.dims, *getattr(t, "shape", ())), output=True))
            for p, prim, t in zip(sc.stm.pat, prims, op.ret)]
    dims = [low.subexp(d) for d in op.space.dims]
    point = low.fresh("point")
    res: list[Out] = [low.fresh("res") if isinstance(t, ir.Prim)
                      else _row_store(low, o, imp.Var(point)) for t, o in zip(op.ret, outs)]
    inner: list[Stm] = decompose(low, imp.Var(point), op.space.gtids, dims)
    inner += [imp.Decl(CTYPES[p], r) for p, r in zip(prims, res) if isinstance(r, str)]
    inner += low.body(op.body, res)
    scalars = tuple(imp.Store(o, imp.Var(point), imp.Var(r))
                    for o, r in zip(outs, res) if isinstance(r, str))
    if scalars:
        inner.append(imp.If(Bin("==", TID, Lit("0")), scalars))
    inner.append(barrier())  # the next point reuses the shared memory
    total = low.fresh("points")
    scratch = [imp.Shared("unsigned char", SCRATCH, 32 * low.scratch_bytes)
               ] if low.scratch_bytes else []
    groups = Cast("int64_t", Lit(f"({GROUPS} ? blockDim.y : 1)"))
    first = Bin("+", Bin("*", BID, groups), Cast("int64_t", Lit("threadIdx.y")))
    body = [imp.Shared("unsigned char", SHARED, 0), *scratch,
            early_exit(barriers=True), imp.Decl("bool", FAILED, Lit("false")), *low.mem.decls,
            imp.Decl("int64_t", total, product(dims)),
            grid_stride(point, first, imp.Var(total), inner, Bin("*", GDIM, groups))]
    if 32 * low.scratch_bytes > BLOCK_RESERVED_BYTES:
        raise NotImplementedError("block operations on values of more than "
                                  f"{BLOCK_RESERVED_BYTES // 32} bytes")
    lanes, groups_host, nbytes = _block_shape(sc, op, layout)
    name = sc.fresh("intra")
    points = sc.host_product(op.space.dims)
    sc.sources.append(in_both_widths(low, points, lambda params, body_, width: "\n\n".join(
        f"#define {GROUPS} {flag}\n"
        + render.kernel(imp.Kernel(name + suffix + width, params, body_, MAX_BLOCK))
        + f"\n#undef {GROUPS}" for flag, suffix in (("false", ""), ("true", "_groups"))),
        body))
    threads, shared = f"({points}) * {lanes}", f"({nbytes}) * {groups_host}"
    narrow = narrow_when(low, points)
    for width, fits in (("", narrow), ("_wide", f"not ({narrow})")):
        sc.add_launch(name + width, low, threads, lanes, f"{lanes} >= 32 and {fits}", shared)
        sc.add_launch(name + "_groups" + width, low, threads, lanes,
                      f"{lanes} < 32 and {fits}", shared, groups_host)
    return sc.plan([("array", o) for o in outs])


def _block_shape(sc: SegCompile, op: SegMap, layout: SharedLayout) -> tuple[str, str, str]:
    """The threads of a point, the points of a block (`limits.intra_shape`)
    and the shared memory of a point, as host expressions.  A thread takes a
    run of elements of the widest block operation: the longest of
    RUN_LENGTHS up to the tunable `intra_runs_<k>` (RUNS by default) at
    which the kernel's elements (points x widest) are that many times the
    threads the device holds.  A scan then applies its operator about twice
    per element, not once per step of a scan across the whole block, while
    the device stays full (LocVolCalib's tridiagonal solves, 65536 rows of
    256: 1.35x faster with runs of 4, the y solve 15% faster again with 8;
    mapscan1's 256 rows of 16384 need every thread).  Being bounded by the
    device's fill, one tuned value serves datasets of every size.  The
    tunable cap `intra_tblock_size_<k>` bounds the threads of a point."""
    widths = [sc.host_product(inner.space.dims) for inner in block_ops(op.body)]
    widest = f"max({', '.join(widths)})" if len(widths) > 1 else widths[0]
    cap = sc.block_size("intra_tblock_size", "most threads per block of the intra-block "
                        "kernel (fewer than its widest operation: runs per thread)",
                        default=MAX_BLOCK)
    most = sc.block_size("intra_runs", "most elements of its widest operation each thread of "
                         "the intra-block kernel takes (fewer where the device would not be "
                         "that many times full)", default=RUNS, cls=RUN_LENGTH,
                         values=RUN_LENGTHS)
    widest = sc.let("widest", widest)
    elements = f"({sc.host_product(op.space.dims)}) * {widest}"
    runs = sc.let("runs", f"max((r for r in {RUN_LENGTHS} if r <= {most} and "
                          f"{elements} >= r * b.resident_threads), default=1)")
    nbytes = sc.let("point_shared", _shared_bytes(sc, layout))
    shape = sc.let("shape", f"b.intra_shape({widest}, {runs}, {cap}, {nbytes})")
    return sc.let("lanes", f"{shape}[0]"), sc.let("groups", f"{shape}[1]"), nbytes


def _shared_bytes(sc: SegCompile, layout: SharedLayout) -> str:
    """The dynamic shared memory of the layout's slots, as a host expression
    (the flattener's `shared_bytes` computes the same for `block_fits`)."""
    def elems(shape):
        n = f"({sc.host_product(shape)})"
        return f"({n} + ({n} >> {SHARED_PAD_SHIFT}))"
    parts = [f"({elems(shape)} * {itemsize} + {SHARED_ALIGN - 1})"
             f" // {SHARED_ALIGN} * {SHARED_ALIGN}" for shape, itemsize in layout.slots]
    return " + ".join(parts) or "0"


def _itemsize(prim: str) -> int:
    return np.dtype(DTYPES[prim]).itemsize


def _row_store(low: BlockLowering, out: str, point: imp.Expr):
    """Stores a block's shared array result into row `point` of output `out`."""
    def store(buf: Buffer) -> list[Stm]:
        size = product([low.subexp(d) for d in buf.shape])
        j = low.fresh("j")
        value = low.shared.load(buf, imp.Var(j))
        return [_loop(INT32, j, size, (imp.Store(
            out, Bin("+", Bin("*", point, size), imp.Var(j)), value),))]
    return store


def _loop(ix: tuple[str, imp.Expr, imp.Expr], var: str, n: imp.Expr,
          body: tuple[Stm, ...]) -> Stm:
    """`var` over [0, n) strided by the block (thread t: t, t + B, ...),
    counting in the C type of `ix` (INT32 or INT64)."""
    ctype, tid, bdim = ix
    return imp.For(ctype, var, tid, Cast(ctype, n) if ctype != "int64_t" else n, body, bdim)


class SharedMemory(PrivateMemory):
    """The arrays of block code in the dynamic shared memory, shared by the
    block's threads: one region per slot of `layout` (arrays whose
    lifetimes do not overlap share one; see `futgen.flatten.shared_layout`).

    `decls` declares every slot's pointer at the start of the kernel."""

    def __init__(self, low: KernelLowering, layout: SharedLayout,
                 arrays: Sequence[tuple[ir.VName, ir.ArrayT]]):
        super().__init__(ir.Body((), ()), self._unplanned, Lit("0"), Lit("1"))
        self.decls: list[Stm] = []
        offsets: list[imp.Expr] = []
        offset: imp.Expr = Lit("(int64_t)0")
        for shape, itemsize in layout.slots:
            offsets.append(offset)
            size = Bin("*", padded(product([low.subexp(d) for d in shape])), Lit(str(itemsize)))
            aligned = Bin("*", Bin("/", Bin("+", size, Lit(str(SHARED_ALIGN - 1))),
                                   Lit(str(SHARED_ALIGN))), Lit(str(SHARED_ALIGN)))
            offset = Bin("+", offset, aligned)
        # Each group of a block (a point) has the slots to itself.
        base = low.fresh("group_shared")
        self.decls.append(imp.Decl("unsigned char *", base, Lit(
            f"{SHARED} + ({GROUPS} ? (int64_t)threadIdx.y * ({render.expr(offset)}) : 0)"),
            True))
        ptrs: list[str] = []
        for at in offsets:
            ptrs.append(low.fresh("shared"))
            self.decls.append(imp.Decl("unsigned char *", ptrs[-1], Lit(
                f"{base} + {render.expr(at)}"), True))
        self.planned: dict[ir.VName, Buffer] = {}
        for v, t in arrays:
            ptr = low.fresh(f"{v.base}_shared")
            ctype = CTYPES[t.elem]
            self.decls.append(imp.Decl(f"{ctype} *", ptr, Lit(
                f"({ctype} *){ptrs[layout.slot_of[v]]}"), True))
            self.planned[v] = Buffer(ptr, t.elem, t.shape)  # type: ignore[arg-type]

    @staticmethod
    def _unplanned(prim: str, shape: tuple[ir.SubExp, ...]) -> str:
        raise NotImplementedError("block code needs an array that has no shared memory")

    def new(self, v: ir.VName, t: ir.ArrayT) -> Buffer:
        if v not in self.planned:
            self._unplanned(t.elem, t.shape)  # type: ignore[arg-type]
        self.bind(v, self.planned[v])
        return self.planned[v]

    def reusable(self, se: ir.SubExp) -> bool:
        return False  # the flattener sized one region per loop parameter

    def at(self, buf: Buffer, flat: imp.Expr) -> imp.Expr:
        return position(flat)

    def copy(self, dst: Buffer, src: Buffer, size: imp.Expr, fresh,
             offset: imp.Expr = ZERO) -> list[Stm]:
        if dst.ptr == src.ptr:
            return []
        j = fresh("j")
        store = self.store(dst, Bin("+", offset, imp.Var(j)), self.load(src, imp.Var(j)))
        return [_loop(INT32, j, size, (store,)), barrier()]

    def fill(self, dst: Buffer, size: imp.Expr, value: imp.Expr, fresh) -> list[Stm]:
        j = fresh("j")
        return [_loop(INT32, j, size, (self.store(dst, imp.Var(j), value),)), barrier()]


def position(i: imp.Expr) -> imp.Expr:
    """Where element `i` of a shared array is, counted in 32 bits: an index
    in bounds of an array in shared memory fits them, and a checked one has
    been checked in 64 (`i - 1` then costs one instruction, not four)."""
    return padded(Cast("int32_t", i))


def padded(i: imp.Expr) -> imp.Expr:
    """The position of element `i` of a shared array (gpu.ir's SHARED_PAD_SHIFT),
    or its padded length where `i` is a length."""
    return Bin("+", i, Bin(">>", i, Lit(str(SHARED_PAD_SHIFT))))


class BlockLowering(KernelLowering):
    """Lowers block code: kernel code plus `BLOCK` SegOps."""

    def __init__(self, sc: SegCompile):
        super().__init__(sc.types, sc.errors, sc.fresh, sc.sizes, sc.defs)
        self.sc = sc
        space = sc.stm.exp.space  # type: ignore[attr-defined]
        self.ranges.update(zip(space.gtids, space.dims))
        self.scratch_bytes = 0  # the largest value a collective combines
        self.index_type = INDEX_MACRO  # compiled in both widths (compile_intra)

    @property
    def shared(self) -> SharedMemory:
        """The kernel's arrays (`compile_intra` sets them before lowering)."""
        assert isinstance(self.mem, SharedMemory)
        return self.mem

    def statements(self, body: ir.Body) -> list[Stm]:
        """`body`'s statements; a block scan and a block map after it that
        can be its `PostMap` as one operation."""
        out: list[Stm] = []
        stms, k = body.stms, 0
        while k < len(stms):
            post = post_map(stms[k], stms[k + 1], (stms[k + 2:], body.result),
                            self.shared.planned) if k + 1 < len(stms) else None
            if post is None:
                out += self.stm(stms[k])
                k += 1
            else:
                out += self.block_reduce(stms[k].pat, stms[k].exp, post)  # type: ignore[arg-type]
                k += 2
        return out

    def stm(self, s: ir.Stm) -> list[Stm]:
        match s.exp:
            case SegMap(level=level) if level == BLOCK:
                return self.block_map(s.pat, s.exp)
            case SegRed(level=level) | SegScan(level=level) if level == BLOCK:
                return self.block_reduce(s.pat, s.exp)
        return super().stm(s)

    def _space(self, op: SegMap | SegRed | SegScan) -> list[imp.Expr]:
        self.ranges.update(zip(op.space.gtids, op.space.dims))
        return [self.subexp(d) for d in op.space.dims]

    def _point(self, op: SegMap | SegRed | SegScan, flat: imp.Expr, dims: list[imp.Expr],
               outs: Sequence[str], body: ir.Body | None = None,
               bindings: Sequence[tuple[ir.Param, imp.Expr]] = ()) -> list[Stm]:
        """The body (`op`'s, or `body`) at flat index `flat` of the space,
        results into `outs`; a failure skips to the end of it (every thread
        must reach the barrier)."""
        stms = decompose(self, flat, op.space.gtids, dims)
        stms += self.region(bindings, body or op.body, outs, self.fresh("failed"))
        return [imp.Block(tuple(stms))]

    def block_map(self, pat: tuple[ir.Param, ...], op: SegMap) -> list[Stm]:
        flat = self.fresh("l")
        inner = self._map_point(pat, op, imp.Var(flat))
        ix = INT32 if pat else INT64  # its results are arrays in shared memory
        return [_loop(ix, flat, product(self._space(op)), tuple(inner)), barrier()]

    def _map_point(self, pat: tuple[ir.Param, ...], op: SegMap, j: imp.Expr,
                   body: ir.Body | None = None,
                   bindings: Sequence[tuple[ir.Param, imp.Expr]] = ()) -> list[Stm]:
        """Block map `op` (or `body` in its space) at point `j`, its results
        stored into the shared arrays of `pat`."""
        dims = self._space(op)
        bufs = [self.shared.new(p.name, p.type) for p in pat]  # type: ignore[arg-type]
        res = [self.fresh("res") for _ in pat]
        stms: list[Stm] = [imp.Decl(CTYPES[b.prim], r) for b, r in zip(bufs, res)]
        stms += self._point(op, j, dims, res, body, bindings)
        return stms + [self.shared.store(b, j, imp.Var(r)) for b, r in zip(bufs, res)]

    def block_reduce(self, pat: tuple[ir.Param, ...], op: SegRed | SegScan,
                     post: PostMap | None = None) -> list[Stm]:
        """A reduction or scan over the block (see the module docstring),
        a scan with the map `post` in its second pass."""
        dims = self._space(op)
        red = [t.name for o in op.ops for t in o.lam.ret]  # type: ignore[union-attr]
        vt = value_type(self.sc, red)
        functor = operator_functor(self.sc, self, op.ops, vt)
        self.sc.sources.append(vt.source + functor.source)
        self.scratch_bytes = max(self.scratch_bytes,
                                 sum(_itemsize(t) for t in red) + 8 * (len(red) > 1))
        scan = isinstance(op, SegScan)
        outs = [self.shared.new(p.name, p.type) for p in pat[0 if scan else len(red):]]  # type: ignore[arg-type]
        scanned, mapouts = (outs[:len(red)], outs[len(red):]) if scan else ([], outs)
        f, acc, x = self.fresh("op"), self.fresh("acc"), self.fresh("x")
        ys = [self.fresh("mapped") for _ in mapouts]
        stms: list[Stm] = [imp.Decl(f"const {functor.name}", f, Lit(functor.init)),
                           imp.Decl(vt.name, acc, Lit(neutral(self, op.ops, vt)))]
        flat = self.fresh("l")
        inner: list[Stm] = [imp.Decl(vt.name, x),
                            *(imp.Decl(CTYPES[b.prim], y) for b, y in zip(mapouts, ys))]
        inner += self._point(op, imp.Var(flat), dims,
                             [*(vt.field(x, k) for k in range(len(red))), *ys])
        inner += [self.shared.store(b, imp.Var(flat), imp.Var(y)) for b, y in zip(mapouts, ys)]
        inner += [self.shared.store(b, imp.Var(flat), Lit(vt.field(x, k)))
                  for k, b in enumerate(scanned)]
        inner.append(imp.Assign(acc, Call(f, (imp.Var(acc), imp.Var(x)))))
        n = self.fresh("n")
        ix = INT32 if outs else INT64  # a space of arrays in shared memory
        ctype, tid, bdim = ix
        stms.append(imp.Decl(ctype, n, Cast(ctype, product(dims))))
        strided = not scan and all(o.commutative for o in op.ops)
        if strided:
            stms.append(imp.For(ctype, flat, tid, imp.Var(n), tuple(inner), bdim))
        else:
            lo, hi = self.fresh("lo"), self.fresh("hi")
            # Each thread's run, ceil(n / threads): recomputed per scan.  An
            # integer division costs some 30 instructions, but computed once
            # per kernel the value holds a register throughout, and the
            # solves of LocVolCalib went from 54 to 64 registers a thread and
            # ran 3-5% slower (H200, 2026-11-26).
            per = Bin("/", Bin("+", imp.Var(n), Bin("-", bdim, Lit("1"))), bdim)
            stms += [imp.Decl(ctype, lo, imin(imp.Var(n), Bin("*", tid, per))),
                     imp.Decl(ctype, hi, imin(imp.Var(n), Bin("+", imp.Var(lo), per))),
                     imp.For(ctype, flat, imp.Var(lo), imp.Var(hi), tuple(inner))]
        prefix, has_prefix = self.fresh("prefix"), self.fresh("has_prefix")
        total = self.fresh("total")
        stms += [imp.Decl(vt.name, prefix), imp.Decl("bool", has_prefix),
                 imp.Decl(vt.name, total),
                 imp.Decl(vt.name, self.fresh("inclusive"), Call(f"futgen_block_scan<{GROUPS}>", (
                     imp.Var(acc), imp.Var(f), Lit(f"({vt.name} *){SCRATCH}"), imp.Var(prefix),
                     imp.Var(has_prefix), imp.Var(total))), True)]
        if scan:
            stms += self._rescan(vt, f, scanned, imp.Var(lo), imp.Var(hi), prefix, has_prefix,
                                 post, ctype)
        else:
            stms += [imp.Decl(CTYPES[p.type.name], self.bind(p.name, p.type),  # type: ignore[union-attr]
                              Lit(vt.field(total, k)), True) for k, p in enumerate(pat[:len(red)])]
        return [*stms, barrier()]

    def _rescan(self, vt: ValueType, f: str, bufs: list[Buffer], lo: imp.Expr, hi: imp.Expr,
                prefix: str, has_prefix: str, post: PostMap | None, ctype: str) -> list[Stm]:
        """Each thread's run scanned from its prefix, in place, or (with
        `post`) each scanned value given to the map, stored only if `keep`."""
        run, x, j = self.fresh("run"), self.fresh("x"), self.fresh("j")
        first = self.fresh("first")
        step: list[Stm] = [imp.Decl(vt.name, x)]
        step += [imp.Assign(vt.field(x, k), self.shared.load(b, imp.Var(j)))
                 for k, b in enumerate(bufs)]
        step.append(imp.If(imp.Var(first), (imp.Assign(run, imp.Var(x)),
                                             imp.Assign(first, Lit("false"))),
                           (imp.Assign(run, Call(f, (imp.Var(run), imp.Var(x)))),)))
        if post is None or post.keep:
            step += [self.shared.store(b, imp.Var(j), Lit(vt.field(run, k)))
                     for k, b in enumerate(bufs)]
        sync: list[Stm] = []
        if post is not None:
            step += self._map_point(post.pat, post.op, imp.Var(j), post.body,
                                    [(p, Lit(vt.field(run, k))) for p, k in post.reads])
            # The map's results may take the place of arrays the other
            # threads' folds read (the shared layout sees the map after the
            # scan): a block of one warp has had no barrier since.
            sync.append(imp.Sync(f"futgen_group_sync<{GROUPS}>"))
            # A thread whose fold failed has no values to give the map: it
            # skips its run (the barrier after the scan then stops the block).
            hi = imp.Cond(imp.Var(FAILED), lo, hi)
        return [*sync, imp.Decl(vt.name, run, imp.Var(prefix)),
                imp.Decl("bool", first, imp.Un("!", imp.Var(has_prefix))),
                imp.For(ctype, j, lo, hi, tuple(step))]



__all__ = ["compile_intra"]
