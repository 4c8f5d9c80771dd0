"""Rules on type abbreviations (`typedecls.py`) and on lifted type
parameters in array types: each rejected program with its message and
location, and a close variant that is accepted."""

from checks import accept, reject


def test_a_type_parameter_is_named_once() -> None:
    msg = reject("type pair 'a 'a = (a, a)\n")
    assert "t.fut:1:14" in msg
    assert 'Type parameter "a" previously defined at t.fut:1:11.' in msg


def test_a_size_parameter_is_named_once() -> None:
    msg = reject("type grid [k] [k] = [k][k]f32\n")
    assert "t.fut:1:15" in msg
    assert 'Type parameter "k" previously defined at t.fut:1:11.' in msg


def test_a_size_and_a_type_parameter_may_share_a_name() -> None:
    accept("type vec [a] 'a = [a]a\ndef f (x: vec [2] i32) = x[0]\n")


def test_a_size_parameter_must_be_used() -> None:
    msg = reject("type row [w] = []f32\n")
    assert "t.fut:1:10" in msg
    assert 'Size parameter "[w]" unused.' in msg


def test_a_size_parameter_used_in_a_size_expression_or_argument() -> None:
    accept("type row [w] = [w + 1]f32\n")
    accept("type sq [n] = [n][n]f32\ntype box [k] = sq [k]\n")


def test_a_type_is_defined_once_per_file() -> None:
    msg = reject("type idx = i64\ndef f (x: idx) = x\ntype idx = i32\n")
    assert "t.fut:3:1" in msg
    assert 'Duplicate definition of type "idx". Previously defined at t.fut:1:1.' in msg


def test_a_local_type_may_be_redefined() -> None:
    accept("local type idx = i64\ntype idx = i32\ndef f (x: idx) = x\n")


def test_no_array_of_a_lifted_type_parameter() -> None:
    msg = reject("type fns '^f = (i32, []f)\n")
    assert "t.fut:1:22" in msg
    assert 'Cannot create array with elements of lifted type "f" (might contain function).' in msg


def test_no_array_of_a_size_lifted_type_parameter() -> None:
    msg = reject("def f '~a (x: a) : [](a) = [x]\n")
    assert "t.fut:1:20" in msg
    assert 'size-lifted type "a" (might cause irregular array)' in msg


def test_an_array_of_a_plain_type_parameter_inside_a_lifted_one() -> None:
    accept("def f '^a (g: a) = let h 'a (x: a) : []a = [x] in (g, h 1i32)\n")
