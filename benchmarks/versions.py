"""Incremental flattening's versions, each forced, beside PyTorch, in one run.

Builds benchmarks/programs/kernels.fut and times on device-resident f32:

* the matrix family of the incremental-flattening paper: (2^n x 2^m) @
  (2^m x 2^n) with 2n + m = 28, n = 0..10, as the package chooses by
  default and with each version forced (`outer`: the 2^2n outputs' space,
  each dot product sequential in its thread, tiled where large, the tiled
  loop split across blocks where tiles are fewer than SMs; `outer_unsplit`:
  the same never split; `flat`: one SegRed over all three dimensions),
  beside `torch.matmul` with TF32 off;
* row sums of 2^26 f32 as 2^k rows, k = 0..26: a reduction under one map,
  whose versions are the segmented reduction's strategies (a block or
  blocks, a warp, 8 lanes, or one thread per row), beside `torch.sum(x, 1)`;
* the papers' mapscan1 on 2^22 f32 as 2^k rows (`mapscan`): a thread or a
  block per row.

Each case is checked against float64 first (the error is recorded: one
thread adding 2^26 products in f32 is inaccurate, which is part of the
point).  Times are medians of synchronised calls (`gpu_baseline.gpu_time`);
a case slower than 0.2 s per call is timed three times instead.

Run on the GPU machine:  python3 benchmarks/versions.py --out DIR
Writes DIR/versions.json, prints a table last; `plot_versions.py` draws it.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from gpu_baseline import gpu_time  # the same timing loop
from kernels import BIG, build


def timed(fn, sync) -> float:
    """Milliseconds per call: the usual median, or three calls when slow."""
    t0 = time.perf_counter()
    fn()
    sync()
    first = time.perf_counter() - t0
    if first > 0.2:
        runs = []
        for _ in range(3):
            t0 = time.perf_counter()
            fn()
            sync()
            runs.append(time.perf_counter() - t0)
        return float(np.median(runs)) * 1e3
    return gpu_time(fn, sync) * 1e3


def matrices(lib, sync, rng, rows: list[dict], ns=range(11), only_versions=None) -> None:
    import torch
    from pycuda import gpuarray

    torch.backends.cuda.matmul.allow_tf32 = False
    guard = next(k for k in lib.TUNING_PARAMS if k.startswith("matmul.suff_outer_par"))
    split = next(k for k in lib.TUNING_PARAMS if k.startswith("matmul.segmap_unsplit"))
    tile = next(k for k in lib.TUNING_PARAMS if re.fullmatch(r"matmul\.segmap_tile_\d+", k))
    split64 = next(k for k in lib.TUNING_PARAMS if k.startswith("matmul.segmap_split_64"))
    versions = {"default": {}, "outer": {guard: 0}, "outer_unsplit": {guard: 0, split: 0},
                # tiled (and split) however few the outputs: tiles of 16 x 16 to 64 x 64
                "outer_tiled": {guard: 0, tile: 1},
                # the same with tiles of 64 x 64 always, most of them idle below 64
                "outer_tiled64": {guard: 0, tile: 1, split64: 1},
                "flat": {guard: BIG}}
    if only_versions:
        versions = {k: v for k, v in versions.items() if k in only_versions}
    for n in ns:
        m = 28 - 2 * n
        a_host = rng.random((1 << n, 1 << m), dtype=np.float32)
        b_host = rng.random((1 << m, 1 << n), dtype=np.float32)
        want = a_host.astype(np.float64) @ b_host.astype(np.float64)
        a, b = gpuarray.to_gpu(a_host), gpuarray.to_gpu(b_host)
        ta, tb = torch.from_numpy(a_host).cuda(), torch.from_numpy(b_host).cuda()
        row = {"family": "matmul", "n": n, "m": m,
               "torch_ms": timed(lambda ta=ta, tb=tb: ta @ tb, sync),
               "torch_err": _err((ta @ tb).cpu().numpy(), want)}
        for name, tuning in versions.items():
            if name == "outer_unsplit" and n < 6 or name.startswith("outer_tiled") and n >= 6:
                continue  # the same kernels as outer
            inst = lib.BenchKernels(backend="cuda", device_results=True, tuning=tuning)
            row[f"{name}_err"] = _err(inst.matmul(a, b).get(), want)
            row[f"{name}_ms"] = timed(lambda i=inst, a=a, b=b: i.matmul(a, b), sync)
            if name == "default":
                [outer] = [taken for name, _, taken in inst.last_guards
                           if name.startswith("matmul.suff_outer_par")]
                row["default_version"] = "outer" if outer else "flat"
        rows.append(row)
        _print(row)


def row_sums(lib, sync, rng, rows: list[dict]) -> None:
    import torch
    from pycuda import gpuarray

    keys = list(lib.TUNING_PARAMS)
    block = next(k for k in keys if k.startswith("row_sums.segred_block"))
    warp = next(k for k in keys if k.startswith("row_sums.segred_warp"))
    lanes = next(k for k in keys if k.startswith("row_sums.segred_subwarp"))
    versions = {"default": {}, "blocks": {block: 0}, "warp": {block: BIG, warp: 0},
                "lanes": {block: BIG, warp: BIG, lanes: 0},
                "thread": {block: BIG, warp: BIG, lanes: BIG}}
    total = 1 << 26
    host = rng.random(total, dtype=np.float32)
    x, tx = gpuarray.to_gpu(host), torch.from_numpy(host).cuda()
    for k in range(27):
        shape = (1 << k, total >> k)
        xs, txs = x.reshape(shape), tx.reshape(shape)
        want = host.reshape(shape).astype(np.float64).sum(axis=1)
        row = {"family": "row_sums", "k": k, "torch_ms": timed(lambda t=txs: torch.sum(t, 1), sync)}
        for name, tuning in versions.items():
            if name == "thread" and shape[1] > 1 << 16:
                continue  # one thread adding 2^17+ values: slow, and says nothing new
            inst = lib.BenchKernels(backend="cuda", device_results=True, tuning=tuning)
            row[f"{name}_err"] = _err(inst.row_sums(xs).get(), want)
            row[f"{name}_ms"] = timed(lambda i=inst, xs=xs: i.row_sums(xs), sync)
        rows.append(row)
        _print(row)


def mapscan(lib, sync, rng, rows: list[dict]) -> None:
    """The papers' mapscan1 over 2^22 i32 as 2^k rows of 2^(22-k), k = 4..20:
    a thread per row running the 16 rounds of map and scan sequentially
    (`outer`), a block per row sharing them in shared memory (`intra`; with
    blocks of at most 256 or 128 threads, `intra256`, `intra128`), or
    the map moved into the loop, each round one segmented scan over all
    rows (`flat`), beside torch running the rounds as whole-matrix adds and
    cumsums.  Sums
    wrap around in both, so results must be equal (`*_err` counts the
    elements that differ)."""
    import torch
    from pycuda import gpuarray

    outer = next(k for k in lib.TUNING_PARAMS if k.startswith("mapscan1.suff_outer_par"))
    intra = next(k for k in lib.TUNING_PARAMS if k.startswith("mapscan1.suff_intra_par"))
    caps = [k for k in lib.TUNING_PARAMS if k.startswith("mapscan1.intra_tblock_size")]
    versions = {"default": {}, "outer": {outer: 0}, "intra": {outer: BIG, intra: 0},
                # the intra version with blocks of at most 256 or 128 threads
                "intra256": {outer: BIG, intra: 0, **dict.fromkeys(caps, 256)},
                "intra128": {outer: BIG, intra: 0, **dict.fromkeys(caps, 128)},
                "flat": {outer: BIG, intra: BIG}}
    total = 1 << 22
    for k in range(4, 21, 2):
        shape = (1 << k, total >> k)
        host = rng.integers(-100, 100, shape, dtype=np.int32)
        x, tx = gpuarray.to_gpu(host), torch.from_numpy(host).cuda()
        ti = torch.arange(shape[0], device="cuda", dtype=torch.int32)[:, None]

        def rounds(t=tx, ti=ti):
            for _ in range(16):
                t = torch.cumsum(t + ti, dim=1, dtype=torch.int32)
            return t

        want = rounds().cpu().numpy()
        row = {"family": "mapscan1", "k": k, "torch_ms": timed(rounds, sync)}
        for name, tuning in versions.items():
            inst = lib.BenchKernels(backend="cuda", device_results=True, tuning=tuning)
            row[f"{name}_err"] = int((inst.mapscan1(x).get() != want).sum())
            row[f"{name}_ms"] = timed(lambda i=inst, x=x: i.mapscan1(x), sync)
            if name == "default":
                row["default_version"] = _taken(inst.last_guards)
        rows.append(row)
        _print(row)


def _taken(guards: list) -> str:
    """Which version of outer, intra and flat the guards of a call chose
    (the intra version also needs its block to fit: the call's log says
    only the thresholds)."""
    taken = {name.split(".")[1].rsplit("_", 1)[0]: t for name, _, t in guards}
    if taken.get("suff_outer_par"):
        return "outer"
    return "intra" if taken.get("suff_intra_par") else "flat"


def _err(got: np.ndarray, want: np.ndarray) -> float:
    """The largest error relative to the largest magnitude of the result."""
    scale = max(float(np.abs(want).max()), 1e-30) if want.size else 1.0
    return float(np.abs(got - want).max()) / scale if want.size else 0.0


def _print(row: dict) -> None:
    label = f"n={row['n']:2d} m={row['m']:2d}" if row["family"] == "matmul" else f"k={row['k']:2d}"
    label = label.ljust(11)
    times = " ".join(f"{k[:-3]} {v:9.3f}" for k, v in row.items() if k.endswith("_ms"))
    best = min(v for k, v in row.items() if k.endswith("_ms") and k != "torch_ms")
    print(f"{row['family']:8s} {label}  {times}  torch/best {row['torch_ms'] / best:7.3f}",
          flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".")
    ap.add_argument("--only", choices=["matmul", "row_sums", "mapscan1"])
    ap.add_argument("--n", type=int, nargs="+", default=list(range(11)),
                    help="the matrix family's n values")
    ap.add_argument("--versions", help="the matrix family's versions, comma-separated")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    import torch

    lib = build()
    lib.BenchKernels(backend="cuda").plus_one(np.zeros(4, np.float32))  # compiles kernels
    sync = torch.cuda.synchronize
    rng = np.random.default_rng(0)
    rows: list[dict] = []
    if args.only in (None, "matmul"):
        matrices(lib, sync, rng, rows, args.n,
                 args.versions.split(",") if args.versions else None)
    if args.only in (None, "row_sums"):
        row_sums(lib, sync, rng, rows)
    if args.only in (None, "mapscan1"):
        mapscan(lib, sync, rng, rows)
    device = torch.cuda.get_device_name()
    (out / "versions.json").write_text(json.dumps({"device": device, "rows": rows}, indent=1))
    print(f"\n{device}: torch time / futgen's best version (> 1: futgen faster)")
    for row in rows:
        _print(row)


if __name__ == "__main__":
    main()
