"""One entry point's calling convention, built once per package import.

A generated entry method hands its arguments to `EntryPoint.arguments` and
the compiled function's leaves to `EntryPoint.results`.  Most calls pass
arrays of exactly the parameter's dtype and rank and take plain arrays
back; those take a fast path of a few attribute reads per argument.  Every
other call, and every call the fast path has doubts about, goes through
`layout.convert_args`, which checks everything and words the errors, so the
fast path only decides *when* the full checks run, never what they say.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .dtypes import PRIM_DTYPES
from .errors import ArgumentTypeError
from .layout import Layout, Leaf, Param, convert_args, convert_results


class _Required:
    """The default of entry parameters, so that a missing argument gets a clear message."""

    def __repr__(self) -> str:
        return "<required>"


MISSING = _Required()


class EntryPoint:
    """Parameters and results of one entry point; `shown` is each parameter's
    type as its method's help writes it (records by class name)."""

    def __init__(self, name: str, params: Sequence[Param], results: Sequence[Layout],
                 shown: Sequence[str]) -> None:
        self.name = name
        self.params = tuple(params)
        self.result_layouts = tuple(results)
        self._shown = tuple(shown)
        leaves = [p.layout for p in self.params]
        self._fast = (tuple((PRIM_DTYPES[lf.prim], len(lf.dims)) for lf in leaves)
                      if all(isinstance(lf, Leaf) for lf in leaves) else None)
        self._same_sizes, self._fixed_sizes = _size_constraints(leaves)

    # ------------------------------------------------------------ arguments

    def arguments(self, backend: Any, values: tuple, extra: tuple) -> list[Any]:
        """The compiled function's arguments: checked, converted for `backend`."""
        if extra:
            self._wrong_count(values, extra)
        if self._fast is not None and self._fast_ok(backend, values):
            return [backend.from_host(v) if type(v) is np.ndarray else v for v in values]
        for v in values:
            if v is MISSING:
                self._wrong_count(values, extra)
        return convert_args(backend, self.name, self.params, values)

    def _fast_ok(self, backend: Any, values: tuple) -> bool:
        """Whether every argument is already what the function takes (a
        NumPy array or the backend's own contiguous array, of the exact dtype
        and rank, or a NumPy scalar of the exact type) and the sizes agree."""
        own = backend.array_type
        for v, (dt, rank) in zip(values, self._fast):
            t = type(v)
            if rank == 0:
                if t is not dt.type:
                    return False
            elif t is np.ndarray:
                if v.ndim != rank or v.dtype != dt:
                    return False
            elif t is not own or len(v.shape) != rank or v.dtype != dt \
                    or not backend.is_contiguous(v):
                return False
        for (i, a), (j, b) in self._same_sizes:
            if values[i].shape[a] != values[j].shape[b]:
                return False
        return all(values[i].shape[a] == n for i, a, n in self._fixed_sizes)

    def _wrong_count(self, values: tuple, extra: tuple) -> None:
        """Too few or too many arguments: a TypeError naming the parameters and their types."""
        signature = ", ".join(f"{p.name}: {t}" for p, t in zip(self.params, self._shown))
        for p, t, v in zip(self.params, self._shown, values):
            if v is MISSING:
                raise ArgumentTypeError(f"{self.name}: missing argument for parameter {p.name} "
                                        f"({t}); {self.name} takes ({signature})")
        raise ArgumentTypeError(f"{self.name}: takes {len(self.params)} arguments ({signature}), "
                                f"got {len(self.params) + len(extra)}")

    # ------------------------------------------------------------ results

    def results(self, backend: Any, leaves: Sequence[Any], device_results: bool) -> Any:
        """The caller's results (one value, or a tuple), once the device has
        finished them or, with `device_results`, once they are queued; a
        failure a kernel reported is raised here."""
        out = convert_results(backend, self.result_layouts, leaves, device_results)
        if device_results:
            backend.check()
        else:
            backend.sync()  # copying results waited for the device: a flag read
        return out


def _size_constraints(layouts: Sequence[Layout]) -> tuple[tuple, tuple]:
    """For leaf parameters: pairs of (parameter, axis) that one size name
    binds, which must be equal, and (parameter, axis, n) for constant sizes."""
    first: dict[str, tuple[int, int]] = {}
    same, fixed = [], []
    for i, layout in enumerate(layouts):
        for a, d in enumerate(getattr(layout, "dims", ())):
            if d.isdigit():
                fixed.append((i, a, int(d)))
            elif d:
                if d in first:
                    same.append((first[d], (i, a)))
                first.setdefault(d, (i, a))
    return tuple(same), tuple(fixed)


__all__ = ["MISSING", "EntryPoint"]
