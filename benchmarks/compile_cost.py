"""What incremental flattening costs at compile time, per benchmark program.

    python benchmarks/compile_cost.py --suite PATH [--json OUT]

For each of the 13 programs of `futhark_programs.PROGRAMS` (in a checkout
of github:diku-dk/futhark-benchmarks), compiles the program to host code and
CUDA kernels (`compile_program`: everything `futgen build` does but writing
files and running nvcc) with `--flattening=moderate` and `incremental`, and
prints the version guards, the tuning parameters and the compile times
(the best of three) of each.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from futhark_programs import PROGRAMS


def cost(path: Path, flattening: str) -> dict:
    from futgen.codegen.package import compile_program
    from futgen.pipeline import Options

    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        compiled = compile_program(path, Options(flattening=flattening))
        times.append(time.perf_counter() - t0)
    params = compiled.host.tuning_params
    return {"seconds": min(times), "guards": len(compiled.host.guards),
            "thresholds": sum(cls == "threshold" for cls, *_ in params.values()),
            "kernels": sum(len(p.launches) for p in compiled.host.plans)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--suite", required=True, type=Path)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    rows = []
    print(f"{'program':34s} {'guards':>6s} {'thresholds':>10s} {'kernels':>13s} "
          f"{'moderate s':>10s} {'incremental s':>13s} {'ratio':>6s}")
    for prog in PROGRAMS:
        path = args.suite / prog.path
        mod, inc = cost(path, "moderate"), cost(path, "incremental")
        rows.append({"program": prog.path, "moderate": mod, "incremental": inc})
        print(f"{prog.path:34s} {inc['guards']:6d} {mod['thresholds']:4d} -> {inc['thresholds']:3d} "
              f"{mod['kernels']:5d} -> {inc['kernels']:4d} {mod['seconds']:10.3f} "
              f"{inc['seconds']:13.3f} {inc['seconds'] / mod['seconds']:6.2f}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
