"""Tests of the parser: AST shapes, precedence, sections, loops, updates,
locations, syntax errors and the features futgen leaves out."""

from __future__ import annotations

import time

import pytest

from futgen.errors import CompileError, Loc, UnsupportedFeature
from futgen.frontend import prelude
from futgen.frontend import syntax as S
from futgen.frontend.parser import parse_expr, parse_header, parse_program, parse_type


def sx(node: object) -> str:
    """A compact S-expression rendering of an AST, for shape assertions."""
    match node:
        case S.Literal(value=v, suffix=sfx):
            text = str(v).lower() if isinstance(v, bool) else str(v)
            return text + (sfx or "")
        case S.Var(name=n, qual=q):
            return ".".join([*q, n])
        case S.BinOp(op=op, lhs=a, rhs=b):
            return f"({op} {sx(a)} {sx(b)})"
        case S.UnOp(op=op, expr=a):
            return f"({op}u {sx(a)})"
        case S.Apply(fn=f, args=args):
            return f"(app {sx(f)} {' '.join(sx(a) for a in args)})"
        case S.Project(expr=e, field=f):
            return f"(proj {sx(e)} {f})"
        case S.Index(expr=e, indices=ix):
            return f"(index {sx(e)} {' '.join(sx(i) for i in ix)})"
        case S.IdxFix(index=i):
            return sx(i)
        case S.IdxSlice(start=a, end=b, stride=c):
            return ":".join("" if x is None else sx(x) for x in (a, b, c))
        case S.TupleExp(elems=es):
            return f"(tuple {' '.join(sx(e) for e in es)})"
        case S.ArrayLit(elems=es):
            return f"[{' '.join(sx(e) for e in es)}]"
        case S.RecordExp(fields=fs):
            return "{" + " ".join(f"{k}={sx(v)}" for k, v in fs) + "}"
        case S.Range(start=a, second=b, end=c, kind=k):
            mid = "" if b is None else f" {sx(b)}"
            return f"(range{k} {sx(a)}{mid} {sx(c)})"
        case S.OpSection(op=op):
            return f"(op {op})"
        case S.LeftSection(op=op, arg=a):
            return f"(lsec {sx(a)} {op})"
        case S.RightSection(op=op, arg=a):
            return f"(rsec {op} {sx(a)})"
        case S.ProjectSection(fields=fs):
            return f"(psec {' '.join(fs)})"
        case S.Lambda(params=ps, ret=r, body=b):
            ret = "" if r is None else f" : {sx(r)}"
            return f"(fn {' '.join(sx(p) for p in ps)}{ret} -> {sx(b)})"
        case S.If(cond=c, then=t, els=e):
            return f"(if {sx(c)} {sx(t)} {sx(e)})"
        case S.LetPat(sizes=sz, pat=p, value=v, body=b):
            sizes = "".join(f"[{s}] " for s in sz)
            return f"(let {sizes}{sx(p)} {sx(v)} {sx(b)})"
        case S.LetFun(name=n, params=ps, value=v, body=b):
            return f"(letfun {n} {' '.join(sx(p) for p in ps)} = {sx(v)} {sx(b)})"
        case S.Update(src=s, indices=ix, value=v):
            return f"(update {sx(s)} [{' '.join(sx(i) for i in ix)}] {sx(v)})"
        case S.RecordUpdate(src=s, fields=fs, value=v):
            return f"(rupdate {sx(s)} {'.'.join(fs)} {sx(v)})"
        case S.Loop(sizes=sz, pat=p, init=i, form=f, body=b):
            sizes = "".join(f"[{s}] " for s in sz)
            init = "_" if i is None else sx(i)
            return f"(loop {sizes}{sx(p)} {init} {sx(f)} {sx(b)})"
        case S.ForLoop(var=v, bound=b):
            return f"(for {v} < {sx(b)})"
        case S.ForInLoop(pat=p, array=a):
            return f"(for {sx(p)} in {sx(a)})"
        case S.WhileLoop(cond=c):
            return f"(while {sx(c)})"
        case S.Ascribe(expr=e, type=t):
            return f"(: {sx(e)} {sx(t)})"
        case S.Coerce(expr=e, type=t):
            return f"(:> {sx(e)} {sx(t)})"
        case S.PId(name=n):
            return n
        case S.PWild():
            return "_"
        case S.PTuple(elems=es):
            return f"(ptuple {' '.join(sx(e) for e in es)})"
        case S.PRecord(fields=fs):
            return "{" + " ".join(f"{k}={sx(v)}" for k, v in fs) + "}"
        case S.PAscribe(pat=p, type=t):
            return f"(: {sx(p)} {sx(t)})"
        case S.TEName(name=n, args=args):
            return n if not args else f"({n} {' '.join(sx(a) for a in args)})"
        case S.TEArray(dim=d, elem=t):
            return f"[{sx(d)}]{sx(t)}"
        case S.TETuple(elems=es):
            return f"(ttuple {' '.join(sx(e) for e in es)})"
        case S.TERecord(fields=fs):
            return "{" + " ".join(f"{k}:{sx(v)}" for k, v in fs) + "}"
        case S.TEArrow(param_name=pn, param=p, ret=r):
            name = "" if pn is None else f"{pn}: "
            return f"({name}{sx(p)} -> {sx(r)})"
        case S.TEUnique(inner=t):
            return f"*{sx(t)}"
        case S.DimName(name=n):
            return n
        case S.DimConst(value=v):
            return str(v)
        case S.DimAny():
            return ""
        case S.DimExpr(expr=e):
            return sx(e)
    raise AssertionError(f"no rendering for {node!r}")


def e(text: str) -> str:
    return sx(parse_expr(text))


def t(text: str) -> str:
    return sx(parse_type(text))


def error_at(text: str, parse=parse_expr) -> tuple[str, str]:  # type: ignore[no-untyped-def]
    with pytest.raises(CompileError) as info:
        parse(text, "t.fut")
    return info.value.message, str(info.value.loc)


# ------------------------------------------------------------- precedence


@pytest.mark.parametrize(
    ("text", "shape"),
    [
        ("1 + 2 * 3", "(+ 1 (* 2 3))"),
        ("1 - 2 - 3", "(- (- 1 2) 3)"),
        ("a * b / c % d", "(% (/ (* a b) c) d)"),
        ("2 ** 3 ** 2", "(** (** 2 3) 2)"),  # left-associative, as in Futhark
        ("a + b ** c * d", "(+ a (* (** b c) d))"),
        ("a << 1 + b", "(<< a (+ 1 b))"),
        ("x & y == z", "(== (& x y) z)"),
        ("a == b && c < d || e", "(|| (&& (== a b) (< c d)) e)"),
        ("a & b ^ c | d", "(| (^ (& a b) c) d)"),
        ("a >> b >>> c", "(>>> (>> a b) c)"),
        ("xs |> f |> g", "(|> (|> xs f) g)"),
        ("f <| g <| x", "(<| f (<| g x))"),
        ("x |> f <| y", "(|> x (<| f y))"),
        ("a || b |> f", "(|> (|| a b) f)"),
        ("a // b %% c", "(%% (// a b) c)"),
        ("xs ++ ys ++ zs", "(++ (++ xs ys) zs)"),
        ("a ++ b * c", "(++ a (* b c))"),
        ("f >-> g <-< h", "(<-< (>-> f g) h)"),
        ("a +^ b * c", "(+^ a (* b c))"),
        ("a *^ b + c", "(+ (*^ a b) c)"),
        ("a != b", "(!= a b)"),
    ],
)
def test_binary_precedence(text: str, shape: str) -> None:
    assert e(text) == shape


@pytest.mark.parametrize(
    ("text", "shape"),
    [
        ("f x y + g z", "(+ (app f x y) (app g z))"),
        ("f x.y", "(app f (proj x y))"),
        ("f r.a.b", "(app f (proj (proj r a) b))"),
        ("-x * y", "(* (-u x) y)"),
        ("-f x", "(-u (app f x))"),
        ("-2 ** 2", "(** (-u 2) 2)"),
        ("!a && b", "(&& (!u a) b)"),
        ("a * -b", "(* a (-u b))"),
        ("f -1", "(- f 1)"),
        ("a `max` b + 1", "(app max a (+ b 1))"),
        ("a `f32.max` b", "(app f32.max a b)"),
        ("a f32.+ b", "(app f32.+ a b)"),
        ("f32.sqrt x", "(app f32.sqrt x)"),
        ("f32.inf", "f32.inf"),
        ("x.0.1", "(proj (proj x 0) 1)"),
        ("(a, b).1", "(proj (tuple a b) 1)"),
        ("a[i].x", "(proj (index a i) x)"),
        ("a.b[i]", "(index (proj a b) i)"),
        ("f a[i]", "(app f (index a i))"),
        ("f [1, 2]", "(app f [1 2])"),
        ("f x[1] [2]", "(app f (index x 1) [2])"),
        ("a[i][j]", "(index (index a i) j)"),
        ("(f x)[0]", "(index (app f x) 0)"),
        ("assert (x > 0) y + 1", "(app assert (> x 0) (+ y 1))"),
        ("#[unsafe] a[i] + 1", "(+ (index a i) 1)"),
        ("map (\\x -> x + 1) xs", "(app map (fn x -> (+ x 1)) xs)"),
        ("f \\x -> x", "(app f (fn x -> x))"),
    ],
)
def test_application_projection_unary(text: str, shape: str) -> None:
    assert e(text) == shape


@pytest.mark.parametrize(
    ("text", "shape"),
    [
        ("0..<n", "(range..< 0 n)"),
        ("0..<n + 1", "(range..< 0 (+ n 1))"),
        ("n..>0", "(range..> n 0)"),
        ("1...n", "(range... 1 n)"),
        ("1..3...9", "(range... 1 3 9)"),
        ("0..2..<n", "(range..< 0 2 n)"),
        ("x : i32", "(: x i32)"),
        ("xs :> [n]i32", "(:> xs [n]i32)"),
        ("f x : []f32", "(: (app f x) []f32)"),
    ],
)
def test_ranges_and_ascription(text: str, shape: str) -> None:
    assert e(text) == shape


def test_literals() -> None:
    lit = parse_expr("2.5f32")
    assert isinstance(lit, S.Literal)
    assert (lit.value, lit.kind, lit.suffix) == (2.5, "float", "f32")
    lit = parse_expr("3f32")
    assert isinstance(lit, S.Literal) and lit.kind == "float"
    lit = parse_expr("1_000i64")
    assert isinstance(lit, S.Literal)
    assert (lit.value, lit.kind, lit.suffix) == (1000, "int", "i64")
    lit = parse_expr("true")
    assert isinstance(lit, S.Literal) and (lit.value, lit.kind) == (True, "bool")
    neg = parse_expr("-1")
    assert isinstance(neg, S.UnOp) and isinstance(neg.expr, S.Literal)
    assert e('"ab"') == "[97u8 98u8]"


# ---------------------------------------------------------------- sections


@pytest.mark.parametrize(
    ("text", "shape"),
    [
        ("(+)", "(op +)"),
        ("(-)", "(op -)"),
        ("(+1)", "(rsec + 1)"),
        ("(2*)", "(lsec 2 *)"),
        ("(x - )", "(lsec x -)"),
        ("(-1)", "(-u 1)"),
        ("(- x)", "(-u x)"),
        ("(a + b *)", "(lsec (+ a b) *)"),
        ("(* a + b)", "(rsec * (+ a b))"),
        ("(<=)", "(op <=)"),
        ("(|>)", "(op |>)"),
        ("(+^)", "(op +^)"),
        ("(.x)", "(psec x)"),
        ("(.x.y)", "(psec x y)"),
        ("(.0)", "(psec 0)"),
        ("(.0.1)", "(psec 0 1)"),
        ("(f32.+)", "f32.+"),
        ("(`max`)", "max"),
        ("(`max` 0)", "(fn %section -> (app max %section 0))"),
        ("(0 `max`)", "(fn %section -> (app max 0 %section))"),
        ("()", "(tuple )"),
        ("(a, b, c)", "(tuple a b c)"),
        ("(a, b,)", "(tuple a b)"),
        ("((a))", "a"),
    ],
)
def test_sections_and_parentheses(text: str, shape: str) -> None:
    assert e(text) == shape


# ------------------------------------------------------- let, if, lambda


@pytest.mark.parametrize(
    ("text", "shape"),
    [
        ("let x = 1 in x + 1", "(let x 1 (+ x 1))"),
        ("let a = 1 let b = 2 in a + b", "(let a 1 (let b 2 (+ a b)))"),
        ("let a = 1 in let b = 2 in b", "(let a 1 (let b 2 b))"),
        ("let (a, b) = p in a", "(let (ptuple a b) p a)"),
        ("let {x, y = z} = r in x", "(let {x=x y=z} r x)"),
        ("let _ = f x in 0", "(let _ (app f x) 0)"),
        ("let x: i32 = 5 in x", "(let (: x i32) 5 x)"),
        ("let [n] xs: [n]i32 = ys in n", "(let [n] (: xs [n]i32) ys n)"),
        ("let f x y = x + y in f 1 2", "(letfun f x y = (+ x y) (app f 1 2))"),
        ("let xs[i] = v in xs", "(let xs (update xs [i] v) xs)"),
        ("let xs[i, j] = v in xs", "(let xs (update xs [i j] v) xs)"),
        ("let r.a.b = v in r", "(let r (rupdate r a.b v) r)"),
        ("x + let y = 1 in y * 2", "(+ x (let y 1 (* y 2)))"),
        ("if c then a else b + 1", "(if c a (+ b 1))"),
        ("if a then b else if c then d else e", "(if a b (if c d e))"),
        ("1 + if c then 2 else 3", "(+ 1 (if c 2 3))"),
        ("\\x y -> x + y", "(fn x y -> (+ x y))"),
        ("\\(x: i32) : i32 -> x", "(fn (: x i32) : i32 -> x)"),
        ("\\(a, b) -> a", "(fn (ptuple a b) -> a)"),
        ("\\_ -> 0", "(fn _ -> 0)"),
        ("\\{x, y} -> x", "(fn {x=x y=y} -> x)"),
    ],
)
def test_binding_forms(text: str, shape: str) -> None:
    assert e(text) == shape


def test_local_function_with_type_params() -> None:
    fun = parse_expr("let f 't [n] (xs: [n]t) : t = xs[0] in f")
    assert isinstance(fun, S.LetFun)
    assert [type(p).__name__ for p in fun.tparams] == ["TypeParam", "SizeParam"]
    assert fun.ret is not None and sx(fun.ret) == "t"


# ------------------------------------------------------------------ loops


@pytest.mark.parametrize(
    ("text", "shape"),
    [
        ("loop acc = 0 for i < n do acc + i", "(loop acc 0 (for i < n) (+ acc i))"),
        ("loop acc = 0 for x in xs do acc + x", "(loop acc 0 (for x in xs) (+ acc x))"),
        (
            "loop (a, b) = (0, 1) while a < n do (b, a + b)",
            "(loop (ptuple a b) (tuple 0 1) (while (< a n)) (tuple b (+ a b)))",
        ),
        (
            "loop [n] (xs: [n]i32) = ys for i < 3 do xs",
            "(loop [n] (: xs [n]i32) ys (for i < 3) xs)",
        ),
        ("loop x for i < n do x * 2", "(loop x _ (for i < n) (* x 2))"),
        (
            "loop x = 1 for i < n + 1 do x * 2 + 1",
            "(loop x 1 (for i < (+ n 1)) (+ (* x 2) 1))",
        ),
        (
            "loop (a, b) for (x, y) in zip xs ys do (a + x, b + y)",
            (
                "(loop (ptuple a b) _ (for (ptuple x y) in (app zip xs ys)) "
                "(tuple (+ a x) (+ b y)))"
            ),
        ),
        (
            "1 + loop x = 0 while x < 10 do x + 1",
            "(+ 1 (loop x 0 (while (< x 10)) (+ x 1)))",
        ),
    ],
)
def test_loops(text: str, shape: str) -> None:
    assert e(text) == shape


# ------------------------------------------------------ slices and updates


@pytest.mark.parametrize(
    ("text", "shape"),
    [
        ("a[i]", "(index a i)"),
        ("a[i:j]", "(index a i:j:)"),
        ("a[i:j:s]", "(index a i:j:s)"),
        ("a[:, 0]", "(index a :: 0)"),
        ("a[::-1]", "(index a ::(-u 1))"),
        ("a[1:]", "(index a 1::)"),
        ("a[:n-1]", "(index a :(- n 1):)"),
        ("a[i + 1, j]", "(index a (+ i 1) j)"),
        ("xs with [i] = v", "(update xs [i] v)"),
        ("xs with [i:j] = vs", "(update xs [i:j:] vs)"),
        ("xs with [i, j] = v", "(update xs [i j] v)"),
        ("xs with [i] = v + 1", "(update xs [i] (+ v 1))"),
        ("xs with [i] = a with [j] = b", "(update (update xs [i] a) [j] b)"),
        ("r with a.b = v", "(rupdate r a.b v)"),
        ("r with x = 1", "(rupdate r x 1)"),
        ("r with [i].f = v", "(update r [i] (rupdate (index r i) f v))"),
        ("xs with [i] = v |> f", "(update xs [i] (|> v f))"),
    ],
)
def test_slices_and_updates(text: str, shape: str) -> None:
    assert e(text) == shape


# ---------------------------------------------------------------- literals


@pytest.mark.parametrize(
    ("text", "shape"),
    [
        ("[]", "[]"),
        ("[1, 2, 3]", "[1 2 3]"),
        ("[[1], [2]]", "[[1] [2]]"),
        ("{x = 1, y}", "{x=1 y=y}"),
        ("{}", "{}"),
        ("{0 = a}", "{0=a}"),
        ("[1,2][0]", "(index [1 2] 0)"),
    ],
)
def test_compound_literals(text: str, shape: str) -> None:
    assert e(text) == shape


# ------------------------------------------------------------------- types


@pytest.mark.parametrize(
    ("text", "shape"),
    [
        ("i32", "i32"),
        ("[n]f32", "[n]f32"),
        ("[]i32", "[]i32"),
        ("[3][n]bool", "[3][n]bool"),
        ("[n * m]t", "[(* n m)]t"),
        ("[n-1]t", "[(- n 1)]t"),
        ("*[]t", "*[]t"),
        ("(i32, f32)", "(ttuple i32 f32)"),
        ("()", "(ttuple )"),
        ("{x: i32, y: [n]f64}", "{x:i32 y:[n]f64}"),
        ("a -> b -> c", "(a -> (b -> c))"),
        ("(a -> b) -> c", "((a -> b) -> c)"),
        ("(x: i64) -> [x]i32", "(x: i64 -> [x]i32)"),
        ("vec [n] f32", "(vec n f32)"),
        ("pair i32", "(pair i32)"),
        ("[n](pair [m] i32)", "[n](pair m i32)"),
        ("[n]vec [m] f32", "[n](vec m f32)"),
    ],
)
def test_types(text: str, shape: str) -> None:
    assert t(text) == shape


# ------------------------------------------------------------ declarations


PROGRAM = """\
-- ==
-- input { 1 } output { 2 }
import "lib/util"

type vec [n] = [n]f32
type pair 'a = (a, a)
type^ fn 'a = a -> a
type~ arr = []i32

-- | Documented.
#[inline]
def add (x: i32) (y: i32) : i32 = x + y
local def hidden = 3
def (+^) (a: i32) (b: i32) = a + b
def a **^ b = a * b
def id 't (x: t) : t = x
def sum [n] 'a (xs: [n]a) = xs
entry main (x: i32) : i32 = add x 1
def f ({x, y}: {x: i32, y: i32}) (a, b) _ = x
let old x = x
"""


def test_program_declarations() -> None:
    prog = parse_program(PROGRAM, "p.fut")
    decls = prog.decls
    assert isinstance(decls[0], S.ImportDecl) and decls[0].path == "lib/util"
    vec, pair, fn, arr = decls[1:5]
    assert isinstance(vec, S.TypeDecl) and vec.name == "vec"
    assert vec.params == [S.SizeParam("n", Loc("p.fut", 5, 10))]
    assert isinstance(pair, S.TypeDecl) and sx(pair.body) == "(ttuple a a)"
    assert isinstance(fn, S.TypeDecl) and fn.lifted == "^"
    assert isinstance(arr, S.TypeDecl) and arr.lifted == "~"
    vals = [d for d in decls if isinstance(d, S.ValDecl)]
    names = [d.name for d in vals]
    assert names == ["add", "hidden", "+^", "**^", "id", "sum", "main", "f", "old"]
    add, hidden, plus, pow_, ident, sum_, main, f, old = vals
    assert add.attrs == ["inline"] and not add.entry
    assert sx(add.ret) == "i32" and [sx(p) for p in add.params] == [
        "(: x i32)",
        "(: y i32)",
    ]
    assert hidden.local and hidden.params == []
    assert len(plus.params) == 2
    assert [sx(p) for p in pow_.params] == ["a", "b"]
    assert ident.tparams == [S.TypeParam("t", "", Loc("p.fut", 16, 8))]
    assert [type(p).__name__ for p in sum_.tparams] == ["SizeParam", "TypeParam"]
    assert main.entry
    assert [sx(p) for p in f.params] == [
        "(: {x=x y=y} {x:i32 y:i32})",
        "(ptuple a b)",
        "_",
    ]
    assert sx(old.body) == "x"


def test_operator_use_follows_definition_rule() -> None:
    prog = parse_program("def (+^) a b = a + b\ndef g = 1 +^ 2 * 3", "p.fut")
    g = prog.decls[1]
    assert isinstance(g, S.ValDecl) and sx(g.body) == "(+^ 1 (* 2 3))"


def test_every_prelude_signature_parses() -> None:
    for name, header in prelude.SIGNATURES.items():
        d = parse_header(name, header)
        assert d.name == name
        assert d.loc == Loc("<builtin>", 0, 0)
        assert d.ret is not None


def test_header_shapes() -> None:
    m = parse_header("map", "'a [n] 'x (f: a -> x) (as: [n]a) : *[n]x")
    assert [getattr(p, "name", None) for p in m.tparams] == ["a", "n", "x"]
    assert [sx(p) for p in m.params] == ["(: f (a -> x))", "(: as [n]a)"]
    assert sx(m.ret) == "*[n]x"
    pi = parse_header("f32.pi", ": f32")
    assert pi.params == [] and pi.tparams == [] and sx(pi.ret) == "f32"
    s = parse_header("f32.sum", "[n] (xs: [n]f32) : f32")
    assert s.tparams == [S.SizeParam("n", Loc("<builtin>", 1, 1))]
    assert isinstance(s.body, S.Literal)


# --------------------------------------------------------------- locations


def test_node_locations() -> None:
    body = parse_expr("let x =\n  a + f b\nin x", "l.fut")
    assert isinstance(body, S.LetPat)
    assert body.loc == Loc("l.fut", 1, 1)
    plus = body.value
    assert isinstance(plus, S.BinOp)
    assert plus.loc == Loc("l.fut", 2, 3)
    assert plus.op_loc == Loc("l.fut", 2, 5)
    assert plus.rhs.loc == Loc("l.fut", 2, 7)
    assert isinstance(body.pat, S.PId) and body.pat.loc == Loc("l.fut", 1, 5)


def test_declaration_locations() -> None:
    prog = parse_program("\n\n  def f (x: i32) = x\n", "d.fut")
    d = prog.decls[0]
    assert isinstance(d, S.ValDecl) and d.loc == Loc("d.fut", 3, 3)
    assert d.params[0].loc == Loc("d.fut", 3, 10)  # the pattern inside the parentheses


# ------------------------------------------------------------------ errors


@pytest.mark.parametrize(
    ("text", "message", "where"),
    [
        (
            "if then 1 else 2",
            "Unexpected token 'then', expected expression",
            "t.fut:1:4",
        ),
        ("1 +", "Unexpected end of file, expected expression", "t.fut:1:4"),
        ("(1, 2", "Unexpected end of file, expected ',' or ')'", "t.fut:1:6"),
        ("let x = 1\nthen", "Unexpected token 'then', expected 'in'", "t.fut:2:1"),
        ("let x = 1\nx", "Unexpected end of file, expected 'in'", "t.fut:2:2"),
        ("if a then b", "Unexpected end of file, expected 'else'", "t.fut:1:12"),
        (
            "loop x = 0 do x",
            "Unexpected token 'do', expected 'for' or 'while'",
            "t.fut:1:12",
        ),
        ("a[1", "Unexpected end of file, expected ',' or ']'", "t.fut:1:4"),
        ("x $ y", "unknown character '$'", "t.fut:1:3"),
        ('f "abc', "unterminated string", "t.fut:1:3"),
        ("\\ -> 1", "Unexpected token '->', expected lambda parameter", "t.fut:1:3"),
        ("0..1", "Unexpected end of file, expected '...', '..<' or '..>'", "t.fut:1:5"),
    ],
)
def test_expression_errors(text: str, message: str, where: str) -> None:
    assert error_at(text) == (message, where)


@pytest.mark.parametrize(
    ("text", "message", "where"),
    [
        (
            "def f x = let y = x\ndef g = 1",
            'Unexpected "def" - missing "in"?',
            "t.fut:2:1",
        ),
        ("def f = 1 )", "Unexpected token ')', expected declaration", "t.fut:1:11"),
        ("def = 1", "Unexpected token '=', expected name", "t.fut:1:5"),
        (
            "def x ! y = x",
            "'!' is a prefix operator and cannot be used as infix operator",
            "t.fut:1:7",
        ),
        ("def f (x: ) = x", "Unexpected token ')', expected type", "t.fut:1:11"),
        ("type t =", "Unexpected end of file, expected type", "t.fut:1:9"),
    ],
)
def test_program_errors(text: str, message: str, where: str) -> None:
    assert error_at(text, parse_program) == (message, where)


def test_error_message_quotes_the_line() -> None:
    with pytest.raises(CompileError) as info:
        parse_program("def f =\n  1 + then", "q.fut")
    assert str(info.value) == (
        "Error at q.fut:2:7: Unexpected token 'then', expected expression\n"
        "    1 + then\n"
        "        ^"
    )


@pytest.mark.parametrize(
    ("text", "feature", "where"),
    [
        ("module M = { def x = 1 }", "module", "t.fut:1:1"),
        ("module type S = { val x: i32 }", "module type", "t.fut:1:1"),
        ("module F (P: {}) = {}", "functor", "t.fut:1:1"),
        ("open M", "open", "t.fut:1:1"),
        ("include M", "include", "t.fut:1:1"),
        ("val x : i32", "val", "t.fut:1:1"),
        ("def f x = match x case 1 -> 2", "match", "t.fut:1:11"),
        ("def f = #foo", "sum type", "t.fut:1:9"),
        ("type t = #a | #b", "sum type", "t.fut:1:10"),
        ("def f = ???", "typed hole", "t.fut:1:9"),
        ("def f = f32.(x + y)", "local open", "t.fut:1:13"),
    ],
)
def test_unsupported_features(text: str, feature: str, where: str) -> None:
    with pytest.raises(UnsupportedFeature) as info:
        parse_program(text, "t.fut")
    assert info.value.feature == feature
    assert str(info.value.loc) == where


@pytest.mark.parametrize(("text", "where"), [
    ("def f (x: i32) (1: i32) = x", "t.fut:1:17"),
    ("def f (x: i32) =\n  let (a, -1) = (x, x) in a", "t.fut:2:11"),
    ("def g = \\(true) -> 1", "t.fut:1:11"),
])
def test_literal_patterns_are_refutable(text: str, where: str) -> None:
    """Patterns outside `match` must match every value: a literal is an error."""
    with pytest.raises(CompileError) as info:
        parse_program(text, "t.fut")
    assert str(info.value).startswith(f"Error at {where}: Refutable pattern not allowed here.")


def test_existential_sizes() -> None:
    """`?[n][m].t` binds sizes of `t` no caller names; errors say what is missing."""
    prog = parse_program("def f (n: i64) : ?[m][k].([m]i32, [k]i32) = (iota n, iota n)", "t.fut")
    ret = prog.decls[0].ret
    assert isinstance(ret, S.TEExist) and ret.names == ["m", "k"]
    assert isinstance(ret.body, S.TETuple)
    for text, where in (("def f : ?.i32 = 1", "t.fut:1:10"), ("def f : ?[m] i32 = 1", "t.fut:1:14")):
        with pytest.raises(CompileError) as info:
            parse_program(text, "t.fut")
        assert str(info.value).startswith(f"Error at {where}: Unexpected token")


@pytest.mark.parametrize(
    "text",
    [
        "(((((",
        "def",
        "let",
        "def f = [1,",
        "def f = x with",
        "def f = \\",
        "type",
        "#[",
        "def f = (+",
        "def f = (.",
        "def f = a[:",
        "entry (",
        "def f = loop",
        "def f = 'a",
        "def f = 1 `",
        "def (+) = 1",
        "def f = x.",
        "def f = {a = }",
        "\x00\x01",
        "def f = " + "(" * 5000 + "1" + ")" * 5000,
        "def f = " + "-" * 5000 + "1",
    ],
)
def test_malformed_input_gives_compile_error(text: str) -> None:
    try:
        parse_program(text, "bad.fut")
    except CompileError:
        pass


def test_long_let_chain_and_speed() -> None:
    lines = ["def main (x: i32) : i32 ="]
    lines += [f"  let x{i} = x + {i} * 2" for i in range(3000)]
    lines.append("  in x2999")
    # A deep let chain parses without recursion limits or quadratic work;
    # the bound is loose, as a loaded CI machine must not fail it (speed is
    # measured by benchmarks/frontend_speed.py, not by tests).
    start = time.perf_counter()
    prog = parse_program("\n".join(lines), "long.fut")
    assert time.perf_counter() - start < 10.0
    d = prog.decls[0]
    assert isinstance(d, S.ValDecl) and isinstance(d.body, S.LetPat)
