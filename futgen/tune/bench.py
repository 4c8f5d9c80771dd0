"""`futgen bench`: time a program's entry points on the datasets of its test blocks.

Each dataset (a run of a test block, skipping those tagged `nobench` or
`disable`, those that expect an error and FutharkScript inputs) is run once
to warm up and to check its results against the expected ones, then `runs`
times.  The package times each call (`time_calls`): from after the arguments
are on the device to before the results leave it, with CUDA events, as
Futhark's benchmarks do; on the CPU backend, the clock.

Results are in microseconds: the minimum, the median and a 95% confidence
interval of the median (a bootstrap with a fixed seed, so the same
runtimes give the same interval).  `to_json` writes them in the shape of
`futhark bench --json`: `{"prog.fut:entry": {"datasets": {name: {"runtimes":
[...], ...}}}}`, with the summary figures, the backend and the device beside
Futhark's keys.  `compare` sets two such files side by side.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from futgen.errors import FutgenError
from futgen.testing.spec import TestRun, read_spec
from futgen.tune import check_runs, microseconds

if TYPE_CHECKING:
    from futgen.pipeline import Options

SKIP_TAGS = frozenset({"nobench", "disable"})
BOOTSTRAP_SAMPLES = 2000


@dataclass(frozen=True)
class Dataset:
    """One input of an entry point, from a test block."""

    entry: str
    name: str
    run: TestRun

    def arguments(self) -> list[Any]:
        from futgen.testing.runner import input_values

        return input_values(self.run)

    def expected(self) -> list[Any] | None:
        return self.run.expected.load() if self.run.expected is not None else None


def datasets(path: str, entry: str | None = None) -> list[Dataset]:
    """The datasets of `path`'s test blocks that a benchmark runs (of entry
    point `entry` only, if given)."""
    spec = read_spec(path)
    if SKIP_TAGS & set(spec.tags):
        return []
    out = []
    for case in spec.cases:
        if entry is not None and case.entry != entry:
            continue
        for run in case.runs:
            if (SKIP_TAGS & set(run.tags) or run.expected_error is not None
                    or run.input.kind not in ("inline", "file", "random")):
                continue
            out.append(Dataset(case.entry, run.description, run))
    return out


@dataclass
class Timings:
    """The runtimes of one dataset, in microseconds."""

    runtimes: list[float]

    @property
    def min(self) -> float:
        return float(np.min(self.runtimes))

    @property
    def median(self) -> float:
        return float(np.median(self.runtimes))

    def interval(self) -> tuple[float, float]:
        """A 95% confidence interval of the median (percentile bootstrap)."""
        x = np.asarray(self.runtimes, dtype=np.float64)
        if len(x) < 2:
            return float(x[0]), float(x[0])
        rng = np.random.default_rng(0)
        medians = np.median(x[rng.integers(0, len(x), (BOOTSTRAP_SAMPLES, len(x)))], axis=1)
        lo, hi = np.percentile(medians, [2.5, 97.5])
        return float(lo), float(hi)

    def summary(self) -> dict[str, Any]:
        return {"runtimes": [round(t, 3) for t in self.runtimes], "min": round(self.min, 3),
                "median": round(self.median, 3),
                "ci95": [round(v, 3) for v in self.interval()]}


@dataclass
class ProgramResult:
    """The timings (or the failure) of every dataset of one entry point."""

    program: str
    entry: str
    backend: str
    device: str
    tuning: str | None  # the tuning file the package was built with
    timings: dict[str, Timings] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)  # the datasets, as the test blocks give them

    @property
    def key(self) -> str:
        return f"{self.program}:{self.entry}"


def check_entries(path: str, chosen: list[Dataset], entry_points: Mapping[str, Any]) -> None:
    """Every dataset's entry point must exist (a test block without
    `entry:` is for `main`)."""
    missing = sorted({ds.entry for ds in chosen} - set(entry_points))
    if missing:
        lines = sorted({ds.run.line for ds in chosen if ds.entry in missing})
        raise FutgenError(f"{path}:{lines[0]}: the test blocks give datasets of entry point "
                          f"{', '.join(missing)}, which the program does not have (it has: "
                          f"{', '.join(sorted(entry_points)) or 'none'}; a block without "
                          "'entry:' is for main)")


def benchmark(path: str, backend: str = "auto", runs: int = 10, *, entry: str | None = None,
              tuning: str | None = None, find_tuning: bool = True,
              tolerance: float | None = None,
              progress: Callable[[str, int], Any] | None = None,
              options: Options | None = None) -> list[ProgramResult]:
    """Time every dataset of `path`, built with the passes' `options` (see
    the module's text); one result per entry point.  `progress(dataset,
    runs)` returns a callable that is called after each timed run (a
    progress bar's update)."""
    from futgen.codegen.package import tuning_file
    from futgen.data.compare import DEFAULT_TOLERANCE
    from futgen.testing.compiled import compile_package

    check_runs(runs)
    chosen = datasets(path, entry)
    if not chosen:
        which = f" for entry point {entry!r}" if entry is not None else ""
        raise FutgenError(f"{path}: no datasets to benchmark{which} (test blocks with inputs, "
                          "not tagged nobench or disable, not expecting an error)")
    used = tuning_file(path, tuning, find_tuning)
    pkg = compile_package(path, backend, tuning=str(used) if used else None, find_tuning=False,
                          options=options)
    check_entries(path, chosen, pkg.module.ENTRY_POINTS)
    device = pkg.device_name()  # first: it says so if the backend is unavailable
    kind = pkg.instance.backend
    results: dict[str, ProgramResult] = {}
    for ds in chosen:
        res = results.setdefault(ds.entry, ProgramResult(
            path, ds.entry, kind, device, str(used) if used else None))
        res.order.append(ds.name)
        try:
            res.timings[ds.name] = _time_dataset(
                pkg, ds, runs, DEFAULT_TOLERANCE if tolerance is None else tolerance, progress)
        except FutgenError as e:
            res.failures[ds.name] = str(e)
    return list(results.values())


class WrongResult(FutgenError):
    """A version whose results differ from the expected ones: a compiler bug."""


def checked_runs(pkg, ds: Dataset, args: list[Any], expected: list[Any] | None, runs: int,
                 tolerance: float, on_run: Callable[[float], None] | None = None,
                 slower_than: float | None = None) -> tuple[float, list[float]]:
    """A warm-up call of `ds`'s entry point on `args` whose results are
    checked against `expected`, then `runs` timed calls (none where the
    warm-up took more than `slower_than` µs): the warm-up's µs and the
    runs'.  A failure of the program raises FutgenError saying so, wrong
    results WrongResult."""
    from futgen.data.compare import compare_values
    from futgen.errors import FutharkError

    try:
        results, (first,) = pkg.time_calls(ds.entry, args, 1)
        if expected is not None:
            mismatches = compare_values(expected, results, tolerance)
            if mismatches:
                raise WrongResult(f"wrong result: {mismatches[0]}")
        if slower_than is not None and first > slower_than:
            return first, []
        _, times = pkg.time_calls(ds.entry, args, runs, on_run=on_run)
    except FutharkError as e:
        raise FutgenError(f"failed: {str(e).removeprefix('Error: ')}") from None
    return first, times


def _time_dataset(pkg, ds: Dataset, runs: int, tolerance: float,
                  progress: Callable[[str, int], Any] | None) -> Timings:
    """A checked warm-up, then `runs` timed calls."""
    on_run = progress(ds.name, runs) if progress is not None else None
    _, times = checked_runs(pkg, ds, pkg.resident(ds.entry, ds.arguments()), ds.expected(),
                            runs, tolerance, on_run)
    return Timings(times)


# ---------------------------------------------------------------- reports


def report_lines(result: ProgramResult) -> Iterator[str]:
    """Futhark bench's text: the program, then one line per dataset."""
    used = f"using {result.tuning}" if result.tuning else "no tuning file"
    yield f"{result.key} ({used}; {result.backend}, {result.device}):"
    width = max((len(n) for n in result.order), default=0) + 1
    for name in result.order:
        if name in result.failures:
            why = result.failures[name].replace("\n", "\n  ")
            yield f"{name + ':':<{width}} {why}"
            continue
        t = result.timings[name]
        lo, hi = t.interval()
        us = microseconds
        yield (f"{name + ':':<{width}} {us(t.median):>12} median (95% CI {us(lo)} to "
               f"{us(hi)}; min {us(t.min)}; {len(t.runtimes)} runs)")


def to_json(results: Iterable[ProgramResult]) -> dict[str, Any]:
    """`futhark bench --json`'s shape, with the summary figures added."""
    out: dict[str, Any] = {}
    for r in results:
        sets: dict[str, Any] = {name: t.summary() for name, t in r.timings.items()}
        sets.update({name: {"runtimes": [], "error": why} for name, why in r.failures.items()})
        out[r.key] = {"datasets": sets, "backend": r.backend, "device": r.device,
                      "tuning": r.tuning}
    return out


@dataclass(frozen=True)
class Comparison:
    """One dataset in two benchmark files: `speedup` is old / new median."""

    key: str
    dataset: str
    old: Timings
    new: Timings

    @property
    def speedup(self) -> float:
        return self.old.median / self.new.median if self.new.median > 0 else float("inf")

    @property
    def significant(self) -> bool:
        """Whether the two medians' confidence intervals do not overlap."""
        (a_lo, a_hi), (b_lo, b_hi) = self.old.interval(), self.new.interval()
        return a_hi < b_lo or b_hi < a_lo


def compare(old: dict[str, Any], new: dict[str, Any]) -> list[Comparison]:
    """The datasets two `to_json` (or `futhark bench --json`) files share."""
    out = []
    for key, prog in new.items():
        for name, ds in prog.get("datasets", {}).items():
            before = old.get(key, {}).get("datasets", {}).get(name)
            if before and before.get("runtimes") and ds.get("runtimes"):
                out.append(Comparison(key, name, Timings(before["runtimes"]),
                                      Timings(ds["runtimes"])))
    return out


def comparison_lines(rows: list[Comparison]) -> Iterator[str]:
    width = max((len(r.dataset) for r in rows), default=0) + 1
    key = None
    for r in rows:
        if r.key != key:
            key = r.key
            yield f"{key}:"
        change = "faster" if r.speedup >= 1 else "slower"
        factor = r.speedup if r.speedup >= 1 else 1 / r.speedup
        sure = "" if r.significant else " (within noise: the 95% intervals overlap)"
        before, after = microseconds(r.old.median), microseconds(r.new.median)
        yield (f"{r.dataset + ':':<{width}} {before:>12} -> {after:>12}"
               f"  {factor:.2f}x {change}{sure}")


def plot(path: str, results: list[ProgramResult] | None = None,
         comparisons: list[Comparison] | None = None) -> None:
    """A PNG: each dataset's median with its interval (a benchmark), or
    each dataset's speedup (a comparison)."""
    try:
        import matplotlib
    except ImportError:
        raise FutgenError("--plot needs matplotlib (pip install matplotlib)") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if comparisons is not None:
        labels = [f"{c.key} {c.dataset}" for c in comparisons]
        values = [c.speedup for c in comparisons]
        errors = None
        xlabel = "speedup (old median / new median)"
    else:
        rows = [(f"{r.key} {n}", t) for r in results or [] for n, t in r.timings.items()]
        labels = [label for label, _ in rows]
        values = [t.median for _, t in rows]
        errors = np.array([[t.median - t.interval()[0], t.interval()[1] - t.median]
                           for _, t in rows]).T if rows else None
        xlabel = "median runtime (μs, 95% interval)"
    fig, ax = plt.subplots(figsize=(8, 0.4 * len(labels) + 1.5))
    ax.barh(range(len(labels)), values, xerr=errors, color="tab:blue")
    ax.set_yticks(range(len(labels)), labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    if comparisons is not None:
        ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_xlabel(xlabel)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
