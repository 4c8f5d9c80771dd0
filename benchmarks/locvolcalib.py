"""LocVolCalib (finpar) on CUDA: each of incremental flattening's choices
forced, on the three datasets, checked against the `.out` files.

    python3 benchmarks/locvolcalib.py --suite PATH [--out DIR]

`--suite` is a checkout of github:diku-dk/futhark-benchmarks (nothing of it
is copied here).  Versions, by setting every threshold of the package:

* `outer`: every guard takes its outer version (0): a thread per strike,
  the whole valuation sequential in it (moderate flattening's choice);
* `intra`: the outer versions never (2000000000), the intra-block ones
  always (0): a block per strike where that fits, else the flat version's
  parts, a block per (strike, row) for the tridiagonal solves;
  `intra32`, `intra64`, `intra128`: the same with the intra-block kernels'
  blocks at most 32, 64 or 128 threads (`intra_tblock_size`), each thread
  a run of a row;
* `flat`: neither: everything flattened, the solves as scans over all rows;
* `default`: the untuned thresholds (32768);
* `tuned` (with `--tune`): what `futgen autotune` found on the three
  datasets, `--tune-timeout` seconds making a slower first call lose (the
  outer version's: 4-20 s a call; 12 by default, since large's all-flat
  calls take 6 s, and a dataset whose every run fails leaves the choice to
  the others), written to `OUT/LocVolCalib.fut.tuning`; with
  `--tune-graphs`, timing calls replayed as CUDA graphs (`autotune
  --graphs`); or (`--tuning FILE`) the values of an earlier tuning;
* `override`: the tuned values with those of `--override NAME=VALUE ...`;
  `tuned32`: with the intra-block kernels' blocks at most a warp (a row of
  256 is a run of 8 per thread);
* any of them with `+graphs`: the same values, calls replayed as CUDA
  graphs (`graphs=True`); with `+fastdiv` (before `+graphs`): the same
  values in a build with `--fast-division` (f32 division within 2 ulp, as
  XLA divides).

`--kernels` adds each version's slowest kernels (PyTorch's profiler),
`--host-profile` its host functions (cProfile).

Times are medians of synchronised calls (the inputs are scalars), in ms;
three calls where one takes over 0.2 s, and the checked call alone where
it took over `--slow` seconds.  Each result is checked against
the `.out` file with a relative tolerance of 2e-3 (absolute 1e-4).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from versions import timed  # median of synchronised calls; three when slow

BIG = 2_000_000_000


def _sync() -> None:
    import pycuda.driver as cuda

    cuda.Context.synchronize()


def _kernel_profile(call, top: int = 8) -> list[tuple[str, int, float]]:
    """(kernel, launches, total µs) of one call's slowest kernels, printed;
    the first line is every kernel together beside the call's wall time."""
    from torch.profiler import ProfilerActivity, profile

    t0 = time.perf_counter()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        call()
        _sync()
    wall = (time.perf_counter() - t0) * 1e6
    events = sorted(((e.key, e.count, e.device_time_total) for e in prof.key_averages()
                     if e.device_time_total > 0), key=lambda e: -e[2])
    busy = sum(e[2] for e in events)
    print(f"    kernels {busy:.0f} us of {wall:.0f} us wall, {sum(e[1] for e in events)} launches")
    for key, count, total in events[:top]:
        print(f"    {total:12.0f} us {count:7d}x  {key[:70]}")
    return [("(all)", sum(e[1] for e in events), busy), *events[:top]]


def _host_profile(call, top: int = 25) -> None:
    """The host functions one call spends its time in, by own time."""
    import cProfile
    import pstats

    prof = cProfile.Profile()
    prof.enable()
    call()
    _sync()
    prof.disable()
    pstats.Stats(prof).sort_stats("tottime").print_stats(top)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--suite", required=True)
    ap.add_argument("--out", default=".")
    ap.add_argument("--datasets", default="small,medium,large")
    ap.add_argument("--versions", default="default,outer,intra,flat")
    ap.add_argument("--kernels", action="store_true",
                    help="also profile one call of each version: its slowest kernels")
    ap.add_argument("--host-profile", action="store_true",
                    help="also profile one call of each version on the host (cProfile)")
    ap.add_argument("--tune", action="store_true",
                    help="first `futgen autotune` it on its three datasets; version `tuned` "
                         "runs with the values found")
    ap.add_argument("--tuning", help="a tuning file (`name=value` lines) for version `tuned`, "
                                     "instead of tuning anew")
    ap.add_argument("--override", nargs="+", default=[], metavar="NAME=VALUE",
                    help="version `override`: the tuned values with these changed")
    ap.add_argument("--tune-graphs", action="store_true",
                    help="autotune with calls replayed as CUDA graphs (autotune --graphs)")
    ap.add_argument("--tune-fast-division", action="store_true",
                    help="tune the --fast-division build (the `+fastdiv` versions' build)")
    ap.add_argument("--tune-timeout", type=float, default=12.0,
                    help="autotune's --timeout (s): a slower first call loses")
    ap.add_argument("--slow", type=float, default=2.0,
                    help="a version whose checked call takes longer (s) is timed by that call alone")
    args = ap.parse_args()
    from futgen.codegen.package import build_package
    from futgen.data import load_file
    from futgen.testing.compiled import import_package

    prog = Path(args.suite) / "finpar" / "LocVolCalib.fut"
    t0 = time.perf_counter()
    lib = import_package(build_package(prog, Path(tempfile.mkdtemp()) / "lvc", name="lvc"))
    print(f"build: {time.perf_counter() - t0:.2f} s", flush=True)
    # versions named `...+fastdiv` run a build with --fast-division
    fast_lib = lib
    if "+fastdiv" in args.versions or args.tune_fast_division:
        from futgen.pipeline import Options

        fast_lib = import_package(build_package(prog, Path(tempfile.mkdtemp()) / "lvc", name="lvc",
                                                options=Options(fast_division=True)))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tuning: dict = {}
    if args.tune:
        from futgen.tune.driver import autotune

        t0 = time.perf_counter()
        from futgen.pipeline import Options

        result, text = autotune(str(prog), "cuda", 5, args.tune_timeout,
                                graphs=args.tune_graphs, say=lambda s: print(s, flush=True),
                                options=Options(fast_division=args.tune_fast_division))
        tuning = {"values": result.values, "runs": result.runs,
                  "seconds": time.perf_counter() - t0}
        (out / "LocVolCalib.fut.tuning").write_text(text)
        print(text, f"tuning: {result.runs} runs, {tuning['seconds']:.1f} s", sep="\n",
              flush=True)
    if args.tuning:
        from futgen_runtime.tuning import read_tuning_file

        unknown: list[str] = []
        tuning = {"values": read_tuning_file(Path(args.tuning), lib.TUNING_PARAMS, unknown)}
        if unknown:
            print(f"{args.tuning}: not parameters of this build: {', '.join(unknown)}")
    names = list(lib.TUNING_PARAMS)
    outer = [n for n in names if "suff_outer_par" in n]
    intra = [n for n in names if "suff_intra_par" in n]
    caps = [n for n in names if "intra_tblock_size" in n]
    versions = {"default": {}, "outer": dict.fromkeys(outer, 0),
                "intra": {**dict.fromkeys(outer, BIG), **dict.fromkeys(intra, 0)},
                # the same with blocks of at most 64 or 128 threads: runs of 4 or 2
                "intra64": {**dict.fromkeys(outer, BIG), **dict.fromkeys(intra, 0),
                            **dict.fromkeys(caps, 64)},
                "intra128": {**dict.fromkeys(outer, BIG), **dict.fromkeys(intra, 0),
                             **dict.fromkeys(caps, 128)},
                "intra32": {**dict.fromkeys(outer, BIG), **dict.fromkeys(intra, 0),
                            **dict.fromkeys(caps, 32)},
                "flat": dict.fromkeys(outer + intra, BIG),
                "tuned": tuning.get("values", {})}
    # the tuned values with the intra-block kernels at one warp a block
    versions["tuned32"] = {**versions["tuned"], **dict.fromkeys(caps, 32)}
    versions["override"] = {**versions["tuned"], **{
        k: int(v) for k, v in (o.split("=") for o in args.override)}}
    versions = {v: versions[v.replace("+fastdiv", "").removesuffix("+graphs")]
                for v in args.versions.split(",")}
    rows = []
    for dataset in args.datasets.split(","):
        data = prog.parent / "LocVolCalib-data"
        inputs = load_file(data / f"{dataset}.in")
        want = load_file(data / f"{dataset}.out")[0]
        row: dict = {"dataset": dataset}
        for name, tuning in versions.items():
            built = fast_lib if "+fastdiv" in name else lib
            inst = built.Lvc(backend="cuda", device_results=True, tuning=tuning,
                             graphs=name.endswith("+graphs"))
            inst.main(*inputs)  # compiles and loads the kernels
            _sync()
            t0 = time.perf_counter()
            got = inst.main(*inputs).get()
            first = time.perf_counter() - t0
            err = float(np.max(np.abs(got - want) / np.maximum(np.abs(want), 1e-30)))
            row[f"{name}_ms"] = first * 1e3 if first > args.slow else timed(
                lambda i=inst, xs=inputs: i.main(*xs), _sync)
            row[f"{name}_relerr"] = err
            row[f"{name}_ok"] = bool(np.allclose(got, want, rtol=2e-3, atol=1e-4))
            print(dataset, name, f"{row[name + '_ms']:.3f} ms", f"rel err {err:.1e}",
                  flush=True)
            if args.kernels and first < 30:
                row[f"{name}_kernels"] = _kernel_profile(lambda i=inst, xs=inputs: i.main(*xs))
            if args.host_profile and first < 30:
                _host_profile(lambda i=inst, xs=inputs: i.main(*xs))
        rows.append(row)
    (out / "locvolcalib.json").write_text(json.dumps({"rows": rows, "tuning": tuning}, indent=1))
    print("\ndataset   " + "  ".join(f"{v:>10s}" for v in versions))
    for row in rows:
        print(f"{row['dataset']:8s}  " + "  ".join(
            f"{row[v + '_ms']:10.3f}" + ("" if row[v + "_ok"] else "!") for v in versions))


if __name__ == "__main__":
    main()
