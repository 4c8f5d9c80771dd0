"""The CUDA reduction and scan skeletons against the interpreter, on the GPU.

Sizes 0, 1, odd, powers of two and around tile boundaries; segmented
reductions under every strategy (thresholds forced through `tuning=`); one
input above 2^31 bytes.  Run on the GPU machine: `pytest -m gpu`.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from futgen.codegen.package import build_package
from futgen.frontend import load
from futgen.interp.interpreter import Interpreter
from futgen.testing.compiled import import_package

pytestmark = pytest.mark.gpu
# The same checks on the CPU backend, to try them without a GPU.
BACKEND = os.environ.get("FUTGEN_SKELETON_BACKEND", "cuda")

PROGRAM = Path(__file__).resolve().parents[1] / "programs" / "kernels" / "reductions.fut"
SIZES = [0, 1, 7, 256, 2047, 2048, 2049, 1 << 16, (1 << 20) + 3]
SHAPES = [(0, 5), (3, 0), (1, 1), (7, 3), (5, 16), (33, 17), (4, 2048), (2, 5000), (1, 1 << 20),
          (1 << 12, 100)]


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory):
    pkg = build_package(PROGRAM, tmp_path_factory.mktemp("skeletons") / "pkg", name="skeletons")
    return import_package(pkg)


@pytest.fixture(scope="module")
def interp() -> Interpreter:
    return Interpreter(load(PROGRAM))


def _want(interp: Interpreter, entry: str, args: list):
    """The interpreter's results as a generated module returns them."""
    results = interp.call(entry, args)
    return results[0] if len(results) == 1 else tuple(results)


def _same(got, want, entry: str) -> None:
    if isinstance(want, tuple):
        for g, w in zip(got, want, strict=True):
            _same(g, w, entry)
        return
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, entry
    if want.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3 * max(1, want.size) ** 0.5,
                                   err_msg=entry)
    else:
        np.testing.assert_array_equal(got, want, err_msg=entry)


def _check(lib, interp, entry: str, *args) -> None:
    got = getattr(lib.Skeletons(backend=BACKEND), entry)(*args)
    _same(got, _want(interp, entry, list(args)), entry)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("entry", ["sum_f32", "sum_i32", "sum_squares", "min_max", "compose",
                                   "sum_and_doubled", "prefix_sum", "prefix_i64",
                                   "prefix_compose"])
def test_one_dimension(lib, interp, entry: str, n: int) -> None:
    rng = np.random.default_rng(n)
    ints = rng.integers(-1000, 1000, n)
    args = {"sum_f32": rng.random(n, dtype=np.float32), "sum_squares": rng.random(n, np.float32),
            "prefix_sum": rng.random(n, np.float32), "sum_and_doubled": ints,
            "prefix_i64": ints}.get(entry, ints.astype(np.int32))
    _check(lib, interp, entry, args)


@pytest.mark.parametrize("strategy", ["block", "warp", "thread"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("entry", ["row_sums", "row_compose"])
def test_segmented_strategies(lib, interp, entry: str, shape: tuple[int, int],
                              strategy: str) -> None:
    params = [k for k in lib.TUNING_PARAMS if k.startswith(f"{entry}.")]
    block = next(k for k in params if ".segred_block" in k)
    warp = next(k for k in params if ".segred_warp" in k)
    big = 2_000_000_000
    tuning = {"block": {block: 1, warp: 1}, "warp": {block: big, warp: 1},
              "thread": {block: big, warp: big}}[strategy]
    rng = np.random.default_rng(shape[0] * 7919 + shape[1])
    xss = (rng.random(shape, np.float32) if entry == "row_sums"
           else rng.integers(-50, 50, shape).astype(np.int32))
    instance = lib.Skeletons(backend=BACKEND, tuning=tuning)
    got = getattr(instance, entry)(xss)
    _same(got, _want(interp, entry, [xss]), entry)


def test_segmented_scan(lib, interp) -> None:
    xss = np.arange(7 * 300, dtype=np.int32).reshape(7, 300) % 11
    _check(lib, interp, "row_prefix", xss)


def test_above_two_gibibytes(lib) -> None:
    """2^29 + 1 i32 (2^31 + 4 bytes): 64-bit indexing all through."""
    n = (1 << 29) + 1
    xs = (np.arange(n, dtype=np.int64) % 1000 - 500).astype(np.int32)
    want = xs.sum(dtype=np.int32)  # wraps as Futhark's i32 addition does
    assert lib.Skeletons(backend=BACKEND).sum_i32(xs) == want
    head = xs[: 1 << 28].astype(np.int64)  # 2^31 bytes of i64
    prefix = lib.Skeletons(backend=BACKEND).prefix_i64(head)
    np.testing.assert_array_equal(prefix[-3:], np.cumsum(head)[-3:])
