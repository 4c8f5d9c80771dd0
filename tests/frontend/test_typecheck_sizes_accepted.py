"""Sizes Futhark accepts that the checker once rejected: `++`'s result is
`[n + m]` (the prelude's type), its operands' sizes stay their own, and a
record update may change a field's sizes.  Each comes with a close
program Futhark still rejects; the programs that run are run on the
interpreter and on the CPU backend."""

from __future__ import annotations

from pathlib import Path

import pytest
from checks import accept, reject

from futgen.testing import TestOptions, run_tests

# ------------------------------------------------------------------ `++`


def test_concatenations_of_the_same_sizes_have_one_size() -> None:
    accept("def f [n] (xs: [n]f64) =\n"
           "  let is = iota n ++ replicate n 0i64\n"
           "  in scatter (copy xs) is (xs ++ replicate n xs[0])\n")
    accept("def f [n] [m] (xs: [n]i32) (ys: [m]i32) : [n + m]i32 = xs ++ ys\n")
    accept("def f [n] (xs: [n]i32) = zip (xs ++ xs ++ xs) ((xs ++ xs) ++ xs)\n")


def test_concatenation_sizes_are_compared_as_written() -> None:
    msg = reject("def f [n] [m] (xs: [n]i32) (ys: [m]i32) =\n"
                 "  zip (xs ++ ys) (ys ++ xs)\n")
    assert 'Sizes "n + m" and "m + n" do not match' in msg and "t.fut:2:19" in msg
    msg = reject("def f [n] (xs: [n]i32) = zip (xs ++ xs ++ xs) (xs ++ (xs ++ xs))\n")
    assert 'Sizes "n + n + n" and "n + (n + n)" do not match' in msg
    assert "t.fut:1:48" in msg
    msg = reject("def f = zip ([1, 2] ++ [3]) [1, 2, 3i32]\n")
    assert 'Sizes "2 + 1" and "3" do not match' in msg and "t.fut:1:29" in msg


def test_concatenation_of_an_unknown_size_equals_no_other() -> None:
    msg = reject("def f [n] (xs: [n]i32) =\n"
                 "  zip (filter (> 0) xs ++ xs) (filter (> 0) xs ++ xs)\n")
    assert "do not match" in msg and "t.fut:2:32" in msg


def test_an_operand_keeps_its_own_size() -> None:
    # `verts ++ [k]` once made `verts` of size 1.
    accept("def push (verts: []i32) (k: i32) = verts ++ [k]\n"
           "def f [n] (vs: [n]i32) = push vs 0\n")
    msg = reject("def push (verts: []i32) (k: i32) = zip verts [k]\n"
                 "def f [n] (vs: [n]i32) = push vs 0\n")
    assert 'Sizes "1" and "n" do not match' in msg and "t.fut:2:31" in msg


def test_a_recursive_use_may_not_give_map_a_size_of_its_parameter() -> None:
    # `map g` with `g: (k: i64) -> [k]i32`: found once the body is checked.
    accept("def g (k: i64) : i64 = if k == 0 then 0 else (map g [k - 1])[0] + 1\n")
    msg = reject("def g (k: i64) : [k]i32 =\n"
                 "  if k == 0 then [] :> [k]i32\n"
                 "  else (let r = map g [k - 1] in [1] ++ r[0]) :> [k]i32\n")
    assert 'recursive use of "g": a size would be the function\'s parameter "k"' in msg
    assert "t.fut:1:1" in msg


# ------------------------------------------------------------------ record updates


def test_a_record_update_may_change_a_field_size() -> None:
    accept("def f [n] [m] (xs: [n]i32) (ys: [m]i32) : [m]i32 =\n"
           "  let r = {xs, ys} with xs = ys in map2 (+) r.xs r.ys\n")
    accept("def f [n] [m] (xs: [n][2]i32) (ys: [m][3]i32) =\n"
           "  let r = {a = {xs}, b = (xs, 1i32)} with a.xs = ys in zip r.a.xs ys\n")
    accept("def f [n] [m] (xs: [n]i32) (ys: [m]i32) = zip ((xs, 0i32) with 0 = ys).0 ys\n")


def test_an_updated_field_has_the_new_size_only() -> None:
    msg = reject("def f [n] [m] (xs: [n]i32) (ys: [m]i32) =\n"
                 "  let r = {xs, ys} with xs = ys in zip r.xs xs\n")
    assert 'Sizes "m" and "n" do not match' in msg and "t.fut:2:45" in msg
    msg = reject("def f [n] [m] (xs: [n]i32) (ys: [m]i32) : {xs: [n]i32, ys: [m]i32} =\n"
                 "  {xs, ys} with xs = ys\n")
    assert 'Sizes "n" and "m" do not match. (in field xs)' in msg and "t.fut:2:3" in msg


def test_a_record_update_keeps_the_field_element_type_and_rank() -> None:
    msg = reject("def f [n] [m] (xs: [n]i32) (ys: [m]f32) = {xs, ys} with xs = ys\n")
    assert 'Type mismatch when updating record field "xs": types i32 and f32' in msg
    assert "t.fut:1:62" in msg
    msg = reject("def f [n] [m] (xs: [n]i32) (ys: [m][2]i32) = {xs, ys} with xs = ys\n")
    assert 'updating record field "xs"' in msg and "different ranks" in msg
    assert "t.fut:1:65" in msg


# ------------------------------------------------------------------ run

PROGRAM = """\
-- ==
-- input { [1i64, 2i64, 3i64] [7i64, 8i64] }
-- output { 8i64 5i64 [0i64, 1i64, 2i64, 0i64, 0i64, 0i64] [7i64, 8i64] 3i64 }

def len [k] 't (_: [k]t) = k

entry main [n] [m] (xs: [n]i64) (ys: [m]i64) =
  let is = iota n ++ replicate n 0i64
  let s = i64.sum (map2 (*) is (xs ++ map (+ 1) xs))
  let r = {xs, ys} with xs = ys
  in (s, len (xs ++ ys), is, map2 (+) r.xs (map (* 0) r.ys), len r.xs + 1)
"""


@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
def test_concatenation_and_record_update_sizes_run(backend: str, tmp_path: Path) -> None:
    program = tmp_path / "sizes.fut"
    program.write_text(PROGRAM)
    report = run_tests([program], TestOptions(backend=backend, timeout=300.0))
    [result] = report.results
    assert result.status == "passed", str(report)
    assert result.run_counts()["passed"] == 1
