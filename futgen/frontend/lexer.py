"""The Futhark lexer: source text to a list of tokens with 1-based positions.

One compiled regular expression scans the whole text; a few context rules
of Futhark's own lexer are applied on top, because the grammar depends on
them:

* `[` directly after an identifier character, `)` or `]` (no space) is an
  indexing bracket (kind "idx["); with a space it is a plain "[" that starts
  an array literal or a size.  This is how `a[i]` differs from `f [1, 2]`.
* A decimal literal directly after `.` is never a float, so that `x.0.1`
  is two projections, not `x` followed by the float `0.1`.
* A run of operator characters is one operator token (`+^`, `|>`, `>->`);
  `=`, `!` and `->` on their own are punctuation.

Comments (`--` to end of line, including doc comments and `-- ==` test
blocks) are dropped.
"""

from __future__ import annotations

import re
from typing import Any, NoReturn

from futgen.errors import CompileError, Loc

KEYWORDS = frozenset(
    [
        "if",
        "then",
        "else",
        "def",
        "let",
        "loop",
        "in",
        "for",
        "do",
        "with",
        "local",
        "open",
        "include",
        "import",
        "type",
        "entry",
        "module",
        "while",
        "match",
        "case",
        "val",
        "true",
        "false",
        "assert",
    ]
)

INT_SUFFIXES = ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64")
FLOAT_SUFFIXES = ("f16", "f32", "f64")

_OPCHARS = r"+\-*/%=!><|&^"
_IDENT = r"[a-zA-Z][a-zA-Z0-9_']*|_[a-zA-Z0-9][a-zA-Z0-9_']*"
_ISFX = r"(?:[iu](?:8|16|32|64))"

_TOKEN_RE = re.compile(
    rf"""
     (?P<nl>\n)
    |(?P<ws>[ \t\r\f\v]+)
    |(?P<comment>--[^\n]*)
    |(?P<hexfloat>0[xX][0-9a-fA-F][0-9a-fA-F_]*\.[0-9a-fA-F][0-9a-fA-F_]*[pP][+\-]?[0-9_]+
        (?:f16|f32|f64)?)
    |(?P<hex>0[xX][0-9a-fA-F][0-9a-fA-F_]*{_ISFX}?)
    |(?P<bin>0[bB][01][01_]*{_ISFX}?)
    |(?P<rom>0[rR][IVXLCDM][IVXLCDM_]*{_ISFX}?)
    |(?P<num>[0-9][0-9_]*(?:\.[0-9][0-9_]*)?(?:[eE][+\-]?[0-9]+)?(?:{_ISFX}|f(?:16|32|64))?)
    |(?P<char>'(?:[^'\\\n]|\\(?:[0-9]+|x[0-9a-fA-F]+|[^\n]))')
    |(?P<string>"(?:[^"\\\n]|\\[^\n])*")
    |(?P<qualop>(?:(?:{_IDENT})\.)+[{_OPCHARS}][{_OPCHARS}.]*)
    |(?P<id>{_IDENT})
    |(?P<op>[{_OPCHARS}][{_OPCHARS}.]*)
    |(?P<punct>\.\.\.|\.\.<|\.\.>|\.\.|\?\?\?|'\^|'~|\#\[|:>|[()\[\]{{}},_?:\\~'`.])
    |(?P<ctor>\#(?:{_IDENT}))
    """,
    re.VERBOSE,
)

# A decimal literal split into its parts, to classify it.
_NUM_PARTS = re.compile(
    rf"([0-9][0-9_]*)(\.[0-9][0-9_]*)?([eE][+\-]?[0-9]+)?({_ISFX}|f(?:16|32|64))?"
)
_DECIMAL_ONLY = re.compile(rf"[0-9][0-9_]*{_ISFX}?")
_INT_SUFFIX_RE = re.compile(rf"{_ISFX}$")

# Characters after which `[` is an indexing bracket.
_INDEX_PRECEDERS = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_')]"
)

_ESCAPES = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "\\": "\\",
    '"': '"',
    "'": "'",
    "0": "\0",
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "v": "\v",
}


class Token:
    """One token: `kind` is a keyword, a punctuation string, or one of
    "id", "nat", "intlit", "floatlit", "char", "string", "op", "constructor",
    "eof".  `value` holds the decoded literal or name; for "op" it is
    `(qualifiers, name)`, e.g. `(["f32"], "+")` for `f32.+`.
    """

    __slots__ = ("col", "kind", "line", "text", "value")

    def __init__(self, kind: str, text: str, value: Any, line: int, col: int):
        self.kind = kind
        self.text = text
        self.value = value
        self.line = line
        self.col = col

    def __repr__(self) -> str:
        return f"Token({self.kind!r}, {self.text!r}, {self.line}:{self.col})"


def _roman(s: str) -> int:
    """Value of a Roman numeral (Futhark's `0rXIV` literals)."""
    vals = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}
    total = 0
    for i, ch in enumerate(s):
        v = vals[ch]
        if i + 1 < len(s) and vals[s[i + 1]] > v:
            total -= v
        else:
            total += v
    return total


def _split_int_suffix(text: str) -> tuple[str, str | None]:
    m = _INT_SUFFIX_RE.search(text)
    if m is None:
        return text, None
    return text[: m.start()], m.group(0)


def _radix_literal(kind: str, text: str) -> tuple[str, Any]:
    """Decode a hex/binary/roman integer or a hex float literal."""
    body, suffix = text, None
    if kind == "hexfloat":
        if body[-3:] in FLOAT_SUFFIXES:
            body, suffix = body[:-3], body[-3:]
        try:
            value = float.fromhex(body.replace("_", ""))
        except OverflowError:
            value = float("inf")
        return "floatlit", (value, suffix)
    body, suffix = _split_int_suffix(text)
    digits = body[2:].replace("_", "")
    if kind == "hex":
        value = int(digits, 16)
    elif kind == "bin":
        value = int(digits, 2)
    else:
        value = _roman(digits)
    return "intlit", (value, suffix)


def _decimal_literal(text: str) -> tuple[str, Any]:
    """Decode a decimal literal: "nat" (plain), "intlit" or "floatlit"."""
    m = _NUM_PARTS.fullmatch(text)
    assert m is not None
    whole, frac, exp, suffix = m.groups()
    if frac is None and exp is None and suffix is None:
        return "nat", int(whole.replace("_", ""))
    if suffix in INT_SUFFIXES and frac is None and exp is None:
        return "intlit", (int(whole.replace("_", "")), suffix)
    number = (whole + (frac or "") + (exp or "")).replace("_", "")
    return "floatlit", (float(number), suffix)


def _unescape(body: str, file: str, line: int, col: int) -> str:
    """Decode the escapes of a string or character literal body."""
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        nxt = body[i + 1]
        if nxt.isdigit():
            j = i + 1
            while j < len(body) and body[j].isdigit():
                j += 1
            out.append(chr(min(int(body[i + 1 : j]), 0x10FFFF)))
            i = j
        elif (
            nxt == "x" and i + 2 < len(body) and body[i + 2] in "0123456789abcdefABCDEF"
        ):
            j = i + 2
            while j < len(body) and body[j] in "0123456789abcdefABCDEF":
                j += 1
            out.append(chr(min(int(body[i + 2 : j], 16), 0x10FFFF)))
            i = j
        elif nxt in _ESCAPES:
            out.append(_ESCAPES[nxt])
            i += 2
        else:
            raise CompileError(
                f"invalid escape sequence '\\{nxt}'", Loc(file, line, col + i + 1)
            )
    return "".join(out)


def tokenize(text: str, file: str) -> list[Token]:
    """Split `text` into tokens, ending with an "eof" token.

    Raises CompileError for characters that start no token and for
    unterminated strings.
    """
    toks: list[Token] = []
    append = toks.append
    match = _TOKEN_RE.match
    pos = 0
    n = len(text)
    line = 1
    line_start = 0
    while pos < n:
        m = match(text, pos)
        if m is None:
            _lex_error(text, pos, file, line, pos - line_start + 1)
        kind = m.lastgroup
        end = m.end()
        if kind == "nl":
            line += 1
            line_start = end
            pos = end
            continue
        if kind == "ws" or kind == "comment":
            pos = end
            continue
        col = pos - line_start + 1
        tok_text = m.group()
        if kind == "id":
            append(
                Token(
                    tok_text if tok_text in KEYWORDS else "id",
                    tok_text,
                    tok_text,
                    line,
                    col,
                )
            )
        elif kind == "punct":
            if tok_text == "[" and pos > 0 and text[pos - 1] in _INDEX_PRECEDERS:
                append(Token("idx[", tok_text, None, line, col))
            else:
                append(Token(tok_text, tok_text, None, line, col))
        elif kind == "op":
            if tok_text in ("=", "!", "->"):
                append(Token(tok_text, tok_text, None, line, col))
            else:
                append(Token("op", tok_text, ([], tok_text), line, col))
        elif kind == "num":
            if pos > 0 and text[pos - 1] == ".":
                # Futhark never lexes a float right after a dot (`x.0.1`).
                m2 = _DECIMAL_ONLY.match(text, pos)
                assert m2 is not None
                end = m2.end()
                tok_text = m2.group()
            elif "." in tok_text or "e" in tok_text or "E" in tok_text:
                # An integer suffix ends only an integer: `1e3i32` is `1e3` `i32`.
                body, sfx = _split_int_suffix(tok_text)
                if sfx is not None:
                    end -= len(sfx)
                    tok_text = body
            try:
                lk, value = _decimal_literal(tok_text)
            except ValueError:  # Python refuses to convert huge decimals
                raise CompileError(
                    "numeric literal too long", Loc(file, line, col)
                ) from None
            append(Token(lk, tok_text, value, line, col))
        elif kind == "qualop":
            *qual, name = _split_qualop(tok_text)
            append(Token("op", tok_text, (qual, name), line, col))
        elif kind == "char":
            value = _unescape(tok_text[1:-1], file, line, col)
            if len(value) != 1:
                raise CompileError("invalid character literal", Loc(file, line, col))
            append(Token("char", tok_text, ord(value), line, col))
        elif kind == "string":
            value = _unescape(tok_text[1:-1], file, line, col)
            append(Token("string", tok_text, value, line, col))
        elif kind == "ctor":
            append(Token("constructor", tok_text, tok_text[1:], line, col))
        else:  # hex, bin, rom, hexfloat
            lk, value = _radix_literal(kind, tok_text)
            append(Token(lk, tok_text, value, line, col))
        pos = end
    append(Token("eof", "", None, line, pos - line_start + 1))
    return toks


def _split_qualop(text: str) -> list[str]:
    """`f32.+` -> ["f32", "+"]; the operator part may itself contain dots."""
    parts: list[str] = []
    rest = text
    while True:
        m = re.match(_IDENT, rest)
        if m is None or not rest[m.end() :].startswith("."):
            break
        parts.append(m.group())
        rest = rest[m.end() + 1 :]
    parts.append(rest)
    return parts


def _lex_error(text: str, pos: int, file: str, line: int, col: int) -> NoReturn:
    """Raise the error for text at `pos` that starts no token."""
    ch = text[pos]
    loc = Loc(file, line, col)
    if ch == '"':
        raise CompileError("unterminated string", loc)
    raise CompileError(f"unknown character {ch!r}", loc)
