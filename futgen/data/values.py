"""Futhark's data format: reading and writing values, text and binary.

Values are NumPy scalars (`np.int32(3)`, `np.float32(2.5)`, `np.bool_(True)`)
and NumPy arrays, exactly what the interpreter and the generated packages take
and return.

Reading (`read_values`, `load_file`) accepts what `futhark run` and `futhark
test` accept: a stream of values separated by white space and `--` comments,
each either text (`3i32`, `[1, 2]`, `empty([0]i32)`, `f32.nan`, `-f64.inf`,
unsuffixed integers are i32 and unsuffixed decimals f64) or binary (the
`b\\x02` header of docs/binary-data-format.rst), freely mixed, optionally
gzip-compressed.  Binary payloads and numeric literals are decoded by the
`futhark_data` package; this module adds what it lacks: source positions in
error messages, `nan`/`inf` literals, range checks, gzip, and strict checks for
truncated or irregular input.  Every problem raises `DataError` naming the
source, position, value number and what was wrong.

Writing: `format_value` prints a value the way `futhark run` does (Haskell's
`show` for floats, multi-line nested arrays, `empty([0]i32)`), and
`encode_binary` produces the binary format (`futhark_data`'s encoder).
"""

from __future__ import annotations

import gzip
import io
import math
import re
import warnings
from collections.abc import Iterable

import futhark_data
import numpy as np
from futgen_runtime.layout import UNIT_DTYPE

from futgen.data import compat
from futgen.errors import DataError

compat.install()

Value = np.generic | np.ndarray

# Primitive type names of the data format and their NumPy dtypes.
PRIM_DTYPES: dict[str, np.dtype] = {
    name: np.dtype(info["numpy_type"]) for name, info in futhark_data.PRIMTYPES.items()
}
DTYPE_NAMES: dict[np.dtype, str] = {dt: name for name, dt in PRIM_DTYPES.items()}
_BINARY_NAMES: dict[bytes, str] = {
    info["binname"]: name for name, info in futhark_data.PRIMTYPES.items()
}

_WHITESPACE = re.compile(r"(?:\s+|--[^\n]*)*")
_TOKEN = re.compile(r'[\[\](),{}]|"(?:[^"\\\n]|\\.)*"|[^\s\[\](),{}]+')
_SPECIAL_FLOAT = re.compile(r"(-?)(f16|f32|f64)\.(nan|inf)")
_NUMERIC_ROW = re.compile(r"[0-9eE.+\-,\s]*")
_HUGE_INT = re.compile(r"\d{19,}")  # may not fit an int64
_ITEM_START = re.compile(r",(?!\s*-?[0-9])")
_DOT_END = re.compile(r"\.(?![0-9])")
_BOOL_ROW = re.compile(r"[truefals,\s]*")


def _lax_numbers(row: str) -> bool:
    """Whether a row has numbers NumPy reads but Futhark rejects: `-`, `+1`,
    `.5`, `1.`.  (Plain string scans: a single regex is 10x slower.)"""
    if _ITEM_START.search("," + row) or _DOT_END.search(row):
        return True
    if any(bad in row for bad in ("e.", "E.", "-.", "+.")):
        return True
    return "+" in row.replace("e+", "").replace("E+", "")


def _split_number(tok: str) -> tuple[str | None, str | None, bool]:
    """(number, suffix, is_integer) of a numeric literal, recognised with
    futhark_data's literal regexes; (None, None, False) if it is none."""
    r = futhark_data.Reader
    for regex, is_int in (
        (r._INTEGER_REGEXP, True),
        (r._HEXFLOAT_REGEXP, False),
        (r._DECFLOAT_REGEXP, False),
    ):
        m = regex.fullmatch(tok)
        if m:
            return m.group(1), m.group(2), is_int
    return None, None, False


def _parse_int(number: str) -> int:
    digits = number.lstrip("-")
    base = 16 if digits[:2] in ("0x", "0X") else 2 if digits[:2] in ("0b", "0B") else 10
    n = int(digits[2:] if base != 10 else digits, base)
    return -n if number.startswith("-") else n


def _parse_float(number: str) -> float:
    if "x" in number or "X" in number:
        return float.fromhex(number)
    return float(number)


def prim_name(dtype: np.dtype) -> str:
    """The Futhark name (`i32`, `bool`, ...) of a NumPy dtype."""
    try:
        return DTYPE_NAMES[np.dtype(dtype)]
    except KeyError:
        raise DataError(f"NumPy type {dtype} has no Futhark counterpart") from None


def value_type(v: Value, dims: bool = True) -> str:
    """The Futhark type of a value: `[3][4]f32` (or `[][]f32` without dims)."""
    arr = np.asarray(v)
    shape = "".join(f"[{d}]" if dims else "[]" for d in arr.shape)
    return shape + prim_name(arr.dtype)


# ---------------------------------------------------------------- reading


class DataScanner:
    """Reads values from text that may contain binary values too.

    `text` is the input decoded as Latin-1 (one character per byte, so that
    binary payloads survive), or the text of a test block.  `raw` is the
    undecoded bytes, or None where binary values cannot occur.  Positions in
    errors are reported as `source:line:col`, with `first_line` the file line
    of the first line of `text` (test blocks start mid-file).
    """

    def __init__(
        self, text: str, source: str = "<stdin>", raw: bytes | None = None, first_line: int = 1
    ):
        self.text = text
        self.raw = raw
        self.source = source
        self.first_line = first_line
        self.pos = 0
        self.count = 0  # values read so far, for "value #n" in messages
        self._literal_cache: dict[str, Value] = {}

    # -- positions and errors

    def where(self, pos: int | None = None) -> str:
        """`source:line:col` of a text position."""
        pos = self.pos if pos is None else pos
        line = self.text.count("\n", 0, pos) + self.first_line
        col = pos - self.text.rfind("\n", 0, pos)
        return f"{self.source}:{line}:{col}"

    def error(self, message: str, pos: int | None = None) -> DataError:
        """A DataError that says where and in which value `message` happened."""
        return DataError(f"{self.where(pos)}: value #{self.count}: {message}")

    # -- tokens

    def skip_space(self) -> None:
        """Skip white space and `--` line comments."""
        self.pos = _WHITESPACE.match(self.text, self.pos).end()

    def at_end(self) -> bool:
        self.skip_space()
        return self.pos >= len(self.text)

    def peek(self) -> str | None:
        """The next token without consuming it, or None at the end."""
        self.skip_space()
        m = _TOKEN.match(self.text, self.pos)
        return m.group() if m else None

    def next(self) -> str:
        """Consume and return the next token; the end of input is an error."""
        self.skip_space()
        m = _TOKEN.match(self.text, self.pos)
        if m is None:
            raise self.error("unexpected end of input")
        self.pos = m.end()
        return m.group()

    def expect(self, token: str, what: str) -> None:
        start = self.pos
        got = self.next()
        if got != token:
            raise self.error(f"expected '{token}' {what}, got '{got}'", start)

    # -- values

    def read_value(self) -> Value:
        """Read one value, text or binary."""
        self.skip_space()
        if self.pos >= len(self.text):
            raise self.error("unexpected end of input")
        if self._binary_here():
            return self._binary_value()
        return self._element(None)[0]

    def read_all(self) -> list[Value]:
        """Read values until the end of the input."""
        values = []
        while not self.at_end():
            self.count += 1
            values.append(self.read_value())
        return values

    def _element(self, want: str | None) -> tuple[Value, int]:
        """A value and where it started; `want` is the element type an
        enclosing array has settled on, which unsuffixed literals take."""
        self.skip_space()
        start = self.pos
        tok = self.peek()
        if tok == "[":
            return self._array(want), start
        if tok == "empty":
            return self._empty_array(), start
        if tok is not None and tok.startswith('"'):
            self.next()
            return self._string(tok, start), start
        return self._scalar(want), start

    def _scalar(self, want: str | None) -> Value:
        start = self.pos
        tok = self.next()
        if tok in ("]", "[", ",", "(", ")", "{", "}"):
            raise self.error(f"expected a value, got '{tok}'", start)
        key = (tok, want)
        cached = self._literal_cache.get(key)
        if cached is not None:
            return cached
        value = self._literal(tok, want, start)
        if len(self._literal_cache) < 65536:
            self._literal_cache[key] = value
        return value

    def _literal(self, tok: str, want: str | None, start: int) -> Value:
        """Decode one scalar literal.

        As in Futhark's data parser: a suffix fixes the type; without one, a
        literal inside an array takes the array's element type, and otherwise
        integers are i32 and decimals f64.  Integers wrap around to their
        type's width (`-1u32` is 4294967295u32), and `_` may separate digits.
        """
        special = _SPECIAL_FLOAT.fullmatch(tok)
        if special:
            sign, t, what = special.groups()
            self._check_type(t, want, start)
            return PRIM_DTYPES[t].type(float("nan") if what == "nan" else float(sign + "inf"))
        if tok in ("true", "false"):
            self._check_type("bool", want, start)
            return np.bool_(tok == "true")
        number, suffix, is_int = _split_number(tok.replace("_", ""))
        if number is None:
            raise self.error(f"invalid value '{tok}'", start)
        t = suffix or want or ("i32" if is_int else "f64")
        self._check_type(t, want, start)
        if t == "bool" or (t[0] in "iu" and not is_int):
            raise self.error(f"'{tok}' is not a literal of type {t}", start)
        dtype = PRIM_DTYPES[t]
        if t[0] in "iu":
            bits = 8 * dtype.itemsize
            n = _parse_int(number) % (1 << bits)
            if t[0] == "i" and n >= 1 << (bits - 1):
                n -= 1 << bits
            return dtype.type(n)
        x = _parse_int(number) if is_int else _parse_float(number)
        with np.errstate(over="ignore"):
            return dtype.type(x)

    def _check_type(self, t: str, want: str | None, start: int) -> None:
        if want is not None and t != want:
            raise self.error(
                f"array elements differ: {t} after {want} (arrays must be regular and of one type)",
                start,
            )

    def _string(self, tok: str, start: int) -> np.ndarray:
        """A string literal: the UTF-8 bytes as a []u8, as Futhark reads it."""
        try:
            text = tok[1:-1].encode("latin-1").decode("unicode_escape")
        except UnicodeDecodeError as e:
            raise self.error(f"invalid string literal {tok}: {e}", start) from None
        return np.frombuffer(text.encode("utf-8"), dtype=np.uint8).copy()

    def _array(self, want: str | None) -> np.ndarray:
        """`[v, v, ...]`: rows must agree in type and shape (no ragged arrays)."""
        open_pos = self.pos
        self.expect("[", "to start an array")
        if self.peek() == "]":
            raise self.error("empty array literal '[]': write empty([0]t) instead", open_pos)
        elems = [self._element(want)]
        want = want or prim_name(np.asarray(elems[0][0]).dtype)
        if isinstance(elems[0][0], np.generic):
            rest = self._fast_row(want)
            if rest is not None:
                return np.concatenate([np.array([elems[0][0]]), rest])
        while True:
            sep_pos = self.pos
            tok = self.next()
            if tok == "]":
                break
            if tok != ",":
                raise self.error(f"expected ',' or ']' in array, got '{tok}'", sep_pos)
            elems.append(self._element(want))
        return self._stack(elems)

    def _fast_row(self, t: str) -> np.ndarray | None:
        """The rest of a row of plain decimal literals, parsed in bulk.

        Large data files are mostly long rows of numbers; converting a whole
        row with NumPy is ~50x faster than token by token.  Rows with anything
        unusual (comments, hex, nan, other suffixes, malformed numbers) return
        None, consuming nothing, and take the general path, which also gives
        the precise error message.
        """
        end = self.text.find("]", self.pos)
        if end < 0:
            return None
        row = self.text[self.pos : end].replace(t, "").strip()
        if not row.startswith(","):
            return None
        body = row[1:]
        if t == "bool":
            if not _BOOL_ROW.fullmatch(body):
                return None
            items = [x.strip() for x in body.split(",")]
            if any(x not in ("true", "false") for x in items):
                return None
            values = np.array([x == "true" for x in items], dtype=np.bool_)
        else:
            if not _NUMERIC_ROW.fullmatch(body) or _lax_numbers(body):
                return None
            if t[0] in "iu" and _HUGE_INT.search(body):
                return None  # NumPy saturates where Futhark wraps: the general path wraps

            parse_as = np.uint64 if t == "u64" else np.int64 if t[0] in "iu" else np.float64
            try:
                with warnings.catch_warnings():  # older NumPy warns on malformed rows
                    warnings.simplefilter("ignore", DeprecationWarning)
                    values = np.fromstring(body, dtype=parse_as, sep=",")
            except ValueError:  # newer NumPy raises
                return None
            if len(values) != body.count(",") + 1:
                return None
        self.pos = end + 1
        with np.errstate(over="ignore"):
            return values.astype(PRIM_DTYPES[t])

    def _stack(self, elems: list[tuple[Value, int]]) -> np.ndarray:
        first, _ = elems[0]
        for v, pos in elems[1:]:
            if type(v) is not type(first) or (
                isinstance(v, np.ndarray) and (v.shape != first.shape or v.dtype != first.dtype)
            ):
                raise self.error(
                    f"array elements differ: {value_type(v)} after {value_type(first)} "
                    "(arrays must be regular and of one type)",
                    pos,
                )
        if isinstance(first, np.ndarray):
            return np.stack([v for v, _ in elems])
        return np.array([v for v, _ in elems], dtype=first.dtype)

    def _empty_array(self) -> np.ndarray:
        """`empty([0][3]i32)`: at least one dimension, and one of them zero."""
        start = self.pos
        self.expect("empty", "")
        self.expect("(", "after 'empty'")
        shape = []
        while self.peek() == "[":
            self.next()
            dim_pos = self.pos
            dim = self.next()
            if not dim.isdigit():
                raise self.error(f"expected a dimension in empty(), got '{dim}'", dim_pos)
            shape.append(int(dim))
            self.expect("]", "after a dimension")
        type_pos = self.pos
        t = self.next()
        if t not in PRIM_DTYPES:
            raise self.error(f"unknown element type '{t}' in empty()", type_pos)
        self.expect(")", "to close empty(")
        if not shape:
            raise self.error(f"empty({t}) needs dimensions, e.g. empty([0]{t})", start)
        if 0 not in shape:
            dims = "".join(f"[{d}]" for d in shape)
            raise self.error(f"empty({dims}{t}) has no zero dimension", start)
        return np.zeros(shape, dtype=PRIM_DTYPES[t])

    # -- binary values

    def _binary_here(self) -> bool:
        if self.raw is None or self.text[self.pos] != "b" or self.pos + 1 >= len(self.raw):
            return False
        version = self.raw[self.pos + 1]
        if version == futhark_data.BINARY_DATA_FORMAT_VERSION:
            return True
        if not chr(version).isalnum():
            raise self.error(
                f"binary value of format version {version}; only version "
                f"{futhark_data.BINARY_DATA_FORMAT_VERSION} is supported"
            )
        return False

    def _binary_value(self) -> Value:
        """Check the header and length, then let futhark_data decode the payload."""
        start = self.pos
        header = self.raw[start : start + 7]
        if len(header) < 7:
            raise self.error("truncated binary value header", start)
        rank = header[2]
        t = _BINARY_NAMES.get(bytes(header[3:7]))
        if t is None:
            raise self.error(f"unknown binary element type {bytes(header[3:7])!r}", start)
        dims_end = start + 7 + 8 * rank
        if dims_end > len(self.raw):
            raise self.error(f"truncated binary value: missing dimensions of a rank-{rank} array")
        shape = np.frombuffer(self.raw[start + 7 : dims_end], dtype="<u8")
        nbytes = int(np.prod(shape, dtype=object)) * PRIM_DTYPES[t].itemsize
        end = dims_end + nbytes
        if end > len(self.raw):
            raise self.error(
                f"truncated binary value: a {value_type_of_shape(shape, t)} needs {nbytes} bytes "
                f"of data, only {len(self.raw) - dims_end} left",
                start,
            )
        reader = futhark_data.Reader(io.BytesIO(self.raw[start + 2 : end]))
        arr = reader.bin_value()
        self.pos = end
        if rank == 0:
            return arr[()]
        return np.array(arr)  # writable copy, native byte order


def value_type_of_shape(shape: Iterable[int], t: str) -> str:
    return "".join(f"[{d}]" for d in shape) + t


def _decompress(raw: bytes, source: str) -> bytes:
    if raw[:2] != b"\x1f\x8b":
        return raw
    try:
        return gzip.decompress(raw)
    except (OSError, EOFError) as e:
        raise DataError(f"{source}: corrupt gzip data: {e}") from None


def read_values(data: bytes | str, source: str = "<stdin>") -> list[Value]:
    """All values in `data` (text, binary, mixed, or gzip-compressed bytes)."""
    if isinstance(data, str):
        return DataScanner(data, source).read_all()
    raw = _decompress(data, source)
    return DataScanner(raw.decode("latin-1"), source, raw=raw).read_all()


def load_file(path: str) -> list[Value]:
    """All values in a data file (`.in`, `.out`, binary, `.gz`)."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise DataError(f"cannot read data file {path}: {e.strerror or e}") from None
    return read_values(raw, path)


# ---------------------------------------------------------------- writing


def format_value(v: Value) -> str:
    """A value as `futhark run` prints it.

    Arrays of arrays put each row on its own line, aligned under the opening
    bracket, as Futhark's pretty printer does; arrays with a zero dimension
    print as `empty([0][3]i32)`.
    """
    if isinstance(v, tuple):
        return "(" + ", ".join(format_value(x) for x in v) + ")"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k} = {format_value(x)}" for k, x in sorted(v.items())) + "}"
    fields = getattr(v, "fields", None)  # an interpreter's array of tuples or records
    if fields and hasattr(v, "shape"):
        return format_value(fields)
    if fields is not None or getattr(v, "dtype", None) == UNIT_DTYPE:
        return _format_units(tuple(v.shape))
    arr = np.asarray(v)
    if arr.ndim == 0:
        return format_scalar(arr[()])
    if 0 in arr.shape:
        return f"empty({value_type(arr)})"
    return _format_array(arr, 0)


def _format_units(shape: tuple[int, ...]) -> str:
    """An array of the unit type `()`."""
    if 0 in shape:
        return "empty(" + "".join(f"[{d}]" for d in shape) + "())"
    return _layout(["()"] * int(np.prod(shape)), shape, 0, 0)


def _format_array(arr: np.ndarray, col: int) -> str:
    """Format every element once (fast, flat), then lay out the rows."""
    elems = format_elements(arr.ravel())
    return _layout(elems, arr.shape, 0, col)


def _layout(elems: list[str], shape: tuple[int, ...], start: int, col: int) -> str:
    if len(shape) == 1:
        return "[" + ", ".join(elems[start : start + shape[0]]) + "]"
    step = int(np.prod(shape[1:]))
    rows = [_layout(elems, shape[1:], start + i * step, col + 1) for i in range(shape[0])]
    return "[" + (",\n" + " " * (col + 1)).join(rows) + "]"


def format_scalar(x: np.generic) -> str:
    """A scalar with its type suffix: `3i32`, `255u8`, `2.5f32`, `-f32.inf`, `true`."""
    return format_elements(np.asarray(x).reshape(1))[0]


def format_elements(flat: np.ndarray) -> list[str]:
    """Each element of a 1-D array as `futhark run` prints it."""
    t = prim_name(flat.dtype)
    if t == "bool":
        return ["true" if b else "false" for b in flat.tolist()]
    if t[0] in "iu":
        return [f"{n}{t}" for n in flat.tolist()]
    if t == "f64":
        return [_show_f64(x, t) for x in flat.tolist()]
    # Futhark's f16 `show` goes through Float, so f16 prints f32's digits.
    return [_show_f32(x, t) for x in flat.astype(np.float32)]


def _special(x: float, t: str) -> str | None:
    if math.isnan(x):
        return f"{t}.nan"
    if x in (float("inf"), float("-inf")):
        return f"{t}.inf" if x > 0 else f"-{t}.inf"
    return None


def _show_f64(x: float, t: str) -> str:
    if 0.1 <= abs(x) < 1e7:  # Python's repr is Haskell's show here
        return repr(x) + t
    special = _special(x, t)
    if special is not None:
        return special
    return _haskell_show(repr(x), x) + t


def _show_f32(x: np.float32, t: str) -> str:
    if 0.1 <= abs(x) < 1e7:  # fixed notation, as Haskell's show has it here
        return np.format_float_positional(x, unique=True, trim="0") + t
    special = _special(float(x), t)
    if special is not None:
        return special
    return _haskell_show(np.format_float_scientific(x, unique=True, trim="-"), float(x)) + t


def haskell_show_float(x: np.floating) -> str:
    """Haskell's `show` for a finite float: shortest round-trip digits of
    its type, fixed notation for 0.1 <= |x| < 10^7, else `d.ddde<n>`."""
    if np.asarray(x).dtype == np.float64:
        return _haskell_show(repr(float(x)), float(x))
    return _haskell_show(np.format_float_scientific(x, unique=True, trim="-"), float(x))


def _haskell_show(shortest: str, x: float) -> str:
    """Rewrite a shortest round-trip rendering (`1.5e+20`, `0.001`, `-2.0`)
    into Haskell's `show` notation."""
    sign = "-" if shortest.startswith("-") else ""
    if x == 0:
        return sign + "0.0"
    mantissa, _, exp = shortest.lstrip("-").partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = whole + frac
    significant = digits.lstrip("0")
    # x == 0.<significant> * 10^e
    e = len(whole) + (int(exp) if exp else 0) - (len(digits) - len(significant))
    significant = significant.rstrip("0") or "0"
    if 0 <= e <= 7:
        if e == 0:
            return f"{sign}0.{significant}"
        return f"{sign}{significant[:e].ljust(e, '0')}.{significant[e:] or '0'}"
    return f"{sign}{significant[0]}.{significant[1:] or '0'}e{e - 1}"


def encode_binary(v: Value) -> bytes:
    """A value in Futhark's binary data format."""
    arr = np.asarray(v)
    prim_name(arr.dtype)  # reject dtypes the format lacks, with a clear message
    if not arr.flags.c_contiguous:
        arr = np.ascontiguousarray(arr)  # (not for 0-d values: it would make them 1-d)
    return bytes(futhark_data.construct_binary_value(arr))


def check_arguments(entry: str, param_types: list[str], values: list[Value]) -> None:
    """Check the number of values and, for primitive and array parameters,
    their types against an entry point's parameters, before anything runs.

    `param_types` are Futhark type strings (`[n]f32`, `*[]i32`, `i64`);
    parameters of other types (records, opaque types) are left to the
    executor to check.
    """
    if len(values) != len(param_types):
        wanted = " ".join(param_types) or "no arguments"
        raise DataError(
            f"entry point {entry} takes {len(param_types)} value(s) ({wanted}), "
            f"but {len(values)} were given"
        )
    for i, (t, v) in enumerate(zip(param_types, values)):
        expected = _dimless(t)
        if expected is None:
            continue
        got = value_type(v, dims=False)
        if got != expected:
            raise DataError(
                f"entry point {entry}, argument #{i}: expected a value of type {t}, "
                f"got {value_type(v)}"
            )


_SIMPLE_TYPE = re.compile(r"\*?((?:\[[^\]]*\])*)([a-z0-9]+)")


def _dimless(t: str) -> str | None:
    """`[n][]f32` -> `[][]f32`; None for types that are not arrays of primitives."""
    m = _SIMPLE_TYPE.fullmatch(t.strip())
    if m is None or m.group(2) not in PRIM_DTYPES:
        return None
    return "[]" * m.group(1).count("[") + m.group(2)
