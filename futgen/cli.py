"""The `futgen` command line.

    futgen check prog.fut                 type-check; silent on success
    futgen run prog.fut [-e ENTRY] [-b]   values on stdin, results on stdout
    futgen test PATH... [--backend B] [-j N] [--timeout S] [--report-json F]
    futgen dump [--ir STAGE] [--check-ir] prog.fut
                                          print the program after a pass (core, simplify, fuse, ...)
    futgen build prog.fut -o PKGDIR [--version V] [--backend B] [--wheel] [--dist D] [--check-ir]
    futgen dataset [-s SEED] [-b | --text | -t] [--T-bounds=MIN:MAX] -g TYPE ...
    futgen bench PROGRAM... [--backend B] [-r N] [--json F] [--tuning F] [-e ENTRY] [--plot PNG]
                 [--graphs]
    futgen bench --compare OLD.json NEW.json [--plot PNG]
    futgen autotune PROGRAM [--backend B] [-r N] [--timeout S] [-e ENTRY] [--method M]
                            [--noise F] [--strategies] [--graphs] [-o FILE]
    futgen --version

Every `FutgenError` (compile errors, bad input data, run-time failures of the
program) is printed to stderr without a traceback and gives exit status 1, as
is an ill-typed IR that `--check-ir` (or flattening's kernel-rule check) finds.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from futgen import __version__
from futgen.errors import FutgenError

if TYPE_CHECKING:
    from futgen.pipeline import Options


def _print_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """A compiler warning as one line on stderr, without Python's source location."""
    print(f"warning: {message}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_usage(sys.stderr)
        return 2
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _print_warning
            return args.handler(args)
    except FutgenError as e:
        _print_error(str(e))
        return 1
    except KeyboardInterrupt:
        return 130


def _print_error(message: str) -> None:
    if not message.startswith("Error"):
        message = "Error: " + message
    print(message, file=sys.stderr)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="futgen", description="Compile a practical subset of Futhark to Python packages."
    )
    p.add_argument("--version", action="version", version=f"futgen {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    check = sub.add_parser("check", help="type-check a program")
    check.add_argument("program")
    check.set_defaults(handler=_check)

    run = sub.add_parser("run", help="run an entry point on values from stdin")
    run.add_argument("program")
    run.add_argument("-e", "--entry-point", default="main", metavar="NAME", dest="entry")
    run.add_argument("-b", "--binary-output", action="store_true", help="print results in binary")
    run.add_argument("--backend", default="interpreter")
    run.set_defaults(handler=_run)

    dump = sub.add_parser("dump", help="print a program as one stage of the pipeline sees it")
    dump.add_argument("--ir", choices=_dump_stages(), default="core",
                      help="core (internalised), a pass's name (after it; see futgen.pipeline), "
                           "gpu (after every pass) or versions (the GPU IR's version tree)")
    dump.add_argument("program")
    _pass_arguments(dump)
    dump.set_defaults(handler=_dump)

    build = sub.add_parser("build", help="compile a program into a Python package (and wheel)")
    build.add_argument("program")
    build.add_argument("-o", "--output", required=True, metavar="DIR",
                       help="the package directory; its name is the package's import name")
    build.add_argument("--name", help="package name (default: the name of DIR); if given, "
                       "DIR's name must be the same")
    build.add_argument("--version", default="0.1.0", help="package version (default 0.1.0)")
    build.add_argument("--backend", choices=("auto", "cpu", "cuda"), default="auto",
                       help="the backend instances use unless told otherwise")
    build.add_argument("--wheel", action="store_true", help="also build a wheel")
    build.add_argument("--dist", metavar="DIR",
                       help="where the wheel goes (default: dist/ beside the package directory)")
    _tuning_arguments(build, "bake into the module's TUNING")
    _pass_arguments(build)
    build.set_defaults(handler=_build)

    test = sub.add_parser("test", help="run the test blocks of programs")
    test.add_argument("paths", nargs="+", metavar="PATH", help=".fut files or directories")
    test.add_argument("--backend", default="interpreter")
    test.add_argument("-j", "--jobs", type=int, default=1, metavar="N", help="programs at once")
    test.add_argument("--timeout", type=float, default=120.0, metavar="S", help="per program")
    test.add_argument("--exclude", action="append", default=[], metavar="TAG",
                      help="also skip programs and runs with this tag")
    test.add_argument("--tolerance", type=float, default=None, help="float tolerance")
    test.add_argument("--report-json", metavar="FILE", help="per-program results ('-': stdout)")
    test.add_argument("--no-progress", action="store_true", help="no progress bar")
    test.add_argument("--versions", action="store_true",
                      help="run each case under every version of the compiled code (thresholds "
                           "forced along each path of the threshold forest)")
    _pass_arguments(test)  # for the compiled backends (cpu, cuda)
    test.set_defaults(handler=_test)

    bench = sub.add_parser(
        "bench", help="time entry points on the datasets of their test blocks",
        description="Time each dataset of the programs' test blocks (not those tagged nobench): "
        "a warm-up run checked against the expected output, then --runs timed runs, from after "
        "the inputs are on the device to before the results leave it.  With --compare, set two "
        "--json files side by side instead.")
    bench.add_argument("programs", nargs="*", metavar="PROGRAM")
    _dataset_run_arguments(bench)
    bench.add_argument("-r", "--runs", type=int, default=10, help="timed runs per dataset")
    bench.add_argument("--json", metavar="FILE", help="write the runtimes as futhark bench does")
    bench.add_argument("--plot", metavar="PNG", help="draw the medians (or the speedups of "
                       "--compare) into a PNG (needs matplotlib)")
    bench.add_argument("--compare", nargs=2, metavar=("OLD", "NEW"),
                       help="compare two --json files: speedup per dataset")
    bench.add_argument("--no-progress", action="store_true", help="no progress bar")
    bench.add_argument("--graphs", action="store_true",
                       help="on CUDA, replay each call as a CUDA graph (the packages' graphs=True)")
    _tuning_arguments(bench, "build the programs with")
    _pass_arguments(bench)
    bench.set_defaults(handler=_bench)

    tune = sub.add_parser(
        "autotune", help="tune a program's thresholds, block and tile sizes on the datasets "
        "of its test blocks",
        description="Find threshold values that run the fastest version on each dataset "
        "(the monotonic, dataset-sensitive algorithm of Munksgaard et al.), then the block "
        "and tile sizes of the kernels the runs launched (each tried at every candidate "
        "value), and write them to PROGRAM.tuning, which futgen build, test and bench then "
        "use.")
    tune.add_argument("program")
    _dataset_run_arguments(tune)
    tune.add_argument("-r", "--runs", type=int, default=10,
                      help="timed calls per run; the fastest counts (default 10)")
    tune.add_argument("--timeout", type=float, default=60.0, metavar="S",
                      help="a version whose first call took longer loses, and is not called "
                           "again (a call is not interrupted; default 60)")
    from futgen.tune import NOISE

    tune.add_argument("--noise", type=float, default=NOISE, metavar="FRACTION",
                      help="times within this fraction of each other are a tie, which "
                           f"leaves the threshold to other datasets or its default ({NOISE})")
    tune.add_argument("--method", choices=("search", "profile"), default="search",
                      help="search (default): the paper's runs; profile: time each guarded "
                           "version inside the program and decide a threshold whose "
                           "parallelism varies within a run from two runs, checked by a third")
    tune.add_argument("--strategies", action="store_true",
                      help="also tune the kernels' strategy guards (tiles, split loops, "
                           "reduction strategies), not only the version guards")
    tune.add_argument("--graphs", action="store_true",
                      help="on CUDA, time calls replayed as CUDA graphs (for packages used "
                           "with graphs=True: without the host's launch costs, which can "
                           "hide a kernel's gain)")
    tune.add_argument("-o", "--output", metavar="FILE",
                      help="the tuning file (default PROGRAM.tuning)")
    _pass_arguments(tune)
    tune.set_defaults(handler=_autotune)

    _dataset_parser(sub)
    return p


class _Ordered(argparse.Action):
    """`futgen dataset` options act in order: a format or bounds option
    applies to the `-g` options after it, as in `futhark dataset`."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        if not hasattr(namespace, "orders") or namespace.orders is None:
            namespace.orders = []
        namespace.orders.append((self.const or option_string, values))


def _dataset_parser(sub) -> None:
    from futgen.data.dataset import FORMATS
    from futgen.data.values import PRIM_DTYPES

    ds = sub.add_parser(
        "dataset", help="random values of given types, as futhark dataset",
        description="Write random values of the given types (or literal values) to stdout in "
        "Futhark's data format; with no -g, convert the values on stdin.  Options act in "
        "order: a format or bounds option applies to the -g options after it.",
        epilog="example: futgen dataset -b -g [1024][1024]f32 --i64-bounds=0:1023 -g [100]i64")
    ds.set_defaults(orders=[], handler=_dataset)
    ds.add_argument("-g", "--generate", action=_Ordered, const="generate", metavar="TYPE",
                    help="a value of this type, e.g. i64 or [10][3]f32 (or a literal value)")
    ds.add_argument("-s", "--seed", type=int, default=1, help="the random seed (default 1)")
    for fmt, flags in zip(FORMATS, (["--text"], ["-b", "--binary"], ["-t", "--type"])):
        ds.add_argument(*flags, action=_Ordered, nargs=0, const=fmt,
                        help=f"write the following values as {fmt}" +
                        (" (the default)" if fmt == "text" else ""))
    for prim in PRIM_DTYPES:
        if prim != "bool":
            ds.add_argument(f"--{prim}-bounds", action=_Ordered, const=f"bounds:{prim}",
                            metavar="MIN:MAX", help=argparse.SUPPRESS if prim != "i32" else
                            "bounds of random values of the type (here i32; one option "
                            "per primitive type, e.g. --f32-bounds=-1:1)")


def _require_file(path: str) -> None:
    if not os.path.isfile(path):
        raise FutgenError(f"{path}: no such file")


def _check(args: argparse.Namespace) -> int:
    from futgen.frontend import load

    _require_file(args.program)
    load(args.program)
    return 0


def _run(args: argparse.Namespace) -> int:
    from futgen.data import check_arguments, encode_binary, format_value, read_values
    from futgen.testing.runner import entry_param_types, get_backend

    _require_file(args.program)
    program = get_backend(args.backend).compile(args.program)
    entries = program.entry_points()
    if args.entry not in entries:
        known = ", ".join(sorted(entries)) or "none"
        raise FutgenError(f"unknown entry point {args.entry!r}; the program has: {known}")
    values = read_values(sys.stdin.buffer.read(), "<stdin>")
    check_arguments(args.entry, entry_param_types(entries[args.entry]), values)
    results = program.call(args.entry, values)
    if args.binary_output:
        for v in results:
            sys.stdout.buffer.write(encode_binary(v))
        sys.stdout.buffer.flush()
    else:
        for v in results:
            print(format_value(v))
    return 0


def _pass_arguments(p: argparse.ArgumentParser) -> None:
    """The options of the passes (`futgen.pipeline.Options`)."""
    from futgen.flatten import FLATTENINGS

    p.add_argument("--flattening", choices=FLATTENINGS, default=FLATTENINGS[0],
                   help="incremental (default): versions guarded by tunable thresholds; "
                        "moderate: one version per parallel construct")
    p.add_argument("--check-ir", action="store_true",
                   help="type-check the IR before and after every pass (a compiler bug "
                        "shows as an error naming the pass, the function and the statement)")
    p.add_argument("--no-fusion", dest="fusion", action="store_false",
                   help="skip the fuse pass (to measure what fusion gains; flattening still "
                        "fuses the kernel bodies it builds)")
    p.add_argument("--fast-division", action="store_true",
                   help="f32 division in CUDA kernels within 2 ulp over the whole range "
                        "(PTX div.full.f32, as XLA and Triton divide), not correctly rounded: "
                        "about half the instructions (the CPU backend still rounds correctly)")


def _dataset_run_arguments(p: argparse.ArgumentParser) -> None:
    """What `bench` and `autotune` share: where and which datasets run, and
    how their results are checked."""
    p.add_argument("--backend", choices=("auto", "cpu", "cuda"), default="auto",
                   help="auto (default): CUDA if there is a device, else the CPU backend")
    p.add_argument("-e", "--entry-point", dest="entry", metavar="NAME",
                   help="only this entry point's datasets")
    p.add_argument("--tolerance", type=float, default=None,
                   help="float tolerance of the results check")


def _tuning_arguments(p: argparse.ArgumentParser, use: str) -> None:
    group = p.add_mutually_exclusive_group()
    group.add_argument("--tuning", metavar="FILE",
                       help=f"tuning file (name=value lines) to {use} (default: PROGRAM.tuning "
                            "beside the program, if present)")
    group.add_argument("--no-tuning", action="store_true",
                       help="ignore PROGRAM.tuning: the compiler's default thresholds")


def _options(args: argparse.Namespace) -> Options:
    from futgen.pipeline import Options

    options = Options(flattening=args.flattening, fusion=args.fusion,
                      fast_division=args.fast_division)
    # Without the flag, Options' default stands (FUTGEN_CHECK_IR).
    return replace(options, check_ir=True) if args.check_ir else options


@contextmanager
def _ir_errors_reported() -> Iterator[None]:
    """An ill-typed IR is a compiler bug, but one the user asked to see
    (`--check-ir`): printed as an error that names the pass, not a traceback."""
    from futgen.core.check import IRTypeError

    try:
        yield
    except IRTypeError as e:
        raise FutgenError(f"compiler bug: ill-typed IR {e}") from e


def _dump_after(path: str, stage: str, options: Options) -> str:
    """The program in `path` printed at `stage` (see `_dump_stages`)."""
    from futgen.core import load
    from futgen.core.check import check_program
    from futgen.core.pretty import pretty as pretty_core
    from futgen.gpu.pretty import pretty as pretty_gpu
    from futgen.gpu.pretty import version_tree
    from futgen.pipeline import is_gpu, run_passes

    prog = load(path)
    if stage == "core":
        if options.check_ir:  # run_passes checks its input, but is not run here
            check_program(prog)
        return pretty_core(prog)
    until = None if stage in ("gpu", "versions") else stage
    prog = run_passes(prog, until, options)
    if stage == "versions":
        return version_tree(prog)
    return (pretty_gpu if is_gpu(until) else pretty_core)(prog)


def _dump_stages() -> list[str]:
    """What `futgen dump --ir` takes: `core` (straight from internalisation),
    every pass's name (after it), `gpu` (the GPU IR the code generators take:
    after every pass) and `versions` (that IR's version tree)."""
    from futgen.pipeline import PASS_NAMES

    return ["core", *PASS_NAMES, "gpu", "versions"]


def _dump(args: argparse.Namespace) -> int:
    _require_file(args.program)
    with _ir_errors_reported():
        text = _dump_after(args.program, args.ir, _options(args))
    print(text, end="")
    return 0


def _build(args: argparse.Namespace) -> int:
    from futgen.codegen.package import build

    _require_file(args.program)
    out = Path(args.output)
    if args.name is not None and args.name != out.name:
        raise FutgenError(
            f"--name {args.name} does not match the package directory {args.output}: "
            f"a package is imported by its directory's name (use -o {out.parent / args.name})"
        )
    with _ir_errors_reported():
        pkg, wheel = build(args.program, out.parent, name=out.name, version=args.version,
                           backend_default=args.backend, wheel=args.wheel, dist_dir=args.dist,
                           options=_options(args), tuning=args.tuning,
                           find_tuning=not args.no_tuning)
    print(pkg)
    if wheel is not None:
        print(wheel)
    return 0


def _dataset(args: argparse.Namespace) -> int:
    from futgen.data.dataset import encode, generate, make_generator, parse_bounds
    from futgen.data.values import read_values

    fmt, bounds, generators = "text", {}, []
    for order, value in args.orders:
        if order.startswith("bounds:"):
            prim = order.split(":", 1)[1]
            bounds[prim] = parse_bounds(prim, value)
        elif order == "generate":
            generators.append(make_generator(value, bounds, fmt))
        else:
            fmt = order
    if generators:
        values = generate(generators, seed=args.seed)
    else:
        values = ((v, fmt) for v in read_values(sys.stdin.buffer.read(), "<stdin>"))
    out = sys.stdout.buffer
    for v, f in values:
        out.write(encode(v, f))
    out.flush()
    return 0


def _bench(args: argparse.Namespace) -> int:
    import json

    from futgen.tune import bench

    if args.compare:
        if args.programs:
            raise FutgenError("--compare takes two JSON files and no programs")
        old, new = (_read_json(f) for f in args.compare)
        rows = bench.compare(old, new)
        if not rows:
            raise FutgenError(f"{args.compare[0]} and {args.compare[1]} share no datasets")
        for line in bench.comparison_lines(rows):
            print(line)
        if args.plot:
            bench.plot(args.plot, comparisons=rows)
        return 0
    if not args.programs:
        raise FutgenError("no programs to benchmark (or use --compare OLD.json NEW.json)")
    if args.graphs:
        os.environ["FUTGEN_GRAPHS"] = "1"  # what the packages' instances read when made
    results = []
    for program in args.programs:
        _require_file(program)
        for result in bench.benchmark(program, args.backend, args.runs, entry=args.entry,
                                      tuning=args.tuning, find_tuning=not args.no_tuning,
                                      tolerance=args.tolerance, options=_options(args),
                                      progress=None if args.no_progress else _progress_bar):
            for line in bench.report_lines(result):
                print(line, flush=True)
            results.append(result)
    if args.json:
        Path(args.json).write_text(json.dumps(bench.to_json(results), indent=2) + "\n",
                                   encoding="utf-8")
    if args.plot:
        bench.plot(args.plot, results=results)
    return 1 if any(r.failures for r in results) else 0


def _progress_bar(name: str, runs: int):
    """A progress bar on stderr over one dataset's runs; its update function."""
    from tqdm import tqdm

    bar = tqdm(total=runs, desc=name[:40], leave=False, file=sys.stderr,
               disable=not sys.stderr.isatty())

    def update(_us: float) -> None:
        bar.update()
        if bar.n >= runs:
            bar.close()

    return update


def _autotune(args: argparse.Namespace) -> int:
    import time

    from futgen.tune.driver import autotune

    _require_file(args.program)
    if args.noise < 0 or args.timeout <= 0:
        raise FutgenError("--noise must be at least 0 and --timeout more than 0")
    out = Path(args.output or f"{args.program}.tuning")
    if args.entry is not None and args.output is None and out.exists():
        raise FutgenError(f"{out} exists: tuning one entry point would drop the other entry "
                          "points' values from it; name the output with -o")
    start = time.perf_counter()
    result, text = autotune(args.program, args.backend, args.runs, args.timeout,
                            entry=args.entry, tolerance=args.tolerance, noise=args.noise,
                            method=args.method, strategies=args.strategies,
                            graphs=args.graphs, options=_options(args),
                            say=lambda line: print(line, flush=True))
    out.write_text(text, encoding="utf-8")
    tuned = sum(t.interval is not None for t in result.thresholds)
    print(f"{tuned} of {len(result.thresholds)} thresholds tuned with {result.runs} runs in "
          f"{time.perf_counter() - start:.1f} s; wrote {out}")
    return 0


def _read_json(path: str) -> dict:
    import json

    _require_file(path)
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise FutgenError(f"{path}: not a JSON file: {e}") from None
    if not isinstance(data, dict):
        raise FutgenError(f"{path}: expected a JSON object of programs, as futhark bench writes")
    return data


def _test(args: argparse.Namespace) -> int:
    from futgen.pipeline import Options
    from futgen.testing.runner import (
        DEFAULT_EXCLUDE,
        TestOptions,
        get_backend,
        run_test_command,
    )

    get_backend(args.backend)  # unknown backends fail before any work
    passes = _options(args)
    if args.backend == "interpreter" and passes != Options():
        raise FutgenError("--flattening, --no-fusion, --check-ir and --fast-division set the "
                          "compiler's passes: use them with --backend cpu or cuda (the "
                          "interpreter runs the program as written)")
    options = TestOptions(
        backend=args.backend,
        jobs=max(1, args.jobs),
        timeout=args.timeout,
        exclude=DEFAULT_EXCLUDE + tuple(args.exclude),
        versions=args.versions,
        passes=passes,
    )
    if args.tolerance is not None:
        options.tolerance = args.tolerance
    return run_test_command(args.paths, options, args.report_json, progress=not args.no_progress)


if __name__ == "__main__":
    sys.exit(main())
