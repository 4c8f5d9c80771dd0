"""LocVolCalib (finpar) in JAX: the peer futgen's LocVolCalib is measured
against (issue 10), written from the Futhark program's semantics.

    python3 benchmarks/locvolcalib_jax.py --suite PATH [--out DIR]

One `jax.jit` of the whole valuation: the strikes by `vmap`, the time steps
by `lax.fori_loop`, each step's tridiagonal systems solved as the Futhark
program solves them (`tridagPar`: three `lax.associative_scan`s, of
normalised 2 x 2 matrices and of linear functions), all in f32.  (With
`lax.linalg.tridiagonal_solve` instead, cuSPARSE's batched gtsv2, the small
dataset took 11.95 s a call on an H200.)  Each result is checked against the `.out` file with a relative
tolerance of 2e-3 (absolute 1e-4); times are medians of 10 synchronised
calls after a warm-up, in ms.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from functools import partial
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

RUNS = 10


def build():
    """The jitted `main(outer, numX, numY, numT, s0, t, alpha, nu, beta)`."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    def operator(x):
        """initOperator: first and second derivative stencils, [n][3] each."""
        dxl = x[1:-1] - x[:-2]
        dxu = x[2:] - x[1:-1]
        s = dxl + dxu
        d_mid = jnp.stack([-dxu / dxl / s, (dxu / dxl - dxl / dxu) / s, dxl / dxu / s], 1)
        dd_mid = jnp.stack([2 / dxl / s, -2 * (1 / dxl + 1 / dxu) / s, 2 / dxu / s], 1)
        lo, hi = x[1] - x[0], x[-1] - x[-2]
        zero = jnp.zeros((1, 3), x.dtype)
        d = jnp.concatenate([jnp.stack([0 * lo, -1 / lo, 1 / lo])[None], d_mid,
                             jnp.stack([-1 / hi, 1 / hi, 0 * hi])[None]])
        return d, jnp.concatenate([zero, dd_mid, zero])

    def explicit(d, dd, mu, var, r):
        """explicitMethod on rows of `r` ([n][m]), stencils along m."""
        coef = mu[..., None] * d + 0.5 * var[..., None] * dd  # [n][m][3]
        left = jnp.pad(r[:, :-1], ((0, 0), (1, 0)))
        right = jnp.pad(r[:, 1:], ((0, 0), (0, 1)))
        return coef[..., 0] * left + coef[..., 1] * r + coef[..., 2] * right

    def shifted(first, rest):
        """`first` then `rest` along the last axis (the scans' neutral elements)."""
        return jnp.concatenate([jnp.full(rest.shape[:-1] + (1,), first, rest.dtype), rest], -1)

    def matmul(x, y):  # 2 x 2 matrix products, normalised (tridagPar's operator)
        (a1, a2, a3), (b1, b2, b3) = x, y
        value = 1 / (1 + b1 * a2)
        return (a1 + b1 * a3) * value, (b2 + b3 * a2) * value, (b2 * a1 + b3 * a3) * value

    def compose(x, y):  # linear functions
        (a0, a1), (b0, b1) = x, y
        return b0 + b1 * a0, a1 * b1

    def tridag(a, b, c, y):
        """tridagPar on the last axis: a below, b on and c above the diagonal."""
        b0, y0 = b[..., :1], y[..., :1]
        inv = 1 / b[..., 1:]
        mats = (shifted(0, -a[..., 1:] * c[..., :-1] * inv), shifted(0, inv),
                shifted(1, jnp.zeros_like(inv)))
        t1, t2, t3 = lax.associative_scan(matmul, mats, axis=-1)
        b = (b0 + t1) / (t2 * b0 + t3)
        f0, f1 = lax.associative_scan(
            compose, (shifted(0, y[..., 1:]), shifted(1, -a[..., 1:] / b[..., :-1])), axis=-1)
        y = f0 + f1 * y0
        yn = y[..., -1:] / b[..., -1:]
        back = (shifted(0, (y / b)[..., ::-1][..., 1:]), shifted(1, (-c / b)[..., ::-1][..., 1:]))
        g0, g1 = lax.associative_scan(compose, back, axis=-1)
        return (g0 + g1 * yn)[..., ::-1]

    def implicit(d, dd, mu, var, u, dt_inv):
        """implicitMethod: one tridiagonal solve per row of `u`."""
        coef = mu[..., None] * d + 0.5 * var[..., None] * dd
        return tridag(-0.5 * coef[..., 0], dt_inv - 0.5 * coef[..., 1], -0.5 * coef[..., 2], u)

    def value(strike, num_x, num_y, num_t, s0, t, alpha, nu, beta):
        timeline = t * jnp.arange(num_t, dtype=jnp.float32) / (num_t - 1.0)
        std_x, std_y = 20 * alpha * s0 * jnp.sqrt(t), 10 * nu * jnp.sqrt(t)
        dx, dy = std_x / num_x, std_y / num_y
        x_index, y_index = (s0 / dx).astype(jnp.int32), num_y // 2
        xs = jnp.arange(num_x, dtype=jnp.float32) * dx - x_index * dx + s0
        ys = jnp.arange(num_y, dtype=jnp.float32) * dy - y_index * dy + jnp.log(alpha)
        d_x, dd_x = operator(xs)
        d_y, dd_y = operator(ys)
        payoff = jnp.broadcast_to(jnp.maximum(xs - strike, 0), (num_y, num_x))
        mu_x = jnp.zeros((num_y, num_x), jnp.float32)
        mu_y = jnp.zeros((num_x, num_y), jnp.float32)
        var_y = jnp.full((num_x, num_y), nu * nu, jnp.float32)

        def step(k, result):
            j = num_t - 2 - k  # the time steps backwards
            tnow, tnext = timeline[j], timeline[j + 1]
            var_x = jnp.exp(2 * (beta * jnp.log(xs)[None, :] + ys[:, None]
                                 - 0.5 * nu * nu * tnow))
            dt_inv = 1 / (tnext - tnow)
            u = dt_inv * result + 0.5 * explicit(d_x, dd_x, mu_x, var_x, result)
            v = explicit(d_y, dd_y, mu_y, var_y, result.T)
            u = implicit(d_x, dd_x, mu_x, var_x, u + v.T, dt_inv)
            y = dt_inv * u.T - 0.5 * v
            return implicit(d_y, dd_y, mu_y, var_y, y, dt_inv).T

        result = lax.fori_loop(0, num_t - 1, step, payoff)
        return result[y_index, x_index]

    @partial(jax.jit, static_argnums=(0, 1, 2, 3))
    def main(outer, num_x, num_y, num_t, s0, t, alpha, nu, beta):
        strikes = 0.001 * jnp.arange(outer, dtype=jnp.float32)
        return jax.vmap(lambda k: value(k, num_x, num_y, num_t, s0, t, alpha, nu, beta))(strikes)

    return main


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--suite", required=True)
    ap.add_argument("--out", default=".")
    ap.add_argument("--datasets", default="small,medium,large")
    args = ap.parse_args()
    import jax

    from futgen.data import load_file

    fn = build()
    data = Path(args.suite) / "finpar" / "LocVolCalib-data"
    rows = []
    for dataset in args.datasets.split(","):
        inputs = load_file(data / f"{dataset}.in")
        want = load_file(data / f"{dataset}.out")[0]
        ints = [int(v) for v in inputs[:4]]
        floats = [np.float32(v) for v in inputs[4:]]

        def call(ints=ints, floats=floats):
            return fn(*ints, *floats).block_until_ready()

        t0 = time.perf_counter()
        got = np.asarray(call())
        compile_s = time.perf_counter() - t0
        times = []
        for _ in range(RUNS):
            t0 = time.perf_counter()
            call()
            times.append((time.perf_counter() - t0) * 1e3)
        err = float(np.max(np.abs(got - want) / np.maximum(np.abs(want), 1e-30)))
        row = {"dataset": dataset, "jax_ms": float(np.median(times)), "jax_relerr": err,
               "jax_ok": bool(np.allclose(got, want, rtol=2e-3, atol=1e-4)),
               "compile_s": compile_s, "device": str(jax.devices()[0])}
        rows.append(row)
        print(dataset, f"{row['jax_ms']:.3f} ms", f"rel err {err:.1e}",
              "ok" if row["jax_ok"] else "WRONG", f"(first call {compile_s:.1f} s)", flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "locvolcalib_jax.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
