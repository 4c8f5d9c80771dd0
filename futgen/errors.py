"""Errors futgen reports to users.

Every error a user can cause names where it happened: `file:line:col` for
source programs, the parameter for entry-point calls.  The CLI prints these
without a traceback and exits with status 1.
"""

from __future__ import annotations

from dataclasses import dataclass

# One definition shared with generated packages (the runtime may not import futgen),
# so the interpreter, the CLI and compiled code raise and catch the same classes.
from futgen_runtime.errors import FutgenError, FutharkError

__all__ = ["ERROR_INDEX", "NOWHERE", "CompileError", "DataError", "FutgenError", "FutharkError", "Loc",
           "UnsupportedFeature", "register_source", "source_line"]

# Links to Futhark's error index, which some messages end with.
ERROR_INDEX = "https://futhark.readthedocs.io/en/latest/error-index.html#"

# Source text of every file the front end has read, so that an error can
# quote the offending line long after the parser is gone.
_SOURCES: dict[str, str] = {}


def register_source(file: str, text: str) -> None:
    """Remember `text` as the contents of `file` for error messages."""
    _SOURCES[file] = text


def source_line(file: str, line: int) -> str | None:
    """The 1-based `line` of a registered file, or None."""
    text = _SOURCES.get(file)
    if text is None:
        return None
    lines = text.splitlines()
    if 1 <= line <= len(lines):
        return lines[line - 1]
    return None


def assertion_text(loc: Loc | None) -> str:
    """The source text of the condition of `assert c e` at `loc` (where the
    word `assert` starts), for "Assertion is false: c" messages."""
    if loc is None:
        return "assertion"
    line = source_line(loc.file, loc.line)
    if line is None:
        return f"assertion at {loc}"
    rest = line[loc.col - 1:]
    if rest.startswith("assert"):
        rest = rest[len("assert"):].lstrip()
    if rest.startswith("("):
        depth = 0
        for j, ch in enumerate(rest):
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0:
                return rest[1:j].strip()
    return rest.split()[0] if rest.split() else rest


@dataclass(frozen=True, slots=True)
class Loc:
    """A position in a source file; line and col are 1-based."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


NOWHERE = Loc("<builtin>", 0, 0)


class CompileError(FutgenError):
    """A program is malformed: syntax, names, types, sizes or uniqueness."""

    def __init__(self, message: str, loc: Loc | None = None):
        super().__init__(message)
        self.message = message
        self.loc = loc

    def __str__(self) -> str:
        if self.loc is None or self.loc is NOWHERE:
            return f"Error: {self.message}"
        text = f"Error at {self.loc}: {self.message}"
        line = source_line(self.loc.file, self.loc.line)
        if line is not None:
            caret = " " * (self.loc.col - 1) + "^"
            text += f"\n  {line}\n  {caret}"
        return text


class UnsupportedFeature(CompileError):
    """A valid Futhark construct that futgen does not implement yet."""

    def __init__(self, feature: str, loc: Loc | None = None):
        super().__init__(f"unsupported feature {feature}", loc)
        self.feature = feature


class DataError(FutgenError):
    """Malformed or mismatching input values (stdin, data files, arguments)."""
