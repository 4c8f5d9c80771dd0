"""f32 division in kernels: correctly rounded by default, within 2 ulp with
`--fast-division` (PTX div.full.f32), against NumPy's IEEE division, on the
GPU (`pytest -m gpu`)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from futgen.codegen.package import build_package
from futgen.pipeline import Options
from futgen.testing.compiled import CompiledPackage, import_package

pytestmark = pytest.mark.gpu
# The same checks on the CPU backend (which divides as NumPy does), to try
# them without a GPU.
BACKEND = os.environ.get("FUTGEN_SKELETON_BACKEND", "cuda")

PROGRAM = Path(__file__).resolve().parents[1] / "programs" / "kernels" / "divisions.fut"


def _instance(factory: pytest.TempPathFactory, name: str, fast: bool):
    pkg = build_package(PROGRAM, factory.mktemp(name) / "pkg", name=name,
                        options=Options(fast_division=fast))
    return CompiledPackage(import_package(pkg), BACKEND, str(PROGRAM)).instance


@pytest.fixture(scope="module")
def exact(tmp_path_factory: pytest.TempPathFactory):
    return _instance(tmp_path_factory, "divisions", False)


@pytest.fixture(scope="module")
def fast(tmp_path_factory: pytest.TempPathFactory):
    return _instance(tmp_path_factory, "divisions_fast", True)


def _operands(n: int = 1 << 20) -> tuple[np.ndarray, np.ndarray]:
    """Normal f32 operands over most of the exponent range (quotients stay
    normal), and XLA's counterexample to x / x == 1 under div.full."""
    rng = np.random.default_rng(7)
    x = (rng.uniform(1, 2, n) * 2.0 ** rng.integers(-60, 60, n)).astype(np.float32)
    y = (rng.uniform(1, 2, n) * 2.0 ** rng.integers(-60, 60, n)).astype(np.float32)
    x *= rng.choice(np.float32([-1, 1]), n)
    y[: n // 4] = x[: n // 4]  # x / x, which must be exactly 1 when correctly rounded
    x[0] = y[0] = np.float32(3163.328613)
    return x, y


def test_division_is_correctly_rounded_by_default(exact) -> None:
    x, y = _operands()
    assert np.array_equal(exact.quotients(x, y), x / y)
    assert np.array_equal(exact.reciprocals(y), np.float32(1) / y)
    assert exact.quotients(x[:1], y[:1])[0] == 1.0
    x64, y64 = x.astype(np.float64) * 1.1, y.astype(np.float64)
    assert np.array_equal(exact.quotients64(x64, y64), x64 / y64)


def _within_2ulp(got: np.ndarray, want: np.ndarray) -> bool:
    return bool(np.all(np.abs(got - want) <= 2 * np.spacing(np.abs(want))))


def test_fast_division_is_within_two_ulp(fast) -> None:
    x, y = _operands()
    assert _within_2ulp(fast.quotients(x, y), x / y)
    assert _within_2ulp(fast.reciprocals(y), np.float32(1) / y)
    x64, y64 = x.astype(np.float64) * 1.1, y.astype(np.float64)
    assert np.array_equal(fast.quotients64(x64, y64), x64 / y64)  # f64 stays exact
    assert np.allclose(fast.ratios(np.float32([1, 2, 4, 8])), [1, 0.5, 0.125, 0.015625],
                       rtol=1e-6)
