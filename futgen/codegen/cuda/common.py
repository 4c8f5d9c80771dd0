"""What every SegOp strategy needs: names, thread indices, output arrays, operators.

A `SegCompile` holds the state of compiling one SegOp statement: the host
types, the name source, the error table, and the plan pieces (temps,
outputs, launches, kernel sources) the strategy adds to.  Strategies build
each kernel's body as ImpCode through a `KernelLowering` and hand it to
`kernel()`, which renders it and records the launch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from futgen.codegen.cuda import imp, render
from futgen.codegen.cuda.imp import Bin, Call, Cast, Expr, Lit, Stm
from futgen.codegen.cuda.lower import (
    INDEX_MACRO,
    NARROW_LIMIT,
    ErrorTable,
    KernelLowering,
    c_name,
)
from futgen.codegen.cuda.private import product
from futgen.codegen.plan import (
    CTYPES,
    BlockSize,
    KernelPlan,
    Launch,
    Temp,
    Threshold,
    TileSize,
)
from futgen.core import ir
from futgen.gpu.ir import SegBinOp

BLOCK = 256  # threads per block (Futhark's default_tblock_size)

TID = Cast("int64_t", Lit("threadIdx.x"))
BID = Cast("int64_t", Lit("blockIdx.x"))
BDIM = Cast("int64_t", Lit("blockDim.x"))
GDIM = Cast("int64_t", Lit("gridDim.x"))
_FAILED = Bin("!=", Lit("*(volatile int32_t *)failure"), Lit("0"))


def early_exit(barriers: bool) -> Stm:
    """Leave at once if an earlier kernel failed (block-uniformly with barriers)."""
    cond: Expr = Call("__syncthreads_or", (_FAILED,)) if barriers else _FAILED
    return imp.If(cond, (imp.Return(),))


def grid_stride(name: str, first: Expr, total: Expr, body: Sequence[Stm],
                stride: Expr) -> Stm:
    """`for name in first, first + stride, ... < total`: a loop over the
    points of a launch.  Launches give most threads one point, so the loop is
    kept rolled: unrolled, nvcc hoists later points' loads into registers
    that the one pass never uses (measured slower on LocVolCalib's SegMaps)."""
    return imp.For("int64_t", name, first, total, tuple(body), stride, unroll=1)


def imin(a: Expr, b: Expr) -> Expr:
    return imp.Cond(Bin("<", a, b), a, b)


def imax(a: Expr, b: Expr) -> Expr:
    return imp.Cond(Bin("<", a, b), b, a)


@dataclass
class SegCompile:
    """The plan of one SegOp statement, as its strategy builds it."""

    stm: ir.Stm
    types: dict[ir.VName, ir.Type]
    fresh: Callable[[str], str]
    errors: ErrorTable
    sizes: dict[tuple[ir.VName, int], ir.VName] = field(default_factory=dict)
    defs: dict[ir.VName, ir.Exp] = field(default_factory=dict)
    temps: list[Temp] = field(default_factory=list)
    outputs: list[Temp] = field(default_factory=list)
    launches: list[Launch] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    thresholds: list[Threshold] = field(default_factory=list)
    block_sizes: list[BlockSize] = field(default_factory=list)
    tile_sizes: list[TileSize] = field(default_factory=list)
    lets: list[tuple[str, str, str | None]] = field(default_factory=list)

    def lowering(self) -> KernelLowering:
        """A lowering for one of this SegOp's kernels.  Every strategy runs
        the body only at points of the space, so each thread index is known
        to lie below its dimension (`KernelLowering.ranges`)."""
        low = KernelLowering(self.types, self.errors, self.fresh, self.sizes, self.defs)
        space = self.stm.exp.space  # type: ignore[attr-defined]
        low.ranges.update(zip(space.gtids, space.dims))
        return low

    def host_dim(self, d: ir.SubExp) -> str:
        """A size as a host expression (the host variable, or the constant)."""
        return c_name(d.name) if isinstance(d, ir.Var) else str(int(d.value))

    def host_product(self, dims: Sequence[ir.SubExp]) -> str:
        return " * ".join(self.host_dim(d) for d in dims) or "1"

    def array(self, base: str, prim: str, shape: Sequence[ir.SubExp], *,
              output: bool) -> Temp:
        """A new output (or temporary) device array with a unique name."""
        t = Temp(self.fresh(base), prim, tuple(self.host_dim(d) for d in shape))
        (self.outputs if output else self.temps).append(t)
        return t

    def temp(self, base: str, prim: str, size: int | str, zeroed: bool = False,
             when: str | None = None) -> Temp:
        """A temporary of `size` elements (a host expression, or a number),
        allocated only where the launches of `when` run, if given."""
        t = Temp(self.fresh(base), prim, (str(size),), zeroed, when)
        self.temps.append(t)
        return t

    def let(self, base: str, expr: str, when: str | None = None) -> str:
        """A new host variable bound to the Python expression `expr` before
        the plan allocates or launches anything (with `when`, before the
        launches of that condition, only where they run); its name."""
        name = self.fresh(base)
        self.lets.append((name, expr, when))
        return name

    def threshold(self, base: str, default: int, doc: str, par: str,
                  under: tuple[tuple[str, bool], ...] = (), requires: str | None = None,
                  holds: str | None = None) -> str:
        """A new tunable strategy guard (`Threshold`) on the host expression
        `par`, which matters where the guards (key, branch) of `under` take
        those branches and the host condition `requires` holds, and is taken
        without a comparison where `holds` does; its host variable's name, a
        bool."""
        key = self.fresh(base)
        self.thresholds.append(Threshold(key, default, doc, par, under, requires, holds))
        return key

    def block_size(self, base: str, doc: str, default: int = BLOCK,
                   cls: str = "tblock_size", values: Sequence[int] = ()) -> str:
        """A new tunable block size (`BlockSize`; or another launch
        parameter of class `cls`); its host variable's name, for a launch's
        `block`."""
        key = self.fresh(base)
        self.block_sizes.append(BlockSize(key, default, doc, cls, tuple(values)))
        return key

    def tile_size(self, base: str, doc: str, default: int, values: Sequence[int]) -> TileSize:
        """A new tunable tile size (`TileSize`): the kernel's source names its
        macro, and its launches list its key (`add_kernel`'s `tile_sizes`)."""
        size = TileSize(self.fresh(base), default, tuple(values), doc)
        self.tile_sizes.append(size)
        return size

    def add_kernel(self, name: str, source: str, low: KernelLowering, threads: str,
                   block: int | str = BLOCK, when: str | None = None,
                   shared_bytes: int | str = 0, tile_sizes: Sequence[TileSize] = ()) -> None:
        """Records a kernel rendered elsewhere (a skeleton) and its launch."""
        self.sources.append(source)
        self.add_launch(name, low, threads, block, when, shared_bytes, tile_sizes=tile_sizes)

    def add_launch(self, name: str, low: KernelLowering, threads: str, block: int | str,
                   when: str | None, shared_bytes: int | str = 0, groups: int | str = 1,
                   tile_sizes: Sequence[TileSize] = ()) -> None:
        """Records a launch of kernel `name`, whose source is recorded already."""
        self.launches.append(Launch(name, threads, block,
                                    tuple(a for _, a in low.params.values()), shared_bytes,
                                    when, tuple(t.key for t in tile_sizes), groups))

    def kernel(self, base: str, low: KernelLowering, body: Sequence[Stm], threads: str,
               block: int | str = BLOCK, when: str | None = None,
               max_threads: int | None = None, shared_bytes: int | str = 0) -> None:
        """Renders a kernel from its body and records its launch; `block` may
        be a host expression, at most `max_threads` (`__launch_bounds__`)."""
        name = self.fresh(base)
        source = rendered(name, low, body, max_threads)
        self.add_kernel(name, source, low, threads, block, when, shared_bytes)

    def plan(self, results: Sequence[tuple[str, str]]) -> KernelPlan:
        return KernelPlan("\n\n".join(self.sources) + "\n", tuple(self.temps),
                          tuple(self.outputs), tuple(self.launches), tuple(results),
                          tuple(self.errors.sites), tuple(self.thresholds), tuple(self.lets),
                          tuple(self.block_sizes), tuple(self.tile_sizes))


def rendered(name: str, low: KernelLowering, body: Sequence[Stm],
             max_threads: int | None = None) -> str:
    """Kernel `name`'s source: `body` with `low`'s parameters."""
    params = tuple(p for p, _ in low.params.values())
    return render.kernel(imp.Kernel(name, params, tuple(body), max_threads))


def in_both_widths(low: KernelLowering, points: str,
                   render_kernels: Callable[[tuple[imp.KParam, ...], tuple[Stm, ...], str], str],
                   body: Sequence[Stm]) -> str:
    """The source of a kernel lowered with `index_type` INDEX_MACRO, from
    `render_kernels(params, body, suffix)`: once with FUTGEN_IDX int32_t
    (suffix ""), once with int64_t ("_wide"); its int64 scalar parameters
    `p` arrive as `p_arg` and are declared in the index type.  Launch the
    first where `narrow_when(low, points)`."""
    params, prologue = [], []
    for kp, _ in low.params.values():
        if kp.pointer or kp.ctype != "int64_t":
            params.append(kp)
            continue
        params.append(imp.KParam(kp.ctype, f"{kp.name}_arg", False))
        prologue.append(imp.Decl(f"const {INDEX_MACRO}", kp.name,
                                 Cast(INDEX_MACRO, imp.Var(f"{kp.name}_arg")), True))
    full = (*prologue, *body)
    variants = [f"#undef {INDEX_MACRO}\n#define {INDEX_MACRO} {ctype}\n"
                + render_kernels(tuple(params), full, width)
                for ctype, width in (("int32_t", ""), ("int64_t", "_wide"))]
    return "\n\n".join([*variants, f"#undef {INDEX_MACRO}\n#define {INDEX_MACRO} int64_t"])


def narrow_when(low: KernelLowering, points: str) -> str:
    """The host condition for a kernel's 32-bit variant (`in_both_widths`):
    its space (`points`), every int64 parameter and every array at most
    NARROW_LIMIT (lower.py).  Checked at the launch: the outputs exist."""
    sizes = [f"({points})"]
    for kp, arg in low.params.values():
        if kp.pointer:
            sizes.append(f"{arg.value}.size")
        elif kp.ctype == "int64_t":
            sizes.append(f"abs({arg.value})")
    return f"max({', '.join(sizes)}) <= {NARROW_LIMIT}"


def pointer(low: KernelLowering, t: Temp) -> str:
    """Makes a plan array a kernel parameter; its C name is the temp's name."""
    return low.add_param(t.name, CTYPES[t.prim], True, t.name)


def decompose(low: KernelLowering, flat: Expr, gtids: Sequence[ir.VName],
              dims: Sequence[Expr]) -> list[Stm]:
    """Binds `gtids` to the row-major coordinates of `flat` in `dims`.

    Where the space has fewer than 2^32 points (a test every thread of the
    launch takes alike), the divisions are 32-bit unsigned ones: a 64-bit
    division is a subroutine of about 70 instructions, which made a plain
    stencil SegMap of 2^24 points bound by issuing them, not by memory."""
    if len(gtids) == 1:
        ctype, g = low.bind_index(gtids[0])
        return [imp.Decl(ctype, g, flat, True)]
    names = [low.bind_index(g) for g in gtids]
    return [*(imp.Decl(ctype, g, None, True) for ctype, g in names),
            imp.If(Bin("<=", product(dims), Lit("(int64_t)UINT32_MAX")),
                   tuple(_coordinates(low, flat, names, dims, "uint32_t")),
                   tuple(_coordinates(low, flat, names, dims, "int64_t")))]


def _coordinates(low: KernelLowering, flat: Expr, names: Sequence[tuple[str, str]],
                 dims: Sequence[Expr], ctype: str) -> list[Stm]:
    """Assigns the coordinates of `flat` in `dims` to `names`, dividing in `ctype`."""
    stms: list[Stm] = []
    rest = Cast(ctype, flat)
    for k in range(len(names) - 1, 0, -1):
        dim = Cast(ctype, dims[k])
        stms.append(imp.Assign(names[k][1], Cast(names[k][0], Bin("%", rest, dim))))
        r = low.fresh("rest")
        stms.append(imp.Decl(ctype, r, Bin("/", rest, dim), True))
        rest = imp.Var(r)
    stms.append(imp.Assign(names[0][1], Cast(names[0][0], rest)))
    return stms


def op_types(op: SegBinOp) -> list[str]:
    """The primitive types of an operator's values."""
    out = []
    for p in op.lam.params[: len(op.nes)]:
        assert isinstance(p.type, ir.Prim), p
        out.append(p.type.name)
    return out


def apply_op(low: KernelLowering, op: SegBinOp, xs: Sequence[Expr], ys: Sequence[Expr],
             outs: Sequence[str], escape: str | None) -> list[Stm]:
    """`outs = op(xs, ys)`; the operands are copied first, so `outs` may alias them."""
    bindings = list(zip(op.lam.params, [*xs, *ys], strict=True))
    return low.region(bindings, op.lam.body, outs, escape)


def declare(ctypes: Sequence[str], names: Sequence[str],
            inits: Sequence[Expr | None]) -> list[Stm]:
    return [imp.Decl(c, n, i) for c, n, i in zip(ctypes, names, inits, strict=True)]
