"""Liftedness (futgen/frontend/lifted.py): only lifted type parameters stand
for functions, and array elements are value types."""

from checks import accept, reject

# ------------------------------------------- instantiating type parameters


def test_value_type_parameter_not_a_function():
    src = ("def pick 't (c: bool) (x: t) (y: t) : t = if c then x else y\n"
           "def main (c: bool) (k: i32) = (pick c (\\(v: i32) -> v) (\\(v: i32) -> v * 2)) k\n")
    msg = reject(src)
    assert "t.fut:2:32:" in msg
    assert "found to be functional" in msg and "'t of \"pick\"" in msg
    accept(src.replace("(pick c (\\(v: i32) -> v) (\\(v: i32) -> v * 2)) k", "pick c k 2"))


def test_function_argument_instantiates_value_type_parameter():
    src = ("def twice (g: (f32 -> f32) -> f32 -> f32) = g (\\x -> x + 1) 0\n"
           "def same 'a (x: a) : a = x\n"
           "def main = twice same\n")
    msg = reject(src)
    assert "t.fut:3:18:" in msg and "found to be functional" in msg
    accept(src.replace("def same 'a", "def same '^a"))


def test_map_may_not_return_functions():
    src = "def main (xs: []i64) = map (\\x -> \\(y: i64) -> x + y) xs\n"
    msg = reject(src)
    assert "t.fut:1:24:" in msg and "'x of \"map\"" in msg
    accept("def main (xs: []i64) = map (\\x -> (\\(y: i64) -> x + y) 1) xs\n")


def test_size_lifted_parameter_not_an_array_element():
    src = ("def first 'a (g: i64 -> a) : a = (tabulate 3 g)[0]\n"
           "def use '~b (g: i64 -> b) = first g\n")
    msg = reject(src)
    assert "t.fut:2:29:" in msg
    assert 'Type parameter "b" bound at t.fut:2:9 is lifted and cannot be an array element' in msg
    accept(src.replace("'~b", "'b"))


def test_assert_passes_functions_along():
    accept("def main (x: i32) = (assert (x > 0) (\\(y: i32) -> y + 1)) x\n")

# ---------------------------------------------------------- checked bodies


def test_if_may_not_return_lifted_type_parameter():
    src = "def choose '^a (c: bool) (x: a) (y: a) : a = if c then x else y\n"
    msg = reject(src)
    assert "t.fut:1:46:" in msg and "if-results may not be of function type" in msg
    accept(src.replace("'^a", "'~a"))


def test_array_literal_of_functions():
    src = "def inc (x: u8) = x + 1\ndef fs = [inc, inc]\n"
    msg = reject(src)
    assert "t.fut:2:10:" in msg and "found to be functional" in msg
    accept("def inc (x: u8) = x + 1\ndef fs = (inc, inc)\n")


def test_array_literal_of_lambdas():
    msg = reject("def main (k: i32) = let _ = [\\(z: i32) -> z] in k\n")
    assert "t.fut:1:29:" in msg and "found to be functional" in msg
    accept("def main (k: i32) = let _ = [(\\(z: i32) -> z) k] in k\n")

# -------------------------------------------------------- type expressions


def test_array_of_function_type():
    msg = reject("def main (fs: [](f32 -> f32)) = length fs\n")
    assert "t.fut:1:15:" in msg
    assert 'Cannot create array with elements of lifted type "f32 -> f32"' in msg
    accept("def second (fs: (f32 -> f32, i32)) = fs.1\n")


def test_array_of_lifted_abbreviations():
    msg = reject("type^ pair = (i32, i32)\ntype many = [4]pair\n")
    assert 't.fut:2:13: Cannot create array with elements of lifted type "pair"' in msg
    msg = reject("type~ row = []i32\ntype many = [4]row\n")
    assert 'elements of size-lifted type "row" (might cause irregular array)' in msg
    accept("type pair = (i32, i32)\ntype many = [4]pair\n")

# ------------------------------------------------------------ entry points


def test_def_main_may_not_be_higher_order():
    src = "def main (k: i32) (g: i32 -> i32) = g k\n"
    msg = reject(src)
    assert "t.fut:1:1:" in msg and "Entry point functions may not be higher-order" in msg
    accept("def main (k: i32) = let g = \\(v: i32) -> v in g k\n")
    accept("def helper (k: i32) (g: i32 -> i32) = g k\n")
