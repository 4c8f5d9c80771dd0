"""The front end: parse, resolve imports and names, type-check.

`load(path)` is the entry point every later stage starts from.
"""

from __future__ import annotations

import os

from futgen.errors import CompileError, Loc
from futgen.frontend import syntax as S
from futgen.frontend.astwalk import rewrite
from futgen.frontend.types import PRIMS


def load(path: str) -> S.Program:
    """Parse `path` and the local files it imports, and type-check the whole.

    Returns one Program whose declarations are those of every imported file
    (each once, dependencies first) followed by the file's own; every
    expression and pattern carries its type in `ty`.
    """
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise CompileError(f"cannot read {path}: {e.strerror}") from None
    return check_source(text, path)


def check_source(text: str, file: str = "<string>") -> S.Program:
    """Like `load`, for program text already in memory."""
    from futgen.frontend.typecheck import check_program

    decls: list[S.Decl] = []
    imports: dict[str, set[str]] = {}
    _gather(text, file, decls, loaded=set(), stack=[], imports=imports)
    check_program(decls, imports)
    return S.Program(file, decls)


def parse_file(text: str, file: str) -> S.Program:
    """Parse one file and resolve qualified names into field projections."""
    from futgen.frontend.parser import parse_program

    prog = parse_program(text, file)
    prog.decls = rewrite(prog.decls, _qualified_to_projection)
    return prog


def _gather(text: str, file: str, out: list, loaded: set, stack: list,
            imports: dict[str, set[str]]) -> None:
    """Append the declarations of `file` and of the files it imports to
    `out`, dependencies first; note in `imports` what each file imports."""
    prog = parse_file(text, file)
    for d in prog.decls:
        if isinstance(d, S.ImportDecl):
            _import(d, file, out, loaded, stack + [file], imports)
        else:
            out.append(d)


def _import(
    d: S.ImportDecl, importer: str, out: list, loaded: set, stack: list,
    imports: dict[str, set[str]],
) -> None:
    path = os.path.normpath(os.path.join(os.path.dirname(importer), d.path + ".fut"))
    imports.setdefault(importer, set()).add(path)
    if path in stack:
        raise CompileError(f'import cycle: "{d.path}" imports itself', d.loc)
    if path in loaded:
        return
    loaded.add(path)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError:
        raise CompileError(f'cannot import "{d.path}": no file {path}', d.loc) from None
    _gather(text, path, out, loaded, stack, imports)


def _qualified_to_projection(node):
    """`r.x.y` parses as a qualified name; unless `r` is a numeric module it
    is a field projection."""
    if isinstance(node, S.Var) and node.qual and node.qual[0] not in PRIMS:
        parts = [*node.qual, node.name]
        loc: Loc = node.loc
        e: S.Expr = S.Var(parts[0], loc=loc)
        for field in parts[1:]:
            e = S.Project(e, field, loc=loc)
        return e
    return None


__all__ = ["check_source", "load", "parse_file"]
