"""Entry-point values with structure: tuples, records and arrays of them.

A compiled entry function takes and returns *leaves*: primitives and arrays
of primitives.  A Futhark tuple is a Python tuple of its parts, a record an
instance of a named tuple class the generated module exports (`record_class`),
and an array of tuples or records is stored as a structure of arrays: the
tuple (or record) of the component arrays, every one with the outer
dimensions in front.  A *layout* describes one parameter or result:

    Leaf(prim, dims, type)             f32, [n][m]f32: one leaf
    TupleOf(elems, rank, type)         (i32, f32), or [n](i32, f32) with rank 1
    RecordOf(cls, fields, rank, type)  fields: (futhark name, attribute, layout)
    Unit(dims, type)                   (), [n](): `()`, or a NumPy array of the
                                       empty structured dtype `np.dtype([])`

The compiled function carries a unit, or an array of units, as one bool leaf
(its shape is all it says).

`type` is the Futhark type of the value at that position, for messages.
`convert_args` checks and converts every argument of an entry point
(errors name the path of the part, `p.x`, `t[1]`, and both types) and
checks the sizes; `convert_results` builds the caller's results.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .args import check_sizes, convert_arg, convert_result
from .errors import ArgumentTypeError, ArgumentValueError


@dataclass(frozen=True)
class Leaf:
    """A primitive (no dims) or an array of primitives; `dims` are size
    names, digits for constant sizes, "" for anonymous ones."""

    prim: str
    dims: tuple[str, ...]
    type: str


@dataclass(frozen=True)
class TupleOf:
    """A tuple, or (rank > 0) an array of tuples as a tuple of arrays."""

    elems: tuple[Layout, ...]
    rank: int
    type: str


@dataclass(frozen=True)
class RecordOf:
    """A record, or (rank > 0) an array of records as a record of arrays."""

    cls: type
    fields: tuple[tuple[str, str, Layout], ...]
    rank: int
    type: str


@dataclass(frozen=True)
class Unit:
    """The unit type `()`, or (dims) an array of it."""

    dims: tuple[str, ...]
    type: str


Layout = Leaf | TupleOf | RecordOf | Unit

UNIT_DTYPE = np.dtype([])  # no fields, zero bytes: only the shape is left


@dataclass(frozen=True)
class Param:
    """A parameter of an entry point: its Python name and layout."""

    name: str
    layout: Layout


def record_class(name: str, fields: Sequence[tuple[str, str]], futhark_type: str,
                 module: str) -> type:
    """The named tuple class of a Futhark record type, for the generated
    module; `fields` are (attribute, Futhark field type) pairs."""
    cls = namedtuple(name, [a for a, _ in fields], module=module)
    cls.__doc__ = (f"The Futhark record {futhark_type}.  An array of these records "
                   f"is one {name} whose fields are arrays of equal length.")
    for attr, t in fields:
        getattr(cls, attr).__doc__ = f"{t} (an array of them in an array of records)"
    return cls


# ---------------------------------------------------------------- arguments


@dataclass
class _Where:
    """Where a part of an argument sits, for messages."""

    entry: str
    param: str
    position: int

    def __str__(self) -> str:
        return f"{self.entry}: parameter {self.param} (#{self.position})"


def convert_args(backend: Any, entry: str, params: Sequence[Param],
                 values: Sequence[Any]) -> list[Any]:
    """The leaves of all arguments, checked and converted for the backend,
    after checking that sizes named alike agree."""
    leaves: list[tuple[str, Any]] = []
    bindings: list[tuple[str, str, int, str]] = []
    for k, (p, v) in enumerate(zip(params, values)):
        where = _Where(entry, p.name, k + 1)
        _convert(backend, v, p.layout, where, p.name, leaves, bindings)
    check_sizes(entry, bindings)
    return [x for _, x in leaves]


def _convert(backend: Any, value: Any, layout: Layout, where: _Where, path: str,
             leaves: list[tuple[str, Any]], bindings: list) -> None:
    if isinstance(layout, Leaf | Unit):
        x = _unit_leaf(backend, value, layout, where, path) if isinstance(layout, Unit) else \
            convert_arg(backend, value, entry=where.entry, param=path, position=where.position,
                        prim=layout.prim, rank=len(layout.dims))
        leaves.append((path, x))
        bindings += [(d, path, x.shape[i], layout.type)
                     for i, d in enumerate(layout.dims) if d]
        return
    start = len(leaves)
    if isinstance(layout, TupleOf):
        parts = _tuple_parts(value, layout, where, path)
        for i, (part, elem) in enumerate(zip(parts, layout.elems)):
            _convert(backend, part, elem, where, f"{path}[{i}]", leaves, bindings)
    else:
        parts = _record_parts(value, layout, where, path)
        for part, (fname, _, elem) in zip(parts, layout.fields):
            _convert(backend, part, elem, where, f"{path}.{fname}", leaves, bindings)
    if layout.rank:
        _check_outer_shapes(leaves[start:], layout, where, path)


def _unit_leaf(backend: Any, value: Any, layout: Unit, where: _Where, path: str) -> Any:
    rank = len(layout.dims)
    if rank == 0:
        if not (isinstance(value, tuple) and value == ()):
            raise ArgumentTypeError(f"{_expects(where, path, layout)}, got {value!r}")
        return np.bool_(False)
    if not (isinstance(value, np.ndarray) and value.dtype == UNIT_DTYPE
            and value.ndim == rank):
        raise ArgumentTypeError(f"{_expects(where, path, layout)}, an array of dtype np.dtype([]) "
                                f"and rank {rank}; got {type(value).__name__}")
    return backend.from_host(np.zeros(value.shape, dtype=np.bool_))


def _expects(where: _Where, path: str, layout: Layout) -> str:
    at = "" if path == where.param else f" at {path}"
    return f"{where}{at} expects {layout.type}"


def _tuple_parts(value: Any, layout: TupleOf, where: _Where, path: str) -> tuple:
    n = len(layout.elems)
    what = "a tuple of arrays, one per component" if layout.rank else "a tuple"
    if not isinstance(value, tuple):
        raise ArgumentTypeError(f"{_expects(where, path, layout)} as {what} of {n} values, "
                                f"got a {type(value).__name__}")
    if len(value) != n:
        raise ArgumentTypeError(f"{_expects(where, path, layout)} as {what} of {n} values, "
                                f"got a tuple of {len(value)}")
    return value


def _record_parts(value: Any, layout: RecordOf, where: _Where, path: str) -> list:
    """The fields of a record argument: an instance of the record's class, a
    mapping with exactly the Futhark field names, or any object with the
    fields as attributes (a dataclass, another named tuple)."""
    names = [f for f, _, _ in layout.fields]
    attrs = [a for _, a, _ in layout.fields]
    cls = layout.cls.__name__
    if isinstance(value, layout.cls):
        return list(value)
    if isinstance(value, Mapping):
        keys = set(value)
        if keys == set(names):
            return [value[f] for f in names]
        if keys == set(attrs):
            return [value[a] for a in attrs]
        raise ArgumentTypeError(f"{_expects(where, path, layout)}, got a mapping with keys "
                                f"{sorted(map(str, keys))}, not {names}")
    if not isinstance(value, tuple) and all(hasattr(value, a) for a in attrs):
        return [getattr(value, a) for a in attrs]
    raise ArgumentTypeError(f"{_expects(where, path, layout)}, got a {type(value).__name__}; "
                            f"pass {cls}({', '.join(f'{a}=...' for a in attrs)})")


def _check_outer_shapes(leaves: list[tuple[str, Any]], layout: Layout, where: _Where,
                        path: str) -> None:
    """The component arrays of an array of tuples or records must agree in
    their outer dimensions: they are the columns of one array."""
    if not leaves:
        return
    first_path, first = leaves[0]
    outer = tuple(first.shape[:layout.rank])
    for p, x in leaves[1:]:
        if tuple(x.shape[:layout.rank]) != outer:
            raise ArgumentValueError(
                f"{_expects(where, path, layout)}, one array per component, but they differ "
                f"in their outer dimensions: {first_path} has {list(outer)}, "
                f"{p} has {list(x.shape[:layout.rank])}")


# ---------------------------------------------------------------- results


def convert_results(backend: Any, layouts: Sequence[Layout], leaves: Sequence[Any],
                    device_results: bool) -> Any:
    """The caller's results from the entry function's leaves: one value as
    is, several as a tuple."""
    it = iter(leaves)
    out = [_build(backend, layout, it, device_results) for layout in layouts]
    return out[0] if len(out) == 1 else tuple(out)


def _build(backend: Any, layout: Layout, it: Any, device_results: bool) -> Any:
    if isinstance(layout, Leaf):
        return convert_result(backend, next(it), device_results)
    if isinstance(layout, Unit):
        leaf = next(it)
        return np.empty(leaf.shape, dtype=UNIT_DTYPE) if layout.dims else ()
    if isinstance(layout, TupleOf):
        return tuple(_build(backend, e, it, device_results) for e in layout.elems)
    return layout.cls(*(_build(backend, e, it, device_results) for _, _, e in layout.fields))


__all__ = ["Leaf", "Param", "RecordOf", "TupleOf", "Unit", "convert_args", "convert_results",
           "record_class"]
