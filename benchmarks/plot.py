"""Draw one PNG chart per benchmark from ``benchmarks/results/*.json`` into ``docs/img/``.

Needs only matplotlib (no Spark, no dbt), so it can run from a separate environment::

    python benchmarks/plot.py

Bars are medians; error bars span min..max of the repetitions.
"""

from __future__ import annotations

import glob
import json
import os
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(os.path.dirname(HERE), "docs", "img")

# Per benchmark: (metric names to draw, as panels; log scale?)
PANELS: dict[str, list[tuple[str, bool]]] = {
    "streaming": [("commit latency p50", True), ("insert throughput", True),
                  ("aggregations (inlined)", True), ("aggregations (flushed)", True)],
    "merge": [("time", False), ("bytes written", True)],
    "planning": [("plan", False)],
    "compaction": [("scan before", True), ("scan after", True),
                   ("merge adjacent files", True)],
    "dbt_project": [("dbt build (first)", False), ("dbt build (incremental)", False)],
    "reads": [("scan", True), ("day", True), ("ids", True), ("window", True),
              ("microbatch batch", True), ("microbatch run", True)],
    "fixed_cost": [("(a) dbt run -s model_00, cold", False), ("(b) dbt build, cold", False),
                   ("(b) dbt build, warm", False), ("(c) one data test (dbt's time)", False)],
}


def bars(ax: Any, metrics: list[dict[str, Any]], title: str, log: bool) -> None:
    labels = [m["system"] for m in metrics]
    med = [m["median"] for m in metrics]
    low = [m["median"] - m["min"] for m in metrics]
    high = [m["max"] - m["median"] for m in metrics]
    colours = ["tab:blue" if label.startswith("ours") else "tab:gray" for label in labels]
    ax.bar(range(len(labels)), med, yerr=[low, high], color=colours, capsize=3)
    ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right", fontsize=8)
    unit = metrics[0]["unit"] if metrics else ""
    ax.set_title(f"{title} ({unit})", fontsize=9)
    if log:
        ax.set_yscale("log")


def plot(path: str) -> str:
    with open(path) as f:
        data = json.load(f)
    name = os.path.basename(path)[:-5]
    panels = PANELS[data["benchmark"].split("-")[0]]  # merge-recent is drawn as merge
    cols = len(panels) if len(panels) <= 4 else -(-len(panels) // 2)  # > 4 panels: two rows
    rows_of_panels = -(-len(panels) // cols)
    width = max(4.2 * cols, 7.5)
    fig, axes = plt.subplots(rows_of_panels, cols, figsize=(width, 3.8 * rows_of_panels),
                             squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    for ax, (metric, log) in zip(axes.flat, panels):
        if data["benchmark"] == "planning":
            rows = sorted((m for m in data["metrics"] if m["name"].startswith("plan")),
                          key=lambda m: (m["system"], m["name"]))
            rows = [dict(m, system=f"{m['system']} @ {m['name'].split('@')[1].strip()}")
                    for m in rows]
            bars(ax, rows, "read planning", log)
        else:
            rows = [m for m in data["metrics"] if m["name"] == metric]
            bars(ax, rows, metric, log)
    load = data.get("load_before", [float("nan")])[0]
    fig.suptitle(f"{name}: {data['command']}  (load avg {load:.1f} on "
                 f"{data['machine'].get('cpus')} cores)", fontsize=9)
    fig.tight_layout()
    os.makedirs(OUT, exist_ok=True)
    out = os.path.join(OUT, f"{name}.png")
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def main() -> None:
    for path in sorted(glob.glob(os.path.join(HERE, "results", "*.json"))):
        print(plot(path))


if __name__ == "__main__":
    main()
