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
