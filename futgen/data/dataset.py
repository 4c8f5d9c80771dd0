"""Random values of given types: `futgen dataset`, as `futhark dataset`.

    futgen dataset -g [1024][1024]f32 --i64-bounds=0:1023 -g [100]i64 -s 7 -b

Each `-g` names a type, a primitive or an array of one with constant sizes
(`i64`, `[10][3]f32`), or is itself a value literal (`-g 5i64`, `-g [1,2]`),
which is written as given.  Random elements are uniform within the bounds of
their type (`--T-bounds=MIN:MAX`, inclusive for integers, applying to the
`-g` options after it): by default integers over their whole range and
floats in [0, 1), as Futhark's own generator has it.  Generator k draws from
NumPy's `default_rng(seed + k)` (`-s`, default 1), so a value depends only on
the seed, its position and its type, and whole arrays are drawn at once.
The values use Futhark's data format, text (`--text`, the default) or binary
(`-b`), or their types (`-t`).  With no `-g`, values read on stdin are
written again in the chosen format.  Tuples and records are not supported,
as in Futhark.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np

from futgen.data.values import (
    PRIM_DTYPES,
    Value,
    encode_binary,
    format_value,
    read_values,
)
from futgen.data.values import value_type as _value_type
from futgen.errors import DataError

FORMATS = ("text", "binary", "type")
_TYPE = re.compile(r"((?:\[[^\]]*\])*)([a-z][a-z0-9]*)")


@dataclass(frozen=True)
class ValueType:
    """A primitive type with constant array dimensions: `[10][3]f32`."""

    shape: tuple[int, ...]
    prim: str

    def __str__(self) -> str:
        return "".join(f"[{n}]" for n in self.shape) + self.prim


def parse_type(text: str, what: str = "type") -> ValueType:
    """`[10][3]f32` as a ValueType; DataError naming `what` if it is none."""
    m = _TYPE.fullmatch(text.strip())
    if m is None:
        raise DataError(f"{what} {text!r} is not a type such as i64 or [10][3]f32")
    dims, prim = m.groups()
    if prim not in PRIM_DTYPES:
        known = ", ".join(PRIM_DTYPES)
        raise DataError(f"{what} {text!r}: unknown primitive type {prim!r} (one of {known})")
    shape = []
    for d in re.findall(r"\[([^\]]*)\]", dims):
        if not d.strip().isdigit():
            raise DataError(f"{what} {text!r}: array sizes must be constant integers, "
                            f"not [{d}]")
        shape.append(int(d))
    return ValueType(tuple(shape), prim)


def default_bounds(prim: str) -> tuple[float, float] | None:
    """Futhark's default bounds: the whole range of integers, [0, 1) for floats."""
    dt = PRIM_DTYPES[prim]
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return (int(info.min), int(info.max))
    if dt.kind == "f":
        return (0.0, 1.0)
    return None


def parse_bounds(prim: str, text: str) -> tuple[float, float]:
    """`--i32-bounds=-10:10` -> (-10, 10), checked against the type."""
    lo_text, sep, hi_text = text.partition(":")
    dt = PRIM_DTYPES[prim]
    try:
        if not sep:
            raise ValueError
        conv = int if dt.kind in "iu" else float
        lo, hi = conv(lo_text), conv(hi_text)
    except ValueError:
        raise DataError(f"--{prim}-bounds={text}: expected MIN:MAX, e.g. "
                        f"--{prim}-bounds={'0:9' if dt.kind in 'iu' else '-1.0:1.0'}") from None
    if lo > hi:
        raise DataError(f"--{prim}-bounds={text}: MIN is greater than MAX")
    if dt.kind in "iu":
        info = np.iinfo(dt)
        if lo < info.min or hi > info.max:
            raise DataError(f"--{prim}-bounds={text}: outside the range of {prim} "
                            f"[{info.min}, {info.max}]")
    return lo, hi


def random_value(rng: np.random.Generator, t: ValueType,
                 bounds: tuple[float, float] | None = None) -> Value:
    """A value of type `t` with uniform random elements within `bounds`
    (default: `default_bounds`), drawn in one vectorised call."""
    dt = PRIM_DTYPES[t.prim]
    lo, hi = bounds if bounds is not None else default_bounds(t.prim) or (0, 1)
    if dt.kind == "b":
        a = rng.integers(0, 2, size=t.shape).astype(bool)
    elif dt.kind == "f":
        r = rng.random(size=t.shape)
        a = (r if (lo, hi) == (0.0, 1.0) else lo + (hi - lo) * r).astype(dt)
    else:
        a = rng.integers(lo, hi, size=t.shape, dtype=dt, endpoint=True)
    return a if t.shape else dt.type(a)


@dataclass
class Generator:
    """One `-g`: a type with the bounds in force where it was given, or a
    literal (`values`)."""

    text: str
    type: ValueType | None = None
    bounds: dict[str, tuple[float, float]] = field(default_factory=dict)
    values: list[Value] = field(default_factory=list)
    format: str = "text"


def make_generator(text: str, bounds: dict[str, tuple[float, float]],
                   fmt: str = "text") -> Generator:
    """A generator for `-g TEXT`: a type, else a value literal; DataError
    naming the argument if it is neither."""
    what = f"-g {text}"
    try:
        return Generator(text, parse_type(text, "-g"), dict(bounds), format=fmt)
    except DataError as type_error:
        if not _TYPE.fullmatch(text.strip()):
            try:
                values = read_values(text, what)
            except DataError:
                values = []
            if values:
                return Generator(text, values=values, format=fmt)
        raise type_error from None


def generate(generators: Iterable[Generator], seed: int = 1) -> Iterator[tuple[Value, str]]:
    """(value, output format) for each generator; generator k uses seed + k."""
    for k, g in enumerate(generators):
        if g.type is None:
            for v in g.values:
                yield v, g.format
            continue
        rng = np.random.default_rng(seed + k)
        yield random_value(rng, g.type, g.bounds.get(g.type.prim)), g.format


def encode(v: Value, fmt: str) -> bytes:
    """A value in an output format: text (one line or more), binary, or its type."""
    if fmt == "binary":
        return encode_binary(v)
    if fmt == "type":
        return (_value_type(v) + "\n").encode()
    return (format_value(v) + "\n").encode()
