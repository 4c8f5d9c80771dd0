"""The threshold forest built from ancestor paths, and the runs that force
every version of it."""

from __future__ import annotations

from pathlib import Path

import pytest

from futgen.codegen.package import build_package
from futgen.core import load
from futgen.pipeline import run_passes
from futgen.testing.compiled import import_package
from futgen.tune.forest import FORCED, forest, program_thresholds, version_runs

ON, OFF = FORCED[True], FORCED[False]


def _params(paths: dict[str, tuple[str, ...]]) -> dict:
    return {name: {"class": "threshold", "default": 32768, "path": path, "doc": ""}
            for name, path in paths.items()}


def test_a_chain_of_guards_runs_each_branch_once():
    """outer / intra / flat, as incremental flattening nests them."""
    params = _params({"m.suff_outer_par_0": (), "m.suff_intra_par_1": ("!m.suff_outer_par_0",)})
    [root] = forest(params)
    assert root.name == "m.suff_outer_par_0"
    assert [n.name for n in root.children[False]] == ["m.suff_intra_par_1"]
    assert version_runs(params) == [
        {"m.suff_outer_par_0": ON},
        {"m.suff_outer_par_0": OFF, "m.suff_intra_par_1": ON},
        {"m.suff_outer_par_0": OFF, "m.suff_intra_par_1": OFF},
    ]


def test_trees_side_by_side_take_their_paths_in_step():
    """Three runs cover a tree of three leaves beside one of two, not six."""
    params = _params({"a.suff_outer_par_0": (), "a.suff_intra_par_1": ("!a.suff_outer_par_0",),
                      "b.suff_outer_par_2": ()})
    runs = version_runs(params)
    assert len(runs) == 3
    assert [r["b.suff_outer_par_2"] for r in runs] == [ON, OFF, ON]


def test_other_classes_are_not_versions_and_no_thresholds_is_one_run():
    params = {"m.segmap_tblock_size_0": {"class": "tblock_size", "default": 256, "path": ()}}
    assert forest(params) == [] and version_runs(params) == [{}]


def test_a_path_naming_no_threshold_is_an_error():
    with pytest.raises(ValueError, match="names m.gone_3, which is no threshold"):
        forest(_params({"m.suff_outer_par_0": ("m.gone_3",)}))


def test_a_gpu_ir_programs_guards_have_the_paths_its_package_gives_them(tmp_path):
    """`program_thresholds` (versions checked without a package) nests the
    guards as the host code generator does, so its runs reach the versions
    under the first guard's false branch: the intra-block one, and the
    hoisted kernels under it (tests/programs/kernels/invariant_rows.fut)."""
    program = Path(__file__).resolve().parents[1] / "programs" / "kernels" / "invariant_rows.fut"
    got = program_thresholds(run_passes(load(program)))
    lib = import_package(build_package(program, tmp_path / "pkg", name="rows"))
    # (The package has thresholds of its kernels' own too: scan strategies.)
    want = {n: p for n, p in lib.TUNING_PARAMS.items() if ".suff_" in n}
    assert {n: tuple(p["path"]) for n, p in got.items()} == {
        n: tuple(p["path"]) for n, p in want.items()}
    assert got["solve.suff_hoisted_0"]["path"] == ("!solve.suff_outer_par_1",
                                                   "solve.suff_intra_par_2")
    assert {"solve.suff_outer_par_1": OFF, "solve.suff_intra_par_2": ON,
            "solve.suff_hoisted_0": ON}.items() <= next(
        r for r in version_runs(got) if r.get("solve.suff_hoisted_0") == ON).items()
