"""Issue 10 item 5: the tile sizes `futgen autotune` searches, on matrix products.

A tiled kernel's chunk length (`segmap_tile_size_<k>`, the loop iterations
of each shared-memory tile) is compiled into it; the tuner tries every value
the kernel allows on the datasets that launch it, after the thresholds.
This script tunes a product program on square and split-K shapes, prints
the tuner's lines (each candidate's time relative to the default), then
times each dataset with the tuned file, with the same thresholds but the
tile sizes at their defaults, and `torch.matmul` (TF32 off), medians of
three interleaved passes of 20 calls, checked against torch.

Run on the GPU machine:  python3 benchmarks/tile_sizes.py --out DIR
Writes DIR/tile_sizes.json and DIR/products.fut(.tuning); a table last.
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

SHAPES = [(1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096), (4096, 256, 4096),
          (64, 1 << 18, 64), (256, 1 << 14, 256)]
SOURCE = """\
-- Matrix products of the shapes the tile-size search is measured on.
-- ==
-- entry: matmul
{datasets}
entry matmul [n][m][p] (a: [n][m]f32) (b: [m][p]f32) : [n][p]f32 =
  map (\\row -> map (\\col -> f32.sum (map2 (*) row col)) (transpose b)) a
"""
RUNS, ROUNDS = 20, 3


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    import torch

    from futgen.testing.compiled import compile_package
    from futgen.tune.driver import autotune

    torch.backends.cuda.matmul.allow_tf32 = False
    src = out / "products.fut"
    src.write_text(SOURCE.format(datasets="\n".join(
        f"-- random input {{ [{n}][{m}]f32 [{m}][{p}]f32 }}" for n, m, p in SHAPES)))
    t0 = time.perf_counter()
    result, text = autotune(str(src), "cuda", 10, 30.0, say=lambda s: print(s, flush=True))
    tune_s = time.perf_counter() - t0
    tuning = Path(f"{src}.tuning")
    tuning.write_text(text)
    print(text, f"tuning: {result.runs} runs, {tune_s:.1f} s", sep="\n", flush=True)
    pkg = compile_package(str(src), "cuda", tuning=str(tuning))
    params = pkg.module.TUNING_PARAMS
    tiles = {k for k in params if params[k]["class"] == "tile_size"}
    tuned = dict(result.values)
    configs = {"tuned": tuned,
               "default tiles": {**tuned, **{k: params[k]["default"] for k in tiles}}}
    rows = []
    for n, m, p in SHAPES:
        a = torch.rand((n, m), device="cuda")
        b = torch.rand((m, p), device="cuda")
        want = (a @ b).cpu().numpy()
        row: dict = {"shape": [n, m, p]}
        samples: dict[str, list[float]] = {k: [] for k in (*configs, "torch")}
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        for _ in range(ROUNDS):
            for key, setting in configs.items():
                pkg.set_tuning(setting)
                got, times = pkg.time_calls("matmul", [a, b], RUNS + 1)
                samples[key] += times[1:]
                row[f"{key}_err"] = float(np.abs(got[0] - want).max() / np.abs(want).max())
                row[f"{key}_tiles"] = {k: setting[k] if k in setting else params[k]["default"]
                                       for k in pkg.last_sizes() if k in tiles}
            for _ in range(RUNS):
                start.record()
                a @ b
                end.record()
                end.synchronize()
                samples["torch"].append(start.elapsed_time(end) * 1e3)
        for key, times in samples.items():
            row[f"{key}_us"] = float(np.median(times))
        rows.append(row)
        print(row, flush=True)
    info = {"device": torch.cuda.get_device_name(), "date": time.strftime("%Y-%m-%d"),
            "tuning_runs": result.runs, "tuning_s": tune_s, "tuning": text, "rows": rows}
    (out / "tile_sizes.json").write_text(json.dumps(info, indent=1))
    print(f"\n{info['device']}, {info['date']}: µs (medians)\n")
    print("| n x m x p | tile sizes (tuned) | tuned | default tiles | torch | "
          "default / tuned | torch / tuned |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for r in rows:
        n, m, p = r["shape"]
        used = ", ".join(f"{k.split('.', 1)[1]}={v}" for k, v in r["tuned_tiles"].items())
        print(f"| {n} x {m} x {p} | {used} | {r['tuned_us']:.1f} | {r['default tiles_us']:.1f} "
              f"| {r['torch_us']:.1f} | {r['default tiles_us'] / r['tuned_us']:.2f} | "
              f"{r['torch_us'] / r['tuned_us']:.2f} |")


if __name__ == "__main__":
    main()
