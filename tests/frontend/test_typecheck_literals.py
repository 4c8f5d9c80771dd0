"""Literals out of range for their inferred type (`frontend/literals.py`),
Futhark's rule: an unsuffixed literal must fit the type inference gives it,
a negated integer literal as a negative number, and a float literal may
not round to infinity.  Each rejected program has a close accepted
variant."""

from checks import accept, reject


def test_an_integer_literal_beyond_its_type() -> None:
    msg = reject("def f (x: u8) =\n  x + 300\n")
    assert "t.fut:2:7" in msg
    assert "Literal 300 out of bounds for inferred type u8." in msg
    accept("def f (x: u8) =\n  x + 255\n")
    accept("def f (x: u8) =\n  x + 300u8\n")  # suffixed literals wrap, unchecked


def test_a_negated_literal_is_checked_as_a_negative_number() -> None:
    msg = reject("def f (x: i16) =\n  x * -32769\n")
    assert "t.fut:2:7" in msg
    assert "Literal -32769 out of bounds for inferred type i16." in msg
    accept("def f (x: i16) =\n  x * -32768\n")
    msg = reject("def f (x: u32) =\n  x - -1\n")
    assert "t.fut:2:7" in msg
    assert "Literal -1 out of bounds for inferred type u32." in msg


def test_a_literal_defaulted_to_i32() -> None:
    msg = reject("def big = 3000000000\n")
    assert "t.fut:1:11" in msg
    assert "Literal 3000000000 out of bounds for inferred type i32." in msg
    accept("def big = 3000000000i64\n")
    accept("def big : i64 = 3000000000\n")


def test_a_float_literal_that_rounds_to_infinity() -> None:
    msg = reject("def f (x: f32) =\n  x < 4e38\n")
    assert "t.fut:2:7" in msg
    assert "out of bounds for inferred type f32." in msg
    accept("def f (x: f32) =\n  x < 3e38\n")
    accept("def f (x: f64) =\n  x < 4e38\n")
    msg = reject("def huge : f64 = 2e308\n")
    assert "t.fut:1:18" in msg
    assert "Literal 2e308 out of bounds for inferred type f64." in msg


def test_an_integer_literal_as_a_float() -> None:
    msg = reject("def f (x: f16) =\n  x + 70000\n")
    assert "t.fut:2:7" in msg
    assert "Literal 70000 out of bounds for inferred type f16." in msg
    accept("def f (x: f16) =\n  x + 60000\n")
