"""Which values the built-in `==` may compare (`equality.py`): not values
of a type parameter, nor of a type nothing determines.  Each rejected
program with its message and location, and a close variant accepted."""

from checks import accept, reject


def test_values_of_a_type_parameter_are_not_compared() -> None:
    msg = reject("def same 'a (x: a) (y: [2]a) = y[0] == x\n")
    assert "t.fut:1:37" in msg
    assert "Comparing equality of values of type\n  a\nwhich does not support equality." in msg


def test_values_of_a_type_parameter_in_a_tuple_are_not_compared() -> None:
    msg = reject("def same 'a (p: (i32, a)) = p == p\n")
    assert "t.fut:1:31" in msg
    assert "(i32, a)\nwhich does not support equality." in msg


def test_values_of_a_known_type_are_compared() -> None:
    accept("def same (p: (i32, [2]f32)) (q: {x: bool}) = p == p && q == q\n")


def test_an_operand_type_nothing_determines_is_rejected() -> None:
    msg = reject("def eq x y = x == y\n")
    assert "t.fut:1:16" in msg
    assert "which does not support equality.\n(nothing determines the operands' type" in msg


def test_an_operand_type_a_literal_determines() -> None:
    accept("def eq x = x == 1\n")


def test_a_local_function_takes_its_operand_type_from_its_use() -> None:
    accept("def f (a: i64) = let eq x y = x == y in eq a 2\n")


def test_a_user_defined_equality_takes_a_type_parameter() -> None:
    accept("def (==) 'a (_: a) (_: a) = true\ndef f 'b (x: b) = x == x\n")
