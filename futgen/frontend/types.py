"""Semantic types of the supported Futhark subset.

These are what the type checker computes and stores in `Expr.ty`:

    Type ::= Scalar(name)                      i32, f64, bool, ...
           | Array(elem, shape, unique)        [d1]...[dk]elem, elem not an array
           | Tuple(elems)                      (t1, ..., tn); Tuple(()) is unit
           | Record(fields)                    {f1: t1, ...}, fields sorted by name
           | Arrow(param_name, param, ret)     (x: t1) -> t2
           | TypeVar(name)                     a type parameter or inference variable
    Dim  ::= SizeVar(name) | SizeConst(n) | AnySize(id) | SizeProd | SizeExpr(text)

Types are immutable and hashable.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np

# Primitive types and their NumPy representation: one table, in the runtime
# (generated packages carry the runtime, which may not import futgen).
from futgen_runtime.dtypes import (  # noqa: F401  (re-exported)
    DTYPE_PRIMS,
    FLOATS,
    INTS,
    NUMERIC,
    PRIM_DTYPES,
    PRIMS,
    SIGNED_INTS,
    UNSIGNED_INTS,
)


@dataclass(frozen=True, slots=True)
class Scalar:
    name: str

    @property
    def dtype(self) -> np.dtype:
        return PRIM_DTYPES[self.name]

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class SizeVar:
    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class SizeConst:
    value: int

    def __str__(self) -> str:
        return str(self.value)


@dataclass(frozen=True, slots=True)
class AnySize:
    """A size nobody named; two AnySizes are equal only if their ids are."""

    id: int

    def __str__(self) -> str:
        return ""


@dataclass(frozen=True, slots=True)
class SizeProd:
    """A size written as a product, `[n * m]`, kept as written: `n * m * l`
    is `(n * m) * l`, so it matches `(2 * 5) * (n * m)` factor by factor, as
    in Futhark.

    It lets `unflatten` learn `n` and `m` from an argument of type `[n * m]t`.
    Types of expressions keep it (later stages multiply the factors at the
    use); declarations' types hold it as an anonymous size.
    """

    factors: tuple[Dim, ...]

    def __str__(self) -> str:
        left, right = self.factors
        return f"{_operand(left, False)} * {_operand(right, True)}"


def _operand(d: Dim, right: bool) -> str:
    """`d` printed as an operand of `*`."""
    composite = isinstance(d, SizeExpr) or (right and isinstance(d, SizeProd))
    return f"({d})" if composite else str(d)


@dataclass(frozen=True, slots=True)
class SizeExpr:
    """A size written as an integer expression over sizes in scope,
    `replicate ((B + 1) * (B + 1)) 0 |> unflatten : [B + 1][B + 1]i32`, or
    `[intsqrt n * intsqrt n]` (applications of top-level or built-in functions).

    Two are the same size when they are written the same (`text`), as in
    Futhark.  The checker keeps them in the types of expressions, where later
    stages evaluate `expr` (a typed i64 expression) in the scope of the use to
    learn a size a function takes from its result type; declarations' types
    hold them as anonymous sizes.
    """

    text: str
    expr: object = field(compare=False, hash=False)

    def __str__(self) -> str:
        return self.text


Dim = SizeVar | SizeConst | AnySize | SizeProd | SizeExpr


def size_operation(op: str, left: Dim, right: Dim, expr: object) -> Dim:
    """The size `left op right`, written as `expr`: a product for `*`, else a
    size expression whose text puts an operand in parentheses unless it
    binds tighter than `op` or associates with it (`a + b - c`), so that
    the same size written the same way has the same text wherever it is
    read (the type checker, written parameter types), and sizes Futhark
    tells apart differ (`a + (b + c)` is not `a + b + c`)."""
    if op == "*":
        return SizeProd((left, right))
    return SizeExpr(f"{_operand_of(left, op, False)} {op} {_operand_of(right, op, True)}", expr)


def _operand_of(d: Dim, op: str, right: bool) -> str:
    if isinstance(d, SizeProd) and op in ("+", "-"):
        return str(d)
    bare = (op == "+" and not (right and _additive(d))) or (op == "-" and not right)
    return str(d) if bare or not isinstance(d, SizeExpr | SizeProd) else f"({d})"


def _additive(d: Dim) -> bool:
    """Whether `d` is a sum or difference (its expression a `+` or `-`)."""
    return isinstance(d, SizeExpr) and getattr(d.expr, "op", None) in ("+", "-")


def size_names(d: SizeExpr) -> set[str]:
    """The variables a size expression reads: its nodes are binary operators
    (`lhs`, `rhs`), applications of top-level or built-in functions (`fn`,
    `args`: only the arguments count), names and literals (no import of the
    syntax module here, which depends on this one)."""
    def walk(e) -> set[str]:
        if hasattr(e, "lhs"):
            return walk(e.lhs) | walk(e.rhs)
        if hasattr(e, "args"):
            return set().union(*(walk(a) for a in e.args))
        return {e.name} if hasattr(e, "name") else set()
    return walk(d.expr)


def dim_names(d: Dim) -> set[str]:
    """The variables size `d` reads."""
    match d:
        case SizeVar(name):
            return {name}
        case SizeProd(factors):
            return set().union(*(dim_names(f) for f in factors))
        case SizeExpr():
            return size_names(d)
    return set()


# Names of existential sizes (a SizeVar no program can name); the checked
# types later stages see have them as anonymous sizes.
EXISTENTIAL_PREFIX = "ext#"


def written_name(name: str) -> bool:
    """Whether size name `name` is one a program can write: neither an
    inference size (`?...`) nor an existential."""
    return not name.startswith(("?", EXISTENTIAL_PREFIX))


@dataclass(frozen=True, slots=True)
class Array:
    elem: Type  # never an Array
    shape: tuple[Dim, ...]
    unique: bool = False

    def __str__(self) -> str:
        dims = "".join(f"[{d}]" for d in self.shape)
        return ("*" if self.unique else "") + dims + str(self.elem)


@dataclass(frozen=True, slots=True)
class Tuple:
    elems: tuple[Type, ...]

    def __str__(self) -> str:
        return "(" + ", ".join(map(str, self.elems)) + ")"


@dataclass(frozen=True, slots=True)
class Record:
    fields: tuple[tuple[str, Type], ...]  # sorted by field name

    def field(self, name: str) -> Type | None:
        for f, t in self.fields:
            if f == name:
                return t
        return None

    def __str__(self) -> str:
        return "{" + ", ".join(f"{f}: {t}" for f, t in self.fields) + "}"


@dataclass(frozen=True, slots=True)
class Arrow:
    param_name: str | None
    param: Type
    ret: Type

    def __str__(self) -> str:
        p = (
            f"({self.param_name}: {self.param})"
            if self.param_name
            else _arg_str(self.param)
        )
        return f"{p} -> {self.ret}"


@dataclass(frozen=True, slots=True)
class TypeVar:
    name: str

    def __str__(self) -> str:
        return self.name


Type = Scalar | Array | Tuple | Record | Arrow | TypeVar

UNIT = Tuple(())
BOOL = Scalar("bool")
I64 = Scalar("i64")
I32 = Scalar("i32")
F64 = Scalar("f64")


def _arg_str(t: Type) -> str:
    return f"({t})" if isinstance(t, Arrow) else str(t)


def array_of(elem: Type, shape: tuple[Dim, ...], unique: bool = False) -> Type:
    """`[shape]elem`, merging with elem's own dimensions; an empty shape gives elem."""
    if not shape:
        return elem
    if isinstance(elem, Array):
        return Array(elem.elem, shape + elem.shape, unique)
    return Array(elem, shape, unique)


def row_type(t: Array) -> Type:
    """The type of one element of the outermost dimension of `t`."""
    return array_of(t.elem, t.shape[1:])


def rank(t: Type) -> int:
    return len(t.shape) if isinstance(t, Array) else 0


def nonunique(t: Type) -> Type:
    """`t` without the uniqueness attribute at any level."""
    match t:
        case Array(e, s, _):
            return Array(nonunique(e), s, False)
        case Tuple(es):
            return Tuple(tuple(nonunique(e) for e in es))
        case Record(fs):
            return Record(tuple((f, nonunique(x)) for f, x in fs))
        case Arrow(n, p, r):
            return Arrow(n, p, nonunique(r))
    return t


def is_tuple_record(fields: tuple[tuple[str, Type], ...]) -> bool:
    """Whether record fields are exactly 0, 1, ..., n-1 (n >= 2): a tuple."""
    names = sorted(int(f) if f.isdigit() else -1 for f, _ in fields)
    return len(names) >= 2 and names == list(range(len(names)))


def ordered_fields(fields: tuple[tuple[str, Type], ...]) -> list[tuple[str, Type]]:
    """Record fields in representation order (numeric for tuple-like records):
    the order of the values that carry a record in the core IR and in a
    generated package."""
    if is_tuple_record(fields):
        return sorted(fields, key=lambda f: int(f[0]))
    return list(fields)


def with_field_type(t: Type, path: list[str], new: Type) -> Type | None:
    """`t` with the field at `path` (`r.a.b`) of type `new`, or None where
    `t` is not a record or tuple with that field along the path."""
    if not path:
        return new
    f, rest = path[0], path[1:]
    match t:
        case Record(fs) if t.field(f) is not None:
            inner = with_field_type(t.field(f), rest, new)  # type: ignore[arg-type]
            return None if inner is None else Record(
                tuple((g, inner if g == f else x) for g, x in fs))
        case Tuple(es) if f.isdigit() and int(f) < len(es):
            inner = with_field_type(es[int(f)], rest, new)
            return None if inner is None else Tuple(
                tuple(inner if i == int(f) else x for i, x in enumerate(es)))
    return None


def is_unit(t: Type) -> bool:
    """`()` or `{}`: a type with one value."""
    return t in (UNIT, Record(()))


def components(t: Type) -> list[Type] | None:
    """The parts of a tuple, record or array of them (each an array of the
    element's parts), in representation order; None for primitives, arrays
    of primitives, the unit type and arrays of it (one leaf each, so that an
    array of units keeps its shape)."""
    if is_unit(t) or (isinstance(t, Array) and is_unit(t.elem)):
        return None
    match t:
        case Tuple(es):
            return list(es)
        case Record(fs):
            return [x for _, x in ordered_fields(fs)]
        case Array(Tuple() | Record() as e, shape, _):
            return [array_of(c, shape) for c in components(e) or []]
    return None


def map_dims(t: Type, fn: Callable[[Dim], Dim]) -> Type:
    """`t` with `fn` applied to every array dimension."""
    match t:
        case Array(e, shape, uq):
            return array_of(map_dims(e, fn), tuple(fn(d) for d in shape), uq)
        case Tuple(es):
            return Tuple(tuple(map_dims(x, fn) for x in es))
        case Record(fs):
            return Record(tuple((f, map_dims(x, fn)) for f, x in fs))
        case Arrow(n, p, r):
            return Arrow(n, map_dims(p, fn), map_dims(r, fn))
    return t


def type_dims(t: Type) -> Iterator[Dim]:
    """Every array size in `t` (a product as one)."""
    match t:
        case Array(elem, shape, _):
            yield from shape
            yield from type_dims(elem)
        case Tuple(es):
            for x in es:
                yield from type_dims(x)
        case Record(fs):
            for _, x in fs:
                yield from type_dims(x)
        case Arrow(_, p, r):
            yield from type_dims(p)
            yield from type_dims(r)


def type_var_names(t: Type) -> list[str]:
    """The names of the type variables in `t` (as they stand: unresolved ones too), in order."""
    match t:
        case TypeVar(name):
            return [name]
        case Array(elem, _, _):
            return type_var_names(elem)
        case Tuple(es):
            return [v for x in es for v in type_var_names(x)]
        case Record(fs):
            return [v for _, x in fs for v in type_var_names(x)]
        case Arrow(_, p, r):
            return type_var_names(p) + type_var_names(r)
    return []


def size_var_names(t: Type) -> set[str]:
    """The names of the `SizeVar` sizes anywhere in `t`."""
    return {d.name for d in type_dims(t) if isinstance(d, SizeVar)}


def implicit_size_params(t: Type | None) -> tuple[str, ...]:
    """The size parameters the type checker gave a declaration of checked
    type `t` that its text does not name (`def main A = ...` with `A:
    [?n1][?n2]i32`): inference names, which start with '?'."""
    return tuple(sorted(n for n in size_var_names(t) if n.startswith("?"))) if t else ()


def names_in_sizes(t: Type) -> set[str]:
    """The variables the sizes in `t` read (`[n]`, `[n + 1]`), but not those
    of an arrow's result that name its own parameter."""
    match t:
        case Array(e, shape, _):
            return set().union(*(dim_names(d) for d in shape)) | names_in_sizes(e)
        case Tuple(es):
            return set().union(*(names_in_sizes(x) for x in es))
        case Record(fs):
            return set().union(*(names_in_sizes(x) for _, x in fs))
        case Arrow(n, p, r):
            return names_in_sizes(p) | (names_in_sizes(r) - {n})
    return set()


def dim_pairs(t: Type, other: Type) -> Iterator[tuple[Dim, Dim]]:
    """The sizes of `t` and `other` at the same places (where the two have
    the same structure), outer dimensions first."""
    match t, other:
        case Array(e, shape, _), Array(oe, oshape, _) if len(shape) == len(oshape):
            yield from zip(shape, oshape)
            yield from dim_pairs(e, oe)
        case Tuple(es), Tuple(os) if len(es) == len(os):
            for x, y in zip(es, os):
                yield from dim_pairs(x, y)
        case Record(fs), Record(ofs) if len(fs) == len(ofs):
            for (_, x), (_, y) in zip(fs, ofs):
                yield from dim_pairs(x, y)


def substitute(t: Type, tsub: dict[str, Type], ssub: dict[str, Dim]) -> Type:
    """`t` with type variables and sizes replaced (by name); an arrow's
    parameter name shadows a size of that name in its result."""
    match t:
        case TypeVar(n):
            return tsub.get(n, t)
        case Array(e, shape, u):
            dims = tuple(substitute_dim(d, ssub) for d in shape)
            return array_of(substitute(e, tsub, ssub), dims, u)
        case Tuple(es):
            return Tuple(tuple(substitute(x, tsub, ssub) for x in es))
        case Record(fs):
            return Record(tuple((f, substitute(x, tsub, ssub)) for f, x in fs))
        case Arrow(n, p, r):
            inner = {k: v for k, v in ssub.items() if k != n}
            return Arrow(n, substitute(p, tsub, ssub), substitute(r, tsub, inner))
    return t


def substitute_dim(d: Dim, ssub: dict[str, Dim]) -> Dim:
    if isinstance(d, SizeVar):
        return ssub.get(d.name, d)
    if isinstance(d, SizeProd):
        return SizeProd(tuple(substitute_dim(f, ssub) for f in d.factors))
    return d
