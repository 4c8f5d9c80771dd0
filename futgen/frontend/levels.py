"""Scope violations: an inference variable made in an outer scope may not
come to stand for something bound in a deeper one (Futhark's levels).

Inference names carry the number they were made with (`?t12`, `?n13`),
and the unifier counts the names made so far: that count, taken where
something is bound (a stamp), is higher than the number of every older
inference name.  An inference name's age is its number, or the age of an
older name bound to a type or size holding it (it is then seen where the
older one is).  Two rules use them:

- A local function's type parameter `'b` (`let g 'b (y: b) = ... x ...`)
  may not enter a type variable older than it, as `x`'s: outside `g`, that
  type would name a `b` nobody knows.  Once `g` is checked, `b` may enter
  no type variable at all.
- The anonymous size of a function's or lambda's parameter (`ys: []i32`)
  is the caller's: it may not be bound to a size that names a variable
  bound after it (a later parameter, a `let` in the body).  A `let [n]`
  size names an existing size, so it is never too young.

Coercions (`:>`) relate sizes without making them equal, so they are not
checked.  Names that have gone out of scope are not checked either (the
type checker hides them from the types it keeps).
"""

from __future__ import annotations

from collections.abc import Callable

from futgen.errors import ERROR_INDEX
from futgen.frontend.types import (
    Dim,
    Type,
    dim_names,
    size_var_names,
)

ESCAPED = float("inf")  # the stamp of a type parameter once its function is checked


class ScopeViolation(Exception):
    """Raised by the unifier (a `UnifyError` there), with the message."""


class Levels:
    """Ages of inference names and stamps of what they may not see."""

    def __init__(self) -> None:
        self.ages: dict[str, int] = {}  # lowered ages
        # Local functions' type parameters in scope (or escaped), by name.
        self.type_params: dict[str, float] = {}
        # The parameters' anonymous sizes (and the inference sizes now
        # holding one), by name: their ages and parameters (for messages).
        self.param_sizes: dict[str, tuple[int, str]] = {}
        # The stamp of the variable a size name denotes where unification
        # happens (None when none is in scope): set by the type checker.
        self.stamp_of: Callable[[str], int | None] = lambda name: None

    def age(self, name: str) -> int:
        return self.ages.get(name, int(name[2:]))

    def binding_type(self, name: str, type_vars: list[str]) -> None:
        """Check binding type variable `name` to a type whose type variables
        (resolved) are `type_vars`, and make the inference ones as old."""
        age = self.age(name)
        for v in type_vars:
            if v.startswith("?"):
                self.ages[v] = min(self.age(v), age)
            elif self.type_params.get(v, -1) > age:
                raise ScopeViolation(
                    f'Cannot unify type parameter "{v}" with the type of something bound '
                    f'outside its scope (scope violation): "{v}" is bound in a deeper '
                    f"scope.\n{ERROR_INDEX}scope-violation")

    def binding_size(self, name: str, d: Dim) -> None:
        """Check binding inference size `name` to `d` (resolved)."""
        if name not in self.param_sizes:
            return
        age, param = self.param_sizes[name]
        for n in dim_names(d):
            if n.startswith("?"):
                self.param_sizes[n] = min(self.param_sizes.get(n, (age, param)), (age, param))
                continue
            stamp = self.stamp_of(n)
            if stamp is not None and stamp > age:
                raise ScopeViolation(
                    f'The size of {param} cannot be "{d}" (scope violation): "{n}" is '
                    f"bound after {param}, where its caller cannot see it."
                    f"\n{ERROR_INDEX}scope-violation")

    def note_param_sizes(self, t: Type, since: int, param: str | None) -> None:
        """Check the bindings of the inference sizes in the type `t` of
        parameter `param` made after stamp `since` (its anonymous sizes)."""
        what = f'parameter "{param}"' if param else "a parameter"
        for n in size_var_names(t):
            if n.startswith("?") and self.age(n) >= since:
                self.param_sizes[n] = (self.age(n), what)

    def enter_type_params(self, names: tuple[str, ...], stamp: int) -> dict[str, float | None]:
        """Stamp a local function's type parameters; returns what to restore."""
        saved = {n: self.type_params.get(n) for n in names}
        self.type_params.update({n: stamp for n in names})
        return saved

    def leave_type_params(self, saved: dict[str, float | None],
                          outer: Callable[[str], bool]) -> None:
        """After the function: a parameter escapes, unless `outer` says an
        enclosing function has one of the same name (then its stamp comes back)."""
        for n, old in saved.items():
            if not outer(n):
                self.type_params[n] = ESCAPED
            elif old is None:
                self.type_params.pop(n, None)
            else:
                self.type_params[n] = old
