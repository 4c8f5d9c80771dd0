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
