"""One loader configuration of the shared-file-system benchmark in a fresh process: build the
dataset and loader over `--path`, run `--epochs` epochs, print `RESULT <json>`. Every library is
imported before the clock starts.

Run by `shared_fs_bench` (which manages the mount); usable by hand:
`python -m benchmarks.streaming._shared_fs_run --config fastpack-auto --path /mnt/dataset`
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import torch  # noqa: F401 -- side effect: loaded before any clock starts
from fastpack.reader import Dataset, RandomResizedCrop, StreamingDataset, make_loader

from benchmarks.parallel import cpu_seconds
from benchmarks.readers._run_peer import check_batch
from benchmarks.readers.peers._base import Batch
from benchmarks.readers.peers._crop import simplejpeg_decode_crop
from benchmarks.readers.peers._wds import make_loader as wds_loader

CONFIGS = (
    "fastpack-auto",
    "fastpack-mmap",
    "fastpack-pread",
    "streaming",
    "streaming-cache",
    "webdataset",
)
SIZE = 224


class _Epochs:
    """A loader that is re-iterated once per epoch, and the dataset whose epoch it sets."""

    def __init__(self, data: Iterable[Batch], dataset: Any = None) -> None:
        self.data, self.dataset = data, dataset

    def epoch(self, e: int) -> Iterable[Batch]:
        if self.dataset is not None:
            self.dataset.set_epoch(e)
        return self.data


def open_loader(args: argparse.Namespace) -> tuple[_Epochs, str]:
    """The configuration's loader over `args.path`, and how it reads the shards."""
    if args.config == "webdataset":
        shards = Path(args.path) / "shards"
        peer = wds_loader(shards, simplejpeg_decode_crop, args.batch_size, args.workers, 0)
        return _Epochs(peer.iterable), "webdataset tar streams"
    crop = RandomResizedCrop(SIZE)
    dataset: Dataset | StreamingDataset
    if args.config.startswith("fastpack-"):
        io = args.config.removeprefix("fastpack-")
        options: dict[str, Any] = {} if io == "auto" else {"io": io}  # auto: the default
        dataset = Dataset(args.path, transform=crop, **options)
    else:
        cache = {} if args.cache_dir is None else {"cache_dir": args.cache_dir}
        dataset = StreamingDataset(args.path, transform=crop, **cache)
    loader = make_loader(dataset, batch_size=args.batch_size, num_workers=args.workers)
    return _Epochs(loader, dataset), str(getattr(dataset, "io", "?"))


def timed_epoch(epochs: _Epochs, e: int, batch_size: int) -> dict[str, float]:
    """One epoch from the first batch request to the last batch."""
    cpu, started = cpu_seconds(), time.perf_counter()
    batches = iter(epochs.epoch(e))
    first = next(batches, None)
    if first is None:
        raise RuntimeError(f"epoch {e}: the loader yielded no batch")
    first_s = time.perf_counter() - started
    images = check_batch(first, batch_size) + sum(check_batch(b, batch_size) for b in batches)
    seconds = time.perf_counter() - started
    return {
        "images": images,
        "seconds": seconds,
        "images_per_s": images / seconds,
        "first_batch_s": first_s,
        "cpu_s": cpu_seconds() - cpu,
    }


def _tree_bytes(path: Path | None) -> int:
    if path is None or not path.exists():
        return 0
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def run(args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    epochs, io = open_loader(args)
    opened_s = time.perf_counter() - started
    timed = [timed_epoch(epochs, e, args.batch_size) for e in range(args.epochs)]
    return {
        "config": args.config,
        "io": io,
        "open_s": opened_s,  # dataset and loader constructed
        "startup_s": opened_s + timed[0]["first_batch_s"],  # construction to the first batch
        "epochs": timed,
        "cache_bytes": _tree_bytes(args.cache_dir),
    }


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--config", choices=CONFIGS, required=True)
    parser.add_argument("--path", required=True, help="the dataset (on the mount, or local)")
    parser.add_argument("--cache-dir", type=Path, help="StreamingDataset's cache_dir")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=1)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    result = run(parse(argv))
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
