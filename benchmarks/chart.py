"""Draws compare.py's results as one PNG: write, full scan, single-row lookup
and 10k batched lookup per format, each panel with the ZSTD floor of the
rowformat file's own blocks as a dashed line (the time no reader of those
ZSTD blocks can beat). Log scales: the formats span four orders of magnitude.

    python benchmarks/chart.py [benchmarks/results.json] [--out benchmarks/results.png]

compare.py calls :func:`draw` after each run; this command redraws a saved run.
"""
from __future__ import annotations

import argparse
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))

# (result field, panel title, unit scale, unit, floor field and its label)
PANELS = [
    ("write_s", "write", 1e3, "ms", ("comp_2t", "compress all blocks, 2 threads")),
    ("scan_s", "full scan", 1e3, "ms", ("decomp_2t", "decompress all blocks, 2 threads")),
    ("get_median_us", "single-row lookup, median", 1.0, "µs",
     ("one_block_us", "decompress one block")),
    ("take_s", "10k batched lookup", 1e3, "ms",
     ("decomp_2t_take", "decompress the blocks it touches")),
]


def _floor_value(floor: dict, key: str):
    if key == "one_block_us":
        return floor["one_block"] * 1e6 if "one_block" in floor else None
    return floor.get(key)


def draw(data: dict, out: str) -> str:
    """Writes the chart of a results.json-shaped dict to ``out``; returns ``out``."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results = {k: r for k, r in data["results"].items() if "error" not in r}
    floor = data.get("floor") or {}
    names = [r["name"] + (" ~" if r.get("scale", 1) != 1 else "") for r in results.values()]
    colors = ["#d1495b" if k == "rowformat" else "#8d99ae" for k in results]
    fig, axes = plt.subplots(1, len(PANELS), figsize=(4.2 * len(PANELS), 0.42 * len(names) + 1.6),
                             sharey=True)
    for ax, (field, title, scale, unit, (fkey, flabel)) in zip(axes, PANELS):
        values = [r[field] * scale for r in results.values()]
        ax.barh(range(len(values)), values, color=colors)
        for y, v in enumerate(values):
            ax.text(v, y, f" {v:,.0f}" if v >= 10 else f" {v:.1f}", va="center", fontsize=7)
        ax.set_xscale("log")
        ax.set_title(f"{title} ({unit})", fontsize=10)
        fv = _floor_value(floor, fkey)
        if fv is not None:
            fv *= 1.0 if fkey == "one_block_us" else scale
            ax.axvline(fv, color="black", linestyle="--", linewidth=1)
            ax.set_xlabel(f"dashed: ZSTD floor, {flabel} ({fv:,.0f} {unit})", fontsize=7)
        ax.set_xlim(right=max(values) * 8)
        ax.tick_params(axis="x", labelsize=7)
    axes[0].set_yticks(range(len(names)))
    axes[0].set_yticklabels(names, fontsize=8)
    axes[0].invert_yaxis()
    meta = data.get("meta", {})
    fig.suptitle(f"{meta.get('rows', 0):,} rows, 10 columns; lower is better; "
                 f"{meta.get('date', '')}; ~ = measured on fewer rows and scaled", fontsize=9)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("results", nargs="?", default=os.path.join(HERE, "results.json"))
    p.add_argument("--out", default=None, help="default: the results file's name with .png")
    a = p.parse_args(argv)
    with open(a.results) as f:
        data = json.load(f)
    print("wrote", draw(data, a.out or os.path.splitext(a.results)[0] + ".png"))


if __name__ == "__main__":
    main()
