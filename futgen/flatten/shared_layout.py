"""Where the arrays of block code live in shared memory.

Block code (the body of a `BLOCKS` SegMap) keeps every array it binds in
the block's dynamic shared memory, so the shared memory a block needs
bounds how many blocks a multiprocessor holds at once.  An intra-block
kernel that is a chain of block operations (LocVolCalib's tridiagonal
solve: a map, a scan, a map, a scan, ... 16 arrays of a row each) keeps
few of its arrays live at any one time, so arrays whose lifetimes do not
overlap share a *slot*.

The lifetimes are counted in the top-level statements of the block code:
an array is live from the statement that binds it to the last statement
that uses it (a use inside an `if` or loop counts at that statement; so
does a binding there: arrays bound in nested code never share with each
other).  Array `y` may take the slot of a dead array `x` when

* both have the same shape and element size (the slots are sized on the
  host, as a sum of products of sizes: equal keys keep that sum exact), and
* a `BLOCK` SegOp ends between `x`'s last use and `y`'s binding: each
  ends with a barrier of the whole block, so no thread still reads `x`
  when any thread writes `y`.  (Scalar statements of block code read
  shared memory with no barrier after them.)

A loop's results are its parameters' memory, so uses of them are uses of
the parameters; the body's results are used at its end (the kernel
stores them as the point's output rows).
"""

from __future__ import annotations

from dataclasses import dataclass

from futgen.core import ir
from futgen.flatten.names import binders, free_vars
from futgen.frontend.types import PRIM_DTYPES
from futgen.gpu.ir import BLOCK, SegMap, SegRed, SegScan, block_shared_arrays

SlotKey = tuple[tuple[ir.SubExp, ...], int]  # (shape, bytes per element)


@dataclass(frozen=True, slots=True)
class SharedLayout:
    """The slots of a block's shared memory and the slot of each array."""

    slots: tuple[SlotKey, ...]
    slot_of: dict[ir.VName, int]

    @staticmethod
    def of(body: ir.Body) -> SharedLayout:
        return _plan(body)


def _plan(body: ir.Body) -> SharedLayout:
    arrays = block_shared_arrays(body)
    alias = _loop_aliases(body)
    born: dict[ir.VName, int] = {}
    for pos, stm in enumerate(body.stms):
        for v in binders(stm):  # nested ones too: bound, for the layout, where `stm` runs
            born.setdefault(v, pos)
    last = dict(born)
    for pos, stm in enumerate(body.stms):
        for v in free_vars(stm, types=False):
            v = alias.get(v, v)
            if v in last:
                last[v] = max(last[v], pos)
    end = len(body.stms)
    for se in body.result:
        if isinstance(se, ir.Var) and alias.get(se.name, se.name) in last:
            last[alias.get(se.name, se.name)] = end
    # barriers[k]: how many BLOCK SegOps (each ending with a barrier) are
    # among the top-level statements before k.
    barriers = [0]
    for stm in body.stms:
        barriers.append(barriers[-1] + _is_block_op(stm.exp))
    slots: list[SlotKey] = []
    holder: list[ir.VName] = []  # the array each slot last went to
    slot_of: dict[ir.VName, int] = {}
    for v, t in sorted(arrays, key=lambda a: born[a[0]]):
        key = (t.shape, PRIM_DTYPES[t.elem].itemsize)
        free = [s for s, k in enumerate(slots) if k == key
                and barriers[born[v]] > barriers[last[holder[s]]]]
        if free:
            slot = free[0]
            holder[slot] = v
        else:
            slot = len(slots)
            slots.append(key)
            holder.append(v)
        slot_of[v] = slot
    return SharedLayout(tuple(slots), slot_of)


def _loop_aliases(body: ir.Body) -> dict[ir.VName, ir.VName]:
    """Each loop result's parameter, at any depth (they share memory)."""
    out: dict[ir.VName, ir.VName] = {}
    for stm in body.stms:
        match stm.exp:
            case ir.Loop(merge, _, inner):
                out.update((r.name, p.name) for r, (p, _) in zip(stm.pat, merge))
                out.update(_loop_aliases(inner))
            case ir.If(_, then_, else_, _):
                out.update(_loop_aliases(then_))
                out.update(_loop_aliases(else_))
    return out


def _is_block_op(e: ir.Exp) -> bool:
    return isinstance(e, SegMap | SegRed | SegScan) and e.level == BLOCK


__all__ = ["SharedLayout", "SlotKey"]
