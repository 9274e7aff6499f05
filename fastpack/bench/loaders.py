"""The loaders a bench times, each made as a user makes it: `make_loader` over a `Dataset`
(simplejpeg, or DALI's CPU operators) or over a `StreamingDataset`."""

from __future__ import annotations

import gc
import shutil
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from fastpack.reader import DaliLoader, Dataset, StreamingDataset, Transform, make_loader
from fastpack.storage import default_cache_dir

from .options import BenchOptions
from .timing import Batch


@dataclass
class Opened:
    """A loader and what to release after it: its datasets, its DALI pipeline, a cache."""

    batches: Iterable[Batch]
    closers: list[Callable[[], None]] = field(default_factory=list)
    note: str | None = None

    def close(self) -> None:
        self.batches = ()  # drops the loader: its workers stop
        gc.collect()  # now, not at some later collection: before its cache goes
        for close in reversed(self.closers):
            close()


def map_style(root: Path, transform: Transform, options: BenchOptions) -> Opened:
    dataset = Dataset(root, transform=transform)
    loader = make_loader(dataset, batch_size=options.batch_size, num_workers=options.workers)
    return Opened(loader, [dataset.close])


def dali_cpu(root: Path, transform: Transform, options: BenchOptions) -> Opened:
    dataset = Dataset(root, transform=transform)
    threads = max(1, options.workers)  # DALI has no main-process mode
    loader = make_loader(dataset, batch_size=options.batch_size, num_workers=threads, loader="dali")
    closers = [dataset.close]
    if isinstance(loader, DaliLoader):
        closers.append(loader.close)
    return Opened(loader, closers, f"{threads} DALI thread" if options.workers == 0 else None)


def streaming(path: str, transform: Transform, options: BenchOptions, remote: bool) -> Opened:
    """From a URL, shards are fetched into a new cache directory (removed on close), so that
    they come over the network rather than from an earlier run's cache."""
    closers: list[Callable[[], None]] = []
    cache_dir = None
    if remote:
        parent = default_cache_dir()
        parent.mkdir(parents=True, exist_ok=True)
        cache_dir = tempfile.mkdtemp(prefix="bench-", dir=parent)
        closers.append(lambda: shutil.rmtree(cache_dir, ignore_errors=True))
    opened = Opened((), closers)
    try:
        dataset = StreamingDataset(
            path, transform=transform, cache_dir=cache_dir, storage_options=options.storage_options
        )
        closers.append(dataset.close)
        opened.batches = make_loader(
            dataset, batch_size=options.batch_size, num_workers=options.workers
        )
    except BaseException:
        opened.close()
        raise
    return opened
