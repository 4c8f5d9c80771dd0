"""Errors a generated package raises (shared with the compiler and interpreter).

`FutgenError` and `FutharkError` live here, not in `futgen.errors`, because the
runtime is vendored into generated packages and may not import `futgen`; the
compiler re-exports both, so the interpreter, the CLI and compiled code raise
and catch one and the same class.
"""

from __future__ import annotations

# Words of arguments a failing kernel reports (futgen/codegen/plan.py has the
# protocol); the failure code is the word after them.
FAILURE_ARGS = 8


class FutgenError(Exception):
    """Base class of every error futgen reports to a user."""


class FutharkError(FutgenError):
    """A run-time failure of a Futhark program (bounds, sizes, assertions).

    The message follows the reference implementation's wording, e.g.
    "Index [7] out of bounds for array of shape [5]."; `loc` is the source
    location (`file:line:col`, a string or any object whose `str` gives it),
    or None when unknown; the interpreter adds the locations of the calls the
    failure passed through to `calls`, which the backtrace lists after it.
    """

    def __init__(self, message: str, loc: object = None):
        super().__init__(message)
        self.message = message
        self.loc = loc
        self.calls: list[object] = []  # the calls it passed through, innermost first

    def __str__(self) -> str:
        if self.loc is None or self.loc == "":
            return f"Error: {self.message}"
        frames = "\n".join(f"-> #{k}  {loc}" for k, loc in enumerate([self.loc, *self.calls]))
        return f"Error: {self.message}\n\nBacktrace:\n{frames}"


class ArgumentError(FutgenError):
    """A bad argument to an entry point, found before anything runs.

    Raised as `ArgumentTypeError` (a `TypeError`) or `ArgumentValueError` (a
    `ValueError`), so callers can catch the usual built-in classes; tools
    (the test runner) catch this base to tell bad input from failures.
    """


class ArgumentTypeError(ArgumentError, TypeError):
    """Wrong kind of argument: dtype, rank, a list instead of an array, arity."""


class ArgumentValueError(ArgumentError, ValueError):
    """Right kind, wrong value: out of range, or sizes that disagree."""
