"""ImageFolder-style baseline: one file per sample, PIL decode and transform, torch DataLoader.

The benchmark environment installs Pillow-SIMD in place of Pillow (`setup_peers.sh`), so PIL's
resize here is the SIMD one; the version record names the distribution that is installed.
`folder_loader` is shared with `imagefolder_cv2_peer`, which only decodes differently."""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from pathlib import Path

from PIL import Image
from torch.utils.data import DataLoader, Dataset

from benchmarks.readers.peers._base import (
    FixedEpochs,
    collate,
    imagefolder_root,
    worker_options,
    worker_rng,
)
from benchmarks.readers.peers._crop import Pixels, pil_random_resized_crop


def convert(imagefolder: Path, workdir: Path, workers: int) -> None:
    """Nothing to convert: the loader lists the corpus itself (the listing is part of start-up)."""
    (workdir / "corpus.txt").write_text(str(imagefolder_root(imagefolder).resolve()))


# torchvision.datasets.folder.IMG_EXTENSIONS, compared lower-cased as `has_file_allowed_extension`
IMG_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")


def list_like_torchvision(root: Path) -> list[tuple[str, int]]:
    """`(path, class index)` of every image under `root/<class>/`, listed as torchvision's
    `ImageFolder` does (`find_classes`: `os.scandir` of `root`, class folders sorted by name;
    `make_dataset`: per class, `sorted(os.walk(class folder, followlinks=True))`, file names
    sorted, kept by extension), without importing torchvision."""
    directory = os.fspath(root)
    classes = sorted(entry.name for entry in os.scandir(directory) if entry.is_dir())
    if not classes:
        raise FileNotFoundError(f"{root}: no class directories (expected root/<class>/*.jpg)")
    samples: list[tuple[str, int]] = []
    for index, name in enumerate(classes):
        target = os.path.join(directory, name)
        for folder, _, files in sorted(os.walk(target, followlinks=True)):
            for file in sorted(files):
                path = os.path.join(folder, file)
                if path.lower().endswith(IMG_EXTENSIONS):
                    samples.append((path, index))
    if not samples:
        raise FileNotFoundError(f"{root}: no image files under its class directories")
    return samples


# Reads the image at a path and returns its RandomResizedCrop + flip.
Read = Callable[[str, random.Random], Pixels]


class _Folder(Dataset[tuple[Pixels, int]]):
    """torchvision's `ImageFolder` as far as the benchmark needs: a list of (path, label)
    made by the same listing, each item read by `read`."""

    def __init__(self, root: Path, read: Read, seed: int) -> None:
        self.samples = list_like_torchvision(root)
        self.read = read
        self.seed = seed
        self._rng: random.Random | None = None

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, i: int) -> tuple[Pixels, int]:
        if self._rng is None:
            self._rng = worker_rng(self.seed)
        path, label = self.samples[i]
        return self.read(path, self._rng), label


def folder_loader(
    workdir: Path, read: Read, batch_size: int, workers: int, seed: int
) -> FixedEpochs:
    """A shuffling torch DataLoader over the corpus `convert` recorded, items read by `read`."""
    root = Path((workdir / "corpus.txt").read_text())
    data = DataLoader(
        _Folder(root, read, seed),
        batch_size=batch_size,
        shuffle=True,
        collate_fn=collate,
        **worker_options(workers),
    )
    return FixedEpochs(data)


def _pil_read(path: str, rng: random.Random) -> Pixels:
    with Image.open(path) as image:
        return pil_random_resized_crop(image, rng)


def loader(workdir: Path, batch_size: int, workers: int, seed: int) -> FixedEpochs:
    return folder_loader(workdir, _pil_read, batch_size, workers, seed)
