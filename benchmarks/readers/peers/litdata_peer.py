"""LitData: `litdata.optimize` chunks, `StreamingDataset` + `StreamingDataLoader`.

Images are stored as the original JPEG bytes. LitData's own JPEG decode path needs torchvision
(absent here), so samples are decoded and transformed with PIL, as torchvision does on PIL images.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import litdata
from litdata import StreamingDataLoader, StreamingDataset

from benchmarks.readers.peers._base import (
    FixedEpochs,
    Sample,
    collate,
    imagefolder_root,
    list_imagefolder,
    worker_options,
    worker_rng,
)
from benchmarks.readers.peers._crop import Pixels, pil_decode_crop

CHUNK_BYTES = "16MB"


def _encode(sample: Sample) -> dict[str, Any]:
    return {"image": sample.path.read_bytes(), "label": sample.label}


def convert(imagefolder: Path, workdir: Path, workers: int) -> None:
    """`litdata.optimize` with `workers` processes, in random order."""

    samples = list_imagefolder(imagefolder_root(imagefolder))
    random.Random(0).shuffle(samples)
    litdata.optimize(
        fn=_encode,
        inputs=samples,
        output_dir=str(workdir / "chunks"),
        chunk_bytes=CHUNK_BYTES,
        num_workers=workers,
        mode="overwrite",
        verbose=False,
    )


class _Transform:
    def __init__(self, seed: int) -> None:
        self.seed = seed
        self._rng: random.Random | None = None

    def __call__(self, item: dict[str, Any]) -> tuple[Pixels, int]:
        if self._rng is None:
            self._rng = worker_rng(self.seed)
        return pil_decode_crop(item["image"], self._rng), int(item["label"])


def loader(workdir: Path, batch_size: int, workers: int, seed: int) -> FixedEpochs:

    dataset = StreamingDataset(
        str(workdir / "chunks"),
        cache_dir=str(workdir / "cache"),
        shuffle=True,
        seed=seed,
        transform=_Transform(seed),
    )
    return FixedEpochs(
        StreamingDataLoader(
            dataset, batch_size=batch_size, collate_fn=collate, **worker_options(workers)
        )
    )
