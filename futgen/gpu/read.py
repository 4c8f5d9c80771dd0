"""A reader for the printed GPU IR (`futgen dump --ir flatten`): the core
IR's reader (`futgen.core.read`) plus what `futgen.gpu.pretty` adds, the
SegOps, `scratch` and the version guards' `threshold(...) <= par`, so that
`pretty(read_program(pretty(p))) == pretty(p)` for GPU IR as well.

The printer leaves out a SegOp's `host` statement (the core statement a
SegMap with private arrays, a SegHist or a SegScatter keeps for the CPU
backend) and a SegMap's `host_before`, so a SegOp read back has none: the
GPU IR interpreter and the checker need none, the CPU backend's code
generator does.
"""

from __future__ import annotations

from collections.abc import Callable

from futgen.core import ir
from futgen.core.read import Reader
from futgen.gpu.ir import (
    BlockFits,
    Scratch,
    SegBinOp,
    SegHist,
    SegMap,
    SegRed,
    SegScan,
    SegScatter,
    SegSpace,
    ThresholdCmp,
)


def read_program(text: str, file: str = "<ir>") -> ir.Program:
    """The GPU IR program that `futgen.gpu.pretty` printed as `text`."""
    return GpuReader(text, file).program()


class GpuReader(Reader):
    """The core reader plus the GPU IR's expressions (`GPU_KEYWORDS`)."""

    def exp(self) -> ir.Exp:
        tok = self.peek()
        rule = GPU_KEYWORDS.get(tok.text) if tok.kind == "word" else None
        if rule is None:
            return super().exp()
        self.next()
        return rule(self)

    def level(self) -> str:
        tok = self.next()
        if tok.kind != "word":
            raise self.error("a level (grid, ...)", tok)
        return tok.text

    def space(self) -> SegSpace:
        """`(gtid_5 < n_1, ...)`."""
        points = self.sequence(self.point)
        return SegSpace(tuple(g for g, _ in points), tuple(d for _, d in points))

    def point(self) -> tuple[ir.VName, ir.SubExp]:
        gtid = self.vname()
        self.expect("<")
        return gtid, self.subexp()

    def kernel(self) -> tuple[tuple[ir.Type, ...], ir.Body]:
        """`: (types)` and the body that returns values of them."""
        self.expect(":")
        ret = self.types()
        return ret, self.body()

    def seg_operators(self, *words: str) -> tuple[SegBinOp, ...]:
        """`word (nes) lam` while the next word is one of `words` (a word
        ending in `_comm` marks a commutative operator)."""
        ops = []
        while any(self.at(w) for w in words):
            commutative = self.next().text.endswith("_comm")
            nes, lam = self.operator()
            ops.append(SegBinOp(lam, nes, commutative))
        return tuple(ops)

    def segmap(self) -> SegMap:
        level, space = self.level(), self.space()
        return SegMap(level, space, *self.kernel())

    def segred(self) -> SegRed:
        level, space = self.level(), self.space()
        ops = self.seg_operators("reduce", "reduce_comm")
        return SegRed(level, space, ops, *self.kernel())

    def segscan(self) -> SegScan:
        level, space = self.level(), self.space()
        ops = self.seg_operators("scan", "scan_comm")
        return SegScan(level, space, ops, *self.kernel())

    def seghist(self) -> SegHist:
        level, space = self.level(), self.space()
        ops = []
        while self.accept("hist"):
            dests = [self.vname()]
            while self.accept(","):
                dests.append(self.vname())
            nes, lam = self.operator()
            ops.append(ir.HistOp(tuple(dests), nes, lam))
        return SegHist(level, space, tuple(ops), *self.kernel(), host=None)

    def segscatter(self) -> SegScatter:
        level, space = self.level(), self.space()
        self.expect("into")
        dests = [self.scatter_dest()]
        while self.accept(","):
            dests.append(self.scatter_dest())
        return SegScatter(level, space, tuple(dests), *self.kernel(), host=None)

    def scratch(self) -> Scratch:
        shape = self.subexps()
        return Scratch(self.prim(), shape)

    def threshold(self) -> ThresholdCmp:
        """`threshold(name, default 32768 under (!a b)) <= par`."""
        self.expect("(")
        name = self.raw(",", "a threshold's name")
        self.expect(",")
        self.expect("default")
        default = self.integer()
        path = []
        if self.accept("under"):
            self.expect("(")
            while self.next_char() != ")":
                entry = self.raw(")", "a guard")
                path.append((entry.lstrip("!"), not entry.startswith("!")))
            self.expect(")")
        self.expect(")")
        self.expect("<=")
        return ThresholdCmp(name, self.subexp(), tuple(path), default)

    def block_fits(self) -> BlockFits:
        """`block_fits bytes`."""
        return BlockFits(self.subexp())


# The GPU IR's expressions that start with a keyword, and the rule reading
# the rest; a new kind of SegOp adds its rule here.
GPU_KEYWORDS: dict[str, Callable[[GpuReader], ir.Exp]] = {
    "segmap": GpuReader.segmap,
    "segred": GpuReader.segred,
    "segscan": GpuReader.segscan,
    "seghist": GpuReader.seghist,
    "segscatter": GpuReader.segscatter,
    "scratch": GpuReader.scratch,
    "threshold": GpuReader.threshold,
    "block_fits": GpuReader.block_fits,
}


__all__ = ["GPU_KEYWORDS", "GpuReader", "read_program"]
