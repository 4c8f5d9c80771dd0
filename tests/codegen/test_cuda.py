"""CUDA code generation from hand-built GPU IR: plan structure, and nvcc accepts the kernels.

The nvcc tests compile with `-ptx -arch=sm_90 --Werror all-warnings` (what CI
runs on every generated kernels.cu) and skip when nvcc is absent.
"""

from __future__ import annotations

import itertools
import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from futgen.codegen.cuda import compile_segop, kernels_prelude, render_kernels_file
from futgen.codegen.plan import KernelPlan
from futgen.core import ir
from futgen.errors import Loc
from futgen.gpu.ir import (
    SegBinOp,
    SegHist,
    SegMap,
    SegRed,
    SegScan,
    SegScatter,
    SegSpace,
)

LOC = Loc("prog.fut", 3, 7)


class Names:
    """A name source like the internaliser's: unique tags."""

    def __init__(self) -> None:
        self.tags = itertools.count(100)

    def __call__(self, base: str) -> ir.VName:
        return ir.VName(base, next(self.tags))


def v(base: str, tag: int) -> ir.VName:
    return ir.VName(base, tag)


def var(x: ir.VName) -> ir.Var:
    return ir.Var(x)


def p(x: ir.VName, prim: str) -> ir.Param:
    return ir.Param(x, ir.Prim(prim))


def let(x: ir.VName, prim: str, e: ir.Exp) -> ir.Stm:
    return ir.Stm((p(x, prim),), e)


def binop_lam(op: str, prim: str, base: int) -> ir.Lambda:
    a, b, r = v("a", base), v("b", base + 1), v("r", base + 2)
    body = ir.Body((let(r, prim, ir.BinOp(op, prim, var(a), var(b))),), (var(r),))
    return ir.Lambda((p(a, prim), p(b, prim)), body, (ir.Prim(prim),))


N = v("n", 1)
M = v("m", 2)
XS = v("xs", 3)
YS = v("ys", 4)
A = v("a", 5)
MAT = v("mat", 6)
TYPES: dict[ir.VName, ir.Type] = {
    N: ir.Prim("i64"), M: ir.Prim("i64"), A: ir.Prim("f32"),
    XS: ir.ArrayT("f32", (var(N),)), YS: ir.ArrayT("f32", (var(N),)),
    MAT: ir.ArrayT("i32", (var(N), var(M))),
}


def saxpy() -> ir.Stm:
    g, x, y, t, r = v("gtid", 10), v("x", 11), v("y", 12), v("t", 13), v("r", 14)
    body = ir.Body((
        let(x, "f32", ir.Index(XS, (ir.DimFix(var(g)),), LOC)),
        let(y, "f32", ir.Index(YS, (ir.DimFix(var(g)),), LOC)),
        let(t, "f32", ir.BinOp("*", "f32", var(A), var(x))),
        let(r, "f32", ir.BinOp("+", "f32", var(t), var(y))),
    ), (var(r),))
    op = SegMap("grid", SegSpace((g,), (var(N),)), (ir.Prim("f32"),), body)
    return ir.Stm((ir.Param(v("res", 15), ir.ArrayT("f32", (var(N),))),), op)


def sum_red(commutative: bool = True) -> ir.Stm:
    g, x = v("gtid", 20), v("x", 21)
    body = ir.Body((let(x, "f32", ir.Index(XS, (ir.DimFix(var(g)),), LOC)),), (var(x),))
    op = SegRed("grid", SegSpace((g,), (var(N),)),
                (SegBinOp(binop_lam("+", "f32", 22), (ir.Constant(0.0, "f32"),), commutative),),
                (ir.Prim("f32"),), body)
    return ir.Stm((p(v("sum", 25), "f32"),), op)


def row_sums() -> ir.Stm:
    """Segmented: sums of the rows of `mat`, plus a map-out of each element doubled."""
    gi, gj, x, d = v("gtid", 30), v("gtid", 31), v("x", 32), v("d", 33)
    body = ir.Body((
        let(x, "i32", ir.Index(MAT, (ir.DimFix(var(gi)), ir.DimFix(var(gj))), LOC)),
        let(d, "i32", ir.BinOp("*", "i32", var(x), ir.Constant(2, "i32"))),
    ), (var(x), var(d)))
    op = SegRed("grid", SegSpace((gi, gj), (var(N), var(M))),
                (SegBinOp(binop_lam("+", "i32", 34), (ir.Constant(0, "i32"),), True),),
                (ir.Prim("i32"), ir.Prim("i32")), body)
    return ir.Stm((ir.Param(v("sums", 37), ir.ArrayT("i32", (var(N),))),
                   ir.Param(v("dbl", 38), ir.ArrayT("i32", (var(N), var(M))))), op)


def tuple_scan(dims: tuple[ir.SubExp, ...], arr: ir.VName) -> ir.Stm:
    """Prefix sums of (x, 1) pairs with a non-commutative-declared tuple operator."""
    gtids = tuple(v("gtid", 40 + k) for k in range(len(dims)))
    x, c = v("x", 43), v("c", 44)
    idx = tuple(ir.DimFix(var(g)) for g in gtids)
    elem = "f32" if len(dims) == 1 else "i32"
    body = ir.Body((let(x, elem, ir.Index(arr, idx, LOC)),
                    let(c, "i64", ir.SubExpOp(ir.Constant(1, "i64")))), (var(x), var(c)))
    a1, a2, b1, b2, r1, r2 = (v(s, 50 + k) for k, s in enumerate(("a", "c", "b", "d", "r", "s")))
    lam = ir.Lambda((p(a1, elem), p(a2, "i64"), p(b1, elem), p(b2, "i64")),
                    ir.Body((let(r1, elem, ir.BinOp("+", elem, var(a1), var(b1))),
                             let(r2, "i64", ir.BinOp("+", "i64", var(a2), var(b2)))),
                            (var(r1), var(r2))), (ir.Prim(elem), ir.Prim("i64")))
    zero = ir.Constant(0.0, "f32") if elem == "f32" else ir.Constant(0, "i32")
    op = SegScan("grid", SegSpace(gtids, dims),
                 (SegBinOp(lam, (zero, ir.Constant(0, "i64"))),),
                 (ir.Prim(elem), ir.Prim("i64")), body)
    return ir.Stm((ir.Param(v("sc", 60), ir.ArrayT(elem, dims)),
                   ir.Param(v("cnt", 61), ir.ArrayT("i64", dims))), op)


def control_flow() -> ir.Stm:
    """If, a for loop, a while loop, integer division, an assertion and 2-D indexing."""
    g = v("gtid", 70)
    i, acc, acc2, k, q, c, w, cont, e, f = (v(s, 71 + n) for n, s in enumerate(
        ("i", "acc", "acc2", "k", "q", "c", "w", "cont", "e", "f")))
    x, ok, big, res, nxt = v("x", 81), v("ok", 82), v("big", 83), v("res", 84), v("nxt", 85)
    loop_body = ir.Body((
        let(x, "i32", ir.Index(MAT, (ir.DimFix(var(g)), ir.DimFix(var(i))), LOC)),
        let(q, "i32", ir.BinOp("/", "i32", var(x), ir.Constant(3, "i32"))),
        let(acc2, "i32", ir.BinOp("+", "i32", var(acc), var(q))),
    ), (var(acc2),))
    m32 = v("m32", 86)
    while_body = ir.Body((
        let(nxt, "i32", ir.BinOp("%", "i32", var(w), ir.Constant(7, "i32"))),
        let(e, "bool", ir.CmpOp(">", "i32", var(nxt), ir.Constant(3, "i32"))),
    ), (var(e), var(nxt)))
    stms = (
        ir.Stm((p(k, "i32"),), ir.Loop(((p(acc, "i32"), ir.Constant(0, "i32")),),
                                       ir.ForLoop(i, "i64", var(M)), loop_body)),
        let(m32, "i32", ir.ConvOp("i64", "i32", var(M))),
        let(c, "bool", ir.CmpOp("<", "i32", var(k), var(m32))),
        let(ok, "bool", ir.Assert(var(c), "Assertion is false", LOC)),
        ir.Stm((p(f, "bool"), p(w, "i32")),
               ir.Loop(((p(cont, "bool"), ir.Constant(True, "bool")),
                        (p(v("w0", 87), "i32"), var(k))), ir.WhileLoop(cont),
                       while_body)),
        let(big, "bool", ir.CmpOp(">", "i32", var(w), ir.Constant(100, "i32"))),
        ir.Stm((p(res, "f64"),), ir.If(var(big),
                                       ir.Body((), (ir.Constant(1.5, "f64"),)),
                                       ir.Body((let(v("s", 88), "f64",
                                                    ir.ConvOp("i32", "f64", var(w))),),
                                               (var(v("s", 88)),)),
                                       (ir.Prim("f64"),))),
    )
    op = SegMap("grid", SegSpace((g,), (var(N),)), (ir.Prim("f64"),), ir.Body(stms, (var(res),)))
    return ir.Stm((ir.Param(v("out", 89), ir.ArrayT("f64", (var(N),))),), op)


ALL = {"saxpy": saxpy, "sum": sum_red, "sum_ordered": lambda: sum_red(False),
       "row_sums": row_sums,
       "scan": lambda: tuple_scan((var(N),), XS),
       "seg_scan": lambda: tuple_scan((var(N), var(M)), MAT),
       "control": control_flow}


def compile_all() -> dict[str, KernelPlan]:
    names = Names()
    codes = itertools.count(1)
    return {k: compile_segop(f(), TYPES, names, codes) for k, f in ALL.items()}


# ----------------------------------------------------------- plan structure


def test_saxpy_plan() -> None:
    plan = compile_segop(saxpy(), TYPES, Names())
    (launch,) = plan.launches
    # The block size is the instance's tuning parameter (default 256): the
    # grid-stride kernel's code does not depend on it.
    (size,) = plan.block_sizes
    assert launch.threads == "n_1" and launch.block == size.key and size.default == 256
    values = [a.value for a in launch.args]
    assert {"xs_3", "ys_4", "a_5", "n_1"} <= set(values)
    out = plan.outputs[0]
    assert out.prim == "f32" and out.shape == ("n_1",)
    assert plan.results == (("array", out.name),)
    assert next(a for a in launch.args if a.value == "a_5").kind == "scalar"
    assert next(a for a in launch.args if a.value == "xs_3").ctype == "float"
    # xs[gtid] with gtid < n and xs: [n]f32 cannot be out of bounds: no check.
    assert plan.errors == () and "atomicCAS(failure" not in plan.source
    assert "for (int64_t" in plan.source


def _gather(index: ir.SubExp, arr: ir.VName = XS) -> ir.Stm:
    """`map (\\g -> arr[index]) (iota n)` as a SegMap over gtid 40."""
    x = v("x", 41)
    body = ir.Body((let(x, "f32", ir.Index(arr, (ir.DimFix(index),), LOC)),), (var(x),))
    op = SegMap("grid", SegSpace((v("gtid", 40),), (var(N),)), (ir.Prim("f32"),), body)
    return ir.Stm((ir.Param(v("res", 42), ir.ArrayT("f32", (var(N),))),), op)


def test_bounds_checks_only_where_an_index_may_be_out_of_bounds() -> None:
    """An index is unchecked only where it is a thread index (or loop
    counter) bounded by the very size of the dimension it indexes."""
    anonymous, other = v("zs", 43), v("ws", 45)
    types = {**TYPES, anonymous: ir.ArrayT("f32", (None,)), v("k", 44): ir.Prim("i64"),
             other: ir.ArrayT("f32", (var(M),))}
    checked = [compile_segop(_gather(var(v("k", 44))), types, Names()),  # a host scalar
               compile_segop(_gather(var(v("gtid", 40)), other), types, Names()),  # [m]
               compile_segop(_gather(var(v("gtid", 40)), anonymous), types, Names())]
    for plan in checked:
        (error,) = plan.errors
        assert error.message.startswith("Index [{0}] out of bounds") and error.loc == "prog.fut:3:7"
    # The host knows `n = size zs 0`: the kernel takes n for zs's size, unchecked.
    plan = compile_segop(_gather(var(v("gtid", 40)), anonymous), types, Names(),
                         sizes={(anonymous, 0): N})
    assert plan.errors == () and "zs_43_dim0" not in plan.source


def test_sum_plan_is_one_pass_with_scalar_result() -> None:
    plan = compile_segop(sum_red(), TYPES, Names())
    (launch,) = plan.launches
    assert "b.max_grid(256)" in launch.threads and launch.when is None
    (kind, name), = plan.results
    assert kind == "scalar"
    assert next(t for t in plan.temps if t.name == name).shape == ("1",)
    # The last block finishes: its counter starts at zero on every call.
    assert any(t.zeroed and t.prim == "u32" for t in plan.temps)
    assert "cub::BlockReduce" in plan.source and "atomicInc" in plan.source


def test_segmented_red_results() -> None:
    plan = compile_segop(row_sums(), TYPES, Names())
    assert [r[0] for r in plan.results] == ["array", "array"]
    # Four strategies, each launched when the guards on the segment size say;
    # a guard is evaluated only where the ones before it failed.
    blocks, warps, lanes = plan.thresholds
    assert [t.par for t in plan.thresholds] == ["m_2"] * 3
    assert blocks.under == () and warps.under == ((blocks.key, False),)
    assert lanes.under == ((blocks.key, False), (warps.key, False))
    whens = [ln.when for ln in plan.launches]
    assert whens[:3] == [blocks.key, warps.key, lanes.key]
    assert whens[3] == f"not ({blocks.key}) and not ({warps.key}) and not ({lanes.key})"
    shapes = {t.name: t.shape for t in plan.outputs}
    assert [shapes[r[1]] for r in plan.results] == [("n_1",), ("n_1", "m_2")]
    assert plan.errors == ()  # mat[gtid_i, gtid_j] of mat: [n][m], i < n, j < m


def test_scan_plan_resets_tile_state_then_scans() -> None:
    plan = compile_segop(tuple_scan((var(N),), XS), TYPES, Names())
    init, scan = plan.launches
    assert init.kernel == f"{scan.kernel}_init"
    assert "cub::TilePrefixCallbackOp" in plan.source
    assert [t.prim for t in plan.outputs] == ["f32", "i64"]


def test_error_codes_unique_and_nonzero() -> None:
    plans = compile_all()
    codes = [e.code for pl in plans.values() for e in pl.errors]
    assert len(codes) == len(set(codes)) and 0 not in codes
    ctrl = plans["control"]
    messages = {e.message for e in ctrl.errors}
    assert {"division by zero", "Assertion is false"} <= messages


def test_default_codes_come_from_the_name_source() -> None:
    names = Names()
    a = compile_segop(saxpy(), TYPES, names)
    b = compile_segop(saxpy(), TYPES, names)
    codes = [e.code for e in a.errors + b.errors]
    assert len(codes) == len(set(codes)) and 0 not in codes


def test_kernel_names_unique() -> None:
    plans = compile_all()
    kernels = [ln.kernel for pl in plans.values() for ln in pl.launches]
    assert len(kernels) == len(set(kernels))


def test_prelude_is_table_generated() -> None:
    text = kernels_prelude()
    for t in ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"):
        assert f"fut_div_{t}(" in text and f"fut_shl_{t}(" in text
    assert "static __device__ inline" in text


# -------------------------------------------------------------------- nvcc


def nvcc_check(source: str, tmp_path: Path) -> None:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc not found on PATH: cannot compile kernels.cu")
    cu = tmp_path / "kernels.cu"
    cu.write_text(source)
    proc = subprocess.run([nvcc, "-ptx", "-arch=sm_90", "--Werror", "all-warnings", str(cu),
                           "-o", str(tmp_path / "kernels.ptx")], capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip() == "", proc.stderr


def test_nvcc_compiles_all_hand_built_plans(tmp_path: Path) -> None:
    nvcc_check(render_kernels_file(list(compile_all().values())), tmp_path)


def test_nvcc_compiles_prelude_alone(tmp_path: Path) -> None:
    nvcc_check(render_kernels_file([]), tmp_path)


def _ptx(source: str, tmp_path: Path) -> str:
    nvcc_check(source, tmp_path)
    return (tmp_path / "kernels.ptx").read_text()


def test_f32_division_rounds_correctly_unless_fast_division(tmp_path: Path) -> None:
    """f32 division (and reciprocals, in maps and in the map fused into a
    scan) compiles to PTX's correctly rounded div.rn.f32; with
    `--fast-division`, to div.full.f32 (2 ulp).  f64 keeps div.rn.f64."""
    from futgen.codegen.package import compile_program
    from futgen.pipeline import Options

    program = ROOT / "tests" / "programs" / "kernels" / "divisions.fut"
    exact = compile_program(program).kernels_source
    fast = compile_program(program, Options(fast_division=True)).kernels_source
    assert "#define FUTGEN_FAST_DIVISION 1" not in exact
    assert "#define FUTGEN_FAST_DIVISION 1" in fast
    assert exact.count("fut_fdiv_f32(") == fast.count("fut_fdiv_f32(") > 4
    (tmp_path / "exact").mkdir()
    (tmp_path / "fast").mkdir()
    exact_ptx, fast_ptx = _ptx(exact, tmp_path / "exact"), _ptx(fast, tmp_path / "fast")
    assert "div.rn.f32" in exact_ptx and "div.full.f32" not in exact_ptx
    assert "div.full.f32" in fast_ptx and "div.rn.f32" not in fast_ptx
    assert "div.rn.f64" in exact_ptx and "div.rn.f64" in fast_ptx


# ------------------------------------------------- example programs, flattened

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.fut"))
KERNEL_PROGRAMS = sorted((ROOT / "tests" / "programs" / "kernels").glob("*.fut"))


def _host_segops(body: ir.Body) -> list[ir.Stm]:
    """SegOp statements of host code, host-level If and Loop bodies included."""
    out: list[ir.Stm] = []
    for s in body.stms:
        match s.exp:
            case SegMap() | SegRed() | SegScan() | SegHist() | SegScatter():
                out.append(s)
            case ir.If(_, then_, else_, _):
                out += _host_segops(then_) + _host_segops(else_)
            case ir.Loop(_, _, b):
                out += _host_segops(b)
    return out


def _plans(path: Path) -> dict[str, list[KernelPlan]]:
    """The kernel plans of each function of a flattened program."""
    from futgen.core import load
    from futgen.flatten.names import NameSource, param_types
    from futgen.pipeline import run_passes

    prog = run_passes(load(str(path)))
    types = param_types(prog.functions)
    names = NameSource(prog)
    codes = itertools.count(1)
    return {f.name: [compile_segop(s, types, names.fresh, codes) for s in _host_segops(f.body)]
            for f in prog.functions}


@pytest.mark.parametrize("path", EXAMPLES + KERNEL_PROGRAMS, ids=lambda p: p.name)
def test_nvcc_compiles_flattened_examples(path: Path, tmp_path: Path) -> None:
    plans = [p for ps in _plans(path).values() for p in ps]
    nvcc_check(render_kernels_file(plans), tmp_path)


def test_reads_across_the_threads_are_staged_in_tiles() -> None:
    """Each map of transposes.fut that reads an array a row apart from thread
    to thread gets the tiled kernel (futgen/codegen/cuda/transposed.py),
    launched where both dimensions are 16 or more, beside the plain one:
    with a tile of 32 rows, and 1 or 2 more on each side for a stencil's
    neighbours; a read along the threads stays a global read; a tile that
    no outer index moves serves a chunk of outer points."""
    plans = _plans(ROOT / "tests" / "programs" / "kernels" / "transposes.fut")
    rows = {"add_transposed": 32, "stencil_down": 34, "batched": 32, "batch_by_one": 32,
            "both_ways": 32, "two_down": 36, "off_the_end": 34}
    for fn, tile_rows in rows.items():
        [plan] = plans[fn]
        tiled, plain = plan.launches
        assert tiled.kernel.startswith("transposed_") and plain.kernel.startswith("segmap_")
        assert tiled.when.startswith("min(") and tiled.when.endswith(") >= 16")
        assert plain.when == f"not ({tiled.when})"
        assert re.search(rf"__shared__ __align__\(16\) \w+ tile_0_\d+\[{tile_rows * 33}\];",
                         plan.source), fn
    both = plans["both_ways"][0].source
    tiled_kernel = both[both.index("transposed_"):both.index("segmap_")]
    assert len(re.findall(r"= tile_0_\d+\[", tiled_kernel)) == 1
    assert len(re.findall(r"= xss_\d+\[", tiled_kernel)) == 2  # the tile's load, the straight read
    chunked = {fn for fn in rows if "chunk_" in plans[fn][0].source}
    assert chunked == {"batch_by_one"}  # batched's tiles are at its outer index
    shared = plans["batch_by_one"][0].source
    shared = shared[shared.index("transposed_"):shared.index("segmap_")]
    assert shared.index("__syncthreads();") < shared.index("for (int64_t outer_")


def test_stencil_reads_are_offsets_of_the_flat_index(tmp_path: Path) -> None:
    """stencils.fut's kernels.cu: reads of an array of the map's shape at the
    thread's indices plus constants are the flat index plus an offset (a row
    down, up, an element left, right, and the point itself); reads of
    another shape stay row-major, and the read past the end keeps its check;
    the space's coordinates come from 32-bit divisions where it has fewer
    than 2^32 points."""
    from futgen.codegen.package import build_package

    pkg = build_package(ROOT / "tests" / "programs" / "kernels" / "stencils.fut",
                        tmp_path, name="stencils", backend_default="cuda")
    source = (pkg / "kernels.cu").read_text()
    offsets = re.findall(r"= xsss_\d+\[\(flat_\d+ \+ \(\(int64_t\)(-?1) \* ", source)
    assert sorted(offsets) == ["-1", "-1", "1", "1"]
    assert re.search(r"= xsss_\d+\[flat_\d+\];", source)
    assert re.search(r"= yss_\d+\[\(\(yss_\w+ \* \w+\) \+ yss_\w+\)\];", source)
    past_the_end = re.search(r"if \(\(\((xss_\d+)_i0_\d+ < 0\)[^\n]*\n(?:[^\n]*\n){9}"
                             r"[^\n]*= \1\[\(flat_\d+ \+ \(\(int64_t\)1 \* m_\d+\)\)\];", source)
    assert past_the_end  # its check, then the read a row down
    assert "<= (int64_t)UINT32_MAX" in source and "% ((uint32_t)" in source


def test_matrix_products_get_tiled_versions_beside_the_plain_one() -> None:
    plans = _plans(ROOT / "tests" / "programs" / "kernels" / "products.fut")
    # Sums (all but the max-plus product's pair) also get the split kernel.
    for fn, sizes, split in (("matmul", 2, True), ("matmul_columns", 1, True),
                             ("gemm", 2, True),
                             ("max_plus_and_product", 1, False)):  # 8-byte accumulators
        # The first plan with tiles: the outer version's (gemm's G9 split
        # version has a map of its own, tiled the same way).
        plan = next(p for p in plans[fn] if any("segmap_tiled" in la.kernel for la in p.launches))
        whens = [la.when for la in plan.launches]
        tiled = [la.when for la in plan.launches if "segmap_tiled" in la.kernel]
        splits = [la for la in plan.launches if "segmap_split" in la.kernel]
        # Two kernels with tiles of 16 points along the shorter dimension, then
        # the square ones.
        assert len(tiled) == 2 + sizes and len(plan.thresholds) == sizes + 3 * split + 1, fn
        side = plan.thresholds[0]
        assert side.par.startswith("min(") and side.under == ()
        assert whens[-1] == f"not ({side.key})"  # the plain kernel
        whole = ((side.key, True),)
        if split:  # below segmap_unsplit tiles, split kernels of 64, 32 and 16 x 16 tiles
            unsplit, by64, by32 = plan.thresholds[1:4]
            assert unsplit.under == whole
            split_under = (*whole, (unsplit.key, False))
            assert by64.under == split_under and by32.under == (*split_under, (by64.key, False))
            assert by64.par == by32.par == side.par
            assert [la.kernel.endswith("_combine") for la in splits] == [False, True] * 3
            split_when = f"{side.key} and not {unsplit.key}"
            assert [la.when for la in splits[::2]] == [
                f"{split_when} and {by64.key}", f"{split_when} and not {by64.key} and {by32.key}",
                f"{split_when} and not {by64.key} and not {by32.key}"]
            assert all(a.when == b.when for a, b in zip(splits[::2], splits[1::2]))
            whole += ((unsplit.key, True),)
        square = plan.thresholds[1 + 3 * split]
        assert square.under == whole and square.par == side.par
        narrow = " and ".join([*(k for k, _ in whole), f"not {square.key}"])
        assert all(w.startswith(f"{narrow} and ") for w in tiled[:2])
        assert " <= " in tiled[0] and " > " in tiled[1]  # rows short; columns short
        whole += ((square.key, True),)
        if sizes == 2:  # large tiles from segmap_tile_large points, small below
            large = plan.thresholds[-1]
            assert large.under == whole
            assert tiled[2] == large.key and tiled[3].endswith(f"and not {large.key}")
        else:
            assert tiled[2:] == [" and ".join(k for k, _ in whole)]


def test_tiled_kernels_compile_with_every_tile_size_they_allow(tmp_path: Path) -> None:
    """Each tiled kernel's launch names its tunable chunk length; the values
    it allows divide the chunk's loads among the block and fit its shared
    memory, and nvcc compiles every one (all kernels at once at the smallest
    allowed, then at the largest)."""
    plans = [p for ps in _plans(ROOT / "tests" / "programs" / "kernels" / "products.fut").values()
             for p in ps]
    tiles = [t for p in plans for t in p.tile_sizes]
    tiled = [la for p in plans for la in p.launches
             if "segmap_tiled" in la.kernel or la.kernel.startswith("segmap_split")
             and not la.kernel.endswith("_combine")]
    assert len(tiles) == len(tiled) > 0
    assert all(len(la.tile_sizes) == 1 for la in tiled)
    assert {la.tile_sizes[0] for la in tiled} == {t.key for t in tiles}
    source = render_kernels_file(plans)
    for t in tiles:
        assert t.default in t.values and set(t.values) <= {8, 16, 32}
        assert source.count(f"#define {t.macro} {t.default}\n") == 1
    for pick in (min, max):
        defines = "".join(f"#define {t.macro} {pick(t.values)}\n" for t in tiles)
        nvcc_check(defines + source, tmp_path)


def _tiling_of(src: str):
    """The tiling of the one SegMap of program `src` (None if not tileable)."""
    from futgen.codegen.cuda.tiling import tileable
    from futgen.core import internalise
    from futgen.flatten.names import param_types
    from futgen.frontend import check_source
    from futgen.pipeline import run_passes

    prog = run_passes(internalise(check_source(src)))
    [op] = [s.exp for f in prog.functions for s in _host_segops(f.body)]
    assert isinstance(op, SegMap) and len(op.space.dims) == 2
    return tileable(op, param_types(prog.functions))


@pytest.mark.parametrize(("step", "tiled"), [
    ("acc + xs[k] * yss[k, j]", True),
    ("acc + xs[k] / yss[k, j]", False),  # i32 division can fail on a tile's padding
    ("acc + xs[k] % yss[k, j]", False),
])
def test_only_steps_that_cannot_fail_are_tiled(step: str, tiled: bool) -> None:
    tiling = _tiling_of(f"""
      entry main [n][m][p] (xss: [n][m]i32) (yss: [m][p]i32) : [n][p]i32 =
        map (\\xs -> map (\\j -> loop acc = 0 for k < m do {step}) (iota p)) xss""")
    assert (tiling is not None) == tiled


def test_a_loop_reading_no_column_invariant_array_is_not_tiled() -> None:
    assert _tiling_of("""
      entry main [n][m] (xss: [n][m]f32) (p: i64) : [n][p]f32 =
        map (\\xs -> map (\\j -> loop acc = 0 for k < m do acc + xs[k] * f32.i64 j) (iota p))
            xss""") is None


def test_loop_counter_is_kernel_local() -> None:
    # The counter of a for loop inside a kernel is declared by the loop, never
    # passed from the host (where no such variable exists).
    plan = compile_all()["control"]
    passed = {a.value for launch in plan.launches for a in launch.args}
    assert "i_71" not in passed
    assert "for (int64_t i_71" in plan.source.replace("  ", " ")


def test_scans_of_large_values_fit_shared_memory(tmp_path: Path) -> None:
    # A scan of 24 f64s per element (horizontal fusion makes such values of
    # several scans, reverse-mode AD of a tuple scan among them): fewer
    # threads a block, so that ptxas accepts the kernel's static shared
    # memory, which `-ptx` alone does not check.
    program = tmp_path / "wide_scan.fut"
    fields = ", ".join(f"x{k}" for k in range(24))
    others = ", ".join(f"y{k}" for k in range(24))
    sums = ", ".join(f"x{k} + y{k}" for k in range(24))
    program.write_text(
        f"entry main (xs: []f64) =\n"
        f"  let ys = scan (\\({fields}) ({others}) -> ({sums}))\n"
        f"                ({', '.join(['0f64'] * 24)})\n"
        f"                (map (\\x -> ({', '.join(['x'] * 24)})) xs)\n"
        f"  in map (\\({fields}) -> {' + '.join(f'x{k}' for k in range(24))}) ys\n")
    plans = [p for ps in _plans(program).values() for p in ps]
    scans = [launch for p in plans for launch in p.launches
             if launch.kernel.startswith("scan") and not launch.kernel.endswith("_init")]
    assert scans and all(launch.block == 128 for launch in scans), scans
    source = render_kernels_file(plans)
    nvcc_check(source, tmp_path)
    nvcc = shutil.which("nvcc")
    proc = subprocess.run([nvcc, "-cubin", "-arch=sm_90", str(tmp_path / "kernels.cu"),
                           "-o", str(tmp_path / "kernels.cubin")], capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 0, proc.stderr


def _gather_body(stms: tuple[ir.Stm, ...], index: ir.SubExp) -> ir.Stm:
    """A SegMap over gtid 40 < n whose body is `stms` then `xs[index]`."""
    x = v("x", 41)
    read = let(x, "f32", ir.Index(XS, (ir.DimFix(index),), LOC))
    body = ir.Body((*stms, read), (var(x),))
    op = SegMap("grid", SegSpace((v("gtid", 40),), (var(N),)), (ir.Prim("f32"),), body)
    return ir.Stm((ir.Param(v("res", 42), ir.ArrayT("f32", (var(N),))),), op)


def test_indices_one_below_a_positive_index_are_unchecked() -> None:
    """`xs[i - 1]` where `0 < i` holds, and `xs[n - i - 1]`, for `i < n`, need
    no bounds check; `xs[i - 1]` elsewhere does."""
    gtid, j, t, c = var(v("gtid", 40)), v("j", 50), v("t", 51), v("c", 52)
    minus_one = let(j, "i64", ir.BinOp("-", "i64", var(t), ir.Constant(1, "i64")))
    from_end = compile_segop(_gather_body(
        (let(t, "i64", ir.BinOp("-", "i64", var(N), gtid)), minus_one), var(j)), TYPES, Names())
    assert from_end.errors == ()
    y = v("y", 53)
    inner = ir.Body((let(t, "i64", ir.SubExpOp(gtid)), minus_one,
                     let(y, "f32", ir.Index(XS, (ir.DimFix(var(j)),), LOC))), (var(y),))
    zero = ir.Body((), (ir.Constant(0.0, "f32"),))
    for cond, branches, checked in [
            (ir.CmpOp("<", "i64", ir.Constant(0, "i64"), gtid), (inner, zero), False),
            (ir.CmpOp(">=", "i64", gtid, ir.Constant(1, "i64")), (inner, zero), False),
            (ir.CmpOp("<", "i64", ir.Constant(0, "i64"), gtid), (zero, inner), True),
            (ir.CmpOp("<", "i64", ir.Constant(-1, "i64"), gtid), (inner, zero), True)]:
        r = v("r", 54)
        stms = (let(c, "bool", cond),
                ir.Stm((p(r, "f32"),), ir.If(var(c), *branches, (ir.Prim("f32"),))))
        plan = compile_segop(_gather_body(stms, gtid), TYPES, Names())
        assert bool(plan.errors) == checked, (cond, checked)


def test_indices_in_bounds_by_the_host_definitions_of_sizes() -> None:
    """The host's definitions of its scalars (`defs`) settle more checks: a
    thread index below `k = n` indexes `xs: [n]`; `xs[i + 1]` under
    `if i < last` and `xs[last - i]`, `last` being `n - 1`; and a view's
    index check (`0 <= i && i < n`, an Assert) of a thread index.  Without
    the definitions, or with `<=` for `<`, each is checked."""
    gtid, k, last = var(v("gtid", 40)), v("k", 60), v("last", 61)
    defs = {k: ir.SubExpOp(var(N)), last: ir.BinOp("-", "i64", var(N), ir.Constant(1, "i64"))}
    types = {**TYPES, k: ir.Prim("i64"), last: ir.Prim("i64")}

    def errors(stms, index, dim=None, with_defs=True):
        stm = _gather_body(stms, index)
        op = replace(stm.exp, space=SegSpace((v("gtid", 40),), (dim or var(N),)))
        return compile_segop(replace(stm, exp=op), types, Names(),
                             defs=defs if with_defs else None).errors

    assert errors((), gtid, var(k)) == () and errors((), gtid, var(k), with_defs=False)
    t, c, y, r = v("t", 62), v("c", 63), v("y", 64), v("r", 65)
    inner = ir.Body((let(t, "i64", ir.BinOp("+", "i64", gtid, ir.Constant(1, "i64"))),
                     let(y, "f32", ir.Index(XS, (ir.DimFix(var(t)),), LOC))), (var(y),))
    zero = ir.Body((), (ir.Constant(0.0, "f32"),))
    for op, checked in (("<", False), ("<=", True)):
        stms = (let(c, "bool", ir.CmpOp(op, "i64", gtid, var(last))),
                ir.Stm((p(r, "f32"),), ir.If(var(c), inner, zero, (ir.Prim("f32"),))))
        assert bool(errors(stms, gtid)) == checked, op
    neg, rev = v("neg", 66), v("rev", 67)
    reverse = (let(neg, "i64", ir.BinOp("*", "i64", gtid, ir.Constant(-1, "i64"))),
               let(rev, "i64", ir.BinOp("+", "i64", var(last), var(neg))))
    assert errors(reverse, var(rev)) == () and errors(reverse, var(rev), with_defs=False)
    a, b, d, ok, chk = (v(n, 70 + j) for j, n in enumerate(("a", "b", "d", "ok", "chk")))
    view_check = (let(a, "bool", ir.CmpOp("<=", "i64", ir.Constant(0, "i64"), gtid)),
                  let(b, "bool", ir.BinOp("&", "bool", ir.Constant(True, "bool"), var(a))),
                  let(d, "bool", ir.CmpOp("<", "i64", gtid, var(k))),
                  let(ok, "bool", ir.BinOp("&", "bool", var(b), var(d))),
                  let(chk, "bool", ir.Assert(var(ok), "Index [{0}] out of bounds.", LOC, (gtid,))))
    assert errors(view_check, gtid) == ()
    (error,) = errors(view_check, gtid, with_defs=False)
    assert error.message == "Index [{0}] out of bounds."


# Sizes that types leave open (`?`) but the host code names: a transposition's
# are its source's, an `if`'s are those both branches name, a SegMap's its
# space's; `size y 1` is then a second name for one of those.
SIZES_OPEN = """\
fun f(n_1: i64, m_2: i64, xss_3: [n_1][m_2]f32, c_4: bool) : ([?][?]f32) =
{
  let (t_5: [?][?]f32) = rearrange (1, 0) xss_3
  let (y_6: [m_2][?]f32) =
    if c_4 : ([m_2][?]f32)
    then
    {
      let (z_7: [m_2][?]f32) =
        segmap grid (gtid_8 < m_2, gtid_9 < n_1)
        : (f32)
        {
          let (a_10: f32) = t_5[gtid_8, gtid_9]
          in (a_10)
        }
      in (z_7)
    }
    else
    {
      in (t_5)
    }
  let (k_11: i64) = size y_6 1
  let (w_12: [m_2][k_11]f32) =
    segmap grid (gtid_13 < m_2, gtid_14 < k_11)
    : (f32)
    {
      let (b_15: f32) = y_6[gtid_13, gtid_14]
      let (d_16: f32) = xss_3[gtid_14, gtid_13]
      let (e_17: f32) = +.f32 b_15 d_16
      in (e_17)
    }
  in (w_12)
}
"""


def test_the_host_names_sizes_that_types_leave_open() -> None:
    """Kernels read `t = transpose xss` and the `if`'s result by thread
    indices bounded by the sizes the host knows them by, unchecked, and
    take no dimensions of them as parameters."""
    from futgen.codegen.host import compile_host
    from futgen.gpu.read import read_program

    plans = compile_host(read_program(SIZES_OPEN), compile_segop).plans
    assert [p.errors for p in plans] == [(), ()]
    assert not any("_dim" in a.value for p in plans for la in p.launches for a in la.args)


INTRA = Path(__file__).parents[1] / "programs/versions/intra.fut"


def _block_body(fn: str) -> ir.Body:
    """The block code of `fn`'s (first) intra-block version in intra.fut."""
    from futgen.core import load
    from futgen.pipeline import run_passes

    [f] = [f for f in run_passes(load(str(INTRA))).functions if f.name == fn]
    stack = [f.body]
    while stack:
        for s in stack.pop().stms:
            match s.exp:
                case SegMap(level="blocks", body=b):
                    return b
                case ir.If(_, then_, else_, _):
                    stack += [then_, else_]
    raise AssertionError(f"{fn} has no intra-block version")


def test_maps_reading_a_block_scan_at_their_own_point_run_in_its_second_pass() -> None:
    """intra.fut's `scan_maps`: both block maps after a block scan read its
    values only at their own point, so each is the scan's `PostMap`; the
    first's scan is read again later (at a neighbour), so its values are
    still stored, the second's not.  A map reading a scan at a neighbour
    (`c`, after the first map) is no PostMap."""
    from futgen.codegen.cuda.intra import post_map

    body = _block_body("scan_maps")
    stms = body.stms
    posts = [post_map(stms[k], stms[k + 1], (stms[k + 2:], body.result))
             for k in range(len(stms) - 1)]
    assert [(type(s.exp).__name__, None if m is None else m.keep)
            for s, m in zip(stms, posts) if m is not None or isinstance(s.exp, SegScan)] == [
        ("SegScan", True), ("SegScan", False)]
    plans = _plans(INTRA)["scan_maps"]
    # one per PostMap in each of the kernel's four variants (blocks or groups
    # of lanes, 32- or 64-bit indices)
    assert sum(p.source.count("futgen_group_sync<FUTGEN_GROUPS>();") for p in plans) == 8
    # and a thread whose fold failed skips its second pass: no map on its values
    assert sum(p.source.count("(failed ? lo_") for p in plans) == 8


def test_intra_kernels_come_in_32_and_64_bit_indices() -> None:
    """wide_indices.fut's intra-block kernel: four variants (blocks or groups,
    FUTGEN_IDX int32_t or int64_t), the 32-bit ones launched where the space,
    the int64 arguments and the arrays fit NARROW_LIMIT; thread indices,
    parameters and `m - 1 - i` in the index type, a product of indices and a
    sum beyond NARROW_WEIGHT parameters in int64_t."""
    from futgen.codegen.cuda.lower import NARROW_LIMIT

    plans = _plans(ROOT / "tests" / "programs" / "kernels" / "wide_indices.fut")["main"]
    [plan] = [p for p in plans if any(la.kernel.startswith("intra_") for la in p.launches)]
    kernels = [la.kernel.split("_", 2)[-1] if la.kernel.count("_") > 1 else ""
               for la in plan.launches]
    assert kernels == ["", "groups", "wide", "groups_wide"]
    narrow, groups, wide, groups_wide = (la.when for la in plan.launches)
    fits = f"<= {NARROW_LIMIT}"
    assert narrow.endswith(fits) and ".size" in narrow and "abs(k_" in narrow
    assert groups.endswith(fits) and " < 32 and " in groups
    assert wide.endswith(f"{fits})") and "and not (max(" in wide
    assert groups_wide.endswith(f"{fits})") and " < 32 and not (max(" in groups_wide
    source = plan.source
    narrow_kernel = source[source.index("#define FUTGEN_IDX int32_t"):]
    narrow_kernel = narrow_kernel[:narrow_kernel.index("#undef FUTGEN_GROUPS")]
    assert re.search(r"int64_t k_\d+_arg", narrow_kernel)
    assert re.search(r"const FUTGEN_IDX k_\d+ = \(\(FUTGEN_IDX\)k_\d+_arg\);", narrow_kernel)
    assert re.search(r"FUTGEN_IDX ltid_\d+ = l_\d+;", narrow_kernel)
    assert re.search(r"FUTGEN_IDX x_\d+ = fut_sub_i64\(x_\d+, x_\d+\);", narrow_kernel)  # m-1-i
    assert re.search(r"FUTGEN_IDX x_\d+ = fut_add_i64\(x_\d+, k_\d+\);", narrow_kernel)  # i+k
    assert re.search(r"int64_t x_\d+ = fut_mul_i64\(x_\d+, \(\(int64_t\)3\)\);",
                     narrow_kernel)  # (i + k) * 3: weight 6
    assert re.search(r"int64_t x_(\d+) = fut_mul_i64\(x_(\d+), x_\2\);", narrow_kernel)  # i * i


def test_narrow_bounds() -> None:
    """`_narrow_exp`: sums add weights and constants, constants scale them,
    min and max take the larger, beyond NARROW_WEIGHT or NARROW_CONSTANT
    (or any other operation) nothing is known."""
    from futgen.codegen.cuda.lower import NARROW_CONSTANT, _narrow_exp

    bounds = {"i": (1, 0), "n": (1, 0), "x": None}

    def bound(se):
        if isinstance(se, ir.Constant):
            return (0, abs(int(se.value)))
        return bounds[se.name.base]

    v = {k: ir.Var(ir.VName(k, 0)) for k in bounds}
    one = ir.Constant(1, "i64")
    assert _narrow_exp(ir.BinOp("-", "i64", v["n"], v["i"]), bound) == (2, 0)
    assert _narrow_exp(ir.BinOp("+", "i64", v["i"], one), bound) == (1, 1)
    assert _narrow_exp(ir.BinOp("*", "i64", v["i"], ir.Constant(-4, "i64")), bound) == (4, 0)
    assert _narrow_exp(ir.BinOp("*", "i64", v["i"], ir.Constant(5, "i64")), bound) is None
    assert _narrow_exp(ir.BinOp("max", "i64", v["i"], one), bound) == (1, 1)
    assert _narrow_exp(ir.BinOp("*", "i64", v["i"], v["n"]), bound) is None
    assert _narrow_exp(ir.BinOp("+", "i64", v["i"], v["x"]), bound) is None
    big = ir.Constant(NARROW_CONSTANT + 1, "i64")
    assert _narrow_exp(ir.BinOp("+", "i64", v["i"], big), bound) is None
    assert _narrow_exp(ir.UnOp("neg", "i64", v["i"]), bound) == (1, 0)
    assert _narrow_exp(ir.BinOp("/", "i64", v["i"], one), bound) is None


def test_grid_stride_loops_stay_rolled() -> None:
    """Every loop of a kernel over its points (plain, segmented, intra-block)
    in intra.fut is `#pragma unroll 1`: most threads run it once, and
    unrolled, nvcc loads later points' values into registers ahead."""
    sources = [p.source for ps in _plans(INTRA).values() for p in ps]
    loops = [src.splitlines()[i - 1].strip() for src in sources
             for i, line in enumerate(src.splitlines())
             if re.search(r"for \(int64_t (point|flat|seg)_\d+ = ", line)]
    assert len(loops) > 4 and set(loops) == {"#pragma unroll 1"}


def test_a_scan_whose_operator_reads_a_block_array_keeps_its_map_apart() -> None:
    """The map's results may take the shared memory of an array that dies at
    the scan, and a PostMap runs beside the scan's operator: an operator
    reading a block array (which the front end does not make today) is no
    place for one."""
    from dataclasses import replace

    from futgen.codegen.cuda.intra import post_map

    body = _block_body("scan_maps")
    k = next(i for i, s in enumerate(body.stms) if isinstance(s.exp, SegScan))
    scan, after, later = body.stms[k], body.stms[k + 1], (body.stms[k + 2:], body.result)
    assert post_map(scan, after, later) is not None
    block_array = body.stms[0].pat[0].name
    [o] = scan.exp.ops
    read = ir.Stm((ir.Param(ir.VName("z", 99_999), ir.Prim("f64")),),
                  ir.Index(block_array, (ir.DimFix(ir.Constant(0, "i64")),)))
    lam = replace(o.lam, body=replace(o.lam.body, stms=(read, *o.lam.body.stms)))
    reading = replace(scan, exp=replace(scan.exp, ops=(replace(o, lam=lam),)))
    assert post_map(reading, after, later, shared={block_array}) is None
    assert post_map(reading, after, later) is not None  # a global array


def test_every_access_to_a_block_array_is_at_its_padded_position() -> None:
    """Block arrays in shared memory have an element of padding every 32
    (gpu.ir's SHARED_PAD_SHIFT), so a scan's runs of consecutive elements
    per thread do not share banks: every load and store of one, in every
    intra-block kernel of intra.fut and LocVolCalib's shape (locvol.fut),
    is at `i + (i >> 5)`; the host sizes each slot for the padding too."""
    from futgen.gpu.ir import SHARED_PAD_SHIFT

    accesses = 0
    for path in (INTRA, INTRA.parent / "locvol.fut"):
        for fn, plans in _plans(path).items():
            for plan in plans:
                if "futgen_shared" not in plan.source:
                    continue
                arrays = set(re.findall(r"float \* (\w+_shared_\d+) =|\w+ \* (\w+_shared_\d+) =",
                                        plan.source))
                names = {a or b for a, b in arrays}
                for name in names:
                    for index in re.findall(rf"\b{name}\[([^\]]*)\]", plan.source):
                        accesses += 1
                        assert any(index == f"({i} + ({i} >> {SHARED_PAD_SHIFT}))"
                                   for i in _prefixes(index)), (fn, name, index)
                sized = [e for n, e, _ in plan.lets if n.startswith("point_shared")]
                assert sized and all(f">> {SHARED_PAD_SHIFT}" in e for e in sized), fn
    assert accesses > 50


def _prefixes(index: str) -> list[str]:
    """The candidates X of an index written `(X + (X >> k))`."""
    return [index[1:m.start()] for m in re.finditer(r" \+ \(", index)]
