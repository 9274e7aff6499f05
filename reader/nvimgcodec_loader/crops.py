"""The workers' side of the device decode: a batch's JPEG members as stored, the region each
image's crop takes and whether it is mirrored, and the labels. Nothing is decoded here."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ..image.transforms import GeometryTransform
from ..map_style.dataset import Dataset
from ..map_style.image_label import draws
from ..stats.recorder import records_batches

# a batch's arrays in order: bytes, offsets, regions, flips, labels, indices
CropArrays = tuple[npt.NDArray[Any], ...]


@dataclass(frozen=True)
class CropBatch:
    """A batch for the device: image `k` is `data[offsets[k]:offsets[k + 1]]`; its output is
    `regions[k]` = (top, left, height, width) of the full-size image, resampled onto the
    transform's output and mirrored when `flips[k]`; `indices[k]` is its sample."""

    data: Any
    offsets: Any
    regions: Any
    flips: Any
    labels: Any
    indices: Any

    def __len__(self) -> int:
        return len(self.labels)


class EncodedCrops:
    """`dataset` as a DataLoader's workers read it for a device decode: `__getitems__` gives a
    `CropBatch` of numpy arrays, with the crops the dataset's transform would take on the CPU
    (`transform.crop` with the same `sample_draws`), so both paths crop the same regions."""

    def __init__(self, dataset: Dataset, transform: GeometryTransform) -> None:
        self.dataset = dataset
        self.transform = transform

    @property
    def path(self) -> Path:
        return self.dataset.path

    @property
    def epoch(self) -> int:
        return self.dataset.epoch

    def __len__(self) -> int:
        return len(self.dataset)

    @records_batches  # the batch's time and bytes, for loader.stats()
    def __getitems__(self, indices: Any) -> CropBatch:
        """The batch of `indices`; a batch from the loader's sampler carries its epoch."""
        ds = self.dataset
        epoch = int(getattr(indices, "epoch", ds.epoch))
        encoded, labels = ds.encoded_batch(indices)
        rows = encoded.rows.tolist()
        regions = np.empty((len(rows), 4), np.int64)
        flips = np.empty(len(rows), np.bool_)
        for k, (size, row_draws) in enumerate(
            zip(encoded.sizes.tolist(), draws(self.transform, ds.seed, rows, epoch), strict=True)
        ):
            crop = self.transform.crop(size[0], size[1], row_draws)
            r = crop.region  # on whole pixels for fastpack's crops
            regions[k] = (round(r.top), round(r.left), round(r.height), round(r.width))
            flips[k] = crop.flip
        return CropBatch(
            data=encoded.data,
            offsets=encoded.offsets,
            regions=regions,
            flips=flips,
            labels=np.asarray(labels, np.int64),
            indices=np.asarray([int(i) for i in indices], np.int64),
        )


def crop_tensors(batch: CropBatch | None) -> CropBatch | None:
    """The DataLoader's `collate_fn`: the arrays as torch tensors, which travel to the trainer
    in shared memory; None (a batch the workers skipped) stays None."""
    import torch  # noqa: PLC0415 -- optional: torch

    if batch is None:
        return None
    return CropBatch(
        *(
            torch.from_numpy(a)
            for a in (
                batch.data,
                batch.offsets,
                batch.regions,
                batch.flips,
                batch.labels,
                batch.indices,
            )
        )
    )
