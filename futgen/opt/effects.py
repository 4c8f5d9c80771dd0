"""What a statement may do besides computing its value: fail, or consume an array.

The core IR is pure but for two things, and every rewrite that removes,
moves, merges or duplicates work must respect both:

* **Failure.**  Indexing out of bounds, integer division by zero, a
  negative integer exponent, a reshape to the wrong size and a false
  `Assert` raise `FutharkError` at run time.  futgen promises these errors
  (Futhark's compiler may remove an unused failing index; futgen does not),
  so `can_fail` is what dead-code removal and hoisting ask before dropping
  or moving a statement.
* **Consumption.**  `Update`, `Scatter` and `Hist` write into an array in
  place, which uniqueness types allow only if nothing reads the array (or
  anything aliasing it) afterwards.  `Aliases` finds, for one function, every
  name whose value may be consumed, following the aliases that let a view
  stand for another array's memory: a slice, reshape or transposition of
  `x`, `let y = x`, an `if` or `loop` result, a loop or lambda parameter.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from futgen_runtime.dtypes import INTS, SIGNED_INTS

from futgen.core import ir
from futgen.opt.parts import bodies, host_stms, lambdas

# Integer operators that fail for some divisors or exponents.
_PARTIAL_INT_BINOPS = frozenset({"/", "%", "//", "%%", "**"})


def can_fail(e: ir.Exp, types: Mapping[ir.VName, ir.Type],
             ranges: Mapping[ir.VName, ir.SubExp] | None = None) -> bool:
    """Whether evaluating `e` may raise a run-time error (conservatively;
    `types` gives the array types and `ranges` the loop counters' bounds,
    counter -> bound, that may prove an index in bounds).
    A while loop counts as failing: it need not terminate."""
    match e:
        case ir.BinOp(op, prim, _, y):
            return prim in INTS and op in _PARTIAL_INT_BINOPS and not _never_fails(op, prim, y)
        case ir.Index(arr, sl) | ir.Update(arr, sl):
            return not _in_bounds(sl, types.get(arr), ranges or {})
        case ir.Assert(cond):
            return cond != ir.Constant(True, "bool")
        case ir.Reshape() | ir.Apply():
            return True
        case ir.Loop(form=ir.WhileLoop()):
            return True
    return any(can_fail(s.exp, types, ranges) for b in bodies(e) for s in b.stms)


def _never_fails(op: str, prim: str, y: ir.SubExp) -> bool:
    """Whether `x op y` cannot fail for any `x`: an unsigned `**`, or `y` a
    nonzero constant (a non-negative one for a signed `**`)."""
    if op == "**" and prim not in SIGNED_INTS:
        return True
    if not isinstance(y, ir.Constant):
        return False
    return y.value >= 0 if op == "**" else y.value != 0


def _in_bounds(sl: tuple[ir.DimIndex, ...], t: ir.Type | None,
               ranges: Mapping[ir.VName, ir.SubExp]) -> bool:
    """Whether every index of `sl` is a constant inside a constant dimension
    or a counter whose bound (`ranges`) is the dimension."""
    if not isinstance(t, ir.ArrayT) or len(sl) > len(t.shape):
        return False
    for d, n in zip(sl, t.shape):
        if not isinstance(d, ir.DimFix):
            return False
        i = d.i
        constant = (isinstance(i, ir.Constant) and isinstance(n, ir.Constant)
                    and 0 <= i.value < n.value)
        counter = isinstance(i, ir.Var) and n is not None and ranges.get(i.name) == n
        if not (constant or counter):
            return False
    return True


# For each function, the positions of the parameters a call may consume.
Consuming = Mapping[str, frozenset[int]]


class Aliases:
    """Which names of one body (a function's) may be consumed, directly or
    through an alias.

    `may_alias[y]` lists the names whose values `y` may share memory with;
    consuming `y` consumes them too.  `consumed` is every name some
    statement consumes, closed under `may_alias`.  A call consumes the
    arguments `calls` says (`consuming_parameters`), or, without it, every
    argument: the core IR does not record uniqueness.
    """

    def __init__(self, body: ir.Body, calls: Consuming | None = None):
        self.may_alias: dict[ir.VName, set[ir.VName]] = {}
        self.calls = calls
        roots: set[ir.VName] = set()
        self._walk(body, roots)
        self.consumed = self.closure(roots)

    def closure(self, names: set[ir.VName]) -> set[ir.VName]:
        """`names` and everything they may alias, transitively."""
        out, todo = set(), list(names)
        while todo:
            v = todo.pop()
            if v not in out:
                out.add(v)
                todo += self.may_alias.get(v, ())
        return out

    def consumes(self, e: ir.Exp) -> set[ir.VName]:
        """The names whose values `e` may consume (with names `e` binds itself)."""
        roots = set(_consumed_roots(e, self.calls))
        for b in bodies(e):
            for s in b.stms:
                roots |= self.consumes(s.exp)
        return self.closure(roots)

    def _alias(self, y: ir.Param, xs: set[ir.VName]) -> None:
        if isinstance(y.type, ir.ArrayT):  # a scalar shares no memory
            self.may_alias.setdefault(y.name, set()).update(xs)

    def _walk(self, body: ir.Body, roots: set[ir.VName]) -> None:
        for stm in body.stms:
            roots.update(_consumed_roots(stm.exp, self.calls))
            self._edges(stm)
            for b in bodies(stm.exp):
                self._walk(b, roots)

    def _edges(self, stm: ir.Stm) -> None:
        """The aliases statement `stm` creates."""
        e, pat = stm.exp, stm.pat
        match e:
            case ir.SubExpOp(ir.Var(x)) | ir.Index(x) | ir.Reshape(x) | ir.Rearrange(x):
                self._alias(pat[0], {x})
            case ir.Apply(args=args):
                for p in pat:
                    self._alias(p, _vars(args))
            case ir.If(_, then_, else_, _):
                for k, p in enumerate(pat):
                    self._alias(p, _vars((then_.result[k], else_.result[k])))
            case ir.Loop(merge, _, body):
                for k, ((mp, init), p) in enumerate(zip(merge, pat)):
                    both = _vars((init, body.result[k]))
                    self._alias(p, both)
                    self._alias(mp, both)
            case ir.Screma(arrs=arrs) | ir.Scatter(arrs=arrs) | ir.Hist(arrs=arrs):
                lam = next(lambdas(e))
                for p, a in zip(lam.params, arrs):
                    self._alias(p, {a})
        if isinstance(e, ir.Hist):
            for hop in e.ops:
                for p in hop.lam.params:
                    self._alias(p, set(hop.dests))


def consumed_on_host(fun: ir.Function) -> set[ir.VName]:
    """The names of GPU IR function `fun` whose values something may consume:
    what `Aliases` finds in its host code (every argument of a call counts),
    plus the destinations of SegScatters and SegHists, with their aliases."""
    from futgen.gpu.ir import SegHist, SegScatter

    aliases = Aliases(fun.body)
    roots = set(aliases.consumed)
    for stm in host_stms(fun.body):
        if isinstance(stm.exp, SegScatter):
            roots.update(d.arr for d in stm.exp.dests)
        elif isinstance(stm.exp, SegHist):
            roots.update(d for op in stm.exp.ops for d in op.dests)
    return aliases.closure(roots)


def consuming_parameters(prog: ir.Program) -> dict[str, frozenset[int]]:
    """For each function of `prog`, the positions of the parameters it may
    consume (the least fixed point over the calls, recursive ones included)."""
    out = {f.name: frozenset[int]() for f in prog.functions}
    changed = True
    while changed:
        changed = False
        for f in prog.functions:
            consumed = Aliases(f.body, out).consumed
            mine = frozenset(k for k, p in enumerate(f.params) if p.name in consumed)
            if mine != out[f.name]:
                out[f.name], changed = mine, True
    return out


def _consumed_roots(e: ir.Exp, calls: Consuming | None) -> Iterator[ir.VName]:
    """The names `e` itself consumes (not counting its bodies)."""
    match e:
        case ir.Update(arr=arr):
            yield arr
        case ir.Scatter(dests=dests):
            yield from (d.arr for d in dests)
        case ir.Hist(ops=ops):
            yield from (d for o in ops for d in o.dests)
        case ir.Apply(fn, args):
            which = range(len(args)) if calls is None else calls.get(fn, range(len(args)))
            yield from _vars(tuple(args[k] for k in which))


def _vars(ses: tuple[ir.SubExp, ...]) -> set[ir.VName]:
    return {se.name for se in ses if isinstance(se, ir.Var)}
