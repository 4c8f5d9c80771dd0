"""Name facts the flattening pass needs: fresh names, free variables, renaming.

Names are unique within a program (internalisation gives every binder its
own tag, and this pass keeps it so by renaming whatever it copies), so a
variable is free in a piece of IR exactly when it occurs there but is bound
nowhere in it.  That lets these helpers walk the IR generically, field by
field, instead of needing one rule per node kind: every `Param` is a binder
(statement patterns, function, lambda and loop parameters), as are a for
loop's counter and a segment space's thread indices; every other `VName` is
a use.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import fields, is_dataclass
from typing import Any

from futgen.core import ir
from futgen.gpu.ir import SegSpace

# Fields holding types; their names are sizes, which code for a body can skip.
_TYPE_FIELDS = frozenset({"type", "ret", "elem"})
_FIELDS: dict[type, tuple[str, ...]] = {}


def _fields(node: Any) -> tuple[str, ...]:
    """The field names of a dataclass instance, none for anything else
    (looked up once per class: these walks visit every node of a program)."""
    cls = type(node)
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = tuple(f.name for f in fields(cls)) if is_dataclass(cls) else ()
    return names


def vnames(node: Any, types: bool = True) -> Iterator[ir.VName]:
    """Every VName in `node`, binders and uses, in field order (without the
    sizes inside types when `types` is False)."""
    if isinstance(node, ir.VName):
        yield node
    elif isinstance(node, tuple | list):
        for x in node:
            yield from vnames(x, types)
    else:
        for f in _fields(node):
            if types or f not in _TYPE_FIELDS:
                yield from vnames(getattr(node, f), types)


def binders(node: Any) -> Iterator[ir.VName]:
    """Every name that `node` binds."""
    if isinstance(node, ir.Param):
        yield node.name
        yield from binders(node.type)
    elif isinstance(node, ir.ForLoop):
        yield node.i
    elif isinstance(node, SegSpace):
        yield from node.gtids
        yield from binders(node.dims)
    elif isinstance(node, tuple):
        for x in node:
            yield from binders(x)
    else:
        for f in _fields(node):
            yield from binders(getattr(node, f))


def free_vars(node: Any, types: bool = True) -> set[ir.VName]:
    """The names `node` uses but does not bind (sizes in types only if `types`)."""
    return set(vnames(node, types)) - set(binders(node))


def use_counts(node: Any) -> Counter[ir.VName]:
    """How often each name occurs in `node` other than where it is bound
    (one walk: every occurrence counted, each binder's taken back)."""
    counts: Counter[ir.VName] = Counter()
    _count(node, counts)
    return counts


def _count(node: Any, counts: Counter[ir.VName]) -> None:
    if isinstance(node, ir.VName):
        counts[node] += 1
    elif isinstance(node, tuple | list):
        for x in node:
            _count(x, counts)
    else:
        for f in _fields(node):
            _count(getattr(node, f), counts)
        if isinstance(node, ir.Param):
            counts[node.name] -= 1
        elif isinstance(node, ir.ForLoop):
            counts[node.i] -= 1
        elif isinstance(node, SegSpace):
            for g in node.gtids:
                counts[g] -= 1


def substitute(node: Any, subst: Mapping[ir.VName, ir.VName]) -> Any:
    """`node` with every occurrence of a key of `subst` replaced by its value."""
    if isinstance(node, ir.VName):
        return subst.get(node, node)
    if isinstance(node, tuple):
        return tuple(substitute(x, subst) for x in node)
    if names := _fields(node):
        return type(node)(*(substitute(getattr(node, f), subst) for f in names))
    return node


def replace_uses(node: Any, subst: Mapping[ir.VName, ir.SubExp], bodies: bool = True) -> Any:
    """`node` with every use of a key of `subst` replaced by its value: a
    constant value only where a SubExp stands (`Var` positions), a variable
    anywhere.  With `bodies` False, the `Body`s inside `node` are left as
    they are (a pass that walks them itself substitutes their statements).
    Unchanged parts are returned as they are, not copied."""
    if isinstance(node, ir.Var):
        return subst.get(node.name, node)
    if isinstance(node, ir.VName):
        new = subst.get(node)
        return new.name if isinstance(new, ir.Var) else node
    if isinstance(node, tuple):
        items = tuple(replace_uses(x, subst, bodies) for x in node)
        return node if all(a is b for a, b in zip(items, node)) else items
    if (names := _fields(node)) and (bodies or not isinstance(node, ir.Body)):
        old = [getattr(node, f) for f in names]
        new_fields = [replace_uses(x, subst, bodies) for x in old]
        if all(a is b for a, b in zip(new_fields, old)):
            return node
        return type(node)(*new_fields)
    return node


class NameSource:
    """Fresh names for one program: tags above every tag already used."""

    def __init__(self, prog: ir.Program):
        self._next = max((v.tag for v in vnames(prog.functions)), default=-1) + 1

    def fresh(self, base: str) -> ir.VName:
        """A name no other binder of the program has."""
        self._next += 1
        return ir.VName(base, self._next - 1)

    def renamed(self, node: Any) -> Any:
        """A copy of `node` whose binders all have fresh names (for inlining a
        body more than once without breaking uniqueness)."""
        subst = {b: self.fresh(b.base) for b in binders(node)}
        return substitute(node, subst)


def i64_op(stms: list[ir.Stm], names: NameSource, op: str, x: ir.SubExp, y: ir.SubExp,
           base: str) -> ir.Var:
    """`x op y` (i64) bound to a fresh `base` name by a statement appended to `stms`."""
    v = names.fresh(base)
    stms.append(ir.Stm((ir.Param(v, ir.Prim("i64")),), ir.BinOp(op, "i64", x, y)))
    return ir.Var(v)


def i64_product(dims: Sequence[ir.SubExp], names: NameSource, stms: list[ir.Stm],
                base: str) -> ir.SubExp:
    """The product of `dims`, by statements appended to `stms` (host code's sizes)."""
    acc = dims[0]
    for d in dims[1:]:
        acc = i64_op(stms, names, "*", acc, d, base)
    return acc


def param_types(node: Any) -> dict[ir.VName, ir.Type]:
    """The declared type of every name bound by a `Param` in `node`, and
    of every for loop's counter."""
    out: dict[ir.VName, ir.Type] = {}
    _collect_types(node, out)
    return out


def _collect_types(node: Any, out: dict[ir.VName, ir.Type]) -> None:
    if isinstance(node, ir.Param):
        out[node.name] = node.type
    elif isinstance(node, ir.ForLoop):
        out[node.i] = ir.Prim(node.prim)
        _collect_types(node.bound, out)
    elif isinstance(node, tuple):
        for x in node:
            _collect_types(x, out)
    else:
        for f in _fields(node):
            _collect_types(getattr(node, f), out)
