"""webdataset tars written by `webdataset.ShardWriter`, and the webdataset loading pipeline."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import webdataset as wds
from torch.utils.data import DataLoader

from benchmarks.readers.peers._base import (
    FixedEpochs,
    collate,
    imagefolder_root,
    list_imagefolder,
    worker_options,
    worker_rng,
)
from benchmarks.readers.peers._crop import Pixels

SHARD_SAMPLES = 256  # ~10 MB shards for the photo corpus: enough shards to split over workers
SHUFFLE_BUFFER = 1000

Decode = Callable[[bytes, random.Random], Pixels]


def write_shards(imagefolder: Path, out: Path, seed: int = 0) -> list[Path]:
    """The corpus in random order as `<key>.jpg` (bytes as they are) + `<key>.cls` tar shards."""

    samples = list_imagefolder(imagefolder_root(imagefolder))
    random.Random(seed).shuffle(samples)
    out.mkdir(parents=True, exist_ok=True)
    with wds.ShardWriter(str(out / "%06d.tar"), maxcount=SHARD_SAMPLES, verbose=0) as sink:
        for i, sample in enumerate(samples):
            sink.write(
                {"__key__": f"{i:09d}", "jpg": sample.path.read_bytes(), "cls": sample.label}
            )
    return shards(out)


def shards(directory: Path) -> list[Path]:
    found = sorted(directory.glob("*.tar"))
    if not found:
        raise FileNotFoundError(f"{directory}: no .tar shards")
    return found


class _Transform:
    """(jpg bytes, cls bytes) -> (image, label), with a per-worker RNG made on first use."""

    def __init__(self, decode: Decode, seed: int) -> None:
        self.decode = decode
        self.seed = seed
        self._rng: random.Random | None = None

    def __call__(self, sample: tuple[bytes, bytes]) -> tuple[Pixels, int]:
        if self._rng is None:
            self._rng = worker_rng(self.seed)
        data, cls = sample
        return self.decode(data, self._rng), int(cls)


def make_loader(
    directory: Path, decode: Decode, batch_size: int, workers: int, seed: int
) -> FixedEpochs:
    """The webdataset FAQ pipeline: shard shuffle, split by worker, sample shuffle buffer,
    decode + transform, batch in the worker; a DataLoader with `batch_size=None` on top."""

    urls = [str(p) for p in shards(directory)]
    dataset: Any = (
        wds.WebDataset(urls, shardshuffle=len(urls), seed=seed, empty_check=False)
        .shuffle(SHUFFLE_BUFFER)
        .to_tuple("jpg", "cls")
        .map(_Transform(decode, seed))
        .batched(batch_size, collation_fn=collate, partial=True)
    )
    return FixedEpochs(DataLoader(dataset, batch_size=None, **worker_options(workers)))
