"""Where the time of a matrix product of the paper's family goes: each kernel
of one entry call, per version, from PyTorch's profiler (CUDA activity).

(2^n x 2^m) @ (2^m x 2^n) with 2n + m = 28, device-resident f32, for the
`n` given; versions as in `versions.py` (`outer`: tiled, split where tiles
are few; `outer_unsplit`; `flat`; `torch`: `torch.matmul`, TF32 off, for
its kernels beside ours).  Prints, per case, the wall time of a
call and each kernel's mean time in µs.  With `--once`, runs each case once
and prints nothing else: for wrapping in `ncu`.  `--split-tk` builds with
another chunk length for split kernels (`tiling.SPLIT_TK`), to compare.

Run on the GPU machine:  python3 benchmarks/profile_products.py --n 6 10
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from gpu_baseline import gpu_time  # the same timing loop
from kernels import BIG, build

CALLS = 20


def kernel_times(fn, sync) -> dict[str, float]:
    """Mean µs per call of each kernel `fn` launches."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(CALLS):
            fn()
        sync()
    return {e.key: e.device_time_total / CALLS for e in prof.key_averages()
            if e.device_time_total > 0}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, nargs="+", default=[6, 8, 10])
    ap.add_argument("--versions", default="outer,outer_unsplit,flat")
    ap.add_argument("--once", action="store_true")
    ap.add_argument("--split-tk", type=int, help="build with split chunks of this many iterations")
    args = ap.parse_args()
    if args.split_tk:
        from futgen.codegen.cuda import tiling

        tiling.SPLIT_TK = args.split_tk
    import torch
    from pycuda import gpuarray

    lib = build()
    lib.BenchKernels(backend="cuda").plus_one(np.zeros(4, np.float32))  # the context, compiled
    sync = torch.cuda.synchronize
    keys = list(lib.TUNING_PARAMS)
    guard = next(k for k in keys if k.startswith("matmul.suff_outer_par"))
    split = next(k for k in keys if k.startswith("matmul.segmap_unsplit"))
    versions = {"outer": {guard: 0}, "outer_unsplit": {guard: 0, split: 0}, "flat": {guard: BIG}}
    rng = np.random.default_rng(0)
    for n in args.n:
        m = 28 - 2 * n
        a = gpuarray.to_gpu(rng.random((1 << n, 1 << m), dtype=np.float32))
        b = gpuarray.to_gpu(rng.random((1 << m, 1 << n), dtype=np.float32))
        for name in args.versions.split(","):
            if name == "torch":
                torch.backends.cuda.matmul.allow_tf32 = False
                ta, tb = (torch.as_tensor(x.get(), device="cuda") for x in (a, b))

                def call(ta=ta, tb=tb):
                    return torch.matmul(ta, tb)
            else:
                inst = lib.BenchKernels(backend="cuda", device_results=True,
                                        tuning=versions[name])

                def call(i=inst, a=a, b=b):
                    return i.matmul(a, b)
            call()
            sync()
            if args.once:
                continue

            wall = gpu_time(call, sync) * 1e6
            times = kernel_times(call, sync)
            kernels = ", ".join(f"{k} {v:.1f}"
                                for k, v in sorted(times.items(), key=lambda kv: -kv[1]))
            print(f"n={n:2d} {name:13s} call {wall:8.1f} µs  kernels {sum(times.values()):8.1f} µs:"
                  f" {kernels}", flush=True)


if __name__ == "__main__":
    main()
