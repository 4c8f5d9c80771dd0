"""Size rules of the type checker: what it rejects (with Futhark's wording)
and the valid programs it once rejected."""

import pytest
from checks import reject

from futgen.frontend import check_source
from futgen.frontend import syntax as S
from futgen.frontend.types import nonunique


def body_type(src: str, name: str) -> str:
    prog = check_source(src, "t.fut")
    d = next(d for d in prog.decls if isinstance(d, S.ValDecl) and d.name == name)
    return str(nonunique(d.body.ty))


@pytest.mark.parametrize(
    "src, message",
    [
        ("def f [n] (x: i32) = x", "Size [n] unused in pattern."),
        (
            "entry main [n] (x: i32) : [n]i32 = replicate n x",
            "Entry point functions must not be size-polymorphic in their return type",
        ),
        (
            "def main (xs: []i32) = let [n] ys = filter (> 0) xs in length ys",
            "Size [n] unused in pattern.",
        ),
        (
            "def main = let [n] (f: [n]i32 -> i32) = (\\(xs: [3]i32) -> xs[0]) in n",
            "Cannot bind [n] as it is never used as the size of a concrete",
        ),
        ("def main xs = map (\\x -> x) xs", "Entry point functions may not be polymorphic"),
        (
            "def main [m] (xs: [m]i32) (n: i64) = loop (ys: [n]i32) = xs for i < 2 do ys",
            "the loop parameter of type [n]i32 does not match the initial value of type [m]i32",
        ),
        (
            "def main = let [n] (a: [n]i64, b: [n]i64) = (iota 1, iota 2) in zip a b",
            "Pattern cannot match value of type (*[1]i64, *[2]i64)",
        ),
        (
            "def main [l] (xs: [l]i32) : [10]i32 = map (+ 1) xs",
            'Function body does not have expected type: Sizes "10" and "l" do not match.',
        ),
        (
            "def main [n] [m] (x: [n][m]i32) = x : []i32",
            "Expression does not have expected type from type ascription",
        ),
        (
            "entry main [x] (_: [x + 1]i32) = x",
            "Entry point size parameter [x] only used non-constructively.",
        ),
        ("def main (xs: []i32) (a: i32) = xs[a:]", "A slice bound must have type i64"),
        # Sizes that differ between branches, and the size of `++`, are new.
        (
            "def main (b: bool) (n: i64) (m: i64) : [2]i64 = if b then iota n else iota m",
            "The branches of if have types *[n]i64 and *[m]i64, not the expected [2]i64",
        ),
        ("def main (xs: []i32) (ys: []i32) : [10]i32 = xs ++ ys", 'Sizes "10" and'),
        # A size-parametric constant is computed at each use: no sizes it alone knows.
        (("def evens [n] = (iota n, filter (\\x -> x % 2 == 0) (iota n))\n"
          "entry main (k: i64) = k"),
         '"evens" is a size-polymorphic value binding'),
        ("def some [n] : ([n]i64, []i64) = (iota n, iota n)\nentry main (k: i64) = k",
         '"some" is a size-polymorphic value binding'),
    ],
)
def test_rejected(src: str, message: str) -> None:
    assert message in reject(src)


@pytest.mark.parametrize(
    "src, name, ty",
    [
        # Size parameters used in the result only, or in a point-free entry's type.
        ("def f [n] (x: i64) : [n]i64 = replicate n x", "f", "[n]i64"),
        ("def ramp [n] : [n]i64 = iota n\nentry main (k: i64) = ramp : [k]i64", "ramp",
         "[n]i64"),
        ("def g [n] (xs: [n]i32) = xs\nentry h [n] : [n]i32 -> [n]i32 = g", "h", "(xs: [n]i32) -> [n]i32"),
        # A lambda may name a dependent parameter differently from its type.
        (
            "type^ f = (k: i64) -> [k]i32 -> i64\ndef f : f = \\n (xs: [n]i32) -> length xs",
            "f",
            "(n: i64) -> (xs: [n]i32) -> i64",
        ),
        # Size parameters used only in size expressions.
        ("def step [k] (xs: [2 ** k]i32) : i32 = xs[0]", "step", "i32"),
        ("def main (xs: []i32) a b = xs[a:b]", "main", "[b - a]i32"),
        # One new size per pair of differing branch sizes; `[]` loop parameters vary.
        (
            ("def main (b: bool) = let (xs, ys) = if b then ([1, 2], [3, 4]) else ([1], [2])\n"
             "                     in zip xs ys"),
            "main",
            "[](i32, i32)",
        ),
        ("def main (n: i64) = loop (xs: []i64) = iota n for i < 2 do xs ++ xs", "main", "[]i64"),
        # A coercion leaves an implicit parameter size general.
        ("def c (xs: []i32) = (xs :> [1]i32)[0]", "c", "i32"),
    ],
)
def test_accepted(src: str, name: str, ty: str) -> None:
    assert body_type(src, name) == ty
