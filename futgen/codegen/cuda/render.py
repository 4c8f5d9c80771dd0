"""ImpCode -> CUDA C text.

All CUDA spelling of statements lives here; `scalar.py` decides what an
operation means and this module only prints it.  Expressions are fully
parenthesised, so precedence never depends on context.
"""

from __future__ import annotations

from futgen.codegen.cuda import imp
from futgen.codegen.cuda.imp import Expr, Stm
from futgen.codegen.plan import MAX_FAILURE_ARGS

INDENT = "  "


def expr(e: Expr) -> str:
    """One expression as C text."""
    match e:
        case imp.Var(name):
            return name
        case imp.Lit(text):
            return text
        case imp.Call(fn, args):
            return f"{fn}({', '.join(expr(a) for a in args)})"
        case imp.Un(op, x):
            return f"({op}{expr(x)})"
        case imp.Bin(op, x, y):
            return f"({expr(x)} {op} {expr(y)})"
        case imp.Cast(ctype, x):
            return f"(({ctype}){expr(x)})"
        case imp.Load(array, index):
            return f"{array}[{expr(index)}]"
        case imp.Cond(c, a, b):
            return f"({expr(c)} ? {expr(a)} : {expr(b)})"
    raise TypeError(f"not an ImpCode expression: {e!r}")


def stms(body: tuple[Stm, ...] | list[Stm], depth: int) -> list[str]:
    """Statements as C lines indented `depth` levels."""
    out: list[str] = []
    for s in body:
        out += stm(s, depth)
    return out


def _fail(s: imp.Fail, pad: str) -> list[str]:
    """The failure protocol of `futgen/codegen/plan.py`: first failure wins."""
    lines = [f"{pad}if (atomicCAS(failure, 0, {s.code}) == 0) {{"]
    lines += [f"{pad}{INDENT}failure_args[{k}] = (int64_t){expr(a)};"
              for k, a in enumerate(s.args)]
    lines.append(f"{pad}{INDENT}failure_args[{MAX_FAILURE_ARGS}] = {s.code};")
    lines.append(f"{pad}}}")
    if s.flag is not None:
        lines.append(f"{pad}{s.flag} = true;")
    lines.append(f"{pad}goto {s.escape};" if s.escape else f"{pad}return;")
    return lines


def stm(s: Stm, depth: int) -> list[str]:
    """One statement as C lines."""
    pad = INDENT * depth
    match s:
        case imp.Decl(ctype, name, init, maybe_unused):
            attr = "[[maybe_unused]] " if maybe_unused else ""
            value = "" if init is None else f" = {expr(init)}"
            return [f"{pad}{attr}{ctype} {name}{value};"]
        case imp.Assign(name, value):
            return [f"{pad}{name} = {expr(value)};"]
        case imp.Store(array, index, value):
            return [f"{pad}{array}[{expr(index)}] = {expr(value)};"]
        case imp.If(cond, then, else_):
            lines = [f"{pad}if ({expr(cond)}) {{", *stms(then, depth + 1)]
            if else_:
                lines += [f"{pad}}} else {{", *stms(else_, depth + 1)]
            return [*lines, f"{pad}}}"]
        case imp.For(ctype, name, lo, bound, body, step, unroll):
            inc = f"{name}++" if step == imp.Lit("1") else f"{name} += {expr(step)}"
            pragma = [] if unroll is None else [f"{pad}#pragma unroll {unroll}"]
            return [*pragma,
                    f"{pad}for ({ctype} {name} = {expr(lo)}; {name} < {expr(bound)}; {inc}) {{",
                    *stms(body, depth + 1), f"{pad}}}"]
        case imp.While(cond, body):
            return [f"{pad}while ({expr(cond)}) {{", *stms(body, depth + 1), f"{pad}}}"]
        case imp.Block(body):
            return [f"{pad}{{", *stms(body, depth + 1), f"{pad}}}"]
        case imp.Fail():
            return _fail(s, pad)
        case imp.Label(name):
            return [f"{pad}{name}: ;"]
        case imp.Sync(fn):
            return [f"{pad}{fn}();"]
        case imp.Shared(ctype, name, 0):
            return [f"{pad}extern __shared__ __align__(16) {ctype} {name}[];"]
        case imp.Shared(ctype, name, size):
            return [f"{pad}__shared__ __align__(16) {ctype} {name}[{size}];"]
        case imp.Comment(text):
            return [f"{pad}// {line}" for line in text.splitlines()]
        case imp.Return():
            return [f"{pad}return;"]
    raise TypeError(f"not an ImpCode statement: {s!r}")


def kernel(k: imp.Kernel) -> str:
    """A whole kernel definition, following the calling convention of `plan.py`."""
    params = ["int32_t *failure", "int64_t *failure_args"]
    params += [f"{p.ctype} *{p.name}" if p.pointer else f"{p.ctype} {p.name}"
               for p in k.params]
    bounds = "" if k.max_threads is None else f"__launch_bounds__({k.max_threads}) "
    head = f'extern "C" __global__ void {bounds}{k.name}({", ".join(params)})'
    return "\n".join([head, "{", *stms(k.body, 1), "}"])
