"""The compiled backends of `futgen test`: `cpu` and `cuda`.

Both build the program with `futgen build` into a temporary folder and
import the package, so a test exercises exactly what a user gets: the
generated module, its argument checks and the vendored runtime.  They run
`random input` cases too, comparing with the reference interpreter on the
same (seeded) data, which is how the compiler is checked on inputs too big
to write into a test block.
"""

from __future__ import annotations

import importlib.util
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import count
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from futgen.pipeline import Options

_COUNTER = count()


@dataclass(frozen=True)
class EntryTypes:
    """An entry point's Futhark types, as text (what the runner needs)."""

    param_types: tuple[str, ...]
    result_types: tuple[str, ...]


def import_package(pkg: Path, module_name: str | None = None) -> ModuleType:
    """Import the generated package in folder `pkg` under a fresh module name,
    so several builds of one program can live in one process."""
    name = module_name or f"_futgen_built_{pkg.name}_{next(_COUNTER)}"
    spec = importlib.util.spec_from_file_location(name, pkg / "__init__.py",
                                                  submodule_search_locations=[str(pkg)])
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


class CompiledPackage:
    """A built and imported package, called through one instance."""

    def __init__(self, module: ModuleType, backend: str, source: str) -> None:
        self.module = module
        self.backend = backend
        self.instance = getattr(module, _class_name(module))(backend=backend)
        # The package's own (vendored) runtime errors, for `_compiler_errors`.
        self._errors = importlib.import_module(f"{module.__name__}._futgen_runtime.errors")
        self.source = source
        self._reference: Any = None
        self._tuned: dict[tuple, Any] = {}  # an instance per threshold setting

    def version_runs(self) -> list[dict[str, int]]:
        """Threshold settings that between them run every version of the
        package's code (`futgen.tune.forest`)."""
        from futgen.tune.forest import version_runs

        return version_runs(self.module.TUNING_PARAMS)

    def _instance(self, tuning: dict[str, int] | None) -> Any:
        if not tuning:
            return self.instance
        key = tuple(sorted(tuning.items()))
        if key not in self._tuned:
            cls = getattr(self.module, _class_name(self.module))
            self._tuned[key] = cls(backend=self.backend, tuning=tuning)
        return self._tuned[key]

    def entry_points(self) -> dict[str, EntryTypes]:
        return {name: EntryTypes(tuple(params), tuple(results))
                for name, (_, params, results) in self.module.ENTRY_POINTS.items()}

    def call(self, entry: str, args: list[Any],
             tuning: dict[str, int] | None = None) -> list[Any]:
        """Run an entry point (with thresholds `tuning` over the package's
        defaults); errors as `_compiler_errors` says."""
        method = getattr(self._instance(tuning), self.module.ENTRY_METHODS[entry])
        with self._compiler_errors():
            result = method(*(_package_value(a) for a in args))
        return self._results(entry, result)

    def time_calls(self, entry: str, args: list[Any], runs: int,
                   on_run: Callable[[float], None] | None = None) -> tuple[list[Any], list[float]]:
        """`runs` calls of `entry` on the package's instance, timed by the
        package (`time_calls`): the last call's results (as `call` gives
        them) and each call's µs; errors as `_compiler_errors` says."""
        with self._compiler_errors():
            result, times = self.instance.time_calls(
                entry, tuple(_package_value(a) for a in args), runs, on_run)
        return self._results(entry, result), times

    def _results(self, entry: str, result: Any) -> list[Any]:
        several = len(self.module.ENTRY_POINTS[entry][2]) > 1
        return list(result) if several else [result]

    @contextmanager
    def _compiler_errors(self) -> Iterator[None]:
        """The package's own (vendored) errors re-raised as the compiler's,
        which the runner knows: run-time failures and argument sizes that
        disagree as FutharkError (Futhark's compiled programs fail so too),
        other rejected arguments as DataError."""
        from futgen.errors import DataError, FutgenError, FutharkError

        try:
            yield
        except self.module.FutharkError as e:
            err = FutharkError(e.message, e.loc)
            err.calls = list(e.calls)
            raise err from None
        except ValueError as e:
            if not isinstance(e, self.module.ArgumentError):
                raise
            # Sizes that disagree: in Futhark an error of the program run
            # ("invalid size"), which test blocks may expect.
            raise FutharkError(str(e)) from None
        except self.module.ArgumentError as e:
            raise DataError(str(e)) from None
        except self._errors.FutgenError as e:  # the backend is unavailable, say
            raise FutgenError(str(e)) from None

    def consumes(self, entry: str) -> bool:
        """Whether `entry` consumes (updates in place) one of its arguments."""
        return any(t.startswith("*") for t in self.module.ENTRY_POINTS[entry][1])

    def resident(self, entry: str, args: list[Any]) -> list[Any]:
        """`args` as the package's backend keeps them (on the device, for
        CUDA), so that repeated calls do not upload them again; as they are
        where `entry` consumes an argument (each call must get fresh ones)."""
        if self.consumes(entry):
            return args
        with self._compiler_errors():
            b = self.instance._backend()

        def put(v: Any) -> Any:
            if isinstance(v, np.ndarray):
                return b.from_host(v)
            if isinstance(v, tuple):
                return tuple(put(x) for x in v)
            if isinstance(v, dict):
                return {k: put(x) for k, x in v.items()}
            return v

        return [put(_package_value(a)) for a in args]

    def profile_call(self, entry: str, args: list[Any]) -> tuple[tuple[str, int, float], ...]:
        """One call with profiling on: (threshold, parallelism, µs of the
        code it chose) of each guard it evaluated."""
        self.instance.profile = True
        try:
            self.time_calls(entry, args, 1)
            return tuple((name, par, us) for name, par, _, us in self.instance.last_regions)
        finally:
            self.instance.profile = False

    def set_tuning(self, values: dict[str, int]) -> None:
        """Set thresholds of the package's one instance (for runs without `tuning`)."""
        self.instance.set_tuning(values)

    def last_guards(self) -> list[tuple[str, int, bool]]:
        """(threshold, parallelism, taken) of each guard of the instance's last call."""
        return self.instance.last_guards

    def last_sizes(self) -> list[str]:
        """The block and tile sizes the instance's last call used."""
        return self.instance.last_sizes

    def device_name(self) -> str:
        with self._compiler_errors():
            return self.instance._backend().device_name

    def reference_call(self, entry: str, args: list[Any]) -> list[Any]:
        """The interpreter's results on the same arguments (for random inputs)."""
        if self._reference is None:
            from futgen.frontend import load
            from futgen.interp.interpreter import Interpreter

            self._reference = Interpreter(load(self.source))
        return self._reference.call(entry, [np.array(a) if isinstance(a, np.ndarray) else a
                                            for a in args])


def _package_value(v: Any) -> Any:
    """An interpreter value as a package takes it: an array of tuples or
    records (a `StructArray`) is the tuple or dict of its component arrays."""
    from futgen.interp.values import StructArray

    if isinstance(v, StructArray):
        return _package_value(v.fields)
    if isinstance(v, tuple):
        return tuple(_package_value(x) for x in v)
    if isinstance(v, dict):
        return {k: _package_value(x) for k, x in v.items()}
    return v


def _class_name(module: ModuleType) -> str:
    return next(n for n in module.__all__ if n[:1].isupper() and n not in
                ("ENTRY_POINTS", "TUNING", "TUNING_PARAMS", "FutharkError"))


class PackageBackend:
    """`futgen test --backend cpu|cuda`: build, import, run."""

    def __init__(self, kind: str) -> None:
        self.name = kind
        self.kind = kind
        # The CPU backend is NumPy on the host: it skips, as Futhark's Python
        # backend does, the runs Futhark tags `no_python` (arrays of several
        # GiB, minutes of work per run).
        self.skip_tags = frozenset({"script", "no_python"} if kind == "cpu" else {"script"})

    def prepare(self) -> None:
        """Import the compiler once, before the runner forks its workers."""
        import futgen.codegen.package  # noqa: F401

    def compile(self, path: str, passes: Options | None = None) -> CompiledPackage:
        return compile_package(path, self.kind, options=passes)


def compile_package(path: str, backend: str, *, tuning: str | None = None,
                    find_tuning: bool = True, options: Options | None = None) -> CompiledPackage:
    """`path` built (with the passes' `options`) into a temporary folder
    (with tuning file `tuning`, else `path.tuning` if present and
    `find_tuning`) and imported."""
    from futgen.codegen.package import build_package, default_name

    out = Path(tempfile.mkdtemp(prefix="futgen-test-"))
    pkg = build_package(path, out, name=default_name(path), backend_default=backend,
                        options=options, tuning=tuning, find_tuning=find_tuning)
    return CompiledPackage(import_package(pkg), backend, path)


def cpu_backend() -> PackageBackend:
    return PackageBackend("cpu")


def cuda_backend() -> PackageBackend:
    return PackageBackend("cuda")


# ---------------------------------------------------------------- random input


def random_values(gen: list[str], seed: int) -> list[Any]:
    """Values for `random input { [100]i32 3i64 ... }`: arrays of the given
    shapes with seeded random elements (floats in [0, 1), integers over
    their whole range, as `futhark dataset` does), literals as written."""
    from futgen.data import read_values
    from futgen.data.dataset import parse_type, random_value
    from futgen.errors import DataError

    rng = np.random.default_rng(seed)
    out = []
    for g in gen:
        try:
            t = parse_type(g)
        except DataError:
            out += read_values(g.encode(), "<random input>")
            continue
        out.append(random_value(rng, t))
    return out
