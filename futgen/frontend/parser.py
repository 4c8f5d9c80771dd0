"""A recursive-descent parser for the supported Futhark subset.

It follows the grammar and precedences of Futhark's own parser
(`Language/Futhark/Parser/Parser.y`), written by hand so that futgen needs
no parser generator.  The layers, from loosest to tightest binding:

    exp     ::= exp2 (":" type | ":>" type)*
    exp2    ::= binop (("..." | "..<" | "..>") binop | ".." binop range-end)?
    binop   ::= precedence climbing over the table below, `with` and backticks
    unary   ::= "-" unary | "!" unary | if | let | loop | lambda | assert
              | "#[" attr "]" exp | application
    apply   ::= atom atom* lambda?
    atom    ::= literal | name | ( ... ) | [ ... ] | { ... }, then
                postfix `.field` and `[indices]` (indexing needs no space)

Binary operators take the precedence of their longest leading built-in
operator (`+^` behaves like `+`, `>->` like `>`), as in Futhark.  The
prefix forms (`if`, `let`, `loop`, lambdas, `assert`, attributes) extend as
far to the right as possible, so they may appear as the right operand of
any operator.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NoReturn, TypeVar

from futgen.errors import (
    NOWHERE,
    CompileError,
    Loc,
    UnsupportedFeature,
    register_source,
)
from futgen.frontend import syntax as S
from futgen.frontend.lexer import Token, tokenize
from futgen.frontend.types import PRIMS

# Operator precedences (higher binds tighter) and right-associativity, keyed
# by the leading built-in operator.  Backtick application is level 0 and
# `with` level 1; ranges and ascriptions are looser still.
_LEVELS: dict[str, tuple[int, bool]] = {
    "|>": (2, False),
    "<|": (3, True),
    "||": (4, False),
    "&&": (5, False),
    **{op: (6, False) for op in ("<=", ">=", ">", "<", "==", "!=", "!", "=")},
    **{op: (7, False) for op in ("&", "^", "|")},
    **{op: (8, False) for op in ("<<", ">>")},
    **{op: (9, False) for op in ("+", "-")},
    **{op: (10, False) for op in ("*", "/", "%", "//", "%%")},
    "**": (11, False),
}
_BACKTICK_LEVEL = 0
_WITH_LEVEL = 1
_LEADING = sorted(_LEVELS, key=len, reverse=True)
_LEVEL_CACHE: dict[str, tuple[int, bool]] = {}

# Token kinds that can start an atom (an application argument).
_ATOM_START = frozenset(
    (
        "id",
        "nat",
        "intlit",
        "floatlit",
        "char",
        "string",
        "true",
        "false",
        "(",
        "[",
        "{",
        "constructor",
        "???",
    )
)
# Token kinds that can start a function parameter pattern.
_PARAM_START = frozenset(
    (
        "id",
        "_",
        "(",
        "{",
        "#[",
        "nat",
        "intlit",
        "floatlit",
        "char",
        "true",
        "false",
        "constructor",
    )
)
_TYPE_ARG_START = frozenset(("id", "(", "{", "[", "idx["))
_RANGE_KINDS = ("...", "..<", "..>")
_MODULES = frozenset(PRIMS)
_SECTION_VAR = "%section"
_RECURSION_LIMIT = 20000
T = TypeVar("T")


def operator_level(op: str) -> tuple[int, bool]:
    """Precedence and right-associativity of a binary operator, decided by
    its longest leading built-in operator, as Futhark does."""
    level = _LEVEL_CACHE.get(op)
    if level is None:
        level = next(
            (_LEVELS[p] for p in _LEADING if op.startswith(p)), (_BACKTICK_LEVEL, False)
        )
        _LEVEL_CACHE[op] = level
    return level


def _describe(tok: Token) -> str:
    if tok.kind == "eof":
        return "end of file"
    return f"token '{tok.text}'"


class Parser:
    """Parses one token list; `i` is the index of the current token."""

    def __init__(self, text: str, file: str):
        self.file = file
        self.toks = tokenize(text, file)
        self.i = 0
        self.unsafe_depth = 0  # inside how many `#[unsafe]`

    # ------------------------------------------------------------- helpers

    def peek(self, k: int = 0) -> Token:
        j = self.i + k
        toks = self.toks
        return toks[j] if j < len(toks) else toks[-1]

    def kind(self, k: int = 0) -> str:
        return self.peek(k).kind

    def advance(self) -> Token:
        tok = self.toks[self.i]
        if tok.kind != "eof":
            self.i += 1
        return tok

    def loc(self, tok: Token) -> Loc:
        return Loc(self.file, tok.line, tok.col)

    def error(self, expected: str, tok: Token | None = None) -> NoReturn:
        tok = tok or self.peek()
        raise CompileError(
            f"Unexpected {_describe(tok)}, expected {expected}", self.loc(tok)
        )

    def expect(self, kind: str, expected: str | None = None) -> Token:
        tok = self.peek()
        if tok.kind != kind:
            self.error(expected or f"'{kind}'", tok)
        return self.advance()

    def accept(self, kind: str) -> bool:
        if self.toks[self.i].kind == kind:
            self.i += 1
            return True
        return False

    def is_op(self, text: str, k: int = 0) -> bool:
        tok = self.peek(k)
        return tok.kind == "op" and tok.text == text

    def refutable(self, tok: Token) -> NoReturn:
        """A literal where a pattern must match every value (parameters, `let`,
        loops: the only patterns outside `match`, which the subset leaves out)."""
        raise CompileError("Refutable pattern not allowed here.", self.loc(tok))

    def unsupported(self, feature: str, tok: Token | None = None) -> NoReturn:
        raise UnsupportedFeature(feature, self.loc(tok or self.peek()))

    def name(self, expected: str = "name") -> tuple[str, Token]:
        tok = self.expect("id", expected)
        return tok.text, tok

    # -------------------------------------------------------- declarations

    def program(self) -> S.Program:
        decls: list[S.Decl] = []
        while self.kind() != "eof":
            decls.append(self.decl())
        return S.Program(self.file, decls)

    def decl(self) -> S.Decl:
        attrs: list[str] = []
        while self.kind() == "#[":
            attrs.append(self.attribute())
        tok = self.peek()
        k = tok.kind
        if k in ("def", "entry", "let"):
            with self.attributed(attrs):
                d = self.val_decl()
            d.attrs = attrs
            return d
        if k == "type":
            return self.type_decl()
        if k == "local":
            self.advance()
            d2 = self.decl()
            if isinstance(d2, (S.ValDecl, S.TypeDecl)):
                d2.local = True
            return d2
        if k == "import":
            self.advance()
            path = self.expect("string", "a file name in double quotes")
            return S.ImportDecl(path.value, self.loc(tok))
        if k == "module":
            if self.kind(1) == "type":
                self.unsupported("module type", tok)
            if self.kind(1) == "id" and self.kind(2) == "(":
                self.unsupported("functor", tok)
            self.unsupported("module", tok)
        if k in ("open", "include", "val"):
            self.unsupported(k, tok)
        self.error("declaration")

    @contextmanager
    def attributed(self, attrs: list[str]) -> Iterator[None]:
        """Parse what the attributes `attrs` apply to: `unsafe` marks the
        assertions written inside (`S.Apply.unchecked`)."""
        unsafe = "unsafe" in attrs
        self.unsafe_depth += unsafe
        try:
            yield
        finally:
            self.unsafe_depth -= unsafe

    def attribute(self) -> str:
        """Parse `#[...]` and return its text; futgen ignores attributes'
        meaning but for `unsafe` (see `attributed`), and records their names
        on declarations."""
        start = self.expect("#[")
        depth = 0
        parts: list[str] = []
        while True:
            tok = self.peek()
            if tok.kind == "eof":
                raise CompileError("unterminated attribute", self.loc(start))
            if tok.kind == "]" and depth == 0:
                self.advance()
                break
            if tok.kind in ("(", "[", "idx["):
                depth += 1
            elif tok.kind in (")", "]"):
                depth -= 1
            parts.append(tok.text)
            self.advance()
        if not parts:
            self.error("attribute", start)
        return "".join(parts)

    def val_decl(self) -> S.ValDecl:
        kw = self.advance()
        tparams: list[S.TParam] = []
        if self.is_infix_definition():
            lhs = self.param_pat()
            name = self.binding_op()
            params = [lhs, self.param_pat()]
        else:
            name = self.binding_id()
            tparams = self.type_params()
            params = self.param_pats()
        ret = None
        if self.accept(":"):
            ret = self.type_exp()
        self.expect("=", "'='")
        body = self.exp()
        return S.ValDecl(
            kw.kind == "entry", name, tparams, params, ret, body, self.loc(kw)
        )

    def is_infix_definition(self) -> bool:
        """`def x +^ y = ...` rather than `def f x y = ...`."""
        k = self.kind()
        if k == "id":
            return self.kind(1) in ("op", "!") or self.kind(1) == "`"
        if k == "(":
            return not (self.kind(1) in ("op", "!") and self.kind(2) == ")")
        return k in ("_", "{")

    def binding_op(self) -> str:
        tok = self.peek()
        if tok.kind == "!":
            raise CompileError(
                "'!' is a prefix operator and cannot be used as infix operator",
                self.loc(tok),
            )
        if tok.kind == "`":
            self.advance()
            name, _ = self.name()
            self.expect("`")
            return name
        if tok.kind != "op":
            self.error("operator")
        qual, name = tok.value
        if qual:
            raise CompileError(
                "cannot use a qualified name in binding position", self.loc(tok)
            )
        self.advance()
        return name

    def binding_id(self) -> str:
        """A function name: `f` or a parenthesised operator `(+^)`."""
        tok = self.peek()
        if tok.kind == "id":
            self.advance()
            return tok.text
        if tok.kind == "(" and self.kind(1) in ("op", "!") and self.kind(2) == ")":
            self.advance()
            name = self.binding_op()
            self.advance()
            return name
        self.error("name")

    def type_params(self) -> list[S.TParam]:
        params: list[S.TParam] = []
        while True:
            k = self.kind()
            if k in ("[", "idx[") and self.kind(1) == "id" and self.kind(2) == "]":
                tok = self.advance()
                params.append(S.SizeParam(self.advance().text, self.loc(tok)))
                self.advance()
            elif k in ("'", "'^", "'~"):
                tok = self.advance()
                name, _ = self.name("type parameter name")
                params.append(S.TypeParam(name, k[1:], self.loc(tok)))
            else:
                return params

    def type_decl(self) -> S.TypeDecl:
        kw = self.advance()
        lifted = ""
        if self.is_op("^"):
            self.advance()
            lifted = "^"
        elif self.accept("~"):
            lifted = "~"
        name, _ = self.name("type name")
        params = self.type_params()
        self.expect("=", "'='")
        body = self.type_exp()
        return S.TypeDecl(name, params, body, lifted, self.loc(kw))

    # ------------------------------------------------------------- headers

    def header(self, name: str) -> S.ValDecl:
        tparams = self.type_params()
        params = self.param_pats()
        ret = None
        if self.accept(":"):
            ret = self.type_exp()
        self.expect("eof", "end of header")
        body = S.Literal(0, "int", loc=NOWHERE)
        return S.ValDecl(False, name, tparams, params, ret, body, NOWHERE)

    # ------------------------------------------------------------ patterns

    def param_pats(self) -> list[S.Pat]:
        params: list[S.Pat] = []
        while self.kind() in _PARAM_START:
            params.append(self.param_pat())
        return params

    def pattern(self) -> S.Pat:
        """`Pat`: an inner pattern with an optional `: type`."""
        while self.kind() == "#[":
            self.attribute()
        tok = self.peek()
        if tok.kind == "constructor":
            self.unsupported("sum type", tok)
        if tok.kind == "op" and tok.text == "-":
            self.refutable(tok)
        pat = self.param_pat()
        if self.accept(":"):
            return S.PAscribe(pat, self.type_exp(), self.loc(tok))
        return pat

    def param_pat(self) -> S.Pat:
        """A pattern that needs no parentheses: a name, `_`, a tuple or
        record pattern, or a parenthesised pattern."""
        tok = self.peek()
        k = tok.kind
        if k == "id":
            self.advance()
            return S.PId(tok.text, self.loc(tok))
        if k == "_":
            self.advance()
            return S.PWild(self.loc(tok))
        if k == "(":
            return self.paren_pat()
        if k == "{":
            return self.record_pat()
        if k == "#[":
            self.attribute()
            return self.param_pat()
        if k in ("nat", "intlit", "floatlit", "char", "true", "false"):
            self.refutable(tok)
        if k == "constructor":
            self.unsupported("sum type", tok)
        self.error("pattern")

    def paren_items(self, item: Callable[[], Any]) -> tuple[list, bool]:
        """Items of `(a, b, ...)` after the opening parenthesis, through the closing one.

        Returns the items and whether it was a single parenthesised item
        `(a)` (as opposed to a tuple, `()` included); a trailing comma is allowed.
        """
        if self.accept(")"):
            return [], False
        elems = [item()]
        if self.accept(")"):
            return elems, True
        while self.accept(","):
            if self.kind() == ")":
                break
            elems.append(item())
        self.expect(")", "',' or ')'")
        return elems, False

    def paren_pat(self) -> S.Pat:
        start = self.advance()
        loc = self.loc(start)
        if self.kind() in ("op", "!") and self.kind(1) == ")":
            name = self.binding_op()
            self.advance()
            return S.PId(name, loc)
        elems, single = self.paren_items(self.pattern)
        return elems[0] if single else S.PTuple(elems, loc)

    def record_pat(self) -> S.Pat:
        start = self.advance()
        fields: list[tuple[str, S.Pat]] = []
        while self.kind() != "}":
            ftok = self.field_id()
            fname = str(ftok.value) if ftok.kind == "nat" else ftok.text
            floc = self.loc(ftok)
            if self.accept("="):
                fields.append((fname, self.pattern()))
            elif self.accept(":"):
                fields.append(
                    (fname, S.PAscribe(S.PId(fname, floc), self.type_exp(), floc))
                )
            else:
                if ftok.kind != "id":
                    self.error("'='")
                fields.append((fname, S.PId(fname, floc)))
            if not self.accept(","):
                break
        self.expect("}", "',' or '}'")
        return S.PRecord(fields, self.loc(start))

    def field_id(self) -> Token:
        tok = self.peek()
        if tok.kind not in ("id", "nat"):
            self.error("field name")
        return self.advance()

    # --------------------------------------------------------------- types

    def type_exp(self) -> S.TypeExp:
        """`TypeExp`: arrows (right-associative) over type terms."""
        tok = self.peek()
        if tok.kind == "(" and self.kind(1) == "id" and self.kind(2) == ":":
            self.advance()
            pname = self.advance().text
            self.advance()
            param = self.type_exp()
            self.expect(")", "')'")
            self.expect("->", "'->'")
            return S.TEArrow(pname, param, self.type_exp(), self.loc(tok))
        if tok.kind == "?":
            return self.exist_type()
        t = self.type_term()
        if self.accept("->"):
            return S.TEArrow(None, t, self.type_exp(), self.loc(tok))
        return t

    def type_term(self) -> S.TypeExp:
        """`TypeExpTerm`: a uniqueness mark or a type application."""
        tok = self.peek()
        if tok.kind == "op" and tok.text == "*":
            self.advance()
            return S.TEUnique(self.type_term(), self.loc(tok))
        if tok.kind == "constructor":
            self.unsupported("sum type", tok)
        t = self.type_atom()
        if isinstance(t, S.TEName) and not t.args:
            while self.kind() in _TYPE_ARG_START:
                if self.kind() in ("[", "idx["):
                    t.args.append(self.size_exp())
                else:
                    t.args.append(self.type_atom())
        return t

    def type_atom(self) -> S.TypeExp:
        tok = self.peek()
        k = tok.kind
        loc = self.loc(tok)
        if k == "id":
            names = [self.advance().text]
            while self.kind() == "." and self.kind(1) == "id":
                self.advance()
                names.append(self.advance().text)
            return S.TEName(".".join(names), [], loc)
        if k in ("[", "idx["):
            dim = self.size_exp()
            return S.TEArray(dim, self.type_term(), loc)
        if k == "(":
            self.advance()
            elems, single = self.paren_items(self.type_exp)
            return elems[0] if single else S.TETuple(elems, loc)
        if k == "{":
            self.advance()
            fields: list[tuple[str, S.TypeExp]] = []
            while self.kind() != "}":
                ftok = self.field_id()
                self.expect(":", "':'")
                fields.append((str(ftok.value), self.type_exp()))
                if not self.accept(","):
                    break
            self.expect("}", "',' or '}'")
            return S.TERecord(fields, loc)
        if k == "?":
            return self.exist_type()
        if k == "constructor":
            self.unsupported("sum type", tok)
        self.error("type")

    def exist_type(self) -> S.TEExist:
        """`?[n][m].t`: existential sizes, then the type they are sizes of."""
        tok = self.advance()
        names: list[str] = []
        while self.kind() in ("[", "idx["):
            self.advance()
            names.append(self.expect("id", "a size name").text)
            self.expect("]", "']'")
        if not names:
            self.error("'[' and a size name")
        self.expect(".", "'.'")
        return S.TEExist(names, self.type_exp(), self.loc(tok))

    def size_exp(self) -> S.DimExp:
        """`[d]` in a type: empty, a name, a constant or an expression."""
        start = self.advance()
        loc = self.loc(start)
        if self.accept("]"):
            return S.DimAny(loc)
        e = self.exp()
        self.expect("]", "']'")
        if isinstance(e, S.Var) and not e.qual:
            return S.DimName(e.name, e.loc)
        if (
            isinstance(e, S.Literal)
            and e.kind == "int"
            and not isinstance(e.value, bool)
        ):
            return S.DimConst(int(e.value), e.loc)
        return S.DimExpr(e, e.loc)

    # --------------------------------------------------------- expressions

    def exp(self) -> S.Expr:
        """`Exp`: an expression with optional type ascriptions."""
        e = self.exp2()
        while True:
            k = self.kind()
            if k == ":":
                self.advance()
                e = S.Ascribe(e, self.type_exp(), loc=e.loc)
            elif k == ":>":
                self.advance()
                e = S.Coerce(e, self.type_exp(), loc=e.loc)
            else:
                return e

    def exp2(self) -> S.Expr:
        """`Exp2`: an expression without ascription; ranges are parsed here,
        below every binary operator."""
        e = self.binop(0)
        k = self.kind()
        if k in _RANGE_KINDS:
            self.advance()
            return S.Range(e, None, self.binop(0), k, loc=e.loc)
        if k == "..":
            self.advance()
            second = self.binop(0)
            end_kind = self.kind()
            if end_kind not in _RANGE_KINDS:
                self.error("'...', '..<' or '..>'")
            self.advance()
            return S.Range(e, second, self.binop(0), end_kind, loc=e.loc)
        return e

    def binop(self, min_level: int) -> S.Expr:
        """Precedence climbing over binary operators, `with` and backticks.

        An operator directly followed by `)` is left alone: it belongs to a
        left section `(e op)`, which the parenthesis parser builds.
        """
        lhs = self.unary()
        while True:
            tok = self.peek()
            k = tok.kind
            if k == "op":
                level, right = operator_level(tok.value[1])
                if level < min_level or self.kind(1) == ")":
                    return lhs
                self.advance()
                rhs = self.binop(level if right else level + 1)
                lhs = self.make_binop(tok, lhs, rhs)
            elif k == "with":
                if _WITH_LEVEL < min_level:
                    return lhs
                self.advance()
                steps = self.update_steps()
                self.expect("=", "'='")
                value = self.binop(_WITH_LEVEL + 1)
                lhs = self.build_update(lhs, steps, value, lhs.loc)
            elif k == "`":
                if _BACKTICK_LEVEL < min_level or self.is_backtick_section_end():
                    return lhs
                self.advance()
                fn = self.qual_var()
                self.expect("`", "'`'")
                rhs = self.binop(_BACKTICK_LEVEL + 1)
                lhs = S.Apply(fn, [lhs, rhs], loc=lhs.loc)
            else:
                return lhs

    def make_binop(self, tok: Token, lhs: S.Expr, rhs: S.Expr) -> S.Expr:
        """`lhs op rhs`; a qualified operator `f32.+` is an application of
        the module's function, like a backtick operator."""
        qual, name = tok.value
        if qual:
            fn = S.Var(name, list(qual), loc=self.loc(tok))
            return S.Apply(fn, [lhs, rhs], loc=lhs.loc)
        return S.BinOp(name, lhs, rhs, self.loc(tok), loc=lhs.loc)

    def is_backtick_section_end(self) -> bool:
        """At `` `f` )``: the end of a left section `(x `f`)`."""
        j = 1
        if self.kind(j) != "id":
            return False
        j += 1
        while self.kind(j) == "." and self.kind(j + 1) == "id":
            j += 2
        return self.kind(j) == "`" and self.kind(j + 1) == ")"

    def qual_var(self) -> S.Var:
        """A possibly qualified name (`f`, `f32.sqrt`) for backticks."""
        name, tok = self.name()
        qual: list[str] = []
        while self.kind() == "." and self.kind(1) == "id":
            self.advance()
            qual.append(name)
            name = self.advance().text
        return S.Var(name, qual, loc=self.loc(tok))

    def unary(self) -> S.Expr:
        """Prefix operators and the forms that extend as far right as possible."""
        tok = self.peek()
        k = tok.kind
        if k == "op" and tok.text == "-":
            self.advance()
            return S.UnOp("-", self.unary(), loc=self.loc(tok))
        if k == "!":
            self.advance()
            return S.UnOp("!", self.unary(), loc=self.loc(tok))
        if k == "if":
            return self.if_exp()
        if k == "let":
            return self.let_exp()
        if k == "loop":
            return self.loop_exp()
        if k == "\\":
            return self.lambda_exp()
        if k == "assert":
            self.advance()
            cond = self.atom()
            body = self.exp()
            return S.Apply(S.Var("assert", loc=self.loc(tok)), [cond, body],
                           loc=self.loc(tok), unchecked=self.unsafe_depth > 0)
        if k == "#[":
            with self.attributed([self.attribute()]):
                return self.exp()
        if k == "match":
            self.unsupported("match", tok)
        if k == "case":
            self.unsupported("match", tok)
        return self.application()

    def application(self) -> S.Expr:
        fn = self.atom()
        args: list[S.Expr] = []
        while True:
            k = self.kind()
            if k in _ATOM_START:
                args.append(self.atom())
            elif k == "\\":
                args.append(self.lambda_exp())
                break
            else:
                break
        if not args:
            return fn
        return S.Apply(fn, args, loc=fn.loc)

    def if_exp(self) -> S.Expr:
        tok = self.advance()
        cond = self.exp()
        self.expect("then", "'then'")
        then = self.exp()
        self.expect("else", "'else'")
        return S.If(cond, then, self.exp(), loc=self.loc(tok))

    def lambda_exp(self) -> S.Expr:
        tok = self.advance()
        params = self.param_pats()
        if not params:
            self.error("lambda parameter")
        ret = None
        if self.accept(":"):
            ret = self.type_term()
        self.expect("->", "'->'")
        return S.Lambda(params, ret, self.exp(), loc=self.loc(tok))

    def let_exp(self) -> S.Expr:
        """`let ... in body`; chains of lets are parsed iteratively, since
        generated programs can have thousands of them in one function."""
        binders: list[tuple[Token, S.Expr]] = []  # each with body left as None
        while True:
            tok = self.advance()
            node = self.let_binding(tok)
            binders.append((tok, node))
            k = self.kind()
            if k == "in":
                self.advance()
                if self.kind() == "let":
                    continue
                body = self.exp()
                break
            if k == "let":
                continue
            if k in ("def", "type", "module", "entry"):
                raise CompileError(
                    f'Unexpected "{k}" - missing "in"?', self.loc(self.peek())
                )
            self.error("'in'")
        for _tok, node in reversed(binders):
            node.body = body  # type: ignore[attr-defined]
            body = node
        return body

    def let_binding(self, tok: Token) -> S.Expr:
        """The part of a `let` before its body; the body is filled in later."""
        loc = self.loc(tok)
        dummy = S.TupleExp([], loc=loc)
        k = self.kind()
        if k in ("[", "idx["):
            sizes = self.size_binders()
            pat = self.pattern()
            self.expect("=", "'='")
            return S.LetPat(sizes, pat, self.exp(), dummy, loc=loc)
        if k == "id":
            k1 = self.kind(1)
            if k1 in ("idx[", "."):
                return self.let_update(loc, dummy)
            if k1 in _PARAM_START or k1 in ("'", "'^", "'~", "["):
                return self.let_fun(loc, dummy)
        pat = self.pattern()
        self.expect("=", "'='")
        return S.LetPat([], pat, self.exp(), dummy, loc=loc)

    def size_binders(self) -> list[str]:
        sizes: list[str] = []
        while self.kind() in ("[", "idx["):
            self.advance()
            sizes.append(self.name("size name")[0])
            self.expect("]", "']'")
        return sizes

    def let_update(self, loc: Loc, dummy: S.Expr) -> S.Expr:
        """`let xs[i] = v` and `let r.f = v`: in-place updates of a variable."""
        name, ntok = self.name()
        steps: list[tuple[str, object]] = []
        while True:
            k = self.kind()
            if k == "idx[":
                self.advance()
                steps.append(("idx", self.dim_indices()))
            elif k == ".":
                self.advance()
                steps.append(("field", self.field_name()))
            else:
                break
        self.expect("=", "'='")
        value = self.exp()
        nloc = self.loc(ntok)
        src = S.Var(name, loc=nloc)
        update = self.build_update(src, steps, value, nloc)
        return S.LetPat([], S.PId(name, nloc), update, dummy, loc=loc)

    def let_fun(self, loc: Loc, dummy: S.Expr) -> S.Expr:
        name, _ = self.name()
        tparams = self.type_params()
        params = self.param_pats()
        if not params:
            self.error("function parameter")
        ret = None
        if self.accept(":"):
            ret = self.type_exp()
        self.expect("=", "'='")
        value = self.exp()
        return S.LetFun(name, tparams, params, ret, value, dummy, loc=loc)

    def loop_exp(self) -> S.Expr:
        tok = self.advance()
        sizes = self.size_binders() if self.kind() == "[" else []
        pat = self.pattern()
        init = None
        if self.accept("="):
            init = self.exp()
        form = self.loop_form()
        self.expect("do", "'do'")
        body = self.exp()
        return S.Loop(sizes, pat, init, form, body, loc=self.loc(tok))

    def loop_form(self) -> S.LoopForm:
        tok = self.peek()
        if tok.kind == "for":
            self.advance()
            if self.kind() == "id" and self.is_op("<", 1):
                var = self.advance().text
                self.advance()
                return S.ForLoop(var, self.exp(), self.loc(tok))
            pat = self.pattern()
            self.expect("in", "'in'")
            return S.ForInLoop(pat, self.exp(), self.loc(tok))
        if tok.kind == "while":
            self.advance()
            return S.WhileLoop(self.exp(), self.loc(tok))
        self.error("'for' or 'while'")

    # ------------------------------------------------------------- updates

    def update_steps(self) -> list[tuple[str, object]]:
        """The path after `with`: `[i, j:k]`, `f.g`, `.f`, `[i].f`, ..."""
        steps: list[tuple[str, object]] = []
        first = True
        while True:
            k = self.kind()
            if k in ("[", "idx["):
                self.advance()
                steps.append(("idx", self.dim_indices()))
            elif k == "." and not first:
                self.advance()
                steps.append(("field", self.field_name()))
            elif k in ("id", "nat") and first:
                steps.append(("field", self.field_name()))
            elif k == "." and first:
                self.advance()
                steps.append(("field", self.field_name()))
            else:
                break
            first = False
        if not steps:
            self.error("'[' or field name")
        return steps

    def field_name(self) -> str:
        tok = self.field_id()
        return str(tok.value) if tok.kind == "nat" else tok.text

    def build_update(
        self, src: S.Expr, steps: list[tuple[str, object]], value: S.Expr, loc: Loc
    ) -> S.Expr:
        """Turn an update path into nested Update/RecordUpdate nodes.

        Consecutive fixed indices merge (`[i][j]` is `[i, j]`); a path that
        mixes fields and indices updates the inner part of `src` first.
        """
        kind, payload = steps[0]
        n = 1
        if kind == "field":
            fields = [payload]
            while n < len(steps) and steps[n][0] == "field":
                fields.append(steps[n][1])
                n += 1
            rest = steps[n:]
            if rest:
                inner: S.Expr = src
                for f in fields:
                    inner = S.Project(inner, str(f), loc=loc)
                value = self.build_update(inner, rest, value, loc)
            return S.RecordUpdate(src, [str(f) for f in fields], value, loc=loc)
        indices: list[S.DimIndex] = list(payload)  # type: ignore[call-overload]
        while (
            n < len(steps)
            and steps[n][0] == "idx"
            and all(isinstance(ix, S.IdxFix) for ix in indices)
        ):
            indices.extend(steps[n][1])  # type: ignore[arg-type]
            n += 1
        rest = steps[n:]
        if rest:
            value = self.build_update(S.Index(src, indices, loc=loc), rest, value, loc)
        return S.Update(src, indices, value, loc=loc)

    # --------------------------------------------------------------- atoms

    def atom(self) -> S.Expr:
        """An atom followed by field projections and indexing."""
        e = self.primary()
        while True:
            k = self.kind()
            if k == "idx[":
                self.advance()
                e = S.Index(e, self.dim_indices(), loc=e.loc)
            elif k == ".":
                k1 = self.kind(1)
                if k1 == "id":
                    self.advance()
                    field = self.advance().text
                    if isinstance(e, S.Var) and not e.qual and e.name in _MODULES:
                        e = S.Var(field, [e.name], loc=e.loc)
                    else:
                        e = S.Project(e, field, loc=e.loc)
                elif k1 == "nat":
                    self.advance()
                    e = S.Project(e, str(self.advance().value), loc=e.loc)
                elif k1 == "(" and isinstance(e, S.Var):
                    self.unsupported("local open", self.peek(1))
                else:
                    return e
            else:
                return e

    def primary(self) -> S.Expr:
        tok = self.peek()
        k = tok.kind
        loc = self.loc(tok)
        if k == "id":
            self.advance()
            return S.Var(tok.text, loc=loc)
        if k == "nat":
            self.advance()
            return S.Literal(tok.value, "int", None, loc=loc)
        if k == "intlit":
            self.advance()
            return S.Literal(tok.value[0], "int", tok.value[1], loc=loc)
        if k == "floatlit":
            self.advance()
            value, suffix = tok.value
            return S.Literal(value, "float", suffix, loc=loc)
        if k in ("true", "false"):
            self.advance()
            return S.Literal(k == "true", "bool", None, loc=loc)
        if k == "(":
            return self.paren_exp()
        if k in ("[", "idx["):
            return self.array_lit()
        if k == "{":
            return self.record_exp()
        if k == "char":
            self.advance()
            return S.Literal(tok.value, "int", None, loc=loc)
        if k == "string":
            self.advance()
            data = tok.value.encode("utf-8", "surrogatepass")
            return S.ArrayLit(
                [S.Literal(b, "int", "u8", loc=loc) for b in data], loc=loc
            )
        if k == "constructor":
            self.unsupported("sum type", tok)
        if k == "???":
            self.unsupported("typed hole", tok)
        self.error("expression")

    def dim_indices(self) -> list[S.DimIndex]:
        """The indices after `[` up to and including `]`."""
        indices: list[S.DimIndex] = []
        while self.kind() != "]":
            indices.append(self.dim_index())
            if not self.accept(","):
                break
        self.expect("]", "',' or ']'")
        return indices

    def dim_index(self) -> S.DimIndex:
        start = None if self.kind() == ":" else self.exp2()
        if not self.accept(":"):
            assert start is not None
            return S.IdxFix(start)
        end = None
        if self.kind() not in (":", ",", "]"):
            end = self.exp2()
        stride = None
        if self.accept(":"):
            stride = self.exp2()
        return S.IdxSlice(start, end, stride)

    def array_lit(self) -> S.Expr:
        tok = self.advance()
        elems: list[S.Expr] = []
        while self.kind() != "]":
            elems.append(self.exp())
            if not self.accept(","):
                break
        self.expect("]", "',' or ']'")
        return S.ArrayLit(elems, loc=self.loc(tok))

    def record_exp(self) -> S.Expr:
        tok = self.advance()
        fields: list[tuple[str, S.Expr]] = []
        while self.kind() != "}":
            ftok = self.field_id()
            fname = str(ftok.value) if ftok.kind == "nat" else ftok.text
            if self.accept("="):
                fields.append((fname, self.exp()))
            else:
                if ftok.kind != "id":
                    self.error("'='")
                fields.append((fname, S.Var(fname, loc=self.loc(ftok))))
            if not self.accept(","):
                break
        self.expect("}", "',' or '}'")
        return S.RecordExp(fields, loc=self.loc(tok))

    def paren_exp(self) -> S.Expr:
        """`( ... )`: unit, parentheses, tuples and operator sections."""
        start = self.advance()
        loc = self.loc(start)
        tok = self.peek()
        k = tok.kind
        if k == ")":
            self.advance()
            return S.TupleExp([], loc=loc)
        if k == "op":
            return self.right_or_op_section(loc)
        if k == "`":
            return self.backtick_section(loc)
        if k == ".":
            return self.project_section(loc)
        return self.finish_paren(self.exp(), loc)

    @staticmethod
    def op_name(tok: Token) -> str:
        qual, name = tok.value
        return ".".join([*qual, name])

    def right_or_op_section(self, loc: Loc) -> S.Expr:
        """`(op)`, `(op e)`; `(-e)` is a negation, not a section."""
        tok = self.peek()
        if self.kind(1) == ")":
            self.advance()
            self.advance()
            qual, name = tok.value
            if qual:
                return S.Var(name, list(qual), loc=loc)
            return S.OpSection(name, loc=loc)
        if tok.text == "-":
            e = self.exp()
            return self.finish_paren(e, loc)
        self.advance()
        arg = self.exp2()
        self.expect(")", "')'")
        return S.RightSection(self.op_name(tok), arg, loc=loc)

    def finish_paren(self, e: S.Expr, loc: Loc) -> S.Expr:
        """After `( e`: a left section, a tuple or the closing parenthesis."""
        tok = self.peek()
        if tok.kind == "op" and self.kind(1) == ")":
            self.advance()
            self.advance()
            return S.LeftSection(self.op_name(tok), e, loc=loc)
        if tok.kind == "`":
            self.advance()
            fn = self.qual_var()
            self.expect("`", "'`'")
            self.expect(")", "')'")
            return self.section_lambda(loc, lambda y: S.Apply(fn, [e, y], loc=loc))
        if self.accept(")"):
            return e
        elems = [e]
        while self.accept(","):
            if self.kind() == ")":
                break
            elems.append(self.exp())
        self.expect(")", "',' or ')'")
        return S.TupleExp(elems, loc=loc)

    def backtick_section(self, loc: Loc) -> S.Expr:
        """`(`f`)` is `f`; `(`f` e)` is `\\x -> f x e`."""
        self.advance()
        fn = self.qual_var()
        self.expect("`", "'`'")
        if self.accept(")"):
            return fn
        arg = self.exp2()
        self.expect(")", "')'")
        return self.section_lambda(loc, lambda x: S.Apply(fn, [x, arg], loc=loc))

    def section_lambda(self, loc: Loc, make_body: Callable[[S.Expr], S.Expr]) -> S.Expr:
        """`\\%section -> body`, for sections the AST has no node for.  The
        parameter name cannot clash with a Futhark name."""
        param = S.Var(_SECTION_VAR, loc=loc)
        return S.Lambda([S.PId(_SECTION_VAR, loc)], None, make_body(param), loc=loc)

    def project_section(self, loc: Loc) -> S.Expr:
        """`(.x.y)` and `(.0)`; with indices, `(.[i].x)`, as a lambda."""
        steps: list[tuple[str, object]] = []
        while True:
            k = self.kind()
            if k == "." and self.kind(1) in ("[", "idx["):
                self.advance()
                self.advance()
                steps.append(("idx", self.dim_indices()))
            elif k == ".":
                self.advance()
                steps.append(("field", self.field_name()))
            elif k == "idx[" and steps:
                self.advance()
                steps.append(("idx", self.dim_indices()))
            else:
                break
        self.expect(")", "')'")
        if all(kind == "field" for kind, _ in steps):
            return S.ProjectSection([str(f) for _, f in steps], loc=loc)

        def body(x: S.Expr) -> S.Expr:
            for kind, payload in steps:
                if kind == "field":
                    x = S.Project(x, str(payload), loc=loc)
                else:
                    x = S.Index(x, list(payload), loc=loc)  # type: ignore[call-overload]
            return x

        return self.section_lambda(loc, body)


# ------------------------------------------------------------- public API


@contextmanager
def _deep_recursion() -> Iterator[None]:
    """Allow deeply nested programs; Python 3.11's pure-Python calls do not
    use the C stack, so a higher limit is safe."""
    old = sys.getrecursionlimit()
    if old < _RECURSION_LIMIT:
        sys.setrecursionlimit(_RECURSION_LIMIT)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def _run(parser: Parser, parse: Callable[[], T]) -> T:
    """Run one parse, turning a too-deep nesting into a CompileError."""
    with _deep_recursion():
        try:
            return parse()
        except RecursionError:
            tok = parser.peek()
            raise CompileError("program nested too deeply", parser.loc(tok)) from None


def parse_program(text: str, file: str) -> S.Program:
    """Parse a whole source file."""
    register_source(file, text)
    parser = Parser(text, file)
    return _run(parser, parser.program)


def parse_expr(text: str, file: str = "<expr>") -> S.Expr:
    """Parse a single expression (the whole text)."""
    register_source(file, text)
    parser = Parser(text, file)
    e = _run(parser, parser.exp)
    parser.expect("eof", "end of expression")
    return e


def parse_type(text: str, file: str = "<type>") -> S.TypeExp:
    """Parse a single type expression (the whole text)."""
    register_source(file, text)
    parser = Parser(text, file)
    t = _run(parser, parser.type_exp)
    parser.expect("eof", "end of type")
    return t


def parse_header(name: str, header: str) -> S.ValDecl:
    """Parse a built-in signature from `prelude.SIGNATURES`, e.g.
    `'a [n] 'x (f: a -> x) (as: [n]a) : *[n]x`, into a body-less ValDecl."""
    parser = Parser(header, "<builtin>")
    return _run(parser, lambda: parser.header(name))
