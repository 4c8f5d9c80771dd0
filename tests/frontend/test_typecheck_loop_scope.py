"""Loop parameter sizes that cross the loop's scope (`loop_scope.py`): a
parameter's size may not name a variable of the loop, nor be a size made in
the body, and a size the body changes may not reach a value bound outside.
Each rule has a rejected program and a close variant that is accepted."""

from checks import accept, reject

OWN_LENGTH = (
    "def main [n] (xs: [n]i64) (ys: []i64) =\n"
    "  loop xs for i < 3 do\n"
    "    map2 (+) xs (iota (length {}))\n"
)


def test_size_naming_the_loop_parameter_is_a_scope_violation() -> None:
    msg = reject(OWN_LENGTH.format("xs"))
    assert "t.fut:2:8" in msg
    assert 'Cannot link the size of loop parameter "xs" to "length xs"' in msg
    assert '"xs" is not in scope' in msg


def test_size_naming_a_variable_bound_outside_is_accepted() -> None:
    accept(OWN_LENGTH.format("ys"))


def test_size_written_before_the_loop_names_the_shadowed_variable() -> None:
    accept(
        "def main [n] (xs: [n]i64) =\n"
        "  let ys = iota (length xs)\n"
        "  in loop xs for i < 3 do map2 (+) xs ys\n"
    )


EXISTENTIAL = (
    "def keep (zs: []i32) : ?[k].[k]i32 = filter (> 0) zs\n"
    "def main (ys: []i32) =\n"
    "  loop xs = ys for i < 3 do\n"
    "    let zs = keep xs\n"
    "    in {}\n"
)


def test_size_made_inside_the_body_cannot_be_the_parameters() -> None:
    msg = reject(EXISTENTIAL.format("map2 (+) xs zs"))
    assert "t.fut:3:8" in msg
    assert "Inferred type for loop parameter is []i32" in msg
    assert 'existential size created inside the loop body at t.fut:4:14 (the result of "keep")' \
        in msg


def test_builtin_existential_inside_the_body_cannot_be_the_parameters() -> None:
    msg = reject(EXISTENTIAL.format("map2 (+) xs (filter (> 1) xs)"))
    assert 'inside the loop body at t.fut:5:21 (the result of "filter")' in msg


def test_size_made_inside_the_body_may_be_returned() -> None:
    accept(EXISTENTIAL.format("zs"))


GROW = (
    "def grow [d] (a: [d]f64) (b: [d + 1]f64) : [d + 1]f64 = b\n"
    "def main (a: []f64) (b: []f64) =\n"
    "  loop a' = a for i < 2 do\n"
    "    {}\n"
)


def test_changing_size_may_not_reach_a_value_bound_outside() -> None:
    msg = reject(GROW.format("grow a' b"))
    assert "t.fut:3:8" in msg
    assert "Loop-variant size has escaped into type that occurs outside of loop" in msg
    assert 'the size of loop parameter "a\'" changes' in msg


def test_unchanged_size_may_reach_a_value_bound_outside() -> None:
    accept(GROW.format("let c = grow a' b in map2 (+) a' (init c)"))
