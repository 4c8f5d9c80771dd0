"""Plot row sums over the row count, and matrix products over their sizes, from a
kernels.py JSON file (needs matplotlib).

python benchmarks/plot_kernels.py RESULTS.json OUT.png
"""

from __future__ import annotations

import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt


def _ms(t: dict) -> float:
    return t["kernel_ms"] or t["call_ms"]


def main(src: str, dst: str) -> None:
    with open(src) as f:
        info = json.load(f)
    series: dict[str, dict[int, float]] = {}
    products: dict[str, dict[int, float]] = {}
    for r in info["rows"]:
        if "rows_log2" in r:
            k = r["rows_log2"]
            series.setdefault(f"futgen [{r['strategy']}]", {})[k] = r["bytes"] / _ms(r["futgen"]) / 1e6
            series.setdefault("torch.sum(x, 1)", {})[k] = r["bytes"] / _ms(r["torch"]) / 1e6
        elif r.get("shape") and len(set(r["shape"])) == 1:
            n = r["shape"][0]
            for who in ("futgen", "torch"):
                products.setdefault(who, {})[n] = r["flops"] / _ms(r[who]) / 1e9
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(13, 4.5), width_ratios=[3, 2])
    for name, points in series.items():
        ks = sorted(points)
        ax.plot(ks, [points[k] for k in ks], marker="o", ms=3, label=name,
                lw=2.5 if "default" in name else 1.2)
    ax.axhline(info["copy_GBps"], color="grey", ls="--", lw=1, label="copy (read + write)")
    ax.set_yscale("log")
    ax.set_xlabel("log2(rows); 2^26 f32 in all")
    ax.set_ylabel("GB/s read + written (kernel time)")
    ax.set_title(f"Row sums, {info['device']}, {info['date']}")
    ax.legend(fontsize=8)
    for name, points in products.items():
        ns = sorted(points)
        bx.plot(ns, [points[n] for n in ns], marker="o", label=name + (
            " (matmul, TF32 off)" if name == "torch" else " (tiled)"))
    bx.set_xscale("log", base=2)
    bx.set_xlabel("n (n x n @ n x n, f32)")
    bx.set_ylabel("TFLOP/s (kernel time)")
    bx.set_title("Matrix products")
    bx.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(dst, dpi=110)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
