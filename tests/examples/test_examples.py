"""Every program in examples/ passes its own `-- ==` test blocks.

The test cases run on the reference interpreter through the runner behind
`futgen test` (`futgen.testing.runner`), one worker process per program with
a timeout.  Each example is one pytest case, so a failure names the program,
and the runner's report (which entry point and data set, expected and got)
is the assertion message.
"""

from __future__ import annotations

from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
PROGRAMS = sorted(EXAMPLES.glob("*.fut"))

# Generous: the largest example takes a few seconds on the interpreter.
TIMEOUT_S = 300.0


def test_examples_exist():
    assert len(PROGRAMS) >= 8, f"expected at least 8 examples in {EXAMPLES}"


def _runner():
    try:
        from futgen.interp import Interpreter  # noqa: F401
        from futgen.testing import runner
    except ImportError as e:
        pytest.skip(f"the interpreter or test runner is not in place yet: {e}")
    return runner


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_example_passes_its_test_blocks(program: Path):
    runner = _runner()
    options = runner.TestOptions(backend="interpreter", timeout=TIMEOUT_S)
    [result] = runner.run_tests([str(program)], options)
    assert result.status == runner.PASSED, runner.format_failure(result)
    counts = result.run_counts()
    assert counts[runner.PASSED] > 0 and counts[runner.FAILED] == 0, counts
