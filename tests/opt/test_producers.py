"""The fuse-producers pass (futgen.opt.producers): a GRID SegMap that an
intra-block kernel reads at its own points is computed by that kernel, and
written out by it where later code reads it; the GPU IR interpreter gives
the same results before and after in every version, and the CPU backend,
which runs the kernel's core map, gets the producer's result too."""

from __future__ import annotations

import numpy as np
import pytest

from futgen.core import internalise
from futgen.frontend import check_source
from futgen.gpu.check import check_program
from futgen.gpu.interpret import run as run_gpu
from futgen.gpu.ir import BLOCKS, GRID, SegMap
from futgen.opt.parts import host_stms
from futgen.opt.producers import fuse_producers
from futgen.pipeline import run_passes
from futgen.tune.forest import program_thresholds, version_runs

# LocVolCalib's shape: a stencil along the outer dimension of `rs`, made
# transposed for the rows that read it at their own points in an intra-block
# version (two scans a row), and read again afterwards (`kept`) or not
# (`used_once`); `elsewhere` reads its producer reversed.
SOURCE = """
def stencil [n][m] (rs: [n][m]f32) : [m][n]f32 =
  map (\\j -> map (\\i -> let up = if i > 0 then rs[i - 1, j] else 0
                        let down = if i < n - 1 then rs[i + 1, j] else 0
                        in up + 2 * rs[i, j] - down) (iota n)) (iota m)

def solve [m] (r: [m]f32) (vr: [m]f32) : [m]f32 =
  let u = map2 (+) r vr
  let s = scan (+) 0 (map (\\i -> if i > 0 then u[i - 1] else u[0]) (indices u))
  let t = scan f32.max f32.lowest s
  in map2 (\\x y -> x * u[0] - y) t u

entry kept [k][n][m] (rss: [k][n][m]f32) : ([k][n][m]f32, [k][n][m]f32) =
  unzip (map (\\rs -> let v = stencil rs in (map2 solve rs (transpose v), transpose v)) rss)

entry used_once [k][n][m] (rss: [k][n][m]f32) : [k][n][m]f32 =
  map (\\rs -> let v = stencil rs in map2 solve rs (transpose v)) rss

entry elsewhere [n][m] (xss: [n][m]f32) : [n][m]f32 =
  let ys = map (map (\\x -> x * 2)) xss
  in map (\\ys_row -> scan (+) 0 (reverse ys_row)) ys
"""
RSS = np.arange(2 * 5 * 6, dtype=np.float32).reshape(2, 5, 6) % 7 - 3
ARGS = {"kept": [RSS], "used_once": [RSS],
        "elsewhere": [np.arange(12, dtype=np.float32).reshape(3, 4)]}


def _before_and_after():
    before = run_passes(internalise(check_source(SOURCE)), until="simplify-host")
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
    # The producer now runs only in the versions that do not fuse it: one
    # GRID SegMap fewer outside them, and a copy in each other branch.
    for entry in ("kept", "used_once"):
        grids = [s.pat[0].name.base for s in _segmaps(before, entry, GRID)]
        assert grids, entry
    assert not _fused(after, "elsewhere")  # its producer is read reversed: left alone


@pytest.mark.parametrize("entry", sorted(ARGS))
def test_every_version_means_the_same(entry: str) -> None:
    before, after = _before_and_after()
    for setting in version_runs(program_thresholds(after)):
        want = run_gpu(before, entry, ARGS[entry], thresholds=setting)
        got = run_gpu(after, entry, ARGS[entry], thresholds=setting)
        for w, g in zip(want, got):
            np.testing.assert_array_equal(g, w)
