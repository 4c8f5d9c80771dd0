"""Rules on names that Futhark checks before types (its `Names.hs`).

- One binding group may not bind a name twice: a function's type and size
  parameters and parameters (`def f [n] (n: [n]i32)`), a lambda's
  parameters, a `let`'s sizes and pattern (`let (y, y) = ...`).  Type
  parameters are names of another kind, so `def f 't (t: i32)` is fine.
- A variable whose name starts with `_` may be bound but never used.
- `&&` and `||` short-circuit, so no program may redefine them.
- A file sees the top-level names of the files it imports, but an import
  is not passed on: `import "a"` does not bring in what `a` imports.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from futgen.errors import CompileError, Loc
from futgen.frontend import syntax as S
from futgen.frontend.astwalk import walk

NOT_REDEFINABLE = ("&&", "||")


def check_names(d: S.ValDecl) -> None:
    """Raise a CompileError for the first name rule that `d` breaks."""
    _check_function(d.name, d.tparams, d.params, d.loc)
    for node in walk(d.body):
        match node:
            case S.LetFun():
                _check_function(node.name, node.tparams, node.params, node.loc)
            case S.Lambda():
                _check_group(_pattern_binders(node.params))
            case S.LetPat():
                sizes = [("term", n, node.loc) for n in node.sizes]
                _check_group([*sizes, *_pattern_binders([node.pat])])
            case S.Var(name) if name.startswith("_"):
                raise CompileError(
                    f'Use of "{node.full_name}": variables prefixed with underscore '
                    "may not be accessed.",
                    node.loc,
                )


def _check_function(name: str, tparams: list[S.TParam], params: list[S.Pat], loc: Loc) -> None:
    if name in NOT_REDEFINABLE:
        raise CompileError(f"The {name} operator may not be redefined.", loc)
    kinds = [("term" if isinstance(p, S.SizeParam) else "type", p.name, p.loc) for p in tparams]
    _check_group([*kinds, *_pattern_binders(params)])


def _check_group(binders: list[tuple[str, str, Loc]]) -> None:
    """`binders` (kind, name, where) bind names in one scope: no name twice."""
    seen: dict[tuple[str, str], Loc] = {}
    for kind, name, loc in binders:
        if (kind, name) in seen:
            raise CompileError(f'Name "{name}" also bound at {seen[kind, name]}.', loc)
        seen[kind, name] = loc


def _pattern_binders(pats: list[S.Pat]) -> list[tuple[str, str, Loc]]:
    return [("term", x.name, x.loc) for pat in pats for x in _ids(pat)]


def _ids(p: S.Pat) -> Iterator[S.PId]:
    """The variables of `p`, left to right."""
    match p:
        case S.PId():
            yield p
        case S.PTuple(elems, _):
            for q in elems:
                yield from _ids(q)
        case S.PRecord(fields, _):
            for _, q in fields:
                yield from _ids(q)
        case S.PAscribe(inner, _, _):
            yield from _ids(inner)


@dataclass
class Imports:
    """Which files' top-level definitions a declaration sees: those of its
    own file and of the files that one imports (`imports`: by file, the
    files it imports; None if unknown, when every file is visible)."""

    imports: dict[str, set[str]] | None = None
    file: str = ""  # of the declaration being checked
    defined: dict[str, set[str]] = field(default_factory=dict)  # name -> files

    def define(self, name: str, file: str) -> None:
        self.defined.setdefault(name, set()).add(file)

    def hidden(self, name: str) -> bool:
        """Whether top-level `name` is defined only in files not visible."""
        if self.imports is None or name not in self.defined:
            return False
        visible = self.imports.get(self.file, set()) | {self.file}
        return not self.defined[name] & visible

    def why_unknown(self, name: str) -> str:
        """A note for an unknown `name` that a file not imported defines."""
        if not self.hidden(name):
            return ""
        files = ", ".join(sorted(self.defined[name]))
        return f" It is defined in {files}, which this file does not import."
