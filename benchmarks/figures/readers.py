"""The reader benchmark's figures (`readers/reader_bench.py`): loaders side by side."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.figures.provenance import provenance
from benchmarks.readers.peers import PEERS

FASTPACK_PREFIX = "fastpack"
_PIL = "Pillow-SIMD"


def label(peer: str, report: dict[str, Any]) -> str:
    """How a page names a peer."""
    pil = (
        _PIL
        if report["versions"].get("pillow-simd", "not installed") != "not installed"
        else "Pillow"
    )
    return {
        "fastpack": "**fastpack** (default: full quality)",
        "fastpack-fast": "fastpack, `max_upscale=2`",
        "fastpack-restart": "fastpack, from a `build --restart-markers`",
        "fastpack-restart-fast": "fastpack, `max_upscale=2`, from a `build --restart-markers`",
        "imagefolder-pil": f"ImageFolder-style, {pil}",
        "imagefolder-cv2": "ImageFolder-style, OpenCV",
        "wds-simplejpeg": "webdataset + simplejpeg",
        "wds-pil": f"webdataset + {pil}",
        "litdata": "LitData + simplejpeg",
        "ffcv": "FFCV",
        "dali-cpu": "DALI (CPU)",
        "mosaic": "Mosaic Streaming + simplejpeg",
    }.get(peer, peer)


@dataclass(frozen=True)
class Row:
    peer: str
    median: float
    low: float
    high: float
    ratio: float  # median over the fastest peer's median
    cpu_ms: float | None
    startup_s: float
    pss_mib: float


def rows(report: dict[str, Any]) -> list[Row]:
    """Every loader that ran, fastest first; the ratio is to the fastest peer that is not
    fastpack."""
    loads = {p: s for p, s in report["loads"].items() if "median" in s}
    peers = [p for p in loads if not p.startswith(FASTPACK_PREFIX)]
    if not peers:
        raise ValueError("the reader benchmark's JSON has no peer that ran")
    best = max(loads[p]["median"] for p in peers)
    found = [
        Row(
            peer=p,
            median=s["median"],
            low=min(s["rates"]),
            high=max(s["rates"]),
            ratio=s["median"] / best,
            cpu_ms=s.get("cpu_ms"),
            startup_s=s["startup_s"],
            pss_mib=s["pss_mib"],
        )
        for p, s in loads.items()
    ]
    return sorted(found, key=lambda r: -r.median)


def _loads(report: dict[str, Any]) -> str:
    loads = [load for _, _, load in report.get("load_per_run", [])]
    return f"{min(loads):.1f} to {max(loads):.1f}" if loads else "not recorded"


def setting(report: dict[str, Any], raw: str) -> str:
    """One paragraph: what ran, where, at which commit, and the machine's state."""
    p, c, a = provenance(report), report["corpus"], report["args"]
    height, width = c["mean_hw"]
    return (
        f"{p.stamp()}; the 1-minute load was "
        f"{_loads(report)} during the runs (their own processes included), so compare ratios, not "
        "absolute rates, across runs. "
        f"{c['images']:,} photos of about {width} x {height} px ({c['mean_kb']:.0f} KB), "
        f"RandomResizedCrop 224 + flip, batches of {a['batch_size']}, {a['workers']} workers, "
        f"page cache warm; medians of {a['rounds']} rounds x {a['epochs']} epochs, with their "
        f"range. Raw: [{Path(raw).name}]({raw})."
    )


def _cpu(row: Row) -> str:
    return f"{row.cpu_ms:.2f}" if row.cpu_ms is not None else "-"


def headline(report: dict[str, Any], raw: str) -> str:
    """Ratios first: the README's table."""
    lines = [
        "| loader | x fastest peer | images/s | CPU ms per image | peak PSS, MiB |",
        "|---|---:|---:|---:|---:|",
    ]
    for r in rows(report):
        ratio = f"**{r.ratio:.2f}**" if r.peer == "fastpack" else f"{r.ratio:.2f}"
        lines.append(
            f"| {label(r.peer, report)} | {ratio} | {r.median:,.0f} ({r.low:,.0f}-{r.high:,.0f}) "
            f"| {_cpu(r)} | {r.pss_mib:.0f} |"
        )
    return "\n".join(lines) + "\n\n" + setting(report, raw) + "\n"


def full(report: dict[str, Any], raw: str) -> str:
    """Every column, and how each loader was configured."""
    lines = [
        "| loader | x fastest peer | images/s | CPU ms per image | start-up s | peak PSS, MiB |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows(report):
        lines.append(
            f"| {label(r.peer, report)} | {r.ratio:.2f} | {r.median:,.0f} "
            f"({r.low:,.0f}-{r.high:,.0f}) | {_cpu(r)} | {r.startup_s:.2f} | {r.pss_mib:.0f} |"
        )
    configured = [
        f"- {label(r.peer, report)}: {PEERS[r.peer].description}"
        for r in rows(report)
        if r.peer in PEERS
    ]
    return (
        "\n".join(lines)
        + "\n\n"
        + setting(report, raw)
        + "\n\nHow each loader was configured:\n\n"
        + "\n".join(configured)
        + "\n"
    )
