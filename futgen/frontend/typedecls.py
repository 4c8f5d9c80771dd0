"""Rules on type abbreviations (`type t 'a [n] = ...`) that need no types.

Futhark checks them before it resolves the body: a parameter is named once
per namespace (a size parameter `[n]` and a type parameter `'n` may share a
name), each size parameter appears in the body (else no use of the
abbreviation could tell what it is), and a file defines a type name once
(`local` definitions aside; an imported file's may be redefined).
"""

from __future__ import annotations

from futgen.errors import CompileError, Loc
from futgen.frontend import syntax as S
from futgen.frontend.astwalk import walk


def check_type_decl(d: S.TypeDecl, defined: dict[tuple[str, str], Loc]) -> None:
    """Raise for a broken rule of abbreviation `d`; `defined` maps the
    (file, name) of the earlier non-local type definitions to where they
    are, and gets `d`'s."""
    _check_duplicate_params(d.params)
    _check_size_params_used(d)
    if d.local:
        return
    key = (d.loc.file, d.name)
    if key in defined:
        raise CompileError(f'Duplicate definition of type "{d.name}". '
                           f"Previously defined at {defined[key]}.", d.loc)
    defined[key] = d.loc


def _check_duplicate_params(params: list[S.TParam]) -> None:
    seen: dict[tuple[bool, str], Loc] = {}
    for p in params:
        key = (isinstance(p, S.SizeParam), p.name)
        if key in seen:
            raise CompileError(f'Type parameter "{p.name}" previously defined at '
                               f"{seen[key]}.", p.loc)
        seen[key] = p.loc


def _check_size_params_used(d: S.TypeDecl) -> None:
    # Any mention counts, even one a binder in the body shadows
    # (`(n: i64) -> [n]i32`): a lenient reading never rejects a valid program.
    used = {n.name for n in walk(d.body) if isinstance(n, S.DimName | S.Var)}
    for p in d.params:
        if isinstance(p, S.SizeParam) and p.name not in used:
            raise CompileError(f'Size parameter "[{p.name}]" unused.', p.loc)
