"""`futgen bench` and `futgen autotune` end to end on the CPU backend."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from futgen.cli import main
from futgen.codegen.package import build_package
from futgen.testing.compiled import import_package
from futgen.tune import bench
from futgen.tune.autotune import INF

ROOT = Path(__file__).resolve().parents[2]
PRODUCTS = ROOT / "tests" / "programs" / "tune" / "products.fut"
FLAT_WINS = (2, 4096, 2)  # the shapes of the datasets: n, m, p
OUTER_WINS = (128, 4, 128)


def _program(tmp_path: Path, text: str) -> str:
    path = tmp_path / "prog.fut"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_benchmark_datasets_skip_nobench_errors_and_disabled(tmp_path) -> None:
    path = _program(tmp_path, """
-- ==
-- input { 1 } output { 2 }
-- nobench input { 2 } output { 3 }
-- input { -1 } error: negative
-- random input { [10]i32 }
entry main (x: i32) : i32 = assert (x >= 0) (x + 1)
entry other (x: i32) : i32 = x
""")
    names = [(d.entry, d.name) for d in bench.datasets(path)]
    assert names == [("main", '#0 ("1i32")'), ("main", "[10]i32")]
    assert bench.datasets(path, entry="other") == []


def test_timings_summary_is_deterministic() -> None:
    t = bench.Timings([5.0, 3.0, 4.0, 100.0, 4.5])
    assert (t.min, t.median) == (3.0, 4.5)
    lo, hi = t.interval()
    assert lo <= t.median <= hi and (lo, hi) == t.interval()
    assert bench.Timings([7.0]).interval() == (7.0, 7.0)


def test_bench_writes_futharks_json_and_compares(tmp_path, capsys) -> None:
    path = _program(tmp_path, """
-- ==
-- input { [1, 2, 3] } output { 6 }
-- random input { [1000]i32 }
entry main (xs: []i32) : i32 = reduce (+) 0 xs
""")
    out = tmp_path / "a.json"
    assert main(["bench", path, "--backend", "cpu", "-r", "3", "--json", str(out),
                 "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert f"{path}:main (no tuning file; cpu, CPU (NumPy)):" in printed
    assert "median (95% CI" in printed and "3 runs" in printed
    data = json.loads(out.read_text())
    sets = data[f"{path}:main"]["datasets"]
    assert list(sets) == ['#0 ("[1i32, 2i32, 3i32]")', "[1000]i32"]
    for ds in sets.values():
        assert len(ds["runtimes"]) == 3 and ds["min"] <= ds["median"]
    assert main(["bench", "--compare", str(out), str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"{path}:main:" and "1.00x" in lines[1] and "within noise" in lines[1]


def test_bench_reports_wrong_results_and_fails(tmp_path, capsys) -> None:
    path = _program(tmp_path, """
-- ==
-- input { 1 } output { 3 }
entry main (x: i32) : i32 = x + 1
""")
    assert main(["bench", path, "--backend", "cpu", "-r", "1", "--no-progress"]) == 1
    assert "wrong result" in capsys.readouterr().out


def test_datasets_of_a_missing_entry_point_are_an_error(tmp_path, capsys) -> None:
    path = _program(tmp_path, """
-- ==
-- input { 1 } output { 2 }
entry inc (x: i32) : i32 = x + 1
""")
    for command in (["bench", path, "--no-progress"], ["autotune", path]):
        assert main([*command, "--backend", "cpu"]) == 1
        err = capsys.readouterr().err
        assert f"{path}:3: the test blocks give datasets of entry point main" in err
        assert "it has: inc" in err


def test_bench_usage_errors(tmp_path, capsys) -> None:
    assert main(["bench"]) == 1
    assert "no programs to benchmark" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text("[1]")
    assert main(["bench", "--compare", str(bad), str(bad)]) == 1
    assert "expected a JSON object" in capsys.readouterr().err


@pytest.mark.slow
def test_autotune_finds_each_datasets_version_and_build_bakes_it(tmp_path, capsys) -> None:
    tuning = tmp_path / "products.fut.tuning"
    assert main(["autotune", str(PRODUCTS), "--backend", "cpu", "-r", "3",
                 "-o", str(tuning)]) == 0
    out = capsys.readouterr().out
    assert f"wrote {tuning}" in out
    text = tuning.read_text()
    [line] = [ln for ln in text.splitlines() if not ln.startswith("--")]
    name, value = line.split("=")
    assert name == "main.suff_outer_par_0"
    # Flattened at parallelism 4, the outer version at 16384: any value
    # in 5..16384 serves both; the tuner writes the one nearest the default.
    assert f"-- {name}: [5, 16384]" in text and int(value) == 16384
    assert "nobench" not in text and "[3][5]f32" not in text  # not a training dataset

    pkg = tmp_path / "products"
    assert main(["build", str(PRODUCTS), "-o", str(pkg), "--backend", "cpu",
                 "--tuning", str(tuning)]) == 0
    module = import_package(pkg)
    assert module.TUNING == {name: 16384}
    lib = module.Products(backend="cpu")
    rng = np.random.default_rng(1)
    for (n, m, p), outer in ((FLAT_WINS, False), (OUTER_WINS, True)):
        a = rng.random((n, m), dtype=np.float32)
        b = rng.random((m, p), dtype=np.float32)
        np.testing.assert_allclose(lib.main(a, b), a @ b, rtol=1e-5)
        assert lib.last_guards == [(name, n * p, outer)]
    # Untuned, the default threshold would run the flattened version on both.
    assert module.TUNING_PARAMS[name]["default"] > 16384
    assert lib.tuning[name] != INF


def test_profiling_times_the_version_each_guard_chose(tmp_path) -> None:
    program = ROOT / "tests" / "programs" / "tune" / "lud_shaped.fut"
    module = import_package(build_package(program, tmp_path, name="lud", backend_default="cpu"))
    [guard] = [k for k in module.TUNING_PARAMS if ".suff_outer_par" in k]
    a = np.random.default_rng(0).random((6, 6), dtype=np.float32)
    lib = module.Lud(tuning={guard: 10})
    lib.main(a.copy())
    assert lib.last_regions == []  # profiling is off
    lib.profile = True
    want = lib.main(a.copy())
    regions = lib.last_regions
    # One region per step, the guard's parallelism (6 - k)^2, its version
    # taken from 10 on, each timed.
    assert [(name, p, taken) for name, p, taken, _ in regions] == \
        [(guard, (6 - k) ** 2, (6 - k) ** 2 >= 10) for k in range(6)]
    assert all(us > 0 for *_, us in regions)
    np.testing.assert_allclose(module.Lud(tuning={guard: 0}).main(a.copy()), want, rtol=1e-5)


def test_bench_reports_a_failing_dataset_and_goes_on(tmp_path, capsys) -> None:
    path = _program(tmp_path, """
-- ==
-- input { [1, 2, 3] 5i64 } output { 0 }
-- input { [1, 2, 3] 1i64 } output { 2 }
entry main (xs: []i32) (i: i64) : i32 = xs[i]
""")
    assert main(["bench", path, "--backend", "cpu", "-r", "2", "--no-progress"]) == 1
    out = capsys.readouterr().out
    assert "failed: Index [5] out of bounds for array of shape [3]" in out
    assert "median (95% CI" in out  # the second dataset was timed


def test_bench_without_datasets_and_autotune_of_one_entry_are_errors(tmp_path, capsys) -> None:
    path = _program(tmp_path, """
-- ==
-- nobench input { 1 } output { 2 }
entry main (x: i32) : i32 = x + 1
""")
    assert main(["bench", path, "--backend", "cpu"]) == 1
    assert "no datasets to benchmark" in capsys.readouterr().err
    Path(f"{path}.tuning").write_text("")
    assert main(["autotune", path, "-e", "main"]) == 1
    assert "name the output with -o" in capsys.readouterr().err


def test_bench_and_autotune_need_at_least_one_run(tmp_path, capsys) -> None:
    path = _program(tmp_path, """
-- ==
-- input { 1 } output { 2 }
entry main (x: i32) : i32 = x + 1
""")
    for command in ("bench", "autotune"):
        assert main([command, path, "--backend", "cpu", "-r", "0"]) == 1
        assert "--runs must be at least 1, got 0" in capsys.readouterr().err


def test_time_calls_checks_its_arguments(tmp_path) -> None:
    module = import_package(build_package(PRODUCTS, tmp_path, name="p", backend_default="cpu"))
    lib = module.P()
    a = np.ones((2, 3), np.float32)
    with pytest.raises(TypeError, match="missing"):
        lib.time_calls("main", (a,))
    with pytest.raises(TypeError, match="takes 2 arguments"):
        lib.time_calls("main", (a, a.T, a))
    with pytest.raises(ValueError, match="runs must be at least 1"):
        lib.time_calls("main", (a, a.T), runs=0)
    with pytest.raises(ValueError, match="unknown entry point 'mian'"):
        lib.time_calls("mian", (a, a.T))


def test_an_unavailable_cuda_backend_is_an_error_not_a_traceback(tmp_path, capsys) -> None:
    try:
        import pycuda.driver  # noqa: F401
        pytest.skip("PyCUDA is installed here")
    except ImportError:
        pass
    for command in ("bench", "autotune"):
        assert main([command, str(PRODUCTS), "--backend", "cuda"]) == 1
        err = capsys.readouterr().err
        assert err.startswith("Error: the CUDA backend is not available here: PyCUDA is not "
                              "installed"), err


def test_bench_and_compare_draw_pngs(tmp_path, capsys) -> None:
    pytest.importorskip("matplotlib")
    out, png = tmp_path / "a.json", tmp_path / "a.png"
    assert main(["bench", str(PRODUCTS), "--backend", "cpu", "-r", "2", "--no-progress",
                 "--json", str(out), "--plot", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    compared = tmp_path / "c.png"
    assert main(["bench", "--compare", str(out), str(out), "--plot", str(compared)]) == 0
    assert compared.stat().st_size > 1000


def test_autotune_tunes_the_block_sizes_runs_use(monkeypatch) -> None:
    """The CPU backend has no blocks, so a runner that says a run used the
    plain kernel's block size (as CUDA runs do) stands in for it here."""
    from futgen.tune import driver
    from futgen.tune.autotune import Measurement

    def run(self, d, tuning):
        [size] = [k for k in self.pkg.module.TUNING_PARAMS if "tblock_size" in k]
        block = tuning.get(size, 256)
        guards = tuple((k, 1000) for k in tuning if ".suff_" in k)
        return Measurement(100.0 + abs(block - 128) / 8, guards, sizes=(size,))

    monkeypatch.setattr(driver.PackageRunner, "__call__", run)
    result, text = driver.autotune(str(PRODUCTS), "cpu", runs=1)
    [size] = result.sizes
    assert size.value == 128 and size.relative[128] < 1
    assert f"{size.name}=128" in text.splitlines()
    assert f"-- {size.name}: time relative to the default 256:" in text
    # Graphs are CUDA's: on the CPU backend the flag changes nothing.
    _, text = driver.autotune(str(PRODUCTS), "cpu", runs=1, graphs=True)
    assert "graphs" not in text


@pytest.mark.parametrize("flags", [["--noise", "-0.1"], ["--timeout", "0"]])
def test_autotune_refuses_a_negative_noise_or_no_timeout(flags, capsys) -> None:
    assert main(["autotune", str(PRODUCTS), "--backend", "cpu", *flags]) == 1
    assert "--noise must be at least 0 and --timeout more than 0" in capsys.readouterr().err


def test_tuning_and_no_tuning_exclude_each_other(capsys) -> None:
    with pytest.raises(SystemExit) as e:
        main(["bench", str(PRODUCTS), "--tuning", "x.tuning", "--no-tuning"])
    assert e.value.code == 2
    assert "not allowed with argument --tuning" in capsys.readouterr().err


def test_a_setting_whose_kernels_fail_to_compile_is_a_lost_run() -> None:
    """Tile sizes compile the kernels when set: a failure (no nvcc, say)
    loses that candidate, as a failing run does, and the tuning goes on."""
    from futgen.tune.driver import PackageRunner

    class NoCompiler:
        def resident(self, entry, args):
            return args

        def set_tuning(self, values):
            raise RuntimeError("nvcc not found")

        def last_guards(self):
            return []

    class Data:
        entry = "main"

        def arguments(self):
            return []

        def expected(self):
            return None

    run = PackageRunner(NoCompiler(), {"d": Data()}, runs=1, timeout=1.0)
    m = run("d", {"main.segmap_tile_size_3": 32})
    assert m.time is None and "nvcc not found" in m.why
