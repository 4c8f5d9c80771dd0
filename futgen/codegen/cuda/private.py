"""Thread-private arrays of a SegMap kernel (`futgen.gpu.ir`'s private memory).

Every statement that makes a private array (`Scratch`, `Replicate`, a loop
parameter or `if` result that needs its own memory) gets one device buffer
for all threads, allocated by the host before the launch.  Element `j` (in
row-major order) of thread `t`'s array lives at `buf[j * stride + t]`, where
`stride` is the number of threads launched, so the threads of a warp that
touch the same element touch consecutive words (coalesced), as in Futhark's
private memory.

A buffer is reused, not copied, where the program allows it: `Update` writes
in place (uniqueness types promise that the array updated is dead), and a
loop parameter takes over its initial array's buffer when that array is used
nowhere else and was made in the same iteration scope.  Everything else
copies, element by element.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from futgen.codegen.cuda import imp
from futgen.codegen.cuda.imp import Bin, Expr, Lit, Stm
from futgen.core import ir
from futgen.flatten.names import use_counts


@dataclass(frozen=True, slots=True)
class Buffer:
    """A private array's memory: the kernel pointer, element type and shape."""

    ptr: str
    prim: str
    shape: tuple[ir.SubExp, ...]


ZERO = Lit("(int64_t)0")

Alloc = Callable[[str, tuple[ir.SubExp, ...]], str]  # (prim, shape) -> kernel pointer name


class PrivateMemory:
    """The private buffers of one kernel and the rules for sharing them.

    `alloc` asks the plan for a new buffer; `lane` and `lanes` are the
    kernel expressions of the thread's index and of the number of threads.
    """

    def __init__(self, body: ir.Body, alloc: Alloc, lane: Expr, lanes: Expr):
        self.alloc = alloc
        self.lane = lane
        self.lanes = lanes
        self.uses = use_counts(body)
        self.arrays: dict[ir.VName, Buffer] = {}
        self.scope: dict[ir.VName, int] = {}  # loop depth at which an array was bound
        self.depth = 0

    def new(self, v: ir.VName, t: ir.ArrayT) -> Buffer:
        buf = Buffer(self.alloc(t.elem, t.shape), t.elem, t.shape)  # type: ignore[arg-type]
        self.bind(v, buf)
        return buf

    def bind(self, v: ir.VName, buf: Buffer) -> None:
        self.arrays[v] = buf
        self.scope[v] = self.depth

    def reusable(self, se: ir.SubExp) -> bool:
        """Whether a loop may take over the buffer of its initial array `se`."""
        return (isinstance(se, ir.Var) and self.uses[se.name] == 1
                and self.scope.get(se.name) == self.depth)

    def at(self, buf: Buffer, flat: Expr) -> Expr:
        """The position of element `flat` of this thread's array in `buf`."""
        return Bin("+", Bin("*", flat, self.lanes), self.lane)

    def load(self, buf: Buffer, flat: Expr) -> Expr:
        """Element `flat` of the array in `buf`."""
        return imp.Load(buf.ptr, self.at(buf, flat))

    def store(self, buf: Buffer, flat: Expr, value: Expr) -> Stm:
        """`value` into element `flat` of the array in `buf`."""
        return imp.Store(buf.ptr, self.at(buf, flat), value)

    def copy(self, dst: Buffer, src: Buffer, size: Expr, fresh: Callable[[str], str],
             offset: Expr = ZERO) -> list[Stm]:
        """`dst[offset + j] = src[j]` for the `size` elements of `src`."""
        if dst.ptr == src.ptr and offset == ZERO:
            return []
        j = fresh("j")
        store = self.store(dst, Bin("+", offset, imp.Var(j)), self.load(src, imp.Var(j)))
        return [imp.For("int64_t", j, ZERO, size, (store,))]

    def fill(self, dst: Buffer, size: Expr, value: Expr,
             fresh: Callable[[str], str]) -> list[Stm]:
        j = fresh("j")
        return [imp.For("int64_t", j, ZERO, size, (self.store(dst, imp.Var(j), value),))]


def row_major(idx: Sequence[Expr], dims: Sequence[Expr]) -> Expr:
    """The flat index of `idx` in an array of shape `dims` (row-major; the
    first dimension's size is not needed)."""
    flat = idx[0]
    for i, d in zip(idx[1:], dims[1:]):
        flat = Bin("+", Bin("*", flat, d), i)
    return flat


def product(xs: Sequence[Expr]) -> Expr:
    out: Expr = Lit("(int64_t)1")
    for x in xs:
        out = x if out == Lit("(int64_t)1") else Bin("*", out, x)
    return out
