"""Incremental flattening's versions: the version trees of the nests the
papers are about, each version checked against the interpreter (through the
GPU IR interpreter with thresholds forced, and in built packages on the CPU
backend along every path of the threshold forest)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from futgen.core import internalise, ir
from futgen.data import compare_values
from futgen.frontend import check_source
from futgen.gpu.check import check_program
from futgen.gpu.interpret import run
from futgen.gpu.ir import (
    INFINITE_THRESHOLD,
    BlockFits,
    SegMap,
    SegOp,
    SegRed,
    SegScan,
    ThresholdCmp,
)
from futgen.gpu.pretty import version_tree
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
    for s in body.stms:  # a guard refined by whether the intra-block version fits
        if isinstance(s.exp, ir.BinOp) and getattr(s.exp.x, "name", None) in guards:
            guards[s.pat[0].name] = guards[s.exp.x.name]
    out = []
    for s in body.stms:
        if isinstance(s.exp, ir.If) and isinstance(s.exp.cond, ir.Var) \
                and s.exp.cond.name in guards:
            out.append((guards[s.exp.cond.name], _first_segop(s.exp.then_),
                        _first_segop(s.exp.else_)))
    return out


def _first_segop(body: ir.Body) -> SegOp:
    """The first SegOp of host code `body`, in a nested guard's or loop's body if need be."""
    for s in body.stms:
        if isinstance(s.exp, SegOp):
            return s.exp
        for inner in {ir.If: ("then_",), ir.Loop: ("body",)}.get(type(s.exp), ()):
            return _first_segop(getattr(s.exp, inner))
    raise AssertionError("no SegOp")


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
    """The flat version is renamed: no name is bound twice in a function,
    in MATMUL or any version program, but for the `host` statements of
    SegOps: the core statement a SegMap implements, kept for the CPU
    backend, binds the names of the kernel code it stands beside (and those
    of work hoisted out of that code, LocVolCalib's operators)."""
    from collections import Counter

    from futgen.flatten.names import binders

    sources = [MATMUL, *(p.read_text() for p in
                         sorted((ROOT / "tests" / "programs" / "versions").glob("*.fut")))]
    for src in sources:
        for f in _flat(src).functions:
            twice = [v for v, k in Counter(binders(_without_host(f))).items() if k > 1]
            assert twice == [], (f.name, twice)


def _without_host(node):
    """`node` with every SegOp's `host` statement left out."""
    import dataclasses

    if isinstance(node, tuple):
        return tuple(_without_host(x) for x in node)
    if not dataclasses.is_dataclass(node) or isinstance(node, type):
        return node
    fields = {f.name: _without_host(getattr(node, f.name)) for f in dataclasses.fields(node)}
    if "host" in fields:  # a SegOp's (SegMap, SegHist, SegScatter)
        fields["host"] = None
    return type(node)(**fields)


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


MAPSCAN1 = """
entry main [m][n] (xss: [m][n]i32) : [m][n]i32 =
  map2 (\\xs i -> loop row = xs for _j < 4 do
                   let row' = map (+ i32.i64 i) row
                   in scan (+) 0 row')
       xss (iota m)"""


def _block_ops(body: ir.Body) -> list[str]:
    """The `BLOCK` SegOps of block code, in order, as `SegScan` etc."""
    out = []
    for s in body.stms:
        if isinstance(s.exp, SegOp):
            out.append(type(s.exp).__name__)
        elif isinstance(s.exp, ir.Loop):
            out += [f"loop {x}" for x in _block_ops(s.exp.body)]
    return out


def test_mapscan1_has_the_papers_three_versions() -> None:
    """The papers' running example: a thread per row running the loop's map
    and scan sequentially; a block per row sharing them (taken when its
    arrays fit); or the map moved into the loop (rule G7), each round one
    scan segmented over all rows."""
    prog = _flat(MAPSCAN1)
    tree = re.sub(r"_\d+", "", version_tree(prog))
    assert tree.splitlines()[1:] == [
        "  main.suff_outer_par <= m (default 32768)",
        "    true:  segmap (m)",
        "    false: main.suff_intra_par <= m * intra (default 32768)",
        "        true:  segmap blocks (m)",
        # Each row's i32 of its index, distributed out of the loop (G6); the loop's scans.
        "        false: segmap (m)",
        "          segscan (m, n)"]
    [(_, outer, _)] = _versions(prog)
    intra = _first_segop(next(s.exp for s in prog.function("main").body.stms
                              if isinstance(s.exp, ir.If)).else_)
    assert (outer.level, intra.level) == ("grid", "blocks")
    # The row copied into shared memory, then the loop's map and scan.
    assert _block_ops(intra.body) == ["SegMap", "loop SegScan"]
    fits = [s for s in prog.function("main").body.stms if isinstance(s.exp, BlockFits)]
    assert len(fits) == 1
    xss = np.random.default_rng(1).integers(-9, 9, (5, 37), np.int32)
    want = xss.copy()
    for _ in range(4):
        want = np.cumsum(want + np.arange(5, dtype=np.int32)[:, None], axis=1, dtype=np.int32)
    names = ("main.suff_outer_par_0", "main.suff_intra_par_1")
    for outer_t, intra_t in ((0, 0), (INFINITE_THRESHOLD, 0), (INFINITE_THRESHOLD,) * 2):
        for vectorise in (True, False):
            got = run(prog, "main", [xss], thresholds=dict(zip(names, (outer_t, intra_t))),
                      vectorise=vectorise)
            np.testing.assert_array_equal(got[0], want)


@pytest.mark.parametrize(("src", "intra"), [
    ("entry main [n][m] (x: [n][m]i32) : [n]i32 = map i32.sum x", False),
    ("entry main [n][m] (x: [n][m]i32) : [n][m]i32 = map (scan (+) 0) x", False),
    # Two reductions over one row fuse into one (a segmented SegRed); a
    # reduction of a scan does not.
    ("entry main [n][m] (x: [n][m]i32) : [n](i32, i32) = map (\\r -> (i32.sum r, i32.maximum r)) x",
     False),
    ("entry main [n][m] (x: [n][m]i32) : [n]i32 = map (\\r -> i32.maximum (scan (+) 0 r)) x",
     True),
    (("entry main [n][m] (x: [n][m]i32) : [n][m]i32 = "
     "map (\\r -> loop r for _i < 3 do map (+1) r) x"), True),
])
def test_intra_block_versions_where_a_block_has_work_enough(src: str, intra: bool) -> None:
    """Futhark's rule: two or more reductions or scans, or a SOAC in a loop;
    one reduction or scan under a map is a segmented SegOp already."""
    levels = [op.level for _, _, op in _versions(_flat(src))]
    assert levels == (["blocks"] if intra else [])


def test_intra_block_code_keeps_arrays_it_cannot_share_out() -> None:
    """An array updated in place would need one thread to write while the
    others wait: no intra-block version (the loop of a map is one)."""
    src = """
entry main [n][m] (x: [n][m]i32) : [n][m]i32 =
  map (\\r -> loop r = copy r for i < m do
                let s = i32.sum r
                in r with [i] = s) x"""
    prog = _flat(src)
    assert [op.level for _, _, op in _versions(prog)] == ["grid"]
    assert "blocks" not in version_tree(prog)


def test_versions_stop_at_the_cap_with_a_warning(monkeypatch, tmp_path, capsys) -> None:
    """Versions nest (here a flat version's loop holds a map with versions
    of its own); past `MAX_GUARDS` guards a function's maps get one version,
    and `futgen` says so."""
    import futgen.flatten as flattening
    from futgen.cli import main as cli_main

    src = tmp_path / "deep.fut"
    src.write_text("""
entry main [n][m] (xss: [n][m]i32) : [n][m]i32 =
  map (\\xs -> loop xs for _i < 2 do
         let a = map (\\x -> loop x for _j < 2 do x + i32.sum xs) xs
         let b = scan (+) 0 a
         in map2 (+) a b) xss""")
    assert version_tree(_flat(src.read_text())).count("suff_outer_par") > 1
    monkeypatch.setattr(flattening, "MAX_GUARDS", 1)
    with pytest.warns(flattening.TooManyVersions, match="main reached 1 version guards"):
        assert version_tree(_flat(src.read_text())).count("suff_outer_par") == 1
    assert cli_main(["dump", "--ir", "versions", str(src)]) == 0
    assert "warning: main reached 1 version guards" in capsys.readouterr().err


def _tree_of(path: Path, fn: str) -> list[str]:
    """`fn`'s version tree with name tags dropped (`m_21` -> `m`)."""
    prog = run_passes(internalise(check_source(path.read_text())))
    text = re.sub(r"_\d+\b", "", version_tree(prog))
    lines = text.splitlines()
    start = lines.index(fn) + 1
    end = next((k for k in range(start, len(lines)) if not lines[k].startswith(" ")), len(lines))
    return lines[start:end]


def test_a_locvolcalib_shaped_program_has_a_loop_of_distributed_maps() -> None:
    """tests/programs/versions/locvol.fut: per strike, a time loop over a
    grid's rows and columns with a tridiagonal solve per row.  The strikes
    map: a thread per strike, or the map moved into the time loop (G7) and
    distributed over the statements around it (G6): the grids of all
    strikes as one 3-D SegMap, the time loop's map, and the final sums with
    versions of their own.  `step` alone: its maps fuse into the solve's
    scan once `tridag` is inlined, so the row map is one segmented scan
    over all rows (whose kernel picks a thread per row or one flagged scan
    at run time), with no guard."""
    path = ROOT / "tests" / "programs" / "versions" / "locvol.fut"
    main = _tree_of(path, "main")
    assert main[:3] == ["  main.suff_outer_par <= k (default 32768)",
                        "    true:  segmap (k)",
                        "    false: segmap (k, m, n)"]
    assert any("suff_outer_par <= k * m" in line for line in main[3:])
    assert any("segscan (k, m, n)" in line for line in main[3:])
    assert _tree_of(path, "step") == ["  segscan (m, n)"]


def test_a_heston_shaped_map_over_a_redomap_is_a_segmented_reduction(tmp_path) -> None:
    """A map over a redomap (Heston's calibration loop body): one segmented
    SegRed, no guard; its versions are its kernel's strategies (blocks, a
    warp, 8 lanes or a thread per segment), each a threshold of the
    package with its place in the cascade as its path."""
    from futgen.codegen.package import build_package
    from futgen.testing.compiled import import_package

    src = tmp_path / "heston.fut"
    src.write_text("""
entry main [n][m] (ps: [n]f32) (xs: [m]f32) : [n]f32 =
  map (\\p -> reduce (+) 0 (map (\\x -> f32.exp (-p * x) * x) xs)) ps""")
    prog = _flat(src.read_text())
    assert not _versions(prog)
    [op] = [s.exp for s in prog.function("main").body.stms if isinstance(s.exp, SegOp)]
    assert isinstance(op, SegRed) and _shape(op) == "SegRed2"
    pkg = import_package(build_package(src, tmp_path / "out", name="heston"))
    paths = {name.split(".")[1].rstrip("0123456789"): p["path"]
             for name, p in pkg.TUNING_PARAMS.items()}
    assert paths["segred_block_"] == ()
    assert paths["segred_warp_"] == ("!main.segred_block_0",)
    assert paths["segred_subwarp_"] == ("!main.segred_block_0", "!main.segred_warp_0")


def test_a_map_nest_gets_a_block_per_point_of_the_nest() -> None:
    """Two scans per row under two maps: the intra-block version's space is
    the whole perfect nest, a block per row."""
    prog = _flat("""
entry main [k][m][n] (x: [k][m][n]i32) : [k][m][n]i32 =
  map (map (\\xs -> let a = scan (+) 0 xs in map2 (+) a (scan (*) 1 a))) x""")
    [(_, outer, intra)] = _versions(prog)
    assert (_shape(outer), intra.level, len(intra.space.dims)) == ("SegMap2", "blocks", 2)
    assert _block_ops(intra.body) == ["SegScan", "SegScan", "SegMap"]


def _host_exps(body: ir.Body) -> list[ir.Exp]:
    """Every host expression of `body`, in guards' and loops' bodies too."""
    out: list[ir.Exp] = []
    for s in body.stms:
        out.append(s.exp)
        if isinstance(s.exp, ir.If):
            out += _host_exps(s.exp.then_) + _host_exps(s.exp.else_)
        elif isinstance(s.exp, ir.Loop):
            out += _host_exps(s.exp.body)
    return out


def test_distribution_transposes_copies_and_replicates_on_the_host() -> None:
    """tests/programs/versions/distribute.fut: in the flat version the
    point's transposition, copy and replication are one host operation on
    the arrays of all points, the invariant `replicate` runs once, the
    sizes the parts pass on are host sizes (no SOAC is left on the host,
    as one with sizes per point would be), and the results earlier parts
    made are not copied again."""
    path = ROOT / "tests" / "programs" / "versions" / "distribute.fut"
    # (after flattening: fuse-rearranges then has the map before it make the
    # transposition itself)
    prog = run_passes(internalise(check_source(path.read_text())), until="flatten")
    exps = _host_exps(prog.function("main").body)
    assert (0, 2, 1) in [e.perm for e in exps if isinstance(e, ir.Rearrange)]
    assert any(isinstance(e, ir.Copy) for e in exps)
    assert any(isinstance(e, ir.Replicate) and len(e.shape) == 1 for e in exps)
    assert not any(isinstance(e, ir.Screma | ir.Scatter | ir.Hist) for e in exps)
    tree = _tree_of(path, "main")
    assert "segscan (k, n, m)" in " ".join(tree)
    # Only the in-place update of each point's copy runs a thread per point.
    assert sum(line.endswith("segmap (k)") for line in tree) == 2  # and the outer version
    # A perfect nest distributes innermost first: outer, a block per row, or
    # each scan over all rows of all points.
    nested = _tree_of(path, "nested")
    assert nested[:2] == ["  nested.suff_outer_par <= k * m (default 32768)",
                          "    true:  segmap (k, m)"]
    assert "segmap blocks (k, m)" in nested[3]
    assert " ".join(nested).count("segscan (k, m, n)") == 2


def test_cheap_scalars_of_a_point_are_computed_again_by_the_parts_using_them() -> None:
    """tests/programs/versions/recompute.fut: the two scalars each point
    computes from its parameter are not a map of their own in the flat
    version (a launch and an array per point): the scan's and the map's
    kernels compute them again (every version checked by the test above)."""
    path = ROOT / "tests" / "programs" / "versions" / "recompute.fut"
    assert _tree_of(path, "main") == ["  main.suff_outer_par <= k (default 32768)",
                                      "    true:  segmap (k)",
                                      "    false: segscan (k, n)",
                                      "      segmap (k, n)"]


def test_a_read_at_the_loop_counter_is_computed_again_in_the_loop_of_maps() -> None:
    """tests/programs/versions/recompute_loop.fut: the loop of maps (G7)
    reads the point's row at the loop counter, in bounds since the counter
    runs to the row's length, so its parts compute the element again (two
    maps over the points a step fewer than one per scalar part)."""
    path = ROOT / "tests" / "programs" / "versions" / "recompute_loop.fut"
    assert _tree_of(path, "main")[-2:] == ["            false: segscan (k, n)",
                                           "              segmap (k, n)"]


def test_a_map_ending_in_a_shared_if_becomes_an_if_of_maps() -> None:
    """tests/programs/versions/branches.fut (rule G8): the flat version is
    an `if` on the condition all rows share, whose branches are maps over
    every row: the prefix sums one segmented scan over all of them, the
    sums (each then replicated: G6 cuts the row's body after its sum) a
    segmented reduction, as a version of their own."""
    path = ROOT / "tests" / "programs" / "versions" / "branches.fut"
    tree = _tree_of(path, "scan_or_sum")
    assert tree[:3] == ["  scan_or_sum.suff_outer_par <= n (default 32768)",
                        "    true:  segmap (n)",
                        "    false: scan_or_sum.suff_intra_par <= n * intra (default 32768)"]
    assert tree[4:] == ["        false: if prefix",
                        "            then: segscan (n, m)",
                        "            else: scan_or_sum.suff_outer_par <= n (default 32768)",
                        "                true:  segmap (n)",
                        "                false: segred (n, m)"]


def test_g8_needs_a_condition_the_points_share() -> None:
    """A condition that depends on the point keeps the `if` inside the map."""
    src = ("entry main [n][m] (xss: [n][m]i32) : [n][m]i32 =\n"
           "  map (\\xs -> if xs[0] > 0 then scan (+) 0 xs else xs) xss")
    text = version_tree(_flat(src))
    assert "if " not in text and "segscan (" not in text


REDOMAPS = ROOT / "tests" / "programs" / "versions" / "redomaps.fut"


def test_a_redomap_with_inner_parallelism_gets_a_split_version() -> None:
    """Rule G9, tests/programs/versions/redomaps.fut: a redomap whose map
    function has parallel work is either one SegRed running that work in
    each thread, or its map (here a segmented reduction of each row) and
    its reduction flattened on their own."""
    assert _tree_of(REDOMAPS, "sum_of_maxima") == [
        "  sum_of_maxima.suff_outer_par <= n (default 32768)",
        "    true:  segred (n)",
        "    false: segred (n, m)",
        "      segred (n)",
    ]


def test_a_heston_shaped_map_of_redomaps_has_the_g9_versions_inside_g3s() -> None:
    """Under a map nest (per parameter, per quote) a redomap over a quote's
    rows whose price is itself a reduction: the maps' space with everything
    sequential, a block per point, or (G9 in the nest's context) the redomap
    as a SegRed segmented by the maps, else split into every row's price
    (a map with versions of its own: sequential per row, or segmented by
    the row too) and the sum over the rows (versions again)."""
    assert _tree_of(REDOMAPS, "prices") == [
        "  prices.suff_outer_par <= k * q (default 32768)",
        "    true:  segmap (k, q)",
        "    false: prices.suff_intra_par <= k * q * n (default 32768)",
        "        true:  segmap blocks (k, q)",
        "        false: prices.suff_outer_par <= k * q * n (default 32768)",
        "            true:  segred (k, q, n)",
        "            false: prices.suff_outer_par <= k * q * n (default 32768)",
        "                true:  segmap (k, q, n)",
        "                false: segred (k, q, n, g)",
        "              prices.suff_outer_par <= k * q (default 32768)",
        "                true:  segmap (k, q)",
        "                false: segred (k, q, n)",
    ]


def test_g9_splits_a_map_function_after_its_reduction() -> None:
    """The rows' maxima are then divided: the split's map is cut after the
    reduction (G6), whose flat version is a SegRed segmented by the rows."""
    assert _tree_of(REDOMAPS, "scaled_maxima") == [
        "  scaled_maxima.suff_outer_par <= n (default 32768)",
        "    true:  segred (n)",
        "    false: scaled_maxima.suff_outer_par <= n (default 32768)",
        "        true:  segmap (n)",
        "        false: segred (n, m)",
        "          segmap (n)",
        "      segred (n)",
    ]


def test_g9_adds_no_version_where_the_split_gains_no_parallelism() -> None:
    """Irregular inner work stays sequential in the split's map too."""
    assert _tree_of(REDOMAPS, "sums_of_ranges") == ["  segred (n)"]


def test_work_no_point_changes_runs_once_before_the_map() -> None:
    """tests/programs/versions/invariant.fut: the grid's sum does not depend
    on the strike, so it is one SegRed before the strikes' map, not a sum
    per strike; since its reads may fail, both run only where the map has
    points (its test blocks check the error and the empty case)."""
    prog = _flat((ROOT / "tests" / "programs" / "versions" / "invariant.fut").read_text())
    [branch] = [s.exp for s in prog.function("main").body.stms if isinstance(s.exp, ir.If)]
    assert [type(s.exp).__name__ for s in branch.else_.stms if isinstance(s.exp, SegOp)] \
        == ["SegRed", "SegMap"]
    assert not any(isinstance(s.exp, SegOp) for s in branch.then_.stms)
    [segmap] = [s.exp for s in branch.else_.stms if isinstance(s.exp, SegMap)]
    assert len(segmap.space.dims) == 2 and not any(
        isinstance(s.exp, ir.Loop) for s in segmap.body.stms)


def test_scalar_reads_stay_in_the_threads_of_work_that_moves() -> None:
    """invariant.fut's `scaled_exps`: the sum moves before the map with a
    copy of the read `xs[i]` its threads make; the host reads no element
    (a copy from the device there would wait for it and break CUDA graphs)."""
    prog = _flat((ROOT / "tests" / "programs" / "versions" / "invariant.fut").read_text())
    body = prog.function("scaled_exps").body
    [branch] = [s.exp for s in body.stms if isinstance(s.exp, ir.If)]
    [segred] = [s.exp for s in branch.else_.stms if isinstance(s.exp, SegRed)]
    assert any(isinstance(s.exp, ir.Index) for s in segred.body.stms)

    def host_reads(b: ir.Body) -> list[ir.Stm]:
        out = []
        for s in b.stms:
            if isinstance(s.exp, ir.Index) and isinstance(s.pat[0].type, ir.Prim):
                out.append(s)
            elif isinstance(s.exp, ir.If):
                out += host_reads(s.exp.then_) + host_reads(s.exp.else_)
        return out

    assert host_reads(body) == []
    # `stencil`: the literal of read scalars is made by a map of one point.
    stencil = prog.function("stencil").body
    assert host_reads(stencil) == []
    [branch] = [s.exp for s in stencil.stms if isinstance(s.exp, ir.If)]
    assert next(op.space.dims for op in (s.exp for s in branch.else_.stms)
                if isinstance(op, SegMap)) == (ir.Constant(1, "i64"),)


def test_a_replicated_last_part_is_made_on_the_host_beside_earlier_values() -> None:
    """distribute.fut's `replicated`: the map returns a sum an earlier part
    made and a replication of the point's row; the flat version replicates
    the rows of all points on the host, with no thread per point building
    its copies."""
    path = ROOT / "tests" / "programs" / "versions" / "distribute.fut"
    prog = run_passes(internalise(check_source(path.read_text())))
    exps = _host_exps(prog.function("replicated").body)
    assert any(isinstance(e, ir.Replicate) and len(e.shape) == 1 for e in exps)
    tree = _tree_of(path, "replicated")
    assert sum(line.endswith("segmap (k)") for line in tree) == 1  # the outer version's


def test_a_threads_scan_and_the_map_of_its_values_are_one_loop() -> None:
    """tests/programs/versions/scan_maps.fut: in the version with a thread
    per row, the map after the scan runs in the scan's loop, so the thread
    makes two arrays, not three: the map's, and the scan's `qs`, which is
    read after the map; `ps`, which only the map reads, is never made.
    (The versions test above runs every version against the interpreter.)"""
    from futgen.gpu.ir import Scratch

    path = ROOT / "tests" / "programs" / "versions" / "scan_maps.fut"
    [(_, outer, _)] = _versions(_flat(path.read_text()))
    assert isinstance(outer, SegMap)
    stms = outer.body.stms
    assert sum(isinstance(s.exp, Scratch) for s in stms) == 2
    [loop] = [s for s in stms if isinstance(s.exp, ir.Loop)]
    assert len(loop.exp.merge) == 4  # the scan's two carries, qs and the map's array
