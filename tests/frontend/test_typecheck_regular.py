"""Regular arrays (`Unifier._check_unlifted`), Futhark's rule: an unlifted
type parameter (`'b` of `map`) may not stand for a type whose size is the
parameter of the function argument (`map iota ns` would build rows of
different sizes); a lifted one (`'^b`) may.  Each rejected program has a
close accepted variant."""

from checks import accept, reject

ROWS = "def rows (k: i64) = replicate k 1f32\n"
APPLY = "def apply {} (f: a -> b) (x: a) : b = f x\n"


def test_mapping_a_function_whose_result_size_is_its_argument() -> None:
    msg = reject(ROWS + "def f (ks: []i64) = map rows ks\n")
    assert "t.fut:2:25" in msg
    assert 'Cannot apply "map" to "rows"' in msg
    assert 'the size of [k]f32 is the function\'s parameter "k"' in msg
    assert "a type containing anonymous sizes" in msg
    accept("def rows (k: i64) = replicate 4 (f32.i64 k)\ndef f (ks: []i64) = map rows ks\n")


def test_a_lambda_whose_result_size_is_its_parameter() -> None:
    msg = reject("def f (ks: []i64) =\n  map (\\k -> iota (k)) ks\n")
    assert "t.fut:2:8" in msg
    assert 'the size of [k]i64 is the function\'s parameter "k"' in msg
    accept("def f (ks: []i64) =\n  map (\\k -> iota 3 |> map (+ k)) ks\n")


def test_an_unlifted_type_parameter_of_a_program_function() -> None:
    msg = reject(APPLY.format("'a 'b") + ROWS + "def f (k: i64) = apply rows k\n")
    assert "t.fut:3:24" in msg
    assert 'Cannot apply "apply" to "rows"' in msg
    accept(APPLY.format("'a '^b") + ROWS + "def f (k: i64) = apply rows k\n")
    accept(ROWS + "def f (k: i64) = k |> rows\n")
