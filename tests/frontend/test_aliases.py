"""Uniqueness (frontend/aliases.py): programs rejected with Futhark's message
and the right place, and valid programs that consume and alias accepted and
computing the right values."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from checks import reject

from futgen.errors import register_source
from futgen.frontend import check_source
from futgen.frontend.aliases import base_id, flatten_alias, self_alias
from futgen.frontend.types import I64, Array, SizeConst, Tuple
from futgen.interp import Interpreter


def run(src: str, *args: Any) -> Any:
    """Check `src` and run its entry `main`; a single result is returned bare."""
    register_source("t.fut", src)
    r = Interpreter(check_source(src, "t.fut")).call("main", list(args))
    return r[0] if len(r) == 1 else r


def i32s(*xs: int) -> np.ndarray:
    return np.array(xs, dtype=np.int32)


# Each program with (part of) its message and its location.
REJECTED = [
    # Consuming what may not be consumed.
    pytest.param(
        "def main (xs: []i32) =\n  loop (ys: *[]i32) = xs for i < 2 do ys",
        'Consuming variable "xs", which is not consumable (a non-unique parameter)',
        "t.fut:2:23",
        id="unique-loop-param-consumes-init",
    ),
    pytest.param(
        "def main (xs: *[]i32) =\n  loop ys: []i32 = xs for i < 2 do ys with [i] = 0",
        'Consuming variable "ys", which is not consumable (a loop parameter of non-unique type)',
        "t.fut:2:36",
        id="non-unique-loop-param",
    ),
    pytest.param(
        "def main (n: i64) =\n  let xs = iota n\n  let g (i: i64) = let xs[0] = i in i\n  in g 1",
        'Consuming variable "xs", which is not consumable (it is bound outside the '
        "enclosing local function)",
        "t.fut:3:24",
        id="local-function-consumes-free",
    ),
    pytest.param(
        "def use (xs: *[]i64) : i64 = xs[0]\n"
        "def f [n] (xs: *[n]i64) (ys: [use xs]f32) = ys[0]",
        'Consuming variable "xs", which is not consumable (it is bound outside the '
        "enclosing size expression)",
        "t.fut:2:35",
        id="size-expression",
    ),
    pytest.param(
        "def f (g: i64 -> []i64) : i64 =\n  let ys = g 1\n  let ys[0] = 2\n  in ys[0]",
        'Consuming variable "g", which is not consumable (a non-unique parameter)',
        "t.fut:3:7",
        id="result-of-function-parameter",
    ),
    pytest.param(
        "type r = {a: []i32, b: i64}\n"
        "def main (r: r) : *[]i32 =\n  (r with b = 1).a",
        'Unique-typed return value of "main" is aliased to "r", which is not consumable.',
        "t.fut:3:4",
        id="record-update-keeps-aliases",
    ),
    # Using what was consumed.
    pytest.param(
        "def f (n: i64) : ([]i64, []i64) = let a = iota n in (a, a)\n"
        "def main (n: i64) =\n  let (a, b) = f n\n  let a[0] = 1\n  in b",
        'Using "b", an alias of the result of applying "f" (at t.fut:3:16), but this '
        "was consumed at t.fut:4:7.",
        "t.fut:5:6",
        id="two-results-of-one-call",
    ),
    pytest.param(
        "def main (xs: *[]i32) =\n  let f (i: i64) = xs[i]\n  let xs[0] = 1\n  in f 0",
        'Using "f", an alias of "xs", but this was consumed at t.fut:3:7.',
        "t.fut:4:6",
        id="closure-of-local-function",
    ),
    pytest.param(
        "def main (xs: *[]i32) =\n  let ys = xs\n"
        "  in loop zs = ys for i < 2 do zs with [i] = xs[0]",
        'Loop body uses "xs" (or an alias), but this is consumed by the initial loop argument.',
        "t.fut:3:6",
        id="loop-body-uses-consumed-init",
    ),
    pytest.param(
        "def main (xs: *[]i32) =\n"
        "  loop (ys, i) = (xs, 0) while xs[0] > i do (ys with [0] = 1, i + 1)",
        'Loop condition uses "xs" (or an alias)',
        "t.fut:2:3",
        id="loop-condition-uses-consumed-init",
    ),
    # Unique results and arguments that alias each other.
    pytest.param(
        "def main (n: i64) : (*[]i64, *[]i64) = let a = iota n in (a, a)",
        "A unique-typed component of the return value of \"main\" is aliased to some "
        "other component.",
        "t.fut:1:",
        id="unique-components-alias",
    ),
    pytest.param(
        "def f (p: (*[]i32, *[]i32)) : i32 = p.0[0]\n"
        "def main (xs: *[]i32) = f (xs, xs)",
        "Argument passed for consuming parameter is self-aliased.",
        "t.fut:2:27",
        id="self-aliased-argument",
    ),
    pytest.param(
        "def f (a: *[]i32) (b: []i32) : i32 = b[0]\n"
        "def main (xs: *[]i32) = f xs xs[1:]",
        'Argument is consumed, but aliases "xs", which is also aliased by another argument',
        "t.fut:2:27",
        id="consumed-argument-aliases-other",
    ),
    pytest.param(
        "def main (n: i64) =\n"
        "  loop (a: *[]i64, b: *[]i64) = (iota n, iota n) for i < 2 do (a, a)",
        'Return value for loop parameter "b" aliases other consumed loop parameter.',
        "t.fut:2:3",
        id="loop-params-alias-each-other",
    ),
    pytest.param(
        "def main (n: i64) =\n  let c = iota n\n"
        "  in loop a = iota n for i < 2 do let a[0] = 1 in c",
        'Return value for consuming loop parameter "a" aliases "c".',
        "t.fut:3:6",
        id="loop-returns-free-for-consumed-param",
    ),
    pytest.param(
        "def main (xs: []i32) = (\\(ys: []i32) : *[]i32 -> ys) xs",
        'Unique-typed return value of the lambda is aliased to "ys"',
        "t.fut:1:25",
        id="lambda-unique-result",
    ),
    # Functions that consume where they may not.
    pytest.param(
        "def f (a: *[]i64) (i: i64) : i64 = let a[0] = i in a[0]\n"
        "def main (n: i64) = let a = iota n in map (f a) (iota n)",
        'Argument #1 of "map" of functional type contains consumption (of "a")',
        "t.fut:2:44",
        id="partial-application-consumes",
    ),
    pytest.param(
        "def twice 'a (g: a -> i32) (x: a) = g x + g x\n"
        "def eat (xs: *[]i32) : i32 = 0\n"
        "def main (xs: *[]i32) = twice eat xs",
        'Cannot apply "twice" to "eat": a function consuming its argument',
        "t.fut:3:31",
        id="consuming-function-as-argument",
    ),
    pytest.param(
        "def eat (xs: *[]f32) : f32 = 0\nentry main : []f32 -> f32 = eat",
        "Function body does not have expected type",
        "t.fut:2:29",
        id="consuming-function-ascribed",
    ),
    pytest.param(
        "def g : []i32 = [1, 2]\ndef main = \\(b: bool) -> if b then g else [3]",
        'Function result aliases the free variable "g"',
        "t.fut:2:12",
        id="lambda-returns-global",
    ),
    pytest.param(
        "def main (a: *[][]i32) : [][]i32 = a with [0] = a[1]",
        "Source array for in-place update might alias the update value.",
        "t.fut:1:49",
        id="update-value-aliases-source",
    ),
]


@pytest.mark.parametrize("src, message, where", REJECTED)
def test_rejected(src: str, message: str, where: str) -> None:
    text = reject(src)
    assert message in text
    assert text.startswith(f"Error at {where}")


def test_update_value_is_read_before_the_source_is_consumed() -> None:
    src = "def main (xs: *[]i32) = (xs with [1] = xs[0]) with [2] = xs[2]"
    # Futhark evaluates the value of `with` before its source: xs[2] is read
    # before the inner update consumes xs.
    assert run(src, i32s(5, 6, 7)).tolist() == [5, 5, 7]


def test_update_of_two_tuple_components() -> None:
    src = (
        "def f [n] (p: *([n]i32, [n]i32)) = (p with 0[0] = 1) with 1[0] = 2\n"
        "def main [n] (a: *[n]i32) (b: *[n]i32) = f (a, b)"
    )
    a, b = run(src, i32s(0, 0), i32s(0, 0))
    assert a.tolist() == [1, 0] and b.tolist() == [2, 0]


def test_distinct_components_of_a_tuple_may_be_unique_results() -> None:
    src = "def main (n: i64) : (*[]i32, *[]i32) =\n  let p = (replicate n 1, replicate n 2)\n  in (p.0, p.1)"
    a, b = run(src, np.int64(2))
    assert a.tolist() == [1, 1] and b.tolist() == [2, 2]


def test_distinct_record_fields_as_loop_results() -> None:
    src = (
        "def main (n: i64) =\n"
        "  let r = loop {a = a: *[]i64, b = b: *[]i64} = {a = iota n, b = iota n}\n"
        "    for i < n do {a = a with [i] = 0, b = b}\n"
        "  in r.a"
    )
    assert run(src, np.int64(3)).tolist() == [0, 0, 0]


def test_loop_consumes_a_copy_and_uses_the_original() -> None:
    src = (
        "def main (xs: []i32) =\n"
        "  loop ys = copy xs for i < length xs do ys with [i] = xs[i] * 2"
    )
    assert run(src, i32s(1, 2, 3)).tolist() == [2, 4, 6]


def test_lambda_consuming_its_own_values() -> None:
    src = (
        "def main (n: i64) =\n"
        "  map (\\i -> let xs = iota 3 let xs[0] = i in xs[0] + xs[2]) (iota n)"
    )
    assert run(src, np.int64(3)).tolist() == [2, 3, 4]


def test_consuming_a_prim_typed_alias_is_no_consumption() -> None:
    # `n`'s type is unknown when `f n` is checked, yet it aliases nothing.
    src = (
        "def f (n: i64) : []i64 = iota n\n"
        "def main n = let a = f n let a[0] = 7 in (a, n)"
    )
    a, n = run(src, np.int64(2))
    assert a.tolist() == [7, 1] and n == 2


def test_self_alias_names_components() -> None:
    t = Tuple((Array(I64, (SizeConst(2),)), I64))
    al = self_alias("p#3", t, (frozenset({"xs#1"}), frozenset()))
    assert al == (frozenset({"xs#1", "p#3#0"}), frozenset())
    assert {base_id(u) for u in flatten_alias(al)} == {"xs#1", "p#3"}


def test_builtin_with_unique_result_stands_for_a_unique_function() -> None:
    # `copy : t -> *t`: the `*` of its result survives instantiation.
    src = (
        "def dup : []i32 -> *[]i32 = copy\n"
        "def apply (g: []i32 -> *[]i32) (xs: []i32) = g xs with [0] = 9\n"
        "def main (xs: []i32) = (apply copy xs, dup xs)"
    )
    a, b = run(src, i32s(1, 2))
    assert a.tolist() == [9, 2] and b.tolist() == [1, 2]
