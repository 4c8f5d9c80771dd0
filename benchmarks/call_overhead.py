"""Host overhead of an entry call on CUDA, and where it goes.

Builds `plus_one` (a 1024-element f32 map) and times, as medians of many calls on the GPU machine:

* whole calls: NumPy in and out; device arrays in and out, synchronised after
  each call; and device arrays pipelined (N calls, then one synchronisation),
  which is what a Python loop feeding the device pays per call;
* the same beside PyTorch (`x + 1`) and CuPy (`x + 1`) where installed;
* each step of a call alone (argument conversion, allocation, launch,
  failure check, result copy), and the PyCUDA floors below them.

Run on the GPU machine:  python3 benchmarks/call_overhead.py [--json FILE] [--compare PKG ...]
Prints a table in microseconds.
"""

from __future__ import annotations

import argparse
import json
import re
import struct
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

N = 1024
REPEATS = 3000


def per_call(fn, repeats: int = REPEATS, sync=None) -> float:
    """Median µs of `fn()` (each followed by `sync()` if given), over batches."""
    for _ in range(200):
        fn()
    if sync:
        sync()
    samples = []
    batch = 50
    for _ in range(repeats // batch):
        t0 = time.perf_counter()
        for _ in range(batch):
            fn()
            if sync:
                sync()
        samples.append((time.perf_counter() - t0) / batch)
    return float(np.median(samples)) * 1e6


def pipelined(fn, sync, calls: int = 1000) -> float:
    """µs per call of `calls` calls issued back to back, then one synchronisation."""
    fn()
    sync()
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        sync()
        best = min(best, (time.perf_counter() - t0) / calls)
    return best * 1e6


def build():
    from futgen.codegen.package import build_package
    from futgen.testing.compiled import import_package

    out = Path(tempfile.mkdtemp(prefix="futgen-overhead-"))
    program = out / "plus_one.fut"
    program.write_text("entry plus_one (xs: []f32) : []f32 = map (+ 1) xs\n")
    return import_package(build_package(program, out / "bench_overhead", name="bench_overhead"))


def whole_calls(mod, rows: dict, profile_calls: bool = False, label: str = "futgen") -> None:
    import pycuda.driver as cuda

    host = np.arange(N, dtype=np.float32)
    cls = next(v for v in vars(mod).values() if isinstance(v, type) and hasattr(v, "plus_one"))
    inst = cls(backend="cuda")
    dev_inst = cls(backend="cuda", device_results=True)
    expected = host + 1
    assert np.array_equal(inst.plus_one(host), expected)
    x = dev_inst.plus_one(host)  # a device array to feed back in
    assert np.array_equal(x.get(), expected)
    sync = cuda.Context.synchronize
    rows[f"{label}, NumPy in and out"] = per_call(lambda: inst.plus_one(host))
    rows[f"{label}, device arrays, synchronised"] = per_call(lambda: dev_inst.plus_one(x),
                                                             sync=sync)
    rows[f"{label}, device arrays, pipelined"] = pipelined(lambda: dev_inst.plus_one(x), sync)
    if label != "futgen":
        return
    steps(dev_inst, x, rows)
    if profile_calls:
        profile(dev_inst, x)
        profile(inst, host)


def steps(inst, x, rows: dict) -> None:
    """Each step of a device-array call alone, and PyCUDA's floors."""
    import pycuda.driver as cuda

    b = inst._backend()
    module = sys.modules[type(inst).__module__]
    entry = module._ENTRIES["plus_one"]  # with the package's own copy of the runtime
    rows["step: entry.arguments (one device array)"] = per_call(
        lambda: entry.arguments(b, (x,), ()))
    rows["step: backend.empty (pool + GPUArray)"] = per_call(lambda: b.empty((N,), "float32"))
    out = b.empty((N,), "float32")
    kernel = re.search(r"b\.launch_sig\('(\w+)'", Path(module.__file__).read_text()).group(1)
    rows["step: backend.launch_sig"] = per_call(
        lambda: b.launch_sig(kernel, "PqPq", N, 256, 0, out.gpudata, N, x.gpudata, N))
    cuda.Context.synchronize()
    rows["step: entry.results (device result)"] = per_call(
        lambda: entry.results(b, (out,), True))
    rows["step: backend.sync (failure flag read)"] = per_call(b.sync)
    rows["step: np.errstate(all='ignore') block"] = per_call(_errstate)
    rows["step: to_host of 1024 f32"] = per_call(lambda: b.to_host(out))
    host = np.zeros(N, np.float32)
    rows["step: from_host of 1024 f32"] = per_call(lambda: b.from_host(host))
    f = b._kernel(kernel, "PqPq").function
    vals = [*b._fail_ptrs, int(out.gpudata), N, int(x.gpudata), N]
    f.prepare("PPPqPq")
    rows["floor: prepared_call"] = per_call(
        lambda: f.prepared_call((4, 1, 1), (256, 1, 1), *vals))
    packed = struct.pack("PPPqPq", *vals)
    rows["floor: _launch_kernel of a packed buffer"] = per_call(
        lambda: f._launch_kernel((4, 1, 1), (256, 1, 1), packed, 0, None))
    cuda.Context.synchronize()
    pool = b._pool
    rows["floor: DeviceMemoryPool.allocate"] = per_call(lambda: pool.allocate(4 * N))
    from pycuda import gpuarray

    alloc = pool.allocate(4 * N)
    rows["floor: GPUArray of an allocation"] = per_call(
        lambda: gpuarray.GPUArray((N,), np.float32, gpudata=alloc))
    rows["floor: cuda.Context.get_current"] = per_call(cuda.Context.get_current)
    rows["floor: memcpy_dtoh of 8 bytes"] = per_call(
        lambda: cuda.memcpy_dtoh(np.empty(1, np.int64), out.gpudata))


def _errstate() -> None:
    with np.errstate(all="ignore"):
        pass


def profile(inst, x) -> None:
    """cProfile of calls: where the Python time goes."""
    import cProfile
    import pstats

    prof = cProfile.Profile()
    prof.enable()
    for _ in range(2000):
        inst.plus_one(x)
    prof.disable()
    pstats.Stats(prof).sort_stats("tottime").print_stats(25)


def peers(rows: dict) -> None:
    try:
        import torch

        t = torch.arange(N, dtype=torch.float32, device="cuda")
        host = np.arange(N, dtype=np.float32)
        rows["torch x + 1, device, synchronised"] = per_call(lambda: t + 1,
                                                            sync=torch.cuda.synchronize)
        rows["torch x + 1, device, pipelined"] = pipelined(lambda: t + 1, torch.cuda.synchronize)
        rows["torch, NumPy in and out"] = per_call(
            lambda: (torch.from_numpy(host).cuda() + 1).cpu().numpy())
    except ImportError:
        pass
    try:
        import cupy

        c = cupy.arange(N, dtype=cupy.float32)
        sync = cupy.cuda.Device().synchronize
        rows["cupy x + 1, device, synchronised"] = per_call(lambda: c + 1, sync=sync)
        rows["cupy x + 1, device, pipelined"] = pipelined(lambda: c + 1, sync)
    except ImportError:
        pass


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--profile", action="store_true", help="also print a cProfile of calls")
    ap.add_argument("--compare", nargs="*", default=[], metavar="PKG",
                    help="packages of plus_one built by other versions of futgen, timed too "
                         "(labelled by their folder's name)")
    args = ap.parse_args()
    mod = build()
    rows: dict[str, float] = {}
    for other in map(Path, args.compare):
        from futgen.testing.compiled import import_package

        whole_calls(import_package(other), rows, label=other.name)
    whole_calls(mod, rows, args.profile)
    peers(rows)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    print(f"\n| call of a {N}-element f32 map | µs |\n|---|---|")
    for k, v in rows.items():
        print(f"| {k} | {v:.1f} |")


if __name__ == "__main__":
    main()
