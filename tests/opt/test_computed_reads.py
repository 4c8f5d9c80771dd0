"""The computed-reads pass (futgen.opt.computed_reads): kernels compute the
elements of host iotas and replicates they read at indices known in range,
and keep the other reads (and their bounds checks); the GPU IR interpreter
gives the same results before and after, in every version."""

from __future__ import annotations

import re

import numpy as np
import pytest

from futgen.core import internalise
from futgen.frontend import check_source
from futgen.gpu.check import check_program
from futgen.gpu.pretty import pretty
from futgen.opt.computed_reads import computed_reads
from futgen.pipeline import run_passes
from futgen.testing.versions import assert_same_in_every_version

SOURCE = """
entry strided (n: i64) : []i64 = map (\\i -> i * 2) (0..3..<n)
entry rows [n][m] (xss: [n][m]i64) : [n][m]i64 = map (\\xs -> map2 (+) xs (iota m)) xss
entry shifted (n: i64) (xs: [n]i64) : [n]i64 =
  let is = iota (n + 1) in map (\\i -> xs[i] + is[i + 1]) (iota n)
entry looped (n: i64) : [4]i64 =
  let is = iota n in map (\\k -> loop acc = 0 for i < n do acc + is[i] * k) (iota 4)
entry shifts [n][m] (xss: [n][m]i64) : [n][m]i64 =
  map (\\xs -> let ys = scan (+) 0 xs
               in map (\\i -> if i > 0 then ys[i - 1] else 0) (iota m)) xss
entry through (n: i64) : []i64 = let is = iota n in map (\\x -> is[x] * 2) is
entry updated (n: i64) : []i64 =
  let is = iota n
  let is[0] = 7
  in map (\\i -> is[i] + 1) (iota n)
entry coefficients [n][m] (c: f32) (xss: [n][m]f32) : [n][m]f32 =
  let mus = replicate n (replicate m c)
  let zeros = replicate m (replicate n 0f32)
  in map3 (\\xs mu_row j -> map2 (\\x mu -> x * mu + zeros[j % m, 0]) xs mu_row) xss mus (iota n)
entry swapped [n][m] (c: f32) (xss: [n][m]f32) : [m][n]f32 =
  let mus = replicate m (replicate n c)
  in map (\\j -> map (\\i -> xss[i, j] * mus[j, i]) (iota n)) (iota m)
entry rows_of [m] (n: i64) (xs: [m]f32) (k: i64) : [n]f32 =
  let xss = replicate n xs in map (\\i -> f32.sum xss[i] + xss[i, k]) (iota n)
entry halves (n: i64) : []i64 =
  let hs = replicate n (iota 8) in map (\\i -> hs[i, i % 8] + hs[i, 3]) (iota n)
entry copied [n] (xs: *[n]i32) : [n]i32 =
  let rows = replicate n xs
  let xs[0] = 7
  in map (\\i -> rows[i, 0] + xs[i]) (iota n)
"""
ARGS = {"strided": [np.int64(10)], "rows": [np.arange(12).reshape(3, 4)],
        "shifted": [np.int64(5), np.arange(5) * 10], "looped": [np.int64(6)],
        "shifts": [np.arange(12).reshape(3, 4) - 5], "updated": [np.int64(4)],
        "through": [np.int64(9)],
        "coefficients": [np.float32(1.5), np.arange(12, dtype=np.float32).reshape(3, 4)],
        "swapped": [np.float32(-2), np.arange(12, dtype=np.float32).reshape(3, 4)],
        "rows_of": [np.int64(3), np.arange(4, dtype=np.float32), np.int64(2)],
        "halves": [np.int64(5)],
        "copied": [np.arange(1, 5, dtype=np.int32)]}


def _before_and_after():
    before = run_passes(internalise(check_source(SOURCE)), until="flatten")
    after = computed_reads(before)
    check_program(after)
    return before, after


def _kernels(prog, entry: str) -> str:
    """The text of `entry`'s SegOps (host statements binding iotas left out)."""
    text = pretty(prog.function(entry))
    return "\n".join(line for line in text.splitlines() if "= iota " not in line)


def _iota_reads(prog, entry: str) -> list[str]:
    """The reads of iotas (`iota_`, `range_`) in `entry`'s kernels."""
    return re.findall(r"= ((?:iota|range)_\d+)\[", _kernels(prog, entry))


def test_reads_at_indices_in_range_become_arithmetic_and_others_stay() -> None:
    before, after = _before_and_after()
    for entry in ("strided", "looped", "shifts", "updated", "through"):
        assert _iota_reads(before, entry), entry
        assert not _iota_reads(after, entry), entry
    assert "*.i64 gtid" in _kernels(after, "strided")  # the stride: i * 3
    # `is[i + 1]`: i + 1 is not known below n + 1, so its read (and check) stays.
    _, shifted_read = _iota_reads(before, "shifted")
    assert _iota_reads(after, "shifted") == [shifted_read]


def _replicate_reads(prog, entry: str) -> list[str]:
    """The reads of replicates (`rep_`) in `entry`'s kernels."""
    return re.findall(r"= (rep_\d+)\[", pretty(prog.function(entry)))


def test_reads_of_replicates_at_indices_in_range_become_their_value() -> None:
    before, after = _before_and_after()
    for entry in ("swapped", "rows_of", "halves"):
        assert _replicate_reads(before, entry), entry
        assert not _replicate_reads(after, entry), entry
    assert re.search(r"= c_\d+\n", _kernels(after, "swapped"))  # the replicated scalar
    # `mus[i, j]` goes; `zeros[j % m, 0]` stays, its indices not known in range.
    _mus, zeros = _replicate_reads(before, "coefficients")
    assert _replicate_reads(after, "coefficients") == [zeros]
    # `hs[i, 3]` becomes a read of the iota `hs` replicates, then `3`;
    # `hs[i, i % 8]` a read of the iota, at an index not known in range.
    assert not _replicate_reads(after, "halves")
    # `rows` copies `xs` before an update of it: its read stays.
    assert _replicate_reads(after, "copied") == _replicate_reads(before, "copied") != []
    assert len(_iota_reads(after, "halves")) == 1


@pytest.mark.parametrize("entry", sorted(ARGS))
def test_every_version_means_the_same(entry: str) -> None:
    before, after = _before_and_after()
    assert_same_in_every_version(before, after, entry, ARGS[entry])
