"""Plot a versions.py JSON file like Fig. 2 of the incremental-flattening
paper: per shape, each version's speed relative to PyTorch (needs matplotlib).

python benchmarks/plot_versions.py RESULTS.json OUT.png
"""

from __future__ import annotations

import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

COLORS = {"default": "tab:blue", "outer": "tab:green", "flat": "tab:orange",
          "outer_tiled": "tab:cyan", "outer_unsplit": "tab:olive",
          "blocks": "tab:orange", "warp": "tab:purple", "lanes": "tab:brown", "thread": "tab:green"}
FAMILIES = {"matmul": ("n", "(2^n x 2^m) @ (2^m x 2^n), 2n + m = 28", "n"),
            "row_sums": ("k", "row sums of 2^26 f32 as 2^k rows", "k")}


def main(src: str, dst: str) -> None:
    with open(src) as f:
        info = json.load(f)
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.5))
    for ax, (family, (key, title, xlabel)) in zip(axes, FAMILIES.items()):
        rows = [r for r in info["rows"] if r["family"] == family]
        versions = sorted({k[:-3] for r in rows for k in r if k.endswith("_ms")} - {"torch"})
        for v in versions:
            pts = [(r[key], r["torch_ms"] / r[f"{v}_ms"]) for r in rows if f"{v}_ms" in r]
            style = "-" if v == "default" else "--"
            ax.plot(*zip(*pts), style, marker="o", markersize=3, label=f"futgen {v}",
                    color=COLORS.get(v))
        ax.axhline(1.0, color="black", linewidth=0.8, label="torch")
        ax.set_yscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("speed relative to torch (higher is faster)")
        ax.set_title(title, fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"Versions forced, {info['device']}, {info.get('date', '')}")
    fig.tight_layout()
    fig.savefig(dst, dpi=110)


if __name__ == "__main__":
    main(*sys.argv[1:3])
