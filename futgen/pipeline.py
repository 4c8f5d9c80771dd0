"""The compiler's passes over the IR, in order, as named values.

A program is parsed and type-checked (`futgen.frontend`), internalised into
the core IR (`futgen.core`), and then goes through `PASSES`, each a
function from a program to a program: core IR passes first, then
flattening into the GPU IR, which the host and CUDA code generators
consume.  `futgen dump --ir NAME` prints the program after the pass of that
name (`core`: before the first).  Each pass is tested to keep the meaning
of the example programs (tests/test_pipeline.py): core IR passes under the
core IR interpreter, the GPU IR under its own.

After flattening, `check_program` states the kernel-code rules the code
generators rely on.  There is no IR type checker yet: that, a reader for
the printed IR and more passes (simplification, the intra-block
versions of incremental flattening) are issue 9's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from futgen.core import ir
from futgen.flatten import flatten
from futgen.flatten.check import check_program
from futgen.flatten.fusion import fuse_body
from futgen.opt.simplify import simplify


@dataclass(frozen=True)
class Options:
    """What the user chose for the passes (`futgen build --flattening=...`)."""

    flattening: str = "incremental"  # or "moderate": one version per SegOp


@dataclass(frozen=True)
class Pass:
    """One pass: its name (for `futgen dump --ir`), what it does, and the
    function from program (and options) to program; `gpu` when its result
    is GPU IR."""

    name: str
    description: str
    run: Callable[[ir.Program, Options], ir.Program]
    gpu: bool = False


def fuse(prog: ir.Program, options: Options = Options()) -> ir.Program:
    """Every map fused into the one Screma, Hist or Scatter that consumes it,
    in host code and in the bodies of its ifs and loops (flattening fuses
    the bodies it builds for kernels itself, after inlining)."""
    return ir.Program(tuple(replace(f, body=_fuse_host(f.body)) for f in prog.functions))


def _fuse_host(body: ir.Body) -> ir.Body:
    out = []
    for stm in fuse_body(body).stms:
        match stm.exp:
            case ir.If(_, then_, else_, _):
                stm = replace(stm, exp=replace(stm.exp, then_=_fuse_host(then_),
                                               else_=_fuse_host(else_)))
            case ir.Loop(_, _, loop_body):
                stm = replace(stm, exp=replace(stm.exp, body=_fuse_host(loop_body)))
        out.append(stm)
    return ir.Body(tuple(out), body.result)


def _flatten(prog: ir.Program, options: Options) -> ir.Program:
    out = flatten(prog, options.flattening)
    check_program(out)
    return out


PASSES: tuple[Pass, ...] = (
    Pass("simplify", "copy propagation, exact constant folding, common subexpressions, "
         "dead code, invariant code hoisted out of loops and lambdas",
         lambda prog, options: simplify(prog)),
    Pass("fuse", "maps fused into their one consuming Screma, Hist or Scatter "
         "(redomap, scanomap, map-map)", fuse),
    Pass("flatten", "core IR to GPU IR: parallel SOACs become SegOps whose bodies are "
         "sequential kernel code, in versions guarded by thresholds (incremental "
         "flattening); the kernel-code rules checked", _flatten, gpu=True),
)
PASS_NAMES = tuple(p.name for p in PASSES)


def run_passes(prog: ir.Program, until: str | None = None,
               options: Options = Options()) -> ir.Program:
    """`prog` (core IR) after every pass, or after the pass named `until`."""
    if until is not None and until not in PASS_NAMES:
        raise ValueError(f"no pass named {until!r}; the passes are {', '.join(PASS_NAMES)}")
    for p in PASSES:
        prog = p.run(prog, options)
        if p.name == until:
            break
    return prog


def is_gpu(until: str | None) -> bool:
    """Whether the program after pass `until` (None: all) is GPU IR."""
    names = PASS_NAMES if until is None else PASS_NAMES[:PASS_NAMES.index(until) + 1]
    return any(p.gpu for p in PASSES if p.name in names)


__all__ = ["PASSES", "PASS_NAMES", "Options", "Pass", "fuse", "is_gpu", "run_passes"]
