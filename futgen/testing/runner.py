"""`futgen test`: run the test blocks of Futhark programs on a backend.

Each program is tested in its own worker process, so that a hanging program
can be killed at its timeout and a crashing one cannot take the run down;
`jobs` workers run at once.  A program passes when it compiles and every run
case gives the expected values (floats within Futhark's tolerance) or fails
with an error matching the expected regex.  Programs that use a Futhark
feature futgen lacks (`UnsupportedFeature`) count as *unsupported*, apart from
passes and failures, so that a conformance run over Futhark's own test suite
measures coverage and correctness separately.

A backend is deliberately small (see `Backend`): it compiles a program once
and calls entry points with values.  The interpreter is defined here; the
compiled `cpu` and `cuda` backends (`futgen.testing.compiled`) build the
program into a package and register themselves with `register_backend`.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import sys
import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from multiprocessing.connection import Connection, wait
from typing import TYPE_CHECKING, Any, Protocol

from futgen.data.compare import DEFAULT_TOLERANCE, compare_values
from futgen.data.values import Value, check_arguments
from futgen.errors import DataError, FutgenError, FutharkError, UnsupportedFeature
from futgen.testing.spec import (
    ExpectedError,
    InputOutputs,
    ProgramTest,
    SpecError,
    TestRun,
    read_spec,
)

if TYPE_CHECKING:
    from futgen.pipeline import Options

# Tags that exclude a program or a run, as `futhark test` excludes
# `disable` and `notest` by default (plus our own `no_futgen`).
DEFAULT_EXCLUDE = ("disable", "notest", "no_futgen")


# ---------------------------------------------------------------- backends


class CompiledProgram(Protocol):
    """A program ready to run: what a backend's `compile` returns."""

    def entry_points(self) -> dict[str, Any]:
        """Entry points by name; each has `param_types` and `result_types`,
        whose str() is Futhark syntax."""

    def call(self, entry: str, args: list[Value]) -> list[Value]:
        """Run an entry point; FutharkError for run-time failures."""


class Backend(Protocol):
    """Compiles programs; `skip_tags` are run tags it cannot honour."""

    name: str
    skip_tags: frozenset[str]

    def compile(self, path: str, passes: Options | None = None) -> CompiledProgram:
        """CompileError (or UnsupportedFeature) if the program is rejected;
        `passes`: the compiler's pass options, for backends that compile."""


class InterpreterBackend:
    """The reference interpreter: type-check, then run the typed AST.

    It cannot generate random inputs, run FutharkScript inputs or produce
    `auto output` reference results (it *is* the reference), and runs tagged
    `compiled` are meant for compiled backends only, as in `futhark test -i`.
    """

    name = "interpreter"
    skip_tags = frozenset({"compiled", "script", "random"})

    def prepare(self) -> None:
        """Import the front end and interpreter once, before workers fork."""
        self._classes()

    def compile(self, path: str, passes: Options | None = None) -> CompiledProgram:
        load, interpreter = self._classes()
        return interpreter(load(path))  # the program as written: no passes

    @staticmethod
    def _classes():
        from futgen.frontend import load

        try:
            from futgen.interp import Interpreter
        except ImportError:  # the package may not re-export it
            from futgen.interp.interpreter import Interpreter
        return load, Interpreter


def _compiled(kind: str) -> Callable[[], Backend]:
    """A factory for a compiled backend, imported only when asked for."""

    def make() -> Backend:
        from futgen.testing.compiled import PackageBackend

        return PackageBackend(kind)

    return make


BACKENDS: dict[str, Callable[[], Backend]] = {
    "interpreter": InterpreterBackend,
    "cpu": _compiled("cpu"),
    "cuda": _compiled("cuda"),
}


def register_backend(name: str, factory: Callable[[], Backend]) -> None:
    """Make a backend available to `futgen test --backend NAME`."""
    BACKENDS[name] = factory


def entry_param_types(entry: Any) -> list[str]:
    """An entry point's parameter types as Futhark text (a point-free
    entry's included: see `futgen.frontend.entry`)."""
    return [str(t) for t in entry.param_types]


def get_backend(name: str) -> Backend:
    try:
        return BACKENDS[name]()
    except KeyError:
        known = ", ".join(sorted(BACKENDS))
        raise FutgenError(f"unknown backend {name!r}; available: {known}") from None


# ---------------------------------------------------------------- results


PASSED, FAILED, SKIPPED, UNSUPPORTED = "passed", "failed", "skipped", "unsupported"


@dataclass
class RunResult:
    """The outcome of one run case."""

    entry: str
    dataset: str
    status: str
    message: str = ""
    feature: str | None = None


@dataclass
class FileResult:
    """The outcome of one program; `messages` explain failures."""

    path: str
    status: str
    messages: list[str] = field(default_factory=list)
    runs: list[RunResult] = field(default_factory=list)
    feature: str | None = None  # the unsupported feature, if any
    seconds: float = 0.0

    def run_counts(self) -> dict[str, int]:
        counts = {PASSED: 0, FAILED: 0, SKIPPED: 0, UNSUPPORTED: 0}
        for r in self.runs:
            counts[r.status] += 1
        return counts


@dataclass
class TestOptions:
    __test__ = False  # not a pytest test class

    backend: str = "interpreter"
    jobs: int = 1
    timeout: float = 120.0
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    tolerance: float = DEFAULT_TOLERANCE
    versions: bool = False  # run each case under every version (compiled backends)
    passes: Options | None = None  # the compiled backends' pass options (`--fast-division`)


# ---------------------------------------------------------------- one program


def run_file(path: str, options: TestOptions) -> FileResult:
    """Test one program in this process (no timeout: see `run_tests`)."""
    start = time.monotonic()
    result = _test_file(path, options)
    result.seconds = round(time.monotonic() - start, 3)
    return result


def _test_file(path: str, options: TestOptions) -> FileResult:
    try:
        spec = read_spec(path)
    except SpecError as e:
        return FileResult(path, FAILED, [str(e)])
    backend = get_backend(options.backend)
    excluded = set(options.exclude) | {f"no_{backend.name}"}
    tags = excluded.intersection(spec.tags)
    if tags:
        return FileResult(path, SKIPPED, [f"excluded by tag {', '.join(sorted(tags))}"])
    if spec.compile_error is not None:
        return _expect_compile_error(path, backend, spec.compile_error, options.passes)
    try:
        program = backend.compile(path, options.passes)
    except UnsupportedFeature as e:
        return FileResult(path, UNSUPPORTED, [str(e)], feature=e.feature)
    except FutgenError as e:
        return FileResult(path, FAILED, [f"Compilation failed:\n{e}"])
    except Exception as e:  # noqa: BLE001 - a futgen bug fails this program only
        return FileResult(path, FAILED, [_internal_error("compiling", e)])
    # A file-level tag the backend cannot honour skips every run, after the
    # program has built (as the interpreter skips the runs tagged `compiled`).
    skip_all = backend.skip_tags.intersection(spec.tags)
    runs = _run_cases(program, spec, backend, excluded, options, skip_all)
    return _summarise(path, runs)


def _expect_compile_error(path: str, backend: Backend, expected: ExpectedError,
                          passes: Options | None) -> FileResult:
    try:
        backend.compile(path, passes)
    except UnsupportedFeature as e:
        return FileResult(path, UNSUPPORTED, [str(e)], feature=e.feature)
    except FutgenError as e:
        if expected.matches(str(e)):
            return FileResult(path, PASSED)
        return FileResult(path, FAILED, [_wrong_error(expected, str(e))])
    except Exception as e:  # noqa: BLE001 - a futgen bug fails this program only
        return FileResult(path, FAILED, [_internal_error("compiling", e)])
    return FileResult(path, FAILED, ["Expected compilation to fail, but it succeeded."])


def _run_cases(
    program: CompiledProgram,
    spec: ProgramTest,
    backend: Backend,
    excluded: set[str],
    options: TestOptions,
    skip_all: frozenset[str] = frozenset(),
) -> list[RunResult]:
    entries = program.entry_points()
    results = []
    for io in spec.cases:
        if io.entry not in entries:
            results.append(_missing_entry(io, entries))
            continue
        params = entry_param_types(entries[io.entry])
        for run in io.runs:
            results.append(_run_case(program, io.entry, params, run, backend, excluded, options,
                                     skip_all))
    return results


def _missing_entry(io: InputOutputs, entries: dict[str, Any]) -> RunResult:
    known = ", ".join(sorted(entries)) or "none"
    return RunResult(
        io.entry,
        "",
        FAILED,
        f"Entry point {io.entry} not found in the program (entry points: {known}).",
    )


def _run_case(
    program: CompiledProgram,
    entry: str,
    params: list[str],
    run: TestRun,
    backend: Backend,
    excluded: set[str],
    options: TestOptions,
    skip_all: frozenset[str] = frozenset(),
) -> RunResult:
    def result(status: str, message: str = "", feature: str | None = None) -> RunResult:
        return RunResult(entry, run.description, status, message, feature)

    skip = (excluded | backend.skip_tags).intersection(run.tags) | skip_all
    if skip:
        return result(SKIPPED, f"tag {', '.join(sorted(skip))}")
    if run.auto_output:
        return result(SKIPPED, "auto output needs a reference backend")
    try:
        args = input_values(run)
        check_arguments(entry, params, args)
        expected = run.expected.load() if run.expected is not None else None
    except DataError as e:
        return result(FAILED, f"Bad test data: {e}")
    reference = getattr(program, "reference_call", None)
    if run.input.kind == "random" and expected is None and run.expected_error is None:
        if reference is None:
            return result(SKIPPED, "random input needs a reference backend")
        try:
            expected = reference(entry, [_copy(a) for a in args])
        except FutharkError as e:
            return result(SKIPPED, f"the reference fails on this random input: {e}")
    settings = program.version_runs() if options.versions and hasattr(
        program, "version_runs") else [None]
    for tuning in settings:
        call_args = [_copy(a) for a in args] if len(settings) > 1 else args
        status, message, feature = _check_call(program, entry, call_args, tuning, run,
                                               expected, options)
        if status != PASSED:
            if tuning:
                forced = ", ".join(f"{k}={v}" for k, v in sorted(tuning.items()))
                message = f"With thresholds {forced}:\n{message}"
            return result(status, message, feature)
    return result(PASSED)


def _check_call(program: CompiledProgram, entry: str, args: list[Value],
                tuning: dict[str, int] | None, run: TestRun, expected: list[Value] | None,
                options: TestOptions) -> tuple[str, str, str | None]:
    """Call `entry` (with thresholds `tuning`, if any) and compare with the
    expected results or error: (status, message, unsupported feature)."""
    try:
        actual = (program.call(entry, args) if tuning is None
                  else program.call(entry, args, tuning=tuning))  # type: ignore[call-arg]
    except UnsupportedFeature as e:
        return UNSUPPORTED, str(e), e.feature
    except FutharkError as e:
        if run.expected_error is None:
            return FAILED, f"Function failed with error:\n{e}", None
        if run.expected_error.matches(str(e)):
            return PASSED, "", None
        return FAILED, _wrong_error(run.expected_error, str(e)), None
    except FutgenError as e:
        return FAILED, str(e), None
    except Exception as e:  # noqa: BLE001 - a futgen bug fails this program only
        return FAILED, _internal_error("running", e), None
    if run.expected_error is not None:
        wanted = run.expected_error.regex or "any error"
        return FAILED, f"Program succeeded, but expected failure:\n  {wanted}", None
    if expected is None:
        return PASSED, "", None
    mismatches = compare_values(expected, list(actual), options.tolerance)
    if not mismatches:
        return PASSED, "", None
    message = str(mismatches[0])
    if len(mismatches) > 1:
        message += f"\n...and {len(mismatches) - 1} other mismatching values."
    return FAILED, message, None


def input_values(run: TestRun) -> list[Value]:
    """A run's arguments; `random input` is generated, seeded by the run's
    position so that every backend sees the same data."""
    if run.input.kind == "random":
        from futgen.testing.compiled import random_values

        return random_values(run.input.gen, seed=run.index)
    return run.input.load()


def _copy(v: Value) -> Value:
    return v.copy() if hasattr(v, "copy") and hasattr(v, "shape") else v


def _wrong_error(expected: ExpectedError, got: str) -> str:
    indented = "\n".join("  " + line for line in got.splitlines())
    return f"Expected error:\n  {expected.regex}\nGot error:\n{indented}"


def _internal_error(doing: str, e: Exception) -> str:
    """A futgen bug, not a test failure by the program: keep the trace short."""
    frames = traceback.format_exception(type(e), e, e.__traceback__)
    return f"Internal error while {doing}: {type(e).__name__}: {e}\n" + "".join(frames[-4:])


def _summarise(path: str, runs: list[RunResult]) -> FileResult:
    failed = [r for r in runs if r.status == FAILED]
    unsupported = [r for r in runs if r.status == UNSUPPORTED]
    if failed:
        messages = [_run_message(r) for r in failed]
        return FileResult(path, FAILED, messages, runs)
    if unsupported:
        r = unsupported[0]
        return FileResult(path, UNSUPPORTED, [_run_message(r)], runs, feature=r.feature)
    return FileResult(path, PASSED, [], runs)


def _run_message(r: RunResult) -> str:
    where = f"Entry point: {r.entry}" + (f"; dataset: {r.dataset}" if r.dataset else "")
    return f"{where}:\n{r.message}"


# ---------------------------------------------------------------- many programs


def collect_programs(paths: Iterable[str]) -> list[str]:
    """The `.fut` files named, or found recursively in named directories."""
    programs: list[str] = []
    for p in paths:
        if os.path.isdir(p):
            found = []
            for root, dirs, files in os.walk(p):
                dirs.sort()
                found += [os.path.join(root, f) for f in files if f.endswith(".fut")]
            programs += sorted(found)
        elif os.path.isfile(p):
            programs.append(p)
        else:
            raise FutgenError(f"{p}: no such file or directory")
    return programs


def _worker(conn: Connection, path: str, options: TestOptions) -> None:
    """Body of a worker process: test one program and send back the result."""
    try:
        result = run_file(path, options)
    except BaseException as e:  # noqa: BLE001 - a worker must always answer
        result = FileResult(path, FAILED, [_internal_error("testing", e)])
    conn.send(result)
    conn.close()


def _context() -> multiprocessing.context.BaseContext:
    """Fork where possible: workers start fast and inherit registered backends.
    Not once this process may have initialised CUDA (PyCUDA is imported, as
    in a test session that ran GPU tests before): a forked child cannot use
    CUDA then, so workers start afresh."""
    methods = multiprocessing.get_all_start_methods()
    fork = "fork" in methods and "pycuda.driver" not in sys.modules
    return multiprocessing.get_context("fork" if fork else "spawn")


@dataclass
class _Active:
    process: Any
    conn: Connection
    path: str
    started: float


def run_programs(
    programs: list[str],
    options: TestOptions,
    on_result: Callable[[FileResult], None] | None = None,
) -> list[FileResult]:
    """Test programs in worker processes, `options.jobs` at a time, killing
    any that run past `options.timeout` seconds; results in program order."""
    ctx = _context()
    prepare = getattr(get_backend(options.backend), "prepare", None)
    if prepare is not None:
        prepare()  # e.g. imports, done once here rather than in every worker
    pending = list(reversed(programs))
    active: dict[Connection, _Active] = {}
    results: dict[str, FileResult] = {}

    def finish(result: FileResult) -> None:
        results[result.path] = result
        if on_result is not None:
            on_result(result)

    while pending or active:
        while pending and len(active) < max(1, options.jobs):
            path = pending.pop()
            receive, send = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=_worker, args=(send, path, options), daemon=True)
            proc.start()
            send.close()
            active[receive] = _Active(proc, receive, path, time.monotonic())
        now = time.monotonic()
        deadline = min(a.started + options.timeout for a in active.values())
        for conn in wait(list(active), timeout=max(0.0, deadline - now)):
            finish(_collect(active.pop(conn)))
        now = time.monotonic()
        for conn, a in list(active.items()):
            if now >= a.started + options.timeout:
                del active[conn]
                finish(_kill(a, options.timeout))
    return [results[p] for p in programs]


def _collect(a: _Active) -> FileResult:
    try:
        result = a.conn.recv()
    except (EOFError, OSError):
        a.process.join(5)
        code = a.process.exitcode
        result = FileResult(a.path, FAILED, [f"Worker process died (exit code {code})."])
    a.conn.close()
    a.process.join(5)
    return result


def _kill(a: _Active, timeout: float) -> FileResult:
    a.process.kill()
    a.process.join(5)
    a.conn.close()
    seconds = round(time.monotonic() - a.started, 3)
    return FileResult(a.path, FAILED, [f"Timed out after {timeout:g} s."], seconds=seconds)


# ---------------------------------------------------------------- reporting


@dataclass
class TestReport:
    """The results of a test run, for callers such as pytest drivers."""

    __test__ = False  # not a pytest test class

    results: list[FileResult]

    @property
    def ok(self) -> bool:
        """No program failed (unsupported and skipped ones do not count)."""
        return not any(r.status == FAILED for r in self.results)

    def __str__(self) -> str:
        parts = [format_failure(r) for r in self.results if r.status != PASSED]
        return "\n".join([*parts, summary_line(self.results)])


def run_tests(
    paths: Iterable[str | os.PathLike], options: TestOptions | None = None
) -> TestReport:
    """Test programs and directories of programs: the library form of `futgen test`."""
    programs = collect_programs(os.fspath(p) for p in paths)
    return TestReport(run_programs(programs, options or TestOptions()))


def summary_line(results: list[FileResult]) -> str:
    """`N passed, N failed`, plus unsupported and skipped counts when nonzero."""
    counts = {s: sum(r.status == s for r in results) for s in (PASSED, FAILED, UNSUPPORTED, SKIPPED)}
    line = f"{counts[PASSED]} passed, {counts[FAILED]} failed"
    for s in (UNSUPPORTED, SKIPPED):
        if counts[s]:
            line += f", {counts[s]} {s}"
    return line


def format_failure(result: FileResult) -> str:
    """What to print about a program that did not pass."""
    if result.status == UNSUPPORTED:
        return f"Unsupported: {result.path}: {result.feature}"
    return f"Error: {result.path}:\n" + "\n".join(result.messages)


def report_json(results: list[FileResult], options: TestOptions) -> dict[str, Any]:
    """Per-program outcomes for aggregation (e.g. per folder of a conformance run)."""
    files = []
    for r in results:
        d = asdict(r)
        d["run_counts"] = r.run_counts()
        files.append(d)
    summary = {s: sum(r.status == s for r in results) for s in (PASSED, FAILED, UNSUPPORTED, SKIPPED)}
    return {"backend": options.backend, "summary": summary, "files": files}


def run_test_command(
    paths: list[str], options: TestOptions, report_path: str | None = None, progress: bool = True
) -> int:
    """`futgen test`: run, print failures and a summary line; the exit status."""
    from tqdm import tqdm

    programs = collect_programs(paths)
    show = progress and sys.stderr.isatty()
    with tqdm(total=len(programs), file=sys.stderr, disable=not show, unit="prog") as bar:

        def on_result(result: FileResult) -> None:
            if result.status in (FAILED, UNSUPPORTED):
                tqdm.write(format_failure(result), file=sys.stdout)
            bar.update(1)

        results = run_programs(programs, options, on_result)
    print(summary_line(results))
    if report_path is not None:
        text = json.dumps(report_json(results, options), indent=1)
        if report_path == "-":
            print(text)
        else:
            with open(report_path, "w", encoding="utf-8") as f:
                f.write(text + "\n")
    return 1 if any(r.status == FAILED for r in results) else 0
