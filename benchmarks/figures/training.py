"""The training benchmark's figures (`training/train_bench.py`): how long the trainer waits."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.figures.provenance import provenance
from benchmarks.training._page import summarize

MODEL = "small"
LONG, SHORT = "long", "short"
BASELINE = "on-device"
LABELS = {
    "on-device": "data already on the device",
    "fastpack": "**fastpack** (`make_loader`, full quality)",
    "fastpack-upscale2": "fastpack, `max_upscale=2`",
    "fastpack-dali": 'fastpack, `loader="dali"` (DALI on the CPU)',
    "fastpack-nvimgcodec": 'fastpack, `loader="nvimgcodec"` (its CPU backend)',
    "webdataset": "webdataset + simplejpeg",
    "imagefolder": "torchvision ImageFolder",
}


def wait_shares(report: dict[str, Any]) -> dict[str, float]:
    """Loader -> median share of the wall time the loop waited, long epochs (for the picture)."""
    summary = summarize(report)
    return {
        loader: row["wait_share"][0]
        for (model, case, loader), row in summary.items()
        if model == MODEL and case == LONG and loader != BASELINE and row["rounds"]
    }


def _cell(spread: tuple[float, float, float] | None, digits: int) -> str:
    if spread is None:
        return "-"
    median, low, high = spread
    return f"{median:.{digits}f} ({low:.{digits}f}-{high:.{digits}f})"


def table(report: dict[str, Any], raw: str) -> str:
    summary = summarize(report)
    lines = [
        "| loader | trainer waits, long epochs | trainer waits, short epochs | first batch "
        "of a short epoch waits, ms | other batches' p99, ms | images/s trained (long), x data "
        "on the device |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    base = summary.get((MODEL, LONG, BASELINE), {}).get("images_per_s")
    for loader, name in LABELS.items():
        long, short = summary.get((MODEL, LONG, loader)), summary.get((MODEL, SHORT, loader))
        if long is None or short is None or not long["rounds"] or not short["rounds"]:
            continue
        ratio = f"{long['images_per_s'][0] / base[0]:.2f}" if base else "-"
        first = "-" if loader == BASELINE else _cell(short["first_wait_ms"], 1)
        p99 = "-" if loader == BASELINE else _cell(short["other_wait_p99_ms"], 1)
        lines.append(
            f"| {name} | {_cell(long['wait_share'], 2)} | {_cell(short['wait_share'], 2)} | "
            f"{first} | {p99} | {ratio} |"
        )
    p, s, c = provenance(report), report["settings"], report["corpus"]
    gpu = (
        report.get("gpu")
        or "no GPU: a small CNN trains on the CPU, on the same cores as the workers"
    )
    setting = (
        f"{p.stamp()}; {gpu}; load (1, 5, 15 min) "
        f"{report['load_before']} before, {report['load_after']} after. {c['images']:,} photos of "
        f"{c['mean_kb']:.0f} KB, RandomResizedCrop 224 + flip, batches of {s['batch_size']}, "
        f"{s['workers']} workers; a long epoch is the whole corpus, a short one 4 batches; "
        f'medians of {s["rounds"]} rounds, with their range. "Trainer waits" is the share of '
        f"the loop's wall time spent in `next()`. Raw: [{Path(raw).name}]({raw})."
    )
    return "\n".join(lines) + "\n\n" + setting + "\n"
