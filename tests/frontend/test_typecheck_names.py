"""Name rules Futhark checks before types (`frontend/names.py`): no name
bound twice in one binding group, no use of a `_`-prefixed variable, no
redefinition of `&&` or `||`.  Each rejected program has a close accepted
variant."""

from checks import accept, reject


def test_a_parameter_bound_twice() -> None:
    msg = reject("def add (a: i64) (b: i64) (a: i64) = a + b\n")
    assert "t.fut:1:28" in msg
    assert 'Name "a" also bound at t.fut:1:10.' in msg
    accept("def add (a: i64) (b: i64) (c: i64) = a + b + c\n")


def test_a_size_parameter_and_a_parameter_share_a_name() -> None:
    msg = reject("def len [k] (xs: [k]f32) (k: i64) = k\n")
    assert "t.fut:1:27" in msg
    assert 'Name "k" also bound at t.fut:1:9.' in msg
    # A type parameter is a name of another kind.
    accept("def pick 'k (x: k) (k: i64) = (x, k)\n")


def test_a_type_parameter_bound_twice() -> None:
    msg = reject("def pair 'p 'q 'p (x: p) (y: q) = (x, y)\n")
    assert "t.fut:1:16" in msg
    assert 'Name "p" also bound at t.fut:1:10.' in msg
    accept("def pair 'p 'q (x: p) (y: q) = (x, y)\n")


def test_a_let_pattern_binds_a_name_twice() -> None:
    msg = reject("def f (x: i32) =\n  let (a, (b, a)) = (x, (x, x)) in a + b\n")
    assert "t.fut:2:15" in msg
    assert 'Name "a" also bound at t.fut:2:8.' in msg
    # Shadowing in a nested `let` is a new binding group.
    accept("def f (x: i32) =\n  let (a, b) = (x, x) in let a = a + b in a\n")


def test_a_let_size_and_a_pattern_variable_share_a_name() -> None:
    msg = reject("def f (xs: []f32) =\n  let [k] (k: [k]f32) = xs in k\n")
    assert "t.fut:2:12" in msg
    assert 'Name "k" also bound at t.fut:2:3.' in msg
    accept("def f (xs: []f32) =\n  let [k] (ys: [k]f32) = xs in (k, ys)\n")


def test_local_functions_and_lambdas_bind_each_name_once() -> None:
    msg = reject("def f (x: i32) =\n  let g [n] (n: [n]i32) = n in g [x]\n")
    assert "t.fut:2:14" in msg
    assert 'Name "n" also bound at t.fut:2:9.' in msg
    msg = reject("def f (xs: []i32) = map2 (\\y y -> y) xs xs\n")
    assert "t.fut:1:30" in msg
    assert 'Name "y" also bound at t.fut:1:28.' in msg
    accept("def f (xs: []i32) = map2 (\\y z -> y + z) xs xs\n")
    # A lambda's parameter may shadow the enclosing function's.
    accept("def f (y: i32) (xs: []i32) = map (\\y -> y + 1) xs\n")


def test_an_underscore_variable_may_be_bound_but_not_used() -> None:
    msg = reject("def f (x: i32) =\n  let _y = x + 1 in _y * 2\n")
    assert "t.fut:2:21" in msg
    assert 'Use of "_y": variables prefixed with underscore may not be accessed.' in msg
    accept("def f (x: i32) =\n  let _y = x + 1 in x * 2\n")
    accept("def f (_: i32) (y_: i32) = y_\n")


def test_the_short_circuiting_operators_may_not_be_redefined() -> None:
    msg = reject("def (||) (a: i32) (b: i32) = a | b\n")
    assert "t.fut:1:1" in msg
    assert "The || operator may not be redefined." in msg
    msg = reject("def f (x: bool) = x\ndef (&&) 't (a: t) (b: t) = a\n")
    assert "t.fut:2:1" in msg
    assert "The && operator may not be redefined." in msg
    accept("def (|||) (a: bool) (b: bool) = a || b\ndef f (x: bool) = x ||| x\n")
