"""Unification of types and sizes, with constraints on inference variables.

Inference variables are `TypeVar`s and `SizeVar`s whose names start with
`?`; every other name is rigid (a type or size parameter in scope).  A type
variable may carry a constraint:

- a set of primitive types it must be one of (from literals and overloaded
  operators: `1` may be any numeric type, `1.0` any float);
- "equality": it must not be a function type (for `==`);
- required record fields (from `r.x` before the type of `r` is known).

Anonymous sizes (`AnySize`) stand for sizes known only at run time; they
unify with every size without binding anything, and the interpreter checks
them when the program runs.  Existential sizes (`existential_size`, where
Futhark's rules say a size is new and unknown, as the result of `++`) are
rigid names instead: they equal no other size.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from futgen.errors import Loc
from futgen.frontend.levels import Levels, ScopeViolation
from futgen.frontend.types import (
    EXISTENTIAL_PREFIX,
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
    names_in_sizes,
    nonunique,
    size_names,
    size_var_names,
    substitute,
    type_var_names,
    written_name,
)


@dataclass
class Constraint:
    """What an inference type variable is known to satisfy."""

    prims: frozenset[str] | None = None  # must be one of these primitive types
    equality: bool = False
    fields: dict[str, Type] = field(default_factory=dict)
    origin: Loc | None = None  # where the constraint arose, for defaulting errors
    literal: str | None = None  # "int" / "float": the default comes from a literal


class UnifyError(Exception):
    """Raised internally; callers turn it into a CompileError with context."""


class Unifier:
    """A substitution for type and size inference variables."""

    def __init__(self) -> None:
        self.types: dict[str, Type] = {}
        self.sizes: dict[str, Dim] = {}
        # An inference size that met an anonymous size (`zip xs ys`, `xs` of a
        # size known only at run time) is that size unless a named one comes
        # later: the binding is kept aside and used when the size is closed.
        self.weak: dict[str, AnySize] = {}
        # Inference sizes that met an anonymous size in any unification,
        # lenient ones included: determined at run time, never ambiguous.
        self.met_anonymous: set[str] = set()
        # Anonymous sizes that unification made equal (directly, or through
        # an inference size that met both): a union-find over their ids, for
        # sizes Futhark would have unified (a loop's parameters, `loops.py`).
        self.anon_links: dict[int, int] = {}
        # Anonymous sizes unified with a known size (a name, a constant, an
        # expression), with those sizes: Futhark would have made them that size.
        self.anon_named: dict[int, list[Dim]] = {}
        # Anonymous sizes of built-ins' existential results (`filter`): new at
        # each call, so equal to no other size (in Futhark too).
        self.call_results: set[int] = set()
        # Anonymous sizes of the existential results of calls of named
        # functions, built-in or not, with where and by which call they are
        # made (Futhark's rigid unknown sizes, `loop_scope.py`).
        self.call_existentials: dict[int, tuple[Loc, str]] = {}
        # Inference sizes standing for a callee's size expression in a
        # parameter (`[d + 1]`), with the sizes of the callee's size
        # parameters it reads (`loop_scope.py`).
        self.expr_sizes: dict[str, set[Dim]] = {}
        # Sizes known only once an expression is evaluated, with where and by
        # what they are computed ('"filter"'), for the causality check.
        self.computed: dict[Dim, tuple[Loc, str]] = {}
        self.constraints: dict[str, Constraint] = {}
        # Why each existential size is unknown ("is unknown length of range
        # at t.fut:3:5"), for the messages of size mismatches.
        self.origins: dict[str, str] = {}
        # Whether a size name is in scope where unification happens (the
        # type checker's scopes).
        self.visible: Callable[[str], bool] = lambda name: True
        self._params: list[str | None] = []  # of the arrows being unified
        self.issued = 0  # inference names made so far (a stamp, `levels.py`)
        self.existentials: set[int] = set()  # ids of AnySizes of `?[n].` types
        # Anonymous sizes given by arguments the type system cannot name
        # (`iota xs[0]`), with the variables each reads (Futhark's size is
        # the argument), by id.
        self.arg_reads: dict[int, frozenset[str]] = {}
        # Sizes of a function's result naming variables of its body, which
        # Futhark makes unknown (`size_scope.py`), with the function and size.
        self.unscoped: dict[str, tuple[str, Dim]] = {}
        # Inference sizes standing for a callee's parameter size expression
        # that reads its size parameters (`[n + 1]`), with that expression.
        self.expr_params: dict[str, Dim] = {}
        self.levels = Levels()
        # Type variables standing for unlifted type parameters (`'x` of
        # `map`): Futhark's arrays are regular, so such a variable may not
        # become a type whose size a function's parameter gives (`map iota`).
        self.unlifted: set[str] = set()
        # Inference sizes inside what such a variable became: they too may
        # not become a parameter of the arrows being unified (a recursive
        # use `map f`, whose `f` turns out to be `(n: i64) -> [n]t`).
        self.unlifted_sizes: set[str] = set()

    # ------------------------------------------------------------ fresh names

    def _fresh_id(self) -> int:
        self.issued += 1
        return self.issued - 1

    def fresh_type(self, constraint: Constraint | None = None) -> TypeVar:
        name = f"?t{self._fresh_id()}"
        if constraint is not None:
            self.constraints[name] = constraint
        return TypeVar(name)

    def fresh_size(self) -> SizeVar:
        return SizeVar(f"?n{self._fresh_id()}")

    def anonymous_size(self, existential: bool = False) -> AnySize:
        """A size nobody named: a `[]`, or (`existential`) a name of a `?[n].`
        type or a size computed from one, which `existentials` records."""
        d = AnySize(self._fresh_id())
        if existential:
            self.existentials.add(d.id)
        return d

    def existential_size(self, origin: str | None = None) -> SizeVar:
        """A size only known at run time that is equal to no other size
        (Futhark's existential size): a rigid name nobody can write.
        `origin` says where it comes from, as mismatch messages show it."""
        d = SizeVar(f"{EXISTENTIAL_PREFIX}{self._fresh_id()}")
        if origin is not None:
            self.origins[d.name] = origin
        return d

    def note_computed(self, d: Dim, loc: Loc, producer: str) -> None:
        """Note that size `d` is computed by `producer` at `loc` (Futhark's
        unknown size), so no value evaluated earlier may need it."""
        self.computed.setdefault(d, (loc, producer))

    def explain(self, *dims: Dim) -> str:
        """What the existential sizes among `dims` are, one sentence each."""
        notes = [f'\n"{d}" {self.origins[d.name]}' for d in dims
                 if isinstance(d, SizeVar) and d.name in self.origins]
        return "".join(notes)

    # ------------------------------------------------------------ resolution

    def dim(self, d: Dim) -> Dim:
        while isinstance(d, SizeVar) and d.name in self.sizes:
            d = self.sizes[d.name]
        if isinstance(d, SizeProd):
            return SizeProd(tuple(self.dim(f) for f in d.factors))
        return d

    def resolved(self, d: Dim) -> Dim:
        """`d` resolved, an inference size that met only anonymous sizes
        (`weak`) being the anonymous size it met."""
        d = self.dim(d)
        if isinstance(d, SizeVar) and d.name in self.weak:
            return self.weak[d.name]
        return d

    def shallow(self, t: Type) -> Type:
        """Resolve bound type variables at the top of `t`, merging arrays."""
        while isinstance(t, TypeVar) and t.name in self.types:
            t = self.types[t.name]
        if (
            isinstance(t, Array)
            and isinstance(t.elem, TypeVar)
            and t.elem.name in self.types
        ):
            inner = self.shallow(t.elem)
            merged = array_of(inner, t.shape, t.unique)
            return merged
        return t

    def zonk(self, t: Type) -> Type:
        """`t` with every bound variable substituted, recursively."""
        t = self.shallow(t)
        match t:
            case Array(e, shape, u):
                return array_of(self.zonk(e), tuple(self.dim(d) for d in shape), u)
            case Tuple(es):
                return Tuple(tuple(self.zonk(e) for e in es))
            case Record(fs):
                return Record(tuple((f, self.zonk(x)) for f, x in fs))
            case Arrow(n, p, r):
                return Arrow(n, self.zonk(p), self.zonk(r))
        return t

    # ------------------------------------------------------------ unification

    def unify(self, t1: Type, t2: Type, lenient_sizes: bool = False) -> None:
        """Make `t1` and `t2` equal or raise UnifyError.

        With `lenient_sizes`, mismatching rigid sizes are accepted (used for
        size coercions `:>`, whose sizes are checked at run time).
        """
        t1, t2 = self.shallow(t1), self.shallow(t2)
        if isinstance(t1, TypeVar) and t1.name.startswith("?"):
            self._bind(t1.name, t2, lenient_sizes)
            return
        if isinstance(t2, TypeVar) and t2.name.startswith("?"):
            self._bind(t2.name, t1, lenient_sizes)
            return
        match t1, t2:
            case Scalar(a), Scalar(b) if a == b:
                return
            case TypeVar(a), TypeVar(b) if a == b:
                return
            case Array(), Array():
                self._unify_arrays(t1, t2, lenient_sizes)
                return
            case Tuple(es1), Tuple(es2) if len(es1) == len(es2):
                self._unify_fields([(str(k), a, b) for k, (a, b) in enumerate(zip(es1, es2))],
                                   lenient_sizes)
                return
            case Record(fs1), Record(fs2) if [f for f, _ in fs1] == [f for f, _ in fs2]:
                self._unify_fields([(f, a, b) for (f, a), (_, b) in zip(fs1, fs2)],
                                   lenient_sizes)
                return
            case Arrow(n1, p1, r1), Arrow(n2, p2, r2):
                self.unify(p1, p2, lenient_sizes)
                if n1 is not None and n2 is not None and n1 != n2:
                    # `(k: i64) -> [k]t` is `(n: i64) -> [n]t`.
                    r2 = substitute(self.zonk(r2), {}, {n2: SizeVar(n1)})
                self._unify_in(n1 or n2, r1, r2, lenient_sizes)
                return
        if isinstance(t1, Record) and isinstance(t2, Record):
            n1, n2 = {f for f, _ in t1.fields}, {f for f, _ in t2.fields}
            unshared = ", ".join(sorted(n1 ^ n2))
            raise UnifyError(
                f"Cannot unify record types {self.zonk(t1)} and {self.zonk(t2)}: "
                f"unshared fields: {unshared}."
            )
        raise UnifyError(f"types {self.zonk(t1)} and {self.zonk(t2)} do not match")

    def _unify_in(self, name: str | None, t1: Type, t2: Type, lenient: bool) -> None:
        """Unify the results of two arrows whose parameter is `name`, which
        is in scope in them."""
        self._params.append(name)
        try:
            self.unify(t1, t2, lenient)
        finally:
            self._params.pop()

    def _unify_fields(self, fields: list[tuple[str, Type, Type]], lenient: bool) -> None:
        """Unify the fields of two tuples or records; a mismatch names the
        field, `(in field 1.x)` for nested ones."""
        for name, a, b in fields:
            try:
                self.unify(a, b, lenient)
            except UnifyError as e:
                text = str(e)
                inner = re.fullmatch(r"(.*) \(in field (\S+)\)", text, re.DOTALL)
                text = (f"{inner[1]} (in field {name}.{inner[2]})" if inner
                        else f"{text} (in field {name})")
                raise UnifyError(text) from None

    def _unify_arrays(self, a1: Array, a2: Array, lenient: bool) -> None:
        n1, n2 = len(a1.shape), len(a2.shape)
        n = min(n1, n2)
        for d1, d2 in zip(a1.shape[:n], a2.shape[:n]):
            self.unify_dims(d1, d2, lenient)
        rest1 = array_of(a1.elem, a1.shape[n:])
        rest2 = array_of(a2.elem, a2.shape[n:])
        if n1 != n2 and not (
            isinstance(self.shallow(rest1), TypeVar)
            or isinstance(self.shallow(rest2), TypeVar)
        ):
            raise UnifyError(
                f"types {self.zonk(a1)} and {self.zonk(a2)} do not match (different ranks)"
            )
        self.unify(rest1, rest2, lenient)

    def unify_dims(self, d1: Dim, d2: Dim, lenient: bool = False) -> None:
        d1, d2 = self.dim(d1), self.dim(d2)
        if d1 == d2:
            return
        if isinstance(d1, AnySize) or isinstance(d2, AnySize):
            var, anon = (d2, d1) if isinstance(d1, AnySize) else (d1, d2)
            self.met_anonymous |= _inference_sizes(var)
            if lenient:
                return
            if isinstance(var, AnySize):
                self.link_anonymous(var, anon)
            elif isinstance(var, SizeVar) and var.name.startswith("?"):
                self.link_anonymous(self.weak.setdefault(var.name, anon), anon)
            else:
                self.anon_named.setdefault(anon.id, []).append(var)
            return
        if isinstance(d1, SizeVar) and d1.name.startswith("?"):
            self._bind_size(d1.name, d2, lenient)
            return
        if isinstance(d2, SizeVar) and d2.name.startswith("?"):
            self._bind_size(d2.name, d1, lenient)
            return
        if isinstance(d1, SizeProd) or isinstance(d2, SizeProd):
            self._unify_products(d1, d2, lenient)
            return
        if isinstance(d1, SizeExpr) or isinstance(d2, SizeExpr):
            if not lenient and self._known(d1) and self._known(d2):
                raise UnifyError(f'Sizes "{d1}" and "{d2}" do not match.'
                                 f"{_occurs_note(d1, d2)}{self.explain(d1, d2)}")
            return  # against a product: checked at run time
        if not lenient:
            raise UnifyError(f'Sizes "{d1}" and "{d2}" do not match.{self.explain(d1, d2)}')

    def _known(self, d: Dim) -> bool:
        """Whether size `d` is one the checker knows, for comparing it with a
        size expression: as in Futhark, a size expression is only the same
        size as one written the same way, not as a name, a constant, or
        another expression.  A name gone out of scope (`let m = n + 1 in
        iota m`) is not known: its expression may be the other size."""
        match d:
            case SizeConst():
                return True
            case SizeVar(name):  # not an existential: `++`'s is a sum in Futhark
                return written_name(name) and self._visible(name)
            case SizeExpr():
                return all(self._visible(n) for n in size_names(d))
        return False

    def _visible(self, name: str) -> bool:
        return name in self._params or self.visible(name)

    def _bind_size(self, name: str, d: Dim, lenient: bool) -> None:
        if not lenient:  # a coercion does not make the sizes one
            try:
                self.levels.binding_size(name, d)
            except ScopeViolation as e:
                raise UnifyError(str(e)) from None
        if name in self.unlifted_sizes:
            self._check_unlifted_size(name, d)
        self.sizes[name] = d
        if name in self.weak and not (isinstance(d, SizeVar) and d.name.startswith("?")):
            self.anon_named.setdefault(self.weak[name].id, []).append(d)
        if name in self.met_anonymous and isinstance(d, SizeVar):
            self.met_anonymous.add(d.name)
        if name in self.weak and isinstance(d, SizeVar) and d.name.startswith("?"):
            self.link_anonymous(self.weak.setdefault(d.name, self.weak[name]), self.weak[name])

    def _check_unlifted_size(self, name: str, d: Dim) -> None:
        """Inference size `name` of an unlifted type variable's type may
        become `d`: not a parameter of the arrows being unified."""
        bound = sorted(dim_names(d) & {p for p in self._params if p})
        if bound:
            raise _escaped_parameter("a size would be", bound[0])
        if isinstance(d, SizeVar) and d.name.startswith("?"):
            self.unlifted_sizes.add(d.name)

    def link_anonymous(self, a: AnySize, b: AnySize) -> None:
        """Record that anonymous sizes `a` and `b` were unified."""
        ra, rb = self.anon_root(a), self.anon_root(b)
        if ra != rb:
            self.anon_links[ra] = rb

    def anon_root(self, a: AnySize) -> int:
        """The representative of the anonymous sizes unified with `a`."""
        i = a.id
        while i in self.anon_links:
            i = self.anon_links[i]
        return i

    def _unify_products(self, d1: Dim, d2: Dim, lenient: bool) -> None:
        """Products of as many factors match factor by factor (as Futhark,
        syntactically); other combinations are only known equal at run time,
        so they pass and the interpreter checks them."""
        if (
            isinstance(d1, SizeProd)
            and isinstance(d2, SizeProd)
            and len(d1.factors) == len(d2.factors)
        ):
            for f1, f2 in zip(d1.factors, d2.factors):
                self.unify_dims(f1, f2, lenient)

    def _bind(self, name: str, t: Type, lenient: bool) -> None:
        if isinstance(t, TypeVar) and t.name == name:
            return
        if self._occurs(name, t):
            raise UnifyError(
                f"Occurs check: cannot instantiate {name} with {t} (an infinite type)"
            )
        try:
            self.levels.binding_type(name, type_var_names(self.zonk(t)))
        except ScopeViolation as e:
            raise UnifyError(str(e)) from None
        if name in self.unlifted:
            self._check_unlifted(t)
        c = self.constraints.pop(name, None)
        # Uniqueness belongs to declared parameter and return types, never to
        # what an inference variable stands for.
        self.types[name] = nonunique(t)
        if c is not None:
            self._apply_constraint(c, t, lenient)

    def _check_unlifted(self, t: Type) -> None:
        """`t` may instantiate an unlifted type parameter: no size in it is
        a parameter of the arrows being unified (the function argument's)."""
        t = self.zonk(t)
        if isinstance(t, TypeVar):
            self.unlifted.add(t.name)
            return
        self.unlifted_sizes |= {n for n in size_var_names(t) if n.startswith("?")}
        bound = sorted(names_in_sizes(t) & {p for p in self._params if p})
        if bound:
            raise _escaped_parameter(f"the size of {nonunique(t)} is", bound[0])

    def _apply_constraint(self, c: Constraint, t: Type, lenient: bool) -> None:
        t = self.shallow(t)
        if isinstance(t, TypeVar) and t.name.startswith("?"):
            self._merge_constraint(t.name, c)
            return
        if c.prims is not None and not (isinstance(t, Scalar) and t.name in c.prims):
            if isinstance(t, Record):
                raise UnifyError(f"Cannot unify type that must be one of {_prims_str(c.prims)} "
                                 f"with type that must be a record ({self.zonk(t)}).")
            raise UnifyError(f"type {self.zonk(t)} is not one of {_prims_str(c.prims)}")
        if c.equality and isinstance(t, Arrow):
            raise UnifyError(
                f"type {self.zonk(t)} does not support equality (a function)"
            )
        for fname, ftype in c.fields.items():
            actual = _field_of(t, fname)
            if actual is None:
                raise UnifyError(f"Cannot unify record type with fields {{{fname}: "
                                 f"{self.zonk(ftype)}}} with type {self.zonk(t)}")
            self.unify(actual, ftype, lenient)

    def _merge_constraint(self, name: str, c: Constraint) -> None:
        old = self.constraints.get(name)
        if old is None:
            self.constraints[name] = c
            return
        if c.prims is not None:
            prims = c.prims if old.prims is None else old.prims & c.prims
            if not prims:
                raise UnifyError(
                    f"no type is both one of {_prims_str(old.prims or frozenset())}"
                    f" and one of {_prims_str(c.prims)}"
                )
            old.prims = prims
        if (old.prims is not None and c.fields) or (c.prims is not None and old.fields):
            raise UnifyError(f"Cannot unify type that must be one of "
                             f"{_prims_str(old.prims or c.prims or frozenset())} with type "
                             "that must be a record.")
        old.equality = old.equality or c.equality
        old.literal = old.literal or c.literal
        old.origin = old.origin or c.origin
        for fname, ftype in c.fields.items():
            if fname in old.fields:
                self.unify(old.fields[fname], ftype)
            else:
                old.fields[fname] = ftype

    def _occurs(self, name: str, t: Type) -> bool:
        t = self.shallow(t)
        match t:
            case TypeVar(n):
                return n == name
            case Array(e, _, _):
                return self._occurs(name, e)
            case Tuple(es):
                return any(self._occurs(name, e) for e in es)
            case Record(fs):
                return any(self._occurs(name, x) for _, x in fs)
            case Arrow(_, p, r):
                return self._occurs(name, p) or self._occurs(name, r)
        return False

    def require_field(self, t: Type, fname: str, origin: Loc | None = None) -> Type:
        """The type of field `fname` of `t`, constraining `t` if it is unknown
        (`origin`: where the field is taken, for an ambiguity error)."""
        t = self.shallow(t)
        if isinstance(t, TypeVar) and t.name.startswith("?"):
            ftype = self.fresh_type()
            self._merge_constraint(t.name, Constraint(fields={fname: ftype}, origin=origin))
            return ftype
        actual = _field_of(t, fname)
        if actual is None:
            raise UnifyError(f"type {self.zonk(t)} has no field {fname}")
        return actual


def _inference_sizes(d: Dim) -> set[str]:
    """The inference sizes size `d` is made of."""
    if isinstance(d, SizeProd):
        return set().union(*(_inference_sizes(f) for f in d.factors))
    return {d.name} if isinstance(d, SizeVar) and d.name.startswith("?") else set()


def _occurs_note(d1: Dim, d2: Dim) -> str:
    """Why a size and an expression of it (`n`, `n + n`: a function that
    must keep sizes but grows them) never match: Futhark's occurs check."""
    for name, expr in ((d1, d2), (d2, d1)):
        if isinstance(name, SizeVar) and isinstance(expr, SizeExpr) \
                and name.name in size_names(expr):
            return f'\nOccurs check: "{name}" occurs in "{expr}", so the two cannot be unified.'
    return ""


def _field_of(t: Type, fname: str) -> Type | None:
    if isinstance(t, Record):
        return t.field(fname)
    if isinstance(t, Tuple) and fname.isdigit() and int(fname) < len(t.elems):
        return t.elems[int(fname)]
    return None


def _prims_str(prims: frozenset[str]) -> str:
    return ", ".join(sorted(prims))


def _escaped_parameter(what: str, name: str) -> UnifyError:
    """A size of an unlifted type parameter's instance that is the parameter
    `name` of the function argument being unified (Futhark's regular arrays)."""
    return UnifyError(f'{what} the function\'s parameter "{name}", an existential size '
                      "outside it: a type parameter would be instantiated with a type "
                      "containing anonymous sizes")
