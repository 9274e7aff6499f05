"""One start-up measurement of fastpack's map-style reader, in a fresh process.

Prints one line `RESULT <json>`. Run by `startup_bench`; usable by hand:

    python -m benchmarks.startup._run startup --dataset /tmp/fastpack-startup/n10000000

- `startup`: wall time from `Dataset(...)` through `make_loader(...)` to the first batch, split
  into its calls (every import is done before the clock starts).
- `costs`: the pieces of that path timed one by one, each `--repeat` times (median, min, max).
- `memory`: after `--batches` batches, each DataLoader worker's and this process's private
  memory (`benchmarks.startup._memory`).
"""

from __future__ import annotations

import argparse
import gc
import json
import mmap
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cv2  # noqa: F401 -- side effect: loaded before any clock starts
import numpy as np
import torch  # noqa: F401 -- side effect: loaded before any clock starts
from fastpack.formats import INDEX_NAME, MANIFEST_NAME, Index, read_manifest
from fastpack.reader import (
    Dataset,
    EpochBatchSampler,
    RandomResizedCrop,
    make_loader,
)
from fastpack.reader.order import EpochBatch

from benchmarks.procmem import children
from benchmarks.startup._memory import mapping_rss_kib, memory_kib, wait_idle

SIZE = 224
BATCH = 64
WORKERS = 2


def new_dataset(path: Path) -> Dataset:
    return Dataset(path, transform=RandomResizedCrop(SIZE))


def check_batch(batch: Any) -> None:
    images, labels = batch
    if tuple(images.shape) != (BATCH, SIZE, SIZE, 3) or len(labels) != BATCH:
        raise ValueError(f"unexpected first batch: images {tuple(images.shape)}, {len(labels)}")


def run_startup(path: Path) -> dict[str, Any]:
    t0 = time.perf_counter()
    dataset = new_dataset(path)
    t1 = time.perf_counter()
    loader = make_loader(dataset, batch_size=BATCH, num_workers=WORKERS)
    t2 = time.perf_counter()
    batches = iter(loader)  # forks the workers, draws the epoch's order, sends the first indices
    t3 = time.perf_counter()
    first = next(batches)
    t4 = time.perf_counter()
    check_batch(first)
    return {
        "samples": len(dataset),
        "startup_s": t4 - t0,
        "dataset_s": t1 - t0,
        "make_loader_s": t2 - t1,
        "iter_s": t3 - t2,
        "first_batch_s": t4 - t3,
    }


def summary(seconds: list[float]) -> dict[str, float]:
    return {"median": statistics.median(seconds), "min": min(seconds), "max": max(seconds)}


def timed(
    action: Callable[[], object], repeat: int, setup: Callable[[], object] | None = None
) -> dict[str, float]:
    """Median, min and max seconds of `action()` over `repeat` calls (`setup()`, untimed,
    before each)."""
    seconds = []
    for _ in range(repeat):
        if setup is not None:
            setup()
        start = time.perf_counter()
        action()
        seconds.append(time.perf_counter() - start)
    return summary(seconds)


_OLDEST_GENERATION = 2  # gc's oldest generation


def first_manifest_read(path: Path) -> dict[str, float]:
    """The process's first `read_manifest`, and the time its full (generation 2) garbage
    collections took: with torch imported there are many objects for one to visit."""
    collections: list[float] = []

    def note(phase: str, info: dict[str, int]) -> None:
        if info["generation"] == _OLDEST_GENERATION:
            collections.append(time.perf_counter() * (1 if phase == "stop" else -1))

    gc.callbacks.append(note)
    try:
        start = time.perf_counter()
        read_manifest(path / MANIFEST_NAME)
        seconds = time.perf_counter() - start
    finally:
        gc.callbacks.remove(note)
    return {"seconds": seconds, "full_gc_s": sum(collections), "full_gcs": len(collections) // 2}


def index_release(path: Path, repeat: int) -> dict[str, float]:
    """`madvise(MADV_DONTNEED)` over a read-only map of the whole index after reading 256
    random bytes of it (what a batch of 64 reads: 4 index entries per sample)."""
    with (path / INDEX_NAME).open("rb") as f:
        mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    data = np.frombuffer(mapped, dtype=np.uint8)
    rng = np.random.default_rng(0)
    seconds = []
    for _ in range(repeat):
        int(data[rng.integers(0, len(data), 4 * BATCH)].sum())
        start = time.perf_counter()
        mapped.madvise(mmap.MADV_DONTNEED)
        seconds.append(time.perf_counter() - start)
    del data
    mapped.close()
    return summary(seconds)


def fault_kib(path: Path, touches: int) -> list[int]:
    """KiB of a fresh read-only map of the index that become resident (in this process's page
    tables) by reading one byte at each of `touches` random offsets, touch by touch."""
    with (path / INDEX_NAME).open("rb") as f:
        mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    data = np.frombuffer(mapped, dtype=np.uint8)
    rng = np.random.default_rng(1)
    grown, before = [], mapping_rss_kib(os.getpid(), INDEX_NAME)
    for _ in range(touches):
        int(data[int(rng.integers(0, len(data)))])
        after = mapping_rss_kib(os.getpid(), INDEX_NAME)
        grown.append(after - before)
        before = after
    del data
    mapped.close()
    return grown


def run_costs(path: Path, repeat: int) -> dict[str, Any]:
    """Each step of the start-up path on its own."""
    first_read = first_manifest_read(path)
    dataset = new_dataset(path)
    sampler = EpochBatchSampler(dataset, BATCH)
    first_rows = next(iter(sampler))
    fresh: list[Dataset] = []
    forked: list[float] = []
    for _ in range(repeat):
        # one prepared batch instead of the sampler: iter() is then only the workers' start
        loader = make_loader(
            dataset, batch_size=BATCH, num_workers=WORKERS, batch_sampler=[first_rows]
        )
        start = time.perf_counter()
        batches = iter(loader)
        forked.append(time.perf_counter() - start)
        check_batch(next(batches))
        del batches
    return {
        "samples": len(dataset),
        "shards": len(dataset.manifest.shards),
        "index_bytes": (path / INDEX_NAME).stat().st_size,
        "manifest_bytes": (path / MANIFEST_NAME).stat().st_size,
        "first_read_manifest": first_read,
        "fault_kib": fault_kib(path, repeat),
        "steps": {
            "read_manifest": timed(lambda: read_manifest(path / MANIFEST_NAME), repeat),
            "open_index": timed(lambda: Index(path / INDEX_NAME), repeat),
            "dataset": timed(lambda: new_dataset(path), repeat),
            "make_loader": timed(
                lambda: make_loader(dataset, batch_size=BATCH, num_workers=WORKERS), repeat
            ),
            "permutation": timed(lambda: sampler.order(0), repeat),
            "first_indices": timed(lambda: next(iter(sampler)), repeat),
            "decode_first_batch": timed(
                lambda: fresh[-1].__getitems__(EpochBatch(first_rows, 0)),
                repeat,
                setup=lambda: fresh.append(new_dataset(path)),
            ),
            "fork_workers": summary(forked),
            "index_release": index_release(path, repeat),
        },
    }


def run_memory(path: Path, checkpoints: list[int], num_workers: int) -> dict[str, Any]:
    """Private memory of the workers and of this process after each of `checkpoints` batches."""
    dataset = new_dataset(path)
    loader = make_loader(dataset, batch_size=BATCH, num_workers=num_workers)
    iterator = iter(loader)
    workers = children(os.getpid())
    if len(workers) != num_workers:
        raise RuntimeError(f"expected {num_workers} worker processes, found {workers}")
    taken, points = 0, []
    for checkpoint in sorted(checkpoints):
        for _ in range(checkpoint - taken):
            check_batch(next(iterator))
        taken = checkpoint
        wait_idle(workers)  # the batches prefetched after the last one taken are finished
        points.append(
            {
                "batches": taken,
                "workers": [memory_kib(pid) for pid in workers],
                "trainer": memory_kib(os.getpid()),
            }
        )
    del iterator
    return {"samples": len(dataset), "num_workers": num_workers, "points": points}


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("action", choices=["startup", "costs", "memory"])
    parser.add_argument("--dataset", type=Path, required=True)
    parser.add_argument("--repeat", type=int, default=5, help="costs: calls per step")
    parser.add_argument(
        "--batches", default="20", help="memory: comma-separated batch counts to measure after"
    )
    parser.add_argument("--workers", type=int, default=WORKERS, help="memory: worker processes")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse(sys.argv[1:] if argv is None else argv)
    if args.action == "startup":
        result = run_startup(args.dataset)
    elif args.action == "costs":
        result = run_costs(args.dataset, args.repeat)
    else:
        checkpoints = [int(b) for b in args.batches.split(",")]
        result = run_memory(args.dataset, checkpoints, args.workers)
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
