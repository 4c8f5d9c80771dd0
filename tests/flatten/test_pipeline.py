"""The pass list (futgen.pipeline): every pass keeps the meaning of the
example programs (and of tests/programs/opt), `futgen dump --ir` prints
the program after any pass, and `--check-ir` names the pass after which the
IR broke."""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from pathlib import Path

import pytest

from futgen import pipeline
from futgen.cli import main as cli_main
from futgen.core import ir, load
from futgen.core.check import IRTypeError
from futgen.core.interpret import run as run_core
from futgen.core.read import read_program
from futgen.data import compare_values, load_file
from futgen.gpu.interpret import run as run_gpu
from futgen.gpu.ir import SegRed
from futgen.pipeline import PASS_NAMES, PASSES, Options, Pass, is_gpu, run_passes
from futgen.testing.spec import value_runs

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
# The example programs, and the ones about the core IR passes.
PROGRAMS = sorted(EXAMPLES.glob("*.fut")) + sorted((ROOT / "tests/programs/opt").glob("*.fut"))


@cache
def _after(path: Path, until: str) -> ir.Program:
    return run_passes(load(str(path)), until)


def _cases() -> list:
    out = []
    for path in PROGRAMS:
        for entry, r in value_runs(str(path)):
            out += [pytest.param(path, entry, r, name, id=f"{path.stem}:{entry}:{r.index}:{name}")
                    for name in PASS_NAMES]
    return out


def _values(v) -> list:
    return list(v.values) if v.kind == "inline" else load_file(v.path)


@pytest.mark.parametrize(("path", "entry", "run_case", "until"), _cases())
def test_each_pass_keeps_the_examples_meaning(path: Path, entry: str, run_case,
                                              until: str) -> None:
    run = run_gpu if is_gpu(until) else run_core
    got = run(_after(path, until), entry, _values(run_case.input))
    mismatches = compare_values(_values(run_case.expected), got)
    assert not mismatches, "\n".join(map(str, mismatches))


def test_passes_are_named_once_and_described() -> None:
    assert len(set(PASS_NAMES)) == len(PASSES)
    assert all(p.description for p in PASSES)
    assert [p.gpu for p in PASSES] == sorted(p.gpu for p in PASSES)  # core IR passes first
    with pytest.raises(ValueError, match="no pass named .nothing.; the passes are simplify"):
        run_passes(load(str(EXAMPLES / "dotprod.fut")), "nothing")


def test_fuse_makes_a_redomap_and_flatten_one_segred() -> None:
    core = load(str(EXAMPLES / "dotprod.fut"))
    (dot,) = (f for f in run_passes(core, "fuse").functions if f.name == "dotprod")
    scremas = [s.exp for s in dot.body.stms if isinstance(s.exp, ir.Screma)]
    assert len(scremas) == 1 and scremas[0].reds and scremas[0].map_lam.body.stms
    (dot,) = (f for f in run_passes(core).functions if f.name == "dotprod")
    assert [type(s.exp) for s in dot.body.stms if not isinstance(s.exp, ir.ArraySize)] == [SegRed]


@pytest.mark.parametrize("stage, marker", [("core", "map"), ("fuse", "reduce"),
                                           ("flatten", "segred"), ("gpu", "segred")])
def test_dump_prints_the_program_after_a_pass(stage: str, marker: str, capsys) -> None:
    assert cli_main(["dump", "--ir", stage, str(EXAMPLES / "dotprod.fut")]) == 0
    out = capsys.readouterr().out
    assert "fun dotprod" in out and marker in out


# ---------------------------------------------------------------- --check-ir


def _forget_first_statements(prog: ir.Program, options: Options) -> ir.Program:
    """A broken pass: drops each function's first statement (`n = size xs 0`),
    whose name later statements still use."""
    return ir.Program(tuple(replace(f, body=replace(f.body, stms=f.body.stms[1:]))
                            for f in prog.functions))


@pytest.fixture
def broken_pass(monkeypatch) -> None:
    broken = Pass("forget", "drops statements", _forget_first_statements)
    monkeypatch.setattr(pipeline, "PASSES", (PASSES[0], broken, *PASSES[1:]))


def test_check_ir_names_the_pass_after_which_the_ir_broke(broken_pass) -> None:
    with pytest.raises(IRTypeError) as e:
        run_passes(load(str(EXAMPLES / "dotprod.fut")), options=Options(check_ir=True))
    assert e.value.after == "forget" and e.value.function == "main"
    assert str(e.value).startswith("after pass 'forget', in function main: dotprod_")
    assert str(e.value).endswith("is not in scope")  # the body's result: no statement to show


def test_check_ir_checks_the_input_too() -> None:
    bad = read_program("fun f() : (i32) =\n{\n  in (x_1)\n}\n")
    with pytest.raises(IRTypeError, match="^in function f: x_1 is not in scope$"):
        run_passes(bad, options=Options(check_ir=True))
    run_passes(bad, options=Options(check_ir=False))  # `fuse` and `flatten` leave it be


def test_dump_check_ir_reports_a_broken_pass(broken_pass, capsys) -> None:
    assert cli_main(["dump", "--check-ir", "--ir", "gpu", str(EXAMPLES / "dotprod.fut")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("Error: compiler bug: ill-typed IR after pass 'forget', in function "
                          "main: dotprod_")


@pytest.mark.parametrize("stage", ["core", *PASS_NAMES])
def test_dump_check_ir_on_a_correct_pipeline(stage: str, capsys) -> None:
    assert cli_main(["dump", "--check-ir", "--ir", stage, str(EXAMPLES / "dotprod.fut")]) == 0
    assert "fun dotprod" in capsys.readouterr().out


def test_check_ir_is_on_where_futgen_check_ir_is_1(monkeypatch) -> None:
    """The test suite sets it (tests/conftest.py); users give --check-ir."""
    monkeypatch.setenv("FUTGEN_CHECK_IR", "1")
    assert Options().check_ir
    monkeypatch.setenv("FUTGEN_CHECK_IR", "0")
    assert not Options().check_ir
    assert Options(check_ir=True).check_ir
