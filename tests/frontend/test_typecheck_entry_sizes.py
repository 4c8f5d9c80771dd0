"""Sizes of an entry point's result that nothing determines
(`entry_sizes.py`): Futhark makes them size parameters, which an entry
point's result may not have.  Each rejected program has a close variant
that is accepted."""

from checks import accept, reject

NONE = "def none 'e (k: i64) : (i64, [0]e) = (k, [])\n"


def test_an_entry_result_size_nothing_determines_is_rejected() -> None:
    msg = reject(NONE + "entry grid k : (i64, [][]f32) = none k\n")
    assert "t.fut:2:1" in msg
    assert "Entry point functions must not be size-polymorphic in their return type" in msg
    assert '"grid"' in msg


def test_a_function_result_size_nothing_determines_is_accepted() -> None:
    accept(NONE + "def grid k : (i64, [][]f32) = none k\n")


def test_an_entry_result_size_the_body_determines_is_accepted() -> None:
    accept(NONE + "entry grid k : (i64, [][]f32) = let (j, e) = none k in (j, e :> [0][3]f32)\n")


def test_an_entry_result_size_a_parameter_gives_is_accepted() -> None:
    accept("entry same (xs: [][]f32) : [][]f32 = xs\n")
