"""Reads that cross a SegMap's threads, which shared-memory tiles make coalesced.

Consecutive threads of a GRID SegMap run consecutive values of its innermost
index `b`.  A read `x[..., b + c, a]`, whose last index is the next index
out, `a`, and whose second to last is `b` (plus a small constant: a
stencil's neighbour), reads a row of `x` apart from one thread to the next,
so every thread of a warp fetches a sector of its own.  Such reads come
from a transposition read through (`futgen.opt.rearranges`) or from the
program's own column accesses (LocVolCalib's implicit y step reads both).

`transposed_reads` finds them; the CUDA backend runs such a SegMap in tiles
of TILE x TILE points of `(a, b)` (`futgen.codegen.cuda.transposed`): a
block loads the tile's rows of each `x` along `a`, coalesced, into shared
memory, `HALO` rows beyond it on either side where a stencil reads them,
then runs its points with `b` innermost, reading `x` from there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from futgen.core import ir
from futgen.flatten.names import binders
from futgen.gpu.ir import GRID, SegMap, binds_arrays
from futgen.opt.parts import code_bodies

TILE = 32  # points per side of a tile
HALO = 2  # the largest offset from `b` a tiled read may have
MAX_TILES = 4  # arrays a kernel stages (at most 36 x 33 x 8 bytes each)


@dataclass(frozen=True)
class TileRead:
    """The reads of `arr` at `lead` (the indices before the last two, the
    same at every point of a tile) that a tile of `arr` serves; `offsets`
    maps each name the reads use as their second-to-last index to its
    offset from `b`, `columns` the names equal to `a`, `copies` those equal
    to an outer thread index (`lead` names the index itself)."""

    arr: ir.VName
    lead: tuple[ir.SubExp, ...]
    halo: int
    offsets: Mapping[ir.VName, int]
    columns: frozenset[ir.VName]
    copies: Mapping[ir.VName, ir.VName]

    def serves(self, arr: ir.VName, sl: tuple[ir.DimIndex, ...]) -> int | None:
        """The offset from `b` of read `arr[sl]` if this tile serves it."""
        if arr != self.arr or len(sl) != len(self.lead) + 2:
            return None
        *lead, row, col = (d.i for d in sl)  # type: ignore[union-attr]
        if _original(lead, self.copies) != self.lead or not (isinstance(row, ir.Var)
                                                             and isinstance(col, ir.Var)):
            return None
        c = self.offsets.get(row.name)
        return c if col.name in self.columns and c is not None and abs(c) <= self.halo else None


def transposed_reads(op: SegMap) -> tuple[TileRead, ...]:
    """The tiles that serve `op`'s transposed reads (none where `op` is not a
    GRID SegMap of scalars over two or more dimensions without private
    arrays), at most MAX_TILES."""
    if (op.level != GRID or len(op.space.gtids) < 2 or binds_arrays(op.body)
            or not all(isinstance(t, ir.Prim) for t in op.ret)):
        return ()
    *outer, a, b = op.space.gtids
    local = set(binders(op.body))
    offsets: dict[ir.VName, int] = {b: 0}
    columns = {a}
    copies = {g: g for g in outer}
    groups: dict[tuple[ir.VName, tuple[ir.SubExp, ...]], int] = {}

    def invariant(se: ir.SubExp) -> bool:
        return not isinstance(se, ir.Var) or se.name in copies or se.name not in local | {a, b}

    def walk(body: ir.Body) -> None:
        for stm in body.stms:
            for inner in code_bodies(stm.exp):
                walk(inner)
            if len(stm.pat) != 1:
                continue
            v = stm.pat[0].name
            match stm.exp:
                case ir.SubExpOp(ir.Var(w)) if w in columns:
                    columns.add(v)
                case ir.SubExpOp(ir.Var(w)) if w in copies:
                    copies[v] = copies[w]
                case ir.SubExpOp(ir.Var(w)) if w in offsets:
                    offsets[v] = offsets[w]
                case ir.BinOp("+" | "-" as o, "i64", ir.Var(w), ir.Constant(c)) if w in offsets:
                    offsets[v] = offsets[w] + (int(c) if o == "+" else -int(c))
                case ir.BinOp("+", "i64", ir.Constant(c), ir.Var(w)) if w in offsets:
                    offsets[v] = offsets[w] + int(c)
                case ir.Index(arr, sl) if (
                        arr not in local and len(sl) >= 2
                        and isinstance(stm.pat[0].type, ir.Prim)
                        and all(isinstance(d, ir.DimFix) for d in sl)):
                    *lead, row, col = (d.i for d in sl)  # type: ignore[union-attr]
                    if (isinstance(row, ir.Var) and isinstance(col, ir.Var)
                            and col.name in columns and abs(offsets.get(row.name, HALO + 1)) <= HALO
                            and all(invariant(se) for se in lead)):
                        key = (arr, _original(lead, copies))
                        groups[key] = max(groups.get(key, 0), abs(offsets[row.name]))

    walk(op.body)
    return tuple(TileRead(arr, lead, halo, dict(offsets), frozenset(columns), dict(copies))
                 for (arr, lead), halo in list(groups.items())[:MAX_TILES])


def _original(lead: list[ir.SubExp], copies: Mapping[ir.VName, ir.VName]
              ) -> tuple[ir.SubExp, ...]:
    """`lead` with copies of outer thread indices replaced by the indices."""
    return tuple(ir.Var(copies[se.name]) if isinstance(se, ir.Var) and se.name in copies
                 else se for se in lead)


def tiled_arrays(op: SegMap) -> set[ir.VName]:
    """The arrays every read of which in `op` a tile serves."""
    tiles = transposed_reads(op)
    out = {t.arr for t in tiles}

    def walk(body: ir.Body) -> None:
        for stm in body.stms:
            for inner in code_bodies(stm.exp):
                walk(inner)
            e = stm.exp
            if isinstance(e, ir.Index) and e.arr in out and not any(
                    t.serves(e.arr, e.slice) is not None for t in tiles):
                out.discard(e.arr)

    walk(op.body)
    return out
