"""Aliases and consumption: the uniqueness half of the type checker.

An in-place update `xs with [i] = v` and a call passing `xs` for a unique
(`*t`) parameter *consume* `xs`: they may overwrite its memory.  That is
only safe if nothing can still read that memory later, so the checker
tracks, for every value, which variables it may share memory with (its
*aliases*), and rejects a program that

- uses a variable after it, or anything it aliases, was consumed;
- consumes what it may not: a non-unique parameter, a global constant, or a
  variable bound outside the loop, lambda or local function that consumes it;
- returns, for a unique result, memory that a non-unique parameter owns.

The model follows Futhark's (`Language/Futhark/TypeChecker/Consumption.hs`):

- Every variable has a unique id (`VarInfo.uid`, `x#4`); an *alias* of a
  value is a set of such ids.  A tuple or record value keeps one alias per
  component (a `tuple` of aliases, nested like the value, record fields in
  their sorted order), so `let (a, b) = (copy xs, ys)` lets `a` be consumed
  without touching `ys`.  Values of primitive type alias nothing.
- A variable aliases itself plus what its defining expression aliased; the
  components of a tuple or record variable alias the variable's component
  ids (`x#4#0`, `x#4#1`), which count as `x#4` for consumption but keep
  `(x.0, x.1)` from looking like two copies of one array.  Indexing and
  slicing alias their array.
- A function result aliases its non-consumed arguments, the function value
  itself (a function parameter, or the free variables of a lambda or local
  function: its *closure*), and a fresh pseudo-id naming the application
  (`anon:3`, "the result of applying f"), except the parts of it whose
  declared type is unique (`*`): that is how `map`, `copy` and friends
  produce fresh arrays.  A loop's result likewise aliases its body's result
  and, for parameters it does not consume, its initial value.
- *Consuming* a value records the variables of its alias as consumed (with
  the place); *observing* a variable (any use) fails if its alias meets the
  consumed set.  Global constants alias the pseudo-id `global:<name>`,
  which can never be consumed and which a function result may not alias.
- A `Consumption` holds this state for one top-level definition: the
  consumed ids, the *barriers* (loop and lambda bodies, local functions,
  size expressions) that variables bound outside them may not be consumed
  across, and the variables observed inside them (their free variables).
- Function types are compared for uniqueness where a function is passed
  or ascribed: a function that consumes its argument is no substitute for
  one that does not, nor one with a non-unique result for one promising a
  unique result.

The type checker (`typecheck.py`) computes aliases alongside types in its
single walk and calls into this module to consume, observe and check.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Protocol

from futgen.errors import ERROR_INDEX, CompileError, Loc
from futgen.frontend import syntax as S
from futgen.frontend.types import Array, Arrow, Record, Scalar, Tuple, Type

# An alias: a set of variable ids for a value of array (or unknown) type,
# or one alias per component of a tuple or record value.
Alias = frozenset | tuple

NO_ALIAS: frozenset = frozenset()

GLOBAL = "global:"


class Bound(Protocol):
    """What consumption needs to know of a variable in scope (`VarInfo`)."""

    uid: str
    name: str
    depth: int
    aliases: Alias
    consumable: str | None  # None if consumable, else why not
    is_global: bool


# ==================================================================== aliases


def flatten_alias(a: Alias) -> frozenset:
    """All ids an alias mentions, in any component."""
    if isinstance(a, frozenset):
        return a
    out: frozenset = frozenset()
    for x in a:
        out |= flatten_alias(x)
    return out


def merge_alias(a: Alias, b: Alias) -> Alias:
    """The alias of a value that is either `a`'s or `b`'s (`if`)."""
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
        return tuple(merge_alias(x, y) for x, y in zip(a, b))
    return flatten_alias(a) | flatten_alias(b)


def remove_alias(a: Alias, uids: frozenset) -> Alias:
    """`a` without the ids `uids`, component by component."""
    if isinstance(a, tuple):
        return tuple(remove_alias(x, uids) for x in a)
    return a - uids


def alias_by_uniqueness(t: Type, everything: frozenset) -> Alias:
    """The alias of a function result of type `t` that may alias `everything`:
    its unique parts alias nothing."""
    match t:
        case Tuple(es):
            return tuple(alias_by_uniqueness(x, everything) for x in es)
        case Record(fs):
            return tuple(alias_by_uniqueness(x, everything) for _, x in fs)
        case Array(_, _, u):
            return NO_ALIAS if u else everything
        case Scalar():
            return NO_ALIAS
    return everything


def component(a: Alias, i: int) -> Alias:
    """The alias of component `i` of a tuple or record value of alias `a`."""
    if isinstance(a, tuple) and i < len(a):
        return a[i]
    return flatten_alias(a)


def _field_names(t: Type) -> list[str]:
    """The fields of a (resolved) tuple or record type, in component order."""
    if isinstance(t, Record):
        return [f for f, _ in t.fields]
    if isinstance(t, Tuple):
        return [str(i) for i in range(len(t.elems))]
    return []


def field_alias(t: Type, al: Alias, name: str) -> Alias:
    """The alias of field `name` of a value of (resolved) type `t` and alias `al`."""
    names = _field_names(t)
    if name in names:
        return component(al, names.index(name))
    return flatten_alias(al)


def with_field_alias(t: Type, al: Alias, fields: list[str], new: Alias) -> Alias:
    """The alias of `v with f.g = x`: `v` of (resolved) type `t` and alias `al`,
    `x` of alias `new`."""
    if not fields:
        return new
    names = _field_names(t)
    if fields[0] not in names:
        return flatten_alias(al) | flatten_alias(new)
    i = names.index(fields[0])
    ft = t.elems[i] if isinstance(t, Tuple) else t.fields[i][1]  # type: ignore[union-attr]
    parts = [component(al, j) for j in range(len(names))]
    parts[i] = with_field_alias(ft, parts[i], fields[1:], new)
    return tuple(parts)


def updates_inside(value: S.Expr, src: S.Expr) -> bool:
    """Whether `value` is an index update of a field of `src` itself: the
    parser's form of `src with f[i] = v`, which shares the node `src`."""
    if not isinstance(value, (S.Update, S.RecordUpdate)):
        return False
    inner = value.src
    while isinstance(inner, S.Project):
        inner = inner.expr
    if isinstance(inner, S.Index):
        inner = inner.expr
    return inner is src or updates_inside(value.value, src)


def pattern_aliases(p: S.Pat, t: Type, al: Alias) -> list[Alias]:
    """The aliases of the variables of pattern `p` (in binding order) bound
    to a value of (resolved) type `t` and alias `al`."""
    match p:
        case S.PId():
            return [al]
        case S.PAscribe(inner, _, _):
            return pattern_aliases(inner, t, al)
        case S.PTuple(elems, _) if len(elems) == 1:
            return pattern_aliases(elems[0], t, al)
        case S.PTuple(elems, _):
            ts = t.elems if isinstance(t, Tuple) else [t] * len(elems)
            return [
                a
                for i, (x, xt) in enumerate(zip(elems, ts))
                for a in pattern_aliases(x, xt, component(al, i))
            ]
        case S.PRecord(fields, _):
            out = []
            for f, x in fields:
                ft = t.field(f) if isinstance(t, Record) else None
                out += pattern_aliases(x, ft or t, field_alias(t, al, f))
            return out
    return []


def unique_names(p: S.Pat, unique: bool = False) -> set[str]:
    """The names a pattern declares unique (`(xs: *[]i32, n)`)."""
    match p:
        case S.PId(name, _):
            return {name} if unique else set()
        case S.PAscribe(inner, te, _):
            return unique_names(inner, unique or isinstance(te, S.TEUnique))
        case S.PTuple(elems, _):
            return set().union(*(unique_names(x, unique) for x in elems))
        case S.PRecord(fields, _):
            return set().union(*(unique_names(x, unique) for _, x in fields))
    return set()


def self_alias(uid: str, t: Type, src: Alias) -> Alias:
    """The alias of a variable `uid` of type `t` bound to a value of alias `src`."""
    match t:
        case Scalar():
            return NO_ALIAS
        case Tuple(es):
            return tuple(
                self_alias(f"{uid}#{i}", x, component(src, i)) for i, x in enumerate(es)
            )
        case Record(fs):
            return tuple(
                self_alias(f"{uid}#{i}", x, component(src, i))
                for i, (_, x) in enumerate(fs)
            )
    return flatten_alias(src) | {uid}


def global_alias(name: str, t: Type, value: Alias) -> Alias:
    """The alias of a global constant `name` of type `t` whose body has alias
    `value`: its arrays alias `global:<name>`; a function in it only if its
    closure holds memory of the constant (Futhark tracks no function in a
    constant, but a closure returning the constant's array must not let a
    function's result escape as fresh)."""
    match t:
        case Scalar():
            return NO_ALIAS
        case Arrow():
            return frozenset({GLOBAL + name}) if flatten_alias(value) else NO_ALIAS
        case Tuple(es):
            return tuple(global_alias(name, x, component(value, i)) for i, x in enumerate(es))
        case Record(fs):
            return tuple(
                global_alias(name, x, component(value, i)) for i, (_, x) in enumerate(fs)
            )
    return frozenset({GLOBAL + name})


def alias_parts(a: Alias) -> list[frozenset]:
    """The aliases of the non-tuple components of a value, in order."""
    if isinstance(a, frozenset):
        return [a]
    return [p for x in a for p in alias_parts(x)]


_VAR_ID = re.compile(r"[^#]*#\d+")


def base_id(uid: str) -> str:
    """The variable a component id belongs to (`x#4` for `x#4#1`)."""
    m = _VAR_ID.match(uid)
    return m.group(0) if m else uid


def base_ids(a: Alias) -> frozenset:
    """The variables (and pseudo-ids) an alias mentions."""
    return frozenset(base_id(u) for u in flatten_alias(a))


# ============================================================ unique types


def make_unique(t: Type, unique: bool = True) -> Type:
    """`t` with every array in it (through tuples and records) unique (or,
    with `unique` false, none)."""
    match t:
        case Array(e, s, _):
            return Array(e, s, unique)
        case Tuple(es):
            return Tuple(tuple(make_unique(x, unique) for x in es))
        case Record(fs):
            return Record(tuple((f, make_unique(x, unique)) for f, x in fs))
    return t


def any_array(t: Type, pred: Callable[[Array], bool]) -> bool:
    """Whether some array inside `t` (through tuples and records) satisfies `pred`."""
    match t:
        case Array():
            return pred(t)
        case Tuple(es):
            return any(any_array(x, pred) for x in es)
        case Record(fs):
            return any(any_array(x, pred) for _, x in fs)
    return False


def is_unique(t: Type) -> bool:
    """Whether `t` has a unique array in it: a parameter of it is consumed."""
    return any_array(t, lambda a: a.unique)


def function_subtype_error(actual: Type, expected: Type) -> str | None:
    """Why a function of type `actual` cannot stand where `expected` is
    wanted, as far as uniqueness goes (None if it can, or if either is no
    function)."""
    if not (isinstance(actual, Arrow) and isinstance(expected, Arrow)):
        return None
    while isinstance(actual, Arrow) and isinstance(expected, Arrow):
        if is_unique(actual.param) and not is_unique(expected.param):
            return (
                f"a function consuming its argument ({actual.param}) is not "
                f"allowed where a function not consuming it ({expected.param}) "
                "is expected"
            )
        actual, expected = actual.ret, expected.ret
    if is_unique(expected) and not isinstance(expected, Arrow) and not is_unique(actual):
        return (
            f"a function with a non-unique result ({actual}) is not allowed "
            f"where one with a unique result ({expected}) is expected"
        )
    return None


# ============================================================= consumption


class Consumption:
    """The consumption state while checking one top-level definition.

    Args:
        in_scope: the variables in scope among some ids (the checker's
            scopes; ids of variables gone out of scope are Futhark's free
            aliases: never checked for consumability, but still tracked).
        is_prim: whether a variable turned out to be of primitive type
            (then it aliases nothing, though its type was unknown when an
            alias of it was taken).
    """

    def __init__(
        self,
        in_scope: Callable[[frozenset], Iterable[Bound]],
        is_prim: Callable[[Bound], bool],
    ) -> None:
        self.in_scope = in_scope
        self.is_prim = is_prim
        self.consumed: dict[str, Loc] = {}
        self.barriers: list[tuple[int, str]] = []  # (depth, "loop" | "lambda" | ...)
        # The variables observed, per open watch: (depth, uid -> variable).
        self._frames: list[tuple[int, dict[str, Bound]]] = []
        self._pseudo: dict[str, str] = {}  # pseudo-id -> what it names
        self._ids = itertools.count()

    def reset(self) -> None:
        """Start a new top-level definition."""
        self.consumed = {}

    def fresh(self, description: str) -> str:
        """A pseudo-id for an anonymous value (`the result of applying "f"`)."""
        uid = f"anon:{next(self._ids)}"
        self._pseudo[uid] = description
        return uid

    def describe(self, uid: str) -> str:
        """A variable or pseudo-id as messages name it."""
        if uid in self._pseudo:
            return self._pseudo[uid]
        return f'"{uid.split("#")[0].removeprefix(GLOBAL)}"'

    # ------------------------------------------------ observing and consuming

    def observe(self, v: Bound, loc: Loc) -> None:
        """A use of `v` at `loc`: neither it nor what it aliases may be consumed."""
        if self._frames:
            self._frames[-1][1].setdefault(v.uid, v)
        own = base_id(v.uid)
        # Report the variable's own consumption first, else an alias's.
        for uid in [own, *sorted(base_ids(v.aliases) - {own})]:
            if uid in self.consumed:
                what = "," if uid == own else f", an alias of {self.describe(uid)},"
                raise CompileError(
                    f'Using "{v.name}"{what} but this was consumed at '
                    f"{self.consumed[uid]}.  (Possibly through aliases.)",
                    loc,
                )

    def consume(self, aliases: Alias, loc: Loc, what: str) -> None:
        """Consume a value of alias `aliases` at `loc` (`what` says how)."""
        uids = base_ids(aliases)
        uids -= {v.uid for v in self.in_scope(uids) if self.is_prim(v)}
        for info in self._bound(uids):
            why = self._not_consumable(info)
            if why is not None:
                raise CompileError(
                    f'Consuming variable "{info.name}", which is not consumable '
                    f"({why}); consumed as {what}.",
                    loc,
                )
        for uid in uids:
            self.consumed.setdefault(uid, loc)

    def _not_consumable(self, info: Bound) -> str | None:
        if info.is_global:
            return "a global constant"
        if info.consumable is not None:
            return info.consumable
        for depth, kind in reversed(self.barriers):
            if info.depth < depth:
                return f"it is bound outside the enclosing {kind}"
        return None

    def _bound(self, uids: frozenset) -> Iterator[Bound]:
        yield from self.in_scope(uids)
        for uid in sorted(uids):
            if uid.startswith(GLOBAL):
                yield _Global(uid, uid.removeprefix(GLOBAL))

    # ------------------------------------------------------------- barriers

    def enter(self, depth: int, kind: str) -> None:
        """Enter a loop, lambda, local function or size expression whose
        variables are bound at `depth` and deeper."""
        self.barriers.append((depth, kind))
        self.watch(depth)

    def leave(self) -> list[Bound]:
        """Leave the innermost barrier; return the variables bound outside it
        that it observed (its free variables)."""
        self.barriers.pop()
        return self.unwatch()

    def watch(self, depth: int) -> None:
        """Start collecting the variables bound above `depth` that are used."""
        self._frames.append((depth, {}))

    def unwatch(self) -> list[Bound]:
        """Stop the innermost `watch`; return the variables it collected."""
        depth, seen = self._frames.pop()
        free = [v for v in seen.values() if v.depth < depth]
        if self._frames:
            for v in free:
                self._frames[-1][1].setdefault(v.uid, v)
        return free

    @staticmethod
    def closure(free: list[Bound]) -> frozenset:
        """The alias of a function value with free variables `free`: what
        they alias (global constants and functions aside)."""
        out: frozenset = NO_ALIAS
        for v in free:
            if not v.is_global:
                out |= flatten_alias(v.aliases)
        return out

    # ------------------------------------------------------------ arguments

    @staticmethod
    def check_update_overlap(src: Alias, value: Alias, loc: Loc) -> None:
        """`src with [i] = value`: the value may not share memory with `src`."""
        if base_ids(src) & base_ids(value):
            raise CompileError(
                "Source array for in-place update might alias the update value.  "
                'Hint: use "copy" to remove aliases from the value.',
                loc,
            )

    @staticmethod
    def check_not_self_aliased(arg: Alias, loc: Loc) -> None:
        """A value passed for a consuming parameter may not alias itself across
        components (`f (xs, xs)` with `f (a: *[]t, b: *[]t)`)."""
        seen: frozenset = NO_ALIAS
        for part in alias_parts(arg):
            if part & seen:
                raise CompileError(
                    "Argument passed for consuming parameter is self-aliased.", loc
                )
            seen |= part

    def check_consumed_arg(
        self, arg: Alias, others: list[tuple[Alias, Loc]], loc: Loc
    ) -> None:
        """A consumed argument may not alias another argument of the call."""
        self.check_not_self_aliased(arg, loc)
        mine = {u for u in base_ids(arg) if "#" in u}
        for other, oloc in others:
            shared = sorted(mine & base_ids(other))
            if shared:
                raise CompileError(
                    f"Argument is consumed, but aliases {self.describe(shared[0])}, "
                    f"which is also aliased by another argument (at {oloc}).",
                    loc,
                )

    def check_functional_arg(self, before: dict, loc: Loc, what: str) -> None:
        """A value of function type may not consume anything (`map (f xs) ys`
        with `f` consuming `xs` would consume it once per element)."""
        new = sorted(set(self.consumed) - set(before))
        if new:
            raise CompileError(
                f"{what} of functional type contains consumption (of "
                f"{self.describe(new[0])}), which is not allowed.\n"
                f"{ERROR_INDEX}contains-consumption",
                loc,
            )

    # ------------------------------------------------- checks on definitions

    def check_return(
        self, what: str, rt: Type, bal: Alias, params: list[Bound], loc: Loc
    ) -> None:
        """The unique parts of a result `rt` (of alias `bal`) may alias neither
        a non-consumable parameter nor another part of the result."""
        seen_unique: set = set()
        seen: set = set()
        for unique, uids in _result_parts(rt, bal):
            if (unique and uids & seen) or (uids & seen_unique):
                raise CompileError(
                    f"A unique-typed component of the return value of {what} is "
                    "aliased to some other component.",
                    loc,
                )
            seen |= uids
            if not unique:
                continue
            seen_unique |= uids
            for p in params:
                if p.consumable is not None and base_ids(uids) & {p.uid}:
                    raise CompileError(
                        f'Unique-typed return value of {what} is aliased to "{p.name}", '
                        "which is not consumable.",
                        loc,
                    )

    def infer_result_uniqueness(self, t: Type, al: Alias, params: list[Bound]) -> Type:
        """The result type `t` (of alias `al`) of a function declaring none,
        as Futhark infers it: a part is unique if, of the variables in scope,
        it aliases only consumed parameters, and no other part aliases
        anything it does (a caller may then consume it)."""
        consuming = {p.uid for p in params if p.consumable is None}
        counts: dict[str, int] = {}
        for _, part in _result_parts(t, al):
            for uid in base_ids(part):
                counts[uid] = counts.get(uid, 0) + 1
        shared = {uid for uid, n in counts.items() if n > 1}

        def fresh(part: frozenset) -> bool:
            uids = base_ids(part)
            bound = {v.uid for v in self._bound(uids) if v.is_global or not self.is_prim(v)}
            return bound <= consuming and not uids & shared

        return _with_result_uniqueness(t, al, fresh)

    @staticmethod
    def check_result_aliases(bal: Alias, loc: Loc) -> None:
        """A function's result may not alias a global constant."""
        for uid in sorted(flatten_alias(bal)):
            if uid.startswith(GLOBAL):
                raise CompileError(
                    f'Function result aliases the free variable "{uid.removeprefix(GLOBAL)}"; '
                    'use "copy" to break the aliasing.',
                    loc,
                )

    # ----------------------------------------------------------------- loops

    def check_loop_result(
        self,
        pat: S.Pat,
        t: Type,
        params: list[Bound],
        newly: set,
        body: Alias,
        loc: Loc,
    ) -> set[str]:
        """Check what a loop's body returns for its parameters; return the
        ids of the parameters the loop consumes: those declared unique, those
        the body consumed (`newly`), and those whose value is returned for a
        consumed parameter, to a fixed point (as Futhark infers them).

        Args:
            pat, t: the loop's parameter pattern and its (resolved) type.
            params: the variables `pat` binds, in order, all at one depth.
            body: the alias of the body's result.
        """
        returned = dict(zip((p.uid for p in params), pattern_aliases(pat, t, body)))
        declared = unique_names(pat)
        consumed = {p.uid for p in params if p.uid in newly or p.name in declared}
        while True:
            more = set(consumed)
            for uid in consumed:
                more |= {p.uid for p in params if p.uid in base_ids(returned[uid])}
            if more == consumed:
                break
            consumed = more
        depth = params[0].depth if params else 0
        self._check_loop_returns(
            [(p, p.uid in consumed, returned[p.uid]) for p in params], depth, loc
        )
        return consumed

    def consume_loop_init(
        self,
        pat: S.Pat,
        t: Type,
        params: list[Bound],
        consumed: set[str],
        init: Alias,
        loc: Loc,
    ) -> frozenset:
        """Consume the parts of a loop's initial value (of alias `init`) whose
        parameters the loop consumes; return the ids consumed."""
        out: frozenset = NO_ALIAS
        for p, al in zip(params, pattern_aliases(pat, t, init)):
            if p.uid in consumed:
                self.consume(al, loc, "the initial value of a consumed loop parameter")
                out |= flatten_alias(al)
        return out

    def _check_loop_returns(
        self,
        params: list[tuple[Bound, bool, Alias]],
        loop_depth: int,
        loc: Loc,
    ) -> None:
        """Check each loop parameter (whether consumed, the alias the body
        returns for it): a consumed one may not get a value from outside the
        loop, nor one returned for another parameter."""
        cons: frozenset = NO_ALIAS
        obs: frozenset = NO_ALIAS
        for p, consumed, al in params:
            uids = base_ids(al)
            if consumed:
                for v in self._bound(uids):
                    if v.depth < loop_depth and not v.is_global and not self.is_prim(v):
                        raise CompileError(
                            f'Return value for consuming loop parameter "{p.name}" '
                            f'aliases "{v.name}".\n{ERROR_INDEX}'
                            "consuming-loop-param-aliases",
                            loc,
                        )
            if uids & cons:
                raise CompileError(
                    f'Return value for loop parameter "{p.name}" aliases other '
                    f"consumed loop parameter.\n{ERROR_INDEX}loop-parameter-aliases-other",
                    loc,
                )
            if consumed and uids & obs:
                raise CompileError(
                    f'Return value for consuming loop parameter "{p.name}" aliases '
                    f"previously returned value.\n{ERROR_INDEX}aliases-previously-returned",
                    loc,
                )
            if consumed:
                cons |= uids
            else:
                obs |= uids

    def check_loop_free(
        self, free: list[Bound], consumed: frozenset, loc: Loc, what: str
    ) -> None:
        """The body (or condition) of a loop may not use (its free variables
        `free` may not alias) what its initial value consumed."""
        gone = base_ids(consumed)
        for v in free:
            if base_ids(v.aliases) & gone or base_id(v.uid) in gone:
                raise CompileError(
                    f'{what} uses "{v.name}" (or an alias), but this is consumed by '
                    "the initial loop argument.",
                    loc,
                )


def _result_parts(t: Type, a: Alias) -> Iterator[tuple[bool, frozenset]]:
    """The parts of a result of type `t` and alias `a`: uniqueness and alias."""
    match t:
        case Tuple(es) if isinstance(a, tuple) and len(a) == len(es):
            for x, al in zip(es, a):
                yield from _result_parts(x, al)
            return
        case Record(fs) if isinstance(a, tuple) and len(a) == len(fs):
            for (_, x), al in zip(fs, a):
                yield from _result_parts(x, al)
            return
    if not isinstance(t, Scalar):
        yield is_unique(t), flatten_alias(a)


def _with_result_uniqueness(t: Type, a: Alias, fresh: Callable[[frozenset], bool]) -> Type:
    """`t` with each part `_result_parts` gives unique where `fresh` says so."""
    match t:
        case Tuple(es) if isinstance(a, tuple) and len(a) == len(es):
            return Tuple(tuple(_with_result_uniqueness(x, y, fresh) for x, y in zip(es, a)))
        case Record(fs) if isinstance(a, tuple) and len(a) == len(fs):
            return Record(tuple(
                (f, _with_result_uniqueness(x, y, fresh)) for (f, x), y in zip(fs, a)
            ))
    if isinstance(t, Scalar):
        return t
    return make_unique(t, fresh(flatten_alias(a)))


class _Global:
    """A global constant met in an alias: never consumable."""

    def __init__(self, uid: str, name: str) -> None:
        self.uid, self.name = uid, name
        self.depth = 0
        self.aliases: Alias = NO_ALIAS
        self.consumable: str | None = "a global constant"
        self.is_global = True
