"""FFCV: a `.beton` file written by `DatasetWriter`, read by `Loader` with FFCV's own
`RandomResizedCropRGBImageDecoder` + `RandomHorizontalFlip` (threads, not processes).

`RGBImageField(write_mode="jpg")` re-encodes every image (OpenCV, quality 90), as FFCV always
does; its input is decoded with PIL as in FFCV's ImageNet example (torchvision ImageFolder).

The loader follows FFCV's tuning guide for a dataset that fits in RAM: `os_cache=True` (the
page cache holds the .beton) and `OrderOption.RANDOM`. The guide's other choice,
`QUASI_RANDOM`, saves reads from storage, which a .beton already in the page cache does not do;
it would shuffle less uniformly than the other peers and compile its numba order generator in
every loader process. `batches_ahead` stays at FFCV's default (3); `workers` is the size of
FFCV's numba thread pool.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from ffcv.fields import IntField, RGBImageField
from ffcv.fields.decoders import IntDecoder, RandomResizedCropRGBImageDecoder
from ffcv.loader import Loader, OrderOption
from ffcv.transforms import RandomHorizontalFlip, ToTensor
from ffcv.writer import DatasetWriter
from PIL import Image

from benchmarks.readers.peers._base import FixedEpochs, Sample, imagefolder_root, list_imagefolder

JPEG_QUALITY = 90


class _Source:
    """What `DatasetWriter.from_indexed_dataset` reads: (RGB array, label) by index."""

    def __init__(self, samples: list[Sample]) -> None:
        self.samples = samples

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, i: int) -> tuple[np.ndarray, int]:
        sample = self.samples[i]
        with Image.open(sample.path) as image:
            return np.asarray(image.convert("RGB")), sample.label


def convert(imagefolder: Path, workdir: Path, workers: int) -> None:

    fields = {
        "image": RGBImageField(write_mode="jpg", jpeg_quality=JPEG_QUALITY),
        "label": IntField(),
    }
    writer = DatasetWriter(str(workdir / "data.beton"), fields, num_workers=workers)
    writer.from_indexed_dataset(_Source(list_imagefolder(imagefolder_root(imagefolder))))


def loader(workdir: Path, batch_size: int, workers: int, seed: int) -> FixedEpochs:

    pipelines = {
        "image": [RandomResizedCropRGBImageDecoder((224, 224)), RandomHorizontalFlip(), ToTensor()],
        "label": [IntDecoder(), ToTensor()],
    }
    data = Loader(
        str(workdir / "data.beton"),
        batch_size=batch_size,
        num_workers=workers,
        order=OrderOption.RANDOM,
        pipelines=pipelines,
        os_cache=True,
        drop_last=False,
        seed=seed,
    )
    return FixedEpochs(data)
