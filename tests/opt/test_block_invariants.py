"""The hoist-block-invariants pass (futgen.opt.block_invariants): BLOCK ops
of an intra-block kernel that its outer block index does not change run once
per row in a kernel of their own, behind a tunable guard; costly invariant
values inside variant ops are split out first; uniform arrays are read at 0.
The GPU IR interpreter gives the same results before and after, hoisted or
not, and the CPU backend runs the hoisted kernels point by point."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from futgen.codegen.package import build_package
from futgen.core import ir, load
from futgen.flatten.names import NameSource, substitute
from futgen.gpu.check import check_program
from futgen.gpu.interpret import run as run_gpu
from futgen.gpu.ir import BLOCKS, GRID, SegMap, SegScan, SegSpace, ThresholdCmp
from futgen.opt.block_invariants import hoist_block_invariants
from futgen.opt.parts import host_stms
from futgen.pipeline import run_passes
from futgen.testing.compiled import import_package
from futgen.testing.versions import assert_same_in_every_version
from futgen.tune.forest import program_thresholds, version_runs

# Rows whose coefficients depend on the row only (tests/programs/kernels/
# invariant_rows.fut), solved for every outer element.
PROGRAM = Path(__file__).resolve().parents[1] / "programs" / "kernels" / "invariant_rows.fut"
RNG = np.random.default_rng(7)
ARGS = [np.float32(2), RNG.random((3, 5), np.float32), RNG.random((4, 3, 5), np.float32)]
NEVER = 2_000_000_000


def _before_and_after():
    before = run_passes(load(PROGRAM), until="fuse-producers")
    after = hoist_block_invariants(before)
    check_program(after)
    return before, after


def _intra(prog: ir.Program, hoisted: bool) -> dict[str, int]:
    """Thresholds taking the intra-block version, with or without hoisting."""
    return {name: (0 if "suff_intra" in name or (hoisted and "suff_hoisted" in name) else NEVER)
            for name in program_thresholds(prog)}


def _blocks(body: ir.Body) -> list[ir.Stm]:
    return [s for s in host_stms(body) if isinstance(s.exp, SegMap) and s.exp.level == BLOCKS]


def _hoisting(prog: ir.Program, entry: str) -> ir.Stm:
    [stm] = [s for s in host_stms(prog.function(entry).body)
             if isinstance(s.exp, ir.If) and any(
                 isinstance(g.exp, ThresholdCmp) and "suff_hoisted" in g.exp.name
                 and ir.Var(g.pat[0].name) == s.exp.cond
                 for g in host_stms(prog.function(entry).body))]
    return stm


def test_the_rows_coefficients_are_computed_once_per_row() -> None:
    _, after = _before_and_after()
    guarded = _hoisting(after, "solve").exp
    # The guarded version: a kernel over the rows only, then the kernel over
    # (outer, row), which no longer scans the coefficients.
    hoisted, kernel = _blocks(guarded.then_)
    assert len(hoisted.exp.space.dims) == 1 and len(kernel.exp.space.dims) == 2
    scans = [s for s in kernel.exp.body.stms if isinstance(s.exp, SegScan)]
    assert len(scans) == 1  # the variant scan; the coefficients' is hoisted
    # The quotient s[i] / s[i - 1], inside the variant scan's `if`, was split
    # out and hoisted too: the scan reads it from the hoisted kernel's rows.
    read = {s.exp.arr for s in scans[0].exp.body.stms if isinstance(s.exp, ir.Index)}
    assert read & {p.name for p in hoisted.pat}
    # Where there are no outer elements the hoisted kernel spans no rows
    # either: it must not fail where the kernel would not run.
    [size] = hoisted.exp.space.dims
    [bound] = [s.exp for s in guarded.then_.stms if s.pat[0].name == size.name]
    assert isinstance(bound, ir.BinOp) and bound.op == "min"
    # The other branch is the kernel as it was.
    [unhoisted] = _blocks(guarded.else_)
    assert len([s for s in unhoisted.exp.body.stms if isinstance(s.exp, SegScan)]) == 2


@pytest.mark.parametrize("outer", [4, 0])
def test_the_meaning_is_kept(outer: int) -> None:
    """In every version, the hoisted one included (and with no outer
    elements, where the hoisted kernel must span no rows)."""
    before, after = _before_and_after()
    assert any(s.get("solve.suff_hoisted_0") == 0
               for s in version_runs(program_thresholds(after)))
    assert_same_in_every_version(before, after, "solve", [*ARGS[:2], ARGS[2][:outer]])


def _with_uniform_step(prog: ir.Program) -> ir.Program:
    """`solve` with its time step made an array of one equal value per outer
    element (what flattening LocVolCalib's time loop makes of `dtInv`), read
    by the intra-block kernel at its outer index."""
    fun = prog.function("solve")
    [dt] = [p.name for p in fun.params if isinstance(p.type, ir.Prim)]
    [kernel] = _blocks(fun.body)
    outer = kernel.exp.space.dims[0]
    names = NameSource(prog)
    u, g = names.fresh("uniform"), names.fresh("gtid")
    make = ir.Stm((ir.Param(u, ir.ArrayT("f32", (outer,))),),
                  SegMap(GRID, SegSpace((g,), (outer,)), (ir.Prim("f32"),),
                         ir.Body((), (ir.Var(dt),))))
    step = names.fresh("step")
    read = ir.Stm((ir.Param(step, ir.Prim("f32")),),
                  ir.Index(u, (ir.DimFix(ir.Var(kernel.exp.space.gtids[0])),)))
    body = substitute(kernel.exp.body, {dt: step})
    new = replace(kernel, exp=replace(kernel.exp, body=ir.Body((read, *body.stms),
                                                                 body.result)))

    def swap(b: ir.Body) -> ir.Body:
        stms = []
        for s in b.stms:
            if s is kernel:
                stms += [make, new]
                continue
            if isinstance(s.exp, ir.If):
                s = replace(s, exp=replace(s.exp, then_=swap(s.exp.then_), else_=swap(s.exp.else_)))
            stms.append(s)
        return ir.Body(tuple(stms), b.result)
    return ir.Program(tuple(replace(f, body=swap(f.body)) if f.name == "solve" else f
                            for f in prog.functions))


def test_uniform_arrays_are_read_at_zero() -> None:
    before = _with_uniform_step(run_passes(load(PROGRAM), until="fuse-producers"))
    check_program(before)
    after = hoist_block_invariants(before)
    check_program(after)
    hoisted, _ = _blocks(_hoisting(after, "solve").exp.then_)
    reads = [s.exp for s in hoisted.exp.body.stms if isinstance(s.exp, ir.Index)]
    assert [r.slice for r in reads if r.arr.base == "uniform"] == [
        (ir.DimFix(ir.Constant(0, "i64")),)]
    setting = _intra(after, True)
    want = run_gpu(before, "solve", list(ARGS), thresholds=setting)
    np.testing.assert_array_equal(run_gpu(after, "solve", list(ARGS), thresholds=setting)[0],
                                  want[0])


def test_the_cpu_backend_runs_hoisted_kernels(tmp_path: Path, monkeypatch) -> None:
    """The CPU backend runs intra-block versions only where told a block
    fits (normally never); then the hoisted kernel runs point by point and
    the kernel as its core map."""
    rows = import_package(build_package(PROGRAM, tmp_path / "pkg", name="rows"))
    monkeypatch.setattr(rows._futgen_runtime.cpu.CpuBackend, "block_fits",
                        lambda self, nbytes: True)
    ran = []
    for name in [n for n in vars(rows) if n.startswith("_blocks_")]:
        fn = getattr(rows, name)
        monkeypatch.setattr(rows, name, lambda *a, _fn=fn: (ran.append(_fn), _fn(*a))[1])
    before, after = _before_and_after()
    setting = _intra(after, True)
    got = rows.Rows(backend="cpu", tuning=setting).solve(*ARGS)
    want = run_gpu(before, "solve", list(ARGS), thresholds=setting)[0]
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert ran
