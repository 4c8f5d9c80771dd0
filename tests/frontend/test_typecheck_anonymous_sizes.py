"""Sizes that hide nothing.  An anonymous size `[]` written in an
ascription, a lambda's return type or an existential return type `?[n].`
is the size of the expression it types (an inference size); a built-in's
application (`length xs`) is a size of its own; a type may not use a size
only inside function types.  Each rejected program has a close variant
that is accepted."""

from checks import accept, reject

ASCRIBED = ("def main (k: i64) : [2]i64 =\n"
            "  let r = if k > 0 then iota k {} else [1, 2]\n"
            "  in r\n")


def test_an_ascribed_anonymous_size_is_the_expression_size() -> None:
    msg = reject(ASCRIBED.format(": []i64"))
    assert "t.fut:2:3" in msg
    assert "Sizes" in msg and "do not match" in msg


def test_a_coercion_may_change_the_size() -> None:
    accept(ASCRIBED.format(":> [2]i64"))


TAKES = "def first (g: (n: i64) -> [n]i64) (l: i64) : i64 = (g l)[0]\n"


def test_a_lambda_return_size_is_the_body_size() -> None:
    msg = reject(TAKES + "def main = first (\\k : []i64 -> iota (k + 2))\n")
    assert "t.fut:2:19" in msg
    assert 'Sizes "k + 2" and "k" do not match' in msg


def test_a_lambda_may_return_its_parameter_size() -> None:
    accept(TAKES + "def main = first (\\k : []i64 -> iota k)\n")


def test_a_lambda_return_size_may_be_a_local_size() -> None:
    accept("def main (x: i64) = map (\\i : []i64 -> let k = i + x in iota k) [1]\n")


EXISTS = ("def pair (x: i64) : ?[n].([n]i64, i64 -> [n]i64) =\n"
          "  let y = x + 1\n"
          "  in (iota {}, \\_ -> iota y)\n")


def test_an_existential_size_is_one_size() -> None:
    msg = reject(EXISTS.format("x"))
    assert "t.fut:2:3" in msg
    assert "do not match" in msg


def test_an_existential_size_may_be_a_local_size() -> None:
    accept(EXISTS.format("y"))


def test_an_abbreviation_may_not_hide_a_size_in_a_function_parameter() -> None:
    msg = reject("type^ pred = (bool, [3]i32) -> []i32 -> bool\n")
    assert "t.fut:1:32" in msg
    assert "anonymous size not used constructively" in msg


def test_an_abbreviation_may_have_an_anonymous_size_in_a_result() -> None:
    accept("type^ pred = (bool, [3]i32) -> i32 -> []bool\n")


def test_an_existential_size_must_be_an_array_size() -> None:
    msg = reject("def f : (k: i64) -> ?[m].bool -> [m]i64 = \\k _ -> iota k\n")
    assert "t.fut:1:21" in msg
    assert 'Existential size "m" not used as array size.' in msg


def test_an_existential_size_may_be_the_size_of_a_returned_array() -> None:
    accept("def f : (k: i64) -> bool -> ?[m].[m]i64 = \\k _ -> iota k\n")


def test_a_builtin_application_is_a_size_of_its_own() -> None:
    msg = reject("def f [k] (ys: [k]bool) : [k]i32 = replicate (length ys) 0\n")
    assert "t.fut:1:36" in msg
    assert 'Sizes "k" and "length ys" do not match' in msg


def test_a_builtin_application_is_the_size_written_the_same() -> None:
    accept("def f [k] (ys: [k]bool) : [k]i32 = replicate k 0\n"
           "def g (ys: []bool) = zip (iota (length ys)) (replicate (length ys) 1i32)\n")
