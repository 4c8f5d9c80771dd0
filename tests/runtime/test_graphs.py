"""Entry calls recorded as CUDA graphs (futgen_runtime/graphs.py): the
policy on a backend that records by name, then real graphs on CUDA."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from futgen_runtime.graphs import MAX_RECORDED, CallGraphs, CaptureUnsupported
from futgen_runtime.tuning import Tuning

from futgen.codegen.package import build_package
from futgen.testing.compiled import import_package
from futgen.testing.runner import TestOptions, run_tests

ROOT = Path(__file__).resolve().parents[2]


class _Recording:
    def __init__(self, results):
        self.results, self.closed = results, False

    def note_tuning(self, tuning):
        self.guards = list(tuning.guards)
        self.sizes_used = set(tuning.sizes_used)

    def close(self):
        self.closed = True


class _Backend:
    """Records a call by running it (counting), replays by returning its results."""

    kind, array_type = "cuda", np.ndarray

    def __init__(self, readable=True):
        self.readable, self.recorded, self.replayed = readable, [], 0

    def record(self, run, leaves):
        inputs = [np.empty_like(x) if isinstance(x, np.ndarray) else x for x in leaves]
        results = run(inputs)
        if not self.readable:
            raise CaptureUnsupported("the call reads the device")
        rec = _Recording(results)
        self.recorded.append(rec)
        return rec

    def replay(self, rec, leaves):
        self.replayed += 1
        return rec.results


PARAMS = {"main.suff_outer_par_0": {"class": "threshold", "default": 32768, "path": []}}


def _compiled(calls, tuning=None):
    def compiled(b, n, xs):
        calls.append(n)
        if tuning is not None:
            tuning.guard("main.suff_outer_par_0", int(n))
        return (n * 2,)
    return compiled


def test_a_key_is_recorded_once_then_replayed():
    b, tuning, calls = _Backend(), Tuning(PARAMS, {}), []
    graphs, f = CallGraphs(), _compiled(calls)
    xs = np.zeros(4, np.float32)
    results = [graphs.call(b, "main", f, (np.int64(n), xs), tuning) for n in (3, 3, 3, 4, 3)]
    assert results == [(6,), (6,), (6,), (8,), (6,)]
    assert calls == [3, 4] and len(b.recorded) == 2  # host code ran once per key
    assert b.replayed == 5 and graphs.replays == 5
    graphs.call(b, "main", f, (np.int64(3), np.zeros(5, np.float32)), tuning)  # a new shape
    assert len(b.recorded) == 3


def test_a_call_that_cannot_be_recorded_runs_as_usual_and_is_not_tried_again():
    b, tuning, calls = _Backend(readable=False), Tuning(PARAMS, {}), []
    graphs, f = CallGraphs(), _compiled(calls)
    xs = np.zeros(2, np.float32)
    for _ in range(3):
        assert graphs.call(b, "main", f, (np.int64(1), xs), tuning) == (2,)
    assert len(calls) == 4  # the attempt, then three plain calls
    assert b.replayed == 0


def test_an_entry_point_records_at_most_max_recorded_keys():
    b, tuning, calls = _Backend(), Tuning(PARAMS, {}), []
    graphs, f = CallGraphs(), _compiled(calls)
    xs = np.zeros(1, np.float32)
    for n in range(MAX_RECORDED + 3):
        assert graphs.call(b, "main", f, (np.int64(n), xs), tuning) == (2 * n,)
    assert len(b.recorded) == MAX_RECORDED and b.replayed == MAX_RECORDED


def test_new_tuning_values_drop_the_graphs_and_logging_turns_them_off():
    b, tuning, calls = _Backend(), Tuning(PARAMS, {}), []
    graphs, f = CallGraphs(), _compiled(calls)
    xs = np.zeros(1, np.float32)
    graphs.call(b, "main", f, (np.int64(1), xs), tuning)
    tuning.set({"main.suff_outer_par_0": 7})
    graphs.call(b, "main", f, (np.int64(1), xs), tuning)
    assert b.recorded[0].closed and len(b.recorded) == 2
    tuning.log = True
    graphs.call(b, "main", f, (np.int64(1), xs), tuning)
    assert len(calls) == 3 and b.replayed == 2


def test_scalars_are_keyed_by_their_bits():
    b, tuning, calls = _Backend(), Tuning(PARAMS, {}), []
    graphs, f = CallGraphs(), _compiled(calls)
    xs = np.zeros(1, np.float32)
    for x in (np.float32(0.0), np.float32(-0.0), np.float32(np.nan), np.float32(np.nan),
              0.0, -0.0, np.float64(0.0), np.int32(0), np.int64(0)):
        graphs.call(b, "main", f, (x, xs), tuning)
    # 0.0 and -0.0 differ; NaN replays NaN; each type is its own key.
    assert len(b.recorded) == 8 and len(calls) == 8


def test_a_replay_gives_the_guards_of_its_recording_and_a_failed_one_leaves_none():
    tuning = Tuning(PARAMS, {})
    graphs, calls = CallGraphs(), []
    f = _compiled(calls, tuning)
    xs = np.zeros(1, np.float32)
    for _ in range(2):
        tuning.start_call()
        graphs.call(_Backend(), "main", f, (np.int64(40000), xs), tuning)
        assert tuning.guards == [("main.suff_outer_par_0", 40000, True)]
    tuning.start_call()
    graphs.call(_Backend(readable=False), "main", f, (np.int64(5), xs), tuning)
    assert tuning.guards == [("main.suff_outer_par_0", 5, False)]  # the plain call's alone


def test_a_failing_call_does_not_use_up_the_recordings():
    class Failing(_Backend):
        def record(self, run, leaves):
            raise ValueError("the host code failed")

    graphs, tuning = CallGraphs(), Tuning(PARAMS, {})
    for _ in range(MAX_RECORDED + 1):
        with pytest.raises(ValueError):
            graphs.call(Failing(), "main", _compiled([]), (np.int64(1), np.zeros(1)), tuning)
    b = _Backend()
    graphs.call(b, "main", _compiled([]), (np.int64(1), np.zeros(1)), tuning)
    assert len(b.recorded) == 1


def test_graphs_wanted_from_the_argument_or_the_environment(monkeypatch):
    monkeypatch.delenv("FUTGEN_GRAPHS", raising=False)
    assert not CallGraphs.wanted(None) and CallGraphs.wanted(True)
    monkeypatch.setenv("FUTGEN_GRAPHS", "1")
    assert CallGraphs.wanted(None) and not CallGraphs.wanted(False)


def test_graphs_on_the_cpu_backend_change_nothing(tmp_path):
    lib = _steps(tmp_path)
    inst = lib.Steps(backend="cpu", graphs=True)
    xs = np.arange(6, dtype=np.float32)
    assert np.allclose(inst.steps(np.int32(3), xs), _steps_expected(3, xs))
    assert inst._graphs.replays == 0


STEPS = """
entry steps (k: i32) (xs: []f32) : []f32 =
  loop xs for i < k do map (\\x -> x * 0.5f32 + f32.i32 i) xs

entry total (k: i32) (xs: []f32) : f32 =
  f32.sum (loop xs for i < k do map (\\x -> x + f32.i32 i) xs)

entry halve_until (xs: []f32) : []f32 =
  loop xs while f32.sum xs > 1f32 do map (/ 2f32) xs

entry bump (xs: *[]f32) (i: i64) : []f32 =
  let xs[i] = 1f32 in xs
"""


def _steps(tmp_path):
    src = tmp_path / "steps.fut"
    src.write_text(STEPS)
    return import_package(build_package(src, tmp_path, name="steps"))


def _steps_expected(k, xs):
    xs = xs.astype(np.float32)
    for i in range(k):
        xs = xs * np.float32(0.5) + np.float32(i)
    return xs


@pytest.mark.gpu
def test_cuda_graphs_replay_time_loops_and_fall_back_where_the_host_reads(tmp_path):
    lib = _steps(tmp_path)
    inst, plain = lib.Steps(backend="cuda", graphs=True), lib.Steps(backend="cuda")
    rng = np.random.default_rng(1)
    outs = []
    for k in (5, 5, 7, 5):
        xs = rng.standard_normal(1000).astype(np.float32)  # new contents, same shape
        out = inst.steps(np.int32(k), xs)
        assert np.allclose(out, _steps_expected(k, xs), rtol=1e-6)
        outs.append(out)
    graphs = inst._graphs
    assert graphs.replays == 4 and len(graphs._recorded) == 2
    rec = graphs._recorded[next(iter(graphs._recorded))]
    assert rec.nodes >= 5  # the loop's launches are nodes of one graph
    # Results on the device are new arrays each call, not the graph's.
    dev = lib.Steps(backend="cuda", graphs=True, device_results=True)
    xs = np.ones(64, np.float32)
    a, b = dev.steps(np.int32(3), xs), dev.steps(np.int32(3), 2 * xs)
    assert int(a.gpudata) != int(b.gpudata)
    assert np.allclose(a.get(), _steps_expected(3, xs))
    # A scalar result and a loop whose condition a kernel computes read the
    # device: those calls run as usual.
    xs = np.arange(10, dtype=np.float32)
    for _ in range(2):
        assert np.isclose(inst.total(np.int32(4), xs), plain.total(np.int32(4), xs))
        assert np.allclose(inst.halve_until(xs), plain.halve_until(xs))
    assert graphs.replays == 4
    # A consuming entry point: the graph updates its own copy of the argument.
    for i, base in ((1, 0.0), (1, 5.0), (2, 7.0)):
        assert inst.bump(np.full(4, base, np.float32), np.int64(i)).tolist() == \
            [1.0 if j == i else base for j in range(4)]
    assert graphs.replays == 7
    # Out-of-bounds: the host's check raises during recording, every time.
    for _ in range(2):
        with pytest.raises(lib.FutharkError, match="out of bounds"):
            inst.bump(np.zeros(4, np.float32), np.int64(9))
    _, times = inst.time_calls("steps", (np.int32(5), np.ones(1000, np.float32)), runs=3)
    assert len(times) == 3
    inst.graphs = False
    assert not inst.graphs and graphs._recorded == {}


@pytest.mark.gpu
def test_examples_and_versions_match_the_interpreter_with_graphs(monkeypatch):
    monkeypatch.setenv("FUTGEN_GRAPHS", "1")
    report = run_tests([ROOT / "examples", ROOT / "tests" / "programs" / "versions"],
                       TestOptions(backend="cuda"))
    print(str(report).splitlines()[-1])
    assert report.ok, str(report)


@pytest.mark.gpu
def test_bench_with_graphs_checks_and_times_the_replayed_calls(tmp_path, monkeypatch, capsys):
    from futgen.cli import main

    monkeypatch.setenv("FUTGEN_GRAPHS", "0")  # restored after the test; --graphs sets it
    src = tmp_path / "loop.fut"
    src.write_text("""
-- ==
-- input { 3 [1f32, 2f32] } output { [2.625f32, 2.75f32] }
entry main (k: i32) (xs: []f32) : []f32 =
  loop xs for i < k do map (\\x -> x * 0.5f32 + f32.i32 i) xs
""")
    assert main(["bench", str(src), "--backend", "cuda", "-r", "5", "--graphs",
                 "--no-progress"]) == 0
    assert "5 runs" in capsys.readouterr().out
