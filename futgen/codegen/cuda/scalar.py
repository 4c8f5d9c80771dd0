"""Futhark's scalar operations as ImpCode expressions, and the prelude helpers.

The reference semantics are `futgen.interp.prims`; every rule here mirrors
one there.  Integer arithmetic that may overflow goes through unsigned
arithmetic (signed overflow is undefined in C), so the prelude has one
helper per integer type for each operator whose C spelling is not already
Futhark's; they are generated from the snippet table `_INT_HELPERS` (and
`_FLOAT_HELPERS`), not written out per type.  `f16` is computed in `f32` and
rounded back, as Futhark does on devices without half arithmetic.

Division by zero and negative integer exponents are checked by the caller
(`lower.py` emits the failure before calling the helper), so the helpers
assume valid operands.
"""

from __future__ import annotations

import math

from futgen.codegen.cuda.imp import Bin, Call, Cast, Cond, Expr, Lit, Un
from futgen.codegen.plan import CTYPES
from futgen.interp.prims import BITS, UNSIGNED_OF, signed_float_bounds

SIGNED = ("i8", "i16", "i32", "i64")
UNSIGNED = ("u8", "u16", "u32", "u64")
INTS = SIGNED + UNSIGNED
FLOATS = ("f16", "f32", "f64")

# Integer operators that a prelude helper implements (`fut_<name>_<type>`).
_INT_BINOP_HELPERS = {"+": "add", "-": "sub", "*": "mul", "/": "div", "%": "mod",
                      "//": "quot", "%%": "rem", "**": "pow", "<<": "shl", ">>": "ashr",
                      ">>>": "lshr", "max": "max", "min": "min", "mul_hi": "mul_hi"}
_INT_BITWISE = {"&": "&", "|": "|", "^": "^"}
_BOOL_BINOPS = {"&": "&&", "&&": "&&", "|": "||", "||": "||", "^": "!=", "max": "||",
                "min": "&&"}
_CMP = {"==": "==", "!=": "!=", "<": "<", ">": ">", "<=": "<=", ">=": ">="}
_INT_UNOP_HELPERS = {"neg": "neg", "abs": "abs", "sgn": "sgn", "bnot": "bnot",
                     "popc": "popc", "clz": "clz", "ctz": "ctz"}

# Float math: Futhark name -> CUDA double-precision name (f32 adds the `f`).
_MATH = {"sqrt": "sqrt", "rsqrt": "rsqrt", "cbrt": "cbrt", "exp": "exp", "sin": "sin",
         "cos": "cos", "tan": "tan", "sinpi": "sinpi", "cospi": "cospi", "asin": "asin",
         "acos": "acos", "atan": "atan", "sinh": "sinh", "cosh": "cosh", "tanh": "tanh",
         "asinh": "asinh", "acosh": "acosh", "atanh": "atanh", "gamma": "tgamma",
         "lgamma": "lgamma", "erf": "erf", "erfc": "erfc", "log": "log", "log2": "log2",
         "log10": "log10", "log1p": "log1p", "ceil": "ceil", "floor": "floor",
         "trunc": "trunc", "round": "rint", "abs": "fabs", "isnan": "isnan", "isinf": "isinf"}
# Float functions with a prelude helper (`fut_<name>_<type>`).
_FLOAT_UNOP_HELPERS = {"tanpi", "asinpi", "acospi", "atanpi", "sgn", "recip"}


def ctype(prim: str) -> str:
    """The C type of a primitive type."""
    return CTYPES[prim]


def _helper(name: str, prim: str, *args: Expr) -> Call:
    return Call(f"fut_{name}_{prim}", args)


def _f32(prim: str) -> str:
    """The type a float type is computed in (f16 in f32)."""
    return "f32" if prim == "f16" else prim


def _widen(prim: str, x: Expr) -> Expr:
    return Call("__half2float", (x,)) if prim == "f16" else x


def _narrow(prim: str, x: Expr) -> Expr:
    return Call("__float2half", (x,)) if prim == "f16" else x


def _math(name: str, prim: str) -> str:
    base = _MATH[name]
    return base + "f" if prim == "f32" and name not in ("isnan", "isinf") else base


# ------------------------------------------------------------- constants


def constant(value: float | bool, prim: str) -> Expr:
    """A constant of type `prim` as a C literal with exactly that value."""
    if prim == "bool":
        return Lit("true" if value else "false")
    if prim in INTS:
        bits = BITS[prim]
        v = int(value) & ((1 << bits) - 1)
        suffix = "ull" if bits == 64 else "u"
        if prim in SIGNED and v >= 1 << (bits - 1):
            return Cast(ctype(prim), Lit(f"0x{v:x}{suffix}"))
        return Cast(ctype(prim), Lit(f"{v}{suffix}" if prim in UNSIGNED else str(v)))
    return _narrow(prim, _float_literal(float(value), _f32(prim)))


def _float_literal(v: float, prim: str) -> Expr:
    if math.isnan(v) or math.isinf(v):
        if prim == "f32":
            bits = {"nan": 0x7FC00000, "inf": 0x7F800000, "-inf": 0xFF800000}[repr(v)]
            return Call("__int_as_float", (Lit(f"(int)0x{bits:x}u"),))
        bits = {"nan": 0x7FF8000000000000, "inf": 0x7FF0000000000000,
                "-inf": 0xFFF0000000000000}[repr(v)]
        return Call("__longlong_as_double", (Lit(f"(long long)0x{bits:x}ull"),))
    text = repr(v)
    if "e" not in text and "." not in text:
        text += ".0"
    return Lit(text + ("f" if prim == "f32" else ""))


# ------------------------------------------------------------- operators


def binop(op: str, prim: str, x: Expr, y: Expr) -> Expr:
    """`x op y` on `prim` operands (a BinOp of the core IR)."""
    if prim == "bool":
        if op not in _BOOL_BINOPS:
            raise NotImplementedError(f"no CUDA rule for the operator {op} on bool")
        return Bin(_BOOL_BINOPS[op], x, y)
    if prim in INTS:
        if op in _INT_BITWISE:
            return Cast(ctype(prim), Bin(_INT_BITWISE[op], x, y))
        return _helper(_INT_BINOP_HELPERS[op], prim, x, y)
    t = _f32(prim)
    a, b = _widen(prim, x), _widen(prim, y)
    match op:
        case "/" if t == "f32":
            r: Expr = Call(F32_DIVISION, (a, b))
        case "+" | "-" | "*" | "/":
            r = Bin(op, a, b)
        case "%":
            r = _helper("fmod", t, a, b)
        case "**":
            r = Call("powf" if t == "f32" else "pow", (a, b))
        case "max" | "min":
            r = Call(("f" + op) + ("f" if t == "f32" else ""), (a, b))
        case "atan2" | "hypot" | "copysign":
            r = Call(op + ("f" if t == "f32" else ""), (a, b))
        case "ldexp":  # the exponent is an i32 (exact in f32 for an f16)
            r = Call("ldexpf" if t == "f32" else "ldexp", (a, y))
        case "atan2pi":
            r = _helper("atan2pi", t, a, b)
        case "nextafter":  # the neighbour depends on the width: f16 has its own
            return _helper("nextafter", prim, x, y) if prim == "f16" else Call(
                "nextafterf" if t == "f32" else "nextafter", (a, b))
        case _:
            raise NotImplementedError(f"no CUDA rule for the operator {op} on {prim}")
    return _narrow(prim, r)


def cmpop(op: str, prim: str, x: Expr, y: Expr) -> Expr:
    """A comparison; a bool."""
    return Bin(_CMP[op], _widen(prim, x), _widen(prim, y))


def unop(op: str, prim: str, x: Expr) -> Expr:
    """A unary operator or math function (a UnOp of the core IR)."""
    if prim == "bool":
        if op in ("not", "bnot"):
            return Un("!", x)
        raise NotImplementedError(f"no CUDA rule for {op} on bool")
    if prim in INTS and op != "from_bits":
        if op == "not":
            op = "bnot"
        return _helper(_INT_UNOP_HELPERS[op], prim, x)
    t = _f32(prim)
    a = _widen(prim, x)
    if op == "from_bits":
        return {"u16": Call("__ushort_as_half", (x,)),
                "u32": Call("__uint_as_float", (x,)),
                "u64": Call("__longlong_as_double", (Cast("long long", x),))}[prim]
    if op == "to_bits":
        return {"f16": Call("__half_as_ushort", (x,)),
                "f32": Call("__float_as_uint", (x,)),
                "f64": Cast("uint64_t", Call("__double_as_longlong", (x,)))}[prim]
    if op in ("isnan", "isinf"):
        return Call(_math(op, t), (a,))
    if op == "neg":
        return _narrow(prim, Un("-", a))
    if op in _FLOAT_UNOP_HELPERS:
        return _narrow(prim, _helper(op, t, a))
    if op in _MATH:
        return _narrow(prim, Call(_math(op, t), (a,)))
    raise NotImplementedError(f"no CUDA rule for the function {op} on {prim}")


def convert(src: str, dst: str, x: Expr) -> Expr:
    """A ConvOp with `prims.convert`'s rules (see its docstring)."""
    if src == dst:
        return x
    if dst == "bool":
        if src in FLOATS:
            return Bin("!=", _widen(src, x), _float_literal(0.0, _f32(src)))
        return Bin("!=", x, constant(0, src))
    if src == "bool":
        one, zero = constant(1, dst), constant(0, dst)
        return Cond(x, one, zero)
    if src in FLOATS and dst in INTS:
        wide = Cast("double", _widen(src, x))
        if dst == "u64":
            return Call("fut_fptou64", (wide,))
        if dst in SIGNED:
            lo, hi = signed_float_bounds(dst)
            bounds = (_float_literal(lo, "f64"), _float_literal(hi, "f64"))
            return Cast(ctype(dst), Call("fut_fptosi", (wide, *bounds)))
        return Cast(ctype(dst), Call("fut_fptoi64", (wide,)))
    if src in INTS and dst in INTS:
        if src in SIGNED and dst in UNSIGNED:
            return Cast(ctype(dst), Cast(ctype(UNSIGNED_OF[src]), x))
        return Cast(ctype(dst), x)
    if dst == "f16":
        if src in FLOATS:
            return Call("__float2half" if src == "f32" else "__double2half", (x,))
        fn = {"i64": "__ll2half_rn", "u64": "__ull2half_rn"}.get(
            src, "__int2half_rn" if src in SIGNED else "__uint2half_rn")
        return Call(fn, (Cast("long long" if src == "i64" else "unsigned long long"
                              if src == "u64" else "int" if src in SIGNED else "unsigned int",
                              x),))
    return Cast(ctype(dst), _widen(src, x))


# ------------------------------------------------------------- prelude

_INT_HELPERS_ALL = """\
[[maybe_unused]] static __device__ inline {T} fut_add_{t}({T} x, {T} y) {{ return ({T})(({W})({U})x + ({W})({U})y); }}
[[maybe_unused]] static __device__ inline {T} fut_sub_{t}({T} x, {T} y) {{ return ({T})(({W})({U})x - ({W})({U})y); }}
[[maybe_unused]] static __device__ inline {T} fut_mul_{t}({T} x, {T} y) {{ return ({T})(({W})({U})x * ({W})({U})y); }}
[[maybe_unused]] static __device__ inline {T} fut_neg_{t}({T} x) {{ return ({T})(({W})0 - ({W})({U})x); }}
[[maybe_unused]] static __device__ inline {T} fut_bnot_{t}({T} x) {{ return ({T})(~x); }}
[[maybe_unused]] static __device__ inline {T} fut_max_{t}({T} x, {T} y) {{ return x < y ? y : x; }}
[[maybe_unused]] static __device__ inline {T} fut_min_{t}({T} x, {T} y) {{ return x < y ? x : y; }}
[[maybe_unused]] static __device__ inline {T} fut_pow_{t}({T} x, {T} y) {{
  {W} r = 1, b = ({W})({U})x;
  for ({U} e = ({U})y; e != 0; e = ({U})(e >> 1)) {{ if (e & 1) r *= b; b *= b; }}
  return ({T})r;
}}
[[maybe_unused]] static __device__ inline {T} fut_mul_hi_{t}({T} x, {T} y) {{ return {mul_hi}; }}
[[maybe_unused]] static __device__ inline int32_t fut_popc_{t}({T} x) {{ return {popc}; }}
[[maybe_unused]] static __device__ inline int32_t fut_clz_{t}({T} x) {{ return {clz}; }}
[[maybe_unused]] static __device__ inline int32_t fut_ctz_{t}({T} x) {{ return x == 0 ? {B} : {ffs} - 1; }}
"""

_INT_HELPERS_SIGNED = """\
[[maybe_unused]] static __device__ inline {T} fut_div_{t}({T} x, {T} y) {{
  if (y == -1) return fut_neg_{t}(x);
  {T} q = ({T})(x / y), r = ({T})(x % y);
  return (r != 0 && ((r < 0) != (y < 0))) ? ({T})(q - 1) : q;
}}
[[maybe_unused]] static __device__ inline {T} fut_mod_{t}({T} x, {T} y) {{
  if (y == -1) return 0;
  {T} r = ({T})(x % y);
  return (r != 0 && ((r < 0) != (y < 0))) ? ({T})(r + y) : r;
}}
[[maybe_unused]] static __device__ inline {T} fut_quot_{t}({T} x, {T} y) {{ return y == -1 ? fut_neg_{t}(x) : ({T})(x / y); }}
[[maybe_unused]] static __device__ inline {T} fut_rem_{t}({T} x, {T} y) {{ return y == -1 ? ({T})0 : ({T})(x % y); }}
[[maybe_unused]] static __device__ inline {T} fut_shl_{t}({T} x, {T} y) {{ return (y < 0 || y >= {B}) ? ({T})0 : ({T})(({W})({U})x << y); }}
[[maybe_unused]] static __device__ inline {T} fut_ashr_{t}({T} x, {T} y) {{ return ({T})(x >> ((y < 0 || y >= {B}) ? {B} - 1 : y)); }}
[[maybe_unused]] static __device__ inline {T} fut_lshr_{t}({T} x, {T} y) {{ return (y < 0 || y >= {B}) ? ({T})0 : ({T})(({U})x >> y); }}
[[maybe_unused]] static __device__ inline {T} fut_abs_{t}({T} x) {{ return x < 0 ? fut_neg_{t}(x) : x; }}
[[maybe_unused]] static __device__ inline {T} fut_sgn_{t}({T} x) {{ return ({T})((x > 0) - (x < 0)); }}
"""

_INT_HELPERS_UNSIGNED = """\
[[maybe_unused]] static __device__ inline {T} fut_div_{t}({T} x, {T} y) {{ return ({T})(x / y); }}
[[maybe_unused]] static __device__ inline {T} fut_mod_{t}({T} x, {T} y) {{ return ({T})(x % y); }}
[[maybe_unused]] static __device__ inline {T} fut_quot_{t}({T} x, {T} y) {{ return ({T})(x / y); }}
[[maybe_unused]] static __device__ inline {T} fut_rem_{t}({T} x, {T} y) {{ return ({T})(x % y); }}
[[maybe_unused]] static __device__ inline {T} fut_shl_{t}({T} x, {T} y) {{ return y >= {B} ? ({T})0 : ({T})(({W})x << y); }}
[[maybe_unused]] static __device__ inline {T} fut_ashr_{t}({T} x, {T} y) {{ return y >= {B} ? ({T})0 : ({T})(x >> y); }}
[[maybe_unused]] static __device__ inline {T} fut_lshr_{t}({T} x, {T} y) {{ return fut_ashr_{t}(x, y); }}
[[maybe_unused]] static __device__ inline {T} fut_abs_{t}({T} x) {{ return x; }}
[[maybe_unused]] static __device__ inline {T} fut_sgn_{t}({T} x) {{ return ({T})(x > 0); }}
"""

# f32 division (and reciprocals): correctly rounded, as C's `/` and
# Futhark's semantics, unless the package was built with --fast-division
# (FUTGEN_FAST_DIVISION 1, defined above the prelude): then within 2 ulp over
# the whole range, PTX's div.full.f32, which XLA and Triton emit for f32
# division.  The IEEE division's range check and slow path cost about twice
# the instructions.
F32_DIVISION = "fut_fdiv_f32"
FAST_DIVISION_MACRO = "FUTGEN_FAST_DIVISION"
_F32_DIVISION_HELPER = f"""\
#ifndef {FAST_DIVISION_MACRO}
#define {FAST_DIVISION_MACRO} 0
#endif
[[maybe_unused]] static __device__ inline float {F32_DIVISION}(float x, float y) {{
#if {FAST_DIVISION_MACRO}
  float r;
  asm("div.full.f32 %0, %1, %2;" : "=f"(r) : "f"(x), "f"(y));
  return r;
#else
  return x / y;
#endif
}}
"""

_FLOAT_HELPERS = """\
[[maybe_unused]] static __device__ inline {T} fut_fmod_{t}({T} x, {T} y) {{
  {T} r = {fmod}(x, y);
  return (r != 0 && ((r < 0) != (y < 0))) ? r + y : r;
}}
[[maybe_unused]] static __device__ inline {T} fut_sgn_{t}({T} x) {{ return x > 0 ? ({T})1 : (x < 0 ? ({T})-1 : x); }}
[[maybe_unused]] static __device__ inline {T} fut_recip_{t}({T} x) {{ return {div}; }}
[[maybe_unused]] static __device__ inline {T} fut_tanpi_{t}({T} x) {{ return {tan}(x * ({T})3.14159265358979323846); }}
[[maybe_unused]] static __device__ inline {T} fut_asinpi_{t}({T} x) {{ return {asin}(x) / ({T})3.14159265358979323846; }}
[[maybe_unused]] static __device__ inline {T} fut_acospi_{t}({T} x) {{ return {acos}(x) / ({T})3.14159265358979323846; }}
[[maybe_unused]] static __device__ inline {T} fut_atanpi_{t}({T} x) {{ return {atan}(x) / ({T})3.14159265358979323846; }}
[[maybe_unused]] static __device__ inline {T} fut_atan2pi_{t}({T} x, {T} y) {{ return {atan2}(x, y) / ({T})3.14159265358979323846; }}
"""

# `nextafter` on f16 steps the 16-bit pattern (computing it in f32 would
# give the f32 neighbour), as `np.nextafter` on float16 does.
_F16_HELPERS = """\
[[maybe_unused]] static __device__ inline __half fut_nextafter_f16(__half x, __half y) {
  float a = __half2float(x), b = __half2float(y);
  if (isnan(a) || isnan(b)) return __float2half(a + b);
  if (a == b) return y;
  unsigned short u = __half_as_ushort(x);
  if (a == 0.0f) return __ushort_as_half((unsigned short)((__half_as_ushort(y) & 0x8000u) | 1u));
  bool away = (a < b) == (a > 0.0f);
  return __ushort_as_half((unsigned short)(away ? u + 1u : u - 1u));
}
"""

# Float -> integer: NaN and infinities give 0, truncation towards zero; a
# signed target saturates (fut_fptosi with its bounds); an unsigned one takes
# the value clamped to int64 (u64 keeps the range up to 2^64), then wrapped
# into the target by a cast, exactly as `prims._float_to_int`.
_CONVERSION_HELPERS = """\
[[maybe_unused]] static __device__ inline int64_t fut_fptosi(double x, double lo, double hi) {
  if (!isfinite(x)) return 0;
  return (int64_t)fmin(fmax(trunc(x), lo), hi);
}
[[maybe_unused]] static __device__ inline int64_t fut_fptoi64(double x) {
  return fut_fptosi(x, -9223372036854775808.0, 9223372036854774784.0);
}
[[maybe_unused]] static __device__ inline uint64_t fut_fptou64(double x) {
  if (!isfinite(x)) return 0;
  double t = trunc(x);
  if (t >= 9223372036854775808.0) return (uint64_t)fmin(t, 18446744073709549568.0);
  return (uint64_t)fut_fptoi64(t);
}
"""


def _int_fields(t: str) -> dict[str, str]:
    bits = BITS[t]
    u = ctype(UNSIGNED_OF[t])
    if bits <= 32:
        popc, clz, ffs = (f"__popc((unsigned int)({u})x)",
                          f"__clz((int)(unsigned int)({u})x) - {32 - bits}",
                          f"__ffs((int)(unsigned int)({u})x)")
    else:
        popc, clz, ffs = ("__popcll((unsigned long long)x)", "__clzll((long long)x)",
                          "__ffsll((long long)x)")
    if bits < 64:
        wide = "int64_t" if t in SIGNED else "uint64_t"
        mul_hi = f"({ctype(t)})((({wide})x * ({wide})y) >> {bits})"
    else:
        mul_hi = "__mul64hi(x, y)" if t in SIGNED else "__umul64hi(x, y)"
    return {"T": ctype(t), "t": t, "U": u, "W": "uint32_t" if bits <= 32 else "uint64_t",
            "B": str(bits), "popc": popc, "clz": clz, "ffs": ffs, "mul_hi": mul_hi}


def prelude() -> str:
    """The `static __device__ inline` helpers every kernels.cu starts with.

    Each is `[[maybe_unused]]`: a program uses few of them, and CI compiles
    with every warning an error.
    """
    parts = []
    for t in INTS:
        fields = _int_fields(t)
        parts.append(_INT_HELPERS_ALL.format(**fields))
        extra = _INT_HELPERS_SIGNED if t in SIGNED else _INT_HELPERS_UNSIGNED
        parts.append(extra.format(**fields))
    parts.append(_F32_DIVISION_HELPER)
    for t in ("f32", "f64"):
        sfx = "f" if t == "f32" else ""
        div = f"{F32_DIVISION}(1.0f, x)" if t == "f32" else "1.0 / x"
        parts.append(_FLOAT_HELPERS.format(T=ctype(t), t=t, div=div, fmod="fmod" + sfx,
                                           tan="tan" + sfx,
                                           asin="asin" + sfx, acos="acos" + sfx,
                                           atan="atan" + sfx, atan2="atan2" + sfx))
    parts.append(_F16_HELPERS)
    parts.append(_CONVERSION_HELPERS)
    return "\n".join(parts)
