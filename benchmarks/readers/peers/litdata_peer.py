"""LitData: `litdata.optimize` chunks, `StreamingDataset` + `StreamingDataLoader`.

Configuration: `optimize` writes 16 MB chunks in random order with `workers` processes, each
sample the original JPEG bytes (LitData's "bytes" serializer: no re-encode) and its label. The
loader is a `StreamingDataset` over the local chunks (`shuffle=True`) under a
`StreamingDataLoader` with `workers` persistent worker processes; its `transform` decodes each
sample with simplejpeg (libjpeg-turbo, full size) and applies the same RandomResizedCrop + flip
as the other OpenCV peers. LitData's own image serializer would decode with PIL, or with
torchvision's `decode_jpeg` where torchvision is installed (it is not here); simplejpeg is the
faster of what this environment has. OpenCV's thread pool is off before the workers fork.
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
from benchmarks.readers.peers._crop import Pixels, simplejpeg_decode_crop, single_threaded_opencv

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
        return simplejpeg_decode_crop(item["image"], self._rng), int(item["label"])


def loader(workdir: Path, batch_size: int, workers: int, seed: int) -> FixedEpochs:
    single_threaded_opencv()
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
