"""Tests of the Futhark lexer: literals, operators, context rules, errors."""

from __future__ import annotations

import pytest

from futgen.errors import CompileError
from futgen.frontend.lexer import tokenize


def kinds(text: str) -> list[str]:
    return [t.kind for t in tokenize(text, "t.fut")][:-1]


def values(text: str) -> list[object]:
    return [t.value for t in tokenize(text, "t.fut")][:-1]


@pytest.mark.parametrize(
    ("text", "kind", "value"),
    [
        ("42", "nat", 42),
        ("1_000", "nat", 1000),
        ("1i64", "intlit", (1, "i64")),
        ("255u8", "intlit", (255, "u8")),
        ("0x1F", "intlit", (31, None)),
        ("0x1Fi32", "intlit", (31, "i32")),
        ("0b101", "intlit", (5, None)),
        ("0b1_01u16", "intlit", (5, "u16")),
        ("0rXIV", "intlit", (14, None)),
        ("2.5f32", "floatlit", (2.5, "f32")),
        ("3f32", "floatlit", (3.0, "f32")),
        ("1e-3", "floatlit", (0.001, None)),
        ("1.5e2f64", "floatlit", (150.0, "f64")),
        ("0x1.8p1", "floatlit", (3.0, None)),
        ("0x1.8p1f32", "floatlit", (3.0, "f32")),
        ("'a'", "char", 97),
        ("'\\n'", "char", 10),
    ],
)
def test_literals(text: str, kind: str, value: object) -> None:
    (tok,) = tokenize(text, "t.fut")[:-1]
    assert (tok.kind, tok.value) == (kind, value)


def test_float_never_directly_after_dot() -> None:
    assert kinds("x.0.1") == ["id", ".", "nat", ".", "nat"]
    assert kinds("x 0.1") == ["id", "floatlit"]


def test_integer_suffix_only_ends_an_integer() -> None:
    assert kinds("1e3i32") == ["floatlit", "id"]
    assert kinds("1.5u8") == ["floatlit", "id"]


def test_range_after_integer_is_not_a_float() -> None:
    assert kinds("1..<n") == ["nat", "..<", "id"]
    assert kinds("0...9") == ["nat", "...", "nat"]
    assert kinds("a..b...c") == ["id", "..", "id", "...", "id"]
    assert kinds("a..>b") == ["id", "..>", "id"]


def test_indexing_bracket_needs_no_space() -> None:
    assert kinds("a[i]") == ["id", "idx[", "id", "]"]
    assert kinds("a [i]") == ["id", "[", "id", "]"]
    assert kinds("f(x)[0] [1][2]") == [
        "id",
        "(",
        "id",
        ")",
        "idx[",
        "nat",
        "]",
        "[",
        "nat",
        "]",
        "idx[",
        "nat",
        "]",
    ]


def test_operators_are_maximal_runs() -> None:
    toks = tokenize("a +^ b |> c >-> d ** e", "t.fut")[:-1]
    assert [t.text for t in toks if t.kind == "op"] == ["+^", "|>", ">->", "**"]
    assert kinds("= == ! != -> ->>") == ["=", "op", "!", "op", "->", "op"]


def test_qualified_operator() -> None:
    (tok,) = tokenize("f32.+", "t.fut")[:-1]
    assert (tok.kind, tok.value) == ("op", (["f32"], "+"))
    assert kinds("r.x+1") == ["id", ".", "id", "op", "nat"]


def test_keywords_identifiers_and_punctuation() -> None:
    assert kinds("let x' = _y in _") == ["let", "id", "=", "id", "in", "_"]
    assert kinds("'a '^b '~c") == ["'", "id", "'^", "id", "'~", "id"]
    assert kinds("#[inline] #foo `f` \\x :> :") == [
        "#[",
        "id",
        "]",
        "constructor",
        "`",
        "id",
        "`",
        "\\",
        "id",
        ":>",
        ":",
    ]
    assert values("as map") == ["as", "map"]


def test_comments_are_skipped_and_lines_counted() -> None:
    toks = tokenize("-- ==\n-- | doc\nx -- trailing\n  y", "t.fut")
    assert [(t.text, t.line, t.col) for t in toks[:-1]] == [("x", 3, 1), ("y", 4, 3)]


def test_string_literal_is_decoded() -> None:
    (tok,) = tokenize('"a\\n\\"b"', "t.fut")[:-1]
    assert (tok.kind, tok.value) == ("string", 'a\n"b')


def test_unterminated_string() -> None:
    with pytest.raises(CompileError) as e:
        tokenize('x = "abc\n', "t.fut")
    assert e.value.message == "unterminated string"
    assert str(e.value.loc) == "t.fut:1:5"


def test_unknown_character() -> None:
    with pytest.raises(CompileError) as e:
        tokenize("x\n  $ y", "t.fut")
    assert e.value.message == "unknown character '$'"
    assert str(e.value.loc) == "t.fut:2:3"
