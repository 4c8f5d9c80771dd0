"""Checking and converting entry-point arguments and results.

Generated entry methods call these before anything runs on the device, so a
bad call fails with a `TypeError`/`ValueError` naming the entry point, the
parameter and both types, and nothing is half-written.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .dtypes import FLOATS, INTS, PRIM_DTYPES
from .errors import ArgumentTypeError, ArgumentValueError

# Python and NumPy scalar kinds each Futhark primitive kind accepts.
_KIND_OK = {"b": ("b",), "i": ("i", "u"), "u": ("i", "u"), "f": ("f", "i", "u")}


def futhark_type(prim: str, rank: int) -> str:
    """`[][]f32`: the Futhark type of a parameter."""
    return "[]" * rank + prim


def is_gpuarray(value: Any) -> bool:
    """Whether `value` is a PyCUDA GPUArray (checked without importing PyCUDA)."""
    return type(value).__module__.startswith("pycuda") and hasattr(value, "gpudata")


def _describe(value: Any) -> str:
    """What the caller passed, in words, for error messages."""
    if isinstance(value, np.ndarray):
        return f"a NumPy array of {value.dtype} with rank {value.ndim}"
    if is_gpuarray(value):
        return f"a GPUArray of {value.dtype} with rank {len(value.shape)}"
    cai = getattr(value, "__cuda_array_interface__", None)
    if isinstance(cai, dict):
        t = type(value)
        return (f"a device array ({t.__module__}.{t.__qualname__}) of "
                f"{np.dtype(cai['typestr'])} with rank {len(cai['shape'])}")
    if isinstance(value, np.generic):
        return f"a NumPy {value.dtype}"
    return f"a {type(value).__name__}"


def _where(entry: str, param: str, position: int) -> str:
    return f"{entry}: parameter {param} (#{position})"


def convert_arg(backend: Any, value: Any, *, entry: str, param: str, position: int,
                prim: str, rank: int) -> Any:
    """One argument as the backend needs it: a backend array or a NumPy scalar.

    `position` is the 1-based position of the parameter.  Arrays must have
    exactly the parameter's dtype and rank (no silent conversion of data);
    NumPy arrays of any layout are made contiguous.  Scalars may be Python or
    NumPy values of a compatible kind whose value fits the type.
    """
    want = futhark_type(prim, rank)
    where = _where(entry, param, position)
    if rank == 0:
        return _convert_scalar(value, prim, where, want)
    if isinstance(value, (list, tuple)):
        raise ArgumentTypeError(f"{where} expects {want}, got a {type(value).__name__}; pass an array, "
                        f"e.g. np.asarray(value, dtype=np.{PRIM_DTYPES[prim]})")
    dtype, ndim = _dtype_and_rank(value)
    if dtype is None:
        raise ArgumentTypeError(f"{where} expects {want}, got {_describe(value)}")
    if dtype != PRIM_DTYPES[prim] or ndim != rank:
        raise ArgumentTypeError(f"{where} expects {want}, got {_describe(value)}")
    if isinstance(value, np.ndarray):
        return backend.from_host(value)
    if backend.kind == "cuda":
        return backend.from_device(value)
    return _device_to_numpy(value, where, want)


def _dtype_and_rank(value: Any) -> tuple[np.dtype | None, int]:
    if isinstance(value, np.ndarray) or is_gpuarray(value):
        return np.dtype(value.dtype), len(value.shape)
    cai = getattr(value, "__cuda_array_interface__", None)
    if isinstance(cai, dict):
        return np.dtype(cai["typestr"]), len(cai["shape"])
    return None, 0


def _device_to_numpy(value: Any, where: str, want: str) -> np.ndarray:
    """A device array copied to the host, for the CPU backend."""
    if is_gpuarray(value) or hasattr(value, "get"):  # PyCUDA, CuPy
        return np.ascontiguousarray(value.get())
    if hasattr(value, "cpu") and hasattr(value, "numpy"):  # PyTorch
        return np.ascontiguousarray(value.detach().cpu().numpy())
    raise ArgumentTypeError(f"{where} expects {want}, got {_describe(value)}, which the CPU backend "
                    f"cannot read; pass a NumPy array")


def _convert_scalar(value: Any, prim: str, where: str, want: str) -> Any:
    """A Python/NumPy scalar (or 0-d array) as a NumPy scalar of `prim`, range-checked."""
    dt = PRIM_DTYPES[prim]
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, (bool, np.bool_)):
        kind = "b"
    elif isinstance(value, (int, np.integer)):
        kind = "i"
    elif isinstance(value, (float, np.floating)):
        kind = "f"
    else:
        raise ArgumentTypeError(f"{where} expects {want}, got {_describe(value)}")
    if kind not in _KIND_OK[dt.kind]:
        raise ArgumentTypeError(f"{where} expects {want}, got {_describe(value)}")
    if isinstance(value, np.generic) and value.dtype == dt:
        return value
    if prim in INTS:
        info = np.iinfo(dt)
        if not info.min <= int(value) <= info.max:
            raise ArgumentValueError(f"{where} expects {want}, got {value!r}, which is out of range "
                             f"[{info.min}, {info.max}]")
        return dt.type(int(value))
    if prim in FLOATS:
        with np.errstate(over="ignore"):
            r = dt.type(value)
        if np.isinf(r) and not np.isinf(float(value)):
            raise ArgumentValueError(f"{where} expects {want}, got {value!r}, which overflows {prim}")
        return r
    return dt.type(bool(value))


def check_sizes(entry: str, bindings: Sequence[tuple[str, str, int, str]]) -> dict[str, int]:
    """Check that each size name is bound to one value; return the binding.

    `bindings` holds `(size_name, param, actual, futhark_type)`, e.g.
    `("n", "xs", 5, "[n]f32")` for `xs: [n]f32`; a constant size is its
    digits (`("3", "ys", 2, "[3]i32")`).  A name bound to two different
    values, or a constant that differs, raises `ValueError` naming the
    parameters and their types.
    """
    seen: dict[str, tuple[str, int, str]] = {}
    for name, param, actual, ftype in bindings:
        actual = int(actual)
        if name.isdigit() and int(name) != actual:
            raise ArgumentValueError(
                f"{entry}: invalid size: parameter {param}: {ftype} has a dimension of "
                f"{actual} where the type says {name}")
        if name in seen and seen[name][1] != actual:
            first, n, first_type = seen[name]
            raise ArgumentValueError(
                f"{entry}: invalid sizes: {name} is {n} from parameter {first}: {first_type} but "
                f"{actual} from parameter {param}: {ftype}; they must be equal")
        seen.setdefault(name, (param, actual, ftype))
    return {name: n for name, (_, n, _) in seen.items()}


def convert_result(backend: Any, x: Any, device_results: bool) -> Any:
    """A result for the caller: NumPy arrays (GPUArrays with `device_results` on
    cuda); scalars stay NumPy scalars."""
    if isinstance(x, np.generic):
        return x
    if backend.kind == "cuda":
        return backend.settled(x) if device_results else backend.to_host(x)
    if isinstance(x, np.ndarray) and not x.flags.writeable:
        return x.copy()  # a read-only view of an argument: give the caller its own array
    return x


__all__ = ["check_sizes", "convert_arg", "convert_result", "futhark_type"]
