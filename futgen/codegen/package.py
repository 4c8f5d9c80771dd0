"""`futgen build`: a Futhark program as an importable, self-contained package.

    build_package("lib.fut", "out", name="mylib")   ->  out/mylib/
        __init__.py          the module (templates/module.py.j2)
        kernels.cu           every kernel of the program
        _cpu_support.py      helpers of the generated NumPy code
        _futgen_runtime/     the runtime, vendored: imports are relative, so the
                             package needs only numpy (and pycuda for CUDA)

Entry points come from `futgen.frontend.entry` (the typed program, never
the interpreter): each parameter and result gets a layout for the runtime
(`futgen_runtime/layout.py`: tuples as tuples, records as named tuple classes
the module exports, arrays of either as structures of arrays), a `help()`
text, and a method name (the Futhark name, or one made from it: `f'` ->
`f_`, listed in `ENTRY_METHODS`).

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
import warnings
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from futgen import __version__ as futgen_version
from futgen.codegen.host import HostCode, PlanSegOp, compile_host
from futgen.codegen.plan import KernelPlan, TuningParam
from futgen.codegen.resources import runtime_dir, templates_dir
from futgen.core import ir
from futgen.core.internalise import UNIT_PRIM
from futgen.errors import FutgenError, UnsupportedFeature
from futgen.frontend import types as T
from futgen.frontend.entry import (
    EntrySignature,
    entry_signatures,
    leaf_types,
    record_names,
    record_of,
    type_key,
)
from futgen.frontend.types import components, ordered_fields

if TYPE_CHECKING:
    from futgen.pipeline import Options

ARCHS = ("sm_80", "sm_86", "sm_89", "sm_90")


@dataclass(frozen=True)
class Compiled:
    """A program through the whole pipeline: host code and kernels, and what
    the module template needs about the entry points and record classes."""

    host: HostCode
    kernels_source: str
    errors: dict[int, tuple[str, str]]
    entries: list[dict]
    records: list[dict]


# ------------------------------------------------------------ compiling


def compile_program(src_path: str | Path, options: Options | None = None) -> Compiled:
    """Load, internalise, flatten and generate code for a program."""
    from futgen.core import internalise
    from futgen.frontend import load
    from futgen.pipeline import Options, run_passes

    typed = load(str(src_path))
    signatures = entry_signatures(typed)
    core = internalise(typed)
    options = options or Options()
    gpu_prog = run_passes(core, options=options)
    compile_segop, render = _cuda_codegen()
    host = compile_host(gpu_prog, compile_segop)
    kernels = render(host.plans, options.fast_division) if render is not None else ""
    methods = entry_methods([s.name for s in signatures])
    records = _RecordClasses(record_names(typed, signatures), set(methods.values()))
    entries = _entries(signatures, methods, core, host, records)
    return Compiled(host, kernels, _error_table(host.plans), entries, records.template_data())


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


# Module-level names of templates/module.py.j2, and the attributes and
# methods of its class, that entry functions and record classes must not take.
_MODULE_NAMES = frozenset({
    "annotations", "os", "Path", "np", "S", "ArgumentError", "ArgumentTypeError", "FutharkError",
    "Leaf", "Param", "RecordOf", "TupleOf", "Unit", "EntryPoint", "MISSING", "make_backend",
    "record_class", "BACKEND_DEFAULT", "ENTRY_POINTS", "ENTRY_METHODS", "TUNING_PARAMS",
    "TUNING", "ERRORS", "sync", "backend", "backend_kind", "device", "device_results", "tuning",
    "Tuning", "last_guards",
})


# Names the body of a generated entry method uses, which parameters must not shadow.
_METHOD_NAMES = _MODULE_NAMES | {"self", "b", "extra", "entry", "args", "results"}


def python_name(name: str, taken: set[str] | frozenset[str] = frozenset()) -> str:
    """A Futhark name as a Python identifier that is not a keyword, does not
    start with `_` and is not in `taken`: `f'` -> `f_`, `class` -> `class_`."""
    base = re.sub(r"\W", "_", name)
    if not base.isidentifier() or base.startswith("_"):  # a leading digit or underscore
        base = "f_" + base.lstrip("_")
    out = base
    while keyword.iskeyword(out) or out in taken:
        out += "_"
    return out


def entry_methods(names: list[str]) -> dict[str, str]:
    """Entry point -> its method (and module function) name: the Futhark
    name where it is a Python identifier, else one made from it that no
    other entry point has (`f'` -> `f_`)."""
    def usable(n: str) -> bool:
        return n.isidentifier() and not keyword.iskeyword(n) and n not in _MODULE_NAMES \
            and not n.startswith("_")

    taken = {n for n in names if usable(n)}
    out = {}
    for n in names:
        out[n] = n if usable(n) else python_name(n, _MODULE_NAMES | taken)
        taken.add(out[n])
    return out


class _RecordClasses:
    """The record types of the entry points as named tuple classes of the
    module: named after their type abbreviation, else after their fields."""

    def __init__(self, abbrev_names: dict[str, str], methods: set[str]) -> None:
        self.abbrev_names = abbrev_names
        self.taken = set(_MODULE_NAMES) | methods
        self.classes: dict[str, dict] = {}  # type_key -> template data

    def get(self, rec: T.Record) -> dict:
        key = type_key(rec)
        if key not in self.classes:
            futhark_name = self.abbrev_names.get(key)
            name = python_name(futhark_name or "record_" + "_".join(f for f, _ in rec.fields),
                               self.taken)
            self.taken.add(name)
            attrs: list[str] = []
            for f, _ in ordered_fields(rec.fields):
                attrs.append(python_name(f, set(attrs)))
            types = [str(t) for _, t in ordered_fields(rec.fields)]
            self.classes[key] = {"name": name, "attrs": attrs, "type": str(rec),
                                 "fields": repr(tuple(zip(attrs, types)))}
        return self.classes[key]

    def template_data(self) -> list[dict]:
        return list(self.classes.values())


def _entries(signatures: list[EntrySignature], methods: dict[str, str], core: ir.Program,
             host: HostCode, records: _RecordClasses) -> list[dict]:
    """What the template needs about each entry point, prepared."""
    out = []
    for sig in signatures:
        method = methods[sig.name]
        fn = core.function(sig.name)
        _check_leaves(sig, fn)
        params = _params(sig, records)
        results = [{"type": T.nonunique(t), "layout": _layout(T.nonunique(t), records, sig.name)}
                   for t in sig.results]
        entry = _entry(sig.name, method, host.entry_functions[sig.name], params, results,
                       records)
        entry["numpy_free_on_cuda"] = sig.name in host.numpy_free_on_cuda
        out.append(entry)
    return out


def _check_leaves(sig: EntrySignature, fn: ir.Function) -> None:
    """The compiled function must take and return exactly the leaves of the
    signature's values, in order (internalisation's representation)."""
    def shape(ts: list[T.Type]) -> list[tuple[str, int]]:
        elems = (t.elem if isinstance(t, T.Array) else t for t in ts)
        return [(UNIT_PRIM if T.is_unit(e) else str(e), T.rank(t)) for e, t in zip(elems, ts)]

    def core_shape(ts) -> list[tuple[str, int]]:
        return [(t.elem, len(t.shape)) if isinstance(t, ir.ArrayT) else (t.name, 0) for t in ts]

    want_params = shape([x for t in sig.param_types for x in leaf_types(t)])
    want_results = shape([x for t in sig.results for x in leaf_types(t)])
    if want_params != core_shape(p.type for p in fn.params) or \
            want_results != core_shape(fn.ret):
        raise FutgenError(f"internal error: entry point {sig.name}: its compiled function "
                          f"does not take and return the leaves of {sig}")


def _params(sig: EntrySignature, records: _RecordClasses) -> list[dict]:
    names: set[str] = set()
    params = []
    for p in sig.params:
        name = python_name(p.name, names | _METHOD_NAMES)
        names.add(name)
        params.append({"name": name, "type": p.type, "layout": _layout(p.type, records, sig.name)})
    return params


def _layout(t: T.Type, records: _RecordClasses, entry: str) -> str:
    """The runtime layout (`futgen_runtime.layout`) of a value of type `t`, as source."""
    comps = components(t)
    if comps is None:
        elem = t.elem if isinstance(t, T.Array) else t
        dims = tuple(str(d) for d in t.shape) if isinstance(t, T.Array) else ()
        if T.is_unit(elem):
            return f"Unit({dims!r}, {str(t)!r})"
        if not isinstance(elem, T.Scalar):
            raise UnsupportedFeature(f"entry point {entry} with a value of type {t}")
        return f"Leaf({elem.name!r}, {dims!r}, {str(t)!r})"
    parts = [_layout(c, records, entry) for c in comps]
    rec = record_of(t)
    if rec is None:
        return f"TupleOf(({''.join(p + ', ' for p in parts)}), {T.rank(t)}, {str(t)!r})"
    cls = records.get(rec)
    fields = "".join(f"({f!r}, {a!r}, {p}), " for (f, _), a, p in
                     zip(ordered_fields(rec.fields), cls["attrs"], parts))
    return f"RecordOf({cls['name']}, ({fields}), {T.rank(t)}, {str(t)!r})"


def _shown(t: T.Type, records: _RecordClasses) -> str:
    """`t` as in the method's help: records by their class name."""
    match t:
        case T.Array(e, shape, u):
            return ("*" if u else "") + "".join(f"[{d}]" for d in shape) + _shown(e, records)
        case T.Tuple(es) if es:
            return "(" + ", ".join(_shown(x, records) for x in es) + ")"
        case T.Record(fs) if record_of(t) is not None:
            return records.get(t)["name"]
        case T.Record(fs):
            return "{" + ", ".join(f"{f}: {_shown(x, records)}" for f, x in fs) + "}"
    return str(t)


def _records_in(t: T.Type, records: _RecordClasses) -> list[dict]:
    comps = components(t)
    if comps is None:
        return []
    rec = record_of(t)
    own = [records.get(rec)] if rec is not None else []
    return own + [r for c in comps for r in _records_in(c, records)]


def _entry(name: str, method: str, fn: str, params: list[dict], results: list[dict],
           records: _RecordClasses) -> dict:
    shown = ", ".join(f"{p['name']}: {_shown(p['type'], records)}" for p in params)
    rets = [_shown(r["type"], records) for r in results]
    ret = rets[0] if len(rets) == 1 else f"({', '.join(rets)})"
    types = [p["type"] for p in params] + [r["type"] for r in results]
    return {
        "name": name, "method": method, "fn": fn, "params": params,
        "signature": f"{method}({shown}) -> {ret}",
        "notes": _notes(types, records),
        "param_names": repr(tuple(p["name"] for p in params)),
        "param_types": repr(tuple(str(p["type"]) for p in params)),
        "result_types": repr(tuple(str(r["type"]) for r in results)),
        "shown_params": repr(tuple(_shown(p["type"], records) for p in params)),
        "param_layouts": "(" + "".join(f"Param({p['name']!r}, {p['layout']}), "
                                       for p in params) + ")",
        "result_layouts": "(" + "".join(f"{r['layout']}, " for r in results) + ")",
    }


def _notes(types: list[T.Type], records: _RecordClasses) -> list[str]:
    """Lines for the method's docstring on how tuples and records are passed."""
    notes = []
    seen: set[str] = set()
    for r in (r for t in types for r in _records_in(t, records)):
        if r["name"] not in seen:
            seen.add(r["name"])
            fields = ", ".join(f"{a}=..." for a in r["attrs"])
            notes.append(f"{r['name']}: the record {r['type']}; pass {r['name']}({fields}) "
                         f"or a dict or object with those fields.")
    if any(components(t) is not None and T.rank(t) for t in types):
        notes.append("An array of tuples or records is one tuple (or record) of arrays, "
                     "all of one outer size.")
    if any(isinstance(t, T.Tuple) and t.elems for t in types):
        notes.append("A tuple is a Python tuple.")
    return notes


# ------------------------------------------------------------ writing the package


def default_name(src_path: str | Path) -> str:
    """The package name for a source file: its stem as a Python identifier."""
    name = re.sub(r"\W", "_", Path(src_path).stem).lower()
    return name if name.isidentifier() and not keyword.iskeyword(name) else f"fut_{name}"


def class_name(name: str) -> str:
    """`my_lib` -> `MyLib`: the package's class (`SProgram` for `s`, whose
    plain class name would hide the module's own `S`; `NoneProgram` for
    `none`, whose would be a keyword)."""
    cls = "".join(part[:1].upper() + part[1:] for part in name.split("_") if part) or "Program"
    return cls + "Program" if cls in _MODULE_NAMES or keyword.iskeyword(cls) else cls


def build_package(src_path: str | Path, out_dir: str | Path, *, name: str | None = None,
                  version: str = "0.1.0", backend_default: str = "auto",
                  options: Options | None = None, tuning: str | Path | None = None,
                  find_tuning: bool = True) -> Path:
    """Compile `src_path` into the package `out_dir/<name>`; its path.

    The values of tuning file `tuning` (else, with `find_tuning`, of
    `<src_path>.tuning` if present) are baked into the module's `TUNING`."""
    name = name or default_name(src_path)
    if not name.isidentifier() or keyword.iskeyword(name):
        raise FutgenError(f"package name {name!r} is not a Python identifier")
    if backend_default not in ("auto", "cpu", "cuda"):
        raise FutgenError(f"unknown backend {backend_default!r}; use auto, cpu or cuda")
    compiled = compile_program(src_path, options)
    tuning_path = tuning_file(src_path, tuning, find_tuning)
    baked = _baked_tuning(tuning_path, compiled.host.tuning_params, strict=tuning is not None)
    pkg = Path(out_dir) / name
    if pkg.exists():
        _check_replaceable(pkg)
        shutil.rmtree(pkg)
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(_render_module(compiled, src_path, name, version,
                                                     backend_default, baked, tuning_path),
                                     encoding="utf-8")
    (pkg / "kernels.cu").write_text(
        _baked_tile_sizes(compiled.kernels_source, compiled.host.tuning_params, baked),
        encoding="utf-8")
    shutil.copy(Path(__file__).with_name("cpu_support.py"), pkg / "_cpu_support.py")
    shutil.copytree(runtime_dir(), pkg / "_futgen_runtime",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return pkg


def tuning_file(src_path: str | Path, tuning: str | Path | None,
                find_tuning: bool = True) -> Path | None:
    """The tuning file a build of `src_path` takes: `tuning` if given (it
    must exist), else `<src_path>.tuning` if `find_tuning` and it exists."""
    if tuning is not None:
        if not Path(tuning).is_file():
            raise FutgenError(f"{tuning}: no such tuning file")
        return Path(tuning)
    beside = Path(f"{src_path}.tuning")
    return beside if find_tuning and beside.is_file() else None


def _baked_tuning(path: Path | None, params: dict[str, TuningParam],
                  strict: bool) -> dict[str, int]:
    """The values of tuning file `path`, checked against the program's
    parameters.  An unknown name is an error that lists the known ones in a
    file the user named (`strict`); in one found beside the program (maybe
    written for Futhark's compiler, whose parameters differ) it is left out
    with a warning."""
    from futgen_runtime.tuning import read_tuning_file

    if path is None:
        return {}
    described = {name: p.described() for name, p in params.items()}
    unknown: list[str] | None = None if strict else []
    values = read_tuning_file(path, described, unknown)
    if unknown:
        warnings.warn(f"{path}: ignoring {', '.join(unknown)}: not tuning parameters of this "
                      "program (written for another compiler, or before the program "
                      "changed?); `futgen autotune` writes a file for it", stacklevel=2)
    return values


def _baked_tile_sizes(source: str, params: dict[str, TuningParam],
                      baked: dict[str, int]) -> str:
    """The kernels' source with the tile sizes of `baked` as their macros'
    defaults (each kernel defines its own: `#define FUTGEN_TILE_<key> <n>`),
    so the package's source and the images compiled from it hold the tuned
    kernels."""
    for name, value in baked.items():
        p = params.get(name)  # None: default_threshold, default_tblock_size
        if p is None or p.cls != "tile_size" or value == p.default:
            continue
        macro = p.extra["macro"]
        line = f"#define {macro} {p.default}\n"
        if source.count(line) != 1:
            raise RuntimeError(f"compiler bug: kernels.cu defines {macro} "
                               f"{source.count(line)} times")
        source = source.replace(line, f"#define {macro} {value}\n")
    return source


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
                   backend_default: str, tuning: dict[str, int],
                   tuning_path: Path | None) -> str:
    env = Environment(loader=FileSystemLoader(str(templates_dir())), trim_blocks=True,
                      lstrip_blocks=True, undefined=StrictUndefined, keep_trailing_newline=True)
    return env.get_template("module.py.j2").render(
        name=name, class_name=class_name(name), version=version, source=Path(src_path).name,
        futgen_version=futgen_version, backend_default=backend_default,
        entries=c.entries, records=c.records,
        first_entry=c.entries[0]["method"] if c.entries else "main",
        errors=repr(c.errors), tuning_params=_tuning_params_text(c.host.tuning_params),
        tuning=repr(dict(sorted(tuning.items()))),
        tuning_source=f"from {tuning_path.name}" if tuning_path else "none: no tuning file",
        guarded=bool(c.host.guards),
        methods=[m.rstrip("\n") for m in c.host.methods],
        functions=[f.rstrip("\n") for f in c.host.functions])


def _tuning_params_text(params: dict[str, TuningParam]) -> str:
    """`TUNING_PARAMS` as a literal: name -> {class, default, path, doc, and
    for tile sizes the values allowed and the kernels' macro}."""
    if not params:
        return "{}"
    rows = [f"    {name!r}: {p.described()!r}," for name, p in sorted(params.items())]
    return "{\n" + "\n".join(rows) + "\n}"


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
          dist_dir: str | Path | None = None, options: Options | None = None,
          tuning: str | Path | None = None,
          find_tuning: bool = True) -> tuple[Path, Path | None]:
    """`futgen build`: the package, and the wheel when asked for."""
    pkg = build_package(src_path, out_dir, name=name, version=version,
                        backend_default=backend_default, options=options, tuning=tuning,
                        find_tuning=find_tuning)
    if not wheel:
        return pkg, None
    dist = Path(dist_dir) if dist_dir is not None else Path(out_dir).resolve() / "dist"
    return pkg, build_wheel(pkg, dist, version=version, log=lambda m: print(m, file=sys.stderr))
