"""Reductions, scans and segmented reductions on CUDA beside PyTorch, in one run.

Builds benchmarks/programs/kernels.fut and times, on device-resident f32
inputs (`device_results=True`), each case beside its PyTorch peer:

* sum, sum of squares and prefix sum of 2^28 values;
* row sums of 2^26 values as 2^k rows, k = 0..26, with the default
  strategy choice and each strategy forced (`tuning=`);
* prefix sums of 2^26 values as 2^k rows (torch `cumsum(x, 1)`), each
  strategy forced;
* histograms of 2^26 i64 bins into 256 and into 2^20 bins (torch `bincount`);
* the transpose of a 2^13 x 2^13 f32 matrix (torch `.t().contiguous()`);
* f32 matrix products, square 512 ... 4096 and 1024 x 256 @ 256 x 1024
  (torch `matmul`, TF32 off);
* the device-to-device copy bandwidth (torch `clone`), the memory roof;
* one call of a 1024-element map, NumPy in and out, and on device arrays.

Two times per case: `call`, the median wall time of a whole synchronised
entry call (what a Python user sees), and `kernel`, the median of the
kernels' own durations from CUPTI (torch.profiler, which sees every kernel
of the process).  GB/s are compulsory bytes (read, plus written where the
output is not tiny: scans, row sums, transposes) over the kernel time.

Run on the GPU machine:  python3 benchmarks/kernels.py --out DIR
Writes DIR/kernels.json and prints a table last.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from gpu_baseline import REPEATS, gpu_time  # the same timing loop

BIG = 2_000_000_000


def build() -> object:
    from futgen.codegen.package import build_package
    from futgen.testing.compiled import import_package

    out = Path(tempfile.mkdtemp(prefix="futgen-bench-"))
    t0 = time.perf_counter()
    pkg = build_package(HERE / "programs" / "kernels.fut", out / "bench_kernels",
                        name="bench_kernels")
    print(f"build: {time.perf_counter() - t0:.2f} s", flush=True)
    return import_package(pkg)


def timed(fn, sync) -> dict:
    """Median wall time of synchronised calls, and of the kernels inside them."""
    import torch

    wall = gpu_time(fn, sync)
    kernel = None
    try:
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(REPEATS):
                fn()
                sync()
            torch.cuda.synchronize()
        total = sum(e.device_time_total for e in prof.key_averages()
                    if "memcpy" not in e.key.lower() and "memset" not in e.key.lower())
        kernel = total / REPEATS * 1e-6 if total else None
    except Exception as e:  # noqa: BLE001 -- the wall time still stands
        print(f"  (no kernel times: {e})", flush=True)
    return {"call_ms": wall * 1e3,
            "kernel_ms": None if kernel is None else kernel * 1e3}


def row_scans(lib, case, x, tx) -> None:
    """Prefix sums of 2^26 f32 as 2^k rows, default strategy and each forced."""
    import torch

    m_total = 1 << 26
    [flags] = [k for k in lib.TUNING_PARAMS if k.startswith("row_prefix.segscan_flags")]
    forced = {"default": {}, "flags": {flags: 1}, "thread": {flags: BIG}}
    for k in (0, 4, 8, 12, 16, 20, 22, 24, 26):
        shape = (1 << k, m_total >> k)
        xs, txs = x[:m_total].reshape(shape), tx[:m_total].reshape(shape)
        want = torch.cumsum(txs, 1)[:, -1].cpu().numpy()
        for strategy, tuning in forced.items():
            if strategy == "thread" and shape[1] > (1 << 12):
                continue  # one thread scanning 2^13+ values: slow, and says nothing new
            si = lib.BenchKernels(backend="cuda", device_results=True, tuning=tuning)
            got = si.row_prefix(xs).get()[:, -1]
            np.testing.assert_allclose(got, want, rtol=2e-3, atol=1e-2)
            case(f"row prefix sums 2^{k} x 2^{26 - k} [{strategy}]", 8 * m_total,
                 lambda si=si, xs=xs: si.row_prefix(xs), lambda txs=txs: torch.cumsum(txs, 1),
                 "torch", scan_rows_log2=k, strategy=strategy)


def writes_and_products(lib, inst, case, rng) -> None:
    """The histogram, transpose and matrix-product cases, each checked first."""
    import torch
    from pycuda import gpuarray

    n = 1 << 26
    for bins in (256, 1 << 20):
        host = rng.integers(0, bins, n)
        is_, tis = gpuarray.to_gpu(host), torch.from_numpy(host).cuda()
        np.testing.assert_array_equal(inst.counts(bins, is_).get(),
                                      np.bincount(host, minlength=bins))
        case(f"histogram 2^26 into {bins} bins", 8 * n, lambda b=bins, x=is_: inst.counts(b, x),
             lambda b=bins, t=tis: torch.bincount(t, minlength=b), "torch")
    side = 1 << 13
    host = rng.random((side, side), dtype=np.float32)
    x, tx = gpuarray.to_gpu(host), torch.from_numpy(host).cuda()
    np.testing.assert_array_equal(inst.transpose_f32(x).get(), host.T)
    case("transpose 2^13 x 2^13", 8 * side * side, lambda: inst.transpose_f32(x),
         lambda: tx.t().contiguous(), "torch")
    torch.backends.cuda.matmul.allow_tf32 = False
    for shape in [(512, 512, 512), (1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096),
                  (1024, 256, 1024)]:
        a_host = rng.random(shape[:2], dtype=np.float32)
        b_host = rng.random(shape[1:], dtype=np.float32)
        a, b = gpuarray.to_gpu(a_host), gpuarray.to_gpu(b_host)
        ta, tb = torch.from_numpy(a_host).cuda(), torch.from_numpy(b_host).cuda()
        np.testing.assert_allclose(inst.matmul(a, b).get(), (ta @ tb).cpu().numpy(),
                                   rtol=1e-3, atol=1e-3)
        flops = 2 * shape[0] * shape[1] * shape[2]
        case("matrix product {} x {} @ {} x {}".format(*shape[:2], *shape[1:]), 0,
             lambda a=a, b=b: inst.matmul(a, b), lambda ta=ta, tb=tb: ta @ tb, "torch",
             flops=flops, shape=shape)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".")
    ap.add_argument("--quick", action="store_true", help="fewer row counts")
    ap.add_argument("--only", choices=["sums", "writes-and-products", "row-scans"],
                    help="only these cases (and the copy roof); sums: the sums and the row "
                         "sums with the default strategy choice")
    args = ap.parse_args()
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)

    import torch

    lib = build()
    inst = lib.BenchKernels(backend="cuda", device_results=True)
    inst.plus_one(np.zeros(4, np.float32))  # compiles the kernels (nvcc, or the cache)
    sync = torch.cuda.synchronize
    from pycuda import gpuarray

    rng = np.random.default_rng(0)
    n = 1 << 28
    host = rng.random(n, dtype=np.float32)
    x = gpuarray.to_gpu(host)
    tx = torch.from_numpy(host).cuda()
    rows: list[dict] = []

    def case(name: str, nbytes: float, ours, peer, peer_name: str, **extra) -> None:
        a, p = timed(ours, sync), timed(peer, sync)
        row = {"case": name, "bytes": nbytes, "futgen": a, peer_name: p, "peer": peer_name,
               **extra}
        rows.append(row)
        k, pk = a["kernel_ms"] or a["call_ms"], p["kernel_ms"] or p["call_ms"]
        print(f"{name:40s} futgen {a['call_ms']:8.3f} ms call {k:8.3f} ms kernel "
              f"{_rate(row, k)} | {peer_name} {p['call_ms']:8.3f} / {pk:8.3f} ms "
              f"| ratio {pk / k:5.2f}", flush=True)

    copy = timed(lambda: tx.clone(), sync)
    rows.append({"case": "copy 2^28 f32 (torch clone)", "bytes": 8 * n, "torch": copy})
    roof = 8 * n / ((copy["kernel_ms"] or copy["call_ms"]) * 1e-3) / 1e9
    print(f"copy bandwidth (read + write): {roof:.0f} GB/s", flush=True)

    if args.only in (None, "sums"):
        want = float(host.astype(np.float64).sum())
        got = float(inst.sum(x))
        assert abs(got - want) <= 1e-4 * want, (got, want)
        case("sum 2^28", 4 * n, lambda: inst.sum(x), lambda: torch.sum(tx), "torch")
        case("sum of squares 2^28", 4 * n, lambda: inst.sum_squares(x),
             lambda: torch.sum(tx * tx), "torch")
        pre = inst.prefix_sum(x).get()
        np.testing.assert_allclose(pre[-1], host.astype(np.float64).sum(), rtol=1e-3)
        case("prefix sum 2^28", 8 * n, lambda: inst.prefix_sum(x), lambda: torch.cumsum(tx, 0),
             "torch")

        m_total = 1 << 26
        ks = range(0, 27, 2) if args.quick else range(27)
        keys = list(lib.TUNING_PARAMS)
        block = next(k for k in keys if ".segred_block" in k)
        warp = next(k for k in keys if ".segred_warp" in k)
        lanes = next(k for k in keys if ".segred_subwarp" in k)
        forced = {"default": {}, "block": {block: 1}, "warp": {block: BIG, warp: 1},
                  "subwarp": {block: BIG, warp: BIG, lanes: 1},
                  "thread": {block: BIG, warp: BIG, lanes: BIG}}
        if args.only == "sums":
            forced = {"default": {}}
        for k in ks:
            shape = (1 << k, m_total >> k)
            xs = x[:m_total].reshape(shape)
            txs = tx[:m_total].reshape(shape)
            want = torch.sum(txs, 1).cpu().numpy()
            for strategy, tuning in forced.items():
                if strategy in ("thread", "subwarp") and shape[1] > (1 << 16):
                    continue  # a thread adding 2^14+ values: minutes, and inaccurate
                si = lib.BenchKernels(backend="cuda", device_results=True, tuning=tuning)
                got = si.row_sums(xs).get()
                np.testing.assert_allclose(got, want, rtol=2e-3, atol=1e-2)
                case(f"row sums 2^{k} x 2^{26 - k} [{strategy}]", 4 * (m_total + shape[0]),
                     lambda si=si, xs=xs: si.row_sums(xs), lambda txs=txs: torch.sum(txs, 1),
                     "torch", rows_log2=k, strategy=strategy)

    if args.only in (None, "row-scans"):
        row_scans(lib, case, x, tx)
    if args.only in (None, "writes-and-products"):
        writes_and_products(lib, inst, case, rng)

    if not args.only:
        small = rng.random(1024, dtype=np.float32)
        dsmall = gpuarray.to_gpu(small)
        numpy_inst = lib.BenchKernels(backend="cuda")
        tsmall = torch.from_numpy(small).cuda()
        case("call: 1024 f32 map, NumPy in/out", 8192, lambda: numpy_inst.plus_one(small),
             lambda: (torch.from_numpy(small).cuda() + 1).cpu(), "torch")
        case("call: 1024 f32 map, device arrays", 8192, lambda: inst.plus_one(dsmall),
             lambda: tsmall + 1, "torch")

    info = {"device": torch.cuda.get_device_name(0), "date": time.strftime("%Y-%m-%d"),
            "copy_GBps": roof, "rows": rows}
    (out_dir / "kernels.json").write_text(json.dumps(info, indent=1))
    print(f"\n{info['device']}, {info['date']}, copy roof {roof:.0f} GB/s")
    print("| case | futgen kernel ms | rate | of copy roof | torch kernel ms | torch/futgen |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        if "futgen" not in r:
            continue
        k = r["futgen"]["kernel_ms"] or r["futgen"]["call_ms"]
        p = r["torch"]["kernel_ms"] or r["torch"]["call_ms"]
        of_roof = f"{r['bytes'] / k / 1e6 / roof:.2f}" if r["bytes"] else ""
        print(f"| {r['case']} | {k:.3f} | {_rate(r, k)} | {of_roof} | {p:.3f} | {p / k:.2f} |")


def _rate(row: dict, ms: float) -> str:
    """GB/s of compulsory bytes, or TFLOP/s for the products."""
    if row.get("flops"):
        return f"{row['flops'] / ms / 1e9:.1f} TFLOP/s"
    return f"{row['bytes'] / ms / 1e6:.0f} GB/s"


if __name__ == "__main__":
    main()
