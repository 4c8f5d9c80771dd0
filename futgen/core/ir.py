"""The core IR: first order, monomorphic, tuple-free, in A-normal form.

Internalisation (`futgen.core.internalise`) turns the typed source AST into
this IR; every later pass (simplification, fusion, flattening) reads and
writes it.  It follows Futhark's SOACS representation
(`src/Futhark/IR/Syntax.hs`, `IR/SOACS/SOAC.hs`), cut down to what futgen
needs:

* **A-normal form.**  Every operand is a `SubExp`: a variable or a
  constant.  Every intermediate result is bound by a statement, so a pass
  can talk about "the value of x_12" and rewrite one statement at a time.
* **No tuples.**  A source value of tuple or record type is several
  variables; an array of tuples is several arrays (structure of arrays).
  Statements and functions therefore bind and return tuples of names.
* **First order and monomorphic.**  Functions are not values; lambdas occur
  only as arguments of SOACs, and every polymorphic source function has been
  copied for each type it is used at.
* **Sizes are explicit.**  An array type's dimensions are `SubExp`s (an i64
  variable in scope, or a constant).  A size the source program leaves
  existential (the result of `filter`, an array that changes size in a loop)
  is `None`, printed `?`; code that needs it reads it with `ArraySize`.
* **SOACs in fused form.**  `Screma` is map + scan + reduce over the same
  input arrays (Futhark's Screma); a plain map, reduce or scan is a Screma
  with the other parts empty, so fusion later merges Scremas without new
  node kinds.  `Scatter` and `Hist` have their own nodes.

Grammar (`x` a VName, `se` a SubExp, `t` a Type, `p` = `x: t`), as
`futgen.core.pretty` prints it:

    prog   ::= fun*
    fun    ::= ["entry"] "fun" name "(" p, ... ")" ":" "(" t, ... ")" "=" body
    body   ::= "{" stm* "in" "(" se, ... ")" "}"
    stm    ::= "let" "(" p, ... ")" "=" exp
    exp    ::= se | op "." prim se | op "." prim se se | prim "->" prim se
             | x "[" idx, ... "]" | x "with" "[" idx, ... "]" "=" se
             | "array" t "[" se, ... "]" | "iota" se se se | "replicate" "(" se, ... ")" se
             | "reshape" "(" se, ... ")" x | "rearrange" "(" int, ... ")" x
             | "concat" "(" x, ... ")" | "copy" x | "size" x int
             | "assert" se "msg" ["(" se, ... ")"]   (msg formats the se's)
             | "apply" name "(" se, ... ")"
             | "if" se ":" "(" t, ... ")" "then" body "else" body
             | "loop" "(" p "=" se, ... ")" ("for" x ":" prim "<" se | "while" x) "do" body
             | "screma" se "(" x, ... ")" ("scan" nes lam)* ("reduce" nes lam)* "map" lam
             | "scatter" se "(" x, ... ")" "into" "(" x "/" int, ... ")" lam
             | "hist" se "(" x, ... ")" ("into" "(" x, ... ")" nes lam)* "map" lam
    lam    ::= "\\" "(" p, ... ")" ":" "(" t, ... ")" "->" body
    idx    ::= se | se ":+" se "*" se          (start :+ count * stride)
    t      ::= prim | ("[" se "]" | "[?]")+ prim
    se     ::= x | constant                     (typed: 1i64, 0.5f32, true)

Printed example, the internalisation of
`entry main (xs: []i32) : i32 = reduce (+) 0 (map (* 2) xs)`:

    entry fun main(xs_0: [?]i32) : (i32) =
    {
      let (n_1: i64) = size xs_0 0
      let (map_4: [n_1]i32) =
        screma n_1 (xs_0)
          map
            \\(x_2: i32) : (i32) ->
            {
              let (x_3: i32) = *.i32 x_2 2i32
              in (x_3)
            }
      let (red_9: i32) =
        screma n_1 (map_4)
          reduce (0i32)
            \\(x_5: i32, x_6: i32) : (i32) ->
            {
              let (x_7: i32) = +.i32 x_5 x_6
              in (x_7)
            }
          map
            \\(x_8: i32) : (i32) ->
            {
              in (x_8)
            }
      in (red_9)
    }

Fusion will turn the two Scremas into one (a "redomap").

(`futgen.core.pretty` prints this form; nodes are frozen, slotted
dataclasses holding tuples, so passes build new nodes with `match` and
`dataclasses.replace` instead of mutating.)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from futgen.errors import Loc

# ------------------------------------------------------------------ names


@dataclass(frozen=True, slots=True)
class VName:
    """A variable: a readable base (an identifier) and a tag unique within
    the program."""

    base: str
    tag: int

    def __str__(self) -> str:
        return f"{self.base}_{self.tag}"


@dataclass(frozen=True, slots=True)
class Var:
    """A SubExp naming a variable."""

    name: VName


@dataclass(frozen=True, slots=True)
class Constant:
    """A SubExp that is a primitive constant of type `prim` (i32, f64, bool, ...)."""

    value: int | float | bool
    prim: str


SubExp = Var | Constant


# ------------------------------------------------------------------ types


@dataclass(frozen=True, slots=True)
class Prim:
    """A primitive scalar type: i8 ... u64, f16 ... f64, bool."""

    name: str


@dataclass(frozen=True, slots=True)
class ArrayT:
    """An array of primitives; each dimension a SubExp, or None when existential."""

    elem: str
    shape: tuple[SubExp | None, ...]


Type = Prim | ArrayT


@dataclass(frozen=True, slots=True)
class Param:
    """A typed name: a function or lambda parameter, or a name a statement binds."""

    name: VName
    type: Type


# ------------------------------------------------------------- basic ops


@dataclass(frozen=True, slots=True)
class SubExpOp:
    """The value of a SubExp itself (a copy of a scalar, an alias of an array)."""

    se: SubExp


@dataclass(frozen=True, slots=True)
class UnOp:
    """A unary scalar operation `op` on type `prim`: neg, not, abs, sgn, sqrt, ..."""

    op: str
    prim: str
    x: SubExp


@dataclass(frozen=True, slots=True)
class BinOp:
    """A binary scalar operation on operands of type `prim`.

    `op` is a key of `futgen.interp.prims.BINOPS` other than the comparisons
    (+, -, *, /, %, //, %%, **, &, |, ^, <<, >>, >>>, max, min).  The lazy
    `&&` and `||` of the source become `If`s, so both operands here are
    always evaluated.
    """

    op: str
    prim: str
    x: SubExp
    y: SubExp


@dataclass(frozen=True, slots=True)
class CmpOp:
    """A comparison (==, !=, <, >, <=, >=) of two `prim` operands; a bool."""

    op: str
    prim: str
    x: SubExp
    y: SubExp


@dataclass(frozen=True, slots=True)
class ConvOp:
    """Conversion of a scalar from `src` to `dst` with Futhark's rules."""

    src: str
    dst: str
    x: SubExp


@dataclass(frozen=True, slots=True)
class DimFix:
    """One index of an Index or Update."""

    i: SubExp


@dataclass(frozen=True, slots=True)
class DimSlice:
    """`num` elements from `start` in steps of `stride` (Futhark's core slice)."""

    start: SubExp
    num: SubExp
    stride: SubExp


DimIndex = DimFix | DimSlice


@dataclass(frozen=True, slots=True)
class Index:
    """`arr[slice]`; a prefix of the dimensions may be given, the rest are whole."""

    arr: VName
    slice: tuple[DimIndex, ...]
    loc: Loc | None = None


@dataclass(frozen=True, slots=True)
class Update:
    """`arr with [slice] = value`: consumes `arr`, returns the updated array."""

    arr: VName
    slice: tuple[DimIndex, ...]
    value: SubExp
    loc: Loc | None = None


@dataclass(frozen=True, slots=True)
class ArrayLit:
    """An array of the given elements, each of type `elem` (scalar or array)."""

    elems: tuple[SubExp, ...]
    elem: Type


@dataclass(frozen=True, slots=True)
class Iota:
    """`[start, start + stride, ...]`, `n` elements of type i64."""

    n: SubExp
    start: SubExp
    stride: SubExp


@dataclass(frozen=True, slots=True)
class Replicate:
    """An array of `shape` whose every element is `value` (scalar or array)."""

    shape: tuple[SubExp, ...]
    value: SubExp


@dataclass(frozen=True, slots=True)
class Reshape:
    """The elements of `arr` in row-major order, viewed with a new shape."""

    arr: VName
    shape: tuple[SubExp, ...]
    loc: Loc | None = None


@dataclass(frozen=True, slots=True)
class Rearrange:
    """Permuted dimensions: result dimension i is dimension `perm[i]` of `arr`."""

    arr: VName
    perm: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Concat:
    """The arrays one after another along the outermost dimension."""

    arrs: tuple[VName, ...]


@dataclass(frozen=True, slots=True)
class Copy:
    """A fresh copy of an array (what `copy` and consumption need)."""

    arr: VName


@dataclass(frozen=True, slots=True)
class ArraySize:
    """The size of dimension `dim` of `arr`, an i64."""

    arr: VName
    dim: int


@dataclass(frozen=True, slots=True)
class Assert:
    """Fails at `loc` unless `cond` holds; binds nothing useful (a bool).

    `msg` is a `str.format` template over the values of `args` (i64 scalars),
    so a message can show run-time values as Futhark's do: `"Range {0}..<{1}
    is invalid."`.  Literal braces in `msg` are doubled (`assert_template`).
    """

    cond: SubExp
    msg: str
    loc: Loc | None = None
    args: tuple[SubExp, ...] = ()

    def message(self, values: tuple | list) -> str:
        """The message with the arguments' values filled in."""
        return self.msg.format(*(int(v) for v in values))


BasicOp = (SubExpOp | UnOp | BinOp | CmpOp | ConvOp | Index | Update | ArrayLit | Iota
           | Replicate | Reshape | Rearrange | Concat | Copy | ArraySize | Assert)


# ---------------------------------------------------------- control flow


@dataclass(frozen=True, slots=True)
class Stm:
    """`let (pat) = exp`: binds one name per value `exp` returns."""

    pat: tuple[Param, ...]
    exp: Exp


@dataclass(frozen=True, slots=True)
class Body:
    """Statements in order, then the results (one SubExp per returned value)."""

    stms: tuple[Stm, ...]
    result: tuple[SubExp, ...]


@dataclass(frozen=True, slots=True)
class Apply:
    """A call of the core function `fn`; `ret` are its result types; `loc`
    is where the program calls it (a failure's backtrace lists it)."""

    fn: str
    args: tuple[SubExp, ...]
    ret: tuple[Type, ...]
    loc: Loc | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class If:
    """`if cond then then_ else else_`; both branches return values of `ret`."""

    cond: SubExp
    then_: Body
    else_: Body
    ret: tuple[Type, ...]


@dataclass(frozen=True, slots=True)
class ForLoop:
    """`for i < bound`: `i` counts 0, 1, ..., bound - 1 in type `prim`."""

    i: VName
    prim: str
    bound: SubExp


@dataclass(frozen=True, slots=True)
class WhileLoop:
    """`while cond`: `cond` is one of the loop's merge parameters (a bool)."""

    cond: VName


LoopForm = ForLoop | WhileLoop


@dataclass(frozen=True, slots=True)
class Loop:
    """A sequential loop.  `merge` pairs each loop parameter with its initial
    value; the body's results are the parameters' values for the next
    iteration, and the last ones are the loop's results."""

    merge: tuple[tuple[Param, SubExp], ...]
    form: LoopForm
    body: Body


# ----------------------------------------------------------------- SOACs


@dataclass(frozen=True, slots=True)
class Lambda:
    """An anonymous function of a SOAC: parameters, body and result types."""

    params: tuple[Param, ...]
    body: Body
    ret: tuple[Type, ...]


@dataclass(frozen=True, slots=True)
class Scan:
    """An inclusive scan with associative operator `lam` and neutral elements `nes`."""

    lam: Lambda
    nes: tuple[SubExp, ...]


@dataclass(frozen=True, slots=True)
class Reduce:
    """A reduction with associative operator `lam` (`comm`: also commutative)."""

    lam: Lambda
    nes: tuple[SubExp, ...]
    comm: bool = False


@dataclass(frozen=True, slots=True)
class Screma:
    """Map, scans and reductions over `w` rows of `arrs`, fused.

    `map_lam` takes one row of each input array and returns first the values
    fed to the scans (in order), then those fed to the reductions, then the
    values that are only mapped.  The Screma returns, in that order, the scan
    results (arrays), the reduction results (values) and the mapped arrays.
    """

    w: SubExp
    arrs: tuple[VName, ...]
    scans: tuple[Scan, ...]
    reds: tuple[Reduce, ...]
    map_lam: Lambda


@dataclass(frozen=True, slots=True)
class ScatterDest:
    """A destination of a Scatter: the array written and how many indices address it."""

    arr: VName
    num_idx: int


@dataclass(frozen=True, slots=True)
class Scatter:
    """Writes into destination arrays (consumed) at computed positions.

    For each of `w` rows of `arrs`, `lam` returns, for each destination in
    order, `num_idx` indices followed by one value.  Writes whose indices
    are out of bounds are ignored; if two rows write the same position, the
    result is unspecified (Futhark's rule; the interpreter keeps the last).
    """

    w: SubExp
    arrs: tuple[VName, ...]
    lam: Lambda
    dests: tuple[ScatterDest, ...]


@dataclass(frozen=True, slots=True)
class HistOp:
    """One histogram: destination arrays (consumed), neutral elements and the
    associative, commutative operator that combines values in a bin."""

    dests: tuple[VName, ...]
    nes: tuple[SubExp, ...]
    lam: Lambda


@dataclass(frozen=True, slots=True)
class Hist:
    """Generalised histograms over `w` rows of `arrs`.

    `lam` returns one bin index per HistOp, then each HistOp's values in
    order; out-of-range bins are ignored.  Returns the updated destinations.
    """

    w: SubExp
    arrs: tuple[VName, ...]
    ops: tuple[HistOp, ...]
    lam: Lambda


SOAC = Screma | Scatter | Hist


@dataclass(frozen=True, slots=True)
class CustomVjp:
    """`with_vjp f f' x`: `primal` applied to `args`, whose reverse-mode
    adjoint is `adjoint` applied to (results, their adjoints).  It exists
    only while internalising: `futgen.core.ad` differentiates it, and
    `ad.strip_custom_vjps` leaves `primal`'s body in its place in the
    program every later pass sees."""

    primal: Lambda
    adjoint: Lambda
    args: tuple[SubExp, ...]


Exp = BasicOp | Apply | If | Loop | SOAC | CustomVjp


# --------------------------------------------------------------- program


@dataclass(frozen=True, slots=True)
class Function:
    """A core function; `entry` marks the entry points a user may call."""

    name: str
    params: tuple[Param, ...]
    ret: tuple[Type, ...]
    body: Body
    entry: bool = False


@dataclass(frozen=True, slots=True)
class Program:
    """The functions of a program; a callee may come before or after its caller."""

    functions: tuple[Function, ...]

    def function(self, name: str) -> Function:
        """The function called `name` (KeyError if there is none)."""
        for f in self.functions:
            if f.name == name:
                return f
        raise KeyError(name)


def assert_template(text: str) -> str:
    """`text` as an Assert message template that shows it literally."""
    return text.replace("{", "{{").replace("}", "}}")


def subexp_type(se: SubExp, types: dict[VName, Type]) -> Type:
    """The type of a SubExp given the types of the variables in scope."""
    if isinstance(se, Constant):
        return Prim(se.prim)
    return types[se.name]


# The unsigned type of a float's bit pattern (`to_bits`, `from_bits`).
FLOAT_BITS = {"f16": "u16", "f32": "u32", "f64": "u64"}
# Unary operators whose result is not of their operand's type.
UNOP_RESULTS = {"isnan": "bool", "isinf": "bool", "popc": "i32", "clz": "i32", "ctz": "i32"}


def unop_type(op: str, prim: str) -> str:
    """The result type of unary operator `op` on an operand of type `prim`."""
    if op == "to_bits":
        return FLOAT_BITS[prim]
    if op == "from_bits":
        return next(f for f, bits in FLOAT_BITS.items() if bits == prim)
    return UNOP_RESULTS.get(op, prim)


def elem_prim(t: Type) -> str:
    """The primitive type of scalar type `t`, or of the elements of array type `t`."""
    return t.name if isinstance(t, Prim) else t.elem


def row(t: Type) -> Type:
    """The type of one row (element of the outermost dimension) of array type `t`."""
    assert isinstance(t, ArrayT), t
    return Prim(t.elem) if len(t.shape) == 1 else ArrayT(t.elem, t.shape[1:])


def indexed_type(t: Type, sl: tuple[DimIndex, ...]) -> Type:
    """The type of `arr[sl]` for `arr` of type `t`: a slice's dimension has
    its count, a fixed index removes its dimension."""
    assert isinstance(t, ArrayT) and len(sl) <= len(t.shape), (t, sl)
    dims = tuple(d.num for d in sl if isinstance(d, DimSlice)) + t.shape[len(sl):]
    return ArrayT(t.elem, dims) if dims else Prim(t.elem)


def array_of(t: Type, dims: tuple[SubExp | None, ...]) -> Type:
    """An array with outer dimensions `dims` whose rows are of type `t`."""
    if not dims:
        return t
    if isinstance(t, Prim):
        return ArrayT(t.name, dims)
    return ArrayT(t.elem, dims + t.shape)


def lambda_binop(lam: Lambda) -> BinOp | None:
    """The operator of a lambda that is exactly `\\x y -> x op y`, else None.

    Reductions and scans by such a lambda can use NumPy ufuncs or a known
    operator instead of running the lambda.
    """
    if len(lam.params) != 2 or len(lam.body.stms) != 1:
        return None
    [stm] = lam.body.stms
    e = stm.exp
    if (isinstance(e, BinOp) and e.x == Var(lam.params[0].name)
            and e.y == Var(lam.params[1].name)
            and lam.body.result == (Var(stm.pat[0].name),)):
        return e
    return None
