"""Time the reference interpreter's vectorised SOACs on 10^6 elements.

Run `python benchmarks/interp_speed.py`; prints seconds per case.  Not a
test: timings depend on the machine, so nothing is asserted.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from futgen.frontend import check_source
from futgen.interp import Interpreter

SRC = r"""
entry map_lambda (xs: []i32) = map (\x -> x * 2 + 1) xs
entry reduce_lambda (xs: []i32) = reduce (\a b -> a + b) 0 xs
entry reduce_general (xs: []i32) = reduce (\a b -> if a > b then a else b) i32.lowest xs
entry scan_plus (xs: []i32) = scan (+) 0 xs
entry scan_general (xs: []i32) = scan (\a b -> a * 3 + b) 0 xs
entry map_if (xs: []f32) = map (\x -> if x > 0.5 then f32.sqrt x else x * x) xs
entry map_tuple (xs: []f32) (ys: []f32) = unzip (map2 (\x y -> (x + y, x * y)) xs ys)
entry map_gather (xs: []f32) (is: []i64) = map (\i -> xs[i] * 2) is
entry map_while (xs: []i32) = map (\x -> loop x = x % 100 + 1 while x > 1 do if x % 2 == 0 then x / 2 else 3 * x + 1) xs
entry filter_even (xs: []i32) = filter (\x -> x % 2 == 0) xs
entry hist_add (is: []i64) (vs: []i32) = hist (+) 0 1000 is vs
entry matvec [n][m] (a: [n][m]f32) (v: [m]f32) = map (\row -> f32.sum (map2 (*) row v)) a
"""

N = 1_000_000


def main() -> None:
    it = Interpreter(check_source(SRC, "bench.fut"))
    rng = np.random.default_rng(0)
    xs = rng.integers(-1000, 1000, N).astype(np.int32)
    fs = rng.random(N, dtype=np.float32)
    is_ = rng.integers(0, N, N).astype(np.int64)
    hs = rng.integers(-10, 1010, N).astype(np.int64)
    cases = [
        ("map_lambda", [xs]), ("reduce_lambda", [xs]), ("reduce_general", [xs]),
        ("scan_plus", [xs]), ("scan_general", [xs]), ("map_if", [fs]),
        ("map_tuple", [fs, fs]), ("map_gather", [fs, is_]), ("map_while", [xs]),
        ("filter_even", [xs]), ("hist_add", [hs, xs]),
        ("matvec", [fs.reshape(1000, 1000), fs[:1000].copy()]),
    ]
    for name, args in cases:
        t0 = time.perf_counter()
        it.call(name, args)
        print(f"{name:16s} {time.perf_counter() - t0:8.3f} s")
    print("vectoriser:", it.vec.stats)


if __name__ == "__main__":
    main()
