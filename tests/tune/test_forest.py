"""The threshold forest built from ancestor paths, and the runs that force
every version of it."""

from __future__ import annotations

import pytest

from futgen.tune.forest import FORCED, forest, version_runs

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
