"""Loop parameters whose sizes the loop body makes one (`loops.py`): a
size that changes is one size for every place it stands, so the body must
return one size there, and the initial values must start with one size.
Each rule has a rejected program and a close variant that is accepted."""


from checks import accept, reject

BODY_MISMATCH = (
    "def main [n] (a: [n]i32) (b: [n]i32) =\n"
    "  loop (xs, ys) = (a, b) for i < 10 do\n"
    "    let zs = filter (> 0) (map2 (+) xs ys)\n"
    "    in {}\n"
)


def test_changing_sizes_used_as_one_must_be_returned_as_one() -> None:
    msg = reject(BODY_MISMATCH.format("(ys, zs)"))
    assert "t.fut:3:5" in msg
    assert "Loop body does not have expected type" in msg


def test_changing_sizes_returned_as_one_size_are_accepted() -> None:
    accept(BODY_MISMATCH.format("(zs, zs)"))


def test_sizes_not_used_as_one_may_differ() -> None:
    accept(
        "def main [n] (a: [n]i32) (b: [n]i32) =\n"
        "  loop (xs, ys) = (a, b) for i < 10 do\n"
        "    let zs = filter (> 0) xs\n"
        "    in (ys, zs)\n"
    )


def test_sizes_used_as_one_must_start_as_one() -> None:
    msg = reject(
        "def main [n] [m] (a: [n]i32) (b: [m]i32) =\n"
        "  loop (xs, ys) = (a, b) for i < 10 do\n"
        "    let zs = filter (> 0) (map2 (+) xs ys)\n"
        "    in (zs, zs)\n"
    )
    assert "t.fut:2:19" in msg
    assert "Initial loop values do not have expected type" in msg
    assert "(m, n)" in msg


def test_function_results_of_one_size_stay_one() -> None:
    # `unzip` of a `filter`: the two `[]` of the result are one size.
    accept(
        "def keep [n] (xs: [n]i32) (ys: [n]i32) : ([]i32, []i32) =\n"
        "  unzip (filter (\\(x, _) -> x > 0) (zip xs ys))\n"
        "def main [n] (a: [n]i32) (b: [n]i32) =\n"
        "  loop (xs, ys) = (a, b) while length xs > 0 do keep xs ys\n"
    )


def test_each_call_of_a_builtin_has_its_own_existential() -> None:
    # Two filters give two sizes, so the parameters may not be one size.
    msg = reject(
        "def main [n] (a: [n]i32) (b: [n]i32) =\n"
        "  loop (xs, ys) = (a, b) for i < 10 do\n"
        "    let _ = map2 (+) xs ys\n"
        "    in (filter (> 0) xs, filter (> 1) ys)\n"
    )
    assert "t.fut:3:5" in msg
