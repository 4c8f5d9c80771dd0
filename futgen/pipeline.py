"""The compiler's passes over the IR, in order, as named values.

A program is parsed and type-checked (`futgen.frontend`), internalised into
the core IR (`futgen.core`), and then goes through `PASSES`, each a
function from a program to a program: core IR passes first, then
flattening into the GPU IR, which the host and CUDA code generators
consume.  `futgen dump --ir NAME` prints the program after the pass of that
name (`core`: before the first).  Each pass is tested to keep the meaning
of the example programs (tests/flatten/test_pipeline.py): core IR passes
under the core IR interpreter, the GPU IR under its own.

The core IR passes (`futgen.opt`) first simplify the program (copy
propagation, exact constant folding, common subexpressions, dead code,
invariant code out of loops and lambdas), then fuse its SOACs by the
thesis's rules (`futgen.flatten.fusion`: vertical, with map-outs, and
horizontal), then simplify the fused lambdas.  `Options.fusion` False
(`--no-fusion`) skips fusion, to measure it; flattening still fuses the
kernel bodies it builds, since that is how inner SOACs become loops.

There is no host-level inlining pass: flattening inlines the calls in SOAC
lambdas, and inlining host calls too (tried on the benchmark suite) made
the passes 1.7 times slower and changed what flattening makes of several
programs, for better or worse (LocVolCalib's 17 SegOps became one SegMap
running everything sequentially per thread, srad's 6 became 11); where
inlining pays off is for flattening's versions to decide, not an earlier
pass.

Flattening ends by checking the kernel-code rules the code generators rely
on (`futgen.gpu.check.check_kernel_rules`).  With `Options.check_ir`
(`--check-ir`; on in the test suite, which sets `FUTGEN_CHECK_IR=1`), the
IR type checker of the IR at hand (`futgen.core.check`, or
`futgen.gpu.check` once a `gpu` pass has run) checks the input and the
result of every pass, and an error names the pass after which the IR broke.
A pass can be tested text in, text out: `futgen.core.read` reads what
`futgen dump` prints.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field

from futgen.core import check as core_check
from futgen.core import ir
from futgen.flatten import flatten
from futgen.flatten.fusion import fuse
from futgen.gpu import check as gpu_check
from futgen.opt.block_invariants import hoist_block_invariants
from futgen.opt.computed_reads import computed_reads
from futgen.opt.producers import fuse_producers
from futgen.opt.rearranges import fuse_rearranges
from futgen.opt.simplify import simplify
from futgen.opt.simplify_host import simplify_host


def _check_ir_default() -> bool:
    """`FUTGEN_CHECK_IR=1` turns the checks on wherever no option says
    otherwise: tests/conftest.py sets it, so that every pipeline run of the
    test suite, in test workers too, is checked."""
    return os.environ.get("FUTGEN_CHECK_IR", "") == "1"


@dataclass(frozen=True)
class Options:
    """What the user chose for the passes (`futgen build --flattening=...`)."""

    flattening: str = "incremental"  # or "moderate": one version per SegOp
    # Type-check the IR before and after every pass (`--check-ir`).
    check_ir: bool = field(default_factory=_check_ir_default)
    fusion: bool = True  # False: no `fuse` pass (to measure what fusion gains)
    # f32 division in CUDA kernels within 2 ulp, not correctly rounded
    # (`--fast-division`; scalar.F32_DIVISION says why).
    fast_division: bool = False


@dataclass(frozen=True)
class Pass:
    """One pass: its name (for `futgen dump --ir`), what it does, and the
    function from program (and options) to program; `gpu` when its result
    is GPU IR."""

    name: str
    description: str
    run: Callable[[ir.Program, Options], ir.Program]
    gpu: bool = False


def _flatten(prog: ir.Program, options: Options) -> ir.Program:
    out = flatten(prog, options.flattening)
    gpu_check.check_kernel_rules(out)
    return out


PASSES: tuple[Pass, ...] = (
    Pass("simplify", "copy propagation, exact constant folding, common subexpressions "
         "(not yet of SOACs), dead code, invariant code hoisted out of loops and lambdas",
         lambda prog, options: simplify(prog, share_soacs=False)),
    Pass("fuse", "SOACs fused by the thesis's rules: vertical (map-map, redomap, scanomap, "
         "map into scatter or hist, map-outs kept) and horizontal (one pass over a shared "
         "input); skipped with --no-fusion",
         lambda prog, options: fuse(prog) if options.fusion else prog),
    Pass("simplify-fused", "the simplifications again after fusion: work that fused "
         "lambdas have in common, equal SOACs shared",
         lambda prog, options: simplify(prog)),
    Pass("flatten", "core IR to GPU IR: parallel SOACs become SegOps whose bodies are "
         "sequential kernel code, in versions guarded by thresholds (incremental "
         "flattening); the kernel-code rules checked", _flatten, gpu=True),
    Pass("computed-reads", "kernels compute the elements of host iotas and replicates "
         "they read at indices known in range (`start + i * stride`, the replicated "
         "value) instead of reading them",
         lambda prog, options: computed_reads(prog), gpu=True),
    Pass("fuse-rearranges", "a transposition that SegMaps can read through is not made: they "
         "read its source with the indices permuted (where no read becomes less coalesced, "
         "or tiles stage it); a SegMap's result wanted transposed is made so by the SegMap; "
         "one still needed moves into the branch that needs it",
         lambda prog, options: fuse_rearranges(prog), gpu=True),
    Pass("simplify-host", "the host code's scalars after flattening: copies propagated, "
         "rules, common subexpressions, invariant ones out of loops and branches, dead ones "
         "removed", lambda prog, options: simplify_host(prog), gpu=True),
    Pass("fuse-producers", "a GRID SegMap that an intra-block kernel reads at its own "
         "points is computed by that kernel (which writes it out too where later code "
         "reads it), in the version that can; the other versions make it as before",
         lambda prog, options: fuse_producers(prog), gpu=True),
    Pass("hoist-block-invariants", "the BLOCK SegOps of an intra-block kernel that some of "
         "its block indices do not change run once per value of the others, in a kernel "
         "launched before it, whose rows it reads",
         lambda prog, options: hoist_block_invariants(prog), gpu=True),
)
PASS_NAMES = tuple(p.name for p in PASSES)


def run_passes(prog: ir.Program, until: str | None = None,
               options: Options | None = None) -> ir.Program:
    """`prog` (core IR) after every pass, or after the pass named `until`;
    with `options.check_ir`, checked before and after each pass
    (`IRTypeError` naming the pass after which the IR broke)."""
    options = options or Options()
    if until is not None and until not in PASS_NAMES:
        raise ValueError(f"no pass named {until!r}; the passes are {', '.join(PASS_NAMES)}")
    if options.check_ir:
        core_check.check_program(prog)
    gpu = False
    for p in PASSES:
        prog = p.run(prog, options)
        gpu = gpu or p.gpu
        if options.check_ir:
            _check_after(p.name, prog, gpu)
        if p.name == until:
            break
    return prog


def _check_after(name: str, prog: ir.Program, gpu: bool) -> None:
    try:
        (gpu_check if gpu else core_check).check_program(prog)
    except core_check.IRTypeError as e:
        e.after = name
        raise


def is_gpu(until: str | None) -> bool:
    """Whether the program after pass `until` (None: all) is GPU IR."""
    names = PASS_NAMES if until is None else PASS_NAMES[:PASS_NAMES.index(until) + 1]
    return any(p.gpu for p in PASSES if p.name in names)


__all__ = ["PASSES", "PASS_NAMES", "Options", "Pass", "is_gpu", "run_passes"]
