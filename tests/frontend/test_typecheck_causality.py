"""The causality check (`causality.py`): a size computed by an expression
(`filter`'s length, a loop's changing size) may not be needed by a value
evaluated before it.  Each rule has a rejected program, with the location
of the value and of the computation, and a close variant that is accepted
(the computation bound with `let` first, or evaluated first)."""

from checks import accept, reject

EMPTY_ROWS = "let a = [] : [][]i32\n"
FILTERED = "let b = [filter (> 0) xs]\n"
EMPTY_ARRAY = "def main (xs: []i32) =\n  {}  {}  in a[0] == b[0]\n"


def test_an_empty_array_may_not_need_a_size_computed_later() -> None:
    msg = reject(EMPTY_ARRAY.format(EMPTY_ROWS, FILTERED))
    assert "t.fut:2:11" in msg
    assert 'Causality check: the size computed by "filter" at t.fut:3:12' in msg
    assert "an empty array" in msg


def test_an_empty_array_may_need_a_size_computed_before() -> None:
    accept(EMPTY_ARRAY.format(FILTERED, EMPTY_ROWS))


SIZED = "def f [n] (_: [n]i32 -> i32) : [n]i32 -> i64 = \\_ -> n\n"


def test_a_left_operand_is_evaluated_before_the_right() -> None:
    msg = reject(SIZED + "def main (xs: []i32) = f (\\_ -> 0) <| filter (> 0) xs\n")
    assert "t.fut:2:28" in msg
    assert '"filter" at t.fut:2:39' in msg
    assert "a lambda's parameter" in msg


def test_a_lambda_may_need_a_size_the_left_operand_computed() -> None:
    accept(SIZED + "def main (xs: []i32) = filter (> 0) xs |> f (\\_ -> 0)\n")


def test_an_argument_is_evaluated_before_the_function_it_is_given_to() -> None:
    msg = reject("def main (xs: []i32) = (\\g -> g (filter (> 0) xs)) (\\_ -> 0i32)\n")
    assert "t.fut:1:54" in msg


LOOP = "loop (xs: []i32, j) = ([1], 0) for i < 10 do (xs ++ xs, j + 1)"


def test_a_section_may_not_need_the_size_a_later_loop_computes() -> None:
    msg = reject(f"def main : []i32 =\n  (.0) <| {LOOP}\n")
    assert "t.fut:2:3" in msg
    assert "the loop at t.fut:2:11" in msg
    assert "a projection section" in msg


def test_a_section_may_need_the_size_of_a_loop_bound_before() -> None:
    accept(f"def main : []i32 =\n  let r = {LOOP}\n  in (.0) r\n")


def test_a_section_of_concatenation_needs_its_operand_size() -> None:
    msg = reject("def main (xs: []i32) (mat: [][]i32) = map (filter (> 0) xs ++) mat\n")
    assert "t.fut:1:43" in msg
    assert 'a section of "++"' in msg


def test_a_section_of_a_concatenation_the_program_defines_is_any_section() -> None:
    accept("def (++) (a: []i32) (b: []i32) : i64 = length a + length b\n"
           "def main (xs: []i32) (mat: [][]i32) = map (filter (> 0) xs ++) mat\n")


def test_a_section_of_concatenation_may_use_a_bound_array() -> None:
    accept("def main (xs: []i32) (mat: [][]i32) =\n"
           "  let ys = filter (> 0) xs in map (ys ++) mat\n")


def test_a_lambda_may_compute_sizes_for_its_own_result() -> None:
    accept("def main (xs: []i32) = map (\\(r: []i32) -> r ++ filter (> 0) xs) [xs, xs]\n")
