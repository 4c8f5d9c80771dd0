"""Simplification of the GPU IR's host code: its scalar arithmetic, and
arrays made anew in every iteration of a loop.

Flattening writes host code of its own: the parallelism each guard compares,
the bytes of shared memory an intra-block version needs (`BlockFits`), the
sizes of the arrays it allocates.  It builds each from the sizes it starts
from, so the same expressions recur (LocVolCalib's time loop computed 141
scalars a step, most of them equal and none depending on the step), and the
generated package runs every one of them in Python, per call and per
iteration.  This pass, run after flattening, does to the host code's scalars
what `futgen.opt.simplify` does to the core IR:

* **Copy propagation** of scalar variables (`let n = m`: every `n` is `m`).
* **Rewrite rules** (`futgen.opt.rules`: exact constant folding, algebraic
  laws) on scalar operations.
* **Common subexpressions**: a scalar operation computed again where the
  first result is in scope is replaced by that result; so is a `replicate`,
  `iota` or `rearrange` whose result nothing consumes.
* **Hoisting**: a scalar operation that cannot fail and uses nothing bound
  inside a loop body or an `if` branch moves in front of the loop or the
  `if`.  Out of a branch too (unlike the core IR's simplifier): these are a
  few arithmetic operations, cheaper than the Python that runs the branch,
  and the versions' branches compute the same sizes again and again.
* **Invariant arrays out of loops**: a `replicate`, `iota` or `rearrange`
  that uses nothing the loop binds, and that nothing consumes (no in-place update,
  scatter, histogram or call may write it, through any alias), is made once
  in front of the loop instead of once per iteration (LocVolCalib's time
  loop made six such arrays a step, each an allocation and a launch).
  Inside a loop it may leave an `if` branch on its way out (only then:
  made in the loop before the branch, it would be made in vain whenever the
  branch is not taken).
* **Dead code**: scalar operations and such arrays that nobody uses
  (counting uses in kernel code and in types) go.

Otherwise only host statements whose value is a scalar computed by a
`UnOp`, `BinOp`, `CmpOp`, `ConvOp`, `ArraySize` or copy are touched; guards
(which log), `BlockFits`, other array operations and SegOps stay as they
are, where they are.
Kernel code is not simplified (the core IR passes did that before
flattening built it), only renamed where the host names it uses were.
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Hashable
from dataclasses import replace

from futgen_runtime.prims import BINOPS

from futgen.core import ir
from futgen.flatten.names import (
    binders,
    free_vars,
    param_types,
    replace_uses,
)
from futgen.opt.effects import can_fail, consumed_on_host
from futgen.opt.parts import host_stms
from futgen.opt.rules import Facts
from futgen.opt.simplify import Dead, Settling, rounds

_SCALAR_OPS = (ir.UnOp, ir.BinOp, ir.CmpOp, ir.ConvOp, ir.ArraySize, ir.SubExpOp)
# Array operations that make a new array from invariant operands, cannot
# fail, and may be shared, moved out of loops or removed when unused
# (unless something consumes the result).
_ARRAY_OPS = (ir.Replicate, ir.Iota, ir.Rearrange)
MAX_ROUNDS = 8


def simplify_host(prog: ir.Program) -> ir.Program:
    """`prog` (GPU IR) with every function's host code simplified (see the module's text)."""
    return ir.Program(tuple(_simplify_function(f) for f in prog.functions))


def _simplify_function(fun: ir.Function) -> ir.Function:
    # What no round changes, found once: the names never renamed, and those
    # something may consume (rounds only remove names).
    fixed, consumed = _kept_core_binders(fun.body), consumed_on_host(fun)
    return rounds(fun, lambda f: _Forward(f, fixed, consumed), _Dead, MAX_ROUNDS)


def _is_scalar_op(stm: ir.Stm) -> bool:
    return isinstance(stm.exp, _SCALAR_OPS) and all(isinstance(p.type, ir.Prim) for p in stm.pat)


class _Forward(Settling):
    """One walk over a function's host code: propagation, rules, sharing,
    hoisting.  Uses of renamed variables are substituted in one pass at the
    end, kernel code and types included (names are unique)."""

    def __init__(self, fun: ir.Function, fixed: set[ir.VName], consumed: set[ir.VName]):
        self.fun = fun
        self.facts = Facts(param_types(fun))
        self.subst: dict[ir.VName, ir.SubExp] = {}
        self.avail: ChainMap[Hashable, ir.VName] = ChainMap()
        # Names a SegOp's `host` statement (the core code it implements, for
        # the CPU backend) binds may be bound in host code too: they are never
        # renamed, since the final substitution reaches binders as well.
        self.fixed = fixed
        self.consumed = consumed  # arrays never shared, moved or made once
        # Per enclosing loop, innermost last: the names its iterations bind.
        self.loops: list[set[ir.VName]] = []
        self.changed = False

    def function(self) -> ir.Function:
        body, _ = self.scope(self.fun.body, None)
        fun = replace(self.fun, body=body)
        return replace_uses(fun, self.resolved()) if self.subst else fun

    def resolved(self) -> dict[ir.VName, ir.SubExp]:
        """The substitution with its chains followed (a name shared inside a
        branch may itself be shared once hoisted out of it)."""
        out = {}
        for name, se in self.subst.items():
            while isinstance(se, ir.Var) and se.name in self.subst:
                se = self.subst[se.name]
            out[name] = se
        return out

    def scope(self, body: ir.Body, bound: set[ir.VName] | None) -> tuple[ir.Body, list[ir.Stm]]:
        """`body` simplified, and what moves out of it: `bound` are the names
        its loop binds anew each time (empty for a branch; None: nothing moves)."""
        self.avail = self.avail.new_child()
        out: list[ir.Stm] = []
        for stm in body.stms:
            self.stm(stm, out)
        self.avail = self.avail.parents
        if bound is None:
            return ir.Body(tuple(out), body.result), []
        kept, hoisted, variant = [], [], set(bound)
        for stm in out:
            if self.movable(stm) and not free_vars(stm.exp) & variant:
                hoisted.append(stm)
            else:
                kept.append(stm)
                variant.update(p.name for p in stm.pat)
        self.changed |= bool(hoisted)
        return ir.Body(tuple(kept), body.result), hoisted

    def movable(self, stm: ir.Stm) -> bool:
        """Whether `stm` may leave its loop body or branch (if invariant)."""
        if _is_scalar_op(stm):
            return not can_fail(stm.exp, self.facts.types)
        # An array leaves a branch only on its way out of the loop: made
        # before the branch but inside the loop, it would be made in vain
        # whenever the branch is not taken.
        return (bool(self.loops) and self.fresh_array(stm)
                and not free_vars(stm.exp) & self.loops[-1])

    def fresh_array(self, stm: ir.Stm) -> bool:
        """Whether `stm` makes an array by an `_ARRAY_OPS` that nothing consumes."""
        return (isinstance(stm.exp, _ARRAY_OPS) and len(stm.pat) == 1
                and stm.pat[0].name not in self.consumed | self.fixed)

    def stm(self, stm: ir.Stm, out: list[ir.Stm]) -> None:
        for p in stm.pat:
            self.facts.types[p.name] = p.type
        match stm.exp:
            case ir.If(_, then_, else_, _):
                then_, moved = self.scope(then_, set())
                else_, moved_else = self.scope(else_, set())
                for s in (*moved, *moved_else):
                    self.stm(s, out)
                out.append(replace(stm, exp=replace(stm.exp, then_=then_, else_=else_)))
                return
            case ir.Loop(merge, form, body):
                bound = {p.name for p, _ in merge}
                if isinstance(form, ir.ForLoop):
                    bound.add(form.i)
                    self.facts.types[form.i] = ir.Prim(form.prim)
                for p, _ in merge:
                    self.facts.types[p.name] = p.type
                self.loops.append(bound | set(binders(body)))
                body, moved = self.scope(body, bound)
                self.loops.pop()
                for s in moved:
                    self.stm(s, out)
                out.append(replace(stm, exp=replace(stm.exp, body=body)))
                return
        if self.fresh_array(stm):
            stm = replace(stm, exp=replace_uses(stm.exp, self.subst))
            if self.share(stm):
                self.changed = True
                return
        if not _is_scalar_op(stm) or stm.pat[0].name in self.fixed:
            out.append(stm)
            return
        stm = replace(stm, exp=replace_uses(stm.exp, self.subst))
        self.settle(stm, out)

    def propagate(self, stm: ir.Stm) -> bool:
        """Copy propagation of a variable (constants stay bound: host code
        may name a scalar where only a variable can stand)."""
        e = stm.exp
        if not (isinstance(e, ir.SubExpOp) and isinstance(e.se, ir.Var)
                and self.facts.types.get(e.se.name) == stm.pat[0].type):
            return False
        self.subst[stm.pat[0].name] = e.se
        return True

    def share(self, stm: ir.Stm) -> bool:
        """Common subexpressions: whether `stm` repeats a scalar operation,
        or an unconsumed `_ARRAY_OPS` array, whose result is in scope (else
        it is remembered)."""
        e = stm.exp
        if isinstance(e, ir.SubExpOp) or len(stm.pat) != 1:
            return False
        key: Hashable = e
        if isinstance(e, ir.BinOp) and BINOPS[e.op].commutative:
            key = (e.op, e.prim, *sorted((e.x, e.y), key=repr))
        (p,) = stm.pat
        prev = self.avail.get(key)
        if prev is None:
            self.avail[key] = p.name
            return False
        if self.facts.types.get(prev) != p.type:  # an array whose sizes are named otherwise
            return False
        self.subst[p.name] = ir.Var(prev)
        return True


def _kept_core_binders(body: ir.Body) -> set[ir.VName]:
    """The names bound inside the `host` statements of `body`'s SegOps."""
    return {v for stm in host_stms(body) if getattr(stm.exp, "host", None) is not None
            for v in binders(stm.exp.host)}


class _Dead(Dead):
    """One backward walk removing the scalar operations, and the arrays made
    by `_ARRAY_OPS`, that nobody uses (in host code: kernel code as it is)."""

    def removable(self, stm: ir.Stm) -> bool:
        return ((_is_scalar_op(stm) or isinstance(stm.exp, _ARRAY_OPS))
                and super().removable(stm))

    def trim(self, stm: ir.Stm) -> ir.Stm:
        return stm
