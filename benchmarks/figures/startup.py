"""The start-up benchmark's figure (`startup/startup_bench.py`): the first batch at any size."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from benchmarks.figures.provenance import provenance


def table(report: dict[str, Any], raw: str) -> str:
    lines = [
        "| samples | shards | index, MB | start-up to the first batch, s |",
        "|---:|---:|---:|---:|",
    ]
    runs = report["startup"]["data"]
    for size in sorted(runs, key=int):
        seconds = [run["startup_s"] for run in runs[size]]
        dataset = report["datasets"][size]
        lines.append(
            f"| {int(size):,} | {dataset['shards']:,} | {dataset['index_bytes'] / 1e6:,.1f} | "
            f"{statistics.median(seconds):.3f} ({min(seconds):.3f}-{max(seconds):.3f}) |"
        )
    meta, p = report["startup"]["meta"], provenance(report)
    count = min(len(v) for v in runs.values())
    return (
        "\n".join(lines) + f"\n\n{p.stamp()}; load (1, 5, 15 min) "
        f"{meta['load_before']} before, {meta['load_after']} after. From "
        "`Dataset(path, transform=RandomResizedCrop(224))` through `make_loader(..., "
        "batch_size=64, num_workers=2)` to `next(iter(loader))`, each run in a fresh process "
        f"with the page cache warm; medians of {count} runs per size, with their range. Raw: "
        f"[{Path(raw).name}]({raw}).\n"
    )
