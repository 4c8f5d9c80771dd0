"""Gradients by `vjp` (reverse mode) on CUDA beside PyTorch autograd and JAX.

Builds benchmarks/programs/gradient.fut and times, on device-resident f32
inputs, the value and the gradient of

* the squared error of a logistic model, `X: [n][d]`, for (n, d) =
  (2^20, 64), (2^16, 1024), (2^12, 4096): the gradient in `w` is one map
  over the rows (its adjoint re-runs the row's dot product) and a sum of
  the rows' adjoints;
* 100 steps of a three-point stencil with `tanh` over 2^20 values: the
  gradient in the initial values reads the loop's values back from a tape.

Each futgen gradient is checked against torch's (relative error printed).
Times are medians of whole synchronised calls (gpu_baseline.gpu_time):
futgen's entry call, `torch.autograd.grad` of the same expression, and
`jax.jit(jax.grad(...))`.

Run on the GPU machine:  python3 benchmarks/ad_gradient.py --out DIR
Writes DIR/ad_gradient.json and prints a table last.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from gpu_baseline import build, gpu_time  # the same build and timing loop

LOGISTIC = [(2**20, 64), (2**16, 1024), (2**12, 4096)]
STENCIL = (2**20, 100)


def relerr(got, want) -> float:
    return float(np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-30))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".")
    args = ap.parse_args()
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    import jax
    import jax.numpy as jnp
    import pycuda.autoprimaryctx  # noqa: F401
    import pycuda.driver as drv
    import torch
    from pycuda import gpuarray

    sync = drv.Context.synchronize
    lib = build("gradient", Path(tempfile.mkdtemp(prefix="futgen-ad-")))
    inst = lib.BenchGradient(backend="cuda", device_results=True)
    rows = []

    def tsync() -> None:
        torch.cuda.synchronize()

    def record(case: str, what: str, fut_fn, torch_fn, jax_fn, err: float) -> None:
        row = {"case": case, "what": what, "futgen_ms": gpu_time(fut_fn, sync) * 1e3,
               "torch_ms": gpu_time(torch_fn, tsync) * 1e3,
               "jax_ms": gpu_time(lambda: jax_fn().block_until_ready(), lambda: None) * 1e3,
               "relerr_vs_torch": err}
        rows.append(row)
        print(json.dumps(row), flush=True)

    def t_loss(X, y, w):
        p = torch.sigmoid(X @ w)
        return ((p - y) ** 2).sum()

    def j_loss(X, y, w):
        p = jax.nn.sigmoid(X @ w)
        return ((p - y) ** 2).sum()

    j_grad = jax.jit(jax.grad(j_loss, argnums=2))
    j_val = jax.jit(j_loss)
    rng = np.random.default_rng(0)

    def logistic(n: int, d: int) -> None:
        X = (rng.standard_normal((n, d)) / np.sqrt(d)).astype(np.float32)
        y = rng.uniform(0, 1, n).astype(np.float32)
        w = rng.standard_normal(d).astype(np.float32)
        gX, gy, gw = (gpuarray.to_gpu(a) for a in (X, y, w))
        tX, ty = torch.from_numpy(X).cuda(), torch.from_numpy(y).cuda()
        tw = torch.from_numpy(w).cuda().requires_grad_()
        jX, jy, jw = (jnp.asarray(a) for a in (X, y, w))
        torch.backends.cuda.matmul.allow_tf32 = False
        want = torch.autograd.grad(t_loss(tX, ty, tw), tw)[0].cpu().numpy()
        got = inst.logistic_grad(gX, gy, gw).get()
        err = relerr(got, want)
        case = f"logistic n=2^{int(np.log2(n))} d={d}"
        record(case, "value", lambda: inst.logistic_loss(gX, gy, gw),
               lambda: t_loss(tX, ty, tw.detach()), lambda: j_val(jX, jy, jw), 0.0)
        record(case, "gradient", lambda: inst.logistic_grad(gX, gy, gw),
               lambda: torch.autograd.grad(t_loss(tX, ty, tw), tw),
               lambda: j_grad(jX, jy, jw), err)

    for n, d in LOGISTIC:
        logistic(n, d)

    n, steps = STENCIL

    def t_smooth(xs):
        for _ in range(steps):
            left = torch.cat([xs[:1], xs[:-1]])
            right = torch.cat([xs[1:], xs[-1:]])
            xs = torch.tanh(0.25 * left + 0.5 * xs + 0.25 * right)
        return (xs * xs).sum()

    def j_smooth(xs):
        def step(_, ys):
            left = jnp.concatenate([ys[:1], ys[:-1]])
            right = jnp.concatenate([ys[1:], ys[-1:]])
            return jnp.tanh(0.25 * left + 0.5 * ys + 0.25 * right)
        ys = jax.lax.fori_loop(0, steps, step, xs)
        return (ys * ys).sum()

    xs = rng.standard_normal(n).astype(np.float32)
    gxs, txs, jxs = gpuarray.to_gpu(xs), torch.from_numpy(xs).cuda().requires_grad_(), \
        jnp.asarray(xs)
    want = torch.autograd.grad(t_smooth(txs), txs)[0].cpu().numpy()
    got = inst.smooth_grad(np.int64(steps), gxs).get()
    case = f"stencil n=2^20 steps={steps}"
    sv, sg = jax.jit(j_smooth), jax.jit(jax.grad(j_smooth))
    record(case, "value", lambda: inst.smooth_value(np.int64(steps), gxs),
           lambda: t_smooth(txs.detach()), lambda: sv(jxs), 0.0)
    record(case, "gradient", lambda: inst.smooth_grad(np.int64(steps), gxs),
           lambda: torch.autograd.grad(t_smooth(txs), txs), lambda: sg(jxs),
           relerr(got, want))

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "ad_gradient.json").write_text(json.dumps({"device": torch.cuda.get_device_name(),
                                                      "rows": rows}, indent=1))
    print(f"\n{'case':28} {'what':9} {'futgen ms':>10} {'torch ms':>9} {'jax ms':>8} "
          f"{'rel.err':>8}")
    for r in rows:
        print(f"{r['case']:28} {r['what']:9} {r['futgen_ms']:10.3f} {r['torch_ms']:9.3f} "
              f"{r['jax_ms']:8.3f} {r['relerr_vs_torch']:8.1e}")


if __name__ == "__main__":
    main()
