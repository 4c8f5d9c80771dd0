"""Kernel plans: what one SegOp compiles to, for the host code to carry out.

This is the contract between the three parts of code generation:

* `futgen.codegen.cuda` compiles a SegOp statement into CUDA kernels and a
  `KernelPlan`: the device temporaries to allocate, the result arrays, and
  the launches in order, with every kernel argument named;
* `futgen.codegen.host` renders the plan as Python in the generated module
  (calls into the runtime);
* the runtime (`runtime/futgen_runtime`) allocates, launches and checks the
  failure flag.

Kernel calling convention (every kernel, `extern "C" __global__`):

    void NAME(int32_t *failure, int64_t *failure_args, <args in plan order>)

`failure` points to one int32 in device memory (0 = no failure), which
running kernels poll to stop early; a thread that fails does
`if (atomicCAS(failure, 0, CODE) == 0) { failure_args[0..k) = ...;
failure_args[MAX_FAILURE_ARGS] = CODE; }` and returns.  `failure_args` is
host memory the device maps, so the host sees a failure by reading it once
the kernel has finished, without a copy (the runtime's `check`/`sync`).  CODE indexes the program-wide error table (`ErrorSite`), whose
message is a Python format string over the arguments
(`"Index [{0}] out of bounds for array of shape [{1}]."`).  The runtime
passes `failure`/`failure_args` itself; plans list only the other arguments.
Arrays are passed as device pointers to their element type, scalars by
value with their C type, sizes as int64_t; all indexing is 64-bit.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import NamedTuple

from futgen.gpu.ir import MAX_ASSERT_ARGS

# Futhark primitive type -> C type in kernels, and NumPy dtype name on the host.
CTYPES = {
    "i8": "int8_t", "i16": "int16_t", "i32": "int32_t", "i64": "int64_t",
    "u8": "uint8_t", "u16": "uint16_t", "u32": "uint32_t", "u64": "uint64_t",
    "f16": "__half", "f32": "float", "f64": "double", "bool": "bool",
}
DTYPES = {
    "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
    "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64",
    "f16": "float16", "f32": "float32", "f64": "float64", "bool": "bool",
}
MAX_FAILURE_ARGS = MAX_ASSERT_ARGS


@dataclass(frozen=True, slots=True)
class ErrorSite:
    """A run-time check in a kernel: its code, message format and source location."""

    code: int
    message: str  # str.format template over the failure arguments
    loc: str  # "file:line:col" or ""


@dataclass(frozen=True, slots=True)
class KArg:
    """One kernel argument after `failure, failure_args`.

    `kind` is "scalar" (passed by value as `ctype`) or "array" (a device
    pointer to `ctype`).  `value` is the host-side Python expression giving
    it: a variable of the host program (its VName printed, e.g. `xs_0`), a
    temporary of the plan, or an integer expression over those.
    """

    kind: str
    ctype: str
    value: str


@dataclass(frozen=True, slots=True)
class Temp:
    """A device array the host allocates for a plan: name, element type, shape.

    `shape` holds host-side Python expressions (e.g. `("n_1",)`, `("256",)`).
    """

    name: str
    prim: str
    shape: tuple[str, ...]
    zeroed: bool = False  # counters of the one-pass strategies start at 0
    when: str | None = None  # allocated only where launches of this `when` run


@dataclass(frozen=True, slots=True)
class Launch:
    """One kernel launch: `threads` in total (a host expression), `block` per
    block (a number, or a host expression), in `groups` rows of `block`
    threads where that is not 1 (a block of shape `(block, groups)`)."""

    kernel: str
    threads: str
    block: int | str
    args: tuple[KArg, ...]
    shared_bytes: int | str = 0  # dynamic shared memory per block (or a host expression)
    when: str | None = None  # a host condition (over the plan's thresholds): launch if true
    tile_sizes: tuple[str, ...] = ()  # keys of the plan's TileSizes compiled into the kernel
    groups: int | str = 1  # the block's second dimension (intra-block kernels)


@dataclass(frozen=True, slots=True)
class Threshold:
    """A tunable strategy guard: a plan's `when` conditions read `key`.

    The host binds `key` to whether the instance's setting of
    `<function>.<base>_<k>` (default `default`) is at most `par`, a host
    expression of the parallelism the guarded strategy needs, as a version
    guard does (`Tuning.guard`: logged, so the autotuner sees `par`);
    `TUNING_PARAMS` lists it.  `under`: the plan's thresholds (key, branch)
    that must hold for this one to matter (a strategy cascade), which its
    ancestor path records; where they do not, or the host condition
    `requires` (whether the strategy can run at all) is false, the guard is
    not evaluated and `key` is false; where they do and the host condition
    `holds` is true (the strategies it chooses between would not differ in
    a way worth measuring), it is not evaluated and `key` is true.  `par`,
    `requires` and `holds` may read host
    sizes only: guards are bound before the plan's `lets`, which may read
    them.
    """

    key: str
    default: int
    doc: str
    par: str
    under: tuple[tuple[str, bool], ...] = ()
    requires: str | None = None
    holds: str | None = None


def branch_conditions(guards: tuple[tuple[str, bool], ...]) -> list[str]:
    """The host conditions that the thresholds `guards` (key, branch) take
    their branches, as a `Threshold.under` or a launch's path lists them."""
    return [key if branch else f"not {key}" for key, branch in guards]


class TuningParam(NamedTuple):
    """A package's tuning parameter, as TUNING_PARAMS describes it."""

    cls: str  # threshold, tblock_size or tile_size
    default: int
    path: tuple[str, ...]  # the guards above it (`path_entries`)
    doc: str
    extra: Mapping[str, object] = MappingProxyType({})  # the class's further fields

    def described(self) -> dict[str, object]:
        """The parameter as TUNING_PARAMS lists it."""
        return {"class": self.cls, "default": self.default, "path": self.path, "doc": self.doc,
                **self.extra}


@dataclass(frozen=True, slots=True)
class BlockSize:
    """A tunable block size: the host binds `key` to the instance's setting
    of `<function>.<base>_<k>` (class `tblock_size`, default `default`), and
    launches take it as their `block`.  Only kernels whose code does not
    depend on the block size get one (grid-stride loops, no shared memory,
    no per-thread memory sized by the thread count)."""

    key: str
    default: int
    doc: str
    cls: str = "tblock_size"  # or "run_length"
    values: tuple[int, ...] = ()  # a run length's allowed values (autotune tries each)


@dataclass(frozen=True, slots=True)
class TileSize:
    """A tunable tile size: a constant compiled into a kernel, the macro
    `macro` (its `#define` gives `default`), which a package instance sets
    with `-D` where its setting of `<function>.<base>_<k>` (class
    `tile_size`) differs, compiling the kernels again.  `values` are those
    the kernel's code allows (each fits its shared memory, divides its
    loads among the block's threads)."""

    key: str
    default: int
    values: tuple[int, ...]
    doc: str

    @property
    def macro(self) -> str:
        return f"FUTGEN_TILE_{self.key}"


@dataclass(frozen=True, slots=True)
class KernelPlan:
    """Everything the host does for one SegOp statement, in order.

    Bind `lets` (host variables the other parts' expressions read), allocate
    `temps` and `outputs`, run `launches` in order; lets and temps with a
    `when` belong to the launches of that condition, and are bound and
    allocated only where those run (a call pays for the strategy it takes,
    not for every strategy's temporaries); then the
    statement's pattern names are bound to `results`: for each, either an
    output array (`("array", temp_name)`) or a scalar read back from element
    0 of a temp (`("scalar", temp_name)`).
    """

    source: str  # CUDA source of this plan's kernels (no includes)
    temps: tuple[Temp, ...]
    outputs: tuple[Temp, ...]
    launches: tuple[Launch, ...]
    results: tuple[tuple[str, str], ...]
    errors: tuple[ErrorSite, ...] = ()
    thresholds: tuple[Threshold, ...] = ()
    # (host variable, Python expression, `when` as for temps), in order
    lets: tuple[tuple[str, str, str | None], ...] = ()
    block_sizes: tuple[BlockSize, ...] = ()
    tile_sizes: tuple[TileSize, ...] = ()
