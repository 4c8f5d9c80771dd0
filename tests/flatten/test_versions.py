"""Incremental flattening's versions: the version trees of the nests the
papers are about, each version checked against the interpreter (through the
GPU IR interpreter with thresholds forced, and in built packages on the CPU
backend along every path of the threshold forest)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from futgen.core import internalise, ir
from futgen.data import compare_values
from futgen.flatten.check import check_program
from futgen.frontend import check_source
from futgen.gpu.interpret import run
from futgen.gpu.ir import (
    INFINITE_THRESHOLD,
    SegMap,
    SegOp,
    SegRed,
    SegScan,
    ThresholdCmp,
)
from futgen.pipeline import Options, run_passes
from futgen.testing import TestOptions, run_tests

ROOT = Path(__file__).resolve().parents[2]
FORCED = {"outer": 0, "flat": INFINITE_THRESHOLD}

MATMUL = """
entry main [n][m][p] (a: [n][m]f32) (b: [m][p]f32) : [n][p]f32 =
  map (\\row -> map (\\col -> reduce (+) 0 (map2 (*) row col)) (transpose b)) a"""


def _flat(src: str, flattening: str = "incremental") -> ir.Program:
    prog = run_passes(internalise(check_source(src)), options=Options(flattening))
    check_program(prog)
    return prog


def _versions(prog: ir.Program, fn: str = "main") -> list[tuple[ThresholdCmp, SegOp, SegOp]]:
    """(guard, then-version, else-version) of every guarded choice in `fn`."""
    body = prog.function(fn).body
    guards = {s.pat[0].name: s.exp for s in body.stms if isinstance(s.exp, ThresholdCmp)}
    out = []
    for s in body.stms:
        if isinstance(s.exp, ir.If) and isinstance(s.exp.cond, ir.Var) \
                and s.exp.cond.name in guards:
            [outer] = [t.exp for t in s.exp.then_.stms if isinstance(t.exp, SegOp)]
            [flat] = [t.exp for t in s.exp.else_.stms if isinstance(t.exp, SegOp)]
            out.append((guards[s.exp.cond.name], outer, flat))
    return out


def _shape(op: SegOp) -> str:
    return f"{type(op).__name__}{len(op.space.dims)}"


def test_matmul_has_the_outer_and_the_fully_flattened_version() -> None:
    prog = _flat(MATMUL)
    [(guard, outer, flat)] = _versions(prog)
    assert guard.name == "main.suff_outer_par_0" and guard.default == 32768
    assert (_shape(outer), _shape(flat)) == ("SegMap2", "SegRed3")
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.arange(12, dtype=np.float32).reshape(3, 4)
    for value in FORCED.values():
        got = run(prog, "main", [a, b], thresholds={guard.name: value})[0]
        np.testing.assert_allclose(got, a @ b)


def test_the_guard_compares_the_outer_versions_parallelism() -> None:
    """P = n * p: the outer version's threads; 2 x 4 = 8 here."""
    prog = _flat(MATMUL)
    a, b = np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)
    [(guard, _, _)] = _versions(prog)
    for threshold, outer in ((8, True), (9, False)):
        from futgen.gpu.interpret import GpuInterpreter

        interp = GpuInterpreter(prog, thresholds={guard.name: threshold})
        seen = []
        orig = interp.exp

        def spy(e, pat, env, orig=orig, seen=seen):
            out = orig(e, pat, env)
            if isinstance(e, ThresholdCmp):
                seen.append(bool(out[0]))
            return out

        interp.exp = spy
        interp.call(prog.function("main"), [a, b])
        assert seen == [outer]


def test_moderate_flattening_has_one_version() -> None:
    prog = _flat(MATMUL, "moderate")
    assert not _versions(prog)
    [op] = [s.exp for s in prog.function("main").body.stms if isinstance(s.exp, SegOp)]
    assert _shape(op) == "SegMap2"


@pytest.mark.parametrize(("src", "outer", "flat"), [
    ("entry main [k][n][m] (x: [k][n][m]i32) : [k][n][m]i32 = map (map (scan (+) 0)) x",
     "SegMap2", "SegScan3"),
    ("entry main [a][b][c][d] (x: [a][b][c][d]f32) : [a][b][c]f32 = map (map (map f32.sum)) x",
     "SegMap3", "SegRed4"),
])
def test_scans_and_deeper_nests_get_both_versions(src: str, outer: str, flat: str) -> None:
    [(_, o, f)] = _versions(_flat(src))
    assert (_shape(o), _shape(f)) == (outer, flat)


def test_a_reduction_under_one_map_has_no_guard() -> None:
    """The segmented SegRed's code generator picks a thread, a warp or
    blocks per segment itself."""
    prog = _flat("entry main [n][m] (x: [n][m]i32) : [n]i32 = map i32.sum x")
    assert not _versions(prog)
    [op] = [s.exp for s in prog.function("main").body.stms if isinstance(s.exp, SegOp)]
    assert isinstance(op, SegRed) and _shape(op) == "SegRed2"


def test_versions_keep_names_unique() -> None:
    """The flat version is renamed: no name is bound twice in the program."""
    from futgen.flatten.names import binders

    prog = _flat(MATMUL)
    names = list(binders(prog.functions))
    assert len(names) == len(set(names))


def test_each_version_of_the_version_programs_matches_the_interpreter() -> None:
    """tests/programs/versions through the GPU IR interpreter, every guard
    forced each way, against the reference interpreter."""
    from futgen.frontend import load
    from futgen.interp.interpreter import Interpreter

    path = ROOT / "tests" / "programs" / "versions" / "nests.fut"
    prog = run_passes(internalise(load(str(path))))
    reference = Interpreter(load(str(path)))
    rng = np.random.default_rng(3)
    cases = {"matmul": [rng.random((3, 40), np.float32), rng.random((40, 5), np.float32)],
             "row_col_prefix": [rng.integers(-9, 9, (2, 3, 50), np.int32)],
             "compose3": [rng.integers(-9, 9, (2, 2, 3, 20), np.int32)],
             "sums_and_squares": [rng.random((2, 3, 30))]}
    for fn, args in cases.items():
        want = reference.call(fn, [a.copy() for a in args])
        guards = [g.name for g, _, _ in _versions(prog, fn)]
        # Each has a reduction or scan under two maps (in `sums_and_squares`
        # one whose map's values are returned too, a map-out): one guard.
        assert len(guards) == 1, fn
        for value in FORCED.values():
            got = run(prog, fn, [a.copy() for a in args],
                      thresholds=dict.fromkeys(guards, value))
            assert not compare_values(_leaves(want), got), (fn, value)


def _leaves(values: list) -> list:
    """Interpreter values as the IR's: tuples and arrays of tuples as their components."""
    from futgen.interp.values import StructArray

    out = []
    for v in values:
        if isinstance(v, StructArray):
            v = v.fields
        out += _leaves(list(v)) if isinstance(v, tuple) else [v]
    return out


VERSIONED = [*sorted((ROOT / "examples").glob("*.fut")),
             *sorted((ROOT / "tests" / "programs").glob("*/*.fut"))]


@pytest.mark.parametrize("program", VERSIONED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_version_passes_the_test_blocks_on_the_cpu_backend(program: Path) -> None:
    report = run_tests([program], TestOptions(backend="cpu", timeout=300.0, versions=True))
    [result] = report.results
    assert result.status == "passed", str(report)


def test_scan_under_two_maps_is_one_segmented_segscan_in_the_flat_version() -> None:
    [(_, outer, flat)] = _versions(_flat(
        "entry main [n][m] (x: [n][m][3]i32) : [n][m][3]i32 = map (map (scan (+) 0)) x"))
    assert isinstance(outer, SegMap) and isinstance(flat, SegScan)
    assert flat.space.dims[-1] == ir.Constant(3, "i64")


def test_a_package_lists_its_guards_and_reports_the_versions_it_ran(tmp_path, capsys) -> None:
    from futgen.codegen.package import build_package
    from futgen.testing.compiled import import_package

    pkg = import_package(build_package(ROOT / "tests" / "programs" / "versions" / "nests.fut",
                                       tmp_path, name="nests"))
    guard = pkg.TUNING_PARAMS["matmul.suff_outer_par_0"]
    assert (guard["class"], guard["default"], guard["path"]) == ("threshold", 32768, ())
    a, b = np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)
    inst = pkg.Nests(backend="cpu", tuning={"matmul.suff_outer_par_0": 9}, log=True)
    inst.matmul(a, b)
    assert inst.last_guards == [("matmul.suff_outer_par_0", 8, False)]
    assert capsys.readouterr().err.endswith("Compared matmul.suff_outer_par_0 <= 8: false.\n")
    inst.row_max(np.ones((2, 2), np.int32))
    assert inst.last_guards == []  # each call reports its own


@pytest.mark.gpu
@pytest.mark.parametrize("program", VERSIONED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_version_passes_the_test_blocks_on_cuda(program: Path) -> None:
    """On CUDA the forest also holds the kernels' strategy thresholds (a
    block, a warp, lanes or a thread per segment; tiles or none), so every
    strategy of every version runs."""
    report = run_tests([program], TestOptions(backend="cuda", timeout=600.0, versions=True))
    [result] = report.results
    assert result.status == "passed", str(report)


def test_the_version_tree_prints_each_guard_with_its_versions() -> None:
    from futgen.gpu.pretty import version_tree

    text = version_tree(_flat(MATMUL))
    lines = text.splitlines()
    assert lines[0] == "main"
    assert lines[1].startswith("  main.suff_outer_par_0 <= n_") and lines[1].endswith(
        "(default 32768)")
    assert lines[2].startswith("    true:  segmap (") and lines[3].startswith("    false: segred (")
    assert version_tree(_flat(MATMUL, "moderate")).splitlines()[1].startswith("  segmap (")
