"""The type checker: inference, sizes, polymorphism and uniqueness.

It walks the source AST once, inferring types by unification (`unify.py`),
and sets `ty` on every expression and pattern to its fully resolved type.
Alongside types it tracks, for every expression, which variables its value
may alias, so that in-place updates and unique parameters can be checked:
a consumed variable (and everything aliasing it) may not be used again, a
non-unique parameter or a global may not be consumed, and a loop or lambda
body may not consume variables bound outside it.  The alias model and the
consumption checks live in `aliases.py`.

Sizes are checked where the program names them (`[n]`, constants); sizes
given by expressions or left anonymous are checked at run time by the
interpreter.  Sizes Futhark's rules make new (`++`, branches whose known
sizes differ) are existential: rigid names equal to no other size.  Size
parameters must be used as Futhark requires (in a parameter or the result;
an entry point's constructively in a parameter), and so must `let [n]`.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from futgen.errors import NOWHERE, CompileError, Loc, UnsupportedFeature
from futgen.frontend import syntax as S
from futgen.frontend.aliases import (
    NO_ALIAS,
    Alias,
    Consumption,
    alias_by_uniqueness,
    any_array,
    field_alias,
    flatten_alias,
    function_subtype_error,
    global_alias,
    is_unique,
    make_unique,
    merge_alias,
    remove_alias,
    self_alias,
    updates_inside,
    with_field_alias,
)
from futgen.frontend.ambiguous import SizeUse, check_ambiguous
from futgen.frontend.astwalk import walk
from futgen.frontend.causality import check_causality
from futgen.frontend.entry_sizes import check_entry_result_sizes
from futgen.frontend.equality import check_equalities
from futgen.frontend.lambda_sizes import check_lambda_sizes
from futgen.frontend.lifted import (
    Instance,
    TypeParamInfo,
    bind_tparams,
    check_array_element,
    check_instance,
    check_order_zero,
    functional,
)
from futgen.frontend.literals import check_literals
from futgen.frontend.loop_scope import LoopScope, check_loop_scope
from futgen.frontend.loops import changed_sizes, check_loop_classes
from futgen.frontend.names import Imports, check_names
from futgen.frontend.recursion import check_recursion
from futgen.frontend.size_scope import (
    cannot_apply,
    check_dependent_arg,
    check_parameter_scope,
    check_return_names,
    check_unknown_parameter_sizes,
    check_unscoped_arg,
    function_text,
    has_binding,
    hide_unscoped_sizes,
    opaque_names,
    reads,
)
from futgen.frontend.typedecls import check_type_decl
from futgen.frontend.types import (
    BOOL,
    EXISTENTIAL_PREFIX,
    FLOATS,
    I64,
    INTS,
    NUMERIC,
    PRIMS,
    AnySize,
    Array,
    Arrow,
    Dim,
    Record,
    Scalar,
    SizeConst,
    SizeExpr,
    SizeProd,
    SizeVar,
    Tuple,
    Type,
    TypeVar,
    array_of,
    dim_names,
    dim_pairs,
    is_tuple_record,
    map_dims,
    nonunique,
    row_type,
    size_names,
    size_operation,
    type_dims,
    type_var_names,
    with_field_type,
    written_name,
)
from futgen.frontend.types import substitute as _substitute
from futgen.frontend.unify import Constraint, Unifier, UnifyError
from futgen.frontend.witnesses import (
    check_abbreviation_witnessed,
    check_existentials_witnessed,
)
from futgen.frontend.written_sizes import SIZE_OPS

ARITH_OPS = {"+", "-", "*", "/", "%", "**"}
INT_OPS = {"//", "%%", "&", "|", "^", "<<", ">>", ">>>"}
ORDER_OPS = {"<", ">", "<=", ">="}
EQ_OPS = {"==", "!="}
BOOL_OPS = {"&&", "||"}
# Built-ins whose polymorphic result (`*t`) is always a fresh value.
FRESH_RESULT_BUILTINS = {"copy", "manifest"}
BUILTIN_BINOPS = (
    ARITH_OPS | INT_OPS | ORDER_OPS | EQ_OPS | BOOL_OPS | {"++", "|>", "<|"}
)


@dataclass
class Scheme:
    """A possibly polymorphic type: quantified type and size names.

    `unlifted` are the type parameters declared unlifted (`'t`, level ""):
    an instance may hold no size bound by a function argument's parameter
    (`map iota`).
    """

    tvars: tuple[str, ...]
    svars: tuple[str, ...]
    type: Type
    # The level of each declared type parameter ("" or "~": see lifted.py);
    # one not here (inferred ones) may be anything.
    levels: dict[str, str] = field(default_factory=dict)
    # Of a top-level function, the parameters (by index) whose ambiguous
    # type was defaulted: to what, and where the ambiguity arose.
    defaulted: dict[int, tuple[str, Loc]] = field(default_factory=dict)

    @property
    def unlifted(self) -> frozenset[str]:
        return frozenset(v for v, level in self.levels.items() if level == "")


@dataclass
class VarInfo:
    """A variable in scope."""

    uid: str  # unique id, used in alias sets
    name: str
    scheme: Scheme
    loc: Loc
    depth: int  # binding depth, compared with loop/lambda barriers
    aliases: Alias = NO_ALIAS
    consumable: str | None = None  # None if consumable, else why not
    is_global: bool = False
    stamp: int = 0  # inference names made before it was bound (`levels.py`)


@dataclass
class TypeAbbrev:
    params: list[S.TParam]
    body: S.TypeExp
    lifted: str = ""  # `type~`, `type^`


@dataclass
class Scope:
    vars: dict[str, VarInfo] = field(default_factory=dict)
    types: dict[str, Any] = field(default_factory=dict)  # name -> Type | TypeAbbrev


def _is_prim(t: Type) -> bool:
    return isinstance(t, Scalar)


class Checker:
    """Checks one program (all its declarations, imports already merged)."""

    def __init__(self, imports: Imports | None = None) -> None:
        self.u = Unifier()
        self.imports = imports or Imports()
        self.u.visible = lambda name: self.lookup_var(name) is not None
        self.u.levels.stamp_of = self._stamp_of
        self.scopes: list[Scope] = [Scope()]
        self.cons = Consumption(self._vars_by_uid, self._is_prim_var)
        # Results of expressions the AST shares, to reuse rather than re-check.
        self._checked: dict[int, tuple[Type, Alias]] = {}
        self._uids = itertools.count()
        self._visited: list[Any] = []
        self._builtin_cache: dict[str, Scheme] = {}
        # The inference sizes made for named sizes in this declaration.
        self._size_uses: dict[str, SizeUse] = {}
        # The `id`s of this declaration's sections of the built-in `++`.
        self._concat_sections: set[int] = set()
        # This declaration's type parameters (its local functions' too),
        # and the uses of polymorphic functions whose type parameters may
        # not be functions, checked once types are inferred.
        self._tparams: dict[str, TypeParamInfo] = {}
        self._instances: list[Instance] = []
        # This declaration's uses of the built-in `==`: the operator's place
        # and the operands' type.
        self._equalities: list[tuple[Loc, Type]] = []
        # Where each file's type abbreviations are defined, by (file, name).
        self._type_decls: dict[tuple[str, str], Loc] = {}

    # ================================================================ scopes

    @property
    def depth(self) -> int:
        return len(self.scopes)

    def push(self) -> None:
        self.scopes.append(Scope())

    def pop(self) -> None:
        self.scopes.pop()

    def lookup_var(self, name: str) -> VarInfo | None:
        for scope in reversed(self.scopes):
            if name in scope.vars:
                if scope is self.scopes[0] and self._hidden(name):
                    return None
                return scope.vars[name]
        return None

    def _hidden(self, name: str) -> bool:
        """Whether top-level `name` comes only from a file this one does not
        import.  A built-in's name stays the definition's, as later stages
        see it (they know no files)."""
        from futgen.frontend.prelude import SIGNATURES

        return (self.imports.hidden(name) and name not in SIGNATURES
                and name not in BUILTIN_BINOPS)

    def lookup_type(self, name: str) -> Any:
        for scope in reversed(self.scopes):
            if name in scope.types:
                return scope.types[name]
        return None

    def bind_var(
        self,
        name: str,
        t: Type,
        loc: Loc,
        aliases: Alias = NO_ALIAS,
        consumable: str | None = None,
        scheme: Scheme | None = None,
        is_global: bool = False,
        exact: bool = False,
    ) -> VarInfo:
        """Bind `name`; `exact` gives it alias `aliases` rather than itself
        plus `aliases` (local functions alias only their closure)."""
        uid = f"{name}#{next(self._uids)}"
        if self.is_prim(t):
            al: Alias = NO_ALIAS
        elif exact:
            al = aliases
        else:
            al = self_alias(uid, self.zonk(t), aliases)
        info = VarInfo(
            uid,
            name,
            scheme or Scheme((), (), t),
            loc,
            self.depth,
            al,
            consumable,
            is_global,
            self.u.issued,
        )
        self.scopes[-1].vars[name] = info
        return info

    def _innermost_stamp(self, name: str) -> int | None:
        """The stamp of the variable `name` denotes here, or None."""
        v = self.lookup_var(name)
        return None if v is None else v.stamp

    def _stamp_of(self, name: str) -> int | None:
        """The stamp of the oldest variable `name` in scope (a shadowed one
        may be what a size names), or None."""
        stamps = [s.vars[name].stamp for s in self.scopes if name in s.vars]
        return min(stamps, default=None)

    def is_prim(self, t: Type) -> bool:
        """Whether values of `t` cannot share memory: no arrays in it, now or later."""
        t = self.u.shallow(t)
        match t:
            case TypeVar(name):
                c = self.u.constraints.get(name)
                return c is not None and c.prims is not None
            case Scalar():
                return True
            case Tuple(es):
                return all(self.is_prim(x) for x in es)
            case Record(fs):
                return all(self.is_prim(x) for _, x in fs)
        return False

    def err(self, msg: str, loc: Loc | None) -> CompileError:
        return CompileError(msg, loc)

    # ============================================================ type syntax

    def resolve(self, te: S.TypeExp, anon: str = "any") -> Type:
        """The semantic type of a type expression.

        `anon` says what an anonymous size `[]` means: "any" (a size known at
        run time), "fresh" (a new inference variable, for parameters) or
        "result" (fresh, and so is each name of an existential `?[n].` outside
        function types: a return type's sizes are the body's).
        """
        match te:
            case S.TEName(name, args, loc):
                return self._resolve_name(name, args, loc, anon)
            case S.TEArray(dim, elem, loc):
                inner = self.resolve(elem, anon)
                shown = elem.name if isinstance(elem, S.TEName) and not elem.args else inner
                check_array_element(elem, str(shown), self.lookup_type, loc)
                return array_of(inner, (self.resolve_dim(dim, anon),))
            case S.TETuple(elems, _):
                if len(elems) == 1:
                    return self.resolve(elems[0], anon)
                return Tuple(tuple(self.resolve(e, anon) for e in elems))
            case S.TERecord(fields, loc):
                typed = [(f, self.resolve(t, anon)) for f, t in fields]
                return self.record_type(typed, loc, "record type")
            case S.TEArrow(pname, param, ret, _):
                anon = "fresh" if anon == "result" else anon
                if pname is not None:
                    self.push()
                    self.bind_var(pname, I64, te.loc)
                    p = self.resolve(param, anon)
                    r = self.resolve(ret, anon)
                    self.pop()
                    return Arrow(pname, p, r)
                return Arrow(None, self.resolve(param, anon), self.resolve(ret, anon))
            case S.TEUnique(inner, loc):
                t = self.resolve(inner, anon)
                return make_unique(t)
            case S.TEExist(names, body, loc):
                check_existentials_witnessed(te)
                # Each name is a size of its own that no caller can name; so
                # are sizes computed from them (`?[k].([k]a, [n - k]a)`).
                # In a return type each name is one size of the body's.
                self.push()
                for n in names:
                    self.scopes[-1].types[f"[{n}]"] = (
                        self.u.fresh_size() if anon == "result"
                        else self.u.anonymous_size(existential=True))
                    self.bind_var(n, I64, loc, consumable="a size")
                try:
                    t = self.resolve(body, anon)
                finally:
                    self.pop()
                hidden = set(names)
                return map_dims(t, lambda d: self.u.anonymous_size(existential=True)
                                 if isinstance(d, SizeExpr | SizeProd)
                                 and dim_names(d) & hidden else d)
        raise UnsupportedFeature(
            f"type expression {type(te).__name__}", getattr(te, "loc", None)
        )

    def record_type(self, fields: list[tuple[str, Type]], loc: Loc, what: str) -> Type:
        """The record (or tuple, for fields 0..n-1) type of named field types."""
        names = [f for f, _ in fields]
        if len(set(names)) != len(names):
            dups = sorted({f for f in names if names.count(f) > 1})
            raise self.err(f"Duplicate fields in {what}: {', '.join(dups)}.", loc)
        return _record_or_tuple(tuple(sorted(fields, key=lambda f: f[0])))

    def _resolve_name(self, name: str, args: list, loc: Loc, anon: str) -> Type:
        if name in PRIMS and not args:
            return Scalar(name)
        found = self.lookup_type(name)
        if found is None:
            raise self.err(f'Unknown type "{name}".', loc)
        if isinstance(found, TypeAbbrev):
            return self._expand_abbrev(name, found, args, loc, anon)
        if args:
            raise self.err(f'Type "{name}" takes no arguments.', loc)
        return found

    def _expand_abbrev(
        self, name: str, ab: TypeAbbrev, args: list, loc: Loc, anon: str
    ) -> Type:
        if len(args) != len(ab.params):
            raise self.err(
                f'Type "{name}" expects {len(ab.params)} arguments, given {len(args)}.',
                loc,
            )
        # Arguments are resolved in the caller's scope, the body in the
        # top-level scope plus the parameters: `pair b a` must not see `a`
        # rebound to `b`, nor the body a type parameter of the caller.
        bound: dict[str, Any] = {}
        for p, a in zip(ab.params, args):
            if isinstance(p, S.SizeParam):
                if not isinstance(a, (S.DimName, S.DimConst, S.DimAny, S.DimExpr)):
                    raise self.err(
                        f'Type "{name}": size argument expected for [{p.name}].', loc
                    )
                bound[f"[{p.name}]"] = self.resolve_dim(a, anon)
            else:
                if isinstance(a, (S.DimName, S.DimConst, S.DimAny, S.DimExpr)):
                    raise self.err(
                        f'Type "{name}": type argument expected for \'{p.name}.', loc
                    )
                bound[p.name] = self.resolve(a, anon)
        saved = self.scopes
        self.scopes = [saved[0], Scope(types=bound)]
        try:
            return self.resolve(ab.body, anon)
        finally:
            self.scopes = saved

    def resolve_dim(self, d: S.DimExp, anon: str = "any") -> Dim:
        match d:
            case S.DimConst(v, _):
                return SizeConst(v)
            case S.DimAny(_):
                return (
                    self.u.fresh_size() if anon in ("fresh", "result")
                    else self.u.anonymous_size()
                )
            case S.DimName(name, loc):
                bound = self.lookup_type(f"[{name}]")
                if bound is not None:
                    return bound
                v = self.lookup_var(name)
                if v is None:
                    raise self.err(f'Unknown size "{name}".', loc)
                self.unify(
                    v.scheme.type, I64, loc, f'size "{name}" must be of type i64'
                )
                return SizeVar(name)
            case S.DimExpr(expr, _):
                self.cons.enter(self.depth + 1, "size expression")
                t, _ = self.check(expr)
                self.cons.leave()
                self.unify(t, I64, expr.loc, "a size expression must have type i64")
                return self.size_of_expr(expr) or self.u.anonymous_size()
        raise AssertionError(d)

    # ============================================================ unification

    def unify(
        self, t1: Type, t2: Type, loc: Loc | None, context: str, lenient=False
    ) -> None:
        try:
            self.u.unify(t1, t2, lenient)
        except UnifyError as e:
            raise self.err(f"{context}: {e}", loc) from None

    def zonk(self, t: Type) -> Type:
        return self.u.zonk(t)

    def instantiate(self, s: Scheme, e: S.Expr | None = None) -> Type:
        """A fresh instance of `s`, used by expression `e` (a name)."""
        if not s.tvars and not s.svars:
            return s.type
        tsub = {v: self.u.fresh_type() for v in s.tvars}
        self.u.unlifted.update(tsub[v].name for v in s.unlifted)
        ssub = {v: self.u.fresh_size() for v in s.svars}
        if e is not None:
            self._note_size_uses(s, ssub, e)
            fname = getattr(e, "full_name", None) or getattr(e, "op", "")
            self._instances += [Instance(tsub[v], v, level, fname, e.loc)
                                for v, level in s.levels.items()]
        return self._foreign_exprs(_substitute(self.zonk(s.type), tsub, ssub), ssub)

    def _note_size_uses(self, s: Scheme, ssub: dict[str, SizeVar], e: S.Expr) -> None:
        """Note the sizes an instance of `s` at `e` made for the size
        parameters its arguments must determine: those the program wrote
        and that appear as sizes of their own (not only inside products or
        size expressions, which are matched at run time)."""
        fname = getattr(e, "full_name", None) or getattr(e, "op", "")
        in_exprs: set[str] = set()
        map_dims(s.type, lambda d: in_exprs.update(dim_names(d))
                  if isinstance(d, SizeExpr | SizeProd) else None)
        for v, d in ssub.items():
            if v.startswith("?"):  # a size the declaration inferred: known at run time
                self.u.met_anonymous.add(d.name)
            elif v not in in_exprs:
                self._size_uses[d.name] = SizeUse(v, fname, e.loc)

    def _foreign_exprs(self, t: Type, sizes: dict[str, SizeVar]) -> Type:
        """`t` with the size expressions that read the names of `sizes` (a
        callee's size parameters, which mean other sizes at the use, given
        by `sizes`; a size expression is evaluated in the scope of its use)
        replaced: in a parameter's type by a fresh size, which the
        argument's then gives (so that `[2 ** k]` at `[2 ** (i + 1)]` is
        matched as written), in a result by an anonymous one."""
        def foreign(d: Dim) -> bool:
            return isinstance(d, SizeExpr) and bool(size_names(d) & sizes.keys())

        def param_size(d: Dim) -> Dim:
            if not foreign(d):
                return d
            v = self._run_time_size()
            self.u.expr_sizes[v.name] = {sizes[n] for n in dim_names(d) & sizes.keys()}
            self.u.expr_params[v.name] = d
            return v

        if isinstance(t, Arrow):
            param = map_dims(t.param, param_size)
            return Arrow(t.param_name, param, self._foreign_exprs(t.ret, sizes))
        return map_dims(t, lambda d: self.u.anonymous_size() if foreign(d) else d)

    def _run_time_size(self) -> SizeVar:
        """A fresh inference size that is known at run time when nothing
        else determines it."""
        d = self.u.fresh_size()
        self.u.met_anonymous.add(d.name)
        return d

    # ============================================================ expressions

    def check(
        self, e: S.Expr, expected: Type | None = None, context: str | None = None
    ) -> tuple[Type, Alias]:
        """Infer the type of `e` (unified with `expected` if given) and its aliases.

        `context` names what demands `expected` (a return type, an
        ascription); the error then shows both types as Futhark's does.
        """
        if id(e) in self._checked:
            return self._checked.pop(id(e))
        method = getattr(self, "_check_" + type(e).__name__, None)
        if method is None:
            raise UnsupportedFeature(f"expression {type(e).__name__}", e.loc)
        t, al = method(e, expected)
        if expected is not None and context is None:
            self.unify(t, expected, e.loc, "type mismatch")
        elif expected is not None:
            try:
                self.u.unify(expected, t)
            except UnifyError as ex:
                raise self.err(
                    f"{context}: {ex}\nExpected: {self.zonk(expected)}\n"
                    f"Actual:   {self.zonk(t)}",
                    e.loc,
                ) from None
        e.ty = t
        self._visited.append(e)
        return t, al

    def _check_Literal(self, e: S.Literal, _exp) -> tuple[Type, Alias]:
        if e.kind == "bool":
            return BOOL, NO_ALIAS
        if e.suffix is not None:
            if e.kind == "float" and e.suffix not in FLOATS:
                raise self.err(f"invalid suffix {e.suffix} for a float literal", e.loc)
            return Scalar(e.suffix), NO_ALIAS
        prims = NUMERIC if e.kind == "int" else FLOATS
        c = Constraint(prims=frozenset(prims), origin=e.loc, literal=e.kind)
        return self.u.fresh_type(c), NO_ALIAS

    def _check_Var(self, e: S.Var, _exp) -> tuple[Type, Alias]:
        if e.qual:
            return self.instantiate_function(self.builtin_scheme(e.full_name, e.loc), e), NO_ALIAS
        v = self.lookup_var(e.name)
        if v is None:
            if e.name in BUILTIN_BINOPS:
                return self._op_type(e.name, e.loc), NO_ALIAS
            return self.instantiate_function(self.builtin_scheme(e.name, e.loc), e), NO_ALIAS
        self.cons.observe(v, e.loc)
        named_function = v.is_global or v.consumable == "a function"
        if named_function and isinstance(v.scheme.type, Arrow):
            t = self.instantiate_function(v.scheme, e)
        else:
            t = self.instantiate(v.scheme, e)
        return t, (NO_ALIAS if self.is_prim(t) else v.aliases)

    def instantiate_function(self, s: Scheme, e: S.Expr) -> Type:
        """An instance of a named function's scheme, whose unnamed sizes
        (`[]t`, `?[k].`) are new at each use, as Futhark's are."""
        fresh: dict[AnySize, AnySize] = {}

        def refresh(d: Dim) -> Dim:
            if isinstance(d, AnySize):
                return fresh.setdefault(d, self.u.anonymous_size())
            return d

        t = map_dims(self.instantiate(s, e), refresh)
        fname = f'"{getattr(e, "full_name", "")}"'
        for d in _anonymous_ids(_final_result(s.type)):  # its own existentials
            if AnySize(d) in fresh:
                self.u.call_existentials[fresh[AnySize(d)].id] = (e.loc, fname)
        if self.lookup_var(getattr(e, "name", "")) is None:  # a built-in's existential result
            ids = _anonymous_ids(_final_result(t))
            self.u.call_results |= ids
            for i in ids:
                self.u.note_computed(AnySize(i), e.loc, fname)
        return t

    def builtin_scheme(self, name: str, loc: Loc) -> Scheme:
        from futgen.frontend.prelude import SIGNATURES

        if name in self._builtin_cache:
            return self._builtin_cache[name]
        header = SIGNATURES.get(name)
        if header is None:
            raise self.err(f'Unknown name "{name}".{self.imports.why_unknown(name)}', loc)
        from futgen.frontend.parser import parse_header

        decl = parse_header(name, header)
        # Checked apart from the program: its type parameters are not those
        # of the local functions being checked.
        saved_scopes, saved_visited = self.scopes, self._visited
        saved_tparams = self.u.levels.type_params
        self.scopes, self._visited, self.u.levels.type_params = [Scope()], [], {}
        try:
            scheme = self._decl_scheme(decl)
        finally:
            self.scopes, self._visited = saved_scopes, saved_visited
            self.u.levels.type_params = saved_tparams
        self._builtin_cache[name] = scheme
        return scheme

    def _decl_scheme(self, decl: S.ValDecl) -> Scheme:
        """The type scheme of a function from its header alone (params annotated)."""
        self.push()
        tvars, svars = self._bind_tparams(decl.tparams)
        params = []
        for p in decl.params:
            pt = self.param_type(p)
            self.bind_pattern(p, pt, NO_ALIAS, param=True)
            params.append(pt)
        names = [_param_name(p) for p in decl.params]
        ret = (
            self.resolve(decl.ret, "any")
            if decl.ret is not None
            else self.u.fresh_type()
        )
        self.pop()
        t = ret
        for name, p in reversed(list(zip(names, params))):
            t = Arrow(name, p, t)
        return Scheme(tvars, svars, t, _levels(decl.tparams))

    def _op_type(self, op: str, loc: Loc) -> Type:
        """The type of a built-in binary operator used as a function."""
        if op in BOOL_OPS:
            return Arrow(None, BOOL, Arrow(None, BOOL, BOOL))
        if op == "++":  # [n]a -> [m]a -> [n + m]a in Futhark: two sizes
            a = self.u.fresh_type()
            left, right = (Array(a, (self.u.anonymous_size(),)) for _ in range(2))
            return Arrow(
                None, left, Arrow(None, right, Array(a, (self.u.anonymous_size(),), True))
            )
        if op in ("|>", "<|"):
            a, b = self.u.fresh_type(), self.u.fresh_type()
            f = Arrow(None, a, b)
            return (
                Arrow(None, a, Arrow(None, f, b))
                if op == "|>"
                else Arrow(None, f, Arrow(None, a, b))
            )
        a = self.u.fresh_type(self._op_constraint(op, loc))
        res = BOOL if op in ORDER_OPS | EQ_OPS else a
        return Arrow(None, a, Arrow(None, a, res))

    def _op_constraint(self, op: str, loc: Loc) -> Constraint:
        if op in EQ_OPS:
            return Constraint(equality=True, origin=loc)
        if op in INT_OPS:
            prims = INTS + (("bool",) if op in ("&", "|", "^") else ())
            return Constraint(prims=frozenset(prims), origin=loc)
        if op in ORDER_OPS:
            return Constraint(prims=frozenset(NUMERIC + ("bool",)), origin=loc)
        return Constraint(prims=frozenset(NUMERIC), origin=loc)

    def _check_TupleExp(self, e: S.TupleExp, _exp) -> tuple[Type, Alias]:
        if len(e.elems) == 1:
            return self.check(e.elems[0])
        ts, als = [], []
        for x in e.elems:
            t, a = self.check(x)
            ts.append(t)
            als.append(a)
        return Tuple(tuple(ts)), tuple(als)

    def _check_RecordExp(self, e: S.RecordExp, _exp) -> tuple[Type, Alias]:
        fields: dict[str, Type] = {}
        first: dict[str, Loc] = {}
        als: dict[str, Alias] = {}
        for name, x in e.fields:
            if name in fields:
                raise self.err(
                    f'Field "{name}" previously defined at {first[name]}.', x.loc
                )
            first[name] = x.loc
            t, als[name] = self.check(x)
            fields[name] = t
        rt = _record_or_tuple(tuple(sorted(fields.items())))
        order = sorted(als, key=int) if isinstance(rt, Tuple) else sorted(als)
        return rt, tuple(als[f] for f in order)

    def _check_ArrayLit(self, e: S.ArrayLit, exp) -> tuple[Type, Alias]:
        elem: Type = self.u.fresh_type()
        if exp is not None:
            et = self.u.shallow(exp)
            if isinstance(et, Array):
                elem = row_type(et)
        for x in e.elems:
            t, _ = self.check(x)
            self.unify(
                elem,
                t,
                x.loc,
                "all elements of an array literal must have the same type",
            )
        z = self.zonk(elem)
        if isinstance(z, TypeVar) and self.lookup_type(f"'{z.name}"):
            raise self.err(f'An array element may not have the lifted type "{z.name}" '
                           "(its values may differ in size).", e.loc)
        return array_of(elem, (SizeConst(len(e.elems)),), True), NO_ALIAS

    def _check_Range(self, e: S.Range, _exp) -> tuple[Type, Alias]:
        t, _ = self.check(e.start)
        self.unify(
            t,
            self.u.fresh_type(Constraint(prims=frozenset(INTS), origin=e.loc)),
            e.start.loc,
            "range bounds must be integers",
        )
        for part in (e.second, e.end):
            if part is not None:
                pt, _ = self.check(part)
                self.unify(pt, t, part.loc, "range bounds must have the same type")
        return Array(t, (self._range_size(e, t),), True), NO_ALIAS

    def _range_size(self, e: S.Range, t: Type) -> Dim:
        """The size of a range of bounds of type `t`, by Futhark's rules:
        `0..<n`, `0..1..<n` and `1..2...n` of i64 bounds have size `n`;
        `a..<b` and `a...b` a size computed from their bounds (anonymous
        here, known at run time); every other range an unknown size."""
        start = _int_literal(e.start)
        second = _int_literal(e.second) if e.second is not None else None
        known = (e.kind == "..<" and start == 0 and (e.second is None or second == 1)) or (
            e.kind == "..." and start == 1 and second == 2)
        computed = e.second is None and e.kind in ("..<", "...")
        t = self.u.shallow(t)
        if not isinstance(t, Scalar):
            return self.u.anonymous_size()  # not yet known to be i64 or not
        if t != I64 or not (known or computed):
            d = self.u.existential_size(f"is unknown length of range at {e.loc}.")
            self.u.note_computed(d, e.loc, "the range")
            return d
        return (self.size_of_expr(e.end) if known else None) or self.u.anonymous_size()

    def _check_Project(self, e: S.Project, _exp) -> tuple[Type, Alias]:
        t, al = self.check(e.expr)
        try:
            ft = self.u.require_field(t, e.field, e.loc)
        except UnifyError as ex:
            raise self.err(f'Cannot access field "{e.field}": {ex}', e.loc) from None
        return ft, field_alias(self.zonk(t), al, e.field)

    def _check_Index(self, e: S.Index, _exp) -> tuple[Type, Alias]:
        t, al = self.check(e.expr)
        t = self.u.shallow(t)
        if not isinstance(t, Array):
            if isinstance(t, TypeVar) and t.name.startswith("?"):
                elem = self.u.fresh_type()
                shape = tuple(self.u.anonymous_size() for _ in e.indices)
                self.unify(t, Array(elem, shape), e.loc, "indexing")
                t = self.u.shallow(t)
            else:
                raise self.err(f"Cannot index a value of type {self.zonk(t)}.", e.loc)
        assert isinstance(t, Array)
        if len(e.indices) > len(t.shape):
            raise self.err(
                f"Cannot index {len(e.indices)} dimensions of an array of type {self.zonk(t)}.",
                e.loc,
            )
        res = self._sliced_type(t, e.indices, exact=e.loc)
        return res, (NO_ALIAS if self.is_prim(res) else flatten_alias(al))

    def _sliced_type(
        self, t: Array, indices: list[S.DimIndex], exact: Loc | None = None,
        checked: bool = False,
    ) -> Type:
        """Check the indices of `t[indices]` (unless `checked`) and return its
        type.  A slice in an index expression (at `exact`) has Futhark's size
        where the checker can name it (`_slice_size`); other sliced sizes are
        anonymous, as are all of an in-place update's, which Futhark leaves
        flexible."""
        if not checked:
            self._check_indices(indices[: len(t.shape)])
        shape: list[Dim] = []
        for idx, d in zip(indices, t.shape):
            if not isinstance(idx, S.IdxFix):
                size = self._slice_size(self.u.dim(d), idx, exact) if exact else None
                shape.append(size or self.u.anonymous_size())
        return array_of(t.elem, tuple(shape) + t.shape[len(indices) :])

    def _slice_size(self, d: Dim, idx: S.IdxSlice, loc: Loc) -> Dim | None:
        """The size of slice `idx` of a dimension of size `d` by Futhark's
        rules, or None where it is unknown or the checker cannot name it.
        With stride 1, `i:j` has size `j - i`, a left-out `i` being 0 and a
        left-out `j` being `d` (so `:` keeps `d`, `:j` is `j`); with stride
        -1, `::-1` keeps `d` and `i:j:-1` has size `i - j`; every other
        slice has a size known only at run time."""
        stride = 1 if idx.stride is None else _signed_int_literal(idx.stride)
        if stride == 1:
            end = self.size_of_expr(idx.end) if idx.end is not None else d
            if idx.start is None or _int_literal(idx.start) == 0:
                return end
            return self._size_minus(end, self.size_of_expr(idx.start), loc)
        if stride == -1 and idx.start is None and idx.end is None:
            return d
        if stride == -1 and idx.start is not None and idx.end is not None:
            return self._size_minus(self.size_of_expr(idx.start), self.size_of_expr(idx.end), loc)
        return None

    def _size_minus(self, left: Dim | None, right: Dim | None, loc: Loc) -> Dim | None:
        """The size `left - right`, where both are sizes the program can
        name: constants fold (a negative size is an error at run time), the
        rest is a size expression, one size with any written the same."""
        if isinstance(left, SizeConst) and isinstance(right, SizeConst):
            return SizeConst(left.value - right.value) if left.value >= right.value else None
        return self._size_arith("-", left, right, loc)

    def _size_arith(self, op: str, left: Dim | None, right: Dim | None, loc: Loc) -> Dim | None:
        """The size `left op right` as a size expression, if both are sizes
        a program can name and `op` is the built-in one (later stages
        evaluate the expression in the scope of its use)."""
        if not (_nameable(left) and _nameable(right)) or self.lookup_var(op) is not None:
            return None
        expr = S.BinOp(op, _size_expr(left, loc), _size_expr(right, loc), loc=loc, ty=I64)
        return size_operation(op, left, right, expr)

    def _check_indices(self, indices: list[S.DimIndex]) -> None:
        for idx in indices:
            if isinstance(idx, S.IdxFix):
                self._check_index_value(idx.index)
                continue
            for part in (idx.start, idx.end, idx.stride):
                if part is not None:  # Futhark: slice bounds are i64
                    self.check(part, I64, "A slice bound must have type i64")

    def _check_index_value(self, x: S.Expr) -> None:
        t, _ = self.check(x)
        c = Constraint(prims=frozenset(INTS), origin=x.loc)
        self.unify(t, self.u.fresh_type(c), x.loc, "an index must be an integer")

    def _check_BinOp(self, e: S.BinOp, _exp) -> tuple[Type, Alias]:
        op = e.op
        user = self.lookup_var(op)
        if op == "|>":
            return self.apply(e, e.rhs, [e.lhs])
        if op == "<|":
            return self.apply(e, e.lhs, [e.rhs])
        if user is not None or op not in BUILTIN_BINOPS:
            fn = S.Var(op, loc=e.op_loc or e.loc)
            return self.apply(e, fn, [e.lhs, e.rhs])
        if op in BOOL_OPS:
            for x in (e.lhs, e.rhs):
                self.check(x, BOOL)
            return BOOL, NO_ALIAS
        if op == "++":
            return self._check_concat(e), NO_ALIAS
        t1, _ = self.check(e.lhs)
        t2, _ = self.check(e.rhs)
        a = self.u.fresh_type(self._op_constraint(op, e.op_loc or e.loc))
        self.unify(t1, a, e.lhs.loc, f'left operand of "{op}"')
        self.unify(t2, a, e.rhs.loc, f'operands of "{op}" must have the same type')
        if op == "==":
            self._equalities.append((e.op_loc or e.loc, a))
        return (BOOL if op in ORDER_OPS | EQ_OPS else t1), NO_ALIAS

    def _check_concat(self, e: S.BinOp) -> Type:
        """`[n]t ++ [m]t` is `[n + m]t` (the prelude's type): the operands'
        rows must agree, not their sizes; a sum with an unknown size is
        one no other size equals."""
        arrays = []
        for x in (e.lhs, e.rhs):
            t, _ = self.check(x)
            template = Array(self.u.fresh_type(), (self.u.fresh_size(),))
            self.unify(template, t, x.loc, 'operands of "++" must be arrays')
            arrays.append(self.zonk(t))
        a1, a2 = arrays
        assert isinstance(a1, Array) and isinstance(a2, Array)
        self.unify(row_type(a1), row_type(a2), e.loc,
                   'operands of "++" must have the same row type', True)
        d = self._size_arith("+", a1.shape[0], a2.shape[0], e.loc)
        return Array(a1.elem, (d or self.u.existential_size(),) + a1.shape[1:], True)

    def _check_UnOp(self, e: S.UnOp, _exp) -> tuple[Type, Alias]:
        t, _ = self.check(e.expr)
        if e.op == "-":
            c = Constraint(prims=frozenset(NUMERIC), origin=e.loc)
        else:
            c = Constraint(prims=frozenset(INTS + ("bool",)), origin=e.loc)
        self.unify(t, self.u.fresh_type(c), e.loc, f'operand of unary "{e.op}"')
        return t, NO_ALIAS

    def _check_Apply(self, e: S.Apply, _exp) -> tuple[Type, Alias]:
        return self.apply(e, e.fn, e.args)

    def apply(self, e: S.Expr, fn: S.Expr, args: list[S.Expr]) -> tuple[Type, Alias]:
        """Check `fn args...`: consumption of unique parameters, dependent sizes.

        Arguments that are lambdas or sections are checked after the others,
        so that `map (\\x -> x.0) xs` learns the type of `x` from `xs`.
        """
        ft, fn_alias = self.check(fn)
        params: list[Type] = []
        results: list[Type] = []  # after each argument
        pending: dict[str, Dim] = {}
        cur = ft
        for i, arg in enumerate(args):
            cur = self.u.shallow(cur)
            if isinstance(cur, TypeVar) and cur.name.startswith("?"):
                p, r = self.u.fresh_type(), self.u.fresh_type()
                self.u.unify(cur, Arrow(None, p, r))
                cur = self.u.shallow(cur)
            if not isinstance(cur, Arrow):
                raise self.err(_not_applicable(fn, i, len(args), self.zonk(ft)), arg.loc)
            params.append(cur.param)
            cur = self._dependent_result(cur, arg, pending)
            results.append(cur)
        self.u.sizes.update(pending)
        order = sorted(range(len(args)), key=lambda i: _is_function_literal(args[i]))
        arg_aliases: list[Alias] = [NO_ALIAS] * len(args)
        for i in order:
            hint = params[i] if _is_function_literal(args[i]) else None
            before = dict(self.cons.consumed)
            at, al = self.check(args[i], hint)
            arg_aliases[i] = al
            # As they were: a failed unification may have bound parts of them.
            expected, actual = self.zonk(params[i]), self.zonk(at)
            try:
                self.u.unify(params[i], at)
            except UnifyError as ex:
                raise self.err(
                    f"{cannot_apply(fn, args[i], i)}: expected type {expected}, got {actual} "
                    f"({ex}).{self._defaulted_note(fn, i)}",
                    args[i].loc,
                ) from None
            check_unscoped_arg(fn, i, args[i], params[i], at, self.u)
            self._check_functional_arg(fn, i, at, params[i], before, args[i])
            unlifted = _type_var_names(ft) & self.u.unlifted
            check_dependent_arg(fn, i, args[i], params[i], at, results[i], unlifted, self.u)
        if (
            isinstance(fn, S.Var)
            and fn.full_name in FRESH_RESULT_BUILTINS
            and not fn.qual
        ):
            self._consume_args(fn, params, args, arg_aliases)
            return cur, NO_ALIAS
        kept = [fn_alias, *self._consume_args(fn, params, args, arg_aliases)]
        app = self.cons.fresh(f"the result of applying {function_text(fn)} (at {e.loc})")
        return cur, self._result_aliases(cur, [*kept, frozenset({app})])

    def _check_functional_arg(
        self, fn: S.Expr, i: int, at: Type, param: Type, before: dict, arg: S.Expr
    ) -> None:
        """A function passed as argument may neither consume anything when
        evaluated nor consume more than the parameter's type allows."""
        at = self.zonk(at)
        if not isinstance(at, Arrow):
            return
        what = f"Argument #{i + 1} of {function_text(fn)}"
        self.cons.check_functional_arg(before, arg.loc, what)
        if self._is_builtin(arg):
            return  # its `*t` results lost their `*` with `t`
        why = function_subtype_error(at, self.zonk(param))
        if why is not None:
            raise self.err(f"{cannot_apply(fn, arg, i)}: {why}.", arg.loc)

    def _defaulted_note(self, fn: S.Expr, i: int) -> str:
        """Why `fn`'s parameter #i+1 has its type, if defaulting gave it
        (Futhark warns where it defaults a function's type)."""
        info = self.lookup_var(fn.name) if isinstance(fn, S.Var) and not fn.qual else None
        if info is None or i not in info.scheme.defaulted:
            return ""
        default, origin = info.scheme.defaulted[i]
        return (f'\nThe type of parameter #{i + 1} of "{fn.name}" was ambiguous (at {origin}): '
                f"Defaulting ambiguous type to {default}.")

    def _is_builtin(self, e: S.Expr) -> bool:
        return isinstance(e, S.Var) and self.lookup_var(e.name) is None

    def _consume_args(
        self, fn: S.Expr, params: list[Type], args: list[S.Expr], als: list[Alias]
    ) -> list[Alias]:
        """Consume the arguments passed for unique parameters; return the
        aliases of the others, which the result may alias."""
        kept: list[Alias] = []
        for i, arg in enumerate(args):
            if is_unique(self.zonk(params[i])):
                others = [(als[j], args[j].loc) for j in range(len(args)) if j != i]
                self.cons.check_consumed_arg(als[i], others, arg.loc)
                self.cons.consume(als[i], arg.loc, f"argument #{i + 1} of {function_text(fn)}")
            else:
                kept.append(als[i])
        return kept

    def _dependent_result(
        self, arrow: Arrow, arg: S.Expr, pending: dict[str, Dim]
    ) -> Type:
        """The result type of `arrow` applied to `arg`, substituting a named size."""
        if arrow.param_name is None:
            return arrow.ret
        # Through a fresh inference size, bound to the argument's size only
        # once all parameters are substituted (`pending`), so that a later
        # parameter of the same name cannot capture it (`tabulate_2d m n`,
        # whose parameters are `n` and `m`).
        v = self.u.fresh_size()
        pending[v.name] = self.size_of_expr(arg) or self._argument_size(arg)
        ret = _substitute(self.zonk(arrow.ret), {}, {arrow.param_name: v})
        return self._foreign_exprs(ret, {arrow.param_name: v})

    def _argument_size(self, arg: S.Expr) -> AnySize:
        """The size an argument the type system cannot name (`xs[0]`) gives
        a dependent result: anonymous, but Futhark's is the expression
        itself (unless it holds a binding), so the variables it reads are
        noted for the scope of inferred parameter sizes (`size_scope.py`)."""
        d = self.u.anonymous_size()
        if not has_binding(arg):
            self.u.arg_reads[d.id] = frozenset(reads(arg))
        return d

    def size_of_expr(self, e: S.Expr) -> Dim | None:
        """The size an expression denotes, when the type system can name it:
        an integer literal, a variable in scope, a product of those, or an
        integer expression of them (`B + 1`), applications of top-level or
        built-in functions included (`intsqrt n`, `i64.i32 n`)."""
        if isinstance(e, S.Literal) and e.kind == "int":
            return SizeConst(int(e.value))
        if isinstance(e, S.Var) and not e.qual and self.lookup_var(e.name) is not None:
            return SizeVar(e.name)
        if isinstance(e, S.Apply) and self._global_function(e.fn):
            args = [self.size_of_arg(a) for a in e.args]
            if all(a is not None for a in args):
                text = " ".join([e.fn.full_name, *args])  # type: ignore[union-attr]
                return SizeExpr(text, e)
        if isinstance(e, S.BinOp) and e.op in ("*", *SIZE_OPS):
            left, right = self.size_of_expr(e.lhs), self.size_of_expr(e.rhs)
            if left is None or right is None:
                return None
            return size_operation(e.op, left, right, e)
        return None

    def size_of_arg(self, e: S.Expr) -> str | None:
        """An argument of a function applied in a size expression, as the
        size's text (a composite one in parentheses), or None if it is not
        a size expression."""
        d = self.size_of_expr(e)
        if d is None:
            return None
        return str(d) if isinstance(e, S.Literal | S.Var) else f"({d})"

    def _global_function(self, fn: S.Expr) -> bool:
        """Whether `fn` names a function every scope sees the same: a
        top-level definition or a built-in (later stages evaluate a size
        expression in the scope of its use)."""
        if not isinstance(fn, S.Var):
            return False
        if fn.qual:
            return True  # i64.i32, f32.sqrt: the prelude's modules
        v = self.lookup_var(fn.name)
        if v is None:  # `length xs`: a built-in function of the prelude
            from futgen.frontend.prelude import SIGNATURES
            return fn.name in SIGNATURES
        return v.is_global

    def _result_aliases(self, res: Type, arg_aliases: list[Alias]) -> Alias:
        res = self.zonk(res)
        everything: frozenset = NO_ALIAS
        for a in arg_aliases:
            everything |= flatten_alias(a)
        return alias_by_uniqueness(res, everything)

    def _check_Lambda(self, e: S.Lambda, exp) -> tuple[Type, Alias]:
        expected_params: list[Type | None] = []
        cur = self.u.shallow(exp) if exp is not None else None
        for p in e.params:
            if isinstance(cur, Arrow):
                expected_params.append(cur.param)
                ret, name = cur.ret, _param_name(p)
                if cur.param_name is not None and name not in (None, cur.param_name):
                    # The lambda's own name for a dependent parameter.
                    ret = _substitute(self.zonk(ret), {}, {cur.param_name: SizeVar(name)})
                elif cur.param_name is not None and name is None:
                    # A dependent parameter the lambda does not name: its
                    # sizes are unknown in the lambda (Futhark's rule).
                    why = f'is the size "{cur.param_name}" of a parameter the lambda does not name.'
                    ret = _substitute(self.zonk(ret), {},
                                      {cur.param_name: self.u.existential_size(why)})
                cur = self.u.shallow(ret)
            else:
                expected_params.append(None)
        self.push()
        consumed_before = dict(self.cons.consumed)
        self.cons.enter(self.depth, "lambda")
        ptypes = []
        param_vars: list[VarInfo] = []
        for p, ex in zip(e.params, expected_params):
            pt = self._param_type(p)
            if ex is not None:
                self.unify(pt, ex, p.loc, "lambda parameter")
            param_vars += self.bind_pattern(p, pt, NO_ALIAS, param=True)
            ptypes.append(pt)
        # A `[]` of the return type is the body's size where the caller
        # can name it (a parameter), as for a named function.
        if e.ret is not None:
            self._check_return_names(e.params, e.ret)
        ret = self.resolve(e.ret, "result") if e.ret is not None else None
        body_t, body_al = self.check(e.body, ret, "Function body does not have expected type")
        check_parameter_scope(e.params, ptypes, self.u)
        if ret is not None:
            ret = self._visible_sizes(self.zonk(ret))
        self._check_function_result(
            "the lambda", ret, body_al, param_vars, bool(e.params), e.loc
        )
        free = self.cons.leave()
        # What the body consumed is its own (anything else is an error).
        self.cons.consumed = consumed_before
        self.pop()
        t = ret if ret is not None else body_t
        for p, pt in reversed(list(zip(e.params, ptypes))):
            t = Arrow(_param_name(p), pt, t)
        return t, self.cons.closure(free)

    def _check_function_result(
        self,
        what: str,
        ret: Type | None,
        body_al: Alias,
        params: list[VarInfo],
        has_params: bool,
        loc: Loc,
    ) -> None:
        """The result of a function with parameters may not alias a global
        constant; a declared unique result must be fresh."""
        if has_params:
            self.cons.check_result_aliases(body_al, loc)
        if ret is not None:
            self.cons.check_return(what, self.zonk(ret), body_al, params, loc)

    def _check_OpSection(self, e: S.OpSection, _exp) -> tuple[Type, Alias]:
        v = self.lookup_var(e.op)
        if v is not None:
            self.cons.observe(v, e.loc)
            return self.instantiate(v.scheme, e), v.aliases
        if e.op not in BUILTIN_BINOPS:
            return self.instantiate(self.builtin_scheme(e.op, e.loc), e), NO_ALIAS
        return self._op_type(e.op, e.loc), NO_ALIAS

    def _section_type(
        self, e: S.Expr, op: str, arg: S.Expr, left: bool
    ) -> tuple[Type, Alias]:
        opt, op_al = self._check_OpSection(S.OpSection(op, loc=e.loc), None)
        if op == "++" and self.lookup_var(op) is None:
            self._concat_sections.add(id(e))
        opt = self.u.shallow(opt)
        if not isinstance(opt, Arrow) or not isinstance(self.u.shallow(opt.ret), Arrow):
            raise self.err(f'Operator "{op}" is not binary.', e.loc)
        inner = self.u.shallow(opt.ret)
        assert isinstance(inner, Arrow)
        at, al = self.check(arg)
        known = opt.param if left else inner.param
        self.unify(known, at, arg.loc, f'operand of section "{op}"')
        other = inner.param if left else opt.param
        return Arrow(None, other, inner.ret), flatten_alias(al) | flatten_alias(op_al)

    def _check_LeftSection(self, e: S.LeftSection, _exp) -> tuple[Type, Alias]:
        return self._section_type(e, e.op, e.arg, left=True)

    def _check_RightSection(self, e: S.RightSection, _exp) -> tuple[Type, Alias]:
        return self._section_type(e, e.op, e.arg, left=False)

    def _check_ProjectSection(self, e: S.ProjectSection, _exp) -> tuple[Type, Alias]:
        r = self.u.fresh_type()
        t: Type = r
        for f in e.fields:
            t = self.u.require_field(t, f, e.loc)
        return Arrow(None, r, t), NO_ALIAS

    def _check_If(self, e: S.If, _exp) -> tuple[Type, Alias]:
        self.check(e.cond, BOOL)
        before = dict(self.cons.consumed)
        t1, a1 = self.check(e.then)
        after_then = self.cons.consumed
        self.cons.consumed = dict(before)
        t2, a2 = self.check(e.els)
        self.cons.consumed.update(after_then)
        self.unify(
            t1, t2, e.els.loc, "branches of if have different types", lenient=True
        )
        t = _anonymise_differing_sizes(self.zonk(t1), self.zonk(t2), self.u)
        if _exp is not None:
            try:
                self.u.unify(_exp, t)
            except UnifyError as ex:
                raise self.err(
                    f"The branches of if have types {self.zonk(t1)} and "
                    f"{self.zonk(t2)}, not the expected {self.zonk(_exp)}: {ex}",
                    e.loc,
                ) from None
        # A branch's result cannot be what the other branch consumed.
        consumed_here = frozenset(self.cons.consumed) - frozenset(before)
        return t, remove_alias(merge_alias(a1, a2), consumed_here)

    def _check_LetPat(self, e: S.LetPat, _exp) -> tuple[Type, Alias]:
        before = dict(self.cons.consumed)
        vt, val = self.check(e.value)
        if isinstance(self.u.shallow(vt), Arrow):
            self.cons.check_functional_arg(before, e.value.loc, "Let-bound expression")
        self._check_let_sizes(e)
        self.push()
        for n in e.sizes:
            self.bind_var(n, I64, e.loc).stamp = -1  # names a size that exists
        fresh = {n: self.u.fresh_size() for n in sorted(e.sizes)}
        self._size_uses.update({d.name: SizeUse(n, None, e.loc) for n, d in fresh.items()})
        pt = self.param_type(e.pat, fresh_sizes=fresh)
        try:
            self.u.unify(pt, vt)
        except UnifyError as ex:
            raise self.err(
                f"Pattern cannot match value of type {self.zonk(vt)}: {ex}", e.pat.loc
            ) from None
        self.bind_pattern(e.pat, pt, val)
        t, al = self.check(e.body)
        self.pop()
        return t, al

    def _check_let_sizes(self, e: S.LetPat) -> None:
        """`let [n] p = ...`: `n` must be the size of a value the pattern binds
        (Futhark's rule), not unused nor only inside a function type."""
        written = WrittenSizes()
        _pattern_size_names(e.pat, written)
        for n in e.sizes:
            if n in written.values or n in written.in_exprs:
                continue
            if n in written.in_functions:
                raise self.err(
                    f"Cannot bind [{n}] as it is never used as the size of a "
                    "concrete (non-function) value.",
                    e.loc,
                )
            raise self.err(f"Size [{n}] unused in pattern.", e.loc)

    def _check_LetFun(self, e: S.LetFun, _exp) -> tuple[Type, Alias]:
        decl = S.ValDecl(False, e.name, e.tparams, e.params, e.ret, e.value, e.loc)
        scheme, closure = self.check_function(decl, local=True)
        e.fun_ty = scheme.type
        self.push()
        self.bind_var(
            e.name,
            scheme.type,
            e.loc,
            closure,
            consumable="a function",
            scheme=scheme,
            exact=True,
        )
        t, al = self.check(e.body)
        self.pop()
        return t, al

    def _check_Update(self, e: S.Update, _exp) -> tuple[Type, Alias]:
        # As in Futhark, the indices and the value are evaluated before the
        # source is consumed, so they may use what the source aliases.
        if updates_inside(e.value, e.src):
            # `src with [i].f = v`: the value updates `src[i]` of the same
            # node `src`, whose check (and consumption) must happen once.
            st, sal = self.check(e.src)
            self._checked[id(e.src)] = (st, sal)
            vt, val = self.check(e.value)
        else:
            self._check_indices(e.indices)
            vt, val = self.check(e.value)
            st, sal = self.check(e.src)
        elem_t = self._indexed_type(st, e.indices, e.loc)
        self.unify(
            elem_t, vt, e.value.loc, "the value written by `with` has the wrong type"
        )
        if not self.is_prim(vt):
            self.cons.check_update_overlap(sal, val, e.value.loc)
        self.cons.consume(sal, e.src.loc, "the source of an in-place update")
        return make_unique(st) if isinstance(
            self.u.shallow(st), Array
        ) else st, NO_ALIAS

    def _indexed_type(self, t: Type, indices: list[S.DimIndex], loc: Loc) -> Type:
        t = self.u.shallow(t)
        if isinstance(t, TypeVar) and t.name.startswith("?"):
            arr = Array(
                self.u.fresh_type(), tuple(self.u.anonymous_size() for _ in indices)
            )
            self.unify(t, arr, loc, "in-place update")
            t = self.u.shallow(t)
        if not isinstance(t, Array) or len(indices) > len(t.shape):
            raise self.err(
                f"Cannot update a value of type {self.zonk(t)} at these indices.", loc
            )
        return self._sliced_type(t, indices, checked=True)

    def _check_RecordUpdate(self, e: S.RecordUpdate, _exp) -> tuple[Type, Alias]:
        st, sal = self.check(e.src)
        ft = st
        for f in e.fields:
            try:
                ft = self.u.require_field(ft, f)
            except UnifyError as ex:
                raise self.err(
                    f"with type that must be a record: {ex}", e.loc
                ) from None
        if updates_inside(e.value, e.src):
            # `src with f[i] = v` (parsed with `src.f` inside the value): src
            # was checked once above; the result, like an update's, is fresh.
            self._checked[id(e.src)] = (st, sal)
            self.check(e.value, ft)
            return st, NO_ALIAS
        # As in Futhark, the new value may change the field's sizes (not
        # where the record's type is not yet known).
        known = with_field_type(self.zonk(st), e.fields, ft) is not None
        expected = map_dims(self.zonk(ft), lambda _: self.u.fresh_size()) if known else ft
        vt, val = self.check(e.value, expected, f'Type mismatch when updating record field '
                                                f'"{".".join(e.fields)}"')
        rt = with_field_type(self.zonk(st), e.fields, nonunique(self.zonk(vt))) or st
        return rt, with_field_alias(self.zonk(rt), sal, e.fields, val)

    def _check_Loop(self, e: S.Loop, _exp) -> tuple[Type, Alias]:
        init = e.init if e.init is not None else _pattern_as_expr(e.pat)
        it, ial = self.check(init)
        start = self.u.issued
        self.push()
        for n in e.sizes:
            self.bind_var(n, I64, e.loc).stamp = -1  # names a size that exists
        pt = self.param_type(e.pat, fresh_sizes=set(e.sizes))
        # Sizes the parameter names must be the initial value's (Futhark's
        # rule); unnamed ones take the initial value's and are then
        # generalised below.
        ascribed = _has_ascription(e.pat)
        unnamed = _free_size_vars(pt)  # `[]` and `loop [n]`: they may change
        try:
            self.u.unify(pt, it, not ascribed)
        except UnifyError as ex:
            raise self.err(
                f"the loop parameter of type {self.zonk(pt)} does not match the "
                f"initial value of type {self.zonk(it)}: {ex}",
                e.pat.loc,
            ) from None
        if ascribed:
            pt = _substitute(pt, {}, {n: self.u.anonymous_size() for n in unnamed})
        else:
            pt = _loop_sizes(self.zonk(pt), self.u)
        loop_depth = self.depth
        self.cons.enter(loop_depth, "loop")
        consumed_before = set(self.cons.consumed)
        params = self.bind_pattern(e.pat, pt, NO_ALIAS, param=True, loop_param=True)
        self.push()
        free_cond: list[VarInfo] = []
        match e.form:
            case S.ForLoop(var, bound, loc):
                bt, _ = self.check(bound)
                c = Constraint(prims=frozenset(INTS), origin=bound.loc)
                self.unify(
                    bt,
                    self.u.fresh_type(c),
                    bound.loc,
                    "a loop bound must be an integer",
                )
                self.bind_var(var, bt, loc)
            case S.ForInLoop(pat, arr, _):
                at, _ = self.check(arr)
                row = self.u.fresh_type()
                self.unify(
                    at,
                    Array(row, (self.u.anonymous_size(),)),
                    arr.loc,
                    "`for ... in` needs an array",
                )
                et = self.param_type(pat)
                self.unify(
                    et, row, pat.loc, "the loop variable does not match the array"
                )
                self.bind_pattern(pat, et, NO_ALIAS)
            case S.WhileLoop(cond, _):
                self.cons.watch(loop_depth)
                self.check(cond, BOOL)
                free_cond = self.cons.unwatch()
        self.cons.watch(loop_depth)
        bt, bal = self.check(e.body)
        free_body = self.cons.unwatch()
        self.pop()
        param_t = self.zonk(pt)
        inits = _size_pairs(param_t, self.zonk(it))
        inside = e.form.cond.loc if isinstance(e.form, S.WhileLoop) else e.body.loc
        scope = LoopScope(start, inside, [(p.name, self.zonk(p.scheme.type)) for p in params],
                          self._innermost_stamp, e.pat.loc)
        check_loop_scope(scope, param_t, self.zonk(bt), inits, self.u)
        check_loop_classes(param_t, self.zonk(bt), inits, self.u, e.body.loc, init.loc)
        result = pt if ascribed else _invariant_sizes(
            param_t, self.zonk(bt), inits,
            LoopSizes(self.u, f"is unknown size of the value returned by the loop at {e.loc}."))
        for d in changed_sizes(param_t, self.zonk(bt), self.zonk(result), inits, self.u):
            self.u.note_computed(d, e.loc, "the loop")
        self.unify(
            pt,
            bt,
            e.body.loc,
            "Loop body does not have expected type",
            lenient=not ascribed,
        )
        self.cons.leave()
        newly = set(self.cons.consumed) - consumed_before
        zpt = self.zonk(pt)
        consumed = self.cons.check_loop_result(e.pat, zpt, params, newly, bal, e.loc)
        for p in params:
            self.cons.consumed.pop(p.uid, None)
        self.pop()
        gone = self.cons.consume_loop_init(e.pat, zpt, params, consumed, ial, init.loc)
        self.cons.check_loop_free(free_body, gone, e.loc, "Loop body")
        self.cons.check_loop_free(free_cond, gone, e.loc, "Loop condition")
        return self.zonk(result), merge_alias(remove_alias(ial, gone), bal)

    def _check_Ascribe(self, e: S.Ascribe, _exp) -> tuple[Type, Alias]:
        # An ascription's `[]` is the expression's size (Futhark's rule), not
        # a size that hides it.
        t = self.resolve(e.type, "fresh")
        _, al = self.check(
            e.expr, t, "Expression does not have expected type from type ascription"
        )
        return t, al

    def _check_Coerce(self, e: S.Coerce, _exp) -> tuple[Type, Alias]:
        # Futhark's rule: the expression's sizes say nothing about the target
        # type's (they are checked at run time); only the shapes of the types
        # must agree, so the expression's sizes are made anonymous first.
        t = self.resolve(e.type)
        et, al = self.check(e.expr)
        self.unify(
            map_dims(self.zonk(et), lambda _: self.u.anonymous_size()),
            t,
            e.loc,
            "size coercion between incompatible types",
        )
        return t, al

    # ============================================================== patterns

    def param_type(
        self, p: S.Pat, fresh_sizes: set[str] | dict[str, Dim] | None = None
    ) -> Type:
        """The type a pattern demands, with fresh variables where unannotated.

        `fresh_sizes` are the names of `let [n] ...`/`loop [n] ...`: each is
        one fresh inference size throughout the pattern.
        """
        if isinstance(fresh_sizes, set):
            fresh_sizes = {n: self.u.fresh_size() for n in sorted(fresh_sizes)}
        match p:
            case S.PId() | S.PWild():
                return self.u.fresh_type()
            case S.PTuple(elems, _):
                if len(elems) == 1:
                    return self.param_type(elems[0], fresh_sizes)
                return Tuple(tuple(self.param_type(x, fresh_sizes) for x in elems))
            case S.PRecord(fields, _):
                typed = [(f, self.param_type(x, fresh_sizes)) for f, x in fields]
                return self.record_type(typed, p.loc, "record pattern")
            case S.PAscribe(inner, te, _):
                t = self.resolve(te, "fresh")
                if fresh_sizes:
                    t = _substitute(t, {}, fresh_sizes)
                it = self.param_type(inner, fresh_sizes)
                self.unify(it, t, p.loc, "pattern")
                return t
        raise AssertionError(p)

    def _param_type(self, p: S.Pat) -> Type:
        """The type of a function's or lambda's parameter, whose anonymous
        sizes are the caller's (`levels.py`)."""
        since = self.u.issued
        t = self.param_type(p)
        self.u.levels.note_param_sizes(t, since, _param_name(p))
        return t

    def bind_pattern(
        self,
        p: S.Pat,
        t: Type,
        aliases: Alias,
        param: bool = False,
        loop_param: bool = False,
    ) -> list[VarInfo]:
        """Bind the variables of `p` to the components of a value of type `t`."""
        out: list[VarInfo] = []
        self._bind_pattern(p, t, aliases, param, loop_param, out, unique=None)
        return out

    def _bind_pattern(self, p, t, aliases, param, loop_param, out, unique) -> None:
        p.ty = t
        self._visited.append(p)
        match p:
            case S.PId(name, loc):
                zt = self.zonk(t)
                consumable = None
                if param and not loop_param and not (unique or is_unique(zt)):
                    consumable = "a non-unique parameter"
                if loop_param and unique is False and not is_unique(zt):
                    consumable = "a loop parameter of non-unique type"
                out.append(self.bind_var(name, t, loc, aliases, consumable))
            case S.PWild():
                pass
            case S.PTuple(elems, _):
                if len(elems) == 1:
                    self._bind_pattern(
                        elems[0], t, aliases, param, loop_param, out, unique
                    )
                    return
                st = self.u.shallow(t)
                if not isinstance(st, Tuple) or len(st.elems) != len(elems):
                    parts = Tuple(tuple(self.u.fresh_type() for _ in elems))
                    self.unify(st, parts, p.loc, "tuple pattern")
                    st = self.u.shallow(t)
                assert isinstance(st, Tuple)
                for i, (x, xt) in enumerate(zip(elems, st.elems)):
                    al = (
                        aliases[i]
                        if isinstance(aliases, tuple) and i < len(aliases)
                        else aliases
                    )
                    self._bind_pattern(x, xt, al, param, loop_param, out, unique)
            case S.PRecord(fields, _):
                for f, x in fields:
                    try:
                        ft = self.u.require_field(t, f)
                    except UnifyError as ex:
                        raise self.err(f"record pattern: {ex}", p.loc) from None
                    fal = field_alias(self.zonk(t), aliases, f)
                    self._bind_pattern(x, ft, fal, param, loop_param, out, unique)
            case S.PAscribe(inner, te, _):
                u = bool(unique) or isinstance(te, S.TEUnique)
                self._bind_pattern(inner, t, aliases, param, loop_param, out, u)

    # =========================================================== consumption

    def _is_prim_var(self, v: VarInfo) -> bool:
        return self.is_prim(v.scheme.type)

    def _vars_by_uid(self, uids: frozenset) -> Iterator[VarInfo]:
        """The variables in scope among the ids `uids` (for `Consumption`)."""
        seen = set()
        for scope in self.scopes:
            for info in scope.vars.values():
                if info.uid in uids and info.uid not in seen:
                    seen.add(info.uid)
                    yield info

    # ========================================================== declarations

    def _bind_tparams(
        self, tparams: list[S.TParam]
    ) -> tuple[tuple[str, ...], tuple[str, ...]]:
        tvars, svars = [], []
        for tp in tparams:
            if isinstance(tp, S.SizeParam):
                self.bind_var(tp.name, I64, tp.loc, consumable="a size")
                svars.append(tp.name)
            else:
                self.scopes[-1].types[tp.name] = TypeVar(tp.name)
                # Its liftedness ("", "~", "^"), looked up as `'t`; "" hides
                # an outer lifted parameter of the same name.
                self.scopes[-1].types[f"'{tp.name}"] = tp.lifted
                tvars.append(tp.name)
        return tuple(tvars), tuple(svars)

    def check_function(
        self, d: S.ValDecl, local: bool = False
    ) -> tuple[Scheme, Alias]:
        """Check a function or constant definition; return its scheme and,
        for a local function, its closure's alias, else its body's."""
        self.push()
        consumed_before = dict(self.cons.consumed)
        if local:
            self.cons.enter(self.depth, "local function")
        tvars, svars = self._bind_tparams(d.tparams)
        bind_tparams(self._tparams, d.tparams)
        if local:
            outer_tparams = self.u.levels.enter_type_params(tvars, self.u.issued)
        ptypes = []
        param_vars: list[VarInfo] = []
        for p in d.params:
            pt = self._param_type(p)
            param_vars += self.bind_pattern(p, pt, NO_ALIAS, param=True)
            ptypes.append(pt)
        # A size the return type leaves out (`: []i32`) is the body's where
        # the caller can name it (`[l]`, a parameter), else existential.
        infer = d.ret is not None and bool(d.params) and not self._is_builtin(d.body)
        if d.ret is not None:
            self._check_return_names(d.params, d.ret)
        ret = self.resolve(d.ret, "result" if infer else "any") if d.ret is not None else None
        bt, bal = self.check(d.body, ret, "Function body does not have expected type")
        if ret is not None:
            check_lambda_sizes(ret, d.body, self.u)
        if ret is not None and not self._is_builtin(d.body):
            why = function_subtype_error(self.zonk(bt), self.zonk(ret))
            if why is not None:
                raise self.err(
                    f"Function body does not have expected type {self.zonk(ret)}: {why}.",
                    d.body.loc,
                )
        check_parameter_scope(d.params, ptypes, self.u)
        if infer and d.is_entry_point and not local:
            check_entry_result_sizes(d.name, ret, ptypes, self.u, d.loc)
        if infer:
            ret = self._visible_sizes(self.zonk(ret))
        rt = ret if ret is not None else bt
        if d.params:  # in the scope of the parameters, not of the body
            opaque = opaque_names(d.body)
            check_unknown_parameter_sizes(d.name, self.zonk(rt), self.lookup_var,
                                          written_name, opaque, d.loc)
            if ret is None:  # a caller cannot know them
                hidden = {n for n in opaque if self.lookup_var(n) is None}
                rt = hide_unscoped_sizes(d.name, self.zonk(rt), hidden, self.u)
            if ret is None:
                rt = self.cons.infer_result_uniqueness(self.zonk(rt), bal, param_vars)
        closure = self.cons.closure(self.cons.leave()) if local else bal
        if local:
            self.cons.consumed = consumed_before
        self.pop()
        if local:
            self.u.levels.leave_type_params(
                outer_tparams, lambda n: isinstance(self.lookup_type(n), TypeVar))
        self._check_function_result(
            f'"{d.name}"', ret, bal, param_vars, bool(d.params), d.body.loc
        )
        self._check_size_params_used(d, ptypes, rt, entry=d.is_entry_point and not local)
        t = rt
        for p, pt in reversed(list(zip(d.params, ptypes))):
            t = Arrow(_param_name(p), pt, t)
        return Scheme(tvars, svars, t, _levels(d.tparams)), closure

    def _check_return_names(self, params: list[S.Pat], ret: S.TypeExp) -> None:
        written = WrittenSizes()
        _type_exp_size_names(ret, written, False)
        whole = {n for p in params if (n := _param_name(p)) is not None}
        check_return_names(params, whole, written.all(), ret)

    def _visible_sizes(self, t: Type) -> Type:
        """`t` (an inferred return type) with every size a caller cannot
        name made anonymous: sizes not inferred, existentials, and sizes
        naming what the body bound (out of scope here)."""
        def nameable(d: Dim) -> bool:
            match d:
                case SizeConst():
                    return True
                case SizeVar(name):
                    return written_name(name) and self.lookup_var(name) is not None
                case SizeProd(factors):
                    return all(nameable(f) for f in factors)
                case SizeExpr():
                    return all(nameable(SizeVar(n)) for n in size_names(d))
            return False

        # Sizes the body makes one stay one (`unzip` of a `filter`): Futhark
        # gives them one existential.
        shared: dict[Dim, AnySize] = {}

        def hidden(d: Dim) -> Dim:
            d = self.u.resolved(d)
            if isinstance(d, AnySize):
                return d
            return shared.setdefault(d, self.u.anonymous_size())

        return map_dims(t, lambda d: d if isinstance(d, AnySize) or nameable(d) else hidden(d))

    def _check_size_params_used(
        self, d: S.ValDecl, ptypes: list[Type], rt: Type, entry: bool
    ) -> None:
        """Every size parameter must be a size in a parameter or the result
        type (Futhark's rule); an entry point's in a parameter, as the size
        of an array (not only inside a size expression such as `[n + 1]`)."""
        written = WrittenSizes()
        for p in d.params:
            _pattern_size_names(p, written)
        in_params = written.all()
        rt = self.zonk(rt)
        while isinstance(rt, Arrow):  # point-free: `entry f [n] : [n]t -> ... = g`
            ptypes = [*ptypes, rt.param]
            rt = rt.ret
        for pt in ptypes:
            in_params |= _size_names(self.zonk(pt))
        in_result = _size_names(rt)
        if d.ret is not None:
            in_ret = WrittenSizes()
            _type_exp_size_names(d.ret, in_ret, False)
            in_result |= in_ret.all()
        for tp in d.tparams:
            if not isinstance(tp, S.SizeParam):
                continue
            n = tp.name
            if entry and n in written.in_exprs and n not in written.values:
                raise self.err(
                    f"Entry point size parameter [{n}] only used non-constructively.",
                    tp.loc,
                )
            if n in in_params:
                continue
            if n not in in_result:
                raise self.err(f"Size [{n}] unused in pattern.", tp.loc)
            if entry:
                raise self.err(
                    "Entry point functions must not be size-polymorphic in their "
                    f"return type (size [{n}]).",
                    d.loc,
                )

    def check_decl(self, d: S.Decl) -> None:
        match d:
            case S.TypeDecl(name, params, body, lifted, _):
                check_type_decl(d, self._type_decls)
                # Resolve once now, before the name is bound (a type is not in
                # scope in its own definition), so that errors in the
                # definition are reported here.
                self.push()
                self._bind_tparams(params)
                self.resolve(body)
                self.pop()
                self.scopes[0].types[name] = TypeAbbrev(params, body, lifted)
                check_abbreviation_witnessed(body)
            case S.ValDecl():
                self.check_value_decl(d)
            case S.ImportDecl():
                pass

    def check_value_decl(self, d: S.ValDecl) -> None:
        check_names(d)
        self.imports.file = d.loc.file
        self._visited = []
        self._size_uses = {}
        self.u.computed.clear()  # an earlier declaration's are known in this one
        self.u.levels.type_params.clear()  # an earlier declaration's escaped
        self._concat_sections = set()
        self._tparams, self._instances = {}, []
        self._equalities = []
        self.cons.reset()
        self.push()
        self_type = self.u.fresh_type()
        self.bind_var(d.name, self_type, d.loc, consumable="a function", exact=True)
        scheme, body_al = self.check_function(d)
        self.pop()
        self.unify(self_type, scheme.type, d.loc, f'recursive use of "{d.name}"')
        ambiguous = self.zonk(scheme.type)
        defaults = self._apply_defaults()
        for inst in self._instances:
            check_instance(inst, _close_sizes(self.zonk(inst.var), self.u), self._tparams)
        scheme = replace(scheme, type=self.zonk(scheme.type),
                         defaulted=_defaulted_params(ambiguous, defaults, d.loc))
        free = sorted(_free_type_vars(scheme.type))
        free_sizes = tuple(sorted(_free_size_vars(scheme.type)))
        scheme = replace(scheme, svars=scheme.svars + free_sizes)
        if d.is_entry_point and scheme.tvars:
            raise self.err(
                f'Entry point functions may not be polymorphic ("{d.name}" has '
                f"type parameters {', '.join(scheme.tvars)}).",
                d.loc,
            )
        for name in free:
            c = self.u.constraints.get(name)
            if c is not None and c.fields:
                fields = ", ".join(sorted(c.fields))
                raise self.err(f'Type of "{d.name}" is ambiguous: a record with field(s) '
                               f"{fields} of no known type.", c.origin or d.loc)
        if free:
            if d.is_entry_point:
                raise self.err(
                    f'Entry point functions may not be polymorphic ("{d.name}" has '
                    f"the ambiguous type {scheme.type}).",
                    d.loc,
                )
            scheme = replace(scheme, tvars=scheme.tvars + tuple(free))
        if d.is_entry_point:
            self._check_entry(d, scheme)
        local_functions = [n.fun_ty for n in self._visited if isinstance(n, S.LetFun)]
        check_ambiguous(self._size_uses, self.u, [scheme.type, *local_functions])
        check_causality(d.body, d.params, self.u, self._concat_sections)
        self._check_size_polymorphic_value(d, scheme.type)
        check_equalities(self._equalities, self.u)
        implicit = _implicit_sizes(d, scheme.type, free_sizes, self.u)
        for node in self._visited:
            if node.ty is not None:
                # Patterns' sizes are checked at run time (parameters on
                # entry), so only what the program wrote stays in them.
                node.ty = _close_sizes(self.zonk(node.ty), self.u, implicit,
                                       exprs=isinstance(node, S.Expr))
            if isinstance(node, S.LetFun):
                node.fun_ty = self.zonk(node.fun_ty)
            check_order_zero(node, self._tparams)
        check_literals(d.body)
        d.ty = _close_sizes(scheme.type, self.u, implicit)
        check_recursion(d, self.err)
        self._visited = []
        if self.lookup_var(d.name) is not None and d.name in self.scopes[0].vars:
            prev = self.scopes[0].vars[d.name]
            if prev.loc.file == d.loc.file and prev.is_global and prev.loc != NOWHERE:
                pass  # Futhark allows shadowing earlier top-level definitions.
        info = self.bind_var(
            d.name, scheme.type, d.loc, scheme=scheme, is_global=True, exact=True
        )
        self.imports.define(d.name, d.loc.file)
        if not d.params and not d.tparams and _contains_array(scheme.type):
            info.aliases = global_alias(d.name, self.zonk(scheme.type), body_al)

    def _check_size_polymorphic_value(self, d: S.ValDecl, t: Type) -> None:
        """Futhark's rule (#1993): a definition without parameters but with
        size parameters is computed anew at each use, so its type may not
        hold sizes known only once it has run."""
        if d.params or not any(isinstance(p, S.SizeParam) for p in d.tparams):
            return
        dims: list[Dim] = []
        map_dims(t, lambda dim: dims.append(self.u.dim(dim)) or dim)
        if any(isinstance(dim, AnySize) or _is_unnamed(dim, exprs=True) for dim in dims):
            raise self.err(
                f'"{d.name}" is a size-polymorphic value binding whose type {t} has sizes '
                f"known only when it runs; give it a parameter, or no size parameters.",
                d.loc,
            )

    def _check_entry(self, d: S.ValDecl, s: Scheme) -> None:
        """No parameter or result of an entry point (`entry`, or a top-level
        `def main`) may be a function."""
        # Point-free entries (`entry add = map2 (+)`) take the arrow's parameters.
        t, parts = s.type, []
        while isinstance(t, Arrow):
            parts.append(t.param)
            t = t.ret
        if any(functional(x) for x in [*parts, t]):
            raise self.err(f'Entry point functions may not be higher-order ("{d.name}" has '
                           f"type {s.type}).", d.loc)

    def _apply_defaults(self) -> dict[str, tuple[str, Loc | None]]:
        """Default remaining overloaded types: integers to i32, floats to f64.
        Returns each defaulted type variable's default and origin."""
        defaults: dict[str, tuple[str, Loc | None]] = {}
        for name, c in list(self.u.constraints.items()):
            if name in self.u.types or c.prims is None:
                continue
            if c.literal == "int" and "i32" in c.prims:
                default = "i32"
            elif "f64" in c.prims and c.literal == "float":
                default = "f64"
            elif "i32" in c.prims:
                default = "i32"
            elif c.prims:
                default = min(c.prims)
            else:
                continue
            try:
                self.u.unify(TypeVar(name), Scalar(default))
            except UnifyError as ex:
                raise self.err(str(ex), c.origin) from None
            defaults[name] = default, c.origin
        return defaults


# ================================================================== helpers


def _defaulted_params(
    t: Type, defaults: dict[str, tuple[str, Loc | None]], loc: Loc
) -> dict[int, tuple[str, Loc]]:
    """The parameters of function type `t` (before defaulting) whose type
    `defaults` fixed: the default and origin (else `loc`) of their first."""
    found: dict[int, tuple[str, Loc]] = {}
    i = 0
    while isinstance(t, Arrow):
        for v in type_var_names(t.param):
            if v in defaults and i not in found:
                default, origin = defaults[v]
                found[i] = default, origin or loc
        t, i = t.ret, i + 1
    return found


def _record_or_tuple(fields: tuple[tuple[str, Type], ...]) -> Type:
    if is_tuple_record(fields):
        return Tuple(tuple(t for _, t in sorted(fields, key=lambda f: int(f[0]))))
    return Record(fields)


def _contains_array(t: Type) -> bool:
    return any_array(t, lambda a: True)


def _type_var_names(t: Type) -> set[str]:
    return set(type_var_names(t))


def _free_type_vars(t: Type) -> set[str]:
    """The inference type variables of `t`."""
    return {n for n in type_var_names(t) if n.startswith("?")}


def _dim_vars(d: Dim) -> set[str]:
    """Names of inference sizes in a dimension."""
    if isinstance(d, SizeVar) and d.name.startswith("?"):
        return {d.name}
    if isinstance(d, SizeProd):
        return set().union(*(_dim_vars(f) for f in d.factors))
    return set()


def _free_size_vars(t: Type) -> set[str]:
    """The inference sizes of `t`."""
    return set().union(*(_dim_vars(d) for d in type_dims(t)))


def _implicit_sizes(d: S.ValDecl, t: Type, free: tuple[str, ...], u: Unifier) -> set[str]:
    """The inferred sizes (`free`) that declaration `d` of type `t` keeps as
    implicit size parameters: those its unannotated parameters give and its
    result has (`def main A = flatten A |> unflatten`).  The others stay
    anonymous, and so do the sizes of parameters written `[]`, which
    Futhark takes as distinct."""
    params = set().union(*(_free_size_vars(u.zonk(p.ty)) for p in d.params
                           if not isinstance(p, S.PAscribe) and p.ty is not None))
    for _ in d.params:
        assert isinstance(t, Arrow)
        t = t.ret
    return set(free) & params & _free_size_vars(t)


def _close_sizes(t: Type, u: Unifier, keep: set[str] = frozenset(),
                 exprs: bool = False) -> Type:
    """`t` with unresolved inference sizes and size products made anonymous
    (known at run time): what later stages see.  The sizes in `keep` are the
    declaration's implicit size parameters (`def main A = ...` with `A:
    [?n1][?n2]i32`), which its parameters give and its body may use.  Size
    expressions stay in the types of expressions (`exprs`), where the scope
    they name is the one of the use."""
    free = _free_size_vars(t) - keep
    if free:
        t = _substitute(t, {}, {n: u.weak.get(n) or u.anonymous_size() for n in free})
    return map_dims(t, lambda d: u.anonymous_size() if _is_unnamed(d, exprs) else d)


def _is_unnamed(d: Dim, exprs: bool = False) -> bool:
    """A size later stages cannot refer to by a variable: an existential, or
    (unless `exprs`) a product or a size expression."""
    return (isinstance(d, SizeProd | SizeExpr) and not exprs) or (
        isinstance(d, SizeVar) and d.name.startswith(EXISTENTIAL_PREFIX)
    )


def _final_result(t: Type) -> Type:
    """What a function of type `t` gives when applied to all its arguments."""
    while isinstance(t, Arrow):
        t = t.ret
    return t


def _anonymous_ids(t: Type) -> set[int]:
    ids: set[int] = set()
    map_dims(t, lambda d: ids.add(d.id) if isinstance(d, AnySize) else None)
    return ids


def _loop_sizes(t: Type, u: Unifier) -> Type:
    """`t` with every size replaced by a fresh anonymous size: inside the
    body a loop parameter's sizes may be anything (`_invariant_sizes` then
    finds those the body keeps)."""
    match t:
        case Array(e, shape, uq):
            return Array(e, tuple(u.anonymous_size() for _ in shape), uq)
        case Tuple(es):
            return Tuple(tuple(_loop_sizes(x, u) for x in es))
        case Record(fs):
            return Record(tuple((f, _loop_sizes(x, u)) for f, x in fs))
    return t


def _size_pairs(t: Type, other: Type) -> dict[Dim, Dim]:
    """The sizes of `other` at the places of the anonymous sizes of `t`."""
    return {d: o for d, o in dim_pairs(t, other) if isinstance(d, AnySize)}


@dataclass
class LoopSizes:
    """What a loop's result sizes are made of: the unifier, and the origin
    of the existential sizes a loop makes (for messages)."""

    u: Unifier
    origin: str


def _invariant_sizes(param: Type, body: Type, inits: dict[Dim, Dim], ls: LoopSizes) -> Type:
    """A loop's result type, as Futhark infers it: a size of the parameter
    that the body gives back unchanged (or as another parameter's size of the
    same initial size, as when arrays swap) is the initial value's; one the
    body replaces by another known size is existential (Futhark's "unknown
    size of value returned"); any other is anonymous (known at run time).
    `inits` are the initial sizes of the parameters' anonymous sizes
    (`_size_pairs`)."""
    match param, body:
        case Array(pe, ps, uq), Array(be, bs, _) if len(ps) == len(bs):
            shape = tuple(_loop_size(p, b, inits, ls) for p, b in zip(ps, bs))
            return Array(_invariant_sizes(pe, be, inits, ls), shape, uq)
        case Tuple(ps), Tuple(bs) if len(ps) == len(bs):
            return Tuple(tuple(_invariant_sizes(p, b, inits, ls) for p, b in zip(ps, bs)))
        case Record(pf), Record(bf) if len(pf) == len(bf):
            return Record(tuple((f, _invariant_sizes(p, b, inits, ls))
                                for (f, p), (_, b) in zip(pf, bf)))
    return param


def _loop_size(p: Dim, b: Dim, inits: dict[Dim, Dim], ls: LoopSizes) -> Dim:
    u = ls.u
    b = u.resolved(b)
    if p in inits and inits[p] == inits.get(b, b):
        return u.dim(inits[p])
    if p in inits and _is_named(u.dim(inits[p])) and _is_named(b):
        return u.existential_size(ls.origin)
    return u.anonymous_size()


def _is_named(d: Dim) -> bool:
    """A size the checker knows exactly: a constant or a rigid name."""
    return isinstance(d, SizeConst) or (
        isinstance(d, SizeVar) and not d.name.startswith("?")
    )


def _branch_size(a: Dim, b: Dim, u: Unifier, shared: dict) -> Dim:
    if a == b:
        return a
    if _is_named(a) and _is_named(b):
        return shared.setdefault((a, b), u.existential_size())
    return u.anonymous_size()


def _anonymise_differing_sizes(
    t1: Type, t2: Type, u: Unifier, shared: dict | None = None
) -> Type:
    """The type of `if c then a else b`: sizes that differ become existential
    when both are known (Futhark's rule: one per pair of sizes, so that
    `if c then ([1, 2], [3, 4]) else ([1], [2])` has equal sizes), else
    anonymous (checked at run time)."""
    shared = {} if shared is None else shared
    match t1, t2:
        case Array(e1, s1, u1), Array(_, s2, u2) if len(s1) == len(s2):
            shape = tuple(_branch_size(a, b, u, shared) for a, b in zip(s1, s2))
            return Array(e1, shape, u1 and u2)
        case Tuple(es1), Tuple(es2) if len(es1) == len(es2):
            return Tuple(
                tuple(
                    _anonymise_differing_sizes(a, b, u, shared)
                    for a, b in zip(es1, es2)
                )
            )
    return t1


def _size_names(t: Type) -> set[str]:
    """The named (rigid) sizes anywhere in `t`."""
    names: set[str] = set()

    def visit(d: Dim) -> Dim:
        if isinstance(d, SizeVar):
            names.add(d.name)
        elif isinstance(d, SizeProd):
            for f in d.factors:
                visit(f)
        return d

    map_dims(t, visit)
    return names


@dataclass
class WrittenSizes:
    """The size names written in type expressions, by where they occur."""

    values: set[str] = field(default_factory=set)  # `[n]` of a value
    in_functions: set[str] = field(default_factory=set)  # `[n]` in a function type
    in_exprs: set[str] = field(default_factory=set)  # names in `[n + 1]`

    def all(self) -> set[str]:
        return self.values | self.in_functions | self.in_exprs


def _pattern_size_names(p: S.Pat, out: WrittenSizes) -> None:
    """The size names written in the type ascriptions of a pattern."""
    match p:
        case S.PAscribe(inner, te, _):
            _type_exp_size_names(te, out, False)
            _pattern_size_names(inner, out)
        case S.PTuple(elems, _):
            for x in elems:
                _pattern_size_names(x, out)
        case S.PRecord(fields, _):
            for _, x in fields:
                _pattern_size_names(x, out)


def _type_exp_size_names(te: Any, out: WrittenSizes, in_fun: bool) -> None:
    match te:
        case S.DimName(name, _):
            (out.in_functions if in_fun else out.values).add(name)
        case S.DimExpr(expr, _):
            out.in_exprs |= {v.name for v in walk(expr) if isinstance(v, S.Var)}
        case S.TEArray(dim, elem, _):
            _type_exp_size_names(dim, out, in_fun)
            _type_exp_size_names(elem, out, in_fun)
        case S.TETuple(elems, _):
            for x in elems:
                _type_exp_size_names(x, out, in_fun)
        case S.TERecord(fields, _):
            for _, x in fields:
                _type_exp_size_names(x, out, in_fun)
        case S.TEArrow(_, param, ret, _):
            _type_exp_size_names(param, out, True)
            _type_exp_size_names(ret, out, True)
        case S.TEUnique(inner, _):
            _type_exp_size_names(inner, out, in_fun)
        case S.TEExist(names, body, _):
            inner = WrittenSizes()
            _type_exp_size_names(body, inner, in_fun)
            out.values |= inner.values - set(names)
            out.in_functions |= inner.in_functions - set(names)
            out.in_exprs |= inner.in_exprs - set(names)
        case S.TEName(_, args, _):
            # Through an abbreviation's arguments: counted as value sizes
            # (never rejecting what the abbreviation might use).
            for a in args:
                _type_exp_size_names(a, out, False)


def _has_ascription(p: S.Pat) -> bool:
    match p:
        case S.PAscribe():
            return True
        case S.PTuple(elems, _):
            return any(_has_ascription(x) for x in elems)
        case S.PRecord(fields, _):
            return any(_has_ascription(x) for _, x in fields)
    return False


def _pattern_as_expr(p: S.Pat) -> S.Expr:
    """The expression rebuilding a pattern's variables (`loop x for ...`)."""
    match p:
        case S.PId(name, loc):
            return S.Var(name, loc=loc)
        case S.PTuple(elems, loc):
            return S.TupleExp([_pattern_as_expr(x) for x in elems], loc=loc)
        case S.PRecord(fields, loc):
            return S.RecordExp([(f, _pattern_as_expr(x)) for f, x in fields], loc=loc)
        case S.PAscribe(inner, _, _):
            return _pattern_as_expr(inner)
    raise CompileError("a loop without an initial value needs named parameters", p.loc)


def _param_name(p: S.Pat) -> str | None:
    match p:
        case S.PId(name, _):
            return name
        case S.PAscribe(inner, _, _):
            return _param_name(inner)
    return None


def _not_applicable(fn: S.Expr, i: int, given: int, t: Type) -> str:
    """Why `fn` cannot take its argument #i+1, in Futhark's words."""
    if i == 0:
        what = function_text(fn) if isinstance(fn, S.Var) else "expression"
        return f"Cannot apply {what} as function, as it has type {t}."
    s = "" if i == 1 else "s"
    return (f"Cannot apply {function_text(fn)} to argument #{i + 1}: it takes {i} argument{s} "
            f"(type {t}) but is applied to {given}.")


def _int_literal(e: S.Expr) -> int | None:
    """The value of an integer literal, else None."""
    return int(e.value) if isinstance(e, S.Literal) and e.kind == "int" else None


def _signed_int_literal(e: S.Expr) -> int | None:
    """The value of an integer literal, possibly negated (`-1`), else None."""
    if isinstance(e, S.UnOp) and e.op == "-":
        v = _int_literal(e.expr)
        return None if v is None else -v
    return _int_literal(e)


def _nameable(d: Dim | None) -> bool:
    """Whether `d` is a size a program can write: a constant, a name that
    is no inference size or existential, or an expression of them.  Slice
    sizes are built only from such sizes; whether their names are still in
    scope where a size is compared is the unifier's question (`_known`)."""
    match d:
        case SizeConst():
            return True
        case SizeVar(name):
            return written_name(name)
        case SizeProd(factors):
            return all(_nameable(f) for f in factors)
        case SizeExpr():
            return True
    return False


def _size_expr(d: Dim, loc: Loc) -> S.Expr:
    """A typed i64 expression that computes size `d` (nameable), for the
    expression of a size expression built from it."""
    match d:
        case SizeConst(v):
            return S.Literal(v, "int", loc=loc, ty=I64)
        case SizeVar(name):
            return S.Var(name, loc=loc, ty=I64)
        case SizeProd((left, right)):
            return S.BinOp("*", _size_expr(left, loc), _size_expr(right, loc), loc=loc, ty=I64)
    assert isinstance(d, SizeExpr)
    return d.expr  # type: ignore[return-value]


def _levels(tparams: list[S.TParam]) -> dict[str, str]:
    """The levels of the type parameters of a scheme that are not lifted."""
    return {p.name: p.lifted for p in tparams if isinstance(p, S.TypeParam) and p.lifted != "^"}


def _is_function_literal(e: S.Expr) -> bool:
    return isinstance(
        e, (S.Lambda, S.OpSection, S.LeftSection, S.RightSection, S.ProjectSection)
    )


def check_program(decls: list[S.Decl], imports: dict[str, set[str]] | None = None) -> Checker:
    """Type-check declarations in order; fills in `ty` fields. Returns the checker.
    `imports`: by file, the files it imports (None: every file sees all)."""
    checker = Checker(Imports(imports))
    for d in decls:
        try:
            checker.check_decl(d)
        except UnifyError as e:  # a unification without a more precise context
            raise CompileError(str(e), d.loc) from None
        except RecursionError:
            raise CompileError("program nested too deeply to check", d.loc) from None
    return checker

