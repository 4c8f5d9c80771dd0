"""The `futgen` command line: output, error messages and exit codes."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import futgen.frontend
from futgen import __version__
from futgen.cli import main
from futgen.data import encode_binary, read_values
from futgen.errors import CompileError, FutharkError, Loc
from futgen.testing.runner import register_backend

ENTRIES = {
    "main": (["[]i32", "i32"], lambda xs, k: [np.int32(xs.sum() * k)]),
    "pair": (["f32"], lambda x: [np.float32(x * 2), np.array([[1, 2], [3, 4]], np.int64)]),
    "empty": ([], lambda: [np.zeros(0, np.bool_)]),
    "boom": (["i32"], lambda x: (_ for _ in ()).throw(FutharkError("Index [7] out of bounds", Loc("p.fut", 3, 5)))),
}


class CliProgram:
    def entry_points(self):
        return {n: SimpleNamespace(param_types=p, result_types=[]) for n, (p, _) in ENTRIES.items()}

    def call(self, entry, args):
        return ENTRIES[entry][1](*args)


class CliBackend:
    name = "clifake"
    skip_tags = frozenset()
    def compile(self, path, passes=None):
        if "CLIFAKE_PASSES" in os.environ:  # where a test wants the pass options (the
            with open(os.environ["CLIFAKE_PASSES"], "a") as f:  # runner compiles in workers)
                f.write(f"{passes!r}\n")
        if "syntax error" in Path(path).read_text():
            raise CompileError("Unexpected token", Loc(path, 1, 1))
        return CliProgram()


register_backend("clifake", CliBackend)


@pytest.fixture
def program(tmp_path):
    p = tmp_path / "p.fut"
    p.write_text("def main = 1\n")
    return str(p)


def run_cli(args, stdin=b"", monkeypatch=None):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    return main(args)


def test_run_prints_results_like_futhark_run(program, monkeypatch, capsys):
    assert run_cli(["run", program, "--backend", "clifake"], b"[1, 2, 3] 2", monkeypatch) == 0
    assert capsys.readouterr().out == "12i32\n"
    assert run_cli(["run", program, "--backend", "clifake", "-e", "pair"], b"1.5f32", monkeypatch) == 0
    assert capsys.readouterr().out == "3.0f32\n[[1i64, 2i64],\n [3i64, 4i64]]\n"
    assert run_cli(["run", program, "--backend", "clifake", "-e", "empty"], b"", monkeypatch) == 0
    assert capsys.readouterr().out == "empty([0]bool)\n"


def test_run_reads_binary_input_and_writes_binary_output(program, monkeypatch, capsysbinary):
    stdin = encode_binary(np.array([4, 5], np.int32)) + b" 3"
    assert run_cli(["run", program, "--backend", "clifake", "-b"], stdin, monkeypatch) == 0
    out = capsysbinary.readouterr().out
    assert out == encode_binary(np.int32(27))
    assert read_values(out) == [np.int32(27)]


@pytest.mark.parametrize(
    "args, stdin, message",
    [
        ([], b"[1, 2", "Error: <stdin>:1:6: value #1: unexpected end of input"),
        ([], b"[1, 2] 3 x", "Error: <stdin>:1:10: value #3: invalid value 'x'"),
        ([], b"[1, 2]", "Error: entry point main takes 2 value(s) ([]i32 i32), but 1 were given"),
        ([], b"[1] 2 3", "Error: entry point main takes 2 value(s) ([]i32 i32), but 3 were given"),
        ([], b"[1.0] 2", "Error: entry point main, argument #0: expected a value of type []i32, got [1]f64"),
        (["-e", "nope"], b"", "Error: unknown entry point 'nope'; the program has: boom, empty, main, pair"),
        (["-e", "boom"], b"1", "Error: Index [7] out of bounds\n\nBacktrace:\n-> #0  p.fut:3:5"),
    ],
)
def test_run_errors_go_to_stderr_with_status_1(program, monkeypatch, capsys, args, stdin, message):
    assert run_cli(["run", program, "--backend", "clifake", *args], stdin, monkeypatch) == 1
    captured = capsys.readouterr()
    assert captured.err.rstrip("\n") == message
    assert captured.out == ""


def test_run_compile_error(tmp_path, monkeypatch, capsys):
    bad = tmp_path / "bad.fut"
    bad.write_text("syntax error\n")
    assert run_cli(["run", str(bad), "--backend", "clifake"], b"", monkeypatch) == 1
    assert capsys.readouterr().err.startswith(f"Error at {bad}:1:1: Unexpected token")


@pytest.mark.parametrize("command", ["run", "check"])
def test_missing_program_file(command, tmp_path, monkeypatch, capsys):
    missing = str(tmp_path / "missing.fut")
    assert run_cli([command, missing], b"", monkeypatch) == 1
    assert capsys.readouterr().err == f"Error: {missing}: no such file\n"


def test_check_is_silent_on_success_and_reports_errors(program, monkeypatch, capsys):
    def fake_load(path):
        if "bad" in path:
            raise CompileError("Unknown name x", Loc(path, 2, 3))
        return object()

    monkeypatch.setattr(futgen.frontend, "load", fake_load)
    assert main(["check", program]) == 0
    assert capsys.readouterr() == ("", "")
    bad = Path(program).with_name("bad.fut")
    bad.write_text("")
    assert main(["check", str(bad)]) == 1
    assert capsys.readouterr().err == f"Error at {bad}:2:3: Unknown name x\n"


def test_test_subcommand_exit_status(tmp_path, capsys):
    ok = tmp_path / "ok.fut"
    ok.write_text("-- ==\n-- input { [1, 2] 3 } output { 9 }\n")
    bad = tmp_path / "bad.fut"
    bad.write_text("-- ==\n-- input { [1, 2] 3 } output { 10 }\n")
    assert main(["test", str(ok), "--backend", "clifake", "--no-progress"]) == 0
    assert capsys.readouterr().out.endswith("1 passed, 0 failed\n")
    assert main(["test", str(tmp_path), "--backend", "clifake", "-j", "2"]) == 1
    out = capsys.readouterr().out
    assert "Value #0: expected 10i32, got 9i32" in out and out.endswith("1 passed, 1 failed\n")


def test_test_subcommand_passes_pass_options_to_compiled_backends(tmp_path, capsys,
                                                                  monkeypatch):
    """`futgen test --fast-division` (and --flattening, --no-fusion) builds
    with those options; the interpreter, which runs no passes, refuses them."""
    ok = tmp_path / "ok.fut"
    ok.write_text("-- ==\n-- input { [1, 2] 3 } output { 9 }\n")
    seen = tmp_path / "passes.txt"
    monkeypatch.setenv("CLIFAKE_PASSES", str(seen))
    args = ["test", str(ok), "--backend", "clifake", "--no-progress", "--fast-division",
            "--flattening", "moderate", "--no-fusion"]
    assert main(args) == 0
    [passes] = seen.read_text().splitlines()
    assert "flattening='moderate'" in passes and "fusion=False" in passes
    assert "fast_division=True" in passes
    assert main(["test", str(ok), "--fast-division"]) == 1
    assert "use them with --backend cpu or cuda" in capsys.readouterr().err


def test_test_subcommand_errors(tmp_path, capsys):
    assert main(["test", str(tmp_path / "nothing")]) == 1
    assert "no such file or directory" in capsys.readouterr().err
    assert main(["test", str(tmp_path), "--backend", "gpu9000"]) == 1
    assert "unknown backend 'gpu9000'; available:" in capsys.readouterr().err


def test_version_and_python_dash_m():
    out = subprocess.run(
        [sys.executable, "-m", "futgen", "--version"], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == f"futgen {__version__}"


def test_no_command_prints_usage(capsys):
    assert main([]) == 2
    assert "usage: futgen" in capsys.readouterr().err


def test_dump_core_ir(tmp_path, capsys):
    prog = tmp_path / "p.fut"
    prog.write_text("entry main (xs: []i32) = map (+1) xs\n")
    assert main(["dump", "--ir", "core", str(prog)]) == 0
    out = capsys.readouterr().out
    assert "entry fun main" in out and "screma" in out


@pytest.mark.parametrize("command", [["dump"], ["build", "-o", "out"]])
def test_check_ir_option(command, monkeypatch):
    """`--check-ir` turns the checks on; without it FUTGEN_CHECK_IR decides."""
    from futgen.cli import _options, _parser

    monkeypatch.setenv("FUTGEN_CHECK_IR", "0")
    args = [command[0], "p.fut", *command[1:]]
    assert _options(_parser().parse_args([*args, "--check-ir"])).check_ir
    assert not _options(_parser().parse_args(args)).check_ir
