"""The logistic-loss gradient of benchmarks/programs/gradient.fut with its
version guards forced, on CUDA: what BENCHMARKS.md quotes for the tuned guard.

For (n, d) = (2^20, 64) and (2^16, 1024), times `logistic_grad` with the
default tuning, with each version guard (`suff_*`, `*threshold*`) set to
2^62 alone, and with all of them, checking each result against the
default's.  Median of synchronised calls (gpu_baseline.gpu_time).

Run on the GPU machine:  python3 benchmarks/ad_gradient_versions.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from gpu_baseline import build, gpu_time  # the same build and timing loop

INF = 2**62
SHAPES = ((2**20, 64), (2**16, 1024))


def main() -> None:
    import pycuda.autoprimaryctx  # noqa: F401
    import pycuda.driver as drv
    from pycuda import gpuarray

    lib = build("gradient", Path(tempfile.mkdtemp(prefix="futgen-ad-")))
    guards = [k for k in lib.TUNING_PARAMS
              if k.startswith("logistic_grad") and ("threshold" in k or "suff" in k)]
    print(guards)
    rng = np.random.default_rng(0)
    for n, d in SHAPES:
        X = (rng.standard_normal((n, d)) / np.sqrt(d)).astype(np.float32)
        y = rng.uniform(0, 1, n).astype(np.float32)
        w = rng.standard_normal(d).astype(np.float32)
        gX, gy, gw = (gpuarray.to_gpu(a) for a in (X, y, w))
        settings = [("default", {})] + [(f"{g}=inf", {g: INF}) for g in guards] \
            + [("all=inf", dict.fromkeys(guards, INF))]
        ref = None
        for name, tuning in settings:
            inst = lib.BenchGradient(backend="cuda", device_results=True, tuning=tuning)
            got = inst.logistic_grad(gX, gy, gw).get()
            ref = got if ref is None else ref
            t = gpu_time(lambda inst=inst, args=(gX, gy, gw): inst.logistic_grad(*args),
                         drv.Context.synchronize)
            ok = np.allclose(got, ref, rtol=1e-4, atol=1e-6)
            print(f"n={n} d={d} {name:60s} {t * 1e3:8.3f} ms  ok={ok}")


if __name__ == "__main__":
    main()
