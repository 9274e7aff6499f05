"""Entry point of `train_bench`: one loader feeding one model's training step, in a fresh process.

    python -m benchmarks.training._train_run --loader fastpack --model small --data DATA

Runs one start-up epoch, `--epochs` timed epochs, then one untimed and `--alone-epochs` timed
epochs of the loader with no step (its own rate beside the trainer's process). The untimed one
is left out because its first batches were made ahead while the last training steps ran. Each
epoch's record: images, wall seconds, the loop's wait in `next()` (the first batch's wait
includes `iter()`), each batch's wait, the CPU seconds of this process and its children, and
`loader.stats()` over the same epoch where the loader has stats. Prints one `RESULT <json>` line."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

import fastpack.reader
import torch

from benchmarks.procmem import cpu_ticks, descendants
from benchmarks.training._loaders import Feed, FeedOptions, make_feed, unavailable
from benchmarks.training._model import MODELS, Step, make_step, to_input

_TICK = os.sysconf("SC_CLK_TCK")


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--loader", required=True)
    parser.add_argument("--model", choices=MODELS, default="small")
    parser.add_argument("--data", required=True, help="folder made by _loaders.prepare")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=3, help="timed epochs after the first")
    parser.add_argument("--alone-epochs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    return parser.parse_args(argv)


class _CpuClock:
    """CPU seconds of this process tree since `start()`; processes counted from when first seen
    (a DataLoader's workers start inside the first epoch)."""

    def __init__(self) -> None:
        self._start: dict[int, int] = {}

    def start(self) -> None:
        self._start = {pid: cpu_ticks([pid]) for pid in descendants(os.getpid())}

    def seconds(self) -> float:
        pids = descendants(os.getpid())
        ticks = sum(cpu_ticks([pid]) - self._start.get(pid, 0) for pid in pids)
        return ticks / _TICK


def run_epoch(feed: Feed, epoch: int, step: Step | None, device: torch.device) -> dict[str, Any]:
    """One epoch of `feed`, each batch through `step` (None: the loader alone)."""
    clock = _CpuClock()
    feed.stats()  # starts the loader's interval here (the first call: from the first batch)
    clock.start()
    waits: list[float] = []
    images = 0
    started = time.perf_counter()
    iterator = iter(feed.epoch(epoch))
    while True:
        asked = time.perf_counter() if waits else started
        try:
            batch = next(iterator)
        except StopIteration:
            break
        waits.append(time.perf_counter() - asked)
        images += len(batch[1])
        if step is not None:
            step(*to_input(batch[0], batch[1], device))
    wall = time.perf_counter() - started
    stats = feed.stats()
    cpu = clock.seconds()
    return {
        "epoch": epoch,
        "images": images,
        "batches": len(waits),
        "wall_s": wall,
        "wait_s": sum(waits),
        "wait_share": sum(waits) / wall,
        "first_wait_s": waits[0] if waits else 0.0,
        "other_waits_median_s": statistics.median(waits[1:]) if len(waits) > 1 else 0.0,
        "other_waits_max_s": max(waits[1:], default=0.0),
        "waits_s": [round(w, 6) for w in waits],
        "cpu_s": cpu,
        "stats": _stats_fields(stats),
    }


def _stats_fields(stats: dict[str, Any] | None) -> dict[str, Any] | None:
    if stats is None:
        return None
    keep = ("seconds", "batches", "samples", "wait_seconds", "wait_share", "verdict")
    return {key: stats[key] for key in keep if key in stats}


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    device = torch.device(args.device)
    why = unavailable(args.loader, device)
    if why is not None:
        raise SystemExit(f"loader {args.loader}: {why}")
    torch.manual_seed(args.seed)
    step = make_step(args.model, device)
    started = time.perf_counter()
    options = FeedOptions(
        data=Path(args.data),
        batch_size=args.batch_size,
        workers=args.workers,
        seed=args.seed,
        device=device,
    )
    feed = make_feed(args.loader, options)
    construct = time.perf_counter() - started
    epochs = [run_epoch(feed, e, step, device) for e in range(args.epochs + 1)]
    alone = [
        run_epoch(feed, args.epochs + 1 + e, None, device)
        for e in range(args.alone_epochs + 1 if args.loader != "on-device" else 0)
    ]
    result = {
        "loader": args.loader,
        "model": args.model,
        "device": str(device),
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "torch_threads": torch.get_num_threads(),
        "fastpack_reader": str(Path(fastpack.reader.__file__).parent),
        "construct_s": construct,
        "startup_epoch": epochs[0],
        "epochs": epochs[1:],
        "alone_untimed_epoch": alone[0] if alone else None,
        "alone_epochs": alone[1:],
    }
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
