"""Plot row sums over the row count from a kernels.py JSON file (needs matplotlib).

python benchmarks/plot_kernels.py RESULTS.json OUT.png
"""

from __future__ import annotations

import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt


def main(src: str, dst: str) -> None:
    info = json.loads(open(src).read())
    series: dict[str, dict[int, float]] = {}
    for r in info["rows"]:
        if "rows_log2" not in r:
            continue
        gbps = lambda t: r["bytes"] / (t["kernel_ms"] or t["call_ms"]) / 1e6
        series.setdefault(f"futgen [{r['strategy']}]", {})[r["rows_log2"]] = gbps(r["futgen"])
        series.setdefault("torch.sum(x, 1)", {})[r["rows_log2"]] = gbps(r["torch"])
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for name, points in series.items():
        ks = sorted(points)
        ax.plot(ks, [points[k] for k in ks], marker="o", ms=3, label=name,
                lw=2.5 if "default" in name else 1.2)
    ax.axhline(info["copy_GBps"], color="grey", ls="--", lw=1, label="copy (read + write)")
    ax.set_yscale("log")
    ax.set_xlabel("log2(rows); 2^26 f32 in all")
    ax.set_ylabel("GB/s read (kernel time)")
    ax.set_title(f"Row sums, {info['device']}, {info['date']}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(dst, dpi=110)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
