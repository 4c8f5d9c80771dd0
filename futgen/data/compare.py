"""Comparing actual results with expected ones, the way `futhark test` does.

Integers and booleans must be equal.  Floats compare with a tolerance that is
relative to the magnitude of the expected data: two elements match when they
differ by at most `max(tol, tol * m)`, where `m` is the largest finite
absolute value among the expected elements of that value (Futhark's
futhark-data package computes its tolerance the same way from the expected
vector, so that results near zero in an array of large numbers are not held
to an impossible relative standard).  NaN matches NaN, and an infinity matches
the infinity of the same sign.  The default tolerance is Futhark's, 0.002.

Mismatches explain themselves: "Value #0: expected shape [3], got [4]" or
"Value #1 index [2, 0]: expected 3i32, got 4i32".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from futgen_runtime.layout import UNIT_DTYPE

from futgen.data.values import Value, format_scalar, value_type

DEFAULT_TOLERANCE = 0.002


@dataclass(frozen=True)
class Mismatch:
    """One way in which actual values differ from the expected ones."""

    value_index: int | None
    message: str
    count: int = 1  # differing elements in this value (for "... other mismatches")

    def __str__(self) -> str:
        return self.message


def compare_values(
    expected: list[Value], actual: list[Value], tolerance: float = DEFAULT_TOLERANCE
) -> list[Mismatch]:
    """Every mismatch between two lists of values; empty if they agree."""
    if len(expected) != len(actual):
        return [Mismatch(None, f"Expected {len(expected)} values, got {len(actual)}.")]
    out = []
    for i, (e, a) in enumerate(zip(expected, actual)):
        m = compare_value(i, e, a, tolerance)
        if m is not None:
            out.append(m)
    return out


def compare_value(i: int, expected: Value, actual: Value, tolerance: float) -> Mismatch | None:
    """The first difference between two values, or None.  Tuples and records
    (an interpreter's dicts and arrays of tuples, a compiled package's named
    tuples and tuples of arrays alike) compare component by component."""
    expected, actual = _unit_array(expected), _unit_array(actual)
    es, as_ = _components(expected), _components(actual)
    if es is not None or as_ is not None:
        if es is None or as_ is None or len(es) != len(as_):
            return Mismatch(i, f"Value #{i}: expected {_arity(es)}, got {_arity(as_)}")
        for e, a in zip(es, as_):
            m = compare_value(i, e, a, tolerance)
            if m is not None:
                return m
        return None
    e, a = np.asarray(expected), np.asarray(actual)
    if e.dtype != a.dtype or e.ndim != a.ndim:
        return Mismatch(
            i,
            f"Value #{i}: expected type {value_type(e, dims=False)}, "
            f"got {value_type(a, dims=False)}",
        )
    if e.shape != a.shape:
        return Mismatch(i, f"Value #{i}: expected shape {_shape(e)}, got {_shape(a)}")
    if e.dtype == UNIT_DTYPE:
        return None
    bad = _differing(e, a, tolerance)
    n = int(np.count_nonzero(bad))
    if n == 0:
        return None
    where = np.unravel_index(int(np.flatnonzero(bad)[0]), e.shape) if e.ndim else ()
    label = f"Value #{i}" + (f" index [{', '.join(map(str, where))}]" if e.ndim else "")
    msg = f"{label}: expected {format_scalar(e[where])}, got {format_scalar(a[where])}"
    if n > 1:
        msg += f" ({n - 1} other elements differ)"
    return Mismatch(i, msg, n)


def _unit_array(v: Value) -> Value:
    """An array of units (an interpreter's array of empty tuples) as a NumPy
    array of the empty structured dtype, as a compiled package returns it."""
    if getattr(v, "fields", None) in ((), {}) and hasattr(v, "shape"):
        return np.empty(v.shape, dtype=UNIT_DTYPE)
    return v


def _components(v: Value) -> list[Value] | None:
    """The parts of a tuple or record value in representation order (record
    fields sorted by name, tuple-like ones by number), or None for arrays
    and scalars."""
    fields = getattr(v, "fields", None)  # an interpreter's array of tuples or records
    if isinstance(fields, (tuple, dict)) and hasattr(v, "shape"):
        v = fields
    if isinstance(v, dict):
        keys = sorted(v, key=lambda k: (0, int(k), "") if str(k).isdigit() else (1, 0, str(k)))
        return [v[k] for k in keys]
    if isinstance(v, tuple):
        return list(v)
    return None


def _arity(parts: list[Value] | None) -> str:
    return "a single value" if parts is None else f"a tuple or record of {len(parts)} parts"


def _shape(v: np.ndarray) -> str:
    return "[" + ", ".join(map(str, v.shape)) + "]"


def _differing(e: np.ndarray, a: np.ndarray, tolerance: float) -> np.ndarray:
    """Boolean mask of the elements that do not match."""
    if not np.issubdtype(e.dtype, np.floating):
        return e != a
    e64, a64 = e.astype(np.float64), a.astype(np.float64)
    finite = np.abs(e64[np.isfinite(e64)])
    bound = max(tolerance, tolerance * float(finite.max())) if finite.size else tolerance
    both_nan = np.isnan(e64) & np.isnan(a64)
    with np.errstate(invalid="ignore"):
        same = (e64 == a64) | (np.abs(e64 - a64) <= bound)
    return ~(same | both_nan)
