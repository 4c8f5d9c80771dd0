"""Type signatures of the built-in (prelude) functions.

Each entry maps a name, possibly qualified by a numeric module (`f32.sqrt`),
to a Futhark function header: type and size parameters, named parameters and
the return type, exactly as one would write after `def name`.  The type
checker parses these with the ordinary parser; the interpreter implements
every name listed here (`futgen.interp.builtins`), which a test checks.

The overloaded operators (`+`, `==`, ...) are not listed: the type checker
handles them directly, since they range over all numeric types.
"""

from __future__ import annotations

import re

from futgen.frontend.types import FLOATS, INTS, PRIMS

# The differentiation operators: a transformation of the core IR
# (`futgen.core.ad`), so the interpreter does not run them.
DIFFERENTIATION = ("jvp", "jvp2", "vjp", "vjp2", "jmp", "jmp2", "mjp", "mjp2")

# name -> header.  `n`, `m`, ... are sizes; `'t` etc. type parameters.
GENERIC: dict[str, str] = {
    "map": "'a [n] 'x (f: a -> x) (as: [n]a) : *[n]x",
    "map1": "'a [n] 'x (f: a -> x) (as: [n]a) : *[n]x",
    "map2": "'a 'b [n] 'x (f: a -> b -> x) (as: [n]a) (bs: [n]b) : *[n]x",
    "map3": "'a 'b 'c [n] 'x (f: a -> b -> c -> x) (as: [n]a) (bs: [n]b) (cs: [n]c) : *[n]x",
    "map4": "'a 'b 'c 'd [n] 'x (f: a -> b -> c -> d -> x) (as: [n]a) (bs: [n]b) (cs: [n]c)"
    " (ds: [n]d) : *[n]x",
    "map5": "'a 'b 'c 'd 'e [n] 'x (f: a -> b -> c -> d -> e -> x) (as: [n]a) (bs: [n]b)"
    " (cs: [n]c) (ds: [n]d) (es: [n]e) : *[n]x",
    "reduce": "[n] 'a (op: a -> a -> a) (ne: a) (as: [n]a) : a",
    "reduce_comm": "[n] 'a (op: a -> a -> a) (ne: a) (as: [n]a) : a",
    "scan": "[n] 'a (op: a -> a -> a) (ne: a) (as: [n]a) : *[n]a",
    "exscan": "[n] 'a (op: a -> a -> a) (ne: a) (as: [n]a) : *[n]a",
    "filter": "[n] 'a (p: a -> bool) (as: [n]a) : *[]a",
    "partition": "[n] 'a (p: a -> bool) (as: [n]a) : ([]a, []a)",
    "flatmap": "[n] 'a 'b 'c (f: a -> ?[k].([k]b, c)) (as: [n]a)"
    " : ?[m].([n]i64, [m]bool, [n]i64, [m]b, [n]c)",
    "flatmap'": "[n] 'a 'b (f: a -> ?[k].[k]b) (as: [n]a) : ?[m].([n]i64, [m]bool, [n]i64, [m]b)",
    "all": "[n] 'a (f: a -> bool) (as: [n]a) : bool",
    "any": "[n] 'a (f: a -> bool) (as: [n]a) : bool",
    "scatter": "'t [k] [n] (dest: *[k]t) (is: [n]i64) (vs: [n]t) : *[k]t",
    "scatter_2d": "'t [k] [m] [l] (dest: *[k][m]t) (is: [l](i64, i64)) (vs: [l]t) : *[k][m]t",
    "scatter_3d": "'t [k] [m] [o] [l] (dest: *[k][m][o]t) (is: [l](i64, i64, i64)) (vs: [l]t)"
    " : *[k][m][o]t",
    "spread": "'t [n] (k: i64) (x: t) (is: [n]i64) (vs: [n]t) : *[k]t",
    "hist": "'a [n] (op: a -> a -> a) (ne: a) (k: i64) (is: [n]i64) (as: [n]a) : *[k]a",
    "reduce_by_index": "'a [k] [n] (dest: *[k]a) (f: a -> a -> a) (ne: a) (is: [n]i64)"
    " (as: [n]a) : *[k]a",
    "reduce_by_index_2d": "'a [k] [n] [m] (dest: *[k][m]a) (f: a -> a -> a) (ne: a)"
    " (is: [n](i64, i64)) (as: [n]a) : *[k][m]a",
    "reduce_by_index_3d": "'a [k] [n] [m] [l] (dest: *[k][m][l]a) (f: a -> a -> a) (ne: a)"
    " (is: [n](i64, i64, i64)) (as: [n]a) : *[k][m][l]a",
    "iota": "(n: i64) : *[n]i64",
    "indices": "[n] 't (xs: [n]t) : *[n]i64",
    "replicate": "'t (n: i64) (x: t) : *[n]t",
    "tabulate": "'a (n: i64) (f: i64 -> a) : *[n]a",
    "tabulate_2d": "'a (n: i64) (m: i64) (f: i64 -> i64 -> a) : *[n][m]a",
    "tabulate_3d": "'a (n: i64) (m: i64) (o: i64) (f: i64 -> i64 -> i64 -> a) : *[n][m][o]a",
    "zip": "[n] 'a 'b (as: [n]a) (bs: [n]b) : *[n](a, b)",
    "zip2": "[n] 'a 'b (as: [n]a) (bs: [n]b) : *[n](a, b)",
    "zip3": "[n] 'a 'b 'c (as: [n]a) (bs: [n]b) (cs: [n]c) : *[n](a, b, c)",
    "zip4": "[n] 'a 'b 'c 'd (as: [n]a) (bs: [n]b) (cs: [n]c) (ds: [n]d) : *[n](a, b, c, d)",
    "zip5": "[n] 'a 'b 'c 'd 'e (as: [n]a) (bs: [n]b) (cs: [n]c) (ds: [n]d) (es: [n]e)"
    " : *[n](a, b, c, d, e)",
    "unzip": "[n] 'a 'b (xs: [n](a, b)) : ([n]a, [n]b)",
    "unzip2": "[n] 'a 'b (xs: [n](a, b)) : ([n]a, [n]b)",
    "unzip3": "[n] 'a 'b 'c (xs: [n](a, b, c)) : ([n]a, [n]b, [n]c)",
    "unzip4": "[n] 'a 'b 'c 'd (xs: [n](a, b, c, d)) : ([n]a, [n]b, [n]c, [n]d)",
    "unzip5": "[n] 'a 'b 'c 'd 'e (xs: [n](a, b, c, d, e)) : ([n]a, [n]b, [n]c, [n]d, [n]e)",
    "transpose": "[n] [m] 't (a: [n][m]t) : [m][n]t",
    "flatten": "[n] [m] 't (xs: [n][m]t) : [n * m]t",
    "flatten_3d": "[n] [m] [l] 't (xs: [n][m][l]t) : [n * m * l]t",
    "flatten_4d": "[n] [m] [l] [k] 't (xs: [n][m][l][k]t) : [n * m * l * k]t",
    "unflatten": "'t [n] [m] (xs: [n * m]t) : [n][m]t",
    "unflatten_3d": "'t [n] [m] [l] (xs: [n * m * l]t) : [n][m][l]t",
    "unflatten_4d": "'t [n] [m] [l] [k] (xs: [n * m * l * k]t) : [n][m][l][k]t",
    "concat": "[n] [m] 't (xs: [n]t) (ys: [m]t) : *[n + m]t",
    "rotate": "[n] 't (r: i64) (a: [n]t) : [n]t",
    "reverse": "[n] 't (x: [n]t) : [n]t",
    "length": "[n] 't (x: [n]t) : i64",
    "null": "[n] 't (x: [n]t) : bool",
    "copy": "'t (a: t) : *t",
    "manifest": "'t (a: t) : *t",
    # Automatic differentiation (DIFFERENTIATION: compiled backends only).
    "jvp": "'a 'b (f: a -> b) (x: a) (dx: a) : b",
    "jvp2": "'a 'b (f: a -> b) (x: a) (dx: a) : (b, b)",
    "vjp": "'a 'b (f: a -> b) (x: a) (ybar: b) : a",
    "vjp2": "'a 'b (f: a -> b) (x: a) (ybar: b) : (b, a)",
    "jmp": "'a 'b [n] (f: a -> b) (x: a) (dxs: [n]a) : [n]b",
    "jmp2": "'a 'b [n] (f: a -> b) (x: a) (dxs: [n]a) : (b, [n]b)",
    "mjp": "'a 'b [n] (f: a -> b) (x: a) (ybars: [n]b) : [n]a",
    "mjp2": "'a 'b [n] (f: a -> b) (x: a) (ybars: [n]b) : (b, [n]a)",
    "with_vjp": "'a 'b (f: a -> b) (df: b -> b -> a) (x: a) : b",
    "head": "[n] 't (x: [n]t) : t",
    "last": "[n] 't (x: [n]t) : t",
    "tail": "[n] 't (x: [n]t) : [n - 1]t",
    "init": "[n] 't (x: [n]t) : [n - 1]t",
    "take": "[n] 't (i: i64) (x: [n]t) : [i]t",
    "drop": "[n] 't (i: i64) (x: [n]t) : [n - i]t",
    "split": "[n] [m] 't (xs: [n + m]t) : ([n]t, [m]t)",
    "sized": "[m] 't (n: i64) (xs: [m]t) : [n]t",
    "foldl": "[n] 'a 'b (f: a -> b -> a) (acc: a) (bs: [n]b) : a",
    "foldr": "[n] 'a 'b (f: b -> a -> a) (acc: a) (bs: [n]b) : a",
    "and": "[n] (xs: [n]bool) : bool",
    "or": "[n] (xs: [n]bool) : bool",
    "iterate": "'a (n: i32) (f: a -> a) (x: a) : a",
    "iterate_while": "'a (p: a -> bool) (f: a -> a) (x: a) : a",
    "iterate_until": "'a (p: a -> bool) (f: a -> a) (x: a) : a",
    ">->": "'^a '^b '^c (f: a -> b) (g: b -> c) (x: a) : c",
    "<-<": "'^a '^b '^c (g: b -> c) (f: a -> b) (x: a) : c",
    "rep": "'t [n] (x: t) : *[n]t",
    "partition2": "[n] 'a (p1: a -> bool) (p2: a -> bool) (as: [n]a) : ([]a, []a, []a)",
    "flip": "'^a '^b '^c (f: a -> b -> c) (b: b) (a: a) : c",
    "curry": "'^a '^b '^c (f: (a, b) -> c) (a: a) (b: b) : c",
    "uncurry": "'^a '^b '^c (f: a -> b -> c) (p: (a, b)) : c",
    "const": "'^a '^b (x: a) (y: b) : a",
    "id": "'^a (x: a) : a",
    # Syntax in Futhark (`assert c e`), for a value of any type, functions too.
    "assert": "'^t (c: bool) (x: t) : t",
    "opaque": "'t (x: t) : t",
    "trace": "'t (x: t) : t",
    "not": "(x: bool) : bool",
    "r32": "(x: i32) : f32",
    "t32": "(x: f32) : i32",
    "r64": "(x: i32) : f64",
    "t64": "(x: f64) : i32",
}

# Functions every numeric module t has (besides conversions and operators).
_NUMERIC = {
    "neg": "(x: t) : t",
    "max": "(x: t) (y: t) : t",
    "min": "(x: t) (y: t) : t",
    "abs": "(x: t) : t",
    "sgn": "(x: t) : t",
    "highest": ": t",
    "lowest": ": t",
    "sum": "[n] (xs: [n]t) : t",
    "product": "[n] (xs: [n]t) : t",
    "maximum": "[n] (xs: [n]t) : t",
    "minimum": "[n] (xs: [n]t) : t",
    "to_i64": "(x: t) : i64",
    "num_bits": ": i32",
    "get_bit": "(i: i32) (x: t) : i32",
    "set_bit": "(i: i32) (x: t) (b: i32) : t",
}
_INTEGRAL = {
    "not": "(x: t) : t",
    "popc": "(x: t) : i32",
    "clz": "(x: t) : i32",
    "ctz": "(x: t) : i32",
    "mul_hi": "(x: t) (y: t) : t",
    "mad_hi": "(a: t) (b: t) (c: t) : t",
}
_UNARY_REAL = [
    "recip",
    "sqrt",
    "rsqrt",
    "cbrt",
    "exp",
    "sin",
    "cos",
    "tan",
    "sinpi",
    "cospi",
    "tanpi",
    "asin",
    "acos",
    "atan",
    "asinpi",
    "acospi",
    "atanpi",
    "sinh",
    "cosh",
    "tanh",
    "asinh",
    "acosh",
    "atanh",
    "gamma",
    "lgamma",
    "erf",
    "erfc",
    "log",
    "log2",
    "log10",
    "log1p",
    "ceil",
    "floor",
    "trunc",
    "round",
]
_REAL = {
    **{f: "(x: t) : t" for f in _UNARY_REAL},
    "from_fraction": "(x: i64) (y: i64) : t",
    "to_f64": "(x: t) : f64",
    "atan2": "(x: t) (y: t) : t",
    "atan2pi": "(x: t) (y: t) : t",
    "hypot": "(x: t) (y: t) : t",
    "lerp": "(v0: t) (v1: t) (t: t) : t",
    "mad": "(a: t) (b: t) (c: t) : t",
    "fma": "(a: t) (b: t) (c: t) : t",
    "isinf": "(x: t) : bool",
    "isnan": "(x: t) : bool",
    "inf": ": t",
    "nan": ": t",
    "pi": ": t",
    "e": ": t",
    "epsilon": ": t",
    "nextafter": "(x: t) (y: t) : t",
    "ldexp": "(x: t) (e: i32) : t",
    "copysign": "(x: t) (y: t) : t",
    "from_bits": "(x: int_t) : t",
    "to_bits": "(x: t) : int_t",
}
# The operators a numeric module exports as functions, e.g. `(f32.+)`.
NUMERIC_OPS = ("+", "-", "*", "/", "%", "**", "==", "!=", "<", ">", "<=", ">=")
INTEGRAL_OPS = ("//", "%%", "&", "|", "^", "<<", ">>", ">>>")
_BITS_OF_FLOAT = {"f16": "u16", "f32": "u32", "f64": "u64"}


def _module(t: str) -> dict[str, str]:
    """The signatures of numeric module `t`, with `t` substituted."""
    sigs: dict[str, str] = {p: f"(x: {p}) : t" for p in PRIMS}
    if t != "bool":
        sigs.update(_NUMERIC)
        if t in INTS:
            sigs.update(_INTEGRAL)
        else:
            sigs.update(_REAL)
        ops = NUMERIC_OPS + (INTEGRAL_OPS if t in INTS else ())
        for op in ops:
            result = "bool" if op in ("==", "!=", "<", ">", "<=", ">=") else "t"
            sigs[op] = f"(x: t) (y: t) : {result}"
    int_t = _BITS_OF_FLOAT.get(t, t)
    return {f"{t}.{name}": _subst_t(sig, t, int_t) for name, sig in sigs.items()}


def _subst_t(sig: str, t: str, int_t: str) -> str:
    sig = re.sub(r"\bint_t\b", int_t, sig)
    return re.sub(r"(?<![\w'])t\b(?!\s*:)", t, sig)


def all_signatures() -> dict[str, str]:
    """Every built-in name (qualified for module members) and its header."""
    sigs = dict(GENERIC)
    for t in PRIMS:
        sigs.update(_module(t))
    return sigs


NUMERIC_MODULES = PRIMS
SIGNATURES: dict[str, str] = all_signatures()

__all__ = [
    "DIFFERENTIATION",
    "FLOATS",
    "GENERIC",
    "INTEGRAL_OPS",
    "NUMERIC_MODULES",
    "NUMERIC_OPS",
    "SIGNATURES",
]
