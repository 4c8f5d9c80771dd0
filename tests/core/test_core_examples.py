"""Every example's test cases give the expected results through the core IR.

This is the "means the same before and after" check of internalisation:
each `-- ==` case with given input and output values (inline or from a
data file) runs on the core IR interpreter and is compared with Futhark's
float tolerance.  Random-input cases have no expected output and are left
to the reference interpreter's own tests.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from futgen.core import internalise, ir, run
from futgen.data import compare_values
from futgen.frontend import load
from futgen.testing.spec import read_spec, value_runs

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
# Cases that take seconds on the core interpreter: their map bodies contain
# calls, branches or loops, which it runs one row at a time.
SLOW = {("montecarlo", "main", 4), ("montecarlo", "main", 5), ("mandelbrot", "main", 5)}


def _cases() -> list:
    out = []
    for path in sorted(EXAMPLES.glob("*.fut")):
        for entry, r in value_runs(str(path)):
            marks = [pytest.mark.slow] if (path.stem, entry, r.index) in SLOW else []
            out.append(pytest.param(path, entry, r, marks=marks,
                                    id=f"{path.stem}:{entry}:{r.index}"))
    return out


@cache
def _core(path: Path) -> ir.Program:
    return internalise(load(str(path)))


def _values(v) -> list:
    if v.kind == "inline":
        return list(v.values)
    from futgen.data import load_file

    return load_file(v.path)


@pytest.mark.parametrize(("path", "entry", "run_case"), _cases())
def test_example_case_through_core_ir(path: Path, entry: str, run_case) -> None:
    got = run(_core(path), entry, _values(run_case.input))
    mismatches = compare_values(_values(run_case.expected), got)
    assert not mismatches, "\n".join(map(str, mismatches))


def test_every_example_entry_point_internalises() -> None:
    for path in sorted(EXAMPLES.glob("*.fut")):
        names = {f.name for f in _core(path).functions if f.entry}
        wanted = {c.entry for c in read_spec(str(path)).cases}
        assert wanted <= names, f"{path.name}: missing {wanted - names}"
