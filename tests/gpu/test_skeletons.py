"""The CUDA skeletons (reductions, scans, histograms, scatters, tiled matrix
products) against the interpreter, on the GPU.

Sizes 0, 1, odd, powers of two and around tile boundaries; segmented
reductions and histograms under every strategy (thresholds forced through
`tuning=`); inputs above 2^31 bytes.  Run on the GPU machine: `pytest -m gpu`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pytest

from futgen.codegen.package import build_package
from futgen.frontend import load
from futgen.interp.interpreter import Interpreter
from futgen.testing.compiled import import_package

pytestmark = pytest.mark.gpu
# The same checks on the CPU backend, to try them without a GPU.
BACKEND = os.environ.get("FUTGEN_SKELETON_BACKEND", "cuda")

PROGRAMS = Path(__file__).resolve().parents[1] / "programs" / "kernels"
PROGRAM = PROGRAMS / "reductions.fut"
WRITES = PROGRAMS / "writes.fut"
PRODUCTS = PROGRAMS / "products.fut"
TRANSPOSES = PROGRAMS / "transposes.fut"
SIZES = [0, 1, 7, 256, 2047, 2048, 2049, 1 << 16, (1 << 20) + 3]
BIG = 2_000_000_000
SHAPES = [(0, 5), (3, 0), (1, 1), (7, 3), (5, 16), (33, 17), (4, 2048), (2, 5000), (1, 1 << 20),
          (1 << 12, 100)]


def _package(factory: pytest.TempPathFactory, program: Path, name: str):
    """`program` built into a package named `name` and imported."""
    return import_package(build_package(program, factory.mktemp(name) / "pkg", name=name))


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory):
    return _package(tmp_path_factory, PROGRAM, "skeletons")


@pytest.fixture(scope="module")
def interp() -> Interpreter:
    return Interpreter(load(PROGRAM))


@pytest.fixture(scope="module")
def writes(tmp_path_factory: pytest.TempPathFactory):
    return _package(tmp_path_factory, WRITES, "writes")


@pytest.fixture(scope="module")
def writes_interp() -> Interpreter:
    return Interpreter(load(WRITES))


@pytest.fixture(scope="module")
def products(tmp_path_factory: pytest.TempPathFactory):
    return _package(tmp_path_factory, PRODUCTS, "products")


@pytest.fixture(scope="module")
def products_interp() -> Interpreter:
    return Interpreter(load(PRODUCTS))


@pytest.fixture(scope="module")
def transposes(tmp_path_factory: pytest.TempPathFactory):
    return _package(tmp_path_factory, TRANSPOSES, "transposes")


@pytest.fixture(scope="module")
def transposes_interp() -> Interpreter:
    return Interpreter(load(TRANSPOSES))


def _want(interp: Interpreter, entry: str, args: list):
    """The interpreter's results as a generated module returns them."""
    results = interp.call(entry, [np.array(a) if isinstance(a, np.ndarray) else a
                                  for a in args])  # it consumes destinations
    return results[0] if len(results) == 1 else tuple(results)


def _same(got, want, entry: str) -> None:
    if isinstance(want, tuple):
        for g, w in zip(got, want, strict=True):
            _same(g, w, entry)
        return
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, entry
    if want.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3 * max(1, want.size) ** 0.5,
                                   err_msg=entry)
    else:
        np.testing.assert_array_equal(got, want, err_msg=entry)


def _check(lib, interp, entry: str, *args) -> None:
    got = getattr(lib.Skeletons(backend=BACKEND), entry)(*args)
    _same(got, _want(interp, entry, list(args)), entry)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("entry", ["sum_f32", "sum_i32", "sum_squares", "min_max", "compose",
                                   "sum_and_doubled", "prefix_sum", "prefix_i64",
                                   "prefix_compose"])
def test_one_dimension(lib, interp, entry: str, n: int) -> None:
    rng = np.random.default_rng(n)
    ints = rng.integers(-1000, 1000, n)
    args = {"sum_f32": rng.random(n, dtype=np.float32), "sum_squares": rng.random(n, np.float32),
            "prefix_sum": rng.random(n, np.float32), "sum_and_doubled": ints,
            "prefix_i64": ints}.get(entry, ints.astype(np.int32))
    _check(lib, interp, entry, args)


@pytest.mark.parametrize("strategy", ["block", "warp", "subwarp", "thread"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("entry", ["row_sums", "row_compose"])
def test_segmented_strategies(lib, interp, entry: str, shape: tuple[int, int],
                              strategy: str) -> None:
    params = [k for k in lib.TUNING_PARAMS if k.startswith(f"{entry}.")]
    block = next(k for k in params if ".segred_block" in k)
    warp = next(k for k in params if ".segred_warp" in k)
    lanes = next(k for k in params if ".segred_subwarp" in k)
    big = 2_000_000_000
    tuning = {"block": {block: 1}, "warp": {block: big, warp: 1},
              "subwarp": {block: big, warp: big, lanes: 1},
              "thread": {block: big, warp: big, lanes: big}}[strategy]
    rng = np.random.default_rng(shape[0] * 7919 + shape[1])
    xss = (rng.random(shape, np.float32) if entry == "row_sums"
           else rng.integers(-50, 50, shape).astype(np.int32))
    instance = lib.Skeletons(backend=BACKEND, tuning=tuning)
    got = getattr(instance, entry)(xss)
    _same(got, _want(interp, entry, [xss]), entry)


@pytest.mark.skipif(BACKEND != "cuda", reason="device arrays at odd addresses")
@pytest.mark.parametrize("entry, shape", [("sum_f32", (4099,)), ("sum_squares", (1 << 20,)),
                                          ("row_sums", (3, 4096)), ("row_sums", (2, 5001))])
def test_inputs_not_aligned_for_vectors(lib, interp, entry: str, shape: tuple) -> None:
    """Full tiles are read as 16-byte vectors only where the arrays are
    aligned (and rows a multiple of four long); a view one element into an
    allocation takes the scalar loads, with the same results."""
    from pycuda import gpuarray

    size = int(np.prod(shape))
    host = np.random.default_rng(size).random(size + 1, dtype=np.float32)
    view = gpuarray.to_gpu(host)[1:].reshape(shape)
    assert int(view.gpudata) % 16 != 0
    tuning = {k: 1 for k in lib.TUNING_PARAMS if ".segred_block" in k}  # blocks per row
    got = getattr(lib.Skeletons(backend="cuda", tuning=tuning), entry)(view)
    _same(got, _want(interp, entry, [host[1:].reshape(shape)]), entry)


@pytest.mark.parametrize("strategy", ["flags", "thread"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_segmented_scans(lib, interp, shape: tuple[int, int], strategy: str) -> None:
    [flags] = [k for k in lib.TUNING_PARAMS if k.startswith("row_prefix.segscan_flags")]
    instance = lib.Skeletons(backend=BACKEND, tuning={flags: 1 if strategy == "flags" else BIG})
    xss = (np.arange(shape[0] * shape[1], dtype=np.int64) % 11).astype(np.int32).reshape(shape)
    _same(instance.row_prefix(xss), _want(interp, "row_prefix", [xss]), "row_prefix")
    if shape[1] <= 5000:  # a non-commutative tuple operator (the thread version is slow)
        args = [xss]
        [flags] = [k for k in lib.TUNING_PARAMS if k.startswith("row_prefix_compose.")]
        instance = lib.Skeletons(backend=BACKEND,
                                 tuning={flags: 1 if strategy == "flags" else BIG})
        _same(instance.row_prefix_compose(*args), _want(interp, "row_prefix_compose", args),
              "row_prefix_compose")


def test_above_two_gibibytes(lib) -> None:
    """2^29 + 1 i32 (2^31 + 4 bytes): 64-bit indexing all through."""
    n = (1 << 29) + 1
    xs = (np.arange(n, dtype=np.int64) % 1000 - 500).astype(np.int32)
    want = xs.sum(dtype=np.int32)  # wraps as Futhark's i32 addition does
    assert lib.Skeletons(backend=BACKEND).sum_i32(xs) == want
    head = xs[: 1 << 28].astype(np.int64)  # 2^31 bytes of i64
    prefix = lib.Skeletons(backend=BACKEND).prefix_i64(head)
    np.testing.assert_array_equal(prefix[-3:], np.cumsum(head)[-3:])


HISTOGRAMS = [(0, 5), (1, 1), (7, 3), (1000, 0), (2049, 256), (1 << 16, 1), (1 << 16, 5000),
              ((1 << 20) + 3, 256), ((1 << 20) + 3, 1 << 20)]


def _hist_args(entry: str, n: int, k: int) -> list:
    """Bins with some out of range (skipped), values whose combination is exact
    in any order (but the product's, which is close)."""
    rng = np.random.default_rng(n * 31 + k)
    bins = rng.integers(-2, k + 2, n)
    small = rng.integers(0, 8, n)
    return {
        "hist_f32_add": [k, bins, small.astype(np.float32)],
        "hist_i64_add": [k, bins, rng.integers(-1 << 40, 1 << 40, n)],
        "hist_i32_max": [rng.integers(-100, 100, k).astype(np.int32), bins,
                         rng.integers(-1 << 31, 1 << 31, n).astype(np.int32)],
        "hist_u32_min": [k, bins, rng.integers(0, 1 << 32, n).astype(np.uint32)],
        "hist_f32_max": [k, bins, rng.standard_normal(n).astype(np.float32)],
        "hist_f64_mul": [rng.uniform(0.5, 2, k), bins, rng.uniform(0.999, 1.001, n)],
    }[entry]


@pytest.mark.parametrize("strategy", ["shared", "global"])
@pytest.mark.parametrize(("n", "k"), HISTOGRAMS, ids=str)
@pytest.mark.parametrize("entry", ["hist_f32_add", "hist_i64_add", "hist_i32_max",
                                   "hist_u32_min", "hist_f32_max", "hist_f64_mul"])
def test_histograms(writes, writes_interp, entry: str, n: int, k: int, strategy: str) -> None:
    [param] = [p for p in writes.TUNING_PARAMS if p.startswith(f"{entry}.seghist_shared")]
    instance = writes.Writes(backend=BACKEND, tuning={param: 1 if strategy == "shared" else BIG})
    args = _hist_args(entry, n, k)
    _same(getattr(instance, entry)(*args), _want(writes_interp, entry, args), entry)


@pytest.mark.parametrize(("n", "k"), [(0, 5), (1, 1), (7, 3), (1000, 0), (2049, 256),
                                      (1 << 16, 1), ((1 << 20) + 3, 5000)], ids=str)
@pytest.mark.parametrize("entry", ["hist_pair", "hist_i8_add", "hist_f16_max"])
def test_histograms_under_locks(writes, writes_interp, entry: str, n: int, k: int) -> None:
    """Tuples and 8- and 16-bit values: no atomic, a lock per bin."""
    rng = np.random.default_rng(n * 7 + k)
    bins = rng.integers(-2, k + 2, n)
    values = {"hist_pair": rng.integers(-1000, 1000, n).astype(np.int32),
              "hist_i8_add": rng.integers(-128, 128, n).astype(np.int8),  # wraps, exactly
              "hist_f16_max": rng.standard_normal(n).astype(np.float16)}[entry]
    args = [k, bins, values]
    got = getattr(writes.Writes(backend=BACKEND), entry)(*args)
    _same(got, _want(writes_interp, entry, args), entry)


def test_histogram_of_computed_bins_and_its_errors(writes, writes_interp) -> None:
    xs = np.arange(5000, dtype=np.int32) * 3
    rng = np.random.default_rng(5)
    for strategy in (1, BIG):
        [param] = [p for p in writes.TUNING_PARAMS if p.startswith("hist_gather.")]
        lib = writes.Writes(backend=BACKEND, tuning={param: strategy})
        is_ = rng.integers(0, 5000, 100_000)
        _same(lib.hist_gather(37, xs, is_), _want(writes_interp, "hist_gather", [37, xs, is_]),
              "hist_gather")
        is_[77_777] = 5000
        with pytest.raises(Exception, match=r"Index \[5000\] out of bounds"):
            lib.hist_gather(37, xs, is_)
        assert lib.hist_gather(3, xs, is_[:10]).sum() == xs[is_[:10]].sum()  # and on it goes


@pytest.mark.parametrize(("n", "k"), [(0, 0), (0, 4), (1, 1), (7, 20), (2049, 4096),
                                      (1 << 16, 1 << 16), ((1 << 20) + 3, 1 << 21)], ids=str)
def test_scatters(writes, writes_interp, n: int, k: int) -> None:
    rng = np.random.default_rng(n + k)
    # Distinct positions in range (two writes to one position may leave either
    # value), and some out of bounds, which are skipped.
    is_ = rng.permutation(k + 2)[:n] - 1
    dest, vs = rng.random(k, np.float32), rng.random(len(is_), np.float32)
    _same(writes.Writes(backend=BACKEND).scatter_f32(dest, is_, vs),
          _want(writes_interp, "scatter_f32", [dest, is_, vs]), "scatter_f32")
    rows = max(1, k // 64)
    dest2 = rng.integers(0, 9, (rows, 64)).astype(np.int32)
    flat = rng.permutation(rows * 64)[:n]
    is2, js = flat // 64, flat % 64
    is2[: n // 10] = rows  # out of bounds
    vs2 = rng.integers(-9, 0, len(flat)).astype(np.int32)
    args = [dest2, is2, js, vs2]
    _same(writes.Writes(backend=BACKEND).scatter_2d_i32(*args),
          _want(writes_interp, "scatter_2d_i32", args), "scatter_2d_i32")


def test_writes_above_two_gibibytes(writes) -> None:
    """A histogram of 2^28 + 1 i64 (2^31 + 8 bytes) and a scatter into 2^29 + 1
    f32: 64-bit indexing all through."""
    n = (1 << 28) + 1
    values = np.ones(n, np.int64)
    bins = np.arange(n, dtype=np.int64) % 256
    got = writes.Writes(backend=BACKEND).hist_i64_add(256, bins, values)
    assert got[0] == n // 256 + 1 and got[1:].tolist() == [n // 256] * 255
    dest = np.zeros((1 << 29) + 1, np.float32)
    is_ = np.array([0, len(dest) - 1, len(dest)], np.int64)
    out = writes.Writes(backend=BACKEND).scatter_f32(dest, is_, np.array([1, 2, 3], np.float32))
    assert out[0] == 1 and out[-1] == 2 and out.sum() == 3


PRODUCT_SHAPES = [(1, 1, 1), (0, 5, 3), (3, 0, 4), (4, 6, 0), (7, 9, 5), (128, 8, 128),
                  (129, 17, 257), (300, 1, 64), (64, 1000, 100), (513, 33, 130),
                  (5, 4099, 3),  # 65 chunks of 64 when split, the last one short
                  (33, 513, 65), (17, 1030, 8)]  # split from 512 iterations


@pytest.mark.parametrize("version", ["large tiles", "small tiles", "short tiles", "split",
                                     "split 32", "split 16", "plain"])
@pytest.mark.parametrize("shape", PRODUCT_SHAPES, ids=str)
@pytest.mark.parametrize("entry", ["matmul", "matmul_columns", "gemm", "max_plus_and_product"])
def test_matrix_products(products, products_interp, entry: str, shape: tuple[int, int, int],
                         version: str) -> None:
    if entry == "max_plus_and_product" and np.prod(shape) > 600_000:
        pytest.skip("the interpreter folds tuples one at a time: too slow a reference")
    tuning = _product_tuning(products, entry, version)
    lib = products.Products(backend=BACKEND, tuning=tuning)
    n, m, p = shape
    rng = np.random.default_rng(n * 10007 + m * 101 + p)
    dtype = {"matmul_columns": np.float64, "max_plus_and_product": np.int64}.get(entry, np.float32)
    xss = rng.integers(-8, 8, (n, m)).astype(dtype)  # exact in any order of additions
    yss = rng.integers(-8, 8, (m, p)).astype(dtype)
    args = [xss, yss]
    if entry == "gemm":
        args = [np.float32(0.5), np.float32(-2), xss, yss, rng.random((n, p), np.float32)]
    key = (entry, shape)
    if key not in _PRODUCTS_WANTED:  # the same for both versions
        _PRODUCTS_WANTED[key] = _want(products_interp, entry, args)
    _same(getattr(lib, entry)(*args), _PRODUCTS_WANTED[key], entry)


_PRODUCTS_WANTED: dict = {}


def _product_tuning(products, entry: str, version: str) -> dict[str, int]:
    """The thresholds that force `version` of the tiled products of `entry`."""
    params = [p for p in products.TUNING_PARAMS if p.startswith(f"{entry}.segmap_tile")]
    side = next(p for p in params if re.fullmatch(rf"{entry}\.segmap_tile_\d+", p))
    tuning = {side: BIG if version == "plain" else 1}
    for large in (p for p in params if "segmap_tile_large" in p):
        tuning[large] = 1 if version == "large tiles" else BIG
    splits = [p for p in products.TUNING_PARAMS if p.startswith(f"{entry}.segmap_unsplit")]
    split = version.startswith("split")
    if split and not splits:
        pytest.skip("not a sum: no split kernel")
    tuning.update(dict.fromkeys(splits, BIG if split else 0))
    for key in (p for p in products.TUNING_PARAMS if p.startswith(f"{entry}.segmap_tile_square")):
        tuning[key] = BIG if version == "short tiles" else 1  # 16 points along the short side
    for side in (64, 32):  # the split kernel's tiles: 64 x 64, 32 x 32 or 16 x 16
        for key in (p for p in products.TUNING_PARAMS
                    if p.startswith(f"{entry}.segmap_split_{side}_")):
            tuning[key] = 1 if version == ("split" if side == 64 else f"split {side}") else BIG
    return tuning


@pytest.mark.parametrize("version", ["large tiles", "small tiles", "short tiles", "split",
                                     "split 32", "split 16", "plain"])
def test_tiled_reads_out_of_bounds_fail(products, version: str) -> None:
    """The tiled kernels bounds-check a tile's reads at its corners, then load
    it unchecked: a loop that runs past the arrays fails with the index, and
    the next call runs; one that stops short sums what it reads."""
    lib = products.Products(backend=BACKEND, tuning=_product_tuning(products, "product_upto",
                                                                    version))
    rng = np.random.default_rng(5)
    for n, m, p in [(70, 600, 40), (20, 33, 300), (24, 700, 9), (3, 700, 5)]:
        xss = rng.integers(-8, 8, (n, m)).astype(np.float32)
        yss = rng.integers(-8, 8, (m, p)).astype(np.float32)
        with pytest.raises(Exception, match=rf"Index \[(\d+, )?{m}(, \d+)?\] out of bounds"):
            lib.product_upto(m + 1, xss, yss)
        for q in (m, m // 2, 0):
            np.testing.assert_array_equal(lib.product_upto(q, xss, yss),
                                          xss[:, :q].astype(np.float64) @ yss[:q])


def test_short_loops_are_not_split(products) -> None:
    """Below SPLIT_FROM iterations the split guard is not compared (nor
    logged for the tuner): each block runs the whole loop, whatever the
    tiles."""
    if BACKEND != "cuda":
        pytest.skip("the CPU backend has no tiled kernels, so no such guard")
    outer = next(k for k in products.TUNING_PARAMS if k.startswith("matmul.suff_outer_par"))
    lib = products.Products(backend=BACKEND, tuning={outer: 0})
    rng = np.random.default_rng(3)
    for m, compared in [(500, False), (600, True)]:
        xss, yss = (rng.integers(-4, 4, s).astype(np.float32) for s in [(40, m), (m, 40)])
        np.testing.assert_array_equal(lib.matmul(xss, yss), xss.astype(np.float64) @ yss)
        names = [name for name, _, _ in lib.last_guards]
        assert any("segmap_unsplit" in name for name in names) == compared, names


def test_tiled_product_and_segmented_scan_above_two_gibibytes(lib, products) -> None:
    """A tiled product reading a (2^15 + 1) x 2^14 f32 matrix (2^31 + 2^16 bytes) and a
    flagged segmented scan of 2 x (2^28 + 1) i32 (2^31 + 8 bytes): 64-bit indexing
    all through.  Small integers keep every sum exact, so NumPy is the reference."""
    if BACKEND != "cuda":
        pytest.skip("2^46 multiply-adds: the CPU backend would take hours")
    rng = np.random.default_rng(31)
    xss = rng.integers(-2, 3, ((1 << 15) + 1, 1 << 14)).astype(np.float32)
    yss = rng.integers(-2, 3, (1 << 14, 64)).astype(np.float32)
    params = [name for name, p in products.TUNING_PARAMS.items()
              if name.startswith("matmul.segmap_tile") and p["class"] == "threshold"]
    got = products.Products(backend=BACKEND, tuning=dict.fromkeys(params, 1)).matmul(xss, yss)
    rows = [0, 1, 12345, (1 << 15) - 1, 1 << 15]
    np.testing.assert_array_equal(got[rows], xss[rows].astype(np.float64) @ yss)
    del xss, got
    xss = np.ones((2, (1 << 28) + 1), np.int32)
    xss[1] = 2
    [flags] = [k for k in lib.TUNING_PARAMS if k.startswith("row_prefix.segscan_flags")]
    prefix = lib.Skeletons(backend=BACKEND, tuning={flags: 1}).row_prefix(xss)
    assert prefix[0, -1] == (1 << 28) + 1 and prefix[1, -1] == 2 * ((1 << 28) + 1)
    assert prefix[1, 0] == 2 and prefix[0, 12345] == 12346


# Tiles of 32 x 32 from 16 points a side (futgen/codegen/cuda/transposed.py):
# below, at and around a tile, and many tiles with ragged edges.
TRANSPOSE_SHAPES = [(0, 4), (3, 0), (1, 1), (2, 40), (15, 16), (16, 16), (17, 33), (32, 32),
                    (33, 31), (100, 257), (1000, 19), (512, 512)]


@pytest.mark.parametrize("shape", TRANSPOSE_SHAPES, ids=str)
@pytest.mark.parametrize("entry", ["add_transposed", "stencil_down", "batched", "batch_by_one",
                                   "both_ways", "two_down"])
def test_transposed_reads(transposes, transposes_interp, entry: str,
                          shape: tuple[int, int]) -> None:
    """Maps that read across their threads, tiled where both dimensions are
    16 or more, the plain kernel below: each as the interpreter has it."""
    n, m = shape
    if entry == "two_down" and n < 2:
        pytest.skip("iota (n - 2) of a negative size")
    rng = np.random.default_rng(n * 1009 + m)
    k = 1 + (n * m) % 37  # outer points sharing batch_by_one's tiles: a chunk, or several
    args = {"add_transposed": lambda: [rng.random((n, m), np.float32),
                                       rng.random((m, n), np.float32)],
            "stencil_down": lambda: [rng.random((n, m))],
            "batched": lambda: [rng.integers(-99, 99, (3, n, m)).astype(np.int32),
                                rng.integers(-99, 99, (3, m, n)).astype(np.int32)],
            "batch_by_one": lambda: [rng.random((k, n, m), np.float32),
                                     rng.random((m, n), np.float32)],
            "both_ways": lambda: [rng.integers(-99, 99, (n, n))],
            "two_down": lambda: [rng.random((n, m), np.float32)]}[entry]()
    got = getattr(transposes.Transposes(backend=BACKEND), entry)(*args)
    _same(got, _want(transposes_interp, entry, args), entry)


@pytest.mark.parametrize("shape", [(43, 512, 512), (37, 300, 700)], ids=str)
def test_tiles_shared_by_outer_points(transposes, transposes_interp,
                                      shape: tuple[int, int, int]) -> None:
    """A tile no outer index moves serves a chunk of outer points (on an
    H100 or H200, 1056 blocks resident: chunks of 5 and 3, the last ones
    short)."""
    rng = np.random.default_rng(sum(shape))
    k, n, m = shape
    args = [rng.random((k, n, m), np.float32), rng.random((m, n), np.float32)]
    got = transposes.Transposes(backend=BACKEND).batch_by_one(*args)
    _same(got, _want(transposes_interp, "batch_by_one", args), "batch_by_one")


@pytest.mark.parametrize("shape", [(40, 50), (5, 7), (300, 33)], ids=str)
def test_transposed_reads_off_the_end_fail(transposes, shape: tuple[int, int]) -> None:
    """A tiled read past the array's last row fails with its index, every
    thread of the block leaving together; the next call runs."""
    lib = transposes.Transposes(backend=BACKEND)
    n, m = shape
    xss = np.arange(n * m, dtype=np.int32).reshape(n, m)
    with pytest.raises(Exception, match=rf"Index \[{n}, \d+\] out of bounds for array "
                                        rf"of shape \[{n}\]\[{m}\]"):
        lib.off_the_end(xss)
    np.testing.assert_array_equal(lib.add_transposed(xss.astype(np.float32),
                                                     xss.T.astype(np.float32)),
                                  2 * xss.astype(np.float32))


STENCILS = PROGRAMS / "stencils.fut"


@pytest.fixture(scope="module")
def stencils(tmp_path_factory: pytest.TempPathFactory):
    return _package(tmp_path_factory, STENCILS, "stencils")


@pytest.mark.parametrize("shape", [(1, 1, 1), (2, 1, 5), (3, 7, 1), (5, 33, 65), (2, 300, 257)],
                         ids=str)
def test_stencil_reads_at_offsets_of_the_flat_index(stencils, shape) -> None:
    """Reads of the map's own shape at the thread's indices plus constants
    (addressed as the flat index plus an offset, the edges included), and
    of another shape (row-major), as the interpreter has them; a read past
    the end fails with its index."""
    interp = Interpreter(load(STENCILS))
    lib = stencils.Stencils(backend=BACKEND)
    k, n, m = shape
    rng = np.random.default_rng(k * n * m)
    xsss = rng.random(shape, np.float32)
    _same(lib.down_and_across(xsss), _want(interp, "down_and_across", [xsss]), "down_and_across")
    xss = rng.integers(-99, 99, (n, m)).astype(np.int32)
    yss = rng.integers(-99, 99, (n, m + 1)).astype(np.int32)
    _same(lib.other_shape(xss, yss), _want(interp, "other_shape", [xss, yss]), "other_shape")
    with pytest.raises(Exception, match=rf"Index \[{n}, \d+\] out of bounds"):
        lib.off_the_end(xss)


COORDINATES = PROGRAMS / "coordinates.fut"


@pytest.fixture(scope="module")
def coordinates(tmp_path_factory: pytest.TempPathFactory):
    return _package(tmp_path_factory, COORDINATES, "coordinates")


# More points than 8 waves of an H100 or H200 (about 2.2M threads), so that
# threads visit several points; dimensions of 1 and dimensions that the
# launch's stride does not divide, so that coordinates carry.
@pytest.mark.parametrize("shape", [(3, 1001, 997), (1, 1, 1), (5, 1, 600_001), (700_001, 3, 2),
                                   (2, 1 << 11, 1 << 10), (0, 4, 4)], ids=str)
def test_threads_visiting_several_points_have_their_coordinates(coordinates, shape) -> None:
    """Each point's coordinates, where threads loop over several points,
    as numpy has them."""
    lib = coordinates.Coordinates(backend=BACKEND)
    k, n, m = shape
    xsss = np.random.default_rng(k + n + m).integers(0, 9, shape).astype(np.float32)
    a, b, c = np.indices(shape, dtype=np.int64)
    np.testing.assert_array_equal(lib.points_3d(xsss),
                                  a * 1_000_000 + b * 1000 + c + xsss.astype(np.int64))
    xss = xsss.reshape(k * n, m).astype(np.int32)
    a, b = np.indices(xss.shape, dtype=np.int64)
    np.testing.assert_array_equal(lib.points_2d(xss), a * 100_000 + b + xss)


WIDE_INDICES = PROGRAMS / "wide_indices.fut"


@pytest.mark.skipif(BACKEND != "cuda", reason="intra-block kernels are CUDA's")
@pytest.mark.parametrize("shape", [(100, 257), (3, 1000), (1, 1)], ids=str)
def test_intra_kernels_index_in_32_bits_where_everything_fits(tmp_path_factory, shape) -> None:
    """The intra-block version of wide_indices.fut: its 32-bit variant for an
    i64 parameter within NARROW_LIMIT, its 64-bit one beyond (`i + k` would
    not fit), the interpreter's results from both."""
    from futgen.codegen.cuda.lower import NARROW_LIMIT

    lib = _package(tmp_path_factory, WIDE_INDICES, "wide_indices")
    intra = {n: 0 if "suff_intra_par" in n else BIG for n in lib.TUNING_PARAMS
             if "suff_" in n}
    inst = lib.WideIndices(backend="cuda", tuning=intra)
    b = inst._backend()
    ran: list[str] = []
    launch = b.launch_sig
    b.launch_sig = lambda kernel, *args: (ran.append(kernel), launch(kernel, *args))[1]
    interp = Interpreter(load(WIDE_INDICES))
    xss = np.random.default_rng(sum(shape)).integers(-9, 9, shape)
    for k, width in ((7, "narrow"), (NARROW_LIMIT, "narrow"), (NARROW_LIMIT + 1, "wide"),
                     (-(1 << 40), "wide")):
        ran.clear()
        _same(inst.main(xss, k), _want(interp, "main", [xss, k]), f"k = {k}")
        [kernel] = [r for r in ran if r.startswith("intra_")]
        assert kernel.endswith("_wide") == (width == "wide"), (k, kernel)


PRODUCERS = PROGRAMS / "producers.fut"


@pytest.fixture(scope="module")
def producers(tmp_path_factory: pytest.TempPathFactory):
    return _package(tmp_path_factory, PRODUCERS, "producers")


@pytest.fixture(scope="module")
def producers_interp() -> Interpreter:
    return Interpreter(load(PRODUCERS))


@pytest.mark.parametrize("version", ["intra", "outer", "flat"])
@pytest.mark.parametrize("shape", [(2, 5, 6), (3, 40, 300), (1, 1, 1), (5, 257, 33)],
                         ids=str)
def test_stencils_computed_by_the_rows_that_read_them(producers, producers_interp, shape,
                                                      version) -> None:
    """producers.fut in each version: the intra-block one computes the
    stencil itself (and writes it out for `kept`), the others read it;
    `across`'s producer (read across its threads) stays apart."""
    lib, interp = producers, producers_interp
    guards = [n for n in lib.TUNING_PARAMS if "suff_" in n]
    tuning = {"intra": {n: 0 if "suff_intra_par" in n else BIG for n in guards},
              "outer": {n: 0 for n in guards},
              "flat": {n: BIG for n in guards}}[version]
    inst = lib.Producers(backend=BACKEND, tuning=tuning)
    rng = np.random.default_rng(sum(shape))
    rss = rng.random(shape, np.float32)
    tss = rng.random((shape[0], shape[2], shape[1]), np.float32)
    for entry, args in (("kept", [rss]), ("used_once", [rss]), ("across", [rss, tss])):
        _same(getattr(inst, entry)(*args), _want(interp, entry, args), entry)


INVARIANT_ROWS = PROGRAMS / "invariant_rows.fut"


@pytest.fixture(scope="module")
def invariant_rows(tmp_path_factory: pytest.TempPathFactory):
    return _package(tmp_path_factory, INVARIANT_ROWS, "rows")


@pytest.fixture(scope="module")
def invariant_rows_interp() -> Interpreter:
    return Interpreter(load(INVARIANT_ROWS))


@pytest.mark.parametrize("version", ["hoisted", "intra", "flat"])
@pytest.mark.parametrize("shape", [(4, 3, 5), (300, 40, 256), (1, 1, 1), (3, 257, 33), (0, 2, 3)],
                         ids=str)
def test_rows_invariant_work_hoisted(invariant_rows, invariant_rows_interp, shape,
                                     version) -> None:
    """invariant_rows.fut with the rows' coefficients scanned once per row
    by a kernel of their own (`hoisted`), by every block (`intra`), or
    flattened."""
    lib, interp = invariant_rows, invariant_rows_interp
    guards = [n for n in lib.TUNING_PARAMS if "suff_" in n]
    intra = {n: 0 if "suff_intra_par" in n else BIG for n in guards}
    tuning = {"hoisted": {**intra, **{n: 0 for n in guards if "suff_hoisted" in n}},
              "intra": intra, "flat": {n: BIG for n in guards}}[version]
    inst = lib.Rows(backend=BACKEND, tuning=tuning)
    rng = np.random.default_rng(sum(shape))
    args = [np.float32(0.5), rng.random(shape[1:], np.float32), rng.random(shape, np.float32)]
    _same(inst.solve(*args), _want(interp, "solve", args), "solve")
