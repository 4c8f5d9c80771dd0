"""Baseline GPU figures for the walking skeleton (issue 3), beside PyTorch in the same run.

Builds the programs in benchmarks/programs/ with `futgen build --backend cuda`,
then times, on device-resident inputs (GPUArrays, `device_results=True`):

* saxpy (map2), sum (reduce) and prefix sum (scan) over 2^28 f32, as GB/s
  of compulsory traffic and as a fraction of the measured device-to-device
  copy bandwidth;
* the same operations in PyTorch (`a * x + y`, `torch.sum`, `torch.cumsum`);
* the host overhead of one call of a trivial entry point on a 1024-element
  NumPy array (copy in, launch, copy out), in microseconds.

Run on the GPU machine:  python3 benchmarks/gpu_baseline.py --out DIR
Prints a table last and writes DIR/gpu_baseline.json.
"""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
N = 1 << 28
REPEATS = 20


def build(name: str, out: Path) -> object:
    """Build benchmarks/programs/<name>.fut as package `bench_<name>` and import it."""
    pkg = f"bench_{name}"
    subprocess.run(
        [sys.executable, "-m", "futgen", "build", str(HERE / "programs" / f"{name}.fut"),
         "-o", str(out / pkg), "--backend", "cuda"],
        check=True,
    )
    if str(out) not in sys.path:
        sys.path.insert(0, str(out))
    return importlib.import_module(pkg)


def gpu_time(fn, sync) -> float:
    """Median seconds of `fn()` over REPEATS runs after one warm-up, synchronised."""
    fn()
    sync()
    times = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".")
    args = ap.parse_args()
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)

    import pycuda.autoprimaryctx  # noqa: F401
    import pycuda.driver as drv
    import torch
    from pycuda import gpuarray

    sync = drv.Context.synchronize
    rng = np.random.default_rng(0)
    host_x = rng.random(N, dtype=np.float32)
    host_y = rng.random(N, dtype=np.float32)
    x = gpuarray.to_gpu(host_x)
    y = gpuarray.to_gpu(host_y)
    tx = torch.from_numpy(host_x).cuda()
    ty = torch.from_numpy(host_y).cuda()
    tsync = torch.cuda.synchronize
    nbytes = N * 4

    rows = []
    copy_s = gpu_time(lambda: tx.clone(), tsync)
    copy_bw = 2 * nbytes / copy_s / 1e9
    rows.append(("copy (torch clone), read+write", copy_s, copy_bw, "torch"))

    with tempfile.TemporaryDirectory() as tmp:
        pkgs = {name: build(name, Path(tmp)) for name in ("saxpy", "sum", "prefix_sum", "trivial")}
        inst = {name: getattr(m, "".join(p.capitalize() for p in f"bench_{name}".split("_")))(
            backend="cuda", device_results=True) for name, m in pkgs.items()}

        a = np.float32(2.0)
        checks = {
            "saxpy": np.allclose(inst["saxpy"].main(a, x, y).get(), 2 * host_x + host_y,
                                 rtol=1e-5),
            "sum": bool(np.isclose(float(inst["sum"].main(x)), host_x.astype(np.float64).sum(),
                                   rtol=1e-3)),
            "prefix_sum": np.allclose(inst["prefix_sum"].main(x).get()[-1],
                                      host_x.astype(np.float64).sum(), rtol=1e-3),
        }
        cases = [
            ("saxpy", lambda: inst["saxpy"].main(a, x, y), 3 * nbytes,
             lambda: 2.0 * tx + ty),
            ("sum", lambda: inst["sum"].main(x), nbytes, lambda: torch.sum(tx)),
            ("prefix sum", lambda: inst["prefix_sum"].main(x), 2 * nbytes,
             lambda: torch.cumsum(tx, 0)),
        ]
        for label, fn, traffic, tfn in cases:
            s = gpu_time(fn, sync)
            rows.append((f"futgen {label}", s, traffic / s / 1e9, "futgen"))
            ts = gpu_time(tfn, tsync)
            rows.append((f"torch {label}", ts, traffic / ts / 1e9, "torch"))

        small = np.ones(1024, dtype=np.float32)
        host_inst = pkgs["trivial"].BenchTrivial(backend="cuda")
        host_inst.main(small)
        calls = 2000
        t0 = time.perf_counter()
        for _ in range(calls):
            host_inst.main(small)
        overhead_us = (time.perf_counter() - t0) / calls * 1e6

    device = torch.cuda.get_device_name(0)
    result = {
        "device": device,
        "date": time.strftime("%Y-%m-%d"),
        "n": N,
        "copy_bandwidth_gbs": copy_bw,
        "rows": [{"what": r[0], "seconds": r[1], "gbs": r[2], "fraction_of_copy": r[2] / copy_bw}
                 for r in rows],
        "trivial_call_overhead_us": overhead_us,
        "checks": {k: bool(v) for k, v in checks.items()},
    }
    (out_dir / "gpu_baseline.json").write_text(json.dumps(result, indent=2))
    print(f"\n{device}, {result['date']}, n = 2^28 f32, median of {REPEATS}")
    print(f"{'what':34} {'ms':>8} {'GB/s':>8} {'of copy':>8}")
    for r in result["rows"]:
        print(f"{r['what']:34} {r['seconds'] * 1e3:8.3f} {r['gbs']:8.0f} "
              f"{r['fraction_of_copy']:8.2f}")
    print(f"trivial entry call (1024 f32 NumPy in/out): {overhead_us:.1f} us")
    print(f"results checked against NumPy: {result['checks']}")


if __name__ == "__main__":
    main()
