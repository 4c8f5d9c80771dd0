"""Sizes of slices (`Checker._slice_size`), Futhark's rules: in an index
expression `xs[i:j]` has size `j - i` (a left-out `i` is 0, a left-out `j`
the dimension's size), `:` keeps the size, and other slices have a size
known at run time.  Each rejected program has a close accepted variant."""

from checks import accept, reject

TWO = "def main [n] [m] (xs: [n]i32) (ys: [m]i32) =\n  {}\n"
SAME = "def main [n] (xs: [n]i32) (ys: [n]i32) =\n  {}\n"


def test_slices_of_arrays_of_different_sizes_differ() -> None:
    msg = reject(TWO.format("zip xs[1:] ys[1:]"))
    assert "t.fut:2:14" in msg
    assert 'Sizes "n - 1" and "m - 1" do not match' in msg


def test_equal_slices_of_one_size_are_one_size() -> None:
    accept(SAME.format("zip xs[1:] ys[1:]"))
    accept(SAME.format("(zip xs[1:] xs[1:], map2 (+) xs[1:] ys[1:])"))
    accept(SAME.format("zip xs[1:n] ys[1:]"))  # `j` left out is the size
    accept(TWO.format("zip xs[:m] ys"))  # `0:j` has size `j`
    accept(SAME.format("zip xs[::-1] ys"))  # so does a reversal


def test_a_slice_has_the_size_its_bounds_write() -> None:
    accept(TWO.format("let zs: [n - 1]i32 = xs[1:] in zs"))
    accept(TWO.format("xs[1:] :> [n - 1]i32"))
    msg = reject(TWO.format("let zs: [m]i32 = xs[1:] in zs"))
    assert "t.fut:2:7" in msg
    assert 'Sizes "m" and "n - 1" do not match' in msg


def test_a_slice_with_a_stride_has_a_size_of_its_own() -> None:
    accept(TWO.format("let zs = xs[1::2] in zip zs zs"))
    accept(TWO.format("zip (xs[1::2] :> [m]i32) ys"))


def test_a_whole_dimension_keeps_its_size_in_a_loop() -> None:
    # `x[1:, :]` and `x[:, 1:]` keep one dimension of `x` each, so the
    # product makes the loop parameter square (Futhark's issue869).
    mult = ("def mult [n] [m] [p] (x: [n][m]f32) (y: [m][p]f32) : [n][p]f32 =\n"
            "  map (\\r -> map (\\c -> f32.sum (map2 (*) r c)) (transpose y)) x\n")
    loop = "def main [n] [m] (x: [n][m]f32) =\n  loop x for i < 2 do mult x[1:, :] x[:, 1:]\n"
    msg = reject(mult + loop)
    assert "t.fut:4:8" in msg
    assert "Initial loop values do not have expected type" in msg
    accept(mult + loop.replace("[n] [m] (x: [n][m]f32)", "[n] (x: [n][n]f32)"))


def test_an_in_place_update_slices_to_any_size() -> None:
    # Futhark leaves the sizes of the slice written to flexible.
    accept(TWO.format("copy xs with [1:] = ys[1:]"))
