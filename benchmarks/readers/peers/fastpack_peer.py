"""fastpack: `fastpack.compiler.build` (JPEGs stored as they are), read by `Dataset` with its
`RandomResizedCrop` (box from the JPEG header, only its window decoded at the cheapest DCT scale
that needs no enlargement beyond `max_upscale`) and `make_loader` (a whole batch decoded per
worker call into one array)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from fastpack.compiler import BuildOptions
from fastpack.compiler import build as fastpack_build
from fastpack.reader import Dataset, RandomResizedCrop, make_loader

from benchmarks.readers.peers._base import Batch, imagefolder_root

SHARD_BYTES = 16 << 20  # as LitData's chunks and Mosaic's shards here: shard jobs for 2 workers


def build(
    imagefolder: Path,
    out: Path,
    workers: int,
    max_side: int | None = None,
    restart_width: int = 0,
) -> None:
    options = BuildOptions(
        workers=workers,
        shard_size=SHARD_BYTES,
        max_side=max_side,
        restart_width=restart_width,
        progress=False,
    )
    fastpack_build(imagefolder_root(imagefolder), out, options)


def convert(imagefolder: Path, workdir: Path, workers: int) -> None:
    """A pass-through build with `workers` processes."""
    build(imagefolder, workdir / "dataset", workers)


class FastpackEpochs:
    def __init__(self, dataset: Any, data: Iterable[Batch]) -> None:
        self.dataset = dataset
        self.data = data

    def epoch(self, e: int) -> Iterable[Batch]:
        self.dataset.set_epoch(e)
        return self.data


def loader(
    workdir: Path, batch_size: int, workers: int, seed: int, *, max_upscale: float = 1.0
) -> FastpackEpochs:
    transform = RandomResizedCrop(224, max_upscale=max_upscale)
    dataset = Dataset(workdir / "dataset", transform=transform, seed=seed)
    data = make_loader(dataset, batch_size=batch_size, num_workers=workers, seed=seed)
    return FastpackEpochs(dataset, data)
