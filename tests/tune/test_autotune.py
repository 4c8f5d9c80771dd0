"""The autotuner on deterministic cost models: the worked examples of
`research/seed002.md` (§2.4, §7.5), a size-variant threshold, conflicting
datasets, failed runs and the run counts."""

from __future__ import annotations

from collections.abc import Mapping

from futgen.tune.autotune import (
    INF,
    Interval,
    Measurement,
    SizeTuned,
    TuneResult,
    tune,
    tune_sizes,
    tuning_file_text,
)


def _threshold(*path: str) -> dict:
    return {"class": "threshold", "default": 32768, "path": path, "doc": ""}


# Fig. 1 of the paper: B1: if T1 <= P1 then V1 else (B2: if T2 <= P2 then V2 else V3).
TREE = {"t1": _threshold(), "t2": _threshold("!t1")}


class Tree:
    """A program with the tree above: per dataset, P1, P2 and each version's time."""

    def __init__(self, datasets: dict[str, tuple[int, int, dict[str, float]]]) -> None:
        self.datasets = datasets
        self.calls: list[tuple[str, dict[str, int]]] = []

    def __call__(self, d: str, tuning: Mapping[str, int]) -> Measurement:
        self.calls.append((d, dict(tuning)))
        p1, p2, cost = self.datasets[d]
        if tuning["t1"] <= p1:
            return Measurement(cost["V1"], (("t1", p1),))
        version = "V2" if tuning["t2"] <= p2 else "V3"
        return Measurement(cost[version], (("t1", p1), ("t2", p2)))


def test_one_dataset_takes_three_runs_bottom_up() -> None:
    # §2.4 / §7.5: P1 = 10, P2 = 50; V2 beats V3, V1 loses to V2.
    program = Tree({"d": (10, 50, {"V1": 30.0, "V2": 10.0, "V3": 20.0})})
    result = tune(TREE, ["d"], program)
    t1, t2 = (next(t for t in result.thresholds if t.name == n) for n in ("t1", "t2"))
    assert [t.name for t in result.thresholds] == ["t2", "t1"]  # children first
    assert t2.intervals == {"d": Interval(0, 50)}
    assert t1.intervals == {"d": Interval(11, INF)}
    assert result.runs == 3
    # The baseline runs the bottom version; then V2, then V1 with T2 tuned.
    assert [c["t1"] for _, c in program.calls] == [INF, INF, 10]
    assert [c["t2"] for _, c in program.calls] == [INF, 50, 50]


def test_intervals_intersect_over_datasets() -> None:
    # §7.5: a second dataset with P1 = 1000 where V1 wins gives T1 in [0, 1000].
    program = Tree({"small": (10, 50, {"V1": 30.0, "V2": 10.0, "V3": 20.0}),
                    "large": (1000, 50, {"V1": 5.0, "V2": 10.0, "V3": 20.0})})
    result = tune(TREE, ["small", "large"], program)
    t1 = next(t for t in result.thresholds if t.name == "t1")
    assert t1.intervals == {"small": Interval(11, INF), "large": Interval(0, 1000)}
    assert t1.interval == Interval(11, 1000) and not t1.left_out
    assert result.values == {"t1": 1000, "t2": 50}  # nearest the default, 32768
    assert result.runs == 6
    # The values found choose each dataset's best version.
    for d, best in (("small", "V2"), ("large", "V1")):
        m = program(d, result.values)
        assert m.time == program.datasets[d][2][best]


def test_a_size_variant_threshold_is_found_by_binary_search() -> None:
    # §2.5 / §7.5: P takes 10, 50 and 100 in one run; the guarded version
    # is better only at 100, so T in [51, 100].
    pars = (10, 50, 100)
    mine = {10: 5.0, 50: 4.0, 100: 1.0}
    theirs = {10: 1.0, 50: 2.0, 100: 3.0}
    calls = []

    def program(d: str, tuning: Mapping[str, int]) -> Measurement:
        calls.append(tuning["t"])
        time = sum(mine[p] if tuning["t"] <= p else theirs[p] for p in pars)
        return Measurement(time, tuple(("t", p) for p in pars))

    result = tune({"t": _threshold()}, ["d"], program)
    [t] = result.thresholds
    assert t.intervals == {"d": Interval(51, 100)} and t.value == 100
    # The baseline, then the neighbours 50 and 100 of the middle: fewer
    # runs than trying all four candidates.
    assert calls == [INF, 50, 100]
    assert result.runs == 3


def test_every_cut_of_a_size_variant_threshold_is_recovered() -> None:
    pars = (10, 50, 100)
    for cut in (*pars, INF):  # the guarded version wins exactly at P >= cut
        def program(d: str, tuning: Mapping[str, int], cut: int = cut) -> Measurement:
            time = sum((1.0 if p >= cut else 3.0) if tuning["t"] <= p
                       else (2.0 if p >= cut else 1.0) for p in pars)
            return Measurement(time, tuple(("t", p) for p in pars))

        [t] = tune({"t": _threshold()}, ["d"], program).thresholds
        below = max((p for p in pars if p < cut), default=-1)
        assert t.intervals["d"] == Interval(below + 1, cut), cut
        assert t.value == min(cut, 32768)  # the value nearest the default


def test_conflicting_datasets_are_reported_and_the_heavier_served() -> None:
    # Not monotone: V1 wins at P1 = 10 but loses at P1 = 1000.
    program = Tree({"wide": (10, 50, {"V1": 1.0, "V2": 10.0, "V3": 20.0}),
                    "tall": (1000, 50, {"V1": 90.0, "V2": 50.0, "V3": 60.0})})
    result = tune(TREE, ["wide", "tall"], program)
    t1 = next(t for t in result.thresholds if t.name == "t1")
    assert t1.intervals == {"wide": Interval(0, 10), "tall": Interval(1001, INF)}
    assert t1.left_out == ["wide"] and t1.interval == Interval(1001, INF)
    assert any(line.startswith("conflict: t1") and "not served: wide" in line
               for line in result.log)
    # Weights decide: make the wide dataset the heavier one.
    result = tune(TREE, ["wide", "tall"], program, weights={"wide": 100.0, "tall": 1.0})
    t1 = next(t for t in result.thresholds if t.name == "t1")
    assert t1.left_out == ["tall"] and t1.interval == Interval(0, 10)


def test_failed_runs_lose_and_unreached_thresholds_keep_their_defaults() -> None:
    # V2 runs out of memory: the tuner must avoid it although it would be fastest.
    def program(d: str, tuning: Mapping[str, int]) -> Measurement:
        if tuning["t1"] <= 10:
            return Measurement(30.0, (("t1", 10),))
        if tuning["t2"] <= 50:
            return Measurement(None, (("t1", 10), ("t2", 50)), "out of memory")
        return Measurement(20.0, (("t1", 10), ("t2", 50)))

    params = {**TREE, "unused": _threshold("t1")}
    result = tune(params, ["d"], program)
    t1, t2 = (next(t for t in result.thresholds if t.name == n) for n in ("t1", "t2"))
    assert t2.intervals == {"d": Interval(51, INF)} and t1.intervals == {"d": Interval(11, INF)}
    assert result.values == {"t1": 32768, "t2": 32768}  # the defaults are good
    text = tuning_file_text(result, params, ["a header"])
    assert text.splitlines()[0] == "-- a header"
    assert "-- unused: reached by no dataset; its default 32768 stands" in text
    assert text.endswith("t1=32768\nt2=32768\n")


def test_a_dataset_whose_runs_all_fail_is_named_in_the_tuning_file() -> None:
    # LocVolCalib's large dataset under a 5 s timeout: every run too slow, so
    # the others choose alone, and the file must say so (a value good for
    # them may be very bad for it).
    def program(d: str, tuning: Mapping[str, int]) -> Measurement:
        if d == "large":
            return Measurement(None, (("t1", 10), ("t2", 50)), "too slow:\n  6.2 s a call")
        if tuning["t1"] <= 10:
            return Measurement(30.0, (("t1", 10),))
        return Measurement(10.0 if tuning["t2"] <= 50 else 20.0, (("t1", 10), ("t2", 50)))

    result = tune(TREE, ["small", "large"], program)
    t2 = next(t for t in result.thresholds if t.name == "t2")
    assert t2.intervals == {"small": Interval(0, 50)}
    assert t2.failed == {"large": "too slow: 6.2 s a call"}  # one line, for the file
    text = tuning_file_text(result, TREE, [])
    assert all(line.startswith("--") or "=" in line for line in text.splitlines())
    assert ("-- t2: [0, 50] (small: [0, 50]); NO INFORMATION from large: "
            "too slow: 6.2 s a call") in text


def test_a_threshold_under_a_true_branch_is_reached_by_forcing_its_parent() -> None:
    # t2 matters only where t1 takes its version (strategies inside it).
    params = {"t1": _threshold(), "t2": _threshold("t1")}
    seen = []

    def program(d: str, tuning: Mapping[str, int]) -> Measurement:
        seen.append(dict(tuning))
        if tuning["t1"] <= 100:
            fast = tuning["t2"] <= 7
            return Measurement(5.0 if fast else 8.0, (("t1", 100), ("t2", 7)))
        return Measurement(10.0, (("t1", 100),))

    result = tune(params, ["d"], program)
    assert seen[0] == {"t1": 0, "t2": INF}  # forced onto t1's true branch
    assert result.values == {"t1": 100, "t2": 7}


def test_times_within_the_noise_are_ties_that_leave_the_default() -> None:
    # Both datasets run V1 and the rest within 1%: no preference, the
    # default stands; a third dataset that does prefer decides alone.
    same = {"V1": 10.0, "V2": 10.05, "V3": 10.1}
    program = Tree({"a": (10, 50, same), "b": (2000, 50, same),
                    "c": (100000, 50, {"V1": 5.0, "V2": 10.0, "V3": 20.0})})
    result = tune(TREE, ["a", "b"], program)
    t1 = next(t for t in result.thresholds if t.name == "t1")
    assert t1.intervals == {"a": Interval(0, INF), "b": Interval(0, INF)}
    assert result.values["t1"] == 32768
    assert any("(a tie)" in line for line in result.log)
    result = tune(TREE, ["a", "b", "c"], program)
    assert result.values["t1"] == 32768  # [0, 100000] holds the default
    result = tune(TREE, ["a", "b", "c"], program, noise=0.0)  # every difference counts
    t1 = next(t for t in result.thresholds if t.name == "t1")
    assert t1.intervals["a"] == Interval(0, 10) and t1.intervals["b"] == Interval(0, 2000)
    assert t1.interval == Interval(0, 10) and result.values["t1"] == 10


class Variant:
    """One guard evaluated at P = 10, 20, ..., 320 in a run (a LUD-like
    loop); its version costs `mine(P)` there, the rest `theirs(P)`; with
    `hidden`, the version also costs that much outside its timed region."""

    def __init__(self, cut: int, hidden: float = 0.0) -> None:
        self.pars = [10 * (i + 1) for i in range(32)]
        self.cut, self.hidden, self.calls = cut, hidden, 0

    def __call__(self, d: str, tuning: Mapping[str, int]) -> Measurement:
        self.calls += 1
        regions, total = [], 0.0
        for p in self.pars:
            taken = tuning["t"] <= p
            t = (1.0 if p >= self.cut else 3.0) if taken else 2.0
            total += t + (self.hidden if taken else 0.0)
            regions.append(("t", p, t))
        return Measurement(total, tuple(("t", p) for p in self.pars), regions=tuple(regions))


def test_the_profile_method_decides_a_size_variant_threshold_from_three_runs() -> None:
    found = {}
    for method in ("search", "profile"):
        program = Variant(cut=170)
        result = tune({"t": _threshold()}, ["d"], program, method=method, noise=0.0)
        [t] = result.thresholds
        found[method] = (t.intervals["d"], result.runs)
        assert any(line.endswith(f"; {method})") for line in result.log)
    assert found["profile"][0] == found["search"][0] == Interval(161, 170)
    # The baseline, the version everywhere, and the check of the choice;
    # the search needs two runs per halving of the 33 candidates.
    assert found["profile"][1] == 3 and found["search"][1] >= 9


def test_the_profile_method_falls_back_to_the_search_when_its_choice_is_slow() -> None:
    # The version's regions look fast, but it costs more outside them: the
    # end-to-end check of the profile's choice fails and the search decides.
    program = Variant(cut=170, hidden=5.0)
    result = tune({"t": _threshold()}, ["d"], program, method="profile", noise=0.0)
    [t] = result.thresholds
    assert t.intervals["d"] == Interval(321, INF)  # never the version
    assert any(line.endswith("; search)") for line in result.log)


def test_block_sizes_are_searched_on_the_datasets_that_use_them() -> None:
    params = {"k.segmap_tblock_size_1": {"class": "tblock_size", "default": 256, "path": ()},
              "k.segmap_tblock_size_2": {"class": "tblock_size", "default": 256, "path": ()},
              "k.segmap_tblock_size_3": {"class": "tblock_size", "default": 256, "path": ()}}
    best = {"a": 512, "b": 512}  # kernel 1 runs fastest with 512 threads a block
    calls = []

    def program(d: str, tuning: Mapping[str, int]) -> Measurement:
        calls.append(d)
        used = ("k.segmap_tblock_size_1", "k.segmap_tblock_size_2")
        one = 100.0 * (1 + abs(tuning["k.segmap_tblock_size_1"] - best[d]) / 1024)
        two = 50.0 * (1 + 0.01 * (tuning["k.segmap_tblock_size_2"] != 256))
        return Measurement(one + two, sizes=used if d == "a" else used[:1])

    found, runs = tune_sizes(params, ["a", "b"], program, {})
    values = {f.name: f.value for f in found}
    # Kernel 3 never runs; kernel 2 gains nothing beyond the noise: its default stays.
    assert values == {"k.segmap_tblock_size_1": 512, "k.segmap_tblock_size_2": 256}
    first = next(f for f in found if f.name == "k.segmap_tblock_size_1")
    assert first.relative[256] == 1.0 and first.relative[512] < first.relative[128]
    # A baseline per dataset; each other candidate once per dataset that uses
    # the size (kernel 2: dataset a only).
    assert runs == len(calls) == 2 + 4 * 2 + 4


def test_a_dataset_no_block_size_moves_does_not_vote() -> None:
    """LocVolCalib's x solve: a cap of 64 threads a row gains 5% on medium,
    whose rows of 256 it shortens, and changes nothing on small, whose rows
    of 32 fit any cap but whose times wander within the noise.  The
    geometric mean over both (0.987) would keep the default; small, which
    no candidate moves by the noise, does not vote, and 64 wins."""
    name = "k.intra_tblock_size_1"
    params = {name: {"class": "tblock_size", "default": 1024, "path": ()}}
    wander = {64: 1.025, 128: 0.99, 256: 1.01, 512: 0.985, 1024: 1.0}

    def program(d: str, tuning: Mapping[str, int]) -> Measurement:
        cap = tuning[name]
        factor = (0.95 if cap == 64 else 1.0) if d == "medium" else wander[cap]
        return Measurement(100.0 * factor, sizes=(name,))

    [size], _ = tune_sizes(params, ["small", "medium"], program, {})
    assert size.value == 64 and size.voters == ("medium",) and size.indifferent == ("small",)
    assert abs(size.relative[64] - 0.95) < 1e-9
    text = tuning_file_text(TuneResult([], 0, [], [size]), params, ["header"])
    [line] = [x for x in text.splitlines() if x.startswith(f"-- {name}:")]
    assert line.startswith(f"-- {name}: time relative to the default 1024: 64: 0.95")
    assert line.endswith("(small: every value the same); 64: faster on some dataset, slower on none")
    # Where no dataset is moved, all vote, and the default stays.
    [same], _ = tune_sizes(params, ["small"], program, {})
    assert same.value == 1024 and same.voters == ("small",)


def test_a_gain_on_one_dataset_that_costs_the_others_nothing_is_taken() -> None:
    """LocVolCalib's y solve: runs of 8 take large 4% faster and leave
    medium as it is (its rows need fewer lanes than the fill allows), but
    medium votes, since runs of 1 slow it down; the geometric mean (0.98)
    would keep the default.  A candidate slower nowhere and faster
    somewhere wins; where every candidate trades one dataset against
    another, the geometric mean still decides."""
    name = "k.intra_runs_1"
    params = {name: {"class": "run_length", "default": 4, "path": (),
                     "values": (1, 2, 4, 8, 16)}}
    times = {"medium": {1: 121.0, 2: 106.0, 4: 100.0, 8: 100.5, 16: 100.5},
             "large": {1: 133.0, 2: 112.0, 4: 100.0, 8: 96.0, 16: 125.0}}

    def program(d: str, tuning: Mapping[str, int]) -> Measurement:
        return Measurement(times[d][tuning[name]], sizes=(name,))

    [size], _ = tune_sizes(params, ["medium", "large"], program, {})
    assert size.value == 8 and size.relative[8] > 0.97 and size.free
    text = tuning_file_text(TuneResult([], 0, [], [size]), params, ["header"])
    assert "8: faster on some dataset, slower on none" in text
    # Runs of 8 now cost medium 5%: a trade-off, whose mean (1.00) keeps 4.
    times["medium"][8] = 105.0
    [size], _ = tune_sizes(params, ["medium", "large"], program, {})
    assert size.value == 4 and not size.free


def test_a_run_length_is_tried_at_the_values_its_kernel_allows() -> None:
    """An intra-block kernel's run length (the most elements a thread
    takes) is tried at each value it allows, not at block sizes: runs of 8,
    LocVolCalib large's y solve 15% faster than the default 4."""
    name = "k.intra_runs_1"
    lengths = (1, 2, 4, 8, 16)
    params = {name: {"class": "run_length", "default": 4, "path": (), "values": lengths}}
    tried = []

    def program(d: str, tuning: Mapping[str, int]) -> Measurement:
        tried.append(tuning[name])
        return Measurement(85.0 if tuning[name] == 8 else 100.0, sizes=(name,))

    [size], runs = tune_sizes(params, ["large"], program, {})
    assert size.value == 8 and sorted(set(tried)) == list(lengths) and runs == len(lengths)


def test_a_failing_bottom_version_loses_and_tuning_goes_on() -> None:
    # V3 runs out of memory (BFAST's largest dataset in the paper): the
    # baseline fails after reaching both guards, and V2 still gets tuned in.
    def program(d: str, tuning: Mapping[str, int]) -> Measurement:
        if tuning["t1"] <= 10:
            return Measurement(30.0, (("t1", 10),))
        if tuning["t2"] <= 50:
            return Measurement(10.0, (("t1", 10), ("t2", 50)))
        return Measurement(None, (("t1", 10), ("t2", 50)), "out of memory")

    result = tune(TREE, ["d"], program)
    t1, t2 = (next(t for t in result.thresholds if t.name == n) for n in ("t1", "t2"))
    assert t2.intervals == {"d": Interval(0, 50)} and t1.intervals == {"d": Interval(11, INF)}
    assert program("d", result.values).time == 10.0


def test_runs_are_reused_for_thresholds_that_choose_the_same_versions() -> None:
    # V2 loses to V3: t2 goes to the value nearest its default (32768), not
    # infinity, which takes the same branch at P2 = 50: t1's baseline is the
    # run already made.
    program = Tree({"d": (10, 50, {"V1": 30.0, "V2": 25.0, "V3": 20.0})})
    result = tune(TREE, ["d"], program)
    assert result.values == {"t1": 32768, "t2": 32768}
    assert result.runs == 3


def test_the_tuning_file_lists_block_sizes_with_their_relative_times() -> None:
    params = {"t": _threshold(),
              "k.segmap_tblock_size_1": {"class": "tblock_size", "default": 256, "path": ()}}
    program = Variant(cut=170)
    result = tune({"t": params["t"]}, ["d"], program, noise=0.0)
    result.sizes = [SizeTuned("k.segmap_tblock_size_1", 512, {64: 1.2, 512: 0.9})]
    text = tuning_file_text(result, params, [])
    assert "-- k.segmap_tblock_size_1: time relative to the default 256: 64: 1.20, 512: 0.90" \
        in text
    assert text.endswith("k.segmap_tblock_size_1=512\nt=170\n")
