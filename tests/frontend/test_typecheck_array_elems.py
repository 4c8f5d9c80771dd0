"""An array literal may not hold functions, whatever inference learns
about its elements' type later (Futhark's rule, checked once the
declaration is inferred).  Each rejected program with its message and
location, and a close variant accepted."""

from checks import accept, reject


def test_an_element_later_applied_is_rejected() -> None:
    msg = reject("def pair g = let a = [g] in (a, g 1i32)\n")
    assert "t.fut:1:22" in msg
    assert "Type\n  i32 -> " in msg
    assert "found to be functional.\nAn array literal may not hold functions." in msg


def test_an_element_applied_before_is_rejected() -> None:
    msg = reject("def pair g = (g 1i32 + 1i32, [(g, 2i32)])\n")
    assert "t.fut:1:30" in msg
    assert "Type\n  (i32 -> i32, i32)\nfound to be functional" in msg


def test_an_element_that_is_the_result_of_an_application() -> None:
    accept("def pair g = let a = [g 1i32] in (a, g 2i32 + 1i32)\n")
