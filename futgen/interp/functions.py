"""Function values of the interpreter: closures and curried built-ins.

Futhark functions are curried, so both kinds accumulate arguments until
they have as many as they take and only then run; `map (f 1) xs` and
`let g = f 2 in g 3` therefore just work.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from futgen.errors import Loc
from futgen.frontend import types as T


class FunVal:
    """Base class of function values."""

    def apply(self, interp: Any, arg: Any) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError


class Closure(FunVal):
    """A lambda or `def`/`let` function together with its environment.

    `sizes` are the names of the function's size parameters, bound from the
    shapes of the arguments when the body runs.  `node` (the Lambda or
    ValDecl body) keys the vectoriser's per-function decisions.
    """

    __slots__ = ("args", "body", "env", "name", "params", "sizes")

    def __init__(self, params: list, body: Any, env: dict, args: tuple = (),
                 sizes: tuple[str, ...] = (), name: str = "<lambda>"):
        self.params = params
        self.body = body
        self.env = env
        self.args = args
        self.sizes = sizes
        self.name = name

    def with_args(self, args: tuple) -> Closure:
        return Closure(self.params, self.body, self.env, args, self.sizes, self.name)

    def apply(self, interp: Any, arg: Any) -> Any:
        args = self.args + (arg,)
        if len(args) < len(self.params):
            return self.with_args(args)
        return interp.enter(self, args)

    def __repr__(self) -> str:
        return f"<closure {self.name}/{len(self.params) - len(self.args)}>"


class Call:
    """What a built-in needs to know about the call it serves."""

    __slots__ = ("fun", "interp")

    def __init__(self, interp: Any, fun: PyFun):
        self.interp = interp
        self.fun = fun

    @property
    def loc(self) -> Loc | None:
        return self.fun.loc

    def ret_type(self) -> T.Type | None:
        """The instantiated result type of the call, if the checker gave one."""
        t = self.fun.ty
        for _ in range(self.fun.arity):
            if not isinstance(t, T.Arrow):
                return None
            t = t.ret
        return t

    def size_of(self, d: T.Dim) -> int:
        return self.interp.size_of(d, self.fun.env or {})

    def apply(self, f: Any, *args: Any) -> Any:
        return self.interp.apply(f, *args)


class PyFun(FunVal):
    """A built-in function implemented in Python, curried over `arity` args.

    `fn(call, *args)` runs once all arguments are present.  `elementwise`
    marks functions of primitive arguments that work unchanged on NumPy
    arrays (so the vectoriser can apply them to whole lanes).  `ty` is the
    instantiated type at the use site and `env` the environment there, so
    empty results can be given their proper shape.
    """

    __slots__ = ("args", "arity", "elementwise", "env", "fn", "loc", "name", "ty")

    def __init__(self, name: str, arity: int, fn: Callable[..., Any], args: tuple = (),
                 ty: T.Type | None = None, env: dict | None = None, loc: Loc | None = None,
                 elementwise: bool = False):
        self.name = name
        self.arity = arity
        self.fn = fn
        self.args = args
        self.ty = ty
        self.env = env
        self.loc = loc
        self.elementwise = elementwise

    def with_args(self, args: tuple) -> PyFun:
        return PyFun(self.name, self.arity, self.fn, args, self.ty, self.env, self.loc,
                     self.elementwise)

    def apply(self, interp: Any, arg: Any) -> Any:
        args = self.args + (arg,)
        if len(args) < self.arity:
            return self.with_args(args)
        return self.fn(Call(interp, self), *args)

    def __repr__(self) -> str:
        return f"<builtin {self.name}/{self.arity - len(self.args)}>"
