"""Timing and tuning on CUDA: CUDA-event timings, the strategy guards the
tuner sees, and `futgen autotune` end to end.  Run on the GPU machine."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from futgen.testing.compiled import compile_package
from futgen.tune.driver import autotune
from futgen.tune.forest import version_runs

pytestmark = pytest.mark.gpu
PRODUCTS = Path(__file__).resolve().parents[1] / "programs" / "tune" / "products.fut"
VERSIONS = Path(__file__).resolve().parents[1] / "programs" / "versions"


def test_time_calls_and_the_guards_of_every_version() -> None:
    pkg = compile_package(str(PRODUCTS), "cuda", find_tuning=False)
    rng = np.random.default_rng(0)
    a = rng.random((256, 600), dtype=np.float32)  # a loop long enough to split
    b = rng.random((600, 192), dtype=np.float32)
    seen = set()
    for setting in version_runs(pkg.module.TUNING_PARAMS):
        pkg.set_tuning({**{k: p["default"] for k, p in pkg.module.TUNING_PARAMS.items()},
                        **setting})
        (c,), times = pkg.time_calls("main", [a, b], 3)
        np.testing.assert_allclose(c, a @ b, rtol=1e-4)
        assert len(times) == 3 and all(t > 0 for t in times)
        seen |= {name for name, _, _ in pkg.last_guards()}
    # The strategies' guards are logged as the version guards are.
    kinds = {name.split(".")[1].rsplit("_", 1)[0] for name in seen}
    assert {"suff_outer_par", "segmap_tile", "segmap_unsplit", "segmap_tile_large",
            "segred_block", "segred_warp", "segred_subwarp"} <= kinds


def test_autotune_on_cuda_writes_values_the_build_runs_correctly(tmp_path) -> None:
    result, text = autotune(str(PRODUCTS), "cuda", runs=3)
    assert "on NVIDIA" in text.splitlines()[0] and "(cuda backend)" in text
    assert result.values["main.suff_outer_par_0"] > 0
    # The version guards only, unless the strategies are asked for.
    assert [t.name for t in result.thresholds] == ["main.suff_outer_par_0"]
    everything, _ = autotune(str(PRODUCTS), "cuda", runs=3, strategies=True)
    assert {t.name for t in everything.thresholds} == set(pkg_params())
    tuning = tmp_path / "products.tuning"
    tuning.write_text(text)
    pkg = compile_package(str(PRODUCTS), "cuda", tuning=str(tuning))
    assert pkg.module.TUNING == result.values
    rng = np.random.default_rng(1)
    for n, m, p in ((2, 4096, 2), (128, 4, 128)):
        a, b = rng.random((n, m), dtype=np.float32), rng.random((m, p), dtype=np.float32)
        np.testing.assert_allclose(pkg.call("main", [a, b])[0], a @ b, rtol=1e-4)


def test_autotune_with_graphs_times_replays_and_still_sees_the_guards() -> None:
    """With graphs, each setting's calls are recorded once and replayed; a
    replay reports the guards its recording evaluated, so the thresholds
    are tuned as without graphs."""
    result, text = autotune(str(PRODUCTS), "cuda", runs=3, graphs=True)
    assert "calls replayed as CUDA graphs" in text.splitlines()[2]
    [t] = result.thresholds
    assert t.name == "main.suff_outer_par_0" and t.interval is not None
    assert result.values[t.name] > 0


def pkg_params() -> list[str]:
    """The thresholds (not the block sizes) of the products program."""
    params = compile_package(str(PRODUCTS), "cuda", find_tuning=False).module.TUNING_PARAMS
    return [name for name, p in params.items() if p["class"] == "threshold"]


def test_block_sizes_are_read_and_every_valid_size_gives_the_same_results() -> None:
    pkg = compile_package(str(PRODUCTS), "cuda", find_tuning=False)
    params = pkg.module.TUNING_PARAMS
    sizes = [k for k, p in params.items() if p["class"] == "tblock_size"]
    outer = next(k for k in params if ".suff_outer_par" in k)
    tile = next(k for k in params if re.fullmatch(r"\w+\.segmap_tile_\d+", k))
    rng = np.random.default_rng(2)
    a = rng.random((37, 50), dtype=np.float32)
    b = rng.random((50, 1000), dtype=np.float32)
    for size in (32, 64, 1024):  # the plain kernel: outer version, not tiled
        pkg.set_tuning({outer: 0, tile: 2_000_000_000, **dict.fromkeys(sizes, size)})
        (c,), _ = pkg.time_calls("main", [a, b], 1)
        np.testing.assert_allclose(c, a @ b, rtol=1e-4)
        assert pkg.last_sizes() == sizes


@pytest.mark.parametrize("shape", [(256, 300, 256), (1024, 517, 1000)],
                         ids=["split", "tiled"])
def test_every_tile_size_a_kernel_allows_gives_the_same_results(shape) -> None:
    """Tile sizes are compiled into the kernels: setting one compiles them
    again with its define, and the call launches the kernel built with it."""
    pkg = compile_package(str(PRODUCTS), "cuda", find_tuning=False)
    params = pkg.module.TUNING_PARAMS
    outer = next(k for k in params if ".suff_outer_par" in k)
    n, m, p = shape
    rng = np.random.default_rng(5)
    a, b = rng.random((n, m), dtype=np.float32), rng.random((m, p), dtype=np.float32)
    pkg.set_tuning({outer: 0})  # the outer version: the tiled SegMap
    (want,), _ = pkg.time_calls("main", [a, b], 1)
    np.testing.assert_allclose(want, a @ b, rtol=1e-4)
    used = [k for k in pkg.last_sizes() if params[k]["class"] == "tile_size"]
    assert len(used) == 1
    for value in params[used[0]]["values"]:
        pkg.set_tuning({outer: 0, used[0]: value})
        (got,), _ = pkg.time_calls("main", [a, b], 1)
        assert used[0] in pkg.last_sizes()
        np.testing.assert_allclose(got, want, rtol=1e-5)


def test_intra_block_kernels_give_the_same_results_with_their_blocks_capped() -> None:
    """Below an intra-block kernel's widest operation (`intra_tblock_size`
    32 or 64 for rows of 300 to 3000), each thread scans a run of a row."""
    pkg = compile_package(str(VERSIONS / "intra.fut"), "cuda", find_tuning=False)
    params = pkg.module.TUNING_PARAMS
    intra = {k: 0 for k in params if ".suff_intra_par" in k}
    intra.update({k: 2_000_000_000 for k in params if ".suff_outer_par" in k})
    caps = [k for k in params if ".intra_tblock_size" in k]
    rng = np.random.default_rng(4)
    xss = rng.integers(-3, 4, (7, 3000)).astype(np.int32)
    xsss = rng.integers(-3, 4, (3, 5, 300)).astype(np.int32)
    as_, bs = rng.random((5, 300)), rng.random((5, 300))
    calls = [("mapscan1", [xss]), ("nested_rows", [xsss]), ("recurrences", [as_, bs])]
    wanted = []
    for cap in (1024, 64, 32):
        pkg.set_tuning({**intra, **dict.fromkeys(caps, cap)})
        got = [pkg.time_calls(entry, args, 1)[0] for entry, args in calls]
        assert {name for name, _, taken in pkg.last_guards() if taken} >= {
            k for k in intra if k.startswith("recurrences.suff_intra")}
        assert any(k.startswith("recurrences.intra_tblock_size") for k in pkg.last_sizes())
        if not wanted:
            wanted = got
            continue
        for want, have in zip(wanted, got):
            for w, h in zip(want, have):
                np.testing.assert_allclose(h, w, rtol=1e-12)
