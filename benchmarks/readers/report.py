"""The Markdown results page from the dictionary `reader_bench.run` returns."""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

from benchmarks.readers.peers import PEERS

LOADER_HEADER = (
    "| peer | images/s median | range | x full decode | x best peer | CPU ms/image | start-up s "
    "| PSS total peak MiB | RSS total peak MiB | processes | build images/s | build | "
    "dataset MB |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|"
)


def _rate(outcome: dict[str, Any]) -> float | None:
    result = outcome.get("result")
    return statistics.median(result["rates"]) if result else None


_SHORTEST_BUILD_S = 0.01  # a build shorter than this has no meaningful rate


def _build_cells(report: dict[str, Any], peer: str, images: int, workers: str) -> list[str]:
    info = PEERS[peer]
    build = report["builds"].get(info.format, {}).get("result")
    writer = info.writer.format(workers=workers)
    if not build:
        return ["-", writer, "-"]
    rate = images / build["seconds"] if build["seconds"] > _SHORTEST_BUILD_S else None
    return [f"{rate:.0f}" if rate else "n/a", writer, f"{build['bytes'] / 1e6:.0f}"]


def _best_peer(loads: dict[str, Any]) -> tuple[str, float] | None:
    """The fastest loader that is not fastpack (nor fastpack over other shards)."""
    others = {
        p: s["median"] for p, s in loads.items() if not p.startswith("fastpack") and "median" in s
    }
    if not others:
        return None
    best = max(others, key=lambda p: others[p])
    return best, others[best]


def loader_table(report: dict[str, Any]) -> str:
    loads, images = report["loads"], report["corpus"]["images"]
    workers = report["args"]["workers"]
    full_decode = _rate(report["full_decode"])
    best = _best_peer(loads)
    rows, failed = [LOADER_HEADER], []
    ranked = sorted(loads, key=lambda p: -loads[p].get("median", -1.0))
    for peer in ranked:
        summary = loads[peer]
        if "median" not in summary:
            failed.append(f"- **{peer}**: did not run: `{summary['error']}`")
            continue
        median, rates = summary["median"], summary["rates"]
        cells = [
            f"**{peer}**" if peer == "fastpack" else peer,
            f"{median:.0f}",
            f"{min(rates):.0f}-{max(rates):.0f}",
            f"{median / full_decode:.2f}" if full_decode else "-",
            f"{median / best[1]:.2f}" if best else "-",
            f"{summary['cpu_ms']:.2f}" if "cpu_ms" in summary else "-",
            f"{summary['startup_s']:.2f}",
            f"{summary['pss_mib']:.0f}",
            f"{summary['rss_mib']:.0f}",
            f"{summary['processes']}",
            *_build_cells(report, peer, images, workers),
        ]
        rows.append("| " + " | ".join(cells) + " |")
        failed += [f"- **{peer}**: a round failed: `{e}`" for e in summary["failed_rounds"]]
    if full_decode:
        result = report["full_decode"]["result"]
        rates, cpu = result["rates"], statistics.median(result.get("cpu_ms", [0.0]))
        rows.append(
            f"| full-decode rate ({workers} processes, simplejpeg, bytes in memory) "
            f"| {full_decode:.0f} | {min(rates):.0f}-{max(rates):.0f} | 1.00 | | {cpu:.2f} "
            "| | | | | | | |"
        )
    else:
        failed.append(f"- full-decode rate failed: `{report['full_decode']['error']}`")
    return "\n".join(rows) + ("\n\n" + "\n".join(failed) if failed else "")


def build_table(report: dict[str, Any]) -> str:
    images, workers = report["corpus"]["images"], report["args"]["workers"]
    rows = ["| build | images/s | note |", "|---|---:|---|"]
    for fmt, label in (
        ("fastpack", f"fastpack pass-through build ({workers} processes)"),
        ("webdataset", "webdataset `ShardWriter` (1 process)"),
    ):
        build = report["builds"].get(fmt, {}).get("result")
        if build:
            rows.append(f"| {label} | {images / build['seconds']:.0f} | one run |")
    bench = report.get("build_bench", {})
    max_side = report["args"]["max_side"]
    for kind, label in (
        ("passthrough", f"fastpack pass-through build ({workers} processes), repeated"),
        ("shardwriter", "webdataset `ShardWriter` (1 process), repeated"),
        ("fastpack", f"fastpack build `--max-side {max_side}` ({workers} processes)"),
        ("reencode", f"decode + resize + encode loop ({workers} processes, bytes in memory)"),
    ):
        outcome = bench.get(kind)
        if outcome is None:
            continue
        rate = _rate(outcome)
        if rate is None:
            rows.append(f"| {label} | - | failed: `{outcome['error']}` |")
        else:
            rates = outcome["result"]["rates"]
            rows.append(
                f"| {label} | {rate:.0f} | median of {len(rates)}, "
                f"range {min(rates):.0f}-{max(rates):.0f} |"
            )
    return "\n".join(rows)


def _run_loads(report: dict[str, Any]) -> str:
    loads = [load for _, _, load in report.get("load_per_run", [])]
    if not loads:
        return ""
    return f"; 1-min load at the end of each loader run: {min(loads):.2f}-{max(loads):.2f}"


def context(report: dict[str, Any]) -> str:
    m, c, a = report["machine"], report["corpus"], report["args"]
    versions = ", ".join(f"{k} {v}" for k, v in report["versions"].items())
    return "\n".join(
        [
            f"- Date: {report['date']}",
            f"- Machine: {m['cpu']}, {m['cores']} cores, {m['ram_gib']} GiB RAM, "
            f"Linux {m['kernel']}, Python {m['python']}",
            f"- Load average (1, 5, 15 min) before: {report['load_before']}; "
            f"after: {report['load_after']}{_run_loads(report)}",
            f"- Corpus: `{c['path']}`, {c['images']} JPEGs in {c['classes']} classes, "
            f"mean {c['mean_kb']} KB, mean {c['mean_hw'][0]}x{c['mean_hw'][1]} (HxW)",
            f"- Workload: RandomResizedCrop 224 (scale 0.08-1, ratio 3/4-4/3) + flip, batch "
            f"{a['batch_size']}, {a['workers']} workers, page cache warm; {a['epochs']} timed "
            f"epochs after 1 warm-up epoch, {a['rounds']} round(s) per peer",
            f"- fastpack: commit {report['fastpack_commit']}",
            f"- Versions: {versions}",
        ]
    )


def markdown(report: dict[str, Any], title: str = "Reader benchmark results") -> str:
    sections = [
        f"# {title}",
        "Produced by `python -m benchmarks.readers.reader_bench` (see `benchmarks/README.md`).",
        context(report),
        "## Loaders\n\n" + loader_table(report),
    ]
    if report["builds"] or report.get("build_bench"):
        sections.append("## Build speed\n\n" + build_table(report))
    return "\n\n".join(sections) + "\n"


def main() -> None:
    """Re-render a page from a `results.json` written by `reader_bench`."""

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("results", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--title", default="Reader benchmark results")
    args = parser.parse_args()
    args.out.write_text(markdown(json.loads(args.results.read_text()), args.title))


if __name__ == "__main__":
    main()
