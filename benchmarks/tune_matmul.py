"""Issue 10's matrix family: autotune on one size, test on larger ones.

The product (2^n x 2^m) @ (2^m x 2^n) of the incremental-flattening papers.
`futgen autotune` (CUDA) trains on 2n + m = 20, n = 0..10 (random inputs in
the test blocks of a generated program); then, on 2n + m = 20 (the training
shapes, other values), 25 and 28, device-resident f32, each dataset is
timed as

* tuned (the tuning file baked in), untuned (default thresholds), moderate
  (`--flattening=moderate`: one version);
* every single version forced (`futgen.tune.forest.version_runs`: each
  root-to-leaf path of the threshold forest, named by the guards it takes);
* `torch.matmul` with TF32 off.

Times are medians of 30 calls (three interleaved passes over all
configurations, 10 calls each) after a warm-up, each call timed with CUDA
events by the package (`time_calls`) or around torch; a warm-up slower
than 0.2 s is the time.  A forced version
whose time at a smaller size, scaled by the work, predicts more than 2 s
per call is not run (one thread per output adding 2^28 products takes
24 s).  Results are checked against torch (relative error).

Run on the GPU machine:  python3 benchmarks/tune_matmul.py --out DIR
Writes DIR/tune_matmul.json, DIR/matmul.fut(.tuning); prints a table last.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "runtime"))

SOURCE = """\
-- (2^n x 2^m) @ (2^m x 2^n), 2n + m = {total}: the autotuner's training datasets.
-- ==
-- entry: matmul
{datasets}
entry matmul [n][m][p] (a: [n][m]f32) (b: [m][p]f32) : [n][p]f32 =
  map (\\row -> map (\\col -> f32.sum (map2 (*) row col)) (transpose b)) a
"""
RUNS = 10
ROUNDS = 3  # passes over all configurations, RUNS calls each per pass
TOO_SLOW_S = 2.0  # predicted slower per call than this: not run
ONE_SAMPLE_S = 0.2  # a warm-up slower than this is the time (no further calls)


def program(out: Path, total: int) -> Path:
    sets = "\n".join(f"-- random input {{ [{1 << n}][{1 << (total - 2 * n)}]f32 "
                     f"[{1 << (total - 2 * n)}][{1 << n}]f32 }}" for n in range(11))
    path = out / "matmul.fut"
    path.write_text(SOURCE.format(total=total, datasets=sets))
    return path


def label(setting: dict[str, int]) -> str:
    """A forced version's name: the guards it takes (`!` where not)."""
    from futgen.tune.autotune import INF

    parts = []
    for name, v in sorted(setting.items(), key=lambda kv: int(kv[0].rsplit("_", 1)[1])):
        short = name.split(".", 1)[1].rsplit("_", 1)[0]
        parts.append(("!" if v == INF else "") + short)
    return " ".join(parts)


def path_label(guards: list) -> str:
    """The version a call ran, named as `label` names a forced one."""
    taken = sorted(((name, t) for name, _, t in guards),
                   key=lambda g: int(g[0].rsplit("_", 1)[1]))
    return " ".join(("" if t else "!") + name.split(".", 1)[1].rsplit("_", 1)[0]
                    for name, t in taken)


def torch_time(a, b) -> tuple[float, object]:
    import torch

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    c = a @ b
    times = []
    for _ in range(RUNS):
        start.record()
        c = a @ b
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return float(np.median(times)), c


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".")
    ap.add_argument("--train", type=int, default=20)
    ap.add_argument("--strategies", action="store_true",
                    help="also tune the kernels' strategy guards")
    ap.add_argument("--test", default="20,25,28",
                    help="sizes 2n + m to time (the training size first predicts slow versions)")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    import torch

    from futgen.pipeline import Options
    from futgen.testing.compiled import compile_package
    from futgen.tune.driver import autotune
    from futgen.tune.forest import version_runs

    torch.backends.cuda.matmul.allow_tf32 = False
    src = program(out, args.train)
    t0 = time.perf_counter()
    result, text = autotune(str(src), "cuda", RUNS, 30.0, strategies=args.strategies,
                            say=lambda s: print(s, flush=True))
    tune_s = time.perf_counter() - t0
    tuning = Path(f"{src}.tuning")
    tuning.write_text(text)
    print(text, flush=True)
    print(f"tuning: {result.runs} runs, {tune_s:.1f} s", flush=True)

    builds = {}
    for name, kw in (("tuned", {"tuning": str(tuning)}), ("untuned", {"find_tuning": False}),
                     ("moderate", {"find_tuning": False,
                                   "options": Options(flattening="moderate")})):
        t0 = time.perf_counter()
        builds[name] = compile_package(str(src), "cuda", **kw)
        print(f"build {name}: {time.perf_counter() - t0:.1f} s", flush=True)
    untuned = builds["untuned"]
    forced = {label(s): s for s in version_runs(untuned.module.TUNING_PARAMS)}
    rows, last_ms = [], {}
    for total in (int(t) for t in args.test.split(",")):
        for n in range(11):
            m = total - 2 * n
            a = torch.rand((1 << n, 1 << m), device="cuda")
            b = torch.rand((1 << m, 1 << n), device="cuda")
            row = {"total": total, "n": n, "m": m}
            row["torch_us"], c = torch_time(a, b)
            want = c.cpu().numpy()
            scale = max(float(np.abs(want).max()), 1e-30)
            configs = [(k, builds[k], None) for k in ("tuned", "untuned", "moderate")]
            configs += [(k, untuned, s) for k, s in forced.items()]
            samples: dict[str, list[float]] = {}
            slow: set[str] = set()  # a warm-up this slow is the time: no further calls
            for rnd in range(ROUNDS):  # interleaved, so that drift hits all alike
                for key, pkg, setting in configs:
                    if rnd == 0 and setting is not None and \
                            last_ms.get(key, 0.0) * (1 << (total - 20)) > TOO_SLOW_S * 1e3:
                        row[f"{key}_us"] = None  # predicted from a smaller size, scaled up
                        continue
                    if rnd > 0 and (key not in samples or key in slow):
                        continue
                    pkg.set_tuning(setting or {})
                    if rnd == 0:  # the warm-up, checked
                        got, times = pkg.time_calls("matmul", [a, b], 1)
                        row[f"{key}_err"] = float(np.abs(got[0] - want).max()) / scale
                        if key in ("tuned", "untuned"):
                            row[f"{key}_guards"] = pkg.last_guards()
                        samples[key] = []
                        if times[0] > ONE_SAMPLE_S * 1e6:
                            slow.add(key)
                            samples[key] = list(times)
                    if key not in slow:
                        samples[key] += pkg.time_calls("matmul", [a, b], RUNS)[1]
                    if setting is not None:
                        pkg.set_tuning({k: untuned.module.TUNING_PARAMS[k]["default"]
                                        for k in setting})
            for key, times in samples.items():
                row[f"{key}_us"] = float(np.median(times))
                last_ms[key] = row[f"{key}_us"] / 1e3 / (1 << (total - 20))
            singles = {k: row[f"{k}_us"] for k in forced if row.get(f"{k}_us") is not None}
            row["best_single"] = min(singles, key=singles.get)
            row["tuned_over_best"] = row["tuned_us"] / singles[row["best_single"]]
            row["tuned_version"] = path_label(row["tuned_guards"])
            rows.append(row)
            print(f"2n+m={total} n={n:2d}: torch {row['torch_us']:10.1f}  tuned "
                  f"{row['tuned_us']:10.1f}  untuned {row['untuned_us']:10.1f}  moderate "
                  f"{row['moderate_us']:10.1f}  best single {singles[row['best_single']]:10.1f} "
                  f"({row['best_single']})  tuned/best {row['tuned_over_best']:.2f}", flush=True)
            del a, b, c
            torch.cuda.empty_cache()
    info = {"device": torch.cuda.get_device_name(), "date": time.strftime("%Y-%m-%d"),
            "train": args.train, "tuning_runs": result.runs, "tuning_s": tune_s,
            "tuning": text, "versions": list(forced), "rows": rows}
    (out / "tune_matmul.json").write_text(json.dumps(info, indent=1, default=str))
    print("\n| 2n+m | n | torch µs | tuned | untuned | moderate | best single (version) "
          "| tuned / best | torch / tuned |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        best = r[f"{r['best_single']}_us"]
        print(f"| {r['total']} | {r['n']} | {r['torch_us']:.1f} | {r['tuned_us']:.1f} | "
              f"{r['untuned_us']:.1f} | {r['moderate_us']:.1f} | {best:.1f} ({r['best_single']}) "
              f"| {r['tuned_over_best']:.2f}{same(r)} | {r['torch_us'] / r['tuned_us']:.2f} |")


def same(row: dict) -> str:
    """A mark where tuned ran the best single version itself (its ratio is noise)."""
    return " (same)" if row["tuned_version"] == row["best_single"] else ""


if __name__ == "__main__":
    main()
