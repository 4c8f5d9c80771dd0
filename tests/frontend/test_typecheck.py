"""Type checker: inferred types, and every kind of rejected program with its message."""

import pytest
from checks import reject

from futgen.frontend import check_source
from futgen.frontend import syntax as S
from futgen.frontend.types import nonunique


def decl(src: str, name: str) -> S.ValDecl:
    prog = check_source(src, "t.fut")
    return next(d for d in prog.decls if isinstance(d, S.ValDecl) and d.name == name)


def body_type(src: str, name: str = "main") -> str:
    return str(nonunique(decl(src, name).body.ty))


@pytest.mark.parametrize(
    "src, ty",
    [
        ("def main (x: i32) = x + 1", "i32"),
        ("def main (x: f32) = x * 2", "f32"),
        ("def main = 1", "i32"),
        ("def main = 1.5", "f64"),
        ("def main (xs: []f32) = reduce (+) 0 xs", "f32"),
        ("def main [n] (xs: [n]f32) = map (\\x -> x > 0) xs", "[n]bool"),
        ("def main (xs: []i32) = scan (+) 0 xs", "[]i32"),
        ("def main (n: i64) = replicate n 0f32", "[n]f32"),
        ("def main (n: i64) = iota n", "[n]i64"),
        ("def main (xs: [](i32, f32)) = map (\\p -> p.1) xs", "[]f32"),
        ("def main (xs: []i32) (ys: []f32) = unzip (zip xs ys)", "([]i32, []f32)"),
        ("def main (x: i32) = {a = x, b = true}", "{a: i32, b: bool}"),
        ("def main (x: i32) = let (a, b) = (x, 2u8) in b", "u8"),
        ("def main (xs: [][]i32) = xs[0]", "[]i32"),
        ("def main (xs: [3][4]i32) = transpose xs", "[4][3]i32"),
        ("def main (xs: []i32) = xs |> map (+1) |> reduce (*) 1", "i32"),
        ("def main = loop (a, b) = (0, 1) for i < 10 do (b, a + b)", "(i32, i32)"),
        ("def main (x: f32) = f32.sqrt x + f32.pi", "f32"),
        ("def main (x: i32) = f64.i32 x", "f64"),
        ("type pt = {x: f32, y: f32}\ndef main (p: pt) = p.x", "f32"),
        ("type vec [n] = [n]f32\ndef main [n] (v: vec [n]) = v", "[n]f32"),
        ("def id 't (x: t) = x\ndef main = (id 1i8, id true)", "(i8, bool)"),
        ("def main (xs: []i32) = length xs", "i64"),
        ("def main (x: u8) = x >> 2", "u8"),
    ],
)
def test_inferred_types(src, ty):
    assert body_type(src) == ty


def test_literal_types_are_resolved():
    d = decl("def main (xs: []f32) = reduce (+) 0 xs", "main")
    lit = d.body.args[1]
    assert str(lit.ty) == "f32"


def test_local_function_and_polymorphism():
    src = "def main (x: i32) =\n  let twice 'a (f: a -> a) (y: a) = f (f y)\n  in (twice (+1) x, twice (\\b -> !b) true)"
    assert body_type(src) == "(i32, bool)"


@pytest.mark.parametrize(
    "src, message, where",
    [
        ("def main (x: i32) = x + true", "do not match", "t.fut:1:"),
        ("def main (x: i32) = y", 'Unknown name "y"', "t.fut:1:21"),
        ("def main (x: i32) : bool = x", "do not match", "t.fut:1:"),
        ("def main (x: i32) = if x then 1 else 2", "bool", "t.fut:1:"),
        ("def main (xs: []i32) = xs.foo", 'field "foo"', "t.fut:1:"),
        ("def main (x: i32) = x 1", "as function, as it has type i32", "t.fut:1:"),
        ("def main (x: qq) = x", 'Unknown type "qq"', "t.fut:1:"),
        (
            "def main [n][m] (xs: [n]i32) (ys: [m]i32) = map2 (+) xs ys",
            'Sizes "n" and "m" do not match',
            "t.fut:1:",
        ),
        (
            "def main (xs: [3]i32) : [4]i32 = xs",
            'Sizes "4" and "3" do not match',
            "t.fut:1:",
        ),
        ("def main (xs: []i32) = xs with [0] = 1", 'Consuming variable "xs"', "t.fut:1:24"),
        (
            "def main (xs: *[]i32) = let ys = xs with [0] = 1 in xs[0] + ys[0]",
            'Using "xs", but this was consumed at t.fut:1:',
            "t.fut:1:53",
        ),
        (
            "def main (xs: *[]i32) = let ys = xs[1:] let zs = xs with [0] = 1 in ys[0]",
            'Using "ys", an alias of "xs", but this was consumed at t.fut:1:',
            "t.fut:1:",
        ),
        (
            "def main (xs: *[]i32) = map (\\i -> (xs with [i] = 0)[0]) (iota 3)",
            'Consuming variable "xs", which is not consumable (it is bound outside the enclosing lambda)',
            "t.fut:1:",
        ),
        (
            "def g : []i32 = [1, 2]\ndef main (i: i64) = g with [i] = 0",
            "not consumable (a global constant)",
            "t.fut:2:",
        ),
        ("def main (xs: []i32) = scatter xs [0] [1]", 'Consuming variable "xs"', "t.fut:1:"),
        (
            "def f (xs: *[]i32) = xs\ndef main (xs: *[]i32) = (f xs, xs)",
            'Using "xs"',
            "t.fut:2:",
        ),
        ("entry main 't (x: t) = x", "Entry point", "t.fut:1:"),
        ("entry main (f: i32 -> i32) = f 1", "higher-order", "t.fut:1:"),
        # Functions may not be chosen by an if, even inside a tuple, nor be
        # loop parameters (Futhark's rules, checked once types are known).
        ("def main (b: bool) (x: i32) = (if b then (+ 1) else (* 2)) x",
         "but if-results may not be of function type.", "t.fut:1:32"),
        (("def main (b: bool) =\n  let p = \\(q: (i32, i32 -> i32)) -> if b then q else q\n"
          "  in (p (1, (+ 1))).1 2"), "If-expression returns type\n  (i32, i32 -> i32)", "t.fut:2:"),
        ("def main (n: i32) = (loop f = (+ 1) for i < n do (\\x -> f (x + 1))) 0",
         "but a loop parameter may not be of function type.", "t.fut:1:"),
        # Recursion, as Futhark allows it: first-order results, and higher-order
        # parameters (lifted type parameters count) passed along unchanged in
        # saturated applications.
        ("def f (k: i64) : i64 -> i64 = \\y -> if k == 0 then y else f (k - 1) y",
         'Recursive function "f" returns type\n  i64 -> i64\nwhich is not first-order', "t.fut:1:1"),
        ("def f (k: i64) : (i64, i64 -> i64) = (k, \\y -> if k == 0 then y else (f (k - 1)).1 y)",
         "which is not first-order", "t.fut:1:1"),
        ("def f (g: i64 -> i64) (k: i64) : i64 = if k == 0 then g 1 else f (\\y -> g y + 1) (k - 1)",
         'Higher-order argument in recursive application of "f" must be passed unchanged', "t.fut:1:67"),
        ("def f (g: i64 -> i64) (k: i64) : i64 = if k == 0 then g 1 else let h = f g in h (k - 1)",
         'Recursive application of "f" is not fully saturated: expected 2 arguments but got 1',
         "t.fut:1:"),
        ("def f (g: i64 -> i64) (k: i64) : i64 = if k == 0 then g 1 else let h = f in h g (k - 1)",
         'Recursive reference to "f" must be a fully saturated application', "t.fut:1:"),
        ("def f '^a (x: a) (h: a -> a) (k: i64) : i64 = if k == 0 then 0 else f (h x) h (k - 1)",
         "must be passed unchanged", "t.fut:1:"),
    ],
)
def test_rejected(src, message, where):
    text = reject(src)
    assert message in text
    assert where in text


@pytest.mark.parametrize(
    "src",
    [
        "def f (g: i64 -> i64) (k: i64) : i64 = if k == 0 then g 1 else f g (k - 1)",
        "def f (k: i64) (acc: i64) : i64 = if k == 0 then acc else let h = f (k - 1) in h (acc + k)",
        # A local binding of the same name is not a recursive use.
        "def f (g: i64 -> i64) (k: i64) : i64 = let f = \\(y: i64) -> y + 1 in f (g k)",
    ],
)
def test_recursion_allowed(src):
    check_source(src, "t.fut")


def test_allowed_consumption():
    src = (
        "def main (n: i64) =\n"
        "  let xs = iota n\n"
        "  let xs = xs with [0] = 5\n"
        "  let ys = loop acc = copy xs for i < n do acc with [i] = acc[i] * 2\n"
        "  in (xs, ys)\n"
    )
    assert body_type(src) == "([n]i64, [n]i64)" or "i64" in body_type(src)


def test_branches_may_consume_independently():
    src = (
        "def main (b: bool) (xs: *[]i32) =\n"
        "  if b then xs with [0] = 1 else xs with [1] = 2\n"
    )
    decl(src, "main")


@pytest.mark.parametrize(
    "src, message",
    [
        (
            "def main (n: i64) : [n]bool =\n  loop (a: [n]bool) = replicate n true for i < 3 do replicate 3 true",
            'Loop body does not have expected type: Sizes "n" and "3" do not match',
        ),
        (
            "def f (x: []i32) : []i32 = x\ndef main (a: []i32) : *[]i32 = f a",
            'Unique-typed return value of "main" is aliased to "a"',
        ),
    ],
)
def test_rejected_strict(src, message):
    assert message in reject(src)


@pytest.mark.parametrize(
    "src, message",
    [
        ("type t = {x: i32, x: i32}", "Duplicate fields in record type: x."),
        (
            "def main (x: i32) = let {x = a, x = b} = {x} in a + b",
            "Duplicate fields in record pattern: x.",
        ),
        (
            "def main (x: i32) = {a = x, a = x}",
            'Field "a" previously defined at t.fut:1:26.',
        ),
        (
            "def main (x: i32) = let r: {a: i32, b: i32} = {a = x} in r.a",
            "unshared fields: b.",
        ),
    ],
)
def test_record_errors(src, message):
    assert message in reject(src)


def test_unique_component_of_tuple_result_only():
    decl("def f (c: *[]i32) (p: []i32) : (*[]i32, []i32) = (c, p)", "f")


def test_size_products_give_unflatten_its_sizes():
    src = "def main (n: i64) (m: i64) = unflatten (iota (n * m))"
    assert body_type(src) == "[n][m]i64"
