"""A pretty-printer for the GPU IR (`futgen dump --ir gpu`).

Everything that is core IR prints exactly as `futgen.core.pretty` prints it;
this module adds the SegOps, in the format shown in `futgen.gpu.ir`:

    segred grid (gtid_5 < n_1, ...)
      reduce (0.0f32)
        \\(a_2: f32, b_3: f32) : (f32) -> { ... }
      : (f32)
    { ...kernel body... }

(`reduce_comm`, `scan_comm`: the operator is commutative).  A version
guard prints as

    let (suff_outer_par_9: bool) =
      threshold(main.suff_outer_par_0, default 32768) <= par_8

It subclasses the core printer, so bodies of host-level `If` and `Loop`
(which may hold SegOps) print through it as well.
"""

from __future__ import annotations

from futgen.core import ir
from futgen.core.pretty import INDENT, Printer, _ses, _types, subexp
from futgen.gpu.ir import (
    GRID,
    BlockFits,
    Scratch,
    SegHist,
    SegMap,
    SegOp,
    SegRed,
    SegScan,
    SegScatter,
    SegSpace,
    ThresholdCmp,
    path_text,
)


def pretty(
    node: ir.Program | ir.Function | ir.Body | ir.Exp | SegOp,
) -> str:
    """The text of a GPU IR program, function, body or expression."""
    return GpuPrinter().text(node)


def space_text(space: SegSpace) -> str:
    """`(gtid_5 < n_1, gtid_6 < 4i64)`."""
    return (
        "("
        + ", ".join(f"{g} < {subexp(d)}" for g, d in zip(space.gtids, space.dims))
        + ")"
    )


class GpuPrinter(Printer):
    """The core printer plus SegOps."""

    def exp(self, e, depth: int) -> list[str]:
        pad = INDENT * depth
        match e:
            case Scratch(prim, shape):
                return [f"{pad}scratch {_ses(shape)} {prim}"]
            case SegMap(level, space, ret, body):
                return [
                    f"{pad}segmap {level} {space_text(space)}",
                    f"{pad}{INDENT}: {_types(ret)}",
                    *self.body(body, depth),
                ]
            case SegRed(level, space, ops, ret, body) | SegScan(
                level, space, ops, ret, body
            ):
                kind = "segred" if isinstance(e, SegRed) else "segscan"
                lines = [f"{pad}{kind} {level} {space_text(space)}"]
                for op in ops:
                    word = ("scan" if isinstance(e, SegScan) else "reduce") + (
                        "_comm" if op.commutative else "")
                    lines += [
                        f"{pad}{INDENT}{word} {_ses(op.nes)}",
                        *self.lam(op.lam, depth + 2),
                    ]
                return [
                    *lines,
                    f"{pad}{INDENT}: {_types(ret)}",
                    *self.body(body, depth),
                ]
            case SegHist(level, space, ops, ret, body):
                lines = [f"{pad}seghist {level} {space_text(space)}"]
                for op in ops:
                    lines += [f"{pad}{INDENT}hist {', '.join(map(str, op.dests))} {_ses(op.nes)}",
                              *self.lam(op.lam, depth + 2)]
                return [*lines, f"{pad}{INDENT}: {_types(ret)}", *self.body(body, depth)]
            case SegScatter(level, space, dests, ret, body):
                written = ", ".join(f"{d.arr}/{d.num_idx}" for d in dests)
                return [f"{pad}segscatter {level} {space_text(space)} into {written}",
                        f"{pad}{INDENT}: {_types(ret)}", *self.body(body, depth)]
            case BlockFits(size):
                return [f"{pad}block_fits {subexp(size)}"]
            case ThresholdCmp(name, par, path, default):
                where = f" under ({path_text(path)})" if path else ""
                return [f"{pad}threshold({name}, default {default}{where}) <= {subexp(par)}"]
        return super().exp(e, depth)


def version_tree(prog: ir.Program) -> str:
    """Each function's SegOps as a tree of its version guards
    (`futgen dump --ir versions`):

        main
          main.suff_outer_par_0 <= n_2 * n_2 (default 32768)
            true:  segmap (n_2, n_2)
            false: segred (n_2, n_2, m_3)

    Other host `If`s holding SegOps show their condition and both branches
    (`then:`, `else:`, `-` for none); host loops only what they hold."""
    lines = []
    for f in prog.functions:
        lines.append(f.name)
        lines += _tree(f.body, 1, {}, {}) or [f"{INDENT}(no SegOps)"]
    return "\n".join(lines) + "\n"


def _tree(body: ir.Body, depth: int, guards: dict, products: dict) -> list[str]:
    pad = INDENT * depth
    out: list[str] = []
    for stm in body.stms:
        e = stm.exp
        name = stm.pat[0].name if stm.pat else None
        match e:
            case ir.BinOp("*", "i64", x, y):
                products[name] = f"{products.get(getattr(x, 'name', None), subexp(x))} * " \
                                 f"{products.get(getattr(y, 'name', None), subexp(y))}"
            case ir.BinOp("|" | "&", "bool", ir.Var(g), _) if g in guards:
                guards[name] = guards[g]  # refined by whether a version fits
            case ThresholdCmp(threshold, par, _, default):
                guards[name] = e
                size = products.get(getattr(par, "name", None), subexp(par))
                out.append(f"{pad}{threshold} <= {size} (default {default})")
            case ir.If(ir.Var(c), then_, else_, _) if c in guards:
                out += [f"{pad}{INDENT}true:  {line.lstrip()}" if k == 0 else INDENT + line
                        for k, line in enumerate(_tree(then_, depth + 1, guards, products))]
                out += [f"{pad}{INDENT}false: {line.lstrip()}" if k == 0 else INDENT + line
                        for k, line in enumerate(_tree(else_, depth + 1, guards, products))]
            case ir.If(cond, then_, else_, _):
                # Another host `if` (G8's over two maps) only where it holds SegOps.
                then_lines = _tree(then_, depth + 1, guards, products)
                else_lines = _tree(else_, depth + 1, guards, products)
                if then_lines or else_lines:
                    out.append(f"{pad}if {subexp(cond)}")
                    out += [f"{pad}{INDENT}then: {line.lstrip()}" if k == 0 else INDENT + line
                            for k, line in enumerate(then_lines or [f"{pad}{INDENT}-"])]
                    out += [f"{pad}{INDENT}else: {line.lstrip()}" if k == 0 else INDENT + line
                            for k, line in enumerate(else_lines or [f"{pad}{INDENT}-"])]
            case ir.Loop(_, _, loop_body):
                out += _tree(loop_body, depth, guards, products)
            case SegMap() | SegRed() | SegScan() | SegHist() | SegScatter():
                kind = type(e).__name__.lower()
                if e.level != GRID:
                    kind += f" {e.level}"  # a block per point
                dims = ", ".join(subexp(d) for d in e.space.dims)
                out.append(f"{pad}{kind} ({dims})")
    return out
