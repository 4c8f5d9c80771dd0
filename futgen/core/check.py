"""A type checker for the core IR: what every pass promises the next.

`check_program(prog)` walks each function once, statement by statement, and
raises `IRTypeError` at the first broken rule, naming the function, the
statement (printed, shortened) and the problem.  `futgen.pipeline` runs it
after every pass under `--check-ir`, which the test suite turns on.  The
rules (grammar in `futgen.core.ir`):

* **Scope.**  Every variable used is bound before it: a function, lambda or
  loop parameter, a for loop's counter, or a name an earlier statement of
  this or an enclosing body binds.  Sizes in types are uses too.
* **Unique binders.**  No name is bound twice in a program: internalisation
  gives every binder its own tag and the passes keep it so by renaming what
  they copy, which `futgen.flatten.names` and the interpreters rely on.
* **Types.**  A statement's pattern has one name per value of its
  expression, of the type the expression gives it: scalar operators get
  operands of their type, indices are i64 and no more than the rank, branch
  results agree with the `If`'s types, loop parameters with their initial
  values and the body's results, calls with the callee's signature, and a
  SOAC's lambdas with the rows of its input arrays, its operators with their
  neutral elements.

Sizes are compared only where their equality is decidable from the IR
alone, between two constants: a size variable and a constant, or two
variables, may well be equal at run time (sizes are read afresh with `size`
and renamed by inlining), and an existential size (`?`) matches any.  Ranks
and element types must always agree.  (The interpreters check every size
at run time.)

`Checker.exp` types one expression; a checker for an extended IR overrides
it and falls back to `super().exp` (`futgen.gpu.check` adds the SegOps), as
the printers do.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from futgen.core import ir
from futgen.core.pretty import Printer, subexp, type_text
from futgen.interp.prims import BINOPS

I64 = ir.Prim("i64")
BOOL = ir.Prim("bool")

# A binary operator whose second operand is not of the operator's type.
_SECOND_OPERAND = {"ldexp": "i32"}

# How much of an offending statement an error shows.
_SHOWN_LINES = 12
_SHOWN_WIDTH = 160


class Scope(dict):
    """The type of every name in scope.  Names are unique in a program, so a
    nested body binds into the same dictionary, and `leave` forgets what it
    bound (the names inserted last) when it ends."""

    def leave(self, mark: int) -> None:
        """Forgets the names bound since the scope held `mark` names."""
        while len(self) > mark:
            self.popitem()


class IRTypeError(Exception):
    """The IR breaks a typing rule: a compiler bug in the pass that made it.

    `function` and `statement` (its text) say where; `after` names the pass
    whose result it was, when `futgen.pipeline` checked it."""

    def __init__(self, problem: str):
        super().__init__(problem)
        self.problem = problem
        self.function: str | None = None
        self.statement: str | None = None
        self.after: str | None = None

    def __str__(self) -> str:
        where = [f"after pass {self.after!r}"] if self.after else []
        where += [f"in function {self.function}"] if self.function else []
        text = (", ".join(where) + ": " if where else "") + self.problem
        if self.statement is not None:
            text += "\n  at\n" + self.statement
        return text


def check_program(prog: ir.Program) -> None:
    """Raises IRTypeError at the first statement of `prog` that breaks a rule."""
    Checker(prog).program()


@contextmanager
def located(stm: ir.Stm, printer: Printer) -> Iterator[None]:
    """Adds `stm`'s text to an IRTypeError raised inside, unless a statement
    nested in it was named already (the innermost one is the offender)."""
    try:
        yield
    except IRTypeError as e:
        if e.statement is None:
            e.statement = shorten(printer.stm(stm, 0))
        raise


def shorten(lines: list[str]) -> str:
    """Lines of IR text as an error shows them: indented, the first few only."""
    shown = [("    " + line)[:_SHOWN_WIDTH] for line in lines[:_SHOWN_LINES]]
    if len(lines) > _SHOWN_LINES:
        shown.append(f"    ... ({len(lines) - _SHOWN_LINES} more lines)")
    return "\n".join(shown)


def types_agree(want: ir.Type, got: ir.Type, sizes: bool = True) -> bool:
    """Whether a value of type `got` may be where `want` is expected: same
    element type and rank, and (if `sizes`) no two constant sizes that differ."""
    if isinstance(want, ir.Prim) or isinstance(got, ir.Prim):
        return want == got
    return (want.elem == got.elem and len(want.shape) == len(got.shape)
            and (not sizes or all(_sizes_agree(a, b) for a, b in zip(want.shape, got.shape))))


def _sizes_agree(a: ir.SubExp | None, b: ir.SubExp | None) -> bool:
    return not (isinstance(a, ir.Constant) and isinstance(b, ir.Constant)) or a.value == b.value


class Checker:
    """Checks the functions of one program (see the module docstring).

    Methods take the `scope` they check in and raise IRTypeError; `stm` adds
    the offending statement's text and `function` the function's name on the
    way out.  `printer` prints statements for the messages."""

    printer: Printer = Printer()

    def __init__(self, prog: ir.Program):
        self.prog = prog
        self.funs = {f.name: f for f in prog.functions}
        self.bound: set[ir.VName] = set()  # every name bound so far in the program

    def program(self) -> None:
        for f in self.prog.functions:
            self.function(f)

    def function(self, f: ir.Function) -> None:
        try:
            scope = Scope()
            self.bind(f.params, scope)
            self.well_formed(f.ret, scope)
            self.agree_all(f.ret, self.body(f.body, scope), "the function's results")
        except IRTypeError as e:
            e.function = f.name
            raise

    # ------------------------------------------------------------ binding

    def bind(self, params: Iterable[ir.Param], scope: Scope) -> None:
        """Binds `params` in `scope`; their types may use each other's names
        (a loop's existential sizes)."""
        params = tuple(params)
        for p in params:
            if p.name in self.bound:
                raise IRTypeError(f"{p.name} is bound twice")
            self.bound.add(p.name)
            scope[p.name] = p.type
        self.well_formed((p.type for p in params), scope)

    def well_formed(self, types: Iterable[ir.Type], scope: Scope) -> None:
        """Every size in `types` is an i64 in scope."""
        for t in types:
            if isinstance(t, ir.ArrayT):
                for d in t.shape:
                    if d is not None:
                        self.scalar(d, "i64", scope, f"the size {subexp(d)} in {type_text(t)}")

    # ------------------------------------------------------------- values

    def use(self, x: ir.VName, scope: Scope) -> ir.Type:
        t = scope.get(x)
        if t is None:
            raise IRTypeError(f"{x} is not in scope")
        return t

    def subexp(self, se: ir.SubExp, scope: Scope) -> ir.Type:
        return ir.Prim(se.prim) if isinstance(se, ir.Constant) else self.use(se.name, scope)

    def scalar(self, se: ir.SubExp, prim: str, scope: Scope, what: str) -> None:
        """`se` is a scalar of type `prim`."""
        t = self.subexp(se, scope)
        if t != ir.Prim(prim):
            raise IRTypeError(f"{what} is {type_text(t)}, not {prim}")

    def array(self, x: ir.VName, scope: Scope) -> ir.ArrayT:
        t = self.use(x, scope)
        if not isinstance(t, ir.ArrayT):
            raise IRTypeError(f"{x} is a {type_text(t)}, not an array")
        return t

    def agree(self, want: ir.Type, got: ir.Type, what: str, sizes: bool = True) -> None:
        if not types_agree(want, got, sizes):
            raise IRTypeError(f"{what} is {type_text(got)} where {type_text(want)} is expected")

    def agree_all(self, want: tuple[ir.Type, ...], got: tuple[ir.Type, ...], what: str) -> None:
        if len(want) != len(got):
            raise IRTypeError(f"{what}: {len(got)} values where {len(want)} are expected")
        for k, (w, g) in enumerate(zip(want, got)):
            self.agree(w, g, f"{what}, value {k}")

    # ------------------------------------------------------------ structure

    def body(self, body: ir.Body, scope: Scope) -> tuple[ir.Type, ...]:
        """The types of `body`'s results; what its statements bind is in scope
        only here."""
        mark = len(scope)
        for stm in body.stms:
            self.stm(stm, scope)
        types = tuple(self.subexp(se, scope) for se in body.result)
        scope.leave(mark)
        return types

    def stm(self, stm: ir.Stm, scope: Scope) -> None:
        """Checks `stm` and binds its pattern in `scope`."""
        with located(stm, self.printer):
            got = self.exp(stm.exp, scope)
            if len(got) != len(stm.pat):
                raise IRTypeError(f"the pattern binds {len(stm.pat)} names to "
                                  f"{len(got)} values")
            self.bind(stm.pat, scope)
            # A copy may give an array new sizes: a coercion `xs :> [n]t`,
            # after an Assert that checks them (`futgen.core.checked`).
            coerces = isinstance(stm.exp, ir.SubExpOp)
            for p, t in zip(stm.pat, got):
                self.agree(p.type, t, f"the value bound to {p.name}", sizes=not coerces)

    def lam(self, lam: ir.Lambda, args: tuple[ir.Type, ...], scope: Scope,
            what: str) -> tuple[ir.Type, ...]:
        """The result types of `lam` applied to values of types `args`."""
        if len(lam.params) != len(args):
            raise IRTypeError(f"{what} has {len(lam.params)} parameters for {len(args)} values")
        mark = len(scope)
        self.bind(lam.params, scope)
        for p, t in zip(lam.params, args):
            self.agree(p.type, t, f"the value for {p.name}")
        self.well_formed(lam.ret, scope)
        self.agree_all(lam.ret, self.body(lam.body, scope), f"the results of {what}")
        scope.leave(mark)
        return lam.ret

    def operator(self, lam: ir.Lambda, nes: tuple[ir.SubExp, ...], scope: Scope,
                 what: str) -> tuple[ir.Type, ...]:
        """The types of the neutral elements of an associative operator
        (`lam` takes two of each and returns one of each)."""
        ts = tuple(self.subexp(ne, scope) for ne in nes)
        self.agree_all(ts, self.lam(lam, ts + ts, scope, what), f"the results of {what}")
        return ts

    # ---------------------------------------------------------- expressions

    def exp(self, e: ir.Exp, scope: Scope) -> tuple[ir.Type, ...]:
        """The types of the values `e` returns."""
        match e:
            case ir.Apply():
                return self.apply(e, scope)
            case ir.If(cond, then_, else_, ret):
                self.scalar(cond, "bool", scope, "the condition")
                self.well_formed(ret, scope)
                self.agree_all(ret, self.body(then_, scope), "the then branch's results")
                self.agree_all(ret, self.body(else_, scope), "the else branch's results")
                return ret
            case ir.Loop():
                return self.loop(e, scope)
            case ir.Screma():
                return self.screma(e, scope)
            case ir.Scatter():
                return self.scatter(e, scope)
            case ir.Hist():
                return self.hist(e, scope)
        return (self.basic(e, scope),)

    def basic(self, e: ir.Exp, scope: Scope) -> ir.Type:
        """The type of the one value of a basic operation."""
        match e:
            case ir.SubExpOp(se):
                return self.subexp(se, scope)
            case ir.UnOp(op, prim, x):
                self.scalar(x, prim, scope, f"the operand of {op}.{prim}")
                return ir.Prim(ir.unop_type(op, prim))
            case ir.BinOp(_, prim) | ir.CmpOp(_, prim):
                self.binop(e, scope)
                return BOOL if isinstance(e, ir.CmpOp) else ir.Prim(prim)
            case ir.ConvOp(src, dst, x):
                self.scalar(x, src, scope, f"the operand of {src}->{dst}")
                return ir.Prim(dst)
            case ir.Index(arr, sl, _):
                return self.index(self.array(arr, scope), sl, scope)
            case ir.Update(arr, sl, value, _):
                t = self.array(arr, scope)
                self.agree(self.index(t, sl, scope), self.subexp(value, scope), "the value written")
                return t
            case ir.ArrayLit(elems, elem):
                self.well_formed((elem,), scope)
                for x in elems:
                    self.agree(elem, self.subexp(x, scope), f"the element {subexp(x)}")
                return ir.array_of(elem, (ir.Constant(len(elems), "i64"),))
            case ir.Iota(n, start, stride):
                for what, x in (("the length", n), ("the start", start), ("the stride", stride)):
                    self.scalar(x, "i64", scope, what)
                return ir.ArrayT("i64", (n,))
            case ir.Replicate(shape, value):
                self.sizes(shape, scope)
                return ir.array_of(self.subexp(value, scope), shape)
            case ir.Reshape(arr, shape, _):
                self.sizes(shape, scope)
                return ir.ArrayT(self.array(arr, scope).elem, shape)
            case ir.Rearrange(arr, perm):
                t = self.array(arr, scope)
                if sorted(perm) != list(range(len(t.shape))):
                    raise IRTypeError(f"{perm} is no permutation of the {len(t.shape)} "
                                      f"dimensions of {arr}")
                return ir.ArrayT(t.elem, tuple(t.shape[k] for k in perm))
            case ir.Concat(arrs):
                return self.concat(arrs, scope)
            case ir.Copy(arr):
                return self.array(arr, scope)
            case ir.ArraySize(arr, dim):
                if not 0 <= dim < len(self.array(arr, scope).shape):
                    raise IRTypeError(f"{arr} has no dimension {dim}")
                return I64
            case ir.Assert(cond, _, _, args):
                self.scalar(cond, "bool", scope, "the condition")
                for a in args:
                    self.scalar(a, "i64", scope, f"the message argument {subexp(a)}")
                return BOOL
        raise IRTypeError(f"no typing rule for {type(e).__name__}")

    def binop(self, e: ir.BinOp | ir.CmpOp, scope: Scope) -> None:
        """A known operator, defined on its type, of operands of that type."""
        name = f"{e.op}.{e.prim}"
        op = BINOPS.get(e.op)
        if op is None or op.comparison != isinstance(e, ir.CmpOp):
            kind = "comparison" if isinstance(e, ir.CmpOp) else "binary operator"
            raise IRTypeError(f"{e.op} is no {kind}")
        try:
            op.evaluator(e.prim)
        except TypeError:
            raise IRTypeError(f"{e.op} is not defined on {e.prim}") from None
        self.scalar(e.x, e.prim, scope, f"the first operand of {name}")
        self.scalar(e.y, _SECOND_OPERAND.get(e.op, e.prim), scope,
                    f"the second operand of {name}")

    def sizes(self, dims: tuple[ir.SubExp, ...], scope: Scope) -> None:
        for d in dims:
            self.scalar(d, "i64", scope, f"the size {subexp(d)}")

    def index(self, t: ir.ArrayT, sl: tuple[ir.DimIndex, ...], scope: Scope) -> ir.Type:
        """The type of `t` indexed by `sl`: a slice keeps its dimension."""
        if len(sl) > len(t.shape):
            raise IRTypeError(f"{len(sl)} indices into an array of rank {len(t.shape)}")
        for d in sl:
            if isinstance(d, ir.DimFix):
                self.scalar(d.i, "i64", scope, f"the index {subexp(d.i)}")
            else:
                self.sizes((d.start, d.num, d.stride), scope)
        return ir.indexed_type(t, sl)

    def concat(self, arrs: tuple[ir.VName, ...], scope: Scope) -> ir.Type:
        """Arrays whose rows agree, one after another: the outer size is their sum."""
        if not arrs:
            raise IRTypeError("a concatenation of no arrays")
        ts = [self.array(a, scope) for a in arrs]
        first = ir.row(ts[0])
        for a, t in zip(arrs[1:], ts[1:]):
            self.agree(first, ir.row(t), f"a row of {a}")
        return ir.array_of(first, (None,))

    def apply(self, e: ir.Apply, scope: Scope) -> tuple[ir.Type, ...]:
        fn = self.funs.get(e.fn)
        if fn is None:
            raise IRTypeError(f"there is no function {e.fn}")
        args = tuple(self.subexp(a, scope) for a in e.args)
        self.agree_all(tuple(p.type for p in fn.params), args, f"the arguments of {e.fn}")
        self.well_formed(e.ret, scope)
        self.agree_all(fn.ret, e.ret, f"the result types of the call of {e.fn}")
        return e.ret

    def loop(self, e: ir.Loop, scope: Scope) -> tuple[ir.Type, ...]:
        params = tuple(p for p, _ in e.merge)
        inits = tuple(self.subexp(v, scope) for _, v in e.merge)
        match e.form:
            case ir.ForLoop(_, prim, bound):
                self.scalar(bound, prim, scope, "the loop bound")
        mark = len(scope)
        self.bind(params, scope)
        for p, t in zip(params, inits):
            self.agree(p.type, t, f"the initial value of {p.name}")
        match e.form:
            case ir.ForLoop(i, prim, _):
                self.bind((ir.Param(i, ir.Prim(prim)),), scope)
            case ir.WhileLoop(cond) if ir.Param(cond, BOOL) not in params:
                raise IRTypeError(f"the loop condition {cond} is no bool loop parameter")
        types = tuple(p.type for p in params)
        self.agree_all(types, self.body(e.body, scope), "the loop body's results")
        scope.leave(mark)
        return types

    # --------------------------------------------------------------- SOACs

    def rows(self, w: ir.SubExp, arrs: tuple[ir.VName, ...], scope: Scope) -> tuple[ir.Type, ...]:
        """The row types of `w` rows of each of `arrs`."""
        self.scalar(w, "i64", scope, "the width")
        out = []
        for a in arrs:
            t = self.array(a, scope)
            if not _sizes_agree(w, t.shape[0]):
                raise IRTypeError(f"{a} has {subexp(t.shape[0])} rows, not {subexp(w)}")
            out.append(ir.row(t))
        return tuple(out)

    def screma(self, e: ir.Screma, scope: Scope) -> tuple[ir.Type, ...]:
        mapped = self.lam(e.map_lam, self.rows(e.w, e.arrs, scope), scope, "the map lambda")
        out: list[ir.Type] = []
        k = 0
        for kind, ops in (("scan", e.scans), ("reduce", e.reds)):
            for op in ops:
                ts = self.operator(op.lam, op.nes, scope, f"the {kind} operator")
                self.agree_all(ts, mapped[k:k + len(ts)], f"the map lambda's values for {kind}")
                out += [ir.array_of(t, (e.w,)) for t in ts] if kind == "scan" else ts
                k += len(ts)
        return (*out, *(ir.array_of(t, (e.w,)) for t in mapped[k:]))

    def scatter(self, e: ir.Scatter, scope: Scope) -> tuple[ir.Type, ...]:
        got = self.lam(e.lam, self.rows(e.w, e.arrs, scope), scope, "the scatter lambda")
        dests = self.dest_types(e.dests, scope)
        self.agree_all(writes(e.dests, dests), got, "the scatter lambda's indices and values")
        return dests

    def dest_types(self, dests: tuple[ir.ScatterDest, ...], scope: Scope) -> tuple[ir.ArrayT, ...]:
        """The types of a scatter's destination arrays."""
        out = []
        for d in dests:
            t = self.array(d.arr, scope)
            if not 0 < d.num_idx <= len(t.shape):
                raise IRTypeError(f"{d.num_idx} indices into {d.arr}, an array of rank "
                                  f"{len(t.shape)}")
            out.append(t)
        return tuple(out)

    def hist(self, e: ir.Hist, scope: Scope) -> tuple[ir.Type, ...]:
        got = self.lam(e.lam, self.rows(e.w, e.arrs, scope), scope, "the histogram lambda")
        bins, values, out = self.hist_ops(e.ops, scope)
        self.agree_all(bins + values, got, "the histogram lambda's bins and values")
        return out

    def hist_ops(self, ops: tuple[ir.HistOp, ...], scope: Scope) -> tuple[tuple, tuple, tuple]:
        """What histograms take (one i64 bin per operator, then a row of each
        destination) and their results (the destinations)."""
        dests = tuple(tuple(self.array(d, scope) for d in op.dests) for op in ops)
        for op, ts in zip(ops, dests):
            rows = tuple(ir.row(t) for t in ts)
            self.agree_all(rows, self.operator(op.lam, op.nes, scope, "the histogram operator"),
                           "the histogram's neutral elements")
        values = tuple(ir.row(t) for ts in dests for t in ts)
        return (I64,) * len(ops), values, tuple(t for ts in dests for t in ts)


def writes(dests: tuple[ir.ScatterDest, ...], types: tuple[ir.ArrayT, ...]) -> tuple[ir.Type, ...]:
    """What a scatter writes into destinations of `types`: per destination its
    i64 indices, then the element they address."""
    out: list[ir.Type] = []
    for d, t in zip(dests, types):
        out += [I64] * d.num_idx + [ir.array_of(ir.Prim(t.elem), t.shape[d.num_idx:])]
    return tuple(out)


__all__ = ["Checker", "IRTypeError", "Scope", "check_program", "located", "types_agree", "writes"]
