"""ImpCode: the small imperative kernel IR between GPU IR and CUDA text.

Kernel bodies (core IR in A-normal form) and the strategy skeletons
(grid-stride loops, shared-memory trees, virtualised blocks) are both built
as these nodes; `render` turns them into CUDA C.  Keeping the two steps
apart means the strategies never splice text, and the C spelling of an
operation lives in one place (`scalar.py` for operators, `render.py` for
statements).  Cut down from Futhark's `CodeGen/ImpCode.hs`.

Grammar:

    expr ::= Var name | Lit text | Call fn (expr, ...) | Un op expr
           | Bin op expr expr | Cast ctype expr | Load array expr
           | Cond expr expr expr
    stm  ::= Decl ctype name [expr] | Assign name expr | Store array expr expr
           | If expr stm* stm* | For name lo bound step stm* | While expr stm*
           | Block stm* | Fail code expr* escape | Label name | Sync
           | Shared ctype name size | Comment text | Return
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

# ------------------------------------------------------------ expressions


@dataclass(frozen=True, slots=True)
class Var:
    """A C variable (already a valid C identifier)."""

    name: str


@dataclass(frozen=True, slots=True)
class Lit:
    """A literal or a built-in name, as C text (`1.5f`, `threadIdx.x`)."""

    text: str


@dataclass(frozen=True, slots=True)
class Call:
    """A function call (prelude helper, CUDA math function or intrinsic)."""

    fn: str
    args: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class Un:
    """A prefix C operator (`-`, `!`, `~`)."""

    op: str
    x: Expr


@dataclass(frozen=True, slots=True)
class Bin:
    """An infix C operator; only used where C's semantics are Futhark's."""

    op: str
    x: Expr
    y: Expr


@dataclass(frozen=True, slots=True)
class Cast:
    """A C cast."""

    ctype: str
    x: Expr


@dataclass(frozen=True, slots=True)
class Load:
    """`array[index]` of a global or shared array (index already flat)."""

    array: str
    index: Expr


@dataclass(frozen=True, slots=True)
class Cond:
    """`c ? a : b`."""

    c: Expr
    a: Expr
    b: Expr


Expr = Var | Lit | Call | Un | Bin | Cast | Load | Cond


# ------------------------------------------------------------- statements


@dataclass(frozen=True, slots=True)
class Decl:
    """A local variable; `maybe_unused` for names the source may never read."""

    ctype: str
    name: str
    init: Expr | None = None
    maybe_unused: bool = False


@dataclass(frozen=True, slots=True)
class Assign:
    name: str
    value: Expr


@dataclass(frozen=True, slots=True)
class Store:
    array: str
    index: Expr
    value: Expr


@dataclass(frozen=True, slots=True)
class If:
    cond: Expr
    then: tuple[Stm, ...]
    else_: tuple[Stm, ...] = ()


@dataclass(frozen=True, slots=True)
class For:
    """`for (ctype name = lo; name < bound; name += step)`; `unroll`, if set,
    is the factor nvcc may unroll it by (`#pragma unroll`)."""

    ctype: str
    name: str
    lo: Expr
    bound: Expr
    body: tuple[Stm, ...]
    step: Expr = Lit("1")
    unroll: int | None = None


@dataclass(frozen=True, slots=True)
class While:
    cond: Expr
    body: tuple[Stm, ...]


@dataclass(frozen=True, slots=True)
class Block:
    """A braced scope, so a forward `goto` out of it skips no live declaration."""

    body: tuple[Stm, ...]


@dataclass(frozen=True, slots=True)
class Fail:
    """The failure protocol: record `code` and `args` once, then leave.

    `escape` is a label to jump to (in kernels with barriers, so the thread
    still reaches them), or None to return from the kernel; `flag` a local
    bool set first, which tells the thread's next barrier that it failed.
    """

    code: int
    args: tuple[Expr, ...]
    escape: str | None
    flag: str | None = None


@dataclass(frozen=True, slots=True)
class Label:
    name: str


@dataclass(frozen=True, slots=True)
class Sync:
    """`__syncthreads()`, or another barrier function of no arguments."""

    fn: str = "__syncthreads"


@dataclass(frozen=True, slots=True)
class Shared:
    """A statically sized shared-memory array (16-byte aligned); `size` 0:
    the kernel's dynamic shared memory, sized at launch."""

    ctype: str
    name: str
    size: int


@dataclass(frozen=True, slots=True)
class Comment:
    text: str


@dataclass(frozen=True, slots=True)
class Return:
    pass


Stm = (Decl | Assign | Store | If | For | While | Block | Fail | Label | Sync | Shared | Comment
       | Return)


@dataclass(frozen=True, slots=True)
class KParam:
    """A kernel parameter: a device pointer (`pointer`) or a value."""

    ctype: str
    name: str
    pointer: bool


@dataclass(frozen=True, slots=True)
class Kernel:
    """An `extern "C" __global__` kernel; `failure, failure_args` come first implicitly."""

    name: str
    params: tuple[KParam, ...]
    body: tuple[Stm, ...]
    max_threads: int | None = None  # per block, for `__launch_bounds__`


def walk(stms: tuple[Stm, ...] | list[Stm]) -> Iterator[Stm]:
    """Every statement, nested ones included (pre-order)."""
    for s in stms:
        yield s
        match s:
            case If(_, then, else_):
                yield from walk(then)
                yield from walk(else_)
            case For(body=body) | While(body=body) | Block(body=body):
                yield from walk(body)
