"""The first flattening: which SOACs become which SegOps, and that the
flattened programs mean what the source means.

Structural tests look at the GPU IR of small programs; the example tests run
every `-- ==` case with expected output through `flatten` and the GPU IR
interpreter (vectorised), and check the kernel-code rules on every result.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np
import pytest

from futgen.core import internalise, ir
from futgen.data import compare_values, load_file
from futgen.errors import FutharkError
from futgen.frontend import check_source, load
from futgen.gpu.check import check_program
from futgen.gpu.interpret import run
from futgen.gpu.ir import SegHist, SegMap, SegOp, SegRed, SegScan, SegScatter
from futgen.pipeline import Options, run_passes
from futgen.testing.spec import value_runs

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _flat(src: str, flattening: str = "incremental") -> ir.Program:
    prog = run_passes(internalise(check_source(src)), options=Options(flattening))
    check_program(prog)
    return prog


def _host_stms(body: ir.Body) -> list[ir.Stm]:
    """The statements of host code, looking into host-level ifs and loops."""
    out = []
    for s in body.stms:
        out.append(s)
        if isinstance(s.exp, ir.If):
            out += _host_stms(s.exp.then_) + _host_stms(s.exp.else_)
        elif isinstance(s.exp, ir.Loop):
            out += _host_stms(s.exp.body)
    return out


def _segops(prog: ir.Program, fn: str) -> list:
    return [s.exp for s in _host_stms(prog.function(fn).body)
            if isinstance(s.exp, SegOp)]


def _host_soacs(prog: ir.Program, fn: str) -> list:
    return [s.exp for s in _host_stms(prog.function(fn).body)
            if isinstance(s.exp, ir.Screma | ir.Scatter | ir.Hist)]


def _loops(body: ir.Body) -> list[ir.Loop]:
    out = []
    for s in body.stms:
        if isinstance(s.exp, ir.Loop):
            out += [s.exp, *_loops(s.exp.body)]
        elif isinstance(s.exp, ir.If):
            out += _loops(s.exp.then_) + _loops(s.exp.else_)
    return out


# ------------------------------------------------------------ structure


def test_dotprod_is_one_segred() -> None:
    prog = _flat("entry main [n] (xs: [n]f32) (ys: [n]f32) : f32 = "
                 "reduce (+) 0 (map2 (*) xs ys)")
    [op] = _segops(prog, "main")
    assert isinstance(op, SegRed) and len(op.space.dims) == 1
    assert not _host_soacs(prog, "main")
    assert not _loops(op.body)
    got = run(prog, "main", [np.array([1, 2, 3], np.float32), np.array([4, 5, 6], np.float32)])
    assert got[0] == np.float32(32)


def test_builtin_commutative_operators_make_commutative_segops() -> None:
    # `reduce (+)` may combine in any order (the operator table says + commutes),
    # so the kernel can read memory coalesced; an arbitrary lambda may not.
    [plus] = _segops(_flat("entry main (xs: []i32) : i32 = reduce (+) 0 xs"), "main")
    assert plus.ops[0].commutative
    [pairs] = _segops(_flat(
        "entry main (xs: []i32) : (i32, i32) = "
        "reduce (\\(a, b) (c, d) -> (a + c, b * d)) (0, 1) (zip xs xs)"), "main")
    assert not pairs.ops[0].commutative


def test_prefix_sum_is_a_segscan() -> None:
    prog = _flat("entry main [n] (xs: [n]i32) : [n]i32 = scan (+) 0 xs")
    [op] = _segops(prog, "main")
    assert isinstance(op, SegScan) and len(op.space.dims) == 1
    got = run(prog, "main", [np.array([1, 2, 3, 4], np.int32)])
    assert got[0].tolist() == [1, 3, 6, 10]


def test_moderate_matmul_is_a_2d_segmap_with_one_scalar_loop() -> None:
    prog = _flat("""
      entry main [n][m][p] (a: [n][m]f32) (b: [m][p]f32) : [n][p]f32 =
        map (\\row -> map (\\col -> reduce (+) 0 (map2 (*) row col)) (transpose b)) a""",
                 "moderate")
    [op] = _segops(prog, "main")
    assert isinstance(op, SegMap) and len(op.space.dims) == 2
    [loop] = _loops(op.body)
    assert all(isinstance(p.type, ir.Prim) for p, _ in loop.merge)
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_allclose(run(prog, "main", [a, b])[0], a @ b)


def test_map_of_reduce_is_a_2d_segmented_segred() -> None:
    prog = _flat("entry main [n][m] (xss: [n][m]i32) : [n]i32 = "
                 "map (\\r -> reduce (+) 0 r) xss")
    [op] = _segops(prog, "main")
    assert isinstance(op, SegRed) and len(op.space.dims) == 2
    assert not _loops(op.body)
    xss = np.arange(12, dtype=np.int32).reshape(3, 4)
    assert run(prog, "main", [xss])[0].tolist() == xss.sum(axis=1).tolist()


def test_map_of_scan_is_a_2d_segmented_segscan() -> None:
    prog = _flat("entry main [n][m] (xss: [n][m]i32) : [n][m]i32 = map (scan (+) 0) xss")
    [op] = _segops(prog, "main")
    assert isinstance(op, SegScan) and len(op.space.dims) == 2
    xss = np.arange(12, dtype=np.int32).reshape(3, 4)
    assert run(prog, "main", [xss])[0].tolist() == np.cumsum(xss, axis=1).tolist()


def test_calls_in_a_body_are_inlined() -> None:
    prog = _flat("""
      def sq (x: f32) : f32 = x * x
      def norm2 [d] (v: [d]f32) : f32 = reduce (+) 0 (map sq v)
      entry main [n][d] (vs: [n][d]f32) : [n]f32 = map norm2 vs""")
    [op] = _segops(prog, "main")
    assert isinstance(op, SegRed) and len(op.space.dims) == 2
    vs = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_allclose(run(prog, "main", [vs])[0], (vs * vs).sum(axis=1))


def test_a_body_that_creates_an_array_of_known_size_is_a_segmap() -> None:
    prog = _flat("entry main [n] (xs: [n]i32) : [n][3]i32 = map (\\x -> [x, x + 1, x * 2]) xs")
    [op] = _segops(prog, "main")
    assert isinstance(op, SegMap) and isinstance(op.ret[0], ir.ArrayT)
    assert not _host_soacs(prog, "main")
    got = run(prog, "main", [np.array([1, 2], np.int32)])
    assert got[0].tolist() == [[1, 2, 2], [2, 3, 4]]


def test_a_body_whose_array_size_depends_on_the_thread_stays_on_the_host() -> None:
    prog = _flat("""entry main [n] (xs: [n]i64) : [n]i64 =
                      map (\\x -> i64.sum (scan (+) 0 (replicate x 1))) xs""")
    assert not _segops(prog, "main")
    [soac] = _host_soacs(prog, "main")
    assert isinstance(soac, ir.Screma)
    got = run(prog, "main", [np.array([1, 3], np.int64)])
    assert got[0].tolist() == [1, 6]


def test_scatter_and_hist_of_scalars_become_segops() -> None:
    prog = _flat("""
      entry main [n] (k: i64) (is: [n]i64) (vs: [n]i32) : [k]i32 =
        let h = hist i32.max 0 k is vs
        in scatter h (map (+ 1) is) (map (* 10) vs)""")
    assert not _host_soacs(prog, "main")
    ops = [type(op) for op in _segops(prog, "main")]
    assert ops == [SegHist, SegScatter]  # both maps fused into the scatter
    is_ = np.array([0, 2, 2, -1, 7, 1], np.int64)  # -1 and 7: out of bounds, skipped
    vs = np.array([5, 3, 9, 4, 4, -2], np.int32)
    for vectorise in (True, False):
        got = run(prog, "main", [np.int64(4), is_, vs], vectorise=vectorise)[0]
        # hist: [5, 0, 9, 0]; then 0, 1, 2 get 40, 50, -20; 3 gets 30 or 90 (unspecified)
        assert got[:3].tolist() == [40, 50, -20] and got[3] in (30, 90)
        h = run(_flat("""entry main [n] (k: i64) (is: [n]i64) (vs: [n]i32) : [k]i32 =
                             hist i32.max 0 k is vs"""), "main", [np.int64(4), is_, vs],
                vectorise=vectorise)[0]
        assert h.tolist() == [5, 0, 9, 0]


def test_a_map_fuses_into_its_scatter_unless_it_reads_the_destination() -> None:
    src = """entry main [n] (dest: *[]f32) (is: [n]i64) : []f32 =
               scatter dest is (map (\\i -> %s) is)"""
    fused = _flat(src % "f32.i64 i * 2")
    assert [type(op) for op in _segops(fused, "main")] == [SegScatter]
    reads = _flat(src % "dest[i] + 1")  # fused, the reads would see the writes
    assert [type(op) for op in _segops(reads, "main")] == [SegMap, SegScatter]
    dest, is_ = np.arange(4, dtype=np.float32), np.array([1, 0, 3], np.int64)
    for vectorise in (True, False):
        got = run(reads, "main", [dest, is_], vectorise=vectorise)[0]
        assert got.tolist() == [1, 2, 2, 4]
        got = run(fused, "main", [dest, is_], vectorise=vectorise)[0]
        assert got.tolist() == [0, 2, 2, 6]


@pytest.mark.parametrize("src", [
    "entry main (d: *[][2]i32) (is: []i64) (vs: [][2]i32) : [][2]i32 = scatter d is vs",
    """entry main (d: *[][2]i32) (is: []i64) (vs: [][2]i32) : [][2]i32 =
         reduce_by_index d (map2 (+)) [0, 0] is vs""",
])
def test_writes_of_rows_stay_on_the_host(src: str) -> None:
    prog = _flat(src)
    assert {type(e) for e in _host_soacs(prog, "main")} & {ir.Hist, ir.Scatter}
    assert not [op for op in _segops(prog, "main") if isinstance(op, SegHist | SegScatter)]


def test_histograms_of_tuples_and_small_values_are_segops() -> None:
    prog = _flat("""
      entry main (k: i64) (is: []i64) (vs: []i32) (bs: []i8) : ([]i32, []i32, []i8) =
        let (a, b) = unzip (hist (\\(a, b) (c, d) -> (a + c, i32.max b d)) (0, 0) k is
                                 (zip vs vs))
        in (a, b, hist (+) 0 k is bs)""")
    assert [type(op) for op in _segops(prog, "main")] == [SegHist, SegHist]
    is_ = np.array([0, 2, 2, 5, 1], np.int64)
    vs = np.array([3, -1, 4, 9, -7], np.int32)
    bs = np.array([100, 100, 100, 1, 2], np.int8)
    for vectorise in (True, False):
        a, b, c = run(prog, "main", [np.int64(3), is_, vs, bs], vectorise=vectorise)
        assert a.tolist() == [3, -7, 3] and b.tolist() == [3, 0, 4]
        assert c.tolist() == [100, 2, -56]  # i8 addition wraps


def test_inner_reduction_in_a_branch_becomes_a_loop() -> None:
    prog = _flat("""
      entry main [n][m] (xss: [n][m]i32) : [n]i32 =
        map (\\r -> if r[0] > 0 then reduce (+) 0 r else 0) xss""")
    [op] = _segops(prog, "main")
    assert isinstance(op, SegMap) and len(_loops(op.body)) == 1
    xss = np.array([[1, 2], [-1, 5]], np.int32)
    assert run(prog, "main", [xss])[0].tolist() == [3, 0]


def test_names_stay_unique_when_a_function_is_inlined_twice() -> None:
    prog = _flat("""
      def f (x: i32) : i32 = let y = x * 3 in y + 1
      entry main [n] (xs: [n]i32) : [n]i32 = map (\\x -> f (f x)) xs""")
    from futgen.flatten.names import binders

    [fn] = [f for f in prog.functions if f.name == "main"]
    names = list(binders(fn))
    assert len(names) == len(set(names))
    assert run(prog, "main", [np.array([1, 2], np.int32)])[0].tolist() == [13, 22]


def test_slices_in_a_body_are_views() -> None:
    prog = _flat("""
      entry main [n][m] (xss: [n][m]i32) (k: i64) : [n]i32 =
        map (\\row -> let r = row[::-1] in r[k] + i32.sum r[1:m:2]) xss""", "moderate")
    [op] = _segops(prog, "main")
    assert isinstance(op, SegMap)
    xss = np.array([[1, 2, 3, 4], [5, 6, 7, 8]], np.int32)
    for vectorise in (True, False):
        got = run(prog, "main", [xss, np.int64(1)], vectorise=vectorise)
        assert got[0].tolist() == [3 + 3 + 1, 7 + 7 + 5]
    # Incremental flattening adds a version with the sum segmented by the
    # rows (rule G6 cuts the body after it); every version agrees.
    prog = _flat("""
      entry main [n][m] (xss: [n][m]i32) (k: i64) : [n]i32 =
        map (\\row -> let r = row[::-1] in r[k] + i32.sum r[1:m:2]) xss""")
    assert any(isinstance(op, SegRed) for op in _segops(prog, "main"))


def test_an_index_past_a_slice_fails_with_the_views_shape() -> None:
    # xs[0:2][k] reads inside xs for k = 2, but not inside the slice.
    prog = _flat("""
      entry main [n] (xss: [n][4]i32) (k: i64) : [n]i32 =
        map (\\row -> row[0:2][k]) xss""")
    assert isinstance(_segops(prog, "main")[0], SegMap)
    xss = np.array([[1, 2, 3, 4]], np.int32)
    assert run(prog, "main", [xss, np.int64(1)])[0].tolist() == [2]
    with pytest.raises(FutharkError, match=r"Index \[2\] out of bounds for array of shape \[2\]"):
        run(prog, "main", [xss, np.int64(2)])


# -------------------------------------------------------- the examples


def _cases() -> list:
    out = []
    for path in sorted(EXAMPLES.glob("*.fut")):
        for entry, r in value_runs(str(path)):
            out.append(pytest.param(path, entry, r, id=f"{path.stem}:{entry}:{r.index}"))
    return out


@cache
def _flattened(path: Path) -> ir.Program:
    prog = run_passes(internalise(load(str(path))))
    check_program(prog)
    return prog


def _values(v) -> list:
    return list(v.values) if v.kind == "inline" else load_file(v.path)


@pytest.mark.parametrize(("path", "entry", "run_case"), _cases())
def test_example_case_through_gpu_ir(path: Path, entry: str, run_case) -> None:
    got = run(_flattened(path), entry, _values(run_case.input))
    mismatches = compare_values(_values(run_case.expected), got)
    assert not mismatches, "\n".join(map(str, mismatches))


# Which SegOps each example function becomes under moderate flattening (one
# version each; incremental flattening's versions are test_versions.py's).
EXPECTED = {
    ("dotprod", "dotprod"): ["SegRed1"],
    ("dotprod", "dot_i32"): ["SegRed1"],
    ("prefix_sum", "prefix_sum"): ["SegScan1"],
    ("prefix_sum", "exclusive"): ["SegMap1"],
    ("prefix_sum", "segmented"): ["SegScan1"],
    ("prefix_sum", "running_max"): ["SegScan1"],
    ("matmul", "matmul"): ["SegMap2"],
    ("mandelbrot", "main"): ["SegMap2"],
    ("montecarlo", "main"): ["SegRed1"],
    ("stencil", "step"): ["SegMap1"],
    ("stencil", "step2d"): ["SegMap2"],
    ("kmeans", "nearest"): ["SegRed1"],
    # nearest centre: a segmented argmin (the map returns only its index);
    # the new centres: private rows
    ("kmeans", "step"): ["SegRed2", "SegHist1", "SegMap1"],
    ("histogram", "main"): ["SegHist1"],  # the bins' map fused in
    ("compact", "by_scatter"): ["SegScan1", "SegScatter1"],  # the flags a map-out of the scan
    ("tridiag", "linrec"): ["SegScan1", "SegMap1"],
}


@pytest.mark.parametrize(("example", "fn"), sorted(EXPECTED))
def test_example_segops(example: str, fn: str) -> None:
    prog = run_passes(internalise(load(str(EXAMPLES / f"{example}.fut"))),
                      options=Options("moderate"))
    ops = _segops(prog, fn)
    assert [f"{type(o).__name__}{len(o.space.dims)}" for o in ops] == EXPECTED[example, fn]
