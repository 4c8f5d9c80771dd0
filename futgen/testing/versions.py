"""A GPU IR pass keeps the meaning of a program in every version: the GPU IR
interpreter's results before and after it, at threshold settings that
between them run every version (`futgen.tune.forest.version_runs`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from futgen.core import ir
from futgen.gpu.interpret import run as run_gpu
from futgen.tune.forest import program_thresholds, version_runs


def assert_same_in_every_version(before: ir.Program, after: ir.Program, entry: str,
                                 args: Sequence) -> None:
    """`entry` of `after` returns what it does in `before`, bit for bit, in
    every version of `after`."""
    for setting in version_runs(program_thresholds(after)):
        want = run_gpu(before, entry, list(args), thresholds=setting)
        got = run_gpu(after, entry, list(args), thresholds=setting)
        for w, g in zip(want, got, strict=True):
            np.testing.assert_array_equal(g, w, err_msg=f"{entry} at {setting}")
