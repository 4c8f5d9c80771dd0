"""The fuse-rearranges pass (futgen.opt.rearranges): kernels read through
transpositions where that keeps their reads coalesced, and have a version
that does for small arrays where it does not; GPU IR text in and out, and
the same results from the GPU IR interpreter before and after."""

from __future__ import annotations

import re

import numpy as np

from futgen.codegen.package import build_package
from futgen.gpu.check import check_program
from futgen.gpu.interpret import run as run_gpu
from futgen.gpu.pretty import pretty
from futgen.gpu.read import read_program
from futgen.opt.rearranges import fuse_rearranges
from futgen.testing.compiled import import_package

# `map (\xs -> map (\ys -> sum (map2 (*) xs ys)) (transpose yss)) xss` after
# flattening: the outer version reads the transposition in its loop, the
# flattened one in its reduction.  {read} is the outer version's read.
MATMUL = """\
fun f(n_1: i64, m_2: i64, p_3: i64, xss_4: [n_1][m_2]f32, yss_5: [m_2][p_3]f32) : ([?][?]f32) =
{
  let (tr_6: [p_3][m_2]f32) = rearrange (1, 0) yss_5
  let (par_7: i64) = *.i64 n_1 p_3
  let (g_8: bool) = threshold(f.suff_outer_par_0, default 32768) <= par_7
  let (r_9: [n_1][p_3]f32) =
    if g_8 : ([n_1][p_3]f32)
    then
    {
      let (a_10: [n_1][p_3]f32) =
        segmap grid (gtid_11 < n_1, gtid_12 < p_3)
          : (f32)
        {
          {pre}
          let (s_13: f32) =
            loop (acc_14: f32 = 0.0f32) for i_15: i64 < m_2 do
            {
              let (x_16: f32) = xss_4[gtid_11, i_15]
              let (y_17: f32) = {read}
              let (z_18: f32) = *.f32 x_16 y_17
              let (w_19: f32) = +.f32 acc_14 z_18
              in (w_19)
            }
          in (s_13)
        }
      in (a_10)
    }
    else
    {
      let (b_20: [n_1][p_3]f32) =
        segred grid (gtid_21 < n_1, gtid_22 < p_3, gtid_23 < m_2)
          reduce_comm (0.0f32)
            \\(u_24: f32, v_25: f32) : (f32) ->
            {
              let (c_26: f32) = +.f32 u_24 v_25
              in (c_26)
            }
          : (f32)
        {
          let (x_27: f32) = xss_4[gtid_21, gtid_23]
          let (y_28: f32) = tr_6[gtid_22, gtid_23]
          let (z_29: f32) = *.f32 x_27 y_28
          in (z_29)
        }
      in (b_20)
    }
  in (r_9)
}
"""


def _program(read: str = "tr_6[gtid_12, i_15]", pre: str = ""):
    prog = read_program(MATMUL.replace("{read}", read).replace("{pre}", pre))
    check_program(prog)
    return prog


def _args(m: int = 4, p: int = 5) -> list:
    rng = np.random.default_rng(0)
    xss = rng.standard_normal((3, m)).astype(np.float32)
    yss = rng.standard_normal((m, p)).astype(np.float32)
    return [np.int64(3), np.int64(m), np.int64(p), xss, yss]


def _results(prog, threshold: int, args: list | None = None) -> np.ndarray:
    return run_gpu(prog, "f", args or _args(), thresholds={"f.suff_outer_par_0": threshold})[0]


def test_the_outer_version_reads_the_source_and_the_copy_moves_into_the_other_branch() -> None:
    before = _program()
    after = fuse_rearranges(before)
    check_program(after)
    text = pretty(after)
    then_, else_ = text[text.index("then"):text.index("else")], text[text.index("else"):]
    assert "yss_5[i_15, gtid_12]" in then_ and "rearrange" not in then_
    assert "let (tr_6: [p_3][m_2]f32) = rearrange (1, 0) yss_5" in else_
    assert "tr_6[gtid_22, gtid_23]" in else_  # the reduction reads it, coalesced
    for threshold in (1, 2_000_000_000):
        np.testing.assert_array_equal(_results(after, threshold), _results(before, threshold))


def test_a_read_that_would_lose_coalescing_is_versioned_by_the_arrays_size() -> None:
    """`tr[g0, g1]` has the innermost thread index last; `yss[g1, g0]` would
    not: the SegMap reads `tr` (coalesced) where `yss` has at least
    `f.suff_transposed_1` elements, else `yss` through (strided, no copy)."""
    for read, pre in (("tr_6[i_15, gtid_12]", ""),
                      # an index computed from the thread's varies with it too
                      ("tr_6[i_15, j_30]", "let (j_30: i64) = %%.i64 gtid_12 m_2")):
        before = _program(read=read, pre=pre)
        after = fuse_rearranges(before)
        check_program(after)
        text = pretty(after)
        assert "threshold(f.suff_transposed_1, default 4194304) <= elements_" in text
        assert text.count("tr_6[") == 2  # the copy's version and the flattened one
        assert text.count("yss_5[") == 1  # the strided version
        assert text.index("rearrange") < text.index("if g_8")  # both versions of g_8 use it
        square = _args(5, 5)  # `tr[i, g]` reads in bounds where m = p
        for outer in (1, 2_000_000_000):
            want = _results(before, outer, square)
            for transposed in (0, 2_000_000_000):
                got = run_gpu(after, "f", square, thresholds={
                    "f.suff_outer_par_0": outer, "f.suff_transposed_1": transposed})[0]
                np.testing.assert_array_equal(got, want)


def test_sizes_of_a_transposition_are_its_sources() -> None:
    """`size tr 0` is `size yss 1`: sizes alone do not keep a copy alive."""
    host = "  let (k_30: i64) = size tr_6 0\n  let (par_7: i64) = *.i64 n_1 p_3"
    prog = read_program(MATMUL.replace("{read}", "tr_6[gtid_12, i_15]").replace("{pre}", "")
                        .replace("  let (par_7: i64) = *.i64 n_1 p_3", host))
    text = pretty(fuse_rearranges(prog))
    assert "let (k_30: i64) = size yss_5 1" in text
    assert text.index("rearrange") > text.index("else")  # only the flattened version copies


def test_a_transposition_no_kernel_needs_is_not_made(tmp_path) -> None:
    """End to end on the CPU backend: only the outer version, no copy at all."""
    src = tmp_path / "rows.fut"
    src.write_text("entry main [n][m] (xss: [n][m]f32) : [m]f32 =\n"
                   "  map (\\col -> loop s = 0 for x in col do s + x) (transpose xss)\n")
    pkg = build_package(src, tmp_path / "pkg", name="rows", backend_default="cpu")
    assert "rearrange" not in (pkg / "__init__.py").read_text()
    lib = import_package(pkg)
    xss = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(lib.Rows().main(xss), xss.sum(axis=0))


ADD_TRANSPOSED = """\
fun g(n_1: i64, m_2: i64, xss_3: [n_1][m_2]f32, yss_4: [m_2][n_1]f32) : ([?][?]f32) =
{
  let (tr_5: [n_1][m_2]f32) = rearrange (1, 0) yss_4
  let (r_6: [n_1][m_2]f32) =
    segmap grid (gtid_7 < n_1, gtid_8 < m_2)
      : (f32)
    {
      let (x_9: f32) = xss_3[gtid_7, gtid_8]
      let (y_10: f32) = tr_5[gtid_7, gtid_8]
      let (z_11: f32) = +.f32 x_9 y_10
      in (z_11)
    }
  in (r_6)
}
"""


def test_a_read_across_the_threads_that_tiles_serve_is_read_through_unversioned() -> None:
    """`yss[g1, g0]` reads a row apart from thread to thread, but the CUDA
    kernel stages it in shared-memory tiles (futgen.gpu.transposed_reads),
    read along its rows: as good as reading a copy, without making one."""
    before = read_program(ADD_TRANSPOSED)
    after = fuse_rearranges(before)
    check_program(after)
    text = pretty(after)
    assert "rearrange" not in text and "suff_transposed" not in text
    assert "yss_4[gtid_8, gtid_7]" in text
    rng = np.random.default_rng(1)
    args = [np.int64(3), np.int64(5), rng.standard_normal((3, 5)).astype(np.float32),
            rng.standard_normal((5, 3)).astype(np.float32)]
    np.testing.assert_array_equal(run_gpu(after, "g", args)[0], run_gpu(before, "g", args)[0])


# A SegMap's result that is also needed transposed (returned both ways).
# {read} is the SegMap's read of xss.
PRODUCED = """\
fun h(n_1: i64, m_2: i64, k_10: i64, xss_3: [n_1][m_2]f32) : ([?][?]f32, [?][?]f32) =
{
  let (v_4: [n_1][m_2]f32) =
    segmap grid (gtid_5 < n_1, gtid_6 < m_2)
      : (f32)
    {
      let (x_7: f32) = {read}
      let (y_8: f32) = *.f32 x_7 2.0f32
      in (y_8)
    }
  let (tr_9: [m_2][n_1]f32) = rearrange (1, 0) v_4
  in (tr_9, v_4)
}
"""


def test_a_transposed_result_is_made_by_the_segmap_with_its_indices_swapped() -> None:
    """The SegMap makes `tr` itself, over (m, n): its read of `xss` goes
    across the threads but tiles serve it; `v` becomes the rearrange of
    that.  Where the swapped SegMap's read could not be tiled (its column a
    thread's multiple), nothing changes."""
    rng = np.random.default_rng(2)
    args = [np.int64(3), np.int64(5), np.int64(1), rng.standard_normal((3, 5)).astype(np.float32)]
    before = read_program(PRODUCED.replace("{read}", "xss_3[gtid_5, gtid_6]"))
    after = fuse_rearranges(before)
    check_program(after)
    text = pretty(after)
    assert "segmap grid (gtid_5 < n_1, gtid_6 < m_2)" not in text
    assert "segmap grid (gtid_6 < m_2, gtid_5 < n_1)" in text
    assert re.search(r"let \(v_4: \[n_1\]\[m_2\]f32\) = rearrange \(1, 0\) v_tr_\d+", text)
    assert re.search(r"in \(v_tr_\d+, v_4\)", text)
    for got, want in zip(run_gpu(after, "h", args), run_gpu(before, "h", args), strict=True):
        np.testing.assert_array_equal(got, want)
    strided = PRODUCED.replace("{read}", "xss_3[gtid_5, j_11]").replace(
        "      let (x_7", "      let (j_11: i64) = *.i64 gtid_6 k_10\n      let (x_7")
    before = read_program(strided)
    assert pretty(fuse_rearranges(before)) == pretty(before)
