"""A reader for the printed core IR: `read_program(text)` inverts
`futgen.core.pretty`, so a pass can be tested text in, text out:

    prog = read_program(text_before)
    assert pretty(fuse(prog)) == text_after

It reads exactly the grammar in `futgen.core.ir`'s docstring, as the
printer writes it; `pretty(read_program(pretty(p))) == pretty(p)` for every
program.  Two things the printer leaves out come back as follows:

* a source location (of `Index`, `Update`, `Reshape` and `Assert`, which
  run-time errors report) is the expression's place in the text read;
* a call's result types (`Apply.ret`) are the types its pattern binds,
  which is how internalisation makes them.

A malformed text raises `IRSyntaxError` at its line and column, saying what
was expected.  The lexer is a regular expression tried at the current
position; the parser is recursive descent, one method per rule.  A reader
of an extended IR (`futgen.gpu.read`) subclasses `Reader` and overrides
`exp`, falling back to `super().exp`, as the printers do.
"""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TypeVar

from futgen.core import ir
from futgen.errors import CompileError, Loc, register_source
from futgen.interp.prims import BINOPS

T = TypeVar("T")

PRIMS = ("bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "f32", "f64")
_PRIM = "|".join(PRIMS)

_TOKEN = re.compile(rf"""\s*(?:
    (?P<string> '(?:[^'\\\n]|\\.)*' | "(?:[^"\\\n]|\\.)*" )
  | (?P<const> -?(?:\d+(?:\.\d+)?(?:e[+-]?\d+)?|inf|nan)(?:{_PRIM})(?![\w']) )
  | (?P<int> \d+(?![\w']) )
  | (?P<op> (?:[-+*/%&|^<>=!]+|[A-Za-z_]\w*)\.(?:{_PRIM})(?![\w']) )
  | (?P<word> [A-Za-z_][\w']* )
  | (?P<punct> ->|:\+|<=|[()\[\]{{}}<,:=\\/*?] )
  | (?P<end> $ ))""", re.VERBOSE)
_SPACE = re.compile(r"\s*")
_VNAME = re.compile(r"([A-Za-z_][\w']*)_(\d+)")


class IRSyntaxError(CompileError):
    """Text that is not printed IR; the location says where, the message
    what was expected there."""


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # a group of _TOKEN, or "end"
    text: str
    pos: int


def read_program(text: str, file: str = "<ir>") -> ir.Program:
    """The core IR program that `futgen.core.pretty` printed as `text`."""
    return Reader(text, file).program()


class Reader:
    """Reads one text; `exp` is the method an extended IR's reader extends."""

    def __init__(self, text: str, file: str = "<ir>"):
        self.text = text
        self.file = file
        self.pos = 0
        self._peeked_from, self._peeked = -1, Token("end", "", -1)  # the token after _peeked_from
        self._lines = [0] + [m.end() for m in re.finditer("\n", text)]
        register_source(file, text)

    # ------------------------------------------------------------- tokens

    def peek(self) -> Token:
        if self._peeked_from != self.pos:
            self._peeked_from, self._peeked = self.pos, self._token(self.pos)
        return self._peeked

    def _token(self, pos: int) -> Token:
        m = _TOKEN.match(self.text, pos)
        if m is None:
            pos = _SPACE.match(self.text, pos).end()
            raise self.error("a token", Token("char", self.text[pos], pos))
        kind = m.lastgroup
        return Token(kind, m.group(kind), m.start(kind))

    def next(self) -> Token:
        tok = self.peek()
        self.pos = tok.pos + len(tok.text)
        return tok

    def at(self, text: str) -> bool:
        """Whether the next token is `text` (a keyword or punctuation)."""
        tok = self.peek()
        return tok.text == text and tok.kind in ("word", "punct")

    def accept(self, text: str) -> bool:
        """Skips the next token if it is `text`."""
        if self.at(text):
            self.next()
            return True
        return False

    def expect(self, text: str) -> None:
        if not self.accept(text):
            raise self.error(repr(text), self.peek())

    def raw(self, stop: str, what: str) -> str:
        """The text up to the next character in `stop`: a name that need not
        be an identifier (functions are named by their source name, `<+>` or
        `f'`; thresholds by `fn.suff_outer_par_0`)."""
        start = _SPACE.match(self.text, self.pos).end()
        end = start
        while end < len(self.text) and self.text[end] not in stop and not self.text[end].isspace():
            end += 1
        if end == start:
            raise self.error(what, self.peek())
        self.pos = end
        return self.text[start:end]

    def next_char(self) -> str:
        """The next character that is not white space ('' at the end), for
        reading `raw` names without lexing them."""
        pos = _SPACE.match(self.text, self.pos).end()
        return self.text[pos:pos + 1]

    def loc(self, pos: int | None = None) -> Loc:
        """The place `pos` (default: the next token) in the text."""
        pos = self.peek().pos if pos is None else pos
        line = bisect.bisect_right(self._lines, pos)
        return Loc(self.file, line, pos - self._lines[line - 1] + 1)

    def error(self, expected: str, found: Token) -> IRSyntaxError:
        shown = "the end of the text" if found.kind == "end" else repr(found.text)
        return IRSyntaxError(f"expected {expected}, found {shown}", self.loc(found.pos))

    def sequence(self, item: Callable[[], T], open_: str = "(", close: str = ")") -> tuple[T, ...]:
        """`(item, ...)`, possibly empty."""
        self.expect(open_)
        out: list[T] = []
        if not self.accept(close):
            out.append(item())
            while self.accept(","):
                out.append(item())
            self.expect(close)
        return tuple(out)

    # ------------------------------------------------------- small parts

    def vname(self) -> ir.VName:
        tok = self.peek()
        m = _VNAME.fullmatch(tok.text) if tok.kind == "word" else None
        if m is None:
            raise self.error("a variable (name_tag)", tok)
        self.next()
        return ir.VName(m.group(1), int(m.group(2)))

    def integer(self) -> int:
        tok = self.peek()
        if tok.kind != "int":
            raise self.error("an integer", tok)
        return int(self.next().text)

    def prim(self) -> str:
        tok = self.peek()
        if tok.text not in PRIMS:
            raise self.error("a primitive type", tok)
        return self.next().text

    def subexp(self) -> ir.SubExp:
        tok = self.peek()
        if tok.kind == "const":
            self.next()
            return _constant(tok.text)
        if tok.kind == "word" and tok.text in ("true", "false"):
            self.next()
            return ir.Constant(tok.text == "true", "bool")
        if tok.kind == "word" and _VNAME.fullmatch(tok.text):
            return ir.Var(self.vname())
        raise self.error("a variable or a constant", tok)

    def subexps(self) -> tuple[ir.SubExp, ...]:
        return self.sequence(self.subexp)

    def type(self) -> ir.Type:
        dims: list[ir.SubExp | None] = []
        while self.accept("["):
            dims.append(None if self.accept("?") else self.subexp())
            self.expect("]")
        prim = self.prim()
        return ir.ArrayT(prim, tuple(dims)) if dims else ir.Prim(prim)

    def types(self) -> tuple[ir.Type, ...]:
        return self.sequence(self.type)

    def param(self) -> ir.Param:
        name = self.vname()
        self.expect(":")
        return ir.Param(name, self.type())

    def params(self) -> tuple[ir.Param, ...]:
        return self.sequence(self.param)

    def names(self) -> tuple[ir.VName, ...]:
        return self.sequence(self.vname)

    def dim_index(self) -> ir.DimIndex:
        i = self.subexp()
        if not self.accept(":+"):
            return ir.DimFix(i)
        num = self.subexp()
        self.expect("*")
        return ir.DimSlice(i, num, self.subexp())

    def slice(self) -> tuple[ir.DimIndex, ...]:
        return self.sequence(self.dim_index, "[", "]")

    # ---------------------------------------------------------- structure

    def program(self) -> ir.Program:
        functions = []
        while self.peek().kind != "end":
            functions.append(self.function())
        return ir.Program(tuple(functions))

    def function(self) -> ir.Function:
        entry = self.accept("entry")
        self.expect("fun")
        name = self.raw("(", "a function name")
        params = self.params()
        self.expect(":")
        ret = self.types()
        self.expect("=")
        return ir.Function(name, params, ret, self.body(), entry)

    def body(self) -> ir.Body:
        self.expect("{")
        stms = []
        while self.at("let"):
            stms.append(self.stm())
        self.expect("in")
        result = self.subexps()
        self.expect("}")
        return ir.Body(tuple(stms), result)

    def stm(self) -> ir.Stm:
        self.expect("let")
        pat = self.params()
        self.expect("=")
        e = self.exp()
        if isinstance(e, ir.Apply):
            e = replace(e, ret=tuple(p.type for p in pat))
        return ir.Stm(pat, e)

    def lam(self) -> ir.Lambda:
        self.expect("\\")
        params = self.params()
        self.expect(":")
        ret = self.types()
        self.expect("->")
        return ir.Lambda(params, self.body(), ret)

    def operator(self) -> tuple[tuple[ir.SubExp, ...], ir.Lambda]:
        """`(nes) lam`, after the word that says which operator."""
        return self.subexps(), self.lam()

    # -------------------------------------------------------- expressions

    def exp(self) -> ir.Exp:
        """One expression; a keyword says which, else its first operand."""
        tok = self.peek()
        rule = _KEYWORDS.get(tok.text) if tok.kind == "word" else None
        if rule is not None:
            self.next()
            return rule(self, self.loc(tok.pos))
        if tok.kind == "op":
            return self.scalar_op()
        if tok.text in PRIMS:
            src = self.prim()
            self.expect("->")
            dst = self.prim()
            return ir.ConvOp(src, dst, self.subexp())
        se = self.subexp()
        if isinstance(se, ir.Var) and self.at("["):
            return ir.Index(se.name, self.slice(), self.loc(tok.pos))
        if isinstance(se, ir.Var) and self.accept("with"):
            sl = self.slice()
            self.expect("=")
            return ir.Update(se.name, sl, self.subexp(), self.loc(tok.pos))
        return ir.SubExpOp(se)

    def scalar_op(self) -> ir.Exp:
        """`op.prim x`, or `op.prim x y` for the operators of `BINOPS`."""
        op, prim = self.next().text.rsplit(".", 1)
        x = self.subexp()
        if op not in BINOPS:
            return ir.UnOp(op, prim, x)
        return (ir.CmpOp if BINOPS[op].comparison else ir.BinOp)(op, prim, x, self.subexp())

    def if_(self, loc: Loc) -> ir.If:
        cond = self.subexp()
        self.expect(":")
        ret = self.types()
        self.expect("then")
        then_ = self.body()
        self.expect("else")
        return ir.If(cond, then_, self.body(), ret)

    def loop(self, loc: Loc) -> ir.Loop:
        merge = self.sequence(self.merge_param)
        form: ir.LoopForm
        if self.accept("for"):
            i = self.vname()
            self.expect(":")
            prim = self.prim()
            self.expect("<")
            form = ir.ForLoop(i, prim, self.subexp())
        else:
            self.expect("while")
            form = ir.WhileLoop(self.vname())
        self.expect("do")
        return ir.Loop(merge, form, self.body())

    def merge_param(self) -> tuple[ir.Param, ir.SubExp]:
        p = self.param()
        self.expect("=")
        return p, self.subexp()

    def screma(self, loc: Loc) -> ir.Screma:
        w, arrs = self.subexp(), self.names()
        scans, reds = [], []
        while self.accept("scan"):
            nes, lam = self.operator()
            scans.append(ir.Scan(lam, nes))
        while self.at("reduce") or self.at("reduce_comm"):
            comm = self.next().text == "reduce_comm"
            nes, lam = self.operator()
            reds.append(ir.Reduce(lam, nes, comm))
        self.expect("map")
        return ir.Screma(w, arrs, tuple(scans), tuple(reds), self.lam())

    def scatter_dest(self) -> ir.ScatterDest:
        arr = self.vname()
        self.expect("/")
        return ir.ScatterDest(arr, self.integer())

    def scatter(self, loc: Loc) -> ir.Scatter:
        w, arrs = self.subexp(), self.names()
        self.expect("into")
        dests = self.sequence(self.scatter_dest)
        return ir.Scatter(w, arrs, self.lam(), dests)

    def hist(self, loc: Loc) -> ir.Hist:
        w, arrs = self.subexp(), self.names()
        ops = []
        while self.accept("into"):
            dests = self.names()
            nes, lam = self.operator()
            ops.append(ir.HistOp(dests, nes, lam))
        self.expect("map")
        return ir.Hist(w, arrs, tuple(ops), self.lam())

    def assert_(self, loc: Loc) -> ir.Assert:
        cond = self.subexp()
        tok = self.peek()
        if tok.kind != "string":
            raise self.error("the message (a quoted string)", tok)
        msg = ast.literal_eval(self.next().text)
        args = self.subexps() if self.at("(") else ()
        return ir.Assert(cond, msg, loc, args)

    def apply(self, loc: Loc) -> ir.Apply:
        fn = self.raw("(", "a function name")
        return ir.Apply(fn, self.subexps(), ())  # `stm` gives the result types

    def array(self, loc: Loc) -> ir.ArrayLit:
        elem = self.type()
        return ir.ArrayLit(self.sequence(self.subexp, "[", "]"), elem)

    def reshape(self, loc: Loc) -> ir.Reshape:
        shape = self.subexps()
        return ir.Reshape(self.vname(), shape, loc)

    def rearrange(self, loc: Loc) -> ir.Rearrange:
        perm = self.sequence(self.integer)
        return ir.Rearrange(self.vname(), perm)


def _constant(text: str) -> ir.Constant:
    """`1i64`, `-0.5f32`, `inff64`: the value as Python reads it, so that
    printing it again gives the same text."""
    m = re.fullmatch(rf"(.*?)({_PRIM})", text)
    assert m is not None, text
    digits, prim = m.groups()
    if any(c in digits for c in ".en"):  # a float's repr: 1.0, 1e-05, inf, nan
        return ir.Constant(float(digits), prim)
    return ir.Constant(int(digits), prim)


# The expressions that start with a keyword, and the rule reading the rest
# (given the keyword's location).
_KEYWORDS: dict[str, Callable[[Reader, Loc], ir.Exp]] = {
    "if": Reader.if_,
    "loop": Reader.loop,
    "screma": Reader.screma,
    "scatter": Reader.scatter,
    "hist": Reader.hist,
    "assert": Reader.assert_,
    "apply": Reader.apply,
    "array": Reader.array,
    "iota": lambda r, loc: ir.Iota(r.subexp(), r.subexp(), r.subexp()),
    "replicate": lambda r, loc: ir.Replicate(r.subexps(), r.subexp()),
    "reshape": Reader.reshape,
    "rearrange": Reader.rearrange,
    "concat": lambda r, loc: ir.Concat(r.names()),
    "copy": lambda r, loc: ir.Copy(r.vname()),
    "size": lambda r, loc: ir.ArraySize(r.vname(), r.integer()),
}


__all__ = ["IRSyntaxError", "Reader", "read_program"]
