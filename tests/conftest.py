"""Settings and fixtures for the whole test suite."""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pytest

from futgen.core import ir, load

# Every pipeline run in the tests type-checks the IR before and after each
# pass (futgen.pipeline.Options.check_ir, whose default reads this when an
# Options is made), in test workers too.  FUTGEN_CHECK_IR=0 runs the suite
# without the checks.
os.environ.setdefault("FUTGEN_CHECK_IR", "1")


@pytest.fixture(scope="session")
def load_core() -> Callable[[Path], ir.Program]:
    """The core IR of a program file, internalised once per session (several
    test modules run every example and test program through the passes)."""
    return cache(lambda path: load(str(path)))
