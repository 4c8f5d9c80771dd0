"""Every program in examples/ passes its own `-- ==` test blocks.

The test cases run on the reference interpreter through the library form of
`futgen test` (`futgen.testing.run_tests`: one worker process per program,
with a timeout).  Each example is one pytest case, so a failure names the
program, and the runner's report (entry point, data set, expected and got)
is the assertion message.  `random input` cases are skipped by the
interpreter backend.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from futgen.testing import TestOptions, run_tests

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
PROGRAMS = sorted(EXAMPLES.glob("*.fut"))

# Generous: every example takes well under a second on the interpreter.
TIMEOUT_S = 300.0


def test_examples_exist():
    assert len(PROGRAMS) >= 8, f"expected at least 8 examples in {EXAMPLES}"


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_example_passes_its_test_blocks(program: Path):
    report = run_tests([program], TestOptions(backend="interpreter", timeout=TIMEOUT_S))
    assert report.ok, str(report)
    [result] = report.results
    assert result.status == "passed", str(report)
    counts = result.run_counts()
    assert counts["passed"] > 0 and counts["failed"] == 0, counts
