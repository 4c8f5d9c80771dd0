"""Helpers for the type checker's tests: a program `t.fut` checked from source."""

import pytest

from futgen.errors import CompileError
from futgen.frontend import check_source


def reject(src: str) -> str:
    """The message of the compile error checking `src` raises."""
    with pytest.raises(CompileError) as e:
        check_source(src, "t.fut")
    return str(e.value)


def accept(src: str) -> None:
    check_source(src, "t.fut")
