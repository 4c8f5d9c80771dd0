"""Run-time values of the reference interpreter and generic array helpers.

Representation:
  * primitives: NumPy scalars of the exact dtype (np.int32, np.float16, ...);
  * arrays of primitives: np.ndarray;
  * tuples: Python tuples; records: dicts (field -> value);
  * arrays of tuples/records: `StructArray` (structure of arrays);
  * functions: `futgen.interp.interpreter.FunVal` objects.

The helpers below (index, slice, concat, stack, empty, copy ...) treat
ndarray and StructArray alike, so the rest of the interpreter never needs
to special-case arrays of tuples.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from futgen.frontend import types as T

Value = Any


@dataclass
class StructArray:
    """An array of tuples or records stored as one array per component.

    `shape` holds the outer dimensions (the array's rank is `len(shape)`);
    `fields` is a tuple or dict whose entries represent `[shape]component`,
    i.e. every leaf ndarray carries the outer dims in front.  Keeping the
    shape explicitly makes arrays of `()` and of empty records work.
    """

    shape: tuple[int, ...]
    fields: tuple | dict

    @property
    def rank(self) -> int:
        return len(self.shape)

    def map_fields(self, fn: Callable[[Value], Value], shape: tuple[int, ...]) -> StructArray:
        """A StructArray with `fn` applied to every component."""
        if isinstance(self.fields, dict):
            return StructArray(shape, {k: fn(v) for k, v in self.fields.items()})
        return StructArray(shape, tuple(fn(v) for v in self.fields))

    def __len__(self) -> int:
        return self.shape[0]


def is_array(v: Value) -> bool:
    return isinstance(v, (np.ndarray, StructArray))


def shape_of(v: Value) -> tuple[int, ...]:
    """The outer shape of an array value (all dims for ndarray)."""
    return tuple(v.shape)


def length(v: Value) -> int:
    return v.shape[0]


def fields_of(v: tuple | dict) -> list[Value]:
    return list(v.values()) if isinstance(v, dict) else list(v)


def rebuild(template: tuple | dict, vals: Sequence[Value]) -> tuple | dict:
    """A tuple or dict like `template` with components `vals` (same order)."""
    if isinstance(template, dict):
        return dict(zip(template.keys(), vals))
    return tuple(vals)


def _key_shape(shape: tuple[int, ...], key: tuple) -> tuple[int, ...]:
    """The outer shape after applying a NumPy basic/advanced key to `shape`."""
    return np.empty(shape + (0,), dtype=np.int8)[key].shape[:-1]


def apply_key(v: Value, key: tuple) -> Value:
    """`v[key]` for ndarray or StructArray; key indexes leading dims only.

    Fixed (integer) indices drop dimensions; a StructArray indexed down to
    rank 0 becomes a plain tuple/dict of components.
    """
    if isinstance(v, np.ndarray):
        r = v[key]
        return r
    shape = _key_shape(v.shape, key)
    comps = [apply_key(f, key) for f in fields_of(v.fields)]
    if not shape and all(not isinstance(k, np.ndarray) for k in key) and \
            _drops_all(v.rank, key):
        return rebuild(v.fields, comps)
    return StructArray(shape, rebuild(v.fields, comps))


def _drops_all(rank: int, key: tuple) -> bool:
    return sum(1 for k in key if not isinstance(k, slice)) == rank


def index(v: Value, i: int) -> Value:
    """Element `i` of an array (no bounds check)."""
    return apply_key(v, (i,))


def rows(v: Value) -> list[Value]:
    """All rows of an array as a list of values."""
    if isinstance(v, np.ndarray):
        return list(v)
    return [index(v, i) for i in range(length(v))]


def copy(v: Value) -> Value:
    """A deep copy: arrays get fresh storage (so in-place updates are safe)."""
    if isinstance(v, np.ndarray):
        return v.copy()
    if isinstance(v, StructArray):
        return v.map_fields(copy, v.shape)
    if isinstance(v, tuple):
        return tuple(copy(x) for x in v)
    if isinstance(v, dict):
        return {k: copy(x) for k, x in v.items()}
    return v


def concat(vs: Sequence[Value]) -> Value:
    """Concatenate arrays along the outer dimension."""
    first = vs[0]
    if isinstance(first, np.ndarray):
        return np.concatenate(vs)
    n = sum(length(x) for x in vs)
    comps = [concat([fields_of(x.fields)[j] for x in vs])
             for j in range(len(fields_of(first.fields)))]
    return StructArray((n,) + first.shape[1:], rebuild(first.fields, comps))


def stack(elems: Sequence[Value], elem_type: T.Type | None = None,
          size_of: Callable[[T.Dim], int] | None = None) -> Value:
    """The array whose rows are `elems`; `elem_type` is needed when empty."""
    if not elems:
        if elem_type is None or _has_typevar(elem_type):
            # The checker left the element type open: nothing better to go on.
            return np.zeros(0)
        return empty(T.array_of(elem_type, (T.SizeConst(0),)), size_of)
    first = elems[0]
    if isinstance(first, tuple | dict):
        n = len(elems)
        comps = [stack([fields_of(e)[j] for e in elems],
                       _component_type(elem_type, first, j), size_of)
                 for j in range(len(fields_of(first)))]
        return StructArray((n,), rebuild(first, comps))
    if isinstance(first, StructArray):
        n = len(elems)
        comps = [stack([fields_of(e.fields)[j] for e in elems])
                 for j in range(len(fields_of(first.fields)))]
        return StructArray((n,) + first.shape, rebuild(first.fields, comps))
    if isinstance(first, np.ndarray):
        return np.stack(elems)
    return np.array(elems, dtype=np.asarray(first).dtype)


def _has_typevar(t: T.Type) -> bool:
    if isinstance(t, T.TypeVar | T.Arrow):
        return True
    if isinstance(t, T.Array):
        return _has_typevar(t.elem)
    if isinstance(t, T.Tuple):
        return any(_has_typevar(e) for e in t.elems)
    if isinstance(t, T.Record):
        return any(_has_typevar(e) for _, e in t.fields)
    return False


def _component_type(t: T.Type | None, template: tuple | dict, j: int) -> T.Type | None:
    if isinstance(t, T.Tuple):
        return t.elems[j]
    if isinstance(t, T.Record):
        if isinstance(template, dict):
            return t.field(list(template.keys())[j])
        return t.fields[j][1]
    return None


def size_or_zero(d: T.Dim, size_of: Callable[[T.Dim], int] | None) -> int:
    if isinstance(d, T.SizeConst):
        return d.value
    if size_of is not None:
        return size_of(d)
    return 0


def empty(t: T.Type, size_of: Callable[[T.Dim], int] | None = None) -> Value:
    """A zero-filled value of type `t`; array dims come from `size_of`.

    Used for empty arrays (whose inner shape and dtype still matter) and
    for the neutral blanks of reductions.
    """
    if isinstance(t, T.Scalar):
        return t.dtype.type(0)
    if isinstance(t, T.Array):
        shape = tuple(size_or_zero(d, size_of) for d in t.shape)
        return _empty_array(t.elem, shape, size_of)
    if isinstance(t, T.Tuple):
        return tuple(empty(e, size_of) for e in t.elems)
    if isinstance(t, T.Record):
        if T.is_tuple_record(t.fields):
            return tuple(empty(e, size_of) for _, e in sorted(t.fields, key=lambda f: int(f[0])))
        return {f: empty(e, size_of) for f, e in t.fields}
    raise TypeError(f"no value of type {t}")


def _empty_array(elem: T.Type, shape: tuple[int, ...], size_of: Any) -> Value:
    if isinstance(elem, T.Scalar):
        return np.zeros(shape, dtype=elem.dtype)
    if isinstance(elem, T.Array):
        inner = tuple(size_or_zero(d, size_of) for d in elem.shape)
        return _empty_array(elem.elem, shape + inner, size_of)
    if isinstance(elem, T.Tuple):
        return StructArray(shape, tuple(_empty_array_of(e, shape, size_of) for e in elem.elems))
    if isinstance(elem, T.Record):
        if T.is_tuple_record(elem.fields):
            es = [e for _, e in sorted(elem.fields, key=lambda f: int(f[0]))]
            return StructArray(shape, tuple(_empty_array_of(e, shape, size_of) for e in es))
        return StructArray(shape, {f: _empty_array_of(e, shape, size_of) for f, e in elem.fields})
    raise TypeError(f"no array of {elem}")


def _empty_array_of(e: T.Type, shape: tuple[int, ...], size_of: Any) -> Value:
    if isinstance(e, T.Array):
        inner = tuple(size_or_zero(d, size_of) for d in e.shape)
        return _empty_array(e.elem, shape + inner, size_of)
    return _empty_array(e, shape, size_of)


def replicate(n: int, v: Value) -> Value:
    """`n` copies of `v` as an array (fresh storage)."""
    if isinstance(v, tuple | dict):
        comps = [replicate(n, c) for c in fields_of(v)]
        return StructArray((n,), rebuild(v, comps))
    if isinstance(v, StructArray):
        return v.map_fields(lambda f: replicate(n, f), (n,) + v.shape)
    a = np.asarray(v)
    return np.broadcast_to(a, (n,) + a.shape).copy()


def transpose(v: Value) -> Value:
    if isinstance(v, np.ndarray):
        return np.swapaxes(v, 0, 1)
    return v.map_fields(transpose, (v.shape[1], v.shape[0]) + v.shape[2:])


def reshape_outer(v: Value, dims: tuple[int, ...], ndrop: int) -> Value:
    """Replace the first `ndrop` outer dims of `v` by `dims` (flatten/unflatten)."""
    if isinstance(v, np.ndarray):
        return v.reshape(dims + v.shape[ndrop:])
    return v.map_fields(lambda f: reshape_outer(f, dims, ndrop), dims + v.shape[ndrop:])


def reverse(v: Value) -> Value:
    return apply_key(v, (slice(None, None, -1),))


def roll(v: Value, r: int) -> Value:
    """`rotate r`: element i of the result is element (i + r) mod n."""
    if isinstance(v, np.ndarray):
        return np.roll(v, -r, axis=0)
    return v.map_fields(lambda f: roll(f, r), v.shape)


def where(mask: np.ndarray, a: Value, b: Value) -> Value:
    """Elementwise select along the outer dim between two arrays of equal shape."""
    if isinstance(a, np.ndarray):
        m = mask.reshape(mask.shape + (1,) * (a.ndim - mask.ndim))
        return np.where(m, a, b)
    comps = [where(mask, x, y) for x, y in zip(fields_of(a.fields), fields_of(b.fields))]
    return StructArray(a.shape, rebuild(a.fields, comps))


def leaves(v: Value) -> list[np.ndarray]:
    """All ndarrays inside a value."""
    if isinstance(v, np.ndarray):
        return [v]
    if isinstance(v, StructArray):
        return [x for f in fields_of(v.fields) for x in leaves(f)]
    if isinstance(v, tuple | dict):
        return [x for f in fields_of(v) for x in leaves(f)]
    return []


def equal(a: Value, b: Value) -> bool:
    """Structural equality of two values (`==` on non-primitive types)."""
    if isinstance(a, np.ndarray):
        return a.shape == b.shape and bool(np.all(a == b))
    if isinstance(a, StructArray):
        return a.shape == b.shape and all(
            equal(x, y) for x, y in zip(fields_of(a.fields), fields_of(b.fields)))
    if isinstance(a, tuple | dict):
        return all(equal(x, y) for x, y in zip(fields_of(a), fields_of(b)))
    return bool(a == b)


# --------------------------------------------------------- typing of values


def type_string(v: Value) -> str:
    """The Futhark type of a value, with anonymous sizes, for messages."""
    if isinstance(v, np.ndarray):
        return "[]" * v.ndim + T.DTYPE_PRIMS.get(v.dtype, str(v.dtype))
    if isinstance(v, StructArray):
        return "[]" * v.rank + type_string(index_all(v))
    if isinstance(v, tuple):
        return "(" + ", ".join(type_string(x) for x in v) + ")"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {type_string(x)}" for k, x in sorted(v.items())) + "}"
    if isinstance(v, np.generic):
        return T.DTYPE_PRIMS.get(v.dtype, str(v.dtype))
    return type(v).__name__


def shape_signature(v: Value) -> Any:
    """Every array shape inside `v` (through tuples and records): values of
    one type fit in one array exactly when their signatures are equal."""
    if isinstance(v, np.ndarray):
        return v.shape
    if isinstance(v, StructArray):
        return (v.shape, shape_signature(index_all(v)))
    if isinstance(v, tuple | dict):
        return tuple(shape_signature(x) for x in fields_of(v))
    return ()


def index_all(v: StructArray) -> Value:
    """A representative element type holder: the components with outer dims dropped."""
    comps = []
    for f in fields_of(v.fields):
        if isinstance(f, np.ndarray):
            comps.append(np.zeros(f.shape[v.rank:], f.dtype) if f.ndim > v.rank
                         else f.dtype.type(0))
        else:
            comps.append(StructArray(f.shape[v.rank:], f.fields)
                         if f.rank > v.rank else index_all(f))
    return rebuild(v.fields, comps)


def matches_type(v: Value, t: T.Type) -> bool:
    """Whether value `v` has type `t` up to sizes (dtype, rank, structure)."""
    if isinstance(t, T.Scalar):
        return isinstance(v, np.generic) and v.dtype == t.dtype
    if isinstance(t, T.Array):
        if isinstance(t.elem, T.Scalar):
            return isinstance(v, np.ndarray) and v.ndim == len(t.shape) and v.dtype == t.elem.dtype
        return isinstance(v, StructArray) and v.rank == len(t.shape) and \
            matches_type(index_all(v), t.elem)
    if isinstance(t, T.Tuple):
        return isinstance(v, tuple) and len(v) == len(t.elems) and all(
            matches_type(x, e) for x, e in zip(v, t.elems))
    if isinstance(t, T.Record):
        if T.is_tuple_record(t.fields) and isinstance(v, tuple):
            es = [e for _, e in sorted(t.fields, key=lambda f: int(f[0]))]
            return len(v) == len(es) and all(matches_type(x, e) for x, e in zip(v, es))
        return isinstance(v, dict) and sorted(v) == [f for f, _ in t.fields] and all(
            matches_type(v[f], e) for f, e in t.fields)
    return True


def type_str(t: T.Type) -> str:
    """A type with sizes dropped (`[]f32`), as used in DataError messages."""
    if isinstance(t, T.Array):
        return "[]" * len(t.shape) + type_str(t.elem)
    if isinstance(t, T.Tuple):
        return "(" + ", ".join(type_str(e) for e in t.elems) + ")"
    if isinstance(t, T.Record):
        return "{" + ", ".join(f"{f}: {type_str(e)}" for f, e in t.fields) + "}"
    return str(t)


def scatter_targets(dest: Value, idxs: list[np.ndarray], vs: Value) -> tuple:
    """What `scatter`/`reduce_by_index` write: (dest, index tuples, values).

    Out-of-bounds index tuples are dropped (Futhark ignores those writes), and
    `dest` is copied first if it is a read-only view, so it can be written.
    """
    shape = shape_of(dest)
    ok = np.ones(length(vs), dtype=bool)
    for i, n in zip(idxs, shape):
        ok &= (i >= 0) & (i < n)
    sel = np.nonzero(ok)[0]
    key = tuple(np.asarray(i)[sel] for i in idxs)
    vals = apply_key(vs, (sel,))
    if any(not leaf.flags.writeable for leaf in leaves(dest)):
        dest = copy(dest)
    return dest, key, vals
