"""`futgen autotune` on a program: its built package runs the datasets of
its test blocks (`PackageRunner`), and `futgen.tune.autotune` decides."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from futgen_runtime.tuning import GUARD_MARK, RUN_LENGTH, TBLOCK_SIZE, TILE_SIZE

from futgen.tune import NOISE, check_runs
from futgen.tune.autotune import (
    Measurement,
    TuneResult,
    tune,
    tune_sizes,
    tuning_file_text,
)
from futgen.tune.bench import Dataset

if TYPE_CHECKING:
    from futgen.pipeline import Options


class PackageRunner:
    """Runs the datasets of a program on its built package (one instance,
    whose thresholds are set before each run): a warm-up call, checked
    against the expected results if the test block gives them, then `runs`
    timed calls, of which the fastest counts, and with `profile` one more,
    profiled.  A warm-up slower than `timeout` seconds is a loss (it is not
    stopped: a run in this process cannot be), as is any failure (reported
    in `why`)."""

    def __init__(self, pkg, datasets: Mapping[str, Dataset], runs: int, timeout: float,
                 tolerance: float | None = None, profile: bool = False) -> None:
        from futgen.data.compare import DEFAULT_TOLERANCE

        self.pkg = pkg
        self.datasets = datasets
        self.runs = runs
        self.timeout = timeout
        self.tolerance = DEFAULT_TOLERANCE if tolerance is None else tolerance
        self.profile = profile
        self.wrong: list[str] = []  # versions that gave wrong results: compiler bugs
        self._loaded: tuple[str, list, list | None] | None = None

    def _inputs(self, d: str) -> tuple[list, list | None]:
        """The dataset's arguments and expected results (the last dataset's kept)."""
        if self._loaded is None or self._loaded[0] != d:
            self._loaded = None  # free the last dataset first
            ds = self.datasets[d]
            self._loaded = (d, self.pkg.resident(ds.entry, ds.arguments()), ds.expected())
        return self._loaded[1], self._loaded[2]

    def __call__(self, d: str, tuning: Mapping[str, int]) -> Measurement:
        from futgen.tune.bench import WrongResult, checked_runs

        ds = self.datasets[d]
        args, expected = self._inputs(d)
        try:
            self.pkg.set_tuning(dict(tuning))  # tile sizes compile the kernels: that may fail
            first, times = checked_runs(self.pkg, ds, args, expected, self.runs, self.tolerance,
                                        slower_than=self.timeout * 1e6)
            if not times:
                return Measurement(None, self._guards(), f"too slow: {first / 1e6:.1f} s a call")
            guards = self._guards()
            regions = self.pkg.profile_call(ds.entry, args) if self.profile else ()
        except WrongResult as e:
            self.wrong.append(f"{d} with {dict(tuning)}: {e}")
            return Measurement(None, self._guards(), str(e))
        except Exception as e:  # noqa: BLE001 - a failing version loses, whatever the cause
            return Measurement(None, self._guards(), f"{type(e).__name__}: {e}")
        return Measurement(min(times), guards, regions=regions,
                           sizes=tuple(self.pkg.last_sizes()))

    def _guards(self) -> tuple[tuple[str, int], ...]:
        return tuple((name, par) for name, par, _ in self.pkg.last_guards())


def autotune(path: str, backend: str = "auto", runs: int = 10, timeout: float = 60.0, *,
             entry: str | None = None, tolerance: float | None = None, noise: float = NOISE,
             method: str = "search", strategies: bool = False, graphs: bool = False,
             say: Callable[[str], None] | None = None,
             options: Options | None = None) -> tuple[TuneResult, str]:
    """Tune `path`'s thresholds, built with the passes' `options`, on the
    datasets of its test blocks (those `futgen bench` runs); the result and
    the tuning file's text.  The version guards are tuned, as Futhark's
    tuner does; with `strategies`, the kernels' strategy guards too (tiles,
    split loops, reduction strategies), whose defaults were chosen for the
    device by hand and whose best values depend on more than their P (a
    loop's length, say), so that small training datasets can mislead them.
    With `graphs`, CUDA calls are timed as replays of CUDA graphs (each
    setting recorded anew): what a package used with graphs=True spends,
    without the host's costs of launching, which can hide what a kernel's
    block size gains (the profile method's regions are still timed without
    graphs)."""
    import datetime

    from futgen.errors import FutgenError
    from futgen.testing.compiled import compile_package
    from futgen.tune.bench import check_entries
    from futgen.tune.bench import datasets as bench_datasets

    check_runs(runs)
    chosen = {f"{ds.entry}:{ds.name}": ds for ds in bench_datasets(path, entry)}
    if not chosen:
        raise FutgenError(f"{path}: no datasets to tune on (test blocks with inputs, "
                          "not tagged nobench)")
    pkg = compile_package(path, backend, find_tuning=False, options=options)
    device = pkg.device_name()  # first: it says so if the backend is unavailable
    if graphs:
        pkg.instance.graphs = True
    graphs = pkg.instance.graphs and pkg.instance.backend == "cuda"  # or $FUTGEN_GRAPHS
    check_entries(path, list(chosen.values()), pkg.module.ENTRY_POINTS)
    every = pkg.module.TUNING_PARAMS
    thresholds = {name: p for name, p in every.items()
                  if p["class"] == "threshold" and (strategies or GUARD_MARK in name)}
    runner = PackageRunner(pkg, chosen, runs, timeout, tolerance, profile=method == "profile")
    result = tune(thresholds, list(chosen), runner, noise=noise, method=method, say=say)
    sizes = {name: p for name, p in every.items()
             if p["class"] in (TBLOCK_SIZE, TILE_SIZE, RUN_LENGTH)}
    if sizes:
        result.sizes, size_runs = tune_sizes(
            sizes, list(chosen), runner, {**result.values}, noise, say)
        result.runs += size_runs
    if runner.wrong:
        raise FutgenError("compiler bug: versions disagree with the expected results:\n"
                          + "\n".join(runner.wrong))
    header = [(f"futgen autotune of {path}, {datetime.date.today().isoformat()}, on "
               f"{device} ({pkg.instance.backend} backend)"),
              f"datasets: {', '.join(chosen)}",
              (f"{result.runs} runs (a checked warm-up, then the fastest of {runs} calls"
               f"{', then a profiled one' if method == 'profile' else ''}"
               f"{'; calls replayed as CUDA graphs' if graphs else ''}); times within "
               f"{noise:.0%} are ties; the {method} method")]
    return result, tuning_file_text(result, every, header)
