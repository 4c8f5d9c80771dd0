"""Scope violations (`levels.py`): an inference variable of an outer scope
may not come to stand for a local function's type parameter, nor may a
parameter's anonymous size come to be a variable bound after it.  Each
rejected program with its message and location, and a close variant that
is accepted."""

from checks import accept, reject

VIOLATION = "(scope violation)"
LINK = "error-index.html#scope-violation"


def test_a_type_parameter_may_not_enter_an_outer_variable() -> None:
    msg = reject("def f v =\n  let pick 'e (w: e) = if true then v else w\n  in pick\n")
    assert "t.fut:2:44" in msg
    assert f'Cannot unify type parameter "e" with the type of something bound outside ' \
           f'its scope {VIOLATION}: "e" is bound in a deeper scope.' in msg
    assert LINK in msg


def test_a_local_function_may_use_an_outer_variable_of_another_type() -> None:
    accept("def f (v: i32) =\n  let pair 'e (w: e) = (v, w)\n  in pair true\n")


def test_a_type_parameter_may_not_enter_an_outer_variable_after_its_function() -> None:
    msg = reject("def f r =\n  let g 'e (w: e) = if true then w else r.1\n"
                 "  let (a: i32, _) = r\n  in (g, a)\n")
    assert "t.fut:3:7" in msg
    assert 'type parameter "e"' in msg and VIOLATION in msg


def test_an_outer_function_type_parameter_of_the_same_name() -> None:
    accept("def f 'e (x: e) =\n  let g 'e (w: e) = w\n  let y = x\n  in (g 1i32, y)\n")


def test_a_built_in_function_type_parameter_of_the_same_name() -> None:
    accept("def f (n: i64) =\n  let g 'a (h: a -> i64) (x: a) = h x\n  in g id n\n")


def test_a_parameter_size_may_not_be_a_let_bound_name() -> None:
    msg = reject("def f (xs: []f32) =\n  let k = length xs + 0\n  in zip (iota k) xs\n")
    assert "t.fut:3:19" in msg
    assert f'The size of parameter "xs" cannot be "k" {VIOLATION}: "k" is bound after ' \
           'parameter "xs", where its caller cannot see it.' in msg
    assert LINK in msg


def test_a_parameter_size_may_be_named_by_let_sizes() -> None:
    accept("def f (xs: []f32) =\n  let [k] (ys: [k]f32) = xs\n  in zip (iota k) ys\n")


def test_a_parameter_size_may_not_be_a_lambda_parameter() -> None:
    msg = reject("def f (xs: []f32) = map (\\(k: i64) -> zip (iota k) xs) [1, 2]\n")
    assert "t.fut:1:52" in msg
    assert 'size of parameter "xs" cannot be "k"' in msg


def test_a_parameter_size_may_be_a_size_parameter() -> None:
    accept("def f [k] (xs: []f32) (ys: [k]f32) = map (\\(_: i64) -> zip ys xs) [1, 2]\n")


def test_a_parameter_size_may_not_be_a_later_parameter() -> None:
    msg = reject("def f (xs: []f32) (k: i64) = zip (iota k) xs\n")
    assert "t.fut:1:43" in msg
    assert 'size of parameter "xs" cannot be "k"' in msg


def test_a_parameter_size_may_be_an_earlier_parameter_or_a_coercion() -> None:
    accept("def f (k: i64) (xs: []f32) = zip (iota k) xs\n")
    accept("def f (xs: []f32) (k: i64) = zip (iota k) (xs :> [k]f32)\n")
