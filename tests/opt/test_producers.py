"""The fuse-producers pass (futgen.opt.producers): a GRID SegMap that an
intra-block kernel reads at its own points is computed by that kernel, and
written out by it where later code reads it; the GPU IR interpreter gives
the same results before and after in every version, and the CPU backend,
which runs the kernel's core map, gets the producer's result too."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from futgen.core import ir, load
from futgen.gpu.check import check_program
from futgen.gpu.ir import BLOCKS, GRID, SegMap
from futgen.opt.parts import bodies, host_stms
from futgen.opt.producers import fuse_producers
from futgen.pipeline import run_passes
from futgen.testing.versions import assert_same_in_every_version

# LocVolCalib's shape (tests/programs/kernels/producers.fut): a stencil made
# transposed for the rows that read it at their own points in an
# intra-block version, read again afterwards (`kept`) or not (`used_once`);
# `across`'s producer reads across its threads, which tiles serve apart.
PROGRAM = Path(__file__).resolve().parents[1] / "programs" / "kernels" / "producers.fut"
RSS = np.arange(2 * 5 * 6, dtype=np.float32).reshape(2, 5, 6) % 7 - 3
ARGS = {"kept": [RSS], "used_once": [RSS],
        "across": [RSS, np.arange(2 * 6 * 5, dtype=np.float32).reshape(2, 6, 5) % 5 - 2]}


def _before_and_after():
    before = run_passes(load(PROGRAM), until="simplify-host")
    after = fuse_producers(before)
    check_program(after)
    return before, after


def _segmaps(prog, entry: str, level: str) -> list:
    return [s for s in host_stms(prog.function(entry).body)
            if isinstance(s.exp, SegMap) and s.exp.level == level]


def _fused(prog, entry: str) -> list:
    """The BLOCKS SegMaps of `entry` that compute a producer themselves."""
    return [s for s in _segmaps(prog, entry, BLOCKS) if s.exp.host_before]


def test_the_intra_block_kernel_computes_and_writes_what_it_read() -> None:
    before, after = _before_and_after()
    [kept] = _fused(after, "kept")
    assert len(kept.pat) == 2  # its own result, and the producer's (a map-out)
    [once] = _fused(after, "used_once")
    assert len(once.pat) == 1  # nothing reads the producer's result later
    # The CPU backend runs the producer before the kernel's core map; the
    # other versions keep a copy each, and none is left in front of them.
    for stm in (kept, once):
        [prod] = stm.exp.host_before
        assert prod.exp.level == GRID and len(prod.exp.space.dims) == 3
    for entry, stm in (("kept", kept), ("used_once", once)):
        assert not _producers_in_front(after.function(entry).body, stm), entry
        assert _producers_in_front(before.function(entry).body, _blocks(before, entry)), entry
    assert not _fused(after, "across")  # its producer reads across its threads


def _blocks(prog, entry: str) -> ir.Stm:
    [stm] = _segmaps(prog, entry, BLOCKS)
    return stm


def _producers_in_front(body: ir.Body, target: ir.Stm) -> bool:
    """Whether a 3-D GRID SegMap comes before the statement holding `target`
    in the body (at any depth) that holds it."""
    for k, stm in enumerate(body.stms):
        inner = list(bodies(stm.exp)) if isinstance(stm.exp, ir.If | ir.Loop) else []
        if stm is target or any(target in host_stms(b) for b in inner):
            if any(_producers_in_front(b, target) for b in inner):
                return True
            return any(isinstance(s.exp, SegMap) and s.exp.level == GRID
                       and len(s.exp.space.dims) == 3 for s in body.stms[:k])
    return False


@pytest.mark.parametrize("entry", sorted(ARGS))
def test_every_version_means_the_same(entry: str) -> None:
    before, after = _before_and_after()
    assert_same_in_every_version(before, after, entry, ARGS[entry])
