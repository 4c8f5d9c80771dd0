"""Futhark primitive types and their NumPy dtypes.

The one definition: generated packages carry the runtime and may not import
`futgen`, so `futgen.frontend.types` imports these tables from here.
"""

from __future__ import annotations

import numpy as np

PRIM_DTYPES: dict[str, np.dtype] = {
    "i8": np.dtype(np.int8),
    "i16": np.dtype(np.int16),
    "i32": np.dtype(np.int32),
    "i64": np.dtype(np.int64),
    "u8": np.dtype(np.uint8),
    "u16": np.dtype(np.uint16),
    "u32": np.dtype(np.uint32),
    "u64": np.dtype(np.uint64),
    "f16": np.dtype(np.float16),
    "f32": np.dtype(np.float32),
    "f64": np.dtype(np.float64),
    "bool": np.dtype(np.bool_),
}
SIGNED_INTS = ("i8", "i16", "i32", "i64")
UNSIGNED_INTS = ("u8", "u16", "u32", "u64")
INTS = SIGNED_INTS + UNSIGNED_INTS
FLOATS = ("f16", "f32", "f64")
NUMERIC = INTS + FLOATS
PRIMS = NUMERIC + ("bool",)

DTYPE_PRIMS: dict[np.dtype, str] = {v: k for k, v in PRIM_DTYPES.items()}


def prim_dtype(prim_or_dtype: str | np.dtype) -> np.dtype:
    """The NumPy dtype of a Futhark primitive (`"f32"`) or NumPy name (`"float32"`)."""
    if isinstance(prim_or_dtype, str) and prim_or_dtype in PRIM_DTYPES:
        return PRIM_DTYPES[prim_or_dtype]
    return np.dtype(prim_or_dtype)
