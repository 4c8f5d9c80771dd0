"""The CPU backend: every Backend operation on NumPy arrays.

Generated packages use it when there is no CUDA device or PyCUDA, or when
`backend="cpu"` is asked for; host code is the same for both backends, so
this is also the reference the CUDA backend is tested against.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .errors import FutharkError
from .indexing import Index, all_fixed, oob_message, resolve, shape_text

ErrorTable = Mapping[int, tuple[str, str]]


def _dtype(dtype: Any) -> np.dtype:
    return np.dtype(dtype)


def _region_view(x: np.ndarray, idx: Index, loc: object) -> np.ndarray:
    """A (possibly non-contiguous) view of the elements `x[idx]` selects."""
    r = resolve(x.shape, idx, loc)
    flat = x.reshape(-1)
    item = x.itemsize
    if r.size == 0:
        return np.empty(r.shape, x.dtype)
    return as_strided(flat[r.offset:], shape=r.shape, strides=[s * item for s in r.strides],
                      writeable=x.flags.writeable)


class CpuBackend:
    """Backend arrays are C-contiguous `numpy.ndarray`s; scalars NumPy scalars.

    Arrays handed in by callers (`from_host`) are marked read-only rather
    than copied, and `update` copies a read-only array before writing: a
    consuming entry point then never changes its caller's data.
    """

    kind = "cpu"
    array_type = np.ndarray
    device_name = "CPU (NumPy)"

    def __init__(self, *, errors: ErrorTable | None = None) -> None:
        self.errors = dict(errors or {})

    def use_defines(self, defines: Mapping[str, int]) -> None:
        """Tile sizes shape CUDA kernels only."""

    @staticmethod
    def is_contiguous(x: np.ndarray) -> bool:
        return bool(x.flags.c_contiguous)

    # ------------------------------------------------------------ transfers

    def from_host(self, a: np.ndarray) -> np.ndarray:
        """The caller's array, contiguous and read-only (no copy if already contiguous)."""
        c = np.ascontiguousarray(a)
        if c is a or np.shares_memory(c, a):
            c = c.view()
            c.flags.writeable = False
        return c

    def to_host(self, x: np.ndarray) -> np.ndarray:
        """The array itself (already on the host)."""
        return x

    def mirror(self, x: np.ndarray) -> np.ndarray:
        """The array itself: its element reads wait for nothing already."""
        return x

    # ------------------------------------------------------------ creation

    def empty(self, shape: Sequence[int], dtype: Any) -> np.ndarray:
        return np.empty(tuple(int(n) for n in shape), _dtype(dtype))

    def zeros(self, shape: Sequence[int], dtype: Any) -> np.ndarray:
        return np.zeros(tuple(int(n) for n in shape), _dtype(dtype))

    def iota(self, n: int, start: Any, stride: Any, dtype: Any) -> np.ndarray:
        """`start + i*stride` for i < n, wrapping in `dtype` like Futhark integers."""
        dt = _dtype(dtype)
        if dt.kind == "f":
            return (np.arange(int(n), dtype=np.float64) * float(stride) + float(start)).astype(dt)
        with np.errstate(all="ignore"):
            r = np.arange(int(n), dtype=np.int64) * np.int64(_wrap64(stride)) \
                + np.int64(_wrap64(start))
        return r.astype(dt)

    def replicate(self, shape: Sequence[int], value: Any, dtype: Any) -> np.ndarray:
        """`shape` copies of `value`; an array value's shape is appended."""
        dt = _dtype(dtype)
        shape = tuple(int(n) for n in shape)
        v = np.asarray(value, dtype=dt)
        return np.array(np.broadcast_to(v, shape + v.shape), order="C")

    def copy(self, x: np.ndarray) -> np.ndarray:
        return np.array(x, copy=True, order="C")

    def concat(self, xs: Sequence[np.ndarray]) -> np.ndarray:
        """Concatenation along the outer dimension; inner shapes must agree."""
        if not xs:
            raise ValueError("concat needs at least one array")
        return np.concatenate(list(xs), axis=0)

    def reshape(self, x: np.ndarray, shape: Sequence[int], loc: object = None) -> np.ndarray:
        """`x` with a new shape of the same number of elements (a view)."""
        shape = tuple(int(n) for n in shape)
        if int(np.prod(shape, dtype=np.int64)) != x.size:
            raise FutharkError(f"Cannot reshape array of shape {shape_text(x.shape)} "
                               f"to {shape_text(shape)}.", loc)
        return x.reshape(shape)

    def rearrange(self, x: np.ndarray, perm: Sequence[int]) -> np.ndarray:
        """Dimensions permuted (`perm[i]` is the source dimension of result dimension i)."""
        return np.ascontiguousarray(np.transpose(x, tuple(perm)))

    def array_lit(self, values: Sequence[Any], dtype: Any, shape: Sequence[int]) -> np.ndarray:
        """An array from scalars or equally shaped rows, given its full shape."""
        a = np.array([np.asarray(v) for v in values], dtype=_dtype(dtype))
        return a.reshape(tuple(int(n) for n in shape))

    # ------------------------------------------------------------ indexing

    def index(self, x: np.ndarray, idx: Index, loc: object = None) -> Any:
        """`x[idx]` (bounds checked): a NumPy scalar when every dimension is fixed, else a copy."""
        view = _region_view(x, idx, loc)
        if all_fixed(idx, x.ndim):
            return view[()]
        return np.array(view, order="C")

    def update(self, x: np.ndarray, idx: Index, value: Any, loc: object = None) -> np.ndarray:
        """`x with [idx] = value`, in place when `x` is writable; returns the result."""
        if not (x.flags.writeable and x.flags.c_contiguous):
            x = np.array(x, order="C")  # the strided view below writes through `x`
        view = _region_view(x, idx, loc)
        v = np.asarray(value, dtype=x.dtype)
        if v.shape != view.shape:
            raise FutharkError(oob_message(list(idx), x.shape), loc)
        if view.size:
            view[...] = v
        return x

    def read_scalar(self, x: np.ndarray, i: int = 0) -> Any:
        """Element `i` of `x` (flattened) as a NumPy scalar."""
        return x.reshape(-1)[int(i)]

    # ------------------------------------------------------------ kernels

    def launch(self, kernel: str, threads: int, block: int | tuple[int, int],
               args: Sequence[Any], shared_bytes: int = 0) -> None:
        """Not available: generated CPU code runs SegOps on NumPy, never kernels."""
        raise NotImplementedError(f"the CPU backend cannot launch CUDA kernel {kernel}")

    def launch_sig(self, kernel: str, sig: str, threads: int, block: int | tuple[int, int],
                   shared_bytes: int, *args: Any) -> None:
        """Not available, as `launch`."""
        self.launch(kernel, threads, block, args, shared_bytes)

    @property
    def sm_count(self) -> int:
        """One: the CPU backend launches no kernels to spread."""
        return 1

    def intra_shape(self, widest: int, runs: int, cap: int, nbytes: int) -> tuple[int, int]:
        """Not available, as `launch` (intra-block kernels are CUDA's)."""
        raise NotImplementedError("the CPU backend runs no intra-block kernels")

    def block_fits(self, nbytes: int) -> bool:
        """Never: the CPU backend runs an intra-block version as the map it
        came from, a row at a time, no faster than the outer version; guards
        then fall through to the flattened version, which NumPy runs on
        whole arrays."""
        return False

    @staticmethod
    def mark() -> float:
        """A point in time, for `elapsed_us`."""
        return time.perf_counter()

    @staticmethod
    def elapsed_us(start: float, end: float) -> float:
        return (end - start) * 1e6

    @staticmethod
    def timed(run: Callable[[], Any]) -> tuple[Any, float]:
        """`run()`'s result and the microseconds it took."""
        start = time.perf_counter()
        result = run()
        return result, (time.perf_counter() - start) * 1e6

    def sync(self) -> None:
        """Nothing to wait for: CPU failures raise where they happen."""

    def check(self) -> None:
        """As `sync`."""


def _wrap64(v: Any) -> int:
    """An integer as a signed 64-bit value (two's complement wrap), for iota bases."""
    i = int(v) & 0xFFFF_FFFF_FFFF_FFFF
    return i - (1 << 64) if i >= 1 << 63 else i
