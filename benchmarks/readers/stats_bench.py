"""What `loader.stats()` costs: the map-style loader with stats collected against the same loader
with collection off (`recorder.COLLECT`, the internal switch), in alternating runs.

    python -m benchmarks.readers.stats_bench --out benchmarks/readers/STATS.md

Each run makes a fresh loader (2 workers by default, RandomResizedCrop 224, batches of 64, no
training step: the loop only loads, where a cost would show most), reads one warm-up epoch and
then `--epochs` timed epochs: images/s over those, and the CPU time of the trainer and its
workers (reaped when the loader goes) per image over the whole run, which other work on a shared
machine disturbs far less than the wall clock. A first run, not counted, pays the process's
one-time costs; then rounds alternate which mode goes first. A second measurement times the
instrumentation itself in one process: the calls a batch makes with collection on (a worker's
recorder, the trainer's `next()` through the meter), per batch, against the time a batch takes.
The raw numbers go to `--json`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import json
import resource
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fastpack.compiler import BuildOptions, build
from fastpack.reader import Dataset, RandomResizedCrop, make_loader
from fastpack.reader.stats import LoaderMeter, recorder
from fastpack.reader.stats.block import ALLOCATE_NS, READ_NS, CounterBlock

from benchmarks import sysinfo as _sysinfo
from benchmarks.readers.reader_bench import warm_page_cache
from fastpack.synthetic import make_image_folder

REPO = Path(__file__).resolve().parent.parent
VERSIONS = ("fastpack", "torch", "numpy", "simplejpeg", "opencv-python-headless")


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, help="ImageFolder root (default: drawn images)")
    parser.add_argument("--images", type=int, default=1024, help="images to draw")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=2, help="timed epochs per run")
    parser.add_argument("--rounds", type=int, default=7, help="pairs of runs (on, off)")
    parser.add_argument("--workdir", type=Path, default=None, help="default: a temporary one")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/readers/STATS.md"))
    parser.add_argument("--json", type=Path, default=Path("benchmarks/readers/stats_results.json"))
    return parser.parse_args(argv)


def _cpu_seconds() -> float:
    """CPU time of this process and of its children that have ended."""
    own, children = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def run_once(path: Path, args: argparse.Namespace, collect: bool) -> tuple[float, float]:
    """Images/s over the timed epochs of a fresh loader, stats collected or not, and the CPU
    milliseconds per image of the whole run (the trainer and its workers)."""
    recorder.COLLECT = collect
    cpu = _cpu_seconds()
    try:
        ds = Dataset(path, transform=RandomResizedCrop(224))
        loader = make_loader(ds, batch_size=args.batch_size, num_workers=args.workers)
        images, started = 0, 0.0
        for epoch in range(1 + args.epochs):
            if epoch == 1:
                started = time.perf_counter()
            ds.set_epoch(epoch)
            for batch in loader:
                images += len(batch[1]) if epoch else 0
        rate = images / (time.perf_counter() - started)
        if collect and loader.stats().batches == 0:
            raise RuntimeError("collection was on, yet nothing was counted")
    finally:
        recorder.COLLECT = True
    del loader  # its workers are joined
    gc.collect()
    every_image = len(ds) * (1 + args.epochs)
    return rate, 1000 * (_cpu_seconds() - cpu) / every_image


def _batches(count: int) -> Iterator[int]:
    yield from range(count)


def instrumentation_ns(calls: int = 200_000) -> dict[str, float]:
    """Nanoseconds per batch of what collection adds: a worker's recorder (begin, a read and
    an allocation timed, end) and the trainer's `next()` through the meter, less a bare
    `next()`."""
    rec = recorder.Recorder(CounterBlock(1), 0)
    start = time.perf_counter_ns()
    for _ in range(calls):
        rec.begin()
        rec.timed(READ_NS, 1)
        rec.timed(ALLOCATE_NS, 1)
        rec.end(64)
    worker = (time.perf_counter_ns() - start) / calls
    meter = LoaderMeter(None, 2)
    metered = _batches(calls)
    start = time.perf_counter_ns()
    for _ in range(calls):
        meter.next(metered)
    through_meter = (time.perf_counter_ns() - start) / calls
    bare = _batches(calls)
    start = time.perf_counter_ns()
    for _ in range(calls):
        next(bare)
    trainer = through_meter - (time.perf_counter_ns() - start) / calls
    return {"worker": worker, "trainer": trainer}


def measure(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    source = args.corpus or make_image_folder(workdir / "src", images=args.images, classes=10)
    dataset = workdir / "ds"
    if not dataset.exists():
        build(source, dataset, BuildOptions(workers=args.workers, progress=False))
    warm_page_cache(dataset)
    run_once(dataset, args, collect=True)  # the process's first run pays one-time costs
    load_before = _sysinfo.load()
    rates: dict[str, list[float]] = {"on": [], "off": []}
    cpu_ms: dict[str, list[float]] = {"on": [], "off": []}
    for round_ in range(args.rounds):
        for mode in ("on", "off") if round_ % 2 == 0 else ("off", "on"):
            rate, cpu = run_once(dataset, args, collect=mode == "on")
            rates[mode].append(rate)
            cpu_ms[mode].append(cpu)
            print(
                f"round {round_ + 1} stats {mode}: {rate:,.0f} images/s, {cpu:.3f} CPU ms "
                "per image",
                flush=True,
            )
    return {
        "date": dt.date.today().isoformat(),
        "machine": _sysinfo.machine(),
        "versions": _sysinfo.versions(VERSIONS),
        "fastpack_commit": _sysinfo.fastpack_commit(REPO),
        "load_before": load_before,
        "load_after": _sysinfo.load(),
        "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "images": sum(1 for _ in Path(source).rglob("*.jpg")),
        "rates": rates,
        "cpu_ms_per_image": cpu_ms,
        "instrumentation_ns": instrumentation_ns(),
    }


def markdown(report: dict[str, Any]) -> str:
    on, off = report["rates"]["on"], report["rates"]["off"]
    cpu_on, cpu_off = report["cpu_ms_per_image"]["on"], report["cpu_ms_per_image"]["off"]
    a, m = report["args"], report["machine"]
    batch_ns = a["batch_size"] / statistics.median(on) * 1e9  # the loader's time per batch
    per_batch = report["instrumentation_ns"]
    worker_share = per_batch["worker"] / (a["workers"] * batch_ns)  # a worker makes 1 in W
    trainer_share = per_batch["trainer"] / batch_ns
    versions = ", ".join(f"{k} {v}" for k, v in report["versions"].items())
    lines = [
        "# What `loader.stats()` costs",
        "",
        "Produced by `python -m benchmarks.readers.stats_bench` (raw numbers: "
        "`stats_results.json`).",
        "",
        f"- Date: {report['date']}; fastpack commit {report['fastpack_commit']}",
        f"- Machine: {m['cpu']}, {m['cores']} cores, {m['ram_gib']} GiB RAM, Linux "
        f"{m['kernel']}, Python {m['python']}; load average before {report['load_before']}, "
        f"after {report['load_after']} (a machine shared with other work)",
        f"- Versions: {versions}",
        f"- Workload: map-style `make_loader`, {report['images']} drawn JPEGs (300-500 px), "
        f"RandomResizedCrop 224, batches of {a['batch_size']}, {a['workers']} workers, page "
        f"cache warm, no training step; each run a fresh loader, 1 warm-up epoch then "
        f"{a['epochs']} timed; {a['rounds']} rounds, alternating which mode runs first",
        "",
        "| stats | images/s median | range | CPU ms per image median | range | runs |",
        "|---|---:|---:|---:|---:|---:|",
        _row("collected", on, cpu_on),
        _row("off", off, cpu_off),
        _ratios(on, off, cpu_on, cpu_off),
        "",
        "Images/s follow the machine's other work (the load average above); CPU time per image "
        "much less so.",
        "",
        "The instrumentation itself, timed in one process: a worker's calls per batch "
        f"(begin, two timed parts, end) {per_batch['worker']:,.0f} ns, "
        f"{worker_share:.4%} of a worker's time per batch; the trainer's `next()` through "
        f"the meter, beyond a bare `next()`, {per_batch['trainer']:,.0f} ns, "
        f"{trainer_share:.4%} of the loader's {batch_ns / 1e6:,.1f} ms per batch (collected, "
        "median). With collection off the dataset still calls the idle recorder (a few empty "
        "calls per batch) and adds each member's size to the bytes read (an integer per "
        "sample): that part is in both columns.",
        "",
    ]
    return "\n".join(lines)


def _row(mode: str, rates: list[float], cpu: list[float]) -> str:
    rate = f"{statistics.median(rates):,.0f} | {min(rates):,.0f}-{max(rates):,.0f}"
    per_image = f"{statistics.median(cpu):.3f} | {min(cpu):.3f}-{max(cpu):.3f}"
    return f"| {mode} | {rate} | {per_image} | {len(rates)} |"


def _ratios(on: list[float], off: list[float], cpu_on: list[float], cpu_off: list[float]) -> str:
    """The table's last row: collected / off, of the medians and per round (median, range)."""
    rate_pairs = [a / b for a, b in zip(on, off, strict=True)]
    cpu_pairs = [a / b for a, b in zip(cpu_on, cpu_off, strict=True)]
    return (
        f"| collected / off | {statistics.median(on) / statistics.median(off):.3f} "
        f"| per round {statistics.median(rate_pairs):.3f}, "
        f"{min(rate_pairs):.3f}-{max(rate_pairs):.3f} "
        f"| {statistics.median(cpu_on) / statistics.median(cpu_off):.3f} "
        f"| per round {statistics.median(cpu_pairs):.3f}, "
        f"{min(cpu_pairs):.3f}-{max(cpu_pairs):.3f} | |"
    )


def main() -> None:
    args = parse()
    if args.workdir is None:
        with tempfile.TemporaryDirectory() as tmp:
            report = measure(args, Path(tmp))
    else:
        args.workdir.mkdir(parents=True, exist_ok=True)
        report = measure(args, args.workdir)
    args.json.write_text(json.dumps(report, indent=2) + "\n")
    args.out.write_text(markdown(report))
    print(markdown(report))


if __name__ == "__main__":
    main()
