"""The test runner, on a fake backend whose entry points are Python functions.

Worker processes are forked, so the backend registered here is visible in them.
"""

from __future__ import annotations

import json
import time
from types import SimpleNamespace

import numpy as np
import pytest

from futgen.errors import CompileError, FutharkError, UnsupportedFeature
from futgen.testing import TestOptions, run_tests
from futgen.testing.runner import (
    FAILED,
    PASSED,
    SKIPPED,
    UNSUPPORTED,
    collect_programs,
    register_backend,
    run_file,
    run_programs,
    run_test_command,
    summary_line,
)


def _boom(x):
    raise FutharkError("division by zero", None)


def _unsupported(x):
    raise UnsupportedFeature("higher-order entry results")


def _crash(x):
    raise RuntimeError("interpreter bug")


ENTRIES = {
    "main": (["[]i32"], lambda xs: [np.int32(xs.sum())]),
    "half": (["f32"], lambda x: [np.float32(x / 2)]),
    "fail": (["i32"], _boom),
    "nap": (["f64"], lambda s: time.sleep(float(s)) or [np.int32(0)]),
    "unsup": (["i32"], _unsupported),
    "crash": (["i32"], _crash),
}


class FakeProgram:
    def __init__(self, names):
        self.names = names

    def entry_points(self):
        return {n: SimpleNamespace(name=n, param_types=ENTRIES[n][0], result_types=[]) for n in self.names}

    def call(self, entry, args):
        return ENTRIES[entry][1](*args)


class FakeBackend:
    """`def NAME` lines declare entry points; marker comments simulate compiler outcomes."""

    name = "fake"
    skip_tags = frozenset({"compiled", "random", "script"})

    def compile(self, path, passes=None):
        with open(path) as f:
            text = f.read()
        if "COMPILE_ERROR" in text:
            raise CompileError("Cannot unify i32 with f32")
        if "UNSUPPORTED" in text:
            raise UnsupportedFeature("module functors")
        if "SLOW_COMPILE" in text:
            time.sleep(30)
        names = [line.split()[1] for line in text.splitlines() if line.startswith("def ")]
        return FakeProgram(names)


register_backend("fake", FakeBackend)
OPTS = TestOptions(backend="fake", timeout=20)


def prog(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_passing_program(tmp_path):
    p = prog(tmp_path, "ok.fut", "-- ==\n-- input { [1, 2, 3] } output { 6 }\n-- input { [5] } output { 5 }\ndef main\n")
    r = run_file(p, OPTS)
    assert r.status == PASSED and r.run_counts()[PASSED] == 2


def test_wrong_result_names_entry_dataset_and_difference(tmp_path):
    p = prog(tmp_path, "bad.fut", "-- ==\n-- input { [1, 2] } output { 4 }\ndef main\n")
    r = run_file(p, OPTS)
    assert r.status == FAILED
    assert r.messages == ['Entry point: main; dataset: #0 ("[1i32, 2i32]"):\nValue #0: expected 4i32, got 3i32']


def test_float_results_use_tolerance(tmp_path):
    p = prog(tmp_path, "f.fut", "-- ==\n-- entry: half\n-- input { 3f32 } output { 1.5001f32 }\ndef half\n")
    assert run_file(p, OPTS).status == PASSED


def test_expected_runtime_errors(tmp_path):
    p = prog(
        tmp_path,
        "e.fut",
        "-- ==\n-- entry: fail\n-- input { 1 } error: division\n-- input { 2 } error:\ndef fail\n",
    )
    assert run_file(p, OPTS).status == PASSED
    p = prog(tmp_path, "e2.fut", "-- ==\n-- entry: fail\n-- input { 1 } error: out of bounds\ndef fail\n")
    r = run_file(p, OPTS)
    assert r.status == FAILED
    assert "Expected error:\n  out of bounds\nGot error:\n  Error: division by zero" in r.messages[0]
    p = prog(tmp_path, "e3.fut", "-- ==\n-- input { [1] } error: boom\ndef main\n")
    assert "Program succeeded, but expected failure" in run_file(p, OPTS).messages[0]
    p = prog(tmp_path, "e4.fut", "-- ==\n-- entry: fail\n-- input { 1 } output { 1 }\ndef fail\n")
    assert "Function failed with error:\nError: division by zero" in run_file(p, OPTS).messages[0]


def test_expected_compile_errors(tmp_path):
    p = prog(tmp_path, "c.fut", "-- ==\n-- error: Cannot unify\nCOMPILE_ERROR\n")
    assert run_file(p, OPTS).status == PASSED
    p = prog(tmp_path, "c2.fut", "-- ==\n-- error: Unknown name\nCOMPILE_ERROR\n")
    r = run_file(p, OPTS)
    assert r.status == FAILED and "Expected error:\n  Unknown name" in r.messages[0]
    p = prog(tmp_path, "c3.fut", "-- ==\n-- error: anything\ndef main\n")
    assert run_file(p, OPTS).messages == ["Expected compilation to fail, but it succeeded."]
    p = prog(tmp_path, "c4.fut", "-- ==\n-- input { [1] } output { 1 }\nCOMPILE_ERROR\n")
    r = run_file(p, OPTS)
    assert r.status == FAILED and "Cannot unify" in r.messages[0]


def test_file_without_blocks_is_only_compiled(tmp_path):
    assert run_file(prog(tmp_path, "n.fut", "def main\n"), OPTS).status == PASSED
    assert run_file(prog(tmp_path, "n2.fut", "COMPILE_ERROR\n"), OPTS).status == FAILED


def test_unsupported_features_are_counted_apart(tmp_path):
    r = run_file(prog(tmp_path, "u.fut", "UNSUPPORTED\n"), OPTS)
    assert r.status == UNSUPPORTED and r.feature == "module functors"
    r = run_file(prog(tmp_path, "u2.fut", "-- ==\n-- entry: unsup\n-- input { 1 }\ndef unsup\n"), OPTS)
    assert r.status == UNSUPPORTED and r.feature == "higher-order entry results"


def test_missing_entry_point_is_reported(tmp_path):
    r = run_file(prog(tmp_path, "m.fut", "-- ==\n-- entry: nope\n-- input { 1 }\ndef main\n"), OPTS)
    assert r.status == FAILED
    assert "Entry point nope not found in the program (entry points: main)" in r.messages[0]


def test_bad_test_data_and_wrong_argument_types_fail(tmp_path):
    r = run_file(prog(tmp_path, "d.fut", "-- ==\n-- input @ missing.in\ndef main\n"), OPTS)
    assert r.status == FAILED and "cannot read data file" in r.messages[0]
    r = run_file(prog(tmp_path, "d2.fut", "-- ==\n-- input { [1f32] } output { 1 }\ndef main\n"), OPTS)
    assert "argument #0: expected a value of type []i32, got [1]f32" in r.messages[0]


def test_data_files_relative_to_program(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "x.in").write_text("[1, 2, 3]")
    (tmp_path / "data" / "x.out").write_text("6")
    p = prog(tmp_path, "f.fut", "-- ==\n-- input @ data/x.in output @ data/x.out\ndef main\n")
    assert run_file(p, OPTS).status == PASSED


def test_tags_skip_programs_and_runs(tmp_path):
    r = run_file(prog(tmp_path, "t.fut", "-- ==\n-- tags { disable }\n-- input { [1] } output { 2 }\ndef main\n"), OPTS)
    assert r.status == SKIPPED
    r = run_file(prog(tmp_path, "t2.fut", "-- ==\n-- tags { no_fake }\ndef main\n"), OPTS)
    assert r.status == SKIPPED
    text = (
        "-- ==\n-- compiled input { [1] } output { 2 }\n-- random input { [10]i32 }\n"
        "-- no_futgen input { [1] } output { 2 }\n-- input { [1] } output { 1 }\ndef main\n"
    )
    r = run_file(prog(tmp_path, "t3.fut", text), OPTS)
    assert r.status == PASSED and r.run_counts() == {PASSED: 1, FAILED: 0, SKIPPED: 3, UNSUPPORTED: 0}


def test_file_tag_the_backend_cannot_honour_builds_and_skips_every_run(tmp_path):
    text = "-- ==\n-- tags { compiled }\n-- input { [1] } output { 2 }\ndef main\n"
    r = run_file(prog(tmp_path, "big.fut", text), OPTS)
    assert r.status == PASSED and r.run_counts()[SKIPPED] == 1
    r = run_file(prog(tmp_path, "big2.fut", text + "COMPILE_ERROR\n"), OPTS)
    assert r.status == FAILED


def test_malformed_block_fails_the_program(tmp_path):
    r = run_file(prog(tmp_path, "s.fut", "-- ==\n-- input { 1\ndef main\n"), OPTS)
    assert r.status == FAILED and "s.fut:2:" in r.messages[0]


def test_internal_errors_fail_only_that_program(tmp_path):
    r = run_file(prog(tmp_path, "x.fut", "-- ==\n-- entry: crash\n-- input { 1 }\ndef crash\n"), OPTS)
    assert r.status == FAILED and "Internal error while running: RuntimeError: interpreter bug" in r.messages[0]


def test_timeout_kills_a_slow_program(tmp_path):
    slow = prog(tmp_path, "slow.fut", "-- ==\n-- entry: nap\n-- input { 30.0 }\ndef nap\n")
    fast = prog(tmp_path, "fast.fut", "-- ==\n-- input { [1] } output { 1 }\ndef main\n")
    start = time.monotonic()
    results = run_programs([slow, fast], TestOptions(backend="fake", timeout=1.0))
    assert time.monotonic() - start < 10
    assert [r.status for r in results] == [FAILED, PASSED]
    assert results[0].messages == ["Timed out after 1 s."]


def test_parallel_jobs_run_at_once(tmp_path):
    progs = [prog(tmp_path, f"n{i}.fut", "-- ==\n-- entry: nap\n-- input { 1.0 }\ndef nap\n") for i in range(4)]
    start = time.monotonic()
    results = run_programs(progs, TestOptions(backend="fake", jobs=4, timeout=20))
    assert all(r.status == PASSED for r in results)
    assert time.monotonic() - start < 3.5  # 4 x 1 s sequentially


def test_jobs_two_keeps_program_order(tmp_path):
    progs = [prog(tmp_path, f"p{i}.fut", f"-- ==\n-- input {{ [{i}] }} output {{ {i} }}\ndef main\n") for i in range(5)]
    results = run_programs(progs, TestOptions(backend="fake", jobs=2, timeout=20))
    assert [r.path for r in results] == progs and all(r.status == PASSED for r in results)


def test_collect_programs_recurses_and_rejects_missing(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "y.fut").write_text("")
    (tmp_path / "a" / "x.fut").write_text("")
    (tmp_path / "a" / "notes.txt").write_text("")
    found = collect_programs([str(tmp_path / "a")])
    assert [p.split("/a/")[1] for p in found] == ["b/y.fut", "x.fut"]
    with pytest.raises(Exception, match="no such file or directory"):
        collect_programs([str(tmp_path / "zzz")])


def test_summary_line_and_report(tmp_path, capsys):
    ok = prog(tmp_path, "ok.fut", "-- ==\n-- input { [1] } output { 1 }\ndef main\n")
    bad = prog(tmp_path, "bad.fut", "-- ==\n-- input { [1] } output { 2 }\ndef main\n")
    uns = prog(tmp_path, "uns.fut", "UNSUPPORTED\n")
    off = prog(tmp_path, "off.fut", "-- ==\n-- tags { disable }\ndef main\n")
    report = tmp_path / "report.json"
    code = run_test_command([ok, bad, uns, off], OPTS, str(report), progress=False)
    out = capsys.readouterr().out
    assert code == 1
    assert out.splitlines()[-1] == "1 passed, 1 failed, 1 unsupported, 1 skipped"
    assert f"Error: {bad}:" in out and f"Unsupported: {uns}: module functors" in out
    data = json.loads(report.read_text())
    assert data["summary"] == {PASSED: 1, FAILED: 1, UNSUPPORTED: 1, SKIPPED: 1}
    by_name = {f["path"].rsplit("/", 1)[1]: f for f in data["files"]}
    assert by_name["uns.fut"]["feature"] == "module functors"
    assert by_name["ok.fut"]["run_counts"][PASSED] == 1
    assert run_test_command([ok], OPTS, progress=False) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "1 passed, 0 failed"


def test_run_tests_report_for_pytest_drivers(tmp_path):
    ok = tmp_path / "ok.fut"
    ok.write_text("-- ==\n-- input { [1] } output { 1 }\ndef main\n")
    report = run_tests([ok], OPTS)
    assert report.ok and str(report) == "1 passed, 0 failed"


def test_summary_line_omits_zero_extra_counts():
    assert summary_line([]) == "0 passed, 0 failed"


def test_point_free_entry_parameters_come_from_the_result_type():
    from futgen.frontend import check_source
    from futgen.interp import Interpreter
    from futgen.testing.runner import entry_param_types

    prog = check_source("entry f (k: i32) = map (\\(x: f32) -> x + f32.i32 k)\n"
                        "entry g : i32 = 1\n")
    entries = Interpreter(prog).entry_points()
    assert entry_param_types(entries["f"]) == ["i32", "[]f32"]
    assert entry_param_types(entries["g"]) == []
