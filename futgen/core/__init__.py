"""The core IR and the stages around it: internalisation from the typed
AST, a pretty-printer and its reader (`read`), a type checker (`check`) and
an interpreter (`futgen.core.ir` has the grammar).
"""

from __future__ import annotations

from futgen.core import ir
from futgen.core.internalise import internalise
from futgen.core.interpret import run
from futgen.core.pretty import pretty


def load(path: str) -> ir.Program:
    """The core IR of the program in `path` (parsed, type-checked, internalised)."""
    from futgen.frontend import load as load_source

    return internalise(load_source(path))


def dump(path: str) -> str:
    """The core IR of the program in `path` as text (`futgen dump --ir core`)."""
    return pretty(load(path))


__all__ = ["dump", "internalise", "ir", "load", "pretty", "run"]
