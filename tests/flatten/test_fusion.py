"""Fusion (futgen.flatten.fusion): which SOACs each rule merges, the
SegOps flattening makes of the fused forms, and what `--no-fusion` keeps
apart.  tests/programs/opt/fusion.fut checks the values of these cases."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from futgen.cli import main as cli_main
from futgen.core import internalise, ir
from futgen.core.interpret import run as run_core
from futgen.frontend import check_source
from futgen.gpu.interpret import run as run_gpu
from futgen.gpu.ir import SegMap, SegOp, SegRed, SegScan
from futgen.pipeline import Options, run_passes

PROGRAM = Path(__file__).resolve().parents[1] / "programs" / "opt" / "fusion.fut"


def _after(src: str, until: str | None, fusion: bool = True) -> ir.Program:
    return run_passes(internalise(check_source(src)), until, Options(fusion=fusion))


def _soacs(prog: ir.Program, fn: str = "main") -> list:
    return [s.exp for s in prog.function(fn).body.stms
            if isinstance(s.exp, ir.Screma | ir.Scatter | ir.Hist | SegOp)]


SUMS_AND_SQUARES = """entry main (xs: []f32) : (f32, []f32) =
  let sq = map (\\x -> x * x) xs in (reduce (+) 0 sq, sq)"""


def test_a_reduction_keeps_its_map_as_a_map_out() -> None:
    fused = _after(SUMS_AND_SQUARES, "fuse")
    [screma] = _soacs(fused)
    assert len(screma.reds) == 1 and screma.arrs == (fused.function("main").params[0].name,)
    prog = _after(SUMS_AND_SQUARES, None)
    [segred] = _soacs(prog)
    assert isinstance(segred, SegRed) and len(segred.ret) == 2  # the operand and the map-out
    total, squares = run_gpu(prog, "main", [np.array([1, 2, 3], np.float32)])
    assert total == np.float32(14) and squares.tolist() == [1, 4, 9]


def test_reductions_over_one_array_fuse_horizontally() -> None:
    src = "entry main (xs: []i32) : (i32, i32) = (reduce (+) 0 xs, reduce i32.max 0 xs)"
    [screma] = _soacs(_after(src, "fuse"))
    assert len(screma.reds) == 2 and len(screma.arrs) == 1
    [segred] = _soacs(_after(src, None))
    assert isinstance(segred, SegRed) and len(segred.ops) == 2


def test_two_consumers_of_a_map_become_one_map() -> None:
    src = """entry main (xs: []i32) : ([]i32, []i32) =
               let ys = map (+ 1) xs in (map (* 2) ys, map (* 3) ys)"""
    [screma] = _soacs(_after(src, "fuse"))
    assert not screma.reds and not screma.scans and len(screma.map_lam.ret) == 2
    [segmap] = _soacs(_after(src, None))
    assert isinstance(segmap, SegMap)


def test_a_scan_and_a_reduction_stay_apart() -> None:
    src = "entry main (xs: []i32) : ([]i32, i32) = (scan (+) 0 xs, reduce (+) 0 xs)"
    assert [type(o) for o in _soacs(_after(src, None))] in ([SegScan, SegRed], [SegRed, SegScan])


def test_a_map_is_not_moved_past_an_update_of_its_input() -> None:
    src = """entry main (xs: *[]i32) : (i32, []i32) =
               let ys = map (+ 1) xs
               let xs[0] = 5
               in (reduce (+) 0 ys, xs)"""
    prog = _after(src, "fuse")
    assert len(_soacs(prog)) == 2
    total, xs = run_core(prog, "main", [np.array([1, 2, 3], np.int32)])
    assert total == 9 and xs.tolist() == [5, 2, 3]


def test_a_map_does_not_fuse_into_a_scatter_consuming_what_it_reads() -> None:
    src = """entry main (dest: *[]i32) (is: []i64) : []i32 =
               let vs = map (\\i -> dest[i]) is
               in scatter dest (indices is) vs"""
    prog = _after(src, "fuse")
    assert len(_soacs(prog)) == 2
    [out] = run_core(prog, "main", [np.array([10, 20, 30], np.int32), np.array([2, 0, 1])])
    assert out.tolist() == [30, 10, 20]


def test_two_map_nests_fuse_only_into_one() -> None:
    src = """entry main (xss: [][]i32) : [][]i32 =
               map (\\r -> scan (*) 1 r) (map (\\r -> scan (+) 0 r) xss)"""
    assert len(_soacs(_after(src, "fuse"))) == 2  # a scan's result cannot feed a scan
    ops = _soacs(_after(src, None))
    assert all(isinstance(o, SegScan) and len(o.space.dims) == 2 for o in ops)
    src = "entry main (xss: [][]i32) : [][]i32 = map (map (* 2)) (map (map (+ 1)) xss)"
    [op] = _soacs(_after(src, None))
    assert isinstance(op, SegMap) and len(op.space.dims) == 2


def test_a_map_nest_fuses_into_a_map_that_removes_its_array() -> None:
    # As in the thesis (and before): the sums run sequentially per row then.
    src = "entry main (xss: [][]i32) : []i32 = map (* 2) (map i32.sum xss)"
    assert len(_soacs(_after(src, "fuse"))) == 1


def test_horizontal_fusion_keeps_map_nests() -> None:
    src = """entry main (xss: [][]i32) : ([]i32, [][]i32) =
               (map i32.sum xss, map (\\r -> scan (+) 0 r) xss)"""
    assert len(_soacs(_after(src, "fuse"))) == 2


def test_no_fusion_keeps_the_soacs_apart() -> None:
    prog = _after(SUMS_AND_SQUARES, None, fusion=False)
    assert [type(o) for o in _soacs(prog)] == [SegMap, SegRed]
    total, squares = run_gpu(prog, "main", [np.array([1, 2, 3], np.float32)])
    assert total == np.float32(14) and squares.tolist() == [1, 4, 9]


def test_dump_takes_no_fusion(capsys) -> None:
    assert cli_main(["dump", "--ir", "fuse", "--no-fusion", str(PROGRAM)]) == 0
    fused_off = capsys.readouterr().out
    assert cli_main(["dump", "--ir", "fuse", str(PROGRAM)]) == 0
    assert fused_off.count("screma") > capsys.readouterr().out.count("screma")
