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

- Every variable has a unique id (`VarInfo.uid`); an *alias* of a value is a
  set of such ids.  A tuple value keeps one alias per component (a `tuple`
  of aliases, nested like the value), so `let (a, b) = (copy xs, ys)` lets
  `a` be consumed without touching `ys`; records keep one set for all
  fields.  Values of primitive type alias nothing.
- A variable of array type aliases itself plus what its defining
  expression aliased.  Indexing and slicing alias their array.  A function
  result aliases its non-consumed arguments, except the parts of it whose
  declared type is unique (`*`): that is how `map`, `copy` and friends
  produce fresh arrays.
- *Consuming* a value records every id of its alias as consumed (with the
  place); *observing* a variable (any use) fails if its alias meets the
  consumed set.  Global constants alias the pseudo-id `global:<name>`,
  which can never be consumed and which a function result may not alias.
- A `Consumption` holds this state for one top-level definition: the
  consumed ids and the *barriers* (loop and lambda bodies, local functions)
  that variables bound outside them may not be consumed across.

The type checker (`typecheck.py`) computes aliases alongside types in its
single walk and calls into this module to consume, observe and check.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Protocol

from futgen.errors import CompileError, Loc
from futgen.frontend.types import Array, Record, Scalar, Tuple, Type

# An alias: a set of variable ids for a non-tuple value, or one alias per
# component of a tuple value.
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
        case Array(_, _, u):
            return NO_ALIAS if u else everything
        case Scalar():
            return NO_ALIAS
        case Record(fs):
            return (
                NO_ALIAS
                if all(is_unique(x) or isinstance(x, Scalar) for _, x in fs)
                else everything
            )
    return everything


# ============================================================ unique types


def make_unique(t: Type) -> Type:
    """`t` with every array in it (through tuples and records) unique."""
    match t:
        case Array(e, s, _):
            return Array(e, s, True)
        case Tuple(es):
            return Tuple(tuple(make_unique(x) for x in es))
        case Record(fs):
            return Record(tuple((f, make_unique(x)) for f, x in fs))
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


# ============================================================= consumption


class Consumption:
    """The consumption state while checking one top-level definition.

    Args:
        in_scope: the variables in scope among some ids (the checker's
            scopes; ids of variables out of scope are skipped, as are
            Futhark's free aliases).
    """

    def __init__(self, in_scope: Callable[[frozenset], Iterable[Bound]]) -> None:
        self.in_scope = in_scope
        self.consumed: dict[str, Loc] = {}
        self.barriers: list[tuple[int, str]] = []  # (depth, "loop" | "lambda" | ...)

    def reset(self) -> None:
        """Start a new top-level definition."""
        self.consumed = {}

    def check_not_consumed(self, v: Bound, loc: Loc) -> None:
        """Observe `v` at `loc`: neither it nor what it aliases may be consumed."""
        # Report the variable's own consumption first, else an alias's, by name.
        for uid in [v.uid, *sorted(flatten_alias(v.aliases) - {v.uid})]:
            if uid in self.consumed:
                name = uid.split("#")[0].removeprefix(GLOBAL)
                what = "this" if uid == v.uid else f'"{name}", which it aliases,'
                raise CompileError(
                    f'Using "{v.name}", but {what} was consumed at {self.consumed[uid]}.',
                    loc,
                )

    def consume(self, aliases: Alias, loc: Loc, what: str) -> None:
        """Consume a value of alias `aliases` at `loc` (`what` says how)."""
        uids = flatten_alias(aliases)
        for info in self._bound(uids):
            if info.is_global:
                raise CompileError(
                    f'Consuming "{info.name}", which is not consumable (a global constant).',
                    loc,
                )
            if info.consumable is not None:
                raise CompileError(
                    f'Consuming "{info.name}", which is not consumable ({info.consumable}); '
                    f"consumed as {what}.",
                    loc,
                )
            for depth, kind in reversed(self.barriers):
                if info.depth < depth:
                    raise CompileError(
                        f'Consuming variable "{info.name}", which is bound outside the '
                        f"enclosing {kind}.",
                        loc,
                    )
        for uid in uids:
            self.consumed.setdefault(uid, loc)

    def _bound(self, uids: frozenset) -> Iterator[Bound]:
        yield from self.in_scope(uids)
        for uid in sorted(uids):
            if uid.startswith(GLOBAL):
                yield _Global(uid, uid.removeprefix(GLOBAL))

    # ------------------------------------------------- checks on definitions

    def check_unique_return(
        self, fname: str, rt: Type, bal: Alias, params: list[Bound], loc: Loc
    ) -> None:
        """A unique result (component) must not share memory with a non-unique parameter."""
        if isinstance(rt, Tuple) and isinstance(bal, tuple) and len(bal) == len(rt.elems):
            for t, al in zip(rt.elems, bal):
                self.check_unique_return(fname, t, al, params, loc)
            return
        if not is_unique(rt):
            return
        uids = flatten_alias(bal)
        for p in params:
            if p.uid in uids and p.consumable is not None:
                raise CompileError(
                    f'Unique-typed return value of "{fname}" is aliased to "{p.name}", '
                    "which is not consumable.",
                    loc,
                )

    @staticmethod
    def check_result_aliases(bal: Alias, loc: Loc) -> None:
        """A function's result may not alias a global constant."""
        for uid in sorted(flatten_alias(bal)):
            if uid.startswith(GLOBAL):
                raise CompileError(
                    f'Function result aliases the free variable "{uid.removeprefix(GLOBAL)}"; '
                    'use "copy".',
                    loc,
                )


class _Global:
    """A global constant met in an alias: never consumable."""

    def __init__(self, uid: str, name: str) -> None:
        self.uid, self.name = uid, name
        self.depth = 0
        self.aliases: Alias = NO_ALIAS
        self.consumable: str | None = "a global constant"
        self.is_global = True
