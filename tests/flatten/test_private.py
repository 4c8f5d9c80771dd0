"""Thread-private arrays: the maps of tests/programs/forms/private_arrays.fut
become SegMaps whose threads build arrays (nothing stays on the host), the
array-operator reductions become row reductions of a transpose, and every
flattened entry point computes what the core interpreter computes.  The
moderate flattening: the other versions incremental flattening adds are
tests/flatten/test_versions.py's."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np
import pytest

from futgen.core import internalise, ir
from futgen.core.interpret import run as run_core
from futgen.data import compare_values
from futgen.frontend import load
from futgen.gpu.check import check_program
from futgen.gpu.interpret import run as run_gpu
from futgen.gpu.ir import Scratch, SegMap, SegRed, SegScan
from futgen.pipeline import Options, run_passes

PROGRAM = Path(__file__).resolve().parents[1] / "programs" / "forms" / "private_arrays.fut"

# entry -> the SegOps of its host code, in order
EXPECTED = {
    "bridge": ["SegMap1"],
    "scan_then_scale": ["SegMap1"],
    "branchy": ["SegMap1"],
    "column_sums": ["SegMap1"],
    "swaps": ["SegMap1"],
    "vector_sum": ["SegMap2", "SegRed2"],
    "vector_sum_of_scans": ["SegScan2", "SegRed2"],
}


@cache
def _programs() -> tuple[ir.Program, ir.Program]:
    core = internalise(load(str(PROGRAM)))
    gpu = run_passes(core, options=Options("moderate"))
    check_program(gpu)
    return core, gpu


def _host(body: ir.Body) -> list[ir.Stm]:
    out = []
    for s in body.stms:
        out.append(s)
        if isinstance(s.exp, ir.Loop):
            out += _host(s.exp.body)
    return out


def _binds_scratch(body: ir.Body) -> bool:
    for s in body.stms:
        match s.exp:
            case Scratch():
                return True
            case ir.Loop(_, _, inner) if _binds_scratch(inner):
                return True
            case ir.If(_, a, b, _) if _binds_scratch(a) or _binds_scratch(b):
                return True
    return False


@pytest.mark.parametrize("entry", sorted(EXPECTED))
def test_every_map_runs_on_the_device(entry: str) -> None:
    _, gpu = _programs()
    stms = _host(gpu.function(entry).body)
    ops = [s.exp for s in stms if isinstance(s.exp, SegMap | SegRed | SegScan)]
    assert [f"{type(o).__name__}{len(o.space.dims)}" for o in ops] == EXPECTED[entry]
    assert not [s for s in stms if isinstance(s.exp, ir.Screma | ir.Scatter | ir.Hist)]


def test_threads_build_arrays_in_private_memory() -> None:
    _, gpu = _programs()
    for entry in ("bridge", "scan_then_scale", "column_sums", "swaps"):
        (op,) = [s.exp for s in _host(gpu.function(entry).body) if isinstance(s.exp, SegMap)]
        assert _binds_scratch(op.body) or any(
            isinstance(s.exp, ir.Replicate) for s in op.body.stms), entry


ARGS = {
    "bridge": lambda r: [r.standard_normal((37, 6)).astype(np.float32)],
    "scan_then_scale": lambda r: [r.integers(-50, 50, (23, 9), dtype=np.int32)],
    "branchy": lambda r: [r.integers(-9, 9, (11, 4), dtype=np.int64)],
    "column_sums": lambda r: [r.standard_normal((7, 5, 3))],
    "swaps": lambda r: [np.int32(5), r.integers(0, 9, (6, 3), dtype=np.int32),
                        r.integers(0, 9, (6, 3), dtype=np.int32)],
    "vector_sum": lambda r: [r.standard_normal((301, 7)).astype(np.float32)],
    "vector_sum_of_scans": lambda r: [r.integers(-9, 9, (40, 5), dtype=np.int64)],
}


@pytest.mark.parametrize("vectorise", [True, False])
@pytest.mark.parametrize("entry", sorted(ARGS))
def test_flattened_entry_means_what_the_source_means(entry: str, vectorise: bool) -> None:
    core, gpu = _programs()
    args = ARGS[entry](np.random.default_rng(7))
    want = run_core(core, entry, args)
    got = run_gpu(gpu, entry, args, vectorise=vectorise)
    assert compare_values(want, got) == []
