"""Automatic differentiation (`futgen.core.ad`): every operator of
`prelude.DIFFERENTIATION`, checked against derivatives computed another way.

* Every differentiable scalar function and operator of the numeric modules:
  `jvp` against a central finite difference of the function itself.
* Programs with SOACs, loops, branches, calls and in-place updates: `jvp`
  against finite differences along a random direction, `vjp` against `jvp`
  by the adjoint identity <vjp f x ybar, dx> = <ybar, jvp f x dx>, and the
  vector forms against a map of the scalar ones; on the core interpreter
  (every pass's input) and through the CPU backend's package (after
  flattening), so both the transformation and the passes after it are covered.
"""

from __future__ import annotations

import warnings
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from futgen.core import ad, internalise, run
from futgen.errors import CompileError, UnsupportedFeature
from futgen.frontend import check_source
from futgen.interp.interpreter import Interpreter
from futgen.testing.compiled import PackageBackend

UNARY = ["sqrt", "rsqrt", "cbrt", "exp", "log", "log2", "log10", "log1p", "sin", "cos", "tan",
         "sinpi", "cospi", "tanpi", "asin", "acos", "atan", "asinpi", "acospi", "atanpi",
         "sinh", "cosh", "tanh", "asinh", "atanh", "erf", "erfc", "recip", "abs", "neg"]
BINARY = ["+", "-", "*", "/", "**", "max", "min", "atan2", "hypot"]


def _core(src: str):
    return internalise(check_source(src, "t.fut"))


def _f64(v) -> float:
    return float(np.asarray(v))


# ------------------------------------------------------------ scalar rules


@cache
def _scalar_program():
    lines = []
    for k, name in enumerate(UNARY):
        lines.append(f"entry u{k} (x: f64) = f64.{name} x")
        lines.append(f"entry du{k} (x: f64) = jvp f64.{name} x 1")
    for k, op in enumerate(BINARY):
        f = f"(\\(x, y) -> x {op} y)" if not op[0].isalpha() else f"(\\(x, y) -> f64.{op} x y)"
        lines.append(f"entry b{k} (x: f64) (y: f64) = {f} (x, y)")
        lines.append(f"entry db{k} (x: f64) (y: f64) (dx: f64) (dy: f64) = jvp {f} (x, y) (dx, dy)")
    return _core("\n".join(lines))


@pytest.mark.parametrize("k,name", list(enumerate(UNARY)))
def test_unary_derivatives(k: int, name: str) -> None:
    prog, h = _scalar_program(), 1e-6
    for x in (0.3, 0.7):
        [d] = run(prog, f"du{k}", [np.float64(x)])
        [a], [b] = (run(prog, f"u{k}", [np.float64(x + s)]) for s in (h, -h))
        assert _f64(d) == pytest.approx((_f64(a) - _f64(b)) / (2 * h), rel=1e-6, abs=1e-8), name


@pytest.mark.parametrize("k,op", list(enumerate(BINARY)))
def test_binary_derivatives(k: int, op: str) -> None:
    prog, h = _scalar_program(), 1e-6
    for x, y in ((0.6, 1.7), (2.5, -0.4)):
        if op == "**" and x < 0:
            continue
        for dx, dy in ((1.0, 0.0), (0.0, 1.0), (0.3, -0.8)):
            [d] = run(prog, f"db{k}", [np.float64(v) for v in (x, y, dx, dy)])
            [a], [b] = (run(prog, f"b{k}", [np.float64(x + s * dx), np.float64(y + s * dy)])
                        for s in (h, -h))
            fd = (_f64(a) - _f64(b)) / (2 * h)
            assert _f64(d) == pytest.approx(fd, rel=1e-6, abs=1e-8), (op, x, y, dx, dy)


def test_integer_and_bool_tangents_follow_futhark() -> None:
    # Integers are differentiated like floats; a bool's tangent is a bool,
    # and `!x` has partial derivative x (Futhark's tests/ad/not.fut).
    prog = _core("""
entry sq (x: i32) = jvp (\\x -> x * x + 2) x 1
entry neg (x: bool) (dx: bool) = jvp (\\b -> !b) x dx
""")
    assert run(prog, "sq", [np.int32(3)]) == [np.int32(6)]
    assert run(prog, "neg", [np.bool_(True), np.bool_(True)]) == [np.bool_(True)]
    assert run(prog, "neg", [np.bool_(False), np.bool_(True)]) == [np.bool_(False)]


# ------------------------------------------------------------ programs

PROGRAM = """
def poly (x: f64) (c: f64) = c * x * x + f64.sin x

-- Map, reduce with a non-linear operator, scan, a loop that carries an
-- array, a branch, a call, an in-place update and a histogram.
def f [n] (xs: [n]f64) : (f64, [n]f64) =
  let ys = map (\\x -> poly x 0.5) xs
  let p = reduce (*) 1 (map (\\y -> 1 + y * y) ys)
  let zs = scan (+) 0 ys
  let ws = loop acc = copy zs for i < 3 do
             let acc[i % n] = acc[i % n] * xs[(i + 1) % n]
             in map2 (\\a x -> if a > 0.5 then a * x else a - x) acc xs
  let h = hist f64.max (-1e9) 2 (map (\\i -> i % 2) (indices xs)) ws
  let t = scatter (copy ws) [0] [h[0] + h[1]]
  in (p + f64.sum t, map f64.exp t)

def g (x: f64, xs: []f64) = map (\\v -> v * x) xs |> f64.sum

entry primal (xs: []f64) = f xs
entry tangent (xs: []f64) (dxs: []f64) = jvp f xs dxs
entry cotangent (xs: []f64) (ybar0: f64) (ybar1: []f64) = vjp f xs (ybar0, ybar1)
entry both (xs: []f64) (dxs: []f64) (ybar0: f64) (ybar1: []f64) =
  (jvp2 f xs dxs, vjp2 f xs (ybar0, ybar1))
entry tangents (xs: []f64) (dxss: [][]f64) = jmp f xs dxss
entry cotangents (xs: []f64) (ybar0s: []f64) (ybar1s: [][]f64) = mjp f xs (zip ybar0s ybar1s)
entry both_vectors (xs: []f64) (dxss: [][]f64) (ybar0s: []f64) (ybar1s: [][]f64) =
  (jmp2 f xs dxss, mjp2 f xs (zip ybar0s ybar1s))
entry mapped_tangents (xs: []f64) (dxss: [][]f64) = map (jvp f xs) dxss
entry mapped_cotangents (xs: []f64) (ybar0s: []f64) (ybar1s: [][]f64) =
  map2 (\\a b -> vjp f xs (a, b)) ybar0s ybar1s
entry tuple_arg (x: f64) (xs: []f64) = vjp g (x, xs) 1

-- Second derivatives by nesting: the Hessian of x0 * x1 + x1 ** 3.
def h (x: [2]f64) = x[0] * x[1] + x[1] ** 3
entry hessian (x: [2]f64) =
  map (\\e -> jvp (\\x -> vjp h x 1) x e) [[1, 0], [0, 1]]
"""


def _rng_args(n: int = 5):
    rng = np.random.default_rng(7)
    return rng.uniform(0.2, 0.9, n), rng.uniform(-1, 1, n)


def _fd(call, xs, dxs, h=1e-6):
    a, b = (call("primal", [xs + s * h * dxs]) for s in (1, -1))
    return [(np.asarray(p) - np.asarray(q)) / (2 * h) for p, q in zip(a, b)]


def _check_program(call) -> None:
    xs, dxs = _rng_args()
    d0, d1 = call("tangent", [xs, dxs])
    fd0, fd1 = _fd(call, xs, dxs)
    np.testing.assert_allclose(d0, fd0, rtol=1e-5)
    np.testing.assert_allclose(d1, fd1, rtol=1e-5, atol=1e-7)
    ybar0, ybar1 = 0.7, np.linspace(-1, 1, len(xs))
    [xbar] = call("cotangent", [xs, np.float64(ybar0), ybar1])
    # The adjoint identity: <vjp f x ybar, dx> = <ybar, jvp f x dx>.
    assert np.dot(xbar, dxs) == pytest.approx(ybar0 * d0 + np.dot(ybar1, d1), rel=1e-9)
    y0, y1, e0, e1, z0, z1, xbar2 = call("both", [xs, dxs, np.float64(ybar0), ybar1])
    p0, p1 = call("primal", [xs])
    np.testing.assert_allclose([y0, z0], [p0, p0])
    np.testing.assert_allclose(np.stack([y1, z1]), np.stack([p1, p1]))
    np.testing.assert_allclose([e0], [d0])
    np.testing.assert_allclose(e1, d1)
    np.testing.assert_allclose(xbar2, xbar)
    dxss = np.stack([dxs, -dxs, np.ones_like(dxs)])
    for got, want in zip(call("tangents", [xs, dxss]), call("mapped_tangents", [xs, dxss])):
        np.testing.assert_allclose(got, want)
    ybar0s, ybar1s = np.array([0.5, -2.0]), np.stack([ybar1, ybar1[::-1]])
    [got] = call("cotangents", [xs, ybar0s, ybar1s])
    [want] = call("mapped_cotangents", [xs, ybar0s, ybar1s])
    np.testing.assert_allclose(got, want)
    y0, y1, t0, t1, z0, z1, xbars = call("both_vectors", [xs, dxss, ybar0s, ybar1s])
    np.testing.assert_allclose([y0, z0], [p0, p0])
    t0s, t1s = call("tangents", [xs, dxss])
    np.testing.assert_allclose(t0, t0s)
    np.testing.assert_allclose(t1, t1s)
    np.testing.assert_allclose(xbars, want)
    xbar, xsbar = call("tuple_arg", [np.float64(2.0), xs])
    assert _f64(xbar) == pytest.approx(xs.sum())
    np.testing.assert_allclose(xsbar, np.full_like(xs, 2.0))
    [hess] = call("hessian", [np.array([0.5, 2.0])])
    np.testing.assert_allclose(hess, [[0.0, 1.0], [1.0, 12.0]])


def test_program_on_the_core_interpreter(monkeypatch) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", ad.ForwardModeVjp)  # reverse mode throughout
        prog = _core(PROGRAM)
    _check_program(lambda entry, args: run(prog, entry, args))
    monkeypatch.setattr(ad, "REVERSE_MODE", False)
    forward = _core(PROGRAM)
    _check_program(lambda entry, args: run(forward, entry, args))


def test_forward_mode_where_reverse_mode_cannot_go() -> None:
    # A histogram by *: vjp says so, and runs by forward mode.
    src = ("entry main (xs: []f64) =\n"
           "  vjp (\\xs -> f64.sum (hist (*) 1 2 (map (% 2) (indices xs)) xs)) xs 1\n")
    with pytest.warns(ad.ForwardModeVjp, match=r"t.fut:2:3: vjp runs by forward mode.*"
                      r"does not handle histograms by operators other than \+, max and min"):
        prog = _core(src)
    [got] = run(prog, "main", [np.array([2.0, 3.0, 5.0, 7.0])])
    np.testing.assert_allclose(got, [5.0, 7.0, 2.0, 3.0])


def test_while_loops_in_reverse_mode(monkeypatch) -> None:
    src = """
entry main (xs: []f64) =
  vjp (\\xs -> let (ys, _) = loop (ys, k) = (copy xs, 0) while k < 4 && f64.sum ys < 100 do
                               (map (\\y -> y * 1.5 + f64.sin y) ys, k + 1)
               in f64.sum (map (\\y -> y * y) ys)) xs 1
"""
    with warnings.catch_warnings():
        warnings.simplefilter("error", ad.ForwardModeVjp)
        prog = _core(src)
    monkeypatch.setattr(ad, "REVERSE_MODE", False)
    xs = np.array([0.5, 1.0, 2.0])
    np.testing.assert_allclose(run(prog, "main", [xs])[0], run(_core(src), "main", [xs])[0])


# Everything here is within reverse mode: a map reading free arrays by
# index, reductions by * and min, scans by +, by * and of pairs, a
# loop carrying an array it
# updates in place, branches, a call, a histogram, a scatter (one write out
# of bounds), replicate, transpose, concat.
REVERSE_PROGRAM = """
def poly (x: f64) (c: f64) = c * x * x + f64.sin x

def g [n] (xs: [n]f64) : (f64, [n]f64) =
  let ys = map (\\x -> poly x 0.5) xs
  let p = reduce (*) 1 (map (\\y -> 1 + y * y) ys)
  let m = reduce f64.min 1e9 ys
  let zs = scan (+) 0 ys
  let zs = scan (*) 1 (map (\\z -> 1 + z * 0.1) zs)
  let (zs, _) = unzip (scan (\\(a, b) (c, d) -> (a * d + c, b * d)) (0, 1)
                            (zip zs (map (\\z -> 0.5 + z * 0.1) zs)))
  let gathered = map (\\i -> xs[(i + 1) % n] * zs[i]) (iota n)
  let ws = loop acc = copy gathered for i < 3 do
             let acc[i % n] = acc[i % n] * xs[(i + 1) % n]
             in map2 (\\a x -> if a > 0.5 then a * x else a - x) acc xs
  let h = hist (+) 0 2 (map (\\i -> i % 2) (indices xs)) ws
  let v = scatter (copy ws) [0, n + 5] [h[0] * h[1], 7]
  let t = transpose (replicate 2 v) |> flatten
  let u = concat t [p, m] :> [2 * n + 2]f64
  in (p + f64.sum u, map f64.exp ws)

entry primal (xs: []f64) = g xs
entry tangent (xs: []f64) (dxs: []f64) = jvp g xs dxs
entry cotangent (xs: []f64) (ybar0: f64) (ybar1: []f64) = vjp g xs (ybar0, ybar1)
entry cotangents (xs: []f64) (ybar0s: []f64) (ybar1s: [][]f64) = mjp g xs (zip ybar0s ybar1s)
"""


def _check_reverse(call, call_forward) -> None:
    xs, dxs = _rng_args()
    d0, d1 = call("tangent", [xs, dxs])
    ybar0, ybar1 = 0.7, np.linspace(-1, 1, len(xs))
    [xbar] = call("cotangent", [xs, np.float64(ybar0), ybar1])
    assert np.dot(xbar, dxs) == pytest.approx(ybar0 * d0 + np.dot(ybar1, d1), rel=1e-9)
    np.testing.assert_allclose(xbar, call_forward("cotangent", [xs, np.float64(ybar0), ybar1])[0])
    ybar0s, ybar1s = np.array([ybar0, -2.0]), np.stack([ybar1, ybar1[::-1]])
    [xbars] = call("cotangents", [xs, ybar0s, ybar1s])
    np.testing.assert_allclose(xbars[0], xbar)


def test_reverse_mode_on_the_core_interpreter(monkeypatch) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", ad.ForwardModeVjp)  # reverse mode throughout
        prog = _core(REVERSE_PROGRAM)
    monkeypatch.setattr(ad, "REVERSE_MODE", False)
    forward = _core(REVERSE_PROGRAM)
    _check_reverse(lambda entry, args: run(prog, entry, args),
                   lambda entry, args: run(forward, entry, args))


@pytest.fixture(scope="module")
def cpu_package(tmp_path_factory):
    path = Path(tmp_path_factory.mktemp("ad")) / "ad_program.fut"
    path.write_text(PROGRAM)
    return PackageBackend("cpu").compile(str(path))


def _flat(v) -> list:
    """A package's results (tuples as tuples) as the core interpreter's flat list."""
    if isinstance(v, tuple | list):
        return [x for item in v for x in _flat(item)]
    return [v]


def _package_call(pkg):
    return lambda entry, args: _flat(pkg.call(entry, [np.asarray(a) for a in args]))


@pytest.mark.filterwarnings("ignore::futgen.core.ad.ForwardModeVjp")
def test_program_through_the_cpu_package(cpu_package) -> None:
    _check_program(_package_call(cpu_package))


def _build(path: Path, backend: str):
    path.write_text(REVERSE_PROGRAM)
    return _package_call(PackageBackend(backend).compile(str(path)))


def _packages(root: Path, backend: str):
    """The reverse-mode program built as it is, and with vjp by forward mode."""
    built = _build(root / "ad_reverse.fut", backend)
    ad.REVERSE_MODE = False
    try:
        return built, _build(root / "ad_forward.fut", backend)
    finally:
        ad.REVERSE_MODE = True


def test_reverse_mode_through_the_cpu_package(tmp_path) -> None:
    _check_reverse(*_packages(tmp_path, "cpu"))


@pytest.mark.gpu
@pytest.mark.filterwarnings("ignore::futgen.core.ad.ForwardModeVjp")
def test_programs_through_the_cuda_package(tmp_path) -> None:
    path = tmp_path / "ad_program.fut"
    path.write_text(PROGRAM)
    _check_program(_package_call(PackageBackend("cuda").compile(str(path))))
    _check_reverse(*_packages(tmp_path, "cuda"))


# One case per rule of the return sweep: the gradient of `\\xs -> <body>`
# by reverse mode (no forward-mode warning allowed) against forward mode.
SWEEP_RULES = {
    "map": "map (\\x -> x * x + f64.sin x) xs |> f64.sum",
    "prod": "reduce (*) 1 xs",
    "min": "reduce f64.min 1e9 xs",
    "scan": "scan (+) 0 xs |> map (\\x -> x*x) |> f64.sum",
    "gather": "map (\\i -> xs[(i + 1) % length xs] * xs[i]) (indices xs) |> f64.sum",
    "loop": (
        "(loop acc = copy xs for i < 3 do let acc[i % length xs] = acc[i % length xs] *"
        " xs[(i + 1) % length xs] in map2 (\\a x -> if a > 0.5 then a * x else a - x) "
        "acc xs) |> f64.sum"),
    "loopupd": (
        "(loop acc = copy xs for i < 3 do let acc[i % length xs] = acc[i % length xs] *"
        " xs[(i + 1) % length xs] in acc) |> f64.sum"),
    "loopmap": (
        "(loop acc = copy xs for i < 3 do map2 (\\a x -> if a > 0.5 then a * x else a - "
        "x) acc xs) |> f64.sum"),
    "if": "map (\\x -> if x > 0.5 then x * x else x - 1) xs |> f64.sum",
    "rep": "(transpose (replicate 2 xs) |> flatten |> map (\\x -> x * x) |> f64.sum)",
    "concat": "(concat xs [f64.sum xs] |> map (\\x -> x * x) |> f64.sum)",
    "hist": (
        "hist (+) 0 3 (map (\\i -> i % 3) (indices xs)) (map (\\x -> x * x) xs) |> map "
        "(\\h -> h * h) |> f64.sum"),
    "rbi": (
        "reduce_by_index (copy xs) (+) 0 (map (\\i -> (i * 2) % 7) (indices xs)) (map "
        "f64.sin xs) |> map (\\h -> h * h) |> f64.sum"),
    "scatter": (
        "scatter (copy xs) [1, 3, 9] [xs[0] * xs[2], 3, xs[4]] |> map (\\h -> h * h * h)"
        " |> f64.sum"),
    "vecmax": (
        "reduce (map2 f64.max) (replicate 2 (-1e9)) (map (\\x -> [x * x, f64.sin x]) xs)"
        " |> map (\\v -> v * v) |> f64.sum"),
    "vecmul": "reduce (map2 (*)) [1, 1] (map (\\x -> [x + 1, x * 2]) xs) |> f64.sum",
    "histmax": (
        "reduce_by_index (map (\\x -> x * 0.5) xs) f64.max (-1e9) (map (\\i -> (i * 3) % "
        "4) (indices xs)) (map (\\x -> f64.sin x * 2) xs) |> map (\\h -> h * h) |> "
        "f64.sum"),
    "histmin": (
        "hist f64.min 1e9 3 (map (\\i -> i % 3) (indices xs)) (map (\\x -> x * x) xs) |> "
        "map (\\h -> h * h * h) |> f64.sum"),
    "scanmul": "scan (*) 1 xs |> map (\\x -> x * x) |> f64.sum",
    "scanmax": "scan f64.max (-1e9) (map f64.sin xs) |> map (\\x -> x * x * x) |> f64.sum",
    "while": (
        "(loop (acc, k) = (copy xs, 0) while k < 4 && f64.sum acc < 100 do (map (\\a -> "
        "a * 1.5 + 0.1) acc, k + 1)).0 |> map (\\x -> x * x) |> f64.sum"),
    "scanpair": (
        "scan (\\(a, b) (c, d) -> (a * d + c, b * d)) (0, 1) (zip xs (map (\\x -> x * 0.5 + "
        "0.6) xs)) |> unzip |> (\\(p, q) -> f64.sum (map2 (*) p q))"),
    "scalarloop": "(loop s = 0f64 for x in xs do s * 0.5 + x * x)",
}


@pytest.mark.parametrize("rule", sorted(SWEEP_RULES))
def test_each_sweep_rule_against_forward_mode(rule: str, monkeypatch) -> None:
    src = f"entry f (xs: []f64) = vjp (\\xs -> {SWEEP_RULES[rule]}) xs 1\n"
    xs = np.random.default_rng(1).uniform(0.2, 0.9, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ad.ForwardModeVjp)
        [reverse] = run(_core(src), "f", [xs])
    monkeypatch.setattr(ad, "REVERSE_MODE", False)
    [forward] = run(_core(src), "f", [xs])
    np.testing.assert_allclose(reverse, forward, rtol=1e-10, atol=1e-12)


def test_custom_derivatives() -> None:
    # `with_vjp`: vjp uses the given adjoint, jvp and the value the function.
    prog = _core("""
def f (x: f64) = with_vjp (\\x -> x * 2) (\\c a -> a + f64.sqrt c) x
entry value (x: f64) = f x
entry reverse (x: f64) = vjp f x 1
entry forward (x: f64) = jvp f x 1
entry in_map (xs: []f64) = vjp (\\xs -> f64.sum (map f xs)) xs 1
""")
    assert run(prog, "value", [np.float64(2.5)]) == [np.float64(5.0)]
    assert run(prog, "reverse", [np.float64(2.5)])[0] == pytest.approx(1 + np.sqrt(5.0))
    assert run(prog, "forward", [np.float64(2.5)]) == [np.float64(2.0)]
    xs = np.array([1.0, 2.0])
    np.testing.assert_allclose(run(prog, "in_map", [xs])[0], 1 + np.sqrt(2 * xs))


def test_custom_derivative_where_only_forward_mode_goes() -> None:
    # Forward mode would lose the custom derivative: an error, not a wrong result.
    with pytest.raises(UnsupportedFeature, match=r"t.fut:3:\d+: .*vjp through with_vjp.*"
                       r"histograms by operators other than"):
        _core("""
def f (x: f64) = with_vjp (\\x -> x * 2) (\\_ a -> a * 3) x
entry main (xs: []f64) = vjp (\\xs -> f64.sum (hist (*) 1 2 [0, 1] (map f xs))) xs 1
""")


# ------------------------------------------------------------ errors


def test_tangent_of_the_wrong_type_is_a_type_error() -> None:
    with pytest.raises(CompileError, match=r't.fut:2:\d+: Cannot apply "jvp"'):
        check_source("""
entry main (x: f64) = jvp (\\y -> y * 2) x 1i32
""", "t.fut")


def test_interpreter_says_differentiation_is_compiled_only() -> None:
    prog = check_source("entry main (x: f64) = jvp f64.sin x 1\n", "t.fut")
    with pytest.raises(UnsupportedFeature, match=r"t.fut:1:23: .*compiled backends"):
        Interpreter(prog).call("main", [np.float64(1)])
