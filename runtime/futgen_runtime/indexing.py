"""Futhark core indexing on shapes: bounds checks, messages and strided views.

Both backends check an index on the host before touching data: `resolve`
turns an index (ints and `(start, num, stride)` slice triples) into the
element offset, result shape and element strides of the selected region,
or raises `FutharkError` with Futhark's message.  The CPU backend applies
that to a NumPy array with `as_strided`; the CUDA backend passes it to one
gather/scatter kernel.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .errors import FutharkError

Slice = tuple[int, int, int]  # (start, num, stride): Futhark core slice semantics
Index = Sequence["int | Slice"]


@dataclass(frozen=True, slots=True)
class Region:
    """The elements `x[idx]` selects: `offset` and `strides` in elements."""

    offset: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n


def shape_text(shape: Sequence[int]) -> str:
    """`[5][3]`: a shape as Futhark prints it in error messages."""
    return "".join(f"[{n}]" for n in shape)


def _index_text(i: int | Slice) -> str:
    """One index as written in source: `7`, `1:3` or `0:6:2` (end = start + num*stride)."""
    if isinstance(i, tuple):
        start, num, stride = i
        end = start + num * stride
        return f"{start}:{end}" if stride == 1 else f"{start}:{end}:{stride}"
    return str(i)


def oob_message(idx: Index, shape: Sequence[int]) -> str:
    """Futhark's message: `Index [7] out of bounds for array of shape [5].`"""
    return (f"Index [{', '.join(_index_text(i) for i in idx)}] out of bounds for array of "
            f"shape {shape_text(shape)}.")


def c_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """Row-major strides, in elements, of `shape`."""
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= n
    return tuple(reversed(strides))


def _normalise(i: object) -> int | Slice:
    """An index item as a Python int or a triple of Python ints."""
    if isinstance(i, tuple):
        if len(i) != 3:
            raise ValueError(f"a slice index must be (start, num, stride), got {i!r}")
        return (int(i[0]), int(i[1]), int(i[2]))
    return int(i)  # type: ignore[call-overload]


def resolve(shape: Sequence[int], idx: Index, loc: object = None) -> Region:
    """Check `idx` against `shape` (row-major) and give the region it selects.

    Dimensions beyond `idx` are taken whole.  A slice `(start, num, stride)`
    is in bounds when `num >= 0` and, if `num > 0`, its first and last
    elements are; a fixed index `i` when `0 <= i < n`.
    """
    items = [_normalise(i) for i in idx]
    shape = tuple(int(n) for n in shape)
    if len(items) > len(shape):
        raise FutharkError(oob_message(items, shape), loc)
    strides = c_strides(shape)
    offset, out_shape, out_strides = 0, [], []
    for i, n, st in zip(items, shape, strides):
        if isinstance(i, tuple):
            start, num, stride = i
            last = start + (num - 1) * stride
            if num < 0 or (num > 0 and not (0 <= start < n and 0 <= last < n)):
                raise FutharkError(oob_message(items, shape), loc)
            offset += start * st if num > 0 else 0
            out_shape.append(num)
            out_strides.append(stride * st)
        else:
            if not 0 <= i < n:
                raise FutharkError(oob_message(items, shape), loc)
            offset += i * st
    out_shape.extend(shape[len(items):])
    out_strides.extend(strides[len(items):])
    return Region(offset, tuple(out_shape), tuple(out_strides))


def all_fixed(idx: Index, rank: int) -> bool:
    """Whether `idx` fixes every one of `rank` dimensions (the result is a scalar)."""
    return len(idx) == rank and not any(isinstance(i, tuple) for i in idx)
