"""`futgen build`: the package folder, options, wheels, and errors without tracebacks."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

import pytest

from futgen.cli import main
from futgen.testing.compiled import import_package

ROOT = Path(__file__).resolve().parents[2]
DOTPROD = str(ROOT / "examples" / "dotprod.fut")


def test_build_writes_the_package(tmp_path, capsys):
    pkg = tmp_path / "mylib"
    assert main(["build", DOTPROD, "-o", str(pkg), "--version", "2.0", "--backend", "cpu"]) == 0
    assert capsys.readouterr().out.strip() == str(pkg)
    module = import_package(pkg)
    assert module.__version__ == "2.0" and module.BACKEND_DEFAULT == "cpu"
    assert module.Mylib().backend == "cpu"


def test_name_must_match_the_package_directory(tmp_path, capsys):
    assert main(["build", DOTPROD, "-o", str(tmp_path / "a"), "--name", "b"]) == 1
    assert "does not match the package directory" in capsys.readouterr().err


def test_never_replaces_a_folder_futgen_did_not_write(tmp_path, capsys):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    assert main(["build", DOTPROD, "-o", str(mine)]) == 1
    assert "is not a package futgen generated" in capsys.readouterr().err
    assert (mine / "notes.txt").read_text() == "keep me"
    pkg = tmp_path / "pkg"
    assert main(["build", DOTPROD, "-o", str(pkg)]) == 0
    assert main(["build", DOTPROD, "-o", str(pkg)]) == 0  # its own output is rebuilt


def test_compile_errors_are_printed_without_traceback(tmp_path, capsys):
    bad = tmp_path / "bad.fut"
    bad.write_text("entry main (x: i32) : i32 = x + true\n")
    assert main(["build", str(bad), "-o", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("Error") and "bad.fut:1:" in err and "Traceback" not in err


def test_missing_program(tmp_path, capsys):
    assert main(["build", str(tmp_path / "none.fut"), "-o", str(tmp_path / "p")]) == 1
    assert "no such file" in capsys.readouterr().err


def test_bad_package_name(tmp_path, capsys):
    assert main(["build", DOTPROD, "-o", str(tmp_path / "my-lib")]) == 1
    assert "not a Python identifier" in capsys.readouterr().err


@pytest.mark.slow
def test_wheel_with_kernel_images(tmp_path, capsys):
    dist = tmp_path / "wheels"
    assert main(["build", DOTPROD, "-o", str(tmp_path / "out" / "mylib"), "--wheel",
                 "--dist", str(dist)]) == 0
    wheel = dist / "mylib-0.1.0-py3-none-any.whl"
    assert capsys.readouterr().out.split() == [str(tmp_path / "out" / "mylib"), str(wheel)]
    names = zipfile.ZipFile(wheel).namelist()
    if shutil.which("nvcc"):
        for image in ("sm_80.cubin", "sm_86.cubin", "sm_89.cubin", "sm_90.cubin", "ptx.ptx"):
            assert f"mylib/kernels/{image}" in names
    else:
        assert "source only" in capsys.readouterr().err


def test_tuning_files_are_baked_into_the_module(tmp_path, capsys):
    src = tmp_path / "products.fut"
    shutil.copy(ROOT / "tests" / "programs" / "tune" / "products.fut", src)
    name = "main.suff_outer_par_0"
    # PROGRAM.tuning beside the program is taken by default; --no-tuning ignores it.
    (tmp_path / "products.fut.tuning").write_text(f"-- tuned\n{name}=100\n\n")
    for flags, baked in (([], {name: 100}), (["--no-tuning"], {})):
        pkg = tmp_path / "out" / "lib"
        assert main(["build", str(src), "-o", str(pkg), "--backend", "cpu", *flags]) == 0
        module = import_package(pkg)
        assert module.TUNING == baked
        lib = module.Lib()
        assert lib.tuning[name] == baked.get(name, module.TUNING_PARAMS[name]["default"])
        assert module.Lib(tuning={name: 7}).tuning[name] == 7  # instances still override
    # --tuning FILE wins; its errors name the file, the line and the known names.
    other = tmp_path / "other.tuning"
    other.write_text(f"{name}=5\nmain.bogus=1\n")
    assert main(["build", str(src), "-o", str(tmp_path / "x"), "--tuning", str(other)]) == 1
    err = capsys.readouterr().err
    assert f"{other}: unknown tuning parameter main.bogus; this package has: " in err
    other.write_text(f"{name}=lots\n")
    assert main(["build", str(src), "-o", str(tmp_path / "x"), "--tuning", str(other)]) == 1
    assert f"{other}:1: expected a line `name=value`" in capsys.readouterr().err
    assert main(["build", str(src), "-o", str(tmp_path / "x"), "--tuning", "nope"]) == 1
    assert "nope: no such tuning file" in capsys.readouterr().err


def test_tuned_tile_sizes_are_compiled_into_the_kernels_source(tmp_path, capsys):
    """A tile size is a constant of its kernel: the package's kernels.cu (and
    the images a wheel compiles from it) hold the tuned value, so instances
    with the package's values compile nothing; other values are defines."""
    src = tmp_path / "products.fut"
    shutil.copy(ROOT / "tests" / "programs" / "tune" / "products.fut", src)
    assert main(["build", str(src), "-o", str(tmp_path / "plain"), "--backend", "cpu"]) == 0
    params = import_package(tmp_path / "plain").TUNING_PARAMS
    name, tile = next((n, p) for n, p in sorted(params.items()) if p["class"] == "tile_size"
                      and len(p["values"]) > 1)
    value = max(v for v in tile["values"] if v != tile["default"])
    # Futhark's global default_threshold beside it is no tile size.
    (tmp_path / "products.fut.tuning").write_text(f"default_threshold=1000\n{name}={value}\n")
    pkg = tmp_path / "tuned"
    assert main(["build", str(src), "-o", str(pkg), "--backend", "cpu"]) == 0
    kernels = (pkg / "kernels.cu").read_text()
    assert f"#define {tile['macro']} {value}\n" in kernels
    assert f"#define {tile['macro']} {tile['default']}\n" not in kernels
    module = import_package(pkg)
    assert module.TUNING == {name: value, "default_threshold": 1000}
    assert module.Tuned()._tuning.defines() == {}
    lib = module.Tuned(tuning={name: tile["default"]})
    assert lib._tuning.defines() == {tile["macro"]: tile["default"]}
    (tmp_path / "products.fut.tuning").write_text(f"{name}=3\n")
    assert main(["build", str(src), "-o", str(pkg), "--backend", "cpu"]) == 1
    assert (f"tile size {name} must be one of {', '.join(map(str, tile['values']))}"
            in capsys.readouterr().err)


def test_wheels_carry_the_tuned_values(tmp_path, capsys):
    src = tmp_path / "products.fut"
    shutil.copy(ROOT / "tests" / "programs" / "tune" / "products.fut", src)
    (tmp_path / "products.fut.tuning").write_text("main.suff_outer_par_0=100\n")
    assert main(["build", str(src), "-o", str(tmp_path / "lib"), "--wheel"]) == 0
    wheel = next((tmp_path / "dist").glob("*.whl"))
    with zipfile.ZipFile(wheel) as z:
        module = z.read("lib/__init__.py").decode()
    assert "TUNING: dict = {'main.suff_outer_par_0': 100}" in module


def test_a_foreign_tuning_file_beside_the_program_is_used_where_its_names_fit(tmp_path, capsys):
    """Futhark's benchmark suite ships tuning files whose names are Futhark's
    compiler's: found beside the program, their unknown names are left out
    with a warning (named with --tuning, they are an error)."""
    src = tmp_path / "products.fut"
    shutil.copy(ROOT / "tests" / "programs" / "tune" / "products.fut", src)
    (tmp_path / "products.fut.tuning").write_text("main.suff_outer_par_9=1024\n"
                                                  "main.suff_outer_par_0=77\n")
    pkg = tmp_path / "out" / "lib"
    assert main(["build", str(src), "-o", str(pkg), "--backend", "cpu"]) == 0
    err = capsys.readouterr().err
    assert "products.fut.tuning: ignoring main.suff_outer_par_9: not tuning parameters" in err
    assert import_package(pkg).TUNING == {"main.suff_outer_par_0": 77}
