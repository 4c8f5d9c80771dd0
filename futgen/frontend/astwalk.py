"""Generic traversal of the source AST.

Passes over the source AST (name resolution now, more later) only care
about a few node kinds; these helpers visit or rebuild everything else.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from futgen.frontend import syntax as S


def rewrite(node: Any, fn: Callable[[Any], Any | None]) -> Any:
    """Rewrite `node` bottom-up: `fn` returns a replacement node or None to keep it.

    Nodes are updated in place (the AST is mutable) and the root returned.
    """
    if isinstance(node, list):
        return [rewrite(x, fn) for x in node]
    if isinstance(node, tuple):
        return tuple(rewrite(x, fn) for x in node)
    if not dataclasses.is_dataclass(node) or isinstance(node, type):
        return node
    for f in dataclasses.fields(node):
        if f.name in ("loc", "ty"):
            continue
        value = getattr(node, f.name)
        if isinstance(value, (list, tuple)) or dataclasses.is_dataclass(value):
            setattr(node, f.name, rewrite(value, fn))
    replacement = fn(node)
    return node if replacement is None else replacement


def walk(node: Any) -> Any:
    """Every AST node under (and including) `node`, parents first."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, (list, tuple)):
            stack.extend(reversed(n))
        elif dataclasses.is_dataclass(n) and not isinstance(n, type):
            yield n
            for f in dataclasses.fields(n):
                if f.name not in ("loc", "ty"):
                    v = getattr(n, f.name)
                    if isinstance(v, (list, tuple)) or dataclasses.is_dataclass(v):
                        stack.append(v)


def is_expr(node: Any) -> bool:
    return isinstance(node, S.Expr)


def pattern_names(p: S.Pat) -> set[str]:
    """The names a pattern binds."""
    match p:
        case S.PId(name, _):
            return {name}
        case S.PTuple(elems, _):
            return set().union(*(pattern_names(q) for q in elems))
        case S.PRecord(fields, _):
            return set().union(*(pattern_names(q) for _, q in fields))
        case S.PAscribe(inner, _, _):
            return pattern_names(inner)
    return set()
