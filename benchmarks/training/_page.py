"""The training benchmark's page, rendered from its raw JSON: per model and case, one row per
loader with the medians over rounds and their ranges (`summarize` gives the numbers)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from benchmarks.training._loaders import LOADERS

GPU_COMMAND = (
    "python -m benchmarks.training.train_bench --corpus C "
    "--models resnet50,resnet18 --workers 12 --device-decode-workers 4 --rounds 3 "
    "--out-json benchmarks/training/training_results_gpu.json "
    "--out-md benchmarks/training/TRAINING_GPU.md"
)
_MS = 1000


def run_figures(run: dict[str, Any]) -> dict[str, float | None]:
    """One run's figures over its timed epochs."""
    result = run["result"]
    epochs = result["epochs"]
    images = sum(e["images"] for e in epochs)
    wall = sum(e["wall_s"] for e in epochs)
    stats = [e["stats"] for e in epochs if e["stats"] is not None]
    others = sorted(w for e in epochs for w in e["waits_s"][1:])
    alone = result["alone_epochs"]
    return {
        "images_per_s": images / wall,
        "wait_share": sum(e["wait_s"] for e in epochs) / wall,
        "stats_wait_share": (
            sum(s["wait_seconds"] for s in stats) / sum(s["seconds"] for s in stats)
            if stats
            else None
        ),
        "stats_disagreement": (
            max(abs(e["wait_share"] - e["stats"]["wait_share"]) for e in epochs)
            if len(stats) == len(epochs)
            else None
        ),
        "cpu_ms_per_image": sum(e["cpu_s"] for e in epochs) / images * _MS,
        "first_wait_ms": statistics.median(e["first_wait_s"] for e in epochs) * _MS,
        "other_wait_p99_ms": others[int(0.99 * (len(others) - 1))] * _MS if others else None,
        "startup_first_wait_ms": result["startup_epoch"]["first_wait_s"] * _MS,
        "alone_images_per_s": (
            sum(e["images"] for e in alone) / sum(e["wall_s"] for e in alone) if alone else None
        ),
        "peak_pss_mib": run["peak_pss_mib"],
        "peak_rss_mib": run["peak_rss_mib"],
    }


def summarize(report: dict[str, Any]) -> dict[tuple[str, str, str], dict[str, Any]]:
    """(model, case, loader) -> {figure: (median, low, high) or None}, plus `failed` runs."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for run in report["runs"]:
        groups.setdefault((run["model"], run["case"], run["loader"]), []).append(run)
    summary: dict[tuple[str, str, str], dict[str, Any]] = {}
    for key, runs in groups.items():
        good = [run_figures(r) for r in runs if r["result"] is not None]
        failed = [r["error"] for r in runs if r["result"] is None]
        row: dict[str, Any] = {"rounds": len(good), "failed": failed}
        for name in good[0] if good else ():
            values = [value for g in good if (value := g[name]) is not None]
            row[name] = _spread(values) if values else None
        summary[key] = row
    return summary


def _spread(values: Sequence[float]) -> tuple[float, float, float]:
    return statistics.median(values), min(values), max(values)


def _cell(spread: tuple[float, float, float] | None, digits: int = 0) -> str:
    if spread is None:
        return "-"
    median, low, high = spread
    return f"{median:,.{digits}f} ({low:,.{digits}f}-{high:,.{digits}f})"


def _table(summary: dict[tuple[str, str, str], dict[str, Any]], model: str, case: str) -> list[str]:
    lines = [
        "| loader | images/s | x on-device | wait share (loop) | wait share (stats) | "
        "max loop-stats gap | first-batch wait, ms | other batches p99, ms | CPU ms/image | "
        "peak PSS MiB | loader alone, images/s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    base = summary.get((model, case, "on-device"), {}).get("images_per_s")
    for loader in LOADERS:
        row = summary.get((model, case, loader))
        if row is None:
            continue
        if row["rounds"] == 0:
            lines.append(f"| {loader} | failed: {row['failed'][0]} |" + " |" * 9)
            continue
        rate = row["images_per_s"]
        ratio = f"{rate[0] / base[0]:.2f}" if base else "-"
        lines.append(
            f"| {loader} | {_cell(rate)} | {ratio} | {_cell(row['wait_share'], 2)} | "
            f"{_cell(row['stats_wait_share'], 2)} | {_cell(row['stats_disagreement'], 3)} | "
            f"{_cell(row['first_wait_ms'], 1)} | {_cell(row['other_wait_p99_ms'], 1)} | "
            f"{_cell(row['cpu_ms_per_image'], 2)} | {_cell(row['peak_pss_mib'])} | "
            f"{_cell(row['alone_images_per_s'])} |"
        )
    return lines


def render(report: dict[str, Any], json_name: str) -> str:
    """The page (Markdown) of `report`, which was saved as `json_name` beside it."""
    summary = summarize(report)
    settings = report["settings"]
    machine = report["machine"]
    corpus = report["corpus"]
    lines = [
        "# Training benchmark: how long the training step waits for data",
        "",
        f"Measured {report['date']} at fastpack {report['commit']} on {machine['cpu']} "
        f"({machine['cores']} cores, {machine['ram_gib']} GiB, Linux {machine['kernel']}, "
        f"Python {machine['python']}); GPU: {report['gpu'] or 'none'}. Load (1, 5, 15 min) "
        f"{report['load_before']} before, {report.get('load_after', '?')} after. Raw numbers, "
        f"every round and epoch: `{json_name}`.",
        "",
        "Versions: " + ", ".join(f"{k} {v}" for k, v in report["versions"].items()) + ".",
        "",
        f"Corpus: `{corpus['path']}`, {corpus['images']:,} JPEGs in {corpus['classes']} classes, "
        f"{corpus['mean_kb']} KB and {corpus['mean_hw'][0]}x{corpus['mean_hw'][1]} px on average. "
        f"Batch {settings['batch_size']}, {settings['workers']} workers"
        + (
            f" ({settings['device_decode_workers']} for fastpack-nvimgcodec)"
            if settings.get("device_decode_workers")
            else ""
        )
        + ", RandomResizedCrop 224 + "
        f"flip; `long`: the whole corpus, {settings['epochs']} timed epochs after a start-up one; "
        f"`short`: {settings['short_images'] or 4 * settings['batch_size']} of its images, "
        f"{settings['short_epochs']} timed epochs. {settings['rounds']} rounds, each loader in "
        "a fresh process; medians over rounds (range).",
        "",
    ]
    if report["gpu"] is None:
        lines += [
            "**GPU figures pending**: these are CPU figures (no GPU on this machine). The model "
            "trains on the CPU in float32, on the same cores as the loader's workers, so the "
            "step is the bottleneck and each loader's CPU is taken from the step: read the rows "
            "as what each loader costs a CPU-bound trainer, and as a check that the harness "
            "works. Other processes' load moves rates between rounds; each run's load is in the "
            "JSON. The GPU figures (ResNet-50 and ResNet-18, bf16, batch 256) come from this "
            "command on a GPU machine with torchvision, DALI and nvImageCodec installed (for "
            "CUDA 13: `nvidia-nvimgcodec-cu13[nvjpeg]`, two wheels of 29 MB in all), where `C` "
            "is an ImageFolder of real photos:",
            "",
            f"    {GPU_COMMAND}",
            "",
            "and again with `--loaders on-device,fastpack-nvimgcodec --models resnet50 "
            "--device-decode-workers 2` for ResNet-50 with 2 workers.",
            "",
        ]
    if report.get("unavailable"):
        lines.append(
            "Not measured here: "
            + "; ".join(f"{name} ({why})" for name, why in report["unavailable"].items())
            + "."
        )
        lines.append("")
    for model in dict.fromkeys(r["model"] for r in report["runs"]):
        for case in dict.fromkeys(r["case"] for r in report["runs"]):
            lines += [f"## {model}, {case} epochs", "", *_table(summary, model, case), ""]
    lines += [
        "## What the columns mean",
        "",
        "- images/s: images trained over the timed epochs' wall time; x on-device: over the "
        "`on-device` row (the model's own speed).",
        "- wait share: the share of wall time the loop spent in `next()` (the first batch's wait "
        "includes `iter()`), by the loop's timer and by `loader.stats()` over the same epoch; the "
        "gap is the largest difference of the two in one epoch. Peers have no stats.",
        "- first-batch wait: the median over timed epochs of the first batch's wait; p99 of the "
        "other batches' waits, pooled over the epochs.",
        "- CPU ms/image: user + system CPU of the whole process tree (trainer and workers) per "
        "image; on a CPU-only machine it includes the training step.",
        "- peak PSS: the process tree's highest PSS sum, sampled every 0.25 s.",
        "- loader alone: epochs in the same process after the training, without the training "
        "step; the first of them is left out (its first batches were made ahead while the last "
        "steps ran).",
        "",
        "Loaders:",
        "",
        *[f"- `{name}`: {what}" for name, what in LOADERS.items()],
        "",
    ]
    return "\n".join(lines)
