"""The reference interpreter: runs the type-checked source AST.

It is the oracle later compiler passes are checked against, so it follows
Futhark's semantics exactly (see prims.py), and it is fast enough for real
test inputs because SOACs with scalar functions run vectorised
(vectorize.py).

Environments are plain dicts (name -> value).  Two hidden keys travel with
them: GLOBALS, the table of top-level definitions visible at that point,
and, in vectorised code, LANES/NLANES (see vectorize.py).

Size parameters are bound from the shapes of a function's arguments and,
for those no argument shows, from the function's instantiated type at the
use (`_instantiate`), which also binds type parameters (under TYPE_KEY) so
that an empty array of a type parameter gets its real element type.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from futgen.errors import DataError, FutharkError, Loc
from futgen.frontend import syntax as S
from futgen.frontend import types as T
from futgen.frontend.entry import EntrySignature, entry_signature
from futgen.frontend.types import size_names
from futgen.frontend.written_sizes import product_sizes
from futgen.interp import values as V
from futgen.interp.functions import Closure, FunVal, PyFun
from futgen.interp.prims import BINOPS, scalar

GLOBALS = "\0globals"
_MISSING = object()
# Environment key prefix of a type parameter bound at a use (`'a`), no Futhark name.
TYPE_KEY = "'"


class _Lazy:
    """A top-level constant, evaluated on first use."""

    __slots__ = ("busy", "decl", "genv", "value")

    def __init__(self, decl: S.ValDecl, genv: dict):
        self.decl = decl
        self.genv = genv
        self.value: Any = _MISSING
        self.busy = False


def prim_name(t: Any) -> str | None:
    return t.name if isinstance(t, T.Scalar) else None


class Interpreter:
    """Evaluates a checked Program; see the module docstring."""

    def __init__(self, program: S.Program):
        from futgen.interp.builtins import BUILTINS
        from futgen.interp.vectorize import Vectorizer

        self.program = program
        self.builtins = BUILTINS
        self.vec = Vectorizer(self)
        self._entries: dict[str, tuple[S.ValDecl, dict]] = {}
        # Function body id -> (checked type, size parameters, type parameters)
        # for functions with parameters to instantiate at each use.
        self._generic: dict[int, tuple[T.Type, frozenset, frozenset]] = {}
        self._dispatch = {
            cls: getattr(self, "_eval_" + cls.__name__)
            for cls in (S.Literal, S.Var, S.TupleExp, S.RecordExp, S.ArrayLit, S.Range,
                        S.Project, S.Index, S.BinOp, S.UnOp, S.Apply, S.Lambda, S.OpSection,
                        S.LeftSection, S.RightSection, S.ProjectSection, S.If, S.LetPat,
                        S.LetFun, S.Update, S.RecordUpdate, S.Loop, S.Ascribe, S.Coerce)
        }
        genv: dict = {}
        for d in program.decls:
            if not isinstance(d, S.ValDecl):
                continue
            genv = dict(genv)
            if d.params:
                sizes = tuple(p.name for p in d.tparams if isinstance(p, S.SizeParam)) \
                    + T.implicit_size_params(d.ty)
                genv[d.name] = Closure(d.params, d.body, {GLOBALS: genv}, (), sizes, d.name)
                self._note_generic(d.body, d.ty, d.tparams)
            else:
                genv[d.name] = _Lazy(d, genv)
            genv[d.name + "\0decl"] = d
            if d.is_entry_point:
                self._entries[d.name] = (d, genv)

    # ------------------------------------------------------------ entries

    def entry_points(self) -> dict[str, EntrySignature]:
        return {name: entry_signature(d) for name, (d, _) in self._entries.items()}

    def call(self, name: str, args: list) -> list:
        """Run entry point `name` on `args`, returning its list of results."""
        if name not in self._entries:
            raise DataError(f"no entry point {name}")
        d, genv = self._entries[name]
        sig = entry_signature(d)
        ptypes = sig.param_types
        if len(args) != len(ptypes):
            raise DataError(f"entry {name}: expected {len(ptypes)} arguments, "
                            f"given {len(args)}")
        args = [self._check_arg(name, i, t, a) for i, (t, a) in enumerate(zip(ptypes, args))]
        self._check_sizes(name, ptypes, args)
        env: dict = {GLOBALS: genv}
        sizes = getattr(genv[d.name], "sizes", ())
        for p, a in zip(d.params, args):
            self.bind(p, a, env)
            env.update((n, np.int64(k)) for n, k in pat_size_bindings(p, a) if n in sizes)
        for p, a in zip(d.params, args):
            self._check_param(p, a, env, sizes, name)
        with np.errstate(all="ignore"):
            f = genv[d.name]
            if isinstance(f, _Lazy):
                f = self._force(f)
            result = self.apply(f, *args)
        return list(result) if len(sig.results) > 1 else [result]

    def _check_arg(self, name: str, i: int, t: T.Type, a: Any) -> Any:
        if isinstance(t, T.Scalar) and isinstance(a, bool | int | float) and \
                not isinstance(a, np.generic) and (t.name == "bool") == isinstance(a, bool):
            a = scalar(t.name, a) if isinstance(a, int) else t.dtype.type(a)
        if not V.matches_type(a, t):
            raise DataError(f"entry {name}: argument {i + 1} has type {V.type_string(a)}, "
                            f"expected {V.type_str(t)}")
        return V.copy(a) if _unique(t) else a

    def _check_sizes(self, name: str, ts: list[T.Type], args: list) -> None:
        seen: dict[str, int] = {}
        for i, (t, a) in enumerate(zip(ts, args)):
            for dname, n in _size_bindings(t, a):
                if dname.startswith(ANONYMOUS):
                    continue
                if dname in seen and seen[dname] != n:
                    raise DataError(f"entry {name}: argument {i + 1} has size {n} for "
                                    f"\"{dname}\", but an earlier argument gives {seen[dname]}")
                seen.setdefault(dname, n)

    # ------------------------------------------------------- application

    def apply(self, f: Any, *args: Any) -> Any:
        for a in args:
            f = f.apply(self, a)
        return f

    def enter(self, c: Closure, args: tuple) -> Any:
        """Run a closure's body with all its parameters bound."""
        env = dict(c.env)
        for p, a in zip(c.params, args):
            self.bind(p, a, env)
        if c.sizes:
            for p, a in zip(c.params, args):
                for n, v in pat_size_bindings(p, a):
                    if n in c.sizes:
                        env[n] = np.int64(v)
        for i, p in self._param_checks(c):
            self._check_param(p, args[i], env, c.sizes, None)
        rest = args[len(c.params):]
        r = self.eval(c.body, env)
        return self.apply(r, *rest) if rest else r

    def _param_checks(self, c: Closure) -> list[tuple[int, S.Pat]]:
        """The parameters of `c` whose types say sizes their arguments'
        shapes do not fix: a size naming a value or a constant, a size
        expression (`(n: i64) (xs: [n]i32)`, `[x + 1]i32`)."""
        key = ("checks", id(c.body))
        if key not in self._generic:
            self._generic[key] = [  # type: ignore[assignment]
                (i, p) for i, p in enumerate(c.params)
                if isinstance(p.ty, T.Array) and isinstance(p.ty.elem, T.Scalar)
                and (any(isinstance(d, T.SizeVar) and d.name not in c.sizes
                         for d in p.ty.shape) or _dim_exprs(p))]
        return self._generic[key]  # type: ignore[return-value]

    def _check_param(self, p: S.Pat, v: Any, env: dict, sizes: tuple, entry: str | None) -> None:
        """Checks what `p`'s type says of the shape of its argument `v`, with
        compiled code's messages (`core.checked.check_params`)."""
        t = p.ty
        if not (isinstance(t, T.Array) and isinstance(t.elem, T.Scalar)) \
                or not isinstance(v, np.ndarray):
            return
        want: list[int | None] = [
            None if isinstance(d, T.SizeVar) and d.name in sizes else self.known_size(d, env)
            for d in t.shape]
        for k, e in _dim_exprs(p):
            want[k] = int(self.eval(e, env))
        shape = v.shape[:len(t.shape)]
        if all(w is None or w == n for w, n in zip(want, shape)):
            return
        have = "".join(f"[{n}]" for n in shape)
        says = "".join(f"[{n if w is None else w}]" for w, n in zip(want, shape))
        if entry is not None:
            raise FutharkError(f"{entry}: invalid size: parameter {_pat_name(p)}: {t} has "
                               f"shape {have} where its type says {says}", p.loc)
        raise FutharkError(f"Value of (desugared) shape {have} cannot match shape of type "
                           f"\"{says}{t.elem}\".", p.loc)

    def bind(self, p: S.Pat, v: Any, env: dict) -> None:
        """Bind pattern `p` to value `v` in `env` (mutated)."""
        if isinstance(p, S.PId):
            env[p.name] = v
        elif isinstance(p, S.PTuple):
            if p.elems:
                vs = list(v.values()) if isinstance(v, dict) else v
                for q, x in zip(p.elems, vs):
                    self.bind(q, x, env)
        elif isinstance(p, S.PRecord):
            for f, q in p.fields:
                self.bind(q, v[int(f)] if isinstance(v, tuple) else v[f], env)
        elif isinstance(p, S.PAscribe):
            self.bind(p.pat, v, env)

    # -------------------------------------------------------- evaluation

    def eval(self, e: S.Expr, env: dict) -> Any:
        return self._dispatch[type(e)](e, env)

    def lookup(self, name: str, env: dict) -> Any:
        v = env.get(name, _MISSING)
        if v is _MISSING:
            v = env[GLOBALS].get(name, _MISSING) if GLOBALS in env else _MISSING
            if isinstance(v, _Lazy):
                v = self._force(v)
        return v

    def _force(self, lz: _Lazy) -> Any:
        if lz.value is _MISSING:
            with np.errstate(all="ignore"):
                lz.value = self.eval(lz.decl.body, {GLOBALS: lz.genv})
        return lz.value

    def size_of(self, d: T.Dim, env: dict) -> int:
        """The run-time value of a size in a type (0 if unknown)."""
        n = self.known_size(d, env)
        return 0 if n is None else n

    def known_size(self, d: T.Dim, env: dict) -> int | None:
        """The run-time value of a size in a type, None if unknown here."""
        if isinstance(d, T.SizeConst):
            return d.value
        if isinstance(d, T.SizeVar):
            v = self.lookup(d.name, env)
            if isinstance(v, np.integer | int):
                return int(v)
        if isinstance(d, T.AnySize):
            v = self.lookup(anonymous_key(d), env)
            return int(v) if isinstance(v, np.integer) else None
        if isinstance(d, T.SizeProd):
            left, right = (self.known_size(f, env) for f in d.factors)
            return None if left is None or right is None else left * right
        if isinstance(d, T.SizeExpr) and all(
                isinstance(self.lookup(n, env), np.integer | int) for n in size_names(d)):
            return int(self.eval(d.expr, env))
        return None

    def sizer(self, env: dict) -> Any:
        return lambda d: self.size_of(d, env)

    def _eval_Literal(self, e: S.Literal, env: dict) -> Any:
        v = e.__dict__.get("_value")
        if v is None:
            t = prim_name(e.ty) or ("bool" if e.kind == "bool" else
                                    e.suffix or ("i32" if e.kind == "int" else "f64"))
            v = scalar(t, e.value) if t not in ("f16", "f32", "f64") else \
                T.PRIM_DTYPES[t].type(e.value)
            e.__dict__["_value"] = v
        return v

    def _eval_Var(self, e: S.Var, env: dict) -> Any:
        if not e.qual and e.name not in env:
            lz = env.get(GLOBALS, {}).get(e.name)
            if isinstance(lz, _Lazy) and lz.decl.tparams and lz.decl.ty is not None:
                return self._sized_constant(lz, e.ty, env)
        if not e.qual:
            v = self.lookup(e.name, env)
            if v is not _MISSING:
                return self._instantiate(v, e.ty, env) if isinstance(v, Closure) else v
        return self.builtin(e.full_name, e.ty, env, e.loc)

    # --------------------------------------------------- instantiation

    def _note_generic(self, body: S.Expr, ty: T.Type | None, tparams: list) -> None:
        if ty is None or not tparams:
            return
        sizes = frozenset(p.name for p in tparams if isinstance(p, S.SizeParam))
        types = frozenset(p.name for p in tparams if not isinstance(p, S.SizeParam))
        self._generic[id(body)] = (ty, sizes, types)

    def _instantiate(self, c: Closure, ty: T.Type | None, env: dict) -> Closure:
        """`c` with its size and type parameters bound as the use's type says.

        Sizes the arguments' shapes do not give (`f [n] (x: i64) : [n]i64`,
        a size only in a function-typed parameter) and type parameters (the
        element type of an empty array) come from matching the function's
        checked type with its instantiated type at the use, evaluated in the
        use's environment; sizes from arguments still take precedence.
        """
        generic = self._generic.get(id(c.body))
        if generic is None or ty is None:
            return c
        gty, snames, tnames = generic
        sizes: dict[str, T.Dim] = {}
        types: dict[str, T.Type] = {}
        anonymous: dict[str, T.Dim] = {}
        _match_type(gty, ty, snames, tnames, sizes, types, anonymous)
        for n, d in [*product_sizes(c.params, ty).items(), *anonymous.items()]:
            if n in snames:
                sizes.setdefault(n, d)
        extra: dict[str, Any] = {}
        for n, d in sizes.items():
            k = self.known_size(d, env)
            if k is not None:
                extra[n] = np.int64(k)
        for n, t in types.items():
            extra[TYPE_KEY + n] = self.concrete_type(t, env)
        if not extra:
            return c
        return Closure(c.params, c.body, {**c.env, **extra}, c.args, c.sizes, c.name)

    def _sized_constant(self, lz: _Lazy, ty: T.Type | None, env: dict) -> Any:
        """A constant with size parameters (`def iiota [n] : [n]i64`),
        evaluated at each use with the sizes the use's type gives them."""
        d = lz.decl
        snames = frozenset(p.name for p in d.tparams if isinstance(p, S.SizeParam))
        sizes: dict[str, T.Dim] = {}
        if ty is not None:
            _match_type(d.ty, ty, snames, frozenset(), sizes, {})
        extra = {n: np.int64(k) for n, dim in sizes.items()
                 if (k := self.known_size(dim, env)) is not None}
        with np.errstate(all="ignore"):
            return self.eval(d.body, {GLOBALS: lz.genv, **extra})

    def concrete_type(self, t: T.Type, env: dict) -> T.Type:
        """`t` with type parameters bound in `env` substituted and its sizes
        known in `env` made constants (the others anonymous)."""
        match t:
            case T.TypeVar(n):
                return env.get(TYPE_KEY + n, t)
            case T.Array(elem, shape, u):
                dims = tuple(T.SizeConst(k) if (k := self.known_size(d, env)) is not None
                             else T.AnySize(0) for d in shape)
                return T.array_of(self.concrete_type(elem, env), dims, u)
            case T.Tuple(es):
                return T.Tuple(tuple(self.concrete_type(x, env) for x in es))
            case T.Record(fs):
                return T.Record(tuple((f, self.concrete_type(x, env)) for f, x in fs))
        return t

    def builtin(self, name: str, ty: Any, env: dict, loc: Loc | None) -> Any:
        b = self.builtins.get(name)
        if b is None:
            raise FutharkError(f"unknown name {name}", loc)
        arity, fn, elementwise = b
        f = PyFun(name, arity, fn, (), ty, env, loc, elementwise)
        return fn(_const_call(self, f)) if arity == 0 else f

    def _eval_TupleExp(self, e: S.TupleExp, env: dict) -> Any:
        return tuple(self.eval(x, env) for x in e.elems)

    def _eval_RecordExp(self, e: S.RecordExp, env: dict) -> Any:
        r = {f: self.eval(x, env) for f, x in e.fields}
        if T.is_tuple_record(tuple((f, None) for f in r)):
            return tuple(r[str(i)] for i in range(len(r)))
        return r

    def _eval_ArrayLit(self, e: S.ArrayLit, env: dict) -> Any:
        elems = [self.eval(x, env) for x in e.elems]
        if elems:
            shapes = {V.shape_signature(x) for x in elems}
            if len(shapes) > 1:
                raise FutharkError("Cannot create array with elements of different shapes.",
                                   e.loc)
        rt = T.row_type(e.ty) if isinstance(e.ty, T.Array) else None
        if rt is not None and not elems:
            rt = self.concrete_type(rt, env)
        return V.stack(elems, rt, self.sizer(env))

    def _eval_Range(self, e: S.Range, env: dict) -> Any:
        start = self.eval(e.start, env)
        second = self.eval(e.second, env) if e.second is not None else None
        end = self.eval(e.end, env)
        return make_range(start, second, end, e.kind, e.loc)

    def _eval_Project(self, e: S.Project, env: dict) -> Any:
        return project(self.eval(e.expr, env), e.field)

    def _eval_Index(self, e: S.Index, env: dict) -> Any:
        arr = self.eval(e.expr, env)
        idx = [self._eval_dimindex(i, env) for i in e.indices]
        return index_value(arr, idx, e.loc)

    def _eval_dimindex(self, i: S.DimIndex, env: dict) -> Any:
        if isinstance(i, S.IdxFix):
            return int(self.eval(i.index, env))
        return tuple(None if x is None else int(self.eval(x, env))
                     for x in (i.start, i.end, i.stride))

    def _eval_BinOp(self, e: S.BinOp, env: dict) -> Any:
        op = e.op
        if op == "&&":
            return np.bool_(False) if not self.eval(e.lhs, env) else self.eval(e.rhs, env)
        if op == "||":
            return np.bool_(True) if self.eval(e.lhs, env) else self.eval(e.rhs, env)
        x = self.eval(e.lhs, env)
        if op == "|>" and (known := _size_bindings(e.lhs.ty, x)):
            # `xs |> f g`: the sizes of `xs` may be what `f`'s size
            # parameters are at this use (`filter p xs |> f g`).
            env = {**env, **{k: np.int64(n) for k, n in known}}
        y = self.eval(e.rhs, env)
        if op == "|>":
            return y.apply(self, x)
        if op == "<|":
            return x.apply(self, y)
        user = self.lookup(op, env)
        if user is not _MISSING:
            return self.apply(user, x, y)
        if op not in BINOPS:
            return self.apply(self.builtin(op, None, env, e.loc), x, y)
        return prim_binop(op, x, y, e.lhs.ty)

    def _eval_UnOp(self, e: S.UnOp, env: dict) -> Any:
        x = self.eval(e.expr, env)
        return unop(e.op, x)

    def _eval_Apply(self, e: S.Apply, env: dict) -> Any:
        fn = e.fn
        if isinstance(fn, S.Var) and fn.name == "assert" and not fn.qual and \
                len(e.args) == 2 and self.lookup("assert", env) is _MISSING:
            # Futhark checks the condition before evaluating the guarded value.
            cond = self.eval(e.args[0], env)
            f = self.eval(fn, env).apply(self, cond)
            if not np.all(cond):
                return f.apply(self, None)  # raises the assertion's failure
            return f.apply(self, self.eval(e.args[1], env))
        f = self.eval(e.fn, env)
        for a in e.args:
            v = self.eval(a, env)
            try:
                f = f.apply(self, v)
            except FutharkError as err:
                err.calls.append(e.loc)  # the backtrace names every call it left
                raise
        return f

    def _eval_Lambda(self, e: S.Lambda, env: dict) -> Any:
        return Closure(e.params, e.body, env)

    def _eval_OpSection(self, e: S.OpSection, env: dict) -> Any:
        return self.op_function(e.op, e.ty, env, e.loc)

    def op_function(self, op: str, ty: Any, env: dict, loc: Loc | None) -> FunVal:
        """The curried function of a binary operator, user-defined or built in."""
        user = self.lookup(op, env)
        if user is not _MISSING:
            return user
        if op not in BINOPS:
            return self.builtin(op, ty, env, loc)
        return prim_op_fun(op, ty, loc)

    def _eval_LeftSection(self, e: S.LeftSection, env: dict) -> Any:
        x = self.eval(e.arg, env)
        f = self.op_function(e.op, _arrow_of_section(e.ty, e.arg.ty, True), env, e.loc)
        return f.apply(self, x)

    def _eval_RightSection(self, e: S.RightSection, env: dict) -> Any:
        y = self.eval(e.arg, env)
        f = self.op_function(e.op, _arrow_of_section(e.ty, e.arg.ty, False), env, e.loc)
        return PyFun(f"({e.op} _)", 1, lambda c, x: c.apply(f, x, y),
                     elementwise=isinstance(f, PyFun) and f.elementwise and
                     not V.is_array(y) and not isinstance(y, tuple | dict),
                     args=(), ty=e.ty, env=env, loc=e.loc)

    def _eval_ProjectSection(self, e: S.ProjectSection, env: dict) -> Any:
        fields = e.fields

        def proj(_c: Any, v: Any) -> Any:
            for f in fields:
                v = project(v, f)
            return v

        return PyFun("(." + ".".join(fields) + ")", 1, proj, ty=e.ty, env=env, loc=e.loc)

    def _eval_If(self, e: S.If, env: dict) -> Any:
        return self.eval(e.then if self.eval(e.cond, env) else e.els, env)

    def _eval_LetPat(self, e: S.LetPat, env: dict) -> Any:
        v = self.eval(e.value, env)
        env = dict(env)
        self.bind(e.pat, v, env)
        anonymous = e.__dict__.get("_anonymous")
        if anonymous is None:
            anonymous = e.__dict__["_anonymous"] = _has_anonymous(e.pat.ty)
        if e.sizes or anonymous:
            for n, s in pat_size_bindings(e.pat, v):
                if n in e.sizes or n.startswith(ANONYMOUS):
                    env[n] = np.int64(s)
        return self.eval(e.body, env)

    def _eval_LetFun(self, e: S.LetFun, env: dict) -> Any:
        sizes = tuple(p.name for p in e.tparams if isinstance(p, S.SizeParam))
        env = dict(env)
        if e.params:
            env[e.name] = Closure(e.params, e.value, env, (), sizes, e.name)
            if id(e.value) not in self._generic:
                self._note_generic(e.value, e.fun_ty, e.tparams)
        else:
            env[e.name] = self.eval(e.value, env)
        return self.eval(e.body, env)

    def _eval_Update(self, e: S.Update, env: dict) -> Any:
        arr = self.eval(e.src, env)
        idx = [self._eval_dimindex(i, env) for i in e.indices]
        v = self.eval(e.value, env)
        return update_value(arr, idx, v, e.loc)

    def _eval_RecordUpdate(self, e: S.RecordUpdate, env: dict) -> Any:
        r = self.eval(e.src, env)
        v = self.eval(e.value, env)
        return record_update(r, e.fields, v)

    def _eval_Loop(self, e: S.Loop, env: dict) -> Any:
        if e.init is not None:
            acc = self.eval(e.init, env)
        else:
            acc = self.pattern_value(e.pat, env)
        form = e.form
        if isinstance(form, S.ForLoop):
            bound = self.eval(form.bound, env)
            it = bound.dtype.type
            for i in range(max(int(bound), 0)):
                acc = self._loop_body(e, acc, env, form.var, it(i))
        elif isinstance(form, S.ForInLoop):
            xs = self.eval(form.array, env)
            for row in V.rows(xs):
                env2 = dict(env)
                self.bind(form.pat, row, env2)
                acc = self._loop_body(e, acc, env2, None, None)
        else:
            while True:
                env2 = dict(env)
                self._bind_loop(e, acc, env2)
                if not self.eval(form.cond, env2):
                    break
                acc = self.eval(e.body, env2)
        return acc

    def _bind_loop(self, e: S.Loop, acc: Any, env: dict) -> None:
        self.bind(e.pat, acc, env)
        if e.sizes:
            for n, s in pat_size_bindings(e.pat, acc):
                if n in e.sizes:
                    env[n] = np.int64(s)

    def _loop_body(self, e: S.Loop, acc: Any, env: dict, var: str | None, i: Any) -> Any:
        env2 = dict(env)
        if var is not None:
            env2[var] = i
        self._bind_loop(e, acc, env2)
        return self.eval(e.body, env2)

    def pattern_value(self, p: S.Pat, env: dict) -> Any:
        """The value a pattern's names currently have (for `loop p for ...`)."""
        if isinstance(p, S.PId):
            return self.lookup(p.name, env)
        if isinstance(p, S.PTuple):
            return tuple(self.pattern_value(q, env) for q in p.elems)
        if isinstance(p, S.PRecord):
            return {f: self.pattern_value(q, env) for f, q in p.fields}
        if isinstance(p, S.PAscribe):
            return self.pattern_value(p.pat, env)
        raise FutharkError("loop pattern without initial value", p.loc)

    def _eval_Ascribe(self, e: S.Ascribe, env: dict) -> Any:
        return self.eval(e.expr, env)

    def _eval_Coerce(self, e: S.Coerce, env: dict) -> Any:
        v = self.eval(e.expr, env)
        check_coercion(v, e.ty, lambda d: self.known_size(d, env), e.loc)
        return v


# ------------------------------------------------------------ value helpers


def _match_type(g: T.Type, t: T.Type, snames: frozenset, tnames: frozenset,
                sizes: dict[str, T.Dim], types: dict[str, T.Type],
                anonymous: dict[str, T.Dim] | None = None) -> None:
    """Collect what the size parameters `snames` and type parameters `tnames`
    of the generic type `g` stand for in its instance `t`; a size parameter
    met only as an anonymous size goes into `anonymous` (a value in scope
    may have it)."""
    match g, t:
        case T.TypeVar(n), _ if n in tnames:
            types.setdefault(n, t)
        case T.Array(), T.Array() if len(t.shape) >= len(g.shape):
            for gd, td in zip(g.shape, t.shape):
                if isinstance(gd, T.SizeVar) and gd.name in snames:
                    if not isinstance(td, T.AnySize):
                        sizes.setdefault(gd.name, td)
                    elif anonymous is not None:
                        anonymous.setdefault(gd.name, td)
            rest = T.array_of(t.elem, t.shape[len(g.shape):])
            _match_type(g.elem, rest, snames, tnames, sizes, types, anonymous)
        case T.Tuple(ges), T.Tuple(tes) if len(ges) == len(tes):
            for x, y in zip(ges, tes):
                _match_type(x, y, snames, tnames, sizes, types, anonymous)
        case T.Record(gfs), T.Record(tfs):
            tmap = dict(tfs)
            for f, x in gfs:
                if f in tmap:
                    _match_type(x, tmap[f], snames, tnames, sizes, types, anonymous)
        case T.Arrow(_, gp, gr), T.Arrow(_, tp, tr):
            _match_type(gp, tp, snames, tnames, sizes, types, anonymous)
            _match_type(gr, tr, snames, tnames, sizes, types, anonymous)


def _dim_exprs(p: S.Pat) -> list[tuple[int, S.Expr]]:
    """(dimension, size expression) for the sizes `p`'s type annotation
    writes as expressions (`(ys: [x + 1]i32)`)."""
    while isinstance(p, S.PAscribe) and not isinstance(p.type, (S.TEArray, S.TEUnique)):
        p = p.pat
    if not isinstance(p, S.PAscribe):
        return []
    out, te, k = [], p.type, 0
    while isinstance(te, (S.TEArray, S.TEUnique)):
        if isinstance(te, S.TEUnique):
            te = te.inner
            continue
        if isinstance(te.dim, S.DimExpr):
            out.append((k, te.dim.expr))
        te, k = te.elem, k + 1
    return out


def _pat_name(p: S.Pat) -> str:
    while isinstance(p, S.PAscribe):
        p = p.pat
    return p.name if isinstance(p, S.PId) else "_"


def _unique(t: T.Type) -> bool:
    if isinstance(t, T.Array):
        return t.unique
    if isinstance(t, T.Tuple):
        return any(_unique(x) for x in t.elems)
    if isinstance(t, T.Record):
        return any(_unique(x) for _, x in t.fields)
    return False


def _size_bindings(t: Any, v: Any) -> list[tuple[str, int]]:
    """(size name, value) pairs from matching a type's SizeVars with a value."""
    out: list[tuple[str, int]] = []
    if isinstance(t, T.Array) and V.is_array(v):
        shape = _full_shape(v)
        for d, n in zip(t.shape, shape):
            if isinstance(d, T.SizeVar):
                out.append((d.name, n))
            elif isinstance(d, T.AnySize) and d.id >= 0:
                out.append((anonymous_key(d), n))
        if not isinstance(t.elem, T.Scalar) and isinstance(v, V.StructArray):
            out += _size_bindings(t.elem, V.index_all(v))
    elif isinstance(t, T.Tuple) and isinstance(v, tuple):
        for x, y in zip(t.elems, v):
            out += _size_bindings(x, y)
    elif isinstance(t, T.Record) and isinstance(v, dict):
        for f, x in t.fields:
            if f in v:
                out += _size_bindings(x, v[f])
    return out


ANONYMOUS = "#anon"


def anonymous_key(d: T.AnySize) -> str:
    """The environment's name for an anonymous size of the checker (a size
    known only at run time, shared by the types it unified), bound where a
    let gives it to a value (`rep` and `unflatten` read it)."""
    return f"{ANONYMOUS}{d.id}"


def _has_anonymous(t: Any) -> bool:
    match t:
        case T.Array(e, shape, _):
            return any(isinstance(d, T.AnySize) for d in shape) or _has_anonymous(e)
        case T.Tuple(es):
            return any(map(_has_anonymous, es))
        case T.Record(fs):
            return any(_has_anonymous(x) for _, x in fs)
    return False


def pat_size_bindings(p: Any, v: Any) -> list[tuple[str, int]]:
    """Size names bound by matching a pattern with a value: from the checked
    type and, where that lost the names, from the written type ascriptions."""
    out = _size_bindings(p.ty, v)
    if isinstance(p, S.PAscribe):
        out += _te_size_bindings(p.type, v)
        out += pat_size_bindings(p.pat, v)
    elif isinstance(p, S.PTuple) and isinstance(v, tuple):
        for q, x in zip(p.elems, v):
            out += pat_size_bindings(q, x)
    elif isinstance(p, S.PRecord) and isinstance(v, dict):
        for f, q in p.fields:
            if f in v:
                out += pat_size_bindings(q, v[f])
    return out


def _te_size_bindings(te: Any, v: Any) -> list[tuple[str, int]]:
    if isinstance(te, S.TEUnique):
        return _te_size_bindings(te.inner, v)
    if isinstance(te, S.TEArray) and V.is_array(v):
        out = [(te.dim.name, V.length(v))] if isinstance(te.dim, S.DimName) else []
        if V.length(v) > 0:
            out += _te_size_bindings(te.elem, V.index(v, 0))
        elif isinstance(te.elem, S.TEArray) and isinstance(v, np.ndarray) and v.ndim > 1:
            out += _te_size_bindings(te.elem, np.zeros(v.shape[1:], v.dtype))
        return out
    if isinstance(te, S.TETuple) and isinstance(v, tuple):
        return [b for t, x in zip(te.elems, v) for b in _te_size_bindings(t, x)]
    if isinstance(te, S.TERecord) and isinstance(v, dict):
        return [b for f, t in te.fields if f in v for b in _te_size_bindings(t, v[f])]
    return []


def _full_shape(v: Any) -> tuple[int, ...]:
    return tuple(v.shape)


def project(v: Any, field: str) -> Any:
    if isinstance(v, tuple):
        return v[int(field)]
    return v[field]


def record_update(r: Any, fields: list[str], v: Any) -> Any:
    if not fields:
        return v
    f = fields[0]
    if isinstance(r, tuple):
        i = int(f)
        return r[:i] + (record_update(r[i], fields[1:], v),) + r[i + 1:]
    out = dict(r)
    out[f] = record_update(r[f], fields[1:], v)
    return out


def unop(op: str, x: Any) -> Any:
    if op == "!":
        return np.logical_not(x) if x.dtype == np.bool_ else np.invert(x)
    return np.negative(x)


def prim_binop(op: str, x: Any, y: Any, ty: Any) -> Any:
    """A built-in operator applied to two values of (checked) type `ty`."""
    t = prim_name(ty)
    if t is None:
        if op in ("==", "!="):
            eq = V.equal(x, y)
            return np.bool_(eq if op == "==" else not eq)
        t = T.DTYPE_PRIMS[np.asarray(x).dtype]
    return BINOPS[op].evaluator(t)(x, y)


def prim_op_fun(op: str, ty: Any, loc: Loc | None) -> PyFun:
    """`(op)` for a built-in operator as a curried, elementwise function."""
    t = ty.param if isinstance(ty, T.Arrow) else None
    pt = prim_name(t)

    def run(_c: Any, x: Any, y: Any) -> Any:
        return prim_binop(op, x, y, t if pt else None)

    return PyFun(f"({op})", 2, run, ty=ty, loc=loc, elementwise=True)


def _arrow_of_section(sec_ty: Any, arg_ty: Any, left: bool) -> Any:
    if isinstance(sec_ty, T.Arrow):
        return T.Arrow(None, arg_ty, sec_ty) if left else T.Arrow(None, sec_ty.param,
                                                                 T.Arrow(None, arg_ty,
                                                                         sec_ty.ret))
    return None


def _const_call(interp: Interpreter, f: PyFun) -> Any:
    from futgen.interp.functions import Call

    return Call(interp, f)


# --------------------------------------------------------------- indexing


def _fmt_index(i: Any) -> str:
    if isinstance(i, tuple):
        start, end, stride = i
        s = "" if start is None else str(start)
        if stride is not None:
            return f"{s}:{'' if end is None else end}:{stride}"
        if end is not None:
            return f"{s}:{end}"
        return f"{s or 0}:"  # Futhark shows the start a whole dimension defaults to
    return str(i)


def oob_message(idx: list, shape: tuple[int, ...]) -> str:
    return (f"Index [{', '.join(_fmt_index(i) for i in idx)}] out of bounds for array of shape "
            + "".join(f"[{n}]" for n in shape) + ".")


def slice_indices(start: int | None, end: int | None, stride: int | None,
                  n: int) -> slice | None:
    """The Python slice for Futhark's `start:end:stride` on length n, or None if invalid.

    Omitted bounds are `0` and `n` for a positive stride, `n-1` and `-1` for
    a negative one (Futhark's `internaliseDimIndex`).
    """
    st = 1 if stride is None else stride
    if st == 0:
        return None
    s = start if start is not None else (n - 1 if st < 0 else 0)
    e = end if end is not None else (-1 if st < 0 else n)
    sgn = 1 if e - s >= 0 else -1
    if e != s and sgn != (1 if st > 0 else -1):
        return None
    count = 0 if e == s else (abs(e - s) + abs(st) - 1) // abs(st)
    if count > 0:
        last = s + (count - 1) * st
        if not (0 <= s < n and 0 <= last < n):
            return None
    if count == 0:
        return slice(0, 0, 1)
    stop = s + count * st
    return slice(s, None if stop < 0 else stop, st)


def _key(arr: Any, idx: list, loc: Loc | None) -> tuple:
    shape = V.shape_of(arr)
    if len(idx) > len(shape):
        raise FutharkError(oob_message(idx, shape), loc)
    key = []
    for i, n in zip(idx, shape):
        if isinstance(i, tuple):
            sl = slice_indices(*i, n)
            if sl is None:
                raise FutharkError(oob_message(idx, shape), loc)
            key.append(sl)
        else:
            if not 0 <= i < n:
                raise FutharkError(oob_message(idx, shape), loc)
            key.append(i)
    return tuple(key)


def index_value(arr: Any, idx: list, loc: Loc | None) -> Any:
    """`arr[idx]` with Futhark's bounds checks; idx items are ints or slice triples."""
    return V.apply_key(arr, _key(arr, idx, loc))


def update_value(arr: Any, idx: list, v: Any, loc: Loc | None) -> Any:
    """`arr with [idx] = v`, in place (the checker made `arr` unique)."""
    key = _key(arr, idx, loc)
    if any(not leaf.flags.writeable for leaf in V.leaves(arr)):
        arr = V.copy(arr)
    _assign(arr, key, v, loc, idx)
    return arr


def _assign(arr: Any, key: tuple, v: Any, loc: Loc | None, idx: list) -> None:
    if isinstance(arr, np.ndarray):
        target_shape = arr[key].shape
        vshape = np.shape(v)
        if tuple(vshape) != tuple(target_shape):
            raise FutharkError(oob_message(idx, arr.shape), loc)
        arr[key] = v
        return
    vs = V.fields_of(v.fields) if isinstance(v, V.StructArray) else V.fields_of(v)
    for f, x in zip(V.fields_of(arr.fields), vs):
        _assign(f, key, x, loc, idx)


def make_range(start: Any, second: Any, end: Any, kind: str, loc: Loc | None) -> np.ndarray:
    """`start..second...end` and friends, with Futhark's validity rules."""
    dt = np.asarray(start).dtype
    s, e = int(start), int(end)
    sec = None if second is None else int(second)
    if kind == "..>":
        end_adj, step = e + 1, (-1 if sec is None else sec - s)
        ok = s >= e and (sec is None or sec < s)
    elif kind == "...":
        end_adj, step = e, (1 if sec is None else sec - s)
        if sec is None or sec > s:
            ok = s <= e
        else:
            ok = s >= e and sec != s
    else:
        end_adj, step = e - 1, (1 if sec is None else sec - s)
        ok = s <= e and (sec is None or sec > s)
    if not ok:
        mid = "" if sec is None else f"..{sec}"
        raise FutharkError(f"Range {s}{mid}{kind}{e} is invalid.", loc)
    stop = end_adj + (1 if step > 0 else -1)
    return np.arange(s, stop, step, dtype=np.int64).astype(dt)


def check_coercion(v: Any, t: Any, size_of: Any, loc: Loc | None) -> None:
    """`e :> t`: the value's shape must match the sizes of `t` known at run
    time (`size_of(d)` is None for the others), with Futhark's message."""
    have, want, ok = _coercion_shapes(v, t, size_of)
    if not ok:  # compiled code's message (core/checked.py), so both say the same
        raise FutharkError(f"Value of (desugared) shape {have} cannot match shape of type "
                           f"\"{want}\".", loc)


def _coercion_shapes(v: Any, t: Any, size_of: Any) -> tuple[str, str, bool]:
    """The value's shape, the type with its sizes evaluated, and whether they agree."""
    if isinstance(t, T.Array) and V.is_array(v):
        shape = V.shape_of(v)
        have = want = ""
        ok = True
        for d, n in zip(t.shape, shape):
            w = size_of(d) if not isinstance(d, T.AnySize) else None
            ok = ok and (w is None or w == n)
            have += f"[{n}]"
            want += f"[{n if w is None else w}]"
        if isinstance(v, V.StructArray):
            h, w2, ok2 = _coercion_shapes(V.index_all(v), t.elem, size_of)
            return have + h, want + w2, ok and ok2
        return have + "".join(f"[{n}]" for n in shape[len(t.shape):]), \
            want + V.type_str(t.elem), ok
    parts: list[tuple[str, tuple[str, str, bool]]] = []
    if isinstance(t, T.Tuple) and isinstance(v, tuple):
        parts = [("", _coercion_shapes(x, e, size_of)) for x, e in zip(v, t.elems)]
        open_, close = "(", ")"
    elif isinstance(t, T.Record) and isinstance(v, dict):
        parts = [(f"{f}: ", _coercion_shapes(v[f], e, size_of)) for f, e in t.fields if f in v]
        open_, close = "{", "}"
    else:
        return "", str(t), True
    have = open_ + ", ".join(k + h for k, (h, _, _) in parts) + close
    want = open_ + ", ".join(k + w for k, (_, w, _) in parts) + close
    return have, want, all(ok for _, (_, _, ok) in parts)

