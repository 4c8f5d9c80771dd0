"""LocVolCalib compiled by two futgen trees, called alternately in one process.

Small LocVolCalib is bound by the host, whose speed varies by a quarter
from one process to the next, so two builds are compared inside one: the
package of `--baseline` (a checkout of another commit, which compiles it
in a subprocess) and this tree's, each with the tuned values of
`--tuning` (`--baseline-tuning` for the baseline's, where names differ), called in turns (`--rounds` rounds of 5 synchronised calls
each); the launches of one call are counted and every result is checked
against the `.out` file.  `--graphs` replays calls as CUDA graphs, `--fast-division` builds both so,
`--override NAME=VALUE ...` changes tuned values of both, and `--kernels`
prints each build's slowest kernels in one call of each dataset.

    python3 benchmarks/locvolcalib_ab.py --suite PATH --baseline DIR --tuning FILE
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "runtime"))
sys.path.insert(0, str(ROOT / "benchmarks"))


def _instance(lib, tuning: Path, overrides: dict[str, int], graphs: bool,
              counts: list[int]):
    """An instance of package `lib` on CUDA whose launches add to counts[0]."""
    from futgen_runtime.tuning import read_tuning_file

    cls = next(getattr(lib, n) for n in dir(lib) if n.startswith("Lvc"))
    unknown: list[str] = []
    values = {**read_tuning_file(tuning, lib.TUNING_PARAMS, unknown), **overrides}
    if unknown:  # tuning names renumber as the compiler changes: say which did not apply
        print(f"{tuning}: not parameters of {lib.__name__}: {', '.join(unknown)}")
    inst = cls(backend="cuda", device_results=True, tuning=values, graphs=graphs)
    b = inst._backend()
    launch = b.launch_sig

    def counted(*args):
        counts[0] += 1
        return launch(*args)

    b.launch_sig = counted
    return inst


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--suite", required=True)
    ap.add_argument("--baseline", required=True, help="a futgen tree of another commit")
    ap.add_argument("--tuning", required=True)
    ap.add_argument("--baseline-tuning", help="the baseline's tuning file (default: --tuning)")
    ap.add_argument("--datasets", default="small,medium")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--graphs", action="store_true")
    ap.add_argument("--override", nargs="+", default=[], metavar="NAME=VALUE")
    ap.add_argument("--kernels", action="store_true")
    ap.add_argument("--fast-division", action="store_true", help="both builds with --fast-division")
    args = ap.parse_args()
    overrides = {k: int(v) for k, v in (o.split("=") for o in args.override)}
    import pycuda.driver as cuda

    from futgen.codegen.package import build_package
    from futgen.data import load_file
    from futgen.testing.compiled import import_package

    prog = Path(args.suite).resolve() / "finpar" / "LocVolCalib.fut"
    base = Path(args.baseline).resolve()
    out = Path(tempfile.mkdtemp())
    from futgen.pipeline import Options

    options = Options(fast_division=args.fast_division)
    build = ("import sys; from futgen.codegen.package import build_package; "
             "from futgen.pipeline import Options; "
             "build_package(sys.argv[1], sys.argv[2], name='lvcbase', "
             "options=Options(fast_division=sys.argv[3] == '1'))")
    subprocess.run([sys.executable, "-c", build, str(prog), str(out), str(int(args.fast_division))],
                   cwd=base, check=True,
                   env={**os.environ, "PYTHONPATH": os.pathsep.join(
                       [str(base), str(base / "runtime"), *sys.path])})
    counts = {"baseline": [0], "this tree": [0]}
    libs = {"baseline": import_package(out / "lvcbase"),
            "this tree": import_package(build_package(prog, out, name="lvchead", options=options))}
    tunings = {"baseline": Path(args.baseline_tuning or args.tuning),
               "this tree": Path(args.tuning)}
    insts = {k: _instance(lib, tunings[k], overrides, args.graphs, counts[k])
             for k, lib in libs.items()}
    for ds in args.datasets.split(","):
        inputs = load_file(prog.parent / "LocVolCalib-data" / f"{ds}.in")
        want = load_file(prog.parent / "LocVolCalib-data" / f"{ds}.out")[0]
        for k, inst in insts.items():
            counts[k][0] = 0
            got = inst.main(*inputs).get()
            err = float(np.max(np.abs(got - want)) / np.max(np.abs(want)))
            assert err < 2e-3, (ds, k, err)
            print(f"{ds} {k}: {counts[k][0]} launches a call, rel err {err:.1e}", flush=True)
        times: dict[str, list[float]] = {k: [] for k in insts}
        for _ in range(args.rounds):
            for k, inst in insts.items():
                for _ in range(5):
                    t0 = time.perf_counter()
                    inst.main(*inputs)
                    cuda.Context.synchronize()
                    times[k].append((time.perf_counter() - t0) * 1e3)
        print(ds + ": " + ", ".join(f"{k} {np.median(v):.3f} ms (min {np.min(v):.3f})"
                                    for k, v in times.items()), flush=True)
        if args.kernels:
            from locvolcalib import _kernel_profile

            for k, inst in insts.items():
                print(f"{ds} {k}:")
                _kernel_profile(lambda i=inst, xs=inputs: i.main(*xs), top=10)


if __name__ == "__main__":
    main()
