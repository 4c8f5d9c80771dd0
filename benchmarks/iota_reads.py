"""Maps over `iota`: what the computed-reads pass saves on iotas (futgen.opt.computed_reads).

`map f (iota n)` used to make the iota on the device (8n bytes written) and
read it back in the map's kernel; with the pass, the kernel computes each
element from its thread index.  Entry points, n = 2^26, device-resident:

* `scaled`: `map (\\i -> f32.i64 i * 0.5) (iota n)` (4n bytes written);
* `shifted`: `map2 (\\i x -> x + f32.i64 (i % 7)) (iota n) xs` (4n read, 4n written);

each the median of 50 calls timed by the package (`time_calls`), beside
torch doing the same (`torch.arange`) and the memory roof (the bytes the
results need, at the device's copy bandwidth measured in the same run by a
device-to-device copy of 1 GiB).  Run it in two trees (before and after the
pass) to compare:  python3 benchmarks/iota_reads.py [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "runtime"))

SOURCE = """
entry scaled (n: i64) : []f32 = map (\\i -> f32.i64 i * 0.5) (iota n)
entry shifted [n] (xs: [n]f32) : [n]f32 = map2 (\\i x -> x + f32.i64 (i % 7)) (iota n) xs
"""
N = 1 << 26
RUNS = 50


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".")
    args = ap.parse_args()
    import torch

    from futgen.testing.compiled import compile_package

    src = Path(tempfile.mkdtemp()) / "iotas.fut"
    src.write_text(SOURCE)
    pkg = compile_package(str(src), "cuda", find_tuning=False)
    xs = torch.rand(N, device="cuda")
    idx = torch.arange(N, device="cuda")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def torch_us(f) -> float:
        f()
        times = []
        for _ in range(RUNS):
            start.record()
            f()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) * 1e3)
        return float(np.median(times))

    copy_us = torch_us(torch.empty(1 << 28, device="cuda").clone)  # 1 GiB
    bandwidth = 2 * (1 << 30) / (copy_us * 1e-6)  # read + write, bytes/s
    rows = []
    for entry, call_args, reference, nbytes in (
            ("scaled", [np.int64(N)], lambda: torch.arange(N, device="cuda") * 0.5, 4 * N),
            ("shifted", [xs], lambda: xs + (idx % 7), 8 * N)):
        got, times = pkg.time_calls(entry, call_args, RUNS + 1)
        want = reference()
        assert np.allclose(got[0], want.cpu().numpy()), entry
        row = {"entry": entry, "futgen_us": float(np.median(times[1:])),
               "torch_us": torch_us(reference), "roof_us": nbytes / bandwidth * 1e6}
        rows.append(row)
    info = {"device": torch.cuda.get_device_name(), "date": time.strftime("%Y-%m-%d"),
            "n": N, "copy_GBps": bandwidth / 1e9, "rows": rows}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "iota_reads.json").write_text(json.dumps(info, indent=1))
    print(f"{info['device']}, n = 2^26, copy {bandwidth / 1e9:.0f} GB/s; µs")
    for r in rows:
        print(f"{r['entry']:8s} futgen {r['futgen_us']:8.1f}  torch {r['torch_us']:8.1f}  "
              f"roof {r['roof_us']:8.1f}")


if __name__ == "__main__":
    main()
