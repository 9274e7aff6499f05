"""The build benchmark's figure (`builds/build_compare.py compare`): a build against
`webdataset.ShardWriter` with the same process counts, and a resizing build against a plain
decode + resize + encode loop."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.figures.provenance import provenance

_NAMES = {
    "fastpack": "`fastpack build`, pass-through",
    "shardwriter": "`webdataset.ShardWriter`, the same JPEG bytes",
    "max-side": "`fastpack build --max-side {max_side}`",
    "reencode": "decode + resize + encode, nothing else (bytes in memory)",
}


def _name(step: str, max_side: int | None) -> tuple[str, int]:
    kind, _, count = step.rpartition("-")
    return _NAMES[kind].format(max_side=max_side), int(count)


def table(report: dict[str, Any], raw: str) -> str:
    lines = [
        "| build | processes | images/s | CPU ms per image | x the row below it |",
        "|---|---:|---:|---:|---:|",
    ]
    summaries, cpu = report["summaries"], report["cpu_ms_per_image_summaries"]
    ratios = {pair.split(" / ")[0]: value for pair, value in report["ratio_of_medians"].items()}
    for step, summary in summaries.items():
        name, count = _name(step, report.get("max_side"))
        ratio = f"**{ratios[step]:.2f}**" if step in ratios else ""
        lines.append(
            f"| {name} | {count} | {summary['median']:,.0f} ({summary['min']:,.0f}-"
            f"{summary['max']:,.0f}) | {cpu[step]['median']:.2f} | {ratio} |"
        )
    p, c = provenance(report), report["corpus"]
    loads = report["load_before_and_after_each_round"]
    return (
        "\n".join(lines) + f"\n\n{p.stamp()}; 1-minute load "
        f"{loads[0].split(',')[0]} before the first round and {loads[-1].split(',')[0]} after "
        f"the last. {c['images']:,} photos of {c['mean_kb']:.0f} KB from the page cache; each "
        f"row in turn in every round, medians of {report['repeats']} rounds after an untimed "
        "one, with their range; CPU is the whole process tree's. Raw: "
        f"[{Path(raw).name}]({raw}).\n"
    )
