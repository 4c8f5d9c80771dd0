"""The reader of printed GPU IR (futgen.gpu.read): what `futgen dump --ir
flatten` prints reads back, and a program read back runs."""

from __future__ import annotations

from dataclasses import fields, is_dataclass, replace
from pathlib import Path

import numpy as np
import pytest

from futgen.core import load
from futgen.gpu.interpret import run
from futgen.gpu.pretty import pretty
from futgen.gpu.read import read_program
from futgen.pipeline import run_passes

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = [*sorted((ROOT / "examples").glob("*.fut")),
            *sorted((ROOT / "tests" / "programs").glob("*/*.fut"))]


def _as_printed(node):
    """`node` without what the printer leaves out: source locations and
    SegOps' host statements (and those run before them)."""
    if isinstance(node, tuple):
        return tuple(_as_printed(x) for x in node)
    if is_dataclass(node) and not isinstance(node, type):
        left_out = {"loc": None, "host": None, "host_before": ()}
        changes = {f.name: left_out[f.name] if f.name in left_out
                   else _as_printed(getattr(node, f.name)) for f in fields(node)}
        return replace(node, **changes)
    return node


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_the_printed_gpu_program_reads_back(path: Path, load_core) -> None:
    """After incremental flattening, whose versions include moderate flattening's."""
    prog = run_passes(load_core(path))
    text = pretty(prog)
    back = read_program(text)
    assert pretty(back) == text
    assert _as_printed(back) == _as_printed(prog)


def test_a_gpu_program_read_back_runs() -> None:
    text = pretty(run_passes(load(str(ROOT / "examples" / "matmul.fut"))))
    assert "threshold(main.suff_outer_par_0" in text or "threshold(matmul." in text
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.arange(12, dtype=np.float32).reshape(3, 4)
    prog = read_program(text)
    for forced in (0, 2_000_000_000):  # each version
        thresholds = {"matmul.suff_outer_par_0": forced}
        [got] = run(prog, "main", [a, b], thresholds=thresholds)
        np.testing.assert_array_equal(got, a @ b)
