"""`futgen autotune`: the dataset-sensitive threshold tuner of
`research/seed002.md` (Munksgaard et al., TFP 2021).

A package's thresholds form a forest (`forest.py`): a guard `T <= P` picks
its version, else the subtree of its false branch.  The tuner assumes the
paper's monotonicity: if a version beats the subtree at parallelism P, it
beats it at every larger P.  Then:

1. Thresholds are tuned bottom-up (children before their parent), each on
   every dataset with the thresholds below it at their final values (the
   order of Futhark's tuner: a conflict below is settled before its parent
   is tuned).  Tuning threshold v on a dataset runs the program with v at
   infinity and its ancestors forced onto v's branch, which logs the values
   P that v's guard compared; the candidates are those values and infinity
   (no other value changes which version runs).  One value (size-invariant)
   takes one more run; several (size-variant) take a binary search on the
   gradient between two neighbouring candidates (Fig. 8 of the paper), or,
   with the profiling method, two profiled runs (the version at every
   evaluation, and at none) whose per-evaluation times predict every
   candidate, and one run that checks the value to be used (else the
   search decides).  The fastest candidate, and its neighbours whose times
   are within `noise` of it (a tie says nothing), give the dataset's
   interval of good values.
2. Each threshold's intervals are intersected over the datasets.  An empty
   intersection is a conflict: the datasets cannot all get their best
   version.  It is reported, and resolved by the largest consistent set of
   datasets weighted by their run time.  The value written is the one in
   the interval nearest the compiler's default (Futhark's tuner writes the
   upper end): where the training datasets do not say, the default stands,
   and values are not pushed further than they ask.

A run that fails, runs out of memory or exceeds the timeout counts as a
loss for its candidate (a failing baseline too, where the guard was
reached).  Runs are memoised: a run is reused for any setting that takes
the same branch at every guard evaluation it logged, since it then runs the
same versions.  The runs are counted and printed; for a given outcome of
the comparisons, their number is fixed.

Block sizes (class `tblock_size`), intra-block kernels' run lengths
(`run_length`) and tile sizes (`tile_size`; both with the values their
kernel allows) are not monotone in anything the program shows: a larger
tile saves loads and barriers until it costs occupancy or spills
registers, so no threshold argument orders them.  After the
thresholds, each one a run used is tried at every candidate value on the
datasets that use it (`tune_sizes`), a small exhaustive search per kernel.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from itertools import accumulate

import numpy as np

from futgen.gpu.ir import INFINITE_THRESHOLD
from futgen.tune import NOISE, microseconds
from futgen.tune.forest import FORCED, Node, forest

INF = INFINITE_THRESHOLD


@dataclass(frozen=True)
class Measurement:
    """One run: its time in µs (None: failed, out of memory or timed out),
    the (threshold, parallelism) of every guard it evaluated, and, if it was
    profiled, (threshold, parallelism, µs of the code it chose) of each."""

    time: float | None
    guards: tuple[tuple[str, int], ...] = ()
    why: str = ""
    regions: tuple[tuple[str, int, float], ...] = ()
    sizes: tuple[str, ...] = ()  # the block and tile sizes its launches used


# (dataset, thresholds) -> a run of the dataset with those thresholds.
Runner = Callable[[str, Mapping[str, int]], Measurement]


@dataclass(frozen=True)
class Interval:
    """Threshold values lo..hi, both included (empty if lo > hi)."""

    lo: int
    hi: int

    def __and__(self, other: Interval) -> Interval:
        return Interval(max(self.lo, other.lo), min(self.hi, other.hi))

    @property
    def empty(self) -> bool:
        return self.lo > self.hi

    def __contains__(self, v: int) -> bool:
        return self.lo <= v <= self.hi

    def __str__(self) -> str:
        return f"[{self.lo}, {self.hi}]"

    def nearest(self, v: int) -> int:
        """The value of the interval nearest `v`."""
        return min(max(v, self.lo), self.hi)


@dataclass
class Tuned:
    """What tuning found for one threshold."""

    name: str
    default: int
    intervals: dict[str, Interval] = field(default_factory=dict)  # dataset -> interval
    interval: Interval | None = None  # the intersection (of the consistent datasets)
    left_out: list[str] = field(default_factory=list)  # datasets in conflict, not served
    failed: dict[str, str] = field(default_factory=dict)  # dataset -> why its runs told nothing

    @property
    def value(self) -> int | None:
        return None if self.interval is None else self.interval.nearest(self.default)


@dataclass
class SizeTuned:
    """What tuning found for one block or tile size: the chosen value and each
    candidate's time relative to the default (geometric mean over the
    datasets that use it and that some candidate moves by more than the
    noise, `voters`; inf where a run failed)."""

    name: str
    value: int
    relative: dict[int, float]
    voters: tuple[str, ...] = ()
    indifferent: tuple[str, ...] = ()  # datasets using it that no candidate moved
    free: bool = False  # chosen as faster on some dataset and slower on none


@dataclass
class TuneResult:
    thresholds: list[Tuned]
    runs: int
    log: list[str]
    sizes: list[SizeTuned] = field(default_factory=list)

    @property
    def values(self) -> dict[str, int]:
        found = {t.name: t.value for t in self.thresholds if t.value is not None}
        return {**found, **{b.name: b.value for b in self.sizes}}


class _Runs:
    """The runner, memoised (see the module's text) and counted."""

    def __init__(self, run: Runner) -> None:
        self.run = run
        self.count = 0
        self.done: dict[str, list[tuple[dict[str, int], Measurement]]] = {}

    def __call__(self, dataset: str, tuning: dict[str, int]) -> Measurement:
        for seen, m in self.done.get(dataset, []):
            if _same_choices(tuning, seen, m.guards):
                return m
        m = self.run(dataset, dict(tuning))
        self.count += 1
        self.done.setdefault(dataset, []).append((dict(tuning), m))
        return m


def _same_choices(a: Mapping[str, int], b: Mapping[str, int],
                  guards: tuple[tuple[str, int], ...]) -> bool:
    """Whether thresholds `a` and `b` take the same branch at every guard
    evaluation (name, P) of a run (a name neither sets keeps the instance's
    value): then they run the same versions."""
    for name, p in guards:
        x, y = a.get(name), b.get(name)
        if x is None or y is None:
            if x != y:
                return False
        elif (x <= p) != (y <= p):
            return False
    return True


METHODS = ("search", "profile")


def tune(params: Mapping[str, Mapping], datasets: list[str], run: Runner,
         weights: Mapping[str, float] | None = None, noise: float = NOISE,
         method: str = "search", say: Callable[[str], None] | None = None) -> TuneResult:
    """Tune the thresholds of `params` (a package's TUNING_PARAMS) on
    `datasets`; `weights` (default: each dataset's best time) rank the
    datasets where intervals conflict; times within `noise` (relative) of
    each other are a tie.  `method` "profile" decides a size-variant
    threshold from two profiled runs where it can (`_profile_scores`)."""
    if method not in METHODS:
        raise ValueError(f"unknown tuning method {method!r}; expected one of {METHODS}")
    log: list[str] = []

    def note(line: str) -> None:
        log.append(line)
        if say is not None:
            say(line)

    order = list(_bottom_up(forest(params)))
    paths = {node.name: tuple(params[node.name]["path"]) for node in order}
    runs = _Runs(run)
    tuned = {node.name: Tuned(node.name, node.default) for node in order}
    best: dict[str, float] = {}
    chosen: dict[str, int] = {}  # the values of the thresholds tuned so far
    for node in order:
        t = tuned[node.name]
        local = {n.name: chosen.get(n.name, INF) for n in order}
        for d in datasets:
            interval, time = _tune_one(node.name, node.default, paths[node.name], d, local,
                                       runs, noise, method, note, t.failed)
            if interval is not None:
                t.intervals[d] = interval
            if time is not None:
                best[d] = time
        _combine(t, weights if weights is not None else best, note)
        if t.value is not None:
            chosen[node.name] = t.value
    return TuneResult([tuned[node.name] for node in order], runs.count, log)


BLOCK_SIZES = (64, 128, 256, 512, 1024)


def candidates(param: Mapping) -> tuple[int, ...]:
    """The values tried for a size: a tile size's or run length's allowed
    ones, else BLOCK_SIZES."""
    return tuple(param.get("values", BLOCK_SIZES))


def tune_sizes(params: Mapping[str, Mapping], datasets: list[str], run: Runner,
               thresholds: Mapping[str, int], noise: float = NOISE,
               say: Callable[[str], None] | None = None) -> tuple[list[SizeTuned], int]:
    """After the thresholds (their values `thresholds`): each block or tile
    size some dataset's run uses, by trying every `candidates` value on the
    datasets that use it, the others at their values so far.  Sizes are not
    monotone in anything the program shows, so this is a small exhaustive
    search per kernel, not the thresholds' algorithm.  A candidate that
    makes no dataset slower by more than `noise` and some dataset faster by
    more replaces the default (of several, the one of least geometric mean
    time relative to the default's); else the candidate of least geometric
    mean does, if that is below 1 - `noise`.  The means are over the
    datasets some candidate moves by more than `noise` (a dataset whose
    launches a size does not change, a row short enough for any block,
    would only add its noise to the others' gain), so a trade-off between
    datasets is weighed, while a gain on one dataset that costs the
    others nothing is taken, not averaged away.  (the sizes, the runs made)"""
    done: dict[tuple[str, tuple], Measurement] = {}

    def measure(d: str, setting: dict[str, int]) -> Measurement:
        key = (d, tuple(sorted(setting.items())))
        if key not in done:
            done[key] = run(d, setting)
        return done[key]

    setting = {**thresholds, **{name: int(p["default"]) for name, p in params.items()}}
    users: dict[str, list[str]] = {}
    for d in datasets:
        for name in measure(d, setting).sizes:
            users.setdefault(name, []).append(d)
    found = []
    for name in sorted(users):
        default = int(params[name]["default"])
        base = {d: measure(d, setting).time for d in users[name]}
        ratios: dict[str, dict[int, float]] = {d: {} for d in users[name]}
        for c in candidates(params[name]):
            for d in users[name]:
                t = measure(d, {**setting, name: c}).time
                ratios[d][c] = t / base[d] if t and base[d] else float("inf")
        voters = [d for d in users[name]
                  if any(abs(r - 1) >= noise for r in ratios[d].values())] or users[name]
        relative = {c: float(np.exp(np.mean([np.log(ratios[d][c]) for d in voters])))
                    for c in candidates(params[name])}
        free = [c for c in relative  # faster somewhere, slower nowhere
                if all(ratios[d][c] <= 1 + noise for d in users[name])
                and any(ratios[d][c] < 1 - noise for d in users[name])]
        best = min(free or relative, key=relative.get)
        value = best if free or relative[best] < 1 - noise else default
        setting[name] = value
        apart = tuple(d for d in users[name] if d not in voters)
        found.append(SizeTuned(name, value, relative, tuple(voters), apart, bool(free)))
        if say is not None:
            shown = ", ".join(f"{c}: {r:.2f}" for c, r in relative.items())
            say(f"{name} on {len(users[name])} dataset(s): {value} (time relative to "
                f"{default}: {shown})")
    return found, len(done)


def _bottom_up(trees: list[Node]) -> Iterator[Node]:
    """Every node after the nodes of both its branches (post-order)."""
    for tree in trees:
        for branch in (True, False):
            yield from _bottom_up(tree.children[branch])
        yield tree


def _tune_one(v: str, default: int, path: tuple[str, ...], d: str, local: dict[str, int],
              runs: _Runs, noise: float, method: str,
              note: Callable[[str], None],
              failed: dict[str, str]) -> tuple[Interval | None, float | None]:
    """Threshold `v` on dataset `d`, the thresholds below it set in `local`:
    (its interval, the best time), or no interval where the dataset never
    reaches it or no run of it succeeds (then `failed[d]` says why)."""
    forced = {a.lstrip("!"): FORCED[not a.startswith("!")] for a in path}
    setting = {**local, **forced, v: INF}
    base = runs(d, setting)
    seen = {p for name, p in base.guards if name == v}
    pars = sorted(p for p in seen if p < INF)
    if len(pars) < len(seen):  # "infinity" cannot tell those apart from the rest
        note(f"{v} on {d}: parallelism of {INF} or more seen; such evaluations always "
             "run its version")
    if not pars:
        if base.time is None:
            note(f"{v} on {d}: the run with it at infinity failed before reaching it "
                 f"({base.why}); no information")
            failed[d] = _one_line(base.why)
        return None, base.time
    candidates = [*pars, INF]
    times: dict[int, float | None] = {INF: base.time}  # a failed baseline is a loss

    def time_of(c: int) -> float | None:
        if c not in times:
            times[c] = runs(d, {**setting, v: c}).time
        return times[c]

    found = None
    if method == "profile" and len(pars) > 1:
        always = runs(d, {**setting, v: candidates[0]})
        found = _profiled(v, default, base, always, candidates, times, time_of, noise)
    how = "profile" if found is not None else "search"
    if found is None:
        k = _search(candidates, times, time_of)
        if k is None:
            note(f"{v} on {d}: every run failed ({base.why}); no information")
            failed[d] = _one_line(base.why)
            return None, None
        first, last = _ties(candidates, times, k, noise)
        found = Interval(_above(candidates, first), candidates[last]), times[candidates[k]]
    interval, best = found
    shown = ", ".join(map(str, pars)) if len(pars) <= 6 else f"{len(pars)} values"
    tie = " (a tie)" if interval.hi != next(c for c in candidates if c >= interval.lo) else ""
    note(f"{v} on {d}: P in {{{shown}}}: {interval}{tie} ({microseconds(best)}; {how})")
    return interval, best


def _above(candidates: list[int], i: int) -> int:
    """The least threshold value that behaves as candidate `i` does."""
    return candidates[i - 1] + 1 if i > 0 else 0


def _profiled(v: str, default: int, never: Measurement, always: Measurement,
              candidates: list[int], times: dict[int, float | None],
              time_of: Callable[[int], float | None],
              noise: float) -> tuple[Interval, float] | None:
    """The profiling method: the interval of the candidates `_profile_scores`
    predicts best, and the time of the value that will be used, if that
    value, run end to end, is as fast as the best run seen; else None (the
    search decides)."""
    times[candidates[0]] = always.time
    scores = _profile_scores(v, never, always, candidates)
    if scores is None:
        return None
    k = min(range(len(candidates)), key=lambda i: scores[candidates[i]])
    first, last = _ties(candidates, scores, k, noise)
    interval = Interval(_above(candidates, first), candidates[last])
    used = next(c for c in candidates if c >= interval.nearest(default))
    timed = time_of(used)
    fastest = min((t for t in times.values() if t is not None), default=None)
    if timed is None or fastest is None or timed > fastest * (1 + noise):
        return None
    return interval, timed


def _search(candidates: list[int], times: dict[int, float | None],
            time_of: Callable[[int], float | None]) -> int | None:
    """The index of the best candidate, by the gradient between neighbours
    (Fig. 8 of the paper), which monotonicity makes point to the best;
    None if every run failed."""
    lo, hi = 0, len(candidates) - 1
    while lo < hi:
        j = (lo + hi) // 2
        here, there = time_of(candidates[j]), time_of(candidates[j + 1])
        if here is not None and (there is None or here < there):
            hi = j  # the guarded version wins at pars[j], so at every larger P too
        else:
            lo = j + 1
    measured = [i for i, c in enumerate(candidates) if times.get(c) is not None]
    return min(measured, key=lambda i: (times[candidates[i]], i != lo)) if measured else None


def _profile_scores(v: str, never: Measurement, always: Measurement,
                    candidates: list[int]) -> dict[int, float] | None:
    """Each candidate's predicted time of the code `v` guards, from two
    profiled runs: `always` (v's version at every guard evaluation) and
    `never`.  Setting v to c runs v's version where P >= c: the prefix of
    `never`'s region times below c plus the suffix of `always`'s from c
    (Breddam's instrumentation tuner).  None where the runs were not
    profiled or did not evaluate the guard at the same P in the same order."""
    if never.time is None or always.time is None:
        return None
    mine = [(p, t) for name, p, t in always.regions if name == v]
    theirs = [(p, t) for name, p, t in never.regions if name == v]
    if not mine or [p for p, _ in mine] != [p for p, _ in theirs]:
        return None
    pars = candidates[:-1]
    at = {p: i for i, p in enumerate(pars)}
    with_v, without_v = [0.0] * len(pars), [0.0] * len(pars)
    for (p, ta), (_, tb) in zip(mine, theirs):
        with_v[at[p]] += ta
        without_v[at[p]] += tb
    below = [0.0, *accumulate(without_v)]  # below[i]: P < pars[i] without v's version
    from_here = [*accumulate(with_v[::-1])][::-1] + [0.0]  # P >= pars[i] with it
    return {c: below[i] + from_here[i] for i, c in enumerate(candidates)}


def _ties(candidates: list[int], times: Mapping[int, float | None], k: int,
          noise: float) -> tuple[int, int]:
    """The run of measured candidates around the best one, `k`, whose times
    are within `noise` of its time: (first, last) index."""
    limit = times[candidates[k]] * (1 + noise)

    def near(i: int) -> bool:
        t = times.get(candidates[i])
        return t is not None and t <= limit

    first, last = k, k
    while first > 0 and near(first - 1):
        first -= 1
    while last < len(candidates) - 1 and near(last + 1):
        last += 1
    return first, last


def _combine(t: Tuned, weights: Mapping[str, float], note: Callable[[str], None]) -> None:
    """Intersect a threshold's intervals; in a conflict, keep the datasets
    of most total weight whose intervals share a value."""
    if not t.intervals:
        return
    whole = Interval(0, INF)
    for i in t.intervals.values():
        whole = whole & i
    if not whole.empty:
        t.interval = whole
        return
    # The best point lies at some interval's lower end.
    point = max(sorted({i.lo for i in t.intervals.values()}),
                key=lambda x: sum(weights.get(d, 1.0) for d, i in t.intervals.items() if x in i))
    kept = {d: i for d, i in t.intervals.items() if point in i}
    t.left_out = [d for d in t.intervals if d not in kept]
    t.interval = Interval(0, INF)
    for i in kept.values():
        t.interval = t.interval & i
    note(f"conflict: {t.name} has no value good for every dataset: "
         + "; ".join(f"{d}: {i}" for d, i in t.intervals.items())
         + f". Kept {t.interval}, which serves {', '.join(kept)} (the most run time); "
         f"not served: {', '.join(t.left_out)}")


def _one_line(why: object) -> str:
    """A failure's reason as one line of a tuning file's comments."""
    return " ".join(str(why).split())


def tuning_file_text(result: TuneResult, params: Mapping[str, Mapping],
                     header: list[str]) -> str:
    """A tuning file: `header` and what was found, as `--` comments, then
    a `name=value` line for each threshold some dataset reached."""
    lines = [f"-- {h}" for h in header]
    lines.append("-- each threshold: the values good on every dataset, overall (per dataset); "
                 "the value written is the one nearest the default")
    for t in sorted(result.thresholds, key=lambda t: t.name):
        # A dataset whose runs failed (too slow, say) left the choice to the others.
        unknown = "; ".join(f"{d}: {why}" for d, why in t.failed.items())
        if t.interval is None:
            why = f"no information ({unknown})" if unknown else "reached by no dataset"
            lines.append(f"-- {t.name}: {why}; its default "
                         f"{params[t.name]['default']} stands")
            continue
        per = "; ".join(f"{d}: {i}" for d, i in t.intervals.items())
        lost = f"; conflict, not served: {', '.join(t.left_out)}" if t.left_out else ""
        failed = f"; NO INFORMATION from {unknown}" if unknown else ""
        lines.append(f"-- {t.name}: {t.interval} ({per}){lost}{failed}")
    for b in result.sizes:
        shown = ", ".join(f"{c}: {r:.2f}" for c, r in b.relative.items())
        apart = f" ({', '.join(b.indifferent)}: every value the same)" if b.indifferent else ""
        free = f"; {b.value}: faster on some dataset, slower on none" if b.free else ""
        lines.append(f"-- {b.name}: time relative to the default {params[b.name]['default']}: "
                     f"{shown}{apart}{free}")
    lines += [f"{name}={value}" for name, value in sorted(result.values.items())]
    return "\n".join(lines) + "\n"
