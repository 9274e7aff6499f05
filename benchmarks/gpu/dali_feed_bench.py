"""DALI's own reader against fastpack's fed order, on DALI's CPU path.

`reader`: `make_dali_loader(path, ...)`, samples from `fn.readers.webdataset` (DALI's shuffle).
`fed`: `make_dali_loader(Dataset(path), ...)`, the same graph after the reader, its samples fed
by `fn.external_source` in the torch loader's order (reader/dali/feed.py). Same batch size,
threads, crops and seed. Each (mode, round) runs in a fresh interpreter, the modes alternating
round by round so that a change of load on a shared machine falls on both; per run: the seconds
from the call to the first batch (start-up, DALI and torch already imported), then images/s and
CPU seconds (user + system, all threads of the process) per 1000 images of each epoch. CPU time
is what load from other processes disturbs least. `--feed-only` times the feed alone (reading
and handing over the members of one epoch, no DALI): its cost per sample. Run from the
repository root:

    python -m benchmarks.gpu.dali_feed_bench --dataset /tmp/ds --rounds 5 --out results.json
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.sysinfo import fastpack_commit, load, machine, versions

MODES = ("reader", "fed")


def run(spec: dict[str, Any]) -> dict[str, Any]:
    """Start-up seconds and images/s per epoch of one loader, in this process; on the fed path
    also whether each epoch's labels came in the torch loader's order (`order_matches`)."""
    import nvidia.dali.plugin.pytorch  # noqa: F401, PLC0415 -- side effect: DALI loaded before the clock starts
    from fastpack.reader import (  # noqa: PLC0415 -- on use: in the fresh interpreter of each run
        CenterCrop,
        DaliOptions,
        Dataset,
        EpochBatchSampler,
        RandomResizedCrop,
        make_dali_loader,
    )

    dataset, mode, batch = Path(spec["dataset"]), spec["mode"], spec["batch_size"]
    started = time.perf_counter()
    source: Any = dataset if mode == "reader" else Dataset(dataset)
    loader = make_dali_loader(
        source,
        batch_size=batch,
        seed=0,
        num_workers=spec["threads"],
        transform=RandomResizedCrop(224) if spec["train"] else CenterCrop(224),
        dali=DaliOptions(device=spec["device"]),
    )
    first, rates, cpu, matches = 0.0, [], [], []
    for epoch in range(spec["epochs"]):
        if mode == "fed":
            source.set_epoch(epoch)
        t, c, seen, labels = time.perf_counter(), _cpu(), 0, []
        for images, batch_labels in loader:
            if not first:
                first = time.perf_counter() - started
            seen += int(images.shape[0])
            labels.append(batch_labels)
        rates.append(seen / (time.perf_counter() - t))
        cpu.append((_cpu() - c) / seen * 1000)
        if mode == "fed":
            order = EpochBatchSampler(source, batch, seed=0, shuffle=spec["train"])
            expected = source.labels[order.order(epoch)].tolist()
            got = [int(y) for part in labels for y in part.cpu().reshape(-1).tolist()]
            matches.append(got == expected)
    loader.close()
    return {
        "mode": mode,
        "startup_s": first,
        "rates": rates,
        "cpu_s_per_1000": cpu,
        "order_matches": matches,
        "load": load(),
    }


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def feed_only(dataset: Path, epochs: int) -> dict[str, Any]:
    """Microseconds per sample of the feed alone: `SampleFeed` over one epoch of batches of 64,
    each member a uint8 array over the mapped shard (what DALI then copies)."""
    from fastpack.reader import Dataset  # noqa: PLC0415 -- on use: in the fresh interpreter of each run
    from fastpack.reader.dali.feed import SampleFeed  # noqa: PLC0415 -- on use: in the fresh interpreter of each run
    from fastpack.reader.order import EpochBatchSampler  # noqa: PLC0415 -- on use: in the fresh interpreter of each run

    ds = Dataset(dataset)
    feed = SampleFeed(ds, EpochBatchSampler(ds, 64, seed=0), "jpg", ())
    per_sample = []
    for epoch in range(epochs):
        ds.set_epoch(epoch)
        feed.begin()
        t, c, seen = time.perf_counter(), _cpu(), 0
        while True:
            try:
                seen += len(feed()[0])
            except StopIteration:
                break
        per_sample.append(
            {"wall_us": (time.perf_counter() - t) / seen * 1e6, "cpu_us": (_cpu() - c) / seen * 1e6}
        )
    return {"mode": "feed-only", "per_sample": per_sample, "load": load()}


def child(spec: dict[str, Any]) -> dict[str, Any]:
    command = [sys.executable, "-m", "benchmarks.gpu.dali_feed_bench", "--child", json.dumps(spec)]
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _cell(values: list[float], digits: int) -> str:
    return (
        f"{statistics.median(values):.{digits}f} | {min(values):.{digits}f}-"
        f"{max(values):.{digits}f}"
    )


def summary(runs: list[dict[str, Any]], mode: str) -> str:
    """Median and range over runs of each run's median images/s and CPU seconds per 1000
    images, and of the start-up."""
    mine = [r for r in runs if r["mode"] == mode]
    rates = [statistics.median(r["rates"]) for r in mine]
    cpu = [statistics.median(r["cpu_s_per_1000"]) for r in mine]
    starts = [r["startup_s"] for r in mine]
    return f"| {mode} | {len(mine)} | {_cell(rates, 0)} | {_cell(cpu, 2)} | {_cell(starts, 2)} |"


HEADER = (
    "| mode | runs | img/s median | range | CPU s / 1000 img median | range "
    "| start-up s median | range |\n|---|---:|---:|---:|---:|---:|---:|---:|"
)


def compare(spec: dict[str, Any], rounds: int) -> list[dict[str, Any]]:
    """`rounds` runs of each mode, alternating, each in a fresh interpreter; prints the table."""
    runs = []
    for round_ in range(rounds):
        for mode in MODES if round_ % 2 == 0 else MODES[::-1]:
            result = child({**spec, "mode": mode})
            runs.append(result)
            print(json.dumps(result), file=sys.stderr, flush=True)
    print(HEADER)
    for mode in MODES:
        print(summary(runs, mode))
    return runs


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--dataset", type=Path, help="a fastpack dataset with tar shards")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--device", choices=("cpu", "gpu"), default="cpu", help="DALI's decode")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--eval", action="store_true", help="centre crops instead of training crops")
    p.add_argument("--feed-only", action="store_true", help="time the feed alone")
    p.add_argument("--out", type=Path, help="write the raw results here (JSON)")
    p.add_argument("--child", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse(argv)
    if args.child is not None:
        spec = json.loads(args.child)
        if spec["mode"] == "feed-only":
            print(json.dumps(feed_only(Path(spec["dataset"]), spec["epochs"])))
            return
        print(json.dumps(run(spec)))
        return
    if args.dataset is None:
        raise SystemExit("--dataset is required")
    spec = {
        "dataset": str(args.dataset),
        "train": not args.eval,
        "epochs": args.epochs,
        "threads": args.threads,
        "device": args.device,
        "batch_size": args.batch_size,
    }
    if args.feed_only:
        runs = [child({**spec, "mode": "feed-only"}) for _ in range(args.rounds)]
        print(json.dumps(runs, indent=1))
    else:
        runs = compare(spec, args.rounds)
    if args.out is not None:
        report = {
            "spec": spec,
            "runs": runs,
            "machine": machine(),
            "commit": fastpack_commit(Path(__file__).resolve().parent.parent),
            "versions": versions(("torch", "numpy", "nvidia-dali-cuda120", "nvidia-dali-cuda130")),
        }
        args.out.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
