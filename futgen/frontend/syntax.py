"""The source-level abstract syntax of the supported Futhark subset.

The parser produces these nodes; the type checker fills in the `ty` field of
every expression (a `futgen.frontend.types.Type`, fully substituted) and
checks the rest; the interpreter runs them.

Grammar (informally; `e` expression, `p` pattern, `t` type expression):

    prog  ::= dec*
    dec   ::= ("def" | "entry") name tparam* p* (":" t)? "=" e
            | "type" name tparam* "=" t
            | "local" dec | "import" "string"
    e     ::= literal | qualname | (e, ..., e) | {f = e, f} | [e, ...]
            | e..e | e..<e | e..>e | e...e | e..e...e
            | e.f | e[i, j:k:s] | e op e | -e | !e | e e
            | \\p... -> e | (op) | (e op) | (op e) | (.f.g)
            | if e then e else e | let p = e in e | let f p... = e in e
            | loop p = e for x < e do e | loop p for x in e do e
            | loop p while e do e | e with [i] = e | e with f.g = e
            | e : t | e :> t
    p     ::= name | _ | (p, ..., p) | {f = p, f} | p : t
    t     ::= name targ* | [d]t | (t, ..., t) | {f: t} | (x: t) -> t | t -> t | *t

Tuples and records stay distinct here even though Futhark treats a tuple as
a record with fields 0, 1, ...; the type checker relates them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from futgen.errors import Loc

# ---------------------------------------------------------------- type syntax


@dataclass
class DimName:
    """A named size in a type: the `n` of `[n]i32`."""

    name: str
    loc: Loc


@dataclass
class DimConst:
    """A constant size: the `3` of `[3]f32`."""

    value: int
    loc: Loc


@dataclass
class DimAny:
    """An anonymous size: `[]i32`."""

    loc: Loc


@dataclass
class DimExpr:
    """A size given by an expression: `[n * m]t`, `[n - 1]t`.

    The type checker treats these as sizes known only at run time.
    """

    expr: Any  # Expr
    loc: Loc


DimExp = DimName | DimConst | DimAny | DimExpr


@dataclass
class TEName:
    """A named type applied to arguments: `i32`, `t`, `vec [n] f32`.

    Arguments are `DimExp` (written in brackets) or `TypeExp`.
    """

    name: str
    args: list[Any]
    loc: Loc


@dataclass
class TEArray:
    """`[d]t`."""

    dim: DimExp
    elem: TypeExp
    loc: Loc


@dataclass
class TETuple:
    """`(t1, ..., tn)`; `()` is the unit type (n = 0)."""

    elems: list[TypeExp]
    loc: Loc


@dataclass
class TERecord:
    """`{f1: t1, ..., fn: tn}`."""

    fields: list[tuple[str, TypeExp]]
    loc: Loc


@dataclass
class TEArrow:
    """`t1 -> t2` or, with a named parameter, `(x: t1) -> t2`."""

    param_name: str | None
    param: TypeExp
    ret: TypeExp
    loc: Loc


@dataclass
class TEUnique:
    """`*t`: a unique (consumable) type."""

    inner: TypeExp
    loc: Loc


@dataclass
class TEExist:
    """`?[n][m].t`: `t` with sizes `n`, `m` that only a value of it knows
    (existential: each is an anonymous size of its own)."""

    names: list[str]
    body: TypeExp
    loc: Loc


TypeExp = TEName | TEArray | TETuple | TERecord | TEArrow | TEUnique | TEExist


@dataclass
class SizeParam:
    """A size parameter `[n]` of a function or type abbreviation."""

    name: str
    loc: Loc


@dataclass
class TypeParam:
    """A type parameter `'t`, `'^t` (lifted) or `'~t` (size-lifted)."""

    name: str
    lifted: str  # "" | "^" | "~"
    loc: Loc


TParam = SizeParam | TypeParam


# ------------------------------------------------------------------- patterns


@dataclass
class PId:
    name: str
    loc: Loc
    ty: Any = field(default=None, repr=False, compare=False)


@dataclass
class PWild:
    loc: Loc
    ty: Any = field(default=None, repr=False, compare=False)


@dataclass
class PTuple:
    """`(p1, ..., pn)`; `()` is the unit pattern."""

    elems: list[Pat]
    loc: Loc
    ty: Any = field(default=None, repr=False, compare=False)


@dataclass
class PRecord:
    """`{f1 = p1, f2}`; a bare field name binds a variable of that name."""

    fields: list[tuple[str, Pat]]
    loc: Loc
    ty: Any = field(default=None, repr=False, compare=False)


@dataclass
class PAscribe:
    """`(p : t)`."""

    pat: Pat
    type: TypeExp
    loc: Loc
    ty: Any = field(default=None, repr=False, compare=False)


Pat = PId | PWild | PTuple | PRecord | PAscribe
# The type checker sets `ty` on every pattern node to its semantic type
# (type abbreviations expanded), so later stages need not re-resolve types.


# ---------------------------------------------------------------- expressions


@dataclass
class Expr:
    """Base of all expressions; `ty` is set by the type checker."""

    loc: Loc = field(kw_only=True)
    ty: Any = field(default=None, kw_only=True, repr=False, compare=False)


@dataclass
class Literal(Expr):
    """A numeric or boolean literal.

    `kind` is "int", "float" or "bool".  `suffix` is the written type suffix
    ("i64", "f32", ...) or None; an unsuffixed literal gets its type from
    inference (default i32 for integers, f64 for floats).  Integer literals
    keep their exact Python int value; `f32.inf` and friends are parsed as
    qualified names, not literals.
    """

    value: int | float | bool
    kind: str
    suffix: str | None = None


@dataclass
class Var(Expr):
    """A possibly qualified name: `x`, `f32.sqrt` (qual = ["f32"])."""

    name: str
    qual: list[str] = field(default_factory=list)

    @property
    def full_name(self) -> str:
        return ".".join([*self.qual, self.name])


@dataclass
class TupleExp(Expr):
    """`(e1, ..., en)` with n != 1; `()` is unit."""

    elems: list[Expr]


@dataclass
class RecordExp(Expr):
    """`{f1 = e1, f2}`; a bare `f2` means `f2 = f2`."""

    fields: list[tuple[str, Expr]]


@dataclass
class ArrayLit(Expr):
    """`[e1, ..., en]`; n may be 0 (the type checker infers the element type)."""

    elems: list[Expr]


@dataclass
class Range(Expr):
    """`start..<end`, `start..>end`, `start...end`, optionally `start..second...end`.

    `kind` is "..<", "..>" or "..."; `second` gives the stride as
    `second - start`.
    """

    start: Expr
    second: Expr | None
    end: Expr
    kind: str


@dataclass
class Project(Expr):
    """`e.f` for a record field or `e.0` for a tuple component."""

    expr: Expr
    field: str


@dataclass
class IdxFix:
    """A single index `i` in `a[i]`."""

    index: Expr


@dataclass
class IdxSlice:
    """A slice `i:j:s` in `a[i:j:s]`; each part may be omitted."""

    start: Expr | None
    end: Expr | None
    stride: Expr | None


DimIndex = IdxFix | IdxSlice


@dataclass
class Index(Expr):
    """`e[i, j:k, ...]`."""

    expr: Expr
    indices: list[DimIndex]


@dataclass
class BinOp(Expr):
    """`lhs op rhs` for a built-in or user-defined infix operator.

    `op` is the operator as written ("+", "|>", "==", ...); backtick
    application `` x `f` y `` is parsed as `Apply(Var(f), [x, y])`.
    `op_loc` is the position of the operator itself.
    """

    op: str
    lhs: Expr
    rhs: Expr
    op_loc: Loc | None = None


@dataclass
class UnOp(Expr):
    """Prefix `-e` or `!e`."""

    op: str
    expr: Expr


@dataclass
class Apply(Expr):
    """Application by juxtaposition: `f a b` is `Apply(f, [a, b])`.

    `unchecked` marks an `assert c e` written inside `#[unsafe]`: compiled
    code leaves the check out, as Futhark's compilers do (its interpreter,
    like ours, still checks).
    """

    fn: Expr
    args: list[Expr]
    unchecked: bool = field(default=False, kw_only=True)


@dataclass
class Lambda(Expr):
    """`\\p1 p2 : t -> body`."""

    params: list[Pat]
    ret: TypeExp | None
    body: Expr


@dataclass
class OpSection(Expr):
    """`(op)`: the binary operator as a curried function."""

    op: str


@dataclass
class LeftSection(Expr):
    """`(e op)`: `\\y -> e op y`."""

    op: str
    arg: Expr


@dataclass
class RightSection(Expr):
    """`(op e)`: `\\x -> x op e`."""

    op: str
    arg: Expr


@dataclass
class ProjectSection(Expr):
    """`(.f.g)`: `\\r -> r.f.g`."""

    fields: list[str]


@dataclass
class If(Expr):
    cond: Expr
    then: Expr
    els: Expr


@dataclass
class LetPat(Expr):
    """`let [n] p = value in body`; `sizes` are the bracketed size names."""

    sizes: list[str]
    pat: Pat
    value: Expr
    body: Expr


@dataclass
class LetFun(Expr):
    """`let f 't [n] p1 p2 : t = value in body`: a local function."""

    name: str
    tparams: list[TParam]
    params: list[Pat]
    ret: TypeExp | None
    value: Expr
    body: Expr
    fun_ty: Any = field(default=None, kw_only=True, repr=False, compare=False)  # as ValDecl.ty


@dataclass
class Update(Expr):
    """`src with [i, j:k] = value` (in-place update; consumes `src`).

    `let xs[i] = v in e` is parsed as `let xs = xs with [i] = v in e`.
    """

    src: Expr
    indices: list[DimIndex]
    value: Expr


@dataclass
class RecordUpdate(Expr):
    """`src with f.g = value`."""

    src: Expr
    fields: list[str]
    value: Expr


@dataclass
class ForLoop:
    """`for i < bound`."""

    var: str
    bound: Expr
    loc: Loc


@dataclass
class ForInLoop:
    """`for p in array`."""

    pat: Pat
    array: Expr
    loc: Loc


@dataclass
class WhileLoop:
    """`while cond`."""

    cond: Expr
    loc: Loc


LoopForm = ForLoop | ForInLoop | WhileLoop


@dataclass
class Loop(Expr):
    """`loop pat = init <form> do body`.

    `init` is None for `loop pat for ...`, which starts from the values the
    names of `pat` already have.  `sizes` are bracketed size names
    (`loop [n] (xs: [n]i32) = ...`).
    """

    sizes: list[str]
    pat: Pat
    init: Expr | None
    form: LoopForm
    body: Expr


@dataclass
class Ascribe(Expr):
    """`e : t`."""

    expr: Expr
    type: TypeExp


@dataclass
class Coerce(Expr):
    """`e :> t`: checks the sizes of `e` against `t` at run time."""

    expr: Expr
    type: TypeExp


# --------------------------------------------------------------- declarations


@dataclass
class ValDecl:
    """`def`/`entry` (and, for constants, no parameters)."""

    entry: bool
    name: str
    tparams: list[TParam]
    params: list[Pat]
    ret: TypeExp | None
    body: Expr
    loc: Loc
    local: bool = False
    attrs: list[str] = field(default_factory=list)
    # The checked, possibly polymorphic type (size and type parameters by
    # name), which the interpreter matches with the type at a use.
    ty: Any = field(default=None, repr=False, compare=False)

    @property
    def is_entry_point(self) -> bool:
        """Declared with `entry`, or a non-local `def main` (Futhark's default entry)."""
        return self.entry or (self.name == "main" and not self.local)


@dataclass
class TypeDecl:
    """`type name params = t` (`type^`/`type~` for lifted abbreviations)."""

    name: str
    params: list[TParam]
    body: TypeExp
    lifted: str
    loc: Loc
    local: bool = False


@dataclass
class ImportDecl:
    """`import "path"`: brings the top-level names of a local file into scope."""

    path: str
    loc: Loc


Decl = ValDecl | TypeDecl | ImportDecl


@dataclass
class Program:
    """The declarations of one source file, in order."""

    file: str
    decls: list[Decl]
