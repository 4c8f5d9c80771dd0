"""nvcc compilation and the on-disk cubin cache (needs nvcc, not a GPU)."""

import shutil
from pathlib import Path

import pytest
from futgen_runtime.compile import cache_key, compile_cubin

SRC = 'extern "C" __global__ void k(int *x) { x[threadIdx.x] = 1; }\n'


def test_key_depends_on_everything() -> None:
    k = cache_key(SRC, ["-O3"], "sm_90")
    assert k != cache_key(SRC + " ", ["-O3"], "sm_90")
    assert k != cache_key(SRC, ["-O2"], "sm_90")
    assert k != cache_key(SRC, ["-O3"], "sm_80")
    assert k == cache_key(SRC, ["-O3"], "sm_90")


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="no nvcc")
def test_compile_then_cache_hit(tmp_path: Path) -> None:
    cubin, hit = compile_cubin(SRC, "sm_90", cache_dir=tmp_path)
    assert not hit and cubin[:4] == b"\x7fELF"
    again, hit = compile_cubin(SRC, "sm_90", cache_dir=tmp_path)
    assert hit and again == cubin
    assert len(list(tmp_path.glob("*.cubin"))) == 1


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="no nvcc")
def test_builtin_kernels_compile(tmp_path: Path) -> None:
    import futgen_runtime

    src = (Path(futgen_runtime.__file__).parent / "builtins.cu").read_text()
    cubin, _ = compile_cubin(src, "sm_80", cache_dir=tmp_path)
    assert b"futgen_gather_8" in cubin and b"futgen_iota_uint64" in cubin


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="no nvcc")
def test_compile_error_is_reported(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="nvcc failed"):
        compile_cubin("this is not CUDA", "sm_90", cache_dir=tmp_path)
