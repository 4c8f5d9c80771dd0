"""Every prelude function compiles: a walk over `prelude.SIGNATURES`.

Each name is used by an entry point of one of two programs: a hand-written
one for the generic functions (`GENERIC_PROGRAM`, `USES` says which entry
uses which name) and one generated from the signatures for the members of
the numeric modules (`f32.atan2` mapped over arrays, `i32.sum` of an array,
`f64.pi`, ...).  Both are built as packages, run on the CPU backend and
compared with the reference interpreter on the same arguments, failures
included (same message, same location).  The kernels of the numeric
program, where every scalar function sits inside a map, must compile with
nvcc, as CI requires of every kernels.cu.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from futgen.data import compare_values
from futgen.errors import FutharkError
from futgen.frontend.prelude import DIFFERENTIATION, GENERIC, SIGNATURES
from futgen.frontend.types import PRIM_DTYPES, PRIMS
from futgen.testing.compiled import CompiledPackage, PackageBackend

GENERIC_PROGRAM = """
entry soacs (xs: []i32) (ys: []i32) =
  (map (+ 1) xs, map1 (* 2) xs, map2 (+) xs ys, map3 (\\a b c -> a + b * c) xs ys xs,
   map4 (\\a b c d -> a + b - c * d) xs ys xs ys,
   map5 (\\a b c d e -> a * b + c * d + e) xs ys xs ys xs,
   reduce (+) 0 xs, reduce_comm i32.max i32.lowest xs, scan (+) 0 xs, exscan (+) 0 xs,
   filter (> 2) xs)

entry predicates (xs: []i32) =
  let (big, small) = partition (> 2) xs
  let (zero, one, two) = partition2 (\\x -> x % 3 == 0) (\\x -> x % 3 == 1) xs
  in (big, small, zero, one, two, all (> 0) xs, any (> 3) xs, and (map (> 0) xs),
      or (map (> 3) xs))

entry scatters (xs: []i32) (is: []i64) (js: []i64) (ks: []i64) (k: i64) =
  let m = copy (unflatten (sized (2 * 3) (iota 6 |> map i32.i64))) : [2][3]i32
  let c = copy (unflatten_3d (sized (2 * 2 * 2) (iota 8 |> map i32.i64))) : [2][2][2]i32
  in (scatter (copy xs) is xs, scatter_2d m (zip is js) xs, scatter_3d c (zip3 is js ks) xs,
      spread k 9 is xs)

entry histograms (xs: []i32) (is: []i64) (js: []i64) (ks: []i64) (k: i64) =
  let m = replicate 2 (replicate 3 100i32)
  let c = replicate 2 (replicate 2 (replicate 2 0i32))
  in (hist (+) 0 k is xs, reduce_by_index (replicate k 1) (*) 1 is xs,
      reduce_by_index_2d m (+) 0 (zip is js) xs,
      reduce_by_index_3d c i32.max i32.lowest (zip3 is js ks) xs)

entry building (n: i64) (m: i64) (xs: []i32) =
  (iota n, indices xs, replicate n 7i32, tabulate n (\\i -> i * 2),
   tabulate_2d n m (\\i j -> i * 10 + j), tabulate_3d n m 2 (\\i j l -> i * 100 + j * 10 + l),
   rep 5i32 : [n]i32)

entry zips (xs: []i32) (ys: []f32) (zs: []bool) =
  let (a, b) = unzip (zip xs ys)
  let (c, d) = unzip2 (zip2 xs ys)
  let (e, f, g) = unzip3 (zip3 xs ys zs)
  let (h, i, j, k) = unzip4 (zip4 xs ys zs xs)
  let (l, o, p, q, r) = unzip5 (zip5 xs ys zs xs ys)
  in (a, b, c, d, e, f, g, h, i, j, k, l, o, p, q, r)

entry reshapes (n: i64) (m: i64) (mat: [][]i32) (cube: [][][]i32) (four: [][][][]i32)
               (xs: []i32) =
  (transpose mat, flatten mat, flatten_3d cube, flatten_4d four,
   unflatten (sized (n * m) xs) : [n][m]i32,
   unflatten_3d (sized (n * m * 1) xs) : [n][m][1]i32,
   unflatten_4d (sized (1 * n * 1 * m) xs) : [1][n][1][m]i32)

entry pieces (k: i64) (r: i64) (xs: []i32) (ys: []i32) =
  (concat xs ys, rotate r xs, reverse xs, length xs, null xs, copy xs, manifest xs,
   head xs, last xs, tail xs, init xs, take k xs, drop k xs, sized (length ys) ys)

entry splits (k: i64) (xs: []i32) =
  let (a: [k]i32, b) = split (sized (k + (length xs - k)) xs) in (a, b)

entry functional (n: i32) (xs: []i32) =
  (foldl (\\acc x -> acc * 2 + x) 1 xs, foldr (\\x acc -> acc * 2 + x) 1 xs,
   iterate n (* 3) 1i32, iterate_while (< 1000) (* 2) n, iterate_until (> 1000) (* 2) n,
   map ((+ 1) >-> (* 2)) xs, map ((+ 1) <-< (* 2)) xs, map (flip (-) 1) xs,
   map (curry (\\(a, b) -> a - b) 10) xs, map (uncurry (-)) (zip xs xs), map (const 7i32) xs,
   map id xs)

entry nested (mat: [][]i32) =
  (map (\\r -> rotate 1 r) mat, map (\\r -> take 2 r) mat, map (\\r -> foldl (+) 0 r) mat,
   map (\\r -> all (> 2) r) mat, map (\\r -> exscan (+) 0 r) mat,
   map (\\r -> head r + last r) mat, map (\\r -> i32.get_bit 1 (i32.sum r)) mat,
   map (\\r -> length (sized 3 r)) mat)

entry segments (xs: []i32) =
  let (s, f, o, d, v) = flatmap (\\x -> (replicate (i64.i32 (x % 3)) x, x * 2)) xs
  let (s', f', o', d') = flatmap' (\\x -> iota (i64.i32 (x % 4))) xs
  in (s, f, o, d, v, s', f', o', d')

entry misc (x: i32) (y: f32) (z: f64) (xs: []i32) =
  (assert (length xs > 0) xs, opaque x, trace x, not (x > 0), r32 x, t32 y, r64 x, t64 z,
   with_vjp (\\v -> v * 2 + 1) (\\_ a -> a) x)
"""

# Every generic name, by the entry point that uses it.
USES = {
    **dict.fromkeys(["map", "map1", "map2", "map3", "map4", "map5", "reduce", "reduce_comm",
                     "scan", "exscan", "filter"], "soacs"),
    **dict.fromkeys(["partition", "partition2", "all", "any", "and", "or"], "predicates"),
    **dict.fromkeys(["scatter", "scatter_2d", "scatter_3d", "spread"], "scatters"),
    **dict.fromkeys(["hist", "reduce_by_index", "reduce_by_index_2d", "reduce_by_index_3d"],
                    "histograms"),
    **dict.fromkeys(["iota", "indices", "replicate", "tabulate", "tabulate_2d", "tabulate_3d",
                     "rep"], "building"),
    **dict.fromkeys(["zip", "zip2", "zip3", "zip4", "zip5", "unzip", "unzip2", "unzip3",
                     "unzip4", "unzip5"], "zips"),
    **dict.fromkeys(["transpose", "flatten", "flatten_3d", "flatten_4d", "unflatten",
                     "unflatten_3d", "unflatten_4d"], "reshapes"),
    **dict.fromkeys(["concat", "rotate", "reverse", "length", "null", "copy", "manifest",
                     "head", "last", "tail", "init", "take", "drop", "sized"], "pieces"),
    "split": "splits",
    "with_vjp": "misc",
    **dict.fromkeys(["foldl", "foldr", "iterate", "iterate_while", "iterate_until", ">->",
                     "<-<", "flip", "curry", "uncurry", "const", "id"], "functional"),
    **dict.fromkeys(["flatmap", "flatmap'"], "segments"),
    **dict.fromkeys(["assert", "opaque", "trace", "not", "r32", "t32", "r64", "t64"], "misc"),
}


def i32s(*v: int) -> np.ndarray:
    return np.array(v, np.int32)


def i64s(*v: int) -> np.ndarray:
    return np.array(v, np.int64)


I64 = np.int64
XS = i32s(3, 1, 4, 1, 5, 9, 2, 6)
YS = i32s(2, 7, 1, 8, 2, 8, 1, 8)
IS, JS, KS = i64s(0, 1, 1, 0, 5, -1, 1, 0), i64s(2, 0, 1, 2, 0, 0, 7, 1), i64s(1, 0, 1, 1,
                                                                                0, 0, 0, 1)
MAT = np.arange(6, dtype=np.int32).reshape(2, 3)

# entry -> argument lists; each runs compiled and interpreted.
CASES = {
    "soacs": [[XS, YS], [i32s(), i32s()]],
    "predicates": [[XS], [i32s()], [i32s(-1, 0)]],
    "scatters": [[XS, IS, JS, KS, I64(4)]],
    "histograms": [[XS, IS, JS, KS, I64(3)], [i32s(), i64s(), i64s(), i64s(), I64(0)]],
    "building": [[I64(3), I64(2), XS], [I64(0), I64(4), i32s()]],
    "zips": [[XS, XS.astype(np.float32) / 2, XS > 2]],
    "reshapes": [[I64(2), I64(4), MAT, np.arange(24, dtype=np.int32).reshape(2, 3, 4),
                  np.arange(24, dtype=np.int32).reshape(1, 2, 3, 4), XS],
                 [I64(3), I64(3), MAT, np.zeros((0, 2, 2), np.int32),
                  np.zeros((1, 0, 3, 4), np.int32), XS]],
    "pieces": [[I64(3), I64(2), XS, YS], [I64(0), I64(-3), XS, i32s()],
               [I64(9), I64(0), XS, YS], [I64(-1), I64(0), XS, YS],
               [I64(0), I64(0), i32s(), YS]],
    # The interpreter cannot split at 0 ("cannot determine the split point").
    "splits": [[I64(3), XS], [I64(8), XS], [I64(1), i32s(5)]],
    "functional": [[np.int32(5), XS], [np.int32(2000), i32s()]],
    "nested": [[np.arange(12, dtype=np.int32).reshape(4, 3)],
               [np.arange(12, dtype=np.int32).reshape(3, 4)]],
    "segments": [[XS], [i32s()], [i32s(3, 6)]],
    "misc": [[np.int32(3), np.float32(-2.5), np.float64(7.9), XS],
             [np.int32(-3), np.float32(1e10), np.float64(-0.5), i32s()]],
}


def test_every_generic_name_is_used() -> None:
    # The interpreter does not differentiate: tests/core/test_ad.py checks those.
    assert sorted(set(GENERIC) - set(USES) - set(DIFFERENTIATION)) == []
    for name, entry in USES.items():
        text = GENERIC_PROGRAM[GENERIC_PROGRAM.index(f"entry {entry} "):]
        assert re.search(rf"(?<![\w.]){re.escape(name)}(?![\w])", text), (name, entry)


# ------------------------------------------------------------ numeric modules

_PARAM = re.compile(r"\((\w+): ([^)]+)\)")
_OPERATORS = re.compile(r"^[^\w]+$")


def _member_entry(k: int, name: str, header: str) -> tuple[str, str, list[str]]:
    """An entry point applying member `name` (`f32.atan2`) with signature
    `header`; returns its text, its name, and its parameters' element types.
    Scalar functions are mapped over arrays, so they run in kernel code."""
    entry = f"m{k}"
    params = _PARAM.findall(header)
    ret = header.rsplit(":", 1)[1].strip()
    fn = f"({name})" if _OPERATORS.match(name.split(".", 1)[1]) else name
    if not params:
        return f"entry {entry} (n: i64) : [n]{ret} = replicate n {fn}\n", entry, ["#n"]
    types = [t for _, t in params]
    if any(t.startswith("[") for t in types):
        elem = types[0].split("]")[-1]
        return f"entry {entry} (xs: []{elem}) : {ret} = {fn} xs\n", entry, ["[]" + elem]
    names = [f"p{i}" for i in range(len(types))]
    ps = " ".join(f"({p}: []{t})" for p, t in zip(names, types))
    mapper = "map" if len(types) == 1 else f"map{len(types)}"
    return (f"entry {entry} {ps} : []{ret} = {mapper} {fn} {' '.join(names)}\n", entry,
            list(types))


def numeric_members() -> dict[str, str]:
    return {k: v for k, v in SIGNATURES.items() if "." in k}


@cache
def numeric_program() -> tuple[str, dict[str, tuple[str, list[str]]]]:
    text, entries = [], {}
    for k, (name, header) in enumerate(sorted(numeric_members().items())):
        src, entry, types = _member_entry(k, name, header)
        text.append(src)
        entries[name] = (entry, types)
    return "".join(text), entries


def _values(member: str, position: int, t: str, rng: np.random.Generator) -> np.ndarray:
    """Eight values of type `t` for parameter `position` of `member`: the
    whole range of an integer type (never 0, a divisor), floats around the
    interesting points, small exponents and bit positions where they matter."""
    n = 8
    fn = member.split(".", 1)[1]
    if fn == "**" and t in ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"):
        return rng.integers(0, 5, n).astype(PRIM_DTYPES[t])
    if (fn, position) in (("get_bit", 0), ("set_bit", 0)):
        return rng.integers(-2, 70, n).astype(np.int32)
    if (fn, position) == ("set_bit", 2):
        return rng.integers(0, 3, n).astype(np.int32)
    if (fn, position) == ("ldexp", 1):
        return rng.integers(-12, 12, n).astype(np.int32)
    dt = PRIM_DTYPES[t]
    if t == "bool":
        return rng.integers(0, 2, n).astype(bool)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        v = rng.integers(int(info.min), int(info.max), n, endpoint=True, dtype=np.int64
                         if dt.kind == "i" else np.uint64).astype(dt)
        v[v == 0] = 1
        v[:2] = np.array([1, 3], dt)
        return v
    v = rng.uniform(-3, 3, n).astype(dt)
    v[:3] = np.array([0.5, 1.5, -0.25], dt)
    return v


def _args(member: str, types: list[str], rng: np.random.Generator) -> list:
    if types == ["#n"]:
        return [np.int64(3)]
    return [_values(member, i, t.lstrip("[]"), rng) for i, t in enumerate(types)]


# ------------------------------------------------------------ building and running


@cache
def _package(name: str, source: str, tmp: str) -> CompiledPackage:
    path = Path(tmp) / f"{name}.fut"
    path.write_text(source)
    return PackageBackend("cpu").compile(str(path))


@pytest.fixture(scope="module")
def tmp(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("prelude"))


def _run(f):
    try:
        return f()
    except FutharkError as e:
        return e


def _copies(args: list) -> list:
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def check_same(pkg: CompiledPackage, entry: str, args: list) -> None:
    """Compiled and interpreted results agree, or both fail with one message."""
    got = _run(lambda: pkg.call(entry, _copies(args)))
    want = _run(lambda: pkg.reference_call(entry, _copies(args)))
    if isinstance(want, FutharkError) or isinstance(got, FutharkError):
        # The same failure at the same place (the interpreter's backtrace
        # also lists the calls it passed through).
        assert isinstance(got, FutharkError) and isinstance(want, FutharkError), (got, want)
        assert (got.message, str(got.loc)) == (want.message, str(want.loc)), (entry, args)
        return
    mismatches = compare_values(want, got)
    assert not mismatches, (entry, args, "\n".join(map(str, mismatches)))


@pytest.mark.parametrize("entry", sorted(CASES))
def test_generic_functions_compiled(entry: str, tmp: str) -> None:
    pkg = _package("generic", GENERIC_PROGRAM, tmp)
    for args in CASES[entry]:
        check_same(pkg, entry, args)


@pytest.mark.parametrize("module", PRIMS)
def test_numeric_members_compiled(module: str, tmp: str) -> None:
    text, entries = numeric_program()
    pkg = _package("numeric", text, tmp)
    rng = np.random.default_rng(7)
    for name, (entry, types) in entries.items():
        if name.startswith(module + "."):
            check_same(pkg, entry, _args(name, types, rng))


def test_every_numeric_member_has_an_entry() -> None:
    assert set(numeric_program()[1]) == set(numeric_members())


@pytest.mark.parametrize("program", ["generic", "numeric"])
def test_kernels_compile_with_nvcc(program: str, tmp: str) -> None:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc not found on PATH: cannot compile kernels.cu")
    source = GENERIC_PROGRAM if program == "generic" else numeric_program()[0]
    pkg = _package(program, source, tmp)
    cu = Path(pkg.module.__file__).parent / "kernels.cu"
    proc = subprocess.run([nvcc, "-ptx", "-arch=sm_90", "--Werror", "all-warnings", str(cu),
                           "-o", str(Path(tmp) / f"{program}.ptx")], capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]


# ------------------------------------------------------------ run-time errors

ERRORS_PROGRAM = """
entry unflat (n: i64) (m: i64) (xs: []i32) : [n][m]i32 = unflatten (sized (length xs) xs)
entry bad_tail (xs: []i32) : []i32 = tail xs
entry bad_head (xs: []i32) : i32 = head xs
entry bad_last (xs: []i32) : i32 = last xs
entry bad_init (xs: []i32) : []i32 = init xs
entry bad_split (k: i64) (xs: []i32) : []i32 =
  let (a: [k]i32, _) = split (sized (k + (length xs - k)) xs) in a
entry bad_sized (k: i64) (xs: [][]i32) : [k][]i32 = sized k xs
"""

ERROR_CASES = [
    ("unflat", [I64(2), I64(2), XS]),
    ("unflat", [I64(-2), I64(-4), XS]),
    ("bad_tail", [i32s()]),
    ("bad_head", [i32s()]),
    ("bad_last", [i32s()]),
    ("bad_init", [i32s()]),
    ("bad_split", [I64(9), XS]),
    ("bad_sized", [I64(3), MAT]),
]


@pytest.mark.parametrize(("entry", "args"), ERROR_CASES,
                         ids=[f"{e}-{k}" for k, (e, _) in enumerate(ERROR_CASES)])
def test_failures_match_the_interpreter(entry: str, args: list, tmp: str) -> None:
    pkg = _package("errors", ERRORS_PROGRAM, tmp)
    got = _run(lambda: pkg.call(entry, args))
    assert isinstance(got, FutharkError), got
    want = _run(lambda: pkg.reference_call(entry, args))
    assert isinstance(want, FutharkError), want
    assert (got.message, str(got.loc)) == (want.message, str(want.loc))
