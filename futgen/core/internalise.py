"""Internalisation: the typed source AST to the core IR.

The source program is polymorphic, higher order and full of tuples; the
core IR is none of these (`futgen.core.ir`).  Internalisation closes the
gap in one walk over the typed AST, the way Futhark's `Internalise` does:

* **Tuples and records** become several values.  A source value is
  represented here as a tree (`V`): a `SubExp` for a primitive or an array
  of primitives, a Python tuple for a tuple or record (fields in a fixed
  order), and arrays of tuples are tuples of arrays, so `zip` and `unzip`
  generate no code at all.
* **Function values** are `Fn` objects that exist only while compiling: a
  lambda, section, partial application or built-in becomes a Python closure
  that emits the code of its body wherever it is applied.  A SOAC argument
  is turned into a core `Lambda` by applying the closure to fresh
  parameters; so higher-order arguments are inlined, never passed at run
  time.  Functions in tuples and records are carried the same way; an `if`
  choosing between functions (which the checker rejects, as Futhark does,
  unless a type parameter hides it) is a function whose application chooses.
* **Polymorphism**: a top-level first-order function becomes one core
  function per instantiation of its type parameters (`Apply` calls it);
  higher-order top-level functions (taking or returning values that hold
  functions), point-free definitions and local functions are inlined.
* **A-normal form**: every intermediate value gets a statement and a fresh
  `VName`; types come from the type checker's `ty` fields.
* **Sizes**: an array size the source names (`[n]`, a top-level i64
  constant, an i64 variable in scope) becomes a SubExp in the core type; a
  function's size parameters (those written and the inferred ones of
  `T.implicit_size_params`) are read from its array parameters
  (`ArraySize`) at entry; those no array parameter has (`def f [n] (x:
  i64) : [n]i64`) are read off the type at the use: a core function takes
  them as leading i64 parameters, an inlined or local function and a
  size-polymorphic constant bind them directly.  `let [n] (xs: [n]t)` reads
  `n` from `xs`.  Ranges, slices, size coercions and what parameter types
  say of sizes beyond the arguments' shapes (`(n: i64) (xs: [n]i32)`) are
  checked at run time (`futgen.core.checked`).

What is not handled raises `UnsupportedFeature("internalisation of ...")`
with the source location: a missing case must never produce a program
that means something else.
"""

from __future__ import annotations

import contextlib
import itertools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from futgen.core import ir
from futgen.core.checked import check_params
from futgen.errors import Loc, UnsupportedFeature
from futgen.frontend import syntax as S
from futgen.frontend import types as T
from futgen.frontend.written_sizes import match_dim, product_sizes
from futgen.interp import prims

# A source value: a SubExp, a tuple of values (tuple, record, array of
# tuples), or a function value.
V = Any
Arg = tuple[V, T.Type]  # an argument and its source type

# The unit value (`()`, `{}`) is one bool leaf rather than none, so that an
# array of units keeps its shape like any other array.
UNIT_PRIM = "bool"
UNIT_VALUE = ir.Constant(False, UNIT_PRIM)

_NOT_IDENT = re.compile(r"[^0-9A-Za-z_]")


@dataclass
class Fn:
    """A function value while compiling: applying it emits its code.

    `ty` is its (substituted) source type, so the type of any partial
    application is known; `impl` receives exactly `arity` arguments and the
    source type of the result.
    """

    ty: T.Type
    arity: int
    impl: Callable[[list[Arg], T.Type], V]
    # A local size-polymorphic function: itself with the sizes its size
    # parameters have at a use of the given type in the given environment.
    at: Callable[[T.Type, dict[str, V]], Fn] | None = None


@dataclass(frozen=True)
class UnknownSize:
    """A size parameter of an inlined function that neither the arguments'
    shapes nor the type at the use give: using it is unsupported."""

    name: str
    function: str


def internalise(prog: S.Program) -> ir.Program:
    """The core IR of every entry point of a type-checked program (and of
    every function they call)."""
    return Internaliser(prog).run()


def _unsupported(what: str, loc: Loc | None) -> UnsupportedFeature:
    return UnsupportedFeature(f"internalisation of {what}", loc)


class Internaliser:
    """The state of one internalisation: generated functions, the statement
    list being built, the types of the core names in scope."""

    def __init__(self, prog: S.Program):
        self.decls = {d.name: d for d in prog.decls if isinstance(d, S.ValDecl)}
        self.entries = list({d.name: d for d in prog.decls
                             if isinstance(d, S.ValDecl) and d.is_entry_point}.values())
        self.tags = itertools.count()
        self.functions: dict[tuple, ir.Function | None] = {}
        self.order: list[tuple] = []
        self.stms: list[ir.Stm] = []
        self.types: dict[ir.VName, ir.Type] = {}
        self.tsub: dict[str, T.Type] = {}
        self.names: dict[tuple, str] = {}
        # The source environment of the application being internalised, so
        # that built-ins can name the sizes of their results.
        self.call_env: dict[str, V] = {}
        # Anonymous sizes of the checker (`T.AnySize`, a size known only at
        # run time, shared by the types it unified) -> an array that has it,
        # and at which dimension (`anonymous_dim`).
        self.anonymous: dict[int, tuple[ir.Var, int]] = {}
        # Reverse-mode differentiation: the copies its forward sweeps make of
        # arrays an update consumes -> those arrays, which keep their values.
        self.replay_sources: dict[ir.VName, ir.VName] = {}
        self.custom_vjps = False  # whether `with_vjp` made ir.CustomVjp statements

    def run(self) -> ir.Program:
        for d in self.entries:
            self.function(d, {}, entry=True)
        funs = [self.functions[k] for k in self.order]
        prog = ir.Program(tuple(f for f in funs if f is not None))
        if self.custom_vjps:
            from futgen.core.ad import strip_custom_vjps

            prog = strip_custom_vjps(self, prog)
        return prog

    # ------------------------------------------------------------ building

    def fresh(self, base: str) -> ir.VName:
        """A new name, its base cut to an identifier (source names may hold
        `'`, operators' names symbols) so that the printed IR reads back."""
        base = _NOT_IDENT.sub("", base)
        return ir.VName(base if base[:1].isalpha() or base[:1] == "_" else "t" + base,
                        next(self.tags))

    def bind(self, exp: ir.Exp, types: list[ir.Type], base: str = "t") -> list[ir.SubExp]:
        """Appends `let (names) = exp` and returns the new names."""
        pat = tuple(ir.Param(self.fresh(base), t) for t in types)
        for p in pat:
            self.types[p.name] = p.type
        self.stms.append(ir.Stm(pat, exp))
        return [ir.Var(p.name) for p in pat]

    def bind1(self, exp: ir.Exp, t: ir.Type, base: str = "t") -> ir.SubExp:
        return self.bind(exp, [t], base)[0]

    @contextlib.contextmanager
    def nested(self) -> Iterator[list[ir.Stm]]:
        """Collects the statements of a nested body; names bound inside go out
        of scope at the end."""
        saved_stms, saved_types = self.stms, dict(self.types)
        self.stms = []
        try:
            yield self.stms
        finally:
            self.stms, self.types = saved_stms, saved_types

    def scrub(self, t: ir.Type) -> ir.Type:
        """`t` with sizes that name variables out of scope made existential."""
        if isinstance(t, ir.Prim):
            return t
        dims = tuple(None if isinstance(d, ir.Var) and d.name not in self.types else d
                     for d in t.shape)
        return ir.ArrayT(t.elem, dims)

    def type_of(self, se: ir.SubExp) -> ir.Type:
        return ir.subexp_type(se, self.types)

    def width(self, arr: ir.SubExp) -> ir.SubExp:
        """The outer size of array `arr`, read at run time when not known."""
        t = self.type_of(arr)
        assert isinstance(t, ir.ArrayT)
        if t.shape[0] is not None:
            return t.shape[0]
        return self.bind1(ir.ArraySize(arr.name, 0), ir.Prim("i64"), "n")

    # ------------------------------------------------------------ types

    def subst(self, t: T.Type) -> T.Type:
        """`t` with the type parameters of the instance being built replaced."""
        match t:
            case T.TypeVar(n) if n in self.tsub:
                return self.tsub[n]
            case T.Array(e, s, u):
                return T.array_of(self.subst(e), s, u)
            case T.Tuple(es):
                return T.Tuple(tuple(self.subst(x) for x in es))
            case T.Record(fs):
                return T.Record(tuple((f, self.subst(x)) for f, x in fs))
            case T.Arrow(n, p, r):
                return T.Arrow(n, self.subst(p), self.subst(r))
        return t

    def components(self, t: T.Type) -> list[T.Type] | None:
        """The component types of a tuple-like type (arrays of tuples too);
        None for a primitive or an array of primitives."""
        return T.components(self.subst(t))

    def leaf_types(self, t: T.Type, env: dict[str, V], loc: Loc | None,
                   constants: bool = True, exprs: bool = False) -> list[ir.Type]:
        """The core types of the values representing a source value of type `t`
        (sizes naming top-level constants evaluated here unless not `constants`,
        size expressions and products if `exprs`)."""
        t = self.subst(t)
        comps = self.components(t)
        if comps is not None:
            return [x for c in comps for x in self.leaf_types(c, env, loc, constants, exprs)]
        if T.is_unit(t):  # one bool leaf, so that an array of units keeps its shape
            return [ir.Prim(UNIT_PRIM)]
        match t:
            case T.Scalar(n):
                return [ir.Prim(n)]
            case T.Array(e, shape, _) if isinstance(e, T.Scalar) or T.is_unit(e):
                return [ir.ArrayT(e.name if isinstance(e, T.Scalar) else UNIT_PRIM,
                                  tuple(self.dim(d, env, constants, exprs) for d in shape))]
        raise _unsupported(f"a value of type {t}", loc)

    def dim(self, d: T.Dim, env: dict[str, V], constants: bool = True,
            exprs: bool = False) -> ir.SubExp | None:
        """A source size as a core SubExp, or None if it is not known here; a
        size naming a top-level constant is evaluated here if `constants`, a
        size expression (`B + 1`) if `exprs` and its names are in `env`."""
        match d:
            case T.SizeConst(n):
                return ir.Constant(n, "i64")
            case T.SizeVar(n):
                v = env.get(n)
                if isinstance(v, ir.Var) and self.types.get(v.name) == ir.Prim("i64") \
                        or isinstance(v, ir.Constant) and v.prim == "i64":
                    return v
                if constants and n not in env and self.size_constant(n) is not None:
                    d = self.size_constant(n)
                    return self.constant(d, T.Scalar("i64"), {}, {}, d.loc)
            case T.SizeProd((left, right)) if exprs:
                a, b = self.dim(left, env, constants, exprs), self.dim(right, env, constants, exprs)
                if a is not None and b is not None:
                    return self.bind1(ir.BinOp("*", "i64", a, b), ir.Prim("i64"), "size")
            case T.SizeExpr() if exprs:
                # Its names may be integers of any type (`i64.i32 n`).
                if all(self.dim(T.SizeVar(n), env, constants) is not None
                       or self._integer(env.get(n)) for n in T.size_names(d)):
                    return self.expr(d.expr, env)
        return None

    def _integer(self, v: V | None) -> bool:
        """Whether `v` is a scalar of an integer type."""
        if isinstance(v, ir.Constant):
            return v.prim in T.INTS
        return isinstance(v, ir.Var) and self.types.get(v.name) in map(ir.Prim, T.INTS)

    def size_constant(self, name: str) -> S.ValDecl | None:
        """The top-level i64 constant a size names (`[three]i64`), if any."""
        d = self.decls.get(name)
        if d is not None and not d.params and not d.tparams and d.ty == T.Scalar("i64"):
            return d
        return None

    def unflatten(self, t: T.Type, leaves: Iterator[ir.SubExp]) -> V:
        comps = self.components(t)
        if comps is None:
            return next(leaves)
        return tuple(self.unflatten(c, leaves) for c in comps)

    # ------------------------------------------------------------ functions

    def function(self, d: S.ValDecl, tsub: dict[str, T.Type], entry: bool = False) -> str:
        """The name of the core function for `d` at type instance `tsub`,
        internalising it on first use."""
        key = (d.name, tuple(sorted((k, str(v)) for k, v in tsub.items())))
        if key in self.names:
            return self.names[key]
        name = d.name if not tsub else f"{d.name}_{len(self.functions)}"
        self.functions[key] = None  # being built: a recursive call finds the name
        self.order.append(key)
        self.names[key] = name
        saved = (self.stms, self.types, self.tsub)
        self.stms, self.types, self.tsub = [], {}, dict(tsub)
        try:
            env: dict[str, V] = {}
            params, values = [], []
            src_params, src_body = _eta_expanded(d) if entry else (d.params, d.body)
            for n in [] if entry else self.hidden_sizes(d):
                params.append(ir.Param(self.fresh(n), ir.Prim("i64")))
                self.types[params[-1].name] = ir.Prim("i64")
                env[n] = ir.Var(params[-1].name)
            for p in src_params:
                ts = self.leaf_types(p.ty, {}, p.loc, constants=False)
                names = [ir.Param(self.fresh(_base(p)), _no_sizes(t)) for t in ts]
                params += names
                for q in names:
                    self.types[q.name] = q.type
                values.append(self.unflatten(p.ty, iter(ir.Var(q.name) for q in names)))
                self.bind_pat(p, values[-1], env)
            self.bind_sizes(_size_params(d.tparams, d.ty), src_params, env, rebind=True,
                            values=values)
            check_params(self, src_params, values, env, _size_params(d.tparams, d.ty), d.loc,
                         d.name if entry else None)
            self.refine(src_params, env)
            result = self.expr(src_body, env)
            body = ir.Body(tuple(self.stms), tuple(_flatten(result)))
            ret = tuple(_no_sizes(t) for t in self.leaf_types(src_body.ty, {}, d.loc,
                                                              constants=False))
        finally:
            self.stms, self.types, self.tsub = saved
        self.functions[key] = ir.Function(name, tuple(params), ret, body, entry)
        return name

    def function_named(self, name: str) -> ir.Function:
        """The core function called `name`, already internalised."""
        f = next(f for k, f in self.functions.items() if f is not None and self.names[k] == name)
        return f

    def hidden_sizes(self, d: S.ValDecl) -> list[str]:
        """The size parameters of `d` that no array parameter has in its type
        (`def f [n] (x: i64) : [n]i64`): its core function takes them first,
        as i64 values the caller reads off the type at the use."""
        shown = {n for p in d.params for n in self._sizes_named(p.ty)}
        return [n for n in [*(tp.name for tp in d.tparams if isinstance(tp, S.SizeParam)),
                            *T.implicit_size_params(d.ty)] if n not in shown]

    def _sizes_named(self, t: T.Type) -> Iterator[str]:
        """The size names in the array types of a value of type `t`."""
        t = self.subst(t)
        comps = self.components(t)
        if comps is not None:
            for c in comps:
                yield from self._sizes_named(c)
        elif isinstance(t, T.Array):
            yield from (d.name for d in t.shape if isinstance(d, T.SizeVar))

    def bind_sizes(self, wanted: set[str], params: list[S.Pat], env: dict[str, V],
                   rebind: bool, values: list[V] | None = None) -> None:
        """Binds the sizes that array parameters determine (`[n]` in
        `(xs: [n]f32)`) by reading the sizes of the arguments (`values`, or
        what the parameters' names are bound to); with `rebind`, the
        `wanted` names are bound anew even if `env` has them."""
        wanted = set(wanted)
        if values is None:
            values = [self._pat_value(p, env) for p in params]
        for p, v in zip(params, values):
            for name, arr, k in self._size_positions(p.ty, v):
                if name in env and not (rebind and name in wanted):
                    continue
                if name not in wanted and self.size_constant(name) is not None:
                    continue  # a constant's value, checked (`checked.check_params`)
                if isinstance(arr, ir.Var):
                    env[name] = self.bind1(ir.ArraySize(arr.name, k), ir.Prim("i64"), name)
                    wanted.discard(name)

    def refine(self, params: list[S.Pat], env: dict[str, V]) -> None:
        """Gives the parameters, inside the body, the sizes just bound, so
        that the sizes of what is computed from them are known too."""
        for p in params:
            leaves = _flatten(self._pat_value(p, env))
            for x, t in zip(leaves, self.leaf_types(p.ty, env, p.loc)):
                if isinstance(x, ir.Var):
                    self.types[x.name] = t

    def _pat_value(self, p: S.Pat, env: dict[str, V]) -> V:
        """The value a (simple) parameter pattern was bound to."""
        match p:
            case S.PId(name):
                return env.get(name)
            case S.PAscribe(inner):
                return self._pat_value(inner, env)
            case S.PTuple(elems) if elems:
                return tuple(self._pat_value(x, env) for x in elems)
            case S.PRecord(fields):
                fs = dict(fields)
                order = _field_order(self.subst(p.ty))
                return tuple(self._pat_value(fs[f], env) for f in order)
        return None

    def _size_positions(self, t: T.Type, v: V) -> Iterator[tuple[str, V, int]]:
        """(size name, array value, dimension) for every named size in `t`."""
        t = self.subst(t)
        comps = self.components(t)
        if comps is not None:
            if isinstance(v, tuple):
                for c, x in zip(comps, v):
                    yield from self._size_positions(c, x)
            return
        if isinstance(t, T.Array):
            for k, d in enumerate(t.shape):
                if isinstance(d, T.SizeVar):
                    yield d.name, v, k

    # ------------------------------------------------------------ patterns

    def bind_pat(self, p: S.Pat, v: V, env: dict[str, V]) -> None:
        """Binds the names of pattern `p` to the parts of value `v`."""
        match p:
            case S.PId(name):
                env[name] = v
            case S.PWild():
                pass
            case S.PAscribe(inner):
                self.bind_pat(inner, v, env)
            case S.PTuple(elems) if elems:
                for q, x in zip(elems, v):
                    self.bind_pat(q, x, env)
            case S.PRecord(fields) if fields:
                order = _field_order(self.subst(p.ty))
                for f, q in fields:
                    self.bind_pat(q, v[order.index(f)], env)

    # ------------------------------------------------------------ expressions

    def expr(self, e: S.Expr, env: dict[str, V]) -> V:
        """Emits the statements computing `e` and returns its value."""
        method = getattr(self, "_e_" + type(e).__name__, None)
        if method is None:
            raise _unsupported(f"expression {type(e).__name__}", e.loc)
        v = method(e, env)
        if not isinstance(e.ty, T.Scalar | None):
            self._note_anonymous(e.ty, v)
        return v

    def _note_anonymous(self, t: T.Type, v: V) -> None:
        t = self.subst(t)
        comps = self.components(t)
        if comps is not None:
            if isinstance(v, tuple):
                for c, x in zip(comps, v):
                    self._note_anonymous(c, x)
        elif isinstance(t, T.Array) and isinstance(v, ir.Var):
            for k, d in enumerate(t.shape):
                if isinstance(d, T.AnySize) and d.id >= 0:
                    self.anonymous[d.id] = (v, k)

    def anonymous_dim(self, d: T.Dim) -> ir.SubExp | None:
        """The run-time value of an anonymous size that an array in scope has."""
        if not isinstance(d, T.AnySize) or d.id not in self.anonymous:
            return None
        arr, k = self.anonymous[d.id]
        t = self.types.get(arr.name)
        if not isinstance(t, ir.ArrayT):
            return None  # out of scope here
        known = t.shape[k]
        if isinstance(known, ir.Constant) or isinstance(known, ir.Var) and known.name in self.types:
            return known
        return self.bind1(ir.ArraySize(arr.name, k), ir.Prim("i64"), "n")

    def subexp(self, e: S.Expr, env: dict[str, V]) -> ir.SubExp:
        """A scalar or array-of-primitive expression as one SubExp."""
        v = self.expr(e, env)
        if not isinstance(v, (ir.Var, ir.Constant)):
            raise _unsupported("a compound value where one value is needed", e.loc)
        return v

    def _e_Literal(self, e: S.Literal, env: dict[str, V]) -> V:
        t = self.subst(e.ty)
        assert isinstance(t, T.Scalar)
        return _constant(e.value, t.name)

    def _e_Var(self, e: S.Var, env: dict[str, V]) -> V:
        if not e.qual and e.name in env:
            v = env[e.name]
            if isinstance(v, UnknownSize):
                raise _unsupported(f"the size parameter [{v.name}] of {v.function}, not "
                                   "known at this use", e.loc)
            return v.at(self.subst(e.ty), env) if isinstance(v, Fn) and v.at else v
        if not e.qual and e.name in self.decls:
            return self.global_value(self.decls[e.name], e, env)
        from futgen.core.builtins import builtin

        return builtin(self, e.full_name, self.subst(e.ty), e.loc)

    def global_value(self, d: S.ValDecl, use: S.Var, env: dict[str, V]) -> V:
        """A top-level definition: a function value, or a constant's value.

        Functions taking or returning functions are inlined; the sizes their
        size parameters stand for at this use are read off the use's type
        (`def f [n] (g: i32 -> [n]i32) = n` used at `(i32 -> [3]i32) -> i64`).
        """
        inst = self.subst(use.ty)
        tsub = _match(self._decl_type(d), inst, {})
        sizes = self.use_sizes(self._decl_type(d), d.tparams, inst, env, d.params)
        if not d.params:
            return self.constant(d, inst, tsub, sizes, use.loc)
        with self.instance(tsub):
            higher_order = any(_has_function(self.subst(p.ty)) for p in d.params) \
                or _has_function(self.subst(d.body.ty))
        if higher_order:
            return Fn(inst, len(d.params),
                      lambda args, _ret: self.inline(d, args, tsub, {}, sizes))

        def call(args: list[Arg], ret: T.Type) -> V:
            name = self.function(d, tsub)
            with self.instance(tsub):
                hidden = self.hidden_sizes(d)
            for n in hidden:
                if n not in sizes:
                    raise _unsupported(f"the size parameter [{n}] of {d.name}, not known "
                                       "at this use", use.loc)
            flat = [sizes[n] for n in hidden] + [x for a, _ in args for x in _flatten(a)]
            ts = [self.scrub(t) for t in self.leaf_types(ret, {}, use.loc)]
            return self.unflatten(ret, iter(self.bind(
                ir.Apply(name, tuple(flat), tuple(ts), use.loc), ts, d.name)))

        return Fn(inst, len(d.params), call)

    def use_sizes(self, generic: T.Type, tparams: list[S.TParam], inst: T.Type,
                  env: dict[str, V], params: list[S.Pat] = ()) -> dict[str, V]:
        """The size parameters of a function of type `generic` that its type
        `inst` at a use names, as SubExps in the use's environment `env`; with
        its `params`, also those that only products in their written types
        name (`futgen.frontend.written_sizes`)."""
        names = _size_params(tparams, generic)
        found: dict[str, V] = {}
        for sub in (product_sizes(params, inst), _match_sizes(generic, inst, {})):
            found.update((n, se) for n, dim in sub.items()
                         if n in names and (se := self._use_dim(dim, env)) is not None)
        return found

    def _use_dim(self, d: T.Dim, env: dict[str, V]) -> ir.SubExp | None:
        """A size a size parameter has at a use: one the use's environment
        names, or an anonymous size of an array already computed (`filter p
        xs |> f g`, where `f`'s parameter is only known from the array)."""
        se = self.dim(d, env, exprs=True)
        return se if se is not None else self.anonymous_dim(d)

    def constant(self, d: S.ValDecl, inst: T.Type, tsub: dict[str, T.Type],
                 sizes: dict[str, V], loc: Loc) -> V:
        """A top-level definition without parameters, evaluated at its use:
        a value, or (point free, `def plus = (i32.+)`) a function value whose
        body is evaluated, in the instance's types, when it is applied."""
        arity = _arity(inst)
        sizes = {**{n: UnknownSize(n, d.name) for n in _size_params(d.tparams, d.ty)},
                 **sizes}
        if not arity:
            with self.instance(tsub):
                return self.expr(d.body, dict(sizes))

        def impl(args: list[Arg], _ret: T.Type) -> V:
            with self.instance(tsub):
                return self.apply(self.expr(d.body, dict(sizes)), args, loc)

        return Fn(inst, arity, impl)

    def instance(self, tsub: dict[str, T.Type]) -> contextlib.AbstractContextManager:
        """Type variables bound to `tsub` (on top of the current ones) inside."""
        return self.with_types({**self.tsub, **tsub})

    @contextlib.contextmanager
    def with_types(self, created: dict[str, T.Type]) -> Iterator[None]:
        """The type variables bound to `created` inside, in place of the
        current ones: a local function or lambda applied elsewhere (returned
        from the function that made it) takes those of where it was made,
        since its body's types name that function's type parameters, which
        the caller's may shadow with other instances (issue1168's `'m`)."""
        saved = self.tsub
        self.tsub = created
        try:
            yield
        finally:
            self.tsub = saved

    def _decl_type(self, d: S.ValDecl) -> T.Type:
        """`d`'s checked type, with its size and type parameters by name."""
        if d.ty is not None:
            return d.ty
        t = d.body.ty
        for p in reversed(d.params):
            t = T.Arrow(None, p.ty, t)
        return t

    def inline(self, d: S.ValDecl | S.LetFun, args: list[Arg], tsub: dict[str, T.Type],
               env: dict[str, V], sizes: dict[str, V]) -> V:
        """The body of a function, with its parameters bound to `args` and its
        size parameters to `sizes` (from the use's type) or to the sizes of
        the arguments; a size parameter neither gives is `UnknownSize`."""
        with self.instance(tsub):
            names = _size_params(d.tparams, d.ty if isinstance(d, S.ValDecl) else d.fun_ty)
            env = {**env, **{n: UnknownSize(n, d.name) for n in names}, **sizes}
            for p, (v, _) in zip(d.params, args):
                self.bind_pat(p, v, env)
            values = [v for v, _ in args]
            self.bind_sizes(names, d.params, env, rebind=True,
                            values=values)
            check_params(self, d.params, values, env, names, d.loc)
            return self.expr(d.body if isinstance(d, S.ValDecl) else d.value, env)

    def apply(self, f: V, args: list[Arg], loc: Loc) -> V:
        """Applies a function value to arguments: fully, partially or over."""
        if not isinstance(f, Fn):
            raise _unsupported("application of a non-function", loc)
        if len(args) < f.arity:
            return Fn(_strip(f.ty, len(args)), f.arity - len(args),
                      lambda more, ret: f.impl([*args, *more], ret))
        now, rest = args[:f.arity], args[f.arity:]
        result = f.impl(now, _strip(f.ty, f.arity))
        return self.apply(result, rest, loc) if rest else result

    def _e_Apply(self, e: S.Apply, env: dict[str, V]) -> V:
        if e.unchecked:  # an assertion inside #[unsafe]: its value only
            return self.expr(e.args[1], env)
        f = self.expr(e.fn, env)
        pending = list(e.args)
        while pending:
            # The arguments the function takes, then the rest on its result:
            # `assert c x` checks `c` before `x` is computed.
            n = max(1, f.arity) if isinstance(f, Fn) else len(pending)
            args = [(self.expr(a, env), self.subst(a.ty)) for a in pending[:n]]
            pending = pending[n:]
            self.call_env = env
            f = self.apply(f, args, e.loc)
        return f

    def _e_TupleExp(self, e: S.TupleExp, env: dict[str, V]) -> V:
        if not e.elems:
            return UNIT_VALUE
        return tuple(self.expr(x, env) for x in e.elems)

    def _e_RecordExp(self, e: S.RecordExp, env: dict[str, V]) -> V:
        if not e.fields:
            return UNIT_VALUE
        vals = {f: self.expr(x, env) for f, x in e.fields}
        return tuple(vals[f] for f in _field_order(self.subst(e.ty)))

    def _e_Project(self, e: S.Project, env: dict[str, V]) -> V:
        v = self.expr(e.expr, env)
        return v[self.field_index(e.expr.ty, e.field, e.loc)]

    def field_index(self, t: T.Type, field: str, loc: Loc) -> int:
        t = self.subst(t)
        if isinstance(t, (T.Tuple, T.Record)) and field in _field_order(t):
            return _field_order(t).index(field)
        raise _unsupported(f"projection .{field} from {t}", loc)

    def _e_Ascribe(self, e: S.Ascribe, env: dict[str, V]) -> V:
        return self.expr(e.expr, env)

    def _e_ArrayLit(self, e: S.ArrayLit, env: dict[str, V]) -> V:
        t = self.subst(e.ty)
        assert isinstance(t, T.Array)
        row = T.row_type(t)
        elems = [_flatten(self.expr(x, env)) for x in e.elems]
        out = []
        for k, rt in enumerate(self.leaf_types(row, env, e.loc)):
            lit = ir.ArrayLit(tuple(x[k] for x in elems), rt)
            n = ir.Constant(len(elems), "i64")
            out.append(self.bind1(lit, self.scrub(ir.array_of(rt, (n,))), "arr"))
        return self.unflatten(t, iter(out))

    def _e_Range(self, e: S.Range, env: dict[str, V]) -> V:
        from futgen.core.checked import range_

        return range_(self, e, env)

    def _e_If(self, e: S.If, env: dict[str, V]) -> V:
        cond = self.subexp(e.cond, env)
        t = self.subst(e.ty)
        if isinstance(t, T.Arrow):
            # A choice of functions: a function whose application chooses.
            # The checker rejects such an if as Futhark does; only a value-type
            # parameter instantiated at a function type still gets here
            # (Futhark rejects that too; futgen's checker does not yet).
            def choose(args: list[Arg], ret: T.Type) -> V:
                return self.if_(cond, lambda: self.apply(self.expr(e.then, env), args, e.loc),
                                lambda: self.apply(self.expr(e.els, env), args, e.loc),
                                ret, env, e.loc)

            return Fn(t, _arity(t), choose)
        return self.if_(cond, lambda: self.expr(e.then, env), lambda: self.expr(e.els, env),
                        e.ty, env, e.loc)

    def if_(self, cond: ir.SubExp, then: Callable[[], V], els: Callable[[], V], t: T.Type,
            env: dict[str, V], loc: Loc) -> V:
        """`if cond then ... else ...` with both branches built as bodies."""
        ret = self.leaf_types(t, env, loc)
        bodies = []
        for branch in (then, els):
            with self.nested() as stms:
                res = _flatten(branch())
                bodies.append(ir.Body(tuple(stms), tuple(res)))
        ret = [self.scrub(x) for x in ret]
        out = self.bind(ir.If(cond, bodies[0], bodies[1], tuple(ret)), ret, "if")
        return self.unflatten(t, iter(out))

    def _e_LetPat(self, e: S.LetPat, env: dict[str, V]) -> V:
        v = self.expr(e.value, env)
        inner = dict(env)
        self.bind_pat(e.pat, v, inner)
        self.bind_size_binders(e.sizes, e.pat, v, inner)
        return self.expr(e.body, inner)

    def bind_size_binders(self, sizes: list[str], p: S.Pat, v: V, env: dict[str, V]) -> None:
        """`let [n] (xs: [n]t) = ...` (and loops): binds each size to the size
        of the array whose annotation names it, which then has it in its type."""
        wanted = set(sizes)
        for name, arr, k in _annotated_sizes(p, v):
            if name not in wanted or not isinstance(arr, ir.Var):
                continue
            wanted.discard(name)
            n = self.bind1(ir.ArraySize(arr.name, k), ir.Prim("i64"), name)
            env[name] = n
            t = self.type_of(arr)
            assert isinstance(t, ir.ArrayT)
            self.types[arr.name] = ir.ArrayT(t.elem, t.shape[:k] + (n,) + t.shape[k + 1:])
        if wanted:
            raise _unsupported(f"the size binder [{min(wanted)}] not named by an "
                               "annotation of an array in its pattern", p.loc)

    def _e_LetFun(self, e: S.LetFun, env: dict[str, V]) -> V:
        captured = dict(env)
        t = self.subst(e.value.ty)
        for p in reversed(e.params):
            t = T.Arrow(None, self.subst(p.ty), t)

        created = self.tsub

        def local(sizes: dict[str, V]) -> Fn:
            def impl(args: list[Arg], _ret: T.Type) -> V:
                tsub: dict[str, T.Type] = {}
                for p, (_, at) in zip(e.params, args):
                    _match(p.ty, at, tsub)
                with self.with_types(created):
                    return self.inline(e, args, tsub, captured, sizes)

            return Fn(t, len(e.params), impl, at)

        def at(inst: T.Type, use_env: dict[str, V]) -> Fn:
            if e.fun_ty is None:
                return local({})
            return local(self.use_sizes(e.fun_ty, e.tparams, inst, use_env))

        inner = dict(env)
        inner[e.name] = local({})
        return self.expr(e.body, inner)

    def _e_Lambda(self, e: S.Lambda, env: dict[str, V]) -> V:
        captured, created = dict(env), self.tsub

        def impl(args: list[Arg], _ret: T.Type) -> V:
            inner = dict(captured)
            with self.with_types(created):
                for p, (v, _) in zip(e.params, args):
                    self.bind_pat(p, v, inner)
                self.bind_sizes(set(), e.params, inner, rebind=False,
                                values=[v for v, _ in args])
                return self.expr(e.body, inner)

        return Fn(self.subst(e.ty), len(e.params), impl)

    def operator(self, op: str, ty: T.Type, env: dict[str, V], loc: Loc) -> Fn:
        """Binary operator `op` at type `ty` as a function value: one bound in
        scope (`((<=): t -> t -> bool)`) hides the built-in or top-level one."""
        from futgen.core.builtins import operator

        local = env.get(op)
        if isinstance(local, Fn):
            return local.at(ty, env) if local.at else local
        return operator(self, op, ty, loc)

    def _e_OpSection(self, e: S.OpSection, env: dict[str, V]) -> V:
        return self.operator(e.op, self.subst(e.ty), env, e.loc)

    def _e_LeftSection(self, e: S.LeftSection, env: dict[str, V]) -> V:
        x = self.expr(e.arg, env)
        t = self.subst(e.ty)
        op = self.operator(e.op, T.Arrow(None, self.subst(e.arg.ty), t), env, e.loc)
        return self.apply(op, [(x, self.subst(e.arg.ty))], e.loc)

    def _e_RightSection(self, e: S.RightSection, env: dict[str, V]) -> V:
        y = self.expr(e.arg, env)
        t = self.subst(e.ty)
        assert isinstance(t, T.Arrow)
        yt = self.subst(e.arg.ty)
        op = self.operator(e.op, T.Arrow(None, t.param, T.Arrow(None, yt, t.ret)), env, e.loc)
        return Fn(t, 1, lambda args, _r: self.apply(op, [args[0], (y, yt)], e.loc))

    def _e_ProjectSection(self, e: S.ProjectSection, env: dict[str, V]) -> V:
        t = self.subst(e.ty)
        assert isinstance(t, T.Arrow)

        def impl(args: list[Arg], _ret: T.Type) -> V:
            v, vt = args[0]
            for f in e.fields:
                i = self.field_index(vt, f, e.loc)
                comps = self.components(vt)
                assert comps is not None
                v, vt = v[i], comps[i]
            return v

        return Fn(t, 1, impl)

    def _e_UnOp(self, e: S.UnOp, env: dict[str, V]) -> V:
        x = self.subexp(e.expr, env)
        t = self.subst(e.ty)
        if not isinstance(t, T.Scalar):
            raise _unsupported(f"prefix {e.op} on {t}", e.loc)
        op = "neg" if e.op == "-" else "not" if t.name == "bool" else "bnot"
        if op == "neg" and isinstance(x, ir.Constant):
            return _constant(prims.unop("neg", t.name, prims.scalar(t.name, x.value)), t.name)
        return self.bind1(ir.UnOp(op, t.name, x), ir.Prim(t.name))

    def _e_BinOp(self, e: S.BinOp, env: dict[str, V]) -> V:
        if e.op in ("|>", "<|"):
            # The left operand first, as Futhark evaluates: in `xs |> f g`, the
            # sizes of `xs` may be what `f`'s size parameters are at this use.
            if e.op == "|>":
                x = self.expr(e.lhs, env)
                self._note_anonymous(e.lhs.ty, x)
                f, xe = self.expr(e.rhs, env), e.lhs
            else:
                f = self.expr(e.lhs, env)
                x, xe = self.expr(e.rhs, env), e.rhs
            self.call_env = env
            return self.apply(f, [(x, self.subst(xe.ty))], e.loc)
        if e.op in ("&&", "||"):
            return self.short_circuit(e, env)
        op = self.operator(e.op, T.Arrow(None, self.subst(e.lhs.ty),
                                         T.Arrow(None, self.subst(e.rhs.ty), self.subst(e.ty))),
                           env, e.op_loc or e.loc)
        args = [(self.expr(e.lhs, env), self.subst(e.lhs.ty)),
                (self.expr(e.rhs, env), self.subst(e.rhs.ty))]
        self.call_env = env
        return self.apply(op, args, e.loc)

    def short_circuit(self, e: S.BinOp, env: dict[str, V]) -> V:
        """`a && b` is `if a then b else false`: `b` may fail or be costly."""
        a = self.subexp(e.lhs, env)
        const = ir.Constant(e.op == "||", "bool")
        def rhs() -> ir.SubExp:
            return self.subexp(e.rhs, env)

        if e.op == "&&":
            return self.if_(a, rhs, lambda: const, T.BOOL, env, e.loc)
        return self.if_(a, lambda: const, rhs, T.BOOL, env, e.loc)

    def _e_Index(self, e: S.Index, env: dict[str, V]) -> V:
        v = self.expr(e.expr, env)
        sl = self.slice(e.indices, _flatten(v)[0], env, e.loc)
        out = []
        for arr in _flatten(v):
            t = ir.indexed_type(self.type_of(arr), sl)
            out.append(self.bind1(ir.Index(arr.name, sl, e.loc), t, "elem"))
        return self.unflatten(e.ty, iter(out))

    def slice(self, idx: list[S.DimIndex], arr: ir.SubExp, env: dict[str, V],
              loc: Loc) -> tuple[ir.DimIndex, ...]:
        """Source indices as core ones, slices checked (`checked.slice_`)."""
        from futgen.core.checked import slice_

        return slice_(self, idx, arr, env, loc)

    def i64(self, e: S.Expr, env: dict[str, V]) -> ir.SubExp:
        """An index expression converted to i64 (Futhark allows any integer type)."""
        x = self.subexp(e, env)
        t = self.subst(e.ty)
        assert isinstance(t, T.Scalar)
        if t.name == "i64":
            return x
        if isinstance(x, ir.Constant):
            return _constant(prims.convert(prims.scalar(t.name, x.value), "i64"), "i64")
        return self.bind1(ir.ConvOp(t.name, "i64", x), ir.Prim("i64"), "i")

    def _e_Update(self, e: S.Update, env: dict[str, V]) -> V:
        src = self.expr(e.src, env)
        val = _flatten(self.expr(e.value, env))
        sl = self.slice(e.indices, _flatten(src)[0], env, e.loc)
        out = [self.bind1(ir.Update(a.name, sl, x, e.loc), self.type_of(a), "upd")
               for a, x in zip(_flatten(src), val)]
        return self.unflatten(e.ty, iter(out))

    def _e_RecordUpdate(self, e: S.RecordUpdate, env: dict[str, V]) -> V:
        new = self.expr(e.value, env)

        def put(v: V, t: T.Type, fields: list[str]) -> V:
            if not fields:
                return new
            i = self.field_index(t, fields[0], e.loc)
            comps = self.components(t)
            assert comps is not None
            return tuple(put(x, comps[i], fields[1:]) if k == i else x
                         for k, x in enumerate(v))

        return put(self.expr(e.src, env), e.src.ty, e.fields)

    def _e_Loop(self, e: S.Loop, env: dict[str, V]) -> V:
        from futgen.core.loops import loop

        return loop(self, e, env)

    def _e_Coerce(self, e: S.Coerce, env: dict[str, V]) -> V:
        from futgen.core.checked import coerce

        return coerce(self, e, env)


# ---------------------------------------------------------------- helpers


def _annotated_sizes(p: S.Pat, v: V) -> Iterator[tuple[str, V, int]]:
    """(size name, array, dimension) for each size named in the type
    annotations of pattern `p`, bound to value `v`."""
    match p:
        case S.PAscribe(inner, te):
            yield from _type_exp_sizes(te, v)
            yield from _annotated_sizes(inner, v)
        case S.PTuple(elems) if isinstance(v, tuple) and len(elems) == len(v):
            for q, x in zip(elems, v):
                yield from _annotated_sizes(q, x)


def _type_exp_sizes(te: S.TypeExp, v: V) -> Iterator[tuple[str, V, int]]:
    k = 0
    while isinstance(te, S.TEArray):
        if isinstance(te.dim, S.DimName) and not isinstance(v, Fn):
            yield te.dim.name, _flatten(v)[0], k
        te, k = te.elem, k + 1
    if k == 0 and isinstance(te, S.TETuple) and isinstance(v, tuple) \
            and len(te.elems) == len(v):
        for t, x in zip(te.elems, v):
            yield from _type_exp_sizes(t, x)


def _size_params(tparams: list[S.TParam], ty: T.Type | None) -> set[str]:
    """The size parameters of a declaration: those it names and those the
    type checker inferred (`T.implicit_size_params` of its type `ty`)."""
    return {tp.name for tp in tparams if isinstance(tp, S.SizeParam)} \
        | set(T.implicit_size_params(ty))


def _eta_expanded(d: S.ValDecl) -> tuple[list[S.Pat], S.Expr]:
    """Parameters and body of an entry point with its function-typed result
    applied to fresh parameters: `entry f = map g` becomes `entry f x = map g x`,
    so a point-free entry takes data like any other."""
    params, args = list(d.params), []
    t = d.body.ty
    while isinstance(t, T.Arrow):
        name = f"eta%{len(args)}"  # '%' keeps it apart from every source name
        pat, arg = S.PId(name, d.loc), S.Var(name, loc=d.loc)
        pat.ty = arg.ty = t.param
        params.append(pat)
        args.append(arg)
        t = t.ret
    if not args:
        return params, d.body
    body = S.Apply(d.body, args, loc=d.body.loc)
    body.ty = t
    return params, body


def _flatten(v: V) -> list[ir.SubExp]:
    """The SubExps representing a value, in order."""
    if isinstance(v, tuple):
        return [x for c in v for x in _flatten(c)]
    if isinstance(v, Fn):
        raise UnsupportedFeature("internalisation of a function value used as data")
    return [v]


def _field_order(t: T.Type) -> list[str]:
    """The field names of a record or tuple type in representation order (a
    record `{0 = a, 1 = b}` is typed as the tuple `(a, b)`)."""
    if isinstance(t, T.Tuple):
        return [str(i) for i in range(len(t.elems))]
    return [f for f, _ in T.ordered_fields(t.fields)]


def _no_sizes(t: ir.Type) -> ir.Type:
    """A function parameter or result type: sizes other than constants are
    read inside the function, so the signature leaves them existential."""
    if isinstance(t, ir.Prim):
        return t
    return ir.ArrayT(t.elem, tuple(d if isinstance(d, ir.Constant) else None for d in t.shape))


def _base(p: S.Pat) -> str:
    match p:
        case S.PId(name):
            return name.replace("'", "")
        case S.PAscribe(inner):
            return _base(inner)
    return "p"


def _constant(value: Any, prim: str) -> ir.Constant:
    """A constant of type `prim`, normalised as NumPy would store it."""
    v = prims.scalar(prim, value).item()
    return ir.Constant(v, prim)


def _arity(t: T.Type) -> int:
    n = 0
    while isinstance(t, T.Arrow):
        n, t = n + 1, t.ret
    return n


def _has_function(t: T.Type) -> bool:
    """Whether a value of type `t` is or holds a function (which exists only
    while compiling, so the function that takes or returns it is inlined)."""
    match t:
        case T.Arrow():
            return True
        case T.Tuple(es):
            return any(_has_function(x) for x in es)
        case T.Record(fs):
            return any(_has_function(x) for _, x in fs)
    return False


def _strip(t: T.Type, n: int) -> T.Type:
    """The result type after applying a function of type `t` to `n` arguments."""
    for _ in range(n):
        assert isinstance(t, T.Arrow), t
        t = t.ret
    return t


def _match_sizes(generic: T.Type, inst: T.Type, sub: dict[str, T.Dim]) -> dict[str, T.Dim]:
    """Extends `sub` with the size each size name of `generic` has in `inst`."""
    match generic, inst:
        case T.Array(ge, gs, _), T.Array(ie, is_, _):
            for g, i in zip(gs, is_):
                match_dim(g, i, sub)
            if len(gs) == len(is_):
                _match_sizes(ge, ie, sub)
        case T.Tuple(ges), T.Tuple(ies):
            for g, i in zip(ges, ies):
                _match_sizes(g, i, sub)
        case T.Record(gfs), T.Record(ifs):
            for (_, g), (_, i) in zip(gfs, ifs):
                _match_sizes(g, i, sub)
        case T.Arrow(_, gp, gr), T.Arrow(_, ip, ir_):
            _match_sizes(gp, ip, sub)
            _match_sizes(gr, ir_, sub)
    return sub


def _match(generic: T.Type, inst: T.Type, sub: dict[str, T.Type]) -> dict[str, T.Type]:
    """Extends `sub` so that `generic` with type variables replaced is `inst`
    (up to sizes, which are read at run time)."""
    match generic, inst:
        case T.TypeVar(n), _:
            sub.setdefault(n, inst)
        case T.Array(ge, gs, _), T.Array():
            _match(ge, T.array_of(inst.elem, inst.shape[len(gs):]), sub)
        case T.Tuple(ges), T.Tuple(ies):
            for g, i in zip(ges, ies):
                _match(g, i, sub)
        case T.Record(gfs), T.Record(ifs):
            for (_, g), (_, i) in zip(gfs, ifs):
                _match(g, i, sub)
        case T.Arrow(_, gp, gr), T.Arrow(_, ip, ir_):
            _match(gp, ip, sub)
            _match(gr, ir_, sub)
    return sub
