"""Sizes naming a variable of a function's body once the body is left
(`size_scope.py`): Futhark replaces a name bound alone by a `let` by its
definition, and makes every other such size unknown.  Each rejected program
has a close variant that is accepted."""

from checks import accept, reject

PAIRED = ("def grow (k: i64) =\n"
          "  let (w, _) = (k * 2, false)\n"
          "  in (iota (w + 3), zip (iota (w + 1)))\n")


def test_a_size_of_a_tuple_pattern_may_not_be_a_parameter_of_the_result() -> None:
    msg = reject(PAIRED)
    assert "t.fut:1:1" in msg
    assert 'Cannot generalise type of "grow". Unknown size "w" in parameter of "grow"' in msg


def test_a_size_of_a_name_bound_alone_may_be_a_parameter_of_the_result() -> None:
    accept(PAIRED.replace("let (w, _) = (k * 2, false)", "let w = k * 2"))


def test_a_definition_reading_an_opaque_name_is_opaque() -> None:
    msg = reject(PAIRED.replace("in (", "in let v = w + 0\n  in (").replace("w + 1", "v"))
    assert 'Unknown size "v" in parameter of "grow"' in msg


def test_a_definition_holding_a_binding_is_opaque() -> None:
    src = PAIRED.replace("let (w, _) = (k * 2, false)", "let w = (let h = k in h * 2)")
    assert 'Unknown size "w" in parameter of "grow"' in reject(src)


def test_a_size_of_a_tuple_pattern_may_be_in_a_result_alone() -> None:
    accept(PAIRED.replace("zip (iota (w + 1))", "\\(_: bool) -> iota (w + 1)"))


def test_a_lambda_parameter_may_size_a_later_parameter_of_the_result() -> None:
    accept("def wrap (k: i64) = {go = \\(w: i64) (_: [w * k]i32) -> w}\n")


HALF = "def half [k] (_: [k + 2]i64) = k\n"


def test_a_size_of_a_tuple_pattern_is_unknown_to_the_caller() -> None:
    msg = reject(HALF + PAIRED.replace(", zip (iota (w + 1))", "") +
                 "def main (k: i64) = let xs = grow k in half xs\n")
    assert "t.fut:5:45" in msg
    assert ('Cannot apply "half" to "xs": its size "w + 3" names a variable local to '
            '"grow", unknown here, which cannot match "k + 2".') in msg


def test_a_size_of_a_name_bound_alone_is_known_to_the_caller() -> None:
    accept(HALF + PAIRED.replace(", zip (iota (w + 1))", "")
           .replace("let (w, _) = (k * 2, false)", "let w = k * 2") +
           "def main (k: i64) = let xs = grow k in half xs\n")
