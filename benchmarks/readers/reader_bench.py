"""Reader benchmark: every peer loader on one ImageFolder corpus, same transform, batch size and
worker count; writes a Markdown table (see README.md).

    python -m benchmarks.readers.reader_bench --corpus /tmp/photo-corpus \
        --out benchmarks/readers/RESULTS.md

Each peer's conversion and each loader run is a fresh process. A loader run does one warm-up
epoch (its first batch gives the start-up time) and then `--epochs` timed epochs; `--rounds`
repeats every peer's run, interleaved, so slow spells of a shared machine fall on all peers.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import statistics
from dataclasses import asdict
from pathlib import Path
from typing import Any

from benchmarks import sysinfo as _sysinfo
from benchmarks.launch import Outcome, run_step
from benchmarks.readers import report as _report
from benchmarks.readers.peers import PEERS
from benchmarks.readers.peers._base import imagefolder_root


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, required=True, help="ImageFolder root")
    parser.add_argument("--peers", default=",".join(PEERS), help="comma-separated peer names")
    parser.add_argument("--epochs", type=int, default=5, help="timed epochs per run")
    parser.add_argument("--rounds", type=int, default=1, help="runs per peer, interleaved")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/fastpack-bench"))
    parser.add_argument("--out", type=Path, default=Path("benchmarks/readers/RESULTS.md"))
    parser.add_argument("--max-side", type=int, default=320, help="for the resizing build")
    parser.add_argument("--no-build-bench", action="store_true", help="skip the max-side builds")
    parser.add_argument("--timeout", type=float, default=1200, help="seconds per step")
    parser.add_argument("--title", default="Reader benchmark results", help="heading of --out")
    args = parser.parse_args(argv)
    args.peers = [p.strip() for p in args.peers.split(",") if p.strip()]
    unknown = [p for p in args.peers if p not in PEERS]
    if unknown:
        parser.error(f"unknown peers {unknown}; peers are {', '.join(PEERS)}")
    return args


def warm_page_cache(*roots: Path) -> None:
    """Read every file under `roots` once, so that runs start with the page cache warm."""
    for root in roots:
        for path in root.rglob("*"):
            if path.is_file():
                with path.open("rb") as f:
                    while f.read(1 << 20):
                        pass


def convert(args: argparse.Namespace, peer: str, log_dir: Path) -> Outcome:
    workdir = args.workdir / PEERS[peer].format
    shutil.rmtree(workdir, ignore_errors=True)
    options = ["convert", "--peer", peer, "--corpus", str(args.corpus), "--workdir", str(workdir)]
    options += ["--workers", str(args.workers)]
    log = log_dir / f"convert-{PEERS[peer].format}.log"
    return run_step("readers._run_peer", options, log, args.timeout, memory=False)


def load(args: argparse.Namespace, peer: str, log_dir: Path, round_: int) -> Outcome:
    workdir = args.workdir / PEERS[peer].format
    warm_page_cache(workdir, imagefolder_root(args.corpus))
    options = ["load", "--peer", peer, "--workdir", str(workdir), "--epochs", str(args.epochs)]
    options += ["--workers", str(args.workers), "--batch-size", str(args.batch_size)]
    options += ["--seed", str(args.seed + round_)]
    log = log_dir / f"load-{peer}-{round_}.log"
    return run_step("readers._run_peer", options, log, args.timeout, memory=True)


def full_decode(args: argparse.Namespace, log_dir: Path) -> Outcome:
    options = ["--corpus", str(args.corpus), "--processes", str(args.workers), "--repeats", "9"]
    return run_step(
        "readers._full_decode", options, log_dir / "full_decode.log", args.timeout, memory=False
    )


def build_bench(args: argparse.Namespace, log_dir: Path) -> dict[str, Outcome]:
    options = ["--corpus", str(args.corpus), "--workdir", str(args.workdir)]
    options += ["--workers", str(args.workers), "--max-side", str(args.max_side)]
    return {
        kind: run_step(
            "builds.build_compare",
            [kind, *options],
            log_dir / f"build-{kind}.log",
            args.timeout,
            memory=False,
        )
        for kind in ("passthrough", "shardwriter", "fastpack", "reencode")
    }


def summarize_loads(outcomes: list[Outcome]) -> dict[str, Any]:
    """Rates and CPU cost of every timed epoch of every round, start-up median, memory peaks."""
    done = [o.result for o in outcomes if o.result is not None]
    if not done:
        return {"error": outcomes[0].error}
    epochs = [e for result in done for e in result["epochs"]]
    rates = [e["images"] / e["seconds"] for e in epochs]
    return {
        "rates": rates,
        "median": statistics.median(rates),
        "cpu_ms": statistics.median(1000 * e["cpu_s"] / e["images"] for e in epochs),
        "startup_s": statistics.median(result["startup_s"] for result in done),
        "pss_mib": max(o.memory.pss_mib for o in outcomes),
        "rss_mib": max(o.memory.rss_mib for o in outcomes),
        "processes": max(o.memory.processes for o in outcomes),
        "failed_rounds": [o.error for o in outcomes if o.result is None],
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    log_dir = args.workdir / "logs"
    report: dict[str, Any] = {
        "date": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "args": {k: str(v) for k, v in vars(args).items()},
        "machine": _sysinfo.machine(),
        "versions": _sysinfo.versions(),
        "fastpack_commit": _sysinfo.fastpack_commit(Path(__file__).resolve().parents[1]),
        "corpus": _sysinfo.corpus(args.corpus),
        "load_before": _sysinfo.load(),
    }
    warm_page_cache(imagefolder_root(args.corpus))
    report["full_decode"] = asdict(full_decode(args, log_dir))
    builds: dict[str, Outcome] = {}
    for peer in args.peers:
        if PEERS[peer].format not in builds:
            builds[PEERS[peer].format] = convert(args, peer, log_dir)
    loads: dict[str, list[Outcome]] = {peer: [] for peer in args.peers}
    report["load_per_run"] = []
    for round_ in range(args.rounds):
        for peer in args.peers:
            if builds[PEERS[peer].format].result is not None:
                loads[peer].append(load(args, peer, log_dir, round_))
                report["load_per_run"].append([peer, round_, os.getloadavg()[0]])
    report["builds"] = {fmt: asdict(o) for fmt, o in builds.items()}
    report["runs"] = {peer: [asdict(o) for o in runs] for peer, runs in loads.items()}
    report["loads"] = {
        peer: summarize_loads(runs) if runs else {"error": builds[PEERS[peer].format].error}
        for peer, runs in loads.items()
    }
    if not args.no_build_bench:
        report["build_bench"] = {k: asdict(o) for k, o in build_bench(args, log_dir).items()}
    report["load_after"] = _sysinfo.load()
    return report


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    report = run(args)
    args.workdir.mkdir(parents=True, exist_ok=True)
    raw = args.workdir / "results.json"
    raw.write_text(json.dumps(report, indent=1))
    args.out.write_text(_report.markdown(report, args.title))
    print(f"wrote {args.out} (raw numbers: {raw})")


if __name__ == "__main__":
    main()
