"""The GPU IR: core IR host code plus segmented operations (SegOps).

A GPU IR program is a `futgen.core.ir.Program` in which a host-level
statement (a statement of a function body, or of a host-level `If`/`Loop`
body) may have a SegOp as its expression.  A SegOp runs its `body` once per
point of a segment space, in parallel; the body is *kernel code*:

* it binds scalars (`Prim` types): scalar BasicOps, `Index` that yields a
  scalar, `If` and `Loop`, and `Assert` with at most `MAX_ASSERT_ARGS`
  message arguments (a kernel reports them through a fixed-size buffer);
* in a SegMap it may also bind *thread-private arrays*, whose shapes are
  known on the host before the launch (constants or host variables): made by
  `Scratch` (uninitialised) or `Replicate`, written by `Update` with fixed
  indices (in place: the array updated is never used again, as uniqueness
  types promise), read by `Index`, and carried by `Loop` merge parameters and
  `If` results.  A SegMap may return such arrays: result `i` then has shape
  `dims ++ shape(ret[i])`.  SegRed and SegScan bodies and operators bind
  only scalars;
* it contains no SOACs and no `Apply`; the flattening pass
  (`futgen.flatten`) inlines calls and turns inner SOACs into sequential
  loops before making a SegOp, and leaves a SOAC on the host when it cannot.

Segment spaces and results follow Futhark's `IR/SegOp.hs`:

* `SegSpace(gtids, dims)`: the body sees one index per dimension (`gtids`,
  i64); the space has `prod(dims)` points.
* Levels (Futhark's SegThread/SegGroup, the papers' levels 1 and 0):
  `GRID`: one thread per point, across the whole device; `BLOCKS`: a SegMap
  whose points each get a whole thread block, its body *block code*;
  `BLOCK`: a SegMap, SegRed or SegScan inside block code, whose points are
  shared by the threads of the block.
* `SegMap`: the body returns one scalar per result; result `i` is an array
  of shape `dims` with element type `ret[i]`.
* `SegRed`: the body returns first the operands of every reduction operator
  (`len(op.nes)` values each, in order), then "map-out" values.  Reductions
  run over the innermost dimension of the space, segmented by the outer
  ones: a reduction result has shape `dims[:-1]` (a scalar for a
  one-dimensional space); a map-out result has shape `dims`.
* `SegScan`: like SegRed, but inclusive scans over the innermost dimension;
  every result has shape `dims`.
* `SegHist`: histograms over a one-dimensional space (Futhark's SegHist):
  the body returns one bin index per histogram, then each histogram's
  value; the value is combined into its bin of the destination with the
  operator (associative and commutative, so in any order), bins out of
  range are skipped.  The destinations are consumed: updated in place, they
  are the results.
* `SegScatter`: writes over a one-dimensional space (Futhark's SegMap with
  write results): the body returns, per destination, one index per
  dimension and then the value; out-of-bounds writes are skipped.  The
  destinations are consumed and updated in place; two points writing one
  position leave either value (Futhark leaves it unspecified).

A SegHist or SegScatter keeps the core statement it implements (`host`),
which a backend without atomics (the CPU backend) runs as it is.

Block code (the body of a `BLOCKS` SegMap: incremental flattening's
intra-block version) is run by every thread of the block alike, so it
computes scalars redundantly, and its control flow is the same in every
thread.  Its parallel work is `BLOCK` SegOps, whose bodies are kernel code
as above (no arrays of their own).  The arrays it binds (the results of
`BLOCK` SegMaps and SegScans, `Replicate`, loop parameters, `If` results)
live in the block's shared memory, so their shapes must be known on the
host; they are never updated in place.  `block_shared_arrays` lists them and
`BlockFits(bytes)` is the host's run-time check that they fit.

Versions (incremental flattening, `futgen.flatten`) are host-level `If`s
whose condition is a `ThresholdCmp`: `threshold(name) <= par`, true when
the parallelism `par` that the then-branch's version exploits suffices.
Its `name` is a tuning parameter (`main.suff_outer_par_0`), and `path`
lists the guards (name, branch taken) between it and the root of its
version tree, which the autotuner needs.

Printed (`futgen dump --ir gpu`), a SegRed summing `xs` looks like

    let (sum_7: f32) =
      segred grid (gtid_5 < n_1)
        reduce (0.0f32) \\(a_2: f32, b_3: f32) : (f32) -> { ... }
        : (f32)
      {
        let (x_6: f32) = xs_0[gtid_5]
        in (x_6)
      }
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from futgen_runtime.errors import FAILURE_ARGS

from futgen.core.ir import (
    ArrayT,
    Body,
    HistOp,
    If,
    Lambda,
    Loop,
    Prim,
    ScatterDest,
    Stm,
    SubExp,
    Type,
    VName,
)

MAX_ASSERT_ARGS = FAILURE_ARGS  # message arguments a kernel can report

# The value types a SegHist combines atomically: those of 32 and 64 bits,
# which compare and swap can update whatever the operator (others, and
# tuples, are combined under a lock per bin).
HIST_PRIMS = frozenset({"i32", "u32", "f32", "i64", "u64", "f64"})


GRID, BLOCKS, BLOCK = "grid", "blocks", "block"

# Each shared array of block code starts at a multiple of this many bytes
# (the flattener's `BlockFits` and the code generator's layout agree).
SHARED_ALIGN = 16
# Block arrays in shared memory have an element of padding after every
# 2**SHARED_PAD_SHIFT: element i lives at i + (i >> SHARED_PAD_SHIFT), so
# the runs of consecutive elements that a block scan gives each thread
# (thread t: 4t ... 4t + 3) fall in distinct banks across a warp, where
# unpadded every 8th lane would share a bank (4-way conflicts).  Strided
# accesses (thread t: t, t + B, ...) stay conflict-free.
SHARED_PAD_SHIFT = 5


@dataclass(frozen=True, slots=True)
class Scratch:
    """A new thread-private array whose elements are written before they are read."""

    prim: str
    shape: tuple[SubExp, ...]


@dataclass(frozen=True, slots=True)
class SegSpace:
    """The points a SegOp runs at: one i64 thread index per dimension."""

    gtids: tuple[VName, ...]
    dims: tuple[SubExp, ...]


@dataclass(frozen=True, slots=True)
class SegBinOp:
    """An associative operator of a SegRed or SegScan, with neutral elements."""

    lam: Lambda
    nes: tuple[SubExp, ...]
    commutative: bool = False


@dataclass(frozen=True, slots=True)
class SegMap:
    """One result array of shape `space.dims` per value the body returns.

    `host` is the core map statement it implements, kept where the threads
    build private arrays: a backend without private memory (the CPU
    backend) runs that map row by row, its inner SOACs whole-array
    operations, rather than the threads' sequential loops.  `host_before`
    are statements that backend runs before `host`: the GRID SegMaps that
    `futgen.opt.producers` fused into this one, whose results `host` reads."""

    level: str
    space: SegSpace
    ret: tuple[Type, ...]
    body: Body
    host: Stm | None = None
    host_before: tuple[Stm, ...] = ()


@dataclass(frozen=True, slots=True)
class SegRed:
    """Segmented reductions over the innermost dimension (plus map-out results)."""

    level: str
    space: SegSpace
    ops: tuple[SegBinOp, ...]
    ret: tuple[Type, ...]
    body: Body


@dataclass(frozen=True, slots=True)
class SegScan:
    """Segmented inclusive scans over the innermost dimension (plus map-out results)."""

    level: str
    space: SegSpace
    ops: tuple[SegBinOp, ...]
    ret: tuple[Type, ...]
    body: Body


@dataclass(frozen=True, slots=True)
class SegHist:
    """Histograms into destinations updated in place (one per component of
    an operator's value; every component a scalar).  `ret` types the body's
    results (bins, then values)."""

    level: str
    space: SegSpace
    ops: tuple[HistOp, ...]
    ret: tuple[Type, ...]
    body: Body
    host: Stm


@dataclass(frozen=True, slots=True)
class SegScatter:
    """Writes of scalars into destinations updated in place.  `ret` types the
    body's results (per destination: its indices, then the value)."""

    level: str
    space: SegSpace
    dests: tuple[ScatterDest, ...]
    ret: tuple[Type, ...]
    body: Body
    host: Stm


SegOp = SegMap | SegRed | SegScan | SegHist | SegScatter

# A threshold's value when nothing tunes it, and "infinity" (never taken).
DEFAULT_THRESHOLD = 32768
INFINITE_THRESHOLD = 2_000_000_000


@dataclass(frozen=True, slots=True)
class ThresholdCmp:
    """`threshold(name) <= par` (a bool): whether a version that exploits
    parallelism `par` gets enough of it, by the tunable threshold `name`.
    `path`: the enclosing guards, outermost first, with the branch taken."""

    name: str
    par: SubExp
    path: tuple[tuple[str, bool], ...] = ()
    default: int = DEFAULT_THRESHOLD


@dataclass(frozen=True, slots=True)
class BlockFits:
    """Whether a block's shared memory can hold `bytes` more bytes on this
    device (a bool; always true on a backend without shared memory)."""

    bytes: SubExp


def path_entries(path: Iterable[tuple[str, bool]]) -> tuple[str, ...]:
    """Guards (name, branch taken) as a tuning parameter's path records them:
    `("!main.suff_outer_par_0", "main.suff_intra_par_1")`."""
    return tuple(("" if taken else "!") + name for name, taken in path)


def path_text(path: Iterable[tuple[str, bool]]) -> str:
    """A guard path as Futhark writes it: `!main.suff_outer_par_0 main.suff_intra_par_1`."""
    return " ".join(path_entries(path))


def binds_arrays(body: Body) -> bool:
    """Whether kernel code `body` binds arrays (thread-private ones), at any depth."""
    for stm in body.stms:
        if not all(isinstance(p.type, Prim) for p in stm.pat):
            return True
        match stm.exp:
            case If(_, then_, else_, _) if binds_arrays(then_) or binds_arrays(else_):
                return True
            case Loop(merge, _, loop_body) if (
                    not all(isinstance(p.type, Prim) for p, _ in merge) or binds_arrays(loop_body)):
                return True
    return False


def block_ops(body: Body) -> list[SegMap | SegRed | SegScan]:
    """The `BLOCK` SegOps of block code `body`, at any depth of its ifs and loops."""
    out: list[SegMap | SegRed | SegScan] = []
    for stm in body.stms:
        match stm.exp:
            case SegMap() | SegRed() | SegScan() if stm.exp.level == BLOCK:
                out.append(stm.exp)
            case If(_, then_, else_, _):
                out += block_ops(then_) + block_ops(else_)
            case Loop(_, _, loop_body):
                out += block_ops(loop_body)
    return out


def block_shared_arrays(body: Body) -> list[tuple[VName, ArrayT]]:
    """The arrays block code `body` binds that get shared memory of their
    own, in the order its statements bind them, at any depth: statement
    patterns and loop parameters (a loop's results are its parameters')."""
    out: list[tuple[VName, ArrayT]] = []
    for stm in body.stms:
        match stm.exp:
            case Loop(merge, _, loop_body):
                out += [(p.name, p.type) for p, _ in merge if isinstance(p.type, ArrayT)]
                out += block_shared_arrays(loop_body)
                continue
            case If(_, then_, else_, _):
                out += block_shared_arrays(then_) + block_shared_arrays(else_)
        out += [(p.name, p.type) for p in stm.pat if isinstance(p.type, ArrayT)]
    return out


def num_red_results(op: SegRed | SegScan) -> int:
    """How many of the body's results feed the operators (the rest are map-out)."""
    return sum(len(o.nes) for o in op.ops)
