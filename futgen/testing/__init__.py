"""Futhark's test blocks (`spec`), the test runner behind `futgen test` (`runner`),
and a GPU IR pass's results checked in every version (`versions`)."""

from futgen.testing.runner import FileResult, TestOptions, TestReport, run_tests
from futgen.testing.spec import ProgramTest, SpecError, parse_spec, read_spec

__all__ = [
    "FileResult",
    "ProgramTest",
    "SpecError",
    "TestOptions",
    "TestReport",
    "parse_spec",
    "read_spec",
    "run_tests",
]
