"""Generated packages: every example builds, imports and runs on the CPU
backend with the interpreter's results; bad calls fail before anything runs;
a wheel installs into a fresh venv.  The `gpu` tests run the same on CUDA."""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from futgen.codegen.package import build_package, build_wheel, class_name, default_name
from futgen.errors import UnsupportedFeature
from futgen.testing.compiled import import_package
from futgen.testing.runner import TestOptions, run_tests

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.fut"))

OOB = """
entry main (xs: []i32) (is: []i64) : []i32 =
  map (\\i -> xs[i] + 1) is
"""


@pytest.fixture(scope="module")
def dotprod(tmp_path_factory):
    out = tmp_path_factory.mktemp("pkg")
    return import_package(build_package(ROOT / "examples" / "dotprod.fut", out, name="dotprod"))


@pytest.fixture(scope="module")
def oob(tmp_path_factory):
    out = tmp_path_factory.mktemp("oob")
    src = out / "oob.fut"
    src.write_text(OOB)
    return import_package(build_package(src, out, name="oob"))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_every_example_builds(path, tmp_path):
    pkg = build_package(path, tmp_path, name=default_name(path))
    assert (pkg / "__init__.py").is_file() and (pkg / "kernels.cu").is_file()
    assert (pkg / "_futgen_runtime" / "__init__.py").is_file()
    module = import_package(pkg)
    assert module.ENTRY_POINTS and module.TUNING == {}
    # Strategy thresholds (segmented reductions, histograms) and block sizes
    # are listed with defaults.
    assert all(p["class"] in ("threshold", "tblock_size", "tile_size", "run_length")
               and p["default"] > 0
               for p in module.TUNING_PARAMS.values())
    assert hasattr(module, class_name(default_name(path)))


def test_examples_match_the_interpreter_on_the_cpu_backend():
    report = run_tests([ROOT / "examples"], TestOptions(backend="cpu", jobs=2))
    assert report.ok, str(report)
    assert all(r.status == "passed" for r in report.results), str(report)


def test_module_functions_and_results(dotprod):
    xs = np.array([1, 2, 3], np.float32)
    assert dotprod.main(xs, xs[::-1].copy()) == np.float32(10)
    inst = dotprod.Dotprod(backend="cpu")
    assert inst.backend == "cpu"
    # Any contiguity is accepted (a strided view is converted).
    strided = np.arange(6, dtype=np.int32)[::2]
    assert inst.dot_i32(strided, strided) == np.int32(0 + 4 + 16)
    assert dotprod.ENTRY_POINTS["main"] == (("xs", "ys"), ("[n]f32", "[n]f32"), ("f32",))


@pytest.mark.parametrize("args, error, words", [
    ((np.zeros(3, np.int32), np.zeros(3, np.float32)), TypeError, ["xs", "[]f32", "int32"]),
    ((np.zeros((3, 1), np.float32), np.zeros(3, np.float32)), TypeError, ["xs", "[]f32", "rank 2"]),
    ((np.zeros(3, np.float32), np.zeros(4, np.float32)), ValueError,
     ["xs: [n]f32", "ys: [n]f32", "invalid sizes: n"]),
    (([1.0, 2.0], np.zeros(2, np.float32)), TypeError, ["xs", "[]f32", "list"]),
    ((np.zeros(3, np.float32),), TypeError, ["ys", "[n]f32"]),
    ((np.zeros(1, np.float32),) * 3, TypeError, ["xs: [n]f32", "ys: [n]f32", "got 3"]),
])
def test_bad_calls_name_the_parameter_and_type(dotprod, args, error, words):
    inst = dotprod.Dotprod(backend="cpu")
    with pytest.raises(error) as info:
        inst.main(*args)
    for w in words:
        assert w in str(info.value)


def test_out_of_bounds_names_index_shape_and_line_then_recovers(oob):
    inst = oob.Oob(backend="cpu")
    xs = np.arange(5, dtype=np.int32)
    with pytest.raises(oob.FutharkError) as info:
        inst.main(xs, np.array([1, 7], np.int64))
    text = str(info.value)
    assert "Index [7] out of bounds for array of shape [5]" in text and ":3:" in text
    assert inst.main(xs, np.array([0, 4], np.int64)).tolist() == [1, 5]


def test_wheel_layout(tmp_path):
    pkg = build_package(ROOT / "examples" / "dotprod.fut", tmp_path / "out", name="mylib")
    wheel = build_wheel(pkg, tmp_path / "dist", version="1.2.3", images=False, log=lambda m: None)
    assert wheel.name == "mylib-1.2.3-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        meta = z.read("mylib-1.2.3.dist-info/METADATA").decode()
        record = z.read("mylib-1.2.3.dist-info/RECORD").decode()
    assert {"mylib/__init__.py", "mylib/kernels.cu", "mylib/_futgen_runtime/__init__.py",
            "mylib-1.2.3.dist-info/WHEEL"} <= names
    assert "Requires-Dist: numpy" in meta and 'Requires-Dist: pycuda; extra == "cuda"' in meta
    assert "Provides-Extra: cuda" in meta
    assert all(line.split(",")[1].startswith("sha256=") for line in record.splitlines()
               if not line.endswith("RECORD,,"))


@pytest.mark.slow
def test_wheel_installs_into_a_fresh_venv(tmp_path):
    pkg = build_package(ROOT / "examples" / "dotprod.fut", tmp_path / "out", name="mylib")
    wheel = build_wheel(pkg, tmp_path / "dist", version="0.1.0", images=False, log=lambda m: None)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)],
                   check=True)
    python = venv / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-index", "--no-deps",
                    str(wheel)], check=True)
    code = ("import numpy as np, mylib; "
            "print(mylib.Mylib(backend='cpu').main(np.ones(4, np.float32), "
            "np.arange(4, dtype=np.float32)))")
    done = subprocess.run([str(python), "-c", code], capture_output=True, text=True,
                          cwd=tmp_path, check=True)
    assert done.stdout.strip() == "6.0"


def test_unsupported_constructs_fail_at_build_time(tmp_path, monkeypatch):
    def refuse(stm, types, fresh, sizes=None, defs=None):
        raise UnsupportedFeature("SegScan of arrays", None)

    from futgen.codegen import package

    monkeypatch.setattr(package, "_cuda_codegen", lambda: (refuse, lambda plans: ""))
    with pytest.raises(UnsupportedFeature, match="SegScan of arrays"):
        build_package(ROOT / "examples" / "prefix_sum.fut", tmp_path)


# ---------------------------------------------------------------- on the GPU


@pytest.mark.gpu
def test_examples_match_the_interpreter_on_cuda():
    report = run_tests([ROOT / "examples"], TestOptions(backend="cuda"))
    print(str(report).splitlines()[-1])
    assert report.ok, str(report)


@pytest.mark.gpu
def test_out_of_bounds_kernel_on_cuda_then_recovers(oob):
    inst = oob.Oob(backend="cuda")
    xs = np.arange(5, dtype=np.int32)
    with pytest.raises(oob.FutharkError) as info:
        inst.main(xs, np.array([1, 7], np.int64))
    text = str(info.value)
    assert "Index [7] out of bounds for array of shape [5]" in text and ":3:" in text
    assert inst.main(xs, np.array([0, 4], np.int64)).tolist() == [1, 5]


@pytest.mark.gpu
def test_device_results_report_a_failure_later_then_recover(oob):
    """With results left on the device a call does not wait for its kernels:
    their failure is raised by that call if they have finished, else by a
    later call or `sync()`; either way once, and the instance goes on."""
    inst = oob.Oob(backend="cuda", device_results=True)
    xs = np.arange(5, dtype=np.int32)
    raised = []
    for call in (lambda: inst.main(xs, np.array([1, 7], np.int64)), inst.sync, inst.sync):
        try:
            call()
        except oob.FutharkError as e:
            raised.append(str(e))
    assert len(raised) == 1 and "Index [7] out of bounds for array of shape [5]" in raised[0]
    assert inst.main(xs, np.array([0, 4], np.int64)).get().tolist() == [1, 5]


EMPTY_ROWS = """
def rows (n: i64) (m: i64) = map (\\i -> replicate m (i32.i64 i)) (iota n)
entry grid (n: i64) (m: i64) : [][]i32 = rows n m
entry row_sums (n: i64) (m: i64) : []i32 = rows n m |> map i32.sum
"""


@pytest.mark.parametrize("backend", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_empty_outer_dimension_keeps_its_shape(tmp_path, backend):
    # Zero rows: results keep the inner sizes known outside the lambda, and a
    # segmented reduction over zero segments is an empty array, not a scalar.
    src = tmp_path / "empty_rows.fut"
    src.write_text(EMPTY_ROWS)
    inst = import_package(build_package(src, tmp_path, name="empty_rows")).EmptyRows(
        backend=backend)
    grid = inst.grid(np.int64(0), np.int64(3))
    assert grid.shape == (0, 3) and grid.dtype == np.int32
    sums = inst.row_sums(np.int64(0), np.int64(3))
    assert sums.shape == (0,) and sums.dtype == np.int32
    assert inst.row_sums(np.int64(2), np.int64(0)).tolist() == [0, 0]
    assert inst.row_sums(np.int64(2), np.int64(3)).tolist() == [0, 3]


def test_def_main_is_an_entry_point(tmp_path):
    # As in Futhark (and the interpreter), a non-local `def main` is an entry point.
    src = tmp_path / "plain.fut"
    src.write_text("def main (xs: []i32) : i32 = reduce (+) 0 xs\n")
    module = import_package(build_package(src, tmp_path, name="plain"))
    assert list(module.ENTRY_POINTS) == ["main"]
    assert module.Plain(backend="cpu").main(np.arange(4, dtype=np.int32)) == 6


ODD = """
entry point_free = map f32.sqrt
entry primed (xs': []f32) (k': f32) : []f32 = map (\\x -> x * k' + xs'[0]) xs'
"""


@pytest.mark.parametrize("backend", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_point_free_entries_and_primed_names(tmp_path, backend):
    # `entry f = map g` takes its array like any entry; names with primes
    # (odd in Python and C) reach the kernels under the same sanitised name.
    src = tmp_path / "odd.fut"
    src.write_text(ODD)
    inst = import_package(build_package(src, tmp_path, name="odd")).Odd(backend=backend)
    xs = np.array([1, 4, 9], np.float32)
    assert inst.point_free(xs).tolist() == [1, 2, 3]
    assert inst.primed(xs, np.float32(2)).tolist() == [3, 9, 19]


def test_array_literal_of_rows_and_entry_names(tmp_path):
    # Rows whose size is known only at run time; an entry name that is not a
    # Python identifier becomes a method named like it (f' -> f_), found
    # by its Futhark name through ENTRY_METHODS.
    src = tmp_path / "rows.fut"
    src.write_text("entry main (x: i32) : [][]i32 = [[1, x], [2, x]]\n")
    inst = import_package(build_package(src, tmp_path, name="rows")).Rows(backend="cpu")
    assert inst.main(np.int32(5)).tolist() == [[1, 5], [2, 5]]
    primed = tmp_path / "primed.fut"
    primed.write_text("entry f' (x: i32) : i32 = x + 1\nentry f_ (x: i32) : i32 = x + 2\n"
                      "entry class (x: i32) : i32 = x + 3\nentry sync (x: i32) : i32 = x + 4\n")
    module = import_package(build_package(primed, tmp_path, name="primed"))
    # `sync` is the instance's (and module's) wait for the device.
    assert module.ENTRY_METHODS == {"f'": "f__", "f_": "f_", "class": "class_", "sync": "sync_"}
    inst = module.Primed(backend="cpu")
    assert [getattr(inst, module.ENTRY_METHODS[e])(1)
            for e in ("f'", "f_", "class", "sync")] == [2, 3, 4, 5]
    inst.sync()
    module.sync()


def test_a_package_named_s_keeps_its_scalar_helpers(tmp_path):
    # The class of package `s` would be `S`, the name the module gives its
    # scalar helpers; it is `SProgram` instead, and scalar code still runs.
    src = tmp_path / "s.fut"
    src.write_text("entry main (x: i32) : i32 = x * 2 + 1\n")
    module = import_package(build_package(src, tmp_path / "out", name="s"))
    assert class_name("s") == "SProgram"
    assert class_name("none") == "NoneProgram" and class_name("true") == "TrueProgram"
    assert module.SProgram(backend="cpu").main(np.int32(20)) == 41


def test_a_failure_in_compiled_code_lists_the_host_calls_it_left(tmp_path: Path) -> None:
    """Calls between host functions are frames of the backtrace, innermost
    first, as the interpreter's (calls inlined into kernels are not)."""
    src = tmp_path / "calls.fut"
    src.write_text("def at (xs: []i32) (i: i64) = xs[i]\n"
                   "def twice (xs: []i32) (i: i64) = at xs i + at xs 0\n"
                   "entry main (xs: []i32) (i: i64) = twice xs (i + 1)\n")
    lib = import_package(build_package(src, tmp_path / "pkg", name="calls"))
    with pytest.raises(lib.FutharkError) as e:
        lib.Calls(backend="cpu").main(np.array([1, 2], np.int32), np.int64(1))
    assert str(e.value).endswith(f"Backtrace:\n-> #0  {src}:1:31\n-> #1  {src}:2:34\n"
                                 f"-> #2  {src}:3:35")


STEPS = """
entry steps (rates: []f32) (n: i64) : f32 =
  let rs = map (* 2f32) rates
  in loop acc = 0f32 for i < n do
       let r = rs[i]
       in if r > 0f32 then acc * 0.5 + r else acc + rs[i / 2]
"""


@pytest.mark.parametrize("backend", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_a_loop_reads_elements_of_an_outer_array_from_its_host_mirror(tmp_path, backend):
    """The loop's reads of `rs` (in the loop and in a branch) use one mirror,
    made before the loop; results and the out-of-bounds error are as before,
    for arrays small enough to copy (16 KiB of f32) and too large (256 KiB)."""
    src = tmp_path / "steps.fut"
    src.write_text(STEPS)
    pkg = build_package(src, tmp_path, name="steps")
    code = (pkg / "__init__.py").read_text()
    assert code.count("b.mirror(") == 1 and len(re.findall(r"b\.index\(\w*mirror", code)) == 2
    module = import_package(pkg)
    inst = module.Steps(backend=backend)
    rng = np.random.default_rng(5)
    for size in (4096, 65536):
        rates = rng.uniform(-1, 1, size).astype(np.float32)
        want = np.float32(0)
        for i in range(size):
            r = np.float32(2) * rates[i]
            want = want * np.float32(0.5) + r if r > 0 else want + np.float32(2) * rates[i // 2]
        assert inst.steps(rates, np.int64(size)) == want
        with pytest.raises(module.FutharkError) as info:
            inst.steps(rates, np.int64(size + 1))
        assert f"Index [{size}] out of bounds for array of shape [{size}]" in str(info.value)
        assert "steps.fut:5:16" in str(info.value)
