"""Unknown (existential) sizes: where Futhark's size rules make a size
unknown, a known size may not be demanded of it.  Each rule has a program
rejected at the right place and a close variant that is accepted."""


from checks import accept, reject


def test_loop_result_of_changing_size_is_unknown() -> None:
    msg = reject(
        "def main (k: i32) : [1]i32 =\n"
        "  loop xs = replicate 1 0i32 for _i < k do xs ++ xs\n"
    )
    assert "t.fut:2:3" in msg
    assert 'Sizes "1" and "ext#' in msg
    assert "is unknown size of the value returned by the loop at t.fut:2:3." in msg


def test_loop_result_of_kept_size_is_known() -> None:
    accept(
        "def main (k: i32) : [1]i32 =\n"
        "  loop xs = replicate 1 0i32 for _i < k do map (+ 1) xs\n"
    )
    accept(
        "def main [n] (k: i32) (a: [n]i32) (b: [n]i32) : [n]i32 =\n"
        "  (loop (x, y) = (a, b) for _i < k do (y, x)).0\n"
    )


def test_range_with_stride_has_unknown_length() -> None:
    msg = reject("def main (n: i64) : [n]i64 =\n  0..2..<n\n")
    assert "t.fut:2:3" in msg
    assert "is unknown length of range at t.fut:2:3." in msg


def test_upto_range_from_zero_has_its_bound_as_size() -> None:
    accept("def main (n: i64) : [n]i64 =\n  0..<n\n")
    accept("def main (n: i64) : [n]i64 =\n  0..1..<n\n")
    accept("def main (n: i64) : [n](i64, i64) =\n  zip (0..<n) (iota n)\n")


def test_range_of_i32_bounds_has_unknown_length() -> None:
    msg = reject("def main (n: i32) =\n  zip (0..<n) (0..<n)\n")
    assert "t.fut:2:16" in msg and "is unknown length of range at t.fut:2:8." in msg
    accept("def main (n: i32) =\n  let r = 0..<n in zip r r\n")


def test_size_expression_differs_from_other_sizes() -> None:
    msg = reject("def main (n: i64) : [n]i64 =\n  iota (n + 1)\n")
    assert "t.fut:2:3" in msg and 'Sizes "n" and "n + 1" do not match.' in msg
    msg = reject("def f (g: (k: i64) -> [k]i64) = g 1\ndef main = f (\\k -> iota (k + 1))\n")
    assert "t.fut:2:15" in msg and 'Sizes "k + 1" and "k" do not match.' in msg
    accept("def main (n: i64) : [n + 1]i64 =\n  iota (n + 1)\n")
    accept("def f (g: (k: i64) -> [k]i64) = g 1\ndef main = f (\\k -> iota k)\n")


def test_size_expression_of_a_name_out_of_scope_may_be_it() -> None:
    # Futhark: the size `m` goes out of scope, and is then `n + 1`.
    accept("def main (n: i64) : [n + 1]i64 =\n  let m = n + 1\n  in iota m\n")


def test_size_parameter_nothing_determines_is_ambiguous() -> None:
    msg = reject("def f [n] (g: [n]i32 -> i32) : i64 = n\n"
                 "def main = f (\\xs -> xs[0])\n")
    assert "t.fut:2:12" in msg
    assert 'Ambiguous size "n": instantiated size parameter of "f"' in msg
    accept("def f [n] (g: [n]i32 -> i32) : i64 = n\n"
           "def main = f (\\(xs: [3]i32) -> xs[0])\n")
    accept("def f [n] (g: [n]i32 -> i32) (xs: [n]i32) : i32 = g xs\n"
           "def main (ys: []i32) = f (\\xs -> xs[0]) ys[1:]\n")


def test_let_size_nothing_determines_is_ambiguous() -> None:
    msg = reject("def main =\n  let [n][m] (xss: [n][m]i64) = []\n  in (n, m)\n")
    assert "t.fut:2:3" in msg and 'Ambiguous size "m".' in msg
    accept("def main =\n  let [n][m] (xss: [n][m]i64) = [[1, 2]]\n  in (n, m)\n")
    accept("def main (xs: []i32) =\n  let [m] (ys: [m]i32) = filter (> 0) xs\n  in m\n")


def test_concatenation_may_have_a_sum_size() -> None:
    # Futhark gives `a ++ b` the size `n + m`.
    accept("def f [n] [m] (g: [n + m]i32 -> i64) (a: [n]i32) (b: [m]i32) = g (a ++ b)\n")


def test_product_sizes_known_at_run_time_are_not_ambiguous() -> None:
    accept("def f [b] (a: []f32) : [b]f32 =\n"
           "  head (unflatten (a :> [opaque 1 * b]f32))\n")
