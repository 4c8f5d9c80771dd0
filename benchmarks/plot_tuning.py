"""Plot tune_matmul.py results: per n, tuned, untuned, moderate and the best
single version beside torch, one panel per (training size, test size)
(needs matplotlib).

python benchmarks/plot_tuning.py OUT.png RESULTS.json [RESULTS.json ...]
"""

from __future__ import annotations

import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

SERIES = (("torch_us", "torch.matmul", "black"), ("tuned_us", "tuned", "tab:blue"),
          ("untuned_us", "untuned", "tab:orange"), ("moderate_us", "moderate", "tab:gray"))


def main(dst: str, sources: list[str]) -> None:
    panels = []
    for src in sources:
        with open(src) as f:
            info = json.load(f)
        for total in sorted({r["total"] for r in info["rows"]}):
            if total != info["train"]:
                panels.append((info, total))
        if all(r["total"] == info["train"] for r in info["rows"]):
            panels.append((info, info["train"]))
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4.2), squeeze=False)
    for ax, (info, total) in zip(axes[0], panels):
        rows = [r for r in info["rows"] if r["total"] == total]
        ns = [r["n"] for r in rows]
        for key, label, color in SERIES:
            ax.plot(ns, [r[key] for r in rows], marker="o", label=label, color=color)
        best = [r[f"{r['best_single']}_us"] for r in rows]
        ax.plot(ns, best, linestyle="--", color="tab:green", label="best single version")
        ax.set_yscale("log")
        ax.set_ylim(top=max(max(best), max(r["tuned_us"] for r in rows)) * 30)
        ax.set_xlabel("n: (2^n x 2^m) @ (2^m x 2^n)")
        ax.set_ylabel("µs per call (median)")
        ax.set_title(f"trained on 2n+m={info['train']}, tested on {total}")
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.suptitle(f"futgen autotune, matrix family ({panels[0][0]['device']}, {panels[0][0]['date']})")
    fig.tight_layout()
    fig.savefig(dst, dpi=110)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
