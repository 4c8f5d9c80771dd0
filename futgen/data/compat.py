"""Compatibility shim that lets the `futhark_data` package run under NumPy 2.

`futhark_data` 1.0.x calls `np.product`, which NumPy 2 removed, when it reads
or writes an empty array (`empty([0]i32)`), so `futhark_data.loads` and
`futhark_data.dumps` crash on exactly the values tests like to use.  Rather
than patching NumPy for every library in the process, we give the
`futhark_data` module its own view of NumPy that adds `product` (an alias of
`np.prod`, which has the same meaning) and forwards every other attribute to
the real module.  `install()` is idempotent and is called when `futgen.data`
is imported.
"""

from __future__ import annotations

import types

import futhark_data
import numpy as np


class _NumpyWithProduct(types.ModuleType):
    """NumPy as `futhark_data` expects it: the real module plus `product`."""

    def __init__(self) -> None:
        super().__init__("numpy")
        self.product = np.prod

    def __getattr__(self, name: str):
        return getattr(np, name)


def install() -> None:
    """Make `futhark_data` work with the installed NumPy (1.x or 2.x)."""
    if hasattr(np, "product") or isinstance(futhark_data.np, _NumpyWithProduct):
        return
    futhark_data.np = _NumpyWithProduct()
