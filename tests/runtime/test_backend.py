"""make_backend: kinds, and the one-line fallback to the CPU."""

import importlib.util

import pytest
from futgen_runtime import CpuBackend, make_backend
from futgen_runtime.errors import FutgenError

HAS_PYCUDA = importlib.util.find_spec("pycuda") is not None


def test_cpu() -> None:
    b = make_backend("cpu", errors={1: ("boom {0}", "a.fut:1:1")})
    assert isinstance(b, CpuBackend) and b.errors[1] == ("boom {0}", "a.fut:1:1")


def test_unknown_kind() -> None:
    with pytest.raises(ValueError, match="unknown backend 'opencl'"):
        make_backend("opencl")


@pytest.mark.skipif(HAS_PYCUDA, reason="PyCUDA is installed here")
def test_auto_falls_back_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    b = make_backend("auto")
    assert b.kind == "cpu"
    err = capsys.readouterr().err
    assert err == ("futgen: no CUDA device or PyCUDA (PyCUDA is not installed); "
                   "running on the CPU backend\n")


@pytest.mark.skipif(HAS_PYCUDA, reason="PyCUDA is installed here")
def test_cuda_without_pycuda_raises_saying_why() -> None:
    with pytest.raises(FutgenError, match=r"the CUDA backend is not available here: PyCUDA "
                                          r"is not installed \(backend='auto' falls back") as e:
        make_backend("cuda")
    assert isinstance(e.value.__cause__, ImportError)


def test_runtime_imports_without_pycuda() -> None:
    import futgen_runtime

    assert "CudaBackend" in futgen_runtime.__all__


@pytest.mark.parametrize(("widest", "runs", "cap", "nbytes", "shape"), [
    (256, 4, 1024, 7168, (64, 1)),     # LocVolCalib's large rows: a point to a block
    (32, 1, 1024, 768, (32, 1)),       # rows of 32, a lane each: a warp
    (32, 2, 1024, 768, (16, 2)),       # two elements a lane: two rows to a warp
    (32, 4, 1024, 768, (8, 4)),
    (3, 1, 1024, 64, (4, 8)),          # the fewest lanes a group has
    (100, 1, 64, 512, (64, 1)),        # the cap bounds a point's threads
    (12, 1, 1024, 60_000, (16, 1)),    # shared memory for one group only
])
def test_intra_kernels_give_short_rows_groups_of_lanes(widest, runs, cap, nbytes, shape) -> None:
    from futgen_runtime.limits import intra_shape

    assert intra_shape(widest, runs, cap, nbytes, max_shared=101_376) == shape
