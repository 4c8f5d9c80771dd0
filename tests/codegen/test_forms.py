"""The checked array forms (ranges, slices, size coercions, size binders)
compiled: each program in tests/programs/forms passes its test blocks on
the interpreter and on the CPU backend (the same expected values and error
messages), and nvcc accepts the kernels generated for it."""

from __future__ import annotations

from pathlib import Path

import pytest

from futgen.codegen.package import build_package
from futgen.testing import TestOptions, run_tests

FORMS = Path(__file__).resolve().parents[1] / "programs" / "forms"
PROGRAMS = sorted(FORMS.glob("*.fut"))


@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
@pytest.mark.parametrize("program", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_program_passes_its_test_blocks(program: Path, backend: str) -> None:
    report = run_tests([program], TestOptions(backend=backend, timeout=300.0))
    [result] = report.results
    assert result.status == "passed", str(report)
    counts = result.run_counts()
    assert counts["passed"] > 0 and counts["failed"] == 0, counts


@pytest.mark.gpu
@pytest.mark.parametrize("program", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_program_passes_its_test_blocks_on_cuda(program: Path) -> None:
    test_program_passes_its_test_blocks(program, "cuda")


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_kernels_compile(program: Path, tmp_path: Path) -> None:
    from tests.codegen.test_cuda import nvcc_check

    pkg = build_package(program, tmp_path / "pkg", name=f"forms_{program.stem}")
    nvcc_check((pkg / "kernels.cu").read_text(), tmp_path)
