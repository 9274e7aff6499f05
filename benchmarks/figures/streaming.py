"""The streaming benchmark's figure (`streaming/stream_bench.py`): a dataset read from S3 behind
a shaped network, against the same dataset read locally."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from benchmarks.figures.provenance import load_range, provenance


def _spread(values: list[float], digits: int) -> str:
    return (
        f"{statistics.median(values):,.{digits}f} "
        f"({min(values):,.{digits}f}-{max(values):,.{digits}f})"
    )


def table(report: dict[str, Any], raw: str) -> str:
    dataset, shaping = report["dataset"], report["shaping"]
    lines = [
        "| reader | images/s | x the local map-style loader | fetched per epoch, x the "
        "dataset | first batch, s |",
        "|---|---:|---:|---:|---:|",
    ]
    for row in report["rows"]:
        fetched = [f / dataset["bytes"] for f in row["fetched"]]
        lines.append(
            f"| {row['name']} | {_spread(row['rates'], 0)} | {_spread(row['ratios'], 2)} | "
            f"{statistics.median(fetched):.2f} | {_spread(row['first_batch_s'], 2)} |"
        )
    return (
        "\n".join(lines)
        + f"\n\n{provenance(report).stamp()}; 1-minute load {load_range(report['loads'])}. "
        f"{dataset['samples']:,} photos in {dataset['shards']} shards "
        f"({dataset['bytes'] / 2**20:.0f} MiB), `make_loader` with {report['workers']} workers, "
        f"batches of {report['batch']}, RandomResizedCrop 224; S3 is a SeaweedFS server on the "
        "same machine behind a proxy that holds each response's first byte for the delay and "
        f"caps each connection at {shaping['rate_mb_per_s_per_connection']:g} MB/s. Each epoch "
        "builds its dataset and loader anew (start-up included), the readers taking turns epoch "
        "by epoch; medians over epochs, with their range. Raw: "
        f"[{Path(raw).name}]({raw}).\n"
    )
