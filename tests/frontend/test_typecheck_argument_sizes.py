"""Sizes given by arguments the type system cannot name (`iota xs[0]`):
Futhark's size is the argument, so an inferred parameter size may not be
one that reads that parameter or a later one (`size_scope.py`).  Each
rejected program has a close variant that is accepted."""

from checks import accept, reject


def test_a_parameter_size_may_not_be_read_from_the_parameter() -> None:
    msg = reject("def f ys = map2 (+) ys (iota ys[1])\n")
    assert "t.fut:1:7" in msg
    assert 'Cannot link the size of parameter "ys" to "ys" (scope violation)' in msg


def test_a_parameter_size_may_not_be_read_from_a_later_parameter() -> None:
    msg = reject("def f ys (zs: []i64) = map2 (+) ys (iota zs[0])\n")
    assert 'Cannot link the size of parameter "ys" to "zs"' in msg


def test_a_parameter_size_may_not_be_a_size_expression_of_a_later_parameter() -> None:
    msg = reject("def f ys (k: i64) = map2 (+) ys (iota (k + 1))\n")
    assert 'Cannot link the size of parameter "ys" to "k"' in msg


def test_a_parameter_size_may_be_read_from_an_earlier_parameter() -> None:
    accept("def f (zs: []i64) ys = map2 (+) ys (iota zs[0])\n")

