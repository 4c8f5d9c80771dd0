"""Generate the large test case of examples/tridiag.fut.

Writes `tridiag_1000.in`: a random diagonally dominant tridiagonal system of
1000 unknowns (a, b, c, y as f32 arrays; a[0] and c[n-1] are zero), and
`tridiag_1000.out`: its solution, computed independently with NumPy's dense
solver in f64 and rounded to f32.  Without the normalisation of the matrix
products in tridiag.fut, the products would overflow f32 long before row 1000.

Run from anywhere: python examples/data/gen_tridiag.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

N = 1000
SEED = 20261122
HERE = Path(__file__).resolve().parent


def system(n: int, seed: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, n).astype(np.float32)
    c = rng.uniform(-1, 1, n).astype(np.float32)
    a[0] = 0
    c[-1] = 0
    # |b| exceeds |a| + |c| by at least 0.5: strictly diagonally dominant.
    sign = np.where(rng.random(n) < 0.5, -1, 1)
    b = (sign * (np.abs(a) + np.abs(c) + rng.uniform(0.5, 2, n))).astype(np.float32)
    y = rng.uniform(-10, 10, n).astype(np.float32)
    return a, b, c, y


def solve(a, b, c, y) -> np.ndarray:
    m = np.diag(b.astype(np.float64))
    m += np.diag(a[1:].astype(np.float64), -1) + np.diag(c[:-1].astype(np.float64), 1)
    return np.linalg.solve(m, y.astype(np.float64)).astype(np.float32)


def f32_array(v: np.ndarray) -> str:
    """Futhark's text format; NumPy prints the shortest text that reads back exactly."""
    return "[" + ", ".join(f"{x!s}f32" for x in v) + "]\n"


def main() -> None:
    a, b, c, y = system(N, SEED)
    x = solve(a, b, c, y)
    (HERE / f"tridiag_{N}.in").write_text("".join(f32_array(v) for v in (a, b, c, y)))
    (HERE / f"tridiag_{N}.out").write_text(f32_array(x))


if __name__ == "__main__":
    main()
