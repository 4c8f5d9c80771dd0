"""A pretty-printer for the GPU IR (`futgen dump --ir gpu`).

Everything that is core IR prints exactly as `futgen.core.pretty` prints it;
this module adds the SegOps, in the format shown in `futgen.gpu.ir`:

    segred grid (gtid_5 < n_1, ...)
      reduce (0.0f32)
        \\(a_2: f32, b_3: f32) : (f32) -> { ... }
      : (f32)
    { ...kernel body... }

Host-level `If` and `Loop` are printed here too, since their bodies may hold
SegOps; SOAC lambdas never do (flattening puts SegOps only in host code), so
their printing is left to the core printer.
"""

from __future__ import annotations

from futgen.core import ir
from futgen.core.pretty import INDENT, _lambda, _params, _ses, _types, subexp
from futgen.core.pretty import _exp as core_exp
from futgen.gpu.ir import SegMap, SegRed, SegScan, SegSpace


def pretty(node: ir.Program | ir.Function | ir.Body | ir.Exp | SegMap | SegRed | SegScan) -> str:
    """The text of a GPU IR program, function, body or expression."""
    match node:
        case ir.Program(functions):
            return "\n\n".join(_function(f) for f in functions) + "\n"
        case ir.Function():
            return _function(node)
        case ir.Body():
            return "\n".join(_body(node, 0))
    return "\n".join(_exp(node, 0))


def space_text(space: SegSpace) -> str:
    """`(gtid_5 < n_1, gtid_6 < 4i64)`."""
    return "(" + ", ".join(f"{g} < {subexp(d)}"
                           for g, d in zip(space.gtids, space.dims)) + ")"


def _function(f: ir.Function) -> str:
    head = ("entry " if f.entry else "") + \
        f"fun {f.name}{_params(f.params)} : {_types(f.ret)} ="
    return "\n".join([head, *_body(f.body, 0)])


def _body(b: ir.Body, depth: int) -> list[str]:
    pad = INDENT * depth
    lines = [pad + "{"]
    for stm in b.stms:
        lines.extend(_stm(stm, depth + 1))
    lines.append(pad + INDENT + "in " + _ses(b.result))
    lines.append(pad + "}")
    return lines


def _stm(stm: ir.Stm, depth: int) -> list[str]:
    pad = INDENT * depth
    head = f"{pad}let {_params(stm.pat)} ="
    exp = _exp(stm.exp, depth + 1)
    if len(exp) == 1:
        return [f"{head} {exp[0].strip()}"]
    return [head, *exp]


def _exp(e: ir.Exp | SegMap | SegRed | SegScan, depth: int) -> list[str]:
    pad = INDENT * depth
    match e:
        case SegMap(level, space, ret, body):
            return [f"{pad}segmap {level} {space_text(space)}",
                    f"{pad}{INDENT}: {_types(ret)}", *_body(body, depth)]
        case SegRed(level, space, ops, ret, body) | SegScan(level, space, ops, ret, body):
            kind = "segred" if isinstance(e, SegRed) else "segscan"
            lines = [f"{pad}{kind} {level} {space_text(space)}"]
            for op in ops:
                word = "scan" if isinstance(e, SegScan) else (
                    "reduce_comm" if op.commutative else "reduce")
                lines += [f"{pad}{INDENT}{word} {_ses(op.nes)}",
                          *_lambda(op.lam, depth + 2)]
            return [*lines, f"{pad}{INDENT}: {_types(ret)}", *_body(body, depth)]
        case ir.If(cond, then_, else_, ret):
            return [f"{pad}if {subexp(cond)} : {_types(ret)}", f"{pad}then",
                    *_body(then_, depth), f"{pad}else", *_body(else_, depth)]
        case ir.Loop(merge, form, body):
            head = core_exp(ir.Loop(merge, form, ir.Body((), ())), depth)[0]
            return [head, *_body(body, depth)]
    return core_exp(e, depth)
