"""Helpers that the generated CPU code calls: copied verbatim into every package.

Generated packages may import nothing but NumPy and the vendored runtime, so
the few operations that generated vectorised NumPy code needs over and over
(lane selection for `if`, gathers with Futhark's bounds message, tree
reductions and log-step scans with an arbitrary operator) live in this one
real, testable file.  `futgen.codegen.package` copies it into the package as
`_cpu_support.py`, where the relative import of `_futgen_runtime` succeeds;
imported from the compiler it uses the installed `futgen_runtime`.

Conventions: a *lane value* is a 1-D array with one element per active point
of a segment space, or a NumPy scalar standing for the same value at every
point.  Every function works on both.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

try:  # inside a generated package
    from ._futgen_runtime import prims
    from ._futgen_runtime.errors import FutharkError
except ImportError:  # imported from the compiler itself
    from futgen_runtime import prims
    from futgen_runtime.errors import FutharkError

__all__ = ["FutharkError", "prims"]

Val = Any
OpFn = Callable[..., tuple]

def unop(op: str, prim: str, x: Val) -> Val:
    """A unary operator or float function with Futhark's semantics."""
    return prims.unop(op, prim, x)


def binop(op: str, prim: str, x: Val, y: Val) -> Val:
    """A binary operator or comparison on operands of type `prim`."""
    return prims.BINOPS[op].evaluator(prim)(x, y)


def dtype(prim: str) -> np.dtype:
    """The NumPy dtype of a Futhark primitive type."""
    return prims.PRIM_DTYPES[prim]


# ------------------------------------------------------------ lanes


def points(dims: Sequence[int]) -> tuple[np.ndarray, ...]:
    """One i64 index array per dimension, over all points in row-major order."""
    n = int(np.prod(dims, dtype=np.int64)) if dims else 1
    flat = np.arange(n, dtype=np.int64)
    return tuple(np.asarray(g, dtype=np.int64) for g in np.unravel_index(flat, tuple(dims)))


def sel(x: Val, idx: np.ndarray) -> Val:
    """The lanes `idx` of a lane value (a scalar stands for every lane)."""
    if isinstance(x, np.ndarray) and x.ndim > 0:
        return x[idx]
    return x


def full(x: Val, n: int, prim: str) -> np.ndarray:
    """A lane value as a fresh array of `n` lanes (loop state is written per lane)."""
    out = np.empty(n, dtype=dtype(prim))
    out[...] = x
    return out


def merge(n: int, yes: np.ndarray, no: np.ndarray, a: Val, b: Val, prim: str) -> np.ndarray:
    """The result of an `if` whose branches ran on lanes `yes` and `no`."""
    out = np.empty(n, dtype=dtype(prim))
    out[yes] = a
    out[no] = b
    return out


def split(cond: Val, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The lanes where `cond` holds and where it does not."""
    c = np.broadcast_to(np.asarray(cond, dtype=bool), (n,))
    return np.flatnonzero(c), np.flatnonzero(~c)


def active(mask: Val, n: int) -> np.ndarray:
    """The lanes where `mask` holds (loop lanes still running)."""
    return np.flatnonzero(np.broadcast_to(np.asarray(mask, dtype=bool), (n,)))


def update_lanes(state: np.ndarray, idx: np.ndarray, value: Val) -> None:
    """Writes a loop body's new values back into the running lanes."""
    state[idx] = value


def lane_max(x: Val) -> int:
    """The largest trip count of any lane (0 when there are no lanes)."""
    a = np.asarray(x)
    return int(a.max()) if a.size else 0


# ------------------------------------------------------------ checks


def gather(arr: np.ndarray, idx: tuple[Val, ...], loc: str) -> Val:
    """`arr[i, j, ...]` at every lane, after Futhark's bounds check."""
    bad: Val = False
    for dim, i in enumerate(idx):
        bad = bad | (i < 0) | (i >= arr.shape[dim])
    if np.any(bad):
        _out_of_bounds(arr, idx, bad, loc)
    r = arr[tuple(np.asarray(i, dtype=np.int64) for i in idx)]
    return r[()] if isinstance(r, np.ndarray) and r.ndim == 0 else r


def _out_of_bounds(arr: np.ndarray, idx: tuple[Val, ...], bad: Val, loc: str) -> None:
    """Raises the reference implementation's message for the first bad lane."""
    k = int(np.flatnonzero(np.atleast_1d(bad))[0])
    shown = [str(int(np.atleast_1d(i)[k if np.ndim(i) else 0])) for i in idx]
    shape = "][".join(map(str, arr.shape))
    raise FutharkError(f"Index [{', '.join(shown)}] out of bounds for array of shape [{shape}].",
                       loc or None)


def check(cond: Val, msg: str, loc: str, *args: Val) -> np.bool_:
    """An `assert`: fails with `msg` unless `cond` holds at every lane; with
    `args`, `msg` is a template filled with their values at the first
    failing lane."""
    if not np.all(cond):
        if args:
            k = int(np.flatnonzero(~np.atleast_1d(np.asarray(cond, dtype=bool)))[0])
            msg = msg.format(*(int(np.atleast_1d(a)[k if np.ndim(a) else 0]) for a in args))
        raise FutharkError(msg, loc or None)
    return np.bool_(True)


# ------------------------------------------------------------ reductions and scans


def ufunc_reduce(prim: str, op: str, ne: Val, x: np.ndarray) -> np.ndarray:
    """A reduction over the last axis with a built-in operator's ufunc."""
    fn = prims.BINOPS[op].reducer(prim)
    r = (fn.reduce(x, axis=-1, dtype=dtype(prim)) if x.shape[-1]
         else np.full(x.shape[:-1], ne, dtype=dtype(prim)))  # every segment is empty
    return binop(op, prim, np.asarray(ne, dtype=dtype(prim)), r)


def ufunc_scan(prim: str, op: str, ne: Val, x: np.ndarray) -> np.ndarray:
    """An inclusive scan over the last axis with a built-in operator's ufunc."""
    fn = prims.BINOPS[op].reducer(prim)
    if x.shape[-1] == 0:
        return np.array(x, dtype=dtype(prim))
    acc = fn.accumulate(x, axis=-1, dtype=dtype(prim))
    return np.asarray(binop(op, prim, np.asarray(ne, dtype=dtype(prim)), acc))


def tree_reduce(op: OpFn, nes: Sequence[Val], cols: Sequence[np.ndarray],
                prims_: Sequence[str]) -> list[np.ndarray]:
    """Reduces the last axis of `cols` (all of one shape) with the vectorised
    operator `op`, combining neighbours pairwise so only associativity is
    assumed; ~log2(m) calls of `op` on ever fewer lanes."""
    cols = [np.asarray(c) for c in cols]
    outer, m = cols[0].shape[:-1], cols[0].shape[-1]
    if m == 0:
        return [full(ne, int(np.prod(outer, dtype=np.int64)), p).reshape(outer)
                for ne, p in zip(nes, prims_)]
    while m > 1:
        if m % 2:
            cols = [np.concatenate([c, full(ne, int(np.prod(outer, dtype=np.int64)), p)
                                    .reshape(*outer, 1)], axis=-1)
                    for c, ne, p in zip(cols, nes, prims_)]
            m += 1
        left = [c[..., 0::2].reshape(-1) for c in cols]
        right = [c[..., 1::2].reshape(-1) for c in cols]
        m //= 2
        res = op(left[0].size, *left, *right)
        cols = [full(r, left[0].size, p).reshape(*outer, m) for r, p in zip(res, prims_)]
    return [c[..., 0] for c in cols]


def tree_scan(op: OpFn, cols: Sequence[np.ndarray], prims_: Sequence[str]) -> list[np.ndarray]:
    """Inclusive scan over the last axis with the vectorised operator `op`
    (Hillis-Steele: after the step with distance d every element combines
    the 2d elements ending at it, earlier ones on the left)."""
    cols = [np.array(c) for c in cols]
    m = cols[0].shape[-1] if cols[0].ndim else 0
    d = 1
    while d < m:
        left = [c[..., :-d].reshape(-1) for c in cols]
        right = [c[..., d:].reshape(-1) for c in cols]
        res = op(left[0].size, *left, *right)
        new = [np.array(c) for c in cols]
        for c, r, p in zip(new, res, prims_):
            c[..., d:] = full(r, left[0].size, p).reshape(c[..., d:].shape)
        cols = new
        d *= 2
    return cols


# ------------------------------------------------------------ scatter and histograms


def in_bounds(idx: Sequence[np.ndarray], shape: tuple[int, ...]) -> np.ndarray:
    """The rows whose indices all lie inside `shape` (others are ignored)."""
    ok = np.ones(len(idx[0]) if idx else 0, dtype=bool)
    for dim, ix in enumerate(idx):
        ok &= (ix >= 0) & (ix < shape[dim])
    return ok


def scatter(dest: np.ndarray, idx: Sequence[Val], vals: Val, w: int) -> np.ndarray:
    """Writes in row order (the last write to a position wins), skipping
    out-of-bounds indices; `dest` is consumed."""
    cols = [np.broadcast_to(np.asarray(i, dtype=np.int64), (w,)) for i in idx]
    ok = in_bounds(cols, dest.shape)
    v = np.broadcast_to(np.asarray(vals), (w, *dest.shape[len(cols):]))
    dest[tuple(c[ok] for c in cols)] = v[ok]
    return dest


def hist_ufunc(dest: np.ndarray, prim: str, op: str, bins: Val, vals: Val, w: int) -> np.ndarray:
    """A histogram with a built-in operator: `ufunc.at` on the in-range bins."""
    b = np.broadcast_to(np.asarray(bins, dtype=np.int64), (w,))
    ok = in_bounds([b], dest.shape)
    v = np.broadcast_to(np.asarray(vals, dtype=dest.dtype), (w, *dest.shape[1:]))
    prims.BINOPS[op].reducer(prim).at(dest, b[ok], v[ok])
    return dest


def writable(x: np.ndarray) -> np.ndarray:
    """`x`, or a copy where it is a read-only argument: a consumed array is
    written in place, but never the caller's own data."""
    return x if x.flags.writeable else x.copy()


def stack(rows: list[Val], prim: str, empty_shape: tuple[int, ...]) -> np.ndarray:
    """Per-row results as one array; of `empty_shape` when there are no rows."""
    if rows:
        return np.array([np.asarray(r) for r in rows], dtype=dtype(prim))
    return np.empty(empty_shape, dtype=dtype(prim))


def column(x: Val, w: int, prim: str) -> np.ndarray:
    """A vectorised lambda result as a column of `w` rows (scalars broadcast)."""
    return full(x, w, prim) if np.ndim(x) == 0 else np.asarray(x, dtype=dtype(prim))
