"""ImageFolder-style baseline: one file per sample, PIL decode and transform, torch DataLoader."""

from __future__ import annotations

import random
from pathlib import Path

from PIL import Image
from torch.utils.data import DataLoader, Dataset

from ._base import (
    FixedEpochs,
    Sample,
    collate,
    imagefolder_root,
    list_imagefolder,
    worker_options,
    worker_rng,
)
from ._crop import Pixels, pil_random_resized_crop


def convert(imagefolder: Path, workdir: Path, workers: int) -> None:
    """Nothing to convert: the loader lists the corpus itself (the listing is part of start-up)."""
    (workdir / "corpus.txt").write_text(str(imagefolder_root(imagefolder).resolve()))


class _Folder(Dataset[tuple[Pixels, int]]):
    """torchvision's `ImageFolder` as far as the benchmark needs: a list of (path, label)."""

    def __init__(self, root: Path, seed: int) -> None:
        self.samples: list[Sample] = list_imagefolder(root)
        self.seed = seed
        self._rng: random.Random | None = None

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, i: int) -> tuple[Pixels, int]:
        if self._rng is None:
            self._rng = worker_rng(self.seed)
        sample = self.samples[i]
        with Image.open(sample.path) as image:
            return pil_random_resized_crop(image, self._rng), sample.label


def loader(workdir: Path, batch_size: int, workers: int, seed: int) -> FixedEpochs:
    root = Path((workdir / "corpus.txt").read_text())
    data = DataLoader(
        _Folder(root, seed),
        batch_size=batch_size,
        shuffle=True,
        collate_fn=collate,
        **worker_options(workers),
    )
    return FixedEpochs(data)
