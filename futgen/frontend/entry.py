"""Entry-point signatures, read once from the typed program.

Every stage that talks to the outside world about an entry point takes its
signature from here: the interpreter (argument checks), the test runner
(which values a test block must give) and code generation (the methods of
the generated package, their argument checks, `ENTRY_POINTS` and `help()`).

    for sig in entry_signatures(program):
        sig.name, [str(t) for t in sig.param_types], sig.results

A point-free entry (`entry f = map g`) takes the parameters of its arrow
type.  Several results are the elements of a returned tuple, as in Futhark.

The structure of a value is its semantic type (`futgen.frontend.types`):
`components` splits a tuple, a record (fields in sorted order, numerically
for tuple-like records) or an array of them (an array of tuples is a tuple
of arrays) the way internalisation does, and `leaf_types` lists the
primitive values and arrays of primitives that carry it, in order.
`record_names` names the record types of the entry points after the type
abbreviations the program writes for them (`type point = {x: f32, y: f32}`,
as Futhark names its opaque types), so a compiled package can export them as
named classes.
"""

from __future__ import annotations

from dataclasses import dataclass

from futgen.frontend import syntax as S
from futgen.frontend import types as T
from futgen.frontend.types import components


@dataclass(frozen=True)
class EntryParam:
    """One parameter: `name` is its source name (or one made from its
    pattern), `type_exp` the type the program writes for it, if any."""

    name: str
    type: T.Type
    type_exp: S.TypeExp | None = None


@dataclass(frozen=True)
class EntrySignature:
    """An entry point's parameters and results, as semantic types."""

    name: str
    params: tuple[EntryParam, ...]
    results: tuple[T.Type, ...]
    result_exps: tuple[S.TypeExp | None, ...] = ()

    @property
    def param_types(self) -> list[T.Type]:
        return [p.type for p in self.params]

    @property
    def result_types(self) -> list[T.Type]:
        return list(self.results)

    def __str__(self) -> str:
        params = " ".join(f"({p.name}: {p.type})" for p in self.params)
        results = ", ".join(map(str, self.results))
        return f"{self.name} {params} : {results if len(self.results) == 1 else f'({results})'}"


def entry_decls(program: S.Program) -> list[S.ValDecl]:
    """The entry points' declarations, in program order (the last of a name wins)."""
    decls = {d.name: d for d in program.decls if isinstance(d, S.ValDecl) and d.is_entry_point}
    return list(decls.values())


def entry_signatures(program: S.Program) -> list[EntrySignature]:
    return [entry_signature(d) for d in entry_decls(program)]


def entry_signature(d: S.ValDecl) -> EntrySignature:
    """The signature of a checked entry declaration."""
    params = [EntryParam(_pat_name(p, k), p.ty, _pat_type_exp(p))
              for k, p in enumerate(d.params)]
    rt, ret_exp = d.body.ty, d.ret
    while isinstance(rt, T.Arrow):  # point-free: the arrow's parameters are the entry's
        params.append(EntryParam(rt.param_name or f"arg{len(params) + 1}", rt.param))
        rt, ret_exp = rt.ret, _arrow_result(ret_exp)
    results, result_exps = _results(rt, ret_exp)
    return EntrySignature(d.name, tuple(params), results, result_exps)


def _results(rt: T.Type, ret_exp: S.TypeExp | None) -> tuple[tuple, tuple]:
    """Futhark's several results: the elements of a returned (non-unit) tuple."""
    if not (isinstance(rt, T.Tuple) and rt.elems):
        return (rt,), (ret_exp,)
    exp = _strip_unique(ret_exp)
    exps = exp.elems if isinstance(exp, S.TETuple) and len(exp.elems) == len(rt.elems) \
        else [None] * len(rt.elems)
    return tuple(rt.elems), tuple(exps)


def _arrow_result(te: S.TypeExp | None) -> S.TypeExp | None:
    te = _strip_unique(te)
    return te.ret if isinstance(te, S.TEArrow) else None


def _strip_unique(te: S.TypeExp | None) -> S.TypeExp | None:
    while isinstance(te, S.TEUnique) or (isinstance(te, S.TETuple) and len(te.elems) == 1):
        te = te.inner if isinstance(te, S.TEUnique) else te.elems[0]
    return te


def _pat_name(p: S.Pat, k: int) -> str:
    """`xs` for `(xs: []f32)`; `x_y` for `(x, y)`; `arg2` where nothing names it."""
    match p:
        case S.PId(name):
            return name
        case S.PAscribe(inner):
            return _pat_name(inner, k)
        case S.PTuple(elems) | S.PRecord(fields=elems):
            names = [_pat_name(x[1] if isinstance(x, tuple) else x, k) for x in elems]
            if names and all(not n.startswith("arg") for n in names):
                return "_".join(names)
    return f"arg{k + 1}"


def _pat_type_exp(p: S.Pat) -> S.TypeExp | None:
    return p.type if isinstance(p, S.PAscribe) else None


# ---------------------------------------------------------------- structure


def record_of(t: T.Type) -> T.Record | None:
    """The record type of a record or an array of records."""
    elem = t.elem if isinstance(t, T.Array) else t
    return elem if isinstance(elem, T.Record) and not T.is_tuple_record(elem.fields) else None


def leaf_types(t: T.Type) -> list[T.Type]:
    """The primitive values and arrays of primitives carrying a value of type `t`."""
    comps = components(t)
    return [t] if comps is None else [x for c in comps for x in leaf_types(c)]


def type_key(t: T.Type) -> str:
    """`t` as text without sizes and uniqueness: equal for types that differ
    only there (`[n]point` and `*[]point`)."""
    match t:
        case T.Array(e, shape, _):
            return "[]" * len(shape) + type_key(e)
        case T.Tuple(es):
            return "(" + ", ".join(map(type_key, es)) + ")"
        case T.Record(fs):
            return "{" + ", ".join(f"{f}: {type_key(x)}" for f, x in fs) + "}"
    return str(t)


def record_names(program: S.Program, signatures: list[EntrySignature]) -> dict[str, str]:
    """Record types of the entry points (by `type_key`) -> the name of the
    type abbreviation the program writes for them at that position.  A record
    written without an abbreviation there has no entry, unless the same
    record type is named elsewhere in the signatures."""
    abbrevs = {d.name: d for d in program.decls if isinstance(d, S.TypeDecl)}
    names: dict[str, str] = {}
    for sig in signatures:
        pairs = [(p.type, p.type_exp) for p in sig.params]
        pairs += list(zip(sig.results, sig.result_exps or [None] * len(sig.results)))
        for t, te in pairs:
            _name_records(t, te, abbrevs, names, depth=0)
    return names


def _name_records(t: T.Type, te: S.TypeExp | None, abbrevs: dict[str, S.TypeDecl],
                  names: dict[str, str], depth: int) -> None:
    """Walks type expression `te` alongside the semantic type `t` it denotes."""
    if te is None or depth > 50:
        return
    match te:
        case S.TEUnique(inner):
            _name_records(t, inner, abbrevs, names, depth + 1)
        case S.TEName(name, _):
            decl = abbrevs.get(name)
            if decl is None:
                return
            if isinstance(t, T.Record) and not T.is_tuple_record(t.fields):
                names.setdefault(type_key(t), name)
            _name_records(t, decl.body, abbrevs, names, depth + 1)
        case S.TEArray(_, elem) if isinstance(t, T.Array):
            _name_records(T.row_type(t), elem, abbrevs, names, depth + 1)
        case S.TETuple([inner]):
            _name_records(t, inner, abbrevs, names, depth + 1)
        case S.TETuple(elems) if isinstance(t, T.Tuple) and len(elems) == len(t.elems):
            for x, e in zip(t.elems, elems):
                _name_records(x, e, abbrevs, names, depth + 1)
        case S.TERecord(fields) if isinstance(t, T.Record):
            for f, e in fields:
                ft = t.field(f)
                if ft is not None:
                    _name_records(ft, e, abbrevs, names, depth + 1)
