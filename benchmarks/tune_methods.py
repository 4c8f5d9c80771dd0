"""The autotuner's two methods on one program: runs, time and result.

Tunes PROGRAM with `--method search` (the paper's runs) and `--method
profile` (two profiled runs per size-variant threshold, checked by a third),
then times each dataset untuned and with each tuning file
(`futgen.tune.bench`, 10 runs).  By default the program is
tests/programs/tune/lud_shaped.fut with larger datasets (a guard that sees
n parallelisms in one run: the LUD case of the papers).

    python3 benchmarks/tune_methods.py [--program P] [--sizes 128,512] --out DIR

Writes DIR/tune_methods.json and the tuning files; prints a table last.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "runtime"))
LUD_SHAPED = ROOT / "tests" / "programs" / "tune" / "lud_shaped.fut"


def lud_shaped(out: Path, sizes: list[int]) -> Path:
    """The LUD-shaped test program with random datasets of the given sizes."""
    text = LUD_SHAPED.read_text()
    sets = "\n".join(f"-- random input {{ [{n}][{n}]f32 }}" for n in sizes)
    text = re.sub(r"(-- random input \{[^}]*\}\n)+", sets + "\n", text, count=1)
    path = out / "lud_shaped.fut"
    path.write_text(text)
    return path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--program")
    ap.add_argument("--sizes", default="128,512")
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--strategies", action="store_true",
                    help="also tune the kernels' strategy guards")
    ap.add_argument("--out", default=".")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    from futgen.tune.bench import benchmark
    from futgen.tune.driver import autotune

    program = Path(args.program) if args.program else lud_shaped(
        out, [int(n) for n in args.sizes.split(",")])
    info = {"program": str(program), "backend": args.backend, "methods": {}}
    for method in ("search", "profile"):
        start = time.perf_counter()
        result, text = autotune(str(program), args.backend, 10, 60.0, method=method,
                                strategies=args.strategies, say=lambda s: print(s, flush=True))
        seconds = time.perf_counter() - start
        tuning = out / f"{program.name}.{method}.tuning"
        tuning.write_text(text)
        info["methods"][method] = {"runs": result.runs, "seconds": seconds,
                                   "values": result.values, "tuning": str(tuning),
                                   "log": result.log}
        print(f"{method}: {result.runs} runs, {seconds:.1f} s, {result.values}", flush=True)
    timings: dict[str, dict[str, float]] = {}
    for label, kw in (("untuned", {"find_tuning": False}),
                      *((m, {"tuning": info["methods"][m]["tuning"]})
                        for m in ("search", "profile"))):
        for r in benchmark(str(program), args.backend, 10, **kw):
            for name, t in r.timings.items():
                timings.setdefault(name, {})[label] = t.median
            info["device"] = r.device
    info["timings"] = timings
    (out / "tune_methods.json").write_text(json.dumps(info, indent=1))
    print(f"\n{program.name} on {info.get('device')}:")
    for method, m in info["methods"].items():
        print(f"- {method}: {m['runs']} runs, {m['seconds']:.1f} s, values {m['values']}")
    print("\n| dataset | untuned µs | search-tuned µs | profile-tuned µs |\n|---|---|---|---|")
    for name, t in timings.items():
        print(f"| {name} | {t['untuned']:.0f} | {t['search']:.0f} | {t['profile']:.0f} |")


if __name__ == "__main__":
    main()
