"""Errors of the type checker worded as Futhark words them, at the right place."""

import pytest

from futgen.errors import CompileError
from futgen.frontend import check_source


@pytest.mark.parametrize("src, message", [
    ("def main = true 3", "Cannot apply expression as function, as it has type bool."),
    ("def main (x: i32) = x 1", 'Cannot apply "x" as function, as it has type i32.'),
    ("def f (x: i32) (y: f64) : f64 = f64.i32 x + y\ndef main : f64 = f 2 2.0 3",
     'Cannot apply "f" to argument #3: it takes 2 arguments'),
    ("def g (x: i32) = x\ndef main = g 1 2", 'it takes 1 argument (type (x: i32) -> i32)'),
])
def test_applying_a_non_function(src: str, message: str) -> None:
    with pytest.raises(CompileError) as e:
        check_source(src, "t.fut")
    assert message in str(e.value)
    assert "t.fut:" in str(e.value)


@pytest.mark.parametrize("src, message", [
    ("def main (x: (i32, i8)) : (i8, i8) = x", "types i8 and i32 do not match (in field 0)"),
    ("def main (x: {a: (i32, bool)}) : {a: (i32, i32)} = x",
     "types i32 and bool do not match (in field a.1)"),
])
def test_mismatched_fields_are_named(src: str, message: str) -> None:
    with pytest.raises(CompileError) as e:
        check_source(src, "t.fut")
    assert message in str(e.value)


@pytest.mark.parametrize("src, where, fields", [
    ("def f = (.a)", "t.fut:1:9", "a"),
    ("def g r = r.x + r.y", "t.fut:1:11", "x"),
])
def test_a_projection_from_a_record_of_no_known_type_is_ambiguous(src: str, where: str,
                                                                   fields: str) -> None:
    """Futhark infers no record types from projections alone."""
    with pytest.raises(CompileError) as e:
        check_source(src, "t.fut")
    assert str(e.value).startswith(f"Error at {where}: Type of ")
    assert f"is ambiguous: a record with field(s) {fields}" in str(e.value)


def test_a_projection_from_a_known_record_type_is_fine() -> None:
    check_source("def g (r: {x: i32, y: i32}) = r.x + r.y\n"
                 "def h = \\(r: {a: f32}) -> r.a", "t.fut")


def test_an_array_of_a_lifted_type_parameter_is_rejected() -> None:
    """Values of a `'~b` (or `'^b`) may differ in size: no array of them."""
    with pytest.raises(CompileError) as e:
        check_source("def two '~b (f: i64 -> b) = [f 0, f 1]", "t.fut")
    assert str(e.value).startswith('Error at t.fut:1:29: An array element may not have the '
                                   'lifted type "b"')
    check_source("def two 'b (f: i64 -> b) = [f 0, f 1]", "t.fut")


def test_an_infinite_type_fails_the_occurs_check() -> None:
    with pytest.raises(CompileError) as e:
        check_source("def self_apply f = f f", "t.fut")
    assert "Occurs check: cannot instantiate" in str(e.value)
    assert str(e.value).startswith("Error at t.fut:1:")


@pytest.mark.parametrize("src, message, where", [
    # a type is not in scope in its own definition
    ("type pair = (i32, pair)\n", 'Unknown type "pair"', "t.fut:1:19"),
    ("def f (p: {a: i64, b: bool}) = p with b = 1i64\n",
     'Type mismatch when updating record field "b"', "t.fut:1:43"),
    (("def f (ys: *[]i64) (k: i64) = ys with [k] = 0\n"
      "def g (zs: *[]i64) = let h = f zs in (h 0, h 1)\n"),
     "error-index.html#contains-consumption", "t.fut:2:30"),
    ("def g (xs: []i64) = (\\h -> h (filter (> 1) xs)) (\\(_: []i64) -> 2i64)\n",
     "error-index.html#causality-check", "t.fut:"),
    # a type that needs a field, met by a record without it, or by a number
    ("def f r = let y = r.b in (r : {a: i32}, y)\n",
     "Cannot unify record type with fields {b: ", "t.fut:1:27"),
    (("def same 'a (x: a) (y: a) = y\n"
      "def f = same (\\s -> s.a + 1i32) (\\s -> s + 1i32)\n"),
     "Cannot unify type that must be one of", "t.fut:2:"),
])
def test_messages_with_futharks_words(src: str, message: str, where: str) -> None:
    with pytest.raises(CompileError) as e:
        check_source(src, "t.fut")
    assert message in str(e.value) and where in str(e.value), str(e.value)


def test_a_function_without_a_name_is_called_function() -> None:
    """A section or lambda applied to a bad argument: Futhark's "Cannot apply
    function to", with the parameter's type as it was before unifying."""
    with pytest.raises(CompileError) as e:
        check_source("def g (p: {b: bool}) = (.b[0]) p", "t.fut")
    assert str(e.value).startswith('Error at t.fut:1:32: Cannot apply function to "p": '
                                   "expected type ?t"), str(e.value)
    assert ", got {b: bool} (" in str(e.value)


def test_a_parameter_type_fixed_by_defaulting_is_explained() -> None:
    """`twice` is i32 -> i32, as `x * 2` alone cannot tell which number."""
    with pytest.raises(CompileError) as e:
        check_source("def twice x = x * 2\ndef h = twice 0.5f32", "t.fut")
    assert str(e.value).startswith('Error at t.fut:2:15: Cannot apply "twice" to argument #1: '
                                   "expected type i32, got f32 (types i32 and f32 do not match)."
                                   '\nThe type of parameter #1 of "twice" was ambiguous (at '
                                   "t.fut:1:17): Defaulting ambiguous type to i32."), str(e.value)
    with pytest.raises(CompileError) as e:  # a declared parameter type was not defaulted
        check_source("def scale (k: i32) x = k * x\ndef h = scale 0.5f32 1", "t.fut")
    assert "Defaulting" not in str(e.value)


def test_a_size_and_an_expression_of_it_fail_the_occurs_check() -> None:
    """A function of type `a -> a` may not grow its argument."""
    with pytest.raises(CompileError) as e:
        check_source("def keep 't (f: t -> t) (x: t) = f x\n"
                     "def h [m] (ys: [m]bool) = keep (\\zs -> zs ++ zs) ys", "t.fut")
    assert str(e.value).startswith('Error at t.fut:2:33: type mismatch: Sizes "m + m" and "m" '
                                   'do not match.\nOccurs check: "m" occurs in "m + m", so the '
                                   "two cannot be unified."), str(e.value)
