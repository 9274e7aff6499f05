"""`make_loader`: a torch DataLoader over a `Dataset` that decodes whole batches in its workers.

torch is imported when a loader is made, so `fastpack.reader` imports without it.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any, Literal

from .dali import DaliLoader, make_dali_loader
from .dataset import Dataset
from .sampler import EpochBatchSampler
from .transforms import CenterCrop, RandomResizedCrop

if TYPE_CHECKING:
    from torch.utils.data import DataLoader

Decoder = Literal["simplejpeg", "dali"]


def make_loader(
    dataset: Dataset,
    *,
    batch_size: int,
    shuffle: bool = True,
    num_workers: int | None = None,
    drop_last: bool = False,
    seed: int = 0,
    pin_memory: bool | None = None,
    prefetch_factor: int = 2,
    persistent_workers: bool = True,
    decoder: Decoder = "simplejpeg",
    **kwargs: Any,
) -> DataLoader[Any] | DaliLoader:
    """A DataLoader yielding `(images (B, H, W, 3) uint8, labels (B,) int64)` torch tensors.

    `decoder="dali"` reads the same shards with DALI's CPU operators instead (see
    `make_dali_loader`; the dataset's transform picks its training or evaluation pipeline,
    `num_workers` becomes DALI's thread count, other keyword arguments go to `make_dali_loader`).

    Batches come from an `EpochBatchSampler` (order seeded by `(seed, dataset.epoch)`; under
    torch.distributed, or with RANK and WORLD_SIZE set, each rank reads an equal share) and are
    decoded by `dataset.__getitems__` in the workers. Call `dataset.set_epoch(e)` before each
    epoch. Defaults: `num_workers = min(8, cpu count)`, `pin_memory` when CUDA is available,
    persistent workers (the batches carry the epoch, so they need no restart; this saves a
    fork per epoch), fork workers on Linux, each with single-threaded OpenCV (set in this
    process around the fork, then restored), each decoding its batches straight into its
    `prefetch_factor + 1` shared-memory slots of one batch each: `num_workers * (prefetch_factor
    + 1)` batches of shared memory (`/dev/shm`), allocated here, before the workers start.
    Other keyword arguments go to `DataLoader`.
    """
    if decoder == "dali":
        return make_dali_loader(
            dataset.path,
            batch_size=batch_size,
            shuffle=shuffle,
            drop_last=drop_last,
            num_threads=num_workers,
            seed=seed,
            **_dali_transform_options(dataset),
            **kwargs,
        )
    if decoder != "simplejpeg":
        raise ValueError(f"decoder must be 'simplejpeg' or 'dali', got {decoder!r}")
    import torch  # noqa: PLC0415 - torch is optional, imported on use

    from ._batch_slots import BatchSlots  # noqa: PLC0415 - imports torch
    from ._torch_loader import FastpackLoader, SharedBatches  # noqa: PLC0415 - imports torch

    if num_workers is None:
        num_workers = min(8, os.cpu_count() or 1)
    if pin_memory is None:
        pin_memory = torch.cuda.is_available()
    generator = torch.Generator()
    generator.manual_seed(seed)
    transform = dataset.transform
    slots = BatchSlots(
        num_workers,
        prefetch_factor + 1,  # the batches queued, and the one the trainer holds
        shape=None if transform is None else (batch_size, *transform.output_shape, 3),
        reuse=persistent_workers and num_workers > 0,
    )
    batches = SharedBatches(slots, kwargs.pop("worker_init_fn", None))
    options: dict[str, Any] = {
        "batch_sampler": EpochBatchSampler(
            dataset, batch_size, shuffle=shuffle, drop_last=drop_last, seed=seed
        ),
        "num_workers": num_workers,
        "collate_fn": batches.collate,
        "worker_init_fn": batches.install,
        "pin_memory": pin_memory,
        "generator": generator,
    }
    if num_workers > 0:
        options["prefetch_factor"] = prefetch_factor
        options["persistent_workers"] = persistent_workers
        if sys.platform.startswith("linux"):
            options["multiprocessing_context"] = "fork"
    options.update(kwargs)
    return FastpackLoader(dataset, **options)  # type: ignore[arg-type]


def _dali_transform_options(dataset: Dataset) -> dict[str, Any]:
    """The `make_dali_loader` arguments that do what `dataset.transform` does."""
    transform = dataset.transform
    if isinstance(transform, RandomResizedCrop):
        shape = transform.output_shape
        options = {"train": True, "scale": transform.scale, "ratio": transform.ratio}
    elif isinstance(transform, CenterCrop):
        shape = transform.output_shape
        options = {"train": False, "resize_size": transform.resize}
    else:
        raise ValueError(
            f"{dataset.path}: decoder='dali' needs a RandomResizedCrop or CenterCrop transform, "
            f"got {transform!r}"
        )
    if shape[0] != shape[1]:
        raise ValueError(f"{dataset.path}: decoder='dali' makes square crops, got {shape}")
    return {"size": shape[0], **options}
