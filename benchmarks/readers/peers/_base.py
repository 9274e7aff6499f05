"""What every peer module provides, and the ImageFolder listing they all convert from."""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

# One batch: images (B, H, W, 3) uint8 and labels (B,), as numpy arrays or torch tensors.
Batch = tuple[Any, Any]

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".JPG", ".JPEG")


class Epochs(Protocol):
    """A constructed loader; `epoch(e)` iterates over epoch `e` once."""

    def epoch(self, e: int) -> Iterable[Batch]: ...


class Peer(Protocol):
    """The module-level interface of the peer modules: `convert` writes the peer's dataset
    into `workdir` from an ImageFolder corpus; `loader` constructs the loader over it."""

    def convert(self, imagefolder: Path, workdir: Path, workers: int) -> None: ...

    def loader(self, workdir: Path, batch_size: int, workers: int, seed: int) -> Epochs: ...


@dataclass(frozen=True)
class Sample:
    path: Path
    label: int


def list_imagefolder(root: Path) -> list[Sample]:
    """The JPEG files under `root/<class>/`, classes sorted by name, files sorted by path."""
    classes = sorted(p.name for p in root.iterdir() if p.is_dir())
    if not classes:
        raise FileNotFoundError(f"{root}: no class directories (expected root/<class>/*.jpg)")
    samples = [
        Sample(path, label)
        for label, name in enumerate(classes)
        for path in sorted((root / name).rglob("*"))
        if path.suffix in IMAGE_SUFFIXES
    ]
    if not samples:
        raise FileNotFoundError(f"{root}: no JPEG files under its class directories")
    return samples


def imagefolder_root(corpus: Path) -> Path:
    """`corpus/train` when it exists (the photo corpus layout), else `corpus` itself."""
    train = corpus / "train"
    return train if train.is_dir() else corpus


class FixedEpochs:
    """Adapts a loader that is simply re-iterable (one pass = one epoch) to `Epochs`."""

    def __init__(self, iterable: Iterable[Batch]) -> None:
        self.iterable = iterable

    def epoch(self, e: int) -> Iterator[Batch]:
        return iter(self.iterable)


def worker_options(workers: int) -> dict[str, Any]:
    """The DataLoader worker settings every DataLoader-based peer uses: `workers` processes that
    persist between epochs, as fastpack's `make_loader` does (no fork per epoch)."""
    return {"num_workers": workers, "persistent_workers": workers > 0}


def worker_rng(seed: int) -> random.Random:
    """A Python RNG for this DataLoader worker (the worker's own seed), or `seed` outside one."""
    from torch.utils.data import get_worker_info  # noqa: PLC0415 -- optional: torch

    info = get_worker_info()
    return random.Random(info.seed if info is not None else seed)


def collate(items: list[tuple[Any, int]]) -> Batch:
    """(image, label) pairs as torch tensors, as `default_collate` gives them: (B, H, W, 3) uint8
    and (B,) int64. Tensors leave DataLoader workers through shared memory, arrays by pickle."""
    import torch  # noqa: PLC0415 -- optional: torch

    images = torch.from_numpy(np.stack([image for image, _ in items]))
    return images, torch.tensor([label for _, label in items], dtype=torch.int64)
