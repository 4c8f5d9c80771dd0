"""The simplifier: local rewrites of the core IR, repeated until nothing changes.

Futhark runs its simplifier between almost every pass (thesis §5.1.1); this
one does the same jobs on futgen's core IR, in every body (functions, `if`
branches, loop bodies, lambdas):

* **Copy propagation.**  After `let y = x` every use of `y` is `x` (when
  `x`'s type says at least what `y`'s does), after `let y = 5i32` every use
  is `5i32`.
* **Rewrite rules** (`futgen.opt.rules`): exact constant folding, algebraic
  laws, known branches, true assertions.
* **Common subexpressions.**  A pure expression computed again where the
  first result is in scope (an enclosing body's included) is replaced by
  that result: scalar operations (commutative ones in either operand
  order), indexing, assertions with the same condition and message, array
  operations, and Scremas equal up to the names they bind (only after
  fusion: before, each copy may fuse into its own consumer).  An array that
  anything consumes (`futgen.opt.effects.Aliases`), or that the function
  returns, is never shared: the consumer needs its own.  Statements that
  update in place, `Scatter`, `Hist`, calls, `if` and loops are never
  shared.
* **Dead code.**  A statement whose results nobody uses goes, unless it may
  fail at run time (`effects.can_fail`: indexing that may be out of bounds,
  integer division, assertions, reshapes, calls, while loops).  Futhark also
  removes unused failing statements; futgen promises the error instead.  A
  Screma's unused mapped arrays and an `if`'s unused values go too (Futhark's
  `removeDeadMapping`), keeping at least one value.
* **Hoisting.**  A scalar operation in a loop body or a lambda that does not
  depend on the loop's or lambda's parameters, or on anything else bound
  inside, moves in front of the loop or SOAC: once instead of once per
  iteration or element.  Only operations that cannot fail move, since the
  loop may run zero times (and a failing one would fail where the original
  did not); nothing moves out of an `if` branch.

Each round is one forward walk (propagation, rules, sharing, hoisting) and
one backward walk (dead code); rounds repeat until one changes nothing, at
most `MAX_ROUNDS` times.  Names stay unique: nothing is copied, only moved
or removed.
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Callable, Hashable
from dataclasses import replace

from futgen_runtime.prims import BINOPS

from futgen.core import ir
from futgen.flatten.names import (
    binders,
    free_vars,
    param_types,
    replace_uses,
    substitute,
    use_counts,
)
from futgen.opt.effects import Aliases, Consuming, can_fail, consuming_parameters
from futgen.opt.parts import map_bodies, map_lambdas
from futgen.opt.rules import Facts, rewrite

MAX_ROUNDS = 16

# Expressions whose result may be shared by a later equal one.
_SHAREABLE = (ir.UnOp, ir.BinOp, ir.CmpOp, ir.ConvOp, ir.Index, ir.ArraySize, ir.ArrayLit,
              ir.Iota, ir.Replicate, ir.Reshape, ir.Rearrange, ir.Concat, ir.Copy, ir.Assert,
              ir.Screma)
# Expressions that may move out of a loop or lambda (if their result is a scalar).
_HOISTABLE = (ir.UnOp, ir.BinOp, ir.CmpOp, ir.ConvOp, ir.ArraySize)


def simplify(prog: ir.Program, share_soacs: bool = True) -> ir.Program:
    """`prog` with every function simplified.  Without `share_soacs`, equal
    Scremas are not shared: before fusion, each may fuse into its own
    consumer, which is better than one array both must read."""
    calls = consuming_parameters(prog)
    return ir.Program(tuple(simplify_function(f, calls, share_soacs) for f in prog.functions))


def simplify_function(fun: ir.Function, calls: Consuming | None = None,
                      share_soacs: bool = True) -> ir.Function:
    """`fun` simplified until a round changes nothing (or `MAX_ROUNDS`);
    `calls` says which arguments a call consumes (None: all)."""
    return rounds(fun, lambda f: _Forward(f, calls, share_soacs), Dead, MAX_ROUNDS)


def rounds(fun: ir.Function, forward: Callable[[ir.Function], Settling],
           dead: Callable[[ir.Function, dict[ir.VName, ir.Type]], Dead],
           most: int) -> ir.Function:
    """Rounds of a forward walk and a dead-code walk over `fun`, until one
    changes nothing or `most` have run (this simplifier's and the host
    code's, `futgen.opt.simplify_host`)."""
    for _ in range(most):
        walk = forward(fun)
        fun = walk.function()
        cleanup = dead(fun, walk.facts.types)
        fun = cleanup.function()
        if not (walk.changed or cleanup.changed):
            break
    return fun


def refines(have: ir.Type, want: ir.Type) -> bool:
    """Whether a value of type `have` may stand where `want` was declared:
    the same type, where `want` may leave a size unknown."""
    if isinstance(have, ir.Prim) or isinstance(want, ir.Prim):
        return have == want
    return (have.elem == want.elem and len(have.shape) == len(want.shape)
            and all(w is None or w == h for h, w in zip(have.shape, want.shape)))


class Settling:
    """A simplifier's forward walk over a function (`function` gives the
    result), and what it does with a statement once its operands are
    substituted: the rules, then copy propagation or sharing (each
    simplifier's `propagate` and `share` say where they apply), else the
    statement stays.  Shared by this simplifier and the host code's
    (`futgen.opt.simplify_host`)."""

    facts: Facts
    changed: bool

    def function(self) -> ir.Function:
        raise NotImplementedError

    def stm(self, stm: ir.Stm, out: list[ir.Stm]) -> None:
        raise NotImplementedError

    def propagate(self, stm: ir.Stm) -> bool:
        raise NotImplementedError

    def share(self, stm: ir.Stm) -> bool:
        raise NotImplementedError

    def settle(self, stm: ir.Stm, out: list[ir.Stm]) -> None:
        new = rewrite(stm, self.facts)
        if new is not None:
            self.changed = True
            for s in new:
                self.stm(s, out)
            return
        if self.propagate(stm) or self.share(stm):
            self.changed = True
            return
        out.append(stm)


class _Forward(Settling):
    """One forward walk over a function: propagation, rules, sharing, hoisting."""

    def __init__(self, fun: ir.Function, calls: Consuming | None, share_soacs: bool):
        self.fun = fun
        self.share_soacs = share_soacs
        self.facts = Facts(param_types(fun))
        aliases = Aliases(fun.body, calls)
        # The caller may consume what the function returns: never shared either.
        returned = {se.name for se in fun.body.result if isinstance(se, ir.Var)}
        self.consumed = aliases.consumed | aliases.closure(returned)
        self.subst: dict[ir.VName, ir.SubExp] = {}  # names are unique: one map suffices
        self.avail: ChainMap[Hashable, tuple[ir.Param, ...]] = ChainMap()
        self.changed = False

    def function(self) -> ir.Function:
        body, _ = self.scope(self.fun.body, None)
        return replace(self.fun, body=body)

    def scope(self, body: ir.Body, bound: set[ir.VName] | None) -> tuple[ir.Body, list[ir.Stm]]:
        """`body` simplified, and the statements hoisted out of it: `bound`
        are the names its loop or lambda binds anew each time (None: hoist
        nothing)."""
        self.avail = self.avail.new_child()
        out: list[ir.Stm] = []
        for stm in body.stms:
            self.stm(stm, out)
        self.avail = self.avail.parents
        result = replace_uses(body.result, self.subst)
        if bound is None:
            return ir.Body(tuple(out), result), []
        kept, hoisted, variant = [], [], set(bound)
        for stm in out:
            if self.invariant(stm, variant):
                hoisted.append(stm)
            else:
                kept.append(stm)
                variant.update(p.name for p in stm.pat)
        self.changed |= bool(hoisted)
        return ir.Body(tuple(kept), result), hoisted

    def invariant(self, stm: ir.Stm, variant: set[ir.VName]) -> bool:
        """Whether `stm` may move out of its loop or lambda."""
        return (isinstance(stm.exp, _HOISTABLE)
                and all(isinstance(p.type, ir.Prim) for p in stm.pat)
                and not can_fail(stm.exp, self.facts.types)
                and not free_vars(stm.exp) & variant)

    def stm(self, stm: ir.Stm, out: list[ir.Stm]) -> None:
        """Simplify `stm` into `out` (nothing, if it is propagated or shared)."""
        exp = self.exp(stm.exp, out)
        stm = ir.Stm(replace_uses(stm.pat, self.subst), exp)
        self.learn(stm.pat)
        if isinstance(exp, ir.ArraySize):
            self.facts.nonneg.add(stm.pat[0].name)
        self.settle(stm, out)

    def learn(self, params: tuple[ir.Param, ...]) -> None:
        for p in params:
            self.facts.types[p.name] = p.type

    def exp(self, e: ir.Exp, out: list[ir.Stm]) -> ir.Exp:
        """`e` with its bodies simplified (what they hoist goes to `out`) and
        its operands substituted."""
        match e:
            case ir.If():
                e = map_bodies(e, lambda b: self.scope(b, None)[0])
            case ir.Loop(merge, form, body):
                self.learn(tuple(p for p, _ in merge))
                bound = {p.name for p, _ in merge}
                if isinstance(form, ir.ForLoop):
                    bound.add(form.i)
                    self.facts.types[form.i] = ir.Prim(form.prim)
                    self.facts.nonneg.add(form.i)
                body, hoisted = self.scope(body, bound)
                for s in hoisted:
                    self.stm(s, out)
                e = replace(e, body=body)
            case _:
                e = map_lambdas(e, lambda lam: self.lam(lam, out))
        return replace_uses(e, self.subst, bodies=False)

    def lam(self, lam: ir.Lambda, out: list[ir.Stm]) -> ir.Lambda:
        self.learn(lam.params)
        body, hoisted = self.scope(lam.body, {p.name for p in lam.params})
        for s in hoisted:
            self.stm(s, out)
        return replace(lam, body=body)

    def propagate(self, stm: ir.Stm) -> bool:
        """Copy propagation: after `let y = se`, every `y` is `se`."""
        if not (isinstance(stm.exp, ir.SubExpOp) and len(stm.pat) == 1):
            return False
        (p,) = stm.pat
        se = stm.exp.se
        if isinstance(se, ir.Var) and not refines(self.facts.types[se.name], p.type):
            return False
        self.subst[p.name] = se
        return True

    def share(self, stm: ir.Stm) -> bool:
        """Common subexpressions: whether `stm` repeats an expression whose
        results are in scope (then its names become those); else `stm` is
        remembered for the statements after it."""
        key = self.key(stm)
        if key is None:
            return False
        prev = self.avail.get(key)
        if prev is None:
            self.avail[key] = stm.pat
            return False
        if not all(refines(q.type, p.type) for q, p in zip(prev, stm.pat)):
            return False
        for q, p in zip(prev, stm.pat):
            self.subst[p.name] = ir.Var(q.name)
        return True

    def key(self, stm: ir.Stm) -> Hashable | None:
        """What two statements computing the same values have in common
        (None if `stm`'s values must not be shared)."""
        e = stm.exp
        if not isinstance(e, _SHAREABLE) or any(
                isinstance(p.type, ir.ArrayT) and p.name in self.consumed for p in stm.pat):
            return None
        match e:
            case ir.Screma():
                if not self.share_soacs or any(p.name in self.consumed for p in e.map_lam.params):
                    return None  # not now, or it consumes its input
                return _canonical(e)
            case ir.BinOp(op, prim, x, y) if BINOPS[op].commutative:
                return (op, prim, *sorted((x, y), key=repr))
            case ir.Index() | ir.Reshape() | ir.Assert():
                return replace(e, loc=None)  # where it would have failed: the first one
        return e


def _canonical(e: ir.Exp) -> ir.Exp:
    """`e` with the names it binds renamed in order (negative tags, which no
    program name has), so that copies of one expression compare equal."""
    names = dict.fromkeys(binders(e))
    return substitute(e, {b: ir.VName("", -1 - k) for k, b in enumerate(names)})


class Dead:
    """One backward walk over a function removing what nothing uses (the
    host code's simplifier removes less: `removable` and `trim` say what)."""

    def __init__(self, fun: ir.Function, types: dict[ir.VName, ir.Type]):
        self.fun = fun
        self.counts = use_counts(fun)
        self.types = types  # of every name in `fun`, for `can_fail`
        self.changed = False

    def function(self) -> ir.Function:
        return replace(self.fun, body=self.body(self.fun.body))

    def body(self, body: ir.Body) -> ir.Body:
        kept = []
        for stm in reversed(body.stms):
            if self.removable(stm):
                self.counts.subtract(use_counts(stm))
                self.changed = True
                continue
            stm = self.trim(stm)
            kept.append(ir.Stm(stm.pat, map_bodies(stm.exp, self.body)))
        return ir.Body(tuple(reversed(kept)), body.result)

    def removable(self, stm: ir.Stm) -> bool:
        return (all(self.counts[p.name] <= 0 for p in stm.pat)
                and not can_fail(stm.exp, self.types))

    def trim(self, stm: ir.Stm) -> ir.Stm:
        """`stm` without the values nobody uses, among a Screma's mapped
        arrays or an `if`'s values (at least one value stays)."""
        e = stm.exp
        match e:
            case ir.Screma():
                first = sum(len(o.nes) for o in (*e.scans, *e.reds))
            case ir.If():
                first = 0
            case _:
                return stm
        dead = {k for k in range(first, len(stm.pat)) if self.counts[stm.pat[k].name] <= 0}
        if not dead or len(dead) == len(stm.pat):
            return stm
        self.changed = True

        def live(xs: tuple) -> tuple:
            # What is dropped no longer uses anything (sizes in its types included).
            self.counts.subtract(use_counts(tuple(x for k, x in enumerate(xs) if k in dead)))
            return tuple(x for k, x in enumerate(xs) if k not in dead)

        def cut(b: ir.Body) -> ir.Body:
            return ir.Body(b.stms, live(b.result))

        if isinstance(e, ir.Screma):
            lam = e.map_lam
            e = replace(e, map_lam=ir.Lambda(lam.params, cut(lam.body), live(lam.ret)))
        else:
            e = replace(e, then_=cut(e.then_), else_=cut(e.else_), ret=live(e.ret))
        return ir.Stm(live(stm.pat), e)
