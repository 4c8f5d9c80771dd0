"""Sizes used outside the scope of their name (`size_scope.py`): a
dependent function passed where a plain one is expected, a parameter whose
size is a later parameter, an inferred parameter size naming a variable of
the body.  Each rejected program has a close variant that is accepted."""

from checks import accept, reject

RANGE = "def range (k: i64) : [k]i64 = iota k\n"


def test_a_dependent_function_may_not_be_mapped() -> None:
    msg = reject(RANGE + "def main (m: i64) = map range (iota m)\n")
    assert "t.fut:2:25" in msg
    assert 'Cannot apply "map" to' in msg
    assert "type containing anonymous sizes" in msg


def test_a_function_of_a_fixed_size_may_be_mapped() -> None:
    accept("def row (m: i64) (_: i64) : [m]i64 = iota m\n"
           "def main (m: i64) = map (row m) (iota m)\n")


def test_a_dependent_function_may_be_applied_through_a_lifted_parameter() -> None:
    accept(RANGE + "def call 'a '^b (f: a -> b) (x: a) : b = f x\n"
           "def main = call range 3\n")


PAIR = "def pair '^a '^b '^c (f: a -> b) (g: b -> c) (x: a) : c = g (f x)\n"


def test_a_dependent_size_may_not_reach_a_parameter_of_the_result() -> None:
    msg = reject(RANGE + PAIR + "def main = pair range (\\xs -> length xs) 2\n")
    assert "t.fut:3:17" in msg
    assert 'Cannot apply "pair" to "range"' in msg
    assert "Existential size would appear in function parameter of return type" in msg


def test_a_dependent_size_may_be_existential_in_the_result() -> None:
    accept(RANGE + "def main = uncurry (\\(k: i64) (_: bool) -> range k) (2, true)\n")


def test_a_parameter_size_may_not_be_a_later_parameter() -> None:
    msg = reject("def f ys k = zip ys (iota k)\n")
    assert "t.fut:1:7" in msg
    assert 'Cannot link the size of parameter "ys" to "k" (scope violation)' in msg
    assert "scope-violation" in msg


def test_a_parameter_size_may_be_an_earlier_parameter() -> None:
    accept("def f k ys = zip ys (iota k)\n")


def test_a_lambda_parameter_size_may_not_be_a_later_parameter() -> None:
    msg = reject("def main = (\\ys k -> zip ys (iota k)) [1i64] 1\n")
    assert "t.fut:1:14" in msg
    assert "scope violation" in msg


UNKNOWN = "def g (b: bool) =\n  let k = if b then 1 else 2\n  in \\(_: [k]i32) -> 0i32\n"


def test_a_parameter_size_may_not_name_a_variable_of_the_body() -> None:
    msg = reject(UNKNOWN)
    assert "t.fut:1:1" in msg
    assert 'Unknown size "k" in parameter of "g"' in msg


def test_a_parameter_size_may_name_a_variable_of_the_body_it_also_gives() -> None:
    accept(UNKNOWN.replace("\\(_: [k]i32) -> 0i32", "(iota k, \\(_: [k]i64) -> 0i32)"))


def test_a_parameter_size_may_name_a_size_parameter() -> None:
    accept("def g [n] (_: [n]i32) = \\(_: [n]i32) -> 0i32\n")


NAMED = "type^ sized = (k: i64) -> [k]i64 -> i64\n"


def test_a_lambda_must_name_a_dependent_parameter_its_sizes_use() -> None:
    msg = reject(NAMED + "def f : sized = \\_ ys -> length ys\n")
    assert "t.fut:2:17" in msg
    assert 'Sizes "k" and' in msg
    assert 'is the size "k" of a parameter the lambda does not name' in msg


def test_a_lambda_may_name_a_dependent_parameter_otherwise() -> None:
    accept(NAMED + "def f : sized = \\m ys -> length ys + m\n")


def test_a_return_type_may_not_name_part_of_a_parameter() -> None:
    msg = reject("def f (k: i64, _: i32) : [k]i32 = replicate k 0\n")
    assert "t.fut:1:26" in msg
    assert 'The return type annotation refers to the name "k"' in msg


def test_a_return_type_may_name_a_whole_parameter() -> None:
    accept("def f (k: i64) (_: i32) : [k]i32 = replicate k 0\n")
