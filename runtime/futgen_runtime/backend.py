"""The Backend interface and `make_backend`, which picks one.

Generated host code is written once against `Backend`; `make_backend`
decides at instance creation whether it runs on CUDA or NumPy.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from .cpu import CpuBackend
from .errors import FutgenError


class Backend(Protocol):
    """What generated host code calls (see futgen/codegen/RUNTIME_API.md)."""

    kind: str
    array_type: type  # the backend's arrays: numpy.ndarray or GPUArray
    device_name: str

    def is_contiguous(self, x: Any) -> bool: ...
    def from_host(self, a: Any) -> Any: ...
    def to_host(self, x: Any) -> Any: ...
    def empty(self, shape: Sequence[int], dtype: Any) -> Any: ...
    def zeros(self, shape: Sequence[int], dtype: Any) -> Any: ...
    def iota(self, n: int, start: Any, stride: Any, dtype: Any) -> Any: ...
    def replicate(self, shape: Sequence[int], value: Any, dtype: Any) -> Any: ...
    def copy(self, x: Any) -> Any: ...
    def concat(self, xs: Sequence[Any]) -> Any: ...
    def reshape(self, x: Any, shape: Sequence[int], loc: object = None) -> Any: ...
    def rearrange(self, x: Any, perm: Sequence[int]) -> Any: ...
    def array_lit(self, values: Sequence[Any], dtype: Any, shape: Sequence[int]) -> Any: ...
    def index(self, x: Any, idx: Sequence[Any], loc: object = None) -> Any: ...
    def update(self, x: Any, idx: Sequence[Any], value: Any, loc: object = None) -> Any: ...
    def launch(self, kernel: str, threads: int, block: int | tuple[int, int],
               args: Sequence[Any], shared_bytes: int = 0) -> None: ...
    def launch_sig(self, kernel: str, sig: str, threads: int, block: int | tuple[int, int],
                   shared_bytes: int, *args: Any) -> None: ...
    def read_scalar(self, x: Any, i: int = 0) -> Any: ...
    def block_fits(self, nbytes: int) -> bool: ...
    def intra_shape(self, widest: int, runs: int, cap: int, nbytes: int) -> tuple[int, int]: ...
    @property
    def sm_count(self) -> int: ...
    def timed(self, run: Callable[[], Any]) -> tuple[Any, float]: ...
    def mark(self) -> Any: ...
    def elapsed_us(self, start: Any, end: Any) -> float: ...
    def sync(self) -> None: ...
    def check(self) -> None: ...
    def use_defines(self, defines: Mapping[str, int]) -> None: ...


def make_backend(kind: str = "auto", *, device: int | str | None = None,
                 kernels_source: str = "", kernel_images: Mapping[str, bytes] | None = None,
                 errors: Mapping[int, tuple[str, str]] | None = None,
                 cache_dir: str | None = None) -> Backend:
    """A backend of `kind`: "cuda", "cpu", or "auto" (CUDA if possible, else CPU).

    "auto" falls back to the CPU with one line on stderr saying why, so a
    package imported on a machine without a GPU still works and says so.
    """
    if kind == "cpu":
        return CpuBackend(errors=errors)
    if kind not in ("cuda", "auto"):
        raise ValueError(f"unknown backend {kind!r}; expected 'auto', 'cuda' or 'cpu'")
    try:
        from .cuda import CudaBackend

        return CudaBackend(device=device, kernels_source=kernels_source,
                           kernel_images=kernel_images, errors=errors, cache_dir=cache_dir)
    except Exception as e:
        if kind == "cuda":
            raise FutgenError(f"the CUDA backend is not available here: {_reason(e)} "
                              "(backend='auto' falls back to the CPU backend)") from e
        print(f"futgen: no CUDA device or PyCUDA ({_reason(e)}); running on the CPU backend",
              file=sys.stderr)
        return CpuBackend(errors=errors)


def _reason(e: BaseException) -> str:
    """One line saying why CUDA is unavailable."""
    if isinstance(e, ImportError) and (e.name or "").startswith("pycuda"):
        return "PyCUDA is not installed"
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0]}" if text else type(e).__name__
