"""`futgen build`: a Futhark program as an importable, self-contained package.

    build_package("lib.fut", "out", name="mylib")   ->  out/mylib/
        __init__.py          the module (templates/module.py.j2)
        kernels.cu           every kernel of the program
        _cpu_support.py      helpers of the generated NumPy code
        _futgen_runtime/     the runtime, vendored: imports are relative, so the
                             package needs only numpy (and pycuda for CUDA)

`build_wheel` packs such a folder into a wheel by the wheel spec
(PEP 427/491) with the standard library, adding cubins for common GPU
architectures and PTX when `nvcc` is present, so importing needs no compiler.
"""

from __future__ import annotations

import base64
import hashlib
import keyword
import re
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from futgen import __version__ as futgen_version
from futgen.codegen.host import HostCode, PlanSegOp, compile_host
from futgen.codegen.plan import KernelPlan
from futgen.codegen.resources import runtime_dir, templates_dir
from futgen.core import ir
from futgen.errors import FutgenError, UnsupportedFeature

ARCHS = ("sm_80", "sm_86", "sm_89", "sm_90")
_TYPE = re.compile(r"^\*?((?:\[[^\]]*\])*)([a-z0-9]+)$")


@dataclass(frozen=True)
class Compiled:
    """A program through the whole pipeline: host code and kernels."""

    host: HostCode
    kernels_source: str
    errors: dict[int, tuple[str, str]]
    entries: list[dict]


# ------------------------------------------------------------ compiling


def compile_program(src_path: str | Path) -> Compiled:
    """Load, internalise, flatten and generate code for a program."""
    from futgen.core import internalise
    from futgen.flatten import flatten
    from futgen.frontend import load
    from futgen.interp.interpreter import Interpreter

    typed = load(str(src_path))
    core = internalise(typed)
    gpu_prog = flatten(core)
    compile_segop, render = _cuda_codegen()
    host = compile_host(gpu_prog, compile_segop)
    kernels = render(host.plans) if render is not None else ""
    entries = _entries(Interpreter(typed).entry_points(), core, host)
    return Compiled(host, kernels, _error_table(host.plans), entries)


def _cuda_codegen() -> tuple[PlanSegOp | None, object]:
    """The CUDA code generator, or (None, None) where this checkout lacks it:
    the package then runs on the CPU backend only."""
    try:
        from futgen.codegen.cuda import compile_segop, render_kernels_file
    except ImportError:
        return None, None
    return compile_segop, render_kernels_file


def _error_table(plans: list[KernelPlan]) -> dict[int, tuple[str, str]]:
    return {e.code: (e.message, e.loc) for p in plans for e in p.errors}


def _entries(source_entries: dict, core: ir.Program, host: HostCode) -> list[dict]:
    """What the template needs about each entry point, prepared."""
    from futgen.testing.runner import entry_param_types

    out = []
    for name, e in source_entries.items():
        if not name.isidentifier() or keyword.iskeyword(name):
            raise UnsupportedFeature(f"entry point name {name} (not a Python identifier)")
        fn = core.function(name)
        types = entry_param_types(e)
        results = [str(t) for t in e.result_types]
        if len(types) != len(fn.params) or len(results) != len(fn.ret):
            raise UnsupportedFeature(f"entry point {name} with tuple or record parameters "
                                     f"or results")
        params = _params(fn, types)
        out.append(_entry(name, host.entry_functions[name], params, results))
    return out


def _params(fn: ir.Function, types: list[str]) -> list[dict]:
    names: set[str] = set()
    params = []
    for k, (p, t) in enumerate(zip(fn.params, types)):
        name = re.sub(r"\W", "_", p.name.base)
        if keyword.iskeyword(name) or name in names or name in ("self", "b", "extra", "results"):
            name = f"{name}_{k + 1}"
        names.add(name)
        m = _TYPE.match(t)
        if m is None:
            raise UnsupportedFeature(f"entry parameter {name} of type {t}")
        dims = re.findall(r"\[([^\]]*)\]", m.group(1))
        params.append({"name": name, "type": t, "prim": m.group(2), "rank": len(dims),
                       "position": k + 1, "dims": dims})
    return params


def _entry(name: str, method: str, params: list[dict], results: list[str]) -> dict:
    sizes = [{"size": d, "param": p["name"], "type": p["type"], "dim": i}
             for p in params for i, d in enumerate(p["dims"]) if d.isidentifier() or d.isdigit()]
    shown = ", ".join(f"{p['name']}: {p['type']}" for p in params)
    ret = results[0] if len(results) == 1 else f"({', '.join(results)})"
    return {
        "name": name, "method": method, "params": params, "sizes": sizes,
        "signature": f"{name}({shown}) -> {ret}",
        "param_names": repr(tuple(p["name"] for p in params)),
        "param_types": repr(tuple(p["type"] for p in params)),
        "result_types": repr(tuple(results)),
        "count_params": repr(tuple((p["name"], p["type"]) for p in params)),
    }


# ------------------------------------------------------------ writing the package


def default_name(src_path: str | Path) -> str:
    """The package name for a source file: its stem as a Python identifier."""
    name = re.sub(r"\W", "_", Path(src_path).stem).lower()
    return name if name.isidentifier() and not keyword.iskeyword(name) else f"fut_{name}"


def class_name(name: str) -> str:
    """`my_lib` -> `MyLib`: the package's class."""
    return "".join(part[:1].upper() + part[1:] for part in name.split("_") if part) or "Program"


def build_package(src_path: str | Path, out_dir: str | Path, *, name: str | None = None,
                  version: str = "0.1.0", backend_default: str = "auto") -> Path:
    """Compile `src_path` into the package `out_dir/<name>`; its path."""
    name = name or default_name(src_path)
    if not name.isidentifier() or keyword.iskeyword(name):
        raise FutgenError(f"package name {name!r} is not a Python identifier")
    if backend_default not in ("auto", "cpu", "cuda"):
        raise FutgenError(f"unknown backend {backend_default!r}; use auto, cpu or cuda")
    compiled = compile_program(src_path)
    pkg = Path(out_dir) / name
    if pkg.exists():
        _check_replaceable(pkg)
        shutil.rmtree(pkg)
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(_render_module(compiled, src_path, name, version,
                                                     backend_default), encoding="utf-8")
    (pkg / "kernels.cu").write_text(compiled.kernels_source, encoding="utf-8")
    shutil.copy(Path(__file__).with_name("cpu_support.py"), pkg / "_cpu_support.py")
    shutil.copytree(runtime_dir(), pkg / "_futgen_runtime",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return pkg


def _check_replaceable(pkg: Path) -> None:
    """Only a package futgen generated may be replaced; never delete a user's folder."""
    init = pkg / "__init__.py"
    generated = init.is_file() and "generated by futgen" in init.read_text(
        encoding="utf-8", errors="replace")[:500]
    if not generated:
        raise FutgenError(
            f"{pkg} exists and is not a package futgen generated; remove it or choose "
            "another output directory"
        )


def _render_module(c: Compiled, src_path: str | Path, name: str, version: str,
                   backend_default: str) -> str:
    env = Environment(loader=FileSystemLoader(str(templates_dir())), trim_blocks=True,
                      lstrip_blocks=True, undefined=StrictUndefined, keep_trailing_newline=True)
    return env.get_template("module.py.j2").render(
        name=name, class_name=class_name(name), version=version, source=Path(src_path).name,
        futgen_version=futgen_version, backend_default=backend_default,
        entries=c.entries, first_entry=c.entries[0]["name"] if c.entries else "main",
        errors=repr(c.errors), methods=[m.rstrip("\n") for m in c.host.methods],
        functions=[f.rstrip("\n") for f in c.host.functions])


# ------------------------------------------------------------ kernels images


def compile_images(pkg: Path, log=print) -> bool:
    """Cubins for `ARCHS` and PTX of `kernels.cu` into `pkg/kernels/`, with nvcc.

    Returns False (and says so in one line) when nvcc is missing or the
    kernels are empty: the wheel then carries the source only, which the
    runtime compiles on first use."""
    source = pkg / "kernels.cu"
    nvcc = shutil.which("nvcc")
    if nvcc is None or not source.read_text(encoding="utf-8").strip():
        why = "nvcc not found" if nvcc is None else "no kernels"
        log(f"futgen: {why}; the wheel carries kernels.cu source only")
        return False
    out = pkg / "kernels"
    out.mkdir(exist_ok=True)
    include = runtime_dir()
    jobs = [(["-cubin", f"-arch={a}"], out / f"{a}.cubin") for a in ARCHS]
    jobs.append((["-ptx", "-arch=compute_80"], out / "ptx.ptx"))
    for flags, target in jobs:
        cmd = [nvcc, *flags, "-O3", f"-I{include}", "-o", str(target), str(source)]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise FutgenError(f"nvcc failed on {source}:\n{done.stderr}")
    return True


# ------------------------------------------------------------ wheels


def _wheel_name(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name)


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return f"sha256={digest.decode()}"


def _metadata(name: str, version: str) -> str:
    return (f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
            f"Summary: Futhark program compiled by futgen {futgen_version}\n"
            "Requires-Python: >=3.10\nRequires-Dist: numpy\n"
            'Requires-Dist: pycuda; extra == "cuda"\nProvides-Extra: cuda\n')


def _wheel_file() -> str:
    return (f"Wheel-Version: 1.0\nGenerator: futgen {futgen_version}\n"
            "Root-Is-Purelib: true\nTag: py3-none-any\n")


def build_wheel(pkg: Path, dist_dir: str | Path, *, version: str, images: bool = True,
                log=print) -> Path:
    """A wheel of the package folder `pkg` in `dist_dir`; its path."""
    if images:
        compile_images(pkg, log)
    name = pkg.name
    dist = Path(dist_dir)
    dist.mkdir(parents=True, exist_ok=True)
    info = f"{_wheel_name(name)}-{version}.dist-info"
    wheel = dist / f"{_wheel_name(name)}-{version}-py3-none-any.whl"
    files: list[tuple[str, bytes]] = []
    for path in sorted(pkg.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            files.append((f"{name}/{path.relative_to(pkg).as_posix()}", path.read_bytes()))
    files.append((f"{info}/METADATA", _metadata(name, version).encode()))
    files.append((f"{info}/WHEEL", _wheel_file().encode()))
    record = "".join(f"{arc},{_record_hash(data)},{len(data)}\n" for arc, data in files)
    record += f"{info}/RECORD,,\n"
    with zipfile.ZipFile(wheel, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for arc, data in files:
            z.writestr(arc, data)
        z.writestr(f"{info}/RECORD", record)
    return wheel


def build(src_path: str | Path, out_dir: str | Path, *, name: str | None = None,
          version: str = "0.1.0", backend_default: str = "auto", wheel: bool = False,
          dist_dir: str | Path | None = None) -> tuple[Path, Path | None]:
    """`futgen build`: the package, and the wheel when asked for."""
    pkg = build_package(src_path, out_dir, name=name, version=version,
                        backend_default=backend_default)
    if not wheel:
        return pkg, None
    dist = Path(dist_dir) if dist_dir is not None else Path(out_dir).resolve() / "dist"
    return pkg, build_wheel(pkg, dist, version=version, log=lambda m: print(m, file=sys.stderr))
