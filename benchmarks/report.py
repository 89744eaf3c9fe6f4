"""Render ``benchmarks/results/*.json`` as Markdown tables (for ``docs/benchmarks.md``)."""

from __future__ import annotations

import glob
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from _common import fmt  # noqa: E402


def render(path: str) -> str:
    with open(path) as f:
        data = json.load(f)
    name = os.path.basename(path)[:-5]
    lines = [f"#### `{name}`", "",
             f"Command: `{data['command']}` — load average (1/5/15 min) before "
             f"{' / '.join(f'{x:.1f}' for x in data['load_before'])}, after "
             f"{' / '.join(f'{x:.1f}' for x in data['load_after'])}.", "",
             "| metric | system | unit | median | min | max | n |",
             "|---|---|---|---:|---:|---:|---:|"]
    for m in sorted(data["metrics"], key=lambda m: (m["name"], m["system"])):
        lines.append(f"| {m['name']} | {m['system']} | {m['unit']} | {fmt(m['median'])} | "
                     f"{fmt(m['min'])} | {fmt(m['max'])} | {len(m['samples'])} |")
    if data["ratios"]:
        lines += ["", "| ratio (medians) | value | target |", "|---|---:|---|"]
        for r in data["ratios"]:
            lines.append(f"| {r['metric']}: {r['system']} / {r['baseline']} | "
                         f"{r['ratio']:.2f}x | {r['target']} |")
    for note in data["notes"]:
        lines += ["", f"Note: {note}."]
    return "\n".join(lines) + "\n"


def main() -> None:
    for path in sorted(glob.glob(os.path.join(HERE, "results", "*.json"))):
        print(render(path))
    first = sorted(glob.glob(os.path.join(HERE, "results", "*.json")))
    if first:
        with open(first[0]) as f:
            print(json.dumps(json.load(f)["machine"], indent=1))


if __name__ == "__main__":
    main()
