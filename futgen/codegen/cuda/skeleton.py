"""Strategy skeletons: kernels written as CUDA templates, filled per program.

Each strategy (reduction, scan, the segmented reductions) is a Jinja
template in `templates/cuda/`, written as one would write the kernel by
hand, with CUB's block and warp collectives.  This module renders the
per-program parts into its slots:

* the **value type** of the operator: its primitive C type when it has one
  component (so CUB's single-word fast paths apply), else a struct with
  fields `f0, f1, ...`; templates name a component of value `v` by a field
  pattern with `@` for `v` (`"@"` or `"@.f0"`);
* the **operator** as a functor (`operator()(a, b)`), lowered from the
  SegBinOps' lambdas; it holds the failure pointers and whatever host
  scalars the lambdas use, so a template constructs it once per kernel;
* the **element**: the SegOp body at flat index `i` (a C variable of the
  template), storing the reduced components into `x` and writing map-out
  values; a failed check jumps past it (every thread must reach the
  collectives), and the host reports the failure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import jinja2

from futgen.codegen.cuda import imp, render
from futgen.codegen.cuda.common import BLOCK, SegCompile, decompose, pointer
from futgen.codegen.cuda.imp import Lit
from futgen.codegen.cuda.lower import KernelLowering
from futgen.codegen.plan import CTYPES, KArg, Temp
from futgen.codegen.resources import templates_dir
from futgen.core import ir
from futgen.gpu.ir import SegBinOp, SegRed, SegScan

ITEMS = 8  # elements per thread per tile: enough independent loads in flight


@dataclass(frozen=True)
class ValueType:
    """The C type of one operator value and how to name its components."""

    name: str
    ctypes: tuple[str, ...]
    fields: tuple[str, ...]  # C patterns, `@` standing for the value
    source: str  # the struct's definition, or ""

    def field(self, value: str, k: int) -> str:
        return self.fields[k].replace("@", value)


def value_type(sc: SegCompile, prims: Sequence[str]) -> ValueType:
    ctypes = tuple(CTYPES[p] for p in prims)
    if len(ctypes) == 1:
        return ValueType(ctypes[0], ctypes, ("@",), "")
    name = sc.fresh("value")
    members = " ".join(f"{c} f{k};" for k, c in enumerate(ctypes))
    return ValueType(name, ctypes, tuple(f"@.f{k}" for k in range(len(ctypes))),
                     f"struct {name} {{ {members} }};\n")


@dataclass(frozen=True)
class Functor:
    """An operator as a C++ functor type and the expression that builds it."""

    name: str
    source: str
    init: str


def operator_functor(sc: SegCompile, kernel: KernelLowering, ops: Sequence[SegBinOp],
                     vt: ValueType) -> Functor:
    """The operators `ops`, applied in turn to their slices of the value.

    The lambdas are lowered apart from the kernel, so the host scalars they
    use are known; they become the functor's members and the kernel's
    parameters alike.
    """
    low = KernelLowering(sc.types, sc.errors, sc.fresh)
    name = sc.fresh("operator")
    stms: list[imp.Stm] = []
    k = 0
    for o in ops:
        width = len(o.nes)
        comps = range(k, k + width)
        xs = [Lit(vt.field("a", j)) for j in comps]
        ys = [Lit(vt.field("b", j)) for j in comps]
        # A later operator reads `a`'s own slice, so results go to `r` only.
        bindings = list(zip(o.lam.params, [*xs, *ys], strict=True))
        stms += low.region(bindings, o.lam.body, [vt.field("r", j) for j in comps],
                           sc.fresh("operator_failed"))
        k += width
    members = [("int32_t *", "failure"), ("int64_t *", "failure_args")]
    for cname, (param, arg) in low.params.items():
        kernel.params.setdefault(cname, (param, arg))
        members.append((f"{param.ctype} *" if param.pointer else f"{param.ctype} ", cname))
    source = (f"struct {name} {{\n"
              + "".join(f"  {t}{m};\n" for t, m in members)
              + f"  __device__ __forceinline__ {vt.name} operator()(const {vt.name} &a, "
              f"const {vt.name} &b) const\n  {{\n    {vt.name} r;\n"
              + "\n".join(render.stms(stms, 2)) + "\n"
              + "    return r;\n  }\n};\n")
    return Functor(name, source, f"{name}{{{', '.join(m for _, m in members)}}}")


def neutral(low: KernelLowering, ops: Sequence[SegBinOp], vt: ValueType) -> str:
    """The neutral value, as a C expression of the value type."""
    values = [render.expr(low.subexp(ne)) for o in ops for ne in o.nes]
    if len(values) == 1:
        return values[0]
    return f"{vt.name}{{{', '.join(values)}}}"


def element(sc: SegCompile, low: KernelLowering, op: SegRed | SegScan, vt: ValueType,
            mapouts: Sequence[Temp], depth: int) -> str:
    """The body at flat index `i`: components into `x`, map-out values stored.

    In a segmented space the template also names the `segment` and the
    position `j` in it, so no element pays for a 64-bit division by the
    segment size.  Rendered once per use in a template, so each copy has
    its own labels.
    """
    dims = [low.subexp(d) for d in op.space.dims]
    ys = [sc.fresh("mapped") for _ in mapouts]
    i = imp.Var("i")
    if len(dims) == 1:
        stms: list[imp.Stm] = decompose(low, i, op.space.gtids, dims)
    else:
        stms = decompose(low, imp.Var("segment"), op.space.gtids[:-1], dims[:-1])
        stms.append(imp.Decl("int64_t", low.bind(op.space.gtids[-1], ir.Prim("i64")),
                             imp.Var("j"), True))
    stms += [imp.Decl(CTYPES[t.prim], y) for t, y in zip(mapouts, ys)]
    stms += low.region((), op.body, [*(vt.field("x", k) for k in range(len(vt.fields))), *ys],
                       sc.fresh("element_failed"))
    stms += [imp.Store(pointer(low, o), i, imp.Var(y)) for o, y in zip(mapouts, ys)]
    return "\n".join(render.stms([imp.Block(tuple(stms))], depth))


def operator_slots(sc: SegCompile, low: KernelLowering, op: SegRed | SegScan,
                   red: Sequence[str], mapouts: Sequence[Temp], depth: int,
                   flagged: bool = False, vectors: bool = False) -> dict[str, object]:
    """The slots every reduction and scan skeleton has; the value type and
    the functor go into the plan's source ahead of the kernel.

    `flagged` lifts the operator to values with a segment-head flag (a
    segmented scan run as one scan over all points): `(a, x) . (b, y) =
    (a | b, b ? y : x . y)`, associative when `.` is.  The value is then a
    struct `{bool head; V v;}`; the template sets `head`.

    `vectors` adds a copy of the element for a full tile read in runs of
    four consecutive elements per thread (`element_vec`) and the arrays the
    element reads and writes (`arrays`: ctype, name): where they are all
    16-byte aligned the template rebinds them as such, so that nvcc loads
    and stores each run as one vector."""
    vt = value_type(sc, red)
    functor = operator_functor(sc, low, op.ops, vt)
    sc.sources.append(vt.source + functor.source)
    ne = neutral(low, op.ops, vt)
    if flagged:
        vt, functor, ne = _flagged(sc, vt, functor, ne)
    slots: dict[str, object] = {
        "block": BLOCK, "items": ITEMS, "value": vt.name, "op": functor.name,
        "op_init": functor.init, "fields": vt.fields, "ctypes": vt.ctypes,
        "neutral": ne, "commutative": all(o.commutative for o in op.ops),
        "element_full": element(sc, low, op, vt, mapouts, depth),
        "element_tail": element(sc, low, op, vt, mapouts, depth),
        "element_vec": "", "arrays": []}
    if vectors:
        slots["element_vec"] = element(sc, low, op, vt, mapouts, depth + 1)
        slots["arrays"] = [{"ctype": p.ctype, "name": p.name}
                           for p, _ in low.params.values() if p.pointer]
    return slots


def _flagged(sc: SegCompile, vt: ValueType, functor: Functor,
             ne: str) -> tuple[ValueType, Functor, str]:
    """The value type, operator and neutral value lifted to segment-head flags."""
    value, op = sc.fresh("flagged_value"), sc.fresh("flagged_operator")
    source = (f"struct {value} {{ bool head; {vt.name} v; }};\n"
              f"struct {op} {{\n  {functor.name} op;\n"
              f"  __device__ __forceinline__ {value} operator()(const {value} &a, "
              f"const {value} &b) const\n  {{\n"
              f"    return b.head ? b : {value}{{a.head, op(a.v, b.v)}};\n  }}\n}};\n")
    sc.sources.append(source)
    lifted = ValueType(value, vt.ctypes, tuple(f.replace("@", "@.v") for f in vt.fields), "")
    return lifted, Functor(op, "", f"{op}{{{functor.init}}}"), f"{value}{{false, {ne}}}"


def kernel_params(low: KernelLowering) -> str:
    """The kernel's parameter list, after the failure pointers (plan.py's convention)."""
    params = ["int32_t *failure", "int64_t *failure_args"]
    params += [f"{p.ctype} *{p.name}" if p.pointer else f"{p.ctype} {p.name}"
               for p, _ in low.params.values()]
    return ", ".join(params)


def kernel_args(low: KernelLowering) -> tuple[KArg, ...]:
    return tuple(a for _, a in low.params.values())


@cache
def _environment() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(templates_dir())),
                              trim_blocks=True, lstrip_blocks=True,
                              keep_trailing_newline=True, undefined=jinja2.StrictUndefined)


def render_skeleton(template: str, **slots: object) -> str:
    """One strategy's kernels from `templates/cuda/<template>.cu.j2`."""
    return _environment().get_template(f"cuda/{template}.cu.j2").render(**slots)
