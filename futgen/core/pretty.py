"""A pretty-printer for the core IR: one statement per line.

This is what `futgen dump --ir core` shows and what pass tests compare, so
the format is stable and says everything the IR holds: every bound name
with its type, constants with their type suffix, scalar operators with the
operand type (`+.i32 x_1 y_2`), conversions as `f32->i64 x_3`.  The grammar
is in the docstring of `futgen.core.ir`.
"""

from __future__ import annotations

from futgen.core import ir

INDENT = "  "


def pretty(node: ir.Program | ir.Function | ir.Body | ir.Exp) -> str:
    """The text of a program, function, body or expression."""
    return Printer().text(node)


# ------------------------------------------------------------ small parts


def subexp(se: ir.SubExp) -> str:
    """`x_3`, `1i64`, `2.5f32`, `true`."""
    if isinstance(se, ir.Var):
        return str(se.name)
    if se.prim == "bool":
        return "true" if se.value else "false"
    return f"{se.value!r}{se.prim}"


def type_text(t: ir.Type) -> str:
    """`i32`, `[n_1][3i64]f32`, `[?]i64`."""
    if isinstance(t, ir.Prim):
        return t.name
    dims = "".join("[?]" if d is None else f"[{subexp(d)}]" for d in t.shape)
    return dims + t.elem


def _param(p: ir.Param) -> str:
    return f"{p.name}: {type_text(p.type)}"


def _params(ps: tuple[ir.Param, ...]) -> str:
    return "(" + ", ".join(_param(p) for p in ps) + ")"


def _types(ts: tuple[ir.Type, ...]) -> str:
    return "(" + ", ".join(type_text(t) for t in ts) + ")"


def _ses(ses: tuple[ir.SubExp, ...]) -> str:
    return "(" + ", ".join(subexp(s) for s in ses) + ")"


def _names(xs: tuple[ir.VName, ...]) -> str:
    return "(" + ", ".join(str(x) for x in xs) + ")"


def _slice(s: tuple[ir.DimIndex, ...]) -> str:
    parts = []
    for d in s:
        if isinstance(d, ir.DimFix):
            parts.append(subexp(d.i))
        else:
            parts.append(f"{subexp(d.start)}:+{subexp(d.num)}*{subexp(d.stride)}")
    return "[" + ", ".join(parts) + "]"


# ------------------------------------------------------------ structure


class Printer:
    """Prints the nested structure (functions, bodies, statements, lambdas).

    A printer for an extended IR (the GPU IR's SegOps) subclasses this and
    overrides `exp`, falling back to `super().exp`; bodies inside `If` and
    `Loop` then print through the subclass too.
    """

    def text(self, node) -> str:
        """The text of a program, function, body or expression."""
        match node:
            case ir.Program(functions):
                return "\n\n".join(self.function(f) for f in functions) + "\n"
            case ir.Function():
                return self.function(node)
            case ir.Body():
                return "\n".join(self.body(node, 0))
        return "\n".join(self.exp(node, 0))

    def function(self, f: ir.Function) -> str:
        head = (
            "entry " if f.entry else ""
        ) + f"fun {f.name}{_params(f.params)} : {_types(f.ret)} ="
        return "\n".join([head, *self.body(f.body, 0)])

    def body(self, b: ir.Body, depth: int) -> list[str]:
        pad = INDENT * depth
        lines = [pad + "{"]
        for stm in b.stms:
            lines.extend(self.stm(stm, depth + 1))
        lines.append(pad + INDENT + "in " + _ses(b.result))
        lines.append(pad + "}")
        return lines

    def stm(self, stm: ir.Stm, depth: int) -> list[str]:
        pad = INDENT * depth
        head = f"{pad}let {_params(stm.pat)} ="
        exp = self.exp(stm.exp, depth + 1)
        if len(exp) == 1:
            return [f"{head} {exp[0].strip()}"]
        return [head, *exp]

    def lam(self, lam: ir.Lambda, depth: int) -> list[str]:
        pad = INDENT * depth
        return [
            f"{pad}\\{_params(lam.params)} : {_types(lam.ret)} ->",
            *self.body(lam.body, depth),
        ]

    def exp(self, e: ir.Exp, depth: int) -> list[str]:
        """The lines of an expression, indented by `depth`."""
        pad = INDENT * depth
        simple = _basic(e)
        if simple is not None:
            return [pad + simple]
        match e:
            case ir.If(cond, then_, else_, ret):
                return [
                    f"{pad}if {subexp(cond)} : {_types(ret)}",
                    f"{pad}then",
                    *self.body(then_, depth),
                    f"{pad}else",
                    *self.body(else_, depth),
                ]
            case ir.Loop(merge, form, body):
                inits = ", ".join(f"{_param(p)} = {subexp(v)}" for p, v in merge)
                if isinstance(form, ir.ForLoop):
                    how = f"for {form.i}: {form.prim} < {subexp(form.bound)}"
                else:
                    how = f"while {form.cond}"
                return [f"{pad}loop ({inits}) {how} do", *self.body(body, depth)]
            case ir.Screma(w, arrs, scans, reds, map_lam):
                lines = [f"{pad}screma {subexp(w)} {_names(arrs)}"]
                for s in scans:
                    lines += [
                        f"{pad}{INDENT}scan {_ses(s.nes)}",
                        *self.lam(s.lam, depth + 2),
                    ]
                for r in reds:
                    kind = "reduce_comm" if r.comm else "reduce"
                    lines += [
                        f"{pad}{INDENT}{kind} {_ses(r.nes)}",
                        *self.lam(r.lam, depth + 2),
                    ]
                return lines + [f"{pad}{INDENT}map", *self.lam(map_lam, depth + 2)]
            case ir.Scatter(w, arrs, lam, dests):
                into = ", ".join(f"{d.arr}/{d.num_idx}" for d in dests)
                return [
                    f"{pad}scatter {subexp(w)} {_names(arrs)} into ({into})",
                    *self.lam(lam, depth + 1),
                ]
            case ir.Hist(w, arrs, ops, lam):
                lines = [f"{pad}hist {subexp(w)} {_names(arrs)}"]
                for op in ops:
                    lines += [
                        f"{pad}{INDENT}into {_names(op.dests)} {_ses(op.nes)}",
                        *self.lam(op.lam, depth + 2),
                    ]
                return lines + [f"{pad}{INDENT}map", *self.lam(lam, depth + 2)]
        raise TypeError(f"no printing rule for {type(e).__name__}")


def _basic(e: ir.Exp) -> str | None:
    """One-line expressions: basic operations and calls; None for the rest."""
    match e:
        case ir.SubExpOp(se):
            return subexp(se)
        case ir.UnOp(op, prim, x):
            return f"{op}.{prim} {subexp(x)}"
        case ir.BinOp(op, prim, x, y) | ir.CmpOp(op, prim, x, y):
            return f"{op}.{prim} {subexp(x)} {subexp(y)}"
        case ir.ConvOp(src, dst, x):
            return f"{src}->{dst} {subexp(x)}"
        case ir.Index(arr, sl, _):
            return f"{arr}{_slice(sl)}"
        case ir.Update(arr, sl, value, _):
            return f"{arr} with {_slice(sl)} = {subexp(value)}"
        case ir.ArrayLit(elems, elem):
            return (
                f"array {type_text(elem)} [" + ", ".join(subexp(x) for x in elems) + "]"
            )
        case ir.Iota(n, start, stride):
            return f"iota {subexp(n)} {subexp(start)} {subexp(stride)}"
        case ir.Replicate(shape, value):
            return f"replicate {_ses(shape)} {subexp(value)}"
        case ir.Reshape(arr, shape, _):
            return f"reshape {_ses(shape)} {arr}"
        case ir.Rearrange(arr, perm):
            return "rearrange (" + ", ".join(map(str, perm)) + f") {arr}"
        case ir.Concat(arrs):
            return f"concat {_names(arrs)}"
        case ir.Copy(arr):
            return f"copy {arr}"
        case ir.ArraySize(arr, dim):
            return f"size {arr} {dim}"
        case ir.Assert(cond, msg, _, args):
            return f"assert {subexp(cond)} {msg!r}{_ses(args) if args else ''}"
        case ir.Apply(fn, args, _):
            return f"apply {fn}{_ses(args)}"
    return None
