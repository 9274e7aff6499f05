"""The network file system benchmark's figure (`streaming/shared_fs_bench.py`): cold epochs
read over sshfs, against the same dataset read from the local disk."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from benchmarks.figures.provenance import load_range, provenance

LABELS = {
    "fastpack-auto": '`Dataset` + `make_loader` (`io="auto"`: reads, not a memory map, on a mount)',
    "fastpack-mmap": '`Dataset` + `make_loader`, `io="mmap"`',
    "fastpack-pread": '`Dataset` + `make_loader`, `io="pread"`',
    "streaming": "`StreamingDataset` + `make_loader`, reading the mount in place",
    "streaming-cache": "`StreamingDataset` + `make_loader`, copying shards into a local cache",
    "webdataset": "webdataset + simplejpeg",
}


def _rates(runs: list[dict[str, Any]]) -> list[float]:
    return [run["epochs"][0]["images_per_s"] for run in runs]


def _cell(rates: list[float]) -> str:
    return f"{statistics.median(rates):,.0f} ({min(rates):,.0f}-{max(rates):,.0f})"


def table(report: dict[str, Any], raw: str) -> str:
    settings = report["settings"]
    delays = settings["delays_ms"]
    local = statistics.median(_rates(report["local"]))
    header = " | ".join(f"{delay:g} ms added: images/s, x local" for delay in delays)
    lines = [f"| loader | {header} |", "|---|" + "---:|" * len(delays)]
    for config in settings["configs"]:
        cells = []
        for delay in delays:
            runs = [r for r in report["runs"] if r["config"] == config and r["delay_ms"] == delay]
            rates = _rates(runs)
            cells.append(f"{_cell(rates)}, {statistics.median(rates) / local:.2f}x")
        lines.append(f"| {LABELS.get(config, config)} | {' | '.join(cells)} |")
    p, d = provenance(report), report["dataset"]
    return (
        "\n".join(lines)
        + f"\n\n{p.stamp()}; 1-minute load {load_range(report['loads'])} during the runs. A "
        f"dataset of {d['samples']:,} photos in {d['shards']} shards, read over sshfs from "
        "an sshd on the same machine, through a proxy that adds the delay to each round trip; "
        "each run a fresh process on a fresh mount (a cold client cache). RandomResizedCrop 224 + "
        f"flip, batches of {settings['batch_size']}, {settings['workers']} workers; one cold "
        f"epoch per run, medians of {settings['rounds']} rounds with their range. x local: "
        "against the map-style loader reading the same dataset from the local disk, page "
        f"cache warm ({local:,.0f} images/s). Raw: [{Path(raw).name}]({raw}).\n"
    )
