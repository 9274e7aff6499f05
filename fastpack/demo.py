"""`fastpack demo`: draw an ImageFolder, compile it, and train a tiny model from the shards.

Everything runs on this machine (a GPU is used for the model when there is one); the printed
images/s covers the whole input path: shard read, JPEG decode, crop, batch, host-to-device copy,
normalization and a training step of a small network.
"""

from __future__ import annotations

import math
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from .compiler import BuildOptions, BuildSummary, build
from .formats import FastpackError
from .reader import (
    IMAGENET_MEAN,
    IMAGENET_STD,
    Dataset,
    RandomResizedCrop,
    make_loader,
    to_float,
)
from .synthetic import make_image_folder

if TYPE_CHECKING:
    import torch

LOG_EVERY = 5  # batches between two loss lines
Log = Callable[[str], None]


@dataclass(frozen=True, kw_only=True)
class DemoOptions:
    directory: Path | None = None  # None: a temporary directory, removed afterwards
    images: int = 2000
    classes: int = 10
    batches: int = 20
    batch_size: int = 64
    # Loader workers and build processes; 0: load in the main process; None: all cores.
    workers: int | None = None
    size: int = 224
    seed: int = 0
    progress: bool = True


@dataclass(frozen=True, kw_only=True)
class DemoResult:
    dataset: Path
    summary: BuildSummary
    batches: int
    images: int
    first_batch_seconds: float  # loader start-up: workers, first decode
    seconds: float  # every batch after the first
    waiting_seconds: float  # of `seconds`, the time the training loop waited for a batch
    losses: tuple[float, ...]
    device: str

    @property
    def images_per_second(self) -> float:
        return self.images / self.seconds if self.seconds > 0 else math.nan

    def format(self) -> str:
        waiting = self.waiting_seconds / self.seconds if self.seconds > 0 else math.nan
        return (
            f"trained {self.batches} batches ({self.images} images after the first batch) on "
            f"{self.device}: {self.images_per_second:.0f} images/s, {waiting:.0%} of the time "
            f"waiting for data, first batch after {self.first_batch_seconds:.2f} s; "
            f"loss {self.losses[0]:.3f} -> {self.losses[-1]:.3f}"
        )


def require_torch() -> ModuleType:
    """Import torch, or explain how to get it."""
    try:
        import torch  # noqa: PLC0415 -- optional: torch
    except ImportError as e:
        raise FastpackError(
            "the demo trains a model with PyTorch, which is not installed; install it with "
            "`pip install torch` (or `pip install 'fastpack[torch]'`) and run it again"
        ) from e
    return torch


def _check(options: DemoOptions) -> None:
    for name in ("images", "classes", "batches", "batch_size", "size"):
        if getattr(options, name) < 1:
            raise FastpackError(f"demo: --{name.replace('_', '-')} must be at least 1")
    if options.images < options.batch_size:
        raise FastpackError(
            f"demo: {options.images} images cannot fill one batch of {options.batch_size}"
        )


@contextmanager
def _work_directory(directory: Path | None) -> Iterator[Path]:
    if directory is None:
        with tempfile.TemporaryDirectory(prefix="fastpack-demo-") as tmp:
            yield Path(tmp)
        return
    if directory.exists() and any(directory.iterdir()):
        raise FastpackError(f"{directory}: demo directory is not empty; give a new or empty one")
    directory.mkdir(parents=True, exist_ok=True)
    yield directory


def run_demo(options: DemoOptions, log: Log = print) -> DemoResult:
    """Draw, build and train as `options` says; `log` receives one line per step."""
    _check(options)
    torch = require_torch()
    with _work_directory(options.directory) as work:
        source, out = work / "images", work / "dataset"
        started = time.perf_counter()
        make_image_folder(source, images=options.images, classes=options.classes, seed=options.seed)
        log(
            f"drew {options.images} JPEGs in {options.classes} classes into {source} "
            f"({time.perf_counter() - started:.1f} s)"
        )
        build_options = BuildOptions(workers=options.workers or None, progress=options.progress)
        summary = build(source, out, build_options)
        log(summary.format())
        return _train(torch, out, summary, options, log)


def _tiny_model(torch: Any, classes: int) -> torch.nn.Module:
    """Two strided convolutions: enough to tell the demo's classes apart in a few batches."""
    nn = torch.nn
    return nn.Sequential(  # type: ignore[no-any-return]
        nn.Conv2d(3, 16, kernel_size=8, stride=8),
        nn.BatchNorm2d(16),
        nn.ReLU(),
        nn.Conv2d(16, 32, kernel_size=3, stride=2),
        nn.BatchNorm2d(32),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(32, classes),
    )


def _train(
    torch: Any, dataset_dir: Path, summary: BuildSummary, options: DemoOptions, log: Log
) -> DemoResult:
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(options.seed)
    dataset = Dataset(dataset_dir, transform=RandomResizedCrop(options.size), seed=options.seed)
    workers = options.workers if options.workers is not None else os.cpu_count() or 1
    loader = make_loader(
        dataset,
        batch_size=options.batch_size,
        num_workers=workers,
        drop_last=True,
        seed=options.seed,
    )
    model = _tiny_model(torch, len(dataset.classes) or options.classes).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    log(
        f"training {options.batches} batches of {options.batch_size} at {options.size} px on "
        f"{device} with {workers} loader workers"
    )
    times, losses = _Times(), []
    for batch in times.batches(_epochs(loader, dataset, options.batches)):
        losses.append(_step(torch, model, optimizer, batch, device))
        if len(losses) % LOG_EVERY == 0 or len(losses) == options.batches:
            log(f"batch {len(losses)}/{options.batches}: loss {losses[-1]:.3f}")
    return DemoResult(
        dataset=dataset_dir,
        summary=summary,
        batches=len(losses),
        images=(len(losses) - 1) * options.batch_size,
        first_batch_seconds=times.first,
        seconds=times.total - times.first,
        waiting_seconds=times.waiting,
        losses=tuple(losses),
        device=device,
    )


def _step(torch: Any, model: Any, optimizer: Any, batch: tuple[Any, Any], device: str) -> float:
    """One optimizer step on a batch of uint8 NHWC images and labels; returns the loss."""
    images, labels = batch
    x = to_float(images, mean=IMAGENET_MEAN, std=IMAGENET_STD, device=device)
    loss = torch.nn.functional.cross_entropy(model(x), labels.to(device))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return float(loss.item())


class _Times:
    """Wall time of a training loop: until the first batch, in all, and spent waiting for
    batches after the first."""

    def __init__(self) -> None:
        self.first = self.total = self.waiting = 0.0

    def batches(self, source: Iterator[Any]) -> Iterator[Any]:
        started = last = time.perf_counter()
        for n, batch in enumerate(source):
            now = time.perf_counter()
            if n == 0:
                self.first = now - started
            else:
                self.waiting += now - last
            yield batch
            last = time.perf_counter()
        self.total = last - started


def _epochs(loader: Any, dataset: Any, count: int) -> Iterator[Any]:
    """`count` batches from `loader`, going into further epochs when one is not enough."""
    produced, epoch = 0, 0
    while produced < count:
        dataset.set_epoch(epoch)
        before = produced
        for batch in loader:
            yield batch
            produced += 1
            if produced == count:
                return
        if produced == before:
            raise FastpackError(f"demo: the loader produced no batch from {len(dataset)} samples")
        epoch += 1
